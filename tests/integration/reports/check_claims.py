#!/usr/bin/python3
"""Test: every figure of the shipped experiments states the paper's claim with checks that the
report can judge (known tests, bounds, selections that pick points of the experiment's sweep)."""
import glob
import os
import sys

import yaml

here = os.path.dirname(os.path.abspath(__file__))
src = os.path.abspath(os.path.join(here, "..", "..", ".."))
sys.path.insert(0, os.path.join(src, "reports"))
import verdict  # noqa: E402

errors, figures = [], 0
papers = ("rafiqi", "rafiki")
for path in sorted(p for d in papers for p in glob.glob(os.path.join(src, "experiments", d, "*.yaml"))):
    with open(path) as f:
        spec = yaml.safe_load(f)
    if "train" in spec:
        continue  # a training config (`servelab train`), not an experiment
    for fig in spec.get("figures") or []:
        figures += 1
        if not fig.get("checks"):
            errors.append(f"{os.path.basename(path)}: figure {fig.get('id')} has no checks")
        errors += [f"{os.path.basename(path)}: {p}" for p in verdict.problems(spec, fig)]
    if not spec.get("figures"):
        errors.append(f"{os.path.basename(path)}: no figures (nothing to judge the claim on)")
# The lint itself must be able to fail: a selection outside the sweep is caught.
bad = {"sweep": {"workload.arrival.concurrency": [1, 2]}, "claim": "x"}
assert verdict.problems(bad, {"id": "f", "checks": [
    {"says": "s", "test": "ratio", "of": {"workload.arrival.concurrency": 3},
     "over": {"workload.arrival.concurrency": 1}, "min": 1}]}), "a bad check passed the lint"
if errors:
    sys.exit("\n".join(errors))
print(f"claims ok: {figures} figures")
