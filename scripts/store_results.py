"""The pure parts of the weight store's figures (scripts/store_figures.py): the memory
prediction from the store's own accounting, the first answer's time split, and results
folders in the layout `servelab run` writes (experiment.yaml, results.db), so that the report
generator (reports/report.py, verdict.py, index.py) reads them as any experiment's.

Nothing here starts a process or reads a clock.
"""
import copy
import hashlib
import itertools
import json
import math
import os
import sqlite3
import zipfile

import yaml

MANIFEST_RECORD = "extra/servelab_weights"  # the skeleton's weight manifest (shared_weights.cpp)


# --- the store's accounting -------------------------------------------------------------

def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def skeleton_of(weight_store, model_file):
    """The skeleton a weight store keeps for `model_file` (named by the file's SHA-256)."""
    return os.path.join(weight_store, "skeletons", file_sha256(model_file) + ".pt")


def read_manifest(skeleton):
    """{blob id: bytes} of the blobs a skeleton's weight manifest names (each once)."""
    with zipfile.ZipFile(skeleton) as z:
        name = next(n for n in z.namelist() if n.endswith("/" + MANIFEST_RECORD))
        text = z.read(name).decode()
    blobs = {}
    for line in text.splitlines()[1:]:  # the first line is the code key
        f = line.split("\t")
        if len(f) == 9:
            blobs[f[4]] = int(f[5])
    return blobs


def cumulative_bytes(manifests):
    """Per count k = 1..len(manifests): (bytes of the distinct blobs the first k manifests
    name: what the store maps, bytes of every model's own blobs summed: what k models hold
    without it)."""
    seen, unique, logical, out = set(), 0, 0, []
    for blobs in manifests:
        for blob_id, n in blobs.items():
            if blob_id not in seen:
                seen.add(blob_id)
                unique += n
        logical += sum(blobs.values())
        out.append((unique, logical))
    return out


def predict_memory(manifests, base_bytes, first_bytes):
    """The predicted PSS after registering k = 1..K models, per k: {True: with the store,
    False: without}. `base_bytes`: {True/False: PSS before any model}; `first_bytes`: {True/
    False: PSS after the first}. A model's overhead beyond its weights (code, structures,
    buffers) is what the first model added beyond its blobs, and is taken to repeat for every
    later model."""
    totals = cumulative_bytes(manifests)
    first_unique, first_logical = totals[0]
    overhead = {True: first_bytes[True] - base_bytes[True] - first_unique,
                False: first_bytes[False] - base_bytes[False] - first_logical}
    return [{True: base_bytes[True] + unique + k * overhead[True],
             False: base_bytes[False] + logical + k * overhead[False]}
            for k, (unique, logical) in enumerate(totals, start=1)]


# --- the first answer's time split ------------------------------------------------------

# A first answer's parts: the load's phases as the engine splits them (load_parts_ms), the
# rest of its load wait, then compute, queue and the rest of the wall time.
LOAD_PARTS = ("read", "deserialize", "copy", "map", "load_wait")
PARTS = LOAD_PARTS + ("compute", "queue", "other")


def time_split(answer):
    """A classify answer's parts in ms: its load's phases as the engine measured them
    (load_parts_ms: read the file, deserialize the module or skeleton, copy to the device,
    map and check the store's blobs) and the rest of its load wait, compute (the forward
    pass), queue, the rest of the wall time (HTTP, image decode and preprocessing, the
    answer's way back), and `load`, the whole load wait."""
    load = answer.get("load_ms", 0.0)
    phases = answer.get("load_parts_ms") or {}
    parts = {"read": phases.get("read", 0.0), "deserialize": phases.get("deserialize", 0.0),
             "copy": phases.get("copy", 0.0), "map": phases.get("share", 0.0)}
    parts["load_wait"] = max(0.0, load - sum(parts.values()))
    parts["compute"] = answer.get("compute_ms", 0.0)
    parts["queue"] = answer.get("queue_ms", 0.0)
    parts["other"] = max(0.0, answer["wall_ms"] - load - parts["compute"] - parts["queue"])
    parts["load"] = load
    return parts


