# SPDX-License-Identifier: MIT
"""Only a person answers a prompt (docs/security.md, "Approvals"; DESIGN §15), driven through
a real pseudo-terminal that is ptc's stdin and controlling terminal:

- nothing a script or a terminal command runs reaches that terminal: /dev/tty does not open
  for them (no controlling terminal), no descriptor of theirs is a terminal, and TIOCSTI into
  the user's terminal by its device path is refused, also as root (CAP_SYS_ADMIN) and with
  isolation none;
- input typed before the question is there answers nothing (the prompt flushes it);
- the status line does not redraw over the question;
- a session cell's ask is put at the client's terminal and the answer reaches the cell;
- where nobody can be asked, the tool result says policy.headless decided and why."""

import json
import os
import textwrap
import time

import pytest

from isolation_util import iso_fixture
from pty_util import Pty
from isolation_util import iso_user, iso_user_binary  # noqa: F401  (pytest fixtures)

# ptc as root and as an unprivileged user (through setpriv), each with its own scratch tree.
iso = iso_fixture("ptc-approvals-")

# A probe run as a terminal command and inside the script: can it reach the user's terminal?
PROBE = r'''
import errno, fcntl, json, os, sys, termios

def probe(tty_path):
    res = {}
    try:
        os.close(os.open("/dev/tty", os.O_RDWR))
        res["dev_tty"] = "opened"
    except OSError as e:
        res["dev_tty"] = errno.errorcode.get(e.errno, str(e.errno))
    fds = []
    for n in os.listdir("/proc/self/fd"):
        try:
            if os.isatty(int(n)):
                fds.append(n)
        except OSError:
            pass
    res["tty_fds"] = fds
    res["pidns"] = os.readlink("/proc/self/ns/pid")
    with open("/proc/self/status") as f:
        res["seccomp"] = [l.split()[1] for l in f if l.startswith("Seccomp:")][0]
    try:
        fd = os.open(tty_path, os.O_RDWR | os.O_NOCTTY)
    except OSError as e:
        res["tiocsti"] = "open: " + errno.errorcode.get(e.errno, str(e.errno))
        return res
    try:
        for ch in b"o\n":
            fcntl.ioctl(fd, termios.TIOCSTI, bytes([ch]))
        res["tiocsti"] = "pushed"
    except OSError as e:
        res["tiocsti"] = errno.errorcode.get(e.errno, str(e.errno))
    return res

if __name__ == "__main__":
    print(json.dumps(probe(sys.argv[1])))
'''


def wait_for(path, timeout=30):
    end = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.05)


# ---- nothing the script starts reaches the terminal --------------------------------------


