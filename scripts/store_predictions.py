#!/usr/bin/python3
"""The simulator's prediction of the store figures' first answers on this machine (TrIMS
figures 8, 9 and 10, PRETZEL figure 3; scripts/store_figures.py), made before their real runs from a profile
measured beforehand (`servelab measure --source-loads`: each model's load from its file read
from the disk, and through a weight store with its blobs resident and read from the disk).

Each case is one `servelab simulate` run of experiments/trims/configs/first-answer-local.yaml
(a server whose host tier is full, two requests: the first loads the model) with
simulation.load_source set to the case's source. Its first request becomes an answer in the
engine's shape (wall_ms, load_ms, load_parts_ms, compute_ms), so the figures split predicted
and measured answers alike (store_results.time_split).
"""
import csv
import os
import subprocess
import sys

import yaml

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CONFIG = os.path.join(ROOT, "experiments", "trims", "configs", "first-answer-local.yaml")
# A figure's case -> where its load reads the model from (engine/control/load_sources.h).
SOURCES = {"none": "file-cold", "store-warm": "store", "store-cold": "store-cold"}
PHASES = ("read", "deserialize", "copy", "share")


def measure_profile(servelab, models_dir, models, out, source_loads=5, quiet=False):
    """Measures `models` on this machine into the profile `out` (batches of one: first answers
    need no more), with their loads from every source; `quiet`: without its progress."""
    cmd = [servelab, "measure", *models, "--models-dir", models_dir, "--out", out,
           "--batch-sizes", "1", "--served-idle-turns", "0", "--served-miss-requests", "0",
           "--source-loads", str(source_loads)]
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, text=True,
                          stderr=subprocess.PIPE if quiet else None)
    if done.returncode != 0:
        sys.exit(f"store_predictions: `servelab measure` failed ({done.returncode})"
                 + (f":\n{done.stderr[-2000:]}" if quiet else ""))


def read_profile(path):
    with open(path) as f:
        return yaml.safe_load(f)["models"]


def simulate(servelab, profile, model, source, out):
    """The two requests of one run, as csv rows (dicts of floats), in id order."""
    sets = {"profile": os.path.abspath(profile), "models": f"[{model}]",
            "simulation.load_source": source, "workload.requests": "2"}
    cmd = [servelab, "simulate", CONFIG, "--out", out]
    for key, value in sets.items():
        cmd += ["--set", f"{key}={value}"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "requests.csv")) as f:
        rows = [r for r in csv.DictReader(f) if r["status"] == "ok"]
    if len(rows) != 2:
        sys.exit(f"store_predictions: {model} ({source}): {len(rows)} answers of 2")
    return [{k: float(r[k]) for k in ("arrival", "queued", "start", "finish")} for r in rows]


def as_answer(row, entry, source):
    """A simulated request as the engine answers it: its load wait split as the profile's
    source splits it (the first batch's extra cost counted as compute, as the engine counts
    it), compute the profile's batch of one."""
    cost = (entry.get("load_sources_ms") or {}).get(source, {})  # none: the wait unsplit
    compute = entry["batch_latency_ms"][0]["mean"]
    wait = (row["start"] - row["queued"]) * 1e3
    load = max(0.0, wait - cost.get("first_batch", 0.0)) if wait > 0 else 0.0
    phases = {p: cost.get(p, 0.0) for p in PHASES}
    total = sum(phases.values())
    parts = {p: v * load / total for p, v in phases.items()} if total > 0 else {}
    return {"wall_ms": (row["finish"] - row["arrival"]) * 1e3, "load_ms": load,
            "load_parts_ms": parts, "queue_ms": 0.0,
            "compute_ms": compute + (wait - load if wait > 0 else 0.0)}


def variant_latencies(servelab, profile, model, tmp):
    """PRETZEL figure 3 predicted: {with the store: (first answer, the second request's wall
    ms)} of a variant just registered: without the store its file, just read, loads from the
    page cache (`file`); with it, its siblings of one backbone are loaded, so its module is a
    copy of theirs (`store-sibling`)."""
    entry = read_profile(profile)[model]
    out = {}
    for shared, source in ((False, "file"), (True, "store-sibling")):
        rows = simulate(servelab, profile, model, source, os.path.join(tmp, f"{model}-{source}"))
        out[shared] = (as_answer(rows[0], entry, source),
                       (rows[1]["finish"] - rows[1]["arrival"]) * 1e3)
    return out


def first_answers(servelab, profile, models, cases, tmp):
    """{model: {case: (first answer, the second request's wall ms)}} for every case of
    SOURCES in `cases`, predicted from `profile`."""
    entries = read_profile(profile)
    out = {}
    for model in models:
        out[model] = {}
        for case in cases:
            source = SOURCES[case]
            rows = simulate(servelab, profile, model, source,
                            os.path.join(tmp, f"{model}-{case}"))
            out[model][case] = (as_answer(rows[0], entries[model], source),
                                (rows[1]["finish"] - rows[1]["arrival"]) * 1e3)
    return out
