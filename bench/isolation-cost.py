#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What an isolation level costs on the hello workload, paired and interleaved.

compare.py measures one ptc configuration per run, and on a small VM the machine's speed
drifts between runs by more than the cost being measured (its own `python3 -c pass` row moves
by 2-3 ms). Here the levels alternate run by run (ABBA order) in one process, so drift hits
both alike; the difference of the medians is the cost.

    bench/isolation-cost.py [--ptc build/ptc] [--runs 80] [--levels none,auto,strict]
"""

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HELLO = ROOT.parent / "shared" / "bench" / "workloads" / "hello.py"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptc", default=str(ROOT / "build" / "ptc"))
    ap.add_argument("--runs", type=int, default=80)
    ap.add_argument("--levels", default="none,auto,strict")
    ap.add_argument("--script", default=str(HELLO))
    ap.add_argument("--baseline", metavar="BIN",
                    help="also measure each level with this ptc binary (an older build), "
                         "interleaved with --ptc's runs, rows marked 'BIN'")
    a = ap.parse_args()
    configs = [(lvl, a.ptc, lvl) for lvl in a.levels.split(",")]
    if a.baseline:
        configs += [(f"{lvl} (baseline)", a.baseline, lvl) for lvl in a.levels.split(",")]
    times = {name: [] for name, _, _ in configs}
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": os.environ.get("HOME", "/")}
    with tempfile.TemporaryDirectory(prefix="ptc-isocost-") as cwd:
        env["XDG_CACHE_HOME"] = cwd + "/cache"
        for i in range(a.runs + 2):
            order = configs if i % 2 == 0 else configs[::-1]
            for name, binary, lvl in order:
                t = time.perf_counter()
                subprocess.run([binary, "run", "--isolation", lvl, a.script], cwd=cwd, env=env,
                               stdout=subprocess.DEVNULL, check=True)
                if i >= 2:  # two warm-up rounds
                    times[name].append((time.perf_counter() - t) * 1000)
    first = configs[0][0]
    base = statistics.median(times[first])
    print(f"{a.runs} runs per configuration, interleaved; script {a.script}")
    if a.baseline:
        print(f"baseline: {a.baseline}")
    print("| isolation | median ms | p25–p75 ms | median − " + first + " |")
    print("|---|---:|---|---:|")
    for name, _, _ in configs:
        v = times[name]
        q = statistics.quantiles(v, n=4)
        m = statistics.median(v)
        print(f"| {name} | {m:.1f} | {q[0]:.1f}–{q[2]:.1f} | {m - base:+.1f} |")

if __name__ == "__main__":
    main()
