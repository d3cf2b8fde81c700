# SPDX-License-Identifier: MIT
"""Shared fixtures for the ptc integration tests.

The tests drive the real ptc binary with real Python scripts. The binary is
$PTC_BIN, else <repo>/build/ptc. Every test gets a private scratch directory
(short, under /tmp, so AF_UNIX socket paths below it stay far from the 108-byte
limit) with its own HOME, XDG dirs and TMPDIR, and a minimal environment.
Every subprocess has a hard timeout: a hanging ptc fails the test, it never
hangs the suite.
"""

import json
import os
import shutil
import select
import signal
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BIN = REPO_ROOT / "build" / "ptc"

# Hard limit for one ptc invocation unless a test asks for another.
DEFAULT_TIMEOUT = 30.0


def ptc_binary():
    p = os.environ.get("PTC_BIN")
    return Path(p).resolve() if p else DEFAULT_BIN


class Result(tuple):
    """(exit code, parsed JSON or None, stderr text); also .stdout (bytes),
    .elapsed (seconds) and .args, so a failing assertion can show all."""

    def __new__(cls, rc, data, stderr, stdout, elapsed, args):
        self = super().__new__(cls, (rc, data, stderr))
        self.rc, self.data, self.stderr = rc, data, stderr
        self.stdout, self.elapsed, self.args = stdout, elapsed, args
        return self

    def __repr__(self):
        out = self.stdout[:3000].decode("utf-8", "replace")
        return (f"<ptc {self.args!r}: rc={self.rc} elapsed={self.elapsed:.2f}s\n"
                f"stdout={out!r}\nstderr={self.stderr[:3000]!r}>")

    @property
    def output(self):
        return self.data["output"]

    def output_json(self):
        """The script printed one JSON document: decode it."""
        try:
            return json.loads(self.data["output"])
        except (TypeError, KeyError, ValueError) as e:
            raise AssertionError(f"script output is not JSON ({e}): {self!r}")


def parse_stdout(stdout):
    try:
        v = json.loads(stdout.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return v if isinstance(v, dict) else None


def run_ptc(args, input=None, env=None, timeout=DEFAULT_TIMEOUT, cwd=None, binary=None):
    """Run ptc with @args. @env is the complete environment (default: ours
    without PTC_CONFIG). Returns a Result. A ptc that outlives @timeout is
    killed and the test fails."""
    binary = str(binary or ptc_binary())
    if env is None:
        env = {k: v for k, v in os.environ.items() if k != "PTC_CONFIG"}
    if isinstance(input, str):
        input = input.encode("utf-8")
    argv = [binary] + [str(a) for a in args]
    t0 = time.monotonic()
    stdin = subprocess.PIPE if input is not None else subprocess.DEVNULL
    proc = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=cwd,
                            start_new_session=True)
    try:
        out, err = proc.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        out, err = proc.communicate()
        raise AssertionError(f"ptc did not return within {timeout}s: {argv!r}\n"
                             f"stdout={out[:2000]!r}\nstderr={err[:2000]!r}")
    elapsed = time.monotonic() - t0
    return Result(proc.returncode, parse_stdout(out), err.decode("utf-8", "replace"), out,
                  elapsed, args)


def kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def pid_alive(pid):
    """True when @pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


def wait_gone(pid, seconds=10.0):
    """Wait up to @seconds for @pid to disappear (a killed process can take a
    moment to be reaped). Returns True when it is gone."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not pid_alive(pid):
            return True
        time.sleep(0.02)
    return not pid_alive(pid)


