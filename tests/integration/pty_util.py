# SPDX-License-Identifier: MIT
"""ptc driven through a real pseudo-terminal that is its stdin and controlling terminal (the
policy prompt, the status line, relayed session asks)."""

import fcntl
import json
import os
import select
import subprocess
import termios
import time


class Pty:
    """ptc with a pty as its stdin and controlling terminal (and stderr with @stderr_tty);
    stdout is a pipe. @env: variables added to the test's environment (ptc.make_env())."""

    EXPECT_TIMEOUT = 30  # hang guards
    FINISH_TIMEOUT = 60

    def __init__(self, ptc, args=None, env=None, stderr_tty=False):
        self.master, self.slave = os.openpty()
        self.tty_path = os.ttyname(self.slave)
        self.seen = b""
        if args is not None:
            self.start(ptc, args, env, stderr_tty)

    def start(self, ptc, args, env=None, stderr_tty=False):
        slave = self.slave
        argv = [str(ptc.bin)] + [str(a) for a in args]
        if getattr(ptc, "user", None):  # an IsoPtc: ptc as that user, the terminal its own
            os.fchown(slave, ptc.uid, ptc.gid)
            argv = ptc.as_user(argv)

        def controlling_tty():
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.p = subprocess.Popen(argv, stdin=slave,
                                  stdout=subprocess.PIPE,
                                  stderr=slave if stderr_tty else subprocess.PIPE,
                                  env=ptc.make_env(env), cwd=str(ptc.workdir),
                                  preexec_fn=controlling_tty)
        os.close(slave)

    def read_for(self, seconds):
        """Read whatever the terminal shows for @seconds."""
        end = time.monotonic() + seconds
        got = b""
        while (left := end - time.monotonic()) > 0:
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                got += chunk
        self.seen += got
        return got

    def expect(self, text, timeout=None):
        """Read the terminal until @text shows up (after what was seen so far), at most
        @timeout (else EXPECT_TIMEOUT) seconds."""
        end = time.monotonic() + (timeout or self.EXPECT_TIMEOUT)
        while text.encode() not in self.seen:
            left = end - time.monotonic()
            assert left > 0, f"no {text!r} on the terminal; saw {self.seen!r}"
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    self.seen += os.read(self.master, 65536)
                except OSError:
                    break
        i = self.seen.index(text.encode()) + len(text)
        before, self.seen = self.seen[:i], self.seen[i:]
        return before.decode("utf-8", "replace")

    def send(self, s):
        os.write(self.master, s.encode())

    def finish(self, timeout=None):
        out, err = self.p.communicate(timeout=timeout or self.FINISH_TIMEOUT)
        os.close(self.master)
        return self.p.returncode, json.loads(out) if out.strip() else None, \
            (err or b"").decode()
