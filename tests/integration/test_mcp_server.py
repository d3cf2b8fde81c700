# SPDX-License-Identifier: MIT
"""`ptc mcp` (docs/mcp.md), over the raw protocol: JSON-RPC 2.0 lines on the
binary's stdin and stdout.

Every read has a timeout (a reader thread feeds a queue), so a server that
hangs fails the test instead of hanging the suite; the server's process group
is killed when the test ends. Every line the server writes on stdout must be a
JSON-RPC 2.0 message: the reader checks each one and the next read fails the
test otherwise.
"""

import json
import os
import queue
import signal
import subprocess
import threading
import time
import uuid

import pytest

from conftest import (expect_usage_error, kill_group, kill_pids, processes_marked, script_marker,
                      wait_for_file, wait_no_process_marked)

LATEST = "2025-11-25"
EXPOSED = {"read_file", "write_file", "terminal", "search_files", "patch", "web_extract"}

# Writes its pid to @pid (atomically) and sleeps 30 s.
SLEEPER = """\
import os, time
with open({tmp!r}, "w") as f:
    f.write(str(os.getpid()))
os.rename({tmp!r}, {pid!r})
time.sleep(30)
print("not reached")
"""


class BadOutput(AssertionError):
    pass


class McpClient:
    """A raw MCP client on the server's stdin/stdout."""

    def __init__(self, ptc, *args, env=None):
        self.ptc = ptc
        self.argv = [str(ptc.bin), "mcp", "--cwd", str(ptc.workdir)] + [str(a) for a in args]
        # Started outside the workdir so that --cwd is what puts scripts there.
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=ptc.make_env(env), cwd=str(ptc.tmp),
                                     start_new_session=True)
        self.q = queue.Queue()
        self.lines = []            # every stdout line, raw
        self.stashed = []          # messages read while waiting for something else
        self.notifications = []    # every notification seen, in order
        self._stderr = []
        self._next_id = 100
        self._out = threading.Thread(target=self._read_stdout, daemon=True)
        self._err = threading.Thread(target=self._read_stderr, daemon=True)
        self._out.start()
        self._err.start()

    # ---- reader threads ----
    def _read_stdout(self):
        for raw in iter(self.proc.stdout.readline, b""):
            self.lines.append(raw)
            try:
                msg = json.loads(raw.decode("utf-8"))
                if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
                    raise ValueError("not a JSON-RPC 2.0 message")
            except (UnicodeDecodeError, ValueError) as e:
                self.q.put(BadOutput(f"stdout line is not JSON-RPC 2.0 ({e}): {raw[:500]!r}"))
                continue
            if "id" not in msg:
                self.notifications.append(msg)
            self.q.put(msg)
        self.q.put(None)  # EOF

    def _read_stderr(self):
        for raw in iter(self.proc.stderr.readline, b""):
            self._stderr.append(raw.decode("utf-8", "replace"))

    @property
    def stderr(self):
        return "".join(self._stderr)

    def __repr__(self):
        return (f"<ptc mcp {self.argv[2:]!r} rc={self.proc.poll()}\n"
                f"stdout={b''.join(self.lines)[-3000:]!r}\nstderr={self.stderr[-3000:]!r}>")

    # ---- sending ----
    def send_raw(self, data):
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except BrokenPipeError:
            time.sleep(0.2)
            raise AssertionError(f"ptc mcp closed its stdin: {self!r}")

    def send(self, obj):
        self.send_raw(json.dumps(obj).encode("utf-8") + b"\n")

    def notify(self, method, params=None):
        m = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            m["params"] = params
        self.send(m)

    def new_id(self):
        self._next_id += 1
        return self._next_id

    def send_request(self, method, params=None, id=None):
        if id is None:
            id = self.new_id()
        m = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            m["params"] = params
        self.send(m)
        return id

    # ---- receiving ----
    def next_message(self, timeout):
        """The next stdout message, or None at EOF; raises on timeout."""
        try:
            m = self.q.get(timeout=max(timeout, 0))
        except queue.Empty:
            raise TimeoutError(f"no message within {timeout:.1f}s: {self!r}")
        if isinstance(m, BadOutput):
            raise BadOutput(f"{m}\n{self!r}")
        if m is None:
            self.q.put(None)  # stay at EOF
        return m

    def wait_for(self, pred, timeout=10.0, what="message"):
        """The first message (stashed or new) matching @pred; others are stashed."""
        for i, m in enumerate(self.stashed):
            if pred(m):
                return self.stashed.pop(i)
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {what} within {timeout}s: {self!r}")
            try:
                m = self.next_message(left)
            except TimeoutError:
                raise AssertionError(f"no {what} within {timeout}s: {self!r}")
            if m is None:
                raise AssertionError(f"server closed stdout while waiting for {what}: {self!r}")
            if pred(m):
                return m
            self.stashed.append(m)

    def response(self, id, timeout=10.0):
        r = self.wait_for(lambda m: "id" in m and m["id"] == id and "method" not in m,
                          timeout, f"response to id {id!r}")
        assert ("result" in r) != ("error" in r), f"response needs result xor error: {r}"
        return r

    def request(self, method, params=None, timeout=10.0):
        return self.response(self.send_request(method, params), timeout)

    def result(self, method, params=None, timeout=10.0):
        r = self.request(method, params, timeout)
        assert "result" in r, f"{method}: expected a result: {r}\n{self!r}"
        return r["result"]

    def error(self, method, params=None, timeout=10.0):
        r = self.request(method, params, timeout)
        assert "error" in r, f"{method}: expected an error: {r}\n{self!r}"
        return r["error"]

    def drain(self, seconds):
        """Everything that arrives within @seconds (plus what was stashed)."""
        got, self.stashed = self.stashed, []
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return got
            try:
                m = self.next_message(left)
            except TimeoutError:
                return got
            if m is None:
                return got
            got.append(m)

    def ping_ok(self, timeout=10.0):
        assert self.result("ping", timeout=timeout) == {}, self

    # ---- MCP helpers ----
    def initialize(self, version=LATEST):
        res = self.result("initialize", {"protocolVersion": version, "capabilities": {},
                                         "clientInfo": {"name": "pytest", "version": "0"}})
        self.notify("notifications/initialized")
        return res

    def call(self, name, arguments, meta=None, timeout=15.0):
        p = {"name": name, "arguments": arguments}
        if meta is not None:
            p["_meta"] = meta
        return self.request("tools/call", p, timeout)

    def call_code(self, code, wait=15.0, **extra):
        """execute_code with @extra arguments; @wait is how long to wait for the answer."""
        r = self.call("execute_code", dict(code=code, **extra), timeout=wait)
        assert "result" in r, f"expected a result: {r}\n{self!r}"
        return r["result"]

    # ---- end ----
    def close_stdin(self):
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass

    def wait_exit(self, timeout=15.0):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"ptc mcp did not exit within {timeout}s: {self!r}")

    def kill(self):
        kill_group(self.proc.pid)
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                f.close()
            except OSError:
                pass


