"""The report page's contents: per figure the paper's claim, the checks' verdicts and a table
of simulated and real metrics per point with the simulator's relative error (rendered in
Markdown and HTML by page_render)."""
import math
import os

import evidence
import plots
import verdict
from results_db import ERROR_METRICS, METRIC_LABELS, relative_error

# A table column's metric in words, short enough for a header (the plots' axes say it in
# full: results_db.METRIC_LABELS); a metric not named here goes by its full label.
COLUMN_WORDS = {"throughput_rps": "throughput", "latency_mean_ms": "mean", "latency_p90_ms": "p90",
                "latency_p99_ms": "p99", "latency_p50_ms": "p50", "latency_p80_ms": "p80",
                "slo_attainment": "SLO attainment", "overdue": "overdue", "accuracy": "accuracy",
                "pss_mb": "PSS (MB)", "latency_ms": "latency (ms)", "load_ms": "load wait (ms)",
                "speedup": "speedup", "first_answer_ms": "first answer (ms)",
                "hot_ms": "hot answer (ms)", "compute_share": "compute share",
                "share_load": "load share", "share_read": "disk read share",
                "share_deserialize": "deserialize share", "share_copy": "copy share",
                "share_map": "mapping share", "share_load_wait": "other load wait share",
                "share_compute": "compute share", "share_queue": "queue share",
                "share_other": "HTTP and preprocessing share", "loads": "loads",
                "mean_batch_size": "mean batch"}
# Metrics that are fractions in [0, 1]: shown with 3 decimals (one would round 0.93 and 0.97
# of accuracy or SLO attainment alike), and the time shares with 2; speedups with 2.
FRACTION_METRICS = {"accuracy", "slo_attainment"}
DIGITS = {"speedup": 2, "compute_share": 2, "mean_batch_size": 2}
# The papers' names as they spell them (the experiments' `paper:` is lower case).
PAPER_NAMES = {"rafiqi": "Rafiqi", "rafiki": "Rafiki", "pretzel": "PRETZEL", "trims": "TrIMS",
               "dlis": "DLIS"}


def paper_name(spec):
    """The experiment's paper as the paper spells its name ('TrIMS', not 'Trims')."""
    paper = str(spec.get("paper") or "")
    return PAPER_NAMES.get(paper.lower(), paper.capitalize())


def column_words(metric):
    """A metric's table header in words ('SLO attainment', not 'slo_attainment')."""
    return COLUMN_WORDS.get(metric) or METRIC_LABELS.get(metric, metric.replace("_", " "))


def _digits(metric):
    if metric in FRACTION_METRICS:
        return 3
    return DIGITS.get(metric, 2 if metric.startswith("share_") else 1)


def _fmt(v, digits=1):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}" if abs(v) < 1e5 else f"{v:.3g}"
    return str(v)


def _fmt_stat(mean, sd, n, digits=1):
    """A point's value: the mean over its repetitions, with their standard deviation."""
    return _fmt(mean, digits) + (f" ± {_fmt(sd, digits)}" if n > 1 else "")


def _pct(v):
    return "-" if v is None or math.isnan(v) else f"{v * 100:+.1f}%"


