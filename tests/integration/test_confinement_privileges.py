# SPDX-License-Identifier: MIT
"""Nothing a confined script leaves in the working directory carries privileges
out of the sandbox (docs/isolation.md, "Files that carry privileges").

The working directory is on the host, and as root it is idmapped so that what
the script creates is owned by root on disk: a setuid copy of a program made
there would give every local user root. Under auto (every layer working here)
and strict the script can set no set-user-ID or set-group-ID bit through any
call, nor file capabilities, nor make device nodes or hard links to the host's
set-id programs; each refusal is checked from the script (the Python
exception) and from the host (os.stat of what is left in the directory). Under
none nothing is confined: the same script is shown to work there. The last
test runs auto without the namespaces layer (a working directory of /), where
the script keeps its user's rights, root's capabilities included.

Runs as the current user ("root" in CI) and as an unprivileged one, like
test_isolation.py.
"""

import os
import platform
import shutil
import stat
from pathlib import Path

import pytest

from conftest import ptc_binary
from isolation_util import as_json, iso_fixture, script, short_args, strict_missing
from isolation_util import iso_user, iso_user_binary  # noqa: F401  (pytest fixtures)

if strict_missing(ptc_binary()):
    pytest.skip("--isolation strict is not available in this build", allow_module_level=True)

SETID = stat.S_ISUID | stat.S_ISGID
# fchmodat2(2) (Linux 6.6) and openat2(2) (5.6): the same numbers on these (since Linux 5.1).
UNIFIED_NUMBERS = platform.machine() in ("x86_64", "aarch64", "riscv64")
REFUSED = "PermissionError:EPERM"


def has_capability(bit):
    """True when this test process has capability @bit (a container's root may lack some)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> bit & 1)
    return False


def setuid_program():
    """A set-user-ID root program of the host under /usr (visible in the sandbox), or None."""
    for name in ("su", "passwd", "mount", "chsh", "newgrp", "sudo"):
        p = Path("/usr/bin") / name
        try:
            st = p.stat()
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_mode & stat.S_ISUID and st.st_uid == 0:
            return str(p)
    return None


iso = iso_fixture("ptcp-", 0o755)


# Every way to make a file with privileges in the working directory (WORK): one
# attempt each, "ok" or "ExceptionType:ERRNO". The file names are checked from
# the host afterwards.
ATTEMPTS = r"""
import shutil, stat
os.chdir(WORK)
ID = "/usr/bin/id"
AT_FDCWD, AT_EMPTY_PATH = -100, 0x1000
res = {}

def t(name, fn):
    try:
        fn()
        res[name] = "ok"
    except OSError as e:
        res[name] = type(e).__name__ + ":" + errno.errorcode.get(e.errno, str(e.errno))

def raw(nr, *args):
    r, err = sc(nr, *args)
    if err:
        raise OSError(getattr(errno, err, 0), err)

def created(path, mode=0o755):
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, mode))

def fchmod_suid():
    created("fchmod")
    fd = os.open("fchmod", os.O_WRONLY)
    os.fchmod(fd, 0o4755)

def chmod_proc_fd():
    created("proc-fd")
    fd = os.open("proc-fd", os.O_RDONLY)
    os.chmod(f"/proc/self/fd/{fd}", 0o6755)

def fchmodat2():
    created("fchmodat2")
    raw(452, AT_FDCWD, b"fchmodat2", 0o4755, 0)

def tmpfile():
    fd = os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o6755)
    raw(265 if os.uname().machine == "x86_64" else 37,  # linkat
        fd, b"", AT_FDCWD, b"tmpfile", AT_EMPTY_PATH)

def openat2():
    # struct open_how {flags, mode, resolve}
    how = (ctypes.c_uint64 * 3)(os.O_CREAT | os.O_WRONLY, 0o4755, 0)
    r = raw(437, AT_FDCWD, b"openat2", ctypes.byref(how), ctypes.sizeof(how))

def copy_with_caps():
    shutil.copyfile(ID, "caps")
    os.chmod("caps", 0o755)
    # VFS_CAP_REVISION_2, effective, permitted = CAP_SETUID (7)
    os.setxattr("caps", "security.capability",
                bytes.fromhex("01000002" "80000000" "00000000" "00000000" "00000000"))

def copy_chmod(name, mode):
    shutil.copyfile(ID, name)
    os.chmod(name, 0o755)
    os.chmod(name, mode)

