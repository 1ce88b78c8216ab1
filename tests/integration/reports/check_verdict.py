#!/usr/bin/python3
"""Test: each kind of check (ratio, flat, highest, lowest) holds on results where the claim is
true and flips on results where it is not; a check whose point is missing is 'not measured'."""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "reports"))
import verdict  # noqa: E402
from results_db import Experiment  # noqa: E402

ACCESS = "workload.access"
PATTERNS = ["{type: sequential}", "{type: uniform}", "{type: zipf, alpha: 1.1}"]


def experiment(mean_latency):
    """Three access-pattern points (stored as the runner stores them: flow YAML text)."""
    points = {i: {"params": {ACCESS: p}, "label": p} for i, p in enumerate(PATTERNS)}
    stats = {("sim", i): {"latency_mean_ms": (v, 0.0, 1), "latency_p99_ms": (2 * v, 0.0, 1)}
             for i, v in enumerate(mean_latency)}
    return Experiment({}, points, stats, [])


CHECKS = [
    {"says": "sequential highest", "test": "highest", "metric": "latency_mean_ms",
     "at": {ACCESS: {"type": "sequential"}}},
    {"says": "zipf lowest", "test": "lowest", "metric": "latency_mean_ms",
     "at": {ACCESS: {"type": "zipf", "alpha": 1.1}}},
    {"says": "sequential p99 over its mean", "test": "ratio",
     "of": {ACCESS: {"type": "sequential"}, "metric": "latency_p99_ms"},
     "over": {ACCESS: {"type": "sequential"}, "metric": "latency_mean_ms"}, "min": 1.5},
    {"says": "uniform and zipf alike", "test": "flat", "metric": "latency_mean_ms",
     "where": {ACCESS: [{"type": "uniform"}, {"type": "zipf", "alpha": 1.1}]}, "max": 1.5},
]


def verdicts(mean_latency):
    return [verdict.evaluate(experiment(mean_latency), c, "sim")["verdict"] for c in CHECKS]


H, F, U = verdict.HOLDS, verdict.FAILS, verdict.UNKNOWN
assert verdicts([30.0, 12.0, 10.0]) == [H, H, H, H], verdicts([30.0, 12.0, 10.0])
# Zipf slowest: highest and lowest flip, uniform vs zipf is 3x apart.
assert verdicts([30.0, 12.0, 36.0]) == [F, F, H, F], verdicts([30.0, 12.0, 36.0])
# A mode without results is not measured, and so is the whole figure.
fig = {"checks": CHECKS}
out = verdict.figure_verdicts(experiment([30.0, 12.0, 10.0]), fig, ["sim", "real"])
assert out["sim"][0] == H and out["real"][0] == U, out
assert all(r["verdict"] == U for r in out["real"][1]), out["real"]
# One failing check makes the figure's verdict 'does not hold here'.
out = verdict.figure_verdicts(experiment([30.0, 12.0, 36.0]), fig, ["sim"])
assert out["sim"][0] == F, out
print("verdict ok")

# Within noise: a miss smaller than two standard errors of the repetitions is not a failure,
# a larger one is, and one run per point (no spread) can never be within noise.
def spread(values, sd, n):
    points = {i: {"params": {ACCESS: p}, "label": p} for i, p in enumerate(PATTERNS)}
    stats = {("sim", i): {"latency_mean_ms": (v, sd, n), "latency_p99_ms": (2 * v, sd, n)}
             for i, v in enumerate(values)}
    return Experiment({}, points, stats, [])