def geometric_mean(values):
    vals = [v for v in values if v > 0]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else math.nan


# --- experiment specs and results folders -----------------------------------------------

def load_spec(path):
    with open(path) as f:
        return yaml.safe_load(f)


def spec_for_count(spec, count):
    """The memory figure's spec for `count` variants: the sweep over 1..count, and the checks
    and labels that name the shipped last count naming `count` instead."""
    spec = copy.deepcopy(spec)
    last = max(spec["sweep"]["variants"])
    spec["sweep"]["variants"] = list(range(1, count + 1))
    for fig in spec.get("figures") or []:
        for check in fig.get("checks") or []:
            for key in ("of", "over", "at", "where"):
                sel = check.get(key) or {}
                if sel.get("variants") == last:
                    sel["variants"] = count
    labels = (spec.get("labels") or {}).get("variants") or {}
    if last in labels:
        labels[count] = labels.pop(last)
    return spec


def sweep_points(spec):
    """[(point id, {path: value})] of the spec's sweep grid, in `servelab run`'s order."""
    sweep = spec.get("sweep") or {}
    paths = list(sweep)
    return [(i, dict(zip(paths, values)))
            for i, values in enumerate(itertools.product(*(sweep[p] for p in paths)))]


def _column(path):
    return "".join(c if c.isalnum() else "_" for c in path)


def write_results(out_dir, spec, runs):
    """Writes OUT_DIR/experiment.yaml and OUT_DIR/results.db. `runs`: dicts with `params`
    (a sweep point's values), `mode` (sim or real), `repetition` and `metrics` ({name:
    number}); each becomes a run of the point whose values it names."""
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "experiment.yaml"), "w") as f:
        yaml.safe_dump(spec, f, sort_keys=False)
    points = sweep_points(spec)
    paths = list(spec.get("sweep") or {})
    metrics = sorted({m for r in runs for m in r["metrics"]})
    db_path = os.path.join(out_dir, "results.db")
    if os.path.exists(db_path):
        os.remove(db_path)
    con = sqlite3.connect(db_path)
    axis = "".join(f', "{_column(p)}"' for p in paths)
    con.execute("CREATE TABLE points (point_id INTEGER PRIMARY KEY, label TEXT, params TEXT"
                f"{axis})")
    con.execute("CREATE TABLE runs (run_id INTEGER PRIMARY KEY, point_id INTEGER REFERENCES "
                "points, mode TEXT, repetition INTEGER, seed INTEGER, dir TEXT, status TEXT, "
                "error TEXT, wall_s REAL, started_at TEXT DEFAULT CURRENT_TIMESTAMP)")
    cols = "".join(f", {m} REAL" for m in metrics)
    con.execute(f"CREATE TABLE summaries (run_id INTEGER PRIMARY KEY REFERENCES runs{cols}, "
                "summary TEXT)")
    con.execute("CREATE VIEW results AS SELECT * FROM runs JOIN points USING (point_id) "
                "LEFT JOIN summaries USING (run_id)")
    ids = {}
    for pid, params in points:
        label = " ".join(f"{p}={v}" for p, v in params.items())
        con.execute(f"INSERT INTO points VALUES (?, ?, ?{', ?' * len(paths)})",
                    [pid, label, json.dumps(params)] + [_sql(params[p]) for p in paths])
        ids[json.dumps(params, sort_keys=True)] = pid
    for r in runs:
        pid = ids.get(json.dumps(r["params"], sort_keys=True))
        if pid is None:
            raise ValueError(f"a run's parameters are not a point of the sweep: {r['params']}")
        cur = con.execute("INSERT INTO runs (point_id, mode, repetition, seed, dir, status, "
                          "wall_s) VALUES (?, ?, ?, 0, '', 'ok', ?)",
                          (pid, r["mode"], r.get("repetition", 0), r.get("wall_s", 0.0)))
        values = [r["metrics"].get(m) for m in metrics]
        con.execute(f"INSERT INTO summaries VALUES (?{', ?' * len(metrics)}, ?)",
                    [cur.lastrowid] + values + [json.dumps(r["metrics"])])
    con.commit()
    con.close()


def _sql(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)
