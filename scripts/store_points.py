"""TrIMS figures 8, 9 and 10's points (scripts/store_figures.py) from first answers, measured
(a classify answer: wall_ms, load_ms, load_parts_ms, compute_ms, queue_ms) or predicted in the
same shape (scripts/store_predictions.py), as rows in `servelab run`'s layout
(store_results.write_results) of one mode and repetition."""
import statistics

import store_results as sr


def speedup_rows(model, answers, mode, rep):
    """Figure 8's points of one model: each case's first answer over no sharing's, and the
    ideal (no sharing's first answer less its load). `answers`: {case: (answer, hot ms)}."""
    base, base_hot = answers["none"]
    rows = [{"params": {"model": model, "case": case}, "mode": mode, "repetition": rep,
             "metrics": {"speedup": base["wall_ms"] / ans["wall_ms"],
                         "first_answer_ms": ans["wall_ms"], "hot_ms": hot}}
            for case, (ans, hot) in answers.items()]
    ideal_ms = base["wall_ms"] - sr.time_split(base)["load"]
    rows.append({"params": {"model": model, "case": "ideal"}, "mode": mode, "repetition": rep,
                 "metrics": {"speedup": base["wall_ms"] / ideal_ms, "first_answer_ms": ideal_ms,
                             "hot_ms": base_hot}})
    return rows


def split_rows(model, answers, mode, rep):
    """Figure 9's points of one model: its first answer without and with the store."""
    base = answers["none"][0]
    return [split_run(model, shared, mode, rep, ans, base["wall_ms"])
            for shared, ans in ((False, base), (True, answers["store-warm"][0]))]


def split_run(model, shared, mode, rep, answer, base_ms):
    """One first answer's parts, each as a share of the no-store first answer's time."""
    parts = sr.time_split(answer)
    metrics = {f"share_{p}": parts[p] / base_ms for p in sr.PARTS + ("load",)}
    metrics["first_answer_ms"] = answer["wall_ms"]
    return {"params": {"model": model, "weight_store": shared}, "mode": mode,
            "repetition": rep, "metrics": metrics}


def mean_split_runs(split):
    """The `mean` point per mode, repetition and case: the models' mean shares and the
    geometric mean of their first-answer times (so a ratio of two of them is the geometric
    mean of the models' speedups, as TrIMS reports)."""
    out = []
    for mode, rep in sorted({(r["mode"], r["repetition"]) for r in split}):
        for shared in (False, True):
            rows = [r["metrics"] for r in split if r["mode"] == mode and
                    r["repetition"] == rep and r["params"]["weight_store"] == shared]
            metrics = {k: statistics.mean(m[k] for m in rows) for k in rows[0]
                       if k.startswith("share_")}
            metrics["first_answer_ms"] = sr.geometric_mean([m["first_answer_ms"] for m in rows])
            out.append({"params": {"model": "mean", "weight_store": shared}, "mode": mode,
                        "repetition": rep, "metrics": metrics})
    return out


def large_rows(model, answers, mode, rep):
    """Figure 10's points of one large model: the first answer resident in the store and its
    ideal (no load) as speedups over no sharing, beside the share of the no-sharing first
    answer that is compute. `answers`: {case: answer}."""
    base = answers["none"]
    parts = sr.time_split(base)
    times = {"none": base["wall_ms"], "store-warm": answers["store-warm"]["wall_ms"],
             "ideal": base["wall_ms"] - parts["load"]}
    rows = []
    for case, ms in times.items():
        metrics = {"speedup": base["wall_ms"] / ms, "first_answer_ms": ms}
        if case == "none":  # a property of the no-sharing answer: plotted once
            metrics["compute_share"] = parts["compute"] / base["wall_ms"]
        rows.append({"params": {"model": model, "case": case}, "mode": mode,
                     "repetition": rep, "metrics": metrics})
    return rows
