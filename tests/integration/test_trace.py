# SPDX-License-Identifier: MIT
"""ptc run --trace FILE (docs/observability.md, "Traces"): Chrome trace-event JSON with the
run's phases and one span per tool call on the thread that served it (eight concurrent
calls overlap), no secret in it, and a trace that cannot be written is a warning, not a
failed run."""

import json

from conftest import expect

PARALLEL = """
import threading
from hermes_tools import terminal
secret = "ghp_" + "Zx9" * 12
def one(i):
    terminal(f"sleep 0.3; echo {i} {secret}")
ts = [threading.Thread(target=one, args=(i,)) for i in range(8)]
[t.start() for t in ts]
[t.join() for t in ts]
print("done")
"""


def test_trace_has_the_phases_and_overlapping_calls(ptc):
    path = ptc.path("trace.json")
    r = ptc.run_file(PARALLEL, "--trace", str(path), input=b"")
    expect(r, 0, "success")
    text = path.read_text(encoding="utf-8")
    assert "ghp_" + "Zx9" * 12 not in text and "Zx9Zx9Zx9" not in text
    doc = json.loads(text)
    assert doc["displayTimeUnit"] == "ms" and doc["otherData"]["spans_lost"] == 0
    spans = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    for e in spans:
        assert isinstance(e["ts"], int) and isinstance(e["dur"], int) and e["dur"] >= 0, e
        assert {"name", "cat", "pid", "tid"} <= e.keys(), e
    names = {e["name"] for e in spans}
    assert {"config", "engine start", "run", "stubs", "staging", "rpc server", "spawn",
            "script", "result", "teardown"} <= names, names
    tools = [e for e in spans if e["cat"] == "tool"]
    assert len(tools) == 8 and all(e["name"] == "tool: terminal" for e in tools), tools
    assert len({e["tid"] for e in tools}) >= 2
    # The calls overlap: some instant is inside more than one of them.
    starts = sorted(e["ts"] for e in tools)
    assert any(s < e["ts"] + e["dur"] for s in starts[1:] for e in tools if e["ts"] < s)
    run = next(e for e in spans if e["name"] == "run")
    for e in tools:
        assert run["ts"] <= e["ts"] and e["ts"] + e["dur"] <= run["ts"] + run["dur"], (run, e)
    threads = [e for e in doc["traceEvents"] if e["ph"] == "M"]
    assert {e["tid"] for e in threads} == {e["tid"] for e in spans}


def test_an_unwritable_trace_is_a_warning(ptc):
    r = ptc.run("print('fine')", "--trace", "/nonexistent-dir/t.json", input=b"")
    expect(r, 0, "success")
    assert "trace: cannot write '/nonexistent-dir/t.json'" in r.stderr, r
