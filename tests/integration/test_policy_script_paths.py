# SPDX-License-Identifier: MIT
"""Path rules bind the script's own writes (docs/policy.md, "Enforced by the kernel, or by the
text"; issue 35): in project mode the script's working directory is writable to it, so a deny
rule on write_file/patch paths inside it used to bind the script's tool calls only — the
script's own open(), os.rename(), os.unlink(), os.symlink(), shutil.copy() wrote there. Now the
script's process runs under the same Landlock ruleset terminal commands get, built from the
same rules (relative patterns against the run's directory, `~` against its HOME), at both
confining levels: with the namespaces layer (the child opens the paths in its own root, where
/tmp is private) and with Landlock alone (user namespaces refused: isolation auto drops the
namespaces layer). Each attempt runs for real through `ptc run`, as root and as an
unprivileged user; the protected tree is compared byte for byte afterwards. Writes elsewhere
(existing files and subdirectories of the project, $TMPDIR, tempfile, stdout) still work; a
session's cells are bound too; with --isolation none the warnings say the rules bind the tool
calls only. On the `split` branch every attempt below wrote."""

import json
import os
import shutil
import subprocess
import tempfile
import textwrap
from pathlib import Path

import pytest

from conftest import kill_pids, processes_marked, run_ptc
from isolation_util import iso_fixture
from isolation_util import iso_user, iso_user_binary  # noqa: F401  (pytest fixtures)
from test_policy_terminal_paths import ABI, needs_landlock, rule_config, snapshot

iso = iso_fixture("ptc-sp-", 0o755)

UNSHARE = shutil.which("unshare")
# Landlock alone: user namespaces refused (a limit of 0), so isolation auto runs without the
# namespaces layer (test_workdir.py uses the same).
NO_USERNS = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" "$@"'
DROPPED_NS = "running without the namespaces layer"

# What the script tries on the protected tree {P} (relative to the project {W} unless the
# rule's form says otherwise): each must raise PermissionError.
ATTEMPTS = """
    import json, os, shutil, sys, tempfile
    res = {}
    def t(name, f):
        try:
            f()
            res[name] = "wrote"
        except PermissionError:
            res[name] = "denied"
        except OSError as e:
            res[name] = f"{type(e).__name__}: {e}"
    def write(path, mode="w"):
        with open(path, mode) as f:
            f.write("evil\\n")
    def link_out():
        os.link(f"{P}/ci.yml", f"{W}/hard")
        write(f"{W}/hard", "a")
    def door():
        os.symlink(P, f"{W}/door")
        write(f"{W}/door/f")
    t("open w", lambda: write(f"{P}/ci.yml"))
    t("open a", lambda: write(f"{P}/ci.yml", "a"))
    t("open x", lambda: write(f"{P}/new.yml", "x"))
    t("deeper", lambda: write(f"{P}/sub/k"))
    t("rename in", lambda: os.rename(f"{W}/src", f"{P}/moved"))
    t("rename out", lambda: os.rename(f"{P}/ci.yml", f"{W}/stolen"))
    t("rename inside", lambda: os.rename(f"{P}/ci.yml", f"{P}/ci2.yml"))
    t("rename the dir", lambda: os.rename(P, f"{W}/gone"))
    t("replace", lambda: os.replace(f"{W}/src", f"{P}/ci.yml"))
    t("unlink", lambda: os.unlink(f"{P}/ci.yml"))
    t("rmdir", lambda: os.rmdir(f"{P}/empty"))
    t("rmtree", lambda: shutil.rmtree(f"{P}/sub"))
    t("mkdir", lambda: os.mkdir(f"{P}/d"))
    t("symlink", lambda: os.symlink("/etc/hostname", f"{P}/l"))
    t("copy in", lambda: shutil.copy(f"{W}/src", f"{P}/copied"))
    t("copy over", lambda: shutil.copy(f"{W}/src", f"{P}/ci.yml"))
    t("hard link out", link_out)
    t("symlink door", door)
    t("mkfifo", lambda: os.mkfifo(f"{P}/fifo"))
    if TRUNCATE:
        t("truncate", lambda: os.truncate(f"{P}/ci.yml", 0))
    # Elsewhere: an existing file at the top, a new file and dir in a subdirectory, $TMPDIR.
    t("existing", lambda: write(f"{W}/notes.txt", "a"))
    t("subdir file", lambda: write(f"{W}/out/result.txt"))
    t("subdir dir", lambda: os.mkdir(f"{W}/out/d"))
    def tmp():
        fd, name = tempfile.mkstemp()
        os.write(fd, b"x")
        os.close(fd)
        os.unlink(name)
        d = os.environ.get("TMPDIR") or "/tmp"
        write(os.path.join(d, "ptc-sp-probe"))
        os.unlink(os.path.join(d, "ptc-sp-probe"))
    t("tmp", tmp)
    print(json.dumps(res))
"""
ELSEWHERE = ["existing", "subdir file", "subdir dir", "tmp"]


