# SPDX-License-Identifier: MIT
"""No writable `/` (docs/isolation.md, "Working directories that are refused"), and every
layer a run goes without named in the result's `warnings` (docs/contracts.md 4).

* `ptc run` refuses `/`, `/var` and the system trees as working directory under `auto` and
  `strict`, however the directory is spelled (exit 2, one line naming it and `--cwd DIR`);
  `/var/tmp/x` is fine; `--isolation none` runs with a warning in the result.
* `ptc mcp` started in `/` without `--cwd` works in a private directory, named in the
  `initialize` instructions, on stderr and in the first `execute_code` answer's `warnings`;
  the script's files land there, not in `/`. `ptc doctor` in `/` names where.
* A layer left out (user namespaces refused: a limit of 0 set inside a user namespace of
  the test's own, `unshare -Ur`) is in the result's `warnings` and in the MCP answer, not
  only on stderr.
"""

import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from conftest import expect, expect_usage_error, kill_group, kill_pids, processes_marked, \
    run_ptc

UNSHARE = shutil.which("unshare")
# In a user namespace of its own the test may lower its user-namespace limit: every later
# clone(CLONE_NEWUSER) of ptc fails with ENOSPC, as on a host with a limit of 0.
NO_USERNS = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" "$@"'


def refused(r, where):
    expect_usage_error(r, "cwd:", "refused", "--cwd DIR", where)


@pytest.mark.parametrize("level", ["auto", "strict"])
def test_run_from_root_is_refused(ptc, level):
    name = f"ptc-wd-test-{os.getpid()}-{level}"
    try:
        r = ptc.run_ptc(["run", "--isolation", level, "-c", f"open({name!r}, 'w'); print(1)"],
                        cwd="/")
        refused(r, "'/' is the root directory")
        assert not os.path.exists("/" + name)
    finally:
        # A ptc that ran it (an old one) wrote there: not left behind.
        if os.path.exists("/" + name):
            os.unlink("/" + name)


@pytest.mark.parametrize("level", ["auto", "strict"])
@pytest.mark.parametrize("spelling,why", [
    ("/", "the root directory"),
    ("//", "the root directory"),
    ("/usr/..", "the root directory"),
    ("/var", "/var itself"),
    ("/etc", "the system tree /etc"),
    ("/usr/share", "inside the system tree /usr"),
    ("/proc/self", "inside the system tree /proc"),
    ("/dev/shm", "inside the system tree /dev"),
    ("/var/run", "the system tree /run"),
    ("LINK", "the system tree /etc"),
])
def test_cwd_root_and_system_trees_are_refused(ptc, level, spelling, why):
    if spelling == "LINK":
        spelling = ptc.path("etc-link")
        os.symlink("/etc", spelling)
    elif not os.path.isdir(spelling):
        pytest.skip(f"no {spelling} here")
    r = ptc.run_ptc(["run", "--isolation", level, "--cwd", spelling, "-c", "print(1)"])
    refused(r, why)


def test_a_lib_tree_is_refused(ptc):
    libs = [e for e in os.listdir("/") if e.startswith("lib") and os.path.isdir("/" + e)]
    if not libs:
        pytest.skip("no /lib* directory here")
    # Named as it resolves (merged /usr: /lib is /usr/lib).
    refused(ptc.run_ptc(["run", "--cwd", "/" + libs[0], "-c", "print(1)"]),
            "the system tree " + os.path.realpath("/" + libs[0]))


def test_below_var_is_fine(ptc):
    d = Path(tempfile.mkdtemp(prefix="ptc-wd-", dir="/var/tmp"))
    try:
        r = ptc.run("open('made-here', 'w').write('x'); print('ok')", "--cwd", d)
        expect(r, 0, "success")
        assert (d / "made-here").read_text() == "x", r
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_strict_mode_from_root_runs_in_its_staging_dir(ptc):
    r = ptc.run_ptc(["run", "--mode", "strict", "-c", "import os; print(os.getcwd())"],
                    cwd="/")
    expect(r, 0, "success")
    assert r.output.strip() != "/", r


def test_isolation_none_runs_with_a_warning_in_the_result(ptc):
    r = ptc.run("import os; print(os.getcwd())", "--isolation", "none", "--cwd", "/")
    expect(r, 0, "success")
    assert r.output == "/\n", r
    w = "isolation none: the working directory '/' is the root directory"
    assert any(x.startswith(w) for x in r.data["warnings"]), r
    assert w in r.stderr, r


def test_no_warnings_no_list(ptc):
    r = ptc.run("print(1)", "--isolation", "none")
    expect(r, 0, "success")
    assert "warnings" not in r.data, r


