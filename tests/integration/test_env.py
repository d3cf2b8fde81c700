# SPDX-License-Identifier: MIT
"""The child's environment, secrets, and the two modes (docs/contracts.md 6 and 8,
docs/seed.md 1.7-1.9, 3.2 and 3.3)."""

import base64
import json
import os
import shutil
import subprocess
import urllib.parse

import pytest

from conftest import expect

DUMP_ENV = "import os, json; print(json.dumps(dict(os.environ)))"

# Secret-named variables (seed list plus ptc's DSN, WEBHOOK, CREDS, BEARER,
# APIKEY). Several start with a safe prefix (PATH, HOME, XDG_, LANG ...), so
# only the secret-substring rule can drop them.
SECRETS = {
    "OPENAI_API_KEY": "sk-proj-openaivalue0001",
    "ANTHROPIC_API_KEY": "anthropic-value-0002",
    "FIRECRAWL_API_KEY": "firecrawl-value-0003",
    "GITHUB_TOKEN": "github-token-value-0004",
    "MODAL_TOKEN_ID": "modal-token-id-0005",
    "MODAL_TOKEN_SECRET": "modal-token-secret-0006",
    "DB_PASSWORD": "db-password-value-0007",
    "MY_PASSWD": "my-passwd-value-0008",
    "AUTH_CREDENTIAL": "auth-credential-0009",
    "MY_SECRET": "my-secret-value-0010",
    "VAULT_CREDENTIAL": "vault-credential-0011",
    "LDAP_PASSWD": "ldap-passwd-value-0012",
    "AUTH_TOKEN": "auth-token-value-0013",
    "XDG_SENTRY_DSN": "sentry-dsn-value-0014",
    "HOME_SLACK_WEBHOOK": "slack-webhook-0015",
    "LANG_GCP_CREDS": "gcp-creds-value-0016",
    "USER_BEARER": "user-bearer-value-0017",
    "TERM_SERVICEAPIKEY": "service-apikey-0018",
    "XDG_lower_token": "lower-token-value-0019",
    "PATH_PRIVATE_KEY": "path-key-value-0020",
    "LC_SESSION_AUTH": "lc-auth-value-0021",
}

KEPT = {
    "PATHOLOGY": "kept-1",
    "HOMEBREW_PREFIX": "kept-2",
    "LANGUAGE": "kept-3",
    "TERM_PROGRAM": "kept-4",
    "XDG_FOO": "kept-5",
    "LC_ALL": "C.UTF-8",
    "USER": "tester",
    "LOGNAME": "tester",
    "SHELL": "/bin/sh",
    "TERM": "dumb",
    "CONDA_SOMETHING": "kept-6",
    "HERMES_FOO": "kept-7",
}

DROPPED = {
    "DISPLAY": ":0",
    "SSH_AUTH_SOCK": "/tmp/agent.sock",
    "KEYBOARD": "us",
    "FOO_BAR": "plain-but-unknown-value",
    "TZ": "Europe/Paris",
    "PTC_TIMEZONE_X": "x",
    "EDITOR": "vi",
}


def child_env(ptc, *opts, env=None):
    r = ptc.run(DUMP_ENV, *opts, env=env)
    expect(r, 0, "success")
    return r.output_json()


@pytest.mark.parametrize("mode", ["project", "strict"])
def test_secrets_absent_from_child(ptc, mode):
    e = child_env(ptc, "--mode", mode, env=SECRETS)
    leaked = sorted(set(SECRETS) & set(e))
    assert not leaked, f"secret-named variables reached the child: {leaked}"


def test_secret_values_never_in_output(ptc):
    r = ptc.run(DUMP_ENV + "\nimport subprocess\n"
                "print(subprocess.run(['env'], capture_output=True, text=True).stdout)",
                env=SECRETS)
    expect(r, 0, "success")
    for name, value in SECRETS.items():
        assert value not in r.output, name


