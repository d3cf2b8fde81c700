# SPDX-License-Identifier: MIT
"""One execution end to end: result shape, statuses, texts (docs/contracts.md 4,
docs/seed.md 1.13 and 3.1)."""

import re
import shutil
import subprocess
import time

import pytest

from conftest import expect


def test_hello_world(ptc):
    r = ptc.run('print("hello world")')
    expect(r, 0, "success")
    d = r.data
    assert d["output"] == "hello world\n"
    assert d["tool_calls_made"] == 0
    assert d["exit_code"] == 0
    assert "error" not in d


def test_result_field_types(ptc):
    r = ptc.run("import time; time.sleep(0.2); print('x')")
    expect(r, 0, "success")
    d = r.data
    assert isinstance(d["status"], str)
    assert isinstance(d["output"], str)
    assert type(d["tool_calls_made"]) is int
    assert type(d["exit_code"]) is int
    dur = d["duration_seconds"]
    assert isinstance(dur, (int, float)) and not isinstance(dur, bool)
    assert round(dur, 2) == dur, f"duration_seconds has more than 2 decimals: {dur}"
    assert 0.2 <= dur <= r.elapsed + 0.05, (dur, r.elapsed)


def test_duration_has_at_most_two_decimals_in_the_text(ptc):
    r = ptc.run("import time; time.sleep(0.123)")
    expect(r, 0, "success")
    m = re.search(rb'"duration_seconds":\s*([0-9.eE+-]+)', r.stdout)
    assert m, r
    assert re.fullmatch(rb"\d+(\.\d{1,2})?", m.group(1)), m.group(1)


def test_no_tool_script_returns_fast(ptc):
    # The seed waited up to 3 s in accept() for a script that never calls a tool. Timed
    # from the script's last statement to ptc's exit (CLOCK_MONOTONIC is the host's in the
    # sandbox), not the whole run: start-up on a busy machine is not what is measured here.
    stamp = ptc.workdir / "end.stamp"
    r = ptc.run(f"import time\nprint('quick')\nopen({str(stamp)!r}, 'w').write(repr(time.monotonic()))")
    after = time.monotonic()
    expect(r, 0, "success")
    assert after - float(stamp.read_text()) < 2.5, r  # hang guard (50x): not the seed's 3 s


def test_multiple_prints_in_order(ptc):
    r = ptc.run("""
        import sys
        for i in range(5):
            print('line', i)
        sys.stdout.write('no newline')
        """)
    expect(r, 0, "success")
    assert r.output == "".join(f"line {i}\n" for i in range(5)) + "no newline"


def test_dunder_main(ptc):
    r = ptc.run("if __name__ == '__main__':\n    print('main')")
    expect(r, 0, "success")
    assert r.output == "main\n"


def test_unicode_output_roundtrip(ptc):
    text = "em dash \u2014 arrow \u2192 emoji \U0001F40D and CJK \u6f22\u5b57"
    r = ptc.run(f"print({text!r})")
    expect(r, 0, "success")
    assert r.output == text + "\n"
    # Serialization keeps non-ASCII as UTF-8 (seed: ensure_ascii=False).
    assert "\u2014".encode() in r.stdout, r


def test_syntax_error(ptc):
    r = ptc.run("print('unclosed'\n")
    expect(r, 1, "error")
    assert "SyntaxError" in r.data["error"], r
    assert "\n--- stderr ---\n" in r.output, r
    assert "SyntaxError" in r.output.split("\n--- stderr ---\n", 1)[1], r


def test_uncaught_exception(ptc):
    r = ptc.run("raise ValueError('boom-value')")
    expect(r, 1, "error")
    assert "ValueError" in r.data["error"] and "boom-value" in r.data["error"], r
    assert r.data["exit_code"] == 1, r


def test_error_after_printing_keeps_stdout_then_stderr(ptc):
    r = ptc.run("""
        import sys
        print('before the crash')
        sys.stdout.flush()
        raise KeyError('kaput')
        """)
    expect(r, 1, "error")
    out = r.output
    assert out.startswith("before the crash\n\n--- stderr ---\nTraceback"), r
    assert "KeyError" in out, r
    # error is the stderr text, the same text that follows the marker
    assert out == "before the crash\n" + "\n--- stderr ---\n" + r.data["error"], r


