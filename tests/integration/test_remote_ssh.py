# SPDX-License-Identifier: MIT
"""`ptc run --backend ssh:HOST` against a real OpenSSH sshd (docs/remote.md).

The module starts its own sshd (Debian's openssh-server) on a free loopback port with
host and user keys made for it, a config of its own, and `SetEnv XDG_CACHE_HOME` into a
scratch directory, so the agent ptc ships lands there and nothing is written into the
login user's home. The session's PATH starts with the directory of the binary under test:
a build without a static agent to ship (a sanitizer build) runs that ptc as the agent. The client is the real ssh, given the test's own client config by a
one-line wrapper named `ssh` first on PATH (ssh reads ~/.ssh/config from the passwd home,
not $HOME, and a SPEC carries no options): the SPEC `ssh:target` names a Host of that
config. sshd with privilege separation needs root: elsewhere the module is skipped.
"""

import os
import shutil
import signal
import socket
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from conftest import expect, processes_marked, ptc_binary, wait_no_process_marked
from test_mcp_server import check_result, mcp  # noqa: F401  (a pytest fixture)

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Sshd:
    def __init__(self, d):
        self.dir = d
        self.port = free_port()
        self.cache = d / "remote-cache"
        self.bin = d / "bin"
        self.bin.mkdir()
        self.cache.mkdir()
        for key in ("host", "id"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / key)],
                           check=True, timeout=30)
        shutil.copy(d / "id.pub", d / "authorized_keys")
        (d / "sshd_config").write_text(textwrap.dedent(f"""\
            Port {self.port}
            ListenAddress 127.0.0.1
            HostKey {d}/host
            AuthorizedKeysFile {d}/authorized_keys
            StrictModes no
            PidFile {d}/sshd.pid
            UsePAM no
            PermitRootLogin prohibit-password
            PasswordAuthentication no
            KbdInteractiveAuthentication no
            SetEnv XDG_CACHE_HOME={self.cache} PATH={ptc_binary().parent}:/usr/local/bin:/usr/bin:/bin
            LogLevel ERROR
            """))
        (d / "ssh_config").write_text(textwrap.dedent(f"""\
            Host target
                HostName 127.0.0.1
                Port {self.port}
                User {os.environ.get("USER") or "root"}
                IdentityFile {d}/id
                IdentitiesOnly yes
                UserKnownHostsFile /dev/null
                StrictHostKeyChecking no
                LogLevel ERROR
            """))
        ssh = shutil.which("ssh")
        (self.bin / "ssh").write_text(f'#!/bin/sh\nexec {ssh} -F {d}/ssh_config "$@"\n')
        (self.bin / "ssh").chmod(0o755)
        os.makedirs("/run/sshd", exist_ok=True)
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(d / "sshd_config")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    err = self.proc.stderr.read().decode(errors="replace")
                    self.stop()
                    pytest.skip(f"sshd did not start: {err.strip()[:300]}")
                time.sleep(0.05)

    def sessions(self):
        """The per-connection sshd processes (children of the listener)."""
        out = []
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    st = Path(f"/proc/{name}/stat").read_text()
                except OSError:
                    continue
                if int(st.rsplit(")", 1)[1].split()[1]) == self.proc.pid:
                    out.append(int(name))
        return out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("sshd with privilege separation needs root")
    if not os.path.exists(SSHD) or not shutil.which("ssh") or not shutil.which("ssh-keygen"):
        pytest.skip("openssh-server and openssh-client are not installed "
                    "(apt-get install openssh-server)")
    s = Sshd(Path(tmp_path_factory.mktemp("sshd", numbered=True)))
    try:
        yield s
    finally:
        s.stop()


def ssh_env(ptc, sshd):
    return {"PATH": f"{sshd.bin}:{ptc.env['PATH']}"}


def run_ssh(ptc, sshd, code, *opts, timeout=90):
    return ptc.run(code, "--backend", "ssh:target", *opts, env=ssh_env(ptc, sshd),
                   timeout=timeout)


def test_a_script_and_its_tools_run_over_ssh(ptc, sshd):
    target = ptc.path("written-over-ssh.txt")
    r = run_ssh(ptc, sshd, f"""
        import os
        from hermes_tools import terminal, write_file, read_file
        print(terminal("echo from-terminal")["output"].strip())
        write_file({str(target)!r}, "over ssh\\n")
        print(read_file({str(target)!r})["content"])
        print(os.environ["XDG_CACHE_HOME"] == {str(sshd.cache)!r})
        """, "--log")
    expect(r, 0, "success")
    # XDG_CACHE_HOME is the sshd session's (its SetEnv): the script ran through sshd.
    assert r.data["output"] == "from-terminal\n     1|over ssh\n     2|\nTrue\n", r
    assert r.data["tool_calls_made"] == 3, r
    assert target.read_text() == "over ssh\n"
    # The agent was shipped into the session's cache, not found on a PATH.
    sha = (ptc.bin.parent / "ptc-agent.sha256")
    if sha.exists():
        assert (sshd.cache / "ptc" / f"agent-{sha.read_text().split()[0]}").is_file()