@pytest.fixture
def mcp(ptc):
    """mcp(*args) starts `ptc mcp --cwd WORKDIR *args`, initialized unless init=False."""
    clients = []

    def start(*args, init=True, env=None):
        c = McpClient(ptc, *args, env=env)
        clients.append(c)
        if init:
            c.initialize()
        return c

    try:
        yield start
    finally:
        for c in clients:
            c.kill()


def check_result(res):
    """A tools/call result: the text content is the structuredContent as JSON."""
    assert isinstance(res.get("content"), list) and len(res["content"]) == 1, res
    c = res["content"][0]
    assert c.get("type") == "text", res
    assert json.loads(c["text"]) == res["structuredContent"], res
    assert isinstance(res.get("isError"), bool), res
    return res["structuredContent"]


def sleeper(ptc):
    tag = uuid.uuid4().hex[:8]
    pid = ptc.workdir / f"pid-{tag}"
    return SLEEPER.format(tmp=str(pid) + ".tmp", pid=str(pid)), pid


def read_pid(path):
    assert wait_for_file(path, 10), f"script did not write {path}"
    return int(path.read_text())


# ------------------------------------------------------------------ initialize

@pytest.mark.parametrize("asked,answered", [("2025-11-25", "2025-11-25"),
                                            ("2025-06-18", "2025-06-18"),
                                            ("1999-01-01", "2025-11-25")])
def test_initialize_negotiates_version(mcp, asked, answered):
    c = mcp(init=False)
    res = c.initialize(asked)
    assert res["protocolVersion"] == answered, res
    assert isinstance(res["capabilities"].get("tools"), dict), res
    assert res["capabilities"]["tools"].get("listChanged", False) is False, res
    assert res["serverInfo"]["name"] == "ptc", res
    assert isinstance(res["serverInfo"].get("version"), str), res
    # notifications/initialized (sent by initialize()) is not answered.
    c.ping_ok()
    assert c.drain(0.3) == [], c