def test_exact_stderr_assembly(ptc):
    r = ptc.run("""
        import sys
        sys.stdout.write('out\\n')
        sys.stderr.write('err line\\n')
        sys.exit(4)
        """)
    expect(r, 1, "error")
    assert r.output == "out\n\n--- stderr ---\nerr line\n", r
    assert r.data["error"] == "err line\n", r
    assert r.data["exit_code"] == 4, r


def test_exit_nonzero_without_stderr(ptc):
    r = ptc.run("print('partial'); import sys; sys.exit(3)")
    expect(r, 1, "error")
    assert r.data["error"] == "Script exited with code 3", r
    assert r.output == "partial\n", r
    assert r.data["exit_code"] == 3, r


def test_success_discards_stderr(ptc):
    r = ptc.run("""
        import sys
        print('visible')
        sys.stderr.write('warning text on stderr\\n')
        """)
    expect(r, 0, "success")
    assert r.output == "visible\n", r
    assert "error" not in r.data, r


def test_exit_zero_via_sys_exit(ptc):
    r = ptc.run("import sys; print('a'); sys.exit(0)")
    expect(r, 0, "success")
    assert r.output == "a\n"


@pytest.mark.parametrize("code", ["", "   ", "\n\n\t  \n"])
def test_empty_or_whitespace_code(ptc, code):
    r = ptc.run_ptc(["run", "-c", code])
    expect(r, 1, "error")
    assert r.data["error"] == "No code provided.", r
    assert r.data["exit_code"] is None, r
    assert r.data["tool_calls_made"] == 0, r


def test_empty_file(ptc):
    p = ptc.path("empty.py")
    p.write_text("")
    r = ptc.run_ptc(["run", str(p)])
    expect(r, 1, "error")
    assert r.data["error"] == "No code provided.", r


def test_empty_stdin(ptc):
    r = ptc.run_ptc(["run", "-"], input="")
    expect(r, 1, "error")
    assert r.data["error"] == "No code provided.", r


def test_one_terminal_call(ptc):
    r = ptc.run("""
        from hermes_tools import terminal
        res = terminal('echo via-terminal')
        print(res['output'], res['exit_code'])
        """)
    expect(r, 0, "success")
    assert r.output == "via-terminal 0\n", r
    assert r.data["tool_calls_made"] == 1, r


def test_terminal_and_read_file_count_two(ptc):
    (ptc.workdir / "data.txt").write_text("alpha\nbeta\n")
    r = ptc.run("""
        from hermes_tools import terminal, read_file
        t = terminal('echo one')
        f = read_file('data.txt')
        print(t['output'], 'beta' in f['content'])
        """)
    expect(r, 0, "success")
    assert r.output == "one True\n", r
    assert r.data["tool_calls_made"] == 2, r


def test_ten_threads_get_their_own_responses_concurrently(ptc):
    r = ptc.run("""
        import json, threading, time
        from hermes_tools import terminal
        out = {}
        def work(i):
            out[i] = terminal(f'mkdir -p bar; touch bar/{i}; for t in $(seq 400); do '
                              f'[ $(ls bar | wc -l) -ge 10 ] && break; sleep 0.05; done; '
                              f'[ $(ls bar | wc -l) -ge 10 ] && echo reply-{i} || echo alone-{i}'
                              )['output']
        t0 = time.monotonic()
        ts = [threading.Thread(target=work, args=(i,)) for i in range(10)]
        for t in ts: t.start()
        for t in ts: t.join()
        print(json.dumps({"out": out, "elapsed": time.monotonic() - t0}))
        """, timeout=120)
    expect(r, 0, "success")
    d = r.output_json()
    # A barrier, not a stopwatch: "reply-i" only when all ten commands were running at once.
    assert d["out"] == {str(i): f"reply-{i}" for i in range(10)}, r
    assert r.data["tool_calls_made"] == 10, r


