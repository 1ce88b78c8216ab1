"""Figures: one per `figures:` entry of an experiment, simulated and real side by side.

Rows are metrics (throughput, mean/p90/p99 latency), columns are modes (sim, real); each row
shares its y axis so the two bodies compare at a glance. Numeric sweeps are lines with error
bars (std over repetitions); categorical sweeps (access pattern, policy) are grouped bars.
"""
import math
import os
import textwrap

import matplotlib
import yaml

import wording

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from results_db import METRIC_LABELS  # noqa: E402

DEFAULT_METRICS = ["throughput_rps", "latency_mean_ms", "latency_p90_ms", "latency_p99_ms"]
MODE_TITLES = {"sim": "simulated", "real": "real (engine over HTTP)"}


def mode_title(spec, mode):
    """A mode in words: the experiment's `mode_titles:` where it names what a mode is (the
    weight store's "sim" is a prediction from its manifests), else MODE_TITLES."""
    return str(((spec or {}).get("mode_titles") or {}).get(mode) or MODE_TITLES.get(mode, mode))


def short(path):
    """policies.eviction.name -> eviction; workload.arrival.concurrency -> concurrency; a list
    of paths (a figure's x made of several axes) -> their short names joined by ' / '."""
    if isinstance(path, list):
        return " / ".join(short(p) for p in path)
    if not path:
        return ""
    parts = path.split(".")
    return parts[-2] if parts[-1] in ("name", "type") and len(parts) > 1 else parts[-1]


def _file_stem(x):
    """'weights/rafiki-rl-single.json' -> 'rafiki-rl-single'; other values as they are."""
    if isinstance(x, list):
        return " ".join(str(_file_stem(v)) for v in x)
    if isinstance(x, str) and x.endswith((".json", ".yaml", ".pt")):
        return os.path.splitext(os.path.basename(x))[0]
    return x


def value_label(v):
    """A sweep value for axes and legends: '{type: zipf, alpha: 1.1}' (text or map) ->
    'zipf, alpha 1.1'."""
    if isinstance(v, dict) or isinstance(v, str) and v.startswith("{") and v.endswith("}"):
        try:
            m = dict(v) if isinstance(v, dict) else yaml.safe_load(v)
        except yaml.YAMLError:
            return v
        if isinstance(m, dict):
            first = [str(m.pop(k)) for k in ("type", "name") if k in m][:1]
            # Files (a learned policy's weights) would crowd a legend: their stem stands in;
            # a flag reads as its name ("partial"), not "partial=True".
            rest = [(k if x else f"no {k}") if isinstance(x, bool) else f"{k} {_file_stem(x)}"
                    for k, x in m.items()]
            return ", ".join([" ".join(first)] + rest) if first else ", ".join(rest)
    return f"{v:g}" if isinstance(v, float) else str(v)


def words(exp, path, v):
    """A sweep value as the page names it: the experiment's `labels:` where it gives one."""
    if isinstance(path, list):  # an x of several axes: already in words (joined_x)
        return str(v)
    return wording.label_of(exp.spec.get("labels"), path, v) or value_label(v)


MARKERS = ["o", "s", "^", "D", "v", "x", "P", "*"]


def coinciding(panel):
    """Pairs of series labels whose values agree within 1% at every shared x (drawn on top of
    each other, so the panel says so)."""
    out = []
    names = [n for n in panel if panel[n]]
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            shared = [x for x in panel[a] if x in panel[b]]
            if len(shared) >= 2 and all(math.isclose(panel[a][x], panel[b][x], rel_tol=0.01)
                                        for x in shared):
                out.append((a, b))
    return out


def coincide_note(pairs, width=60, order=()):
    """'a, b and c coincide' for each group of series that coincide pairwise (a with b, b
    with c), in legend `order`, wrapped to `width` characters; '' when none do."""
    groups = []
    for a, b in pairs:
        hit = [g for g in groups if a in g or b in g]
        merged = [a, b] + [x for g in hit for x in g]
        groups = [g for g in groups if g not in hit] + [list(dict.fromkeys(merged))]
    rank = {name: i for i, name in enumerate(order)}
    groups = [sorted(g, key=lambda n: rank.get(n, len(rank))) for g in groups]
    said = ["{} and {} coincide".format(", ".join(g[:-1]), g[-1]) for g in groups]
    return textwrap.fill("; ".join(said), width) if said else ""