def test_ping(mcp):
    c = mcp()
    r = c.request("ping")
    assert r == {"jsonrpc": "2.0", "id": r["id"], "result": {}}, r


# ------------------------------------------------------------------ tools/list

def test_tools_list_default_is_execute_code(mcp, ptc):
    c = mcp()
    tools = c.result("tools/list")["tools"]
    assert [t["name"] for t in tools] == ["execute_code"], tools
    t = tools[0]
    s = t["inputSchema"]
    assert s["type"] == "object", s
    assert s["properties"]["code"]["type"] == "string", s
    assert s["properties"]["timeout"]["type"] == "number", s
    assert s["required"] == ["code"], s
    for sig in ("read_file(", "write_file(", "terminal(", "search_files(", "patch(",
                "web_extract("):
        assert sig in t["description"], (sig, t["description"])
    assert "web_search(" not in t["description"], t["description"]
    # "the same description `ptc schema` prints"
    sch = ptc.run_ptc(["schema"])
    assert sch.rc == 0 and sch.data, sch
    assert t["description"] == sch.data["description"], (t["description"], sch)


def test_tools_list_restricted_by_tools_option(mcp):
    c = mcp("--tools", "read_file,terminal")
    d = c.result("tools/list")["tools"][0]["description"]
    assert "read_file(" in d and "terminal(" in d, d
    assert "write_file(" not in d and "web_extract(" not in d, d


def test_tools_list_expose_tools(mcp):
    c = mcp("--expose-tools")
    tools = c.result("tools/list")["tools"]
    names = [t["name"] for t in tools]
    assert len(names) == len(set(names)), names
    assert set(names) == EXPOSED | {"execute_code"}, names  # no web_search: no provider
    for t in tools:
        assert t["inputSchema"]["type"] == "object", t
        assert isinstance(t.get("description"), str) and t["description"], t
    rf = next(t for t in tools if t["name"] == "read_file")
    assert "path" in rf["inputSchema"]["properties"], rf


def test_exposed_tool_call(mcp, ptc):
    (ptc.workdir / "hello.txt").write_text("hello mcp\n")
    c = mcp("--expose-tools")
    res = c.result("tools/call", {"name": "read_file", "arguments": {"path": "hello.txt"}})
    d = check_result(res)
    assert res["isError"] is False, res
    assert "hello mcp" in d["content"], d
    res = c.result("tools/call", {"name": "read_file", "arguments": {"path": "missing.txt"}})
    d = check_result(res)
    assert d.get("error"), res
    assert res["isError"] is True, res


# ------------------------------------------------------------------ execute_code

def test_execute_code_success(mcp):
    c = mcp()
    res = c.call_code("print(1+1)")
    d = check_result(res)
    assert res["isError"] is False, res
    assert d["status"] == "success" and d["output"] == "2\n", d
    assert d["tool_calls_made"] == 0 and d["exit_code"] == 0, d
    assert isinstance(d["duration_seconds"], (int, float)), d


def test_execute_code_on_a_remote_backend(mcp, ptc):
    # docs/remote.md: the target is this machine behind `sh`, its agent the binary under test.
    c = mcp("--backend", "exec:sh", env={"PATH": f"{ptc.bin.parent}:{ptc.env['PATH']}"})
    (ptc.workdir / "here.txt").write_text("remote cwd\n")
    d = check_result(c.call_code(
        "from hermes_tools import terminal, read_file\n"
        "print(terminal('echo t')['output'].strip(), read_file('here.txt')['content'])"))
    assert d["status"] == "success", d
    assert d["output"] == "t      1|remote cwd\n     2|\n", d
    assert d["tool_calls_made"] == 2, d
    code, pidfile = sleeper(ptc)
    id = c.send_request("tools/call", {"name": "execute_code", "arguments": {"code": code}})
    read_pid(pidfile)
    try:
        c.notify("notifications/cancelled", {"requestId": id, "reason": "test"})
        left = wait_no_process_marked(script_marker(ptc), 8)
        assert not left, f"script processes {left} still alive 8 s after the cancel"
        c.ping_ok()
    finally:
        kill_pids(processes_marked(script_marker(ptc)))


