#!/usr/bin/python3
"""Bit-identity check of the simulator: runs every shipped experiment
(experiments/rafiqi/*.yaml, experiments/regression/*.yaml) in simulation, every point and
repetition as the file says, and compares each run's requests.csv and summary.json with the
digests recorded in tests/data/sim-identity.json.

A refactoring of the simulator must leave these digests unchanged: one server, the default,
gives the very same requests at the very same times. A change that alters results on purpose
rewrites the digests with --update, and its commit says why.

Experiments that use this machine's profile (`profile: local`) run on the fixed fixture
tests/data/profiles/squeezenet-cpu.yaml instead, so the digests do not depend on the machine.

usage: sim_identity.py SERVELAB_BINARY [--update]
"""
import glob
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
DIGESTS = os.path.join(SRC, "tests", "data", "sim-identity.json")
FIXTURE = os.path.join(SRC, "tests", "data", "profiles", "squeezenet-cpu.yaml")


def experiments():
    files = sorted(glob.glob(os.path.join(SRC, "experiments", "rafiqi", "*.yaml")))
    files += sorted(glob.glob(os.path.join(SRC, "experiments", "regression", "*.yaml")))
    return files


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def run_experiment(binary, path, out):
    with open(path) as f:
        doc = yaml.safe_load(f)
    cmd = [binary, "run", path, "--mode", "sim", "--out", out, "--quiet"]
    if doc.get("profile", "local") == "local":
        cmd += ["--set", "profile=" + FIXTURE]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise SystemExit(f"sim_identity: `{' '.join(cmd)}` failed:\n{p.stdout}")
    runs = {}
    for run_dir in sorted(glob.glob(os.path.join(out, "runs", "*"))):
        name = os.path.basename(run_dir)
        runs[name] = {"requests_csv": digest(os.path.join(run_dir, "requests.csv")),
                      "summary_json": digest(os.path.join(run_dir, "summary.json"))}
    return runs


def main(argv):
    if len(argv) < 2:
        raise SystemExit(__doc__)
    binary, update = argv[1], "--update" in argv[2:]
    got = {}
    with tempfile.TemporaryDirectory(prefix="sim-identity-") as tmp:
        for i, path in enumerate(experiments()):
            key = os.path.relpath(path, SRC)
            got[key] = run_experiment(binary, path, os.path.join(tmp, str(i)))
    if update:
        with open(DIGESTS, "w") as f:
            json.dump(got, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"sim_identity: wrote {sum(len(v) for v in got.values())} runs to {DIGESTS}")
        return 0
    with open(DIGESTS) as f:
        want = json.load(f)
    bad = []
    for exp in sorted(set(want) | set(got)):
        w, g = want.get(exp, {}), got.get(exp, {})
        for run in sorted(set(w) | set(g)):
            if w.get(run) != g.get(run):
                what = "missing" if run not in g else "new" if run not in w else \
                    ", ".join(k for k in ("requests_csv", "summary_json")
                              if w[run][k] != g[run][k]) + " differ"
                bad.append(f"{exp} {run}: {what}")
    total = sum(len(v) for v in want.values())
    if bad:
        print(f"sim_identity: {len(bad)} of {total} runs changed:")
        for line in bad[:200]:
            print("  " + line)
        return 1
    print(f"sim_identity: {total} runs identical")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