def test_safe_prefixes_kept(ptc):
    e = child_env(ptc, env=KEPT)
    for name, value in KEPT.items():
        assert e.get(name) == value, (name, e.get(name))


def test_unknown_names_dropped(ptc):
    e = child_env(ptc, env=DROPPED)
    leaked = sorted(set(DROPPED) & set(e))
    assert not leaked, leaked


def test_path_and_home_present(ptc):
    e = child_env(ptc, "--isolation", "none")
    assert e["PATH"] == ptc.env["PATH"]
    assert e["HOME"] == str(ptc.home)
    assert e["TMPDIR"] == str(ptc.tmpdir)


@pytest.mark.parametrize("level", ["auto", "strict"])
def test_confined_home_and_tmpdir(ptc, level):
    """Confined, the host's home is not in the script's view: HOME and TMPDIR are the
    private /tmp, unless HOME is inside the working directory."""
    e = child_env(ptc, "--isolation", level)
    assert e["PATH"] == ptc.env["PATH"]
    assert e["HOME"] == "/tmp" and e["TMPDIR"] == "/tmp", e
    inside = ptc.workdir / "home"
    e = child_env(ptc, "--isolation", level, env={"HOME": str(inside)})
    assert e["HOME"] == str(inside) and e["TMPDIR"] == "/tmp", e


def test_ptc_variables_present(ptc):
    e = child_env(ptc)
    sock = e.get("PTC_RPC_SOCKET")
    assert sock and os.path.isabs(sock), e
    assert e.get("PTC_RPC_TOKEN") and len(e["PTC_RPC_TOKEN"]) >= 16, e
    assert e.get("PYTHONDONTWRITEBYTECODE") == "1"
    # backslashreplace: printing a non-UTF-8 file name shows its escape (docs/protocol.md).
    assert e.get("PYTHONIOENCODING") == "utf-8:backslashreplace"
    assert e.get("PYTHONUTF8") == "1"


def test_token_differs_per_run(ptc):
    a = child_env(ptc)["PTC_RPC_TOKEN"]
    b = child_env(ptc)["PTC_RPC_TOKEN"]
    assert a != b


def test_socket_is_private(ptc):
    r = ptc.run("""
        import os, stat, json
        s = os.environ['PTC_RPC_SOCKET']
        st = os.stat(s)
        d = os.stat(os.path.dirname(s))
        print(json.dumps({"sock": stat.S_ISSOCK(st.st_mode),
                          "dir_mode": d.st_mode & 0o777,
                          "sock_mode": st.st_mode & 0o777}))
        """)
    expect(r, 0, "success")
    d = r.output_json()
    assert d["sock"] is True
    # The socket lives in a private 0700 directory (or is itself 0600).
    assert d["dir_mode"] & 0o077 == 0 or d["sock_mode"] & 0o077 == 0, d


def test_pythonpath_staging_first_then_inherited(ptc):
    extra = str(ptc.path("inherited-pp"))
    r = ptc.run("""
        import os, json, hermes_tools
        print(json.dumps({"pp": os.environ.get("PYTHONPATH", ""),
                          "mod": os.path.dirname(os.path.abspath(hermes_tools.__file__))}))
        """, env={"PYTHONPATH": extra})
    expect(r, 0, "success")
    d = r.output_json()
    parts = d["pp"].split(":")
    assert os.path.realpath(parts[0]) == os.path.realpath(d["mod"]), d
    assert extra in parts[1:], d


def test_timezone_from_ptc_timezone(ptc):
    e = child_env(ptc, env={"PTC_TIMEZONE": "America/New_York"})
    assert e.get("TZ") == "America/New_York", e.get("TZ")
    assert "PTC_TIMEZONE" not in e


def test_timezone_other_zone(ptc):
    e = child_env(ptc, env={"PTC_TIMEZONE": "Asia/Kolkata"})
    assert e.get("TZ") == "Asia/Kolkata"


