#!/usr/bin/python3
"""Test: a caching experiment's page states each policy's distance from the offline optimum.
Runs experiments/regression/caching.yaml (LRU, LFU, FIFO; 8 models, room for 4) in
simulation, writes its page, and checks the page's table "The cache against its offline
optimum" against each run's summary.json: one row per point, its loads and optimum as the
summary says, the ratio loads / optimum at least 1 (no policy loads less than the optimum);
and with simulation.cache_optimum false the page has no such table.

usage: check_cache_optimum.py SERVELAB_BINARY
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
TITLE = "## The cache against its offline optimum"


def page(binary, out, *sets):
    cmd = [binary, "run", os.path.join(SRC, "experiments", "regression", "caching.yaml"),
           "--mode", "sim", "--out", out, "--quiet"]
    for s in sets:
        cmd += ["--set", s]
    subprocess.run(cmd, check=True)
    subprocess.run(["/usr/bin/python3", os.path.join(SRC, "reports", "report.py"), out],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["/usr/bin/python3", os.path.join(SRC, "reports", "page_rules.py"), out],
                   check=True)
    with open(os.path.join(out, "report", "report.md")) as f:
        return f.read()


def optimum_rows(md):
    lines = md.split(TITLE, 1)[1].splitlines()
    return [[c.strip() for c in l.strip("|").split("|")] for l in lines
            if l.startswith("| ") and not l.startswith("| point")]


def main(binary):
    with tempfile.TemporaryDirectory() as tmp:
        md = page(binary, os.path.join(tmp, "on"))
        assert TITLE in md, "the page has no optimum table"
        rows = optimum_rows(md)
        found = sorted(glob.glob(os.path.join(tmp, "on", "runs", "*", "summary.json")))
        summaries = [json.load(open(p))["cache_optimum"] for p in found]
        assert len(rows) == len(summaries) == 9, (len(rows), len(summaries))
        for row, s in zip(rows, summaries):  # points in order, one run each
            _, mode, loads, fewest, ratio = row
            assert mode == "sim" and int(loads) == s["loads"], (row, s)
            assert s["optimum_lower"] == s["optimum_upper"] == int(fewest), (row, s)  # equal sizes
            assert float(ratio) == round(s["loads"] / s["optimum_lower"], 2), (row, s)
            assert s["loads"] >= s["optimum_lower"] > 0, s
        md_off = page(binary, os.path.join(tmp, "off"), "simulation.cache_optimum=false")
        assert TITLE not in md_off, "the optimum table is there though the runs left it out"
    print("check_cache_optimum: ok")


if __name__ == "__main__":
    main(sys.argv[1])
