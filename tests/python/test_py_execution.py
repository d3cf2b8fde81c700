# SPDX-License-Identifier: MIT
"""Executions: the Result dataclass, per-execution options, cancel from another thread,
progress callbacks, closing an engine under a running execution, executions at once."""

import json
import os
import threading
import time

import pytest

from pyhost import HARD, make_engine, ptc, run_in_thread, scratch, script  # noqa: F401


@pytest.fixture
def engine(make_engine):
    """An engine without ptc's tools: each test registers the host tools it needs."""
    return make_engine(tools="")


@pytest.fixture
def ready(engine):
    """A host tool ready() on @engine for a script to say it runs: the event is set then."""
    up = threading.Event()

    @engine.tool
    def ready() -> bool:
        "The script is running."
        up.set()
        return True

    return up


def test_result_of_a_successful_script(engine):
    r = engine.execute("print('hello')")
    assert isinstance(r, ptc.Result)
    assert r.ok and r.status == "success"
    assert r.output == "hello\n"
    assert r.exit_code == 0 and r.error is None and r.tool_calls_made == 0
    assert r.duration_seconds >= 0 and r.tool_calls is None
    assert r.raw["status"] == "success" and r.raw["output"] == "hello\n"
    with pytest.raises(Exception):
        r.status = "error"  # frozen


def test_result_warnings(make_engine):
    """What the run went without is the Result's warnings (the result JSON's list); / as
    working directory is refused where it is confined, and only warned about under none."""
    r = make_engine(tools="", isolation="none", cwd="/").execute("print(1)")
    assert r.ok, r
    assert len(r.warnings) == 1 and r.warnings[0].startswith(
        "isolation none: the working directory '/' is the root directory"), r
    assert r.raw["warnings"] == list(r.warnings)
    e = make_engine(tools="", cwd="/")
    with pytest.raises(ptc.Error, match="the working directory '/' is the root directory"):
        e.execute("print(1)")
    assert make_engine(tools="").execute("print(1)").warnings == ()


def test_result_of_a_failing_script(engine):
    r = engine.execute("import sys\nprint('partial')\nsys.exit('went wrong')")
    assert r.status == "error" and not r.ok
    assert r.exit_code == 1
    assert "went wrong" in r.error
    assert r.output.startswith("partial\n") and "--- stderr ---" in r.output


def test_timeout_and_log_calls(engine):
    @engine.tool
    def ping(n: int = 0) -> str:
        "Pong."
        return "pong"

    r = engine.execute("from hermes_tools import ping\nping(1)\nping(2)\nprint('ok')",
                       log_calls=True)
    assert r.ok and r.tool_calls_made == 2
    assert [c.tool for c in r.tool_calls] == ["ping", "ping"]
    assert all(c.ok for c in r.tool_calls)
    t0 = time.monotonic()
    r = engine.execute("import time\ntime.sleep(30)", timeout=1)
    assert r.status == "timeout" and time.monotonic() - t0 < 20.0, r  # hang guard


def test_per_execution_tools_subset(make_engine):
    e = make_engine(tools="read_file")

    @e.tool
    def one() -> int:
        "One."
        return 1

    r = e.execute("from hermes_tools import one\nprint(one())", tools=["one"])
    assert r.ok and r.output == "1\n", r
    r = e.execute("from hermes_tools import read_file\nprint(1)", tools="one")
    assert r.status == "error" and "read_file" in r.output, r


def test_cancel_from_another_thread(engine, ready):
    x = engine.execution(timeout=60)
    t = threading.Thread(target=lambda: ready.wait(HARD) and x.cancel(), daemon=True)
    t.start()
    t0 = time.monotonic()
    r = x.run("import time\nfrom hermes_tools import ready\nready()\n"
              "print('started', flush=True)\ntime.sleep(50)")
    elapsed = time.monotonic() - t0
    t.join(HARD)
    assert r.status == "interrupted", r
    assert elapsed < 15.0, elapsed  # hang guard: the script sleeps 50 s
    assert "cancelled" in (r.error or ""), r
    x.cancel()  # after the run: nothing happens
    with pytest.raises(ptc.StateError):
        x.run("print(1)")


