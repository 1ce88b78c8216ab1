"""Per-point simulator errors against bounds, for scripts/check-sim-vs-real.

    python3 reports/check_errors.py RESULTS_DIR... [--tput 0.10] [--mean 0.10] [--p99 0.20]

Grades the simulator's PREDICTION: the simulation on the profile measured before the real
runs (servelab run --calibrate), with nothing taken from the run it predicts. Prints, per
results folder and point, predicted and real throughput, mean and p99 latency and the
relative error (predicted - real) / real; a point misses when any error exceeds its bound.
With repetitions a point's value in each mode is its mean over them (as in the report), and
the real runs' own spread is shown: the relative standard deviation of their throughput; and
the CPU other processes took during the real runs (cores, from each real summary).
Runs made with --match-speed also show, as a DIAGNOSTIC that does not grade, the point's
speed factor (the machine's speed during the real run against the profile) and the errors of
the simulation rescaled to it: what is left when the machine's drift is taken out.
Exit status 0 when every point is within bounds, 1 otherwise (or when a point lacks a mode).
"""
import argparse
import csv
import glob
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_db import load, relative_error  # noqa: E402


def profile_models(d, which):
    """The `models` of the profile the check left beside the results (profile-WHICH.yaml),
    or None when it left none."""
    try:
        import yaml
        with open(os.path.join(d, f"profile-{which}.yaml")) as f:
            return yaml.safe_load(f)["models"]
    except (OSError, KeyError, TypeError):
        return None


def profile_pairs(d):
    """(batch, mean before, mean after) per batch size of each model in both the calibrated
    profile and its re-measurement after the runs (profile-before/after.yaml); [] unless the
    check left both."""
    before, after = profile_models(d, "before"), profile_models(d, "after")
    if before is None or after is None:
        return []
    pairs = []
    for name, m in after.items():
        b = {c["batch"]: c["mean"] for c in before.get(name, {}).get("batch_latency_ms", [])}
        pairs += [(c["batch"], b[c["batch"]], c["mean"]) for c in m.get("batch_latency_ms", [])
                  if b.get(c["batch"], 0) > 0]
    return pairs


def machine_drift(d):
    """Batch costs of the calibrated profile against a re-measurement after the runs, if the
    check left both (profile-before.yaml, profile-after.yaml): how much the machine drifted."""
    parts = [f"b{batch} {was:.0f}->{now:.0f} ms ({now / was - 1:+.0%})"
             for batch, was, now in profile_pairs(d)]
    return "machine drift (profile before -> after the runs): " + ", ".join(parts) if parts else ""


def profile_ratios(d):
    """Each batch size's cost after the runs over before; [] when the check did not leave both
    profiles."""
    return [now / was for _, was, now in profile_pairs(d)]


def miss_cause(speeds, ratios, margin=0.05, held=()):
    """Why points missed that fall within bounds at their real runs' speed (`speeds`: each
    one's real cost over the profile's). When every one ran slower than the median of the
    points of the same check that held (`held`: their speeds), by more than `margin`: a
    slowdown particular to how those points are served (the points run in the same rounds, so
    a drift of the machine reaches them all alike). Else drift between profile and run,
    unless every one ran slower (or every one faster) than the profiles taken before AND after
    the runs
    (`ratios`: after over before, per batch size), by more than `margin`: then the runs
    differed from both profiles, which a drift from one to the other does not explain (this
    machine also swings by 1.3x within minutes: a check cannot tell such a swing from a
    slowdown that serving causes; bench_serve_gap measures the latter on its own)."""
    if not speeds:
        return ""
    lo, hi = min(speeds), max(speeds)
    span = f"speeds {lo:.2f}-{hi:.2f}"
    if held and lo > statistics.median(held) + margin:
        return (f"these points' real runs ran slower than the points that held ({span}; those "
                f"{statistics.median(held):.2f}, median of {len(held)}), in the same rounds: "
                "a slowdown particular to how these points are served, not the machine's "
                "drift (with few requests in flight the worker idles between batches: the "
                "prediction applied the profile's idle_slowdown, and these runs paid more)")
    if ratios:
        top, bottom = max(1.0, max(ratios)), min(1.0, min(ratios))
        profiles = f"after/before {min(ratios):.2f}-{max(ratios):.2f}"
        if lo > top + margin:
            return (f"the real runs ran slower than the profiles taken before and after them "
                    f"({span}; {profiles}): not a drift from one profile to the other; a "
                    "swing between them, or a slowdown while serving (tests/bench/runtime/"
                    "bench_serve_gap times a batch in serving's shapes against the profile's)")
        if hi < bottom - margin:
            return (f"the real runs ran faster than the profiles taken before and after them "
                    f"({span}; {profiles}): not a drift from one profile to the other")
    return f"the machine's drift between profile and run ({span})"


