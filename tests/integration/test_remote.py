# SPDX-License-Identifier: MIT
"""Remote backends (docs/remote.md) through the real binary: `ptc run --backend exec:...`.

The target is this machine reached through a real channel command (`sh`, which the host
tells to exec `ptc agent`), so every part runs for real: the channel process, the shell,
the agent, the stream between them, the script under the agent's own init, the tools on
the target, the tools answered on the host. The agent is found on the target's PATH: the
tests put the directory of the binary under test first on it.
"""

import json
import os
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from conftest import expect, expect_usage_error, processes_marked, wait_no_process_marked
from fake_agent import FAKE_AGENT_PRELUDE
from web_server import web, web_log_reset  # noqa: F401  (pytest fixtures)


def env_with_agent(ptc):
    """The agent on the target's PATH (the build dir first)."""
    return {"PATH": f"{ptc.bin.parent}:{ptc.env['PATH']}"}


def env_without_agent(ptc):
    """A PATH on which no ptc is found."""
    dirs = [d for d in ptc.env["PATH"].split(":") if d and not (Path(d) / "ptc").exists()]
    return {"PATH": ":".join(dirs)}


def ppid(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("PPid:"):
            return int(line.split()[1])
    return 0


def run_remote(ptc, code, *opts, backend="exec:sh", env=None, timeout=60):
    e = env_with_agent(ptc)
    e.update(env or {})
    return ptc.run(code, "--backend", backend, *opts, env=e, timeout=timeout)


def test_script_and_file_and_terminal_tools_run_on_the_target(ptc):
    target = ptc.path("on-target.txt")
    r = run_remote(ptc, f"""
        from hermes_tools import terminal, write_file, read_file
        print(terminal("echo from-terminal")["output"].strip())
        write_file({str(target)!r}, "one\\ntwo\\n")
        print(read_file({str(target)!r})["content"])
        import sys
        print("to stderr", file=sys.stderr)
        """, "--log")
    expect(r, 0, "success")
    assert r.data["output"] == "from-terminal\n     1|one\n     2|two\n     3|\n", r
    assert r.data["tool_calls_made"] == 3, r
    assert [c["tool"] for c in r.data["tool_calls"]] == ["terminal", "write_file",
                                                          "read_file"], r
    assert all(c["ok"] for c in r.data["tool_calls"]), r
    assert target.read_text() == "one\ntwo\n"


def test_exit_code_and_traceback_come_back(ptc):
    r = run_remote(ptc, """
        print("before")
        raise ValueError("boom from the target")
        """)
    expect(r, 1, "error")
    assert r.data["exit_code"] == 1, r
    assert r.data["output"].startswith("before\n"), r
    assert "ValueError: boom from the target" in r.data["error"], r


def test_web_tools_are_answered_on_the_host(ptc, web):
    # Private URLs are allowed by the host's config only: the agent is never given the web
    # section, so the page can only come back if the host made the call.
    cfg = ptc.write_config("web:\n  allow_private_urls: true\n  timeout: 5\n")
    r = run_remote(ptc, f"""
        from hermes_tools import web_extract
        e = web_extract([{web.site.url('/plain')!r}])["results"][0]
        print(e["error"], "Plain line one" in e["content"])
        """, "--config", cfg, "--log")
    expect(r, 0, "success")
    assert r.data["output"] == "None True\n", r
    assert [c["tool"] for c in r.data["tool_calls"]] == ["web_extract"], r
    # The same script run by the agent's own web tool would be refused (private address).
    r = run_remote(ptc, f"""
        from hermes_tools import web_extract
        print(web_extract([{web.site.url('/plain')!r}])["results"][0]["error"])
        """)
    expect(r, 0, "success")
    assert "private" in r.data["output"], r


def test_concurrent_calls_of_target_and_host_tools(ptc, web):
    cfg = ptc.write_config("web:\n  allow_private_urls: true\n  timeout: 5\n")
    r = run_remote(ptc, f"""
        from concurrent.futures import ThreadPoolExecutor
        from hermes_tools import terminal, web_extract
        def one(i):
            if i % 2:
                return terminal(f"echo t{{i}}")["output"].strip()
            e = web_extract([{web.site.url('/plain')!r}])["results"][0]
            return f"w{{i}}" if "Plain line one" in e["content"] else repr(e)
        with ThreadPoolExecutor(8) as ex:
            print(" ".join(ex.map(one, range(16))))
        """, "--config", cfg, "--max-tool-calls", "100")
    expect(r, 0, "success")
    want = " ".join(f"t{i}" if i % 2 else f"w{i}" for i in range(16))
    assert r.data["output"] == want + "\n", r
    assert r.data["tool_calls_made"] == 16, r


def test_large_output_is_truncated_and_spilled_on_the_host(ptc):
    r = run_remote(ptc, 'print("x" * 10_000_000)')
    expect(r, 0, "success")
    assert r.data["stdout_truncated"] is True, r.data.keys()
    assert r.data["stdout_bytes_total"] == 10_000_001, r.data["stdout_bytes_total"]
    spill = Path(r.data["stdout_spill_path"])
    assert str(spill).startswith(str(ptc.xdg_cache)), spill
    assert spill.stat().st_size == 5_000_000


def test_timeout_stops_the_script_and_everything_it_started(ptc):
    marker = "975311"
    t = time.monotonic()
    r = run_remote(ptc, f"""
        import subprocess, time
        subprocess.Popen(["sleep", "{marker}"])
        print("started", flush=True)
        time.sleep(60)
        """, "--timeout", "2")
    elapsed = time.monotonic() - t
    expect(r, 124, "timeout")
    assert r.data["output"].startswith("started\n"), r
    assert "timed out after 2s" in r.data["error"], r
    assert elapsed < 25, elapsed  # hang guard: the script sleeps 60 s
    assert wait_no_process_marked(marker, 10) == []


def test_interrupt_reaches_the_target(ptc):
    flag = ptc.workdir / "running"
    e = ptc.make_env(env_with_agent(ptc))
    p = subprocess.Popen([str(ptc.bin), "run", "--backend", "exec:sh", "-c", textwrap.dedent(f"""
        import time, pathlib
        try:
            pathlib.Path({str(flag)!r}).write_text("x")
            time.sleep(60)
        finally:
            print("finally ran", flush=True)
        """)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e, cwd=str(ptc.workdir),
        start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while not flag.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert flag.exists(), "the script never started"
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 130, (out, err)
    assert b'"status":"interrupted"' in out, out
    assert b"finally ran" in out, out


def test_a_lost_channel_ends_the_run_with_an_error_and_leaves_nothing(ptc):
    flag = ptc.workdir / "running"
    marker = "864213"
    e = ptc.make_env(env_with_agent(ptc))
    p = subprocess.Popen([str(ptc.bin), "run", "--backend", "exec:sh", "-c", textwrap.dedent(f"""
        import pathlib, subprocess, time
        subprocess.Popen(["sleep", "{marker}"])
        pathlib.Path({str(flag)!r}).write_text("x")
        print("before the loss", flush=True)
        time.sleep(60)
        """)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e, cwd=str(ptc.workdir),
        start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while not flag.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert flag.exists(), "the script never started"
        # `ptc agent`, and its script's init (a clone of it: the same command line).
        agents = [pid for pid in processes_marked(str(ptc.home))
                  if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[1:2] == [b"agent"]]
        agents = [pid for pid in agents if ppid(pid) not in agents]
        assert len(agents) == 1, agents
        os.kill(agents[0], signal.SIGKILL)
        out, err = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 1, (out, err)
    assert b'"status":"error"' in out, out
    assert b"backend 'exec:sh': the channel closed before the script ended" in out, out
    assert b"before the loss" in out, out
    assert wait_no_process_marked(marker, 10) == []


def test_a_banner_before_the_stream_is_skipped(ptc):
    r = run_remote(ptc, 'print("ok")',
                   backend="exec:sh -c 'echo Welcome to the target; echo rc noise >&2; exec sh'")
    expect(r, 0, "success")
    assert r.data["output"] == "ok\n", r


def shipped_agent(ptc):
    """(path, sha256) of the static agent beside the binary, or a skip: a sanitizer build
    has none (meson.build)."""
    agent, sha = ptc.bin.parent / "ptc-agent", ptc.bin.parent / "ptc-agent.sha256"
    if not agent.exists():
        pytest.skip(f"no static ptc-agent beside {ptc.bin} (a sanitizer build, or static "
                    "archives missing)")
    return agent, sha.read_text().split()[0]


def test_the_agent_is_shipped_to_a_target_without_ptc_and_cached(ptc):
    agent, sha = shipped_agent(ptc)
    cached = ptc.xdg_cache / "ptc" / f"agent-{sha}"
    code = """
        from hermes_tools import terminal
        print(terminal("echo shipped")["output"].strip())
        """
    r = ptc.run(code, "--backend", "exec:sh", env=env_without_agent(ptc))
    expect(r, 0, "success")
    assert r.data["output"] == "shipped\n", r
    assert cached.read_bytes() == agent.read_bytes()
    assert oct(cached.stat().st_mode & 0o777) == "0o700"
    before = cached.stat()
    r = ptc.run(code, "--backend", "exec:sh", env=env_without_agent(ptc))
    expect(r, 0, "success")
    after = cached.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns), \
        "the cached agent was sent again"
    # No temporary copy left beside it (the host's own cache files share the directory here).
    assert [p.name for p in cached.parent.glob("agent-*")] == [cached.name]


def test_a_target_of_another_architecture_gets_no_agent(ptc):
    shipped_agent(ptc)
    fake = ptc.path("fake-bin")
    fake.mkdir()
    (fake / "uname").write_text("#!/bin/sh\necho riscv64\n")
    (fake / "uname").chmod(0o755)
    env = env_without_agent(ptc)
    env["PATH"] = f"{fake}:{env['PATH']}"
    r = ptc.run('print("never")', "--backend", "exec:sh", env=env)
    expect(r, 1, "error")
    assert "ptc's agent did not start on the target" in r.data["error"], r
    assert "the target is riscv64; this ptc's agent is for " in r.data["error"], r


def test_no_agent_on_the_target_says_so(ptc):
    # With an agent to ship, a cache that cannot be written stops it; without one, a
    # target without ptc on its PATH.
    env = env_without_agent(ptc)
    shipping = (ptc.bin.parent / "ptc-agent").exists()
    if shipping:
        env["XDG_CACHE_HOME"] = "/proc/no-such-dir"
    r = ptc.run('print("never")', "--backend", "exec:sh", env=env)
    expect(r, 1, "error")
    err = r.data["error"]
    assert err.startswith("backend 'exec:sh': ptc's agent did not start on the target: "), err
    assert "the channel closed before the remote stream started" in err, err
    assert ("cannot create directory" if shipping else "not found") in err, err


def test_a_channel_that_never_answers_ends_at_the_deadline(ptc):
    t = time.monotonic()
    r = run_remote(ptc, 'print("never")', "--timeout", "2", backend="exec:cat")
    expect(r, 1, "error")
    assert time.monotonic() - t < 25  # hang guard: the channel never answers
    assert r.data["error"] == ("backend 'exec:cat': ptc's agent did not start on the target: "
                               "no answer within 2 s"), r


def test_a_channel_that_dies_at_once(ptc):
    r = run_remote(ptc, 'print("never")', backend="exec:sh -c 'echo cannot connect >&2; exit 255'")
    expect(r, 1, "error")
    assert "the channel closed before the remote stream started" in r.data["error"], r
    assert '(the channel\'s stderr: "cannot connect")' in r.data["error"], r


def test_a_channel_that_prints_garbage_forever_is_refused(ptc):
    r = run_remote(ptc, 'print("never")', "--timeout", "20", backend="exec:yes")
    expect(r, 1, "error")
    assert "the remote stream did not start within 64 KiB" in r.data["error"], r
    assert 'instead, starting: "y\\x0ay\\x0ay' in r.data["error"], r


def test_secrets_of_the_host_do_not_reach_the_target(ptc):
    r = run_remote(ptc, """
        import os
        from hermes_tools import terminal
        print("SERVICE_API_TOKEN" in os.environ,
              "SERVICE_API_TOKEN" in terminal("env")["output"])
        """, env={"SERVICE_API_TOKEN": "tok-8c1e5d0b9a7f4e3d2c1b"})
    expect(r, 0, "success")
    assert r.data["output"] == "False False\n", r


def test_a_script_that_is_not_utf8_is_refused_with_the_reason(ptc):
    p = ptc.path("latin1.py")
    p.write_bytes(b"# -*- coding: latin-1 -*-\nprint('caf\xe9')\n")
    r = ptc.run_ptc(["run", "--backend", "exec:sh", str(p)], env=env_with_agent(ptc))
    assert r.rc == 3, r
    assert "a remote run takes a UTF-8 script" in r.stderr, r


@pytest.mark.parametrize("spec,words", [
    ("ssh:", ["--backend", "nothing after 'ssh:'"]),
    ("docker:--privileged", ["--backend", "the container must be"]),
    ("exec:a; b", ["--backend", "takes one command"]),
    ("ftp:x", ["--backend", "unknown (allowed: local, ssh:"]),
])
def test_bad_backend_specs_are_usage_errors(ptc, spec, words):
    expect_usage_error(ptc.run('print(1)', "--backend", spec), *words)


def test_backend_in_the_config_file(ptc):
    cfg = ptc.write_config("code_execution:\n  backend: exec:sh\n")
    r = ptc.run('print("via config")', "--config", cfg, env=env_with_agent(ptc))
    expect(r, 0, "success")
    assert r.data["output"] == "via config\n", r
    bad = ptc.write_config("code_execution:\n  backend: 'kubectl:Pod'\n", name="bad.yaml")
    r = ptc.run('print(1)', "--config", bad)
    expect_usage_error(r, "bad.yaml:2", "code_execution.backend", "the pod must be")
    r = ptc.run_ptc(["run", "--help"])
    assert b"--backend SPEC" in r.stdout, r
    pool = ptc.write_config("code_execution:\n  backend:\n    - exec:sh\n    - 'ssh:a b'\n",
                            name="pool.yaml")
    expect_usage_error(ptc.run('print(1)', "--config", pool), "pool.yaml:4",
                       "code_execution.backend[1]", "the host must be a name")
    pool = ptc.write_config("code_execution:\n  backend: [exec:sh, local]\n", name="pool2.yaml")
    expect_usage_error(ptc.run('print(1)', "--config", pool), "code_execution.backend[1]",
                       "'local' cannot be one")


def test_remote_cwd_is_the_scripts_directory_on_the_target(ptc):
    there = ptc.path("project-on-target")
    there.mkdir()
    r = run_remote(ptc, """
        import os
        from hermes_tools import terminal, write_file, read_file
        print(os.getcwd())
        print(terminal("pwd")["output"].strip())
        write_file("relative.txt", "here\\n")
        print(read_file("relative.txt")["content"])
        """, "--remote-cwd", str(there))
    expect(r, 0, "success")
    assert r.data["output"] == f"{there}\n{there}\n     1|here\n     2|\n", r
    assert (there / "relative.txt").read_text() == "here\n"
    # Relative: from where the channel's shell starts (here the host's --cwd).
    r = run_remote(ptc, "import os; print(os.getcwd())", "--remote-cwd",
                   "project-on-target", "--cwd", str(ptc.tmp))
    expect(r, 0, "success")
    assert r.data["output"] == f"{there}\n", r
    # The file's key, and null for the default.
    cfg = ptc.write_config(f"code_execution:\n  backend: exec:sh\n  remote_cwd: {there}\n")
    r = ptc.run("import os; print(os.getcwd())", "--config", cfg, env=env_with_agent(ptc))
    expect(r, 0, "success")
    assert r.data["output"] == f"{there}\n", r
    cfg = ptc.write_config("code_execution:\n  backend: exec:sh\n  remote_cwd: null\n",
                           name="null.yaml")
    r = ptc.run("import os; print(os.getcwd())", "--config", cfg, env=env_with_agent(ptc))
    expect(r, 0, "success")
    assert r.data["output"] == f"{ptc.workdir}\n", r


def test_a_remote_cwd_the_target_lacks_is_named(ptc):
    r = run_remote(ptc, 'print("never")', "--remote-cwd", "/nonexistent-ptc-dir")
    expect(r, 1, "error")
    assert r.data["error"] == (
        "backend 'exec:sh': the agent on the target failed: code_execution.remote_cwd: "
        "cannot use '/nonexistent-ptc-dir': No such file or directory"), r


def test_remote_cwd_without_a_remote_backend_is_a_usage_error(ptc):
    expect_usage_error(ptc.run('print(1)', "--remote-cwd", "/srv"), "--remote-cwd",
                       "the backend is local", "--cwd")
    r = ptc.run_ptc(["mcp", "--remote-cwd", "/srv"], input="")
    assert r.rc == 2 and "--remote-cwd: a directory of a remote target" in r.stderr, r
    cfg = ptc.write_config("code_execution:\n  remote_cwd: ''\n")
    expect_usage_error(ptc.run('print(1)', "--config", cfg), "code_execution.remote_cwd",
                       "a non-empty string")


@pytest.mark.parametrize("spec,argv", [
    ("docker:web_1", "exec -i web_1 sh"),
    ("podman:3f2a9c", "exec -i 3f2a9c sh"),
    ("kubectl:ci/runner-7d9f:tools", "exec -i -n ci runner-7d9f -c tools -- sh"),
    ("apptainer:sim", "exec instance://sim sh"),
])
def test_container_backends_run_their_engine_as_documented(ptc, spec, argv):
    # No container engine runs on every machine of this kind (docs/remote.md, "Tests"): a
    # stand-in of the engine's command records its arguments and gives a shell, as
    # `docker exec -i CONTAINER sh` does; the rest of the run is real.
    fake = ptc.path("engines")
    fake.mkdir()
    log = ptc.path("engine-argv")
    name = spec.split(":")[0]
    (fake / name).write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" > {log}\nexec sh\n')
    (fake / name).chmod(0o755)
    env = env_with_agent(ptc)
    env["PATH"] = f"{fake}:{env['PATH']}"
    r = ptc.run('from hermes_tools import terminal\nprint(terminal("echo in")["output"])',
                "--backend", spec, env=env)
    expect(r, 0, "success")
    assert r.data["output"] == "in\n", r
    assert log.read_text() == argv + "\n"


def test_a_missing_engine_is_named(ptc):
    import shutil
    missing = [k for k in ("apptainer", "podman", "docker", "kubectl") if not shutil.which(k)]
    if not missing:
        pytest.skip("every container engine's command is installed here")
    spec = f"{missing[0]}:box"
    r = ptc.run('print(1)', "--backend", spec)
    assert r.rc == 3, r
    assert f"backend '{spec}': '{missing[0]}' is not installed (not found on PATH)" in \
        r.stderr, r


def test_kubectl_against_a_real_cluster(ptc):
    # Runs where a cluster is reachable and PTC_TEST_KUBECTL_POD names a pod to use
    # ([NAMESPACE/]POD[:CONTAINER], with sh and python3 in it); counted as skipped elsewhere.
    import shutil
    pod = os.environ.get("PTC_TEST_KUBECTL_POD")
    if not shutil.which("kubectl"):
        pytest.skip("kubectl is not installed")
    if not pod:
        pytest.skip("PTC_TEST_KUBECTL_POD is not set (no cluster pod to run in)")
    r = ptc.run('from hermes_tools import terminal\nprint(terminal("echo in-pod")["output"])',
                "--backend", f"kubectl:{pod}",
                env={"KUBECONFIG": os.environ.get("KUBECONFIG", ""),
                     "HOME": os.environ.get("HOME", "/root")}, timeout=120)
    expect(r, 0, "success")
    assert r.data["output"] == "in-pod\n", r


def test_doctor_checks_a_backend_end_to_end(ptc):
    r = ptc.run_ptc(["doctor", "--backend", "exec:sh"], env=env_with_agent(ptc), timeout=90)
    assert r.rc == 0, r
    out = r.stdout.decode()
    tail = out[out.index("backend: exec:sh\n"):].splitlines()
    assert tail[1] == "  channel   sh", out
    assert tail[2].startswith("  target    Linux ") and ", Python 3." in tail[2], out
    assert tail[3] == "  terminal  ok", out
    assert tail[-1].startswith("  time      ") and tail[-1].endswith(" ms (connect, find or "
                                                                      "ship the agent, run a "
                                                                      "script)"), out
    r = ptc.run_ptc(["doctor", "--backend", "exec:sh -c 'echo no route >&2; exit 255'"],
                    timeout=90)
    assert r.rc == 1, r
    assert "  FAILED    backend 'exec:sh -c 'echo no route >&2; exit 255'': ptc's agent did " \
           "not start on the target" in r.stdout.decode(), r
    assert '(the channel\'s stderr: "no route")' in r.stdout.decode(), r
    assert "the check of 1 backend failed" in r.stderr, r


def test_the_host_keeps_the_budget_of_host_tools_too(ptc, web):
    cfg = ptc.write_config("web:\n  allow_private_urls: true\n  timeout: 5\n")
    r = run_remote(ptc, f"""
        from hermes_tools import web_extract
        errs = [web_extract([{web.site.url('/plain')!r}]).get("error") for _ in range(3)]
        print(errs)
        """, "--config", cfg, "--max-tool-calls", "2")
    expect(r, 0, "success")
    assert r.data["output"].startswith("[None, None, 'Tool call limit reached (2)"), r


HOSTILE_AGENT = FAKE_AGENT_PRELUDE + r'''
inp.readline()                      # the host's command for the shell
out.write(MAGIC)
frame(1, {"protocol": 1, "ptc": "hostile", "features": ["policy"]})
assert inp.read(8) == MAGIC
read_frame()                        # hello
read_frame()                        # run
HOSTFILE
calls = [{"id": 1, "tool": "terminal", "args": {"command": "touch " + hostfile}},
         {"id": 2, "tool": "no_such_tool", "args": {}}]
calls += [{"id": 3 + i, "tool": "web_extract", "args": {"urls": [URL]}} for i in range(3)]
for c in calls:
    frame(5, c)
answers = {}
while len(answers) < len(calls):
    t, a = read_frame()
    if t == 6:
        answers[a["id"]] = a["result"].get("error")
frame(3, (json.dumps([answers[c["id"]] for c in calls]) + "\n").encode())
frame(8, {"status": "success", "exit_code": 0, "tool_calls_made": 1000})
inp.read()
'''


def test_a_hostile_agent_cannot_run_host_tools_beyond_what_runs_on_the_host(ptc, web):
    # The target is not trusted: an agent there that asks the host to run a terminal
    # command, a tool that does not exist, or more host calls than the budget gets errors.
    hostfile = ptc.path("must-not-exist")
    agent = ptc.path("hostile_agent.py")
    agent.write_text(HOSTILE_AGENT.replace(
        "HOSTFILE", f"hostfile = {str(hostfile)!r}\nURL = {web.site.url('/plain')!r}"))
    cfg = ptc.write_config("web:\n  allow_private_urls: true\n  timeout: 5\n")
    r = ptc.run('print("never runs")', "--backend", f"exec:python3 {agent}", "--config", cfg,
                "--max-tool-calls", "2")
    expect(r, 0, "success")
    errors = json.loads(r.data["output"])
    assert errors[0] == "this tool does not run on the host", errors
    assert errors[1] == "this tool does not run on the host", errors
    assert errors[2] is None and errors[3] is None, errors
    assert errors[4].startswith("Tool call limit reached (2)"), errors
    assert not hostfile.exists()


def test_trace_of_a_remote_run(ptc, web):
    """--trace on a remote run: the channel, the handshake, the script on the target, and
    the calls answered on the host on their own threads."""
    cfg = ptc.write_config("web:\n  allow_private_urls: true\n  timeout: 5\n")
    path = ptc.path("remote-trace.json")
    r = run_remote(ptc, f"""
        from hermes_tools import terminal, web_extract
        terminal("echo on-target")
        web_extract([{web.site.url('/plain')!r}])
        print("ok")
        """, "--config", cfg, "--trace", str(path))
    expect(r, 0, "success")
    spans = [e for e in json.loads(path.read_text())["traceEvents"] if e["ph"] == "X"]
    by = {e["name"]: e for e in spans}
    assert {"channel", "handshake", "script", "result", "teardown", "run"} <= by.keys(), by
    assert by["script"]["args"] == {"on": "target"}, by["script"]
    assert by["channel"]["ts"] <= by["handshake"]["ts"], by
    assert by["handshake"]["ts"] + by["handshake"]["dur"] <= by["script"]["ts"] + 1, by
    host = [e for e in spans if e["cat"] == "tool"]
    assert [(e["name"], e["args"]) for e in host] == [
        ("tool: web_extract", {"on": "host", "ok": True})], host
    script = by["script"]
    assert script["ts"] <= host[0]["ts"] <= script["ts"] + script["dur"], (script, host)
    assert host[0]["tid"] != script["tid"]
