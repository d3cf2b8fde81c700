# SPDX-License-Identifier: MIT
"""Helpers for test_isolation.py, test_mount_plan.py and
test_confinement_privileges.py: ptc run as the current user or as an
unprivileged one (and the fixtures that give it), the script prelude the
attacks share, finding a run's processes on the host, and loopback listeners
that record what reached them.

The attack scripts never hold a secret in plain text (it would sit in ptc's
argv and in the staged script file, both readable by design): they get it
reversed and search for it at run time, and print pids and errno names, never
the value itself.
"""

import json
import os
import pwd
import secrets
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from conftest import (DEFAULT_TIMEOUT, Ptc, Result, kill_pids, parse_stdout, pid_alive,
                      ptc_binary, run_ptc)

USER = "ptc-iso-test"
USER_PATH = "/usr/local/bin:/usr/bin:/bin"
SETPRIV = shutil.which("setpriv") or "/usr/bin/setpriv"

# Shared by every attack script: errno names, raw system calls, a comm marker
# for finding the run's processes from the host, one JSON line of results.
PRELUDE = r'''
import ctypes, errno, json, os, signal, socket, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def ename(e):
    if isinstance(e, socket.gaierror):
        return "gaierror"
    if isinstance(e, OSError) and e.errno:
        return errno.errorcode.get(e.errno, str(e.errno))
    return type(e).__name__

def attempt(fn):
    """'ok', or the errno name (the exception's name) of the failure."""
    try:
        fn()
        return "ok"
    except Exception as e:
        return ename(e)

def sc(nr, *args):
    """Raw system call: (result, None) or (-1, errno name)."""
    a = [ctypes.c_long(x) if isinstance(x, int) else x for x in args]
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *a)
    if r == -1:
        e = ctypes.get_errno()
        return r, errno.errorcode.get(e, str(e))
    return r, None

def mark(name):
    """Set comm (PR_SET_NAME): the run's processes are found by it on the host."""
    libc.prctl(15, ctypes.c_char_p(name.encode()), 0, 0, 0)

def emit(d):
    print(json.dumps(d), flush=True)

def in_child(fn):
    """fn() in a forked child (its side effects stay there): 'ok' or an errno name."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        out = attempt(fn)
        os.write(w, out.encode())
        os._exit(0)
    os.close(w)
    out = os.read(r, 200).decode()
    os.close(r)
    os.waitpid(pid, 0)
    return out or "child died"

def wait_path(p, seconds=20):
    end = time.monotonic() + seconds
    while not os.path.exists(p):
        if time.monotonic() > end:
            raise SystemExit("timed out waiting for " + p)
        time.sleep(0.01)
'''


def script(body, **consts):
    """PRELUDE, then NAME = repr(value) for each of @consts, then @body (a
    string or a list of strings, each dedented on its own)."""
    parts = [body] if isinstance(body, str) else body
    lines = [PRELUDE] + [f"{k} = {v!r}" for k, v in consts.items()]
    return "\n".join(lines + [textwrap.dedent(b) for b in parts])


def short_args(args):
    """@args with the shared prelude left out, for readable failure messages."""
    return [f"<prelude>{a[len(PRELUDE):]}" if isinstance(a, str) and a.startswith(PRELUDE)
            else a for a in args]


def token(prefix="ptc-iso-"):
    return prefix + secrets.token_hex(12)


def marker():
    """A unique comm value (15 characters, the kernel's limit)."""
    return "pi-" + secrets.token_hex(6)


