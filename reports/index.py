#!/usr/bin/python3
"""An index of several results folders: per experiment and figure, the paper's claim and the
verdict in each mode, computed from the results, with a link to each report page.

    index.py OUT_DIR            # every OUT_DIR/*/results.db -> OUT_DIR/index.{md,html}

Prints the Markdown to stdout too (scripts/demo ends with it).
"""
import glob
import html as htmlmod
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import plots  # noqa: E402
import results_db  # noqa: E402
import verdict  # noqa: E402


def entries(out_dir):
    """[(folder name, experiment, figure, {mode: (overall, results)})] in folder order."""
    rows = []
    for db in sorted(glob.glob(os.path.join(out_dir, "*", "results.db"))):
        d = os.path.dirname(db)
        exp = results_db.load(d)
        modes = [m for m in ("sim", "real") if m in exp.modes]
        for fig in exp.spec.get("figures") or plots.default_figures(exp):
            rows.append((os.path.basename(d), exp, fig, verdict.figure_verdicts(exp, fig, modes)))
    return rows


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        sys.exit("usage: index.py OUT_DIR")
    out_dir = argv[0]
    rows = entries(out_dir)
    if not rows:
        sys.exit(f"index: no results folders under {out_dir}")
    md = ["# ServeLab results: the papers' claims and what these runs say", ""]
    h = ["<!doctype html><html><head><meta charset='utf-8'><title>ServeLab results</title>"
         "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}</style></head><body>",
         "<h1>ServeLab results: the papers' claims and what these runs say</h1>"]
    for name, exp, fig, verdicts in rows:
        title = fig.get("title") or exp.spec.get("title") or exp.spec.get("name", name)
        page = f"{name}/report/report.html"
        claim = " ".join(str(fig.get("claim") or exp.spec.get("claim") or "").split())
        heading = exp.spec.get("title") or exp.spec.get("name") or name
        md += [f"## {heading}", "", f"{title}. Report: {page}", "", f"> {claim}", ""]
        h += [f"<h2><a href='{htmlmod.escape(page)}'>{htmlmod.escape(heading)}</a></h2>",
              f"<p>{htmlmod.escape(title)}</p>",
              f"<blockquote>{htmlmod.escape(claim)}</blockquote><ul>"]
        for mode, (overall, results) in verdicts.items():
            failed = [r["says"] for r in results if r["verdict"] == verdict.FAILS]
            line = f"{plots.MODE_TITLES.get(mode, mode)}: the claim {overall}"
            line += f" ({len(results) - len(failed)} of {len(results)} checks hold"
            line += f"; not: {'; '.join(failed)})" if failed else ")"
            md.append(f"- {line}")
            h.append(f"<li>{htmlmod.escape(line)}</li>")
        md.append("")
        h.append("</ul>")
    h.append("</body></html>")
    with open(os.path.join(out_dir, "index.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(out_dir, "index.html"), "w") as f:
        f.write("\n".join(h) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
