# SPDX-License-Identifier: MIT
"""read_file and write_file result shapes (docs/seed.md 2.1, 2.2;
docs/contracts.md 9.6 and 9.11), through `ptc tool` and through scripts."""

import json
import os

import pytest

from conftest import expect


def tool(ptc, name, args, rc=0):
    r = ptc.run_ptc(["tool", name, json.dumps(args)])
    assert r.rc == rc, r
    assert r.data is not None, r
    return r.data


def lines(n, fmt="l{}"):
    return "".join(fmt.format(i) + "\n" for i in range(1, n + 1))


# --- read_file ----------------------------------------------------------------

def test_read_file_success_shape(ptc):
    (ptc.workdir / "three.txt").write_text("alpha\nbeta\ngamma\n")
    d = tool(ptc, "read_file", {"path": "three.txt"})
    assert d["content"].startswith("     1|alpha\n     2|beta\n     3|gamma"), d
    assert d["total_lines"] == 3, d
    assert d["file_size"] == 17, d
    assert d["truncated"] is False
    assert d["is_binary"] is False and d["is_image"] is False
    assert "error" not in d and "hint" not in d, d


def test_read_file_trailing_newline_gives_extra_numbered_line(ptc):
    (ptc.workdir / "three.txt").write_text("a\nb\nc\n")
    d = tool(ptc, "read_file", {"path": "three.txt"})
    assert d["content"] == "     1|a\n     2|b\n     3|c\n     4|", d


def test_read_file_total_lines_counts_newlines(ptc):
    (ptc.workdir / "nonl.txt").write_text("a\nb\nc")
    d = tool(ptc, "read_file", {"path": "nonl.txt"})
    assert d["content"] == "     1|a\n     2|b\n     3|c", d
    assert d["total_lines"] == 2, d


def test_read_file_line_number_format(ptc):
    (ptc.workdir / "many.txt").write_text(lines(12))
    d = tool(ptc, "read_file", {"path": "many.txt", "offset": 10, "limit": 2})
    # sed -n 'A,Bp' output ends in a newline, so the seed's split adds a
    # numbered empty line after every range (docs/seed.md 2.1 quirk).
    assert d["content"] == "    10|l10\n    11|l11\n    12|", d


def test_read_file_offset_limit_and_hint(ptc):
    (ptc.workdir / "ten.txt").write_text(lines(10))
    d = tool(ptc, "read_file", {"path": "ten.txt", "offset": 3, "limit": 2})
    assert d["content"] == "     3|l3\n     4|l4\n     5|", d
    assert d["truncated"] is True
    assert d["total_lines"] == 10
    assert d["hint"] == "Use offset=5 to continue reading (showing 3-4 of 10 lines)", d


def test_read_file_coerces_bad_offset_and_string_numbers(ptc):
    (ptc.workdir / "ten.txt").write_text(lines(10))
    d = tool(ptc, "read_file", {"path": "ten.txt", "offset": -5, "limit": "2"})
    assert d["content"] == "     1|l1\n     2|l2\n     3|", d
    d = tool(ptc, "read_file", {"path": "ten.txt", "offset": None, "limit": None})
    assert d["content"].startswith("     1|l1\n"), d


def test_read_file_limit_clamped_to_2000(ptc):
    (ptc.workdir / "big.txt").write_text(lines(3000))
    d = tool(ptc, "read_file", {"path": "big.txt", "limit": 5000})
    got = d["content"].split("\n")
    assert len(got) == 2001, len(got)
    assert got[-2:] == ["  2000|l2000", "  2001|"], got[-2:]
    assert d["truncated"] is True


def test_read_file_long_line_cut(ptc):
    (ptc.workdir / "long.txt").write_text("y" * 2500 + "\nshort\n")
    d = tool(ptc, "read_file", {"path": "long.txt"})
    first = d["content"].split("\n")[0]
    assert first == "     1|" + "y" * 2000 + "... [truncated]", first[-40:]


def test_read_file_character_guard(ptc):
    (ptc.workdir / "wide.txt").write_text(lines(2000, "{:0100d}"))
    d = tool(ptc, "read_file", {"path": "wide.txt", "limit": 2000})
    assert d["error"].startswith("Read produced "), d
    assert "exceeds the safety limit (100,000 chars)" in d["error"], d
    assert "The file has 2000 lines total." in d["error"], d
    assert "content" not in d or d["content"] in ("", None), d


def test_read_file_not_found(ptc):
    (ptc.workdir / "notes.txt").write_text("x\n")
    d = tool(ptc, "read_file", {"path": "notes.md"})
    assert d["error"].startswith("File not found: ") and d["error"].endswith("notes.md"), d
    assert d["content"] == "" and d["total_lines"] == 0 and d["file_size"] == 0, d
    assert d["truncated"] is False and d["is_binary"] is False and d["is_image"] is False
    assert any(s.endswith("notes.txt") for s in d.get("similar_files", [])), d


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/urandom", "/dev/stdin", "/dev/fd/0",
                                  "/proc/self/fd/1"])
