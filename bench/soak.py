#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Soak and load: ptc run many times, ptc mcp for a long time and under many calls at once.

    bench/soak.py runs  [--ptc build/ptc] [--n 10000]   N sequential `ptc run`s
    bench/soak.py mcp   [--ptc build/ptc] [--n 10000]   N execute_code calls, one `ptc mcp`
    bench/soak.py load  [--ptc build/ptc] [--n 64]      N executions at once: through one
                                                        `ptc mcp`, then as N `ptc run`s

Each script makes real tool calls (write_file, read_file, terminal every tenth) and prints
what it read; every result is checked (status, output, tool_calls_made). A benchmark, not a
test: it prints numbers for bench/RESULTS.md and exits 1 when a result was wrong or
something was left behind.

runs: failures, leftover processes (anything whose command line names the run's scratch
directory, after the last run), staging directories left in TMPDIR, wall time per run.
mcp:  the server's RSS and open descriptors sampled every --every calls, and their slope
(least squares, per 1,000 calls) over the second half (the first half warms caches and
pools); failures; leftover processes after the server exits.
load: for each way, every result's status and wall time (none may pass its timeout), the
peak of the summed RSS of ptc and everything under it, sampled every 20 ms.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from benchenv import ptc_env  # noqa: E402

SCRIPT = """
from hermes_tools import write_file, read_file, terminal
name = "soak-%d.txt" % N
write_file(name, "line %d\\n" % N)
text = read_file(name)["content"].splitlines()[0]
extra = terminal("echo t%d" % N)["output"].strip() if N % 10 == 0 else "-"
print(text.strip(), extra)
"""


def script_for(i):
    return "N = %d\n" % i + SCRIPT


def expected(i):
    return "1|line %d %s\n" % (i, "t%d" % i if i % 10 == 0 else "-")


def calls_for(i):
    return 3 if i % 10 == 0 else 2


def check(i, res):
    """None when @res is the right result for script @i, else why not."""
    if not isinstance(res, dict):
        return "no result: %r" % (res,)
    if res.get("status") != "success" or res.get("output") != expected(i) \
            or res.get("tool_calls_made") != calls_for(i):
        return "wrong result: %s" % json.dumps(res)[:300]
    return None


