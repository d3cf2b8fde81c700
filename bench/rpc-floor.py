#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""One tool call's round trip in ptc against its floor, measured in the same run.

A script calls read_file N times in a loop and times the loop itself (so no start, import or
connection is counted); the same interpreter runs the same client loop against
bench/rpc-floor.c, a server that only answers each request line with a canned answer of the
same size as ptc's. Two floors:

  transport    build the request as the generated module does, sendall(), recv() to the
               newline: the kernel's part (two writes, two reads, two wakeups) and Python's
               socket calls
  + JSON       the same plus the generated module's JSON work (json.loads of the answer)

Rounds interleave floor, ptc (and --baseline), so the machine's drift hits all alike. Prints
median microseconds per call of each and ptc's ratio to the transport floor.

    bench/rpc-floor.py [--ptc build/ptc] [--baseline OLD/build/ptc] [--calls 2000]
                       [--rounds 10] [--isolation auto] [--python /usr/bin/python3]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchenv import ptc_env

ROOT = Path(__file__).resolve().parents[1]

CLIENT = r'''
import json, socket, sys, time
path, n, parse = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(path)
dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
token = dumps("0" * 64).encode("utf-8")
name = dumps("read_file").encode("utf-8")
REQ = b'{"id":%d,"token":%s,"tool":%s,"args":%s}\n'
args = {"path": sys.argv[4]}

def call(rid):
    sock.sendall(REQ % (rid, token, name, dumps(args).encode("utf-8")))
    data = sock.recv(65536)
    if data[-1:] != b"\n":
        buf = bytearray(data)
        while not buf.endswith(b"\n"):
            more = sock.recv(1 << 20)
            if not more:
                raise SystemExit("server closed")
            buf += more
        data = buf
    if parse:
        resp = json.loads(data)
        if isinstance(resp.get("result"), str):
            json.loads(resp["result"])

call(0)
t = time.perf_counter()
for i in range(n):
    call(i + 1)
print((time.perf_counter() - t) / n * 1e6)
'''

SCRIPT = r'''
import json, sys, time
from hermes_tools import read_file
path = %r
r = read_file(path)
if "error" in r:
    raise SystemExit(r["error"])
print("ANSWER " + json.dumps(r, ensure_ascii=False, separators=(",", ":")))
t = time.perf_counter()
for i in range(%d):
    read_file(path)
print("PERCALL %%f" %% ((time.perf_counter() - t) / %d * 1e6))
'''


def fixture(tmp):
    """A 40-line text file like the shared bench's small.txt."""
    p = Path(tmp) / "small.txt"
    p.write_text("".join(f"line {i:02d}: the quick brown fox jumps over the lazy dog\n"
                         for i in range(1, 41)))
    return str(p)


def run_ptc(binary, script, env, isolation, calls, cwd):
    out = subprocess.run([binary, "run", script, "--isolation", isolation, "--tools", "read_file",
                          "--max-tool-calls", str(calls + 10), "--timeout", "300"],
                         capture_output=True, text=True, env=env, cwd=cwd, check=False)
    try:
        res = json.loads(out.stdout)
    except ValueError:
        raise SystemExit(f"{binary}: no result: {out.stdout!r} {out.stderr!r}")
    if res.get("status") != "success":
        raise SystemExit(f"{binary}: {res}")
    answer, per_call = None, None
    for line in res["output"].splitlines():
        if line.startswith("ANSWER "):
            answer = line[len("ANSWER "):]
        elif line.startswith("PERCALL "):
            per_call = float(line.split()[1])
    return answer, per_call


def run_floor(py, server, answer_file, calls, parse, tmp, path):
    sock = os.path.join(tmp, "floor.sock")
    if os.path.exists(sock):
        os.unlink(sock)
    srv = subprocess.Popen([server, sock, answer_file], stdout=subprocess.PIPE)
    try:
        if srv.stdout.readline() != b"ready\n":
            raise SystemExit("rpc-floor server did not start")
        out = subprocess.run([py, "-c", CLIENT, sock, str(calls), "1" if parse else "0", path],
                             capture_output=True, text=True, check=True)
        return float(out.stdout)
    finally:
        srv.kill()
        srv.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ptc", default=str(ROOT / "build" / "ptc"))
    ap.add_argument("--baseline", help="an older ptc binary, measured in the same rounds")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--isolation", default="auto")
    ap.add_argument("--python", default="/usr/bin/python3")
    a = ap.parse_args()
    a.ptc = os.path.abspath(a.ptc)
    if a.baseline:
        a.baseline = os.path.abspath(a.baseline)

    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise SystemExit("rpc-floor.py needs a C compiler (cc) for bench/rpc-floor.c")
    with tempfile.TemporaryDirectory(prefix="ptc-rpc-floor-") as tmp:
        server = os.path.join(tmp, "rpc-floor")
        subprocess.run([cc, "-O2", "-o", server, str(ROOT / "bench" / "rpc-floor.c")],
                       check=True)
        path = fixture(tmp)
        env = ptc_env(tmp, a.python)
        script = os.path.join(tmp, "loop.py")
        Path(script).write_text(SCRIPT % (path, a.calls, a.calls))

        answer, _ = run_ptc(a.ptc, script, env, a.isolation, 1, tmp)
        # What ptc writes back: the result object inside the response line.
        answer_file = os.path.join(tmp, "answer")
        Path(answer_file).write_text('{"id":1,"result":' + answer + "}\n")
        answer_size = os.path.getsize(answer_file)

        rows = {"floor: transport": [], "floor: transport + JSON": [], "ptc": []}
        if a.baseline:
            rows["baseline"] = []
        for _ in range(a.rounds):
            rows["floor: transport"].append(
                run_floor(a.python, server, answer_file, a.calls, False, tmp, path))
            rows["floor: transport + JSON"].append(
                run_floor(a.python, server, answer_file, a.calls, True, tmp, path))
            rows["ptc"].append(run_ptc(a.ptc, script, env, a.isolation, a.calls, tmp)[1])
            if a.baseline:
                rows["baseline"].append(
                    run_ptc(a.baseline, script, env, a.isolation, a.calls, tmp)[1])

    floor = statistics.median(rows["floor: transport"])
    print(f"read_file round trip, {a.calls} calls x {a.rounds} rounds, isolation "
          f"{a.isolation}, {a.python}, answer {answer_size} bytes")
    print()
    print("| what | median us/call | min | max | / transport floor |")
    print("|---|---:|---:|---:|---:|")
    for name, v in rows.items():
        med = statistics.median(v)
        print(f"| {name} | {med:.1f} | {min(v):.1f} | {max(v):.1f} | {med / floor:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
