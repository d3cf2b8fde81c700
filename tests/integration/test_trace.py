# SPDX-License-Identifier: MIT
"""ptc run --trace FILE (docs/observability.md, "Traces"): Chrome trace-event JSON with the
run's phases and one span per tool call on the thread that served it (eight concurrent
calls overlap), no secret in it, and a trace that cannot be written is a warning, not a
failed run."""

import json

from conftest import expect
from isolation_util import iso_fixture
from isolation_util import iso_user, iso_user_binary  # noqa: F401  (pytest fixtures)

iso = iso_fixture("ptct-", 0o755)

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


# The steps of a start, in the order they are taken (docs/observability.md).
STEPS = ["plan", "clone", "user namespace", "file system", "sandbox uid", "init",
         "script fork", "rlimits", "no_new_privs", "landlock", "seccomp", "exec"]


def layers_that_work(ptc):
    """The layers ptc doctor says work here: {"namespaces", "landlock", ...}."""
    r = ptc.run_ptc(["doctor"])
    text = r.stdout.decode("utf-8", "replace") + r.stderr
    return {line.split()[0] for line in text.splitlines()
            if line.startswith("  ") and len(line.split()) > 1 and line.split()[1] == "works"}


def start_spans(ptc, *opts):
    path = ptc.path("start.json")
    r = ptc.run("print('up')", "--trace", str(path), *opts, input=b"")
    expect(r, 0, "success")
    spans = [e for e in json.loads(path.read_text())["traceEvents"] if e["ph"] == "X"]
    return spans, {e["name"]: e for e in spans}


def check_steps(spans, by_name):
    """The sandbox steps lie inside spawn, in order, one after the other."""
    spawn = by_name["spawn"]
    steps = sorted((e for e in spans if e["cat"] == "sandbox"), key=lambda e: e["ts"])
    names = [e["name"] for e in steps]
    assert names == [n for n in STEPS if n in names], names
    assert names[0] == "plan" and names[-1] == "exec", names
    for prev, e in zip(steps, steps[1:]):
        assert e["ts"] == prev["ts"] + prev["dur"], (prev, e)
    for e in steps:
        assert spawn["ts"] <= e["ts"] and e["ts"] + e["dur"] <= spawn["ts"] + spawn["dur"], e
        assert e["tid"] == spawn["tid"], e
    return set(names)


def test_trace_times_each_layer_and_the_interpreter_start(iso):
    """As root and as an unprivileged user: their starts take different steps."""
    spans, by_name = start_spans(iso)
    names = check_steps(spans, by_name)
    works = layers_that_work(iso)
    assert {"plan", "clone", "init", "script fork", "no_new_privs", "exec"} <= names, names
    ns = "namespaces" in works
    for layer, step in (("namespaces", "file system"), ("landlock", "landlock"),
                        ("seccomp", "seccomp"), ("rlimits", "rlimits")):
        assert (step in names) == (layer in works), (layer, works, names)
    assert ("sandbox uid" in names) == (ns and iso.is_root), names
    assert ("user namespace" in names) == (ns and not iso.is_root), names
    script, interp = by_name["script"], by_name["interpreter start"]
    assert interp["ts"] == script["ts"] and 0 < interp["dur"] <= script["dur"], (script, interp)


def test_trace_of_an_unconfined_start_has_no_layer_steps(ptc):
    spans, by_name = start_spans(ptc, "--isolation", "none")
    names = check_steps(spans, by_name)
    assert not names & {"user namespace", "file system", "sandbox uid", "rlimits",
                        "landlock", "seccomp"}, names
    assert by_name["interpreter start"]["dur"] > 0
