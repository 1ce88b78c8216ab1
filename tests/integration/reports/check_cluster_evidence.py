#!/usr/bin/python3
"""Test: the cluster figures' measured reasons (reports/evidence_cluster.py).
- The bursts' floor under a latency percentile holds against a Monte Carlo of the best any
  router can do (each burst spread evenly over idle workers), and is no looser than the
  burst's spread.
- The offered load is the hand-computed one (rate x (service + wasted work per request) /
  workers), and a setting at or above 1 is named as measuring the run's length.
- The service time's floor under a failed ratio check: 8.0 / 9.55 ms for a median, with the
  claim's bound beside it.
- A swept flag stored as text ("false") takes its label's words."""
import os
import random
import sys
import tempfile
from statistics import NormalDist

import yaml

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "reports"))
import evidence  # noqa: E402
import evidence_cluster  # noqa: E402
import wording  # noqa: E402
from results_db import Experiment  # noqa: E402

SERVICE = NormalDist(8.0, 1.22)  # DLIS's model: mean 8 ms, p95 10 ms
CANCEL = "cluster.cancel_copies"
DELAY = "cluster.backup_after_s"


def ideal_router_quantile(burst, workers, burst_ms, q, bursts=20000, seed=7):
    """The q-quantile of latency when every burst finds all workers idle and is spread evenly
    over them in arrival order (no router does better): a Monte Carlo."""
    rng = random.Random(seed)
    latencies = []
    for _ in range(bursts):
        arrivals = sorted(rng.uniform(0, burst_ms) for _ in range(burst))
        free = [0.0] * workers
        for i, t in enumerate(arrivals):
            w = i % workers
            start = max(t, free[w])
            free[w] = start + max(0.0, rng.gauss(SERVICE.mean, SERVICE.stdev))
            latencies.append(free[w] - t)
    latencies.sort()
    return latencies[int(q * len(latencies))]


def check_burst_floor():
    for q in (0.99, 0.999):
        floor = evidence_cluster.burst_floor_ms(SERVICE, 32, 16, 2.0, q)
        best = ideal_router_quantile(32, 16, 2.0, q)
        assert floor <= best, f"q {q}: floor {floor:.2f} ms above the ideal router's {best:.2f}"
        assert best - floor <= 2.0, f"q {q}: floor {floor:.2f} ms looser than the spread ({best:.2f})"
    assert evidence_cluster.burst_floor_ms(SERVICE, 32, 16, 2.0, 0.5) is None, \
        "half the requests wait: the median has no floor from the bursts"
    assert evidence_cluster.burst_floor_ms(SERVICE, 16, 16, 2.0, 0.99) is None, \
        "a burst that fits the workers sets no floor"


def experiment(root, stats, arrival, cores=None):
    """One run dir (config.yaml naming a profile) and points over cancel x delay."""
    with open(os.path.join(root, "profile.yaml"), "w") as f:
        yaml.safe_dump({"models": {"m": {"batch_latency_ms": [
            {"batch": 1, "mean": SERVICE.mean, "stddev": SERVICE.stdev}]}}}, f)
    os.makedirs(os.path.join(root, "run"), exist_ok=True)
    with open(os.path.join(root, "run", "config.yaml"), "w") as f:
        yaml.safe_dump({"models": ["m"], "profile": os.path.join(root, "profile.yaml"),
                        "engine": {"workers": 1, "max_batch": 1},
                        "workload": {"arrival": arrival},
                        "cluster": {"servers": 16, **({"cores": cores} if cores else {})}}, f)
    points = {i: {"params": params, "label": str(params)} for i, (params, _) in enumerate(stats)}
    st = {("sim", i): {k: (v, 0.0, 1) for k, v in values.items()}
          for i, (_, values) in enumerate(stats)}
    spec = {"sweep": {DELAY: ["none", 0.002], CANCEL: [False, True]},
            "labels": {CANCEL: {False: "without cancellation", True: "with cancellation"}}}
    runs = [{"mode": "sim", "status": "ok", "dir": "run"}]
    return Experiment(spec, points, st, runs, root)


