#!/usr/bin/python3
"""TrIMS figure 11 in simulation (experiments/trims/workload.yaml): per point of its sweep
(share of Table 3's models run x concurrency) and seed, two runs of `servelab simulate` on
experiments/trims/configs/workload-run.yaml, on the same requests: with TrIMS's store (the models
shared, a GPU tier of half their footprint, LRU) and without sharing (every request loads a
private copy: simulation.weights: private). Writes the results in `servelab run`'s layout
(scripts/store_results.py), which reports/report.py turns into the figure's page.

Metrics per point: `speedup`, the geometric mean over the models run of their p95 latency
without sharing over with it (TrIMS's footnote 3); `batch_speedup`, the time the whole batch
of requests takes without sharing over with it; `gpu_hit_ratio`, the share of requests the
store answered without a load.

Usage: trims_workload.py SERVELAB OUT_DIR [--requests N] [--seeds 1,2,3]
                         [--fractions 0.1,0.5] [--concurrency 1,4]
"""
import argparse
import collections
import csv
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import store_results  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SPEC = os.path.join(ROOT, "experiments", "trims", "workload.yaml")
RUN_CONFIG = os.path.join(ROOT, "experiments", "trims", "configs", "workload-run.yaml")
# A completed request of a run: its model, latency, whether it waited for a load, and when it
# was sent, finished and its batch began computing (seconds).
Row = collections.namedtuple("Row", "model latency waited arrival finish start")


def chosen_models(all_models, fraction, seed):
    """The first round(fraction x all) models of a seeded shuffle: the point's models, the
    first the most popular under the Pareto draw."""
    order = list(all_models)
    random.Random(seed).shuffle(order)
    return order[:max(1, round(fraction * len(order)))]


def simulate(servelab, out, models, concurrency, seed, requests, private, preload=None):
    """The completed requests (read_requests) of one run of RUN_CONFIG with these settings;
    `preload` (none | host | device) overrides the store's start (the config's: empty)."""
    sets = {
        "models": "[" + ", ".join(models) + "]",
        "engine.workers": str(concurrency),
        "engine.contexts": str(concurrency),
        "workload.requests": str(requests),
        "workload.arrival": f"{{type: closed, concurrency: {concurrency}, seed: {seed}}}",
        "workload.access": f"{{type: pareto, alpha: 1, seed: {seed}}}",
    }
    if preload:
        sets["simulation.preload"] = preload
    if private:  # every request's own copy: nothing kept, so no budget and nothing to load
        sets.update({"simulation.weights": "private", "simulation.preload": "device",
                     "engine.tiers": "{}"})
    cmd = [servelab, "simulate", RUN_CONFIG, "--out", out]
    for key, value in sets.items():
        cmd += ["--set", f"{key}={value}"]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"trims_workload: {' '.join(cmd)} failed:\n{done.stderr}")
    return read_requests(os.path.join(out, "requests.csv"))


def read_requests(path):
    """The completed requests (Row), in id order."""
    rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["status"] == "ok":
                arrival, finish = float(r["arrival"]), float(r["finish"])
                rows.append(Row(r["model"], finish - arrival, r["waited_for_load"] == "1",
                                arrival, finish, float(r["start"])))
    return rows


def percentile(values, q):
    """The q-quantile by linear interpolation between order statistics."""
    xs = sorted(values)
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def p95_by_model(rows):
    by = {}
    for r in rows:
        by.setdefault(r.model, []).append(r.latency)
    return {m: percentile(v, 0.95) for m, v in by.items()}


def makespan(rows):
    return max(r.finish for r in rows) - min(r.arrival for r in rows)


def point_metrics(shared, private):
    """The figure's metrics from the two runs of one point (same requests)."""
    with_store, without = p95_by_model(shared), p95_by_model(private)
    ratios = [without[m] / with_store[m] for m in with_store if m in without and with_store[m] > 0]
    return {
        "speedup": store_results.geometric_mean(ratios),
        "batch_speedup": makespan(private) / makespan(shared),
        "gpu_hit_ratio": sum(1 for r in shared if not r.waited) / len(shared),
        "latency_p95_ms": percentile([r.latency for r in shared], 0.95) * 1000,
        "private_latency_p95_ms": percentile([r.latency for r in private], 0.95) * 1000,
        "models_run": len(ratios),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("servelab")
    ap.add_argument("out_dir")
    ap.add_argument("--requests", type=int, default=None,
                    help="requests a run (default: the run config's)")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--fractions", help="shares of the models run, comma-separated "
                    "(default: the experiment's sweep)")
    ap.add_argument("--concurrency", help="concurrent requests, comma-separated "
                    "(default: the experiment's sweep)")
    args = ap.parse_args(argv)
    spec = store_results.load_spec(SPEC)
    if args.fractions:
        spec["sweep"]["models_fraction"] = [float(v) for v in args.fractions.split(",")]
    if args.concurrency:
        spec["sweep"]["concurrency"] = [int(v) for v in args.concurrency.split(",")]
    with open(RUN_CONFIG) as f:
        run_config = yaml.safe_load(f)
    all_models = run_config["models"]
    requests = args.requests or run_config["workload"]["requests"]
    seeds = [int(s) for s in args.seeds.split(",")]
    spec["repetitions"], spec["seeds"] = len(seeds), seeds
    runs, started = [], time.time()
    with tempfile.TemporaryDirectory(prefix="trims-workload-") as tmp:
        for _, params in store_results.sweep_points(spec):
            for rep, seed in enumerate(seeds):
                models = chosen_models(all_models, params["models_fraction"], seed)
                t0 = time.time()
                shared = simulate(args.servelab, os.path.join(tmp, "shared"), models,
                                  params["concurrency"], seed, requests, False)
                private = simulate(args.servelab, os.path.join(tmp, "private"), models,
                                   params["concurrency"], seed, requests, True)
                runs.append({"params": params, "mode": "sim", "repetition": rep,
                             "wall_s": time.time() - t0,
                             "metrics": point_metrics(shared, private)})
    out = os.path.join(args.out_dir, spec["name"])
    store_results.write_results(out, spec, runs)
    print(f"trims_workload: {len(runs)} points x seeds in {time.time() - started:.0f} s -> "
          f"{out}", file=sys.stderr)
    print(json.dumps({"out": out, "runs": len(runs)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
