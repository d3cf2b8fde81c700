# SPDX-License-Identifier: MIT
"""Sessions (docs/sessions.md) through the real `ptc mcp`: execute_code's `session` and
`reset`, `--sessions conversation`, the `sessions:` config section.

A session's interpreter is found by the marker every process of a test's runs carries in its
environment (ptc's socket variable names a staging directory below the test's TMPDIR), so
the tests see it come and go without trusting what a cell reports.
"""

import json
import os
import re
import signal
import threading
import time

import pytest

from conftest import (expect_usage_error, processes_marked, script_marker, wait_for_file,
                      wait_no_process_marked)
from test_mcp_server import check_result, mcp  # noqa: F401  (a pytest fixture)


def cell(c, code, wait=30.0, **args):
    return check_result(c.call_code(code, wait=wait, **args))


def interpreters(ptc):
    return processes_marked(script_marker(ptc))


def no_pool(ptc, more=""):
    """A config without the warm pool, whose interpreters would be counted as the sessions'."""
    return ptc.write_config("sessions:\n  warm: 0\n" + more, name="no-pool.yaml")


def test_state_survives_from_one_cell_to_the_next(mcp, ptc):
    c = mcp()
    r = cell(c, "import math\nx = 41\nprint('set')", session="a")
    assert (r["status"], r["output"], r["session"], r["cell"]) == ("success", "set\n", "a", 1), r
    r = cell(c, "x += 1\nprint(x, math.pi > 3)", session="a")
    assert (r["output"], r["cell"]) == ("42 True\n", 2), r
    # Tools work in a cell, with the cell's own budget and log.
    target = ptc.workdir / "from-a-cell.txt"
    r = cell(c, f"""from hermes_tools import write_file, read_file
write_file({str(target)!r}, str(x))
print(read_file({str(target)!r})["content"])
""", session="a")
    assert r["status"] == "success" and r["output"] == "     1|42\n", r
    assert r["tool_calls_made"] == 2 and r["cell"] == 3, r
    # Another session has its own state; a call without one is a fresh interpreter.
    r = cell(c, "print('x' in globals())", session="b")
    assert (r["output"], r["cell"]) == ("False\n", 1), r
    r = cell(c, "print('x' in globals())")
    assert r["output"] == "False\n" and "session" not in r and "cell" not in r, r
    # __main__ is the session's: a class defined in a cell pickles.
    r = cell(c, "import pickle\nclass P: pass\nprint(type(pickle.loads(pickle.dumps(P()))).__name__)",
             session="a")
    assert r["output"] == "P\n", r


def test_reset_starts_the_session_afresh(mcp):
    c = mcp()
    cell(c, "x = 1", session="r")
    r = cell(c, "print('x' in globals())", session="r", reset=True)
    assert (r["output"], r["cell"]) == ("False\n", 1), r
    assert "session_note" not in r, r


def test_errors_exit_codes_and_output_of_cells(mcp):
    c = mcp()
    r = cell(c, "print('partial', flush=True)\n1/0", session="e")
    assert r["status"] == "error" and r["exit_code"] == 1, r
    assert r["output"].startswith("partial\n\n--- stderr ---\nTraceback"), r
    assert "ZeroDivisionError" in r["error"] and "exec(compile" not in r["error"], r
    r = cell(c, "import sys\nsys.exit(4)", session="e")
    assert (r["status"], r["exit_code"]) == ("error", 4), r
    r = cell(c, "print('y' * 200_000)", session="e")
    assert r["status"] == "success" and r.get("stdout_truncated") is True, r
    r = cell(c, "print('still here')", session="e")
    assert (r["output"], r["cell"]) == ("still here\n", 4), r


def test_a_cell_that_times_out_keeps_the_session(mcp):
    c = mcp()
    cell(c, "kept = 'yes'", session="t")
    t = time.monotonic()
    r = cell(c, "import time\nprint('before', flush=True)\ntime.sleep(30)", session="t",
             timeout=1)
    assert time.monotonic() - t < 20  # hang guard: the cell sleeps 30 s
    assert r["status"] == "timeout" and r["output"].startswith("before\n"), r
    assert r["error"] == "Script timed out after 1s and was interrupted; the session keeps " \
        "its state.", r
    assert "session_lost" not in r, r
    r = cell(c, "print(kept)", session="t")
    assert (r["status"], r["output"], r["cell"]) == ("success", "yes\n", 3), r


