# SPDX-License-Identifier: MIT
"""The suite must hold on a busy machine (docs/testing.md, "Tests and time").

No test may bound a wall time from above below FLOOR_SECONDS: a check that "it returned in
time" or "the calls ran at once" is a barrier, a count or the behaviour itself, and the
only upper bounds are hang guards far above the expected time. A bound below the floor
that is a genuine hang guard (at least 10x its expected time) carries the marker
"hang guard" on its line. Lower bounds (nothing fires early) are fine and not checked.

The scan is line-based and looks at the forms the suite uses: Python asserts on elapsed,
monotonic(), duration, took, *_ms, wall...; C asserts on now_usec()/dt/elapsed_ms against
USEC_PER_SEC/USEC_PER_MSEC, and `if (dt >= ...) fail_msg`. test_scanner_catches_* keep the
scan honest: it must flag the forms it is meant to catch.
"""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FLOOR_SECONDS = 10.0
MARKER = "hang guard"

# A time-like operand: the names the suite measures wall time with.
PY_TIME = re.compile(r"\b(elapsed|monotonic\(\)|duration\w*|took|el|dt|wall\w*|\w*_ms|ms|"
                     r"parallel_\w+)\b|monotonic\(\)")
PY_UPPER = re.compile(r"<=?\s*([0-9][0-9_]*(?:\.[0-9]+)?)\b")
PY_MS = re.compile(r"(_ms\b|\[\"ms\"\]|\bms\b)")

C_UNITS = {"USEC_PER_SEC": 1.0, "USEC_PER_MSEC": 1e-3}
C_UPPER = re.compile(r"<\s*(?:([0-9.]+)\s*\*\s*)?(?:([0-9.]+)\s*\*\s*)?(USEC_PER_SEC|USEC_PER_MSEC)")
C_TIME = re.compile(r"now_usec\(\)\s*-|\bdt\b|\btook\b|\belapsed_ms\(|\bms\b|\bsecs\b|now_s\(\)")
C_PLAIN = re.compile(r"(\belapsed_ms\([^)]*\)|\bms|\bdt|\bsecs)\s*(<|>=?)\s*([0-9.]+)\b(?!\s*\*)")
C_IF_UPPER = re.compile(r"if \(.*\b(dt|secs|ms)\s*>=?\s*(?:([0-9.]+)\s*\*\s*)?(USEC_PER_SEC|USEC_PER_MSEC)?")


def py_violations(line):
    """Upper bounds (seconds) below the floor on one Python line, [] when none."""
    s = line.strip()
    if MARKER in line:
        return []
    if not (s.startswith("assert ") or "monotonic() -" in s):
        return []
    if not PY_TIME.search(s):
        return []
    out = []
    for m in PY_UPPER.finditer(s):
        before = s[:m.start()]
        # the operand left of the "<": a time-like name must be in it
        left = re.split(r"\band\b|\bor\b|,\s|assert |[<>]=?|==|\bnot\b", before)[-1]
        if not PY_TIME.search(left):
            continue
        v = float(m.group(1).replace("_", ""))
        if PY_MS.search(left):
            v /= 1000.0
        if v < FLOOR_SECONDS:
            out.append(v)
    return out


def c_violations(line):
    """Upper bounds (seconds) below the floor on one C line, [] when none."""
    if MARKER in line or not C_TIME.search(line):
        return []
    out = []
    s = line.split("//", 1)[0]
    if "assert_true(" in s or "fail_msg" in s or s.strip().startswith("if ("):
        for m in C_UPPER.finditer(s):
            v = C_UNITS[m.group(3)]
            for g in (m.group(1), m.group(2)):
                if g:
                    v *= float(g)
            out.append(v)
        for m in C_PLAIN.finditer(s):
            name, op, num = m.group(1), m.group(2), float(m.group(3))
            if op.startswith(">") and not s.strip().startswith("if ("):
                continue  # a lower bound in an assert
            if op == "<" and s.strip().startswith("if ("):
                continue  # "if (secs < 0.9 ...)": a lower bound that fails
            out.append(num / 1000.0 if "ms" in name else num)
        m = C_IF_UPPER.search(s)
        if m and m.group(3):
            v = C_UNITS[m.group(3)] * float(m.group(2) or 1)
            out.append(v)
    return [v for v in out if v < FLOOR_SECONDS]


