# SPDX-License-Identifier: MIT
"""`ptc run --backend podman:CTR` / `docker:CTR` against a real container (docs/remote.md).

The module builds its image from Debian's registry (`mmdebstrap --variant=minbase
--include=python3 bookworm` into a tar, then `ENGINE import`: a bare Debian with sh and
python3, nothing of ptc in it), starts one container of it for the module and removes it at
the end. Podman runs it with Debian's runc and cgroupfs: on machines of this kind crun fails
(`setrlimit RLIMIT_NOFILE: Operation not permitted`, then `cgroups in hybrid mode not
supported`), runc works. ptc itself runs the engine as a user would (`podman exec -i CTR
sh`); the agent it ships lands in the container's $HOME/.cache/ptc.

Each engine is skipped, with the engine's own words, where it cannot run a container (no
Docker daemon on machines of this kind: `docker info` says why), and so is the module in a
build without a static agent to ship (a sanitizer build: its ptc needs the host's shared
libraries, which the image does not have).
"""

import os
import shutil
import signal
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from conftest import expect, processes_marked, ptc_binary, wait_no_process_marked
from test_mcp_server import check_result, mcp  # noqa: F401  (a pytest fixture)

IMAGE = "localhost/ptc-test-python:bookworm"

# Podman's settings for a container on these machines (see the module's comment).
ENGINE_RUN = {
    "podman": ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs", "run", "-d",
               "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
               "--network", "none"],
    "docker": ["docker", "run", "-d", "--network", "none"],
}


def sh(argv, timeout=120):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=timeout, text=True)


def engine_problem(engine):
    """Why @engine cannot run a container here, or None."""
    if not shutil.which(engine):
        return f"{engine} is not installed (apt-get install {engine}" + \
            (" runc mmdebstrap)" if engine == "podman" else ".io mmdebstrap)")
    r = sh([engine, "info"], timeout=60)
    if r.returncode != 0:
        last = [line for line in r.stdout.splitlines() if line.strip()][-1:] or ["no output"]
        return f"`{engine} info` failed: {last[0].strip()[:300]}"
    return None


def build_image(engine):
    if sh([engine, "image", "inspect", IMAGE]).returncode == 0:
        return
    if not shutil.which("mmdebstrap"):
        pytest.skip("mmdebstrap is not installed (apt-get install mmdebstrap): "
                    "the test image is built with it")
    with tempfile.TemporaryDirectory(prefix="ptc-image-") as d:
        tar = Path(d) / "image.tar"
        r = sh(["mmdebstrap", "--quiet", "--variant=minbase", "--include=python3", "bookworm",
                str(tar)], timeout=900)
        if r.returncode != 0:
            pytest.skip(f"mmdebstrap could not build the test image: {r.stdout.strip()[-300:]}")
        r = sh([engine, "import", str(tar), IMAGE], timeout=300)
        if r.returncode != 0:
            pytest.skip(f"`{engine} import` failed: {r.stdout.strip()[-300:]}")


class Container:
    def __init__(self, engine):
        self.engine = engine
        self.name = f"ptc-test-{os.getpid()}"
        r = sh(ENGINE_RUN[engine] + ["--name", self.name, IMAGE, "sleep", "infinity"])
        if r.returncode != 0:
            sh([engine, "rm", "-f", self.name])
            pytest.skip(f"{engine} cannot run a container here: {r.stdout.strip()[-300:]}")
        self.spec = f"{engine}:{self.name}"

    def exec(self, *argv):
        return sh([self.engine, "exec", self.name, *argv])

    def settle(self):
        """Wait until the engine runs a command in the container again: the cleanup of the
        last run's exec session (conmon's exit command) holds the container's lock for a
        while, and a run started meanwhile would wait on it (seen in CI: over a minute)."""
        r = sh([self.engine, "exec", self.name, "true"], timeout=180)
        assert r.returncode == 0, r.stdout

    def remove(self):
        sh([self.engine, "rm", "-f", "-t", "0", self.name])


