#!/usr/bin/python3
"""Test: TrIMS figure 11's driver (scripts/trims_workload.py) through `servelab simulate` on
the paper's profile, against numbers worked out from the profile by hand: one model at one
request in flight misses once with the store (disk -> host -> device, then compute) and hits
every later request (compute alone), while without sharing every request loads its own copy,
so the p95 ratio is (load + compute) / compute and the batch's (n (load + compute)) /
(load + n compute); figure 8's first answers likewise (scripts/trims_cold_start.py), and
on this machine's profile (scripts/store_predictions.py, check_local_predictions). Then the
page (kind: contour) is drawn from a 2 x 2 grid. Last, the figure on this machine (--real) on
the tiny models, for its form (check_real).

Usage: check_trims_workload.py SERVELAB"""
import math
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "..", "..")
sys.path.insert(0, os.path.join(SRC, "scripts"))
sys.path.insert(0, os.path.join(SRC, "reports"))
import results_db  # noqa: E402
import store_points  # noqa: E402
import store_predictions  # noqa: E402
import trims_workload  # noqa: E402

REQUESTS = 200


def profile_entry(name):
    with open(os.path.join(SRC, "experiments", "profiles", "trims-table3.yaml")) as f:
        return yaml.safe_load(f)["models"][name]


def run(servelab, out, fractions, concurrency):
    subprocess.run(["/usr/bin/python3", os.path.join(SRC, "scripts", "trims_workload.py"),
                    servelab, out, "--requests", str(REQUESTS), "--seeds", "1",
                    "--fractions", fractions, "--concurrency", concurrency],
                   check=True, stdout=subprocess.DEVNULL)
    return results_db.load(os.path.join(out, "trims-workload"))


def check_one_model(servelab, tmp):
    exp = run(servelab, os.path.join(tmp, "one"), "0.01", "1")
    with open(trims_workload.RUN_CONFIG) as f:
        models = yaml.safe_load(f)["models"]
    (name,) = trims_workload.chosen_models(models, 0.01, 1)
    p = profile_entry(name)
    compute = p["batch_latency_ms"][0]["mean"]
    load = p["load_ms"]["disk->host"] + p["load_ms"]["host->device"]
    (pid,) = exp.points
    got = {m: exp.value("sim", pid, m)[0] for m in ("speedup", "batch_speedup", "gpu_hit_ratio")}
    want = {"speedup": (load + compute) / compute,
            "batch_speedup": REQUESTS * (load + compute) / (load + REQUESTS * compute),
            "gpu_hit_ratio": (REQUESTS - 1) / REQUESTS}
    for metric, value in want.items():
        assert math.isclose(got[metric], value, rel_tol=1e-6), (name, metric, got[metric], value)
    # The store starts empty: one load into the GPU tier, the one any policy makes.
    assert exp.value("sim", pid, "optimum_loads")[0] == 1, exp.stats
    assert exp.value("sim", pid, "optimum_lower")[0] == 1, exp.stats
    print(f"one model ({name}): speedup {got['speedup']:.3f}, batch {got['batch_speedup']:.3f}")


def check_page(servelab, tmp):
    out = os.path.join(tmp, "grid")
    exp = run(servelab, out, "0.1,0.5", "1,2")
    assert len(exp.points) == 4 and all(exp.value("sim", pid, "speedup")[2] == 1
                                        for pid in exp.points)
    results = os.path.join(out, "trims-workload")
    subprocess.run(["/usr/bin/python3", os.path.join(SRC, "reports", "report.py"), results],
                   check=True, stdout=subprocess.DEVNULL)
    for f in ("speedup.png", "batch.png", "report.md"):
        assert os.path.getsize(os.path.join(results, "report", f)) > 0, f
    with open(os.path.join(results, "report", "report.md")) as f:
        text = f.read()
    assert "TrIMS figure 11" in text and "speedup" in text, text[:500]
    # The page follows the rules every page does (reports/page_rules.py).
    subprocess.run(["/usr/bin/python3", os.path.join(SRC, "reports", "index.py"), out],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["/usr/bin/python3", os.path.join(SRC, "reports", "page_rules.py"), out],
                   check=True, stdout=subprocess.DEVNULL)


