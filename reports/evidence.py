"""The measured reason next to a verdict: what the cost profile a run used says.

A figure names the evidence it needs (`evidence: [batch_cost]` or `[load_cost]`); each kind
reads the profile the runs used (the absolute `profile:` path in a run's config.yaml) and the
stored summaries, and returns sentences for the page:

- batch_cost: per-image cost by batch size (a batch's mean latency / its size) up to the max
  batch, and what it was at the mean batch size each series ran at its highest load. Batching
  raises throughput only where a batch costs less per image than a single request.
- load_cost: a model load against a batch of one, and the loads per request the runs paid.
- offered_load, burst_floor, service_floor: a cluster's (evidence_cluster.py).
"""
import csv
import math
import os
import statistics

import yaml

import plots


def _run_config(exp, mode):
    """The resolved config.yaml of the first successful run of `mode`, or None."""
    for r in exp.runs:
        if r.get("mode") != mode or r.get("status") != "ok" or not r.get("dir"):
            continue
        path = r["dir"] if os.path.isabs(r["dir"]) else os.path.join(exp.dir or "", r["dir"])
        try:
            with open(os.path.join(path, "config.yaml")) as f:
                return yaml.safe_load(f) or {}
        except OSError:
            continue
    return None


def _profile_model(config):
    models = config.get("models")
    if isinstance(models, dict):
        return models.get("profile_model")
    if isinstance(models, list) and models:
        m = models[0]
        return m if isinstance(m, str) else (m.get("profile_model") or m.get("name"))
    return None


def _load_profile(config):
    """(path, model name, that model's profile entry) or None when it cannot be read."""
    path, name = config.get("profile"), _profile_model(config)
    if not path or not name:
        return None
    try:
        with open(path) as f:
            entry = (yaml.safe_load(f) or {}).get("models", {}).get(name)
    except OSError:
        return None
    return (path, name, entry) if entry else None


def batch_means(entry):
    """{batch size: mean latency ms} from a profile entry."""
    return {int(c["batch"]): float(c["mean"]) for c in entry.get("batch_latency_ms", [])}


def per_image(means, b):
    """Per-image cost (ms) at batch size b, interpolated linearly between measured sizes as the
    simulator does (extrapolated from the last two beyond the largest)."""
    sizes = sorted(means)
    if b in means:
        return means[b] / b
    if len(sizes) == 1:
        return means[sizes[0]] / b
    lo = max([s for s in sizes if s < b] or sizes[:1])
    hi = min([s for s in sizes if s > b] or sizes[-1:])
    if lo == hi:
        lo, hi = (sizes[-2], sizes[-1]) if b > sizes[-1] else (sizes[0], sizes[1])
    lat = means[lo] + (means[hi] - means[lo]) * (b - lo) / (hi - lo)
    return max(lat, 0.0) / b


def _shown_sizes(means, max_batch):
    sizes = [s for s in sorted(means) if s <= max_batch]
    best = min(sizes, key=lambda s: means[s] / s)
    pick = {s for s in sizes if s & (s - 1) == 0} | {best, sizes[0], sizes[-1]}
    if max_batch > sizes[-1]:
        pick.add(max_batch)
    return sorted(pick)


def engine_batch_costs(exp, mode):
    """[(batch size, median ms per image)] over the real runs' records (finish - start per
    request, i.e. the batch's compute plus the answer's way back); empty for other modes."""
    if mode != "real":
        return []
    by_size = {}
    for r in exp.runs:
        if r.get("mode") != "real" or r.get("status") != "ok" or not r.get("dir"):
            continue
        path = r["dir"] if os.path.isabs(r["dir"]) else os.path.join(exp.dir or "", r["dir"])
        try:
            with open(os.path.join(path, "requests.csv")) as f:
                for row in csv.DictReader(f):
                    if row.get("status") == "ok" and row.get("start") and row.get("batch_size"):
                        b = int(row["batch_size"])
                        by_size.setdefault(b, []).append(
                            (float(row["finish"]) - float(row["start"])) * 1e3 / b)
        except (OSError, ValueError, KeyError):
            continue
    return [(b, statistics.median(v)) for b, v in sorted(by_size.items()) if len(v) >= 8]


def _batches_run(exp, fig, mode, means, points, xs, series):
    """The batches the runs made: at the points the failed checks read where given (so the
    reason is about those checks), else each series at its highest load."""
    ran = []
    if points:
        for pid in points:
            b = exp.value(mode, pid, "mean_batch_size")[0]
            if not math.isnan(b) and b > 0:
                name = ", ".join(f"{plots.short(k)} {v:g}" if plots._is_number(v)
                                 else plots.words(exp, k, v)
                                 for k, v in exp.points[pid]["params"].items())
                ran.append(f"{name}: mean batch {b:.1f}, "
                           f"{per_image(means, max(1, round(b))):.1f} ms per image")
        return (" At the points the failed checks read: " + "; ".join(ran) + ".") if ran else ""
    for label, by_x in series.items():
        top = max((x for x in xs if x in by_x), default=None,
                  key=lambda x: x if plots._is_number(x) else 0)
        if top is None:
            continue
        b = exp.value(mode, by_x[top], "mean_batch_size")[0]
        if not math.isnan(b) and b > 0:
            ran.append(f"{label or 'runs'} at {plots.value_label(top)}: mean batch {b:.1f}, "
                       f"{per_image(means, max(1, round(b))):.1f} ms per image")
    return (" At the highest load: " + "; ".join(ran) + ".") if ran else ""


