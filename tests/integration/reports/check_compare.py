#!/usr/bin/python3
"""Test: `servelab report RUN_A --compare RUN_B` puts two results folders side by side: every
shared point, mode and metric with A's and B's value and their difference, one plot, and the
same table as compare.csv; a report writes each figure's table as CSV too."""
import csv
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
src = os.path.abspath(os.path.join(here, "..", "..", ".."))
report = os.path.join(src, "reports", "report.py")
with tempfile.TemporaryDirectory() as tmp:
    a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
    subprocess.run([sys.executable, os.path.join(here, "make_fixture.py"), a], check=True)
    subprocess.run([sys.executable, os.path.join(here, "make_fixture.py"), b, "--claim-fails"],
                   check=True)
    subprocess.run([sys.executable, report, a, "--compare", b], check=True,
                   stdout=subprocess.DEVNULL)
    out = os.path.join(a, "compare")
    for f in ("compare.md", "compare.html", "compare.png", "compare.csv"):
        assert os.path.getsize(os.path.join(out, f)) > 0, f"missing {f}"
    rows = list(csv.DictReader(open(os.path.join(out, "compare.csv"))))
    # 10 points x 2 modes x 3 metrics the fixture measures (throughput, mean, p99).
    assert len(rows) == 60, len(rows)
    r = next(x for x in rows if x["point"] == "c=16 rafiqi-ewma" and
             x["mode"] == "sim" and x["metric"] == "throughput_rps")
    a_mean, b_mean = float(r["a_mean"]), float(r["b_mean"])
    assert b_mean < a_mean, "batching pays in A, not in B"
    assert abs(float(r["b_minus_a"]) - (b_mean - a_mean)) < 1e-9
    assert abs(float(r["relative"]) - (b_mean - a_mean) / a_mean) < 1e-9
    md = open(os.path.join(out, "compare.md")).read()
    assert "| point | mode | metric | A | B | B - A | (B - A) / A |" in md
    # A report writes its figure's table as CSV, the same cells as the page.
    subprocess.run([sys.executable, report, a, "--formats", "png"], check=True,
                   stdout=subprocess.DEVNULL)
    table = list(csv.reader(open(os.path.join(a, "report", "fig5.csv"))))
    assert table[0][0] == "concurrency" and len(table) == 11, table[:2]
print("compare ok")