def test_session_from_root_is_refused(ptc):
    run = ptc.tmp / "run"
    run.mkdir(mode=0o700)
    try:
        r = ptc.run_ptc(["run", "--session", "s1", "-c", "print(1)"], cwd="/",
                        env={"XDG_RUNTIME_DIR": str(run)})
        refused(r, "'/' is the root directory")
        # The server, started in / by that client, works in a private directory of its own,
        # named in its log, and serves the others.
        log = (run / "ptc" / "serve.log").read_text()
        assert "cwd: ptc was started in '/' (the root directory)" in log, log
        assert f"private directory {ptc.xdg_cache}/ptc/workdirs/ptc-work-" in log, log
        r = ptc.run_ptc(["run", "--session", "s1", "-c", "import os; print(os.getcwd())"],
                        env={"XDG_RUNTIME_DIR": str(run)})
        expect(r, 0, "success")
        assert r.output == f"{ptc.workdir}\n", r
    finally:
        kill_pids(processes_marked(str(ptc.tmp)))


def test_doctor_in_root_names_the_private_dir(ptc):
    r = ptc.run_ptc(["doctor"], cwd="/")
    assert r.rc == 0, r
    line = [x for x in r.stdout.decode().splitlines() if x.startswith("working directory:")]
    assert len(line) == 1, r
    assert "/ is the root directory: refused" in line[0], r
    assert f"private directory {ptc.xdg_cache}/ptc/workdirs/ptc-work-PID-" in line[0], r
    r = ptc.run_ptc(["doctor"])
    assert f"working directory: {ptc.workdir} (read-write" in r.stdout.decode(), r


# --------------------------------------------------------------------------------------------
# ptc mcp started in /


class Mcp:
    """A raw MCP client on `ARGV` started in @cwd."""

    def __init__(self, argv, env, cwd):
        self.proc = subprocess.Popen([str(a) for a in argv], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                     cwd=cwd, start_new_session=True)
        self.q = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.n = 0

    def _read(self):
        for raw in iter(self.proc.stdout.readline, b""):
            self.q.put(json.loads(raw))
        self.q.put(None)

    def request(self, method, params, timeout=60):
        self.n += 1
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method,
                                           "params": params}) + "\n").encode())
        self.proc.stdin.flush()
        while True:
            m = self.q.get(timeout=timeout)
            assert m is not None, self.stderr()
            if m.get("id") == self.n:
                assert "result" in m, m
                return m["result"]

    def initialize(self):
        res = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                          "clientInfo": {"name": "pytest", "version": "0"}})
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.proc.stdin.flush()
        return res

    def execute(self, code, **extra):
        res = self.request("tools/call", {"name": "execute_code",
                                          "arguments": dict(code=code, **extra)})
        d = res["structuredContent"]
        assert json.loads(res["content"][0]["text"]) == d, res
        return d

    def close(self):
        self.proc.stdin.close()
        rc = self.proc.wait(60)
        return rc, self.stderr()

    def stderr(self):
        return self.proc.stderr.read().decode() if self.proc.poll() is not None else ""

    def kill(self):
        kill_group(self.proc.pid)
        self.proc.wait(10)


def test_mcp_started_in_root_works_in_a_private_dir(ptc):
    c = Mcp([ptc.bin, "mcp"], ptc.make_env(), "/")
    marker = f"ptc-wd-marker-{os.getpid()}"
    try:
        init = c.initialize()
        d = c.execute(f"import os; open({marker!r}, 'w').write('m'); print(os.getcwd())")
        assert d["status"] == "success", d
        cwd = Path(d["output"].strip())
        assert cwd.parent == ptc.xdg_cache / "ptc" / "workdirs", d
        assert cwd.name.startswith(f"ptc-work-{c.proc.pid}-"), d
        assert (cwd / marker).read_text() == "m"
        assert not os.path.exists("/" + marker)
        assert oct(os.stat(cwd).st_mode & 0o777) == "0o700"
        note = [w for w in d["warnings"] if w.startswith("cwd: ptc was started in '/'")]
        assert len(note) == 1 and f"private directory {cwd} " in note[0], d
        assert f"private directory {cwd} " in init["instructions"], init
        # Named once: the second answer has nothing to add.
        d = c.execute("print(2)")
        assert d["status"] == "success" and "warnings" not in d, d
        rc, err = c.close()
        assert rc == 0, err
        assert f"private directory {cwd} " in err, err
        # Kept: it holds the script's file.
        assert (cwd / marker).exists()
    finally:
        c.kill() if c.proc.poll() is None else None
        if os.path.exists("/" + marker):
            os.unlink("/" + marker)


def test_mcp_with_cwd_root_is_refused(ptc):
    r = ptc.run_ptc(["mcp", "--cwd", "/"], input="")
    refused(r, "'/' is the root directory")


# --------------------------------------------------------------------------------------------
# A layer left out is in the result, not only on stderr


@pytest.fixture
def no_userns(ptc):
    """argv prefix: run the rest where user namespaces are refused (ENOSPC)."""
    if not UNSHARE:
        pytest.skip("no unshare(1)")
    p = subprocess.run([UNSHARE, "-Ur", "sh", "-c", NO_USERNS, "sh", "-c", "exit 0"],
                       capture_output=True, timeout=30)
    if p.returncode != 0:
        pytest.skip(f"cannot limit user namespaces in a user namespace: {p.stderr!r}")
    return [UNSHARE, "-Ur", "sh", "-c", NO_USERNS]