def test_no_timezone_means_no_tz(ptc):
    e = child_env(ptc, env={"TZ": "Europe/Berlin"})
    assert "TZ" not in e, e.get("TZ")


def test_timezone_trimmed_and_empty(ptc):
    e = child_env(ptc, env={"PTC_TIMEZONE": "  Asia/Tokyo  "})
    assert e.get("TZ") == "Asia/Tokyo", e.get("TZ")
    e = child_env(ptc, env={"PTC_TIMEZONE": "   "})
    assert "TZ" not in e and "PTC_TIMEZONE" not in e


def test_passthrough_keeps_secret_named_variable(ptc):
    cfg = ptc.write_config("""
        terminal:
          env_passthrough: [TENOR_API_KEY]
        """)
    r = ptc.run(DUMP_ENV, "--config", cfg,
                env={"TENOR_API_KEY": "tenor-value-123456", "OTHER_API_KEY": "other-567890"})
    expect(r, 0, "success")
    e = r.output_json()
    assert e.get("TENOR_API_KEY") == "tenor-value-123456", e
    assert "OTHER_API_KEY" not in e


def test_passthrough_reaches_terminal_too(ptc):
    cfg = ptc.write_config("terminal:\n  env_passthrough: [TENOR_API_KEY]\n")
    r = ptc.run("""
        from hermes_tools import terminal
        print(terminal('printf "%s" "$TENOR_API_KEY"')['output'])
        """, "--config", cfg, env={"TENOR_API_KEY": "tenor-term-123456"})
    expect(r, 0, "success")
    assert r.output == "tenor-term-123456\n", r


def test_stdin_is_dev_null(ptc):
    r = ptc.run("""
        import os, sys
        print(repr(sys.stdin.read()), os.readlink('/proc/self/fd/0'))
        """)
    expect(r, 0, "success")
    assert r.output == "'' /dev/null\n", r


def test_child_is_session_leader(ptc):
    r = ptc.run("import os; print(os.getsid(0) == os.getpid(), os.getpgrp() == os.getpid())")
    expect(r, 0, "success")
    assert r.output == "True True\n", r


def test_utf8_stdio(ptc):
    r = ptc.run("import sys; print(sys.stdout.encoding, sys.flags.utf8_mode)",
                env={"LANG": "C", "LC_ALL": "C"})
    expect(r, 0, "success")
    assert r.output.lower().replace("-", "") == "utf8 1\n", r


def test_home_not_overridden(ptc):
    e = child_env(ptc, env={"HOME": str(ptc.workdir)})
    assert e["HOME"] == str(ptc.workdir)


# --- value-based redaction --------------------------------------------------

VALUE = "s3cr3t/VAL+ue=42&xy"  # 19 bytes: base64 padded; needs URL-encoding


def encodings(v):
    b = v.encode()
    return {
        "raw": v,
        "b64": base64.b64encode(b).decode(),
        "b64_nopad": base64.b64encode(b).decode().rstrip("="),
        "b64url": base64.urlsafe_b64encode(b).decode(),
        "hex": b.hex(),
        "HEX": b.hex().upper(),
        "url": urllib.parse.quote(v, safe=""),
        "url_plus": urllib.parse.quote_plus(v),
    }


def test_scrubbed_secret_value_redacted_in_all_encodings(ptc):
    enc = encodings(VALUE)
    lines = "\n".join(f"print({k!r}, {v!r})" for k, v in enc.items())
    r = ptc.run(lines, env={"MY_SERVICE_TOKEN": VALUE})
    expect(r, 0, "success")
    for k, v in enc.items():
        assert v not in r.output, (k, r.output)
    got = dict(line.split(" ", 1) for line in r.output.splitlines())
    for k in enc:
        assert "***" in got.get(k, ""), (k, r.output)


def test_short_secret_value_not_redacted(ptc):
    r = ptc.run("print('value:', 'abc1234')", env={"SHORT_TOKEN": "abc1234"})
    expect(r, 0, "success")
    assert r.output == "value: abc1234\n", r


