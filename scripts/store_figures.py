#!/usr/bin/python3
"""The weight store's figures, measured on this machine (scripts/store-figures runs this):

  PRETZEL figure 2  cumulative PSS of one server after registering 1..N variants of one
                    backbone, with and without the store, and the prediction from the
                    store's manifests (mode sim);
  PRETZEL figure 3  cold (first request after registration) and hot latency of one variant;
  TrIMS figure 8    per model, the speedup of the first answer with the weights resident in
                    the store (a second process) and from disk (a cold store) over no sharing,
                    and the ideal (no load at all);
  TrIMS figure 9    the first answer's time split, with and without the store;
  TrIMS figure 10   large models (--large-models, exported by make-models --large): the
                    first answer's speedup resident in the store, its ideal, and the share of
                    the no-sharing time that is compute.

TrIMS figures 8-10 and PRETZEL figure 3 also have the simulator's prediction (mode sim,
scripts/store_predictions.py), made first, from a profile measured before any real run
(--profile: one given instead; it needs the models' and the first variant's load sources).

Each figure becomes a results folder (experiment.yaml from experiments/{pretzel,trims}/,
results.db) that reports/report.py turns into a page; reports/index.py indexes them.

  store_figures.py SERVELAB MODELS_DIR OUT [--family F] [--variants N] [--models a,b,c]
                   [--repetitions R] [--holder NAME] [--large-models a,b]
                   [--profile FILE | --no-predict]
"""
import argparse
import os
import re
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import store_points as pts  # noqa: E402
import store_predictions as sp  # noqa: E402
import store_results as sr  # noqa: E402
from store_processes import Server, data_pss_kb, drop_from_page_cache  # noqa: E402

HOT_REQUESTS = 5
MB = 1024 * 1024


def settle_pss(server, weights):
    """The PSS of the server's data in bytes (store_processes.data_pss_kb: anonymous memory
    and the blobs it maps) once it is idle (its last answer's buffers freed)."""
    time.sleep(0.3)
    return data_pss_kb(server.pid, weights) * 1024


def populate(args, weights, names):
    """Puts `names` into the weight store `weights` (PRETZEL's parameter store, populated
    offline), through a server that is stopped afterwards."""
    with tempfile.TemporaryDirectory(prefix="store-fig-") as tmp:
        with Server(args.servelab, os.path.join(tmp, "store"), args.models, weights) as s:
            for name in names:
                s.register(name)


def memory_runs(args, weights, names):
    """PRETZEL figure 2: PSS after each registration, measured and predicted."""
    measured, base, first = {}, {}, {}
    for shared in (False, True):
        with tempfile.TemporaryDirectory(prefix="store-fig-") as tmp:
            with Server(args.servelab, os.path.join(tmp, "store"), args.models,
                        weights if shared else None, host_models=len(names) + 1) as s:
                base[shared] = settle_pss(s, weights)
                series = []
                for name in names:
                    s.register(name)
                    s.classify(name)
                    series.append(settle_pss(s, weights))
                measured[shared] = series
                first[shared] = series[0]
    manifests = [sr.read_manifest(sr.skeleton_of(weights, os.path.join(args.models, n + ".pt")))
                 for n in names]
    predicted = sr.predict_memory(manifests, base, first)
    runs = []
    for k in range(1, len(names) + 1):
        for shared in (False, True):
            params = {"variants": k, "weight_store": shared}
            runs.append({"params": params, "mode": "real",
                         "metrics": {"pss_mb": measured[shared][k - 1] / MB}})
            runs.append({"params": params, "mode": "sim",
                         "metrics": {"pss_mb": predicted[k - 1][shared] / MB}})
    return runs