def figure_section(exp, fig, files):
    """Collects one figure's text, image files and table rows (mode-independent data)."""
    xs, series = plots.figure_series(exp, fig)
    metrics = fig.get("metrics") or plots.DEFAULT_METRICS
    # The simulator-vs-real metrics lead every table of a serving run; results that measured
    # none of them (memory, speedups) show the figure's metrics only.
    measured = {m for st in exp.stats.values() for m, s in st.items() if s[2] > 0}
    serving = any(m in measured for m in ERROR_METRICS)
    # A figure's own `error_metrics:` get the error column too (a prediction of what it plots,
    # such as a first answer's time, graded point by point as a serving run's latencies are).
    err_metrics = list(dict.fromkeys((ERROR_METRICS if serving else [])
                                     + list(fig.get("error_metrics") or [])))
    cols = list(dict.fromkeys((ERROR_METRICS if serving else []) + metrics
                              + list(fig.get("error_metrics") or [])))
    modes = [m for m in ("sim", "real") if m in exp.modes]
    header = [fig.get("x_label") or plots.short(fig.get("x")) or "point"] + (["series"] if any(series) else [])
    # --match-speed: each sim point ran on the profile scaled to its real run's machine speed.
    matched = "sim" in modes and exp.speed_matched()
    if matched:
        header.append("speed")
    for m in cols:
        header += [f"{column_words(m)} {mode}" for mode in modes]
        if len(modes) == 2 and m in err_metrics:
            header.append(f"{column_words(m)} err")
    rows, errors = [], {m: [] for m in err_metrics}
    for label, by_x in series.items():
        for x in xs:
            if x not in by_x:
                continue
            pid = by_x[x]
            row = [plots.words(exp, fig.get("x"), x)] + ([label] if any(series) else [])
            if matched:
                row.append(_fmt(exp.value("sim", pid, "cost_scale")[0], 2))
            for m in cols:
                stats = {mode: exp.value(mode, pid, m) for mode in modes}
                vals = {mode: st[0] for mode, st in stats.items()}
                digits = _digits(m)
                row += [_fmt_stat(*stats[mode], digits) for mode in modes]
                if len(modes) == 2 and m in err_metrics:
                    e = relative_error(vals["sim"], vals["real"])
                    errors[m].append(e)
                    row.append(_pct(e))
            rows.append(row)
    mean_abs = {}
    for m, es in errors.items():
        es = [abs(e) for e in es if not math.isnan(e)]
        if es:
            mean_abs[m] = sum(es) / len(es)
    claim = fig.get("claim") or exp.spec.get("claim") or "(no claim stated)"
    verdicts = verdict.figure_verdicts(exp, fig, modes)
    failed = any(v[0] == verdict.FAILS for v in verdicts.values())
    return {"fig": fig, "files": files, "header": header, "rows": rows,
            "mean_abs_err": mean_abs, "claim": " ".join(str(claim).split()),
            "source": claim_source(exp.spec, fig), "speed_matched": matched,
            "reading": " ".join(str(fig.get("our_reading") or "").split()),
            "verdicts": verdicts, "spec": exp.spec,
            "evidence": evidence.figure_evidence(exp, fig, modes, failed_points(exp, fig, verdicts))
            if failed else []}


def failed_points(exp, fig, verdicts):
    """The point ids that the figure's failed checks of the paper's claim read, so that the reason shown is about
    those checks: a ratio's `of` and `over`, a value's `at`; for flat, the highest and the
    lowest point it compared, and for highest and lowest, `at` and the point that beat it (in
    the mode where the check failed)."""
    failed = [(mode, r["says"]) for mode, (_, results) in verdicts.items() for r in results
              if r["verdict"] == verdict.FAILS and not r["ours"]]
    out = []

    def add(pids):
        out.extend(p for p in pids if p not in out)

    for mode, says in failed:
        for c in fig.get("checks") or []:
            if " ".join(str(c.get("says")).split()) != says:
                continue
            where = dict(c.get("where") or {})
            metric = c.get("metric", "throughput_rps")
            for k in ("of", "over", "at"):
                if c.get(k) is not None:
                    add(verdict.select(exp, {**where, **c[k]}))
            if c.get("test") in ("flat", "highest", "lowest"):
                vals = {p: exp.value(mode, p, metric)[0] for p in verdict.select(exp, where)}
                vals = {p: v for p, v in vals.items() if not math.isnan(v)}
                if vals:
                    hi, lo = max(vals, key=vals.get), min(vals, key=vals.get)
                    add({"flat": [hi, lo], "highest": [hi], "lowest": [lo]}[c["test"]])
    return out


def claim_source(spec, fig):
    """'Rafiqi, section 5.0.1, figure 5': where in the paper the claim is (the figure's
    `source:`, else the experiment's paper and figure)."""
    paper = paper_name(spec)
    where = fig.get("source") or (f"figure {spec['figure']}" if spec.get("figure") else "")
    return ", ".join(p for p in (paper, str(where)) if p)


def claim_blocks(sec):
    """The figure's claim sections, kept apart: [(heading, text)], the paper's first; a claim
    quoted under an earlier figure of the page (its 'claim_in') is pointed to, not repeated."""
    text = sec["claim"]
    if sec.get("claim_in"):
        text = f"As quoted under \"{sec['claim_in']}\" above."
    blocks = [(f"Paper's claim ({sec['source']})" if sec["source"] else "Paper's claim", text)]
    if sec["reading"]:
        blocks.append(("Our reading (the project's expectations, not the paper's words)",
                       sec["reading"]))
    return blocks


def verdict_lines(sec):
    """The figure's verdict per mode, then one line per check (plain text)."""
    lines = []
    for mode, (overall, results) in sec["verdicts"].items():
        lines.append(f"Verdict ({plots.mode_title(sec['spec'], mode)}): the claim {overall}.")
        lines += [f"- {r['verdict']}: {r['says']}: computed: {r['detail']}."
                  for r in results if not r["ours"]]
        ours = [r for r in results if r["ours"]]
        if ours:
            lines.append("Checks of our reading (the project's expectations, not the paper's "
                         "claim; they do not set the verdict):")
            lines += [f"- {r['verdict']}: {r['says']}: computed: {r['detail']}." for r in ours]
    if sec["evidence"]:
        lines.append("Where it does not hold, the measured reason:")
        lines += [f"- {e}" for e in sec["evidence"]]
    return lines