t("chmod_suid", lambda: copy_chmod("chmod-suid", 0o4755))
t("chmod_sgid", lambda: copy_chmod("chmod-sgid", 0o2755))
t("fchmod", fchmod_suid)
t("chmod_proc_fd", chmod_proc_fd)
if UNIFIED:
    t("fchmodat2", fchmodat2)
    t("openat2", openat2)
t("open_suid", lambda: created("open-suid", 0o4755))
t("open_sgid", lambda: created("open-sgid", 0o2755))
t("creat", lambda: raw(85, b"creat", 0o4755) if os.uname().machine == "x86_64"
  else created("creat", 0o4755))
t("tmpfile", tmpfile)
t("mknod_reg", lambda: os.mknod("mknod-reg", stat.S_IFREG | 0o4755))
t("mkdir_sgid", lambda: os.mkdir("mkdir-sgid", 0o2777))
t("chmod_dir_sgid", lambda: (os.mkdir("dir-sgid"), os.chmod("dir-sgid", 0o2775)))
t("setcap", copy_with_caps)
t("mknod_chr", lambda: os.mknod("chr", stat.S_IFCHR | 0o666, os.makedev(1, 3)))
t("mknod_blk", lambda: os.mknod("blk", stat.S_IFBLK | 0o600, os.makedev(7, 0)))
if SUID_PROGRAM:
    t("link_setuid", lambda: os.link(SUID_PROGRAM, "link-setuid"))
