#!/usr/bin/python3
"""Test: check_errors.py's tail-width diagnostic. Consecutive batches' cost correlation on
hand-made sequences (closed forms), batch compute times from hand-made records (members of a
batch counted once, failures left out, start order), the profile's speed course, and each
point's p99 - mean widths."""
import math
import os
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.abspath(os.path.join(here, "..", "..", "..", "reports")))
from check_errors import (batch_compute_ms, lag1_correlation, real_cost_correlation,  # noqa: E402
                          speed_course, tail_widths)

# Alternating costs: every neighbour on the other side of the mean, correlation -1.
assert abs(lag1_correlation([1.0, -1.0] * 10) + 1) < 1e-12
# A slow phase then a fast one: 18 of 19 neighbour pairs agree, (18 - 1) / 19 = 17/19.
assert abs(lag1_correlation([0.0] * 10 + [1.0] * 10) - 17 / 19) < 1e-12
assert math.isnan(lag1_correlation([5.0] * 8))   # no spread
assert math.isnan(lag1_correlation([1.0, 2.0]))  # too few

HEADER = "id,model,arrival,queued,dispatch,start,finish,batch_size,waited_for_load,status\n"
with tempfile.TemporaryDirectory() as d:
    run = os.path.join(d, "runs", "p000-real-r0")
    os.makedirs(run)
    path = os.path.join(run, "requests.csv")
    with open(path, "w") as f:
        f.write(HEADER)
        f.write("0,m,0,0,0,0.100,0.125,2,0,ok\n")    # batch of 2: 25 ms
        f.write("1,m,0,0,0,0.020,0.030,1,0,ok\n")    # 10 ms, started first
        f.write("2,m,0,0,0,0.100,0.125,2,0,ok\n")    # the batch's other member
        f.write("3,m,0,0,0,0.200,0.900,1,0,failed\n")
    got = batch_compute_ms(path)
    assert len(got) == 2 and abs(got[0] - 10) < 1e-9 and abs(got[1] - 25) < 1e-9, got
    with open(path, "w") as f:  # alternating 10 / 30 ms batches: correlation -1
        f.write(HEADER)
        for i in range(20):
            start = 0.05 * i
            f.write(f"{i},m,0,0,0,{start:.3f},{start + (0.01 if i % 2 else 0.03):.3f},1,0,ok\n")
    assert abs(real_cost_correlation(d) + 1) < 1e-9
    assert math.isnan(real_cost_correlation(os.path.join(d, "runs")))  # no runs below
    # The speed course the prediction was simulated with, from the profile measured before.
    assert speed_course(d) == ""
    with open(os.path.join(d, "profile-before.yaml"), "w") as f:
        f.write("models: {}\nspeed_drift: {fast: {share: 0.3, tau_ms: 22}, "
                "slow: {share: 0.45, tau_ms: 400}}\n")
    assert speed_course(d).endswith("fast share 0.30, tau 22 ms; slow share 0.45, tau 400 ms")


class Exp:
    """Per (mode, metric) means, as results_db's value() gives them (mean, sd, n)."""
    def __init__(self, values):
        self.values = values

    def value(self, mode, pid, metric):
        v = self.values.get((mode, metric))
        return (v, 0.0, 1) if v is not None else (math.nan, math.nan, 0)


# A --match-speed point: the sim's own result is at matched speed, the plain prediction is
# kept as unscaled_*.
matched = Exp({("real", "latency_p99_ms"): 240.0, ("real", "latency_mean_ms"): 190.0,
               ("sim", "latency_p99_ms"): 230.0, ("sim", "latency_mean_ms"): 185.0,
               ("sim", "unscaled_latency_p99_ms"): 190.0, ("sim", "unscaled_latency_mean_ms"): 175.0,
               ("sim", "cost_scale"): 1.1})
assert tail_widths(matched, 0) == (50.0, 15.0, 45.0)
# A plain run: the sim's result is the prediction, and there is no matched speed.
plain = Exp({("real", "latency_p99_ms"): 240.0, ("real", "latency_mean_ms"): 190.0,
             ("sim", "latency_p99_ms"): 205.0, ("sim", "latency_mean_ms"): 185.0})
real, pred, at_speed = tail_widths(plain, 0)
assert (real, pred) == (50.0, 20.0) and math.isnan(at_speed)
print("ok")
