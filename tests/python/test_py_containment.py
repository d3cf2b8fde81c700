# SPDX-License-Identifier: MIT
"""A library host runs executions at once on its own threads, and no flag makes it a
subreaper: every script's leftovers (a daemon that double-forked and called setsid(), a
background child holding the output pipe) must still die with that script, at every
isolation level, without touching another execution's processes."""

import os
import threading
import time

import pytest

from pyhost import HARD, make_engine, ptc, scratch, script  # noqa: F401

DAEMON = script("""
    import os, sys, time
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            {hold}
            open({pidfile!r}, "w").close()
            # A unique command line: the host finds it by that (a pid namespace renumbers).
            os.execv("/bin/sleep", ["sleep", {marker!r}])
        os._exit(0)
    os.waitpid(pid, 0)
    def running():
        for d in os.listdir("/proc"):
            try:
                with open("/proc/" + d + "/cmdline", "rb") as f:
                    if f.read().split(b"\\0")[1:2] == [{marker!r}.encode()]:
                        return True
            except (OSError, IndexError):
                pass
        return False
    while not running():
        time.sleep(0.01)
    print("started", flush=True)
    {tail}
""")

HOLD_STDIO = "pass"
CLOSE_STDIO = "os.close(0); os.close(1); os.close(2)"


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pid, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not alive(pid):
            return True
        time.sleep(0.02)
    return False


def new_marker():
    """A sleep duration no other process has: 300.<random digits>."""
    return "300.%d" % int.from_bytes(os.urandom(6), "big")


def find_pid(marker):
    """The host pid of the `sleep MARKER` process, or None."""
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                if f.read().split(b"\0")[1:2] == [marker.encode()]:
                    return int(d)
        except (OSError, IndexError):
            pass
    return None


@pytest.mark.parametrize("isolation", ["none", "auto"])
@pytest.mark.parametrize("hold", [HOLD_STDIO, CLOSE_STDIO], ids=["holding-stdout", "closed-stdio"])
def test_daemon_dies_with_its_script(make_engine, scratch, isolation, hold):
    pidfile = str(scratch / "daemon.pid")
    e = make_engine(tools="", isolation=isolation, timeout=60)
    t0 = time.monotonic()
    marker = new_marker()
    r = e.execute(DAEMON.format(pidfile=pidfile, marker=marker, hold=hold,
                                tail="print('done')"))
    took = time.monotonic() - t0
    assert r.status == "success", r
    assert r.output == "started\ndone\n", r
    # Not the whole drain period per leftover, and never the daemon's 300 s.
    assert took < 10, took  # hang guard
    pid = find_pid(marker)
    assert pid is None or wait_gone(pid), "the script's daemon outlived it"


@pytest.mark.parametrize("isolation", ["none", "auto"])
def test_timeout_kills_the_daemon_too(make_engine, scratch, isolation):
    pidfile = str(scratch / "daemon.pid")
    e = make_engine(tools="", isolation=isolation, timeout=2)
    marker = new_marker()
    r = e.execute(DAEMON.format(pidfile=pidfile, marker=marker, hold=HOLD_STDIO,
                                tail="time.sleep(60)"))
    assert r.status == "timeout", r
    assert r.output.startswith("started\n"), r
    pid = find_pid(marker)
    assert pid is None or wait_gone(pid), "a timed-out script's daemon outlived it"


def test_concurrent_executions_keep_their_own_processes(make_engine, scratch):
    """Four executions at once on four threads, each leaving a daemon: a script that ends
    early takes only its own daemon; the others' keep running until their scripts end."""
    e = make_engine(tools="", isolation="none", timeout=60)
    n = 4
    pidfiles = [str(scratch / f"d{i}.pid") for i in range(n)]
    go = [str(scratch / f"go{i}") for i in range(n)]
    markers = [new_marker() for _ in range(n)]
    results = [None] * n

    def run(i):
        tail = script(f"""
            while not os.path.exists({go[i]!r}):
                time.sleep(0.01)
            print('done')
        """)
        results[i] = e.execute(DAEMON.format(pidfile=pidfiles[i], marker=markers[i],
                                             hold=HOLD_STDIO,
                                             tail=tail))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    end = time.monotonic() + HARD
    while not all(os.path.exists(p) for p in pidfiles) and time.monotonic() < end:
        time.sleep(0.02)
    time.sleep(0.2)  # the exec of sleep
    pids = [find_pid(m) for m in markers]
    assert all(pids), (pids, results)
    # Let the first script end: its daemon goes, every other one stays.
    open(go[0], "w").close()
    threads[0].join(HARD)
    assert results[0] is not None and results[0].status == "success", results[0]
    assert wait_gone(pids[0])
    time.sleep(0.3)
    for pid in pids[1:]:
        assert alive(pid), "another execution's daemon was killed"
    for i in range(1, n):
        open(go[i], "w").close()
    for t in threads[1:]:
        t.join(HARD)
    for i in range(1, n):
        assert results[i] is not None and results[i].status == "success", results[i]
        assert wait_gone(pids[i])


@pytest.mark.parametrize("isolation", ["none", "auto"])
def test_terminal_command_daemon_dies_with_the_command(make_engine, scratch, isolation):
    """A terminal command that daemonizes (double fork + setsid, out of its process group):
    the daemon dies when the command ends, not with the process hosting ptc (here, never)."""
    e = make_engine(tools="terminal", isolation=isolation, timeout=60)
    marker = new_marker()
    (scratch / "daemonize.py").write_text(script(f"""
        import os, sys, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv("/bin/sleep", ["sleep", "{marker}"])
            os._exit(0)
        os.wait()
    """))
    r = e.execute(script(f"""
        from hermes_tools import terminal
        out = terminal("python3 daemonize.py; "
                       "for i in $(seq 300); do pgrep -f 'sleep {marker}' >/dev/null && break; "
                       "sleep 0.01; done; pgrep -f 'sleep {marker}' >/dev/null && echo seen")
        print(out["output"].strip(), out["exit_code"], out.get("error"))
    """))
    assert r.status == "success", r
    assert r.output == "seen 0 None\n", r
    pid = find_pid(marker)
    assert pid is None or wait_gone(pid), "a terminal command's daemon outlived it"
