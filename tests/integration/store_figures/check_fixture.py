#!/usr/bin/python3
"""Test: the pure parts of the weight store's figures (scripts/store_results.py), no server:
the memory prediction from manifests' bytes, the first answer's time split, the memory
spec's count rewriting, and pages built from fixture results folders (fixture.py) whose
every check is computed and holds, or misses, as the numbers say."""
import math
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fixture  # noqa: E402
import store_results as sr  # noqa: E402  (fixture put scripts/ on the path)

sys.path.insert(0, os.path.join(fixture.SRC, "reports"))
import results_db  # noqa: E402
import verdict  # noqa: E402


def check_prediction():
    # Two variants share blob b (100 bytes); each has its own head (10 and 20 bytes).
    manifests = [{"b": 100, "h0": 10}, {"b": 100, "h1": 20}, {"b": 100, "h0": 10}]
    assert sr.cumulative_bytes(manifests) == [(110, 110), (130, 230), (130, 340)]
    base = {True: 1000, False: 1000}
    first = {True: 1150, False: 1150}  # overhead 40 beyond the first model's 110 bytes
    got = sr.predict_memory(manifests, base, first)
    assert [g[True] for g in got] == [1150, 1000 + 130 + 80, 1000 + 130 + 120], got
    assert [g[False] for g in got] == [1150, 1000 + 230 + 80, 1000 + 340 + 120], got


def check_split():
    parts = sr.time_split({"load_ms": 30.0, "compute_ms": 50.0, "queue_ms": 1.0,
                           "wall_ms": 100.0})
    assert parts == {"read": 0.0, "deserialize": 0.0, "copy": 0.0, "map": 0.0,
                     "load_wait": 30.0, "compute": 50.0, "queue": 1.0, "other": 19.0,
                     "load": 30.0}, parts
    parts = sr.time_split({"load_ms": 30.0, "compute_ms": 50.0, "queue_ms": 1.0,
                           "wall_ms": 100.0, "load_parts_ms": {"read": 4.0, "deserialize": 20.0,
                                                               "copy": 0.0, "share": 5.0}})
    assert parts["read"] == 4.0 and parts["deserialize"] == 20.0 and parts["map"] == 5.0
    assert math.isclose(parts["load_wait"], 1.0) and parts["other"] == 19.0, parts
    assert math.isclose(sr.geometric_mean([1.0, 4.0]), 2.0)


def check_count_rewrite():
    spec = sr.spec_for_count(fixture.spec("pretzel", "memory"), 5)
    assert spec["sweep"]["variants"] == [1, 2, 3, 4, 5]
    check = spec["figures"][0]["checks"][0]
    assert check["of"]["variants"] == 5 and check["over"]["variants"] == 5, check
    assert spec["labels"]["variants"] == {5: "the last variant"}, spec["labels"]
    assert not verdict.problems(spec, spec["figures"][0])


def page_verdicts(out, holds):
    """Renders every folder; returns {folder: [(verdict, says)]} read back from its page."""
    pages = {}
    for path in fixture.write_all(out, holds):
        subprocess.run([sys.executable, os.path.join(fixture.SRC, "reports", "report.py"), path,
                        "--formats", "png,svg"], check=True, stdout=subprocess.DEVNULL)
        md = open(os.path.join(path, "report", "report.md")).read()
        lines = re.findall(r"^- (holds|does not hold here|within noise|not measured): (.*?): "
                           r"computed: (.*)$", md, flags=re.M)
        exp = results_db.load(path)
        for fig in exp.spec["figures"]:
            assert os.path.getsize(os.path.join(path, "report", fig["id"] + ".png")) > 1000
            assert os.path.exists(os.path.join(path, "report", fig["id"] + ".svg"))
            assert len(lines) == len(fig["checks"]) * len(exp.modes), (path, lines)
        pages[os.path.basename(path)] = lines
    return pages


def check_pages():
    with tempfile.TemporaryDirectory() as tmp:
        good = page_verdicts(os.path.join(tmp, "holds"), True)
        for name, lines in good.items():
            assert all(v == verdict.HOLDS for v, _, _ in lines), (name, lines)
        for path in fixture.write_all(os.path.join(tmp, "fails"), False):
            exp = results_db.load(path)
            for fig in exp.spec["figures"]:
                for mode, (overall, results) in verdict.figure_verdicts(
                        exp, fig, exp.modes).items():
                    assert overall == verdict.FAILS, (path, mode, overall)
                    assert all(r["verdict"] != verdict.UNKNOWN for r in results), results
        subprocess.run([sys.executable, os.path.join(fixture.SRC, "reports", "index.py"),
                        os.path.join(tmp, "holds")], check=True, stdout=subprocess.DEVNULL)
        index = open(os.path.join(tmp, "holds", "index.md")).read()
        for title in ("PRETZEL figure 2", "PRETZEL figure 3", "TrIMS figure 8", "TrIMS figure 9",
                      "TrIMS figure 10"):
            assert title in index, title


check_prediction()
check_split()
check_count_rewrite()
check_pages()
print("store figures: fixture ok")
