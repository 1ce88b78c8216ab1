"""Timeline figures: what happened over a run's time, from its requests.csv (Rafiki figures
11-13: the arrival rate, and overdue requests over time, per policy).

A figure with `kind: timeline` in an experiment's `figures:`:

    - id: overdue
      kind: timeline
      title: "Overdue requests over time"
      rows: workload.arrival.peak_base      # one row of panels per value (optional)
      series: policies.batching.name        # one line per value
      where: {policies.batching.name: [rafiki-greedy, clipper-aimd]}   # optional filter
      bin_s: 5                              # width of a time bin in seconds (default 1)
      metric: overdue                       # or accuracy (default overdue)

Each panel plots, per series, by arrival time, the overdue requests per bin (a request is
overdue when it was not answered Ok within its deadline: the run's engine.slo_ms) or, with
`metric: accuracy` (Rafiki figures 14a-b and 15a-b), the mean accuracy of the bin's answers
whose accuracy is known (requests.csv's `accuracy` column: a group's voters, or a scored
answer), and, dashed on a second axis, the arrival rate (requests per second in the bin). The first repetition of
each point is drawn; columns are the modes (sim, real).
"""
import csv
import math
import os

import matplotlib
import yaml

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import plots  # noqa: E402
from plots import short, words  # noqa: E402
from verdict import select  # noqa: E402


def run_dir(exp, mode, pid):
    """Folder of the first successful repetition of point `pid` in `mode` (None if none)."""
    runs = [r for r in exp.runs if r["point_id"] == pid and r["mode"] == mode
            and r["status"] == "ok"]
    if not runs:
        return None
    first = min(runs, key=lambda r: r["repetition"])
    return os.path.join(exp.dir, first["dir"])


def slo_seconds(folder):
    """The run's SLO from its effective config (None when it has none)."""
    try:
        with open(os.path.join(folder, "config.yaml")) as f:
            slo = (yaml.safe_load(f).get("engine") or {}).get("slo_ms")
    except OSError:
        return None
    return slo / 1e3 if isinstance(slo, (int, float)) else None


def binned(folder, bin_s):
    """(bin starts, arrivals per second, overdue requests, mean accuracy) per bin of arrival
    time; a bin's accuracy is None when none of its requests has one."""
    slo = slo_seconds(folder)
    arrivals, overdue, acc_sum, acc_n = {}, {}, {}, {}
    with open(os.path.join(folder, "requests.csv")) as f:
        for row in csv.DictReader(f):
            t = float(row["arrival"])
            b = int(t // bin_s)
            arrivals[b] = arrivals.get(b, 0) + 1
            finish = float(row["finish"]) if row["finish"] else math.inf
            late = row["status"] != "ok" or (slo is not None and finish - t > slo)
            overdue[b] = overdue.get(b, 0) + int(late)
            if row.get("accuracy"):
                acc_sum[b] = acc_sum.get(b, 0.0) + float(row["accuracy"])
                acc_n[b] = acc_n.get(b, 0) + 1
    bins = range(max(arrivals) + 1) if arrivals else range(0)
    return ([b * bin_s for b in bins], [arrivals.get(b, 0) / bin_s for b in bins],
            [overdue.get(b, 0) for b in bins],
            [acc_sum[b] / acc_n[b] if acc_n.get(b) else None for b in bins])


def _values(exp, path, pids):
    """The distinct values of sweep `path` over the points, in sweep order."""
    seen = []
    for pid in pids:
        v = exp.points[pid]["params"].get(path) if path else None
        if v not in seen:
            seen.append(v)
    return seen


def table_spec(fig):
    """The figure as the report's table sees it: x the series, series the rows, and the
    run-level metrics that sum up its panels."""
    default = (["accuracy", "overdue", "slo_attainment"] if fig.get("metric") == "accuracy"
               else ["overdue", "slo_attainment", "latency_p99_ms"])
    return {**fig, "x": fig.get("series"), "series": fig.get("rows"),
            "metrics": fig.get("metrics") or default}


def render(exp, fig, out_base, formats=("png", "svg")):
    """Draws one timeline figure to out_base.<fmt>; returns the written paths."""
    modes = [m for m in ("sim", "real") if m in exp.modes] or exp.modes
    pids = select(exp, fig.get("where") or {})
    rows_path, series_path = fig.get("rows"), fig.get("series")
    rows = _values(exp, rows_path, pids)
    bin_s = float(fig.get("bin_s", 1.0))
    metric = fig.get("metric", "overdue")
    if metric not in ("overdue", "accuracy"):
        raise ValueError(f"timeline figure {fig.get('id')}: metric must be overdue or "
                         f"accuracy, not {metric!r}")
    f, axes = plt.subplots(len(rows), len(modes), figsize=(6.5 * len(modes), 2.8 * len(rows)),
                           squeeze=False, sharex=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ci, mode in enumerate(modes):
        for ri, row in enumerate(rows):
            ax = axes[ri][ci]
            rate_ax = ax.twinx()
            drawn_rate = False
            panel = {}   # label -> {time: value}: series drawn over each other are said to be
            in_row = [p for p in pids if not rows_path
                      or exp.points[p]["params"].get(rows_path) == row]
            for si, pid in enumerate(in_row):
                folder = run_dir(exp, mode, pid)
                if not folder:
                    continue
                t, rate, late, accuracy = binned(folder, bin_s)
                label = words(exp, series_path, exp.points[pid]["params"].get(series_path, pid))
                y = late if metric == "overdue" else [
                    math.nan if a is None else a for a in accuracy]
                ax.plot(t, y, color=colors[si % len(colors)], lw=1.2, label=label)
                panel[label] = {a: b for a, b in zip(t, y) if not math.isnan(b)}
                if not drawn_rate:  # the same arrivals for every series of a row
                    rate_ax.plot(t, rate, color="gray", ls="--", lw=1, label="arrival rate")
                    drawn_rate = True
            ax.set_ylabel(f"overdue per {bin_s:g} s" if metric == "overdue"
                          else f"mean accuracy per {bin_s:g} s")
            rate_ax.set_ylabel("arrivals / s", color="gray")
            title = plots.mode_title(exp.spec, mode)
            if rows_path:  # the row by its words where the experiment gives some ('r_u (572)')
                said = words(exp, rows_path, row)
                title += (f", {said} ({row})" if said != str(row)
                          else f", {short(rows_path)} {row}")
            # Series drawn over each other are said to coincide, under the panel's title
            # (inside the panel the note would sit on the lines).
            coincide = plots.coincide_note(plots.coinciding(panel), 90, list(panel))
            if coincide:
                title += "\n" + coincide
            ax.set_title(title, fontsize=10 if not coincide else 9)
            ax.grid(True, alpha=0.3)
            if ri == len(rows) - 1:
                ax.set_xlabel("time of arrival (s)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:
        f.legend(handles, labels, loc="upper center", ncol=min(4, len(labels)),
                 bbox_to_anchor=(0.5, 1 - 0.3 / f.get_figheight()), frameon=False)
    f.tight_layout(rect=(0, 0, 1, 1 - 0.6 / f.get_figheight()))
    f.suptitle(fig.get("title") or fig.get("id", ""), y=1 - 0.05 / f.get_figheight(),
               fontsize=11, va="top")
    return plots.save_figure(f, out_base, formats)
