#!/usr/bin/python3
"""Test: timeline figures (reports/timeline.py) bin a run's requests by arrival time and count
as overdue exactly the requests not answered Ok within the run's SLO (hand-made rows)."""
import os
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "reports"))
import timeline  # noqa: E402

ROWS = [  # id, arrival, finish, status; SLO 100 ms
    (0, 0.10, 0.15, "ok"),      # bin 0, in time
    (1, 0.50, 0.70, "ok"),      # bin 0, late (200 ms)
    (2, 1.20, 1.25, "dropped"),  # bin 1, not Ok: overdue
    (3, 1.90, 1.99, "ok"),      # bin 1, in time (90 ms)
    (4, 3.00, "", "timeout"),    # bin 3 (bin 2 empty), never finished: overdue
]
with tempfile.TemporaryDirectory() as d:
    with open(os.path.join(d, "config.yaml"), "w") as f:
        f.write("engine: {slo_ms: 100}\n")
    with open(os.path.join(d, "requests.csv"), "w") as f:
        f.write("id,model,arrival,queued,dispatch,start,finish,batch_size,waited_for_load,status\n")
        for i, a, fin, st in ROWS:
            f.write(f"{i},m,{a},{a},,,{fin},1,0,{st}\n")
    t, rate, late = timeline.binned(d, 1.0)
    assert t == [0, 1, 2, 3], t
    assert rate == [2, 2, 0, 1], rate
    assert late == [1, 1, 0, 1], late
    t, rate, late = timeline.binned(d, 2.0)  # wider bins: rates per second
    assert rate == [2.0, 0.5], rate
    assert late == [2, 1], late
print("timeline ok")
