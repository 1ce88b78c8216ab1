#!/usr/bin/python3
"""Test: timeline figures (reports/timeline.py) bin a run's requests by arrival time, count
as overdue exactly the requests not answered Ok within the run's SLO, and average the
accuracy column over the requests that have one (hand-made rows)."""
import os
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "reports"))
import timeline  # noqa: E402

ROWS = [  # id, arrival, finish, status, accuracy; SLO 100 ms
    (0, 0.10, 0.15, "ok", 0.9),       # bin 0, in time
    (1, 0.50, 0.70, "ok", 0.6),       # bin 0, late (200 ms)
    (2, 1.20, 1.25, "dropped", ""),   # bin 1, not Ok: overdue; no accuracy
    (3, 1.90, 1.99, "ok", 0.5),       # bin 1, in time (90 ms)
    (4, 3.00, "", "timeout", ""),     # bin 3 (bin 2 empty), never finished: overdue
]
with tempfile.TemporaryDirectory() as d:
    with open(os.path.join(d, "config.yaml"), "w") as f:
        f.write("engine: {slo_ms: 100}\n")
    with open(os.path.join(d, "requests.csv"), "w") as f:
        f.write("id,model,arrival,queued,dispatch,start,finish,batch_size,waited_for_load,status,"
                "accuracy\n")
        for i, a, fin, st, acc in ROWS:
            f.write(f"{i},m,{a},{a},,,{fin},1,0,{st},{acc}\n")
    t, rate, late, accuracy = timeline.binned(d, 1.0)
    assert t == [0, 1, 2, 3], t
    assert rate == [2, 2, 0, 1], rate
    assert late == [1, 1, 0, 1], late
    assert [round(a, 9) if a is not None else None for a in accuracy] == [0.75, 0.5, None, None], accuracy
    t, rate, late, accuracy = timeline.binned(d, 2.0)  # wider bins: rates per second
    assert rate == [2.0, 0.5], rate
    assert late == [2, 1], late
    assert abs(accuracy[0] - (0.9 + 0.6 + 0.5) / 3) < 1e-12 and accuracy[1] is None, accuracy
print("timeline ok")
