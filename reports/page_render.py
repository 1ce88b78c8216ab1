"""The report page's rendering: each figure's section (claim, checks, plot, table with the
simulator's errors) and the whole page, in Markdown and in HTML, from the sections
page.figure_section builds."""
import html as htmlmod

import cache_optimum
from page import claim_blocks, intro_lines, verdict_lines
from results_db import METRIC_LABELS


def _err_summary(sec):
    if not sec["mean_abs_err"]:
        return None
    parts = [f"{METRIC_LABELS.get(m, m)} {v * 100:.1f}%" for m, v in sec["mean_abs_err"].items()]
    fed = (" (each point simulated at the machine speed its real run saw, --match-speed: the "
           "simulation was fed the real run's speed)") if sec.get("speed_matched") else ""
    return "Simulator vs real, mean absolute relative error" + fed + ": " + ", ".join(parts) + "."


def _table_md(sec):
    return (["| " + " | ".join(sec["header"]) + " |", "|" + "---|" * len(sec["header"])]
            + ["| " + " | ".join(r) + " |" for r in sec["rows"]] + [""])


def _table_html(sec):
    return (["<table><tr>" + "".join(f"<th>{htmlmod.escape(c)}</th>" for c in sec["header"])
             + "</tr>"]
            + ["<tr>" + "".join(f"<td>{htmlmod.escape(c)}</td>" for c in r) + "</tr>"
               for r in sec["rows"]]
            + ["</table>"])


def _figure_md(sec):
    """One figure's Markdown: the claim sections apart, the checks, the plot, the table."""
    name = sec["fig"].get("title") or sec["fig"]["id"]
    png = next((f for f in sec["files"] if f.endswith(".png")), sec["files"][0])
    md = [f"## {name}", ""]
    for heading, text in claim_blocks(sec):
        md += [f"### {heading}", "", f"> {text}", ""]
    vlines = verdict_lines(sec)
    if vlines:
        md += ["### Checks (computed from these results)", ""]
    for i, line in enumerate(vlines):  # blank lines around each list, for Markdown
        if i and line.startswith("- ") != vlines[i - 1].startswith("- "):
            md.append("")
        md.append(line)
    md += [""] if vlines else []
    md += [f"![{name}]({png})", ""]
    if sec.get("table_in"):  # the same points and columns as a table above: not again
        return md + [f"Its points are in the table under \"{sec['table_in']}\".", ""]
    summary = _err_summary(sec)
    md += [summary, ""] if summary else []
    return md + (_table_md(sec) if sec["rows"] else [])  # no empty tables


def _figure_html(sec):
    """One figure's HTML, as _figure_md."""
    name = sec["fig"].get("title") or sec["fig"]["id"]
    png = next((f for f in sec["files"] if f.endswith(".png")), sec["files"][0])
    h = [f"<h2>{htmlmod.escape(name)}</h2>"]
    for heading, text in claim_blocks(sec):
        h += [f"<h3>{htmlmod.escape(heading)}</h3>",
              f"<blockquote>{htmlmod.escape(text)}</blockquote>"]
    vlines = verdict_lines(sec)
    if vlines:
        h.append("<h3>Checks (computed from these results)</h3>")
    items = []
    for line in vlines:
        if line.startswith("- "):
            items.append(f"<li>{htmlmod.escape(line[2:])}</li>")
            continue
        if items:
            h.append("<ul>" + "".join(items) + "</ul>")
            items = []
        h.append(f"<p><b>{htmlmod.escape(line)}</b></p>")
    if items:
        h.append("<ul>" + "".join(items) + "</ul>")
    h.append(f"<img src='{htmlmod.escape(png)}' alt='{htmlmod.escape(name)}'>")
    h.append("<p>" + " ".join(f"<a href='{f}'>{f}</a>" for f in sec["files"]) + "</p>")
    if sec.get("table_in"):
        return h + [f"<p>Its points are in the table under "
                    f"&ldquo;{htmlmod.escape(sec['table_in'])}&rdquo;.</p>"]
    summary = _err_summary(sec)
    h += [f"<p>{htmlmod.escape(summary)}</p>"] if summary else []
    return h + (_table_html(sec) if sec["rows"] else [])


def mark_repeated_tables(sections):
    """A figure whose table holds the same points as an earlier figure's, and only columns
    that table has too (the timelines of an experiment whose bar chart tabled every metric),
    points to that table instead of repeating it: sets its 'table_in' to that figure's title."""
    shown = []
    for sec in sections:
        rows = {tuple(r[:2]) for r in sec["rows"]}
        cols = set(sec["header"][2:])
        for title, their_rows, their_cols in shown:
            if rows and rows == their_rows and cols <= their_cols:
                sec["table_in"] = title
                break
        else:
            if rows:
                shown.append((sec["fig"].get("title") or sec["fig"]["id"], rows, cols))


def mark_repeated_claims(sections):
    """A figure whose paper's claim (text and source) an earlier figure of the page quoted
    points to it instead: sets its 'claim_in' to that figure's title."""
    quoted = {}
    for sec in sections:
        key = (sec["source"], sec["claim"])
        if key in quoted:
            sec["claim_in"] = quoted[key]
        elif sec["claim"]:
            quoted[key] = sec["fig"].get("title") or sec["fig"]["id"]


def render(exp, sections):
    """Returns (markdown, html) for the whole report."""
    mark_repeated_tables(sections)
    mark_repeated_claims(sections)
    title = exp.spec.get("title") or exp.spec.get("name", "ServeLab report")
    md = [f"# {title}", ""] + [line + "\n" for line in intro_lines(exp)]
    h = [f"<!doctype html><html><head><meta charset='utf-8'><title>{htmlmod.escape(title)}"
         "</title><style>body{font-family:sans-serif;max-width:1100px;margin:auto}"
         "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;"
         "padding:2px 6px;text-align:right}blockquote{color:#444;border-left:3px solid #aaa;"
         "margin-left:0;padding-left:10px}img{max-width:100%}</style></head><body>",
         f"<h1>{htmlmod.escape(title)}</h1>"]
    h += [f"<p>{htmlmod.escape(line).replace('**', '')}</p>" for line in intro_lines(exp)]
    for sec in sections:
        md += _figure_md(sec)
        h += _figure_html(sec)
    md += cache_optimum.markdown(exp)
    h += cache_optimum.html(exp)
    # Only a page whose tables hold sim-vs-real errors explains them (not a simulation-only
    # page, nor a figure whose sim mode is a prediction with no error column).
    if any(h.endswith(" err") for sec in sections for h in sec["header"]):
        note = "Errors are (simulated - real) / real per point, over the mean of repetitions."
        md.append(note)
        h.append(f"<p>{note}</p>")
    h.append("</body></html>")
    return "\n".join(md) + "\n", "\n".join(h) + "\n"