def check_cold_start(servelab, tmp):
    """Figures 8 and 9 at paper scale: resident on the GPU a first answer is its compute, from
    disk (no sharing overhead simulated) what no sharing pays, and no sharing's parts are the
    profile's read, copy and compute."""
    out = os.path.join(tmp, "cold")
    subprocess.run(["/usr/bin/python3", os.path.join(SRC, "scripts", "trims_cold_start.py"),
                    servelab, out, "--models", "vgg16-sod,squeezenet-v1.1"],
                   check=True, stdout=subprocess.DEVNULL)
    exp = results_db.load(os.path.join(out, "trims-speedup-paper"))
    for pid, point in exp.points.items():
        p = profile_entry(point["params"]["model"])
        compute = p["batch_latency_ms"][0]["mean"]
        load = p["load_ms"]["disk->host"] + p["load_ms"]["host->device"]
        want = (load + compute) / compute if point["params"]["case"] == "store-warm" else 1.0
        got = exp.value("sim", pid, "speedup")[0]
        assert math.isclose(got, want, rel_tol=1e-6), (point, got, want)
    # Figure 9 at paper scale: the no-sharing first answer's parts are the profile's.
    split = results_db.load(os.path.join(out, "trims-breakdown-paper"))
    for pid, point in split.points.items():
        if point["params"]["model"] == "mean" or point["params"]["weight_store"]:
            continue
        p = profile_entry(point["params"]["model"])
        compute = p["batch_latency_ms"][0]["mean"]
        read, copy = p["load_ms"]["disk->host"], p["load_ms"]["host->device"]
        for metric, part in (("share_read", read), ("share_copy", copy),
                             ("share_compute", compute)):
            got = split.value("sim", pid, metric)[0]
            assert math.isclose(got, part / (read + copy + compute), rel_tol=1e-6), (point, metric)


def check_local_predictions(servelab, tmp):
    """Figures 8 and 9 predicted on this machine (scripts/store_predictions.py) from the
    fixture profile's tiny_cnn, by hand: a first answer is the overhead before the batch
    (1.5 ms), the load from its source with its first batch's extra 1 ms, and the 0.2 ms
    batch; from the file read cold 1 + 14 + 1, through the store resident 0.2 + 4 + 0.8 + 1,
    from the store read cold 0.5 + 4 + 2.5 + 1. The ideal is no sharing's less its load (15).
    Then PRETZEL figure 3's variant (scripts/store_predictions.variant_latencies)."""
    profile = os.path.join(HERE, "tiny-profile.yaml")
    os.makedirs(tmp, exist_ok=True)
    answers = store_predictions.first_answers(servelab, profile, ["tiny_cnn"],
                                              ["none", "store-warm", "store-cold"], tmp)
    want = {"none": 17.7, "store-warm": 7.7, "store-cold": 9.7}
    for case, (answer, hot) in answers["tiny_cnn"].items():
        assert math.isclose(answer["wall_ms"], want[case], rel_tol=1e-9), (case, answer)
        assert math.isclose(hot, 1.7, rel_tol=1e-9), (case, hot)  # the second request hits
    speedup = {r["params"]["case"]: r["metrics"]["speedup"]
               for r in store_points.speedup_rows("tiny_cnn", answers["tiny_cnn"], "sim", 0)}
    assert math.isclose(speedup["store-warm"], 17.7 / 7.7, rel_tol=1e-9), speedup
    assert math.isclose(speedup["ideal"], 17.7 / 2.7, rel_tol=1e-9), speedup
    split = {r["params"]["weight_store"]: r["metrics"]
             for r in store_points.split_rows("tiny_cnn", answers["tiny_cnn"], "sim", 0)}
    for metric, ms in (("share_map", 0.8), ("share_deserialize", 4.0), ("share_read", 0.2),
                       ("share_compute", 1.2), ("share_other", 1.5)):
        assert math.isclose(split[True][metric], ms / 17.7, rel_tol=1e-9), (metric, split)
    assert math.isclose(split[False]["share_deserialize"], 14 / 17.7, rel_tol=1e-9), split
    # PRETZEL figure 3's variant: from its file in the page cache 1.5 + 12 + 0.2 = 13.7 ms
    # (its load_ms: the first batch's extra inside it), with a sibling loaded in the store
    # 1.5 + (0.2 + 0.5 + 0.3 + 1) + 0.2 = 3.7; hot, 1.7 both.
    variant = store_predictions.variant_latencies(servelab, profile, "tiny_variant_0", tmp)
    for shared, cold_ms, load_ms in ((False, 13.7, 11.0), (True, 3.7, 1.0)):
        cold, hot = variant[shared]
        assert math.isclose(cold["wall_ms"], cold_ms, rel_tol=1e-9), (shared, cold)
        assert math.isclose(cold["load_ms"], load_ms, rel_tol=1e-9), (shared, cold)
        assert math.isclose(hot, 1.7, rel_tol=1e-9), (shared, hot)


