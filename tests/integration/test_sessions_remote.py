# SPDX-License-Identifier: MIT
"""Sessions on a remote backend (docs/sessions.md) through the real `ptc mcp`, over the
`exec:sh` backend: a channel to this machine, so the agent, its interpreter and their
processes are real and visible here. The channel stays open between cells; the agent keeps
the session's interpreter. (Over ssh and in a container: test_remote_ssh.py,
test_remote_container.py.)
"""

import os
import signal
import time

from conftest import processes_marked, script_marker, wait_no_process_marked
from test_mcp_server import check_result, mcp  # noqa: F401  (a pytest fixture)


def cell(c, code, wait=60.0, **args):
    return check_result(c.call_code(code, wait=wait, **args))


def remote(mcp, ptc, more=""):
    cfg = ptc.write_config("sessions:\n  warm: 0\n" + more, name="remote.yaml")
    # Without a static agent to ship (a sanitizer build), the target runs `ptc agent`.
    return mcp("--backend", "exec:sh", "--config", cfg,
               env={"PATH": f"{ptc.bin.parent}:{ptc.env['PATH']}"})


def test_a_remote_session_keeps_its_state_and_runs_tools_there(mcp, ptc):
    c = remote(mcp, ptc)
    r = cell(c, "import os\nx = 41\nfirst = os.getpid()\nprint('set')", session="r")
    assert (r["status"], r["output"], r["session"], r["cell"]) == ("success", "set\n", "r", 1), r
    target = ptc.workdir / "remote.txt"
    r = cell(c, f"""from hermes_tools import write_file, terminal
x += 1
write_file({str(target)!r}, str(x))
print(terminal("cat remote.txt")["output"], os.getpid() == first)""", session="r")
    assert (r["output"], r["cell"], r["tool_calls_made"]) == ("42 True\n", 2, 2), r
    assert target.read_text() == "42"
    # A one-shot run beside it is a run of its own.
    r = cell(c, "print('x' in globals())")
    assert r["output"] == "False\n" and "session" not in r, r
    r = cell(c, "print(x)", session="r", reset=True)
    assert r["status"] == "error" and "NameError" in r["error"] and r["cell"] == 1, r


def test_a_remote_cell_that_times_out_keeps_the_session_and_one_that_dies_loses_it(mcp, ptc):
    c = remote(mcp, ptc)
    cell(c, "kept = 'yes'", session="t")
    t = time.monotonic()
    r = cell(c, "import time\nprint('before', flush=True)\ntime.sleep(30)", session="t",
             timeout=1)
    assert time.monotonic() - t < 20  # hang guard: the cell sleeps 30 s
    assert r["status"] == "timeout" and r["output"].startswith("before\n"), r
    assert r["error"] == "Script timed out after 1s and was interrupted; the session keeps " \
        "its state.", r
    r = cell(c, "print(kept)", session="t")
    assert (r["output"], r["cell"]) == ("yes\n", 3), r
    r = cell(c, "import os\nprint('bye', flush=True)\nos._exit(3)", session="t")
    assert (r["status"], r["exit_code"], r["session_lost"]) == ("error", 3, True), r
    r = cell(c, "print('kept' in globals())", session="t")
    assert (r["output"], r["cell"]) == ("False\n", 1), r
    assert r["session_note"] == "session 't' was lost in its cell 4; this cell started a new " \
        "one", r


def test_a_remote_cell_that_will_not_unwind_loses_the_channel(mcp, ptc):
    c = remote(mcp, ptc)
    cell(c, "x = 1", session="u")
    r = cell(c, "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                "time.sleep(60)", session="u", timeout=1)
    assert r["status"] == "timeout" and r["session_lost"] is True, r
    assert wait_no_process_marked(script_marker(ptc), 10) == []
    r = cell(c, "print('x' in globals())", session="u")
    assert r["output"] == "False\n" and "was lost in its cell 2" in r["session_note"], r


def test_remote_sessions_close_when_idle_and_with_the_server(mcp, ptc):
    c = remote(mcp, ptc, "  idle_timeout: 1\n")
    marker = script_marker(ptc)
    cell(c, "x = 1", session="i")
    assert processes_marked(marker)
    assert wait_no_process_marked(marker, 10) == [], "the idle session's agent lives on"
    r = cell(c, "print('x' in globals())", session="i")
    assert r["output"] == "False\n" and "without a cell" in r["session_note"], r
    cell(c, "y = 2", session="k")
    assert processes_marked(marker)
    os.kill(c.proc.pid, signal.SIGKILL)
    c.proc.wait(10)
    assert wait_no_process_marked(marker, 10) == []


def test_a_remote_session_is_not_forked_yet(mcp, ptc):
    c = remote(mcp, ptc)
    cell(c, "x = 1", session="a")
    r = cell(c, "print(x)", session="b", fork_from="a")
    assert r["status"] == "error", r
    assert r["error"] == "a session on a remote backend cannot be forked yet", r
    r = cell(c, "print(x)", session="a")
    assert r["output"] == "1\n", r
