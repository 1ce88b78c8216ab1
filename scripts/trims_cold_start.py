#!/usr/bin/python3
"""TrIMS figure 8 at paper scale in simulation (experiments/trims/speedup-paper.yaml): per
Table 3 model, one request through `servelab simulate` on experiments/trims/configs/
workload-run.yaml without sharing (its own copy from disk), with the model resident on the GPU
in the store, and from disk through the store; the speedups over no sharing, written in
`servelab run`'s layout (scripts/store_results.py) for reports/report.py.

Usage: trims_cold_start.py SERVELAB OUT_DIR [--models a,b]
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import store_results  # noqa: E402
import trims_workload  # noqa: E402

SPEC = os.path.join(trims_workload.ROOT, "experiments", "trims", "speedup-paper.yaml")
# Case -> (private loads, where the store starts).
CASES = {"none": (True, None), "store-warm": (False, "device"), "store-cold": (False, "none")}


def first_answer_s(servelab, tmp, model, case):
    private, preload = CASES[case]
    rows = trims_workload.simulate(servelab, os.path.join(tmp, case), [model], 1, 1, 1,
                                   private, preload)
    (row,) = rows
    return row[1]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("servelab")
    ap.add_argument("out_dir")
    ap.add_argument("--models", help="Table 3 models, comma-separated (default: the sweep's)")
    args = ap.parse_args(argv)
    spec = store_results.load_spec(SPEC)
    if args.models:
        spec["sweep"]["model"] = args.models.split(",")
    runs = []
    with tempfile.TemporaryDirectory(prefix="trims-cold-start-") as tmp:
        for model in spec["sweep"]["model"]:
            times = {case: first_answer_s(args.servelab, tmp, model, case) for case in CASES}
            for case in spec["sweep"]["case"]:
                runs.append({"params": {"model": model, "case": case}, "mode": "sim",
                             "metrics": {"speedup": times["none"] / times[case],
                                         "first_answer_ms": times[case] * 1000}})
    out = os.path.join(args.out_dir, spec["name"])
    store_results.write_results(out, spec, runs)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
