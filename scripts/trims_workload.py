#!/usr/bin/python3
"""TrIMS figure 11 in simulation (experiments/trims/workload.yaml): per point of its sweep
(share of Table 3's models run x concurrency) and seed, two runs of `servelab simulate` on
experiments/trims/configs/workload-run.yaml, on the same requests: with TrIMS's store (the models
shared, a GPU tier of half their footprint, LRU) and without sharing (every request loads a
private copy: engine.weights: private). Writes the results in `servelab run`'s layout
(scripts/store_results.py), which reports/report.py turns into the figure's page.

With --real MODELS_DIR, the figure on this machine instead (experiments/trims/
workload-local.yaml): the same two runs per point, each a real run of `servelab run --mode
real` on experiments/trims/configs/workload-local.yaml (the engine serving copies of one
TorchScript model from MODELS_DIR over HTTP, room for half of them in host memory), and the
number of copies run in place of the share of Table 3.

Metrics per point: `speedup`, the geometric mean over the models run of their p95 latency
without sharing over with it (TrIMS's footnote 3); `batch_speedup`, the time the whole batch
of requests takes without sharing over with it; `gpu_hit_ratio`, the share of requests the
store answered without a load; `private_load_ratio`, the share of requests without sharing
that waited for a load of their own (1 by construction: a check of the runs); and the run
with sharing's `latency_mean_ms`, `latency_p99_ms` and `throughput_rps`, which a page
compares between the simulator and the real engine.

Usage: trims_workload.py SERVELAB OUT_DIR [--requests N] [--seeds 1,2,3]
                         [--fractions 0.1,0.5] [--concurrency 1,4]
                         [--real MODELS_DIR [--no-predict] [--model NAME] [--profile FILE]]
"""
import argparse
import collections
import csv
import json
import math
import os
import random
import shutil
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
LOCAL_SPEC = os.path.join(ROOT, "experiments", "trims", "workload-local.yaml")
LOCAL_CONFIG = os.path.join(ROOT, "experiments", "trims", "configs", "workload-local.yaml")
# A completed request of a run: its model, latency, whether it waited for a load, and when it
# was sent, finished and its batch began computing (seconds).
Row = collections.namedtuple("Row", "model latency waited arrival finish start")
# What every run of a point and seed shares: closed-loop clients (and workers), the seed of
# the arrivals and the access pattern, and the requests a run.
Point = collections.namedtuple("Point", "concurrency seed requests")


def chosen_models(all_models, fraction, seed):
    """The first round(fraction x all) models of a seeded shuffle: the point's models, the
    first the most popular under the Pareto draw."""
    order = list(all_models)
    random.Random(seed).shuffle(order)
    return order[:max(1, round(fraction * len(order)))]


def point_sets(point):
    """The --set values every run of a point has."""
    concurrency, seed = point.concurrency, point.seed
    return {
        "engine.workers": str(concurrency),
        "engine.contexts": str(concurrency),
        "workload.requests": str(point.requests),
        "workload.arrival": f"{{type: closed, concurrency: {concurrency}, seed: {seed}}}",
        "workload.access": f"{{type: pareto, alpha: 1, seed: {seed}}}",
    }


def run_servelab(cmd):
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"trims_workload: {' '.join(cmd)} failed:\n{done.stderr[-4000:]}")


def with_sets(cmd, sets):
    for key, value in sets.items():
        cmd += ["--set", f"{key}={value}"]
    return cmd


def simulate(servelab, out, models, point, private, preload=None):
    """The completed requests (read_requests) of one run of RUN_CONFIG with these settings;
    `preload` (none | host | device) overrides the store's start (the config's: empty)."""
    sets = {"models": "[" + ", ".join(models) + "]", **point_sets(point)}
    if preload:
        sets["simulation.preload"] = preload
    if private:  # every request's own copy: nothing kept, so no budget and nothing to load
        sets.update({"engine.weights": "private", "simulation.preload": "device",
                     "engine.tiers": "{}"})
    run_servelab(with_sets([servelab, "simulate", RUN_CONFIG, "--out", out], sets))
    return read_requests(os.path.join(out, "requests.csv"))