def intro_lines(exp):
    spec = exp.spec
    ok = sum(1 for r in exp.runs if r.get("status") == "ok")
    failed = [r for r in exp.runs if r.get("status") != "ok"]
    lines = [f"Experiment **{spec.get('name', '?')}**"
             + (f" ({paper_name(spec)}, figure {spec.get('figure', '?')})"
                if spec.get("paper") else "")
             + f": {ok} runs ok, {len(failed)} failed; modes: {', '.join(exp.modes)}."]
    if exp.speed_matched():
        lines.append("Speed matched (servelab run --match-speed): each point was simulated on "
                     "the profile scaled by the machine's speed during its real run (column "
                     "speed: the engine's batch compute times over the profile's), following "
                     "the speed's course over the run in windows of 8 batches and its spread.")
    reps = spec.get("repetitions", 1)
    more = spec.get("more_repetitions") or []
    if (isinstance(reps, int) and reps > 1) or more:
        where = "; ".join(
            f"{r.get('repetitions')} where " + ", ".join(f"{k} in {v}" for k, v in
                                                         (r.get("where") or {}).items())
            for r in more)
        lines.append(f"{reps} repetitions per point" + (f" ({where})" if where else "") +
                     f", seeds {spec.get('seeds')}: tables show the mean ± the standard "
                     "deviation over them, plots their mean with error bars, and errors "
                     "compare the means.")
    warmup = (spec.get("workload") or {}).get("warmup") or 0
    if warmup:
        lines.append(f"Steady state: the requests sent in each run's first {warmup} s are run and "
                     "recorded (requests.csv) but left out of the latency figures, in both "
                     "modes; throughput is each run's whole.")
    if spec.get("command_line_set"):
        lines.append("Run with overrides of the config below (servelab run --set): "
                     + ", ".join(str(x) for x in spec["command_line_set"]) + ".")
    if spec.get("scaled_down"):
        said = "Scaled down from the paper"
        if spec.get("command_line_set"):
            said += " (as the config file says; the line below is what this run used)"
        lines.append(said + ": " + " ".join(str(spec["scaled_down"]).split()))
    used = as_run(exp)
    if used:
        lines.append(used)
    for r in failed[:5]:
        lines.append(f"Failed run {r.get('dir')}: {r.get('error')}")
    # A note written next to the results by whoever chose the setting (scripts/demo: the
    # real-engine regime chosen from the measured profile, reports/regime.py).
    note = os.path.join(exp.dir or "", "regime.md")
    if exp.dir and os.path.exists(note):
        with open(note) as f:
            lines += [" ".join(p.split()) for p in f.read().split("\n\n") if p.strip()]
    return lines


def _run_config(exp):
    """The resolved config.yaml of the experiment's first successful run, or {}."""
    import yaml
    for r in exp.runs:
        if r.get("status") == "ok" and exp.dir and r.get("dir"):
            path = os.path.join(exp.dir, r["dir"], "config.yaml")
            if os.path.exists(path):
                with open(path) as f:
                    return yaml.safe_load(f) or {}
    return {}


def as_run(exp):
    """'This run used: ...': the models, engine and workload size the runs were given (their
    resolved config), and the repetitions per point, whatever the config file's text says."""
    cfg = _run_config(exp)
    if not cfg:
        return None
    models = [m if isinstance(m, str) else (m or {}).get("name", "?")
              for m in cfg.get("models") or []]
    eng, wl = cfg.get("engine") or {}, cfg.get("workload") or {}
    sweep = exp.spec.get("sweep") or {}
    parts = [("model " if len(models) == 1 else "models ") + ", ".join(models)] if models else []
    for key, words in (("workers", "workers"), ("max_batch", "max batch"),
                       ("quantum_ms", "quantum (ms)")):
        swept = sweep.get(f"engine.{key}")
        if swept:
            parts.append(f"{words} swept over {', '.join(str(v) for v in swept)}")
        elif eng.get(key) is not None:
            parts.append(f"{words} {eng[key]}")
    if wl.get("requests") is not None and not sweep.get("workload.requests"):
        parts.append(f"{wl['requests']} requests a run")
    reps = {}
    for r in exp.runs:
        if r.get("status") == "ok":
            key = (r.get("point_id"), r.get("mode"))
            reps[key] = reps.get(key, 0) + 1
    if reps:
        lo, hi = min(reps.values()), max(reps.values())
        parts.append(f"{lo} repetition{'s' if lo > 1 else ''} per point" if lo == hi
                     else f"{lo} to {hi} repetitions per point")
    return "This run used: " + "; ".join(parts) + "." if parts else None
