#!/usr/bin/env python3
"""PSS of `servelab serve` processes that register the same model variants (scripts/bench-store).

Usage: bench_store_processes.py SERVELAB MODELS_DIR FAMILY COUNT

Runs, one after another: one server without a weight store, one with one, four servers on
one weight store (each with its own model store), and four replicas of one
`servelab serve --processes 4` (forked after the runtime's start-up, which they then share),
each registering the COUNT variants and answering one request per variant; prints each case's
summed PSS and the ratios; the same for idle servers (no model), so that what the models add
is told apart from what each process's runtime holds.
"""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from store_processes import Server, pss_kb, read_image  # noqa: E402


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
        finally:
            for p in procs:
                p.stop()
    print(f"{label} {total * 1024}")
    return total


SERVELAB, MODELS, FAMILY, COUNT = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
IMAGE = read_image()
plain = case("pss_one_server_no_store_bytes", 1, False, COUNT)
one = case("pss_one_server_store_bytes", 1, True, COUNT)
four = case("pss_four_servers_one_store_bytes", 4, True, COUNT)
forked = case("pss_four_servers_forked_one_store_bytes", 4, True, COUNT, forked=True)
# The servers without a model: LibTorch's runtime and the engine, which every process holds
# for itself (the libraries' code pages are shared and split between the processes).
one_idle = case("pss_one_server_idle_bytes", 1, True, 0)
four_idle = case("pss_four_servers_idle_bytes", 4, True, 0)
print(f"ratio_store_vs_no_store {one / plain:.3f}")
print(f"ratio_four_servers_vs_one {four / one:.3f}")
print(f"ratio_four_servers_forked_vs_one {forked / one:.3f}")
print(f"ratio_four_servers_vs_one_idle {four_idle / one_idle:.3f}")
print(f"ratio_four_servers_vs_one_models_added {(four - four_idle) / (one - one_idle):.3f}")
