#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Latency of one execute_code call through `ptc mcp`, paired and interleaved.

Two long-lived servers (this build and, with --baseline, an older one) answer the same
calls in turn (ABBA), so the machine's drift hits both alike. Each call is a tools/call of
execute_code with a small script; the time is from writing the request to reading its
response. Prints the median and the 10th/90th percentiles per server and script.

    bench/mcp-latency.py [--ptc build/ptc] [--baseline OLD/build/ptc] [--calls 40]
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPTS = {
    "print": "print(1)",
    "1 tool call": "from hermes_tools import read_file\nprint(len(read_file('f.txt')['content']))",
}


class Server:
    def __init__(self, binary, cwd, env):
        self.proc = subprocess.Popen([binary, "mcp", "--cwd", cwd], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, text=True, bufsize=1)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "1"}})

    def request(self, method, params):
        self.next_id += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next_id,
                                          "method": method, "params": params}) + "\n")
        self.proc.stdin.flush()
        while True:
            msg = json.loads(self.proc.stdout.readline())
            if msg.get("id") == self.next_id:
                return msg

    def call(self, code):
        t0 = time.perf_counter()
        r = self.request("tools/call", {"name": "execute_code", "arguments": {"code": code}})
        dt = time.perf_counter() - t0
        if r["result"]["structuredContent"]["status"] != "success":
            raise SystemExit(f"call failed: {r}")
        return dt

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptc", default=str(ROOT / "build" / "ptc"))
    ap.add_argument("--baseline", metavar="BIN", help="an older ptc, measured interleaved")
    ap.add_argument("--calls", type=int, default=40)
    a = ap.parse_args()
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": os.environ.get("HOME", "/")}
    with tempfile.TemporaryDirectory(prefix="ptc-mcplat-") as cwd:
        Path(cwd, "f.txt").write_text("hello\n" * 100)
        servers = [("ptc", Server(a.ptc, cwd, env))]
        if a.baseline:
            servers.append(("baseline", Server(a.baseline, cwd, env)))
        times = {(n, s): [] for n, _ in servers for s in SCRIPTS}
        for _, srv in servers:  # warm-up: the first call resolves the interpreter
            srv.call("pass")
        for i in range(a.calls):
            order = servers if i % 2 == 0 else servers[::-1]
            for sname, code in SCRIPTS.items():
                for name, srv in order:
                    times[(name, sname)].append(srv.call(code))
        for _, srv in servers:
            srv.close()
    print(f"{'server':10} {'script':12} {'median ms':>10} {'p10':>8} {'p90':>8}")
    for (name, sname), t in times.items():
        t = sorted(x * 1000 for x in t)
        q = statistics.quantiles(t, n=10)
        print(f"{name:10} {sname:12} {statistics.median(t):10.1f} {q[0]:8.1f} {q[-1]:8.1f}")


if __name__ == "__main__":
    main()
