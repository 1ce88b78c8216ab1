"""Verdicts: whether the checks of a figure's claim hold in the stored results.

A figure of an experiment YAML states the paper's claim (`claim:`, the paper's words or a
close paraphrase, and `source:`, its section and figure), the project's own reading of it
(`our_reading:`: expectations, inferences, what the model lacks) and machine-readable
`checks:`, each one testable statement about the results whose words name the quantity it
computes (wording.py lints that):

    checks:
      - says: "no batching: throughput stays flat as concurrency grows"
        test: flat                                   # max / min over the points <= max
        metric: throughput_rps
        where: {policies.batching.name: none}
        max: 1.3
      - says: "Rafiqi: throughput at 128 in flight over 1 in flight at least 2"
        test: ratio                                  # value(of) / value(over) within [min, max]
        metric: throughput_rps
        where: {policies.batching.name: rafiqi-ewma}
        of: {workload.arrival.concurrency: 128}
        over: {workload.arrival.concurrency: 1}
        min: 2
      - says: "sequential access has the highest mean latency"
        test: highest                                # `at` is the max (lowest: the min)
        metric: latency_mean_ms
        at: {workload.access: {type: sequential}}
      - says: "greedy, all models: SLO attainment at least 0.95 at r_l"
        test: value                                  # value(at) within [min, max]
        metric: slo_attainment
        at: {...}
        min: 0.95

`where`, `of`, `over` and `at` select points by their sweep parameters (a list is "any of";
`of`, `over` and `at` must pick one point; `of` and `over` may also name their own `metric`,
e.g. p99 over p80 at one point). A check is evaluated in each mode (sim, real) on the mean
over repetitions, from results.db; nothing here is hard-coded per figure. A check lists
`modes:` to apply to some modes only. A check with `reading: ours` tests the project's own
expectation (its figure's `our_reading:`), not the paper's claim: it is evaluated and shown
under its own heading, and never sets the figure's verdict. A check whose value lies within the run-to-run spread
of its bound, on either side, is "within noise": it neither fails nor holds by a margin the
runs can tell (noise.py). The spread is that of the repetitions and, in a speed-matched
experiment (--match-speed), the machine's speed drift between the points' runs.
"""
import math

import yaml

import noise
import wording
from results_db import METRIC_LABELS

HOLDS = "holds"
FAILS = "does not hold here"
WITHIN_NOISE = "within noise"   # the bound lies within the run-to-run spread (noise.py)
UNKNOWN = "not measured"
HOLDS_WITHIN_NOISE = "holds within noise"   # a figure whose misses are all within noise


def _norm(v):
    """A sweep value in a comparable form: '{type: zipf, alpha: 1.1}' and the dict alike."""
    if isinstance(v, str):
        try:
            v = yaml.safe_load(v)
        except yaml.YAMLError:
            return v
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, dict):
        return tuple(sorted((str(k), _norm(x)) for k, x in v.items()))
    if isinstance(v, list):
        return tuple(_norm(x) for x in v)
    return v


def _label(sel, labels=None):
    """A selection in words: {'workload.arrival.concurrency': 128} -> 'concurrency=128'; a value
    the experiment's `labels:` name by its words ('r_u'); a policy by its name and parameters
    ('dispatch greedy, members one, partial', 'eviction lru'). Selections are joined by '; '."""
    import plots  # matplotlib: only where a check is evaluated
    parts = []
    for k, v in (sel or {}).items():
        if k == "metric":
            continue
        name = k.split(".")
        name = name[-2] if name[-1] in ("name", "type") and len(name) > 1 else name[-1]
        words = wording.label_of(labels, k, v)
        if words:
            parts.append(words)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            parts.append(f"{name}={plots.value_label(v)}")
        else:
            parts.append(f"{name} {plots.value_label(v)}")
    return "; ".join(parts)


def point_words(exp, sel):
    """How a page names the point(s) `sel` selects: their parameters, in the experiment's
    labels where it gives them."""
    return _label(sel, (getattr(exp, "spec", None) or {}).get("labels"))


def _matches(value, wanted):
    """A list in a selection means "any of these values"."""
    if isinstance(wanted, list):
        return any(_norm(value) == _norm(w) for w in wanted)
    return _norm(value) == _norm(wanted)


