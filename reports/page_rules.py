#!/usr/bin/python3
"""The structural rules of the report pages and the index (issue 52), checked on what the
generator wrote:

    page_rules.py OUT_DIR [OUT_DIR ...]   # every OUT_DIR/*/report/report.md and OUT_DIR/index.md

Per page: no empty table and no table twice; per figure the paper's claim under its own
heading that names the paper (as it spells itself), a section or a figure, and the project's
reading in a section of its own, never under the paper's name; each check a line that says
what it computed, naming the check's metric, and words that name what it compares
(wording.py); a check that could not be measured says why; table headers and cells in words
(no config keys such as slo_attainment, no `True`, no YAML maps); a "This run used" line
generated from the runs' resolved config; the sim-vs-real errors note only over tables that
hold errors; every plot the page shows is there. The index: a summary table first, every
results folder in it, papers in order, each verdict coloured in the HTML.

Prints one line per problem and exits 1 when there is any (scripts/demo, scripts/rafiki-figures
and scripts/store-figures run it over what they wrote; tests/integration/reports/
check_page_structure.py runs it over the generator's pages of synthetic results).
"""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import wording  # noqa: E402

CHECK_LINE = re.compile(r"^- (holds|does not hold here|within noise|not measured): (.*?): "
                        r"computed: (.*)$")
# A header or cell that is a config key or a raw value, not words.
RAW = re.compile(r"\b[a-z]+_[a-z]+(_[a-z]+)*\b|\bTrue\b|\bFalse\b|[{}]")
ERRORS_NOTE = "Errors are (simulated - real) / real per point"


def tables(md):
    """[(heading line above it, [table lines])] of a Markdown page."""
    out, lines, i = [], md.splitlines(), 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|--"):
            start = i
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                i += 1
            out.append((lines[start - 1] if start else "", lines[start:i]))
        else:
            i += 1
    return out


def empty_tables(md):
    """Markdown tables with a header and separator but no row."""
    return [f"empty table under '{above[:60]}'" for above, t in tables(md) if len(t) < 3]


def repeated_tables(md):
    """A table that repeats an earlier one: the same rows (their first two cells: the point)
    and no column the earlier table lacks."""
    seen, out = [], []
    for _, t in tables(md):
        rows = {tuple(_cells(r)[:2]) for r in t[2:]}
        cols = set(_cells(t[0])[2:])
        if any(rows == r and cols <= c for r, c in seen):
            out.append(f"table repeated: '{t[0][:60]}'")
        seen.append((rows, cols))
    return out


def repeated_claims(md):
    """The same paper's claim quoted in full twice on one page (a later figure points to the
    first quote instead)."""
    quotes = re.findall(r"^### Paper's claim[^\n]*\n\n> (.+)$", md, flags=re.M)
    full = [q for q in quotes if not q.startswith("As quoted under")]
    return [f"claim quoted again: '{q[:60]}'" for i, q in enumerate(full) if q in full[:i]]


def _cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def raw_words(md, names=()):
    """Table headers that are config keys (slo_attainment) and cells that are raw values
    (True, a YAML map); `names` are words allowed as they are (model names)."""
    out = []
    for _, t in tables(md):
        for c in _cells(t[0]):
            if RAW.search(c):
                out.append(f"table header not in words: '{c}'")
        for row in t[2:]:
            for c in _cells(row):
                text = c
                for n in names:
                    text = text.replace(n, "")
                if re.search(r"\bTrue\b|\bFalse\b|[{}]", text):
                    out.append(f"table cell not in words: '{c}'")
    return sorted(set(out))


def figure_blocks(md):
    """{figure title: its Markdown} from the page's '## ' sections."""
    parts = re.split(r"^## ", md, flags=re.M)[1:]
    return {p.split("\n", 1)[0].strip(): p for p in parts}


def claim_sections(md, reading, paper=None):
    """The paper's claim under its own heading with a source; the reading apart from it."""
    out = []
    blocks = re.split(r"^### ", md, flags=re.M)
    ours_blocks = [b for b in blocks if b.startswith("Our reading")]
    paper_blocks = [b for b in blocks if b.startswith("Paper's claim")]
    if not paper_blocks:
        out.append("no 'Paper's claim' section")
    for b in paper_blocks:
        if not re.match(r"Paper's claim \(.*(section|figure).*\)", b):
            out.append("the paper's claim names no section or figure")
        if paper and not b.startswith(f"Paper's claim ({paper}"):
            out.append(f"the paper's claim does not name the paper as it spells itself ({paper})")
        if reading and reading in b:
            out.append("our reading stands under the paper's name")
    if reading and not any(reading in b for b in ours_blocks):
        out.append("our reading has no section of its own")
    return out