def test_read_file_device_paths(ptc, path):
    d = tool(ptc, "read_file", {"path": path})
    assert d["error"] == (f"Cannot read '{path}': this is a device file that would block or "
                          "produce infinite output."), d


@pytest.mark.parametrize("name", ["pic.png", "Photo.JPG", "lib.so", "a.zip", "m.sqlite"])
def test_read_file_binary_extension(ptc, name):
    (ptc.workdir / name).write_bytes(b"not really binary\n")
    d = tool(ptc, "read_file", {"path": name})
    assert d["error"].startswith("Cannot read binary file '"), d
    ext = os.path.splitext(name)[1]
    assert f"({ext.lower()})" in d["error"].lower(), d
    assert "vision_analyze" in d["error"], d


def test_read_file_pdf_extension_is_not_binary(ptc):
    (ptc.workdir / "doc.pdf").write_text("plain text pdf\n")
    d = tool(ptc, "read_file", {"path": "doc.pdf"})
    assert "plain text pdf" in d["content"], d


def test_read_file_binary_content_sniffed(ptc):
    (ptc.workdir / "blob.txt").write_bytes(bytes(range(1, 32)) * 50)
    d = tool(ptc, "read_file", {"path": "blob.txt"})
    assert d["error"].startswith("Binary file - cannot display as text."), d
    assert d["is_binary"] is True, d


def test_read_file_invalid_utf8_content(ptc):
    (ptc.workdir / "latin.txt").write_bytes(b"caf\xe9 ok\n")
    d = tool(ptc, "read_file", {"path": "latin.txt"})
    assert d["content"].startswith("     1|caf\ufffd ok"), d


def test_read_file_redacts_code_file_mode(ptc):
    key = "sk-" + "abcdefghijklmnop1234"
    (ptc.workdir / "cfg.py").write_text(f"key = '{key}'\nMY_TOKEN=plainvalue1234567890\n")
    d = tool(ptc, "read_file", {"path": "cfg.py"})
    assert key not in d["content"], d
    # NAME=value assignments are left alone in file-content mode
    assert "MY_TOKEN=plainvalue1234567890" in d["content"], d


def test_read_file_tilde_expands_to_home(ptc):
    (ptc.home / "inhome.txt").write_text("home file\n")
    d = tool(ptc, "read_file", {"path": "~/inhome.txt"})
    assert "home file" in d["content"], d


def test_read_file_no_dedup_inside_scripts(ptc):
    (ptc.workdir / "same.txt").write_text("same content\n")
    r = ptc.run("""
        from hermes_tools import read_file
        res = [read_file('same.txt') for _ in range(5)]
        print([('same content' in x.get('content', ''), 'error' in x) for x in res])
        """)
    expect(r, 0, "success")
    assert r.output == "[" + ", ".join(["(True, False)"] * 5) + "]\n", r


def test_read_file_relative_to_cwd_flag(ptc):
    other = ptc.path("proj")
    other.mkdir()
    (other / "here.txt").write_text("in proj\n")
    r = ptc.run("""
        from hermes_tools import read_file
        print(read_file('here.txt')['content'])
        """, "--cwd", other)
    expect(r, 0, "success")
    assert "in proj" in r.output, r


# --- write_file ---------------------------------------------------------------

def test_write_file_success_shape(ptc):
    d = tool(ptc, "write_file", {"path": "out.txt", "content": "h\u00e9llo\n"})
    assert d["bytes_written"] == 7, d
    assert d["dirs_created"] is False, d
    assert d["lint"] == {"status": "skipped", "message": "No linter for .txt files"}, d
    assert (ptc.workdir / "out.txt").read_bytes() == "h\u00e9llo\n".encode()


def test_write_file_creates_parent_dirs(ptc):
    d = tool(ptc, "write_file", {"path": "a/b/c/deep.txt", "content": "deep"})
    assert d["dirs_created"] is True, d
    assert (ptc.workdir / "a/b/c/deep.txt").read_text() == "deep"


def test_write_file_dirs_created_true_for_existing_parent(ptc):
    target = ptc.workdir / "exists.txt"
    d = tool(ptc, "write_file", {"path": str(target), "content": "x"})
    assert d["dirs_created"] is True, d


def test_write_file_overwrites(ptc):
    p = ptc.workdir / "o.txt"
    p.write_text("old content that is longer\n")
    tool(ptc, "write_file", {"path": "o.txt", "content": "new\n"})
    assert p.read_text() == "new\n"


