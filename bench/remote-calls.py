#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The cost of a tool call on a remote backend against the same call locally, in one run.

Two loops of sequential calls, timed by the script itself, on each backend:

  host tool    a Python function of this process, a libptc host tool (python/ptc): on a
               remote backend each call crosses the channel twice (a call frame to the
               host, an answer frame back), so remote minus local is the channel's cost
  read_file    served where the script runs: by the agent on the target, no crossing

    bench/remote-calls.py --backend SPEC [--path-prefix DIR] [--calls 1000] [--rounds 5]

--path-prefix goes first on PATH (an ssh wrapper that adds -F CONFIG, as
tests/integration/test_remote_ssh.py makes one). Needs the build's libptc.so.0 (or
$PTC_LIBRARY) and its static ptc-agent beside it (or ptc on the target's PATH).
"""

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

import ptc  # noqa: E402

SCRIPT = '''
import time
from hermes_tools import echo, read_file
echo(0)
read_file({path!r})
t = time.perf_counter()
for i in range({n}):
    echo(i)
h = (time.perf_counter() - t) / {n} * 1e6
t = time.perf_counter()
for i in range({n}):
    read_file({path!r})
r = (time.perf_counter() - t) / {n} * 1e6
print(f"{{h:.1f}} {{r:.1f}}")
'''


def measure(backend, path, n, isolation):
    with ptc.Engine(no_config_file=True, backend=backend, isolation=isolation,
                    max_tool_calls=2 * n + 10, timeout=600) as engine:
        @engine.tool
        def echo(x: int) -> dict:
            """Return x."""
            return {"x": x}

        res = engine.execute(SCRIPT.format(path=path, n=n))
        if res.status != "success":
            raise SystemExit(f"{backend}: {res.status}: {res.error or res.output}")
        h, r = map(float, res.output.split())
        return h, r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", required=True)
    ap.add_argument("--path-prefix")
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--isolation", default="auto")
    a = ap.parse_args()
    if a.path_prefix:
        os.environ["PATH"] = f"{a.path_prefix}:{os.environ['PATH']}"
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
        f.write("".join(f"line {i} of a small file\n" for i in range(60)))
        f.flush()
        got = {"local": [], a.backend: []}
        for _ in range(a.rounds):
            for b in got:
                got[b].append(measure(b, f.name, a.calls, a.isolation))
    print(f"{a.calls} sequential calls x {a.rounds} rounds, isolation {a.isolation}; "
          "median µs per call")
    print()
    print("| backend | host tool | read_file |")
    print("|---|---:|---:|")
    med = {}
    for b, v in got.items():
        med[b] = (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v))
        print(f"| `{b}` | {med[b][0]:.1f} | {med[b][1]:.1f} |")
    print()
    print(f"channel cost of a host tool call: {med[a.backend][0] - med['local'][0]:.1f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
