"""The measured reason next to a cluster figure's verdict (DLIS, The Tail at Scale), from the
cost profile the runs used, their config and their stored summaries:

- offered_load: the work the servers were given over what they can do, per setting: the
  arrival rate times a request's service (the profile's mean) and the work its losing copies
  did (wasted work per request), over servers x workers (or the cores they share, fewer).
  Above 1 the queues grow for the whole run, so that setting's latency is the run's length,
  not its policy's.
- burst_floor: bursts of B requests onto S x W one-at-a-time workers: whatever the router, at
  least B - S x W requests of each burst start after another of the same burst on their
  worker, so they take two service times less the burst's spread. That puts a floor under
  the latency's tail at any load.
- service_floor: a request answered by one copy that never waits still takes its service
  time, so no backup brings a latency percentile below the service time's own: the lowest
  ratio each failed ratio check of a latency percentile could reach.
The profile's service time is read as normal (mean, stddev), as the simulator draws it.
"""
import math
from statistics import NormalDist

import evidence
import plots
import verdict

PERCENTILE_METRICS = {"latency_p50_ms": 0.50, "latency_p80_ms": 0.80, "latency_p90_ms": 0.90,
                      "latency_p99_ms": 0.99, "latency_p999_ms": 0.999}
PERCENTILE_WORDS = {"latency_p50_ms": "median latency", "latency_p80_ms": "p80 latency",
                    "latency_p90_ms": "p90 latency", "latency_p99_ms": "p99 latency",
                    "latency_p999_ms": "p99.9 latency"}


def _runs(exp, modes):
    """(mode, config, service NormalDist in ms) for each mode whose runs' config and profile
    can be read."""
    for mode in modes:
        config = evidence._run_config(exp, mode)
        prof = evidence._load_profile(config) if config else None
        one = [c for c in prof[2].get("batch_latency_ms", []) if int(c.get("batch", 0)) == 1] \
            if prof else []
        if one:
            yield mode, config, NormalDist(float(one[0]["mean"]),
                                           float(one[0].get("stddev") or 0.0))


def _get(config, params, path, default=None):
    """A config value at a dotted path, the point's swept value first."""
    if path in params and str(params[path]) != "none":
        return params[path]
    node = config
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            return default
        node = node[key]
    return node


def _workers(config, params):
    servers = int(_get(config, params, "cluster.servers", 1) or 1)
    return servers, int(_get(config, params, "engine.workers", 1) or 1)


def _capacity(config, params):
    """(requests the servers run at once, its words): servers x workers, or the cores they
    share where the run's config gives them (`cluster.cores`, resolved to a count), fewer."""
    servers, workers = _workers(config, params)
    slots = servers * workers
    words = f"{servers} server{'s' if servers > 1 else ''} of {workers} worker" + \
        ("s" if workers > 1 else "")
    cores = _get(config, params, "cluster.cores")
    if isinstance(cores, int) and not isinstance(cores, bool) and 0 < cores < slots:
        return cores, f"{words}, sharing {cores} cores"
    return slots, words


def _names(exp, fig):
    """{point id: its name on the figure}: its series' legend and its x, in words."""
    xs, series = plots.figure_series(exp, fig)
    names = {}
    for label, by_x in series.items():
        for x, pid in by_x.items():
            words = plots.words(exp, fig.get("x"), x) if fig.get("x") else str(x)
            names[pid] = ", ".join(part for part in (label, words) if part)
    return names


def offered_load(exp, fig, modes, points=None):
    lines = []
    names = _names(exp, fig)
    for mode, config, service in _runs(exp, modes):
        cells, over = [], []
        for pid in points or list(names):
            params = exp.points[pid]["params"]
            rate = _get(config, params, "workload.arrival.rate")
            requests = exp.value(mode, pid, "requests")[0]
            if rate is None or math.isnan(requests) or requests <= 0:
                continue
            wasted = exp.value(mode, pid, "backup_wasted_s")[0]
            wasted_ms = 0.0 if math.isnan(wasted) else wasted * 1e3 / requests
            capacity, words = _capacity(config, params)
            rho = float(rate) * (service.mean + wasted_ms) / 1e3 / capacity
            name = names.get(pid, exp.points[pid]["label"])
            cells.append(f"{name}: {rho:.2f}")
            if rho >= 1:
                p99 = exp.value(mode, pid, "latency_p99_ms")[0]
                over.append(f"{name} (p99 {p99:,.0f} ms)")
        if not cells:
            continue
        text = (f"{mode}: the servers' offered load, the arrival rate times a request's service "
                f"({service.mean:.1f} ms, the profile's mean) and the work its losing copies did "
                f"(wasted work per request), over the requests they can run at once ({words}): "
                + "; ".join(cells) + ".")
        if over:
            text += (" At or above 1 the servers are given more work than they can do and their "
                     "queues grow for the whole run: " + ", ".join(over) + " measure the run's "
                     "length rather than the policy, and a ratio over such a setting is no "
                     "drop of a policy's making.")
        lines.append(text)
    return lines