def make_project(iso, base, home=None):
    """A project under @base (not under /tmp: a protected path there would put /tmp on the way,
    see docs/policy.md) with .github/workflows to protect, owned by the user that runs ptc."""
    work = iso.mkdir(base / "proj")
    prot = iso.mkdir(work / ".github")
    prot = iso.mkdir(prot / "workflows")
    iso.write(prot / "ci.yml", "on: push\n")
    iso.mkdir(prot / "sub")
    iso.write(prot / "sub" / "k", "key\n")
    iso.mkdir(prot / "empty")
    iso.write(work / "src", "src\n")
    iso.write(work / "notes.txt", "notes\n")
    iso.mkdir(work / "out")
    return work, prot


@pytest.fixture
def base(iso):
    d = Path(tempfile.mkdtemp(prefix="ptc-sp-", dir="/var/tmp"))
    try:
        os.chmod(d, 0o755)
        iso.own(d)
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def no_userns_prefix(iso):
    """argv prefix that runs ptc where user namespaces are refused, or a skip."""
    if not UNSHARE:
        pytest.skip("no unshare(1): cannot select the Landlock-only level")
    argv = iso.as_user([UNSHARE, "-Ur", "sh", "-c", NO_USERNS, "sh", "-c", "exit 0"])
    p = subprocess.run(argv, capture_output=True, timeout=30)
    if p.returncode != 0:
        pytest.skip(f"cannot limit user namespaces in a user namespace: {p.stderr!r}")
    return iso.as_user([UNSHARE, "-Ur", "sh", "-c", NO_USERNS])


def run_script(iso, level, cfg, code, cwd, env=None, opts=()):
    """`ptc run` of @code in @cwd at @level: "namespaces" (every layer), "landlock" (no user
    namespaces: auto without the namespaces layer) or "none"."""
    args = ["run", "--config", str(cfg), *opts]
    if level == "none":
        args += ["--isolation", "none"]
    args += ["-c", code]
    if level == "landlock":
        prefix = no_userns_prefix(iso)
        r = run_ptc([*prefix[1:], iso.bin, *args], env=iso.make_env(env), cwd=str(cwd),
                    binary=prefix[0])
    else:
        r = iso.run_ptc(args, cwd=cwd, env=env)
    assert r.rc == 0 and r.data and r.data.get("status") == "success", r
    warnings = r.data.get("warnings", [])
    dropped = any(DROPPED_NS in w for w in warnings)
    if level == "landlock":
        assert dropped, r
    elif level == "namespaces" and dropped:
        pytest.skip(f"the namespaces layer is not available here: {warnings}")
    return json.loads(r.data["output"]), r.data


def attempts(P, W):
    return (f"P = {json.dumps(str(P))}\nW = {json.dumps(str(W))}\nTRUNCATE = {ABI >= 3}\n" +
            textwrap.dedent(ATTEMPTS))


def check(res, prot, before, work):
    denied = {k: v for k, v in res.items() if k not in ELSEWHERE}
    assert denied and all(v == "denied" for v in denied.values()), res
    assert all(res[k] == "wrote" for k in ELSEWHERE), res
    assert snapshot(prot) == before
    assert not (work / "stolen").exists() and not (work / "gone").exists()
    assert (work / "out" / "result.txt").read_text() == "evil\n"
    assert (work / "notes.txt").read_text() == "notes\nevil\n"


@needs_landlock
@pytest.mark.parametrize("level", ["namespaces", "landlock"])
def test_the_scripts_own_writes_fail_and_leave_the_tree_as_it_was(iso, base, level):
    work, prot = make_project(iso, base)
    before = snapshot(prot)
    cfg = rule_config(iso, [".github/workflows/**"])
    res, data = run_script(iso, level, cfg, attempts(".github/workflows", work), work)
    check(res, prot, before, work)
    # Everything binds: no warning about the path rules but the one that says what binding
    # costs in the working directory (on the way to .github/workflows: nothing new there).
    ws = [w for w in data.get("warnings", []) if w.startswith("policy")]
    assert len(ws) == 1 and "nothing new can be made directly in it by the script's own " \
        "writes" in ws[0], data


