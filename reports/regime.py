#!/usr/bin/python3
"""Chooses a real-engine regime where batching pays, from a measured cost profile.

    regime.py PROFILE.yaml [--models a,b] [--max-batch 32] [--note DIR/regime.md]

For each candidate model of the profile (default: all) it takes the per-image cost of a batch
(mean batch latency / batch size) at every measured size up to --max-batch, and picks the
model whose cheapest batch saves the most per image against a single request. Its max batch
is the smallest size within --tolerance (10%) of that cheapest per-image cost: a shared
machine's profile is noisier than that, and a smaller batch waits less. Adaptive batching then
fills batches up to where they are cheap per image instead of growing into sizes where a CPU
batch costs more per image.
Prints the `servelab run` overrides (one `--set` argument per line) and writes a note for the
report page saying what was chosen and why, with the numbers. Exit status 1 when no model
saves anything by batching (the note says so; the overrides are printed anyway).
"""
import argparse
import os
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from evidence import batch_means  # noqa: E402

# The engine's LibTorch intra-op threads in real mode (EngineOptions::intra_op_threads); the
# profiler measures with the same number (servelab profile --threads, default 1).
ENGINE_THREADS = 1


def choose(models, max_batch, tolerance=0.1):
    """[(gain, name, max batch, per-image costs {b: ms})] best first, from profile entries:
    gain is batch 1's per-image cost over the cheapest one's."""
    ranked = []
    for name, entry in models.items():
        means = {b: m for b, m in batch_means(entry).items() if b <= max_batch}
        if 1 not in means:
            continue
        per = {b: m / b for b, m in means.items()}
        cheapest = min(per.values())
        best = min(b for b in per if per[b] <= cheapest * (1 + tolerance))
        ranked.append((per[1] / cheapest, name, best, per))
    return sorted(ranked, key=lambda r: -r[0])


def _costs(per, chosen):
    shown = sorted({b for b in per if b & (b - 1) == 0} | {min(per, key=per.get), max(per),
                                                           chosen})
    return ", ".join(f"{b}: {per[b]:.1f}" for b in shown)


def note(ranked, profile_path, source, tolerance):
    gain, name, best, per = ranked[0]
    machine = source.split(", batch sizes")[0]  # host and threads; the sizes are listed below
    lines = [f"Real-engine regime, chosen from this machine's measured profile "
             f"({os.path.basename(profile_path)}; {machine}) by reports/regime.py: the model "
             f"whose cheapest batch saves the most per image against a single request, with "
             f"the smallest batch within {tolerance:.0%} of that cost as the max batch, so that "
             f"batching can pay on this CPU."]
    for g, n, b, p in ranked:
        lines.append(f"{n}: per-image cost (ms) by batch size {_costs(p, b)}; the cheapest is "
                     f"{g:.2f}x cheaper per image than batch 1; max batch {b} "
                     f"({p[b]:.1f} ms per image).")
    if gain > 1.0:
        lines.append(f"Chosen: {name}, max batch {best}, {ENGINE_THREADS} LibTorch intra-op "
                     f"thread (real mode's engine runs one; the machine's other core serves the "
                     f"HTTP IO threads and the load generator). At most {gain:.2f}x the "
                     f"throughput of no batching can be expected from batching here, before "
                     f"request overheads; the paper's GPU gains far more.")
    else:
        lines.append(f"No candidate saves anything by batching on this machine; running "
                     f"{name} with max batch {best} anyway, where batching cannot pay.")
    return "\n\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("profile")
    ap.add_argument("--models", help="comma-separated candidates (default: all in the profile)")
    ap.add_argument("--max-batch", type=int, default=32)
    ap.add_argument("--tolerance", type=float, default=0.1,
                    help="max batch: the smallest within this fraction of the cheapest")
    ap.add_argument("--note", help="write the report note (Markdown paragraphs) here")
    a = ap.parse_args(argv)
    with open(a.profile) as f:
        prof = yaml.safe_load(f) or {}
    models = prof.get("models") or {}
    if a.models:
        wanted = a.models.split(",")
        missing = [m for m in wanted if m not in models]
        if missing:
            sys.exit(f"regime: {a.profile} has no entry for {', '.join(missing)}")
        models = {m: models[m] for m in wanted}
    ranked = choose(models, a.max_batch, a.tolerance)
    if not ranked:
        sys.exit(f"regime: no model in {a.profile} has a batch-1 cost")
    gain, name, best, _ = ranked[0]
    if a.note:
        with open(a.note, "w") as f:
            f.write(note(ranked, a.profile, prof.get("source", ""), a.tolerance))
    print(f"--set\nmodels=[{name}]\n--set\nengine.max_batch={best}")
    return 0 if gain > 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
