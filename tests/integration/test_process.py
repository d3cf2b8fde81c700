# SPDX-License-Identifier: MIT
"""Supervision of the process tree: deadlines, kill escalation, daemons,
leftover descendants, interrupts, parent death (docs/contracts.md 6 and 9.8).

Every test runs twice: under isolation none (the seed's envelope: the script's init is a subreaper
and kills the script's process tree) and under auto (the default: the script is in a
pid namespace of its own). Inside a pid namespace the pids a script reports are not
the host's, so "nothing is left" is checked by the test's scratch path, which every
process of a run carries in its environment."""

import json
import os
import signal
import subprocess
import textwrap
import time

import pytest

from conftest import (expect, kill_pids, parse_stdout, wait_for_file, wait_gone,
                      wait_no_process_marked)


@pytest.fixture(autouse=True, params=["none", "auto"])
def isolation(request, ptc):
    """Run the module's tests under both isolation levels (through the config file)."""
    cfg = ptc.xdg_config / "ptc"
    cfg.mkdir()
    (cfg / "config.yaml").write_text(f"sandbox:\n  isolation: {request.param}\n")
    ptc.isolation = request.param
    return request.param

DAEMON = """
import os, signal, sys, time
PIDFILE = {pidfile!r}
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        {daemon_extra}
        with open(PIDFILE + '.tmp', 'w') as f:
            f.write(str(os.getpid()))
        os.rename(PIDFILE + '.tmp', PIDFILE)
        time.sleep(60)
        os._exit(0)
    os._exit(0)
os.waitpid(pid, 0)
while not os.path.exists(PIDFILE):
    time.sleep(0.01)
print('daemon started', flush=True)
"""

CLOSE_STDIO = ("fd = os.open('/dev/null', os.O_RDWR)\n"
               "        for i in (0, 1, 2): os.dup2(fd, i)")


def daemon_script(pidfile, tail="", extra="pass"):
    return DAEMON.format(pidfile=str(pidfile), daemon_extra=extra) + textwrap.dedent(tail)


def read_pids(path):
    return [int(x) for x in path.read_text().split()]


def tool_pids_are_host_pids(ptc):
    """A terminal command's $$ is a host pid, unless root runs it confined: then the command
    is pid 1 of its own namespace (docs/isolation.md, the tools' side)."""
    return ptc.isolation == "none" or os.geteuid() != 0


def assert_all_gone(ptc, pids, what, host_pids=False):
    """Nothing of the run is left. @pids, as the script saw them, are checked too
    when they are host pids (isolation none, or pids of tool processes)."""
    if ptc.isolation != "none" and not host_pids:
        pids = []
    try:
        alive = [p for p in pids if not wait_gone(p, 10.0)]
        assert not alive, f"{what}: still running after ptc returned: {alive}"
        left = wait_no_process_marked(str(ptc.tmp), 10.0)
        assert not left, f"{what}: processes of the run still running: {left}"
    finally:
        kill_pids(pids)


def test_two_second_timeout_returns_in_time(ptc):
    r = ptc.run("while True:\n    pass\n", "--timeout", "2")
    expect(r, 124, "timeout")
    # Not early; the upper bound is only a hang guard (docs/testing.md, "Tests and time").
    assert 1.9 <= r.data["duration_seconds"] <= r.elapsed + 0.05, r
    assert r.elapsed < 25, r  # hang guard


def test_timeout_kills_double_forked_setsid_daemon(ptc):
    pidfile = ptc.workdir / "daemon.pid"
    r = ptc.run(daemon_script(pidfile, "time.sleep(60)\n"), "--timeout", "2")
    expect(r, 124, "timeout")
    assert r.output.startswith("daemon started\n"), r
    assert r.elapsed < 25, r  # hang guard
    assert_all_gone(ptc, read_pids(pidfile), "double-forked daemon")


def test_timeout_kills_sigterm_ignoring_daemon(ptc):
    pidfile = ptc.workdir / "daemon.pid"
    code = daemon_script(pidfile, "time.sleep(60)\n",
                         extra="signal.signal(signal.SIGTERM, signal.SIG_IGN)")
    r = ptc.run(code, "--timeout", "1")
    expect(r, 124, "timeout")
    assert_all_gone(ptc, read_pids(pidfile), "SIGTERM-ignoring daemon")


