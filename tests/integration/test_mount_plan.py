# SPDX-License-Identifier: MIT
"""The sandbox's mount plan (docs/isolation.md, "The mount plan"): isolation auto
must run every layout that isolation none runs, with every layer, and nothing a
script writes may make a later run less confined.

Each layout is run under the default isolation (auto) and under none, as root
and as an unprivileged user (isolation_util.IsoPtc). Under auto the run must
succeed with no "isolation auto" warning (no layer dropped), the script must see
its own working directory and interpreter, and must be confined (no host /root
or scratch home, seccomp on, no new privileges).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import ptc_binary
from isolation_util import iso_fixture, strict_missing
from isolation_util import iso_user, iso_user_binary  # noqa: F401  (pytest fixtures)

if strict_missing(ptc_binary()):
    pytest.skip("--isolation strict is not available in this build", allow_module_level=True)

REAL_PYTHON = os.path.realpath(shutil.which("python3", path="/usr/bin:/bin") or "/usr/bin/python3")
VERSION = f"{sys.version_info[0]}.{sys.version_info[1]}"

# What the script reports: where it runs, which interpreter, and how confined it is.
PROBE = r'''
import json, os, sys
def status(name):
    for line in open("/proc/self/status"):
        if line.startswith(name + ":"):
            return line.split()[1]
print(json.dumps({
    "cwd": os.getcwd(),
    "executable": sys.executable,
    "prefix": sys.prefix,
    "uid": os.getuid(),
    "seccomp": status("Seccomp"),
    "nnp": status("NoNewPrivs"),
    "pid": os.getpid(),
    "home_secret_visible": os.path.exists(SECRET),
    "extra": EXTRA,
}))
'''


iso = iso_fixture("ptcm-", 0o755)


def probe(iso, cwd, level="auto", python=None, extra="None", env=None, args=()):
    """Run PROBE in @cwd (--cwd) under @level; (Result, decoded report or None)."""
    e = dict(env or {})
    if python:
        e["PATH"] = f"{Path(python).parent}:{iso.env['PATH']}"
    secret = iso.home / ".secret"
    if not secret.exists():
        iso.write(secret, "s3cret\n", 0o600)
    code = f"SECRET = {str(secret)!r}\nEXTRA = {extra}\n" + PROBE
    r = iso.run_ptc(["run", "--isolation", level, "--cwd", str(cwd), *args, "-c", code],
                    env=e, cwd=cwd)
    data = None
    if r.rc == 0 and r.data and r.data.get("status") == "success":
        data = json.loads(r.output)
    return r, data


def assert_runs_confined(iso, cwd, python=None, extra="None", env=None, args=()):
    """The layout runs under none, and under auto with every layer, in @cwd."""
    r, none = probe(iso, cwd, "none", python, extra, env, args)
    assert none is not None, f"the layout does not even run under none: {r!r}"
    r, d = probe(iso, cwd, "auto", python, extra, env, args)
    assert d is not None, r
    assert "isolation auto" not in r.stderr, f"a layer was dropped: {r!r}"
    assert d["cwd"] == none["cwd"], r
    assert d["executable"] == none["executable"], r
    assert d["prefix"] == none["prefix"], r
    assert d["seccomp"] == "2" and d["nnp"] == "1", r
    assert d["pid"] == 2, r  # pid 2 of its own pid namespace
    assert not d["home_secret_visible"], r
    if iso.is_root:
        assert d["uid"] != 0, r
    return d


def root_only(iso, why):
    if not iso.is_root:
        pytest.skip(f"{why}: needs ptc to run as root")


def link_python(d):
    d.mkdir(parents=True, exist_ok=True)
    p = d / "python3"
    p.symlink_to(REAL_PYTHON)
    return p


def copy_python(d, mode=0o755):
    d.mkdir(parents=True, exist_ok=True)
    p = d / "python3"
    shutil.copy2(REAL_PYTHON, p)
    os.chmod(p, mode)
    return p


def chown_tree(iso, top):
    for dirpath, dirnames, filenames in os.walk(top):
        iso.own(dirpath)
        for n in dirnames + filenames:
            iso.own(os.path.join(dirpath, n))


def make_venv(iso, where):
    r = subprocess.run([REAL_PYTHON, "-m", "venv", "--without-pip", str(where)],
                       capture_output=True, timeout=120)
    if r.returncode != 0:
        pytest.skip(f"python3 -m venv does not work here: {r.stderr[-300:]!r}")
    chown_tree(iso, where)
    return where / "bin" / "python"


# --- the layout of the report, and its relatives ----------------------------------


def test_python_beside_the_working_dir_under_a_0700_ancestor(iso):
    """X/bin/python3 -> a real python, working dir X/case/work, X mode 0700
    (owned by whoever runs ptc): the prefix X must not be bound whole above the
    working directory."""
    x = iso.tmp / "X"
    x.mkdir(mode=0o700)
    python = link_python(x / "bin")
    work = x / "case" / "work"
    work.mkdir(parents=True)
    chown_tree(iso, x)
    os.chmod(x, 0o700)
    assert_runs_confined(iso, work, python=python)


def test_real_python_copied_into_a_0700_directory(iso):
    """A real binary (not a link) in a 0700 directory of ptc's user: as root,
    the script runs as an unprivileged uid and must still execute it."""
    x = iso.tmp / "X"
    x.mkdir(mode=0o700)
    python = copy_python(x / "bin", 0o700)
    chown_tree(iso, x)
    os.chmod(x / "bin", 0o700)
    assert_runs_confined(iso, iso.workdir, python=python)


def test_working_dir_inside_a_0700_pythonpath_entry(iso):
    """A PYTHONPATH tree (bound read-only) above the working directory, 0700:
    the way down to the working directory stays open to the script."""
    x = iso.tmp / "X"
    work = x / "case" / "work"
    work.mkdir(parents=True)
    (x / "mod_in_x.py").write_text("VALUE = 42\n")
    chown_tree(iso, x)
    os.chmod(x, 0o700)
    d = assert_runs_confined(iso, work, env={"PYTHONPATH": str(x)},
                             extra="__import__('mod_in_x').VALUE")
    assert d["extra"] == 42


def test_symlinked_working_dir_and_interpreter_dir(iso):
    real = iso.mkdir(iso.tmp / "real-work")
    alias = iso.tmp / "alias-work"
    alias.symlink_to(real)
    pyreal = iso.tmp / "pyreal"
    link_python(pyreal / "bin")
    chown_tree(iso, pyreal)
    pyalias = iso.tmp / "pyalias"
    pyalias.symlink_to(pyreal)
    assert_runs_confined(iso, alias, python=pyalias / "bin" / "python3")


@pytest.mark.parametrize("where", ["var-tmp", "home", "root"])
def test_working_dir_in_common_places(iso, where):
    if where == "root":
        root_only(iso, "a working directory under /root")
        top = Path(tempfile.mkdtemp(prefix="ptcm-", dir="/root"))
    elif where == "home":
        top = iso.home / "project"
        top.mkdir()
    else:
        top = Path(tempfile.mkdtemp(prefix="ptcm-", dir="/var/tmp"))
    try:
        work = top / "work"
        work.mkdir()
        chown_tree(iso, top)
        assert_runs_confined(iso, work)
    finally:
        if where != "home":
            shutil.rmtree(top, ignore_errors=True)


# --- venvs, conda-like prefixes, pyenv --------------------------------------------


def test_venv_outside_the_working_dir(iso):
    venv = make_venv(iso, iso.tmp / "venv").parent.parent
    d = assert_runs_confined(iso, iso.workdir, env={"VIRTUAL_ENV": str(venv)},
                             args=("--mode", "project"))
    assert d["prefix"] == str(venv)


def test_venv_inside_the_working_dir(iso):
    venv = make_venv(iso, iso.workdir / ".venv").parent.parent
    d = assert_runs_confined(iso, iso.workdir, env={"VIRTUAL_ENV": str(venv)},
                             args=("--mode", "project"))
    assert d["prefix"] == str(venv)


def test_working_dir_inside_the_venv(iso):
    venv = make_venv(iso, iso.tmp / "venv").parent.parent
    work = iso.mkdir(venv / "work")
    d = assert_runs_confined(iso, work, env={"VIRTUAL_ENV": str(venv)},
                             args=("--mode", "project"))
    assert d["prefix"] == str(venv)


def test_conda_like_prefix(iso):
    """A prefix with its own binary, stdlib, conda-meta and ssl/cacert.pem."""
    prefix = iso.tmp / "conda"
    copy_python(prefix / "bin")
    (prefix / "lib").mkdir()
    (prefix / "lib" / f"python{VERSION}").symlink_to(f"/usr/lib/python{VERSION}")
    if not (prefix / "lib" / f"python{VERSION}" / "os.py").exists():
        pytest.skip(f"no /usr/lib/python{VERSION} to stand in for a conda stdlib")
    (prefix / "conda-meta").mkdir()
    (prefix / "ssl").mkdir()
    (prefix / "ssl" / "cacert.pem").write_text("not really a certificate\n")
    chown_tree(iso, prefix)
    d = assert_runs_confined(iso, iso.workdir, env={"CONDA_PREFIX": str(prefix)},
                             args=("--mode", "project"),
                             extra=f"open({str(prefix / 'ssl' / 'cacert.pem')!r}).read()")
    assert d["prefix"] == str(prefix)
    assert d["extra"] == "not really a certificate\n"


def test_pyenv_shim_first_on_path(iso):
    root_only(iso, "pyenv lives in /root here")
    shims = Path("/root/.pyenv/shims")
    if not (shims / "python3").exists():
        pytest.skip("no pyenv shims on this machine")
    assert_runs_confined(iso, iso.workdir, python=shims / "python3",
                         env={"PYENV_ROOT": "/root/.pyenv"})


def test_lone_binary_in_a_directory_of_another_user(iso):
    """A real binary in a 0700 directory of another user: only the binary is
    bound (on a 0755 way), so root's unprivileged script can run it."""
    root_only(iso, "a directory of another user")
    x = iso.tmp / "other"
    python = copy_python(x / "bin", 0o755)
    os.chown(x / "bin", 12345, 12345)
    os.chmod(x / "bin", 0o700)
    assert_runs_confined(iso, iso.workdir, python=python)


