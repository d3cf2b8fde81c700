# SPDX-License-Identifier: MIT
"""`ptc run --session`, `ptc serve`, `ptc session` (docs/sessions.md) through the real binary.

Each test has its own XDG_RUNTIME_DIR, so its server (started on demand by the first `ptc run
--session`) is its own; every process of a test carries the test's scratch path in its
environment, and whatever is left of them is killed when the test ends.
"""

import json
import re
import os
import signal
import socket
import stat
import subprocess
import threading
import time

import pytest

from conftest import expect, expect_usage_error, processes_marked, \
    script_marker, wait_no_process_marked


def servers(ptc):
    """Host pids of this test's `ptc serve` processes (not the session interpreters' inits: clones of
    the server, with its command line, whose parent is the server)."""
    cands = {}
    for pid in processes_marked(str(ptc.tmp)):
        try:
            argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            ppid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if argv[1:2] == [b"serve"]:
            cands[pid] = ppid
    return [pid for pid, ppid in cands.items() if ppid not in cands]


def session(ptc, code, *opts, **kw):
    return ptc.run(code, "--session", *opts, **kw)


def test_state_survives_between_runs_through_the_server(ptc, srv):
    r = session(ptc, "x = 41\nprint('set')", "a")
    expect(r, 0, "success")
    assert (r.data["session"], r.data["cell"]) == ("a", 1), r
    # The server started on demand, in a directory of ours alone.
    assert stat.S_IMODE(os.stat(srv).st_mode) == 0o700
    assert stat.S_ISSOCK(os.stat(srv / "serve.sock").st_mode)
    assert stat.S_IMODE(os.stat(srv / "serve.sock").st_mode) == 0o600
    assert len(servers(ptc)) == 1
    r = session(ptc, "x += 1\nfrom hermes_tools import terminal\n"
                     "print(x, terminal('pwd')['output'].strip())", "a", "--log")
    expect(r, 0, "success")
    assert r.data["output"] == f"42 {ptc.workdir}\n" and r.data["cell"] == 2, r
    assert r.data["tool_calls_made"] == 1 and len(r.data["tool_calls"]) == 1, r
    r = ptc.run_ptc(["session", "list"])
    assert r.rc == 0, r
    (s,) = json.loads(r.stdout)
    assert (s["session"], s["cells"], s["busy"]) == ("a", 2, False), s
    # reset: afresh, no note; close: the next cell is told.
    r = session(ptc, "print('x' in globals())", "a", "--reset")
    assert (r.data["output"], r.data["cell"]) == ("False\n", 1), r
    assert ptc.run_ptc(["session", "kill", "a"]).rc == 0
    r = session(ptc, "print(1)", "a")
    assert r.data["session_note"] == "session 'a' was killed; this cell started a new one", r
    assert ptc.run_ptc(["session", "reset", "a"]).rc == 0
    r = session(ptc, "print(2)", "a")
    assert "session_note" not in r.data and r.data["cell"] == 1, r
    r = ptc.run_ptc(["session", "kill", "nope"])
    assert r.rc == 1 and "no live session 'nope'" in r.stderr, r