def test_import_of_disabled_tool_is_an_error(ptc):
    r = ptc.run("from hermes_tools import terminal\nprint('unreachable')",
                "--tools", "read_file")
    expect(r, 1, "error")
    assert "ImportError" in r.data["error"], r
    assert "unreachable" not in r.output


def test_empty_tool_list_enables_nothing(ptc):
    r = ptc.run("""
        import hermes_tools
        from hermes_tools import json_parse, shell_quote, retry
        print([n for n in ('read_file', 'write_file', 'terminal', 'search_files', 'patch',
                           'web_search', 'web_extract') if hasattr(hermes_tools, n)])
        """, "--tools", "")
    expect(r, 0, "success")
    assert r.output == "[]\n", r


def test_empty_tool_list_import_fails(ptc):
    r = ptc.run("from hermes_tools import read_file", "--tools", "")
    expect(r, 1, "error")
    assert "ImportError" in r.data["error"], r


def test_default_tools_are_the_keyless_six(ptc):
    r = ptc.run("""
        import hermes_tools
        print([n for n in ('patch', 'read_file', 'search_files', 'terminal', 'web_extract',
                           'web_search', 'write_file') if callable(getattr(hermes_tools, n, None))])
        """)
    expect(r, 0, "success")
    assert r.output == ("['patch', 'read_file', 'search_files', 'terminal', 'web_extract', "
                        "'write_file']\n"), r


@pytest.mark.parametrize("mode", ["project", "strict"])
def test_module_exposes_no_execute_code_or_delegate(ptc, mode):
    r = ptc.run("""
        import hermes_tools
        print(hasattr(hermes_tools, 'execute_code'), hasattr(hermes_tools, 'delegate_task'))
        """, "--mode", mode)
    expect(r, 0, "success")
    assert r.output == "False False\n", r


def test_script_large_inline_code(ptc):
    # A 200 KB script (mostly a comment) passed from a file runs.
    body = "# " + "x" * 200_000 + "\nprint('big script ok')\n"
    r = ptc.run_file(body)
    expect(r, 0, "success")
    assert r.output == "big script ok\n"


def test_script_with_non_utf8_source_bytes(ptc):
    p = ptc.path("latin1.py")
    p.write_bytes(b"# \xe9\xe8 not utf-8\nprint('ran')\n")
    r = ptc.run_ptc(["run", str(p)])
    # Python refuses a non-UTF-8 source without a coding line; ptc reports it.
    expect(r, 1, "error")
    assert "SyntaxError" in r.data["error"], r


def test_timeout_result_texts(ptc):
    r = ptc.run("import time; time.sleep(30)", "--timeout", "2")
    expect(r, 124, "timeout")
    assert r.data["error"] == "Script timed out after 2s and was killed.", r
    assert r.output == "\u23f0 Script timed out after 2s and was killed.", r
    assert isinstance(r.data["exit_code"], int), r


def test_timeout_output_keeps_stdout(ptc):
    r = ptc.run("""
        import time
        print('partial result', flush=True)
        time.sleep(30)
        """, "--timeout", "2")
    expect(r, 124, "timeout")
    assert r.output == ("partial result\n"
                        "\n\n\u23f0 Script timed out after 2s and was killed."), r
    assert "timed out" in r.data["error"]


def test_exit_codes_map_to_status(ptc):
    cases = [("print(1)", 0, "success"), ("raise SystemExit(9)", 1, "error")]
    for code, rc, status in cases:
        expect(ptc.run(code), rc, status)


def test_print_of_tool_result_roundtrips_json(ptc):
    r = ptc.run("""
        import json
        from hermes_tools import terminal
        print(json.dumps(terminal('printf "%s" hello')))
        """)
    expect(r, 0, "success")
    d = r.output_json()
    assert d["output"] == "hello" and d["exit_code"] == 0, d