def speed_course(d):
    """The speed course the profile measured before the runs (profile-before.yaml's
    speed_drift), as the plain prediction used it; "" when it has none."""
    try:
        import yaml
        with open(os.path.join(d, "profile-before.yaml")) as f:
            drift = yaml.safe_load(f).get("speed_drift") or {}
    except (OSError, AttributeError):
        return ""
    parts = [f"{name} share {c.get('share', 0):.2f}, tau {c.get('tau_ms', 0):.0f} ms"
             for name, c in drift.items() if isinstance(c, dict)]
    spread = drift.get("spread") or []
    if spread:
        parts.append(f"spread (cost over median) {spread[0]:.2f} to {spread[-1]:.2f}, "
                     f"{spread[int(0.9 * len(spread))]:.2f} at the 90th percentile")
    return ("speed course in the profile (simulated unless speed-matched): " +
            "; ".join(parts)) if parts else ""


def profiled_models(models):
    """The profile entries a run config's `models` uses: names, {name} entries, or
    {count, prefix, profile_model} copies."""
    if isinstance(models, dict):
        return {models.get("profile_model")}
    return {m if isinstance(m, str) else m.get("profile_model", m.get("name"))
            for m in models or []}


def profile_swings(d, names):
    """How far the machine's speed moved WHILE the profile was measured: per model, the
    fastest and slowest stretch of its most-sampled batch size (medians of 5 consecutive
    samples, which the profiler takes in rounds over time). A profile whose own stretches
    differ by more than the bounds cannot predict every run within them, whatever the
    simulator models: a run may fall in either stretch."""
    models = profile_models(d, "before")
    if models is None:
        return ""
    parts = []
    for name, m in models.items():
        if name not in names:
            continue
        costs = [c for c in m.get("batch_latency_ms", []) if len(c.get("samples", [])) >= 10]
        if not costs:
            continue
        c = max(costs, key=lambda c: len(c["samples"]))
        xs = c["samples"]
        stretches = [sorted(xs[i:i + 5])[2] for i in range(len(xs) - 4)]
        lo, hi = min(stretches), max(stretches)
        parts.append(f"{name} b{c['batch']} {lo:.1f}..{hi:.1f} ms (x{hi / lo:.2f})")
    return ("machine speed while profiling (fastest..slowest stretch of 5 samples): " +
            ", ".join(parts)) if parts else ""


def lag1_correlation(xs):
    """Correlation of consecutive values (lag 1); NaN for fewer than 3 or no spread."""
    if len(xs) < 3:
        return math.nan
    m = sum(xs) / len(xs)
    var = sum((x - m) ** 2 for x in xs) / len(xs)
    if var == 0:
        return math.nan
    cov = sum((a - m) * (b - m) for a, b in zip(xs, xs[1:])) / (len(xs) - 1)
    return cov / var


def batch_compute_ms(requests_csv):
    """Compute time of each batch a run's records hold, in start order (a batch's members
    share start and finish)."""
    with open(requests_csv) as f:
        spans = {(r["start"], r["finish"]) for r in csv.DictReader(f)
                 if r.get("status") == "ok" and r.get("start") not in (None, "", "nan")}
    return [1000 * (float(b) - float(a)) for a, b in sorted(spans, key=lambda s: float(s[0]))]


def real_cost_correlation(d):
    """Median over the real runs in RESULTS_DIR/runs of the lag-1 correlation of consecutive
    batches' compute times: 0 when each batch's cost is an independent draw (as the
    simulator's are), near 1 when the machine's speed moves slowly from batch to batch."""
    rs = []
    for run in sorted(glob.glob(os.path.join(d, "runs", "p*-real-r*", "requests.csv"))):
        r = lag1_correlation(batch_compute_ms(run))
        if not math.isnan(r):
            rs.append(r)
    return statistics.median(rs) if rs else math.nan


def tail_widths(exp, pid):
    """p99 minus mean latency (ms) of point `pid`: real, predicted and, where the runs have
    it, at matched speed (NaN otherwise). The tail's width is what the machine's speed course
    adds to queueing: a closed loop's latency is a sum of batch costs, which spreads more when
    consecutive costs move together than when each is an independent draw."""
    real = exp.value("real", pid, "latency_p99_ms")[0] - exp.value("real", pid, "latency_mean_ms")[0]
    pred = predicted(exp, pid, "latency_p99_ms") - predicted(exp, pid, "latency_mean_ms")
    matched = exp.value("sim", pid, "latency_p99_ms")[0] - exp.value("sim", pid, "latency_mean_ms")[0]
    if math.isnan(exp.value("sim", pid, "cost_scale")[0]):
        matched = math.nan
    return real, pred, matched


