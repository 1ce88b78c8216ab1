#!/usr/bin/python3
"""Test: check_errors.py's cause for points that miss only off speed. A slowdown of those
points when all ran slower than the points that held; else drift between profile and run,
unless every such point ran slower (or faster) than the profiles taken both before and after
the runs: hand-made speeds and profiles, each case on either side of the margin."""
import os
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.abspath(os.path.join(here, "..", "..", "..", "reports")))
from check_errors import miss_cause, profile_ratios  # noqa: E402

# Both profiles agree (after/before 0.95-0.97); every point ran 12-25% slower: not drift.
slower = miss_cause([1.12, 1.25, 1.15], [0.95, 0.97])
assert slower.startswith("the real runs ran slower than the profiles"), slower
assert "speeds 1.12-1.25" in slower and "after/before 0.95-0.97" in slower, slower
# One point within 5% of the slower profile: drift may explain it.
assert miss_cause([1.04, 1.25], [0.95, 0.97]).startswith("the machine's drift")
# The machine slowed by 20% between the profiles: runs at 1.12-1.25 sit within that drift.
assert miss_cause([1.12, 1.25], [1.20, 1.22]).startswith("the machine's drift")
# Every point faster than both profiles.
assert miss_cause([0.80, 0.85], [1.0, 1.02]).startswith("the real runs ran faster")
# Without the profile after the runs there is nothing to compare with.
assert miss_cause([1.3], []).startswith("the machine's drift")
assert miss_cause([], [1.0]) == ""
# Points that held ran at 1.00-1.04 (median 1.02), in the same rounds: misses at 1.11-1.17
# are particular to those points, whatever the profiles say.
served = miss_cause([1.17, 1.11], [0.95, 0.97], held=[1.00, 1.02, 1.04])
assert served.startswith("these points' real runs ran slower than the points that held"), served
assert "speeds 1.11-1.17" in served and "those 1.02, median of 3" in served, served
# One miss within 5% of the held median: the drift rules decide.
assert miss_cause([1.06, 1.25], [1.20, 1.22], held=[1.02]).startswith("the machine's drift")

PROFILE = "models:\n  m:\n    batch_latency_ms:\n{rows}"
with tempfile.TemporaryDirectory() as d:
    for which, rows in (("before", [(1, 20.0), (8, 100.0)]), ("after", [(1, 22.0), (8, 90.0)])):
        with open(os.path.join(d, f"profile-{which}.yaml"), "w") as f:
            f.write(PROFILE.format(rows="".join(f"      - {{batch: {b}, mean: {m}}}\n"
                                                for b, m in rows)))
    got = sorted(profile_ratios(d))
    assert len(got) == 2 and abs(got[0] - 0.9) < 1e-12 and abs(got[1] - 1.1) < 1e-12, got
    os.remove(os.path.join(d, "profile-after.yaml"))
    assert profile_ratios(d) == []
print("check_miss_cause: ok")