def test_interpreter_the_script_cannot_execute_fails_clearly(iso):
    """A binary only its owner (another user) may execute: root runs it under
    none; under auto, a clear error naming the path and the reason, never a bare
    exec error, and never a run with fewer layers."""
    root_only(iso, "a binary of another user")
    x = iso.tmp / "other"
    python = copy_python(x / "bin", 0o700)
    os.chown(python, 12345, 12345)
    r, none = probe(iso, iso.workdir, "none", python)
    assert none is not None, r
    r, d = probe(iso, iso.workdir, "auto", python)
    assert d is None and r.rc != 0, r
    assert "isolation auto" not in r.stderr, r
    assert str(python) in r.stderr and "not executable" in r.stderr, r


# --- nothing a script writes lowers a later run's confinement ------------------------


def test_planted_paths_never_lower_a_later_run(iso):
    """Run 1 plants, in the working directory, what could trip a mount plan:
    the project venv's python replaced by a symlink to an odd place, its lib by a
    symlink loop, a fifo for pyvenv.cfg, symlinks and a fifo where the staging
    directory's parents would go. Run 2 must be confined with every layer, or
    fail clearly; never run with less."""
    venv = make_venv(iso, iso.workdir / ".venv").parent.parent
    env = {"VIRTUAL_ENV": str(venv)}
    plant = r'''
import os
v = VENV
os.unlink(v + "/bin/python")
os.symlink("/proc/self/root/usr/bin/python3", v + "/bin/python")
os.rename(v + "/lib", v + "/lib.old")
os.symlink("lib", v + "/lib")
os.unlink(v + "/pyvenv.cfg")
os.mkfifo(v + "/pyvenv.cfg")
os.symlink("/", "rootlink")
os.mkfifo("fifo")
print("planted")
'''
    r = iso.run_ptc(["run", "--mode", "project", "-c", f"VENV = {str(venv)!r}\n" + plant],
                    env=env)
    assert r.rc == 0 and r.output == "planted\n", r
    r, d = probe(iso, iso.workdir, "auto", env=env, args=("--mode", "project"))
    assert "isolation auto" not in r.stderr, f"a layer was dropped: {r!r}"
    if d is None:
        assert r.rc != 0 and r.stderr.strip(), r
        return
    assert d["seccomp"] == "2" and d["nnp"] == "1" and d["pid"] == 2, r
    assert not d["home_secret_visible"], r