@pytest.fixture(scope="module", params=["podman", "docker"])
def container(request):
    engine = request.param
    if os.geteuid() != 0:
        pytest.skip("the tests run containers as root (rootless engines need subuid setup)")
    if not (ptc_binary().parent / "ptc-agent").is_file():
        pytest.skip("this build has no static ptc-agent to ship into the container "
                    "(sanitizer builds do not make one)")
    why = engine_problem(engine)
    if why:
        pytest.skip(why)
    build_image(engine)
    c = Container(engine)
    try:
        yield c
    finally:
        c.remove()


def run_in(ptc, c, code, *opts, timeout=120):
    return ptc.run(code, "--backend", c.spec, *opts, timeout=timeout)


def test_a_script_and_its_tools_run_in_the_container(ptc, container):
    r = run_in(ptc, container, """
        import os, socket
        from hermes_tools import terminal, write_file, read_file, search_files, patch
        print(terminal("cat /etc/debian_version; hostname")["output"].split()[1])
        write_file("note.txt", "in the container\\n")
        patch("/srv/note.txt", "in the", "inside the")
        print(read_file("note.txt")["content"])
        print(search_files("inside", path="/srv")["total_count"])
        print(socket.gethostname(), os.getcwd())
        """, "--log", "--remote-cwd", "/srv")
    expect(r, 0, "success")
    lines = r.data["output"].splitlines()
    assert lines[4] == f"{lines[0]} /srv", r
    assert lines[1:4] == ["     1|inside the container", "     2|", "1"], r
    assert r.data["tool_calls_made"] == 5, r
    # The file is in the container, not on the host.
    assert not os.path.exists("/srv/note.txt")
    assert container.exec("cat", "/srv/note.txt").stdout == "inside the container\n"
    # The agent was shipped into the container's cache, named by its content hash.
    sha = (ptc.bin.parent / "ptc-agent.sha256").read_text().split()[0]
    assert container.exec("test", "-x", f"/root/.cache/ptc/agent-{sha}").returncode == 0


