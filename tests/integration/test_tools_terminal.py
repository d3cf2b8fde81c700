# SPDX-License-Identifier: MIT
"""The terminal tool (docs/seed.md 2.5), through `ptc tool` and scripts."""

import json
import os
import re
import signal
import textwrap
import time
import uuid

import pytest

from conftest import (expect, kill_pids, processes_marked, wait_for_file,
                      wait_no_process_marked)


def term(ptc, args, opts=(), **kw):
    if isinstance(args, str):
        args = {"command": args}
    r = ptc.run_ptc(["tool", *opts, "terminal", json.dumps(args)], **kw)
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
    # A cat blocked on its stdin would end at the command's timeout (exit 124, no "rc=0")
    # or fail run_ptc's hard timeout: no stopwatch needed.
    d = term(ptc, "cat; echo rc=$?", timeout=20)
    assert d["output"] == "rc=0", d


def test_terminal_timeout(ptc):
    t0 = time.monotonic()
    d = term(ptc, {"command": "echo started; sleep 60", "timeout": 1})
    elapsed = time.monotonic() - t0
    assert d["exit_code"] == 124, d
    assert d["output"].startswith("started"), d
    assert d["output"].endswith("[Command timed out after 1s]"), d
    assert elapsed < 20, elapsed  # hang guard: the command sleeps 60 s


def unique_sleep():
    """`sleep 30.<digits>`: a command line no other process has, to find it by."""
    return f"sleep 30.{uuid.uuid4().int % 10**12:012d}"


@pytest.mark.parametrize("level", ["none", "auto"])
def test_terminal_timeout_kills_process_group(ptc, level):
    pidfile = ptc.path("bg.pid")
    sleep = unique_sleep()
    cfg = ptc.write_config(f"sandbox:\n  isolation: {level}\n")
    d = term(ptc, {"command": f"sh -c 'echo $$ > {pidfile}; exec {sleep}'", "timeout": 1},
             opts=("--config", cfg))
    assert d["exit_code"] == 124, d
    assert pidfile.read_text().strip(), "the command never ran"
    left = wait_no_process_marked(sleep, 2.0)
    kill_pids(left)
    assert not left, f"{sleep} survived the terminal timeout: {left}"


# --- the tools' side of isolation (docs/contracts.md 8): ptc is not visible to the command ---

SHOW_PROCS = ("echo pid=$$ ppid=$PPID; cat /proc/$PPID/environ | tr '\\0' '\\n' | rev; "
              "for p in /proc/[0-9]*; do echo \"$p $(tr '\\0' ' ' < $p/cmdline)\"; done")
SECRET = "hunter2-9f8e7d6c5b4a"


@pytest.mark.skipif(os.geteuid() != 0, reason="commands get a pid namespace only as root "
                    "(docs/decisions.md); unprivileged, ptc is non-dumpable instead")
@pytest.mark.parametrize("level", ["none", "auto", "strict"])
def test_terminal_cannot_see_ptc(ptc, level):
    r = ptc.run(f"""
        from hermes_tools import terminal
        print(terminal({SHOW_PROCS!r})["output"])
        """, "--isolation", level, env={"PROVIDER_API_KEY": SECRET})
    expect(r, 0, "success")
    out = r.output
    assert SECRET not in out and SECRET[::-1] not in out, out
    ptc_seen = [l for l in out.splitlines() if str(ptc.bin) in l]
    if level == "none":
        # the control: the command sees ptc (and the script), so the check below can fail
        assert ptc_seen, out
        assert "pid=1 " not in out, out
    else:
        # pid 1 is the namespace's init (ptc's binary afresh, core/command/pidns-init.h)
        assert "pid=2 ppid=1" in out, out
        assert not ptc_seen, out
        procs = [l for l in out.splitlines() if l.startswith("/proc/")]
        assert procs[0].startswith("/proc/1 ptc-pidns-init "), out
        assert len(procs) <= 5, out  # init, bash, and what this command line runs


