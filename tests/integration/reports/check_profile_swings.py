#!/usr/bin/python3
"""Test: check_errors.py finds the machine's speed swings inside a profile (hand-made samples
taken in rounds: a fast stretch then a slow one), for the models the experiment uses only."""
import os
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.abspath(os.path.join(here, "..", "..", "..", "reports")))
from check_errors import profile_swings, profiled_models  # noqa: E402

# Ten rounds at 20 ms, then ten at 30 ms: medians of 5 consecutive samples run 20..30 (x1.50).
b1 = [20.0] * 10 + [30.0] * 10
profile = ("models:\n"
           "  used:\n    batch_latency_ms:\n"
           f"      - {{batch: 1, mean: 25, samples: {b1}}}\n"
           "      - {batch: 8, mean: 90, samples: [80, 100, 90]}\n"
           "  other:\n    batch_latency_ms:\n"
           f"      - {{batch: 1, mean: 1, samples: {[1.0] * 12}}}\n")
with tempfile.TemporaryDirectory() as d:
    with open(os.path.join(d, "profile-before.yaml"), "w") as f:
        f.write(profile)
    text = profile_swings(d, {"used"})
    assert "used b1 20.0..30.0 ms (x1.50)" in text, text
    assert "other" not in text, text
    # One outlier in a stretch is not a swing: the median of 5 ignores it.
    with open(os.path.join(d, "profile-before.yaml"), "w") as f:
        f.write(profile.replace(str(b1), str([20.0] * 9 + [60.0] + [20.0] * 10)))
    assert "used b1 20.0..20.0 ms (x1.00)" in profile_swings(d, {"used"})
    # No profile beside the results: nothing to say.
    os.remove(os.path.join(d, "profile-before.yaml"))
    assert profile_swings(d, {"used"}) == ""

assert profiled_models(["a", {"name": "b"}]) == {"a", "b"}
assert profiled_models({"count": 5, "prefix": "m", "profile_model": "sq"}) == {"sq"}
print("ok")