class IsoPtc(Ptc):
    """A Ptc whose ptc runs as @user ((name, uid, gid)) through setpriv, or as
    the current user when @user is None. The scratch tree belongs to the user
    that runs ptc, so the script can write where it is meant to."""

    def __init__(self, binary, tmp, variant, user=None):
        super().__init__(binary, tmp)
        self.variant = variant
        self.user = user
        self.uid = user[1] if user else os.getuid()
        self.gid = user[2] if user else os.getgid()
        self.is_root = self.uid == 0
        if user:
            self.env["PATH"] = USER_PATH
            for d in (tmp, self.home, self.workdir, self.xdg_config, self.xdg_cache,
                      self.tmpdir):
                os.chown(d, self.uid, self.gid)

    def as_user(self, argv):
        argv = [str(a) for a in argv]
        if not self.user:
            return argv
        return [SETPRIV, f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups",
                "--"] + argv

    def run_ptc(self, args, input=None, env=None, timeout=DEFAULT_TIMEOUT, cwd=None):
        if not self.user:
            return super().run_ptc(args, input=input, env=env, timeout=timeout, cwd=cwd)
        argv = self.as_user([self.bin, *args])
        return run_ptc(argv[1:], input=input, env=self.make_env(env), timeout=timeout,
                       cwd=str(cwd or self.workdir), binary=argv[0])

    def spawn(self, args, env=None, cwd=None):
        # setpriv execs ptc: proc.pid is ptc's pid.
        return subprocess.Popen(self.as_user([self.bin, *args]), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=self.make_env(env), cwd=str(cwd or self.workdir),
                                start_new_session=True)

    def popen(self, argv, env=None):
        """A helper process (sleeper, sentinel) as the user that runs ptc."""
        return subprocess.Popen(self.as_user(argv), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=env or {"PATH": USER_PATH, "LANG": "C.UTF-8"}, cwd="/",
                                start_new_session=True)

    def own(self, path):
        if self.user:
            os.chown(path, self.uid, self.gid, follow_symlinks=False)
        return path

    def mkdir(self, path, mode=0o755):
        path = Path(path)
        path.mkdir(mode=mode)
        os.chmod(path, mode)
        return self.own(path)

    def write(self, path, data, mode=0o644):
        path = Path(path)
        if isinstance(data, str):
            data = data.encode()
        path.write_bytes(data)
        os.chmod(path, mode)
        return self.own(path)

    def config(self, memory_mb=None, pids=None):
        text = "sandbox:\n"
        if memory_mb is not None:
            text += f"  memory_mb: {memory_mb}\n"
        if pids is not None:
            text += f"  pids: {pids}\n"
        return self.own(self.write_config(text, name=f"config-{secrets.token_hex(4)}.yaml"))


def stop(proc):
    """Kill a helper started with start_new_session and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def finish(proc, args=(), timeout=20.0):
    """Wait for a spawned ptc; a Result like run_ptc's. Kills it on timeout."""
    t0 = time.monotonic()
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"ptc did not return within {timeout}s: "
                             f"stdout={out[:2000]!r} stderr={err[:2000]!r}")
    return Result(proc.returncode, parse_stdout(out), err.decode("utf-8", "replace"), out,
                  time.monotonic() - t0, list(args))


# --- processes of a run, seen from the host ------------------------------------

def run_processes(mark=None, workdir=None):
    """{pid: comm} of live host processes whose comm is @mark or whose cwd is
    in @workdir."""
    found = {}
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        pid = int(name)
        try:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        hit = mark is not None and comm == mark
        if not hit and workdir is not None:
            try:
                cwd = os.readlink(f"/proc/{pid}/cwd")
            except OSError:
                cwd = ""
            hit = cwd == str(workdir) or cwd.startswith(str(workdir) + "/")
        if hit and pid_alive(pid):
            found[pid] = comm
    return found


def leftovers(mark=None, workdir=None, seconds=10.0):
    """Wait up to @seconds for the run's processes to disappear; return the
    ones that did not (and kill them, so that no test leaves any behind)."""
    end = time.monotonic() + seconds
    while True:
        left = run_processes(mark, workdir)
        if not left or time.monotonic() > end:
            break
        time.sleep(0.05)
    kill_pids(list(left))
    return left


# --- listeners ------------------------------------------------------------------

def listener(family, kind, addr):
    s = socket.socket(family, kind)
    s.bind(addr)
    if kind == socket.SOCK_STREAM:
        s.listen(16)
    return s


def received(sock, wait):
    """What reached @sock: the payloads of pending connections (stream) or the
    queued datagrams. A connection completes in the kernel's backlog even
    when nobody accepts it, so reading after the run misses nothing."""
    got = []
    deadline = time.monotonic() + wait
    while True:
        left = max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([sock], [], [], left if not got else 0)
        if not ready:
            return got
        if sock.type == socket.SOCK_STREAM:
            conn, _ = sock.accept()
            conn.settimeout(2)
            data = b""
            try:
                while True:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    data += chunk
            except OSError:
                pass
            conn.close()
            got.append(data)
        else:
            got.append(sock.recv(65536))