def test_sigterm_ignoring_script_is_killed_after_grace(ptc):
    r = ptc.run("""
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print('ignoring', flush=True)
        while True:
            time.sleep(0.05)
        """, "--timeout", "1")
    expect(r, 124, "timeout")
    assert r.output.startswith("ignoring\n"), r
    # timeout 1 s + grace 2 s; the script never ends by itself, so a missing SIGKILL
    # fails on run_ptc's hard timeout. Only a lower bound here: no early kill.
    assert r.data["duration_seconds"] >= 0.9, r


def test_normal_exit_kills_leftover_daemon_holding_stdio(ptc):
    pidfile = ptc.workdir / "daemon.pid"
    r = ptc.run(daemon_script(pidfile, "print('script done')\n"), "--timeout", "30")
    expect(r, 0, "success")
    assert r.output == "daemon started\nscript done\n", r
    # The daemon still holds the stdout pipe: ptc must not wait for EOF (the daemon
    # sleeps 60 s: waiting for it fails this hang guard or run_ptc's hard timeout).
    assert r.elapsed < 25, r  # hang guard
    assert_all_gone(ptc, read_pids(pidfile), "leftover daemon (inherited stdio)")


def test_normal_exit_kills_leftover_daemon_with_closed_stdio(ptc):
    pidfile = ptc.workdir / "daemon.pid"
    r = ptc.run(daemon_script(pidfile, "print('script done')\n", extra=CLOSE_STDIO),
                "--timeout", "30")
    expect(r, 0, "success")
    assert r.elapsed < 25, r  # hang guard: the daemon sleeps 60 s
    assert_all_gone(ptc, read_pids(pidfile), "leftover daemon (closed stdio)")


def test_normal_exit_kills_plain_children(ptc):
    pidfile = ptc.workdir / "kids.pid"
    r = ptc.run(f"""
        import subprocess
        kids = [subprocess.Popen(['sleep', '60'], start_new_session=(i % 2 == 0))
                for i in range(8)]
        open({str(pidfile)!r}, 'w').write(' '.join(str(k.pid) for k in kids))
        print('spawned')
        """, "--timeout", "30")
    expect(r, 0, "success")
    assert r.elapsed < 25, r  # hang guard: the children sleep 60 s
    assert_all_gone(ptc, read_pids(pidfile), "children of an exited script")


def test_error_exit_also_kills_leftovers(ptc):
    pidfile = ptc.workdir / "daemon.pid"
    r = ptc.run(daemon_script(pidfile, "raise SystemExit(5)\n"), "--timeout", "30")
    expect(r, 1, "error")
    assert r.data["exit_code"] == 5, r
    assert_all_gone(ptc, read_pids(pidfile), "daemon of a failed script")


def test_timeout_cancels_in_flight_tool_call(ptc):
    pidfile = ptc.path("tool.pid")
    r = ptc.run(f"""
        from hermes_tools import terminal
        print('calling', flush=True)
        terminal("echo $$ > {pidfile}; exec sleep 30")
        print('never')
        """, "--timeout", "2")
    expect(r, 124, "timeout")
    assert r.elapsed < 25, r  # hang guard: the command sleeps 30 s
    assert "never" not in r.output
    if pidfile.exists():
        assert_all_gone(ptc, read_pids(pidfile), "terminal command of a timed-out script",
                        host_pids=tool_pids_are_host_pids(ptc))


def test_script_closing_stdout_early_still_waited_for(ptc):
    r = ptc.run("""
        import os, sys, time
        print('before close', flush=True)
        os.close(1)
        time.sleep(1.0)
        sys.stderr.write('late stderr\\n')
        os._exit(7)
        """)
    expect(r, 1, "error")
    assert r.data["exit_code"] == 7, r
    assert r.output == "before close\n\n--- stderr ---\nlate stderr\n", r


def test_closed_stdio_script_times_out(ptc):
    r = ptc.run("import os, time\nos.close(1)\nos.close(2)\ntime.sleep(60)", "--timeout", "2")
    expect(r, 124, "timeout")
    assert r.elapsed < 25, r  # hang guard