def print_tail_widths(exp, d, course):
    """The tails' widths per point, and the real runs' cost correlation: where the prediction's
    p99 misses, this shows whether the machine's speed course (simulated from the profile's
    speed_drift where it has one, `course`: speed_course(d); else not at all) accounts for it."""
    rows = [(exp.points[pid]["label"], *tail_widths(exp, pid)) for pid in sorted(exp.points)]
    print(f"\ntail width, p99 - mean latency (ms): {'real':>8} {'predicted':>10} "
          f"{'matched speed (diagnostic)':>27}")
    for label, real, pred, matched in rows:
        print(f"{label[:40]:<40} {real:8.1f} {pred:10.1f} {matched:27.1f}")
    ratios = [p / r for _, r, p, _ in rows if r > 0 and not math.isnan(p)]
    matched_ratios = [m / r for _, r, _, m in rows if r > 0 and not math.isnan(m)]
    corr = real_cost_correlation(d)
    drawn = ("the prediction draws them on the profile's speed course" if course
             else "the prediction draws them independently (the profile has no speed course)")
    if ratios:
        print(f"median width predicted/real {statistics.median(ratios):.2f}" +
              (f", at matched speed {statistics.median(matched_ratios):.2f}"
               if matched_ratios else "") +
              ("" if math.isnan(corr) else
               f"; consecutive batches' compute times in the real runs correlate at "
               f"{corr:.2f} (lag 1, median), {drawn}"))


def predicted(exp, pid, metric):
    """The simulation on the profile as measured before the runs: with --match-speed the
    unscaled result the sim summary keeps beside the rescaled one, else the result itself."""
    unscaled = exp.value("sim", pid, "unscaled_" + metric)[0]
    return exp.value("sim", pid, metric)[0] if math.isnan(unscaled) else unscaled


def parse_args():
    """The command line of the graders (this one and check_series.py): results folders and
    the bounds. Returns the folders and [(metric, bound, short name)]."""
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--tput", type=float, default=0.10)
    ap.add_argument("--mean", type=float, default=0.10)
    ap.add_argument("--p99", type=float, default=0.20)
    a = ap.parse_args()
    return a.dirs, [("throughput_rps", a.tput, "tput"), ("latency_mean_ms", a.mean, "mean"),
                    ("latency_p99_ms", a.p99, "p99")]


def bounds_line(bounds):
    """The bounds as the graders' last line states them."""
    return ("bounds: throughput {:.0%}, mean latency {:.0%}, p99 {:.0%}"
            .format(*(b for _, b, _ in bounds)))


def main():
    dirs, bounds = parse_args()
    misses = 0
    matched_misses = []  # per directory: (name, speeds of its points that miss only off speed)
    for d in dirs:
        exp = load(d)
        print(f"\n{exp.spec.get('name', d)}  ({d})")
        drift_speeds, held_speeds = [], []
        matched_misses.append((exp.spec.get("name", d), drift_speeds, profile_ratios(d),
                               held_speeds))
        drift = machine_drift(d)
        if drift:
            print(drift)
        names = profiled_models(exp.spec.get("models"))
        swings = profile_swings(d, names)
        if swings:
            print(swings)
        course = speed_course(d)
        if course:
            print(course)
        print(f"{'point':<40} " + "  ".join(f"{s:>24}" for _, _, s in bounds) +
              "  ok    reps  real tput sd  other CPU  "
              "diagnostic --match-speed: speed tput/mean/p99 error")
        for pid, point in sorted(exp.points.items()):
            cells, ok = [], True
            speed = exp.value("sim", pid, "cost_scale")[0]
            matched = [relative_error(exp.value("sim", pid, m)[0], exp.value("real", pid, m)[0])
                       for m, _, _ in bounds]
            for metric, bound, short in bounds:
                pred = predicted(exp, pid, metric)
                real = exp.value("real", pid, metric)[0]
                e = relative_error(pred, real)
                miss = math.isnan(e) or abs(e) > bound
                ok &= not miss
                cells.append(f"{pred:9.1f}/{real:9.1f} {e:+5.0%}{'!' if miss else ' '}")
            misses += not ok
            matched_ok = all(not math.isnan(e) and abs(e) <= b
                             for e, (_, b, _) in zip(matched, bounds))
            if (not ok) and not math.isnan(speed) and matched_ok:
                drift_speeds.append(speed)
            if ok and not math.isnan(speed):
                held_speeds.append(speed)
            mean, sd, n = exp.value("real", pid, "throughput_rps")
            spread = f"{sd / mean:12.1%}" if n > 1 and mean else f"{'-':>12}"
            # Cores' worth of CPU other processes took during the real runs (mean): a point
            # that shared the machine was not measured on the machine the profile saw.
            other = exp.value("real", pid, "background_cores")[0]
            other_cell = f"{'-':>9}" if math.isnan(other) else f"{other:9.2f}"
            print(f"{point['label'][:40]:<40} " +
                  "  ".join(f"{c:>24}" for c in cells) + ("  ok  " if ok else "  MISS") +
                  f"  {n:4d}  {spread}  {other_cell}" +
                  ("" if math.isnan(speed) else
                   f"  {speed:5.2f} " + "/".join(f"{e:+.0%}" for e in matched)))
        print_tail_widths(exp, d, course)
    print(f"\n{bounds_line(bounds)} (cells: predicted/real error); {misses} point(s) miss")
    for name, speeds, ratios, held in matched_misses:
        if speeds:
            print(f"{name}: of those, {len(speeds)} fall within bounds at the speed the machine "
                  f"had during their real runs (diagnostic): "
                  f"{miss_cause(speeds, ratios, held=held)}")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