def check_offered_load(root):
    stats = [({DELAY: "0.002", CANCEL: "false"},
              {"requests": 50000, "backup_wasted_s": 400.0, "latency_p99_ms": 8000.0}),
             ({DELAY: "0.002", CANCEL: "true"},
              {"requests": 50000, "backup_wasted_s": 5.0, "latency_p99_ms": 70.0})]
    exp = experiment(root, stats, {"type": "bursts", "rate": 1200, "burst": 32, "burst_ms": 2})
    fig = {"id": "f", "x": CANCEL, "series": DELAY, "metrics": ["latency_p99_ms"],
           "evidence": ["offered_load", "burst_floor"]}
    lines = evidence.figure_evidence(exp, fig, ["sim"])
    load = next(line for line in lines if "offered load" in line)
    # 1200/s x (8 ms + 400 s / 50,000) / 16 = 1.20; x (8 + 0.1) ms / 16 = 0.61
    assert "without cancellation: 1.20" in load and "with cancellation: 0.61" in load, load
    assert "(p99 8,000 ms) measure the run's length" in load, load
    floor = next(line for line in lines if "bursts of 32" in line)
    want = f"p99 latency at or above {evidence_cluster.burst_floor_ms(SERVICE, 32, 16, 2, .99):.1f}"
    assert want in floor, floor
    # The 16 servers on 8 cores run 8 requests at once: twice the load.
    exp = experiment(root, stats, {"type": "bursts", "rate": 1200, "burst": 32, "burst_ms": 2}, 8)
    load = evidence.figure_evidence(exp, fig, ["sim"])[0]
    assert "sharing 8 cores" in load and "without cancellation: 2.40" in load, load
    assert "with cancellation: 1.22" in load and "(p99 70 ms)" in load, load


def check_service_floor(root):
    stats = [({DELAY: "none", CANCEL: "true"}, {"latency_p50_ms": 9.55}),
             ({DELAY: "0", CANCEL: "true"}, {"latency_p50_ms": 8.6})]
    exp = experiment(root, stats, {"type": "poisson", "rate": 1000})
    check = {"says": "tied cuts the median by 16%", "test": "ratio", "metric": "latency_p50_ms",
             "of": {DELAY: 0}, "over": {DELAY: "none"}, "max": 0.84}
    fig = {"id": "f", "x": DELAY, "metrics": ["latency_p50_ms"], "checks": [check],
           "evidence": ["service_floor"]}
    lines = evidence.figure_evidence(exp, fig, ["sim"])
    assert len(lines) == 1 and f"below {8.0 / 9.55:.2f}" in lines[0], lines
    assert "at most 0.84: it asks for nearly every wait to be gone" in lines[0], lines
    check["max"] = 0.95  # 8.6 / 9.55 = 0.90 holds: no reason to give
    assert evidence.figure_evidence(exp, fig, ["sim"]) == []
    check["max"] = 0.6  # below the floor: out of reach
    lines = evidence.figure_evidence(exp, fig, ["sim"])
    assert "at most 0.6: below what removing every wait would give" in lines[0], lines
    check["max"] = 0.95
    stats[1][1]["latency_p50_ms"] = 9.2  # 0.963 over 0.95, with room down to 0.84
    exp = experiment(root, stats, {"type": "poisson", "rate": 1000})
    lines = evidence.figure_evidence(exp, fig, ["sim"])
    assert "leaves room for" in lines[0] and "added to" not in lines[0], lines
    stats[1][1]["latency_p50_ms"] = 12.0  # the backups made the median longer
    exp = experiment(root, stats, {"type": "poisson", "rate": 1000})
    lines = evidence.figure_evidence(exp, fig, ["sim"])
    assert "removed less of than claimed or added to" in lines[0], lines


def check_flag_labels():
    labels = {CANCEL: {False: "without cancellation", True: "with cancellation"}, "n": {1: "one"}}
    assert wording.label_of(labels, CANCEL, "false") == "without cancellation"
    assert wording.label_of(labels, CANCEL, "true") == "with cancellation"
    assert wording.label_of(labels, "n", "1") == "one"
    assert wording.label_of(labels, CANCEL, "1") is None, "a number is not a flag"


check_burst_floor()
with tempfile.TemporaryDirectory() as d:
    check_offered_load(d)
with tempfile.TemporaryDirectory() as d:
    check_service_floor(d)
check_flag_labels()
print("cluster evidence: ok")
