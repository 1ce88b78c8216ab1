#!/usr/bin/python3
"""Test: check_series.py grades the prediction over several checks of one experiment, on
hand-made results folders: the pooled means weight each check by its real runs, points are
matched by label across checks, per-check errors and the between-check spread are
hand-computed, and folders of different experiments or with a missing point are refused."""
import math
import os
import sqlite3
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
reports = os.path.abspath(os.path.join(here, "..", "..", "..", "reports"))
sys.path.insert(0, reports)
from check_series import between_checks, grade, pooled, series  # noqa: E402
from results_db import load  # noqa: E402

SCHEMA = """
CREATE TABLE points (point_id INTEGER PRIMARY KEY, label TEXT, params TEXT);
CREATE TABLE runs (run_id INTEGER PRIMARY KEY, point_id INTEGER, mode TEXT, repetition INTEGER,
  seed INTEGER, dir TEXT, status TEXT, error TEXT, wall_s REAL);
CREATE TABLE summaries (run_id INTEGER PRIMARY KEY, requests REAL, completed REAL,
  throughput_rps REAL, latency_mean_ms REAL, latency_p99_ms REAL, summary TEXT);
"""


def make_check(d, name, points):
    """points: [(point_id, label, [(mode, tput, mean, p99)...])]: one run per tuple."""
    os.makedirs(d)
    with open(os.path.join(d, "experiment.yaml"), "w") as f:
        f.write(f"name: {name}\n")
    con = sqlite3.connect(os.path.join(d, "results.db"))
    con.executescript(SCHEMA)
    run = 0
    for pid, label, runs in points:
        con.execute("INSERT INTO points VALUES (?, ?, '{}')", (pid, label))
        for mode, tput, mean, p99 in runs:
            run += 1
            con.execute("INSERT INTO runs VALUES (?, ?, ?, 0, 1, '', 'ok', NULL, 1.0)",
                        (run, pid, mode))
            con.execute("INSERT INTO summaries VALUES (?, 100, 100, ?, ?, ?, '{}')",
                        (run, tput, mean, p99))
    con.commit()
    con.close()


assert pooled([(100.0, 90.0, 3), (90.0, 100.0, 1)]) == (97.5, 92.5)
assert all(math.isnan(x) for x in pooled([(100.0, math.nan, 2), (90.0, 80.0, 0)]))
assert abs(between_checks([(0, 90.0, 3), (0, 100.0, 1)]) - math.sqrt(50) / 95) < 1e-12
assert math.isnan(between_checks([(0, 90.0, 3)]))

bounds = {"throughput_rps": 0.10, "latency_mean_ms": 0.10, "latency_p99_ms": 0.20}
with tempfile.TemporaryDirectory() as tmp:
    a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
    # Check a: c1's prediction +11% in throughput over three real runs (a miss on its own).
    make_check(a, "fig", [(1, "c1", [("sim", 100, 10, 20)] + [("real", 90, 11, 22)] * 3),
                          (2, "c2", [("sim", 50, 20, 40), ("real", 50, 20, 40)])])
    # Check b: the same points in the other order; c1 -12% over one real run.
    make_check(b, "fig", [(1, "c2", [("sim", 52, 20, 40), ("real", 50, 20, 40)]),
                          (2, "c1", [("sim", 88, 11, 22), ("real", 100, 10, 20)])])
    rows = series([load(a), load(b)])
    assert [label for label, _ in rows] == ["c1", "c2"]
    assert rows[0][1]["throughput_rps"] == [(100, 90, 3), (88, 100, 1)]
    graded = grade(rows, bounds)
    c1, c2 = graded
    metric, e, errors, spread = c1[1][0]
    # Pooled by real runs: (3*100 + 88) / 4 = 97 against (3*90 + 100) / 4 = 92.5.
    assert metric == "throughput_rps" and abs(e - (97 / 92.5 - 1)) < 1e-12, e
    assert abs(errors[0] - 1 / 9) < 1e-12 and abs(errors[1] + 0.12) < 1e-12, errors
    assert abs(spread - math.sqrt(50) / 95) < 1e-12
    # Mean latency: (3*10 + 11) / 4 = 10.25 against (3*11 + 10) / 4 = 10.75: -4.7%.
    assert abs(c1[1][1][1] - (10.25 / 10.75 - 1)) < 1e-12
    assert c1[2] == 0 and c1[3]  # neither check held on its own; the series does
    assert c2[2] == 2 and c2[3]  # +0% and +4%
    # Tighter throughput bound: c1's pooled +4.9% misses, and the script exits 1.
    assert not grade(rows, dict(bounds, throughput_rps=0.04))[0][3]
    script = os.path.join(reports, "check_series.py")
    run = lambda *args: subprocess.run([sys.executable, script, *args], capture_output=True,
                                       text=True)
    ok = run(a, b)
    assert ok.returncode == 0 and "2 checks" in ok.stdout and "0 point(s) miss" in ok.stdout, ok
    tight = run(a, b, "--tput", "0.04")
    assert tight.returncode == 1 and "MISS" in tight.stdout, tight.stdout
    # Folders of another experiment, or without one of the first check's points: refused.
    other = os.path.join(tmp, "other")
    make_check(other, "another", [(1, "c1", [("sim", 1, 1, 1), ("real", 1, 1, 1)])])
    refused = run(a, other)
    assert refused.returncode == 2 and "different experiments" in refused.stderr, refused
    short = os.path.join(tmp, "short")
    make_check(short, "fig", [(1, "c1", [("sim", 1, 1, 1), ("real", 1, 1, 1)])])
    refused = run(a, short)
    assert refused.returncode == 2 and "no point 'c2'" in refused.stderr, refused
    # A point without its real runs in one check: refused, not graded on the other alone.
    no_real = os.path.join(tmp, "no_real")
    make_check(no_real, "fig", [(1, "c1", [("sim", 1, 1, 1)]),
                                (2, "c2", [("sim", 1, 1, 1), ("real", 1, 1, 1)])])
    refused = run(a, no_real)
    assert refused.returncode == 2 and "lacks a sim or real result" in refused.stderr, refused
print("ok")