def test_a_pool_of_targets_spreads_the_calls_under_its_cap(mcp, ptc):
    # Two targets (this machine behind sh, each in a directory of its own), one run each at
    # a time: six concurrent calls go to both, never two at once on one target.
    dirs = [ptc.workdir / "a", ptc.workdir / "b"]
    for d in dirs:
        d.mkdir()
    cfg = ptc.write_config("code_execution:\n  backend_concurrency: 1\n  backend:\n" + "".join(
        f"    - \"exec:sh -c 'cd {d} && exec sh'\"\n" for d in dirs))
    c = mcp("--config", cfg, env={"PATH": f"{ptc.bin.parent}:{ptc.env['PATH']}"})
    code = ("import os, time\n"
            "from hermes_tools import terminal\n"
            "here = terminal('pwd')['output'].strip()\n"
            "t0 = time.time(); time.sleep(0.3); t1 = time.time()\n"
            "print(here, t0, t1)\n")
    ids = [c.send_request("tools/call", {"name": "execute_code", "arguments": {"code": code}})
           for _ in range(6)]
    spans = {}
    for id in ids:
        d = check_result(c.response(id, timeout=60)["result"])
        assert d["status"] == "success", d
        here, t0, t1 = d["output"].split()
        spans.setdefault(here, []).append((float(t0), float(t1)))
    assert sorted(spans) == sorted(str(d) for d in dirs), spans
    for here, sp in spans.items():
        sp.sort()
        for (a0, a1), (b0, b1) in zip(sp, sp[1:]):
            assert b0 >= a1, f"two runs at once on {here}: {sp}"


def test_execute_code_reads_file_in_cwd(mcp, ptc):
    (ptc.workdir / "data.txt").write_text("alpha\nbeta\n")
    c = mcp()
    res = c.call_code("from hermes_tools import read_file\n"
                      "r = read_file('data.txt')\n"
                      "print(r['total_lines'], r['content'].splitlines()[1].split('|', 1)[1])\n")
    d = check_result(res)
    assert res["isError"] is False, res
    assert d["status"] == "success", d
    assert d["output"] == "2 beta\n", d
    assert d["tool_calls_made"] == 1, d


def test_execute_code_script_error(mcp):
    c = mcp()
    res = c.call_code("raise ValueError('boom')")
    d = check_result(res)
    assert res["isError"] is True, res
    assert d["status"] == "error", d
    assert "boom" in d["error"], d


def test_execute_code_timeout(mcp):
    c = mcp()
    t0 = time.monotonic()
    res = c.call_code("import time\ntime.sleep(60)\n", wait=30, timeout=1)
    el = time.monotonic() - t0
    d = check_result(res)
    assert d["status"] == "timeout", d
    assert res["isError"] is True, res
    assert el < 20, f"timeout 1 took {el:.1f}s"  # hang guard: the script sleeps 60 s


def test_execute_code_timeout_capped_by_option(mcp):
    c = mcp("--timeout", "2")
    t0 = time.monotonic()
    res = c.call_code("import time\ntime.sleep(60)\n", wait=30, timeout=100)
    el = time.monotonic() - t0
    d = check_result(res)
    # Uncapped, the script would sleep its 60 s: status "timeout" within the wait is the cap.
    assert d["status"] == "timeout", d
    assert res["isError"] is True, res
    assert el < 25, f"--timeout 2 did not cap a timeout of 100: {el:.1f}s"  # hang guard


def test_concurrent_calls(mcp):
    c = mcp()
    c.ping_ok()
    ids = {}
    # A barrier, not a stopwatch: each call marks its start and waits (up to 20 s) until
    # all three have started; run one after another, the first would print "alone".
    for i in range(3):
        code = (f"import os, time\nopen('started-{i}', 'w').close()\n"
                "for _ in range(400):\n"
                "    if all(os.path.exists(f'started-{j}') for j in range(3)): break\n"
                "    time.sleep(0.05)\n"
                f"print({i} if all(os.path.exists(f'started-{{j}}') for j in range(3))"
                " else 'alone')\n")
        ids[i] = c.send_request("tools/call", {"name": "execute_code",
                                               "arguments": {"code": code}})
    outs = {}
    for i, id in ids.items():
        r = c.response(id, timeout=60)
        outs[i] = check_result(r["result"])
    for i, d in outs.items():
        assert d["status"] == "success" and d["output"] == f"{i}\n", \
            f"3 calls not run concurrently: {(i, d)}"


