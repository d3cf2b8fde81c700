# SPDX-License-Identifier: MIT
"""Path rules bind terminal commands (docs/policy.md, "What binds terminal commands"; issue 35
item 3): a deny rule on write_file/patch paths holds for whatever a `terminal` command runs to
write there — a redirection, cp, mv, rm, touch, ln, truncate, sed -i, tee, dd, Python, a
symlink planted on the way — through a Landlock ruleset on the command's process tree. Each
spelling runs for real, as a script's `terminal` call and as `ptc tool terminal`, as root and
as an unprivileged user; the protected tree is compared byte for byte afterwards. Writes
elsewhere still work; a name pattern (`*.pem`) says in the warnings that it does not bind;
without such a rule nothing changes. On 2194e2c every spelling below wrote."""

import ctypes
import json
import os
import secrets
import shutil
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from isolation_util import iso_fixture, strict_missing
from isolation_util import iso_user, iso_user_binary  # noqa: F401  (pytest fixtures)

iso = iso_fixture("ptc-ll-", 0o755)

SYS_landlock_create_ruleset = 444  # the same number on every architecture
LANDLOCK_CREATE_RULESET_VERSION = 1


def landlock_abi():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    r = libc.syscall(ctypes.c_long(SYS_landlock_create_ruleset), None, ctypes.c_size_t(0),
                     ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    return r if r >= 0 else -ctypes.get_errno()


ABI = landlock_abi()
needs_landlock = pytest.mark.skipif(
    ABI < 1, reason=f"no Landlock on this kernel ({os.strerror(-ABI)}): nothing to bind with")

# Each: (name, command). {P}: the protected dir, {W}: the working directory (the project).
SPELLINGS = [
    ("redirect", "echo x > {P}/new"),
    ("append", "echo x >> {P}/s"),
    ("noclobber off", "set +C; echo x >| {P}/s"),
    ("cp in", "cp {W}/src {P}/copy"),
    ("cp over", "cp {W}/src {P}/s"),
    ("mv in", "mv {W}/src {P}/moved"),
    ("mv out", "mv {P}/s {W}/stolen"),
    ("rename inside", "mv {P}/s {P}/s2"),
    ("rm", "rm -f {P}/s"),
    ("rm -r", "rm -rf {P}/sub"),
    ("rmdir", "rmdir {P}/empty"),
    ("touch", "touch {P}/t"),
    ("ln -s", "ln -s /etc/hostname {P}/l"),
    ("hard link out", "ln {P}/s {W}/hard && echo x >> {W}/hard"),
    ("truncate", "truncate -s0 {P}/s"),
    ("sed -i", "sed -i s/secret/x/ {P}/s"),
    ("mkdir", "mkdir {P}/d"),
    ("mkfifo", "mkfifo {P}/fifo"),
    ("tee", "echo x | tee {P}/s"),
    ("dd", "echo x | dd of={P}/s status=none"),
    ("install", "install -m 644 {W}/src {P}/inst"),
    ("python", "python3 -c \"open('{P}/s', 'w').write('x')\""),
    ("deeper", "echo x > {P}/sub/deep"),
    ("relative", "cd {P}/sub && echo x > rel"),
    ("symlink to the dir", "ln -sfn {P} {W}/door && echo x > {W}/door/f"),
    ("symlink to the file", "ln -sf {P}/s {W}/alias && echo x > {W}/alias"),
    ("bash -c", "bash -c 'echo x > {P}/s'"),
    ("child of a child", "sh -c 'sh -c \"echo x > {P}/s\"'"),
]
ROOT_SPELLINGS = [
    # Landlock refuses every mount change in its domain: no cover to write on.
    ("mount over", "mount -t tmpfs none {P} && echo x > {P}/f"),
    ("bind over", "mount --bind {W} {P} && echo x > {P}/f"),
]


def spellings(is_root):
    out = SPELLINGS + (ROOT_SPELLINGS if is_root else [])
    # Below ABI 3 truncate(2) is not checked: the result's warnings say so (tested below).
    return [s for s in out if ABI >= 3 or s[0] != "truncate"]


def make_tree(iso, base):
    """The protected dir and the project beside it, owned by the user that runs ptc (so
    that without the rule the same commands succeed: see the control below)."""
    prot = iso.mkdir(base / "prot")
    iso.write(prot / "s", "secret\n")
    iso.mkdir(prot / "sub")
    iso.write(prot / "sub" / "k", "key\n")
    iso.mkdir(prot / "empty")
    work = iso.workdir
    iso.write(work / "src", "src\n")
    return prot, work


def snapshot(root):
    """Every entry below @root: its type and bytes."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = Path(dirpath) / n
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = ("link", os.readlink(p))
            elif p.is_dir():
                out[rel] = ("dir", None)
            else:
                out[rel] = ("file", p.read_bytes())
    return out


def rule_config(iso, patterns, extra=""):
    lines = "".join(f"        - {json.dumps(p)}\n" for p in patterns)
    text = ("policy:\n"
            "  rules:\n"
            "    - tool: [write_file, patch]\n"
            "      match:\n" + lines +
            "      action: deny\n" + extra)
    return iso.own(iso.write_config(text, name=f"cfg-{secrets.token_hex(4)}.yaml"))


TERMINAL_LOOP = """
    import json
    from hermes_tools import terminal
    out = []
    for cmd in CMDS:
        r = terminal(cmd)
        out.append({"exit_code": r["exit_code"], "output": r["output"],
                    "error": r.get("error"), "warnings": r.get("warnings")})
    print(json.dumps(out))
"""


def run_commands(iso, cfg, cmds, extra_opts=(), cwd=None):
    code = "CMDS = " + json.dumps(cmds) + "\n" + TERMINAL_LOOP.replace("\n    ", "\n")
    opts = ["--config", str(cfg)] if cfg else []
    r = iso.run_ptc(["run", *opts, *extra_opts, "-c", code], input=b"", cwd=cwd)
    assert r.rc == 0 and r.data and r.data.get("status") == "success", r
    return json.loads(r.data["output"]), r.data


def tool_terminal(iso, cfg, cmd):
    opts = ["--config", str(cfg)] if cfg else []
    r = iso.run_ptc(["tool", *opts, "terminal", json.dumps({"command": cmd})], input=None)
    assert r.rc == 0, r
    return json.loads(r.stdout)


@needs_landlock
def test_every_spelling_fails_and_leaves_the_protected_tree_as_it_was(iso):
    prot, work = make_tree(iso, iso.tmp)
    before = snapshot(prot)
    cfg = rule_config(iso, [f"{prot}/**"])
    cmds = [c.format(P=prot, W=work) for _, c in spellings(iso.is_root)]
    results, data = run_commands(iso, cfg, cmds)
    for (name, cmd), res in zip(spellings(iso.is_root), results):
        assert res["exit_code"] != 0, f"{name}: `{cmd}` succeeded: {res}"
    assert snapshot(prot) == before
    assert (work / "src").read_text() == "src\n"  # mv in failed: the source is still there
    assert not (work / "stolen").exists() and not (work / "hard").exists()
    # Nothing in the warnings: everything of this rule binds (ABI >= 3).
    if ABI >= 3:
        assert all(res["warnings"] is None for res in results), results
        assert not [w for w in data.get("warnings", []) if w.startswith("policy")], data


@needs_landlock
def test_every_spelling_fails_through_ptc_tool_terminal(iso):
    prot, work = make_tree(iso, iso.tmp)
    before = snapshot(prot)
    cfg = rule_config(iso, [f"{prot}/**"])
    for name, cmd in spellings(iso.is_root):
        res = tool_terminal(iso, cfg, cmd.format(P=prot, W=work))
        assert res["exit_code"] != 0, f"{name}: succeeded: {res}"
    assert snapshot(prot) == before


def test_without_the_rule_the_same_spellings_write(iso):
    """The control: the spellings above are real writes. No rule, no ruleset, no warning."""
    prot, work = make_tree(iso, iso.tmp)
    reset = (f"rm -rf {prot} {work}/door {work}/alias {work}/hard {work}/stolen; "
             f"mkdir -p {prot}/sub {prot}/empty; printf 'secret\\n' > {prot}/s; "
             f"printf 'key\\n' > {prot}/sub/k; printf 'src\\n' > {work}/src")
    cmds = [f"{reset}; {c.format(P=prot, W=work)}" for _, c in SPELLINGS]
    results, data = run_commands(iso, None, cmds)
    for (name, cmd), res in zip(SPELLINGS, results):
        assert res["exit_code"] == 0, f"{name}: `{cmd}` failed without a rule: {res}"
    assert all(res["warnings"] is None for res in results)
    assert "warnings" not in data or not [w for w in data["warnings"] if "policy" in w], data


@needs_landlock
def test_writes_elsewhere_still_work(iso):
    prot, work = make_tree(iso, iso.tmp)
    iso.mkdir(work / "lib")
    cfg = rule_config(iso, [f"{prot}/**"])
    name = f"/tmp/ptc-ll-probe-{secrets.token_hex(6)}"
    cmds = [
        f"echo ok > {work}/lib/new && cat {work}/lib/new",
        f"mkdir {work}/lib/d && mv {work}/lib/new {work}/lib/d/ && rm -r {work}/lib/d",
        f"echo x >> {work}/src && sed -i s/x/y/ {work}/src && truncate -s 0 {work}/src",
        f"echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"",
        "echo x > /dev/null && head -c 4 /dev/zero | wc -c",
        "python3 -c \"import os, pty; m, s = pty.openpty(); os.write(s, b'x'); print('pty')\"",
        f"cat {prot}/s {prot}/sub/k",  # reading is never restricted
        f"echo x > {name} && rm {name}",  # /tmp is an ancestor here: only with a fresh dir
    ]
    results, _ = run_commands(iso, cfg, cmds)
    for cmd, res in zip(cmds[:-1], results[:-1]):
        assert res["exit_code"] == 0, f"`{cmd}`: {res}"
    assert results[0]["output"].strip() == "ok"
    assert "pty" in results[5]["output"]
    assert results[6]["output"].split() == ["secret", "key"]
    # The documented consequence: /tmp is on the way to the protected dir (/tmp/ptc-ll-*/prot),
    # so nothing new can be made directly in it; its subdirectories ($TMPDIR) stay writable.
    assert results[-1]["exit_code"] != 0 and not os.path.exists(name), results[-1]


@needs_landlock
def test_tmp_stays_writable_when_it_is_not_on_the_way(iso):
    base = Path(tempfile.mkdtemp(prefix="ptc-ll-", dir="/var/tmp"))
    try:
        os.chmod(base, 0o755)
        iso.own(base)
        prot, work = make_tree(iso, base)
        cfg = rule_config(iso, [str(prot)])  # a plain path covers what is below it
        name = f"/tmp/ptc-ll-probe-{secrets.token_hex(6)}"
        results, _ = run_commands(iso, cfg, [f"echo x > {name} && cat {name} && rm {name}",
                                             f"echo x > {prot}/new", f"echo x > {base}/new"])
        assert results[0]["exit_code"] == 0 and results[0]["output"].strip() == "x", results
        assert results[1]["exit_code"] != 0 and not (prot / "new").exists()
        # base is the protected dir's parent: nothing new directly in it.
        assert results[2]["exit_code"] != 0 and not (base / "new").exists()
    finally:
        shutil.rmtree(base, ignore_errors=True)


@needs_landlock
def test_a_home_rule(iso):
    home = iso.home
    ssh = iso.mkdir(home / ".ssh", 0o700)
    iso.write(ssh / "authorized_keys", "ssh-ed25519 AAAA\n")
    iso.write(home / ".bashrc", "# rc\n")
    iso.mkdir(home / "notes")
    cfg = rule_config(iso, ["~/.ssh/**"])
    cmds = ["echo evil >> ~/.ssh/authorized_keys", f"echo evil >> {ssh}/authorized_keys",
            "rm -rf ~/.ssh", "mv ~/.ssh ~/ssh-old",
            "echo '# more' >> ~/.bashrc", "echo n > ~/notes/n",
            "echo new > ~/new-file"]
    results, _ = run_commands(iso, cfg, cmds)
    assert [r["exit_code"] != 0 for r in results] == [True, True, True, True, False, False, True]
    assert (ssh / "authorized_keys").read_text() == "ssh-ed25519 AAAA\n"
    assert (home / ".bashrc").read_text() == "# rc\n# more\n"
    # The documented consequence: the home is on the way to ~/.ssh, nothing new directly in it.
    assert not (home / "new-file").exists()


@needs_landlock
def test_a_relative_rule_and_a_glob_in_the_middle(iso):
    work = iso.workdir
    iso.mkdir(work / "secrets")
    iso.write(work / "secrets" / "k", "k\n")
    iso.mkdir(work / "src")
    keys = iso.mkdir(work / "keys")
    for t in ("a", "b", ".hidden"):  # the rules' "*" matches a leading dot too
        iso.mkdir(keys / t)
        iso.mkdir(keys / t / "private")
        iso.write(keys / t / "private" / "id", "id\n")
        iso.mkdir(keys / t / "public")
    cfg = rule_config(iso, ["secrets/**", "keys/*/private/**"])
    cmds = ["echo x > secrets/k", "echo x > secrets/new", f"echo x > {work}/secrets/k",
            "echo x > keys/a/private/id", "echo x > keys/b/private/new",
            "echo x > keys/.hidden/private/id",
            "echo x > src/new", "echo x > keys/a/public/pub"]
    results, _ = run_commands(iso, cfg, cmds)
    assert [r["exit_code"] != 0 for r in results] == [True] * 6 + [False, False], results
    assert (keys / ".hidden" / "private" / "id").read_text() == "id\n"
    assert (work / "secrets" / "k").read_text() == "k\n"
    assert not (work / "secrets" / "new").exists()
    assert (keys / "a" / "private" / "id").read_text() == "id\n"
    assert not (keys / "b" / "private" / "new").exists()
    assert (work / "src" / "new").read_text() == "x\n"


@needs_landlock
def test_a_symlinked_rule_protects_its_target(iso):
    prot, work = make_tree(iso, iso.tmp)
    link = iso.tmp / "via"
    os.symlink(prot, link)
    iso.own(link)
    cfg = rule_config(iso, [f"{link}/**"])
    results, _ = run_commands(iso, cfg, [f"echo x > {prot}/s", f"echo x > {link}/s",
                                         f"rm {link}"])
    assert all(r["exit_code"] != 0 for r in results), results
    assert (prot / "s").read_text() == "secret\n" and link.is_symlink()


@needs_landlock
def test_a_name_pattern_rule_says_it_does_not_bind(iso):
    prot, work = make_tree(iso, iso.tmp)
    cfg = rule_config(iso, ["*.pem", f"{prot}/**"])
    results, data = run_commands(iso, cfg, ["echo k > key.pem", f"echo x > {prot}/s"])
    assert results[0]["exit_code"] == 0 and (work / "key.pem").exists()  # text only: not bound
    assert results[1]["exit_code"] != 0 and (prot / "s").read_text() == "secret\n"
    want = "policy.rules[0]: '*.pem' names files at any depth, which Landlock cannot express"
    assert any(w.startswith(want) for w in results[0]["warnings"]), results[0]
    assert any(w.startswith(want) for w in data["warnings"]), data
    res = tool_terminal(iso, cfg, "true")
    assert any(w.startswith(want) for w in res["warnings"]), res
    # Only a name pattern: no ruleset at all, the warning still.
    cfg2 = rule_config(iso, ["*.pem"])
    res = tool_terminal(iso, cfg2, f"echo y > {prot}/s2 && rm {prot}/s2")
    assert res["exit_code"] == 0 and any(w.startswith(want) for w in res["warnings"]), res


@needs_landlock
def test_other_rules_build_nothing(iso):
    """A deny rule on read_file, an ask rule on write_file: not write denials, no ruleset."""
    prot, work = make_tree(iso, iso.tmp)
    cfg = iso.own(iso.write_config(
        "policy:\n  headless: allow\n  rules:\n"
        f"    - {{tool: read_file, match: '{prot}/**', action: deny}}\n"
        f"    - {{tool: write_file, match: '{prot}/**', action: ask}}\n",
        name="cfg-other.yaml"))
    res = tool_terminal(iso, cfg, f"echo x > {prot}/new && echo new > {iso.tmp}/n")
    assert res["exit_code"] == 0 and "warnings" not in res, res


@needs_landlock
def test_strict_terminal_commands_are_bound_too(iso):
    """terminal.isolation strict: the ruleset is applied inside the command's sandbox, after
    its own Landlock layer; its private /tmp stays writable (a protected path below /tmp would
    take that: the working directory is bound inside it)."""
    if strict_missing(iso.bin):
        pytest.skip("strict isolation is not available in this build")
    base = Path(tempfile.mkdtemp(prefix="ptc-ll-", dir="/var/tmp"))
    try:
        os.chmod(base, 0o755)
        iso.own(base)
        work = iso.mkdir(base / "work")
        iso.mkdir(work / "a")
        iso.mkdir(work / "a" / "prot")
        iso.write(work / "a" / "prot" / "s", "secret\n")
        iso.mkdir(work / "b")
        cfg = rule_config(iso, [f"{work}/a/prot/**"], extra="terminal:\n  isolation: strict\n")
        results, _ = run_commands(iso, cfg, [f"echo x > {work}/a/prot/s",
                                             f"rm -rf {work}/a/prot",
                                             f"echo x > {work}/b/n",
                                             "echo t > /tmp/t && cat /tmp/t"], cwd=work)
        if "cannot be set up" in (results[0]["error"] or ""):
            pytest.skip(f"strict terminal isolation is not available here: {results[0]}")
        assert results[0]["exit_code"] != 0 and results[1]["exit_code"] != 0, results
        assert (work / "a" / "prot" / "s").read_text() == "secret\n"
        assert results[2]["exit_code"] == 0 and (work / "b" / "n").read_text() == "x\n", results
        assert results[3]["exit_code"] == 0 and results[3]["output"].strip() == "t", results
    finally:
        shutil.rmtree(base, ignore_errors=True)


@needs_landlock
def test_a_remote_targets_terminal_is_bound_there(ptc):
    """--backend: the agent on the target builds the ruleset from the policy the host sends,
    on the target's kernel; its warnings come back in the run's (prefixed "target:")."""
    prot = ptc.tmp / "prot"
    prot.mkdir()
    (prot / "s").write_text("secret\n")
    cfg = ptc.write_config(f"""
        policy:
          rules:
            - tool: [write_file, patch]
              match: ["{prot}/**", "*.pem"]
              action: deny
        """)
    code = ("import json\nfrom hermes_tools import terminal\n"
            f"print(json.dumps([terminal('echo x > {prot}/s'), terminal('echo y > {prot}/n'),"
            f" terminal('echo ok > {ptc.workdir}/ok')]))\n")
    r = ptc.run_ptc(["run", "--config", str(cfg), "--backend", "exec:sh", "-c", code],
                    env={"PATH": f"{ptc.bin.parent}:{ptc.env['PATH']}"}, input=b"")
    assert r.rc == 0 and r.data and r.data["status"] == "success", r
    denied, made, ok = json.loads(r.data["output"])
    assert denied["exit_code"] != 0 and made["exit_code"] != 0 and ok["exit_code"] == 0, r
    assert (prot / "s").read_text() == "secret\n" and not (prot / "n").exists()
    assert any(w.startswith("target: policy.rules[0]: '*.pem'") for w in r.data["warnings"]), r


CACHE_SCRIPT = """
    import json, os, time
    from hermes_tools import terminal
    time.sleep(3)  # every directory settled: the ruleset of the first call is kept
    out = [terminal("echo 1 > OTHER/f"), terminal("echo 2 > OTHER/f")]
    open("ready", "w").close()
    for _ in range(600):
        if os.path.exists("moved"):
            break
        time.sleep(0.05)
    out.append(terminal("echo 3 > PROT/other/f"))
    out.append(terminal("echo 4 > PROT/s"))
    print(json.dumps([r["exit_code"] for r in out]))
"""


@needs_landlock
def test_a_kept_ruleset_sees_a_granted_directory_moved_into_the_protected_tree(iso):
    """The ruleset is kept between calls while the directories it listed are unchanged
    (Landlock rules hold inodes): a directory granted at the first call that another process
    then moves into the protected tree is not writable at the next call."""
    base = Path(tempfile.mkdtemp(prefix="ptc-ll-", dir="/var/tmp"))
    try:
        os.chmod(base, 0o755)
        iso.own(base)
        prot = iso.mkdir(base / "prot")
        iso.write(prot / "s", "secret\n")
        other = iso.mkdir(base / "other")
        iso.write(other / "f", "0\n")
        cfg = rule_config(iso, [f"{prot}/**"])
        code = textwrap.dedent(CACHE_SCRIPT).replace("OTHER", str(other)).replace("PROT", str(prot))
        proc = iso.spawn(["run", "--config", str(cfg), "-c", code])
        try:
            ready = iso.workdir / "ready"
            for _ in range(1200):
                if ready.exists() or proc.poll() is not None:
                    break
                time.sleep(0.05)
            assert ready.exists(), proc.communicate(timeout=60)
            os.rename(other, prot / "other")
            (iso.workdir / "moved").touch()
            out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        res = json.loads(out)
        assert proc.returncode == 0 and res["status"] == "success", (out, err)
        codes = json.loads(res["output"])
        assert codes[:2] == [0, 0] and codes[2] != 0 and codes[3] != 0, res
        assert (prot / "other" / "f").read_text() == "2\n" and (prot / "s").read_text() == "secret\n"
    finally:
        shutil.rmtree(base, ignore_errors=True)


@needs_landlock
def test_a_rule_inside_the_working_directory_says_what_it_costs_there(iso):
    # The working directory is on the way to secrets/: nothing new can be made directly in
    # it (the price of an allow-list), and every terminal result says so, naming both.
    work = iso.workdir
    iso.mkdir(work / "secrets")
    iso.write(work / "top", "old\n")
    cfg = rule_config(iso, ["secrets/**"])
    results, data = run_commands(iso, cfg, ["echo new > top", "echo x > new-at-top"])
    assert results[0]["exit_code"] == 0 and (work / "top").read_text() == "new\n", results
    assert results[1]["exit_code"] != 0 and not (work / "new-at-top").exists(), results
    real = os.path.realpath(work)
    want = (f"policy: the working directory '{real}' is on the way to the protected "
            f"'{real}/secrets': nothing new can be made directly in it")
    for r in results:
        assert any(w.startswith(want) for w in r["warnings"] or []), r
    assert any(w.startswith(want) for w in data.get("warnings", [])), data
    # A rule outside the working directory costs nothing there: no such line.
    cfg = rule_config(iso, [str(iso.tmp / "elsewhere") + "/**"])
    results, _ = run_commands(iso, cfg, ["echo x > new-at-top"])
    assert results[0]["exit_code"] == 0, results
    assert not any("working directory" in w for w in results[0]["warnings"] or []), results
