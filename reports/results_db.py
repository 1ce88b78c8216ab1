"""Reads an experiment results folder written by `servelab run` (results.db + experiment.yaml).

The folder holds experiment.yaml (the experiment as run), results.db (SQLite: tables points,
runs, summaries) and one folder per run with config.yaml, requests.csv and summary.json.
"""
import json
import math
import os
import sqlite3

import yaml

# Summary metrics the report knows how to label; columns of the `summaries` table.
METRIC_LABELS = {
    "throughput_rps": "throughput (req/s)",
    "latency_mean_ms": "mean latency (ms)",
    "latency_p50_ms": "p50 latency (ms)",
    "latency_p80_ms": "p80 latency (ms)",
    "latency_p90_ms": "p90 latency (ms)",
    "latency_p99_ms": "p99 latency (ms)",
    "latency_max_ms": "max latency (ms)",
    "slo_attainment": "SLO attainment",
    "overdue": "overdue requests",
    "loads": "model loads",
    "mean_batch_size": "mean batch size",
    "accuracy": "expected accuracy",
    # The weight store's figures (scripts/store_figures.py).
    "pss_mb": "memory, PSS (MB)",
    "latency_ms": "latency (ms)",
    "load_ms": "load wait (ms)",
    "speedup": "speedup over no sharing",
    "first_answer_ms": "first answer time (ms)",
    "hot_ms": "hot answer time (ms)",
    "compute_share": "compute share (no sharing)",
    "share_load": "load share of the no-sharing time",
    "share_read": "disk read share of the no-sharing time",
    "share_deserialize": "deserialize share of the no-sharing time",
    "share_copy": "host-to-device copy share of the no-sharing time",
    "share_map": "blob mapping share of the no-sharing time",
    "share_load_wait": "other load wait share of the no-sharing time",
    "share_compute": "compute share of the no-sharing time",
    "share_queue": "queue share of the no-sharing time",
    "share_other": "HTTP and preprocessing share of the no-sharing time",
    "latency_p999_ms": "p99.9 latency (ms)",
    # TrIMS figure 11 (scripts/trims_workload.py).
    "batch_speedup": "batch execution time, no sharing over TrIMS",
    "gpu_hit_ratio": "share of requests served without a load",
    "latency_p95_ms": "p95 latency with TrIMS (ms)",
    "private_latency_p95_ms": "p95 latency without sharing (ms)",
    "models_run": "models run",
    "backup_extra_load": "extra load (copies sent / requests)",
    "backup_wasted_s": "wasted work (server s)",
    # The executing tier against its offline optimum (summary.json "cache_optimum").
    "optimum_loads": "loads into the executing tier",
    "optimum_lower": "fewest loads possible (lower bound)",
    "optimum_upper": "fewest loads possible (upper bound)",
    "loads_over_optimum": "loads over the optimum",
}
# summary.json's "cache_optimum" fields, as columns (runs without it: NaN).
CACHE_OPTIMUM_COLUMNS = {"optimum_loads": "loads", "optimum_lower": "optimum_lower",
                         "optimum_upper": "optimum_upper",
                         "loads_over_optimum": "loads_over_optimum"}
# Columns that results.db files of older versions lack, read from each run's stored summary
# JSON instead (missing there too: NaN, as for a run without model groups).
# background_cores: other processes' CPU during a real run (summary.json of real runs only).
SUMMARY_COLUMNS = {"accuracy": "accuracy", "background_cores": "background_cores"}
# Metrics compared between the simulator and the real run in every report table.
ERROR_METRICS = ["throughput_rps", "latency_mean_ms", "latency_p99_ms"]


class Experiment:
    """An experiment's spec plus its aggregated results, keyed by (mode, point_id)."""

    def __init__(self, spec, points, stats, runs, results_dir=None):
        self.dir = results_dir    # the results folder (run dirs are relative to it)
        self.spec = spec          # dict from experiment.yaml
        self.points = points      # point_id -> {"params": {path: value}, "label": str}
        self.stats = stats        # (mode, point_id) -> {metric: (mean, std, n)}
        self.runs = runs          # list of run rows (dicts)

    @property
    def modes(self):
        return sorted({mode for mode, _ in self.stats})

    def sweep_paths(self):
        sweep = self.spec.get("sweep") or {}
        return list(sweep.keys())

    def speed_matched(self):
        """Whether sim points ran on a profile scaled to their real run (--match-speed)."""
        return any(not math.isnan(self.value("sim", pid, "cost_scale")[0]) for pid in self.points)

    def value(self, mode, point_id, metric):
        s = self.stats.get((mode, point_id), {}).get(metric)
        return s if s else (math.nan, math.nan, 0)


