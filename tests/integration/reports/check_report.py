#!/usr/bin/python3
"""Test: the report of a synthetic results folder has its figures and correct error columns."""
import os
import sqlite3
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
src = os.path.abspath(os.path.join(here, "..", "..", ".."))
with tempfile.TemporaryDirectory() as tmp:
    subprocess.run([sys.executable, os.path.join(here, "make_fixture.py"), tmp], check=True)
    subprocess.run([sys.executable, os.path.join(src, "reports", "report.py"), tmp], check=True,
                   stdout=subprocess.DEVNULL)
    rep = os.path.join(tmp, "report")
    for f in ["fig5.png", "fig5.svg", "report.md", "report.html"]:
        assert os.path.getsize(os.path.join(rep, f)) > 0, f"missing {f}"
    con = sqlite3.connect(os.path.join(tmp, "results.db"))
    sim, real = [con.execute(
        "SELECT avg(throughput_rps) FROM runs JOIN summaries USING (run_id) JOIN points "
        "USING (point_id) WHERE mode=? AND workload_arrival_concurrency=4 AND "
        "policies_batching_name='none'", (m,)).fetchone()[0] for m in ("sim", "real")]
    expected = f"{(sim - real) / real * 100:+.1f}%"
    md = open(os.path.join(rep, "report.md")).read()
    row = next(line for line in md.splitlines() if line.startswith("| 4 | none |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[4] == expected, f"throughput error {cells[4]} != {expected}"
    # Each cell: the mean over the two repetitions ± their sample standard deviation.
    a, b = [r[0] for r in con.execute(
        "SELECT throughput_rps FROM runs JOIN summaries USING (run_id) JOIN points "
        "USING (point_id) WHERE mode='sim' AND workload_arrival_concurrency=4 AND "
        "policies_batching_name='none' ORDER BY repetition")]
    sd = abs(a - b) / 2 ** 0.5
    assert cells[2] == f"{sim:.1f} ± {sd:.1f}", f"sim throughput cell {cells[2]}"
    assert "2 repetitions per point" in md
    assert "first 0.5 s are run and recorded" in md, "the page says the warm-up is left out"
    assert "Paper's claim: throughput grows" in md
print("report ok")
