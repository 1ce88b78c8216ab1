"""Two runs side by side: `servelab report RUN_A --compare RUN_B [--out DIR]`.

Points are matched by their label (the sweep values, "concurrency=4 none"); for each mode both
runs have and each metric either measured, the page puts A's and B's value (mean ± standard
deviation over repetitions), their difference B - A and (B - A) / A side by side, one plot a
metric with A's and B's bars per point, and writes the same table as compare.csv.
"""
import csv
import html as htmlmod
import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import results_db  # noqa: E402
from results_db import METRIC_LABELS  # noqa: E402

METRICS = ["throughput_rps", "latency_mean_ms", "latency_p99_ms", "slo_attainment", "overdue",
           "accuracy"]
CSV_HEADER = ["point", "mode", "metric", "a_mean", "a_sd", "a_n", "b_mean", "b_sd", "b_n",
              "b_minus_a", "relative"]


def _by_label(exp):
    return {pt["label"]: pid for pid, pt in sorted(exp.points.items())}


def rows(a, b):
    """One row per (point in both, mode in both, metric measured in either), in A's order."""
    la, lb = _by_label(a), _by_label(b)
    out = []
    for mode in [m for m in a.modes if m in b.modes]:
        for label in [x for x in la if x in lb]:
            for metric in METRICS:
                sa, sb = a.value(mode, la[label], metric), b.value(mode, lb[label], metric)
                if math.isnan(sa[0]) and math.isnan(sb[0]):
                    continue
                diff = sb[0] - sa[0]
                rel = diff / sa[0] if sa[0] else math.nan
                out.append([label, mode, metric, *sa, *sb, diff, rel])
    return out


def _fmt(v, digits=3):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:.{digits}g}" if abs(v) < 1e5 else f"{v:.3g}"


def _cell(mean, sd, n):
    return _fmt(mean) + (f" ± {_fmt(sd, 2)}" if n and n > 1 else "")


def table(rs):
    """Header and text rows for the page."""
    header = ["point", "mode", "metric", "A", "B", "B - A", "(B - A) / A"]
    body = [[r[0], r[1], METRIC_LABELS.get(r[2], r[2]), _cell(*r[3:6]), _cell(*r[6:9]),
             _fmt(r[9]), "-" if math.isnan(r[10]) else f"{r[10] * 100:+.1f}%"] for r in rs]
    return header, body


def plot(rs, out_base):
    """One panel a (mode, metric): A's and B's bars per point, log scale over decades."""
    panels = sorted({(r[1], r[2]) for r in rs}, key=lambda k: (k[0], METRICS.index(k[1])))
    if not panels:
        return None
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, 2.6 * len(panels)), squeeze=False)
    for ax, (mode, metric) in zip(axes[:, 0], panels):
        mine = [r for r in rs if r[1] == mode and r[2] == metric]
        xs = range(len(mine))
        for off, i, name in ((-0.2, 3, "A"), (0.2, 6, "B")):
            ax.bar([x + off for x in xs], [r[i] for r in mine], 0.4, label=name,
                   yerr=[r[i + 1] if r[i + 2] > 1 else 0 for r in mine], capsize=2)
        vals = [r[i] for r in mine for i in (3, 6) if r[i] > 0 and not math.isnan(r[i])]
        if vals and max(vals) / min(vals) > 100:
            ax.set_yscale("log")
        ax.set_xticks(list(xs))
        ax.set_xticklabels([r[0] for r in mine], rotation=30, ha="right", fontsize=7)
        ax.set_ylabel(METRIC_LABELS.get(metric, metric), fontsize=8)
        ax.set_title(f"{mode}: {METRIC_LABELS.get(metric, metric)}", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_base + ".png", dpi=110)
    plt.close(fig)
    return out_base + ".png"


def write_csv(rs, path):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_HEADER)
        w.writerows(rs)


def main(dir_a, dir_b, out):
    a, b = results_db.load(dir_a), results_db.load(dir_b)
    rs = rows(a, b)
    if not rs:
        raise SystemExit(f"compare: {dir_a} and {dir_b} share no point and mode "
                         "(points are matched by their sweep values)")
    os.makedirs(out, exist_ok=True)
    write_csv(rs, os.path.join(out, "compare.csv"))
    png = plot(rs, os.path.join(out, "compare"))
    header, body = table(rs)
    names = [f"A: {dir_a} ({a.spec.get('name', '?')})", f"B: {dir_b} ({b.spec.get('name', '?')})"]
    md = ["# Two runs side by side", ""] + [n + "\n" for n in names]
    md += [f"![A and B]({os.path.basename(png)})", "", "| " + " | ".join(header) + " |",
           "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in body]
    md += ["", "The table as CSV: compare.csv."]
    h = ["<!doctype html><html><head><meta charset='utf-8'><title>compare</title><style>"
         "body{font-family:sans-serif;max-width:1100px;margin:auto}table{border-collapse:"
         "collapse;font-size:13px}td,th{border:1px solid #ccc;padding:2px 6px}</style></head>"
         "<body><h1>Two runs side by side</h1>"] + [f"<p>{htmlmod.escape(n)}</p>" for n in names]
    h += [f"<img src='{os.path.basename(png)}' style='max-width:100%'>", "<table><tr>"
          + "".join(f"<th>{htmlmod.escape(c)}</th>" for c in header) + "</tr>"]
    h += ["<tr>" + "".join(f"<td>{htmlmod.escape(c)}</td>" for c in r) + "</tr>" for r in body]
    h += ["</table><p>The table as CSV: <a href='compare.csv'>compare.csv</a>.</p></body></html>"]
    with open(os.path.join(out, "compare.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(out, "compare.html"), "w") as f:
        f.write("\n".join(h) + "\n")
    print(os.path.join(out, "compare.html"))
    return 0