@pytest.mark.parametrize("isolation", ["auto", "none"])
def test_terminal_commands_and_scripts_cannot_reach_the_users_terminal(iso, isolation):
    """Under isolation none the script itself is unconfined (docs/isolation.md): as root it
    could open the terminal by its path and push input; its terminal commands cannot."""
    probe = iso.write(iso.workdir / "probe.py", PROBE)  # the script sees its working dir
    iso.mkdir(iso.workdir / "victim")
    script = iso.path("inject.py")
    script.write_text(textwrap.dedent(f"""
        import json, sys
        from hermes_tools import terminal
        sys.path.insert(0, ".")
        cmd = terminal("python3 {probe} " + {{tty!r}})
        # What is under the command's /dev/pts, uncovered (as root it may unmount)?
        under = terminal("umount /dev/pts >/dev/null 2>&1; python3 {probe} " + {{tty!r}})
        own = None
        try:
            import probe
            own = probe.probe({{tty!r}})
        except Exception as e:
            own = {{"error": repr(e)}}
        r = terminal("rm -r victim")
        print(json.dumps({{"cmd": json.loads(cmd["output"]),
                           "under": json.loads(under["output"]), "script": own,
                           "rm": r.get("status", "allowed")}}))
        """))
    t = Pty(iso)
    # The script gets the terminal's path from the test, as an attacker would find it.
    script.write_text(script.read_text().replace("{tty!r}", repr(t.tty_path)))
    t.start(iso, ["run", "--isolation", isolation, str(script)])
    t.expect("Allow?")
    t.send("d\n")
    rc, res, err = t.finish()
    if res and res.get("status") == "error" and "isolation" in (res.get("error") or ""):
        pytest.skip(f"isolation {isolation} unavailable here: {res['error']}")
    assert rc == 0 and res["status"] == "success", (res, err)
    out = json.loads(res["output"])
    cmd = out["cmd"]
    # No controlling terminal, no terminal descriptor, no input pushed into the user's.
    assert cmd["dev_tty"] == "ENXIO", out
    assert cmd["tty_fds"] == [], out
    assert cmd["tiocsti"] != "pushed", out
    if iso.is_root:
        # Root keeps CAP_SYS_ADMIN, which passes the kernel's own check: the filter refuses.
        assert cmd["seccomp"] == "2", out
        if isolation == "none":
            # The host's /dev: root opens the device by its path; TIOCSTI is refused.
            assert cmd["tiocsti"] == "EPERM", out
        elif cmd["pidns"] != os.readlink("/proc/self/ns/pid"):
            # Its own pid and mount namespaces: the host's terminals are not in its
            # /dev/pts, nor under it.
            assert cmd["tiocsti"] == "open: ENOENT", out
            assert out["under"]["tiocsti"] == "open: ENOENT", out
        else:  # the kernel refused the namespaces: as under none
            assert cmd["tiocsti"] == "EPERM", out
    else:
        # No CAP_SYS_ADMIN: the kernel refuses TIOCSTI on a terminal that is not the
        # caller's controlling one (EIO where legacy TIOCSTI is off altogether).
        assert cmd["tiocsti"] in ("EPERM", "EIO") or cmd["tiocsti"].startswith("open:"), out
    own = out["script"]
    assert "error" not in own, out
    assert own["dev_tty"] in ("ENXIO", "ENOENT", "EACCES", "EPERM"), out
    assert own["tty_fds"] == [], out
    if isolation != "none" or not iso.is_root:
        assert own["tiocsti"] != "pushed", out
    # The prompt was answered by the person: a no.
    assert out["rm"] == "denied", out
    assert (iso.workdir / "victim").exists()


# ---- the prompt: typed-ahead input, the status line --------------------------------------


def test_input_typed_before_the_question_answers_nothing(ptc):
    (ptc.workdir / "victim").mkdir()
    script = ptc.path("ahead.py")
    script.write_text(textwrap.dedent("""
        import os, time
        from hermes_tools import terminal
        open("ready", "w").close()
        for _ in range(600):
            if os.path.exists("typed"):
                break
            time.sleep(0.05)
        print(terminal("rm -r victim")["status"])
        """))
    t = Pty(ptc, ["run", str(script)])
    wait_for(ptc.workdir / "ready")
    t.send("o\n")  # typed ahead, before any question
    (ptc.workdir / "typed").touch()
    t.expect("Allow?")
    t.send("d\n")
    rc, res, err = t.finish()
    assert rc == 0 and res["output"].strip() == "denied", (res, err)
    assert (ptc.workdir / "victim").exists()


def test_the_status_line_does_not_erase_the_question(ptc):
    (ptc.workdir / "victim").mkdir()
    script = ptc.path("status.py")
    script.write_text(textwrap.dedent("""
        import time
        from hermes_tools import terminal
        time.sleep(0.6)  # a few redraws of the status line first
        print(terminal("rm -r victim")["status"])
        """))
    t = Pty(ptc, ["run", str(script)], env={"TERM": "xterm"}, stderr_tty=True)
    t.expect("Allow? [o]nce, for this [s]ession, [d]eny")
    # Four times the redraw period: each redraw would start with "\r\e[K".
    after = t.read_for(1.0)
    assert b"\x1b[K" not in after and b"\r" not in after.replace(b"\r\n", b""), after
    t.send("d\n")
    rc, res, err = t.finish()
    assert rc == 0 and res["output"].strip() == "denied", (res, err)