def select(exp, sel):
    """Point ids whose parameters match every key of `sel` (keys other than `metric`)."""
    sel = {k: v for k, v in (sel or {}).items() if k != "metric"}
    out = []
    for pid, pt in sorted(exp.points.items()):
        params = pt["params"]
        if all(k in params and _matches(params[k], v) for k, v in sel.items()):
            out.append(pid)
    return out


def _stat(exp, mode, sel, metric):
    """(mean, sd, n) of `metric` over the repetitions of the single point `sel` picks."""
    pids = select(exp, sel)
    if len(pids) != 1:
        return (math.nan, math.nan, 0)
    return exp.value(mode, pids[0], metric)


def _fmt(v):
    if v is None or math.isnan(v):
        return "-"
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"


def _bounds(check):
    lo, hi = check.get("min"), check.get("max")
    parts = ([f">= {lo:g}"] if lo is not None else []) + ([f"<= {hi:g}"] if hi is not None else [])
    return " and ".join(parts)


def _within(v, check):
    lo, hi = check.get("min"), check.get("max")
    return (lo is None or v >= lo) and (hi is None or v <= hi)


def metric_words(metric):
    """'throughput_rps' -> 'throughput (req/s)': a metric as the page names it."""
    return METRIC_LABELS.get(metric, metric)


def _ratio(exp, mode, check, res):
    where = dict(check.get("where") or {})
    of = {**where, **(check.get("of") or {})}
    over = {**where, **(check.get("over") or {})}
    m_of = of.pop("metric", res["metric"])
    m_over = over.pop("metric", res["metric"])
    a, b = _stat(exp, mode, of, m_of), _stat(exp, mode, over, m_over)
    res["stats"] = [a, b]
    res["detail"] = (f"{metric_words(m_of)} at {point_words(exp, of)} / {metric_words(m_over)} at "
                     f"{point_words(exp, over)} = {_fmt(a[0])} / {_fmt(b[0])}")
    res["missing"] = [(sel, m) for sel, m, st in ((of, m_of, a), (over, m_over, b))
                      if math.isnan(st[0])]
    if not (math.isnan(a[0]) or math.isnan(b[0]) or b[0] == 0):
        res["value"] = a[0] / b[0]
        res["band"] = noise.ratio_band(a, b)
        _drift(exp, select(exp, of), select(exp, over), res)
        res["detail"] += f" = {_fmt(res['value'])}"


def _drift(exp, a, b, res):
    """Widens a ratio's band by the machine's speed drift between its two points' runs where
    the experiment ran speed-matched (a and b: the point ids each side picks)."""
    if len(a) != 1 or len(b) != 1 or None in (a[0], b[0]) or not exp.speed_matched():
        return
    sa, sb = (exp.value("sim", p, "cost_scale")[0] for p in (a[0], b[0]))
    if math.isnan(sa) or math.isnan(sb):
        return
    res["band"] = noise.with_drift(res["band"], res["value"], sa, sb)
    res["scales"] = (sa, sb)


def _flat(exp, mode, check, res):
    where = dict(check.get("where") or {})
    stats = [exp.value(mode, p, res["metric"]) for p in select(exp, where)]
    stats = [s for s in stats if not math.isnan(s[0])]
    res["detail"] = (f"{metric_words(res['metric'])} at "
                     f"{point_words(exp, where) or 'every point'}: "
                     "max / min = ")
    if len(stats) >= 2 and min(s[0] for s in stats) > 0:
        hi, lo = max(stats, key=lambda s: s[0]), min(stats, key=lambda s: s[0])
        res["stats"] = [hi, lo]
        res["value"] = hi[0] / lo[0]
        res["band"] = noise.ratio_band(hi, lo)
        by_value = {exp.value(mode, p, res["metric"])[0]: p for p in select(exp, where)}
        _drift(exp, [by_value.get(hi[0])], [by_value.get(lo[0])], res)
        res["detail"] += f"{_fmt(hi[0])} / {_fmt(lo[0])} = {_fmt(res['value'])}"
    else:
        res["detail"] += "-"


def _single(exp, mode, check, res):
    at = {**dict(check.get("where") or {}), **(check.get("at") or {})}
    a = _stat(exp, mode, at, res["metric"])
    res["stats"] = [a]
    res["detail"] = f"{metric_words(res['metric'])} at {point_words(exp, at)} = {_fmt(a[0])}"
    res["missing"] = [(at, res["metric"])] if math.isnan(a[0]) else []
    if not math.isnan(a[0]):
        res["value"] = a[0]
        res["band"] = noise.value_band(a)


