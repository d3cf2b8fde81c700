# SPDX-License-Identifier: MIT
"""Forks of sessions (docs/sessions.md, "Fork") through the real `ptc mcp`: execute_code's
`fork_from`. A fork is a copy of a live interpreter made by the interpreter itself; these
tests check that the copy has the state, that each then goes its own way (state, tools,
stops, deaths), and that nothing of either outlives the server.
"""

import os
import signal
import time

import pytest

from conftest import processes_marked, script_marker, wait_no_process_marked
from test_mcp_server import check_result, mcp  # noqa: F401  (a pytest fixture)


def cell(c, code, wait=30.0, **args):
    return check_result(c.call_code(code, wait=wait, **args))


def no_pool(ptc, more=""):
    """A config without the warm pool, whose interpreters would be counted as the sessions'."""
    return ptc.write_config("sessions:\n  warm: 0\n" + more, name="no-pool.yaml")


@pytest.mark.parametrize("isolation", ["none", "auto"])
def test_a_fork_has_the_state_and_then_goes_its_own_way(mcp, ptc, isolation):
    c = mcp("--isolation", isolation)
    cell(c, "import json\nbig = list(range(100_000))\nx = 41\ndef f(): return x", session="a")
    r = cell(c, "x += 1\nprint(x, f(), len(big), json.dumps(1))", session="b", fork_from="a")
    assert (r["status"], r["output"], r["session"], r["cell"]) == \
        ("success", "42 42 100000 1\n", "b", 2), r
    r = cell(c, "print(x, f())", session="a")
    assert (r["output"], r["cell"]) == ("41 41\n", 2), r
    # Each calls tools over its own socket; files of the working directory are shared.
    target = ptc.workdir / "shared.txt"
    r = cell(c, f"""from hermes_tools import write_file
write_file({str(target)!r}, "from b")
print("written")""", session="b")
    assert r["status"] == "success" and r["tool_calls_made"] == 1, r
    r = cell(c, f"""from hermes_tools import read_file, terminal
print(read_file({str(target)!r})["content"])
print(terminal("echo $((6 * 7))")["output"])""", session="a")
    assert r["output"] == "     1|from b\n42\n" and r["tool_calls_made"] == 2, r
    # A fork of a fork.
    r = cell(c, "print(x)", session="c", fork_from="b")
    assert (r["output"], r["cell"]) == ("42\n", 4), r


def test_a_fork_is_stopped_and_lost_on_its_own(mcp, ptc):
    c = mcp("--config", no_pool(ptc))
    cell(c, "kept = 'origin'", session="o")
    cell(c, "kept = 'fork'", session="f", fork_from="o")
    # A timeout in the fork interrupts the fork's cell only.
    t = time.monotonic()
    r = cell(c, "import time\nprint('before', flush=True)\ntime.sleep(30)", session="f",
             timeout=1)
    assert time.monotonic() - t < 20  # hang guard: the cell sleeps 30 s
    assert r["status"] == "timeout" and "session_lost" not in r, r
    assert r["output"].startswith("before\n"), r
    r = cell(c, "print(kept)", session="f")
    assert r["output"] == "fork\n", r
    # A fork that will not unwind is killed; the origin lives on.
    r = cell(c, "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                "time.sleep(60)", session="f", timeout=1)
    assert r["status"] == "timeout" and r["session_lost"] is True, r
    r = cell(c, "print(kept)", session="o")
    assert (r["status"], r["output"]) == ("success", "origin\n"), r
    # A fork whose interpreter dies is reported lost.
    cell(c, "kept = 'fork 2'", session="f2", fork_from="o")
    r = cell(c, "import os\nprint('bye', flush=True)\nos._exit(3)", session="f2")
    assert (r["status"], r["session_lost"]) == ("error", True), r
    assert r["output"].startswith("bye\n") and r.get("exit_code") is None, r
    assert r["error"] == "The session's interpreter died during the cell; its state is lost.", r
    r = cell(c, "print(kept)", session="o")
    assert r["output"] == "origin\n", r


def test_the_origin_can_go_and_its_fork_stays(mcp, ptc):
    c = mcp("--config", no_pool(ptc))
    cell(c, "import os\nx = 'state'", session="o")
    cell(c, "pass", session="f", fork_from="o")
    # The origin dies (its init lives on for the fork), then is reset.
    r = cell(c, "os._exit(5)", session="o")
    assert (r["exit_code"], r["session_lost"]) == (5, True), r
    r = cell(c, "print(x)", session="f")
    assert (r["status"], r["output"]) == ("success", "state\n"), r
    r = cell(c, "print('x' in globals())", session="o", reset=True)
    assert r["output"] == "False\n", r
    r = cell(c, "print(x)", session="f")
    assert r["output"] == "state\n", r


def test_forks_count_against_the_cap_and_nothing_outlives_the_server(mcp, ptc):
    c = mcp("--config", no_pool(ptc, "  max: 2\n"))
    cell(c, "v = 1", session="a")
    cell(c, "v = 2", session="z")
    r = cell(c, "print(v)", session="b", fork_from="a")    # z makes room
    assert r["output"] == "1\n", r
    r = cell(c, "print('v' in globals())", session="z")
    assert "closed to make room for session 'b'" in r["session_note"], r
    marker = script_marker(ptc)
    assert processes_marked(marker)
    os.kill(c.proc.pid, signal.SIGKILL)
    c.proc.wait(10)
    assert wait_no_process_marked(marker, 10) == []


def test_bad_forks_are_refused_with_the_reason(mcp, ptc):
    c = mcp()
    props = c.result("tools/list")["tools"][0]["inputSchema"]["properties"]
    assert props["fork_from"]["type"] == "string", props
    e = c.call("execute_code", {"code": "print(1)", "session": "n", "fork_from": "a b"})
    assert e["error"]["code"] == -32602 and "'fork_from' must be an id" in \
        e["error"]["message"], e
    cell(c, "x = 1", session="a")
    cell(c, "x = 2", session="b")
    for args, words in [({"session": "n", "fork_from": "nobody"}, "no live session 'nobody'"),
                        ({"session": "b", "fork_from": "a"},
                         "session 'b' exists (kill it first, or fork to another id)"),
                        ({"session": "a", "fork_from": "a"},
                         "session 'a' cannot be forked onto itself"),
                        ({"fork_from": "a"}, "fork_from needs session"),
                        ({"session": "n", "fork_from": "a", "reset": True},
                         "fork_from and reset do not go together")]:
        r = cell(c, "print('ran')", **args)
        assert r["status"] == "error" and words in r["error"], (args, r)
        assert "ran" not in r["output"], (args, r)
    r = cell(c, "print(x)", session="b")
    assert r["output"] == "2\n", r