def test_many_processes_killed_on_timeout(ptc):
    pidfile = ptc.workdir / "many.pid"
    r = ptc.run(f"""
        import os, time
        pids = []
        for i in range(30):
            p = os.fork()
            if p == 0:
                if i % 3 == 0:
                    os.setsid()
                time.sleep(60)
                os._exit(0)
            pids.append(p)
        open({str(pidfile)!r}, 'w').write(' '.join(map(str, pids)))
        time.sleep(60)
        """, "--timeout", "2")
    expect(r, 124, "timeout")
    assert_all_gone(ptc, read_pids(pidfile), "forked children")


def _start_and_wait_ready(ptc, code, *opts):
    ready = ptc.workdir / "ready"
    code = textwrap.dedent(code).replace("READY", repr(str(ready)))
    proc = ptc.spawn(["run", *opts, "-c", code])
    if not wait_for_file(ready, 15):
        proc.kill()
        out, err = proc.communicate(timeout=10)
        pytest.fail(f"script never became ready: {out!r} {err!r}")
    return proc, ready


def _finish(proc, timeout=30):
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"ptc did not return {timeout}s after the signal: {out!r} {err!r}")
    return proc.returncode, parse_stdout(out), err.decode("utf-8", "replace")


SLEEPER = """
import os, time
print('started', flush=True)
open(READY, 'w').write(str(os.getpid()))
time.sleep(60)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_to_ptc_interrupts(ptc, sig):
    proc, ready = _start_and_wait_ready(ptc, SLEEPER)
    child = int(ready.read_text())
    t0 = time.monotonic()
    proc.send_signal(sig)
    rc, d, err = _finish(proc)
    elapsed = time.monotonic() - t0
    try:
        assert rc == 130, (rc, d, err)
        assert d is not None and d["status"] == "interrupted", (d, err)
        assert d["output"] == "started\n\n[execution interrupted]", d
        assert elapsed < 25, elapsed  # hang guard: the script sleeps 60 s
    finally:
        assert_all_gone(ptc, [child], "interrupted script")


def test_interrupt_with_empty_stdout(ptc):
    proc, ready = _start_and_wait_ready(ptc, """
        import os, time
        open(READY, 'w').write(str(os.getpid()))
        time.sleep(60)
        """)
    proc.send_signal(signal.SIGINT)
    rc, d, err = _finish(proc)
    assert rc == 130, (rc, d, err)
    assert d["output"] == "\n[execution interrupted]", d


def test_interrupt_kills_sigterm_ignoring_script(ptc):
    proc, ready = _start_and_wait_ready(ptc, """
        import os, signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        open(READY, 'w').write(str(os.getpid()))
        while True:
            time.sleep(0.05)
        """)
    child = int(ready.read_text())
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    rc, d, err = _finish(proc)
    try:
        assert rc == 130 and d["status"] == "interrupted", (rc, d, err)
        # The script never ends by itself: a missing SIGKILL fails _finish's hard timeout.
        assert time.monotonic() - t0 < 30  # hang guard
    finally:
        assert_all_gone(ptc, [child], "SIGTERM-ignoring interrupted script")


def test_interrupt_during_tool_call(ptc):
    pidfile = ptc.path("tool.pid")
    proc, ready = _start_and_wait_ready(ptc, f"""
        import os
        from hermes_tools import terminal
        open(READY, 'w').write(str(os.getpid()))
        terminal("echo $$ > {pidfile}; exec sleep 30")
        """)
    wait_for_file(pidfile, 15)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    rc, d, err = _finish(proc)
    assert rc == 130 and d["status"] == "interrupted", (rc, d, err)
    assert time.monotonic() - t0 < 25  # hang guard: the command sleeps 30 s
    if pidfile.exists() and pidfile.read_text().strip():
        assert_all_gone(ptc, read_pids(pidfile), "terminal command of an interrupted script",
                        host_pids=tool_pids_are_host_pids(ptc))


def test_interrupt_kills_daemon(ptc):
    pidfile = ptc.workdir / "daemon.pid"
    code = daemon_script(pidfile, "open(READY, 'w').write('1')\ntime.sleep(60)\n")
    proc, ready = _start_and_wait_ready(ptc, code)
    proc.send_signal(signal.SIGTERM)
    rc, d, err = _finish(proc)
    assert rc == 130, (rc, d, err)
    assert_all_gone(ptc, read_pids(pidfile), "daemon of an interrupted script")


def test_child_dies_with_ptc(ptc):
    proc, ready = _start_and_wait_ready(ptc, SLEEPER)
    child = int(ready.read_text())
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=10)
    assert_all_gone(ptc, [child], "script after ptc was SIGKILLed")


def test_daemon_dies_with_ptc(ptc):
    """ptc SIGKILLed while its script's daemon runs: nothing of the run is left (the
    script's init, a subreaper without a pid namespace, hears ptc die and kills its tree)."""
    pidfile = ptc.workdir / "daemon.pid"
    code = daemon_script(pidfile, "open(READY, 'w').write('1')\ntime.sleep(60)\n")
    proc, ready = _start_and_wait_ready(ptc, code)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=10)
    assert_all_gone(ptc, read_pids(pidfile), "daemon after ptc was SIGKILLed")