def test_stub_returns_error_dict_not_exception(ptc):
    r = ptc.run("""
        from hermes_tools import read_file
        res = read_file('/definitely/not/here.txt')
        print(type(res).__name__, 'error' in res)
        """)
    expect(r, 0, "success")
    assert r.output == "dict True\n", r


def test_duration_reflects_script_time(ptc):
    r = ptc.run("import time; time.sleep(0.6)")
    expect(r, 0, "success")
    # At least the script's time, at most ptc's whole run (no stopwatch upper bound).
    assert 0.6 <= r.data["duration_seconds"] <= r.elapsed + 0.05, r


def test_script_killed_by_signal(ptc):
    r = ptc.run("""
        import os, signal
        print('x', flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """)
    expect(r, 1, "error")
    assert r.data["exit_code"] == -9, r
    assert r.data["error"] == "Script exited with code -9", r
    assert r.output == "x\n", r


def test_fractional_timeout_text(ptc):
    r = ptc.run("import time; time.sleep(30)", "--timeout", "0.5")
    expect(r, 124, "timeout")
    assert r.data["error"] == "Script timed out after 0.5s and was killed.", r
    assert r.data["duration_seconds"] >= 0.45, r  # not early
    assert r.elapsed < 10, r  # hang guard: the script sleeps 30 s


def test_nul_byte_in_source_is_not_truncated(ptc):
    # A C string would cut the script at the NUL and run only print(1). Python rejects a
    # source file with a NUL byte since 3.11.4/3.12; Debian 12's 3.11.2 itself runs up to it.
    probe = ptc.tmp / "nul-probe.py"
    probe.write_bytes(b"print(1)\x00print(2)\n")
    python = shutil.which("python3")
    if python is None or subprocess.run([python, str(probe)], capture_output=True,
                                        timeout=60).returncode == 0:
        pytest.skip("this python3 runs a source file up to a NUL byte itself")
    r = ptc.run_ptc(["run", "-"], input=b"print(1)\x00print(2)\n")
    expect(r, 1, "error")
    assert "null bytes" in r.data["error"], r


def test_crlf_and_carriage_returns_preserved(ptc):
    r = ptc.run("import sys; sys.stdout.write('a\\r\\nb\\rc\\n')")
    expect(r, 0, "success")
    assert r.output == "a\r\nb\rc\n", r


def test_simultaneous_large_stdout_and_stderr(ptc):
    # Both pipes full at once: ptc must drain both or the child blocks forever.
    r = ptc.run("""
        import sys, threading
        def err():
            for _ in range(256):
                sys.stderr.write('e' * 4096)
            sys.stderr.flush()
        t = threading.Thread(target=err); t.start()
        for _ in range(256):
            sys.stdout.write('o' * 4096)
        sys.stdout.flush()
        t.join()
        print('done')
        """, timeout=30)
    expect(r, 0, "success")
    assert r.output.endswith("done\n") and r.data["stdout_truncated"] is True, r
    assert r.elapsed < 10, r  # hang guard


def test_log_args_preview_is_short_and_redacted(ptc):
    r = ptc.run("""
        from hermes_tools import write_file, terminal
        write_file('long.txt', 'A' * 1000)
        terminal('echo log-secret-value-123')
        """, "--log", env={"MY_SERVICE_TOKEN": "log-secret-value-123"})
    expect(r, 0, "success")
    calls = r.data["tool_calls"]
    assert len(calls[0]["args_preview"]) <= 80, calls[0]
    assert calls[0]["args_preview"].startswith("{") and "long.txt" in calls[0]["args_preview"]
    assert "log-secret-value-123" not in calls[1]["args_preview"], calls[1]
    assert "log-secret-value-123" not in r.stdout.decode(), r


@pytest.mark.parametrize("code", [124, 130, 2])
def test_script_exit_codes_are_not_reinterpreted(ptc, code):
    # The seed's remote path misread a script's own exit 124/130 as timeout/interrupt.
    r = ptc.run(f"import sys; sys.exit({code})")
    expect(r, 1, "error")
    assert r.data["error"] == f"Script exited with code {code}", r
    assert r.data["exit_code"] == code, r