def _finish_panel(ax, metric, panel):
    """Log scale where one panel's values span decades; a note where series coincide."""
    vals = [v for ys in panel.values() for v in ys.values() if v > 0 and not math.isnan(v)]
    if metric not in ZOOMED_METRICS and metric not in ("slo_attainment",) and vals and \
            max(vals) / min(vals) >= 100:
        ax.set_yscale("log")
    note = coincide_note(coinciding(panel), 50, list(panel))
    if note:
        ax.text(0.01, 0.97, note, transform=ax.transAxes, fontsize=7, va="top", color="#444",
                bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none", "pad": 1})


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def joined_x(exp, paths, params):
    """The x of a point when `x` lists several axes (one setting spread over several keys, as
    a backup delay in seconds or at a percentile): the words of its values other than none,
    or 'none' where all are."""
    parts = [words(exp, p, params.get(p)) for p in paths
             if params.get(p) is not None and str(params.get(p)) != "none"]
    return " ".join(parts) or "none"


def figure_series(exp, fig):
    """Returns (x_values, series) for a figure spec: series maps a label to {x: point_id}.

    Points are kept when they match `where`; every sweep path other than `x` (and those fixed
    by `where`) distinguishes series, so no two points collapse onto one marker. `x` may list
    several sweep paths (joined_x).
    """
    x_path = fig["x"]
    x_paths = x_path if isinstance(x_path, list) else [x_path]
    where = fig.get("where") or {}
    others = [p for p in exp.sweep_paths() if p not in x_paths and p not in where]
    order = fig.get("series")
    if order in others:  # the named series dimension leads the label
        others.remove(order)
        others.insert(0, order)
    series, xs = {}, []
    for pid, pt in exp.points.items():
        params = pt["params"]
        if any(str(params.get(k)) != str(v) for k, v in where.items()):
            continue
        x = joined_x(exp, x_paths, params) if isinstance(x_path, list) else \
            params.get(x_path) if x_path else pt["label"]
        if x not in xs:
            xs.append(x)
        label = "; ".join(f"{short(p)} {words(exp, p, params.get(p))}" for p in others) \
            if len(others) > 1 else (words(exp, others[0], params.get(others[0])) if others else "")
        series.setdefault(label, {})[x] = pid
    if all(_is_number(x) for x in xs):
        xs.sort()
    return xs, series


# Metrics whose points differ by little next to their size (an ensemble's accuracy: 0.93 vs
# 0.97): the y axis spans their values rather than starting at 0.
ZOOMED_METRICS = {"accuracy"}


def _zoom(ax, values):
    vals = [v for v in values if not math.isnan(v)]
    if not vals:
        return
    lo, hi = min(vals), max(vals)
    pad = max(0.01, (hi - lo) * 0.5)
    ax.set_ylim(max(0.0, lo - pad), hi + pad)


def overlapping_tick_labels(fig_obj, ax):
    """Pairs of the x axis's visible tick labels whose drawn boxes overlap, as label texts."""
    renderer = fig_obj.canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in ax.get_xticklabels()
             if t.get_visible() and t.get_text()]
    return [(a, b) for i, (a, box_a) in enumerate(boxes) for b, box_b in boxes[i + 1:]
            if box_a.overlaps(box_b)]


def _untangle_tick_labels(fig_obj, axes):
    """Turns the x tick labels of a panel whose labels run into each other: 30 degrees, then
    upright, then upright in smaller type; the layout is redone after each step."""
    for angle, size in ((30, None), (90, None), (90, 6), (90, 5)):
        crowded = [ax for ax in axes if overlapping_tick_labels(fig_obj, ax)]
        if not crowded:
            return
        for ax in crowded:
            for t in ax.get_xticklabels():
                t.set_rotation(angle)
                t.set_ha("right" if angle < 90 else "center")
                if size:   # upright and still crowded: smaller type
                    t.set_fontsize(size)
        fig_obj.canvas.draw()