@pytest.mark.skipif(os.geteuid() != 0, reason="commands get a pid namespace only as root")
def test_terminal_umount_proc_uncovers_nothing(ptc):
    """The host's /proc is detached in a command's mount namespace, not covered by the fresh
    one: a root command that unmounts /proc finds no /proc of the host's beneath (and no ptc
    in it)."""
    r = ptc.run(f"""
        from hermes_tools import terminal
        print(terminal("umount /proc; echo umount=$?; "
                       "for p in /proc/[0-9]*; do echo \\"$p $(tr '\\\\0' ' ' < $p/cmdline)\\"; "
                       "done; echo end")["output"])
        """, "--isolation", "auto")
    expect(r, 0, "success")
    out = r.output
    if "umount=0" not in out:
        pytest.skip(f"this kernel's pid namespace was refused or /proc is no mount: {out}")
    assert "end" in out, out
    assert str(ptc.bin) not in out, out
    assert not [l for l in out.splitlines() if re.match(r"/proc/[0-9]", l)], out


@pytest.mark.skipif(os.geteuid() != 0, reason="commands get a pid namespace only as root")
def test_terminal_daemon_dies_with_the_command(ptc):
    """In its own pid namespace a command's daemon (a new session, out of the command's
    process group) dies with the command, not only when ptc exits."""
    sleep = unique_sleep()
    daemon = ("import subprocess as s; s.Popen(" + repr(sleep.split()) + ", "
              "start_new_session=True, stdin=s.DEVNULL, stdout=s.DEVNULL, stderr=s.DEVNULL)")
    command = f'python3 -c "{daemon}"; pgrep -f "{sleep}" >/dev/null && echo running'
    # from a file: on ptc's command line the marker would be found in ptc itself
    script = ptc.path("daemon.py")
    script.write_text(textwrap.dedent(f"""
        import time
        from hermes_tools import terminal
        print(terminal({command!r})["output"], flush=True)
        open("ready", "w").write("1")
        time.sleep(30)
        """))
    proc = ptc.spawn(["run", str(script)])
    try:
        assert wait_for_file(ptc.workdir / "ready", 15), "the script never got there"
        # the command has returned and the run goes on: the daemon must be gone already
        left = wait_no_process_marked(sleep, 2.0)
        assert not left, f"the daemon {sleep} outlived its command: {left}"
    finally:
        kill_pids(processes_marked(sleep))
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=10)
    # it was running while the command ran (so the check above could find it)
    assert json.loads(out)["output"].startswith("running\n"), out


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
    # Exit code -1 with no output (not 0, not a timeout) shows the command was not run.
    d = term(ptc, command)
    assert d["output"] == "" and d["exit_code"] == -1, d
    assert d["status"] == "error" and isinstance(d["error"], str) and d["error"], d


def test_terminal_guard_skipped_for_help(ptc):
    d = term(ptc, "nohup --help")
    assert d["exit_code"] == 0, d
    assert d.get("status") != "error", d


@pytest.mark.parametrize("level", ["none", "auto"])
def test_ptc_tool_terminal_cannot_read_secrets_from_ptc(ptc, level):
    cfg = ptc.write_config(f"sandbox:\n  isolation: {level}\n")
    d = term(ptc, "cat /proc/$PPID/comm 2>/dev/null; tr '\\0' '\\n' 2>/dev/null "
                  "< /proc/$PPID/environ | grep -c tool-proc-secret || true", opts=("--config", cfg),
             env={"MY_API_KEY": "tool-proc-secret-abcdef", "OPENAI_API_KEY":
                  "tool-proc-secret-123456"})
    # The parent is ptc (none), or ptc's binary afresh as the pid namespace's init (auto,
    # as root): either way no secret in its environment.
    comm, count = d["output"].split("\n")
    assert comm.startswith("ptc"), d
    assert count == "0", d


# --- The guard reads the command as bash does -------------------------------------------
# Only a real background '&' and command words count (docs/tools.md, terminal): quoted
# text, arguments and redirections such as 2>&1 do not.

GUARD_DETACH = ("terminal() runs commands in the foreground only: nohup, disown and setsid "
                "cannot keep a process alive after the call, because everything the command "
                "started is killed when it finishes. Run the program in the foreground with a "
                "timeout instead.")
GUARD_BACKGROUND = ("terminal() runs commands in the foreground only: a job put in the "
                    "background with '&' is killed when the command finishes. Run the steps "
                    "one after another in the foreground, each with a timeout.")