def serve(args, out, count, point, private):
    """{mode: completed requests} of one run of LOCAL_CONFIG by `servelab run` (real: the
    engine in-process, the load over HTTP; and unless args.no_predict, sim: its prediction on
    this machine's profile, measured before) with `count` copies of args.model (the config's
    when none) from args.real, args.profile's costs (the config's when none)."""
    modes = ["real"] if args.no_predict else ["real", "sim"]
    extra = {"models.profile_model": args.model} if args.model else {}
    # `servelab run` seeds the workload's access and arrival from the experiment's seed, over
    # the config's: the point's seed goes there.
    sets = {"models.count": str(count), **point_sets(point), **extra, "seeds": f"[{point.seed}]"}
    if private:
        sets.update({"engine.weights": "private", "engine.tiers": "{}"})
    shutil.rmtree(out, ignore_errors=True)
    mode = modes[0] if len(modes) == 1 else "both"
    cmd = [args.servelab, "run", LOCAL_CONFIG, "--mode", mode, "--out", out, "--models-dir",
           args.real] + (["--profile", args.profile] if args.profile else [])
    run_servelab(with_sets(cmd, sets))
    return {m: read_requests(os.path.join(out, "runs", f"p000-{m}-r0", "requests.csv"))
            for m in modes}


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
        "private_load_ratio": sum(1 for r in private if r.waited) / len(private),
        "latency_p95_ms": percentile([r.latency for r in shared], 0.95) * 1000,
        # The run with sharing as any served run reports it (the simulator-vs-real columns).
        "latency_mean_ms": sum(r.latency for r in shared) / len(shared) * 1000,
        "latency_p99_ms": percentile([r.latency for r in shared], 0.99) * 1000,
        "throughput_rps": len(shared) / makespan(shared),
        "private_latency_p95_ms": percentile([r.latency for r in private], 0.95) * 1000,
        "models_run": len(ratios),
    }


def optimum_metrics(run_dir):
    """The tier the models run from (the GPU's at paper scale, the host's on this machine)
    against its offline optimum, as the run's summary.json states it (its cache_optimum:
    LRU's loads, the fewest possible), as the page's columns; {} where it states none."""
    try:
        with open(os.path.join(run_dir, "summary.json")) as f:
            o = json.load(f).get("cache_optimum")
    except OSError:
        return {}
    if not o:
        return {}
    return {"optimum_loads": o["loads"], "optimum_lower": o["optimum_lower"],
            "optimum_upper": o["optimum_upper"], "loads_over_optimum": o["loads_over_optimum"]}


def run_one(args, run_config, tmp, params, seed, requests, private):
    """{mode: completed requests} of one run of a point: simulated on Table 3's models, or
    real on copies of one model (and, unless --no-predict, the simulator's prediction)."""
    out = os.path.join(tmp, "private" if private else "shared")
    point = Point(params["concurrency"], seed, requests)
    if args.real:
        count = max(1, round(params["models_fraction"] * run_config["models"]["count"]))
        return serve(args, out, count, point, private)
    models = chosen_models(run_config["models"], params["models_fraction"], seed)
    return {"sim": simulate(args.servelab, out, models, point, private)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("servelab")
    ap.add_argument("out_dir")
    ap.add_argument("--requests", type=int, default=None,
                    help="requests a run (default: the run config's)")
    ap.add_argument("--seeds", help="comma-separated (default: the experiment's)")
    ap.add_argument("--fractions", help="shares of the models run, comma-separated "
                    "(default: the experiment's sweep)")
    ap.add_argument("--concurrency", help="concurrent requests, comma-separated "
                    "(default: the experiment's sweep)")
    ap.add_argument("--real", metavar="MODELS_DIR",
                    help="measure on this machine (workload-local.yaml) with these models")
    ap.add_argument("--no-predict", action="store_true",
                    help="with --real: no simulated prediction beside each real run")
    ap.add_argument("--model", help="with --real: the model file copied (default: the "
                    "config's, mobilenet_v3_small)")
    ap.add_argument("--profile", help="with --real: the cost profile (default: the config's, "
                    "this machine's, measured first when missing)")
    args = ap.parse_args(argv)
    spec = store_results.load_spec(LOCAL_SPEC if args.real else SPEC)
    if args.fractions:
        spec["sweep"]["models_fraction"] = [float(v) for v in args.fractions.split(",")]
    if args.concurrency:
        spec["sweep"]["concurrency"] = [int(v) for v in args.concurrency.split(",")]
    with open(LOCAL_CONFIG if args.real else RUN_CONFIG) as f:
        run_config = yaml.safe_load(f)
    requests = args.requests or run_config["workload"]["requests"]
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else spec["seeds"]
    spec["repetitions"], spec["seeds"] = len(seeds), seeds
    runs, started = [], time.time()
    with tempfile.TemporaryDirectory(prefix="trims-workload-") as tmp:
        for _, params in store_results.sweep_points(spec):
            for rep, seed in enumerate(seeds):
                t0 = time.time()
                shared, private = (run_one(args, run_config, tmp, params, seed, requests, p)
                                   for p in (False, True))
                for mode in shared:
                    metrics = point_metrics(shared[mode], private[mode])
                    shared_dir = (os.path.join(tmp, "shared", "runs", f"p000-{mode}-r0")
                                  if args.real else os.path.join(tmp, "shared"))
                    metrics.update(optimum_metrics(shared_dir))  # the run with sharing
                    runs.append({"params": params, "mode": mode, "repetition": rep,
                                 "wall_s": time.time() - t0, "metrics": metrics})
    out = os.path.join(args.out_dir, spec["name"])
    store_results.write_results(out, spec, runs)
    print(f"trims_workload: {len(runs)} points x seeds in {time.time() - started:.0f} s -> "
          f"{out}", file=sys.stderr)
    print(json.dumps({"out": out, "runs": len(runs)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