def render(exp, fig, out_base, formats=("png", "svg")):
    """Draws one figure to out_base.<fmt> for each format; returns the written paths."""
    metrics = fig.get("metrics") or DEFAULT_METRICS
    modes = [m for m in ("sim", "real") if m in exp.modes] or exp.modes
    xs, series = figure_series(exp, fig)
    numeric = all(_is_number(x) for x in xs)
    ncols = max(1, len(modes))
    f, axes = plt.subplots(len(metrics), ncols, figsize=(5.2 * ncols, 2.7 * len(metrics)),
                           squeeze=False, sharey="row", sharex=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ci, mode in enumerate(modes):
        for ri, metric in enumerate(metrics):
            ax = axes[ri][ci]
            panel = {}
            zero_bars = []   # bar positions of value 0, which a log axis cannot draw
            for si, (label, by_x) in enumerate(series.items()):
                ys, es, xv = [], [], []
                for xi, x in enumerate(xs):
                    if x not in by_x:
                        continue
                    mean, std, n = exp.value(mode, by_x[x], metric)
                    if n == 0:
                        continue
                    xv.append(x if numeric else xi)
                    ys.append(mean)
                    es.append(std if n > 1 else 0)
                color = colors[si % len(colors)]
                panel[label] = dict(zip(xv, ys))
                # Error bars only where repetitions measured a spread (none for one run a point).
                es = es if any(e > 0 for e in es) else None
                if numeric:
                    ax.errorbar(xv, ys, yerr=es, marker=MARKERS[si % len(MARKERS)], ms=4,
                                capsize=2, color=color, label=label or None)
                else:
                    width = 0.8 / max(1, len(series))
                    pos = [x + (si - (len(series) - 1) / 2) * width for x in xv]
                    ax.bar(pos, ys, width=width, yerr=es, capsize=2, color=color,
                           label=label or None)
                    zero_bars += [p for p, y in zip(pos, ys) if y == 0]
            if ri == 0:
                ax.set_title(mode_title(exp.spec, mode))
            if ci == 0:
                ax.set_ylabel(METRIC_LABELS.get(metric, metric))
            ax.grid(True, alpha=0.3)
            if numeric and fig.get("x_scale") not in ("log2", "log10", "log") and \
                    len(xs) <= 12 and all(float(x).is_integer() for x in xs):
                ax.set_xticks(xs)   # the sweep's own values (models 1..10), not 2.5, 7.5
            if numeric and fig.get("x_scale") in ("log2", "log10", "log"):
                ax.set_xscale("log", base=2 if fig["x_scale"] == "log2" else 10)
                ax.set_xticks(xs)
                ax.set_xticklabels([f"{x:g}" for x in xs], fontsize=8)
                ax.minorticks_off()
            if fig.get("y_scale") != "linear":
                _finish_panel(ax, metric, panel)
            if metric in ZOOMED_METRICS:
                _zoom(ax, [exp.value(mode, pid, metric)[0] for by_x in series.values()
                           for pid in by_x.values()])
            if fig.get("y_scale") == "log" and metric.startswith("latency"):
                ax.set_yscale("log")
            if ax.get_yscale() == "log":  # a bar of 0 has no height on a log axis: say it
                for p in zero_bars:
                    ax.annotate("0", (p, 0), xycoords=("data", "axes fraction"), ha="center",
                                va="bottom", fontsize=7, color="#444")
            if not numeric:
                ax.set_xticks(range(len(xs)))
                # Long labels (a policy with parameters) wrap instead of running into each other.
                # Words stay whole (inception_resnet_v2 is not cut into "ince ption_resnet").
                ax.set_xticklabels([textwrap.fill(words(exp, fig.get("x"), x), 12,
                                                  break_long_words=False) for x in xs],
                                   fontsize=8, rotation=30 if len(xs) > 4 else 0)
            if ri == len(metrics) - 1:
                ax.set_xlabel(fig.get("x_label") or short(fig.get("x")) or "point")
    if fig.get("annotate_checks"):
        _annotate_checks(exp, fig, modes, axes)
    if any(series.keys()):
        handles, labels = axes[0][0].get_legend_handles_labels()
        if handles:
            f.legend(handles, labels, loc="upper center", ncol=min(4, len(labels)),
                     bbox_to_anchor=(0.5, 1 - 0.3 / f.get_figheight()), frameon=False)
    title = fig.get("title") or fig.get("id", "")
    legend = any(series.keys())
    layout_rect = (0, 0, 1, 1 - (0.6 if legend else 0.35) / f.get_figheight())
    f.tight_layout(rect=layout_rect)
    f.canvas.draw()
    _untangle_tick_labels(f, axes[-1])
    f.tight_layout(rect=layout_rect)
    f.suptitle(title, y=1 - 0.05 / f.get_figheight(), fontsize=11, va="top")
    return save_figure(f, out_base, formats)


def save_figure(f, out_base, formats):
    """Writes matplotlib figure `f` to out_base.<fmt> per format, closes it; returns the paths."""
    paths = []
    for fmt in formats:
        path = f"{out_base}.{fmt}"
        f.savefig(path, dpi=110, bbox_inches="tight")
        paths.append(path)
    plt.close(f)
    return paths


def _annotate_checks(exp, fig, modes, axes):
    """Writes each check's computed value and verdict into its mode's top panel (a figure's
    `annotate_checks: true`), so that the plot states its result, e.g. a final ratio."""
    import verdict  # imports this module lazily: no cycle at import time
    for ci, mode in enumerate(modes):
        _, results = verdict.figure_verdicts(exp, fig, [mode]).get(mode, (None, []))
        lines = [textwrap.fill(f"{r['says']}: computed {r['value']:.3g} ({r['verdict']})", 52)
                 for r in results if not math.isnan(r["value"])]
        if lines:
            axes[0][ci].text(0.02, 0.97, "\n".join(lines), transform=axes[0][ci].transAxes,
                             fontsize=7, va="top", bbox={"facecolor": "white", "alpha": 0.85,
                                                         "edgecolor": "#ccc"})


def default_figures(exp):
    """Figures when the experiment names none: the first sweep path on x."""
    paths = exp.sweep_paths()
    if not paths:
        return [{"id": "summary", "x": None, "title": exp.spec.get("name", "experiment")}]
    x = paths[0]
    return [{"id": short(x), "x": x, "title": exp.spec.get("name", "experiment"),
             "x_scale": "log2" if _looks_geometric(exp, x) else None}]


def _looks_geometric(exp, path):
    vals = sorted({p["params"].get(path) for p in exp.points.values()
                   if _is_number(p["params"].get(path))})
    return len(vals) >= 4 and vals[0] > 0 and vals[-1] / vals[0] >= 16 and \
        not math.isclose(vals[1] - vals[0], vals[-1] - vals[-2])