def test_a_cell_that_will_not_unwind_loses_the_session(mcp, ptc):
    c = mcp("--config", no_pool(ptc))
    cell(c, "lost = 1", session="u")
    assert interpreters(ptc)
    r = cell(c, "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                "time.sleep(60)", session="u", timeout=1)
    assert r["status"] == "timeout" and r["session_lost"] is True, r
    assert r["error"] == "Script timed out after 1s and was killed, and the session's state " \
        "with it.", r
    assert wait_no_process_marked(script_marker(ptc), 10) == []
    r = cell(c, "print('lost' in globals())", session="u")
    assert (r["output"], r["cell"]) == ("False\n", 1), r
    assert r["session_note"] == "session 'u' was lost in its cell 2; this cell started a new " \
        "one", r


def test_an_interpreter_that_dies_is_reported_lost(mcp):
    c = mcp()
    cell(c, "x = 1", session="d")
    r = cell(c, "import os\nprint('bye', flush=True)\nos._exit(3)", session="d")
    assert (r["status"], r["exit_code"], r["session_lost"]) == ("error", 3, True), r
    assert r["output"].startswith("bye\n"), r
    r = cell(c, "print('x' in globals())", session="d")
    assert r["output"] == "False\n" and "was lost in its cell 2" in r["session_note"], r


def test_an_interpreter_that_dies_between_cells_is_found_out(mcp):
    c = mcp()
    cell(c, "import os, threading, time\nthreading.Timer(0.3, os._exit, (3,)).start()",
         session="x")
    time.sleep(1.0)
    r = cell(c, "print('fresh')", session="x", wait=20)
    assert (r["output"], r["cell"]) == ("fresh\n", 1), r
    assert r["session_note"] == "session 'x' was lost between cells (its interpreter died); " \
        "this cell started a new one", r


def test_a_fork_a_cell_leaves_does_not_take_over_the_session(mcp):
    c = mcp()
    cell(c, "import os\nforked = os.fork()", session="f")
    r = cell(c, "print('parent' if forked else 'child')", session="f")
    assert (r["output"], r["cell"]) == ("parent\n", 2), r
    assert "session_lost" not in r, r


def test_exit_statuses_of_cells_are_those_of_a_process(mcp):
    c = mcp()
    for code, want in (("True", 1), ("256", 0), ("-1", 255), ("'bye'", 1)):
        r = cell(c, f"import sys\nsys.exit({code})", session="s")
        assert r["exit_code"] == want and "session_lost" not in r, (code, r)
    r = cell(c, "print('alive')", session="s")
    assert r["output"] == "alive\n" and r["cell"] == 5, r


def test_idle_sessions_close_and_the_next_cell_is_told(mcp, ptc):
    c = mcp("--config", no_pool(ptc, "  idle_timeout: 1\n"))
    cell(c, "x = 1", session="i")
    assert interpreters(ptc)
    assert wait_no_process_marked(script_marker(ptc), 10) == [], "the idle interpreter lives on"
    r = cell(c, "print('x' in globals())", session="i")
    assert r["output"] == "False\n" and r["cell"] == 1, r
    assert r["session_note"] == "session 'i' was closed after 1 s without a cell; this cell " \
        "started a new one", r


def test_the_least_recently_used_session_makes_room(mcp, ptc):
    c = mcp("--config", no_pool(ptc, "  max: 2\n"))
    cell(c, "v = 'a'", session="a")
    cell(c, "v = 'b'", session="b")
    cell(c, "print(v)", session="a")          # b is now the least recently used
    r = cell(c, "v = 'c'\nprint(v)", session="c")
    assert r["output"] == "c\n" and "session_note" not in r, r
    r = cell(c, "print(v)", session="a")
    assert (r["output"], r["cell"]) == ("a\n", 3), r
    r = cell(c, "print('v' in globals())", session="b")
    assert r["output"] == "False\n", r
    assert r["session_note"] == "session 'b' was closed to make room for session 'c' (at most " \
        "2 live sessions, sessions.max); this cell started a new one", r
    assert len(interpreters(ptc)) <= 2 * 2 + 1  # two interpreters and their inits, at most


def test_cells_of_different_sessions_run_at_once_and_one_session_one_at_a_time(mcp):
    c = mcp()
    cell(c, "import time", session="p1")
    cell(c, "import time", session="p2")
    # A barrier, not a stopwatch: each cell marks its start and waits (up to 20 s) for the
    # other's mark; run one after the other, the first would print 'alone'.
    barrier = ("import os\nopen('started-{me}', 'w').close()\n"
               "for _ in range(400):\n"
               "    if os.path.exists('started-{other}'): break\n"
               "    time.sleep(0.05)\n"
               "print('slept' if os.path.exists('started-{other}') else 'alone')")
    ids = [c.send_request("tools/call", {"name": "execute_code", "arguments": {
        "code": barrier.format(me=s, other=o), "session": s}})
        for s, o in (("p1", "p2"), ("p2", "p1"))]
    for i in ids:
        r = check_result(c.response(i, timeout=60)["result"])
        assert r["output"] == "slept\n", "the two sessions' cells did not run at once: %r" % r
    # A second cell on a busy session is refused at once, with the reason (the first cell
    # runs until the test lets it go, 30 s at most).
    first = c.send_request("tools/call", {"name": "execute_code", "arguments": {
        "code": "import os\nopen('busy', 'w').write('1')\n"
                "for _ in range(600):\n"
                "    if os.path.exists('release'): break\n"
                "    time.sleep(0.05)", "session": "p1"}})
    assert wait_for_file(c.ptc.workdir / "busy", 30), "the first cell never started"
    r = cell(c, "print('never')", session="p1")
    assert r["status"] == "error", r
    assert r["error"] == "session 'p1' is running a cell (the cells of a session run one at " \
        "a time)", r
    (c.ptc.workdir / "release").touch()
    assert check_result(c.response(first, timeout=60)["result"])["status"] == "success"


def test_a_thread_left_running_does_not_write_into_the_next_cell(mcp):
    c = mcp()
    r = cell(c, """import threading, time
def late():
    time.sleep(0.5)
    print("late line")
threading.Thread(target=late, daemon=True).start()
print("cell 1")
""", session="th")
    assert r["output"] == "cell 1\n", r
    time.sleep(1)
    r = cell(c, "print('cell 2')", session="th")
    assert r["output"] == "cell 2\n", r


def test_conversation_mode_gives_the_connection_a_session(mcp, ptc):
    c = mcp("--sessions", "conversation")
    r = cell(c, "x = 5")
    sid = r["session"]
    assert sid.startswith("mcp-") and r["cell"] == 1, r
    r = cell(c, "print(x)")
    assert (r["output"], r["session"], r["cell"]) == ("5\n", sid, 2), r
    r = cell(c, "print('x' in globals())", session="own")
    assert r["output"] == "False\n", r
    r = cell(c, "print('x' in globals())", reset=True)
    assert (r["output"], r["session"], r["cell"]) == ("False\n", sid, 1), r
    # The connection's end closes its sessions' interpreters with the server.
    c.close_stdin()
    assert c.wait_exit(15) == 0
    assert wait_no_process_marked(script_marker(ptc), 10) == []


def test_no_interpreter_outlives_a_killed_server(mcp, ptc):
    c = mcp()
    cell(c, "x = 1", session="k1")
    cell(c, "x = 2", session="k2")
    assert len(interpreters(ptc)) >= 2
    os.kill(c.proc.pid, signal.SIGKILL)
    c.proc.wait(10)
    assert wait_no_process_marked(script_marker(ptc), 10) == []


def test_the_schema_and_bad_arguments(mcp, ptc):
    c = mcp()
    props = c.result("tools/list")["tools"][0]["inputSchema"]["properties"]
    assert props["session"]["type"] == "string" and props["reset"]["type"] == "boolean", props
    for args, words in [({"session": "a b"}, "'session' must be an id"),
                        ({"session": "x" * 65}, "'session' must be an id"),
                        ({"session": 7}, "'session' must be an id"),
                        ({"session": "a", "reset": "yes"}, "'reset' must be true or false")]:
        e = c.call("execute_code", dict(code="print(1)", **args))
        assert e["error"]["code"] == -32602 and words in e["error"]["message"], e
    expect_usage_error(ptc.run_ptc(["mcp", "--sessions", "always"], input=""), "--sessions",
                       "invalid value 'always'", "none, conversation")
    bad = ptc.write_config("sessions:\n  max: 0\n")
    expect_usage_error(ptc.run_ptc(["mcp", "--config", bad], input=""), "sessions.max")


# ------------------------------------------------------------------ the warm pool

WARM_CASES = [
    ("import os, sys\nprint(sys.argv[0] == __file__, os.path.basename(__file__), __name__,\n"
     "      sys.path[0] == os.path.dirname(__file__), os.getcwd())", {}),
    ("raise ValueError('bad value')", {}),
    ("import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)", {}),
    ("import sys\nprint('ok')\nprint('to stderr', file=sys.stderr)", {}),
    ("from hermes_tools import terminal\nprint(terminal('echo hi')['output'])", {}),
    ("import time\nprint('before', flush=True)\ntime.sleep(30)", {"timeout": 1}),
    ("print('y' * 100_000)", {}),
    ("import os\nprint('bye', flush=True)\nos._exit(5)", {}),
    # The rlimits layer's limits, CPU time (2 x timeout + 10 s) included.
    ("import resource as r\nprint([r.getrlimit(getattr(r, n))[0] for n in\n"
     "       ('RLIMIT_CPU', 'RLIMIT_AS', 'RLIMIT_NPROC', 'RLIMIT_NOFILE', 'RLIMIT_FSIZE')])",
     {"timeout": 7}),
]


def normalized(res):
    """A result without what differs between any two runs: the staging dir's random name,
    the duration, a spill file's name."""
    text = json.dumps(res, sort_keys=True)
    text = re.sub(r"/ptc-[A-Za-z0-9]{6}/", "/ptc-XXXXXX/", text)
    d = json.loads(text)
    d.pop("duration_seconds", None)
    d.pop("stdout_spill_path", None)
    return d


@pytest.mark.parametrize("code,args", WARM_CASES)
def test_a_warm_run_gives_what_a_cold_run_gives(mcp, ptc, code, args):
    c = mcp()
    time.sleep(0.5)  # the pool fills after the start
    warm = cell(c, code, **args)
    opts = ["--timeout", str(args["timeout"])] if "timeout" in args else []
    cold = ptc.run(code, *opts, timeout=60)
    assert cold.data is not None, cold
    assert normalized(warm) == normalized(cold.data), (warm, cold.data)


WARM = "import os\nprint(os.path.exists(os.path.dirname(__file__) + '/.kernel.py'))"


def test_the_warm_pool_gives_each_run_a_fresh_interpreter(mcp, ptc):
    c = mcp()
    time.sleep(0.5)
    r = cell(c, WARM)
    assert r["output"] == "True\n", "the run did not take a warm interpreter"
    seen = set()
    for i in range(6):
        r = cell(c, "import os\nprint('leak' in globals(), os.getpid())\nleak = 1")
        assert r["status"] == "success" and r["output"].startswith("False "), r
        seen.add(r["output"])
    assert len(seen) == 6 or all("False" in s for s in seen)
    # At most the configured number wait ready, besides the run's own.
    cfg = ptc.write_config("sessions:\n  warm: 1\n")
    c2 = mcp("--config", cfg)
    r = cell(c2, "print('hi')")
    assert r["output"] == "hi\n", r
    cfg0 = ptc.write_config("sessions:\n  warm: 0\n", name="cold.yaml")
    c3 = mcp("--config", cfg0)
    time.sleep(0.5)
    r = cell(c3, WARM)
    assert r["output"] == "False\n", "warm: 0 still kept a pool"
    # A run with tools of its own is not what the pool's interpreters were made for.
    r = cell(mcp("--tools", "read_file"), WARM)
    assert r["status"] == "success", r
