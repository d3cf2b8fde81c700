# SPDX-License-Identifier: MIT
"""`ptc mcp` (docs/mcp.md) driven by the official TypeScript MCP SDK's client.

No mock of the protocol: each test runs one node script of tests/mcp/ that
starts `ptc mcp --cwd <workdir> ...` with the SDK's Client and
StdioClientTransport, does one scenario and prints one JSON object with what
it observed (see tests/mcp/lib.mjs). The SDK, and the reference servers kept
for ptc's MCP client side, are pinned in tests/mcp/package.json and its lock
file; CI installs them with `npm ci --prefix tests/mcp`. Without them these
tests fail (they do not skip).

Every scenario run has a hard timeout and its process group is killed on
expiry. Checked for every scenario: each line ptc wrote to stdout is a
JSON-RPC 2.0 message, the SDK reported no error (unless the scenario sent bad
input on purpose), and ptc exited 0 by itself once the client closed stdin.
"""

import json
import shutil
import subprocess
import time

import pytest

from conftest import REPO_ROOT, kill_group

MCP_DIR = REPO_ROOT / "tests" / "mcp"
INSTALL_HINT = "run `npm ci --prefix tests/mcp` (CI does)"
SCENARIO_TIMEOUT = 30.0
LATEST = "2025-11-25"


def _installed_version(name):
    p = MCP_DIR / "node_modules" / name / "package.json"
    try:
        return json.loads(p.read_text(encoding="utf-8"))["version"]
    except (OSError, ValueError, KeyError):
        return None


def check_node_setup(env_path):
    """Fail (not skip) when node or the pinned npm packages are missing or stale."""
    node = shutil.which("node", path=env_path)
    if not node:
        pytest.fail(f"node not found on PATH ({env_path}); the MCP SDK tests need Node.js 20+")
    pinned = json.loads((MCP_DIR / "package.json").read_text(encoding="utf-8"))["dependencies"]
    for name, version in pinned.items():
        got = _installed_version(name)
        if got is None:
            pytest.fail(f"{name} is not installed in tests/mcp/node_modules: {INSTALL_HINT}")
        if got != version:
            pytest.fail(f"{name} {got} is installed but {version} is pinned: {INSTALL_HINT}")
    return node


class Sdk:
    """Runs the node scenarios against this test's ptc."""

    def __init__(self, ptc):
        self.ptc = ptc
        self.env = ptc.make_env()
        self.node = check_node_setup(self.env["PATH"])

    def spec(self, args=(), **params):
        return dict(command=str(self.ptc.bin),
                    args=["mcp", "--cwd", str(self.ptc.workdir)] + [str(a) for a in args],
                    env=dict(self.env), cwd=str(self.ptc.tmp), **params)

    def run(self, scenario, spec, timeout=SCENARIO_TIMEOUT, client_errors_ok=False,
            stdout_checked=True):
        argv = [self.node, str(MCP_DIR / f"{scenario}.mjs"), json.dumps(spec)]
        t0 = time.monotonic()
        # The clean environment goes to node as well: the SDK merges its own
        # default variables (HOME, PATH, ...) from node's environment into ptc's.
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=self.env, cwd=str(self.ptc.tmp),
                                start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc.pid)
            out, err = proc.communicate()
            raise AssertionError(f"scenario {scenario} did not finish within {timeout}s\n"
                                 f"stdout={out[-3000:]!r}\nstderr={err[-3000:]!r}")
        elapsed = time.monotonic() - t0
        text = out.decode("utf-8", "replace")
        where = (f"scenario {scenario} (rc={proc.returncode}, {elapsed:.2f}s)\n"
                 f"stdout={text[-6000:]}\nstderr={err.decode('utf-8', 'replace')[-3000:]}")
        try:
            data = json.loads(text.strip().splitlines()[-1])
        except (IndexError, ValueError):
            raise AssertionError(f"no JSON report from {where}")
        assert proc.returncode == 0 and "exception" not in data, f"scenario failed: {where}"
        self.check_common(data, where, client_errors_ok, stdout_checked)
        return data

    @staticmethod
    def check_common(data, where, client_errors_ok, stdout_checked):
        if stdout_checked:
            for line in data["stdout_lines"]:
                try:
                    msg = json.loads(line)
                except ValueError:
                    raise AssertionError(f"non-JSON line on ptc's stdout: {line!r}\n{where}")
                assert isinstance(msg, dict) and msg.get("jsonrpc") == "2.0", \
                    f"not a JSON-RPC 2.0 message on ptc's stdout: {line!r}\n{where}"
        if not client_errors_ok:
            assert data["client_errors"] == [], f"the SDK reported errors: {where}"
        assert data["exit"] is not None, f"ptc did not exit after stdin closed: {where}"
        assert data["exit"]["code"] == 0 and data["exit"]["signal"] is None, \
            f"ptc did not exit 0 by itself when stdin closed: {data['exit']}\n{where}"
        # lib.mjs gives ptc 20 s (a hang guard) before the SDK may signal it.
        assert data["exit"]["after_close_ms"] < 20000, \
            f"ptc took too long to exit after stdin closed: {data['exit']}\n{where}"