def _point_words(exp, pid, among):
    """A point in words, by the sweep values that tell it apart from the others compared
    ('least-loaded, k 2'), with the experiment's `labels:` where they name a value."""
    import plots  # matplotlib: only where a check is evaluated
    params = exp.points[pid]["params"]
    paths = [k for k in params if len({str(exp.points[q]["params"].get(k)) for q in among}) > 1]
    return "; ".join(plots.words(exp, k, params[k]) for k in paths) or exp.points[pid]["label"]


def _extreme(exp, mode, check, res):
    """highest / lowest: whether `at` is the max (min) of the points `where` picks; within
    noise where it is not but its gap to the best is inside their noise band."""
    where = dict(check.get("where") or {})
    at = check.get("at") or {}
    stats = {p: exp.value(mode, p, res["metric"]) for p in select(exp, where)}
    stats = {p: s for p, s in stats.items() if not math.isnan(s[0])}
    target = [p for p in select(exp, {**where, **at}) if p in stats]
    if len(target) != 1 or len(stats) < 2:
        res["detail"] = (f"{metric_words(res['metric'])} at {point_words(exp, at)}: "
                         "not in the results")
        return
    pick = max if check["test"] == "highest" else min
    best = pick(stats, key=lambda p: stats[p][0])
    others = "; ".join(f"{_point_words(exp, p, stats)}: {_fmt(s[0])}" for p, s in stats.items())
    res["detail"] = f"{metric_words(res['metric'])}: {others}"
    t = stats[target[0]]
    if t[0] == stats[best][0]:
        res["verdict"] = HOLDS
        return
    band = noise.difference_band(t, stats[best])
    gap = abs(stats[best][0] - t[0])
    res["detail"] += f"; gap to the {check['test']} {_fmt(gap)}"
    res["verdict"] = WITHIN_NOISE if not math.isnan(band) and gap <= band else FAILS
    res["detail"] += f" ({noise.describe(band, t, stats[best])})"


def why_unmeasured(exp, mode, sel, metric):
    """Why a point has no value of `metric` in `mode`: no such point, no successful run, or
    (read from its runs' summary.json) every request sent in the warm-up."""
    import json
    import os
    pids = select(exp, sel)
    where = point_words(exp, sel) or "the point"
    if len(pids) != 1:
        return f"{where} picks {len(pids)} points of these results, not 1"
    runs = [r for r in exp.runs if r.get("point_id") == pids[0] and r.get("mode") == mode]
    ok = [r for r in runs if r.get("status") == "ok"]
    if not ok:
        return f"{where} has no successful run in this mode"
    summaries = []
    for r in ok:
        path = os.path.join(exp.dir or "", str(r.get("dir") or ""), "summary.json")
        if exp.dir and os.path.exists(path):
            with open(path) as f:
                summaries.append(json.load(f))
    warm = [s for s in summaries if not s.get("completed") and s.get("warmup_requests")]
    if summaries and len(warm) == len(summaries) and metric.startswith("latency"):
        s = warm[0]
        return (f"at {where} every one of the run's {s['warmup_requests']} requests was sent in "
                f"its {s.get('warmup_s', 0):g} s warm-up, which the latency figures leave out: "
                "the point needs more requests a run (workload.requests) to be measured")
    return f"the runs at {where} recorded no {metric_words(metric)}"


TESTS = {"ratio": _ratio, "flat": _flat, "value": _single, "highest": _extreme,
         "lowest": _extreme}