def test_concurrent_calls_and_a_large_output_from_the_container(ptc, container):
    r = run_in(ptc, container, """
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


def test_a_container_whose_directory_is_root_runs_in_a_private_directory(ptc, container):
    """The container's working directory is `/`, which a confined run refuses (issue 34):
    without --remote-cwd the agent works in a private directory of the target and the result
    names it; --remote-cwd / is refused with the reason."""
    r = run_in(ptc, container, """
        import os
        open("made-here.txt", "w").write("x")
        print(os.getcwd())
        """)
    expect(r, 0, "success")
    cwd = r.data["output"].strip()
    assert cwd != "/" and "/ptc/workdirs/ptc-work-" in cwd, r
    assert any("private directory" in w and cwd in w for w in r.data.get("warnings", [])), r
    r = run_in(ptc, container, "print('never')", "--remote-cwd", "/")
    assert r.rc != 0 and r.data["status"] == "error", r
    assert "remote_cwd" in r.data["error"] and "'/' is the root directory" in r.data["error"], r


def test_a_timeout_in_the_container_leaves_nothing(ptc, container):
    marker = "6420531"
    t = time.monotonic()
    r = run_in(ptc, container, f"""
        import subprocess, time
        subprocess.Popen(["sleep", "{marker}"])
        print("started", flush=True)
        time.sleep(60)
        """, "--timeout", "3")
    expect(r, 124, "timeout")
    assert r.data["output"].startswith("started\n"), r
    assert time.monotonic() - t < 45  # hang guard: the script sleeps 60 s
    # The container's processes are the host's too (a pid namespace below ours).
    assert wait_no_process_marked(marker, 10) == []


def spawn_run(ptc, c, code):
    c.settle()
    return subprocess.Popen([str(ptc.bin), "run", "--backend", c.spec, "-c",
                             textwrap.dedent(code)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ptc.make_env(),
                            cwd=str(ptc.workdir), start_new_session=True)


def sleeper(marker):
    """What finds the script's `sleep MARKER` alone: ptc's command line holds the marker
    too (in the script it was given), and so does a clone of ptc before it execs."""
    return f"sleep\0{marker}\0"


def wait_started(p, marker):
    deadline = time.monotonic() + 120
    while not processes_marked(sleeper(marker)) and time.monotonic() < deadline:
        assert p.poll() is None, p.communicate()
        time.sleep(0.05)
    if not processes_marked(sleeper(marker)):
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate(timeout=30)
        raise AssertionError(f"the script's child never started: {out!r} {err!r}")


def finish(p):
    try:
        return p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def test_an_interrupt_stops_the_script_in_the_container(ptc, container):
    marker = "6420532"
    p = spawn_run(ptc, container, f"""
        import subprocess, time
        print("before", flush=True)
        subprocess.Popen(["sleep", "{marker}"])
        time.sleep(60)
        """)
    wait_started(p, marker)
    os.kill(p.pid, signal.SIGINT)
    out, err = finish(p)
    assert p.returncode == 130, (out, err)
    assert b'"status":"interrupted"' in out, out
    assert b"before" in out, out
    assert wait_no_process_marked(sleeper(marker), 10) == []


def test_a_killed_engine_client_ends_the_run_and_the_script(ptc, container):
    # The channel is the engine's client (`podman exec -i`): killing it is the connection
    # dropping. The agent sees its input end and takes the script's tree down with it.
    marker = "6420533"
    p = spawn_run(ptc, container, f"""
        import subprocess, time
        print("before the drop", flush=True)
        subprocess.Popen(["sleep", "{marker}"])
        time.sleep(60)
        """)
    wait_started(p, marker)
    time.sleep(1)  # for the line printed before the marker to cross the channel
    clients = [pid for pid in processes_marked(f"{container.engine}\0exec\0-i\0")
               if pid != p.pid]
    assert clients, "the engine's exec client is not found"
    for pid in clients:
        os.kill(pid, signal.SIGKILL)
    out, err = finish(p)
    assert p.returncode == 1, (out, err)
    assert f"backend '{container.spec}': the channel closed before the script ended".encode() \
        in out, out
    assert b"before the drop" in out, out
    assert wait_no_process_marked(sleeper(marker), 10) == []


def test_doctor_checks_the_container_end_to_end(ptc, container):
    r = ptc.run_ptc(["doctor", "--backend", container.spec], timeout=120)
    assert r.rc == 0, r
    assert container.spec in r.stdout.decode(), r


def test_a_missing_container_is_named(ptc, container):
    spec = f"{container.engine}:ptc-no-such-container"
    r = ptc.run('print("never")', "--backend", spec, timeout=60)
    expect(r, 1, "error")
    assert f"backend '{spec}'" in r.data["error"], r
    assert "no such container" in r.data["error"].lower(), r


def agents_in(container):
    """The command lines of ptc's agents running in the container."""
    r = container.exec("sh", "-c", "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; "
                                   "echo; done 2>/dev/null")
    return [line for line in r.stdout.splitlines() if " agent" in line and "agent-" in line]


def test_a_session_lives_in_the_container_between_cells(ptc, container, mcp):
    container.settle()
    c = mcp("--backend", container.spec, "--remote-cwd", "/srv")
    r = check_result(c.call_code("import socket\nhost = socket.gethostname()\n"
                                 "from hermes_tools import write_file\n"
                                 "write_file('session.txt', 'one')\nprint(host)",
                                 wait=120, session="c"))
    assert r["status"] == "success", r
    host = r["output"].strip()
    r = check_result(c.call_code("from hermes_tools import read_file\n"
                                 "print(host, read_file('session.txt')['content'])",
                                 wait=60, session="c"))
    assert (r["output"], r["cell"]) == (f"{host}      1|one\n", 2), r
    assert container.exec("cat", "/srv/session.txt").stdout == "one"
    assert agents_in(container), "no agent holds the session in the container"
    # The end of the connection ends the session: nothing of it is left in the container.
    c.close_stdin()
    assert c.wait_exit(60) == 0
    end = time.monotonic() + 30
    while agents_in(container) and time.monotonic() < end:
        time.sleep(0.2)
    assert agents_in(container) == []

