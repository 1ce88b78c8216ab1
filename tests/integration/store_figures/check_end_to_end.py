#!/usr/bin/python3
"""Test: the weight store's figures end to end on the tiny models (scripts/make-models
--tiny), through real `servelab serve` processes: the store's manifests account for the
bytes the engine reports per model, and scripts/store_figures.py plus the report generator
write a page per figure whose checks are computed from finite numbers, and whose predicted
metrics (a figure's `error_metrics:`) carry each point's (predicted - real) / real. Checks the
output's form only: no timing is asserted.

    check_end_to_end.py SERVELAB
"""
import math
import os
import sqlite3
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(SRC, "scripts"))
sys.path.insert(0, os.path.join(SRC, "reports"))
import page  # noqa: E402
import results_db  # noqa: E402
import store_results as sr  # noqa: E402
import verdict  # noqa: E402
from store_processes import Server  # noqa: E402

MODELS = os.path.join(SRC, "models")
FAMILY, COUNT = "tiny_variant", 4


def check_accounting(servelab, tmp):
    """Per model, the bytes its manifest names (all its blobs; those no other variant names)
    are the logical and unique bytes the engine reports; the prediction's store total is the
    distinct blobs' bytes."""
    weights = os.path.join(tmp, "weights")
    names = [f"{FAMILY}_{i}" for i in range(COUNT)]
    with Server(servelab, os.path.join(tmp, "store"), MODELS, weights) as s:
        for name in names:
            s.register(name)
        reported = {name: s.model(name)["weights"] for name in names}
    manifests = [sr.read_manifest(sr.skeleton_of(weights, os.path.join(MODELS, n + ".pt")))
                 for n in names]
    users = {}
    for blobs in manifests:
        for blob_id in blobs:
            users[blob_id] = users.get(blob_id, 0) + 1
    for name, blobs in zip(names, manifests):
        logical = sum(blobs.values())
        unique = sum(n for b, n in blobs.items() if users[b] == 1)
        got = reported[name]
        assert (got["logical_bytes"], got["unique_bytes"]) == (logical, unique), (name, got)
        assert unique < logical, f"{name}: its variants share no blob"
    distinct = {b: n for blobs in manifests for b, n in blobs.items()}
    assert sr.cumulative_bytes(manifests)[-1][0] == sum(distinct.values())


def cell(text):
    """A table cell's mean ("12.3 ± 0.4" -> 12.3; "+5.0%" -> 0.05)."""
    text = text.split(" ")[0]
    return float(text.rstrip("%")) / 100 if text.endswith("%") else float(text)


def check_errors(exp, fig):
    """Each error_metrics column's cells are (sim - real) / real of the same row's cells, up to
    the cells' rounding, and the figure's mean absolute error is their mean."""
    sec = page.figure_section(exp, fig, [])
    for m in fig.get("error_metrics") or []:
        words = page.column_words(m)
        at = {c: sec["header"].index(f"{words} {c}") for c in ("sim", "real", "err")}
        errs = []
        for row in sec["rows"]:
            sim, real, err = (cell(row[at[c]]) for c in ("sim", "real", "err"))
            rounding = 0.05 * (1 + abs(sim) / real) / real + 0.0006  # cells to 0.1 and 0.1%
            assert abs(err - (sim - real) / real) <= rounding, (fig["id"], m, row)
            errs.append(abs(err))
        assert errs, (fig["id"], m)
        assert abs(sec["mean_abs_err"][m] - sum(errs) / len(errs)) <= 0.001, (fig["id"], m)


def check_figures(servelab, out):
    subprocess.run([sys.executable, os.path.join(SRC, "scripts", "store_figures.py"), servelab,
                    MODELS, out, "--family", FAMILY, "--variants", str(COUNT), "--models-list",
                    "tiny_cnn", "--holder", "noop", "--repetitions", "1",
                    "--profile", os.path.join(HERE, "tiny-profile.yaml")], check=True)
    folders = ["pretzel-memory", "pretzel-latency", "trims-speedup", "trims-breakdown"]
    for name in folders:
        path = os.path.join(out, name)
        subprocess.run([sys.executable, os.path.join(SRC, "reports", "report.py"), path,
                        "--formats", "png"], check=True, stdout=subprocess.DEVNULL)
        exp = results_db.load(path)
        if name != "pretzel-memory":  # the simulator's prediction beside the measurement
            assert set(exp.modes) == {"real", "sim"}, (name, exp.modes)
        assert os.path.exists(os.path.join(path, "report", "report.html")), name
        con = sqlite3.connect(os.path.join(path, "results.db"))
        cols = [r[1] for r in con.execute("PRAGMA table_info(summaries)")
                if r[1] not in ("run_id", "summary")]
        rows = con.execute(f"SELECT {', '.join(cols)} FROM summaries").fetchall()
        assert rows, f"{name}: no runs"
        assert all(v is not None and math.isfinite(v) and v >= 0 for r in rows for v in r), name
        for fig in exp.spec["figures"]:
            assert os.path.getsize(os.path.join(path, "report", fig["id"] + ".png")) > 1000
            assert fig.get("error_metrics") or name == "pretzel-memory", name
            check_errors(exp, fig)
            verdicts = verdict.figure_verdicts(exp, fig, exp.modes)
            assert set(verdicts) == set(exp.modes), (name, verdicts)
            computed = [r for _, results in verdicts.values() for r in results
                        if r["verdict"] != verdict.UNKNOWN]
            # trims-speedup's checks name the full-size models, which the tiny run lacks.
            assert computed or name == "trims-speedup", (name, verdicts)
            assert all(math.isfinite(r["value"]) for r in computed if r["value"] == r["value"])
    subprocess.run([sys.executable, os.path.join(SRC, "reports", "index.py"), out], check=True,
                   stdout=subprocess.DEVNULL)
    assert os.path.exists(os.path.join(out, "index.html"))


def main():
    servelab = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="store-figures-test-") as tmp:
        check_accounting(servelab, tmp)
        check_figures(servelab, os.path.join(tmp, "out"))
    print("store figures: end to end ok")


if __name__ == "__main__":
    main()