@pytest.fixture
def sdk(ptc):
    return Sdk(ptc)


def responses(data):
    return [json.loads(l) for l in data["stdout_lines"]]


def call_result(call, where):
    """A recorded call's CallToolResult plus the result JSON of its text content."""
    assert "result" in call, f"the call was rejected: {call}\n{where}"
    r = call["result"]
    assert isinstance(r["content"], list) and len(r["content"]) == 1, f"content: {r}"
    assert r["content"][0]["type"] == "text", f"content: {r}"
    text_json = json.loads(r["content"][0]["text"])
    assert text_json == r["structuredContent"], \
        f"text content and structuredContent differ: {r}"
    return r, r["structuredContent"]


def expect_result(call, status, output=None, tool_calls=None, exit_code=None):
    r, s = call_result(call, "")
    assert s["status"] == status, f"status: {r}"
    assert r["isError"] is (status != "success"), f"isError for status {status}: {r}"
    for k in ("status", "output", "tool_calls_made", "duration_seconds", "exit_code"):
        assert k in s, f"result has no {k}: {r}"
    if output is not None:
        assert s["output"] == output, f"output: {r}"
    if tool_calls is not None:
        assert s["tool_calls_made"] == tool_calls, f"tool_calls_made: {r}"
    if exit_code is not None:
        assert s["exit_code"] == exit_code, f"exit_code: {r}"
    return s


# --------------------------------------------------------------------------------------------


def test_connect_and_list_tools(sdk, ptc):
    d = sdk.run("connect", sdk.spec())

    init = responses(d)[0]
    assert init["id"] == 0 and init["result"]["protocolVersion"] == LATEST, init
    version = ptc.run_ptc(["--version"]).stdout.decode().split()[-1]
    assert d["server_version"]["name"] == "ptc", d["server_version"]
    assert d["server_version"]["version"] == version, d["server_version"]
    assert d["server_capabilities"] == {"tools": {"listChanged": False}, "logging": {}}, \
        d["server_capabilities"]
    assert d["ping"] == {}, d["ping"]
    assert d["next_cursor"] is None

    assert [t["name"] for t in d["tools"]] == ["execute_code"], d["tools"]
    tool = d["tools"][0]
    schema = tool["inputSchema"]
    assert schema["type"] == "object", schema
    assert set(schema["properties"]) == {"code", "timeout", "session", "reset", "fork_from"}, \
        schema
    assert schema["properties"]["code"]["type"] == "string", schema
    assert schema["properties"]["timeout"]["type"] == "number", schema
    assert schema["required"] == ["code"], schema
    # The same description `ptc schema` prints for the same (default) tool set.
    r = ptc.run_ptc(["schema"])
    assert r.rc == 0, r
    assert tool["description"] == r.data["description"]


def test_execute_code_success(sdk, ptc):
    (ptc.workdir / "notes.txt").write_text("alpha\nbeta\n", encoding="utf-8")
    code_tool = ("from hermes_tools import read_file\n"
                 "r = read_file('notes.txt')\n"
                 "print(r['total_lines'])\n")
    d = sdk.run("call", sdk.spec(calls=[
        {"name": "execute_code", "arguments": {"code": "print(6*7)"}},
        {"name": "execute_code", "arguments": {"code": code_tool, "timeout": 20}},
    ]))
    s = expect_result(d["calls"][0], "success", output="42\n", tool_calls=0, exit_code=0)
    assert isinstance(s["duration_seconds"], (int, float)) and s["duration_seconds"] >= 0
    expect_result(d["calls"][1], "success", output="2\n", tool_calls=1, exit_code=0)
    # Relative paths resolve against --cwd; no progress without a progress token.
    assert not [m for m in responses(d) if m.get("method") == "notifications/progress"], d


