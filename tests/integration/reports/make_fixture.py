#!/usr/bin/python3
"""Writes a synthetic results folder in the layout of `servelab run` (results.db schema and
experiment.yaml) so the report can be tested without running an experiment."""
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
  summary TEXT);
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
    x: workload.arrival.concurrency
    x_scale: log2
    series: policies.batching.name
workload:
  warmup: 0.5
"""


def main(out):
    os.makedirs(out, exist_ok=True)
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
                    thr = (100 * min(c, 8) if pol != "none" else 100) * rng.uniform(0.9, 1.1)
                    lat = 1000.0 * c / thr
                    con.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?)",
                                (run, pid, mode, rep, rep + 1, f"runs/{run}", "ok", None, 0.1))
                    con.execute("INSERT INTO summaries VALUES (?,?,?,?,?,?,?,?)",
                                (run, 100, 100, thr, lat, lat * 1.5, lat * 2, "{}"))
    con.commit()


if __name__ == "__main__":
    main(sys.argv[1])