GUARD_SERVER = ("This command looks like it starts a long-running server or watcher, which "
                "would only block until the timeout: terminal() is foreground only. Run bounded "
                "commands (a build, a test run, a single request) instead, and start servers "
                "outside the script.")


def fake_bin(ptc, *names):
    """A PATH entry where each of @names prints its name and arguments (no network, no
    installs)."""
    d = ptc.tmp / "fakebin"
    d.mkdir(exist_ok=True)
    for n in names:
        p = d / n
        p.write_text('#!/bin/sh\nprintf "%s" "${0##*/}"; printf " [%s]" "$@"; echo\n')
        p.chmod(0o755)
    return {"PATH": f"{d}:{os.environ.get('PATH', '/usr/bin:/bin')}"}


@pytest.mark.parametrize("command, output", [
    ("""printf %s 'it'"'"'s $HOME `id` "q" & ;'""", """it's $HOME `id` "q" & ;"""),
    ("curl -s 'https://api.example/x?a=1&b=2'", "curl [-s] [https://api.example/x?a=1&b=2]"),
    ("pip install uvicorn gunicorn", "pip [install] [uvicorn] [gunicorn]"),
    ("grep -c nodemon package.json", "1"),
    ('echo "run vite later"', "run vite later"),
    ("echo 'a & b' 2>&1 | tr a-z A-Z", "A & B"),
    ("make_it() { echo built; }; make_it >/dev/null 2>&1 && echo nohup disown setsid",
     "nohup disown setsid"),
])
def test_terminal_guard_lets_ordinary_commands_run(ptc, command, output):
    (ptc.workdir / "package.json").write_text('{"devDependencies": {"nodemon": "1"}}\n')
    d = term(ptc, command, env=fake_bin(ptc, "curl", "pip"))
    assert "status" not in d, d
    assert d["exit_code"] == 0 and d["error"] is None, d
    assert d["output"] == output, d


@pytest.mark.parametrize("command, text", [
    ("nohup sleep 100 &", GUARD_DETACH),
    ("sudo -u nobody setsid sleep 100", GUARD_DETACH),
    ("sleep 100 &", GUARD_BACKGROUND),
    ("make && (sleep 100)& echo started", GUARD_BACKGROUND),
    ("echo $(sleep 100 &)", GUARD_BACKGROUND),
    ("npm run dev", GUARD_SERVER),
    ("cd web && NODE_ENV=dev timeout 60 npx vite --port 3000", GUARD_SERVER),
    ("uvicorn app:app", GUARD_SERVER),
    ("python3 -m http.server 8000", GUARD_SERVER),
    ("docker compose up", GUARD_SERVER),
    ("bash -c 'yarn start'", GUARD_SERVER),
])
def test_terminal_guard_refuses_with_the_seeds_texts(ptc, command, text):
    # Refused before running: a run would have an exit code and no status.
    d = term(ptc, command)
    assert d == {"output": "", "exit_code": -1, "error": text, "status": "error"}, d


def test_terminal_guard_leaves_syntax_errors_to_bash(ptc):
    # Not refused on a guess: bash reports the unbalanced quote (and runs nothing).
    d = term(ptc, "echo 'unbalanced & nohup sleep 100")
    assert "status" not in d, d
    assert d["exit_code"] == 2, d
    assert "unexpected EOF" in d["output"], d
    # bash runs -c line by line: the lines before the error are checked as usual.
    d = term(ptc, "sleep 100 &\necho 'unbalanced")
    assert d["error"] == GUARD_BACKGROUND, d


def test_terminal_guard_in_a_script(ptc):
    r = ptc.run("""
        from hermes_tools import terminal
        a = terminal("printf '%s\\\\n' 'x & y' \\"uvicorn\\" 2>&1")
        b = terminal('nohup sleep 100 &')
        print(repr(a['output']), a['exit_code'], b['exit_code'], b["error"][:47])
        """)
    expect(r, 0, "success")
    assert r.output == ("'x & y\\nuvicorn' 0 -1 terminal() runs commands in the foreground "
                        "only\n"), r