def test_cancel_before_the_run(engine):
    with engine.execution() as x:
        x.cancel()
        t0 = time.monotonic()
        r = x.run("import time\ntime.sleep(30)")
    assert r.status == "interrupted" and time.monotonic() - t0 < 20.0, r  # hang guard


def test_cancel_while_a_tool_call_waits(engine):
    entered = threading.Event()

    @engine.tool
    def wait_here() -> str:
        "Waits until the call is cancelled."
        entered.set()
        call = ptc.current_call()
        end = time.monotonic() + HARD
        while not call.cancelled and time.monotonic() < end:
            time.sleep(0.02)
        return "done"

    x = engine.execution()
    t, box = run_in_thread(x.run, "from hermes_tools import wait_here\nwait_here()")
    assert entered.wait(HARD)
    x.cancel()
    t.join(HARD)
    assert box["value"].status == "interrupted", box


def test_progress_callback_counts(make_engine, scratch):
    (scratch / "f.txt").write_text("x\n")
    e = make_engine(tools="read_file")
    seen = []

    @e.tool
    def tick(i: int) -> int:
        "Echo."
        return i

    def progress(tool, count):
        seen.append((tool, count, threading.current_thread() is threading.main_thread()))

    r = e.execute(script("""
        from hermes_tools import tick, read_file
        for i in range(3):
            tick(i)
        read_file("f.txt")
        print("done")
    """), on_progress=progress)
    assert r.ok and r.tool_calls_made == 4, r
    assert [(t, c) for t, c, _ in seen] == [("tick", 1), ("tick", 2), ("tick", 3),
                                            ("read_file", 4)]
    assert not any(m for _, _, m in seen)


def test_a_raising_progress_callback_changes_nothing(engine):
    @engine.tool
    def tick() -> int:
        "One."
        return 1

    def progress(tool, count):
        raise RuntimeError("observer broke")

    r = engine.execute("from hermes_tools import tick\nprint(tick() + tick())",
                       on_progress=progress)
    assert r.ok and r.output == "2\n", r


def test_executions_at_once_on_one_engine(engine):
    @engine.tool
    def who(n: int) -> int:
        "Echo n."
        time.sleep(0.2)
        return n

    boxes = [run_in_thread(engine.execute, f"from hermes_tools import who\nprint(who({n}))")
             for n in range(4)]
    for n, (t, box) in enumerate(boxes):
        t.join(HARD)
        assert box["value"].ok and box["value"].output == f"{n}\n", box


def test_close_cancels_a_running_execution(engine, ready):
    t, box = run_in_thread(engine.execute, "import time\nfrom hermes_tools import ready\n"
                                           "ready()\ntime.sleep(60)")
    assert ready.wait(HARD)
    t0 = time.monotonic()
    engine.close()
    t.join(HARD)
    assert time.monotonic() - t0 < 15.0  # hang guard: the script sleeps 60 s
    assert box["value"].status == "interrupted", box


def test_code_as_bytes_and_unicode(engine):
    r = engine.execute("print('héllo ☃')".encode())
    assert r.ok and r.output == "héllo ☃\n", r


def test_sessions_keep_state_and_call_host_tools(engine):
    seen = []

    @engine.tool
    def note(text: str) -> int:
        "Remember @text; how many there are."
        seen.append(text)
        return len(seen)

    r = engine.execute("from hermes_tools import note\nacc = [note('one')]", session="s1")
    assert r.ok and r.raw["session"] == "s1" and r.raw["cell"] == 1, r.raw
    r = engine.execute("acc.append(note('two'))\nprint(acc)", session="s1")
    assert r.ok and r.output == "[1, 2]\n" and r.raw["cell"] == 2, r.raw
    assert r.tool_calls_made == 1 and seen == ["one", "two"]
    r = engine.execute("print('acc' in globals())", session="s1", reset=True)
    assert r.output == "False\n" and r.raw["cell"] == 1, r.raw
    with pytest.raises(ptc.Error) as e:
        engine.execute("print(1)", session="no spaces")
    assert "session: invalid id 'no spaces'" in str(e.value)


