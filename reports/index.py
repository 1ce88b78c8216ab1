#!/usr/bin/python3
"""An index of several results folders: per experiment and figure, the paper's claim and the
verdict in each mode, computed from the results, with a link to each report page.

    index.py OUT_DIR            # every OUT_DIR/*/results.db -> OUT_DIR/index.{md,html}

Training runs beside them (OUT_DIR/*/train.json, from `servelab train`) are listed too: the
config, episodes, training time, the policy's mean decision time and its learning curve.

Prints the Markdown to stdout too (scripts/demo ends with it).
"""
import glob
import html as htmlmod
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import page as page_mod  # noqa: E402
import plots  # noqa: E402
import results_db  # noqa: E402
import verdict  # noqa: E402


def figure_label(spec, fig):
    """Which of the paper's figures a figure entry reproduces, in words: its `source:`'s
    'figure(s) ...' part ('figures 14 and 15'), else the experiment's `figure:`."""
    m = re.search(r"\bfigures?\s+[0-9][^;()]*$", str(fig.get("source") or "").strip())
    if m:
        return m.group(0).strip()
    figure = str(spec.get("figure") or "").strip()
    if not figure:
        return "-"
    return figure if not figure[0].isdigit() else (
        ("figures " if re.search(r"[-,]", figure) else "figure ") + figure)


def _order(row):
    """Papers in alphabetical order, then each paper's experiments by the first number of
    their figure, and each experiment's figures in the order it lists them."""
    spec = row[1].spec
    nums = [int(n) for n in re.findall(r"\d+", str(spec.get("figure") or ""))] or [10 ** 6]
    return (page_mod.paper_name(spec).lower() or "~", nums[0], row[0], row[4])


def entries(out_dir):
    """[(folder name, experiment, figure, {mode: (overall, results)}, its place in the
    experiment)] by paper, then figure."""
    rows = []
    for db in sorted(glob.glob(os.path.join(out_dir, "*", "results.db"))):
        d = os.path.dirname(db)
        exp = results_db.load(d)
        modes = [m for m in ("sim", "real") if m in exp.modes]
        for i, fig in enumerate(exp.spec.get("figures") or plots.default_figures(exp)):
            rows.append((os.path.basename(d), exp, fig, verdict.figure_verdicts(exp, fig, modes),
                         i))
    return sorted(rows, key=_order)


COLOURS = {verdict.HOLDS: "#c8f0c8", verdict.HOLDS_WITHIN_NOISE: "#f6e7a8",
           verdict.FAILS: "#f6c4c4", verdict.UNKNOWN: "#e4e4e4"}


def summary_table(rows):
    """Markdown and HTML lines: one row per figure and mode, its verdict (coloured in HTML)."""
    md = ["| paper | figure | what it shows | results | mode | verdict |",
          "|---|---|---|---|---|---|"]
    h = ["<table><tr><th>paper</th><th>figure</th><th>what it shows</th><th>results</th>"
         "<th>mode</th><th>verdict</th></tr>"]
    for name, exp, fig, verdicts, _ in rows:
        paper = page_mod.paper_name(exp.spec) or "-"
        label = figure_label(exp.spec, fig)
        title = str(fig.get("title") or exp.spec.get("title") or name)
        page = f"{name}/report/report.html"
        for mode, (overall, _) in verdicts.items():
            m = plots.mode_title(exp.spec, mode)
            md.append(f"| {paper} | {label} | {title} | {name} | {m} | {overall} |")
            colour = COLOURS.get(overall.replace(" where measured", ""), "#ffffff")
            h.append(f"<tr><td>{htmlmod.escape(paper)}</td><td>{htmlmod.escape(label)}</td>"
                     f"<td><a href='{htmlmod.escape(page)}'>{htmlmod.escape(title)}</a></td>"
                     f"<td>{htmlmod.escape(name)}</td><td>{htmlmod.escape(m)}</td>"
                     f"<td style='background:{colour}'>{htmlmod.escape(overall)}</td></tr>")
    h.append("</table>")
    return md + [""], h


def trainings(out_dir):
    """[(folder name, train.json)] of the training runs in OUT_DIR, in folder order."""
    runs = []
    for path in sorted(glob.glob(os.path.join(out_dir, "*", "train.json"))):
        with open(path) as f:
            runs.append((os.path.basename(os.path.dirname(path)), json.load(f)))
    return runs


