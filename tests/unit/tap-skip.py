#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Run a cmocka test program and pass its TAP output on, with skipped tests
spelled the way TAP spells them.

cmocka 1.1.5 (Debian 12) prints a skipped test as "not ok N # SKIP name",
which meson's TAP parser counts as a failure; TAP's skip is "ok N # SKIP".
Everything else, stderr and the exit status included, passes through.
"""

import re
import subprocess
import sys

proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE)
for line in proc.stdout:
    sys.stdout.buffer.write(re.sub(rb"^not ok (\d+) # SKIP", rb"ok \1 # SKIP", line))
    sys.stdout.buffer.flush()
rc = proc.wait()
# A test program killed by a signal: the shell's convention, never a pass.
sys.exit(128 - rc if rc < 0 else rc)
