# SPDX-License-Identifier: MIT
"""Redaction fails closed (docs/protocol.md, "Redaction"): when the redaction of the
output, the spill file or a --log preview fails, none of the text goes out.

The failure is real: tests/lib/fault-preload.c (built next to the binary, under tests/)
is preloaded into ptc and, with PTC_TEST_FAIL_MATCH_DATA=1, makes every
pcre2_match_data_create() return NULL, as PCRE2 does when its allocation fails. The
shim takes itself out of the environment, so the script runs without it. Tool results
are redacted by value only (no PCRE2): their failure is tested in tests/unit/test-rpc.c
with injected allocation failures."""

import json
import os
from pathlib import Path

import pytest

from conftest import expect, ptc_binary

KEY = "sk-abcdefghijklmnop1234"  # a vendor-prefixed key: only the pattern passes hide it
MASKED = "sk-abc...1234"


def shim():
    p = Path(ptc_binary()).resolve().parent / "tests" / "libptc-fault-preload.so"
    if not p.is_file():
        pytest.skip(f"{p} not built (meson with tests enabled builds it)")
    return str(p)


def env(fail):
    e = {"LD_PRELOAD": shim(),
         # gcc's ASan wants its runtime first in the library list; the shim comes before it.
         "ASAN_OPTIONS": ":".join(filter(None, [os.environ.get("ASAN_OPTIONS"),
                                                "verify_asan_link_order=0"]))}
    if fail:
        e["PTC_TEST_FAIL_MATCH_DATA"] = "1"
    return e


def spill_files(ptc):
    d = ptc.xdg_cache / "ptc" / "spill"
    return sorted(os.listdir(d)) if d.is_dir() else []


def test_shim_alone_changes_nothing(ptc):
    r = ptc.run(f"print('key {KEY}')", env=env(False))
    expect(r, 0, "success")
    assert r.output == f"key {MASKED}\n", r


def test_output_withheld_when_redaction_fails(ptc):
    r = ptc.run(f"import sys; print('key {KEY}'); print('err {KEY}', file=sys.stderr)",
                env=env(True))
    expect(r, 1, "error")
    assert r.data["error"] == "Output withheld: redaction failed (Cannot allocate memory)", r
    assert r.output == "", r
    assert r.data["exit_code"] == 0, r
    assert KEY.encode() not in r.stdout, r
    assert KEY not in r.stderr, r


def test_failing_script_output_withheld_too(ptc):
    r = ptc.run(f"raise SystemExit('bad {KEY}')", env=env(True))
    expect(r, 1, "error")
    assert r.data["error"].startswith("Output withheld: redaction failed"), r
    assert KEY.encode() not in r.stdout, r


def test_spill_file_not_left_when_redaction_fails(ptc):
    code = f"import sys; sys.stdout.write(('x' * 99 + '\\n') * 2000 + 'key {KEY}\\n')"
    ok = ptc.run(code, env=env(False))
    expect(ok, 0, "success")
    assert ok.data["stdout_truncated"] is True, ok
    assert KEY not in open(ok.data["stdout_spill_path"]).read()
    before = spill_files(ptc)
    assert len(before) == 1, before

    r = ptc.run(code, env=env(True))
    expect(r, 1, "error")
    assert "stdout_spill_path" not in r.data, r
    assert "stdout_truncated" not in r.data, r
    assert KEY.encode() not in r.stdout, r
    assert spill_files(ptc) == before  # no new spill, no temporary copy


def test_log_preview_dropped_when_redaction_fails(ptc):
    code = f"""
from hermes_tools import write_file
r = write_file('a.txt', '{KEY}')
assert r.get('bytes_written') == {len(KEY)}, r
"""
    ok = ptc.run(code, "--log", env=env(False))
    expect(ok, 0, "success")
    assert MASKED in ok.data["tool_calls"][0]["args_preview"], ok

    # No output: only the preview's redaction runs (and fails).
    r = ptc.run(code, "--log", env=env(True))
    expect(r, 0, "success")
    calls = r.data["tool_calls"]
    assert [c["tool"] for c in calls] == ["write_file"], r
    assert calls[0]["args_preview"] == "", r
    assert calls[0]["ok"] is True, r
    assert KEY.encode() not in r.stdout, r


def test_event_pieces_withheld_when_redaction_fails(ptc):
    """A long line's pieces (cut where no secret is, core/output/redact-stream.c) and the
    short lines: none goes out when its redaction fails; each is counted as dropped."""
    path = ptc.path("events.jsonl")
    code = f"import sys; sys.stdout.write('x' * 30000 + ' key {KEY} ' + 'y' * 30000 + '\\nend\\n')"
    r = ptc.run(code, "--events", str(path), env=env(True))
    expect(r, 1, "error")
    text = path.read_text(encoding="utf-8")
    assert KEY not in text and "xxxx" not in text, text[:500]
    events = [json.loads(line) for line in text.splitlines()]
    assert not [e for e in events if e["event"] == "output"], events
    assert events[-1]["event"] == "end" and events[-1]["events_dropped"] >= 2, events[-1]
