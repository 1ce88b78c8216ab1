"""Stacked bars: a figure whose `metrics:` are the parts of one whole (`kind: stacked`), as
TrIMS figure 9's normalized time split. One panel per mode; per x value one bar per series,
each stacked from the parts' means in the order the figure lists them."""
import textwrap

import matplotlib

import plots
from results_db import METRIC_LABELS

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HATCHES = ["", "//", "..", "xx"]


def render(exp, fig, out_base, formats=("png", "svg")):
    """Draws the figure to out_base.<fmt> per format; returns the written paths."""
    parts = fig["metrics"]
    modes = [m for m in ("sim", "real") if m in exp.modes] or exp.modes
    xs, series = plots.figure_series(exp, fig)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    f, axes = plt.subplots(1, len(modes), figsize=(2.5 + 1.6 * len(xs) * len(modes), 5.0),
                           squeeze=False, sharey=True)
    width = 0.8 / max(1, len(series))
    for ci, mode in enumerate(modes):
        ax = axes[0][ci]
        for si, (label, by_x) in enumerate(series.items()):
            for xi, x in enumerate(xs):
                if x not in by_x:
                    continue
                pos = xi + (si - (len(series) - 1) / 2) * width
                bottom = 0.0
                for pi, part in enumerate(parts):
                    mean, _, n = exp.value(mode, by_x[x], part)
                    if n == 0 or mean != mean:
                        continue
                    ax.bar(pos, mean, width=width * 0.95, bottom=bottom,
                           color=colors[pi % len(colors)], hatch=HATCHES[si % len(HATCHES)],
                           edgecolor="white", linewidth=0.5)
                    bottom += mean
                ax.text(pos, bottom, f"{bottom:.2f}", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels([textwrap.fill(plots.words(exp, fig.get("x"), x), 12,
                                          break_long_words=False) for x in xs],
                           fontsize=8)
        ax.set_title(plots.mode_title(exp.spec, mode))
        ax.grid(True, axis="y", alpha=0.3)
        if ci == 0:
            ax.set_ylabel(fig.get("y_label") or "share of the reference time")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[pi % len(colors)])
               for pi in range(len(parts))]
    labels = [METRIC_LABELS.get(p, p) for p in parts]
    handles += [plt.Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="black",
                              hatch=HATCHES[si % len(HATCHES)]) for si in range(len(series))]
    labels += [label or "" for label in series]
    f.legend(handles, labels, loc="lower center", ncol=2, fontsize=7, frameon=False,
             bbox_to_anchor=(0.5, 0.0))
    f.tight_layout(rect=(0, 0.2, 1, 0.93))
    f.suptitle(fig.get("title") or fig.get("id", ""), y=0.99, fontsize=11, va="top")
    return plots.save_figure(f, out_base, formats)
