#!/usr/bin/python3
"""Test: the structural rules of every report page (issue 52, reports/page_rules.py), on pages
the generator writes from synthetic results: a fixture of its own, the weight store's
figures, and every experiment scripts/demo and scripts/rafiki-figures run, with its own
sweep, figures, checks and labels (shipped_fixture.py), and their index. No empty or repeated
table; the paper's claim (with its source) and the project's reading in separate sections,
the reading never under the paper's name; each check's line says what it computed and names
that quantity in its words; headers and cells in words; the index's summary in order and
coloured. The rules are themselves checked to catch pages that break them.

    check_page_structure.py [OUT_DIR ...]   # also the pages of real runs (scripts/demo's OUT)
"""
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
src = os.path.abspath(os.path.join(here, "..", "..", ".."))
sys.path.insert(0, os.path.join(src, "reports"))
import page_rules  # noqa: E402

empty_tables = page_rules.empty_tables
claim_sections = page_rules.claim_sections
check_lines = page_rules.check_lines
problems = page_rules.problems


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
    # Every experiment the demo and rafiki-figures run, on synthetic results, and their index.
    import shipped_fixture
    with tempfile.TemporaryDirectory() as tmp:
        for path in shipped_fixture.write_all(tmp):
            subprocess.run([sys.executable, os.path.join(src, "reports", "report.py"), path,
                            "--formats", "png"], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([sys.executable, os.path.join(src, "reports", "index.py"), tmp],
                       check=True, stdout=subprocess.DEVNULL)
        found = page_rules.main([tmp])
        assert found == 0, "the shipped experiments' pages break the rules (printed above)"
        # The rules catch a page that breaks them: a raw header, a repeated table, a sim-only
        # page with the sim-vs-real note, an index out of order.
        md = open(os.path.join(tmp, "ensemble-inception", "report", "report.md")).read()
        table = [t for _, t in page_rules.tables(md)][0]
        assert page_rules.repeated_tables(md + "\n" + "\n".join(table) + "\n"), "repeat passed"
        assert "SLO attainment sim" in md
        assert page_rules.raw_words(md.replace("SLO attainment sim", "slo_attainment sim"))
        assert page_rules.raw_words("| a | b |\n|---|---|\n| greedy one True | 1 |\n")
        with open(os.path.join(tmp, "ensemble-inception", "report", "report.md"), "a") as f:
            f.write(page_rules.ERRORS_NOTE + ".\n")
        assert page_rules.page_problems(os.path.join(tmp, "ensemble-inception"))
        index = os.path.join(tmp, "index.md")
        lines = open(index).read().split("\n")
        rows = [i for i, x in enumerate(lines) if x.startswith("| Rafiqi")]
        lines[rows[0]], lines[4] = lines[4], lines[rows[0]]
        open(index, "w").write("\n".join(lines))
        assert page_rules.index_problems(tmp), "an index out of order passed"
    # Pages of real runs named on the command line (scripts/demo's OUT, rafiki-figures' OUT).
    if sys.argv[1:]:
        assert page_rules.main(sys.argv[1:]) == 0, "pages of real runs break the rules"
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
