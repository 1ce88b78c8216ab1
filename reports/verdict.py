"""Verdicts: whether a figure's paper claim holds in the stored results.

A figure of an experiment YAML states its claim in prose (`claim:`) and, next to it, in
machine-readable `checks:`, each one testable statement about the results:

    checks:
      - says: "no batching: throughput stays flat as concurrency grows"
        test: flat                                   # max / min over the points <= max
        metric: throughput_rps
        where: {policies.batching.name: none}
        max: 1.3
      - says: "adaptive batching: throughput at 128 in flight over 1 in flight"
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

`where`, `of`, `over` and `at` select points by their sweep parameters (a list is "any of";
`of`, `over` and `at` must pick one point; `of` and `over` may also name their own `metric`, e.g. p99 over p80 at one point). A check is evaluated in each
mode (sim, real) on the mean over repetitions, from results.db; nothing here is hard-coded
per figure. A check lists `modes:` to apply to some modes only.
"""
import math

import yaml

HOLDS = "holds"
FAILS = "does not hold here"
UNKNOWN = "not measured"


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


def _label(sel):
    """{'workload.arrival.concurrency': 128} -> 'concurrency=128'."""
    parts = []
    for k, v in (sel or {}).items():
        if k == "metric":
            continue
        name = k.split(".")
        name = name[-2] if name[-1] in ("name", "type") and len(name) > 1 else name[-1]
        if isinstance(v, dict):
            v = " ".join(str(x) for x in v.values())
        parts.append(f"{name}={v}")
    return ", ".join(parts)


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


def _value(exp, mode, sel, metric):
    """The mean of `metric` over the repetitions of the single point `sel` picks, or NaN."""
    pids = select(exp, sel)
    if len(pids) != 1:
        return math.nan
    return exp.value(mode, pids[0], metric)[0]


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


def evaluate(exp, check, mode):
    """One check in one mode: {'says', 'mode', 'verdict', 'detail', 'value'}."""
    test = check.get("test")
    metric = check.get("metric", "throughput_rps")
    where = dict(check.get("where") or {})
    res = {"says": " ".join(str(check.get("says", test)).split()), "mode": mode,
           "verdict": UNKNOWN, "detail": "", "value": math.nan}
    if test == "ratio":
        of = {**where, **(check.get("of") or {})}
        over = {**where, **(check.get("over") or {})}
        m_of = of.pop("metric", metric)
        m_over = over.pop("metric", metric)
        a, b = _value(exp, mode, of, m_of), _value(exp, mode, over, m_over)
        res["detail"] = (f"{m_of} at {_label(of)} / {m_over} at {_label(over)} = "
                         f"{_fmt(a)} / {_fmt(b)}")
        if not (math.isnan(a) or math.isnan(b) or b == 0):
            res["value"] = a / b
            res["detail"] += f" = {_fmt(a / b)}"
    elif test == "flat":
        pids = select(exp, where)
        vals = [exp.value(mode, p, metric)[0] for p in pids]
        vals = [v for v in vals if not math.isnan(v)]
        res["detail"] = f"{metric} at {_label(where) or 'every point'}: max / min = "
        if len(vals) >= 2 and min(vals) > 0:
            res["value"] = max(vals) / min(vals)
            res["detail"] += f"{_fmt(max(vals))} / {_fmt(min(vals))} = {_fmt(res['value'])}"
        else:
            res["detail"] += "-"
    elif test in ("highest", "lowest"):
        at = check.get("at") or {}
        pids = select(exp, where)
        vals = {p: exp.value(mode, p, metric)[0] for p in pids}
        vals = {p: v for p, v in vals.items() if not math.isnan(v)}
        target = [p for p in select(exp, {**where, **at}) if p in vals]
        pick = max if test == "highest" else min
        if len(target) == 1 and len(vals) >= 2:
            best = pick(vals, key=vals.get)
            others = ", ".join(f"{exp.points[p]['label']} {_fmt(v)}" for p, v in vals.items())
            res["detail"] = f"{metric}: {others}"
            res["verdict"] = HOLDS if vals[target[0]] == vals[best] else FAILS
            return res
        res["detail"] = f"{metric} at {_label(at)}: not in the results"
        return res
    else:
        raise ValueError(f"check '{res['says']}': unknown test '{test}' "
                         "(known: ratio, flat, highest, lowest)")
    if not math.isnan(res["value"]):
        res["verdict"] = HOLDS if _within(res["value"], check) else FAILS
        res["detail"] += f" (the claim needs {_bounds(check)})"
    return res


def figure_verdicts(exp, fig, modes):
    """Per mode: (overall verdict, [check results]) for the figure's `checks:`.

    Overall: holds when every check holds, does not hold when one fails, not measured when
    none could be evaluated. Empty when the figure states no checks.
    """
    checks = fig.get("checks") or []
    out = {}
    for mode in modes:
        results = [evaluate(exp, c, mode) for c in checks
                   if mode in (c.get("modes") or [mode])]
        if not results:
            continue
        verdicts = {r["verdict"] for r in results}
        if FAILS in verdicts:
            overall = FAILS
        elif verdicts == {UNKNOWN}:
            overall = UNKNOWN
        else:
            overall = HOLDS if UNKNOWN not in verdicts else f"{HOLDS} where measured"
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
    for i, values in enumerate(itertools.product(*(sweep[p] for p in paths))):
        points[i] = {"params": dict(zip(paths, values)), "label": str(i)}
    grid = results_db.Experiment(spec, points, {}, [])
    out = []
    if not str(fig.get("claim") or spec.get("claim") or "").strip():
        out.append(f"figure {fig.get('id')}: no claim")
    for c in fig.get("checks") or []:
        name = f"figure {fig.get('id')}, check '{c.get('says')}'"
        test = c.get("test")
        if not c.get("says"):
            out.append(f"{name}: no 'says'")
        if test not in ("ratio", "flat", "highest", "lowest"):
            out.append(f"{name}: unknown test '{test}'")
            continue
        if c.get("min") is None and c.get("max") is None and test in ("ratio", "flat"):
            out.append(f"{name}: neither min nor max")
        where = dict(c.get("where") or {})
        keys = {"ratio": ["of", "over"], "highest": ["at"], "lowest": ["at"]}.get(test, [])
        for k in keys:
            sel = {**where, **(c.get(k) or {})}
            n = len(select(grid, sel))
            if n != 1:
                out.append(f"{name}: '{k}' picks {n} points of the sweep, not 1")
        if test == "flat" and len(select(grid, where)) < 2:
            out.append(f"{name}: 'where' picks fewer than 2 points")
    return out
