#!/usr/bin/python3
"""Chooses a real-engine regime where batching pays, from a measured cost profile.

    regime.py PROFILE.yaml [--models a,b] [--max-batch 32] [--note DIR/regime.md]
    regime.py PROFILE.yaml --list                      # "model max_batch" per candidate
    regime.py PROFILE.yaml --pilots DIR --note ...     # choose by the engine's pilot runs

For each candidate model of the profile (default: all) it takes the per-image cost of a batch
(mean batch latency / batch size) at every measured size up to --max-batch, and picks the
model whose cheapest batch saves the most per image against a single request. Its max batch
is the smallest size within --tolerance (10%) of that cheapest per-image cost: a shared
machine's profile is noisier than that, and a smaller batch waits less. Adaptive batching then
fills batches up to where they are cheap per image instead of growing into sizes where a CPU
batch costs more per image.
With --pilots, DIR/<model> is a results folder of a short real run of each candidate at its
max batch (both batching policies at one concurrency): the engine's own batches can cost more
per image than the profiler measured through the same executor, so the final choice is the
candidate whose rafiqi-ewma throughput over the baseline's (gre) was highest on the engine.
Prints the `servelab run` overrides (one `--set` argument per line) and writes a note for the
report page saying what was chosen and why, with the numbers. Exit status 1 when no model
gains by batching (the note says so; the overrides are printed anyway).
"""
import argparse
import os
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from evidence import batch_means  # noqa: E402
import results_db  # noqa: E402

# The engine's LibTorch intra-op threads in real mode (EngineOptions::intra_op_threads); the
# profiler measures with the same number (servelab measure --threads, default 1).
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


def pilot_gain(results_dir):
    """(rafiqi-ewma throughput / the baseline's, rafiqi-ewma's, the baseline's, concurrency) of
    a pilot's real runs, or None when the folder lacks them. The baseline is gre (the GPU REST
    Engine), or none in pilots run before gre was in the sweep."""
    try:
        exp = results_db.load(results_dir)
    except SystemExit:
        return None
    thr = {}  # policy -> (throughput, concurrency) at its highest concurrency
    for pid, pt in exp.points.items():
        pol = pt["params"].get("policies.batching.name")
        c = pt["params"].get("workload.arrival.concurrency") or 0
        if pol not in thr or c > thr[pol][1]:
            thr[pol] = (exp.value("real", pid, "throughput_rps")[0], c)
    base = "gre" if "gre" in thr else "none"
    if "rafiqi-ewma" not in thr or base not in thr or not thr[base][0] > 0:
        return None
    return (thr["rafiqi-ewma"][0] / thr[base][0], thr["rafiqi-ewma"][0], thr[base][0],
            thr[base][1])


def _costs(per, chosen):
    shown = sorted({b for b in per if b & (b - 1) == 0} | {min(per, key=per.get), max(per),
                                                           chosen})
    return ", ".join(f"{b}: {per[b]:.1f}" for b in shown)


def note(ranked, profile_path, source, tolerance, pilots=None):
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
    if pilots:
        lines.append("Then a short pilot of each on the real engine (one run of each policy: "
                     "a rough measure on a shared machine), rafiqi-ewma against the GPU REST Engine baseline at its max "
                     "batch, chose by the engine's own throughput: " + "; ".join(
                         f"{n}: {p[1]:.0f} against {p[2]:.0f} req/s at {p[3]} in flight, "
                         f"{p[0]:.2f}x" if p else f"{n}: no pilot result"
                         for n, p in pilots.items()) + ".")
        gain = (pilots.get(name) or (0,))[0]
    if gain > 1.0:
        lines.append(f"Chosen: {name}, max batch {best}, {ENGINE_THREADS} LibTorch intra-op "
                     f"thread (real mode's engine runs one; the machine's other core serves the "
                     f"HTTP IO threads and the load generator). Batching gained {gain:.2f}x the "
                     f"throughput of no batching here{' on the engine' if pilots else ' on the profile, before request overheads'}; "
                     f"the paper's GPU gains far more.")
    else:
        lines.append(f"No candidate gained by batching on this machine; running {name} with "
                     f"max batch {best} anyway, where it came closest.")
    return "\n\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("profile")
    ap.add_argument("--models", help="comma-separated candidates (default: all in the profile)")
    ap.add_argument("--max-batch", type=int, default=32)
    ap.add_argument("--tolerance", type=float, default=0.1,
                    help="max batch: the smallest within this fraction of the cheapest")
    ap.add_argument("--note", help="write the report note (Markdown paragraphs) here")
    ap.add_argument("--list", action="store_true",
                    help="print 'model max_batch' per candidate, best first, and exit")
    ap.add_argument("--pilots", help="folder of pilot results folders, one per model")
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
    if a.list:
        print("\n".join(f"{n} {b}" for _, n, b, _ in ranked))
        return 0
    pilots = None
    if a.pilots:
        pilots = {n: pilot_gain(os.path.join(a.pilots, n)) for _, n, _, _ in ranked}
        measured = [r for r in ranked if pilots[r[1]]]
        if measured:  # best engine gain first; candidates without a pilot result last
            ranked = sorted(measured, key=lambda r: -pilots[r[1]][0]) + \
                [r for r in ranked if not pilots[r[1]]]
    gain, name, best, _ = ranked[0]
    if pilots and pilots.get(name):
        gain = pilots[name][0]
    if a.note:
        with open(a.note, "w") as f:
            f.write(note(ranked, a.profile, prof.get("source", ""), a.tolerance, pilots))
    print(f"--set\nmodels=[{name}]\n--set\nengine.max_batch={best}")
    return 0 if gain > 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
