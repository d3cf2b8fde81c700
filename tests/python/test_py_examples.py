# SPDX-License-Identifier: MIT
"""The examples run as printed: examples/execute_code_tool.py, examples/agent_loop.py and
the host-side Python blocks of docs/python.md."""

import json
import os
import re
import subprocess
import sys

from pyhost import ASAN_PRELOAD, HARD, REPO_ROOT, ptc, scratch  # noqa: F401

TIMEOUT = 4 * HARD


def run_host(args, cwd, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k != "PTC_CONFIG"}
    env["PYTHONPATH"] = str(REPO_ROOT / "python")
    env["HOME"] = str(cwd)
    env["XDG_CONFIG_HOME"] = str(cwd / "xdg")
    env.update(env_extra or {})
    if ASAN_PRELOAD and args[0] != "-c":
        # The example as printed, in a process that takes the sanitizer runtime for itself
        # only (see pyhost.py).
        env["LD_PRELOAD"] = ASAN_PRELOAD
        args = ["-c", "import os, runpy, sys; os.environ.pop('LD_PRELOAD'); "
                "sys.argv = sys.argv[1:]; sys.path.insert(0, os.path.dirname(sys.argv[0])); "
                "runpy.run_path(sys.argv[0], run_name='__main__')", *args]
    elif ASAN_PRELOAD:
        env["LD_PRELOAD"] = ASAN_PRELOAD
        args = ["-c", "import os; os.environ.pop('LD_PRELOAD'); " + args[1], *args[2:]]
    p = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=TIMEOUT)
    assert p.returncode == 0, f"{args}: rc={p.returncode}\n{p.stdout}\n{p.stderr}"
    return p.stdout


def test_execute_code_tool_example(scratch):
    out = run_host([str(REPO_ROOT / "examples" / "execute_code_tool.py")], scratch)
    lines = out.splitlines()
    assert lines[0] == "schema: execute_code parameters: ['code']", out
    r = json.loads(lines[1])
    assert r["status"] == "success", out
    assert r["output"] == "2 todos; city Oslo; Linux\n", out
    assert r["tool_calls_made"] == 4
    assert set(r) >= {"status", "output", "tool_calls_made", "duration_seconds", "exit_code"}
    assert json.loads(lines[2]) == {"error": "No code provided."}


def test_execute_code_tool_schema_is_the_engines(scratch):
    """Imported as a module: the registry's execute_code schema is what ptc schema gives
    for the same tools, and the host tools are named in it."""
    code = ("import json, execute_code_tool as m\n"
            "s = m.registry.tools['execute_code']['schema']\n"
            "print(json.dumps(s))\n"
            "print(m.execute_code('print(1)', enabled_tools=['todo']))\n"
            "print(m.execute_code('from hermes_tools import terminal', enabled_tools=['todo']))\n"
            "m.engine().close()\n")
    out = run_host(["-c", code], scratch, {"PYTHONPATH": os.pathsep.join(
        [str(REPO_ROOT / "python"), str(REPO_ROOT / "examples")])})
    lines = out.splitlines()
    s = json.loads(lines[0])
    assert s["name"] == "execute_code" and s["parameters"]["required"] == ["code"]
    assert "memory" in s["description"] and "todo" in s["description"]
    assert json.loads(lines[1])["output"] == "1\n"
    r = json.loads(lines[2])
    assert r["status"] == "error" and "terminal" in r["output"], r


def test_agent_loop_example(scratch):
    out = run_host([str(REPO_ROOT / "examples" / "agent_loop.py")], scratch)
    lines = out.splitlines()
    assert lines[0].startswith("[tool execute_code] {"), out
    r = json.loads(lines[0].split(" ", 2)[2])
    assert r["status"] == "success", out
    assert lines[-1] == ("Done. 3 of 5 notes have a TODO: day1.txt, day3.txt, day5.txt; "
                         "day1 says 'TODO: call Bob'"), out


def doc_blocks():
    text = (REPO_ROOT / "docs" / "python.md").read_text(encoding="utf-8")
    return re.findall(r"<!-- example: skip \(host-side Python[^)]*\) -->\n```python\n(.*?)```",
                      text, re.S)


def test_docs_python_quick_example(scratch):
    blocks = doc_blocks()
    assert blocks, "docs/python.md lost its quick example"
    for i, code in enumerate(blocks):
        p = scratch / f"doc{i}.py"
        p.write_text(code, encoding="utf-8")
        out = run_host([str(p)], scratch)
        if i == 0:
            assert out == "success 4\ntotal: 1.75\nKeyError: 'plum'\n", out
