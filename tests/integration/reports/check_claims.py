#!/usr/bin/python3
"""Test: every figure of the shipped experiments states the paper's claim with its source (a
section and figure of the paper) and checks that the report can judge (known tests, bounds,
selections that pick points of the experiment's sweep) whose words name the quantity they
compute (reports/wording.py), and measured reasons (`evidence:`) of kinds the report knows."""
import glob
import os
import sys

import yaml

here = os.path.dirname(os.path.abspath(__file__))
src = os.path.abspath(os.path.join(here, "..", "..", ".."))
sys.path.insert(0, os.path.join(src, "reports"))
import evidence  # noqa: E402
import verdict  # noqa: E402
import wording  # noqa: E402

errors, figures = [], 0
papers = ("rafiqi", "rafiki", "pretzel", "trims", "dlis")
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
        errors += [f"{os.path.basename(path)}: figure {fig.get('id')}: unknown evidence "
                   f"'{kind}' (known: {', '.join(evidence.KINDS)})"
                   for kind in fig.get("evidence") or [] if kind not in evidence.KINDS]
        source = str(fig.get("source") or "")
        if "figure" not in source.lower() or "section" not in source.lower():
            errors.append(f"{os.path.basename(path)}: figure {fig.get('id')}: its 'source' "
                          f"names no section and figure of the paper ({source!r})")
        for c in fig.get("checks") or []:
            errors += [f"{os.path.basename(path)}: figure {fig.get('id')}, check "
                       f"'{' '.join(str(c.get('says')).split())}': {p}"
                       for p in wording.problems(c, spec.get("labels"))]
    if not spec.get("figures"):
        errors.append(f"{os.path.basename(path)}: no figures (nothing to judge the claim on)")
# The lint itself must be able to fail: a selection outside the sweep is caught.
bad = {"sweep": {"workload.arrival.concurrency": [1, 2]}, "claim": "x"}
assert verdict.problems(bad, {"id": "f", "checks": [
    {"says": "s", "test": "ratio", "of": {"workload.arrival.concurrency": 3},
     "over": {"workload.arrival.concurrency": 1}, "min": 1}]}), "a bad check passed the lint"
# The wording lint must be able to fail: greedy-all over greedy-one is not "attainment >= 0.95".
g = "groups.e.dispatch"
assert wording.problems({"says": "greedy (all models): SLO attainment at least 0.95",
                         "test": "ratio", "metric": "slo_attainment",
                         "of": {g: {"name": "greedy", "members": "all"}},
                         "over": {g: {"name": "greedy", "members": "one"}}}), "one side unnamed"
assert wording.problems({"says": "Clipper has more overdue requests than greedy",
                         "test": "ratio", "metric": "slo_attainment",
                         "of": {"b": "fixed"}, "over": {"b": "rafiki-greedy"}}), "metric unnamed"
assert not wording.problems({"says": "throughput at 128 in flight over 1", "test": "ratio",
                             "of": {"c": 128}, "over": {"c": 1}})
if errors:
    sys.exit("\n".join(errors))
print(f"claims ok: {figures} figures")
