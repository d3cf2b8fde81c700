# SPDX-License-Identifier: MIT
"""ptc run --progress-fd: one JSON line per dispatched tool call, for hosts (ptc mcp)."""

import json
import os
import subprocess
import textwrap

from conftest import expect_usage_error


def run_with_progress(ptc, code, *opts):
    r, w = os.pipe()
    try:
        p = subprocess.run([str(ptc.bin), "run", "--progress-fd", str(w), *opts, "-c",
                            textwrap.dedent(code)],
                           pass_fds=[w], capture_output=True, env=ptc.make_env(),
                           cwd=str(ptc.workdir), timeout=30)
    finally:
        os.close(w)
    with os.fdopen(r, "rb") as f:
        lines = f.read().decode().splitlines()
    return p, [json.loads(x) for x in lines]


def test_one_line_per_call_in_order(ptc):
    (ptc.workdir / "a.txt").write_text("x\n")
    p, events = run_with_progress(ptc, """
        from hermes_tools import read_file, terminal
        read_file('a.txt'); terminal('true'); read_file('a.txt')
        print('done')
        """)
    assert p.returncode == 0, p
    assert json.loads(p.stdout)["tool_calls_made"] == 3
    assert events == [{"tool": "read_file", "count": 1}, {"tool": "terminal", "count": 2},
                      {"tool": "read_file", "count": 3}]


def test_refused_calls_are_not_reported(ptc):
    p, events = run_with_progress(ptc, """
        from hermes_tools import terminal
        for _ in range(3):
            terminal('true')
        """, "--max-tool-calls", "1")
    assert p.returncode == 0, p
    assert events == [{"tool": "terminal", "count": 1}]


def test_script_does_not_inherit_the_fd(ptc):
    r, w = os.pipe()
    try:
        p = subprocess.run([str(ptc.bin), "run", "--progress-fd", str(w), "-c",
                            f"import os\ntry:\n    os.fstat({w})\n    print('open')\n"
                            f"except OSError:\n    print('closed')"],
                           pass_fds=[w], capture_output=True, env=ptc.make_env(),
                           cwd=str(ptc.workdir), timeout=30)
    finally:
        os.close(w)
        os.close(r)
    assert json.loads(p.stdout)["output"] == "closed\n", p


def test_bad_progress_fd_exits_2(ptc):
    expect_usage_error(ptc.run_ptc(["run", "--progress-fd", "99", "-c", "print(1)"]),
                       "--progress-fd")
    expect_usage_error(ptc.run_ptc(["run", "--progress-fd", "1", "-c", "print(1)"]),
                       "--progress-fd")


def test_progress_of_a_run_on_a_remote_backend(ptc):
    # docs/remote.md: the agent reports each dispatched call; the host writes the line.
    (ptc.workdir / "a.txt").write_text("x\n")
    r, w = os.pipe()
    try:
        p = subprocess.run([str(ptc.bin), "run", "--progress-fd", str(w), "--backend",
                            "exec:sh", "-c", "from hermes_tools import read_file, terminal\n"
                            "read_file('a.txt'); terminal('true')\n"],
                           pass_fds=[w], capture_output=True,
                           env=ptc.make_env({"PATH": f"{ptc.bin.parent}:{ptc.env['PATH']}"}),
                           cwd=str(ptc.workdir), timeout=60)
    finally:
        os.close(w)
    with os.fdopen(r, "rb") as f:
        events = [json.loads(x) for x in f.read().decode().splitlines()]
    assert p.returncode == 0, p
    assert events == [{"tool": "read_file", "count": 1}, {"tool": "terminal", "count": 2}], events
