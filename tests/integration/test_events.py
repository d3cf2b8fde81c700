# SPDX-License-Identifier: MIT
"""ptc run --events (docs/observability.md): the live events of a run, checked against
docs/events.schema.json, complete and ordered with concurrent calls, a timeout, an
interrupt and the tool budget; output streamed as it is printed; no secret in any event; a
pipe as well as a file."""

import json
import os
import signal
import subprocess
import time

import jsonschema
import pytest

from conftest import REPO_ROOT, expect, expect_usage_error, kill_group

SCHEMA = json.loads((REPO_ROOT / "docs" / "events.schema.json").read_text(encoding="utf-8"))


def read_events(path):
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for e in events:
        jsonschema.validate(e, SCHEMA)
    return events


def check_complete(events):
    """start first, end last, t in order, every call id ended after it began."""
    assert events[0]["event"] == "start" and events[-1]["event"] == "end", events
    ts = [e["t"] for e in events]
    assert ts == sorted(ts), ts
    begun, ended = {}, set()
    for i, e in enumerate(events):
        if e["event"] == "call" and "id" in e:
            begun[e["id"]] = i
        if e["event"] == "call_end":
            assert e["id"] in begun and e["id"] not in ended, e
            ended.add(e["id"])
    assert set(begun) == ended, (begun, ended)
    return events[-1]["result"]


def test_concurrent_calls_are_complete_and_ordered(ptc):
    path = ptc.path("events.jsonl")
    r = ptc.run_file("""
        import sys, threading
        from hermes_tools import terminal, read_file
        print("before")
        def one(i):
            terminal(f"echo call{i}")
        ts = [threading.Thread(target=one, args=(i,)) for i in range(8)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        print("warning", file=sys.stderr)
        print("after", end="")
        """, "--events", str(path), input=b"")
    expect(r, 0, "success")
    events = read_events(path)
    result = check_complete(events)
    assert result == r.data, (result, r.data)
    calls = [e for e in events if e["event"] == "call"]
    assert sorted(e["id"] for e in calls) == list(range(1, 9))
    assert all(e["tool"] == "terminal" and "echo call" in e["args_preview"] for e in calls)
    ends = [e for e in events if e["event"] == "call_end"]
    assert all(e["ok"] and e["result_bytes"] > 0 for e in ends)
    out = [e for e in events if e["event"] == "output"]
    assert "".join(e["text"] for e in out if e["stream"] == "stdout") == "before\nafter"
    assert [e["text"] for e in out if e["stream"] == "stderr"] == ["warning\n"]
    start = events[0]
    assert start["tools"] and start["cwd"] == str(ptc.workdir)
    assert events[-1]["events_dropped"] == 0
    # Live: the first line went out before the calls were made.
    first_out = next(i for i, e in enumerate(events) if e["event"] == "output")
    assert first_out < events.index(calls[0])


def test_timeout_says_limit_then_ends(ptc):
    path = ptc.path("events.jsonl")
    r = ptc.run_file("""
        import time
        print("sleeping")
        time.sleep(30)
        """, "--events", str(path), "--timeout", "1", input=b"")
    expect(r, 124, "timeout")
    events = read_events(path)
    result = check_complete(events)
    assert result["status"] == "timeout"
    limits = [e for e in events if e["event"] == "limit"]
    assert limits == [{"event": "limit", "t": limits[0]["t"], "limit": "timeout",
                       "timeout": 1.0}], limits
    assert events.index(limits[0]) < len(events) - 1


def test_budget_limit(ptc):
    path = ptc.path("events.jsonl")
    r = ptc.run_file("""
        from hermes_tools import read_file
        for _ in range(3):
            read_file("nothing")
        """, "--events", str(path), "--max-tool-calls", "2", input=b"")
    expect(r, 0, "success")
    events = read_events(path)
    check_complete(events)
    limits = [e for e in events if e["event"] == "limit"]
    assert [(e["limit"], e["tool"], e["max_tool_calls"]) for e in limits] == \
        [("max_tool_calls", "read_file", 2)]


def test_interrupt_still_ends(ptc):
    path = ptc.path("events.jsonl")
    script = ptc.path("wait.py")
    script.write_text("from hermes_tools import terminal\nterminal('sleep 30')\n")
    p = ptc.spawn(["run", "--events", str(path), str(script)])
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if path.exists() and '"event":"call"' in path.read_text():
                break
            time.sleep(0.05)
        os.kill(p.pid, signal.SIGINT)
        out, err = p.communicate(timeout=30)
    finally:
        kill_group(p.pid)
    assert p.returncode == 130, (out, err)
    events = read_events(path)
    result = check_complete(events)
    assert result["status"] == "interrupted"


def test_no_secret_in_any_event(ptc):
    path = ptc.path("events.jsonl")
    token = "ghp_" + "Ab1" * 12
    r = ptc.run_file(f"""
        from hermes_tools import terminal
        secret = "ghp_" + "Ab1" * 12
        print("token:", secret)
        print(terminal("echo " + secret)["output"])
        """, "--events", str(path), input=b"")
    expect(r, 0, "success")
    text = path.read_text(encoding="utf-8")
    assert token not in text and token[:20] not in text, text
    events = read_events(path)
    assert any(e["event"] == "output" and "token:" in e["text"] for e in events)


def test_a_pipe_gets_the_events_as_they_happen(ptc):
    rfd, wfd = os.pipe()
    env = ptc.make_env()
    p = subprocess.Popen([str(ptc.bin), "run", "--events", str(wfd), "-c",
                          "import time\nprint('one')\ntime.sleep(1)\nprint('two')"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, cwd=str(ptc.workdir),
                         pass_fds=(wfd,), start_new_session=True)
    os.close(wfd)
    try:
        with os.fdopen(rfd, "r", encoding="utf-8") as f:
            seen = []
            for line in f:
                e = json.loads(line)
                jsonschema.validate(e, SCHEMA)
                seen.append((e, p.poll()))
        out, err = p.communicate(timeout=30)
    finally:
        kill_group(p.pid)
    assert p.returncode == 0, err
    # "one" came while the script was still running.
    one = next(x for x in seen if x[0]["event"] == "output" and x[0]["text"] == "one\n")
    assert one[1] is None
    assert seen[-1][0]["event"] == "end"


@pytest.mark.parametrize("value,words", [
    ("1", ["--events", ">= 3"]),
    ("/nonexistent-dir/x.jsonl", ["--events", "cannot open"]),
])
def test_bad_events_argument(ptc, value, words):
    r = ptc.run_ptc(["run", "--events", value, "-c", "print(1)"])
    expect_usage_error(r, *words)