def test_dropped_non_secret_value_not_redacted(ptc):
    r = ptc.run("print('plain-but-unknown-value')", env={"FOO_BAR": "plain-but-unknown-value"})
    expect(r, 0, "success")
    assert r.output == "plain-but-unknown-value\n", r


def test_secret_value_redacted_in_stderr_and_error(ptc):
    r = ptc.run("import sys; sys.stderr.write('leak: ' + 'abcdefgh' + 'ijklmnop'); sys.exit(1)",
                env={"MY_PASSWORD": "abcdefghijklmnop"})
    expect(r, 1, "error")
    assert "abcdefghijklmnop" not in r.data["error"] and "abcdefghijklmnop" not in r.output
    assert "***" in r.data["error"], r


def test_secret_value_redacted_in_tool_results_seen_by_script(ptc):
    r = ptc.run("""
        from hermes_tools import terminal, read_file, write_file
        v = 'tool' + '-result-secret-99'
        t = terminal("echo tool-result-secret-99")
        write_file('s.txt', 'inside tool-result-secret-99 file\\n')
        f = read_file('s.txt')
        print(v in t['output'], '***' in t['output'], v in f['content'])
        """, env={"DEPLOY_SECRET": "tool-result-secret-99"})
    expect(r, 0, "success")
    assert r.output == "False True False\n", r


def test_secret_not_in_terminal_environment(ptc):
    r = ptc.run("""
        from hermes_tools import terminal
        print(terminal('env | grep -c "^GITHUB_TOKEN=" || true')['output'])
        """, env={"GITHUB_TOKEN": "gh-value-abcdefgh"})
    expect(r, 0, "success")
    assert r.output.strip() == "0", r


def test_ptc_environ_does_not_hold_secret_values(ptc):
    # The script's parent is ptc: neither the script nor a terminal command
    # (whose shell is also started by ptc) may read a secret back from
    # /proc/<ptc>/environ. Probed with grep -c / a Python membership test so
    # value redaction of the output cannot hide a leak.
    r = ptc.run("""
        import os, json
        from hermes_tools import terminal
        ppid = os.getppid()
        try:
            with open(f'/proc/{ppid}/environ', 'rb') as f:
                env = f.read()
            direct = b'proc-environ-secret-' in env
        except OSError:
            direct = False
        comm = open(f'/proc/{ppid}/comm').read().strip()
        t = terminal(f"cat /proc/{ppid}/environ 2>/dev/null | tr '\\\\0' '\\\\n' "
                     f"| grep -c 'proc-environ-secret-' || true")
        t2 = terminal("cat /proc/$PPID/environ 2>/dev/null | tr '\\\\0' '\\\\n' "
                      "| grep -c 'proc-environ-secret-' || true")
        print(json.dumps({"direct": direct, "comm": comm,
                          "via_terminal": t['output'].strip(),
                          "via_ppid": t2['output'].strip()}))
        """, env={"MY_API_KEY": "proc-environ-secret-1234", "OPENAI_API_KEY":
                  "proc-environ-secret-5678"})
    expect(r, 0, "success")
    d = r.output_json()
    assert d["comm"].startswith("ptc"), d
    assert d["direct"] is False, d
    assert d["via_terminal"] in ("0", ""), d
    assert d["via_ppid"] in ("0", ""), d


# --- modes --------------------------------------------------------------------

CWD_INFO = """
import os, sys, json, hermes_tools
print(json.dumps({"cwd": os.getcwd(), "exe": sys.executable, "prefix": sys.prefix,
                  "mod": os.path.dirname(os.path.abspath(hermes_tools.__file__)),
                  "sock": os.environ.get("PTC_RPC_SOCKET", "")}))
"""


def info(ptc, *opts, **kw):
    r = ptc.run(CWD_INFO, *opts, **kw)
    expect(r, 0, "success")
    return r.output_json()