def test_a_dropped_layer_is_in_the_result(ptc, no_userns):
    r = run_ptc([*no_userns[1:], ptc.bin, "run", "--no-server", "-c", "print(1)"],
                env=ptc.make_env(), cwd=str(ptc.workdir), binary=no_userns[0])
    expect(r, 0, "success")
    w = [x for x in r.data.get("warnings", []) if x.startswith("isolation auto: namespaces: ")]
    assert len(w) == 1 and w[0].endswith("running without the namespaces layer (see ptc "
                                         "doctor)"), r
    assert w[0] in r.stderr, r


def test_a_dropped_layer_is_in_every_mcp_answer(ptc, no_userns):
    c = Mcp([*no_userns, ptc.bin, "mcp", "--cwd", ptc.workdir], ptc.make_env(), str(ptc.tmp))
    try:
        c.initialize()
        # One-shot runs (the warm pool's interpreters, or cold), then a session's cells: the
        # second cell's interpreter started with the first, and its answer says so all the same.
        for extra in ({}, {}, {"session": "s"}, {"session": "s"}):
            d = c.execute("print(1)", **extra)
            assert d["status"] == "success", d
            assert any(x.startswith("isolation auto: namespaces: ") and
                       x.endswith("running without the namespaces layer (see ptc doctor)")
                       for x in d.get("warnings", [])), (extra, d)
    finally:
        c.kill()


# --------------------------------------------------------------------------------------------
# Remote backends: the target judges its own directory


def test_a_remote_target_refuses_root_as_its_directory(ptc):
    env = {"PATH": f"{ptc.bin.parent}:{ptc.env['PATH']}"}
    # The host's own directory is no run's: / is fine here with a remote backend.
    there = ptc.path("on-target")
    there.mkdir()
    r = ptc.run_ptc(["run", "--backend", "exec:sh", "--remote-cwd", there, "-c",
                     "import os; print(os.getcwd())"], cwd="/", env=env)
    expect(r, 0, "success")
    assert r.output == f"{there}\n", r
    # The target's: refused by its agent, as a local run is.
    r = ptc.run_ptc(["run", "--backend", "exec:sh", "--remote-cwd", "/", "-c", "print(1)"],
                    env=env)
    expect(r, 1, "error")
    assert "the agent on the target failed: code_execution.remote_cwd: the working directory " \
           "'/' is the root directory" in r.data["error"], r
    assert "--remote-cwd DIR" in r.data["error"], r
    # Not named, the target's own directory (where exec:sh starts: the host's /) is replaced
    # by a private one of the target's, named in the warnings.
    r = ptc.run_ptc(["run", "--backend", "exec:sh", "-c", "import os; print(os.getcwd())"],
                    cwd="/", env=env)
    expect(r, 0, "success")
    assert "/ptc/workdirs/ptc-work-" in r.output, r
    assert any("private directory" in w for w in r.data.get("warnings", [])), r


def test_commands_that_run_no_script_work_in_root(ptc):
    """The rule binds scripts' runs: the schema and a direct tool call need no directory."""
    r = ptc.run_ptc(["schema"], cwd="/")
    assert r.rc == 0 and r.data is not None, r
    r = ptc.run_ptc(["tool", "read_file", '{"path": "/etc/hostname"}'], cwd="/")
    assert r.rc == 0, r


def test_a_cgroup_that_cannot_be_made_is_in_the_result(ptc):
    """A weakened limit is named too: ptc in a cgroup delegated to it (root: the
    trusted.delegate xattr) that allows no new cgroup (cgroup.max.descendants 0) runs
    without its leaf, and the result says so."""
    from isolation_util import token
    from test_isolation import writable_cgroup_base
    if os.geteuid() != 0:
        pytest.skip("making a delegated cgroup needs root")
    delegated = writable_cgroup_base() / token("ptc-wd-")
    delegated.mkdir()
    try:
        try:
            os.setxattr(delegated, "trusted.delegate", b"1")
        except OSError as e:
            pytest.skip(f"cannot mark a cgroup delegated: {e}")
        (delegated / "cgroup.max.descendants").write_text("0")
        argv = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(delegated / "cgroup.procs"),
                str(ptc.bin), "run", "--no-server", "-c", "print(1)"]
        p = subprocess.run(argv, env=ptc.make_env(), cwd=str(ptc.workdir), capture_output=True,
                           timeout=120)
        d = json.loads(p.stdout)
        assert d["status"] == "success", (d, p.stderr)
        w = [x for x in d.get("warnings", []) if x.startswith(
            f"isolation: running without a cgroup: cannot create the cgroup {delegated}/")]
        assert len(w) == 1, (d, p.stderr)
        assert w[0] in p.stderr.decode(), (d, p.stderr)
    finally:
        for _ in range(50):
            try:
                delegated.rmdir()
                break
            except OSError:
                time.sleep(0.1)