def proc_rss_kib(pid):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def fd_count(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def processes_naming(marker):
    """Pids whose command line contains @marker (not this process)."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{d}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmd:
            found.append(int(d))
    return found


def tree_rss_kib(roots):
    """Summed RSS of the processes @roots and their descendants."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(d))
    total, todo, seen = 0, list(roots), set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        total += proc_rss_kib(p)
        todo.extend(children.get(p, []))
    return total


def slope_per_1000(xs, ys):
    """Least-squares slope of ys over xs, per 1,000 of x."""
    n = len(xs)
    if n < 2:
        return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    den = sum((x - mx) ** 2 for x in xs)
    return 1000 * sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else 0.0


class Scratch:
    def __init__(self, python):
        self.dir = Path(tempfile.mkdtemp(prefix="ptc-soak-"))
        self.work = self.dir / "work"
        self.tmp = self.dir / "tmp"
        self.work.mkdir()
        self.tmp.mkdir()
        self.env = ptc_env(str(self.dir), python)
        self.env["TMPDIR"] = str(self.tmp)
        self.env["XDG_CACHE_HOME"] = str(self.dir / "cache")

    def leftovers(self):
        return processes_naming(str(self.dir))

    def staging_left(self):
        return [p.name for p in self.tmp.iterdir()]

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


class Mcp:
    """One `ptc mcp` over pipes; requests may be in flight at once (a reader thread)."""

    def __init__(self, binary, scratch):
        self.proc = subprocess.Popen([binary, "mcp", "--cwd", str(scratch.work)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=scratch.env,
                                     cwd=str(scratch.work))
        self.lock = threading.Lock()
        self.waiting = {}
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "soak", "version": "1"}})

    def _read(self):
        for line in self.proc.stdout:
            msg = json.loads(line)
            with self.lock:
                box = self.waiting.pop(msg.get("id"), None)
            if box is not None:
                box.append(msg)
                box[0].set()

    def send(self, method, params):
        box = [threading.Event()]
        with self.lock:
            self.next_id += 1
            rid = self.next_id
            self.waiting[rid] = box
            self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                                               "params": params}) + "\n").encode())
            self.proc.stdin.flush()
        return box

    def request(self, method, params, timeout=120):
        box = self.send(method, params)
        if not box[0].wait(timeout):
            raise SystemExit(f"no answer to {method} within {timeout} s")
        return box[1]

    @staticmethod
    def result_of(msg):
        try:
            return msg["result"]["structuredContent"]
        except (KeyError, TypeError):
            return msg

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def cmd_runs(a):
    s = Scratch(a.python)
    failures, times = [], []
    t_all = time.monotonic()
    try:
        for i in range(a.n):
            t0 = time.monotonic()
            p = subprocess.run([a.ptc, "run", "--timeout", "30", "-c", script_for(i)],
                               cwd=str(s.work), env=s.env, capture_output=True, timeout=120)
            times.append(time.monotonic() - t0)
            try:
                res = json.loads(p.stdout)
            except ValueError:
                res = None
            why = check(i, res)
            if why:
                failures.append((i, why))
            if a.progress and (i + 1) % a.progress == 0:
                print(f"  {i + 1} runs, {len(failures)} failures", file=sys.stderr)
        time.sleep(0.5)
        left, staging = s.leftovers(), s.staging_left()
    finally:
        s.close()
    total = time.monotonic() - t_all
    print(f"runs: {a.n} sequential `ptc run`, {sum(calls_for(i) for i in range(a.n))} tool "
          f"calls, {total:.0f} s")
    print(f"  failures: {len(failures)}; leftover processes: {len(left)}; staging "
          f"directories left: {len(staging)}")
    print(f"  wall per run: median {statistics.median(times) * 1000:.1f} ms, "
          f"max {max(times) * 1000:.0f} ms")
    for i, why in failures[:5]:
        print(f"  run {i}: {why}")
    return 1 if failures or left or staging else 0