# ---- a session cell's ask: relayed to the client's terminal --------------------------------


TWO_ASKS = """
from hermes_tools import terminal
a, b = terminal("rm -r a"), terminal("rm -r b")
print(a.get("status", "allowed"), b.get("status", "allowed"), "|", b.get("approval"))
"""


def test_a_session_cells_ask_is_put_at_the_clients_terminal(ptc, srv):
    (ptc.workdir / "a").mkdir()
    (ptc.workdir / "b").mkdir()
    # The session's state, so the cell is known to run in the server's session interpreter.
    r = ptc.run("x = 41", "--session", "s", input=b"")
    assert r.rc == 0, r
    t = Pty(ptc, ["run", "--session", "s", "-c", "print(x + 1)\n" + TWO_ASKS])
    prompt = t.expect("Allow? [o]nce, for this [s]ession, [d]eny")
    assert "terminal: rm -r a" in prompt and "recursive delete" in prompt, prompt
    t.send("d\n")
    prompt = t.expect("Allow?")
    assert "terminal: rm -r b" in prompt, prompt
    t.send("o\n")
    rc, res, err = t.finish()
    assert rc == 0 and res["status"] == "success", (res, err)
    assert res["output"] == "42\ndenied allowed | approved (recursive delete) by callback\n", res
    assert (ptc.workdir / "a").exists() and not (ptc.workdir / "b").exists()


def test_a_session_cell_without_a_terminal_says_the_headless_rule_decided(ptc, srv):
    (ptc.workdir / "a").mkdir()
    (ptc.workdir / "b").mkdir()
    r = ptc.run(TWO_ASKS, "--session", "s", input=b"")
    assert r.rc == 0 and r.data["status"] == "success", r
    # The server's policy.headless (allow by default) decided, and the result says so.
    out = r.data["output"]
    assert out.startswith("allowed allowed | not asked (recursive delete): policy.headless is "
                          "allow, and no person could be asked"), out
    assert not (ptc.workdir / "a").exists()



def test_an_unanswered_relayed_ask_is_withdrawn_and_denied(ptc, srv):
    # The server's configuration: the default file, which the server started here reads.
    (ptc.xdg_config / "ptc").mkdir()
    (ptc.xdg_config / "ptc" / "config.yaml").write_text("policy:\n  approval_timeout: 2\n")
    (ptc.workdir / "a").mkdir()
    t = Pty(ptc, ["run", "--session", "s", "-c",
                  'from hermes_tools import terminal\nr = terminal("rm -r a")\n'
                  'print(r["status"], "|", r["error"])'])
    t.expect("Allow?")
    t.expect("no answer: denied")  # the server withdrew it: the prompt ends
    rc, res, err = t.finish()
    assert rc == 0 and res["status"] == "success", (res, err)
    assert res["output"].startswith("denied |") and "nobody answered within 2 s" in \
        res["output"], res
    assert (ptc.workdir / "a").exists()


def test_ctrl_c_at_a_relayed_prompt_interrupts_the_cell(ptc, srv):
    (ptc.workdir / "a").mkdir()
    t = Pty(ptc, ["run", "--session", "s", "-c",
                  'from hermes_tools import terminal\nterminal("rm -r a")\nprint("ran on")'])
    t.expect("Allow?")
    t.send("\x03")  # the terminal's interrupt character: SIGINT to the client
    rc, res, err = t.finish()
    assert res is not None and res["status"] == "interrupted", (rc, res, err)
    assert "ran on" not in res.get("output", ""), res
    assert (ptc.workdir / "a").exists()