def test_trace_of_session_cells(engine, tmp_path):
    """A cell's trace: the session (its interpreter's start in the first), the cell, and its
    calls, which a session interpreter's own RPC server serves."""
    @engine.tool
    def twice(n: int) -> int:
        "Twice @n."
        return 2 * n

    spans = []
    for i, code in enumerate(["from hermes_tools import twice\nx = twice(2)", "print(twice(x))"]):
        path = tmp_path / f"cell{i}.json"
        r = engine.execute(code, session="tr", trace=str(path))
        assert r.ok, r.raw
        spans.append({e["name"]: e for e in json.loads(path.read_text())["traceEvents"]
                      if e["ph"] == "X"})
    for by in spans:
        assert {"session", "cell setup", "cell", "tool: twice", "result", "teardown",
                "run"} <= by.keys(), by
        assert by["cell"]["args"] == {"on": "session kernel"}, by["cell"]
        cell, call = by["cell"], by["tool: twice"]
        assert cell["ts"] <= call["ts"] <= cell["ts"] + cell["dur"], (cell, call)
    # The first cell started the interpreter: its session span is the long one.
    assert spans[0]["session"]["args"] == {"new_kernel": True}, spans[0]["session"]
    assert spans[1]["session"]["args"] == {"new_kernel": False}, spans[1]["session"]
    assert spans[0]["session"]["dur"] > spans[1]["session"]["dur"]


def test_trace_of_a_remote_session(make_engine, tmp_path, monkeypatch):
    """A session on a target (exec:sh): the first cell's trace has the channel's opening,
    each has the cell on the target and its result."""
    # The agent: the ptc under test on the target's PATH, for a build that ships none.
    binary = os.environ.get("PTC_BIN") or ptc.library_path()
    monkeypatch.setenv("PATH", f"{os.path.dirname(binary)}:{os.environ['PATH']}")
    engine = make_engine(backend="exec:sh")
    spans = []
    for i, code in enumerate(["x = 20", "print(x + 1)"]):
        path = tmp_path / f"remote{i}.json"
        r = engine.execute(code, session="rt", trace=str(path))
        assert r.ok, r.raw
        spans.append({e["name"]: e for e in json.loads(path.read_text())["traceEvents"]
                      if e["ph"] == "X"})
    assert r.output == "21\n", r.raw
    assert {"channel", "handshake", "session", "cell", "result"} <= spans[0].keys(), spans[0]
    assert not {"channel", "handshake"} & spans[1].keys(), spans[1]
    for by in spans:
        assert by["cell"]["args"] == {"on": "target"}, by["cell"]
    assert spans[0]["session"]["args"] == {"new_kernel": True}
    assert spans[1]["session"]["args"] == {"new_kernel": False}


def test_sessions_are_listed_forked_and_closed(engine):
    r = engine.execute("x = [1]", session="o")
    assert r.ok, r.raw
    engine.fork_session("o", "f")
    r = engine.execute("x.append(2)\nprint(x)", session="f")
    assert r.output == "[1, 2]\n" and r.raw["cell"] == 2, r.raw
    r = engine.execute("print(x)", session="o")
    assert r.output == "[1]\n", r.raw
    r = engine.execute("print(x)", session="g", fork_from="f")
    assert r.output == "[1, 2]\n", r.raw
    listed = engine.sessions()
    assert sorted(s["session"] for s in listed) == ["f", "g", "o"], listed
    assert all(s["pid"] > 0 and not s["busy"] for s in listed), listed
    with pytest.raises(ptc.Error) as e:
        engine.fork_session("o", "f")
    assert "session 'f' exists" in str(e.value)
    engine.close_session("f")
    r = engine.execute("print('x' in globals())", session="f")
    assert r.output == "False\n" and "was killed" in r.raw["session_note"], r.raw
    engine.close_session("g", forget=True)
    r = engine.execute("print('x' in globals())", session="g")
    assert r.output == "False\n" and "session_note" not in r.raw, r.raw
    with pytest.raises(ptc.NotFoundError):
        engine.close_session("nobody")


def test_on_event_gets_the_live_events(make_engine):
    events = []
    e = make_engine()
    r = e.execute(script("""
        from hermes_tools import read_file
        print("hi")
        read_file("missing.txt")
        """), on_event=events.append)
    assert r.status == "success", r
    kinds = [ev["event"] for ev in events]
    assert kinds[0] == "start" and kinds[-1] == "end", kinds
    assert "call" in kinds and "call_end" in kinds and "output" in kinds, kinds
    assert events[-1]["result"]["output"] == r.output