def test_execute_code_failures_are_results_with_is_error(sdk):
    d = sdk.run("call", sdk.spec(calls=[
        {"name": "execute_code", "arguments": {"code": "print('before')\nraise ValueError('boom')"}},
        {"name": "execute_code", "arguments": {"code": "import sys\nprint('x')\nsys.exit(3)"}},
        {"name": "execute_code", "arguments": {"code": "import time\ntime.sleep(60)", "timeout": 1}},
    ]))
    # As `ptc run`: the output is stdout, then the seed's stderr section.
    s = expect_result(d["calls"][0], "error", exit_code=1)
    assert s["output"].startswith("before\n\n--- stderr ---\nTraceback"), s
    assert s["output"].endswith("ValueError: boom\n"), s
    assert s["error"].startswith("Traceback") and s["error"].endswith("ValueError: boom\n"), s
    s = expect_result(d["calls"][1], "error", output="x\n", exit_code=3)
    assert s["error"] == "Script exited with code 3", s
    s = expect_result(d["calls"][2], "timeout")
    assert "timed out after 1s" in s["output"], s
    assert d["calls"][2]["ms"] < 15000, d["calls"][2]  # hang guard: the script sleeps 60 s


def test_concurrent_calls_run_at_once(sdk):
    # A barrier, not a stopwatch: each call marks its start and waits (up to 15 s) until all
    # three have started; run one after another, the first would print "alone".
    def code(i):
        return (f"import os, time\nopen('started-{i}', 'w').close()\n"
                "met = lambda: all(os.path.exists(f'started-{j}') for j in range(3))\n"
                "for _ in range(300):\n"
                "    if met(): break\n"
                "    time.sleep(0.05)\n"
                f"print({i} if met() else 'alone')")
    calls = [{"name": "execute_code", "arguments": {"code": code(i)}} for i in range(3)]
    d = sdk.run("concurrent", sdk.spec(calls=calls))
    for i, c in enumerate(d["calls"]):
        expect_result(c, "success", output=f"{i}\n", exit_code=0)


def slow_script(pid_file):
    """A script that starts a child, writes both pids to @pid_file (atomically), sleeps."""
    return ("import os, subprocess, time\n"
            "p = subprocess.Popen(['sleep', '30'])\n"
            f"with open({str(pid_file) + '.tmp'!r}, 'w') as f:\n"
            "    f.write(f'{os.getpid()}\\n{p.pid}\\n')\n"
            f"os.rename({str(pid_file) + '.tmp'!r}, {str(pid_file)!r})\n"
            "time.sleep(30)\n"
            "print('not reached')\n")


# The driver watches the pids the script reports, so these run under isolation none (under
# auto they would be pids of the script's own namespace); test_mcp_server.py checks the same
# cancellation and close under auto by the scripts' environment marker.
HOST_PIDS = ("--isolation", "none")


def test_cancel_kills_the_script_and_the_session_goes_on(sdk, ptc):
    pid_file = ptc.tmp / "pids"
    slow = slow_script(pid_file)
    d = sdk.run("cancel", sdk.spec(HOST_PIDS, slow_code=slow, pid_file=str(pid_file),
                                   abort_after_ms=500,
                                   abort_reason="cancelled by the test",
                                   after_code="print('after')"))
    assert d["pid_file_seen"], f"the slow script never wrote its pids: {d}"
    assert d["settled_before_abort"] is None, d
    assert d["abort_at_ms"] >= 500, d
    # The SDK rejects an aborted call at once with the abort reason...
    first = d["first"]
    assert "rejected" in first, f"the aborted call did not reject: {d}"
    assert first["rejected"]["name"] == "McpError", first
    assert "cancelled by the test" in first["rejected"]["message"], first
    # ...and ptc kills the script and its child (the whole tree).
    assert len(d["pids"]) == 2, d
    for pid, ms in zip(d["pids"], d["gone_ms"]):
        # The script sleeps 30 s: gone within cancel.mjs's 15 s wait (a hang guard) is killed.
        assert ms is not None, f"pid {pid} still alive 15 s after the cancellation: {d}"
    # The session goes on.
    expect_result(d["second"], "success", output="after\n", exit_code=0)
    # No response for the cancelled request: the SDK would have reported one for an
    # unknown id (client_errors, checked empty by run()); and ptc's stdout has none.
    # The SDK numbers its requests 0 (initialize), 1 (tools/list), 2 (the cancelled
    # call), 3 (the second call).
    answered = [m["id"] for m in responses(d) if "id" in m]
    assert answered == [0, 1, 3], f"responses to {answered}, expected 0, 1 and 3: {d}"
    assert "cancel" in d["stderr"].lower() or "interrupt" in d["stderr"].lower(), \
        f"stderr does not log the interruption: {d['stderr']!r}"


