#!/usr/bin/env python3
"""scripts/check-layering can fail: on a small tree it refuses an upward include and names it,
and passes a downward one. Usage: test_check_layering.py SOURCE_DIR"""
import os
import subprocess
import sys
import tempfile


def run_check(script, tree):
    return subprocess.run([sys.executable, script, tree], capture_output=True, text=True)


def write(root, path, text):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(text)


def main():
    script = os.path.join(sys.argv[1], "scripts", "check-layering")
    failures = []
    with tempfile.TemporaryDirectory() as tree:
        write(tree, "engine/control/types.h", "#pragma once\n")
        write(tree, "config/sections.h", '#include "engine/control/types.h"\n#include <vector>\n')
        write(tree, "cli/main.cpp", '#include "simulator/simulator.h"\n')  # the top: anything
        ok = run_check(script, tree)
        if ok.returncode != 0:
            failures.append("a downward include was refused:\n" + ok.stdout)
        write(tree, "config/run_config.h", '#include "config/sections.h"\n'
                                           '#include "simulator/simulator.h"\n')
        write(tree, "engine/control/queue.h", '  #  include "engine/runtime/engine.h"\n')
        bad = run_check(script, tree)
        if bad.returncode != 1:
            failures.append(f"upward includes passed (exit {bad.returncode}):\n" + bad.stdout)
        for where in ("config/run_config.h:2:", "engine/control/queue.h:1:"):
            if where not in bad.stdout:
                failures.append(f"the report does not name {where}:\n" + bad.stdout)
        if "config/sections.h" in bad.stdout:
            failures.append("a downward include was reported:\n" + bad.stdout)
    for f in failures:
        print("FAIL:", f)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