def test_calls_past_the_running_cap_wait_in_line(mcp, ptc):
    """32 calls run at once; more wait for a place, each at most its own timeout (the wait
    counts against it), a cancelled one gives up its place in line, and the line moves on
    as running calls end."""
    piddir = ptc.workdir / "pids"
    piddir.mkdir()
    # Named by uuid: under isolation auto every script is pid 2 of its own namespace.
    code = ("import os, time, uuid\n"
            f"open(os.path.join({str(piddir)!r}, uuid.uuid4().hex), 'w').close()\n"
            "time.sleep(20)\n")
    c = mcp()
    ids = [c.send_request("tools/call", {"name": "execute_code", "arguments": {"code": code}})
           for _ in range(32)]
    try:
        end = time.monotonic() + 15
        while len(os.listdir(piddir)) < 32 and time.monotonic() < end:
            time.sleep(0.05)
        assert len(os.listdir(piddir)) == 32, f"{len(os.listdir(piddir))} of 32 calls running"
        # In line: one gives up at its timeout, one is cancelled, one runs once a place frees.
        t0 = time.monotonic()
        short = c.send_request("tools/call", {"name": "execute_code",
                                              "arguments": {"code": "print('never')",
                                                            "timeout": 1}})
        gone = c.send_request("tools/call", {"name": "execute_code",
                                             "arguments": {"code": "print('never')"}})
        waits = c.send_request("tools/call", {"name": "execute_code",
                                              "arguments": {"code": "print('my turn')"}})
        r = c.response(short, timeout=15)  # hang guard
        # Not early; the text below (not a stopwatch) shows it gave up at its own timeout.
        assert time.monotonic() - t0 > 0.9, r
        res = r["result"]
        assert res["isError"] is True, r
        assert "not run: the call's whole timeout (1 s) passed waiting for one of the 32 " \
            "calls running at once" in res["content"][0]["text"], r
        c.notify("notifications/cancelled", {"requestId": gone, "reason": "test"})
        c.ping_ok()
        assert len(os.listdir(piddir)) == 32
        c.notify("notifications/cancelled", {"requestId": ids[0], "reason": "test"})
        d = check_result(c.response(waits, timeout=15)["result"])
        assert d["status"] == "success" and d["output"] == "my turn\n", d
    finally:
        for id in ids:
            c.notify("notifications/cancelled", {"requestId": id, "reason": "test"})
        alive = wait_no_process_marked(script_marker(ptc), 10)
        kill_pids(alive)
    assert alive == [], f"cancelled scripts still alive: {alive}"
    # No answer for the cancelled ones (the MCP specification).
    assert [m for m in c.drain(0.3) if m.get("id") in ids + [gone]] == []


def test_sixty_four_calls_at_once(mcp):
    """Twice the running cap at once: every call answered, right, within its timeout."""
    c = mcp()
    t0 = time.monotonic()
    ids = {i: c.send_request("tools/call", {"name": "execute_code", "arguments": {
        "code": f"import time\ntime.sleep(0.3)\nprint({i})\n", "timeout": 60}})
        for i in range(64)}
    for i, id in ids.items():
        d = check_result(c.response(id, timeout=90)["result"])
        assert d["status"] == "success" and d["output"] == f"{i}\n", (i, d)
    assert time.monotonic() - t0 < 60


def test_string_ids_and_unicode(mcp):
    c = mcp()
    c.send_request("ping", id="p-\u00e9")
    assert c.response("p-\u00e9")["result"] == {}
    c.send_request("tools/call", {"name": "execute_code",
                                  "arguments": {"code": "print('h\u00e9llo \u2603')"}}, id="call-1")
    r = c.response("call-1", timeout=15)
    d = check_result(r["result"])
    assert d["output"] == "h\u00e9llo \u2603\n", d


# ------------------------------------------------------------------ progress

PROGRESS_SCRIPT = """\
from hermes_tools import read_file
for _ in range(3):
    read_file("p.txt")
print("done")
"""


def test_progress_notifications(mcp, ptc):
    (ptc.workdir / "p.txt").write_text("x\n")
    c = mcp()
    c.ping_ok()
    id = c.send_request("tools/call", {"name": "execute_code",
                                       "arguments": {"code": PROGRESS_SCRIPT},
                                       "_meta": {"progressToken": "tok-1"}})
    r = c.response(id, timeout=15)
    before, c.stashed = c.stashed, []  # what arrived before the response
    d = check_result(r["result"])
    assert d["status"] == "success" and d["tool_calls_made"] == 3, d
    prog = [n for n in before if n.get("method") == "notifications/progress"]
    assert len(prog) >= 3, (before, c.notifications)
    assert len(before) == len(prog), before
    for n in prog:
        assert n["params"]["progressToken"] == "tok-1", n
    vals = [n["params"]["progress"] for n in prog]
    assert vals[:3] == [1, 2, 3], vals
    assert vals == sorted(vals), vals
    for n in prog[:3]:
        assert "read_file" in n["params"]["message"], n
        assert n["params"]["message"] == f"read_file (call {n['params']['progress']})", n
    assert c.drain(0.3) == [], "messages after the response"