def test_write_file_empty_content(ptc):
    p = ptc.workdir / "empty.txt"
    p.write_text("something\n")
    d = tool(ptc, "write_file", {"path": "empty.txt", "content": ""})
    assert d["bytes_written"] == 0, d
    assert p.read_bytes() == b""


@pytest.mark.parametrize("mode", [0o640, 0o755, 0o600])
def test_write_file_keeps_mode(ptc, mode):
    p = ptc.workdir / "m.sh"
    p.write_text("old\n")
    p.chmod(mode)
    tool(ptc, "write_file", {"path": "m.sh", "content": "new\n"})
    assert p.stat().st_mode & 0o7777 == mode, oct(p.stat().st_mode)
    assert p.read_text() == "new\n"


def test_write_file_is_atomic_rename(ptc):
    p = ptc.workdir / "atomic.txt"
    p.write_text("old version\n")
    with open(p) as old:
        tool(ptc, "write_file", {"path": "atomic.txt", "content": "new version\n"})
        # The old inode was replaced, not truncated in place.
        assert old.read() == "old version\n"
    assert p.read_text() == "new version\n"
    assert sorted(os.listdir(ptc.workdir)) == ["atomic.txt"], os.listdir(ptc.workdir)


def test_write_file_lint_python(ptc):
    d = tool(ptc, "write_file", {"path": "ok.py", "content": "x = 1\n"})
    assert d["lint"] == {"status": "ok", "output": ""}, d
    d = tool(ptc, "write_file", {"path": "bad.py", "content": "print((\n"})
    assert d["lint"]["status"] == "error", d
    assert "SyntaxError" in d["lint"]["output"], d
    assert (ptc.workdir / "bad.py").read_text() == "print((\n"


def test_write_file_lint_json(ptc):
    d = tool(ptc, "write_file", {"path": "ok.json", "content": '{"a": 1}'})
    assert d["lint"]["status"] == "ok", d
    d = tool(ptc, "write_file", {"path": "bad.json", "content": '{"a": '})
    assert d["lint"]["status"] == "error", d


@pytest.mark.parametrize("rel", [".ssh/authorized_keys", ".ssh/id_rsa", ".bashrc", ".netrc",
                                 ".aws/credentials", ".gnupg/x", ".config/gh/hosts.yml"])
def test_write_file_deny_list(ptc, rel):
    for path in ("~/" + rel, str(ptc.home / rel)):
        d = tool(ptc, "write_file", {"path": path, "content": "pwned"})
        assert d.get("error", "").startswith("Write denied: '"), (path, d)
        assert d["error"].endswith("' is a protected system/credential file."), d
        assert not (ptc.home / rel).exists(), path


def test_write_file_refuses_sensitive_system_path(ptc):
    target = "/etc/ptc-itest-must-not-exist.conf"
    try:
        d = tool(ptc, "write_file", {"path": target, "content": "no"})
        assert d.get("error", "").startswith(
            f"Refusing to write to sensitive system path: {target}"), d
        assert not os.path.exists(target)
    finally:
        if os.path.exists(target):
            os.unlink(target)


@pytest.mark.parametrize("args", [{"path": "x.txt"}, {"content": "c"},
                                  {"path": "", "content": "c"},
                                  {"path": "x.txt", "content": 123},
                                  {"path": "x.txt", "content": None}])
def test_write_file_bad_arguments(ptc, args):
    d = tool(ptc, "write_file", args)
    assert isinstance(d.get("error"), str) and d["error"], d
    assert not (ptc.workdir / "x.txt").exists()


def test_write_then_read_in_script(ptc):
    r = ptc.run("""
        from hermes_tools import write_file, read_file
        w = write_file('sub/r.txt', 'one\\ntwo\\n')
        f = read_file('sub/r.txt')
        print(w['bytes_written'], f['total_lines'], f['content'].split('\\n')[1])
        """)
    expect(r, 0, "success")
    assert r.output == "8 2      2|two\n", r
    assert r.data["tool_calls_made"] == 2


def test_read_file_directory_is_an_error(ptc):
    (ptc.workdir / "adir").mkdir()
    d = tool(ptc, "read_file", {"path": "adir"})
    assert isinstance(d.get("error"), str) and d["error"], d


def test_write_file_parent_is_a_file(ptc):
    (ptc.workdir / "afile").write_text("x")
    d = tool(ptc, "write_file", {"path": "afile/child.txt", "content": "c"})
    assert d.get("error", "").startswith("Failed to write file"), d


def test_write_file_ten_megabytes_via_script(ptc):
    r = ptc.run("""
        from hermes_tools import write_file
        print(write_file('ten.bin.txt', 'z' * 10_000_000)['bytes_written'])
        """, timeout=60)
    expect(r, 0, "success")
    assert r.output == "10000000\n", r
    assert (ptc.workdir / "ten.bin.txt").stat().st_size == 10_000_000
