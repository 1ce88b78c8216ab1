#!/usr/bin/env python3
"""PSS of `servelab serve` processes that register the same model variants (scripts/bench-store).

Usage: bench_store_processes.py SERVELAB MODELS_DIR FAMILY COUNT

Runs, one after another: one server without a weight store, one with one, four servers on
one weight store (each with its own model store), and four replicas of one
`servelab serve --processes 4` (forked after the runtime's start-up, which they then share),
each registering the COUNT variants and answering one request per variant; prints each case's
summed PSS half a second after the last answer (serving: each process still holds its forward
passes' buffers) and again at rest, past the servers' idle trim (`--idle-trim-ms`, 10 s by
default, after which a server gives those buffers back), and the ratios of both; the same for
idle servers (no model), so that what the models add is told apart from what each process's
runtime holds. Then a model's first answer (its
registration and first request, wall time) once the weight store holds it, in a server of its
own and in a replica of a `serve --processes 2` started on that store (which imported and
warmed its architecture before forking), against a server without the store registering the
model's file read cold; the median of 3 rounds each.
"""
import statistics
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from store_processes import Server, drop_from_page_cache, pss_kb, read_image  # noqa: E402


def register_all(server, count):
    for i in range(count):
        name = f"{FAMILY}_{i}"
        server.register(name)
        server.classify(name, IMAGE)


def case(label, servers, shared, count, forked=False):
    """The summed PSS of `servers` servers that each register and answer `count` variants:
    separate processes, or (`forked`) the replicas of one `serve --processes`, its
    supervising process included."""
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        weights = os.path.join(tmp, "weights") if shared else None
        procs = []
        try:
            if forked:
                procs.append(Server(SERVELAB, os.path.join(tmp, "store"), MODELS, weights,
                                    processes=servers))
                handles, pids = [procs[0].replica(k) for k in range(servers)], procs[0].pids()
            else:
                for k in range(servers):
                    procs.append(Server(SERVELAB, os.path.join(tmp, f"store{k}"), MODELS, weights))
                handles, pids = procs, [p.pid for p in procs]
            for h in handles:
                register_all(h, count)
            time.sleep(0.5)
            total = sum(pss_kb(pid) for pid in pids)
            time.sleep(AT_REST_S - 0.5)
            at_rest = sum(pss_kb(pid) for pid in pids)
        finally:
            for p in procs:
                p.stop()
    print(f"{label} {total * 1024}")
    print(f"{label.replace('_bytes', '_at_rest_bytes')} {at_rest * 1024}")
    return total, at_rest


def first_answer(server, name):
    """Seconds from registering `name` to its first answer."""
    start = time.perf_counter()
    server.register(name)
    server.classify(name, IMAGE)
    return time.perf_counter() - start


def first_answers(count, rounds=3):
    """The first answer of variant count-1 with its file read cold and no store, through the
    store in a server of its own, and in a replica of a group started on the store."""
    name = f"{FAMILY}_{count - 1}"
    times = {"file_cold": [], "store": [], "store_replica": []}
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        weights = os.path.join(tmp, "weights")
        with Server(SERVELAB, os.path.join(tmp, "seed"), MODELS, weights) as seed:
            register_all(seed, count)
        for r in range(rounds):
            with Server(SERVELAB, os.path.join(tmp, f"cold{r}"), MODELS) as cold:
                drop_from_page_cache(os.path.join(MODELS, name + ".pt"))
                times["file_cold"].append(first_answer(cold, name))
            with Server(SERVELAB, os.path.join(tmp, f"own{r}"), MODELS, weights) as own:
                times["store"].append(first_answer(own, name))
            with Server(SERVELAB, os.path.join(tmp, f"group{r}"), MODELS, weights,
                        processes=2) as group:
                times["store_replica"].append(first_answer(group.replica(1), name))
    med = {k: statistics.median(v) for k, v in times.items()}
    for k, v in med.items():
        print(f"first_answer_{k}_s {v:.4f}")
    print(f"ratio_first_answer_store_vs_file_cold {med['store'] / med['file_cold']:.3f}")
    print(f"ratio_first_answer_store_replica_vs_file_cold "
          f"{med['store_replica'] / med['file_cold']:.3f}")


def other_servers():
    """Pids of `servelab` processes already running: PSS splits the shared libraries' pages
    between every process that maps them, so they would lower each measured server's PSS."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                exe = os.path.basename(f.read().split(b"\0")[0].decode(errors="replace"))
        except OSError:
            continue
        if exe in ("servelab", "servelab-engine"):
            pids.append(int(pid))
    return pids


SERVELAB, MODELS, FAMILY, COUNT = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
if other_servers():
    sys.exit(f"bench_store_processes: other servelab processes run ({other_servers()[:8]}); "
             "they share the libraries' pages and would lower every PSS measured: stop them")
IMAGE = read_image()
AT_REST_S = 21  # past the default idle trim's check (one to two 10 s delays after the last answer)
plain = case("pss_one_server_no_store_bytes", 1, False, COUNT)
one = case("pss_one_server_store_bytes", 1, True, COUNT)
four = case("pss_four_servers_one_store_bytes", 4, True, COUNT)
forked = case("pss_four_servers_forked_one_store_bytes", 4, True, COUNT, forked=True)
# The servers without a model: LibTorch's runtime and the engine, which every process holds
# for itself (the libraries' code pages are shared and split between the processes).
one_idle = case("pss_one_server_idle_bytes", 1, True, 0)
four_idle = case("pss_four_servers_idle_bytes", 4, True, 0)
for k, when in enumerate(["", "_at_rest"]):
    print(f"ratio_store_vs_no_store{when} {one[k] / plain[k]:.3f}")
    print(f"ratio_four_servers_vs_one{when} {four[k] / one[k]:.3f}")
    print(f"ratio_four_servers_forked_vs_one{when} {forked[k] / one[k]:.3f}")
    print(f"ratio_four_servers_vs_one_idle{when} {four_idle[k] / one_idle[k]:.3f}")
    print(f"ratio_four_servers_vs_one_models_added{when} "
          f"{(four[k] - four_idle[k]) / (one[k] - one_idle[k]):.3f}")
first_answers(COUNT)