W = verdict.WITHIN_NOISE
highest = CHECKS[0]
# sequential 30 vs zipf 31, sd 1 over 4 runs: gap 1 < 2 * sqrt(2 * 0.25) = 1.41.
assert verdict.evaluate(spread([30.0, 12.0, 31.0], 1.0, 4), highest, "sim")["verdict"] == W
assert verdict.evaluate(spread([30.0, 12.0, 33.0], 1.0, 4), highest, "sim")["verdict"] == F
assert verdict.evaluate(spread([30.0, 12.0, 31.0], 0.0, 1), highest, "sim")["verdict"] == F
flat = CHECKS[3]  # uniform 12 vs zipf 18.2: 1.52 > 1.5, inside the band with sd 2 over 4 runs
r = verdict.evaluate(spread([30.0, 12.0, 18.2], 2.0, 4), flat, "sim")
assert r["verdict"] == W and "noise: ± " in r["detail"], r
fig = {"checks": [highest, flat]}
out = verdict.figure_verdicts(spread([30.0, 12.0, 18.2], 2.0, 4), fig, ["sim"])
assert out["sim"][0] == verdict.HOLDS_WITHIN_NOISE, out
# test: value reads one point's metric against its bounds.
value = {"says": "uniform mean latency at most 11", "test": "value", "metric": "latency_mean_ms",
         "at": {ACCESS: {"type": "uniform"}}, "max": 11}
assert verdict.evaluate(experiment([30.0, 12.0, 10.0]), value, "sim")["verdict"] == F
assert verdict.evaluate(experiment([30.0, 10.0, 10.0]), value, "sim")["verdict"] == H
# A value inside its bounds by less than the noise holds only within noise (uniform 12 vs zipf
# 17.8: 1.48 <= 1.5, but the band is wider than the margin); by more, it holds.
r = verdict.evaluate(spread([30.0, 12.0, 17.8], 2.0, 4), flat, "sim")
assert r["verdict"] == W, r
assert verdict.evaluate(spread([30.0, 12.0, 13.0], 0.2, 4), flat, "sim")["verdict"] == H
# Speed-matched runs (--match-speed): the machine's speed drift between the two points' runs
# widens a ratio's band even with one run a point, so a level throughput does not pass as a
# fall (0.89 against at most 0.9, the runs at speeds 0.33 and 0.37).
CONC = "workload.arrival.concurrency"
pts = {0: {"params": {CONC: 128}, "label": "128"}, 1: {"params": {CONC: 256}, "label": "256"}}
stats = {(m, 0): {"throughput_rps": (173.0, 0.0, 1), "cost_scale": (0.33, 0.0, 1)} for m in
         ("sim", "real")}
stats.update({(m, 1): {"throughput_rps": (154.0, 0.0, 1), "cost_scale": (0.37, 0.0, 1)} for m in
              ("sim", "real")})
fall = {"says": "throughput at 256 in flight over 128 at most 0.9", "test": "ratio",
        "metric": "throughput_rps", "of": {CONC: 256}, "over": {CONC: 128}, "max": 0.9}
r = verdict.evaluate(Experiment({}, pts, stats, []), fall, "real")
assert r["verdict"] == W and "0.37x" in r["detail"], r
for key in [(m, p) for m in ("sim", "real") for p in (0, 1)]:
    stats[key]["cost_scale"] = (0.35, 0.0, 1)   # the same speed: no drift, a plain hold
assert verdict.evaluate(Experiment({}, pts, stats, []), fall, "real")["verdict"] == H
print("noise ok")

# A check of our reading (`reading: ours`) is evaluated but never sets the figure's verdict:
# a failing one leaves a holding claim holding, and a figure of such checks alone has none.
ours = dict(CHECKS[1], reading="ours")   # zipf lowest: fails when zipf is the slowest
fig = {"checks": [CHECKS[2], ours]}      # sequential p99 over its mean: holds
out = verdict.figure_verdicts(experiment([30.0, 12.0, 36.0]), fig, ["sim"])
assert out["sim"][0] == H, out
assert [(r["ours"], r["verdict"]) for r in out["sim"][1]] == [(False, H), (True, F)], out
assert verdict.figure_verdicts(experiment([30.0, 12.0, 36.0]), {"checks": [ours]}, ["sim"]) == {}
assert any("every check is of our reading" in p
           for p in verdict.problems({"sweep": {ACCESS: PATTERNS}}, {"id": "f", "claim": "c",
                                                                      "checks": [ours]}))
# The paper's check failing still fails the figure, whatever our reading's checks say.
out = verdict.figure_verdicts(experiment([30.0, 12.0, 36.0]), {"checks": [CHECKS[0], ours]},
                              ["sim"])
assert out["sim"][0] == F, out
print("our reading ok")
