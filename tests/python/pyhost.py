# SPDX-License-Identifier: MIT
"""Shared helpers of the Python package's tests (tests/python): the package from the
checkout's python/ directory, the library from $PTC_LIBRARY or the in-tree build, and an
`engine` fixture factory that closes what it made.

Not a conftest.py on purpose: tests/integration has one, imported by its tests as
`conftest`; this name keeps the two apart when both directories run in one session.
"""

import os
import shutil
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "python"))

import ptc  # noqa: E402

# An ASan build of the library is loaded after the sanitizer runtime (run-tests.sh --asan
# preloads it). This process has it now; the scripts and commands ptc starts are not
# instrumented and need not carry it (an interpreter probe under ASan can miss its 5 s).
ASAN_PRELOAD = os.environ.pop("LD_PRELOAD", None)

# Every wait in these tests is bounded by this, so a hang fails a test, never the suite.
HARD = 30.0


@pytest.fixture
def scratch():
    """A private, short directory under /tmp (AF_UNIX paths below it stay short)."""
    d = Path(tempfile.mkdtemp(prefix="ptcpy-", dir="/tmp"))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def make_engine(scratch):
    """make_engine(**options) -> a started-later ptc.Engine without a config file, in
    project mode at the scratch directory, closed after the test (the close is timed:
    closing must not hang)."""
    made = []

    def make(**options):
        options.setdefault("no_config_file", True)
        options.setdefault("cwd", str(scratch))
        e = ptc.Engine(**options)
        made.append(e)
        return e

    yield make
    for e in made:
        t0 = time.monotonic()
        e.close()
        assert time.monotonic() - t0 < HARD, "engine close took too long"


def script(text):
    return textwrap.dedent(text).lstrip("\n")


class Intervals:
    """Thread-safe record of (start, end) of tool runs, and the peak overlap."""

    def __init__(self):
        self.lock = threading.Lock()
        self.spans = []
        self.active = 0
        self.peak = 0

    def enter(self):
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        return time.monotonic()

    def leave(self, t0):
        with self.lock:
            self.active -= 1
            self.spans.append((t0, time.monotonic()))


def run_in_thread(fn, *args, **kw):
    """Start fn in a thread; returns (thread, box) where box["value"] / box["error"]."""
    box = {}

    def target():
        try:
            box["value"] = fn(*args, **kw)
        except BaseException as e:  # noqa: B036
            box["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t, box
