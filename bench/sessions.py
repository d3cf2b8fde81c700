#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What a session cell costs (docs/sessions.md), against a one-shot run, in one run; and a
soak of many cells on one session through `ptc serve`.

  cell         an execution with no tool call: a session's cell against a fresh interpreter
               (libptc through the Python package, in this process: no CLI start counted)
  calls        N sequential read_file calls timed by the script itself, in a cell and in a
               one-shot run: µs per call
  pool         `print('hello')` as execute_code of `ptc mcp` (a one-shot run: the warm pool's
               interpreter when one is ready; --gap seconds between calls let the pool refill,
               as a model's turns do), the whole JSON-RPC round trip, against the wall time of
               `python3 -c pass` and of a cold `ptc run -c "print('hello')"`
  server       `ptc run -c "print('hello')"` with a running `ptc serve` of its configuration
               (a scratch XDG_RUNTIME_DIR; the first run is `ptc run --server`): the whole
               process, on the server's warm pool, --gap seconds between runs
  remote       a session cell and a one-shot run over the backend `exec:sh` (a channel to
               this machine: the agent's start, not a network, is what a one-shot run pays)
  soak         --soak CELLS cells on one session through `ptc run --session` (the per-user
               server, a scratch XDG_RUNTIME_DIR): the server's RSS and open descriptors
               after the first 100 cells and at the end, and the median wall time of a
               whole `ptc run --session` (process start, connect, cell, print)

    bench/sessions.py [--ptc build/ptc] [--rounds 200] [--calls 1000] [--soak 2000]
                      [--gap 0.15]

Needs the build's libptc.so.0 beside --ptc (or $PTC_LIBRARY).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

CALLS = '''
import time
from hermes_tools import read_file
read_file({path!r})
t = time.perf_counter()
for i in range({n}):
    read_file({path!r})
print((time.perf_counter() - t) / {n} * 1e6)
'''


def timed(engine, code, **kw):
    t = time.perf_counter()
    r = engine.execute(code, **kw)
    if r.status != "success":
        raise SystemExit(f"{r.status}: {r.error or r.output}")
    return (time.perf_counter() - t) * 1e3, r


def proc_figures(pid):
    rss = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


def server_pid(run_dir):
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            argv = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
            env = Path(f"/proc/{name}/environ").read_bytes()
            ppid = int(Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            continue
        if argv[1:2] == [b"serve"] and str(run_dir).encode() in env and ppid == 1:
            return int(name)
    # Reparented to a subreaper rather than init: the serve process whose parent is not one.
    raise SystemExit("the server's pid is not found")


def wall_ms(argv, env=None):
    t = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                   env=env, timeout=60)
    return (time.perf_counter() - t) * 1e3


def pool(ptc, rounds, gap):
    import json
    p = subprocess.Popen([ptc, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)

    def call(i, method, params):
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                                  "params": params}) + "\n")
        p.stdin.flush()
        while True:
            m = json.loads(p.stdout.readline())
            if m.get("id") == i:
                return m

    call(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "bench", "version": "0"}})
    times = []
    for i in range(1, rounds + 1):
        time.sleep(gap)
        t = time.perf_counter()
        m = call(i, "tools/call", {"name": "execute_code",
                                   "arguments": {"code": "print('hello')"}})
        times.append((time.perf_counter() - t) * 1e3)
        if m["result"]["structuredContent"]["output"] != "hello\n":
            raise SystemExit(f"pool: {m}")
    p.stdin.close()
    p.wait(30)
    py = [wall_ms([sys.executable, "-c", "pass"]) for _ in range(rounds)]
    cold = [wall_ms([ptc, "run", "--no-server", "-c", "print('hello')"]) for _ in range(rounds)]
    return statistics.median(times), statistics.median(py), statistics.median(cold)


def through_server(ptc, rounds, gap):
    with tempfile.TemporaryDirectory(prefix="ptc-serve-") as d:
        run = Path(d) / "run"
        run.mkdir(mode=0o700)
        env = dict(os.environ, XDG_RUNTIME_DIR=str(run))
        wall_ms([ptc, "run", "--server", "-c", "pass"], env=env)
        times = []
        for _ in range(rounds):
            time.sleep(gap)
            times.append(wall_ms([ptc, "run", "-c", "print('hello')"], env=env))
        os.kill(server_pid(run), 15)
        return statistics.median(times)


