#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What the exec supervisor costs (issue 35 item 2): a terminal call whose command execs a
program N times, with the supervisor on and off, paired and interleaved (ABBA order, as
isolation-cost.py), so the machine's drift hits both alike. Off is the fallback a kernel
without seccomp user notification gets (PTC_TEST_NO_EXEC_NOTIFY=1: the text check only).

    bench/exec-supervisor.py [--ptc build/ptc] [--runs 40] [--execs 200] [--config FILE]

Prints the median wall time of one `ptc tool terminal` call each way, for the loop of N
execs and for a plain `true`, and the difference per exec.
"""

import argparse
import json
import os
import statistics
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


CONFIG = []


def one(ptc, command, off):
    env = dict(os.environ)
    env.pop("PTC_CONFIG", None)
    if off:
        env["PTC_TEST_NO_EXEC_NOTIFY"] = "1"
    t0 = time.perf_counter()
    p = subprocess.run([ptc, "tool", *CONFIG, "terminal", json.dumps({"command": command})],
                       stdin=subprocess.DEVNULL, capture_output=True, env=env, check=True)
    t = time.perf_counter() - t0
    res = json.loads(p.stdout)
    assert res["exit_code"] == 0, res
    assert bool(res.get("warnings")) == off, res
    return t


def measure(ptc, command, runs):
    on, off = [], []
    for i in range(runs):
        for flag in ((False, True) if i % 2 == 0 else (True, False)):
            (off if flag else on).append(one(ptc, command, flag))
    return statistics.median(on), statistics.median(off)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptc", default=str(ROOT / "build" / "ptc"))
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--execs", type=int, default=200)
    ap.add_argument("--config", help="a config file (e.g. with terminal deny rules)")
    a = ap.parse_args()
    if a.config:
        CONFIG[:] = ["--config", a.config]
    loop = f"for i in $(seq {a.execs}); do /bin/true; done"
    for cmd in ("true", "true"):  # warm up
        one(a.ptc, cmd, False)
    lon, loff = measure(a.ptc, loop, a.runs)
    ton, toff = measure(a.ptc, "true", a.runs)
    print(f"{a.runs} runs each way, ABBA, median wall of one `ptc tool terminal` call")
    print(f"| command | supervisor on | off (text only) | difference |")
    print(f"|---|---|---|---|")
    print(f"| `{loop}` | {lon * 1000:.1f} ms | {loff * 1000:.1f} ms | "
          f"{(lon - loff) * 1000:+.1f} ms, {(lon - loff) / a.execs * 1e6:+.0f} us per exec |")
    print(f"| `true` | {ton * 1000:.1f} ms | {toff * 1000:.1f} ms | "
          f"{(ton - toff) * 1000:+.1f} ms |")


if __name__ == "__main__":
    main()
