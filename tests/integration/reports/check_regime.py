#!/usr/bin/python3
"""Test: reports/regime.py picks the model and max batch where batching pays from a profile,
changes its choice when the costs change, and says so when no model gains by batching."""
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
script = os.path.abspath(os.path.join(here, "..", "..", "..", "reports", "regime.py"))


def profile(costs):
    out = "source: fixture\nmodels:\n"
    for name, by_batch in costs.items():
        out += f"  {name}:\n    size_mb: 5\n    batch_latency_ms:\n" + "".join(
            f"      - {{batch: {b}, mean: {m}, stddev: 0.1}}\n" for b, m in by_batch.items())
    return out


def regime(tmp, costs, *args):
    path = os.path.join(tmp, "profile.yaml")
    with open(path, "w") as f:
        f.write(profile(costs))
    note = os.path.join(tmp, "regime.md")
    r = subprocess.run([sys.executable, script, path, "--note", note, *args],
                       capture_output=True, text=True)
    return r.returncode, r.stdout.split(), open(note).read()


flat = {1: 10, 2: 20, 4: 40, 8: 80}          # per image 10 ms at every size
pays = {1: 10, 2: 15, 4: 24, 8: 60}           # cheapest per image at 4 (6 ms)
with tempfile.TemporaryDirectory() as tmp:
    rc, sets, text = regime(tmp, {"a": flat, "b": pays})
    assert rc == 0 and sets == ["--set", "models=[b]", "--set", "engine.max_batch=4"], sets
    assert "Chosen: b, max batch 4" in text and "1.67x cheaper per image" in text, text
    # Swap the costs: the choice follows the measurements.
    rc, sets, _ = regime(tmp, {"a": pays, "b": flat})
    assert sets[1] == "models=[a]", sets
    # --max-batch bounds the search: up to 2, b is cheapest at 2.
    rc, sets, _ = regime(tmp, {"a": flat, "b": pays}, "--max-batch", "2")
    assert sets[3] == "engine.max_batch=2", sets
    # Nothing pays: exit 1 and the note says it.
    rc, sets, text = regime(tmp, {"a": flat, "b": {1: 10, 2: 24, 4: 50}})
    assert rc == 1 and "No candidate gained by batching" in text, (rc, text)
    # Pilots on the engine overrule the profile: a pays more on the profile, but its pilot
    # shows batching losing (make_fixture --claim-fails), while b's pilot gains.
    pilots = os.path.join(tmp, "pilots")
    fixture = os.path.join(here, "make_fixture.py")
    subprocess.run([sys.executable, fixture, os.path.join(pilots, "a"), "--claim-fails"],
                   check=True)
    subprocess.run([sys.executable, fixture, os.path.join(pilots, "b")], check=True)
    rc, sets, text = regime(tmp, {"a": pays, "b": {1: 10, 2: 18, 4: 34}}, "--pilots", pilots)
    assert rc == 0 and sets[1] == "models=[b]", (sets, text)
    assert "a: 67 against 99 req/s at 16 in flight, 0.68x" in text, text
    assert "Chosen: b, max batch 2" in text and "gained 3.74x" in text, text
print("regime ok")