def cmd_mcp(a):
    s = Scratch(a.python)
    srv = Mcp(a.ptc, s)
    pid = srv.proc.pid
    failures, samples = [], []
    t_all = time.monotonic()
    try:
        for i in range(a.n):
            msg = srv.request("tools/call", {"name": "execute_code",
                                             "arguments": {"code": script_for(i)}})
            why = check(i, Mcp.result_of(msg))
            if why:
                failures.append((i, why))
            if (i + 1) % a.every == 0:
                samples.append((i + 1, proc_rss_kib(pid), fd_count(pid)))
                if a.progress and (i + 1) % a.progress == 0:
                    print(f"  {i + 1} calls, RSS {samples[-1][1]} KiB, "
                          f"{samples[-1][2]} fds", file=sys.stderr)
        srv.close()
        time.sleep(0.5)
        left = s.leftovers()
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()
        s.close()
    total = time.monotonic() - t_all
    half = samples[len(samples) // 2:]
    xs = [c for c, _, _ in half]
    rss_slope = slope_per_1000(xs, [r for _, r, _ in half])
    fd_slope = slope_per_1000(xs, [f for _, _, f in half])
    print(f"mcp: {a.n} execute_code calls through one `ptc mcp`, {total:.0f} s "
          f"({total / a.n * 1000:.1f} ms a call)")
    print(f"  failures: {len(failures)}; leftover processes after it exited: {len(left)}")
    print(f"  server RSS: {samples[0][1]} KiB after {samples[0][0]} calls, {samples[-1][1]} "
          f"KiB after {samples[-1][0]}; slope over the second half {rss_slope:+.1f} KiB per "
          f"1,000 calls")
    print(f"  server fds: {samples[0][2]} after {samples[0][0]} calls, {samples[-1][2]} after "
          f"{samples[-1][0]}; slope over the second half {fd_slope:+.2f} per 1,000 calls")
    for i, why in failures[:5]:
        print(f"  call {i}: {why}")
    return 1 if failures or left else 0


def sample_peak(root_pids, stop, peak):
    while not stop.is_set():
        peak[0] = max(peak[0], tree_rss_kib(root_pids()))
        stop.wait(0.02)


LOAD_TIMEOUT = 60


def cmd_load(a):
    code = "import time\ntime.sleep(0.5)\n"
    rc = 0
    # Through one ptc mcp: N calls in flight at once.
    s = Scratch(a.python)
    srv = Mcp(a.ptc, s)
    stop, peak = threading.Event(), [0]
    sampler = threading.Thread(target=sample_peak, args=(lambda: [srv.proc.pid], stop, peak))
    sampler.start()
    t0 = time.monotonic()
    boxes = [(i, time.monotonic(), srv.send("tools/call", {
        "name": "execute_code",
        "arguments": {"code": code + script_for(i), "timeout": LOAD_TIMEOUT}}))
        for i in range(a.n)]
    walls, failures = [], []
    for i, t_sent, box in boxes:
        if not box[0].wait(LOAD_TIMEOUT + 30):
            failures.append((i, "no answer"))
            continue
        walls.append(time.monotonic() - t0)
        why = check(i, Mcp.result_of(box[1]))
        if why:
            failures.append((i, why))
    total = time.monotonic() - t0
    stop.set()
    sampler.join()
    srv.close()
    s.close()
    print(f"load: {a.n} execute_code calls at once through one `ptc mcp` ({os.cpu_count()} "
          f"CPUs): all answered in {total:.1f} s, the slowest after {max(walls or [0]):.1f} s "
          f"(timeout {LOAD_TIMEOUT} s)")
    print(f"  failures: {len(failures)}; peak RSS of the server and its runs: "
          f"{peak[0] / 1024:.0f} MiB")
    for i, why in failures[:5]:
        print(f"  call {i}: {why}")
    rc |= 1 if failures else 0

    # N ptc run processes at once.
    s = Scratch(a.python)
    procs = []
    stop, peak = threading.Event(), [0]
    sampler = threading.Thread(target=sample_peak,
                               args=(lambda: [p.pid for p, _ in list(procs)], stop, peak))
    sampler.start()
    t0 = time.monotonic()
    for i in range(a.n):
        procs.append((subprocess.Popen([a.ptc, "run", "--timeout", str(LOAD_TIMEOUT), "-c",
                                        code + script_for(i)],
                                       cwd=str(s.work), env=s.env, stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL), i))
    walls, failures = [], []
    for p, i in procs:
        out, _ = p.communicate(timeout=LOAD_TIMEOUT + 30)
        walls.append(time.monotonic() - t0)
        try:
            res = json.loads(out)
        except ValueError:
            res = None
        why = check(i, res)
        if why:
            failures.append((i, why))
    total = time.monotonic() - t0
    stop.set()
    sampler.join()
    time.sleep(0.5)
    left = s.leftovers()
    s.close()
    print(f"load: {a.n} `ptc run`s at once: all done in {total:.1f} s, the slowest after "
          f"{max(walls):.1f} s (timeout {LOAD_TIMEOUT} s)")
    print(f"  failures: {len(failures)}; leftover processes: {len(left)}; peak summed RSS of "
          f"the runs: {peak[0] / 1024:.0f} MiB")
    for i, why in failures[:5]:
        print(f"  run {i}: {why}")
    return rc | (1 if failures or left else 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["runs", "mcp", "load"])
    ap.add_argument("--ptc", default=str(ROOT / "build" / "ptc"))
    ap.add_argument("--n", type=int)
    ap.add_argument("--every", type=int, default=100, help="mcp: sample every N calls")
    ap.add_argument("--progress", type=int, default=0, help="say how far every N")
    ap.add_argument("--python", default="/usr/bin/python3",
                    help="the interpreter ptc finds as python3 (default /usr/bin/python3)")
    a = ap.parse_args()
    a.ptc = os.path.abspath(a.ptc)
    if a.n is None:
        a.n = 64 if a.what == "load" else 10000
    return {"runs": cmd_runs, "mcp": cmd_mcp, "load": cmd_load}[a.what](a)


if __name__ == "__main__":
    sys.exit(main())
