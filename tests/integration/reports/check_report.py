#!/usr/bin/python3
"""Test: the report of a synthetic results folder has its figures, correct error columns, and
a verdict on the paper's claim computed from the results: it holds on a fixture where batching
pays and flips, with the profile's per-image costs as the reason, on one where it does not."""
import json
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
    assert "> throughput grows" in md
    assert "Verdict (simulated): the claim holds." in md, "verdict where the claim holds"
    assert "Verdict (real (engine over HTTP)): the claim holds." in md
    assert "- holds: Rafiqi batching beats none at 16 in flight in throughput: computed: throughput (req/s) at " in md
    assert "the measured reason" not in md, "no reason needed where the claim holds"

with tempfile.TemporaryDirectory() as tmp:
    subprocess.run([sys.executable, os.path.join(here, "make_fixture.py"), tmp, "--claim-fails"],
                   check=True)
    subprocess.run([sys.executable, os.path.join(src, "reports", "report.py"), tmp], check=True,
                   stdout=subprocess.DEVNULL)
    md = open(os.path.join(tmp, "report", "report.md")).read()
    html = open(os.path.join(tmp, "report", "report.html")).read()
    assert "Verdict (simulated): the claim does not hold here." in md, md
    line = next(x for x in md.splitlines() if "batching beats none at 16" in x)
    assert line.startswith("- does not hold here:"), line
    assert "(the claim needs >= 1.2; noise: ± " in line, line
    assert "- holds: no batching: flat throughput" in md, "the checks are judged one by one"
    # The reason: the profile's per-image cost rises with the batch (10 ms alone, 13.8 at 16).
    assert "per-image cost (ms) by batch size 1: 10.0, 2: 11.0, 4: 12.0, 8: 12.5, 16: 13.8" in md
    assert "The cheapest is batch 1 at 10.0 ms" in md
    # The batches at the points the failed check read, not every series at its highest load.
    assert ("At the points the failed checks read: concurrency 16, rafiqi-ewma: mean batch "
            "16.0, 13.8 ms per image; concurrency 16, none: mean batch 1.0") in md
    assert "does not hold here" in html
print("report ok")

# The index over several results folders carries each one's computed verdict.
with tempfile.TemporaryDirectory() as tmp:
    for name, args in (("pays", []), ("does-not-pay", ["--claim-fails"])):
        subprocess.run([sys.executable, os.path.join(here, "make_fixture.py"),
                        os.path.join(tmp, name), *args], check=True)
    # A training run beside them (what `servelab train` writes as train.json).
    os.makedirs(os.path.join(tmp, "train-single"))
    with open(os.path.join(tmp, "train-single", "train.json"), "w") as f:
        json.dump({"config": "/x/train-single.yaml", "episodes": 100, "seed": 1,
                   "training_seconds": 21.26, "decision_us": 7.94, "best_episode": 88,
                   "best_eval_attainment": 0.5843}, f)
    subprocess.run([sys.executable, os.path.join(src, "reports", "index.py"), tmp], check=True,
                   stdout=subprocess.DEVNULL)
    index = open(os.path.join(tmp, "index.md")).read()
    assert ("- train-single: train-single.yaml, 100 episodes (seed 1) in 21.3 s; mean decision "
            "time 7.9 us; best evaluation attainment 0.584 (episode 88). Learning curve: "
            "train-single/learning_curve.png") in index, index
    sections = index.split("\n## ")
    pays = next(x for x in sections if "Report: pays/report/report.html" in x)
    fails = next(x for x in sections if "Report: does-not-pay/report/report.html" in x)
    assert "- simulated: the claim holds (2 of 2 checks hold)" in pays, index
    assert "- simulated: the claim does not hold here (1 of 2 checks hold; not: Rafiqi " \
           "batching beats none at 16 in flight in throughput)" in fails, index
    assert os.path.getsize(os.path.join(tmp, "index.html")) > 0
    # A summary table first: a row per figure and mode (the paper's figure, what the figure
    # shows, which results folder), its verdict coloured in HTML.
    assert "| paper | figure | what it shows | results | mode | verdict |" in index, index
    assert ("| Rafiqi | figure 5 | Figure 5 (fixture) | does-not-pay | simulated | does not "
            "hold here |") in index, index
    html = open(os.path.join(tmp, "index.html")).read()
    assert "background:#f6c4c4'>does not hold here" in html
    assert "> Paper's claim (Rafiqi, section 5.0.1, figure 5): " in index, index
print("index ok")