def test_default_mode_is_project_cwd_is_ptc_cwd(ptc):
    d = info(ptc)
    assert os.path.realpath(d["cwd"]) == os.path.realpath(ptc.workdir), d


def test_project_mode_cwd_flag(ptc):
    other = ptc.path("other")
    other.mkdir()
    d = info(ptc, "--mode", "project", "--cwd", other)
    assert os.path.realpath(d["cwd"]) == os.path.realpath(other), d


def test_project_mode_import_works_from_foreign_cwd(ptc):
    # Not / (refused under auto: test_workdir.py): a directory with nothing of ptc's.
    foreign = ptc.path("foreign")
    foreign.mkdir()
    d = info(ptc, "--cwd", foreign)
    assert d["cwd"] == str(foreign), d


def test_strict_mode_cwd_is_private_staging_dir(ptc):
    r = ptc.run(CWD_INFO + """
import stat
st = os.stat('.')
print(oct(st.st_mode & 0o777))
""", "--mode", "strict")
    expect(r, 0, "success")
    first, mode = r.output.rstrip("\n").split("\n")
    d = json.loads(first)
    assert os.path.basename(d["cwd"]).startswith("ptc-"), d
    assert os.path.realpath(d["cwd"]) == os.path.realpath(d["mod"]), d
    assert int(mode, 8) & 0o077 == 0, mode
    assert not os.path.realpath(d["cwd"]).startswith(os.path.realpath(ptc.workdir)), d
    # removed once ptc returns
    assert not os.path.exists(d["cwd"]), d


def test_staging_dir_removed_in_project_mode_too(ptc):
    d = info(ptc)
    assert not os.path.exists(d["mod"]), d


def test_staging_dir_fresh_per_run(ptc):
    a = info(ptc, "--mode", "strict")["cwd"]
    b = info(ptc, "--mode", "strict")["cwd"]
    assert a != b


def real_python3(ptc):
    """python3 on PATH, resolved the way ptc must: through launcher shims
    (pyenv, asdf) to the interpreter's own sys.executable."""
    p = shutil.which("python3", path=ptc.env["PATH"])
    assert p, "python3 not on PATH"
    res = subprocess.run([p, "-c", "import os, sys; print(os.path.realpath(sys.executable))"],
                         capture_output=True, text=True, timeout=30, env=ptc.make_env())
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


def test_strict_mode_uses_python3_from_path(ptc):
    d = info(ptc, "--mode", "strict")
    assert os.path.realpath(d["exe"]) == real_python3(ptc), d


def test_strict_mode_resolves_launcher_shim(ptc):
    # A shim python3 first on PATH that logs its invocations: ptc may run it
    # to learn sys.executable, but must run the script with the real binary.
    shimdir = ptc.path("shim")
    shimdir.mkdir()
    log = ptc.path("shim.log")
    shim = shimdir / "python3"
    real = real_python3(ptc)
    shim.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec {real} "$@"\n')
    shim.chmod(0o755)
    r = ptc.run("print('shimmed')", "--mode", "strict",
                env={"PATH": f"{shimdir}:{ptc.env['PATH']}"})
    expect(r, 0, "success")
    logged = log.read_text() if log.exists() else ""
    runs = [ln.split() for ln in logged.splitlines() if ln.split()]
    assert not any(a[-1].endswith(".py") for a in runs), logged


def test_strict_mode_resolves_launcher_shim_when_started_in_root(ptc):
    # Strict mode's script works in ptc's staging dir, never in the directory ptc was started
    # in: a shim below that directory (here: below /) is still resolved, not run unresolved
    # inside the sandbox where what it execs is hidden (a pyenv shim on PATH failed so).
    shimdir = ptc.path("shim")
    shimdir.mkdir()
    shim = shimdir / "python3"
    hidden = ptc.path("hidden")
    hidden.mkdir()
    os.symlink(real_python3(ptc), hidden / "python3")
    shim.write_text(f'#!/bin/sh\nexec {hidden}/python3 "$@"\n')
    shim.chmod(0o755)
    r = ptc.run("print('shimmed')", "--mode", "strict", cwd="/",
                env={"PATH": f"{shimdir}:{ptc.env['PATH']}"})
    expect(r, 0, "success")
    assert r.output == "shimmed\n", r


