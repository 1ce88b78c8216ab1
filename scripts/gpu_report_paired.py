"""The P5b paired section of scripts/gpu-report: DIR/paired.json (bench_gpu --only paired),
where each variant was timed against the raw loop in short ABBA cycles. A point's verdict
compares the goal with the 95% interval of the median cycle ratio, so that it says "cannot
tell" where the spread of equal loops (the control's interval) is wider than the margin."""

GOAL = 0.95
COMPARISONS = [("control", "control (an equal raw loop)"),
               ("raw_worker_thread", "raw on a worker's thread"),
               ("executor", "executor"), ("engine_q2", "engine q2")]


def point_verdict(p):
    if p["low"] >= GOAL:
        return "holds"
    if p["high"] < GOAL:
        return "does not hold"
    return "cannot tell"


def fmt(p):
    return f"{p['median']:.3f} [{p['low']:.3f}, {p['high']:.3f}]"


def overall(verdicts):
    if all(v == "holds" for v in verdicts):
        return "holds"
    if any(v == "does not hold" for v in verdicts):
        return "does not hold"
    return "cannot tell"


def paired_section(paired):
    """The section's lines, and whether the one-worker goal holds at every point."""
    cycles, block = paired[0]["cycles"], paired[0]["block_s"]
    lines = ["## P5b paired: one worker against the raw loop, cycle by cycle", "",
             f"Each variant B alternated with the raw loop A (optimizer off, main thread) in "
             f"{cycles:.0f} cycles of four {block * 1e3:.0f} ms blocks (ABBA, then BAAB); a "
             "cycle's ratio is B's pace over A's, so drift that is linear within a cycle "
             "cancels. Each cell: the median cycle ratio [its 95% interval, from the cycles' "
             "order statistics]. The control is a second raw loop identical to A: its interval "
             "is how finely this machine can tell two loops apart. A point's verdict on the "
             f"goal ({GOAL}) for engine q2: *holds* where the interval lies at or above it, "
             "*does not hold* where it lies below, *cannot tell* otherwise.", "",
             "| model | batch | " + " | ".join(label for _, label in COMPARISONS)
             + " | engine q2 verdict |", "|---|---|" + "---|" * (len(COMPARISONS) + 1)]
    verdicts = []
    for r in paired:
        v = point_verdict(r["engine_q2"])
        verdicts.append(v)
        lines.append(f"| {r['model']} | {r['batch']:.0f} | "
                     + " | ".join(fmt(r[key]) for key, _ in COMPARISONS) + f" | {v} |")
    control_wide = [r for r in paired if r["control"]["low"] < GOAL]
    verdict = overall(verdicts)
    lines += ["", f"Verdict, the engine under load with one worker (paired): the goal "
              f"**{verdict}** ({verdicts.count('holds')} of {len(verdicts)} points hold, "
              f"{verdicts.count('does not hold')} do not, {verdicts.count('cannot tell')} "
              "cannot be told). The control's interval reaches below the goal at "
              f"{len(control_wide)} of {len(paired)} points."]
    if all("sched_a" in r["engine_q2"] for r in paired):
        lines += [""] + sched_table(paired)
    return lines, verdict != "does not hold"


def sched_table(paired):
    """The scheduler statistics of each comparison's blocks (medians over the blocks)."""
    def cell(p):
        a, b = p["sched_a"], p["sched_b"]
        return (f"{a['running']:.2f} → {b['running']:.2f} / "
                f"{a['waiting_for_cpu']:.3f} → {b['waiting_for_cpu']:.3f}")
    lines = ["Where the process's threads were during the blocks (A → B, per second of wall "
             "time, medians over the blocks): threads running / threads runnable but waiting "
             "for a CPU (the kernel's schedstat, all threads of the process). Steal is the "
             "machine's, during engine q2's blocks.", "",
             "| model | batch | " + " | ".join(label for _, label in COMPARISONS) + " | steal |",
             "|---|---|" + "---|" * (len(COMPARISONS) + 1)]
    for r in paired:
        lines.append(f"| {r['model']} | {r['batch']:.0f} | "
                     + " | ".join(cell(r[key]) for key, _ in COMPARISONS)
                     + f" | {r['engine_q2']['sched_b']['steal']:.3f} |")
    return lines
