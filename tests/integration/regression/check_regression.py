#!/usr/bin/python3
"""CI regression check: runs each deterministic simulation config of experiments/regression/
with `servelab run --mode sim` and compares every point's throughput, p99 latency and SLO
attainment with the committed baseline (experiments/regression/baselines/<name>.json).

Fails (exit 1) when a metric got worse than its baseline by more than the tolerance stated in
the config (`regression: tolerance: {throughput_rps: 0.02, latency_p99_ms: 0.05,
slo_attainment: 0.01, accuracy: 0.005}`, relative for throughput and p99, absolute for SLO
attainment and accuracy, which only runs with model groups have), and
prints which policy, point and metric. Improvements beyond the tolerance are reported too, as
a hint to refresh the baseline (`--update` rewrites the baselines from the current run).

usage: check_regression.py SERVELAB_BINARY [CONFIG.yaml ...] [--update]
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
REG_DIR = os.path.join(SRC, "experiments", "regression")
# metric -> (direction that is worse, tolerance kind)
METRICS = {"throughput_rps": ("lower", "relative"), "latency_p99_ms": ("higher", "relative"),
           "slo_attainment": ("lower", "absolute"), "accuracy": ("lower", "absolute")}
DEFAULT_TOL = {"throughput_rps": 0.02, "latency_p99_ms": 0.05, "slo_attainment": 0.01,
               "accuracy": 0.005}


def run(binary, config, out):
    cmd = [binary, "run", config, "--mode", "sim", "--out", out, "--quiet"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise SystemExit(f"regression: `{' '.join(cmd)}` failed:\n{p.stdout}")
    con = sqlite3.connect(os.path.join(out, "results.db"))
    rows = con.execute("SELECT label, avg(throughput_rps), avg(latency_p99_ms), "
                       "avg(slo_attainment), avg(accuracy) FROM results WHERE status='ok' "
                       "GROUP BY point_id ORDER BY point_id").fetchall()
    # accuracy only for runs that have one (model groups): other baselines keep their keys
    return {r[0]: {m: v for m, v in zip(METRICS, r[1:]) if m != "accuracy" or v is not None}
            for r in rows}


def worse_by(metric, base, now):
    """How much worse `now` is than `base` (positive = worse), in the tolerance's unit."""
    direction, kind = METRICS[metric]
    delta = (now - base) if direction == "higher" else (base - now)
    if kind == "relative":
        return delta / abs(base) if base else (0.0 if delta == 0 else float("inf"))
    return delta


def check(binary, config, update):
    spec = yaml.safe_load(open(config))
    name = spec.get("name") or os.path.splitext(os.path.basename(config))[0]
    tol = dict(DEFAULT_TOL, **((spec.get("regression") or {}).get("tolerance") or {}))
    baseline_path = os.path.join(REG_DIR, "baselines", name + ".json")
    with tempfile.TemporaryDirectory() as tmp:
        current = run(binary, config, tmp)
    if update:
        with open(baseline_path, "w") as f:
            json.dump({"config": os.path.relpath(config, SRC), "points": current}, f, indent=2,
                      sort_keys=True)
            f.write("\n")
        print(f"{name}: baseline written ({len(current)} points) to {baseline_path}")
        return []
    if not os.path.exists(baseline_path):
        return [f"{name}: no baseline {baseline_path} (run with --update to create it)"]
    baseline = json.load(open(baseline_path))["points"]
    failures = []
    for label, base in baseline.items():
        if label not in current:
            failures.append(f"{name}: point '{label}' is in the baseline but was not run")
            continue
        for metric, b in base.items():
            now = current[label].get(metric)
            if b is None:
                continue
            if now is None:
                failures.append(f"{name} [{label}] {metric}: missing (baseline {b:.4g})")
                continue
            w = worse_by(metric, b, now)
            if w > tol[metric]:
                failures.append(f"{name} [{label}] {metric} got worse: {b:.4g} -> {now:.4g} "
                                f"({w:+.2%} vs tolerance {tol[metric]:.2%})"
                                if METRICS[metric][1] == "relative" else
                                f"{name} [{label}] {metric} got worse: {b:.4g} -> {now:.4g} "
                                f"(-{w:.4f} vs tolerance {tol[metric]:.4f})")
            elif w < -tol[metric]:
                print(f"note: {name} [{label}] {metric} improved: {b:.4g} -> {now:.4g} "
                      "(refresh the baseline with --update)")
    print(f"{name}: {len(baseline)} points checked, {len(failures)} regressions")
    return failures


def main(argv):
    update = "--update" in argv
    args = [a for a in argv if a != "--update"]
    if not args:
        raise SystemExit(__doc__)
    binary, configs = args[0], args[1:]
    if not configs:
        configs = sorted(os.path.join(REG_DIR, f) for f in os.listdir(REG_DIR)
                         if f.endswith(".yaml"))
    failures = []
    for c in configs:
        failures += check(binary, c, update)
    for f in failures:
        print("REGRESSION: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
