#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ptc's cold path against its physical limits, measured in the same run.

Every command is spawned from this process the same way, round after round, in turn, so the
machine's drift hits all alike; the table gives medians and each one's ratio to its limit.

  start     `ptc --version` against `PY -c pass` (and `/bin/true`, the spawn floor)
  hello     `ptc run hello.py` at isolation none and auto against `PY -c pass`
  terminal  a script timing 20 terminal("echo hi") calls itself, at auto and none, per call,
            against `bash -c true` and (as root) `unshare -p -m -f --mount-proc bash -c true`

    bench/startup.py [--ptc build/ptc] [--baseline OLD/build/ptc] [--rounds 40]
                     [--python /usr/bin/python3]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchenv import ptc_env

ROOT = Path(__file__).resolve().parents[1]

TERMINAL = r'''
import time
from hermes_tools import terminal
terminal("true")
t = time.perf_counter()
for i in range(20):
    r = terminal("echo hi")
    assert r["output"].strip() == "hi", r
print((time.perf_counter() - t) / 20 * 1000)
'''


def timed(cmd, env, cwd):
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd,
                   check=False)
    return (time.perf_counter() - t) * 1000


def terminal_per_call(binary, script, isolation, env, cwd):
    out = subprocess.run([binary, "run", script, "--isolation", isolation], capture_output=True,
                         text=True, env=env, cwd=cwd, check=False)
    res = json.loads(out.stdout)
    if res.get("status") != "success":
        raise SystemExit(f"{binary}: {res}")
    return float(res["output"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ptc", default=str(ROOT / "build" / "ptc"))
    ap.add_argument("--baseline", help="an older ptc binary, measured in the same rounds")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--python", default="/usr/bin/python3")
    a = ap.parse_args()
    bins = {"ptc": os.path.abspath(a.ptc)}
    if a.baseline:
        bins["baseline"] = os.path.abspath(a.baseline)

    with tempfile.TemporaryDirectory(prefix="ptc-startup-") as tmp:
        env = ptc_env(tmp, a.python)
        hello = os.path.join(tmp, "hello.py")
        Path(hello).write_text('print("hello from the sandbox")\n')
        term = os.path.join(tmp, "terminal.py")
        Path(term).write_text(TERMINAL)

        rows = {"`/bin/true`": ["/bin/true"], f"`{a.python} -c pass`": [a.python, "-c", "pass"],
                "`bash -c true`": ["bash", "-c", "true"]}
        unshare = shutil.which("unshare")
        if os.geteuid() == 0 and unshare:
            rows["`unshare -p -m -f --mount-proc bash -c true`"] = [
                unshare, "-p", "-m", "-f", "--mount-proc", "bash", "-c", "true"]
        for name, b in bins.items():
            rows[f"{name} `--version`"] = [b, "--version"]
            for iso in ("none", "auto"):
                rows[f"{name} hello, {iso}"] = [b, "run", hello, "--isolation", iso]
        times = {k: [] for k in rows}
        term_times = {f"{name} terminal per call, {iso}": []
                      for name in bins for iso in ("none", "auto")}
        for r in range(a.rounds):
            for k, cmd in rows.items():
                times[k].append(timed(cmd, env, tmp))
            if r % 4 == 0:
                for name, b in bins.items():
                    for iso in ("none", "auto"):
                        term_times[f"{name} terminal per call, {iso}"].append(
                            terminal_per_call(b, term, iso, env, tmp))

    med = {k: statistics.median(v) for k, v in {**times, **term_times}.items()}
    py = med[f"`{a.python} -c pass`"]
    limit = {}
    for k in med:
        if "--version" in k or "hello" in k:
            limit[k] = f"`{a.python} -c pass`"
        elif "terminal" in k and k.endswith("auto") and \
                "`unshare -p -m -f --mount-proc bash -c true`" in med:
            limit[k] = "`unshare -p -m -f --mount-proc bash -c true`"
        elif "terminal" in k:
            limit[k] = "`bash -c true`"
    print(f"{a.rounds} rounds (terminal: {len(next(iter(term_times.values())))}), "
          f"{a.python}, uid {os.geteuid()}")
    print()
    print("| what | median ms | min ms | / limit | limit |")
    print("|---|---:|---:|---:|---|")
    for k, v in {**times, **term_times}.items():
        ratio = f"{med[k] / med[limit[k]]:.2f}" if k in limit else ""
        print(f"| {k} | {med[k]:.2f} | {min(v):.2f} | {ratio} | {limit.get(k, '')} |")
    print()
    print(f"(`-c pass` median {py:.2f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
