# SPDX-License-Identifier: MIT
"""Output capture: caps, truncation notice and fields, spill file, decoding of
binary output, ANSI stripping and pattern redaction (docs/contracts.md 4,
docs/seed.md 1.10-1.12)."""

import os

from conftest import expect

NOTICE = "\n\n... [OUTPUT TRUNCATED - {omitted} chars omitted out of {total} total] ...\n\n"

# Deterministic stdout: N lines of "%09d\n" (10 bytes per line).
LINES_SCRIPT = """
import sys
n = {n}
w = sys.stdout.write
chunk = []
for i in range(n):
    chunk.append('%09d\\n' % i)
    if len(chunk) == 10000:
        w(''.join(chunk)); chunk = []
w(''.join(chunk))
"""


def lines_text(n):
    return "".join("%09d\n" % i for i in range(n))


def test_short_output_not_truncated(ptc):
    r = ptc.run("print('short')")
    expect(r, 0, "success")
    assert "TRUNCATED" not in r.output
    assert not r.data.get("stdout_truncated"), r
    assert "stdout_spill_path" not in r.data, r


def test_exactly_cap_is_not_truncated(ptc):
    r = ptc.run("import sys; sys.stdout.write('a' * 50000)")
    expect(r, 0, "success")
    assert r.output == "a" * 50000
    assert not r.data.get("stdout_truncated"), r


def test_one_byte_over_cap(ptc):
    r = ptc.run("import sys; sys.stdout.write('h' * 20000 + 'X' + 't' * 30000)")
    expect(r, 0, "success")
    want = "h" * 20000 + NOTICE.format(omitted="1", total="50,001") + "t" * 30000
    assert r.output == want, r
    assert r.data["stdout_truncated"] is True
    assert r.data["stdout_bytes_total"] == 50001
    assert r.data["stdout_bytes_omitted"] == 1


def test_ten_megabytes_exact_head_tail_and_notice(ptc):
    n = 1_000_000  # 10,000,000 bytes
    r = ptc.run(LINES_SCRIPT.format(n=n), timeout=60)
    expect(r, 0, "success")
    full = lines_text(n)
    want = (full[:20000] + NOTICE.format(omitted="9,950,000", total="10,000,000")
            + full[-30000:])
    assert r.output == want, r
    d = r.data
    assert d["stdout_truncated"] is True
    assert d["stdout_bytes_total"] == 10_000_000
    assert d["stdout_bytes_omitted"] == 9_950_000
    spill = d["stdout_spill_path"]
    assert os.path.isabs(spill), d
    data = open(spill, "rb").read()
    # The spill holds the start of the full stdout, capped at 5 MB.
    assert 5_000_000 <= len(data) <= 5 * 1024 * 1024, len(data)
    assert data == full[:len(data)].encode(), "spill file is not a prefix of stdout"
    assert os.stat(spill).st_mode & 0o077 == 0, oct(os.stat(spill).st_mode)


def test_small_spill_holds_whole_stdout(ptc):
    n = 10_000  # 100,000 bytes: over the cap, under the spill cap
    r = ptc.run(LINES_SCRIPT.format(n=n))
    expect(r, 0, "success")
    assert r.data["stdout_truncated"] is True
    assert open(r.data["stdout_spill_path"], "rb").read() == lines_text(n).encode()


def test_fifteen_thousand_long_lines_keep_first_and_last(ptc):
    r = ptc.run("""
        print('FIRST-MARKER')
        for i in range(15000):
            print('x' * 40, i)
        print('LAST-MARKER')
        """)
    expect(r, 0, "success")
    assert r.output.startswith("FIRST-MARKER\n"), r.output[:100]
    assert r.output.endswith("LAST-MARKER\n"), r.output[-100:]
    assert "TRUNCATED" in r.output and "chars omitted" in r.output and "total" in r.output