STAGING = """
import os, hermes_tools
print(os.path.dirname(os.path.abspath(hermes_tools.__file__)), os.environ['PTC_RPC_SOCKET'],
      flush=True)
"""


def test_staging_dir_and_socket_removed_after_timeout(ptc):
    r = ptc.run(STAGING + "import time\ntime.sleep(30)\n", "--timeout", "1")
    expect(r, 124, "timeout")
    staging, sock = r.output.split("\n")[0].split(" ")
    assert os.path.basename(staging).startswith("ptc-"), r
    assert not os.path.exists(staging), staging
    assert not os.path.exists(sock), sock


def test_staging_dir_removed_after_interrupt(ptc):
    proc, ready = _start_and_wait_ready(ptc, STAGING + """
import time
open(READY, 'w').write('1')
time.sleep(60)
""")
    proc.send_signal(signal.SIGINT)
    rc, d, err = _finish(proc)
    assert rc == 130, (rc, d, err)
    staging = d["output"].split(" ")[0]
    assert os.path.basename(staging).startswith("ptc-"), d
    assert not os.path.exists(staging), staging


def test_endless_output_until_deadline(ptc):
    r = ptc.run("""
        import sys
        line = 'flood ' * 100 + '\\n'
        while True:
            sys.stdout.write(line)
        """, "--timeout", "2", timeout=30)
    expect(r, 124, "timeout")
    d = r.data
    assert r.elapsed < 25, r  # hang guard
    assert d["stdout_truncated"] is True and d["stdout_bytes_total"] > 1_000_000, d.keys()
    assert d["output"].endswith("\n\n\u23f0 Script timed out after 2s and was killed."), \
        d["output"][-200:]
    assert "[OUTPUT TRUNCATED - " in d["output"]


def test_leftover_check_sees_a_running_script(ptc):
    """The control for every "nothing is left" check here: while a run is going, its
    script (and ptc) are found by the scratch-path marker, in both isolation levels."""
    proc, ready = _start_and_wait_ready(ptc, SLEEPER)
    try:
        found = wait_no_process_marked(str(ptc.tmp), 0)
        assert proc.pid in found, found
        # ptc, the script, and under auto the sandbox's init
        assert len(found) >= (2 if ptc.isolation == "none" else 3), found
    finally:
        proc.send_signal(signal.SIGINT)
        _finish(proc)
    assert_all_gone(ptc, [], "interrupted script")


KCMP_SCRIPT = """
import ctypes, os
KCMP_VM = 1
init = os.getppid()
with open(f"/proc/{init}/status") as f:
    ptc = int(next(l for l in f if l.startswith("PPid:")).split()[1])
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(312, init, ptc, KCMP_VM, 0, 0)  # kcmp(2), x86_64
print("kcmp", r, ctypes.get_errno())
"""


def test_init_shares_ptc_memory_without_namespaces(ptc):
    """Without the namespace layer the script's init is a clone in ptc's memory (no page
    tables copied: spawn.h, share_memory). kcmp(KCMP_VM) tells, where the kernel has it and
    we may ask (root: ptc is non-dumpable). Under auto as root the init is pid 1 of a
    namespace, a process of its own: its parent is not visible from in there."""
    if ptc.isolation != "none":
        pytest.skip("under auto the script's parent is the namespace's init (pid 1)")
    if os.uname().machine != "x86_64" or os.geteuid() != 0:
        pytest.skip("kcmp's syscall number here is x86_64's, and asking about ptc needs root")
    r = ptc.run(KCMP_SCRIPT)
    expect(r, 0, "success")
    _, res, err = r.output.split()
    if res == "-1" and err in ("38", "1"):
        pytest.skip(f"kcmp unavailable (errno {err})")
    assert res == "0", r.output


