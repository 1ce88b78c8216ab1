"""Iso-curves: a figure over two numeric sweep axes (`kind: contour`, `x` and `series`), as
TrIMS figure 11's geometric-mean speedup over the share of models run and the concurrency.
One panel per mode and metric: the metric's mean over repetitions, filled between levels,
with labelled iso-curves and the value at each point written small beside its marker."""
import math

import matplotlib

import plots
from results_db import METRIC_LABELS

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def grid(exp, fig, mode, metric):
    """(xs, ys, Z) of the metric's means: Z[j][i] at x = xs[i], y = ys[j] (NaN: not run)."""
    x_path, y_path = fig["x"], fig["series"]
    xs = sorted({float(p["params"][x_path]) for p in exp.points.values()})
    ys = sorted({float(p["params"][y_path]) for p in exp.points.values()})
    z = np.full((len(ys), len(xs)), math.nan)
    for pid, p in exp.points.items():
        mean, _, n = exp.value(mode, pid, metric)
        if n:
            z[ys.index(float(p["params"][y_path]))][xs.index(float(p["params"][x_path]))] = mean
    return xs, ys, z


def levels(z):
    """Iso-levels that include 1 (no gain) where the values span it."""
    vals = z[~np.isnan(z)]
    if vals.size == 0:
        return None
    lo, hi = float(vals.min()), float(vals.max())
    if hi <= lo:
        return None
    steps = np.linspace(lo, hi, 9)[1:-1].tolist()
    if lo < 1 < hi:
        steps = sorted(set(round(s, 2) for s in steps) | {1.0})
    return steps


def render(exp, fig, out_base, formats=("png", "svg")):
    """Draws the figure to out_base.<fmt> per format; returns the written paths."""
    modes = [m for m in ("sim", "real") if m in exp.modes] or exp.modes
    metrics = fig.get("metrics") or []
    f, axes = plt.subplots(len(metrics), len(modes), figsize=(6.4 * len(modes), 5.2 * len(metrics)),
                           squeeze=False)
    for ri, metric in enumerate(metrics):
        for ci, mode in enumerate(modes):
            ax = axes[ri][ci]
            xs, ys, z = grid(exp, fig, mode, metric)
            surface = len(xs) > 1 and len(ys) > 1  # else one row or column: cells, no curves
            filled = (ax.contourf(xs, ys, z, levels=12, cmap="viridis") if surface else
                      ax.pcolormesh(xs, ys, np.ma.masked_invalid(z), shading="nearest",
                                    cmap="viridis"))
            f.colorbar(filled, ax=ax, label=METRIC_LABELS.get(metric, metric))
            lv = levels(z) if surface else None
            if lv:
                lines = ax.contour(xs, ys, z, levels=lv, colors="white", linewidths=0.9)
                ax.clabel(lines, fmt="%.2g", fontsize=8)
            for j, y in enumerate(ys):
                for i, x in enumerate(xs):
                    if not math.isnan(z[j][i]):
                        ax.plot(x, y, ".", color="black", markersize=2)
                        ax.annotate(f"{z[j][i]:.2g}", (x, y), fontsize=5, color="black",
                                    xytext=(2, 2), textcoords="offset points")
            ax.set_xticks(xs)
            ax.set_xticklabels([plots.words(exp, fig["x"], _value(exp, fig["x"], x))
                                for x in xs], fontsize=7)
            ax.set_xlabel(fig.get("x_label") or plots.short(fig["x"]))
            ax.set_ylabel(fig.get("y_label") or plots.short(fig["series"]))
            ax.set_title(f"{plots.mode_title(exp.spec, mode)}: "
                         f"{METRIC_LABELS.get(metric, metric)}", fontsize=9)
    f.suptitle(fig.get("title") or fig.get("id", ""), fontsize=11)
    f.tight_layout(rect=(0, 0, 1, 0.95))
    return plots.save_figure(f, out_base, formats)


def _value(exp, path, x):
    """The sweep's own value for a numeric x (so that `labels:` keyed 0.1 find it)."""
    for p in exp.points.values():
        v = p["params"][path]
        if float(v) == x:
            return v
    return x