def test_planted_venv_python_is_never_run_outside_the_sandbox(iso):
    """The project venv's python replaced by a shell script: ptc may not run it
    unconfined (to probe its version) on the next start."""
    venv = make_venv(iso, iso.workdir / ".venv").parent.parent
    marker = iso.tmp / "ran-outside"
    iso.own(iso.tmp)
    plant = r'''
import os
p = VENV + "/bin/python"
os.unlink(p)
with open(p, "w") as f:
    f.write("#!/bin/sh\ntouch " + MARKER + "\nexec /usr/bin/python3 \"$@\"\n")
os.chmod(p, 0o755)
print("planted")
'''
    env = {"VIRTUAL_ENV": str(venv)}
    r = iso.run_ptc(["run", "--mode", "project", "-c",
                     f"VENV = {str(venv)!r}\nMARKER = {str(marker)!r}\n" + plant], env=env)
    assert r.rc == 0 and r.output == "planted\n", r
    r = iso.run_ptc(["run", "--mode", "project", "-c", "print('second')"], env=env)
    assert not marker.exists(), f"the planted interpreter ran outside the sandbox: {r!r}"
    assert "isolation auto" not in r.stderr, r


# --- mount flags ------------------------------------------------------------------


def test_binds_are_nosuid_and_nodev(iso):
    """Every bind (working dir, staging dir, /usr, interpreter trees) is nosuid,
    and nodev but for the device nodes; a setuid-root binary in the working
    directory does not raise the script's privileges."""
    root_only(iso, "a setuid-root binary")
    idbin = iso.workdir / "suid-id"
    shutil.copy2("/usr/bin/id", idbin)
    os.chown(idbin, 0, 0)
    os.chmod(idbin, 0o4755)
    extra = r'''[
        [l.split()[4], l.split(" - ")[0].split()[5]]
        for l in open("/proc/self/mountinfo")
    ] + [[__import__("subprocess").run(["./suid-id", "-u"], capture_output=True,
                                        text=True).stdout.strip(), "euid"]]'''
    d = assert_runs_confined(iso, iso.workdir, extra=extra)
    mounts = {m: opts.split(",") for m, opts in d["extra"][:-1]}
    euid = d["extra"][-1][0]
    assert euid == str(d["uid"]), d
    assert "nosuid" in mounts[str(iso.workdir)] and "nodev" in mounts[str(iso.workdir)], d
    for m, opts in mounts.items():
        if m in ("/", "/proc"):
            continue
        assert "nosuid" in opts, (m, opts)
        if not m.startswith("/dev/") or m == "/dev/shm":
            assert "nodev" in opts, (m, opts)