def test_close_with_a_call_in_flight(sdk, ptc):
    pid_file = ptc.tmp / "pids"
    d = sdk.run("close_inflight", sdk.spec(HOST_PIDS, slow_code=slow_script(pid_file),
                                           pid_file=str(pid_file)))
    assert d["pid_file_seen"], f"the slow script never wrote its pids: {d}"
    # run() checked that ptc exited 0 by itself after stdin closed.
    assert "rejected" in d["pending"], f"the pending call did not reject: {d}"
    assert len(d["pids"]) == 2, d
    for pid, ms in zip(d["pids"], d["gone_ms"]):
        assert ms is not None, f"pid {pid} outlived ptc's exit: {d}"  # 15 s hang guard
    assert [m["id"] for m in responses(d)] == [0, 1], f"a response to the closed call: {d}"


def test_progress_notifications(sdk, ptc):
    (ptc.workdir / "data.txt").write_text("one\ntwo\n", encoding="utf-8")
    code = ("from hermes_tools import read_file\n"
            "n = 0\n"
            "for _ in range(3):\n"
            "    n += read_file('data.txt')['total_lines']\n"
            "print(n)\n")
    # The SDK dispatches a notification on a later turn of its event loop but a response at
    # once: when the last progress notifications and the answer reach it in one read (a busy
    # machine), it has dropped the call's progress handler before they are dispatched, and
    # reports "a progress notification for an unknown token". What ptc sent is judged on the
    # wire: every notification, in order, before the answer; the SDK's callbacks saw a prefix.
    d = sdk.run("progress", sdk.spec(arguments={"code": code}), client_errors_ok=True)
    expect_result({"result": d["result"]}, "success", output="6\n", tool_calls=3, exit_code=0)
    assert all("progress notification for an unknown token" in e
               for e in d["client_errors"]), d["client_errors"]
    wire = [json.loads(l) for l in d["stdout_lines"]]
    answer = next(i for i, m in enumerate(wire) if m.get("id") == 2 and "result" in m)
    sent = [m["params"] for m in wire[:answer] if m.get("method") == "notifications/progress"]
    assert [p["progress"] for p in sent] == [1, 2, 3], sent
    assert [p["message"] for p in sent] == [f"read_file (call {i})" for i in (1, 2, 3)], sent
    assert all("total" not in p for p in sent), sent
    assert not any(m.get("method") == "notifications/progress" for m in wire[answer:]), wire
    events = d["events"]
    assert [e["progress"] for e in events] == [1, 2, 3][:len(events)], events
    assert len(events) + len(d["client_errors"]) == 3, d
    assert all(e["at_ms"] <= d["result_at_ms"] for e in events), d


def test_expose_tools(sdk, ptc):
    (ptc.workdir / "notes.txt").write_text("hello\nworld\n", encoding="utf-8")
    d = sdk.run("call", sdk.spec(["--expose-tools", "--tools", "read_file,terminal"], calls=[
        {"name": "read_file", "arguments": {"path": "notes.txt"}},
        {"name": "read_file", "arguments": {"path": "missing.txt"}},
        {"name": "execute_code", "arguments": {"code": "print(1)"}},
    ]))
    assert sorted(d["tool_names"]) == ["execute_code", "read_file", "terminal"], d["tool_names"]
    tools = {t["name"]: t for t in d["tools"]}
    rs = tools["read_file"]["inputSchema"]
    assert rs["type"] == "object" and "path" in rs["properties"], rs
    assert "path" in rs.get("required", []), rs
    assert "command" in tools["terminal"]["inputSchema"]["properties"], tools["terminal"]
    # The exposed description of execute_code names only the enabled tools.
    assert "write_file" not in tools["execute_code"]["description"], tools["execute_code"]

    r, s = call_result(d["calls"][0], d)
    assert r["isError"] is False, r
    assert "hello" in s["content"] and "world" in s["content"], s
    assert s["content"].splitlines()[0].endswith("|hello"), s
    assert s["total_lines"] == 2, s
    r, s = call_result(d["calls"][1], d)
    assert r["isError"] is True and "error" in s, r
    expect_result(d["calls"][2], "success", output="1\n")


def test_stderr_warnings_stay_off_stdout(sdk, ptc):
    # A configured search provider without its key: ptc warns on stderr at start-up.
    cfg = ptc.write_config("""\
        web:
          search_provider: brave
        """)
    code = "import sys\nprint('out')\nprint('to stderr', file=sys.stderr)\n"
    d = sdk.run("call", sdk.spec(["--config", cfg], calls=[
        {"name": "execute_code", "arguments": {"code": code}},
    ]))
    assert "warning" in d["stderr"] and "BRAVE_API_KEY" in d["stderr"], d["stderr"]
    expect_result(d["calls"][0], "success", output="out\n", exit_code=0)
    assert "to stderr" not in "".join(d["stdout_lines"]), d
    # run() checked: every stdout line is JSON-RPC, no SDK error, exit 0.