def wait_for_file(path, seconds=10.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            if os.path.getsize(path) > 0:
                return True
        except OSError:
            pass
        time.sleep(0.01)
    return False


def idle_warm_interpreters():
    """Host pids of the warm pool's interpreters no run has taken (docs/sessions.md), and
    of their inits: a server keeps them ready, so they are no run's leftovers. One is
    a python running STAGING/.kernel.py whose STAGING holds no script or cell yet."""
    out = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{name}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        interp = next((a for a in argv[1:3] if a.endswith(b"/.kernel.py")), None)
        if not interp:
            continue
        d = Path(os.fsdecode(interp)).parent
        try:
            taken = any(n == "script.py" or n.startswith("cell-") for n in os.listdir(d))
        except OSError:
            continue
        if not taken:
            out |= {int(name), ppid}
    return out


def processes_marked(marker):
    """Host pids of live processes whose environment or command line holds @marker
    (a test's scratch path: every process of its runs inherits it through ptc's
    socket variable). Unlike pids a script reports, this works inside a pid namespace.
    The warm pool's idle interpreters are not counted (idle_warm_interpreters())."""
    found = []
    idle = idle_warm_interpreters()
    me = os.getpid()
    needle = marker.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me or int(name) in idle:
            continue
        for what in ("environ", "cmdline"):
            try:
                with open(f"/proc/{name}/{what}", "rb") as f:
                    if needle in f.read():
                        if pid_alive(int(name)):
                            found.append(int(name))
                        break
            except OSError:
                pass
    return found


def script_marker(ptc):
    """The marker of @ptc's scripts and what they start: ptc's socket variable, naming a
    staging dir below the test's TMPDIR (ptc itself does not carry it)."""
    return f"PTC_RPC_SOCKET={ptc.tmpdir}/"


def wait_no_process_marked(marker, seconds=10.0):
    """Wait up to @seconds until no process holds @marker; returns what is left."""
    end = time.monotonic() + seconds
    while True:
        left = processes_marked(marker)
        if not left or time.monotonic() >= end:
            return left
        time.sleep(0.05)


def kill_pids(pids):
    """SIGKILL each of @pids and wait until it is gone: a killed server still listens for a
    moment, and a client meeting it then takes it for a foreign one."""
    fds = []
    for pid in pids:
        try:
            fds.append(os.pidfd_open(pid))
        except OSError:
            pass
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for fd in fds:
        try:
            select.select([fd], [], [], 30)  # hang guard: SIGKILL takes milliseconds
        finally:
            os.close(fd)


class Ptc:
    """One test's view of ptc: binary, scratch dirs, base environment."""

    def __init__(self, binary, tmp):
        self.bin = binary
        self.tmp = tmp
        self.home = tmp / "home"
        self.workdir = tmp / "work"
        self.xdg_config = tmp / "xdg-config"
        self.xdg_cache = tmp / "xdg-cache"
        self.tmpdir = tmp / "t"
        for d in (self.home, self.workdir, self.xdg_config, self.xdg_cache, self.tmpdir):
            d.mkdir()
        self.env = {
            "PATH": os.environ.get("PATH") or "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "XDG_CONFIG_HOME": str(self.xdg_config),
            "XDG_CACHE_HOME": str(self.xdg_cache),
            "TMPDIR": str(self.tmpdir),
        }
        self._n = 0

    def make_env(self, env=None):
        """Base environment plus @env; a value of None removes the name."""
        e = dict(self.env)
        for k, v in (env or {}).items():
            if v is None:
                e.pop(k, None)
            else:
                e[k] = v
        return e

    def run_ptc(self, args, input=None, env=None, timeout=DEFAULT_TIMEOUT, cwd=None):
        return run_ptc(args, input=input, env=self.make_env(env), timeout=timeout,
                       cwd=str(cwd or self.workdir), binary=self.bin)

    def run(self, code, *opts, **kw):
        """`ptc run OPTS -c CODE` (CODE dedented)."""
        return self.run_ptc(["run", *opts, "-c", textwrap.dedent(code)], **kw)

    def run_file(self, code, *opts, **kw):
        """Write CODE to a file in the workdir and `ptc run OPTS FILE`."""
        self._n += 1
        p = self.tmp / f"script{self._n}.py"
        p.write_text(textwrap.dedent(code), encoding="utf-8")
        return self.run_ptc(["run", *opts, str(p)], **kw)

    def spawn(self, args, env=None, cwd=None):
        """Start ptc without waiting (for signal tests). Caller reaps."""
        return subprocess.Popen([str(self.bin)] + [str(a) for a in args],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=self.make_env(env),
                                cwd=str(cwd or self.workdir), start_new_session=True)

    def write_config(self, text, name="config.yaml"):
        p = self.tmp / name
        p.write_text(textwrap.dedent(text), encoding="utf-8")
        return p

    def path(self, *parts):
        return self.tmp.joinpath(*parts)


@pytest.fixture
def ptc():
    binary = ptc_binary()
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        pytest.fail(f"ptc binary not found at {binary} (build it or set PTC_BIN)")
    tmp = Path(tempfile.mkdtemp(prefix="ptci-", dir="/tmp"))
    try:
        yield Ptc(binary, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

@pytest.fixture
def srv(ptc):
    """This test's own `ptc serve` (its runtime directory under the test's scratch tree; the
    first `ptc run --session` starts it), killed at the end with everything else the test
    started. The server's directory."""
    run = ptc.tmp / "run"
    run.mkdir(mode=0o700)
    ptc.env["XDG_RUNTIME_DIR"] = str(run)
    try:
        yield run / "ptc"
    finally:
        kill_pids(processes_marked(str(ptc.tmp)))


def expect(r, rc, status=None):
    """Assert exit code @rc (and result status) with the whole result in the message."""
    assert r.rc == rc, f"expected exit {rc}: {r!r}"
    if status is not None:
        assert r.data is not None, f"no result JSON on stdout: {r!r}"
        assert r.data.get("status") == status, f"expected status {status}: {r!r}"


def expect_usage_error(r, *words):
    """Exit 2, no result JSON on stdout, a one-line message on stderr that
    contains each of @words (case-insensitive)."""
    assert r.rc == 2, f"expected exit 2: {r!r}"
    assert r.data is None, f"usage error must not print a result JSON: {r!r}"
    msg = r.stderr.strip()
    assert msg, f"usage error without a message: {r!r}"
    assert len(msg.splitlines()) == 1, f"usage error message is not one line: {r!r}"
    # strerror(0) where an errno was meant
    assert ": Success" not in msg, f"message reports errno 0: {r!r}"
    for w in words:
        assert w.lower() in msg.lower(), f"message does not name {w!r}: {r!r}"


# A raw RPC client for scripts that talk to ptc themselves (docs/protocol.md).
RPC_CLIENT = r'''
import json as _json, os as _os, socket as _socket

def rpc_connect(timeout=20):
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(_os.environ["PTC_RPC_SOCKET"])
    return s

class Lines:
    def __init__(self, s):
        self.s, self.buf = s, b""
    def line(self):
        while b"\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                if self.buf:
                    raise RuntimeError("EOF inside a line: %r" % self.buf[:200])
                return None
            self.buf += d
        l, self.buf = self.buf.split(b"\n", 1)
        return l
    def msg(self):
        l = self.line()
        return None if l is None else _json.loads(l)

TOKEN = _os.environ.get("PTC_RPC_TOKEN", "")

def req(id, tool, args, token=TOKEN):
    d = {"id": id, "tool": tool, "args": args}
    if token is not None:
        d["token"] = token
    return (_json.dumps(d) + "\n").encode()

def call(tool, args, id=1):
    s = rpc_connect()
    s.sendall(req(id, tool, args))
    m = Lines(s).msg()
    s.close()
    return m
'''
