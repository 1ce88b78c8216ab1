#!/usr/bin/python3
"""`servelab report RESULTS_DIR`: plots (PNG, SVG) and a report page (Markdown, HTML).

For every figure of the experiment (its `figures:` list, or the first sweep path on x) the
report draws simulated and real curves side by side, states the paper's claim, and tables
per point the simulator's relative error against the real run (throughput, mean, p99, and a
figure's own `error_metrics:`).
Run with Debian's /usr/bin/python3 (it has matplotlib).
"""
import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import contour  # noqa: E402
import page  # noqa: E402
import page_render  # noqa: E402
import plots  # noqa: E402
import results_db  # noqa: E402
import stacked  # noqa: E402
import timeline  # noqa: E402


def write_table_csv(sec, path):
    """A figure's results table as CSV (the page's columns and cells)."""
    if not sec["rows"]:
        return
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(sec["header"])
        w.writerows(sec["rows"])
    sec["files"].append(os.path.basename(path))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="servelab report", description=__doc__.split("\n")[0])
    ap.add_argument("results_dir", help="folder written by `servelab run`")
    ap.add_argument("--out", help="report folder (default: RESULTS_DIR/report)")
    ap.add_argument("--formats", default="png,svg", help="figure formats (default png,svg)")
    ap.add_argument("--compare", metavar="RUN_B",
                    help="put this results folder beside RESULTS_DIR instead: summaries, "
                         "differences and plots side by side, the table as compare.csv "
                         "(default --out: RESULTS_DIR/compare)")
    ap.add_argument("--figures-from", metavar="CONFIG",
                    help="judge and draw the results by this experiment config's figures, "
                         "labels, claim and mode titles (its current text) instead of the copy the run "
                         "saved: a page regenerated after its claims' wording changed (not the "
                         "weight store's pages: scripts/store_results.py fits their checks to "
                         "the run's variant count)")
    args = ap.parse_args(argv)
    if args.compare:
        import compare
        return compare.main(args.results_dir, args.compare,
                            args.out or os.path.join(args.results_dir, "compare"))

    exp = results_db.load(args.results_dir)
    if args.figures_from:
        import yaml
        with open(args.figures_from) as f:
            current = yaml.safe_load(f) or {}
        for key in ("figures", "labels", "claim", "mode_titles"):
            if key in current:
                exp.spec[key] = current[key]
    if not exp.stats:
        failed = [r for r in exp.runs if r.get("status") != "ok"]
        msg = f"report: no successful runs in {args.results_dir}"
        if failed:
            msg += f" ({len(failed)} failed; first error: {failed[0].get('error')})"
        raise SystemExit(msg)
    out = args.out or os.path.join(args.results_dir, "report")
    os.makedirs(out, exist_ok=True)
    if args.figures_from:  # the experiment as this page judged it (reports/page_rules.py)
        import yaml
        with open(os.path.join(out, "experiment.yaml"), "w") as f:
            yaml.safe_dump(exp.spec, f, sort_keys=False, width=100)
    figures = exp.spec.get("figures") or plots.default_figures(exp)
    sections = []
    for i, fig in enumerate(figures):
        fig = dict(fig)
        fig.setdefault("id", f"figure{i + 1}")
        base = os.path.join(out, fig["id"])
        if fig.get("kind") == "timeline":
            files = timeline.render(exp, fig, base, formats=args.formats.split(","))
            fig = timeline.table_spec(fig)  # its table: one row per point, by series and row
        elif fig.get("kind") == "contour":
            files = contour.render(exp, fig, base, formats=args.formats.split(","))
        elif fig.get("kind") == "stacked":
            files = stacked.render(exp, fig, base, formats=args.formats.split(","))
        else:
            files = plots.render(exp, fig, base, formats=args.formats.split(","))
        sections.append(page.figure_section(exp, fig, [os.path.basename(p) for p in files]))
        write_table_csv(sections[-1], base + ".csv")
    md, html = page_render.render(exp, sections)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(md)
    with open(os.path.join(out, "report.html"), "w") as f:
        f.write(html)
    print(os.path.join(out, "report.html"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
