# SPDX-License-Identifier: MIT
"""The live status line of `ptc run` on a terminal (docs/observability.md): drawn on stderr
when it is a pty, redrawn in place, cleared at the end, never on stdout; absent on a pipe,
with --quiet and with TERM=dumb."""

import json
import os
import select
import subprocess
import time

SCRIPT = """
import time
from hermes_tools import terminal
print("out")
terminal("sleep 1.2")
time.sleep(0.3)
"""


def run_with_pty_stderr(ptc, args, env=None):
    master, slave = os.openpty()
    script = ptc.path("status.py")
    script.write_text(SCRIPT)
    p = subprocess.Popen([str(ptc.bin), "run", *args, str(script)], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=slave, env=ptc.make_env(env),
                         cwd=str(ptc.workdir), start_new_session=True)
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        elif p.poll() is not None:
            break
    out, _ = p.communicate(timeout=30)
    os.close(master)
    return p.returncode, out, seen


def test_drawn_on_a_terminal_and_cleared(ptc):
    rc, out, tty = run_with_pty_stderr(ptc, [])
    assert rc == 0, (out, tty)
    res = json.loads(out)  # stdout: the result JSON and nothing else
    assert res["status"] == "success" and res["output"] == "out\n"
    text = tty.decode("utf-8", "replace")
    assert "\r\x1b[Kptc " in text, repr(text)
    assert "1/50 calls" in text and "terminal: " in text and "sleep 1.2" in text, repr(text)
    assert text.endswith("\r\x1b[K"), repr(text[-80:])  # cleared at the end
    assert text.count("\r\x1b[Kptc ") >= 3, repr(text)  # redrawn while the call runs


def test_quiet_and_dumb_terminals_get_none(ptc):
    for args, env in (["--quiet"], None), ([], {"TERM": "dumb"}):
        rc, out, tty = run_with_pty_stderr(ptc, args, env)
        assert rc == 0 and json.loads(out)["status"] == "success"
        assert b"ptc " not in tty, (args, env, tty)


def test_a_pipe_gets_none(ptc):
    r = ptc.run("""
        from hermes_tools import terminal
        terminal("sleep 0.6")
        """)
    assert r.rc == 0 and r.stderr == "", r