@pytest.fixture(scope="module")
def venvs():
    """Two real virtual environments, made once for this module."""
    import tempfile
    base = tempfile.mkdtemp(prefix="ptci-venv-", dir="/tmp")
    made = []
    try:
        for name in ("venv-a", "venv-b"):
            p = os.path.join(base, name)
            res = subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", p],
                                 capture_output=True, timeout=60)
            if res.returncode != 0 or not os.access(os.path.join(p, "bin", "python"), os.X_OK):
                pytest.skip(f"python3 -m venv does not work here: {res.stderr[-300:]!r}")
            made.append(p)
        yield made
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_project_mode_prefers_virtual_env(ptc, venvs):
    d = info(ptc, env={"VIRTUAL_ENV": venvs[0]})
    assert os.path.realpath(d["prefix"]) == os.path.realpath(venvs[0]), d


def test_virtual_env_wins_over_conda_prefix(ptc, venvs):
    d = info(ptc, env={"VIRTUAL_ENV": venvs[0], "CONDA_PREFIX": venvs[1]})
    assert os.path.realpath(d["prefix"]) == os.path.realpath(venvs[0]), d


def test_conda_prefix_used_without_virtual_env(ptc, venvs):
    d = info(ptc, env={"CONDA_PREFIX": venvs[1]})
    assert os.path.realpath(d["prefix"]) == os.path.realpath(venvs[1]), d


def test_strict_mode_ignores_virtual_env(ptc, venvs):
    d = info(ptc, "--mode", "strict", env={"VIRTUAL_ENV": venvs[0]})
    assert os.path.realpath(d["prefix"]) != os.path.realpath(venvs[0]), d
    assert os.path.realpath(d["exe"]) == real_python3(ptc), d


def test_broken_virtual_env_falls_back(ptc):
    d = info(ptc, env={"VIRTUAL_ENV": str(ptc.path("no-such-venv"))})
    assert os.path.realpath(d["exe"]) == real_python3(ptc), d


def test_failing_venv_python_falls_back(ptc):
    venv = ptc.path("badvenv")
    (venv / "bin").mkdir(parents=True)
    for name in ("python", "python3"):
        p = venv / "bin" / name
        p.write_text("#!/bin/sh\nexit 1\n")
        p.chmod(0o755)
    d = info(ptc, env={"VIRTUAL_ENV": str(venv)})
    assert os.path.realpath(d["exe"]) == real_python3(ptc), d


def test_hermes_tools_importable_by_script_subprocess(ptc):
    foreign = ptc.path("foreign")
    foreign.mkdir()
    r = ptc.run("""
        import subprocess, sys
        from hermes_tools import terminal
        sub = 'from hermes_tools import terminal; print(terminal("echo sub")["output"])'
        p = subprocess.run([sys.executable, '-c', sub], capture_output=True, text=True,
                           timeout=20)
        print(p.returncode, p.stdout.strip(), p.stderr[-300:])
        """, "--cwd", foreign)
    expect(r, 0, "success")
    assert r.output.startswith("0 sub"), r
    assert r.data["tool_calls_made"] == 1, r


def test_long_tmpdir_beyond_sun_path_limit(ptc):
    # A staging dir deeper than the 108-byte AF_UNIX path limit must still work.
    deep = ptc.tmp / ("d" * 100) / ("e" * 60)
    deep.mkdir(parents=True)
    r = ptc.run("""
        from hermes_tools import terminal
        print(terminal('echo long-path-ok')['output'])
        """, env={"TMPDIR": str(deep)})
    expect(r, 0, "success")
    assert r.output == "long-path-ok\n", r