def training_lines(name, t):
    """One line per training run: what was trained, how long it took, how fast it decides."""
    return (f"{name}: {os.path.basename(str(t.get('config', '')))}, {t.get('episodes')} episodes "
            f"(seed {t.get('seed')}) in {t.get('training_seconds', 0):.1f} s; mean decision time "
            f"{t.get('decision_us', 0):.1f} us; best evaluation attainment "
            f"{t.get('best_eval_attainment', 0):.3f} (episode {t.get('best_episode')})")


def add_trainings(out_dir, md, h):
    runs = trainings(out_dir)
    if not runs:
        return
    md += ["## Training (rafiki-rl, `servelab train`)", ""]
    h.append("<h2>Training (rafiki-rl, <code>servelab train</code>)</h2><ul>")
    for name, t in runs:
        line = training_lines(name, t)
        curve = f"{name}/learning_curve.png"
        md.append(f"- {line}. Learning curve: {curve}")
        h.append(f"<li>{htmlmod.escape(line)}. <a href='{htmlmod.escape(curve)}'>learning curve</a>"
                 "</li>")
    md.append("")
    h.append("</ul>")


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
         "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}table{border-collapse:"
         "collapse;font-size:13px}td,th{border:1px solid #ccc;padding:2px 6px}</style>"
         "</head><body>",
         "<h1>ServeLab results: the papers' claims and what these runs say</h1>"]
    s_md, s_h = summary_table(rows)
    md += s_md
    h += s_h
    shown = {}   # experiment folder -> the claims already quoted under its heading
    for name, exp, fig, verdicts, _ in rows:
        title = fig.get("title") or exp.spec.get("title") or exp.spec.get("name", name)
        page = f"{name}/report/report.html"
        if name not in shown:  # one heading per experiment, its figures below it
            shown[name] = []
            heading = exp.spec.get("title") or exp.spec.get("name") or name
            md += [f"## {heading}", "", f"Report: {page}", ""]
            h += [f"<h2><a href='{htmlmod.escape(page)}'>{htmlmod.escape(heading)}</a></h2>"]
        label = figure_label(exp.spec, fig)
        # A title that names its figures already ('Rafiki figures 14a-b ...') stands alone.
        sub = title if re.match(r"(\w+ )?figures? ", str(title), re.I) else f"{label}: {title}"
        md += [f"### {sub}", ""]
        h += [f"<h3>{htmlmod.escape(sub)}</h3>"]
        claim = " ".join(str(fig.get("claim") or exp.spec.get("claim") or "").split())
        source = page_mod.claim_source(exp.spec, fig)
        if (claim, source) in shown[name]:  # the same claim as a figure above: not again
            said = f"Paper's claim ({source}): as quoted above."
            md += [said, ""]
            h.append(f"<p>{htmlmod.escape(said)}</p>")
        else:
            shown[name].append((claim, source))
            claim = f"Paper's claim ({source}): {claim}"
            md += [f"> {claim}", ""]
            h.append(f"<blockquote>{htmlmod.escape(claim)}</blockquote>")
        h.append("<ul>")
        for mode, (overall, results) in verdicts.items():
            paper = [r for r in results if not r["ours"]]
            ours = [r for r in results if r["ours"]]
            failed = [r["says"] for r in paper if r["verdict"] == verdict.FAILS]
            noisy = sum(1 for r in paper if r["verdict"] == verdict.WITHIN_NOISE)
            held = sum(1 for r in paper if r["verdict"] == verdict.HOLDS)
            line = f"{plots.mode_title(exp.spec, mode)}: the claim {overall}"
            line += f" ({held} of {len(paper)} checks hold"
            line += f", {noisy} within noise" if noisy else ""
            line += f"; not: {'; '.join(failed)}" if failed else ""
            ours_held = sum(1 for r in ours if r["verdict"] == verdict.HOLDS)
            line += f"; our reading: {ours_held} of {len(ours)} checks hold)" if ours else ")"
            md.append(f"- {line}")
            colour = COLOURS.get(overall.replace(" where measured", ""), "#ffffff")
            h.append(f"<li><span style='background:{colour}'>{htmlmod.escape(line)}</span></li>")
        md.append("")
        h.append("</ul>")
    add_trainings(out_dir, md, h)
    h.append("</body></html>")
    with open(os.path.join(out_dir, "index.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(out_dir, "index.html"), "w") as f:
        f.write("\n".join(h) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