def batch_cost(exp, fig, modes, points=None):
    lines = []
    for mode in modes:
        config = _run_config(exp, mode)
        prof = _load_profile(config) if config else None
        if not prof:
            continue
        path, name, entry = prof
        means = batch_means(entry)
        max_batch = int((config.get("engine") or {}).get("max_batch") or max(means))
        sizes = _shown_sizes(means, max_batch)
        costs = ", ".join(f"{s}: {per_image(means, s):.1f}" for s in sizes)
        best = min(range(1, max_batch + 1), key=lambda s: per_image(means, s))
        one = per_image(means, 1)
        extra = " (beyond the largest measured size, extrapolated)" if max_batch > max(means) \
            else ""
        text = (f"{mode}: profile {os.path.basename(path)}, {name}: per-image cost (ms) by batch "
                f"size {costs}{extra}. The cheapest is batch {best} at "
                f"{per_image(means, best):.1f} ms")
        if best == 1:
            text += ": no batch costs less per image than a single request."
        else:
            text += (f", {one / per_image(means, best):.2f}x cheaper per image than a single "
                     f"request ({one:.1f} ms).")
        xs, series = plots.figure_series(exp, fig)
        text += _batches_run(exp, fig, mode, means, points, xs, series)
        over = entry.get("request_overhead_ms") or {}
        outside = float(over.get("before") or 0) + float(over.get("after") or 0)
        quantum = float((config.get("engine") or {}).get("quantum_ms") or 0)
        if outside > 0 or quantum > 0:
            cycle = means.get(1, one) + outside + quantum / 2
            text += (f" At 1 in flight the worker idles while the request is outside its batch "
                     f"({outside:.1f} ms of HTTP and preprocessing)"
                     + (f" and until the next quantum tick (on average {quantum / 2:g} ms of "
                        f"{quantum:g})" if quantum > 0 else "")
                     + f": about {1000 / cycle:.0f} req/s with batches of 1.")
        scales = [exp.value("sim", p, "cost_scale")[0] for p in exp.points]
        scales = [v for v in scales if not math.isnan(v)]
        if len(scales) > 1 and max(scales) > 1.1 * min(scales):
            text += (f" The machine's speed moved between runs: the engine's batches took "
                     f"{min(scales):.2f}x to {max(scales):.2f}x the profile's times (column "
                     f"speed), which moves throughput by as much.")
        engine = engine_batch_costs(exp, mode)
        if engine:
            text += (" The engine's own batches in these runs (median time from a batch's start "
                     "to its answer, per image, from requests.csv): "
                     + ", ".join(f"{b}: {c:.1f}" for b, c in engine) + " ms.")
        unscaled = []
        for label, by_x in series.items():
            top = max((x for x in xs if x in by_x), default=None,
                      key=lambda x: x if plots._is_number(x) else 0)
            v = exp.value(mode, by_x[top], "unscaled_throughput_rps")[0] if top else math.nan
            if not math.isnan(v):
                unscaled.append(f"{label or 'runs'} at {plots.value_label(top)} {v:.0f} req/s")
        if unscaled:
            text += (" On the profile's own costs (unscaled, before --match-speed) the "
                     "simulator gives " + ", ".join(unscaled) + ".")
        top = max((x for x in xs if plots._is_number(x)), default=None)
        if top and plots.short(fig.get("x")) == "concurrency":
            floor = top * per_image(means, best)
            text += (f" With {plots.value_label(top)} requests in flight a request waits at "
                     f"least {plots.value_label(top)} x the cheapest per-image cost: "
                     f"{floor:.0f} ms.")
        lines.append(text)
    return lines


def load_cost(exp, fig, modes, points=None):
    lines = []
    for mode in modes:
        config = _run_config(exp, mode)
        prof = _load_profile(config) if config else None
        if not prof:
            continue
        path, name, entry = prof
        tier = (config.get("engine") or {}).get("exec_tier", "host")
        pair = "host->device" if tier == "device" else "disk->host"
        load = (entry.get("load_ms") or {}).get(pair)
        one = batch_means(entry).get(1)
        if load is None or not one:
            continue
        text = (f"{mode}: profile {os.path.basename(path)}, {name}: a {pair} load costs "
                f"{float(load):.0f} ms against {one:.1f} ms for a batch of one, so a request "
                f"that waits for a swap takes ~{(float(load) + one) / one:.0f}x as long.")
        xs, series = plots.figure_series(exp, fig)
        parts = []
        for label, by_x in series.items():
            cells = []
            for x in xs:
                if x not in by_x:
                    continue
                loads = exp.value(mode, by_x[x], "loads")[0]
                reqs = exp.value(mode, by_x[x], "requests")[0]
                if not math.isnan(loads) and reqs and not math.isnan(reqs):
                    cells.append(f"{plots.value_label(x)}: {loads / reqs:.2f}")
            if cells:
                parts.append((f"{label} " if label else "") + ", ".join(cells))
        if parts:
            text += (f" Loads per request by {plots.short(fig.get('x')) or 'point'}: "
                     + "; ".join(parts) + ".")
        lines.append(text)
    return lines


import evidence_cluster  # noqa: E402  (its kinds use the readers above)

KINDS = {"batch_cost": batch_cost, "load_cost": load_cost, **evidence_cluster.KINDS}


def figure_evidence(exp, fig, modes, points=None):
    """Sentences for each evidence kind the figure names; unknown kinds are an error.
    `points`: the point ids the failed checks read, where the evidence is about them."""
    lines = []
    for kind in fig.get("evidence") or []:
        if kind not in KINDS:
            raise ValueError(f"figure {fig.get('id')}: unknown evidence '{kind}' "
                             f"(known: {', '.join(KINDS)})")
        lines += KINDS[kind](exp, fig, modes, points)
    return lines