def test_concurrent_calls_and_a_large_output_over_ssh(ptc, sshd):
    r = run_ssh(ptc, sshd, """
        from concurrent.futures import ThreadPoolExecutor
        from hermes_tools import terminal
        with ThreadPoolExecutor(8) as ex:
            got = list(ex.map(lambda i: terminal(f"echo {i}")["output"].strip(), range(24)))
        print(got == [str(i) for i in range(24)])
        print("y" * 10_000_000)
        """, "--max-tool-calls", "100")
    expect(r, 0, "success")
    assert r.data["output"].startswith("True\n"), r.data["output"][:100]
    assert r.data["stdout_bytes_total"] == 5 + 10_000_001, r.data["stdout_bytes_total"]
    assert r.data["tool_calls_made"] == 24, r


def test_timeout_over_ssh_leaves_nothing(ptc, sshd):
    marker = "7531246"
    t = time.monotonic()
    r = run_ssh(ptc, sshd, f"""
        import subprocess, time
        subprocess.Popen(["sleep", "{marker}"])
        print("started", flush=True)
        time.sleep(60)
        """, "--timeout", "3")
    expect(r, 124, "timeout")
    assert r.data["output"].startswith("started\n"), r
    assert time.monotonic() - t < 45  # hang guard: the script sleeps 60 s
    assert wait_no_process_marked(marker, 10) == []


def test_a_dropped_connection_ends_the_run_and_the_remote_script(ptc, sshd):
    marker = "8642097"
    flag = ptc.path("ssh-running")
    e = ptc.make_env(ssh_env(ptc, sshd))
    p = subprocess.Popen([str(ptc.bin), "run", "--backend", "ssh:target", "-c", textwrap.dedent(f"""
        import subprocess, time
        from hermes_tools import write_file
        subprocess.Popen(["sleep", "{marker}"])
        write_file({str(flag)!r}, "x")
        print("before the drop", flush=True)
        time.sleep(60)
        """)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e, cwd=str(ptc.workdir),
        start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not flag.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert flag.exists(), "the script never started"
        assert processes_marked(marker), "the remote script's child is not found"
        for pid in sshd.sessions():
            os.kill(pid, signal.SIGKILL)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 1, (out, err)
    assert b"backend 'ssh:target': the channel closed before the script ended" in out, out
    assert b"before the drop" in out, out
    assert wait_no_process_marked(marker, 10) == []


def test_a_refused_login_says_why(ptc, sshd):
    (sshd.dir / "bad_config").write_text(
        (sshd.dir / "ssh_config").read_text().replace(f"{sshd.dir}/id", f"{sshd.dir}/host"))
    wrapper = sshd.dir / "bad-bin"
    wrapper.mkdir(exist_ok=True)
    (wrapper / "ssh").write_text(
        f'#!/bin/sh\nexec {shutil.which("ssh")} -F {sshd.dir}/bad_config "$@"\n')
    (wrapper / "ssh").chmod(0o755)
    r = ptc.run('print("never")', "--backend", "ssh:target",
                env={"PATH": f"{wrapper}:{ptc.env['PATH']}"}, timeout=60)
    expect(r, 1, "error")
    assert "ptc's agent did not start on the target" in r.data["error"], r
    assert "Permission denied" in r.data["error"], r


def test_a_session_over_ssh_keeps_its_state_until_the_connection_ends(ptc, sshd, mcp):
    marker = "7531864"
    c = mcp("--backend", "ssh:target", env=ssh_env(ptc, sshd))
    # A process the session keeps: it lives as long as the session's interpreter.
    r = check_result(c.call_code("import os, subprocess\nx = 41\npid = os.getpid()\n"
                                 f"kept = subprocess.Popen(['sleep', '{marker}'])",
                                 wait=90, session="s"))
    assert r["status"] == "success", r
    assert processes_marked(marker), "the session's process is not found"
    r = check_result(c.call_code("import os\nfrom hermes_tools import terminal\nx += 1\n"
                                 "print(x, os.getpid() == pid, terminal('echo t')['output'])",
                                 wait=60, session="s"))
    assert (r["output"], r["cell"]) == ("42 True t\n", 2), r
    assert processes_marked(marker), "the session's process did not outlive its cell"
    c.close_stdin()
    assert c.wait_exit(60) == 0
    assert wait_no_process_marked(marker, 15) == []
    assert sshd.sessions() == [] or wait_sessions_gone(sshd)


def wait_sessions_gone(sshd, seconds=15):
    end = time.monotonic() + seconds
    while sshd.sessions() and time.monotonic() < end:
        time.sleep(0.1)
    return sshd.sessions() == []