@needs_landlock
@pytest.mark.parametrize("level", ["namespaces", "landlock"])
def test_a_home_rule_binds_the_script(iso, base, level):
    """`~` against the run's HOME: here the project lives in it (under the namespaces layer
    only the project of the host's tree is writable at all)."""
    home = iso.mkdir(base / "home")
    work, prot = make_project(iso, home)
    before = snapshot(prot)
    cfg = rule_config(iso, ["~/proj/.github/workflows/**"])
    res, _ = run_script(iso, level, cfg, attempts(prot, work), work, env={"HOME": str(home)})
    check(res, prot, before, work)


@needs_landlock
@pytest.mark.parametrize("level", ["namespaces", "landlock"])
def test_without_the_rule_the_same_attempts_write(iso, base, level):
    """The control: the attempts are real writes, and no rule builds nothing."""
    work, prot = make_project(iso, base)
    cfg = iso.own(iso.write_config("policy:\n  rules:\n"
                                   "    - {tool: read_file, match: 'x/**', action: deny}\n",
                                   name="cfg-none.yaml"))
    res, data = run_script(iso, level, cfg, attempts(".github/workflows", work), work)
    # Later attempts may find what an earlier one moved gone: none is refused.
    assert all(res[k] == "wrote" for k in ("open w", "open a", "open x", "deeper", "rename in",
                                           "rename out", "rename the dir")), json.dumps(res)
    assert all(v != "denied" for v in res.values()), res
    assert not any(w.startswith("policy") for w in data.get("warnings", [])), data


def test_isolation_none_says_the_rules_bind_the_tool_calls_only(iso, base):
    work, prot = make_project(iso, base)
    cfg = rule_config(iso, [".github/workflows/**"])
    code = ("from hermes_tools import write_file\n"
            "r = write_file('.github/workflows/ci.yml', 'x')\n"
            "print(json.dumps(bool(r.get('error'))))\n"
            "open('.github/workflows/ci.yml', 'w').write('own\\n')\n")
    res, data = run_script(iso, "none", cfg, "import json\n" + code, work)
    assert res is True  # the tool call is still denied
    assert (prot / "ci.yml").read_text() == "own\n"  # the script's own write is not
    want = ("policy: isolation none: deny rules on write_file and patch paths bind the "
            "script's tool calls only, not the script's own writes")
    assert any(w.startswith(want) for w in data["warnings"]), data


@needs_landlock
def test_a_session_cell_is_bound(iso, base):
    """`ptc run --session`: the cells run in an interpreter the server started (and forks of it);
    the interpreter runs under the ruleset, so every cell does."""
    work, prot = make_project(iso, base)
    before = snapshot(prot)
    cfg = rule_config(iso, [".github/workflows/**"])
    run = iso.mkdir(iso.tmp / "run", 0o700)
    env = {"XDG_RUNTIME_DIR": str(run), "PTC_CONFIG": str(cfg)}
    try:
        for cell in range(2):
            r = iso.run_ptc(["run", "--session", "s", "-c", attempts(".github/workflows", work)],
                            cwd=work, env=env)
            assert r.rc == 0 and r.data and r.data.get("status") == "success", r
            assert r.data["cell"] == cell + 1, r
            res = json.loads(r.data["output"])
            denied = {k: v for k, v in res.items() if k not in ELSEWHERE}
            assert all(v == "denied" for v in denied.values()), res
            assert res["subdir file"] == "wrote" and res["tmp"] == "wrote", res
            assert snapshot(prot) == before
    finally:
        kill_pids(processes_marked(str(iso.tmp)))


@needs_landlock
@pytest.mark.parametrize("level", ["namespaces", "landlock"])
def test_tmp_stays_usable_when_the_project_lies_under_tmp(iso, level):
    """A project under /tmp puts /tmp on the way to the protected tree: nothing new directly
    in it. Under the namespaces layer the script's TMPDIR and HOME move to its private
    /dev/shm, so tempfile still finds a directory; with Landlock alone its TMPDIR is the
    host's (here a directory beside the project, which stays writable)."""
    work, prot = make_project(iso, iso.tmp)
    before = snapshot(prot)
    cfg = rule_config(iso, [".github/workflows/**"])
    code = attempts(".github/workflows", work).replace(
        "print(json.dumps(res))",
        "res['where'] = tempfile.gettempdir()\nprint(json.dumps(res))")
    res, _ = run_script(iso, level, cfg, code, work)
    where = res.pop("where")
    check(res, prot, before, work)
    assert where == ("/dev/shm" if level == "namespaces" else str(iso.tmpdir)), where