def test_bad_input_in_a_live_session(sdk):
    raw = ["this is not json", '{"foo": 1}']
    d = sdk.run("errors", sdk.spec(raw_lines=raw, bad_arguments={
        "code_missing": {},
        "code_not_string": {"code": 42},
        "timeout_negative": {"code": "print(1)", "timeout": -1},
        "timeout_string": {"code": "print(1)", "timeout": "5"},
    }), client_errors_ok=True)
    for line, code in zip(raw, (-32700, -32600)):
        got = [json.loads(l) for l in d["raw"][line]]
        assert len(got) == 1, f"{line!r}: {got}"
        assert got[0].get("id", "absent") is None, f"{line!r}: {got}"
        assert got[0]["error"]["code"] == code, f"{line!r}: {got}"
    # The SDK cannot route an id-null error: it reports each one, and nothing else.
    assert len(d["client_errors"]) == len(raw), d["client_errors"]
    c = d["cases"]
    assert c["unknown_method"]["error"]["code"] == -32601, c["unknown_method"]
    for k in ("code_missing", "code_not_string", "timeout_negative", "timeout_string"):
        assert c[k].get("error", {}).get("code") == -32602, (k, c[k])
    r = c["unknown_tool"]["result"]
    assert r["isError"] is True, r
    assert "no_such_tool" in r["content"][0]["text"], r
    assert "execute_code" in r["content"][0]["text"], r
    assert c["ping"]["result"] == {}, c["ping"]
    expect_result(c["good_call"], "success", output="still here\n")


def test_reference_servers_run_on_this_node(sdk, ptc):
    """The pinned reference servers (for ptc's MCP client side) start and answer."""
    (ptc.workdir / "f.txt").write_text("fs ok\n", encoding="utf-8")
    bin_dir = MCP_DIR / "node_modules" / ".bin"
    fs = dict(command=str(bin_dir / "mcp-server-filesystem"), args=[str(ptc.workdir)],
              env=dict(sdk.env), cwd=str(ptc.tmp),
              calls=[{"name": "read_text_file", "arguments": {"path": str(ptc.workdir / "f.txt")}}])
    d = sdk.run("call", fs)
    assert "read_text_file" in d["tool_names"], d["tool_names"]
    assert d["calls"][0]["result"]["content"][0]["text"] == "fs ok\n", d["calls"]
    ev = dict(command=str(bin_dir / "mcp-server-everything"), args=["stdio"],
              env=dict(sdk.env), cwd=str(ptc.tmp),
              calls=[{"name": "echo", "arguments": {"message": "hi"}}])
    d = sdk.run("call", ev)
    assert "echo" in d["tool_names"], d["tool_names"]
    assert "hi" in d["calls"][0]["result"]["content"][0]["text"], d["calls"]


def test_script_calls_upstream_filesystem_tools_through_ptc_mcp(sdk, ptc):
    """The SDK client asks ptc mcp to run a script; the script calls the tools of an
    upstream MCP server (the reference filesystem server) configured in mcp_servers."""
    data = ptc.tmp / "data"
    data.mkdir()
    (data / "a.txt").write_text("upstream hello\n", encoding="utf-8")
    entry = MCP_DIR / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / \
        "index.js"
    cfg = ptc.write_config(f"""
        mcp_servers:
          files:
            command: {sdk.node}
            args: [{json.dumps(str(entry))}, {json.dumps(str(data))}]
        """)
    code = (
        "from hermes_tools import files_list_directory, files_read_text_file, "
        "files_write_file\n"
        f"root = {str(data)!r}\n"
        "print(files_list_directory(path=root)['content'])\n"
        "print(files_read_text_file(path=root + '/a.txt')['content'], end='')\n"
        "files_write_file(path=root + '/b.txt', content='written upstream')\n")
    d = sdk.run("call", sdk.spec(["--config", cfg], calls=[
        {"name": "execute_code", "arguments": {"code": code}}]))
    # The execute_code description names the upstream tools.
    desc = d["tools"][0]["description"]
    assert "files_read_text_file(" in desc and "files_write_file(" in desc, desc
    expect_result(d["calls"][0], "success", output="[FILE] a.txt\nupstream hello\n",
                  tool_calls=3)
    assert (data / "b.txt").read_text(encoding="utf-8") == "written upstream"
