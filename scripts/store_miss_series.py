#!/usr/bin/python3
"""A model's misses in one serving process against the profile measured just before them:
tells a cost that only a fresh process pays (its first miss dearer than the later ones) from
the machine's drift between a profile and the runs it predicts (every miss off alike).

Each round measures the model's profile (`servelab measure --source-loads`: its load from
its file in the page cache and the first batch's extra on the fresh module), then starts a
fresh `servelab serve` whose host tier holds one model, registers HOLDER and MODEL, and
serves MISSES requests for MODEL, each after one for HOLDER, so that every one waits for
MODEL's load. Prints per round the profile's load and first-batch compute, each miss's load
and compute (the engine's answer), the first miss over the median of the later ones, and the
median miss over the profile.

  store_miss_series.py SERVELAB MODELS_DIR MODEL [--misses 6] [--rounds 2] [--holder tiny_cnn]
"""
import argparse
import os
import statistics
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from store_processes import Server  # noqa: E402
import store_predictions as sp  # noqa: E402

def profiled(servelab, models_dir, model, tmp):
    """(load ms, first batch compute ms) of `model` from its file, as profiled now."""
    out = os.path.join(tmp, "profile.yaml")
    sp.measure_profile(servelab, models_dir, [model], out, quiet=True)
    with open(out) as f:
        entry = yaml.safe_load(f)["models"][model]
    cost = entry["load_sources_ms"]["file"]
    return (sum(cost.get(p, 0.0) for p in sp.PHASES),
            entry["batch_latency_ms"][0]["mean"] + cost.get("first_batch", 0.0))


def served_misses(servelab, models_dir, model, holder, misses, tmp):
    """[(load ms, compute ms)] of `misses` requests for `model` in one fresh server, each
    after a request for `holder` took the host tier's one place."""
    out = []
    with Server(servelab, os.path.join(tmp, "store"), models_dir, None, host_models=1) as s:
        s.register(holder)
        s.register(model)
        for _ in range(misses):
            s.classify(holder)
            answer = s.classify(model)
            if answer.get("load_ms", 0.0) <= 0:
                sys.exit(f"store_miss_series: a request for {model} did not wait for its load")
            out.append((answer["load_ms"], answer["compute_ms"]))
    return out


def ratio(a, b):
    return a / b if b > 0 else float("nan")


def report(round_no, profile, misses):
    print(f"round {round_no}: profile: load {profile[0]:.1f} ms, first batch {profile[1]:.1f} ms")
    for k, (load, compute) in enumerate(misses, 1):
        print(f"  miss {k}: load {load:.1f} ms, compute {compute:.1f} ms")
    for i, part in enumerate(("load", "compute")):
        later = statistics.median(m[i] for m in misses[1:])
        every = statistics.median(m[i] for m in misses)
        print(f"  {part}: first miss / median of later ones {ratio(misses[0][i], later):.2f}; "
              f"median miss / profile {ratio(every, profile[i]):.2f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("servelab")
    ap.add_argument("models_dir")
    ap.add_argument("model")
    ap.add_argument("--misses", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--holder", default="tiny_cnn")
    args = ap.parse_args(argv)
    if args.misses < 2 or args.rounds < 1:
        ap.error("--misses must be at least 2 and --rounds at least 1")
    for r in range(1, args.rounds + 1):
        with tempfile.TemporaryDirectory(prefix="store-miss-series-") as tmp:
            profile = profiled(args.servelab, args.models_dir, args.model, tmp)
            misses = served_misses(args.servelab, args.models_dir, args.model, args.holder,
                                   args.misses, tmp)
        report(r, profile, misses)


if __name__ == "__main__":
    main()