def test_concurrent_terminal_calls_each_run_under_their_own_init(ptc):
    """Many terminal calls at once, each started under an init of its own from a worker
    thread (the shared-memory init's starter thread is per start): every output is its
    own, and what each command left running in the background is gone with it."""
    r = ptc.run("""
        import sys
        from concurrent.futures import ThreadPoolExecutor
        from hermes_tools import terminal
        def one(i):
            # A child that outlives the shell, holding its stdout, with no '&' for the
            # foreground guard to refuse.
            res = terminal(f"{sys.executable} -c 'import os, time; os.fork() or "
                           f"time.sleep(30)'; echo out-{i}")
            return res["output"].strip() == f"out-{i}" and res["exit_code"] == 0
        with ThreadPoolExecutor(max_workers=8) as ex:
            ok = sum(ex.map(one, range(24)))
        print("ok", ok)
        """, "--max-tool-calls", "100", timeout=60)
    expect(r, 0, "success")
    assert r.output.strip() == "ok 24", r
    assert_all_gone(ptc, [], "background sleeps of terminal calls")


# --- ptc signals only what it started (issue 34, item 5) --------------------------------

def _bash_exec_ptc(ptc, prelude, code, extra=""):
    """`bash -c 'PRELUDE; exec ptc run -c CODE EXTRA'`: ptc inherits bash's children."""
    cmd = f'{prelude}\nexec "$PTC" run {extra} -c "$CODE"'
    return subprocess.run(["bash", "-c", cmd], capture_output=True, timeout=60,
                          cwd=str(ptc.workdir),
                          env=ptc.make_env({"PTC": str(ptc.bin), "CODE": textwrap.dedent(code)}))


def test_a_child_ptc_inherited_is_left_alone(ptc):
    """`bash -c "sleep & exec ptc run"`: the sleep is bash's background job, which ptc
    inherits as a child when bash execs it. It is not the run's: it lives on after the run."""
    pidfile = ptc.workdir / "bg.pid"
    r = _bash_exec_ptc(ptc, f"sleep 101 >/dev/null 2>&1 & echo $! > {pidfile}", "print(1)")
    assert r.returncode == 0, r
    pid = int(pidfile.read_text())
    try:
        assert not wait_gone(pid, 0.5), "ptc killed a process it did not start"
    finally:
        kill_pids([pid])


def test_an_inherited_childs_daemon_is_left_alone(ptc):
    """A background job ptc inherited double-forks a daemon while the run is on (its parent
    exits at once, so the daemon is an orphan). It is not the run's: ptc is no child
    subreaper that would collect and kill it."""
    pidfile = ptc.workdir / "d.pid"
    prelude = (f"( (setsid sleep 102 >/dev/null 2>&1 & echo $! > {pidfile}.tmp; "
               f"mv {pidfile}.tmp {pidfile}) & ) >/dev/null 2>&1 &")
    code = f"""
        import os, time
        end = time.monotonic() + 20
        while not os.path.exists({str(pidfile)!r}) and time.monotonic() < end:
            time.sleep(0.01)
        print(os.path.exists({str(pidfile)!r}))
    """
    r = _bash_exec_ptc(ptc, prelude, code)
    assert r.returncode == 0, r
    assert parse_stdout(r.stdout)["output"] == "True\n", r
    pid = int(pidfile.read_text())
    try:
        assert not wait_gone(pid, 0.5), "ptc killed a daemon it did not start"
    finally:
        kill_pids([pid])


def test_events_to_a_process_substitution_keep_the_end(ptc):
    """The documented recipe `--events 3 3> >(...)`: the process substitution's reader is a
    child of the shell that ptc inherits; it lives on and gets the `end` event."""
    out = ptc.workdir / "events.jsonl"
    r = _bash_exec_ptc(ptc, "true", "print('hi')", extra=f"--events 3 3> >(cat > {out} 2>/dev/null)")
    assert r.returncode == 0, r
    deadline = time.monotonic() + 20
    events = []
    while time.monotonic() < deadline:
        text = out.read_text() if out.exists() else ""
        events = [json.loads(l)["event"] for l in text.splitlines() if l.strip()]
        if "end" in events:
            break
        time.sleep(0.05)
    assert "start" in events and "end" in events, events