def test_timeout_and_interrupt_of_a_cell_keep_the_session(ptc, srv):
    session(ptc, "kept = 'yes'", "t")
    r = session(ptc, "import time\ntime.sleep(30)", "t", "--timeout", "1")
    expect(r, 124, "timeout")
    assert r.data["error"].endswith("was interrupted; the session keeps its state."), r
    p = ptc.spawn(["run", "--session", "t", "-c",
                   "import time\nprint('started', flush=True)\ntime.sleep(30)"])
    time.sleep(1.0)
    os.kill(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 130, (out, err)
    res = json.loads(out)
    assert res["status"] == "interrupted" and res["error"] == "Execution interrupted (SIGINT)"
    assert res["output"].startswith("started\n"), res
    r = session(ptc, "print(kept)", "t")
    assert r.data["output"] == "yes\n" and r.data["cell"] == 4, r


def test_a_client_that_goes_away_interrupts_its_cell(ptc, srv):
    session(ptc, "import time", "g")
    p = ptc.spawn(["run", "--session", "g", "-c", "time.sleep(30)\nprint('never')"])
    time.sleep(1.0)
    os.kill(p.pid, signal.SIGKILL)
    p.wait(10)
    t = time.monotonic()
    # The session is free again once the server has interrupted the cell.
    while True:
        r = session(ptc, "print('free')", "g")
        if r.data["status"] == "success" or time.monotonic() - t > 20:
            break
        time.sleep(0.2)
    assert r.data["output"] == "free\n", r


def test_options_of_the_engine_are_refused_with_a_session(ptc, srv):
    for opt in (["--config", "x.yaml"], ["--isolation", "none"], ["--mode", "strict"],
                ["--backend", "exec:sh"], ["--progress-fd", "3"]):
        expect_usage_error(session(ptc, "print(1)", "a", *opt), opt[0], "not with --session",
                           "ptc serve")
    expect_usage_error(ptc.run("print(1)", "--reset"), "--reset: only with --session")
    expect_usage_error(session(ptc, "print(1)", "a b"), "session: invalid id 'a b'")
    assert servers(ptc) == [] or True  # a bad id reaches the server: it answers usage


def test_two_first_clients_share_one_server(ptc, srv):
    ps = [ptc.spawn(["run", "--session", f"c{i}", "-c", "print('hi')"]) for i in range(3)]
    for p in ps:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, (out, err)
        assert json.loads(out)["output"] == "hi\n"
    assert len(servers(ptc)) == 1, servers(ptc)


def test_no_interpreter_outlives_a_killed_server(ptc, srv):
    session(ptc, "x = 1", "k")
    (pid,) = servers(ptc)
    assert len(processes_marked(script_marker(ptc))) >= 1
    os.kill(pid, signal.SIGKILL)
    assert wait_no_process_marked(script_marker(ptc), 10) == []
    # The next client starts a new server over the stale socket.
    r = session(ptc, "print('x' in globals())", "k")
    expect(r, 0, "success")
    assert r.data["output"] == "False\n", r


def test_an_idle_server_exits_and_cleans_up(ptc, srv):
    p = ptc.spawn(["serve", "--idle", "1"])
    assert p.wait(15) == 0, p.communicate()
    assert not (srv / "serve.sock").exists()
    r = ptc.run_ptc(["session", "list"])
    assert r.rc == 0 and json.loads(r.stdout) == [], r


def test_another_user_is_refused(ptc, srv):
    if os.geteuid() != 0:
        pytest.skip("needs root to act as another user")
    session(ptc, "x = 1", "mine")
    # Open the way for the test only: the server still checks the peer's uid.
    os.chmod(ptc.tmp, 0o755)
    os.chmod(srv.parent, 0o755)
    os.chmod(srv, 0o755)
    os.chmod(srv / "serve.sock", 0o666)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.setgid(65534)
            os.setuid(65534)
            s = socket.socket(socket.AF_UNIX)
            s.connect(str(srv / "serve.sock"))
            s.sendall(b'{"op": "list"}\n')
            os.write(w, s.recv(4096))
        finally:
            os._exit(0)
    os.close(w)
    got = b""
    while True:
        b = os.read(r, 4096)
        if not b:
            break
        got += b
    os.waitpid(pid, 0)
    assert json.loads(got)["error"] == "refused: another user", got


def test_the_server_directory_must_be_ours(ptc, srv):
    srv.mkdir(mode=0o777)
    os.chmod(srv, 0o777)
    r = session(ptc, "print(1)", "a")
    assert r.rc == 3, r
    assert "cannot be used" in r.stderr and "mode 0700" in r.stderr, r


def test_a_script_cannot_reach_the_server(ptc, srv):
    """A script, and a terminal command of one, cannot read the server's key: neither is
    served, whatever its ancestry (tests/integration/test_serve_auth.py drives the rest)."""
    if os.geteuid() != 0:
        pytest.skip("a terminal command runs as the user, unconfined, unless ptc runs as root "
                    "(docs/sessions.md)")
    session(ptc, "x = 1", "mine")
    r = ptc.run(f"""
        from hermes_tools import terminal
        print(terminal("{ptc.bin} session list; {ptc.bin} run --session mine -c 'print(x)'")
              ["output"])
        """, env={"XDG_RUNTIME_DIR": str(srv.parent)})
    expect(r, 0, "success")
    assert '"session":"mine"' not in r.data["output"], r
    assert '"output":"1' not in r.data["output"], r
    r = session(ptc, "print(x)", "mine")
    assert r.data["output"] == "1\n", r


def test_under_isolation_none_a_script_reaches_the_server(ptc, srv):
    """Nothing is confined under --isolation none: a script reads the key as any program of
    the user does, and is served (docs/sessions.md says so)."""
    session(ptc, "x = 1", "mine")
    r = ptc.run(f"""
        from hermes_tools import terminal
        print(terminal("{ptc.bin} session list")["output"])
        """, "--isolation", "none", env={"XDG_RUNTIME_DIR": str(srv.parent)})
    expect(r, 0, "success")
    assert '"session":"mine"' in r.data["output"], r


def test_a_client_that_sends_nothing_is_let_go(ptc, srv):
    session(ptc, "x = 1", "idle-client")
    s = socket.socket(socket.AF_UNIX)
    s.connect(str(srv / "serve.sock"))
    t = time.monotonic()
    s.settimeout(100)  # hang guard, 10x the server's 10 s
    assert s.recv(4096) == b""  # closed after the server's 10 s, no reply to nothing
    assert time.monotonic() - t > 8  # not early


def test_a_session_is_forked_from_the_command_line(ptc, srv):
    r = ptc.run_ptc(["session", "fork", "a", "b"])
    assert r.rc == 1 and "no live session 'a': ptc serve is not running" in r.stderr, r
    session(ptc, "x = 41", "a")
    r = ptc.run_ptc(["session", "fork", "a", "b"])
    assert (r.rc, r.stdout, r.stderr) == (0, b"", ""), r
    r = session(ptc, "x += 1\nprint(x)", "b")
    assert (r.data["output"], r.data["cell"]) == ("42\n", 2), r
    r = session(ptc, "print(x)", "a")
    assert r.data["output"] == "41\n", r
    listed = json.loads(ptc.run_ptc(["session", "list"]).stdout)
    assert sorted(s["session"] for s in listed) == ["a", "b"], listed
    assert len({s["pid"] for s in listed}) == 2, listed
    for args, words in [(["a", "b"], "session 'b' exists (kill it first, or fork to another id)"),
                        (["nope", "c"], "no live session 'nope'"),
                        (["a", "bad id"], "invalid session id 'bad id'")]:
        r = ptc.run_ptc(["session", "fork"] + args)
        assert r.rc == 1 and words in r.stderr, (args, r)
    expect_usage_error(ptc.run_ptc(["session", "fork", "a"]), "fork takes two session ids")


PARENT = """import os, sys
ppid = os.getppid()
status = open(f"/proc/{ppid}/status").read()
print(next(l.split()[1] for l in status.splitlines() if l.startswith("PPid:")))
"""


def ran_by(r):
    """The pid of the process that started the script's init (isolation none: host pids)."""
    return int(r.data["output"].split()[0])


@pytest.fixture
def pool_srv(ptc, srv):
    """A running server whose configuration (the default config file: isolation none, so
    that a script sees host pids) is the tests' `ptc run`'s."""
    cfg = ptc.xdg_config / "ptc" / "config.yaml"
    cfg.parent.mkdir()
    cfg.write_text("sandbox:\n  isolation: none\nsessions:\n  warm: 1\n")
    expect(session(ptc, "pass", "boot"), 0, "success")
    (pid,) = servers(ptc)
    yield pid


def test_ptc_run_takes_a_running_servers_pool(ptc, pool_srv):
    r = ptc.run(PARENT)
    expect(r, 0, "success")
    assert ran_by(r) == pool_srv, r
    r = ptc.run(PARENT, "--no-server")
    expect(r, 0, "success")
    assert ran_by(r) != pool_srv, r
    # An option of the engine's that is what the server has in effect changes nothing.
    r = ptc.run(PARENT, "--isolation", "none", "--mode", "project")
    assert ran_by(r) == pool_srv, r
    # Another configuration (an option of the engine's, another environment, another
    # directory) runs here, as does a run with no server.
    for opts, env, cwd in [(["--isolation", "auto"], None, None),
                           ([], {"SOMETHING_ELSE": "1"}, None),
                           ([], None, ptc.tmpdir)]:
        r = ptc.run(PARENT, *opts, env=env, cwd=cwd)
        expect(r, 0, "success")
        assert ran_by(r) != pool_srv, (opts, env, cwd, r)
    # The config file is part of the configuration.
    cfg = ptc.xdg_config / "ptc" / "config.yaml"
    cfg.write_text(cfg.read_text() + "code_execution:\n  timeout: 77\n")
    r = ptc.run(PARENT)
    assert ran_by(r) != pool_srv, r
    for opts, words in [(["--server", "--no-server"], "either --server or --no-server"),
                        (["--server", "--session", "a"], "--server: not with --session"),
                        (["--server", "--progress-fd", "1"], "--server: not with --progress-fd")]:
        expect_usage_error(ptc.run("pass", *opts), *words.split(" "))


def test_ptc_run_server_starts_a_server_with_its_config(ptc, srv):
    cfg = ptc.write_config("sandbox:\n  isolation: none\nsessions:\n  warm: 1\n")
    r = ptc.run(PARENT, "--config", cfg, "--server")
    expect(r, 0, "success")
    (pid,) = servers(ptc)
    assert ran_by(r) == pid, r
    time.sleep(0.3)
    r = ptc.run(PARENT, "--config", cfg)
    assert ran_by(r) == pid, r
    # Without that config file, the server's configuration is not this run's.
    r = ptc.run(PARENT, "--isolation", "none")
    assert ran_by(r) != pid and r.stderr == "", r
    r = ptc.run(PARENT, "--isolation", "none", "--server")
    assert ran_by(r) != pid, r
    assert "the running ptc serve has another configuration" in r.stderr, r
    assert len(servers(ptc)) == 1


@pytest.mark.parametrize("code,opts", [
    ("import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)", []),
    ("from hermes_tools import terminal\nprint(terminal('echo hi')['output'])", ["--log"]),
    ("import time\nprint('x', flush=True)\ntime.sleep(30)", ["--timeout", "1"]),
    ("print(open('in.txt').read())", ["--tools", "read_file"]),
    ("raise ValueError('boom')", ["--max-tool-calls", "3"]),
])
def test_a_run_through_the_pool_gives_what_a_run_here_gives(ptc, pool_srv, code, opts):
    (ptc.workdir / "in.txt").write_text("data")
    here = ptc.run(code, "--no-server", *opts)
    time.sleep(0.3)  # the pool refills
    pooled = ptc.run(code, *opts)
    assert pooled.rc == here.rc, (here, pooled)
    assert pooled.stderr == here.stderr, (here, pooled)
    a, b = here.data, pooled.data
    for d in (a, b):
        d.pop("duration_seconds")
        for c in d.get("tool_calls", []):
            c.pop("duration_ms", None)
            c.pop("duration_seconds", None)
    assert re.sub(r"ptc-\w{6}", "ptc-X", json.dumps(a)) == \
        re.sub(r"ptc-\w{6}", "ptc-X", json.dumps(b)), (a, b)


def test_a_pooled_run_is_interrupted_by_its_client_and_lost_with_its_server(ptc, pool_srv):
    p = ptc.spawn(["run", "-c", "import time\nprint('started', flush=True)\ntime.sleep(30)"])
    time.sleep(1.0)
    os.kill(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 130, (out, err)
    res = json.loads(out)
    assert res["status"] == "interrupted" and res["output"].startswith("started\n"), res
    marker = script_marker(ptc)
    p = ptc.spawn(["run", "-c", "import time\ntime.sleep(30)"])
    time.sleep(1.0)
    os.kill(pool_srv, signal.SIGKILL)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 3 and "ptc serve did not answer" in err.decode(), (out, err)
    assert json.loads(out)["status"] == "error", out
    assert wait_no_process_marked(marker, 10) == []


def test_a_nested_ptc_run_is_turned_away_and_runs_itself(ptc, pool_srv):
    r = ptc.run(f"""import subprocess
p = subprocess.run([{str(ptc.bin)!r}, "run", "-c", "print(6 * 7)"], capture_output=True,
                   text=True)
print(p.returncode, p.stdout.count('"output":"42\\\\n"'), repr(p.stderr))""")
    expect(r, 0, "success")
    assert r.data["output"] == "0 1 ''\n", r


def test_a_process_in_the_servers_place_gets_nothing(ptc, srv):
    """A socket where the server's should be, bound by something that is not this user's
    ptc serve (a script confined by Landlock alone could): no run sends it anything. The key
    beside it is a server's that is gone, which the listener does not know."""
    srv.mkdir(mode=0o700)
    fd = os.open(srv / "serve.key", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, os.urandom(32))
    os.close(fd)
    got = []
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(srv / "serve.sock"))
    s.listen(8)

    def serve():
        while True:
            try:
                c, _ = s.accept()
            except OSError:
                return
            c.settimeout(2)
            try:
                got.append(c.recv(65536))
            except OSError:
                got.append(b"")
            c.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        r = ptc.run("print('ran here')", env={"SECRET_TOKEN": "s3cr3t-value"})
        expect(r, 0, "success")
        assert r.data["output"] == "ran here\n", r
        r = ptc.run("print(1)", "--session", "x")
        assert r.rc == 3 and "does not speak this ptc's protocol" in r.stderr, r
        assert "nothing was sent to it" in r.stderr, r
    finally:
        s.close()
    assert all(b"s3cr3t" not in g and b"print" not in g for g in got), got


def test_a_remote_session_through_the_server_has_each_cells_tools(ptc, srv):
    cfg = ptc.xdg_config / "ptc" / "config.yaml"
    cfg.parent.mkdir()
    cfg.write_text("code_execution:\n  backend: exec:sh\nsessions:\n  warm: 0\n")
    # Without a static agent to ship (a sanitizer build), the target runs `ptc agent`.
    env = {"PATH": f"{ptc.bin.parent}:{ptc.env['PATH']}"}
    code = "from hermes_tools import terminal\nprint(terminal('echo hi')['output'])"
    r = session(ptc, "import os\nfirst = os.getpid()\n" + code, "rs", env=env)
    expect(r, 0, "success")
    assert r.data["output"] == "hi\n", r
    r = session(ptc, code, "rs", "--tools", "read_file", env=env)
    assert r.data["status"] == "error" and "terminal" in r.data["output"], r
    assert r.data["tool_calls_made"] == 0, r
    # The interpreter on the target dies between cells: the next cell says so.
    r = session(ptc, "import threading\nthreading.Timer(0.3, os._exit, (3,)).start()", "rs",
                env=env)
    expect(r, 0, "success")
    time.sleep(1.0)
    r = session(ptc, "print('first' in globals())", "rs", env=env)
    assert r.data["output"] == "False\n", r
    assert r.data["session_note"] == "the session's interpreter on the target died between " \
        "cells; this cell started a new one", r