def check_lines(md, checks, labels=None):
    """Each check's page line says what it computed, and its words name that quantity (with
    the experiment's `labels:`, the words its pages give sweep values); a check that could
    not be measured says why (in parentheses after what it read)."""
    out = []
    lines = [m for m in (CHECK_LINE.match(x) for x in md.splitlines()) if m]
    for c in checks:
        says = " ".join(str(c["says"]).split())
        mine = [m for m in lines if m.group(2) == says]
        if not mine:
            out.append(f"check '{says}' has no line that says what it computed")
        metrics = [c.get("metric", "throughput_rps")]
        sides = [c.get(k) for k in ("of", "over") if isinstance(c.get(k), dict)]
        if sides and all("metric" in x for x in sides):  # p99 over p80: each side's own
            metrics = [x["metric"] for x in sides]
        for m in mine:
            for metric in metrics:
                words = wording.METRIC_WORDS.get(metric, [""])   # any of its names
                if not any(w in m.group(3).lower() for w in words):
                    out.append(f"check '{says}': its computation does not name {words[0]}")
            if m.group(1) == "not measured" and "(" not in m.group(3):
                out.append(f"check '{says}': not measured, and the page does not say why")
        out += [f"check '{says}': {p}" for p in wording.problems(c, labels)]
    return out


def problems(md, spec_fig, labels=None, paper=None):
    """The rules of one figure's section (or of a page with that one figure)."""
    return (empty_tables(md) + claim_sections(md, spec_fig.get("our_reading"), paper)
            + check_lines(md, spec_fig.get("checks") or [], labels))


def _has_run_configs(results_dir):
    return bool(glob.glob(os.path.join(results_dir, "runs", "*", "config.yaml")))


def page_problems(results_dir):
    """Every rule over RESULTS_DIR/report/report.md, judged against the experiment it ran."""
    import yaml

    import page
    path = os.path.join(results_dir, "report", "report.md")
    if not os.path.exists(path):
        return [f"{results_dir}: no report page (report/report.md)"]
    md = open(path).read()
    spec = {}
    # The experiment as the page judged it: report.py --figures-from leaves its copy beside
    # the page; else the one the run saved.
    for where in (os.path.join(results_dir, "report"), results_dir):
        if os.path.exists(os.path.join(where, "experiment.yaml")):
            spec = yaml.safe_load(open(os.path.join(where, "experiment.yaml"))) or {}
            break
    paper = page.paper_name(spec) if spec.get("paper") else None
    out = empty_tables(md) + repeated_tables(md) + repeated_claims(md)
    models = [m if isinstance(m, str) else (m or {}).get("name", "") for m in
              spec.get("models") or []]
    out += raw_words(md, [m for m in models if m])
    blocks = figure_blocks(md)
    for fig in spec.get("figures") or []:
        title = fig.get("title") or fig.get("id")
        block = blocks.get(title)
        if block is None:
            out.append(f"figure '{title}' has no section")
            continue
        out += [f"figure '{title}': {p}" for p in
                claim_sections(block, " ".join(str(fig.get("our_reading") or "").split()),
                               paper)
                + check_lines(block, fig.get("checks") or [], spec.get("labels"))]
    for img in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md):
        if not os.path.exists(os.path.join(results_dir, "report", img)):
            out.append(f"plot {img} is shown but not there")
    has_errors = any(h.endswith(" err") for _, t in tables(md) for h in _cells(t[0]))
    if ERRORS_NOTE in md and not has_errors:
        out.append("the sim-vs-real errors note stands on a page with no error column")
    if _has_run_configs(results_dir) and "\nThis run used: " not in md:
        out.append("no 'This run used' line (generated from the runs' resolved config)")
    return [f"{os.path.basename(os.path.normpath(results_dir))}: {p}" for p in out]


def index_problems(out_dir):
    """The index: a summary table first, each results folder in it, papers in order, every
    verdict cell coloured in the HTML."""
    path = os.path.join(out_dir, "index.md")
    if not os.path.exists(path):
        return [f"{out_dir}: no index.md"]
    md = open(path).read()
    out = empty_tables(md)
    found = tables(md)
    if not found or not found[0][1][0].startswith("| paper | figure |"):
        return out + ["index: no summary table first"]
    rows = [_cells(r) for r in found[0][1][2:]]
    folders = [os.path.basename(os.path.dirname(d)) for d in
               glob.glob(os.path.join(out_dir, "*", "results.db"))]
    for f in folders:
        if not any(r[3] == f for r in rows):
            out.append(f"index: results folder {f} is not in the summary")
    papers = [r[0] for r in rows]
    if papers != sorted(papers, key=str.lower):
        out.append(f"index: papers out of order: {', '.join(dict.fromkeys(papers))}")
    html_path = os.path.join(out_dir, "index.html")
    html = open(html_path).read() if os.path.exists(html_path) else ""
    coloured = len(re.findall(r"<td style='background:#[0-9a-f]{6}'>", html))
    if coloured < len(rows):
        out.append(f"index: {len(rows) - coloured} of {len(rows)} verdict cells not coloured")
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        sys.exit("usage: page_rules.py OUT_DIR [OUT_DIR ...]")
    found = []
    for out_dir in argv:
        dirs = sorted(os.path.dirname(d) for d in
                      glob.glob(os.path.join(out_dir, "*", "results.db")))
        if os.path.exists(os.path.join(out_dir, "results.db")):
            dirs = [out_dir]   # one results folder
        for d in dirs:
            found += page_problems(d)
        if os.path.exists(os.path.join(out_dir, "index.md")):
            found += index_problems(out_dir)
    for p in found:
        print(p)
    print(f"page rules: {len(found)} problem(s) in {', '.join(argv)}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
