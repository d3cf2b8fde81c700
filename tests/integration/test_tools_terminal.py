# SPDX-License-Identifier: MIT
"""The terminal tool (seed-behavior.md 2.5), through `ptc tool` and scripts."""

import json
import os
import time

import pytest

from conftest import expect, kill_pids, wait_gone


def term(ptc, args, **kw):
    if isinstance(args, str):
        args = {"command": args}
    r = ptc.run_ptc(["tool", "terminal", json.dumps(args)], **kw)
    assert r.rc == 0, r
    assert r.data is not None, r
    return r.data


def test_terminal_success_shape(ptc):
    d = term(ptc, "echo hello")
    assert d["output"] == "hello", d
    assert d["exit_code"] == 0, d
    assert "error" in d and d["error"] is None, d


def test_terminal_output_trimmed(ptc):
    d = term(ptc, "printf '\\n\\n   padded   \\n\\n'")
    assert d["output"] == "padded", d


def test_terminal_merges_stderr(ptc):
    d = term(ptc, "echo out; echo err >&2; echo out2")
    assert d["output"].split("\n") == ["out", "err", "out2"], d


def test_terminal_failing_command_is_not_an_error(ptc):
    d = term(ptc, "echo partial; exit 3")
    assert d["exit_code"] == 3 and d["output"] == "partial", d
    assert d["error"] is None, d


def test_terminal_exit_code_meaning_for_grep(ptc):
    (ptc.workdir / "g.txt").write_text("abc\n")
    d = term(ptc, "grep zzz g.txt")
    assert d["exit_code"] == 1, d
    assert isinstance(d.get("exit_code_meaning"), str) and d["exit_code_meaning"], d


def test_terminal_runs_bash(ptc):
    d = term(ptc, "echo ${BASH_VERSION:+bash}; arr=(a b); echo ${arr[1]}")
    assert d["output"] == "bash\nb", d


def test_terminal_default_workdir_is_cwd(ptc):
    d = term(ptc, "pwd")
    assert os.path.realpath(d["output"]) == os.path.realpath(ptc.workdir), d


def test_terminal_workdir_param(ptc):
    sub = ptc.path("wd")
    sub.mkdir()
    d = term(ptc, {"command": "pwd", "workdir": str(sub)})
    assert os.path.realpath(d["output"]) == os.path.realpath(sub), d


def test_terminal_workdir_disallowed_character(ptc):
    d = term(ptc, {"command": "pwd", "workdir": "/tmp;touch /tmp/ptc-itest-pwned"})
    assert d["status"] == "blocked", d
    assert d["error"].startswith("Blocked: workdir contains disallowed character ';'"), d
    assert d["exit_code"] == -1 and d["output"] == "", d
    assert not os.path.exists("/tmp/ptc-itest-pwned")


@pytest.mark.parametrize("command,type_name", [(42, "int"), (["ls"], "list"), (None, None)])
def test_terminal_non_string_command(ptc, command, type_name):
    d = term(ptc, {"command": command})
    assert d["exit_code"] == -1 and d["output"] == "", d
    assert d["error"].startswith("Invalid command: expected string"), d
    assert d.get("status") == "error", d


def test_terminal_stdin_is_not_a_tty_and_empty(ptc):
    t0 = time.monotonic()
    d = term(ptc, "cat; echo rc=$?", timeout=20)
    assert d["output"] == "rc=0", d
    assert time.monotonic() - t0 < 5


def test_terminal_timeout(ptc):
    t0 = time.monotonic()
    d = term(ptc, {"command": "echo started; sleep 10", "timeout": 1})
    elapsed = time.monotonic() - t0
    assert d["exit_code"] == 124, d
    assert d["output"].startswith("started"), d
    assert d["output"].endswith("[Command timed out after 1s]"), d
    assert elapsed < 4, elapsed