def variant_latency_runs(args, weights, names, predicted):
    """PRETZEL figure 3: a variant's first request after registration (its load is in the
    request's path: the server holds two other variants in its host tier) and later ones;
    and as predicted before (`predicted`: {with the store: (first answer, hot ms)}, or {})."""
    target, holders = names[0], names[1:3]
    runs = []
    for rep in range(args.repetitions):
        for shared in (False, True):
            with tempfile.TemporaryDirectory(prefix="store-fig-") as tmp:
                with Server(args.servelab, os.path.join(tmp, "store"), args.models,
                            weights if shared else None, host_models=len(holders)) as s:
                    for h in holders:
                        s.register(h)
                        s.classify(h)
                    s.register(target)
                    cold = s.classify(target)
                    hot = [s.classify(target)["wall_ms"] for _ in range(HOT_REQUESTS)]
            for temp, ms in (("cold", cold["wall_ms"]), ("hot", statistics.median(hot))):
                runs.append({"params": {"temperature": temp, "weight_store": shared},
                             "mode": "real", "repetition": rep,
                             "metrics": {"latency_ms": ms, "load_ms": cold["load_ms"]
                                         if temp == "cold" else 0.0}})
    for shared, (cold, hot) in predicted.items():
        for temp, ms, load in (("cold", cold["wall_ms"], cold["load_ms"]), ("hot", hot, 0.0)):
            runs.append({"params": {"temperature": temp, "weight_store": shared}, "mode": "sim",
                         "repetition": 0, "metrics": {"latency_ms": ms, "load_ms": load}})
    return runs


def first_answer(args, model, case):
    """The first answer of `model` after registration in a server whose host tier is full
    (args.holder fills it), so that the answer includes the model's load, for one case: none
    (its TorchScript file, read from disk), store-cold (a store just written, read from
    disk) or store-warm (a store whose blobs another running server maps). Returns (the
    first answer, the median wall time of later answers)."""
    with tempfile.TemporaryDirectory(prefix="store-fig-") as tmp:
        weights = os.path.join(tmp, "weights") if case != "none" else None
        keeper = None
        try:
            if case == "store-warm":
                keeper = Server(args.servelab, os.path.join(tmp, "keeper"), args.models, weights)
                keeper.register(model)
            with Server(args.servelab, os.path.join(tmp, "store"), args.models, weights,
                        host_models=1) as s:
                s.register(args.holder)
                s.register(model)
                if case != "store-warm":
                    drop_from_page_cache(tmp)
                first = s.classify(model)
                hot = [s.classify(model)["wall_ms"] for _ in range(HOT_REQUESTS)]
        finally:
            if keeper:
                keeper.stop()
    return first, statistics.median(hot)


CASES = ("none", "store-warm", "store-cold")


def first_answer_runs(args, predicted):
    """TrIMS figures 8 and 9 from one set of measurements (per model, case and repetition)
    and from the prediction made before them (`predicted`: {model: {case: (answer, hot)}},
    empty: none)."""
    speedup, split = [], []
    for rep in range(args.repetitions):
        for model in args.model_list:
            answers = {case: first_answer(args, model, case) for case in CASES}
            speedup += pts.speedup_rows(model, answers, "real", rep)
            split += pts.split_rows(model, answers, "real", rep)
    for model, answers in predicted.items():
        speedup += pts.speedup_rows(model, answers, "sim", 0)
        split += pts.split_rows(model, answers, "sim", 0)
    split += pts.mean_split_runs(split)
    return speedup, split


LARGE_CASES = ("none", "store-warm")


def large_model_runs(args, predicted):
    """TrIMS figure 10: per large model and repetition, and as predicted before."""
    runs = []
    for rep in range(args.repetitions):
        for model in args.large_models:
            answers = {case: first_answer(args, model, case)[0] for case in LARGE_CASES}
            runs += pts.large_rows(model, answers, "real", rep)
    for model, answers in predicted.items():
        runs += pts.large_rows(model, {case: answers[case][0] for case in LARGE_CASES}, "sim", 0)
    return runs


def predict(args):
    """The first answers of TrIMS figures 8-10 and PRETZEL figure 3 as the simulator predicts
    them, before any is measured: ({model: {case: (answer, hot ms)}} of the models, the same
    of the large ones, {with the store: (answer, hot ms)} of the family's first variant)."""
    if args.no_predict:
        return {}, {}, {}
    profile = args.profile or os.path.join(args.out, "profile.yaml")
    variant = f"{args.family}_0"  # PRETZEL figure 3's target
    if not args.profile:
        print(f"store_figures: measuring the profile the figures are predicted from ({profile})",
              file=sys.stderr)
        sp.measure_profile(args.servelab, args.models,
                           args.model_list + args.large_models + [variant], profile)
    with tempfile.TemporaryDirectory(prefix="store-predict-") as tmp:
        return (sp.first_answers(args.servelab, profile, args.model_list, CASES, tmp),
                sp.first_answers(args.servelab, profile, args.large_models, LARGE_CASES, tmp),
                sp.variant_latencies(args.servelab, profile, variant, tmp))


