#!/usr/bin/python3
"""Test: an ensemble's `accuracy` is a metric the report plots, tabulates and checks: figure 14's
claim (all members gives the highest accuracy) holds where it is true and flips where it is not;
a run without model groups shows no accuracy (not 0); and a results.db of the older schema
(no accuracy column) gets it from each run's stored summary JSON."""
import json
import math
import os
import sqlite3
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
src = os.path.abspath(os.path.join(here, "..", "..", ".."))
sys.path.insert(0, os.path.join(src, "reports"))
import results_db  # noqa: E402

SUBSET = "groups.ens.subset"
# Sweep values as the runner stores them (a map as flow YAML text); "none" stands for a
# point whose run has no model group.
POINTS = ["all", "{name: fixed, members: [b]}", "{name: least-loaded, k: 2}"]

SPEC = f"""name: accuracy-fixture
paper: rafiki
figure: "14"
claim: all members gives the best accuracy
modes: [sim]
sweep:
  {SUBSET}: [all, {{name: fixed, members: [b]}}, {{name: least-loaded, k: 2}}]
figures:
  - id: acc
    title: "accuracy (fixture)"
    x: {SUBSET}
    metrics: [accuracy, slo_attainment]
    checks:
      - says: "all members gives the highest accuracy"
        test: highest
        metric: accuracy
        at: {{{SUBSET}: all}}
"""

NEW_SCHEMA = """
CREATE TABLE points (point_id INTEGER PRIMARY KEY, label TEXT, params TEXT, groups_ens_subset);
CREATE TABLE runs (run_id INTEGER PRIMARY KEY, point_id INTEGER, mode TEXT, repetition INTEGER,
  seed INTEGER, dir TEXT, status TEXT, error TEXT, wall_s REAL);
CREATE TABLE summaries (run_id INTEGER PRIMARY KEY, throughput_rps REAL, slo_attainment REAL,
  accuracy REAL, summary TEXT);
"""
OLD_SCHEMA = NEW_SCHEMA.replace("  accuracy REAL, summary TEXT", "  summary TEXT")


def fixture(out, accuracies, old_schema=False):
    """One sim run per subset point; accuracy None: a run without groups."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "experiment.yaml"), "w") as f:
        f.write(SPEC)
    con = sqlite3.connect(os.path.join(out, "results.db"))
    con.executescript(OLD_SCHEMA if old_schema else NEW_SCHEMA)
    for i, (p, acc) in enumerate(zip(POINTS, accuracies)):
        con.execute("INSERT INTO points VALUES (?,?,?,?)", (i, p, json.dumps({SUBSET: p}), p))
        con.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?)",
                    (i + 1, i, "sim", 0, 1, f"runs/{i}", "ok", None, 0.1))
        summary = {"throughput_rps": 10.0, "slo_attainment": 0.9}
        if acc is not None:
            summary.update(accuracy=acc, accuracy_requests=100)
        row = [i + 1, 10.0, 0.9] + ([] if old_schema else [acc]) + [json.dumps(summary)]
        con.execute(f"INSERT INTO summaries VALUES ({','.join('?' * len(row))})", row)
    con.commit()
    con.close()


def report(out):
    subprocess.run([sys.executable, os.path.join(src, "reports", "report.py"), out,
                    "--formats", "png"], check=True, stdout=subprocess.DEVNULL)
    assert os.path.getsize(os.path.join(out, "report", "acc.png")) > 0
    return open(os.path.join(out, "report", "report.md")).read()


def row(md, label):
    line = next(x for x in md.splitlines() if x.startswith(f"| {label} |"))
    return [c.strip() for c in line.strip("|").split("|")]


assert results_db.METRIC_LABELS["accuracy"] == "expected accuracy"
for old in (False, True):
    with tempfile.TemporaryDirectory() as tmp:
        fixture(tmp, [0.97, 0.91, 0.95], old_schema=old)
        exp = results_db.load(tmp)
        assert exp.value("sim", 0, "accuracy")[0] == 0.97, exp.stats
        md = report(tmp)
        assert "Verdict (simulated): the claim holds." in md, md
        line = next(x for x in md.splitlines() if "highest accuracy" in x)
        assert line.startswith("- holds:") and "expected accuracy: all: 0.97; fixed, members b: 0.91" in line, line
        assert "accuracy sim" in md and "0.970" in row(md, "all"), row(md, "all")

    with tempfile.TemporaryDirectory() as tmp:
        # A subset beats all members: the page says the claim does not hold here.
        fixture(tmp, [0.93, 0.91, 0.95], old_schema=old)
        md = report(tmp)
        assert "Verdict (simulated): the claim does not hold here." in md, md
        line = next(x for x in md.splitlines() if "highest accuracy" in x)
        assert line.startswith("- does not hold here:"), line

with tempfile.TemporaryDirectory() as tmp:
    # Runs without groups have no accuracy: '-' on the page, NaN in the stats, never 0.
    fixture(tmp, [0.97, None, 0.95])
    exp = results_db.load(tmp)
    assert math.isnan(exp.value("sim", 1, "accuracy")[0])
    md = report(tmp)
    cells = row(md, "fixed, members b")
    assert cells[4] == "-" and cells[5] == "0.900", cells   # accuracy sim, slo_attainment sim
print("ok")