def _mean_std(values):
    vals = [v for v in values if v is not None and not math.isnan(v)]
    if not vals:
        return (math.nan, math.nan, 0)
    m = sum(vals) / len(vals)
    var = sum((v - m) ** 2 for v in vals) / (len(vals) - 1) if len(vals) > 1 else 0.0
    return (m, math.sqrt(var), len(vals))


def load(results_dir):
    """Loads RESULTS_DIR; raises SystemExit with a user-facing message when it is not one."""
    db_path = os.path.join(results_dir, "results.db")
    spec_path = os.path.join(results_dir, "experiment.yaml")
    if not os.path.exists(db_path):
        raise SystemExit(f"report: {results_dir} has no results.db (run `servelab run` first)")
    spec = {}
    if os.path.exists(spec_path):
        with open(spec_path) as f:
            spec = yaml.safe_load(f) or {}
    con = sqlite3.connect(db_path)
    con.row_factory = sqlite3.Row
    points = {}
    for row in con.execute("SELECT point_id, label, params FROM points ORDER BY point_id"):
        points[row["point_id"]] = {"params": json.loads(row["params"]), "label": row["label"]}
    metric_cols = [r[1] for r in con.execute("PRAGMA table_info(summaries)")
                   if r[1] not in ("run_id", "summary")]
    rows = [dict(r) for r in con.execute(
        "SELECT runs.*, summaries.* FROM runs JOIN summaries USING (run_id) "
        "WHERE runs.status = 'ok' ORDER BY runs.run_id")]
    # Each run's stored summary JSON, parsed once: the columns this results.db lacks (an older
    # schema; the optimum's, which only scripts/store_results.py writes as columns) come from it.
    summaries = [json.loads(r.get("summary") or "{}") for r in rows]
    from_summary = {col: (lambda s, k=key: s.get(k)) for col, key in SUMMARY_COLUMNS.items()}
    from_summary.update({col: (lambda s, k=key: (s.get("cache_optimum") or {}).get(k))
                         for col, key in CACHE_OPTIMUM_COLUMNS.items()})
    for col, read in from_summary.items():
        if col in metric_cols:
            continue
        metric_cols.append(col)
        for r, summary in zip(rows, summaries):
            v = read(summary)
            r[col] = v if isinstance(v, (int, float)) else None
    # Sim runs with --match-speed also hold their summary on the unscaled profile.
    for r, summary in zip(rows, summaries):
        unscaled = summary.get("unscaled")
        if isinstance(unscaled, dict):
            for metric, value in flat_metrics(unscaled).items():
                r["unscaled_" + metric] = value
    metric_cols += sorted({k for r in rows for k in r if k.startswith("unscaled_")})
    runs = [dict(r) for r in con.execute("SELECT * FROM runs ORDER BY run_id")]
    con.close()
    grouped = {}
    for r in rows:
        grouped.setdefault((r["mode"], r["point_id"]), []).append(r)
    stats = {}
    for key, group in grouped.items():
        stats[key] = {m: _mean_std([g.get(m) for g in group]) for m in metric_cols}
    return Experiment(spec, points, stats, runs, results_dir)


def flat_metrics(summary):
    """The summaries-table columns of a summary.json dict (throughput_rps, latency_*_ms)."""
    out = {"throughput_rps": summary.get("throughput_rps")}
    for k, v in (summary.get("latency_ms") or {}).items():
        out[f"latency_{k}_ms"] = v
    return {k: v for k, v in out.items() if isinstance(v, (int, float))}


def relative_error(sim, real):
    """(sim - real) / real, NaN when either is missing or real is zero."""
    if sim is None or real is None or math.isnan(sim) or math.isnan(real) or real == 0:
        return math.nan
    return (sim - real) / real