def ipv6_loopback():
    try:
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        s.bind(("::1", 0))
        s.close()
        return True
    except OSError:
        return False


# --- the unprivileged user --------------------------------------------------------

def ensure_user():
    """Create the system user once (root only); (name, uid, gid)."""
    for _ in range(5):
        try:
            p = subprocess.run(["useradd", "--system", "--no-create-home", "--shell",
                                "/usr/sbin/nologin", USER], capture_output=True, timeout=60)
        except FileNotFoundError:
            raise AssertionError("useradd not found: cannot create the unprivileged test user")
        # 10: /etc/passwd is locked (a parallel session is creating the user)
        if p.returncode != 10:
            break
        time.sleep(0.5)
    # 9: the name is already in use (an earlier session, a parallel one)
    if p.returncode not in (0, 9):
        raise AssertionError(f"useradd {USER} failed: {p.returncode} {p.stderr!r}")
    pw = pwd.getpwnam(USER)
    return USER, pw.pw_uid, pw.pw_gid


def copy_binary(binary):
    """The binary in a fresh 0755 directory under /tmp (the repo may sit in a
    0700 home directory the unprivileged user cannot enter)."""
    d = Path(tempfile.mkdtemp(prefix="ptc-iso-bin-", dir="/tmp"))
    os.chmod(d, 0o755)
    dst = d / "ptc"
    shutil.copy2(binary, dst)
    os.chmod(dst, 0o755)
    return dst


# --- the fixtures: ptc as root and as the unprivileged user ---------------------------
# A test module takes them with
#     from isolation_util import iso_fixture
#     from isolation_util import iso_user, iso_user_binary  # noqa: F401  (pytest fixtures)
#     iso = iso_fixture("ptcx-")
# iso asks for the other two by name, in the unprivileged variant only: they must be
# fixtures of the module too. Each module gets its own user binary copy, as before.

@pytest.fixture(scope="module")
def iso_user():
    return ensure_user()


@pytest.fixture(scope="module")
def iso_user_binary():
    dst = copy_binary(ptc_binary())
    yield dst
    shutil.rmtree(dst.parent, ignore_errors=True)


def iso_fixture(prefix, mode=None):
    """A module's `iso` fixture: each test runs with ptc as the current user
    ("root") and as an unprivileged one: when the tests run as root, the
    system user ptc-iso-test (through setpriv, with a copy of the binary it
    can reach); otherwise the current user. The scratch tree is a fresh
    /tmp/@prefix* directory, chmod @mode when given."""

    @pytest.fixture(params=["root", "unprivileged"])
    def iso(request):
        binary = ptc_binary()
        if not (binary.is_file() and os.access(binary, os.X_OK)):
            pytest.fail(f"ptc binary not found at {binary} (build it or set PTC_BIN)")
        user = None
        if request.param == "root":
            if os.geteuid() != 0:
                pytest.skip("the root variant needs the tests to run as root")
        elif os.geteuid() == 0:
            user = request.getfixturevalue("iso_user")
            binary = request.getfixturevalue("iso_user_binary")
        tmp = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
        if mode is not None:
            os.chmod(tmp, mode)
        try:
            yield IsoPtc(binary, tmp, request.param, user)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    return iso


def strict_missing(binary):
    """True when this build says strict isolation is not available (exit 2)."""
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        return False
    with tempfile.TemporaryDirectory(prefix="ptc-iso-probe-", dir="/tmp") as d:
        env = {"PATH": os.environ.get("PATH") or USER_PATH, "HOME": d, "LANG": "C.UTF-8",
               "XDG_CONFIG_HOME": d, "XDG_CACHE_HOME": d, "TMPDIR": d}
        try:
            p = subprocess.run([str(binary), "run", "--isolation", "strict", "-c", "pass"],
                               cwd=d, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return False
    return p.returncode == 2 and b"not available in this build" in p.stderr


def as_json(r):
    """The one JSON line the script printed, from a successful run."""
    assert r.rc == 0 and r.data is not None and r.data.get("status") == "success", \
        f"expected a successful run: {r!r}"
    try:
        return json.loads(r.output)
    except ValueError as e:
        raise AssertionError(f"script output is not JSON ({e}): {r!r}")
