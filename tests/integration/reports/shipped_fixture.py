#!/usr/bin/python3
"""Synthetic results of the shipped experiments that scripts/demo and scripts/rafiki-figures
run, in the layout of `servelab run` (results.db, experiment.yaml, per run config.yaml,
summary.json and requests.csv), so that the pages the report generator writes for them can be
checked without running anything: the experiment's own sweep, figures, checks, labels and
modes, with made-up numbers (two repetitions a point, so that noise bands are computed).

    shipped_fixture.py OUT [EXPERIMENT.yaml ...]   # default: DEMO, RAFIKI_FIGURES and
                                                   # DLIS_FIGURES below
"""
import itertools
import json
import os
import random
import sqlite3
import sys

import yaml

here = os.path.dirname(os.path.abspath(__file__))
src = os.path.abspath(os.path.join(here, "..", "..", ".."))
sys.path.insert(0, os.path.join(src, "reports"))
import verdict  # noqa: E402

# The configs scripts/demo, scripts/rafiki-figures and scripts/dlis-figures run (keep in step
# with them).
DEMO = ["rafiqi/access-patterns", "rafiqi/num-models-paper", "rafiqi/concurrency-paper",
        "rafiqi/concurrency", "rafiki/single-model-sine", "rafiki/ensemble-inception",
        "rafiki/ensemble-inception-rl"]
RAFIKI_FIGURES = ["rafiki/single-model-sine-real", "rafiki/ensemble-digits-dispatch",
                  "rafiki/ensemble-digits-real"]
DLIS_FIGURES = ["dlis/cancellation", "dlis/tail-at-scale", "dlis/routers", "dlis/cancellation-real",
                "dlis/tail-at-scale-real", "dlis/routers-real"]

METRICS = ["requests", "completed", "failed", "throughput_rps", "latency_mean_ms",
           "latency_p50_ms", "latency_p80_ms", "latency_p90_ms", "latency_p99_ms",
           "latency_p999_ms", "latency_max_ms", "slo_attainment", "overdue", "loads",
           "evictions", "hits", "misses", "mean_batch_size", "speed_factor", "cost_scale",
           "accuracy", "backup_extra_load", "backup_wasted_s"]


def grid(spec):
    """The sweep's points as the runner makes them (the `skip:` ones left out)."""
    sweep = spec.get("sweep") or {}
    paths = list(sweep)
    out = []
    for values in itertools.product(*(sweep[p] for p in paths)):
        params = dict(zip(paths, values))
        if any(all(verdict._matches(params.get(k), v) for k, v in s.items())
               for s in spec.get("skip") or []):
            continue
        out.append(params)
    return out


def _stored(v):
    """A sweep value as results.db stores it: maps and lists as flow YAML text."""
    if isinstance(v, (dict, list)):
        return yaml.safe_dump(v, default_flow_style=True, width=1000).strip()
    return v


def write(out, name):
    """OUT/<basename of name>: the synthetic results folder of experiments/<name>.yaml."""
    path = os.path.join(src, "experiments", name + ".yaml")
    spec = yaml.safe_load(open(path))
    folder = os.path.join(out, os.path.basename(name))
    os.makedirs(folder)
    modes = spec.get("modes") or ["sim"]
    spec["repetitions"], spec["seeds"] = 2, [1, 2]
    with open(os.path.join(folder, "experiment.yaml"), "w") as f:
        yaml.safe_dump(spec, f, sort_keys=False)
    con = sqlite3.connect(os.path.join(folder, "results.db"))
    con.executescript(
        "CREATE TABLE points (point_id INTEGER PRIMARY KEY, label TEXT, params TEXT);"
        "CREATE TABLE runs (run_id INTEGER PRIMARY KEY, point_id INTEGER, mode TEXT, "
        "repetition INTEGER, seed INTEGER, dir TEXT, status TEXT, error TEXT, wall_s REAL);"
        "CREATE TABLE summaries (run_id INTEGER PRIMARY KEY, "
        + ", ".join(f"{m} REAL" for m in METRICS) + ", summary TEXT);")
    rng = random.Random(name)
    models = [m if isinstance(m, str) else m.get("name") for m in spec.get("models") or []]
    config = {"models": [{"name": m, "profile_model": m} for m in models],
              "engine": spec.get("engine") or {}, "workload": spec.get("workload") or {}}
    run = 0
    for pid, params in enumerate(grid(spec)):
        stored = {k: _stored(v) for k, v in params.items()}
        con.execute("INSERT INTO points VALUES (?,?,?)",
                    (pid, " ".join(f"{k}={v}" for k, v in stored.items()), json.dumps(stored)))
        base = rng.uniform(50, 500)
        for mode in modes:
            for rep in range(2):
                run_dir = os.path.join("runs", f"p{pid:03d}-{mode}-r{rep}")
                os.makedirs(os.path.join(folder, run_dir))
                with open(os.path.join(folder, run_dir, "config.yaml"), "w") as f:
                    yaml.safe_dump(config, f)
                thr = base * rng.uniform(0.95, 1.05)
                lat = 1000.0 / thr * rng.uniform(1, 50)
                m = {"requests": 600, "completed": 600, "failed": 0, "throughput_rps": thr,
                     "latency_mean_ms": lat, "latency_p50_ms": lat * 0.9,
                     "latency_p80_ms": lat * 1.2, "latency_p90_ms": lat * 1.5,
                     "latency_p99_ms": lat * 2, "latency_p999_ms": lat * 2.2,
                     "latency_max_ms": lat * 2.5, "slo_attainment": rng.uniform(0.3, 1),
                     "overdue": rng.randint(0, 500), "loads": 0, "evictions": 0, "hits": 600,
                     "misses": 0, "mean_batch_size": rng.uniform(1, 16), "speed_factor": None,
                     "cost_scale": None, "accuracy": rng.uniform(0.7, 0.9),
                     "backup_extra_load": rng.uniform(0, 0.2), "backup_wasted_s": rng.uniform(0, 5)}
                with open(os.path.join(folder, run_dir, "summary.json"), "w") as f:
                    json.dump({k: v for k, v in m.items() if v is not None}, f)
                with open(os.path.join(folder, run_dir, "requests.csv"), "w") as f:
                    f.write("id,model,arrival,queued,dispatch,start,finish,batch_size,"
                            "waited_for_load,status,deadline,accuracy\n")
                    for i in range(200):
                        t = i * 0.3
                        f.write(f"{i},{models[0] if models else 'm'},{t},{t},{t},{t},"
                                f"{t + rng.uniform(0.01, 0.9)},1,0,ok,{t + 0.5},"
                                f"{rng.uniform(0.7, 0.9):.3f}\n")
                run += 1
                con.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?)",
                            (run, pid, mode, rep, rep + 1, run_dir, "ok", None, 1.0))
                con.execute(f"INSERT INTO summaries VALUES ({', '.join('?' * (len(METRICS) + 2))})",
                            [run] + [m[k] for k in METRICS] + [json.dumps(m)])
    con.commit()
    con.close()
    return folder


def write_all(out, names=None):
    return [write(out, n) for n in (names or DEMO + RAFIKI_FIGURES + DLIS_FIGURES)]


if __name__ == "__main__":
    names = [os.path.splitext(os.path.relpath(p, os.path.join(src, "experiments")))[0]
             for p in sys.argv[2:]]
    for d in write_all(sys.argv[1], names or None):
        print(d)