def test_no_progress_without_token(mcp, ptc):
    (ptc.workdir / "p.txt").write_text("x\n")
    c = mcp()
    res = c.call_code(PROGRESS_SCRIPT)
    d = check_result(res)
    assert d["status"] == "success" and d["tool_calls_made"] == 3, d
    c.ping_ok()
    assert c.notifications == [], c.notifications


# ------------------------------------------------------------------ cancellation

def test_cancel_kills_script_and_sends_no_response(mcp, ptc):
    c = mcp()
    code, pidfile = sleeper(ptc)
    id = c.send_request("tools/call", {"name": "execute_code", "arguments": {"code": code}})
    read_pid(pidfile)
    assert processes_marked(script_marker(ptc)), "the running script is not found"
    try:
        c.notify("notifications/cancelled", {"requestId": id, "reason": "test"})
        left = wait_no_process_marked(script_marker(ptc), 10)
        assert not left, f"script processes {left} still alive 3 s after the cancel"
        got = c.drain(3)
        assert [m for m in got if m.get("id") == id] == [], got
        c.ping_ok()
        end = time.monotonic() + 2
        while time.monotonic() < end and not any(
                w in c.stderr.lower() for w in ("interrupt", "cancel")):
            time.sleep(0.05)
        assert any(w in c.stderr.lower() for w in ("interrupt", "cancel")), c
    finally:
        kill_pids(processes_marked(script_marker(ptc)))


def test_cancel_one_of_several_concurrent_calls(mcp, ptc):
    # Every call is an execution of the same server process: cancelling one leaves the
    # others running to their results.
    c = mcp()
    code, pidfile = sleeper(ptc)
    slow = c.send_request("tools/call", {"name": "execute_code", "arguments": {"code": code}})
    others = [c.send_request("tools/call", {"name": "execute_code", "arguments": {
        "code": f"import time\ntime.sleep(2)\nprint('other {i}')\n"}}) for i in range(3)]
    read_pid(pidfile)
    try:
        t0 = time.monotonic()
        c.notify("notifications/cancelled", {"requestId": slow, "reason": "test"})
        for i, id in enumerate(others):
            d = check_result(c.response(id, timeout=15)["result"])
            assert d["status"] == "success" and d["output"] == f"other {i}\n", d
        assert time.monotonic() - t0 < 25  # hang guard: the cancelled script sleeps 30 s
        got = c.drain(1)
        assert [m for m in got if m.get("id") == slow] == [], got
        # Only the cancelled script is gone; the server goes on.
        assert wait_no_process_marked(script_marker(ptc), 10) == []
        assert check_result(c.call_code("print('next')"))["output"] == "next\n"
    finally:
        kill_pids(processes_marked(script_marker(ptc)))


def test_cancel_unknown_request_is_ignored(mcp):
    c = mcp()
    c.notify("notifications/cancelled", {"requestId": 4242, "reason": "nothing"})
    c.ping_ok()
    res = c.call_code("print('still here')")
    assert check_result(res)["output"] == "still here\n", res


# ------------------------------------------------------------------ errors

def test_parse_error(mcp):
    c = mcp()
    c.send_raw(b"this is {not json\n")
    r = c.wait_for(lambda m: "error" in m, 5, "parse error")
    assert r["id"] is None, r
    assert r["error"]["code"] == -32700, r
    assert isinstance(r["error"].get("message"), str), r
    c.ping_ok()


def test_array_is_invalid_request(mcp):
    c = mcp()
    c.send_raw(b"[1,2]\n")
    r = c.wait_for(lambda m: "error" in m, 5, "invalid request error")
    assert r["id"] is None, r
    assert r["error"]["code"] == -32600, r
    c.ping_ok()


def test_request_without_method(mcp):
    c = mcp()
    c.send_raw(b'{"jsonrpc":"2.0","id":5}\n')
    r = c.response(5, timeout=5)
    assert r["error"]["code"] == -32600, r
    c.ping_ok()


def test_unknown_method(mcp):
    c = mcp()
    e = c.error("foo/bar")
    assert e["code"] == -32601, e
    c.ping_ok()