def test_fifty_megabytes_quickly(ptc):
    r = ptc.run("""
        import sys
        block = ('y' * 1023 + '\\n') * 1024
        for _ in range(50):
            sys.stdout.write(block)
        sys.stdout.flush()
        print('END')
        """, timeout=60)
    expect(r, 0, "success")
    d = r.data
    assert d["stdout_truncated"] is True
    assert d["stdout_bytes_total"] == 50 * 1024 * 1024 + 4
    assert d["stdout_bytes_omitted"] == d["stdout_bytes_total"] - 50000
    assert d["output"].endswith("y\nEND\n")
    assert len(d["output"].encode()) < 50000 + 200
    assert os.path.getsize(d["stdout_spill_path"]) <= 5 * 1024 * 1024
    # No stopwatch: run_ptc's hard timeout (60 s) is the hang guard.


def test_truncation_on_error_keeps_fields(ptc):
    r = ptc.run("import sys; sys.stdout.write('z' * 60000); sys.exit(2)")
    expect(r, 1, "error")
    assert r.data["stdout_truncated"] is True
    assert r.data["stdout_bytes_total"] == 60000
    assert r.data["error"] == "Script exited with code 2"


def test_invalid_utf8_becomes_replacement_characters(ptc):
    r = ptc.run(r"""
        import sys
        sys.stdout.buffer.write(b'ok\xff\xfe\x80end\n')
        """)
    expect(r, 0, "success")
    assert r.output == "ok\ufffd\ufffd\ufffdend\n", r


def test_truncated_utf8_sequence_at_end(ptc):
    r = ptc.run(r"""
        import sys
        sys.stdout.buffer.write('caf\u00e9'.encode()[:-1])
        """)
    expect(r, 0, "success")
    assert r.output == "caf\ufffd", r


def test_random_binary_output(ptc):
    r = ptc.run("""
        import os, sys
        sys.stdout.buffer.write(bytes(range(256)) * 40)
        """)
    expect(r, 0, "success")
    assert isinstance(r.output, str) and "\ufffd" in r.output
    # The result is still one valid JSON document (checked by run_ptc parsing it).


def test_nul_bytes_in_output(ptc):
    r = ptc.run(r"""
        import sys
        sys.stdout.buffer.write(b'a\x00b\x00\x00c\n')
        """)
    expect(r, 0, "success")
    assert r.output == "a\x00b\x00\x00c\n", r


def test_nul_bytes_in_stderr_of_failing_script(ptc):
    r = ptc.run(r"""
        import sys
        sys.stderr.buffer.write(b'bad\x00err\xff\n')
        sys.exit(1)
        """)
    expect(r, 1, "error")
    assert r.data["error"] == "bad\x00err\ufffd\n", r


def test_ansi_sequences_stripped(ptc):
    r = ptc.run(r"""
        print('\x1b[31mred\x1b[0m \x1b[1;38;5;208mbold\x1b[m')
        print('\x1b]0;window title\x07after-osc')
        print('\x1b[?25lcursor\x1b[?25h \x1b[38:2:1:2:3mcolon\x1b[0m')
        """)
    expect(r, 0, "success")
    assert r.output == "red bold\nafter-osc\ncursor colon\n", r


def test_plain_text_tabs_and_non_latin_preserved(ptc):
    r = ptc.run("print('tab\\there \\u03b1\\u03b2\\u03b3 \\u0434\\u0430')")
    expect(r, 0, "success")
    assert r.output == "tab\there \u03b1\u03b2\u03b3 \u0434\u0430\n", r


def test_ansi_stripped_in_stderr(ptc):
    r = ptc.run("import sys; sys.stderr.write('\\x1b[31mfail\\x1b[0m\\n'); sys.exit(1)")
    expect(r, 1, "error")
    assert r.data["error"] == "fail\n", r


def test_stderr_capped_head_only(ptc):
    r = ptc.run("""
        import sys
        sys.stderr.write('S' * 10000 + 'T' * 20000)
        sys.exit(1)
        """)
    expect(r, 1, "error")
    err = r.data["error"]
    assert err == "S" * 10000, (len(err), err[-50:])
    assert "TRUNCATED" not in r.output