t("chown_root", lambda: (created("chown"), os.chown("chown", 0, 0)))
emit(res)
"""

SETID_ATTEMPTS = ["chmod_suid", "chmod_sgid", "fchmod", "chmod_proc_fd", "open_suid",
                  "open_sgid", "creat", "tmpfile", "mknod_reg", "mkdir_sgid", "chmod_dir_sgid"]


def attempt_all(iso, level, *opts, link=True):
    suid = setuid_program() if link else None
    r = iso.run(script(ATTEMPTS, WORK=str(iso.workdir), UNIFIED=UNIFIED_NUMBERS,
                       SUID_PROGRAM=suid), "--isolation", level, *opts)
    r.args = short_args(r.args)
    return as_json(r), r


def host_view(workdir):
    """{name: (mode, uid, capability xattr present)} of what the run left."""
    seen = {}
    for name in os.listdir(workdir):
        st = os.lstat(workdir / name)
        caps = False
        if stat.S_ISREG(st.st_mode):
            try:
                os.getxattr(workdir / name, "security.capability")
                caps = True
            except OSError:
                pass
        seen[name] = (st.st_mode, st.st_uid, caps)
    return seen


def assert_nothing_privileged(iso, d, r, namespaces=True):
    """Nothing privileged on the host, and every attempt refused in the script."""
    seen = host_view(iso.workdir)
    for name, (mode, uid, caps) in seen.items():
        assert not mode & SETID, (name, oct(mode), r)
        assert not (stat.S_ISCHR(mode) or stat.S_ISBLK(mode)), (name, oct(mode), r)
        assert not caps, (name, r)
        # What the script made is the invoking user's.
        assert uid == iso.uid, (name, uid, r)
    # Refused before anything was created.
    for name in ("open-suid", "open-sgid", "creat", "tmpfile", "mknod-reg", "mkdir-sgid",
                 "chr", "blk", "link-setuid", "openat2"):
        assert name not in seen, (name, r)
    # Refused on a file that stays, with its mode as it was.
    for name in ("chmod-suid", "chmod-sgid", "fchmod", "proc-fd", "caps"):
        assert stat.S_IMODE(seen[name][0]) == 0o755, (name, oct(seen[name][0]), r)

    for k in SETID_ATTEMPTS:
        assert d[k] == REFUSED, (k, d, r)
    if UNIFIED_NUMBERS:
        assert d["fchmodat2"] == REFUSED, (d, r)
        # ENOSYS: libc and Python fall back to openat(2), whose mode the filter reads.
        assert d["openat2"] == "OSError:ENOSYS", (d, r)
    # As a file system without extended attributes answers (cp -p and install go on).
    assert d["setcap"] in ("OSError:EOPNOTSUPP", "OSError:ENOTSUP"), (d, r)
    assert d["mknod_chr"] == REFUSED and d["mknod_blk"] == REFUSED, (d, r)
    if "link_setuid" in d:
        assert d["link_setuid"] in ("OSError:EXDEV", REFUSED), (d, r)
    if namespaces:
        # Only the script's own ids are mapped in its user namespace.
        assert d["chown_root"] in ("OSError:EINVAL", REFUSED), (d, r)


@pytest.mark.parametrize("level", ["auto", "strict"])
def test_no_file_with_privileges_leaves_the_sandbox(iso, level):
    d, r = attempt_all(iso, level)
    assert_nothing_privileged(iso, d, r)


def test_without_confinement_the_same_attempts_work(iso):
    """The control: under none the script's calls are the kernel's to judge."""
    d, r = attempt_all(iso, "none")
    seen = host_view(iso.workdir)
    assert d["chmod_suid"] == "ok" and d["open_suid"] == "ok", (d, r)
    assert seen["chmod-suid"][0] & stat.S_ISUID, r
    assert seen["open-suid"][0] & stat.S_ISUID, r
    assert seen["chmod-suid"][1] == iso.uid, r
    if iso.is_root and has_capability(31):  # CAP_SETFCAP
        assert d["setcap"] == "ok" and seen["caps"][2], (d, r)
    if iso.is_root and has_capability(27):  # CAP_MKNOD
        assert d["mknod_chr"] == "ok" and stat.S_ISCHR(seen["chr"][0]), (d, r)


def test_copying_tools_still_work(iso):
    """The refusals break no ordinary copy: cp -p, cp -a and install preserve what they
    may (their xattr and ACL calls get EOPNOTSUPP and are skipped); a copy of a setuid
    program loses the bit (cp -p drops it itself, as it cannot keep root as the owner)."""
    suid = setuid_program()
    r = iso.run(script(r"""
        import subprocess
        os.chdir(WORK)
        os.mkdir("tree")
        with open("tree/f", "w") as f:
            f.write("x")
        os.chmod("tree/f", 0o640)
        def run(*argv):
            return subprocess.run(argv, capture_output=True).returncode
        res = {"cp_p": run("cp", "-p", "tree/f", "f-p"),
               "cp_a": run("cp", "-a", "tree", "tree-a"),
               "install": run("install", "-m", "0750", "tree/f", "f-installed")}
        if SUID_PROGRAM:
            res["cp_suid"] = run("cp", SUID_PROGRAM, "suid-copy")
            res["cp_p_suid"] = run("cp", "-p", SUID_PROGRAM, "suid-copy-p")
        emit(res)
        """, WORK=str(iso.workdir), SUID_PROGRAM=suid), "--isolation", "strict")
    r.args = short_args(r.args)
    d = as_json(r)
    assert (d["cp_p"], d["cp_a"], d["install"]) == (0, 0, 0), (d, r)
    w = iso.workdir
    assert stat.S_IMODE(os.stat(w / "f-p").st_mode) == 0o640, r
    assert stat.S_IMODE(os.stat(w / "tree-a" / "f").st_mode) == 0o640, r
    assert stat.S_IMODE(os.stat(w / "f-installed").st_mode) == 0o750, r
    if suid:
        assert d["cp_suid"] == 0 and d["cp_p_suid"] == 0, (d, r)
        for name in ("suid-copy", "suid-copy-p"):
            assert not os.stat(w / name).st_mode & SETID, (name, r)


def test_without_the_namespaces_layer(iso):
    """auto where the kernel refuses user namespaces (a limit of 0, set in a user namespace
    of the test's own: `unshare -Ur`) runs without the namespaces layer: the script keeps
    its user's rights (root's in that namespace), and seccomp alone refuses.
    Hard links are left out: without the mount boundary, a link to a host program is the
    kernel's protected_hardlinks to judge, and root may link what it likes. (A working
    directory of / used to be the way here; it is refused now: test_workdir.py.)"""
    unshare = shutil.which("unshare")
    if not unshare:
        pytest.skip("no unshare(1)")
    wrapper = iso.tmp / "ptc-no-userns"
    wrapper.write_text("#!/bin/sh\n"
                       f"exec {unshare} -Ur sh -c "
                       "'echo 0 > /proc/sys/user/max_user_namespaces && exec \"$0\" \"$@\"' "
                       f"{iso.bin} \"$@\"\n")
    wrapper.chmod(0o755)
    iso.own(wrapper)
    real, iso.bin = iso.bin, wrapper
    try:
        probe = iso.run_ptc(["--version"])
        if probe.rc != 0:
            pytest.skip(f"cannot limit user namespaces in a user namespace: {probe.stderr}")
        d, r = attempt_all(iso, "auto", link=False)
    finally:
        iso.bin = real
    assert "running without the namespaces layer" in r.stderr, r
    assert any("running without the namespaces layer" in w for w in r.data["warnings"]), r
    assert_nothing_privileged(iso, d, r, namespaces=False)
