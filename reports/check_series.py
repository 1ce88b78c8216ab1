"""Grades the simulator's prediction over a series of checks of one experiment.

    python3 reports/check_series.py RESULTS_DIR... [--tput 0.10] [--mean 0.10] [--p99 0.20]

Each RESULTS_DIR is one check's results folder for the same experiment (scripts/check-sim-vs-real
leaves one per experiment, e.g. OUT/access-patterns). One check predicts its own real runs from the
profile measured before them; on a machine whose state moves between checks (this one's load
waits and batch costs swing by a quarter over minutes), a single check passes or misses with
the state it met. The series grades what a user relies on: over the checks, the mean of the
predictions against the mean of the real runs they predicted (each check weighted by its real
runs), per point and metric, within the same bounds as check_errors.py. It also prints every
check's own errors, how many checks held, and how far the real runs' mean moved between
checks (relative standard deviation of the checks' real means), which bounds what any one
check can show.
Exit status 0 when every point's pooled prediction is within bounds, 1 when one misses, 2 when
the folders are not checks of one experiment or a point lacks a mode in one of them.
"""
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_errors import bounds_line, parse_args, predicted  # noqa: E402
from results_db import load, relative_error  # noqa: E402

METRICS = ["throughput_rps", "latency_mean_ms", "latency_p99_ms"]


def check_values(exp, pid, metric):
    """(predicted, real, real runs) of one point in one check; NaNs and 0 where missing."""
    real, _, n = exp.value("real", pid, metric)
    return predicted(exp, pid, metric), real, n


def pooled(values):
    """Predicted and real means over checks, each check weighted by its real runs:
    [(predicted, real, n)] -> (predicted, real); NaN when no check has both."""
    have = [(p, r, n) for p, r, n in values if n > 0 and not math.isnan(p) and not math.isnan(r)]
    total = sum(n for _, _, n in have)
    if not total:
        return math.nan, math.nan
    return (sum(p * n for p, _, n in have) / total, sum(r * n for _, r, n in have) / total)


def between_checks(values):
    """Relative standard deviation of the checks' real means (NaN for fewer than 2)."""
    reals = [r for _, r, n in values if n > 0 and not math.isnan(r)]
    if len(reals) < 2 or statistics.mean(reals) == 0:
        return math.nan
    return statistics.stdev(reals) / statistics.mean(reals)


def series(exps):
    """Per point label, in the first check's point order: {metric: [(pred, real, n) per
    check]}. Raises ValueError when a check lacks a point of the first or a point a mode."""
    first = exps[0]
    rows = []
    for pid in sorted(first.points):
        label = first.points[pid]["label"]
        per_metric = {m: [] for m in METRICS}
        for exp in exps:
            match = [q for q, p in exp.points.items() if p["label"] == label]
            if not match:
                raise ValueError(f"{exp.dir}: no point '{label}'")
            for metric in METRICS:
                p, r, n = check_values(exp, match[0], metric)
                if n == 0 or math.isnan(p):
                    raise ValueError(f"{exp.dir}: point '{label}' lacks a sim or real result")
                per_metric[metric].append((p, r, n))
        rows.append((label, per_metric))
    return rows


def grade(rows, bounds):
    """Per point: (label, [(metric, pooled error, errors per check, between-check spread)],
    checks that held in every metric, pooled within bounds in every metric)."""
    graded = []
    for label, per_metric in rows:
        cells, held_each, ok = [], None, True
        for metric in METRICS:
            values = per_metric[metric]
            errors = [relative_error(p, r) for p, r, _ in values]
            within = [not math.isnan(e) and abs(e) <= bounds[metric] for e in errors]
            held_each = within if held_each is None else [a and b for a, b in zip(held_each, within)]
            e = relative_error(*pooled(values))
            ok &= not math.isnan(e) and abs(e) <= bounds[metric]
            cells.append((metric, e, errors, between_checks(values)))
        graded.append((label, cells, sum(held_each), ok))
    return graded


def main():
    dirs, bound_list = parse_args()
    bounds = {metric: bound for metric, bound, _ in bound_list}
    exps = [load(d) for d in dirs]
    names = {e.spec.get("name") for e in exps}
    if len(names) != 1:
        print(f"check_series: the folders hold different experiments: {sorted(map(str, names))}",
              file=sys.stderr)
        return 2
    try:
        graded = grade(series(exps), bounds)
    except ValueError as err:
        print(f"check_series: {err}", file=sys.stderr)
        return 2
    print(f"{names.pop()}: {len(exps)} checks ({', '.join(dirs)})")
    print(f"{'point':<40} " + "  ".join(f"{s + ' pooled (per check)':>34}" for _, _, s in bound_list) +
          "  held  real tput between checks")
    misses = 0
    for label, cells, held, ok in graded:
        misses += not ok
        text = [f"{e:+5.0%}{' ' if abs(e) <= bounds[m] else '!'} (" +
                " ".join(f"{x:+.0%}" for x in errors) + ")" for m, e, errors, _ in cells]
        spread = cells[0][3]
        print(f"{label[:40]:<40} " + "  ".join(f"{t:>34}" for t in text) +
              f"  {held}/{len(exps)}  " + ("-" if math.isnan(spread) else f"{spread:.1%}") +
              ("" if ok else "  MISS"))
    print(f"\n{bounds_line(bound_list)} on the means over the checks (each weighted by its "
          f"real runs); {misses} point(s) miss")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