def test_tools_call_without_name(mcp):
    c = mcp()
    e = c.error("tools/call", {"arguments": {"code": "print(1)"}})
    assert e["code"] == -32602, e
    c.ping_ok()


def test_tools_call_params_not_an_object(mcp):
    c = mcp()
    e = c.error("tools/call", [{"name": "execute_code"}])
    assert e["code"] == -32602, e
    c.ping_ok()


def test_method_not_a_string(mcp):
    c = mcp()
    c.send_raw(b'{"jsonrpc":"2.0","id":8,"method":5}\n')
    r = c.response(8, timeout=5)
    assert r["error"]["code"] == -32600, r
    c.ping_ok()


@pytest.mark.parametrize("arguments", [
    {},                                   # code missing
    {"code": 5},                          # code not a string
    "print(1)",                           # arguments not an object
    {"code": "print(1)", "timeout": -1},  # timeout not positive
    {"code": "print(1)", "timeout": 0},
    {"code": "print(1)", "timeout": "10"},
], ids=["no-code", "code-int", "args-string", "timeout-neg", "timeout-zero", "timeout-str"])
def test_execute_code_bad_params(mcp, arguments):
    c = mcp()
    e = c.error("tools/call", {"name": "execute_code", "arguments": arguments})
    assert e["code"] == -32602, e
    c.ping_ok()


def test_unknown_tool_is_error_result(mcp):
    c = mcp()
    r = c.call("nope", {})
    assert "result" in r, r
    res = r["result"]
    assert res["isError"] is True, res
    text = res["content"][0]["text"]
    assert res["content"][0]["type"] == "text", res
    assert "nope" in text, res
    assert "execute_code" in text or "read_file" in text, f"enabled tools not named: {res}"
    c.ping_ok()


def test_unknown_notification_gets_no_response(mcp):
    c = mcp()
    c.notify("notifications/whatever", {"x": 1})
    c.notify("foo/bar")
    c.ping_ok()
    assert c.drain(0.3) == [], c


def test_oversized_line(mcp):
    c = mcp()
    c.send_raw(b"a" * (17 * 1024 * 1024) + b"\n")
    r = c.wait_for(lambda m: "error" in m, 15, "error for the 17 MiB line")
    assert r["error"]["code"] == -32600, r
    c.ping_ok(timeout=10)
    res = c.call_code("print('ok')")
    assert check_result(res)["output"] == "ok\n", res


def test_stdout_carries_only_jsonrpc(mcp):
    c = mcp()
    c.send_raw(b"garbage\n")
    c.error("foo/bar")
    c.call_code("import sys\nprint('to stdout')\nprint('to stderr', file=sys.stderr)\n")
    c.close_stdin()
    assert c.wait_exit(5) == 0, c
    c._out.join(5)
    assert c.lines, c
    for raw in c.lines:
        assert raw.endswith(b"\n"), raw
        m = json.loads(raw.decode("utf-8"))
        assert isinstance(m, dict) and m.get("jsonrpc") == "2.0", raw


# ------------------------------------------------------------------ EOF and CLI

def test_eof_exits_0_and_kills_running_call(mcp, ptc):
    c = mcp()
    code, pidfile = sleeper(ptc)
    c.send_request("tools/call", {"name": "execute_code", "arguments": {"code": code}})
    read_pid(pidfile)
    assert processes_marked(script_marker(ptc)), "the running script is not found"
    try:
        c.close_stdin()
        assert c.wait_exit(20) == 0, c  # hang guard: the script sleeps 30 s
        left = wait_no_process_marked(script_marker(ptc), 10)
        assert not left, f"script processes {left} survived the server's exit"
    finally:
        kill_pids(processes_marked(script_marker(ptc)))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP],
                         ids=["SIGTERM", "SIGINT", "SIGHUP"])
def test_stop_signal_exits_0_and_kills_running_call(mcp, ptc, sig):
    # As EOF: the running call is interrupted (and not answered), the exit status is 0.
    c = mcp()
    code, pidfile = sleeper(ptc)
    id = c.send_request("tools/call", {"name": "execute_code", "arguments": {"code": code}})
    read_pid(pidfile)
    try:
        os.kill(c.proc.pid, sig)
        assert c.wait_exit(20) == 0, c  # hang guard: the script sleeps 30 s
        left = wait_no_process_marked(script_marker(ptc), 10)
        assert not left, f"script processes {left} survived the server's exit"
        c._out.join(5)
        assert not [l for l in c.lines if json.loads(l).get("id") == id], c
    finally:
        kill_pids(processes_marked(script_marker(ptc)))


