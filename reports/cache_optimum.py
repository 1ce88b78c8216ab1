"""The cache against its offline optimum: where a run's summary states "cache_optimum" (the
simulator's executing tier, when it is limited), a table of each point's loads into the tier
beside the fewest loads any eviction policy could have made on the same accesses (Belady's
MIN; bounded from both sides where the models' sizes differ, results/offline_cache.h), and
their ratio. Means over the repetitions."""
import html as htmlmod
import math

import verdict

TITLE = "The cache against its offline optimum"
NOTE = ("Each run's executing tier against the fewest loads any eviction policy could have "
        "made on the same accesses (the models of its batches in the order they ran, from the "
        "models it held at the start): Belady's MIN, exact for equal sizes; for unequal sizes "
        "the optimum lies between a lower bound (MIN with as many slots as the smallest models "
        "that fit) and a feasible schedule. Loads over the optimum: the run's loads over the "
        "lower bound (1.00: no policy could have loaded less).")


def _count(v):
    return "-" if math.isnan(v) else f"{v:.0f}"


def rows(exp):
    """[[point, mode, loads, optimum, loads over optimum]] for the points that state one."""
    out = []
    for pid in sorted(exp.points):
        for mode in exp.modes:
            lower = exp.value(mode, pid, "optimum_lower")
            if lower[2] == 0:
                continue
            upper = exp.value(mode, pid, "optimum_upper")[0]
            loads = exp.value(mode, pid, "optimum_loads")[0]
            ratio = exp.value(mode, pid, "loads_over_optimum")[0]
            bound = (_count(lower[0]) if _count(lower[0]) == _count(upper)
                     else f"{_count(lower[0])} to {_count(upper)}")
            point = exp.points[pid]
            words = verdict.point_words(exp, point["params"]) or point["label"] or str(pid)
            out.append([words, mode, _count(loads), bound,
                        "-" if math.isnan(ratio) else f"{ratio:.2f}"])
    return out


HEADER = ["point", "mode", "loads", "fewest possible", "loads over the optimum"]


def markdown(exp):
    table = rows(exp)
    if not table:
        return []
    return ([f"## {TITLE}", "", NOTE, "", "| " + " | ".join(HEADER) + " |",
             "|" + "---|" * len(HEADER)]
            + ["| " + " | ".join(r) + " |" for r in table] + [""])


def html(exp):
    table = rows(exp)
    if not table:
        return []
    cell = lambda tag, c: f"<{tag}>{htmlmod.escape(c)}</{tag}>"
    return ([f"<h2>{TITLE}</h2>", f"<p>{htmlmod.escape(NOTE)}</p>",
             "<table><tr>" + "".join(cell("th", c) for c in HEADER) + "</tr>"]
            + ["<tr>" + "".join(cell("td", c) for c in r) + "</tr>" for r in table]
            + ["</table>"])
