#!/usr/bin/python3
"""Writes a synthetic results folder in the layout of `servelab run` (results.db schema,
experiment.yaml, a config.yaml per run naming a cost profile) so the report can be tested
without running an experiment.

    make_fixture.py OUT                  # batching pays: the figure's claim holds
    make_fixture.py OUT --claim-fails    # batches cost more per image: throughput falls
"""
import json
import os
import random
import sqlite3
import sys

SCHEMA = """
CREATE TABLE points (point_id INTEGER PRIMARY KEY, label TEXT, params TEXT,
  workload_arrival_concurrency REAL, policies_batching_name TEXT);
CREATE TABLE runs (run_id INTEGER PRIMARY KEY, point_id INTEGER, mode TEXT, repetition INTEGER,
  seed INTEGER, dir TEXT, status TEXT, error TEXT, wall_s REAL);
CREATE TABLE summaries (run_id INTEGER PRIMARY KEY, requests REAL, completed REAL,
  throughput_rps REAL, latency_mean_ms REAL, latency_p90_ms REAL, latency_p99_ms REAL,
  mean_batch_size REAL, summary TEXT);
"""

SPEC = """name: fixture
paper: rafiqi
figure: "5"
claim: throughput grows with concurrency when batching
repetitions: 2
seeds: [1, 2]
sweep:
  workload.arrival.concurrency: [1, 2, 4, 8, 16]
  policies.batching.name: [rafiqi-ewma, none]
figures:
  - id: fig5
    title: "Figure 5 (fixture)"
    source: "section 5.0.1, figure 5"
    our_reading: the fixture's profile makes a batch cheaper per image, so we expect batching to pay
    x: workload.arrival.concurrency
    x_scale: log2
    series: policies.batching.name
    evidence: [batch_cost]
    checks:
      - says: "no batching: flat throughput"
        test: flat
        metric: throughput_rps
        where: {policies.batching.name: none}
        max: 1.3
      - says: "Rafiqi batching beats none at 16 in flight in throughput"
        test: ratio
        metric: throughput_rps
        of: {policies.batching.name: rafiqi-ewma, workload.arrival.concurrency: 16}
        over: {policies.batching.name: none, workload.arrival.concurrency: 16}
        min: 1.2
models: [fixturenet]
engine: {max_batch: 16}
workload:
  warmup: 0.5
"""


# Batch latency (ms) by size: per image falling (batching pays) or rising (it does not).
PROFILES = {False: {1: 10.0, 2: 12.0, 4: 16.0, 8: 24.0, 16: 40.0},
            True: {1: 10.0, 2: 22.0, 4: 48.0, 8: 100.0, 16: 220.0}}


def main(out, claim_fails=False):
    os.makedirs(out, exist_ok=True)
    profile = os.path.join(out, "profile.yaml")
    with open(profile, "w") as f:
        f.write("models:\n  fixturenet:\n    size_mb: 5\n    batch_latency_ms:\n" + "".join(
            f"      - {{batch: {b}, mean: {m}, stddev: 0.1}}\n"
            for b, m in PROFILES[claim_fails].items()))
    with open(os.path.join(out, "experiment.yaml"), "w") as f:
        f.write(SPEC)
    con = sqlite3.connect(os.path.join(out, "results.db"))
    con.executescript(SCHEMA)
    rng = random.Random(7)
    pid = run = 0
    for c in [1, 2, 4, 8, 16]:
        for pol in ["rafiqi-ewma", "none"]:
            pid += 1
            params = {"workload.arrival.concurrency": c, "policies.batching.name": pol}
            con.execute("INSERT INTO points VALUES (?,?,?,?,?)",
                        (pid, f"c={c} {pol}", json.dumps(params), c, pol))
            for mode in ["sim", "real"]:
                for rep in range(2):
                    run += 1
                    batch = 1 if pol == "none" else c
                    gain = 1000 / PROFILES[claim_fails][batch] * batch / 100
                    thr = 100 * gain * rng.uniform(0.9, 1.1)
                    lat = 1000.0 * c / thr
                    run_dir = os.path.join(out, "runs", str(run))
                    os.makedirs(run_dir)
                    with open(os.path.join(run_dir, "config.yaml"), "w") as f:
                        f.write(f"profile: {profile}\nmodels: [{{name: fixturenet, "
                                "profile_model: fixturenet}]\nengine: {max_batch: 16}\n")
                    con.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?)",
                                (run, pid, mode, rep, rep + 1, f"runs/{run}", "ok", None, 0.1))
                    con.execute("INSERT INTO summaries VALUES (?,?,?,?,?,?,?,?,?)",
                                (run, 100, 100, thr, lat, lat * 1.5, lat * 2, batch, "{}"))
    con.commit()


if __name__ == "__main__":
    main(sys.argv[1], "--claim-fails" in sys.argv[2:])
