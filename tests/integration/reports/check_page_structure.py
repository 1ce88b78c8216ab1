#!/usr/bin/python3
"""Test: the structural rules of every report page (issue 52), on pages the generator writes
from a synthetic results folder: no empty table; the paper's claim (with its source) and the
project's reading in separate sections, the reading never under the paper's name; each
check's line says what it computed and names that quantity in its words. The rules are
themselves checked to catch pages that break them."""
import os
import re
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
src = os.path.abspath(os.path.join(here, "..", "..", ".."))
sys.path.insert(0, os.path.join(src, "reports"))
import wording  # noqa: E402

CHECK_LINE = re.compile(r"^- (holds|does not hold here|within noise|not measured): (.*?): "
                        r"computed: (.*)$")


def empty_tables(md):
    """Markdown tables with a header and separator but no row."""
    lines, out = md.splitlines(), []
    for i, line in enumerate(lines):
        if line.startswith("|---") or line.startswith("|--"):
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if not nxt.startswith("|"):
                out.append(f"empty table under '{lines[i - 1][:60]}'")
    return out


def claim_sections(md, reading):
    """The paper's claim under its own heading with a source; the reading apart from it."""
    out = []
    blocks = re.split(r"^### ", md, flags=re.M)
    paper = [b for b in blocks if b.startswith("Paper's claim")]
    ours = [b for b in blocks if b.startswith("Our reading")]
    if not paper:
        out.append("no 'Paper's claim' section")
    for b in paper:
        if not re.match(r"Paper's claim \(.*(section|figure).*\)", b):
            out.append("the paper's claim names no section or figure")
        if reading and reading in b:
            out.append("our reading stands under the paper's name")
    if reading and not any(reading in b for b in ours):
        out.append("our reading has no section of its own")
    return out


def check_lines(md, checks, labels=None):
    """Each check's page line says what it computed, and its words name that quantity (with
    the experiment's `labels:`, the words its pages give sweep values)."""
    out = []
    lines = [m for m in (CHECK_LINE.match(x) for x in md.splitlines()) if m]
    for c in checks:
        says = " ".join(c["says"].split())
        mine = [m for m in lines if m.group(2) == says]
        if not mine:
            out.append(f"check '{says}' has no line that says what it computed")
        for m in mine:
            label = wording.METRIC_WORDS.get(c.get("metric", "throughput_rps"), [""])[0]
            if label not in m.group(3).lower():
                out.append(f"check '{says}': its computation does not name {label}")
        out += [f"check '{says}': {p}" for p in wording.problems(c, labels)]
    return out


def problems(md, spec_fig, labels=None):
    return (empty_tables(md) + claim_sections(md, spec_fig.get("our_reading"))
            + check_lines(md, spec_fig.get("checks") or [], labels))


def main():
    import yaml
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, os.path.join(here, "make_fixture.py"), tmp], check=True)
        subprocess.run([sys.executable, os.path.join(src, "reports", "report.py"), tmp,
                        "--formats", "png"], check=True, stdout=subprocess.DEVNULL)
        md = open(os.path.join(tmp, "report", "report.md")).read()
        fig = yaml.safe_load(open(os.path.join(tmp, "experiment.yaml")))["figures"][0]
    found = problems(md, fig)
    assert not found, "\n".join(found)
    # The rules catch a page that breaks them.
    reading = fig["our_reading"]
    merged = md.replace("### Our reading", "and our reading")
    assert claim_sections(merged, reading), "a reading under the paper's claim passed"
    assert empty_tables("| a | b |\n|---|---|\n\ntext\n"), "an empty table passed"
    bad = dict(fig["checks"][1], says="batching beats none at 16 in flight")
    assert check_lines(md, [bad]), "a check whose words miss its metric passed"
    # The weight store's figures (tests/integration/store_figures/fixture.py) keep the rules.
    sys.path.insert(0, os.path.join(here, "..", "store_figures"))
    import fixture as store_fixture
    with tempfile.TemporaryDirectory() as tmp:
        for path in store_fixture.write_all(tmp):
            subprocess.run([sys.executable, os.path.join(src, "reports", "report.py"), path,
                            "--formats", "png"], check=True, stdout=subprocess.DEVNULL)
            md = open(os.path.join(path, "report", "report.md")).read()
            store_spec = yaml.safe_load(open(os.path.join(path, "experiment.yaml")))
            for store_fig in store_spec["figures"]:
                found = problems(md, store_fig, store_spec.get("labels"))
                assert not found, path + ":\n" + "\n".join(found)
    # The run's own setting is generated from its resolved config, whatever the file's text.
    import page
    from results_db import Experiment
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "runs", "p0"))
        with open(os.path.join(tmp, "runs", "p0", "config.yaml"), "w") as f:
            f.write("models: [mobilenet_v3_small]\nengine: {max_batch: 4, workers: 1}\n"
                    "workload: {requests: 400}\n")
        runs = [{"status": "ok", "dir": "runs/p0", "point_id": 0, "mode": "sim"}]
        exp = Experiment({"scaled_down": "squeezenet1_1, max batch 32, 800 requests x 3"},
                         {0: {"params": {}, "label": "p"}}, {}, runs, tmp)
        used = page.as_run(exp)
    assert used == ("This run used: model mobilenet_v3_small; workers 1; max batch 4; "
                    "400 requests a run; 1 repetition per point."), used
    check_tick_labels()
    print("page structure ok")


def check_tick_labels():
    """Tick labels that would run into each other are turned until none overlaps."""
    import plots
    f, ax = plots.plt.subplots(figsize=(3, 2))
    names = [f"policy number {i}" for i in range(12)]
    ax.bar(range(12), range(12))
    ax.set_xticks(range(12))
    ax.set_xticklabels(names)
    f.canvas.draw()
    assert plots.overlapping_tick_labels(f, ax), "crowded labels were not seen to overlap"
    plots._untangle_tick_labels(f, [ax])
    left = plots.overlapping_tick_labels(f, ax)
    assert not left, f"tick labels still overlap: {left[:3]}"
    plots.plt.close(f)


if __name__ == "__main__":
    main()
