# SPDX-License-Identifier: MIT
"""Fault injection (docs/security.md, promise 2): a full disk under the spill file and the
staging directory, ptc out of file descriptors, a script that abandons a request half
written. Each ends with a clear result: no hang, no spin, no crash, no output withheld for a
reason that is not a secret's.

The disks are small tmpfs mounts (root only: skipped otherwise, with the reason)."""

import os
import resource
import subprocess
import time

import pytest

from conftest import DEFAULT_TIMEOUT, Result, expect, parse_stdout


def run_limited(ptc, args, nofile=None, env=None, timeout=DEFAULT_TIMEOUT):
    """ptc run ARGS under RLIMIT_NOFILE @nofile: (stdout, stderr, seconds, exit status)."""
    def limit():
        if nofile:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
    t0 = time.monotonic()
    p = subprocess.Popen([str(ptc.bin), "run", *args], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=ptc.make_env(env), cwd=str(ptc.workdir), preexec_fn=limit)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise AssertionError(f"ptc run {args!r} did not end within {timeout} s")
    return out, err, time.monotonic() - t0, p.returncode


def cpu_of(fn):
    """fn()'s value and the CPU seconds of the children it reaped (ptc and its script)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = fn()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def result(out, err, elapsed, rc, args):
    return Result(rc, parse_stdout(out), err.decode("utf-8", "replace"), out, elapsed, args)


HOLD = """
import os, socket, time
path = os.environ["PTC_RPC_SOCKET"]
held = []
try:
    for i in range(400):
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        held.append(s)
except OSError:
    pass
time.sleep(HOLD_SECONDS)
"""


def test_out_of_descriptors_rpc_neither_spins_nor_hangs(ptc):
    """The script holds connections until ptc has no descriptor left: pending connections
    are shed (closed at once), not retried in a busy loop, and once the script lets go a
    call works again."""
    script = ptc.workdir / "hold.py"
    script.write_text(HOLD.replace("HOLD_SECONDS", "3") + """
for s in held:
    s.close()
time.sleep(0.2)
from hermes_tools import read_file
print("held", len(held) > 10, "then", "content" in read_file("hold.py"))
""")
    args = ["--timeout", "30", str(script)]
    (out, err, elapsed, rc), cpu = cpu_of(lambda: run_limited(ptc, args, nofile=64))
    r = result(out, err, elapsed, rc, args)
    expect(r, 0, "success")
    assert r.output == "held True then True\n", r
    # Three seconds held: a busy accept loop would burn about as much CPU.
    assert cpu < 1.5, f"ptc used {cpu:.2f} s of CPU in {elapsed:.2f} s: {r!r}"


def test_out_of_descriptors_a_call_fails_at_once(ptc):
    """A call whose connection ptc cannot take gets an error at once, not at the timeout."""
    script = ptc.workdir / "shed.py"
    script.write_text(HOLD.replace("HOLD_SECONDS", "0") + """
for s in held[-3:]:
    s.close()
t0 = time.monotonic()
try:
    from hermes_tools import read_file
    print("answer", sorted(read_file("shed.py")))
except RuntimeError as e:
    print("error", e)
print("fast", time.monotonic() - t0 < 15)  # hang guard (the run's timeout is 30 s)
""")
    args = ["--timeout", "30", str(script)]
    r = result(*run_limited(ptc, args, nofile=64), args)
    expect(r, 0, "success")
    assert r.output.endswith("fast True\n"), r
    assert ("error ptc closed the tool connection" in r.output and
            "no file descriptor left" in r.output) or r.output.startswith("answer"), r


def test_too_few_descriptors_to_start_is_a_clear_error(ptc):
    for nofile in range(8, 48, 2):
        args = ["--timeout", "10", "-c", "print('never')"]
        r = result(*run_limited(ptc, args, nofile=nofile), args)
        if r.rc == 0:
            continue  # enough, on this machine
        expect(r, 3, "error")
        assert "Too many open files" in r.data["error"], r
        # Running out of descriptors is no reason to confine less (docs/isolation.md).
        assert "running without" not in r.stderr, r


def test_request_abandoned_half_written(ptc):
    """A connection that sends half a request and closes costs that request only."""
    r = ptc.run("""
        import os, socket
        s = socket.socket(socket.AF_UNIX)
        s.connect(os.environ["PTC_RPC_SOCKET"])
        s.sendall(b'{"id": 1, "token": "' + os.environ["PTC_RPC_TOKEN"].encode() + b'", "to')
        s.close()
        s = socket.socket(socket.AF_UNIX)
        s.connect(os.environ["PTC_RPC_SOCKET"])
        s.sendall(b'{"id": 2, "tok')
        s.shutdown(socket.SHUT_WR)
        print("eof answer", s.recv(100) == b"")
        s.close()
        from hermes_tools import terminal
        print(terminal("echo after")["output"])
        """, input=b"")
    expect(r, 0, "success")
    assert r.output == "eof answer True\nafter\n", r
    assert r.data["tool_calls_made"] == 1, r


# ------------------------------------------------------------------ a full disk

@pytest.fixture
def small_disk(ptc):
    """small_disk(size, fill) -> a tmpfs of @size with @fill bytes taken."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mounts = []

    def make(size, fill):
        d = ptc.path(f"disk{len(mounts)}")
        d.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(d)],
                       check=True)
        mounts.append(d)
        if fill:
            with open(d / "fill", "wb") as f:
                try:
                    f.write(b"\0" * fill)
                except OSError:
                    pass
        return d

    yield make
    for d in mounts:
        subprocess.run(["umount", "-l", str(d)], check=False)


BIG = "for i in range(60000): print('line %06d ' % i + 'x' * 80)"


def test_full_disk_under_the_spill_file(ptc, small_disk):
    disk = small_disk("256k", 1 << 20)
    r = ptc.run(BIG, env={"XDG_CACHE_HOME": str(disk)}, input=b"")
    expect(r, 0, "success")
    assert r.data["stdout_truncated"] and r.output.startswith("line 000000 "), r
    assert "stdout_spill_path" not in r.data, r
    assert r.data["stdout_spill_error"] == (
        "the whole output could not be kept in a spill file: No space left on device"), r
    assert not list((disk / "ptc" / "spill").glob("*")), "a partial spill file was left"


def test_full_disk_while_the_spill_is_redacted(ptc, small_disk):
    """The spill fits, its redacted copy does not: the output is kept, the spill is not
    (it used to withhold the whole output as a failed redaction)."""
    disk = small_disk("8m", 2 << 20)
    r = ptc.run(BIG, env={"XDG_CACHE_HOME": str(disk)}, input=b"")
    expect(r, 0, "success")
    assert r.output.startswith("line 000000 ") and "Output withheld" not in r.output, r
    assert r.data["stdout_spill_error"].endswith("No space left on device"), r
    assert not list((disk / "ptc" / "spill").glob("*")), "a spill file was left"


def test_full_disk_under_the_staging_directory(ptc, small_disk):
    disk = small_disk("64k", 1 << 20)
    t0 = time.monotonic()
    r = ptc.run("print('never')", env={"TMPDIR": str(disk)}, input=b"")
    expect(r, 3, "error")
    assert time.monotonic() - t0 < 10  # hang guard
    assert r.data["error"] == "cannot create the staging directory: No space left on device", r
    assert [p.name for p in disk.iterdir()] == ["fill"], list(disk.iterdir())
