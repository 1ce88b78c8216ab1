"""Results folders of the weight store's figures from hand-made numbers (no server): the
shipped experiment specs (experiments/pretzel, experiments/trims) with runs whose values make
every check hold (`holds=True`) or miss (`holds=False`), written by scripts/store_results.py
as scripts/store_figures.py writes them."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(SRC, "scripts"))
import store_results as sr  # noqa: E402

VARIANTS = 4  # the memory figure's count here (spec_for_count rewrites the shipped one)


def spec(paper, name):
    return sr.load_spec(os.path.join(SRC, "experiments", paper, name + ".yaml"))


def memory_runs(holds):
    runs = []
    for k in range(1, VARIANTS + 1):
        for shared in (False, True):
            plain = 100.0 + 50.0 * k
            mb = (plain / 50.0 if holds else plain / 1.4) if shared else plain
            for mode, scale in (("real", 1.0), ("sim", 1.05)):
                runs.append({"params": {"variants": k, "weight_store": shared}, "mode": mode,
                             "metrics": {"pss_mb": mb * scale}})
    return runs


def latency_runs(holds):
    times = {("cold", False): 900.0, ("cold", True): 9.0 if holds else 500.0,
             ("hot", False): 40.0, ("hot", True): 10.0 if holds else 39.0}
    return [{"params": {"temperature": t, "weight_store": w}, "mode": "real", "repetition": rep,
             "metrics": {"latency_ms": ms * (1 + 0.01 * rep), "load_ms": 0.0}}
            for rep in range(2) for (t, w), ms in times.items()]


MODELS = ["resnet18", "mobilenet_v3_small", "squeezenet1_1"]


def speedup_runs(holds):
    runs = []
    for i, model in enumerate(MODELS):
        base = 1000.0 / (i + 1)
        ideal = base / (4.0 - i)
        warm = ideal * (1.1 if holds else 2.0)
        cold = base * (1.3 if holds else 0.5)
        for case, ms in (("none", base), ("store-warm", warm), ("store-cold", cold),
                         ("ideal", ideal)):
            runs.append({"params": {"model": model, "case": case}, "mode": "real",
                         "metrics": {"speedup": base / ms, "first_answer_ms": ms,
                                     "hot_ms": ideal / 2}})
    return runs


def breakdown_runs(holds):
    runs = []
    for model in MODELS + ["mean"]:
        for shared in (False, True):
            load = (0.9 if holds else 0.5) if not shared else 0.05
            total = 1.0 if not shared else (0.15 if holds else 0.6)
            parts = {"share_load": load, "share_read": 0.1 * load,
                     "share_deserialize": 0.6 * load, "share_copy": 0.0,
                     "share_map": 0.2 * load, "share_load_wait": 0.1 * load,
                     "share_compute": 0.05, "share_queue": 0.0,
                     "share_other": max(0.0, total - load - 0.05)}
            runs.append({"params": {"model": model, "weight_store": shared}, "mode": "real",
                         "metrics": dict(parts, first_answer_ms=500.0 * total)})
    return runs


LARGE = ["alexnet_s1", "alexnet_s2"]


def large_runs(holds):
    """Figure 10: the larger model gains more, and close to its ideal (or neither)."""
    runs = []
    for i, model in enumerate(LARGE):
        base = 2000.0 * (i + 1)
        ideal = base / (3.0 + 2 * i if holds else 3.0 - i)
        warm = ideal * (1.1 if holds else 2.0)
        for case, ms in (("none", base), ("store-warm", warm), ("ideal", ideal)):
            metrics = {"speedup": base / ms, "first_answer_ms": ms}
            if case == "none":
                metrics["compute_share"] = ideal / base
            runs.append({"params": {"model": model, "case": case}, "mode": "real",
                         "metrics": metrics})
    return runs


def write_all(out, holds=True):
    """Writes the five results folders under OUT; returns their paths."""
    folders = {
        "pretzel-memory": (sr.spec_for_count(spec("pretzel", "memory"), VARIANTS), memory_runs),
        "pretzel-latency": (spec("pretzel", "latency"), latency_runs),
        "trims-speedup": (spec("trims", "speedup"), speedup_runs),
        "trims-breakdown": (spec("trims", "breakdown"), breakdown_runs),
        "trims-large": (spec("trims", "large"), large_runs),
    }
    paths = []
    for name, (s, make) in folders.items():
        paths.append(os.path.join(out, name))
        sr.write_results(paths[-1], s, make(holds))
    return paths