def with_repetitions(spec, repetitions):
    """The spec whose scaled-down text gives the repetitions this run made."""
    spec = dict(spec)
    words = f"{repetitions} repetition" + ("s" if repetitions != 1 else "")
    spec["scaled_down"] = re.sub(r"\b\d+ repetitions\b", words, spec.get("scaled_down", ""))
    return spec


def spec_for_models(spec, models):
    """The spec with the measured models on its model axis (the mean point last, if any)."""
    spec = dict(spec)
    sweep = dict(spec["sweep"])
    sweep["model"] = list(models) + (["mean"] if "mean" in sweep["model"] else [])
    spec["sweep"] = sweep
    return spec


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("servelab")
    ap.add_argument("models")
    ap.add_argument("out")
    ap.add_argument("--family", default="mobilenet_v3_small_variant")
    ap.add_argument("--variants", type=int, default=None,
                    help="variants registered (default: the memory experiment's last count)")
    ap.add_argument("--models-list", dest="model_list",
                    default="resnet18,mobilenet_v3_small,squeezenet1_1")
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--large-models", dest="large_models", default="",
                    help="TrIMS figure 10's models (make-models --large: alexnet_s1,"
                         "alexnet_s2); empty: no figure 10")
    ap.add_argument("--holder", default="tiny_cnn",
                    help="the small model that fills the host tier before a first answer")
    ap.add_argument("--profile", help="the profile figures 8-10 are predicted from (it must "
                    "have their models' load_sources_ms; default: measured first, OUT/profile.yaml)")
    ap.add_argument("--no-predict", action="store_true",
                    help="no simulated prediction of figures 8-10 (real rows only)")
    args = ap.parse_args(argv)
    args.model_list = [m for m in args.model_list.split(",") if m]
    args.large_models = [m for m in args.large_models.split(",") if m]
    os.makedirs(args.out, exist_ok=True)
    predicted, predicted_large, predicted_variant = predict(args)
    exp = os.path.join(SRC, "experiments")
    memory = sr.load_spec(os.path.join(exp, "pretzel", "memory.yaml"))
    count = args.variants or max(memory["sweep"]["variants"])
    if count < 3:
        sys.exit("store_figures: --variants needs at least 3 (a target and two holders)")
    memory = sr.spec_for_count(memory, count)
    names = [f"{args.family}_{i}" for i in range(count)]
    with tempfile.TemporaryDirectory(prefix="store-fig-", dir=args.out) as tmp:
        weights = os.path.join(tmp, "weights")
        print(f"store_figures: populating a weight store with {count} {args.family}",
              file=sys.stderr)
        populate(args, weights, names)
        print("store_figures: PRETZEL figure 2 (memory)", file=sys.stderr)
        sr.write_results(os.path.join(args.out, "pretzel-memory"), memory,
                         memory_runs(args, weights, names))
        print("store_figures: PRETZEL figure 3 (cold and hot latency)", file=sys.stderr)
        sr.write_results(os.path.join(args.out, "pretzel-latency"), with_repetitions(
                         sr.load_spec(os.path.join(exp, "pretzel", "latency.yaml")),
                         args.repetitions),
                         variant_latency_runs(args, weights, names, predicted_variant))
    print("store_figures: TrIMS figures 8 and 9 (first answers)", file=sys.stderr)
    speedup, split = first_answer_runs(args, predicted)
    sr.write_results(os.path.join(args.out, "trims-speedup"), with_repetitions(spec_for_models(
        sr.load_spec(os.path.join(exp, "trims", "speedup.yaml")), args.model_list),
        args.repetitions), speedup)
    sr.write_results(os.path.join(args.out, "trims-breakdown"), spec_for_models(
        sr.load_spec(os.path.join(exp, "trims", "breakdown.yaml")), args.model_list), split)
    if args.large_models:
        print("store_figures: TrIMS figure 10 (large models)", file=sys.stderr)
        sr.write_results(os.path.join(args.out, "trims-large"), with_repetitions(
            spec_for_models(sr.load_spec(os.path.join(exp, "trims", "large.yaml")),
                            args.large_models), args.repetitions),
            large_model_runs(args, predicted_large))
    return 0


if __name__ == "__main__":
    sys.exit(main())