def test_eof_when_idle_exits_0(mcp):
    c = mcp()
    c.close_stdin()
    assert c.wait_exit(5) == 0, c


SECRET = "sk-mcpsecret0123456789abcdefXYZ"


def test_secrets_scrubbed_and_redacted(mcp, ptc):
    # The server hosts the executions itself: it takes the secret out of its own environment
    # (the scripts and /proc/<pid>/environ never see it) and redacts its value wherever a
    # tool or the output carries it, for execute_code and for an exposed tool alike.
    (ptc.workdir / "leak.txt").write_text(f"key={SECRET}\n")
    c = mcp("--expose-tools", env={"MY_SERVICE_API_KEY": SECRET})
    d = check_result(c.call_code(
        "import os\nfrom hermes_tools import read_file\n"
        "print('env:', os.environ.get('MY_SERVICE_API_KEY'))\n"
        "print(read_file('leak.txt')['content'])\n"))
    assert d["status"] == "success", d
    assert "env: None" in d["output"], d
    assert "key=" in d["output"] and SECRET not in d["output"], d
    res = c.result("tools/call", {"name": "read_file", "arguments": {"path": "leak.txt"}})
    assert "key=" in json.dumps(res) and SECRET not in json.dumps(res), res
    try:
        with open(f"/proc/{c.proc.pid}/environ", "rb") as f:
            assert SECRET.encode() not in f.read()
    except PermissionError:
        pass  # non-dumpable: not even readable
    assert all(SECRET.encode() not in l for l in c.lines)


def test_bad_option_is_usage_error(ptc):
    expect_usage_error(ptc.run_ptc(["mcp", "--bogus"]), "bogus")


def test_help(ptc):
    r = ptc.run_ptc(["mcp", "--help"])
    assert r.rc == 0, r
    text = r.stdout.decode()
    assert "usage" in text.lower(), r
    for opt in ("--cwd", "--timeout", "--expose-tools", "--tools"):
        assert opt in text, (opt, r)


# ------------------------------------------------------------------ containment

DAEMON_MARKED = """
import os, time
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        open({ready!r}, "w").write("1")
        os.execv("/bin/sleep", ["sleep", {marker!r}])
    os._exit(0)
os.waitpid(pid, 0)
while not os.path.exists({ready!r}):
    time.sleep(0.01)
time.sleep({linger})
print("{name} done")
"""


def sleep_marked(marker):
    """Host pids of `sleep MARKER` processes."""
    found = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    if f.read().split(b"\0")[1:2] == [marker.encode()]:
                        found.append(int(d))
            except OSError:
                pass
    return found


@pytest.mark.parametrize("isolation", ["none", "auto"])
def test_script_daemons_die_with_their_own_call(mcp, ptc, isolation):
    """Executions run in the server's process, at once: a script's double-forked daemon dies
    when that script ends, and never another call's (each script has an init of its own)."""
    c = mcp("--isolation", isolation)
    tag = uuid.uuid4().int % 10**9
    m_short, m_long = f"300.{tag}1", f"300.{tag}2"
    short = DAEMON_MARKED.format(ready=str(ptc.workdir / "r1"), marker=m_short, linger=0.2,
                                 name="short")
    long = DAEMON_MARKED.format(ready=str(ptc.workdir / "r2"), marker=m_long, linger=3,
                                name="long")
    try:
        id_long = c.send_request("tools/call", {"name": "execute_code",
                                                "arguments": {"code": long}})
        assert wait_for_file(ptc.workdir / "r2", 10)
        d = check_result(c.result("tools/call", {"name": "execute_code",
                                                 "arguments": {"code": short}}, timeout=15))
        assert d["status"] == "success" and d["output"] == "short done\n", d
        end = time.monotonic() + 5
        while sleep_marked(m_short) and time.monotonic() < end:
            time.sleep(0.05)
        assert not sleep_marked(m_short), "the short script's daemon outlived it"
        assert sleep_marked(m_long), "the other call's daemon was killed"
        d = check_result(c.response(id_long, timeout=15)["result"])
        assert d["status"] == "success" and d["output"] == "long done\n", d
        end = time.monotonic() + 5
        while sleep_marked(m_long) and time.monotonic() < end:
            time.sleep(0.05)
        assert not sleep_marked(m_long), "the long script's daemon outlived it"
    finally:
        kill_pids(sleep_marked(m_short) + sleep_marked(m_long))