def burst_floor_ms(service, burst, slots, burst_ms, q):
    """The q-quantile's floor (ms) under bursts of `burst` requests within `burst_ms` onto
    `slots` one-at-a-time workers, or None where the bursts set none: a share
    f = (burst - slots) / burst of the requests take s1 + s2 - burst_ms or longer, so
    P(latency > x) >= f P(s1 + s2 > x + burst_ms)."""
    if burst <= slots:
        return None
    share = (burst - slots) / burst
    tail = (1 - q) / share
    if tail >= 1:
        return None
    two = NormalDist(2 * service.mean, service.stdev * math.sqrt(2))
    return two.inv_cdf(1 - tail) - burst_ms if two.stdev > 0 else two.mean - burst_ms


def burst_floor(exp, fig, modes, points=None):
    lines = []
    for mode, config, service in _runs(exp, modes):
        arrival = (config.get("workload") or {}).get("arrival") or {}
        max_batch = int((config.get("engine") or {}).get("max_batch") or 1)
        if arrival.get("type") != "bursts" or max_batch != 1:
            continue
        burst, burst_ms = int(arrival.get("burst", 1)), float(arrival.get("burst_ms", 0))
        servers, workers = _workers(config, {})
        slots = servers * workers
        floors = [(m, burst_floor_ms(service, burst, slots, burst_ms, q))
                  for m, q in PERCENTILE_METRICS.items() if m in (fig.get("metrics") or [])]
        floors = [(m, f) for m, f in floors if f is not None]
        if not floors:
            continue
        share = (burst - slots) / burst
        lines.append(
            f"{mode}: bursts of {burst} requests within {burst_ms:g} ms onto {servers} servers "
            f"of {workers} worker{'s' if workers > 1 else ''}, one request at a time: whatever "
            f"the router, at least {burst - slots} of each burst's {burst} requests "
            f"({share:.0%}) start after another request of the same burst on their worker, so "
            f"they take two service times less the burst's {burst_ms:g} ms. With the profile's "
            f"service time (mean {service.mean:.1f} ms, standard deviation "
            f"{service.stdev:.2f} ms) that puts "
            + ", ".join(f"{PERCENTILE_WORDS[m]} at or above {f:.1f} ms" for m, f in floors)
            + " at any load, before any queue left from earlier bursts.")
    return lines


def _failed_ratio_checks(exp, fig, mode):
    """The figure's ratio checks of a latency percentile that failed in `mode`."""
    verdicts = verdict.figure_verdicts(exp, fig, [mode])
    failed = {r["says"] for _, results in verdicts.values() for r in results
              if r["verdict"] == verdict.FAILS and not r["ours"]}
    return [c for c in fig.get("checks") or []
            if " ".join(str(c.get("says")).split()) in failed and c.get("test") == "ratio"
            and c.get("metric") in PERCENTILE_METRICS]


def _of_values(exp, mode, check):
    """The values of the check's `of` side (the setting judged)."""
    pids = verdict.select(exp, {**(check.get("where") or {}), **(check.get("of") or {})})
    return [v for v in (exp.value(mode, p, check["metric"])[0] for p in pids) if not math.isnan(v)]


def service_floor(exp, fig, modes, points=None):
    lines = []
    for mode, _, service in _runs(exp, modes):
        for c in _failed_ratio_checks(exp, fig, mode):
            metric, q = c["metric"], PERCENTILE_METRICS[c["metric"]]
            over = verdict.select(exp, {**(c.get("where") or {}), **(c.get("over") or {})})
            base = [exp.value(mode, p, metric)[0] for p in over]
            base = [v for v in base if not math.isnan(v) and v > 0]
            if not base:
                continue
            own = service.inv_cdf(q) if service.stdev > 0 else service.mean
            latency = sum(base) / len(base)
            floor = own / latency
            text = (f"{mode}: \"{' '.join(str(c['says']).split())}\": the service time alone "
                    f"(the profile's, read as normal) has its {q * 100:g}th percentile at "
                    f"{own:.1f} ms, against {latency:.1f} ms for the setting compared with; the "
                    f"rest is waiting. A request answered by one copy that never waits still "
                    f"takes its service time, so no backup brings this ratio below "
                    f"{floor:.2f} (only the faster of two copies that both run, the wasted "
                    f"work, can go under it)")
            bound = c.get("max")
            if bound is not None and floor > float(bound):
                text += (f", where the claim needs at most {float(bound):g}: below what "
                         f"removing every wait would give, out of reach of any backup whose "
                         f"first copy to start answers.")
            elif bound is not None and floor >= 0.9 * float(bound):
                text += (f", where the claim needs at most {float(bound):g}: it asks for nearly "
                         f"every wait to be gone.")
            elif bound is not None:
                text += (f"; the claim needs at most {float(bound):g}, which the service time "
                         f"leaves room for: what is missing is waiting, which the backups "
                         f"removed less of than claimed" + (" or added to" if any(
                             v > latency for v in _of_values(exp, mode, c)) else "") + ".")
            else:
                text += "."
            lines.append(text)
    return lines


KINDS = {"offered_load": offered_load, "burst_floor": burst_floor,
         "service_floor": service_floor}