def test_terminal_timeout_kills_process_group(ptc):
    pidfile = ptc.path("bg.pid")
    d = term(ptc, {"command": f"sh -c 'echo $$ > {pidfile}; exec sleep 30'", "timeout": 1})
    assert d["exit_code"] == 124, d
    pid = int(pidfile.read_text())
    try:
        assert wait_gone(pid, 2.0), f"sleep {pid} survived the terminal timeout"
    finally:
        kill_pids([pid])


def test_terminal_foreground_timeout_over_max(ptc):
    d = term(ptc, {"command": "echo hi", "timeout": 601})
    assert d["error"].startswith("Foreground timeout 601s exceeds the maximum of 600s."), d
    assert "output" not in d, d


def test_terminal_timeout_600_allowed(ptc):
    d = term(ptc, {"command": "echo ok", "timeout": 600})
    assert d["output"] == "ok" and d["exit_code"] == 0, d


def test_terminal_output_truncated_without_thousands_separators(ptc):
    d = term(ptc, "seq 1 20000")
    total = sum(len(str(i)) + 1 for i in range(1, 20001))
    full = "".join(f"{i}\n" for i in range(1, 20001))
    notice = (f"\n\n... [OUTPUT TRUNCATED - {total - 50000} chars omitted out of {total} "
              "total] ...\n\n")
    assert d["output"] == (full[:20000] + notice + full[-30000:]).strip(), d["output"][19900:20200]


def test_terminal_strips_ansi(ptc):
    d = term(ptc, "printf '\\033[31mred\\033[0m \\033[1mbold\\033[22m'")
    assert d["output"] == "red bold", d


def test_terminal_redacts_patterns(ptc):
    d = term(ptc, "echo sk-abcdefghijklmnop1234")
    assert d["output"] == "sk-abc...1234", d


def test_terminal_invalid_utf8(ptc):
    d = term(ptc, "printf 'a\\377b'")
    assert d["output"] == "a\ufffdb", d


def test_terminal_env_is_scrubbed(ptc):
    d = term(ptc, "echo \"[$GITHUB_TOKEN][$DISPLAY][$HOME]\"",
             env={"GITHUB_TOKEN": "ghtoken-abcdefgh", "DISPLAY": ":7"})
    assert d["output"] == f"[][][{ptc.home}]", d


def test_terminal_in_script_counts_and_timeout_param(ptc):
    r = ptc.run("""
        from hermes_tools import terminal
        a = terminal('sleep 5', timeout=1)
        b = terminal('echo $((6*7))')
        print(a['exit_code'], b['output'])
        """)
    expect(r, 0, "success")
    assert r.output == "124 42\n", r
    assert r.data["tool_calls_made"] == 2


@pytest.mark.parametrize("command", ["sleep 1 &", "sleep 1 & echo x", "nohup sleep 1",
                                     "setsid sleep 1", "python3 -m http.server 8000"])
def test_terminal_long_lived_process_guard(ptc, command):
    t0 = time.monotonic()
    d = term(ptc, command)
    assert d["output"] == "" and d["exit_code"] == -1, d
    assert d["status"] == "error" and isinstance(d["error"], str) and d["error"], d
    assert time.monotonic() - t0 < 2, "the guarded command was run"


def test_terminal_guard_skipped_for_help(ptc):
    d = term(ptc, "nohup --help")
    assert d["exit_code"] == 0, d
    assert d.get("status") != "error", d


def test_ptc_tool_terminal_cannot_read_secrets_from_ptc(ptc):
    d = term(ptc, "cat /proc/$PPID/comm; tr '\\0' '\\n' < /proc/$PPID/environ "
                  "| grep -c tool-proc-secret || true",
             env={"MY_API_KEY": "tool-proc-secret-abcdef", "OPENAI_API_KEY":
                  "tool-proc-secret-123456"})
    comm, count = d["output"].split("\n")
    assert comm.startswith("ptc"), d
    assert count == "0", d
