#!/usr/bin/python3
"""TrIMS figures 8 and 9 at paper scale in simulation (experiments/trims/speedup-paper.yaml,
breakdown-paper.yaml): per Table 3 model, one request through `servelab simulate` on
experiments/trims/configs/workload-run.yaml without sharing (its own copy from disk), with the
model resident on the GPU in the store, from disk through the store, and from host memory
through it (the copy alone); figure 8's speedups over no sharing and figure 9's split of the
no-sharing first answer, written in `servelab run`'s layout (scripts/store_results.py) for
reports/report.py.

Usage: trims_cold_start.py SERVELAB OUT_DIR [--models a,b]
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import store_results  # noqa: E402
import trims_workload  # noqa: E402

EXPERIMENTS = os.path.join(trims_workload.ROOT, "experiments", "trims")
SPEEDUP = os.path.join(EXPERIMENTS, "speedup-paper.yaml")
BREAKDOWN = os.path.join(EXPERIMENTS, "breakdown-paper.yaml")
# Case -> (private loads, where the store starts).
CASES = {"none": (True, None), "store-warm": (False, "device"), "store-cold": (False, "none"),
         "store-host": (False, "host")}


def first_answer(servelab, tmp, model, case):
    """(latency, load wait, compute) of the model's one request, in seconds."""
    private, preload = CASES[case]
    (row,) = trims_workload.simulate(servelab, os.path.join(tmp, case), [model],
                                     trims_workload.Point(concurrency=1, seed=1, requests=1),
                                     private, preload)
    return row.latency, row.start - row.arrival, row.finish - row.start


def split(t):
    """Figure 9's parts of one model's first answers, each over the no-sharing one: without
    the store, reading (the load from disk less the load from host memory), the copy (the
    load from host memory) and compute; with it (resident on the GPU), compute."""
    none = t["none"][0]
    read = t["store-cold"][1] - t["store-host"][1]
    copy = t["store-host"][1]
    return {False: {"share_read": read / none, "share_copy": copy / none,
                    "share_compute": t["store-cold"][2] / none,
                    "share_load": (read + copy) / none, "first_answer_ms": none * 1000},
            True: {"share_read": 0.0, "share_copy": 0.0,
                   "share_compute": t["store-warm"][0] / none, "share_load": 0.0,
                   "first_answer_ms": t["store-warm"][0] * 1000}}


def mean_split(splits):
    """The models' mean shares and the geometric mean of their first-answer times."""
    out = {}
    for store in (False, True):
        parts = [s[store] for s in splits]
        out[store] = {k: sum(p[k] for p in parts) / len(parts) for k in parts[0]}
        out[store]["first_answer_ms"] = store_results.geometric_mean(
            [p["first_answer_ms"] for p in parts])
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("servelab")
    ap.add_argument("out_dir")
    ap.add_argument("--models", help="Table 3 models, comma-separated (default: figure 8's)")
    args = ap.parse_args(argv)
    speedup, breakdown = store_results.load_spec(SPEEDUP), store_results.load_spec(BREAKDOWN)
    if args.models:
        speedup["sweep"]["model"] = args.models.split(",")
        breakdown["sweep"]["model"] = [m for m in breakdown["sweep"]["model"]
                                       if m in speedup["sweep"]["model"]] + ["mean"]
    fig8, fig9, splits = [], [], {}
    with tempfile.TemporaryDirectory(prefix="trims-cold-start-") as tmp:
        for model in speedup["sweep"]["model"]:
            t = {case: first_answer(args.servelab, tmp, model, case) for case in CASES}
            for case in speedup["sweep"]["case"]:
                fig8.append({"params": {"model": model, "case": case}, "mode": "sim",
                             "metrics": {"speedup": t["none"][0] / t[case][0],
                                         "first_answer_ms": t[case][0] * 1000}})
            splits[model] = split(t)
    splits["mean"] = mean_split(list(splits.values()))
    for model in breakdown["sweep"]["model"]:
        for store in breakdown["sweep"]["weight_store"]:
            fig9.append({"params": {"model": model, "weight_store": store}, "mode": "sim",
                         "metrics": splits[model][store]})
    for spec, runs in ((speedup, fig8), (breakdown, fig9)):
        out = os.path.join(args.out_dir, spec["name"])
        store_results.write_results(out, spec, runs)
        print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