def check_real(servelab, tmp):
    """The figure on this machine (--real): copies of tiny_cnn (make-models --tiny) on the
    real engine, with the simulator's prediction on a fixture profile. Asserted: the form,
    every private request's own load (real and simulated), that 4 models in a tier of 8 are
    all hits (registration leaves them resident; the simulation starts alike) and load nothing,
    as the optimum, that with 16 LRU loads no less than the optimum, and that each seed draws
    its own requests; no timing."""
    out = os.path.join(tmp, "real")
    profile = os.path.join(tmp, "tiny-profile.yaml")  # servelab run may add to a profile
    shutil.copy(os.path.join(HERE, "tiny-profile.yaml"), profile)
    subprocess.run(["/usr/bin/python3", os.path.join(SRC, "scripts", "trims_workload.py"),
                    servelab, out, "--real", os.path.join(SRC, "models"), "--model", "tiny_cnn",
                    "--profile", profile, "--fractions", "0.25,1.0", "--concurrency", "2",
                    "--requests", "20", "--seeds", "1,2"], check=True, stdout=subprocess.DEVNULL)
    results = os.path.join(out, "trims-workload-local")
    exp = results_db.load(results)
    assert len(exp.points) == 2, exp.points
    for pid, point in exp.points.items():
        for mode in ("real", "sim"):
            assert exp.value(mode, pid, "private_load_ratio")[:2] == (1.0, 0.0), (mode, point)
            assert exp.value(mode, pid, "speedup")[0] > 0, (mode, point)
            loads, fewest = (exp.value(mode, pid, m)[0] for m in ("optimum_loads", "optimum_lower"))
            if point["params"]["models_fraction"] == 0.25:
                assert loads == fewest == 0, (mode, point, loads, fewest)  # all resident
            else:  # 16 copies in a tier of 8: no policy loads fewer than the optimum
                assert loads >= fewest > 0, (mode, point, loads, fewest)
            if point["params"]["models_fraction"] == 0.25:
                assert exp.value(mode, pid, "gpu_hit_ratio")[0] == 1.0, (mode, point)
            elif mode == "sim":  # 16 copies in a tier of 8: each seed draws its own
                # requests, so the two seeds' simulated runs differ (the same requests would not)
                assert any(exp.value(mode, pid, m)[1] > 0
                           for m in ("latency_mean_ms", "gpu_hit_ratio", "throughput_rps")), point
    subprocess.run(["/usr/bin/python3", os.path.join(SRC, "reports", "report.py"), results],
                   check=True, stdout=subprocess.DEVNULL)
    assert os.path.getsize(os.path.join(results, "report", "speedup.png")) > 0
    subprocess.run(["/usr/bin/python3", os.path.join(SRC, "reports", "index.py"), out],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["/usr/bin/python3", os.path.join(SRC, "reports", "page_rules.py"), out],
                   check=True, stdout=subprocess.DEVNULL)


def main():
    servelab = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        check_one_model(servelab, tmp)
        check_cold_start(servelab, tmp)
        check_local_predictions(servelab, os.path.join(tmp, "local"))
        check_page(servelab, tmp)
        check_real(servelab, tmp)
    print("trims workload: ok")


if __name__ == "__main__":
    main()
