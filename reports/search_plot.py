#!/usr/bin/python3
"""The configuration search's plot (servelab search): every simulated configuration's
throughput against its p99 latency, the feasible ones apart from the others, the Pareto front
of the feasible ones, the best, and the ones measured on the engine beside their predictions.

Usage: search_plot.py DIR   (reads DIR/search.json, writes DIR/search.png and .svg)
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def point(c, metrics="metrics"):
    m = c.get(metrics) or {}
    return m.get("latency_p99_ms"), m.get("throughput_rps")


def main(out):
    with open(os.path.join(out, "search.json")) as f:
        j = json.load(f)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    feasible = {c["point"] for c in j.get("ranked", [])}
    others = [point(c) for c in j.get("all", []) if c["point"] not in feasible]
    ax.scatter([x for x, y in others if x is not None], [y for x, y in others if x is not None],
               s=10, color="0.75", label="infeasible")
    ok = [point(c) for c in j.get("ranked", [])]
    ax.scatter([x for x, _ in ok], [y for _, y in ok], s=12, color="tab:blue", label="feasible")
    front = [point(c) for c in j.get("pareto", [])]
    if front:
        ax.plot([x for x, _ in front], [y for _, y in front], "-o", ms=4, color="tab:red",
                label="Pareto front")
    if ok:
        ax.scatter([ok[0][0]], [ok[0][1]], marker="*", s=160, color="tab:orange", zorder=5,
                   label="best")
    for i, r in enumerate(j.get("measured", [])):
        (px, py), (mx, my) = point(r, "predicted"), point(r, "measured")
        if None in (px, py, mx, my):
            continue
        ax.annotate("", xy=(mx, my), xytext=(px, py),
                    arrowprops={"arrowstyle": "->", "color": "tab:green"})
        ax.scatter([mx], [my], marker="X", s=60, color="tab:green",
                   label="measured on the engine" if i == 0 else None)
    ax.set_xscale("log")
    ax.set_xlabel("p99 latency (ms): simulated, and measured (X)")
    ax.set_ylabel("throughput (req/s)")
    title = " and ".join(j.get("constraints", [])) or "no constraint"
    ax.set_title(f"Configuration search: {title}", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    for fmt in ("png", "svg"):
        fig.savefig(os.path.join(out, f"search.{fmt}"), dpi=110)
    print(os.path.join(out, "search.png"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