def scan():
    bad = []
    for d, pat, fn in (("tests/integration", "*.py", py_violations),
                       ("tests/python", "*.py", py_violations),
                       ("tests/unit", "*.c", c_violations)):
        for p in sorted((REPO / d).glob(pat)):
            if p.name == Path(__file__).name:
                continue
            for i, line in enumerate(p.read_text(encoding="utf-8", errors="replace")
                                     .splitlines(), 1):
                v = fn(line)
                if v:
                    bad.append(f"{p.relative_to(REPO)}:{i}: {line.strip()}  "
                               f"(bound {min(v):g} s < {FLOOR_SECONDS:g} s)")
    return bad


def test_no_wall_time_upper_bound_below_the_floor():
    bad = scan()
    assert not bad, (
        "wall-time upper bounds below the floor (use a barrier, a count or the behaviour; "
        f"a genuine hang guard >= 10x the expected time says '{MARKER}' on its line):\n"
        + "\n".join(bad))


def samples(*lines):
    """The sample lines, which spell the keyword ASSERT so that no scan of the sources (this
    suite's or another's) takes them for assertions of this file."""
    return [line.replace("ASSERT", "assert") for line in lines]


def test_scanner_catches_python_forms():
    for line in samples("    ASSERT r.elapsed < 3, r",
                        "    ASSERT elapsed < 4.5, elapsed  # serial would be >= 6 s",
                        "    ASSERT time.monotonic() - t0 < 2.8, 'not at once'",
                        "    ASSERT 0.9 <= out[\"elapsed\"] < 3.0, r",
                        "    ASSERT 1.9 <= r.data[\"duration_seconds\"] <= 3.0, r",
                        "    ASSERT d[\"wall_ms\"] < 2500, d",
                        "    ASSERT data[\"exit\"][\"after_close_ms\"] < 1900, d",
                        "        ASSERT 0.9 < time.monotonic() - t0 < 5, r",
                        "    ASSERT el < 2.5, f'{el}'",
                        "    ASSERT took < 5, took"):
        assert py_violations(line), line
    for line in samples("    ASSERT r.elapsed < 25, r  # hang guard",
                        "    ASSERT time.monotonic() - t > 8  # not early",
                        "    ASSERT 0.6 <= r.data[\"duration_seconds\"] <= r.elapsed + 0.05, r",
                        "    ASSERT d[\"calls\"][2][\"ms\"] < 15000, d",
                        "    ASSERT r.elapsed >= 1.9, r.elapsed",
                        "    ASSERT len(r.stdout) < 200_000, r"):
        assert not py_violations(line), line


def test_scanner_catches_c_forms():
    for line in samples("        ASSERT_true(now_usec() - t0 < 5 * USEC_PER_SEC);",
                        "        ASSERT_true(dt < 1800 * USEC_PER_MSEC);",
                        "        ASSERT_true(now_usec() - t0 < 8 * 200 * USEC_PER_MSEC);",
                        "        ASSERT_true(elapsed_ms(start) < 100);",
                        "        ASSERT_true(ms < 900);",
                        "        ASSERT_true(dt < 5.0);",
                        "        if (dt >= 1500 * USEC_PER_MSEC)",
                        "        if (secs < 0.9 || secs > 2.5)"):
        assert c_violations(line), line
    for line in samples("        ASSERT_true(dt >= USEC_PER_SEC);",
                        "        ASSERT_true(now_usec() - t0 >= 90 * USEC_PER_MSEC);",
                        "        ASSERT_true(dt < 30 * USEC_PER_SEC); /* hang guard */",
                        "        ASSERT_true(now_usec() - t0 < 10 * USEC_PER_SEC);",
                        "        ASSERT_true(ms >= 290);"):
        assert not c_violations(line), line