def remote(ptc_mod, rounds):
    with ptc_mod.Engine(no_config_file=True) as e:
        e.set("code_execution.backend", "exec:sh")
        timed(e, "pass", session="remote")
        cells = [timed(e, "pass", session="remote")[0] for _ in range(rounds)]
        ones = [timed(e, "pass")[0] for _ in range(min(rounds, 30))]
    return statistics.median(cells), statistics.median(ones)


def soak(ptc, cells):
    with tempfile.TemporaryDirectory(prefix="ptc-soak-") as d:
        run = Path(d) / "run"
        run.mkdir(mode=0o700)
        env = dict(os.environ, XDG_RUNTIME_DIR=str(run))
        walls, early = [], None
        for i in range(cells):
            t = time.perf_counter()
            p = subprocess.run([ptc, "run", "--session", "soak", "-c",
                                "n = globals().get('n', 0) + 1\nprint(n)"],
                               env=env, capture_output=True, text=True, timeout=60)
            walls.append((time.perf_counter() - t) * 1e3)
            if p.returncode != 0 or p.stdout.find(f'"output":"{i + 1}\\n"') < 0:
                raise SystemExit(f"cell {i + 1}: {p.returncode} {p.stdout} {p.stderr}")
            if i == 99:
                pid = server_pid(run)
                early = proc_figures(pid)
        late = proc_figures(pid)
        subprocess.run([ptc, "session", "kill", "soak"], env=env, timeout=30)
        os.kill(pid, 15)
        return early, late, statistics.median(walls)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ptc", default=str(ROOT / "build" / "ptc"))
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--soak", type=int, default=2000)
    ap.add_argument("--gap", type=float, default=0.15)
    a = ap.parse_args()
    os.environ.setdefault("PTC_LIBRARY", str(Path(a.ptc).resolve().parent / "libptc.so.0"))
    import ptc  # noqa: E402  (after PTC_LIBRARY)

    with tempfile.NamedTemporaryFile("w", suffix=".txt") as f, \
            ptc.Engine(no_config_file=True, max_tool_calls=a.calls + 10, timeout=600) as e:
        f.write("".join(f"line {i} of a small file\n" for i in range(60)))
        f.flush()
        timed(e, "pass", session="bench")
        one, cell = [], []
        for _ in range(a.rounds):
            one.append(timed(e, "pass")[0])
            cell.append(timed(e, "pass", session="bench")[0])
        code = CALLS.format(path=f.name, n=a.calls)
        ones, cells = [], []
        for _ in range(7):  # interleaved: the machine's drift hits both alike
            ones.append(float(timed(e, code)[1].output))
            cells.append(float(timed(e, code, session="bench")[1].output))
        c_one, c_cell = statistics.median(ones), statistics.median(cells)
    print(f"| measure | one-shot | session cell |")
    print("|---|---:|---:|")
    print(f"| execution, no tool call (median of {a.rounds}), ms | "
          f"{statistics.median(one):.2f} | {statistics.median(cell):.2f} |")
    print(f"| read_file x {a.calls} in a loop, µs per call (median of 7) | {c_one:.1f} | "
          f"{c_cell:.1f} |")
    w, py, cold = pool(a.ptc, min(a.rounds, 100), a.gap)
    print()
    print(f"hello through ptc mcp's warm pool: {w:.2f} ms (JSON-RPC round trip); "
          f"`python3 -c pass` {py:.2f} ms; cold `ptc run` {cold:.2f} ms; "
          f"pool / python3 = {w / py:.2f}x")
    srv = through_server(a.ptc, min(a.rounds, 100), a.gap)
    print()
    print(f"hello through `ptc run` on a running server's warm pool: {srv:.2f} ms (the whole "
          f"process); / python3 = {srv / py:.2f}x")
    rc, ro = remote(ptc, min(a.rounds, 100))
    print()
    print(f"backend exec:sh: a session cell {rc:.2f} ms, a one-shot run {ro:.2f} ms (median)")
    if a.soak:
        (rss0, fd0), (rss1, fd1), wall = soak(a.ptc, a.soak)
        print()
        print(f"soak: {a.soak} cells on one session through `ptc run --session`: "
              f"server RSS {rss0} KiB after 100 cells, {rss1} KiB after {a.soak}; "
              f"open fds {fd0} -> {fd1}; median wall of one `ptc run --session` "
              f"{wall:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