def test_redact_vendor_key(ptc):
    key = "sk-" + "abcdefghijklmnop1234"
    r = ptc.run(f"print('key: ' + {key[:5]!r} + {key[5:]!r})")
    expect(r, 0, "success")
    assert key not in r.output
    assert r.output == "key: sk-abc...1234\n", r


def test_redact_github_token(ptc):
    tok = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"
    r = ptc.run(f"print({tok[:6]!r} + {tok[6:]!r})")
    expect(r, 0, "success")
    assert tok not in r.output and "ghp_" in r.output, r


def test_redact_env_assignment(ptc):
    r = ptc.run("print('OPENAI_API_KEY=' + 'abcdefghijklmnopqrstuvwxyz')")
    expect(r, 0, "success")
    assert r.output == "OPENAI_API_KEY=abcdef...wxyz\n", r


def test_lowercase_code_variables_untouched(ptc):
    r = ptc.run("print('api_key = ' + 'value-visible-123456789')")
    expect(r, 0, "success")
    assert r.output == "api_key = value-visible-123456789\n", r


def test_redact_authorization_header(ptc):
    tok = "abcdefghijklmnopqrstuvwxyz0123"
    r = ptc.run(f"print('Authorization: Bearer ' + {tok!r})")
    expect(r, 0, "success")
    assert tok not in r.output and r.output.startswith("Authorization: Bearer "), r


def test_redact_private_key_block(ptc):
    r = ptc.run("""
        print('before')
        print('-----BEGIN RSA PRIVATE KEY-----')
        print('MIIEowIBAAKCAQEAtopsecretmaterial')
        print('-----END RSA PRIVATE KEY-----')
        print('after')
        """)
    expect(r, 0, "success")
    assert "topsecretmaterial" not in r.output
    assert "[REDACTED PRIVATE KEY]" in r.output
    assert r.output.startswith("before\n") and r.output.endswith("after\n"), r


def test_redact_db_connection_string(ptc):
    r = ptc.run("print('postgres://admin:' + 'hunter2pass' + '@db.example.com:5432/app')")
    expect(r, 0, "success")
    assert r.output == "postgres://admin:***@db.example.com:5432/app\n", r


def test_redact_url_userinfo_and_query(ptc):
    r = ptc.run("print('https://bob:' + 'pw123456' + '@h.example/x?code=ABC&state=ok')")
    expect(r, 0, "success")
    assert r.output == "https://bob:***@h.example/x?code=***&state=ok\n", r


def test_redact_json_secret_field(ptc):
    r = ptc.run("""print('{"password": "' + 'correcthorsebattery' + '"}')""")
    expect(r, 0, "success")
    assert "correcthorsebattery" not in r.output, r


def test_redaction_applies_to_stderr(ptc):
    key = "sk-" + "zyxwvutsrqponmlk9876"
    r = ptc.run(f"import sys; sys.stderr.write({key[:4]!r} + {key[4:]!r}); sys.exit(1)")
    expect(r, 1, "error")
    assert key not in r.data["error"] and key not in r.output, r
    assert "sk-zyx...9876" in r.data["error"], r


def test_redaction_applies_to_truncated_output_tail(ptc):
    key = "sk-" + "tailsecretvalue12345"
    r = ptc.run(f"""
        import sys
        sys.stdout.write('p' * 100000 + ' ')
        print({key[:4]!r} + {key[4:]!r})
        """)
    expect(r, 0, "success")
    assert r.data["stdout_truncated"] is True
    assert key not in r.output, r.output[-200:]


def test_spill_file_is_redacted(ptc):
    r = ptc.run("""
        import sys
        sys.stdout.write('a' * 60000 + '\\n')
        print('spilled ' + 'spill-secret-' + 'value-42')
        print('sk-' + 'abcdefghijklmnop1234')
        sys.stdout.write('b' * 60000 + '\\n')
        """, env={"MY_API_TOKEN": "spill-secret-value-42"})
    expect(r, 0, "success")
    data = open(r.data["stdout_spill_path"], "rb").read()
    assert b"spilled " in data, "spill file does not hold the middle of stdout"
    assert b"spill-secret-value-42" not in data
    assert b"sk-abcdefghijklmnop1234" not in data
