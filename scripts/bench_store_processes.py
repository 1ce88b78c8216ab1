#!/usr/bin/env python3
"""PSS of `servelab serve` processes that register the same model variants (scripts/bench-store).

Usage: bench_store_processes.py SERVELAB MODELS_DIR FAMILY COUNT

Runs, one after another: one server without a weight store, one with one, and four servers on
one weight store (each with its own model store), each registering the COUNT variants and
answering one request per variant; prints each case's summed PSS and the ratios.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request


def start(servelab, store, weights):
    args = [servelab, "serve", "--port", "0", "--store", store, "--model-root",
            os.path.abspath(MODELS), "--io-threads", "1"]
    if weights:
        args += ["--weight-store", weights]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in p.stdout:
        m = re.search(r"listening on [\d.]+:(\d+)", line)
        if m:
            return p, int(m.group(1))
    raise RuntimeError("servelab serve did not start")


def post(port, path, body, ctype):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body,
                                 headers={"Content-Type": ctype}, method="POST")
    with urllib.request.urlopen(req, timeout=600) as r:
        return r.status


def register_all(port):
    for i in range(COUNT):
        name = f"{FAMILY}_{i}"
        manifest = json.load(open(os.path.join(MODELS, name + ".json")))
        body = {"name": name, "path": os.path.abspath(os.path.join(MODELS, name + ".pt")),
                "preprocess": {k: manifest[k] for k in
                               ("input_width", "input_height", "resize", "mean", "std")}}
        post(port, "/register", json.dumps(body).encode(), "application/json")
        post(port, f"/classify/{name}", IMAGE, "image/jpeg")


def pss_kb(pid):
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1])
    return 0


def case(label, servers, shared):
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        weights = os.path.join(tmp, "weights") if shared else None
        procs = []
        try:
            for k in range(servers):
                p, port = start(SERVELAB, os.path.join(tmp, f"store{k}"), weights)
                procs.append(p)
                register_all(port)
            time.sleep(0.5)
            total = sum(pss_kb(p.pid) for p in procs)
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait(timeout=60)
    print(f"{label} {total * 1024}")
    return total


SERVELAB, MODELS, FAMILY, COUNT = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
IMAGE = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "images",
                          "gradient.jpg"), "rb").read()
plain = case("pss_one_server_no_store_bytes", 1, False)
one = case("pss_one_server_store_bytes", 1, True)
four = case("pss_four_servers_one_store_bytes", 4, True)
print(f"ratio_store_vs_no_store {one / plain:.3f}")
print(f"ratio_four_servers_vs_one {four / one:.3f}")