def evaluate(exp, check, mode):
    """One check in one mode: {'says', 'mode', 'verdict', 'detail', 'value', 'band'}."""
    test = check.get("test")
    res = {"says": " ".join(str(check.get("says", test)).split()), "mode": mode,
           "verdict": UNKNOWN, "detail": "", "value": math.nan, "band": math.nan,
           "metric": check.get("metric", "throughput_rps"), "ours": is_ours(check)}
    if test not in TESTS:
        raise ValueError(f"check '{res['says']}': unknown test '{test}' "
                         f"(known: {', '.join(TESTS)})")
    TESTS[test](exp, mode, check, res)
    stats = res.pop("stats", [])
    missing = res.pop("missing", [])
    scales = res.pop("scales", None)
    if math.isnan(res["value"]) and missing:
        res["detail"] += " (" + "; ".join(why_unmeasured(exp, mode, sel, m)
                                          for sel, m in missing) + ")"
    if test in ("highest", "lowest") or math.isnan(res["value"]):
        return res
    lo, hi = check.get("min"), check.get("max")
    if _within(res["value"], check):
        # Inside its bounds, but by less than the noise: another set of runs could miss.
        near = noise.bound_near(res["value"], res["band"], lo, hi)
        res["verdict"] = WITHIN_NOISE if near else HOLDS
    elif noise.bound_within(res["value"], res["band"], check.get("min"), check.get("max")):
        res["verdict"] = WITHIN_NOISE
    else:
        res["verdict"] = FAILS
    res["detail"] += (f" (the claim needs {_bounds(check)}; "
                      f"{noise.describe(res['band'], *stats, scales=scales)})")
    return res


def is_ours(check):
    """Whether a check tests the project's own reading (`reading: ours`), not the paper's."""
    return str(check.get("reading", "paper")) == "ours"


def figure_verdicts(exp, fig, modes):
    """Per mode: (overall verdict, [check results]) for the figure's `checks:`.

    Overall, from the checks of the paper's claim only (those of our reading are listed with
    `ours` set and do not count): holds when every check holds, holds within noise when the
    others hold and some miss by less than the run-to-run spread, does not hold when one
    fails, not measured when none could be evaluated. Empty when the figure states no checks.
    """
    checks = fig.get("checks") or []
    out = {}
    for mode in modes:
        results = [evaluate(exp, c, mode) for c in checks
                   if mode in (c.get("modes") or [mode])]
        paper = [r for r in results if not r["ours"]]
        if not paper:
            continue
        verdicts = {r["verdict"] for r in paper}
        if FAILS in verdicts:
            overall = FAILS
        elif verdicts == {UNKNOWN}:
            overall = UNKNOWN
        else:
            overall = HOLDS_WITHIN_NOISE if WITHIN_NOISE in verdicts else HOLDS
            overall += " where measured" if UNKNOWN in verdicts else ""
        out[mode] = (overall, results)
    return out


def problems(spec, fig):
    """What is wrong with a figure's `checks:` against the experiment's sweep grid (a list of
    messages, empty when every check is well formed and each of its `of`, `over` and `at`
    picks exactly one point of the grid)."""
    import itertools

    import results_db

    sweep = spec.get("sweep") or {}
    paths = list(sweep)
    points = {}
    skip = spec.get("skip") or []   # grid points the experiment leaves out
    for values in itertools.product(*(sweep[p] for p in paths)):
        params = dict(zip(paths, values))
        if any(all(_matches(params.get(k), v) for k, v in s.items()) for s in skip):
            continue
        points[len(points)] = {"params": params, "label": str(len(points))}
    grid = results_db.Experiment(spec, points, {}, [])
    out = []
    if not str(fig.get("claim") or spec.get("claim") or "").strip():
        out.append(f"figure {fig.get('id')}: no claim")
    checks = fig.get("checks") or []
    if checks and all(is_ours(c) for c in checks):
        out.append(f"figure {fig.get('id')}: every check is of our reading, none of the claim")
    for c in checks:
        if str(c.get("reading", "paper")) not in ("paper", "ours"):
            out.append(f"figure {fig.get('id')}, check '{c.get('says')}': reading must be "
                       f"paper or ours")
    for c in fig.get("checks") or []:
        name = f"figure {fig.get('id')}, check '{c.get('says')}'"
        test = c.get("test")
        if not c.get("says"):
            out.append(f"{name}: no 'says'")
        if test not in TESTS:
            out.append(f"{name}: unknown test '{test}'")
            continue
        if c.get("min") is None and c.get("max") is None and test in ("ratio", "flat", "value"):
            out.append(f"{name}: neither min nor max")
        where = dict(c.get("where") or {})
        keys = {"ratio": ["of", "over"], "highest": ["at"], "lowest": ["at"],
                "value": ["at"]}.get(test, [])
        for k in keys:
            sel = {**where, **(c.get(k) or {})}
            n = len(select(grid, sel))
            if n != 1:
                out.append(f"{name}: '{k}' picks {n} points of the sweep, not 1")
        if test == "flat" and len(select(grid, where)) < 2:
            out.append(f"{name}: 'where' picks fewer than 2 points")
    return out
