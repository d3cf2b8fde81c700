# SPDX-License-Identifier: MIT
"""File names that are not UTF-8 (docs/protocol.md, "Names that are not UTF-8").

A Linux file name is bytes. Python holds the bytes that are not UTF-8 as lone surrogates
(U+DC80 + byte, surrogateescape); JSON cannot carry those, so on the wire, and in every
name ptc puts into a result, such a byte is the code point U+10DC00 + byte. The generated
module maps between the two, ptc maps the wire form to bytes where an argument becomes a
path. So a name search_files returns works with read_file, write_file, patch and terminal,
and with Python's own os functions; printing it does not crash (stdout and stderr use
backslashreplace); and the result JSON is valid UTF-8 throughout.

Every check looks at the disk with bytes (os.listdir(bytes)), so a tool that touched a
U+FFFD-named or otherwise wrong file is caught.
"""

import json
import os
from pathlib import Path

from conftest import expect

CAFE = b"caf\xe9"        # Latin-1 "café": 0xE9 is not UTF-8 on its own
FFFE = b"\xff\xfe.txt"   # bytes that never occur in UTF-8
# A name that really holds U+10DC80, the first escape code point, as UTF-8 (F4 8D B2 80):
# ptc must report it so that it round-trips, not mistake it for the byte 0x80.
REAL_ESCAPE = "\U0010dc80.txt".encode("utf-8")


def make_tree(ptc):
    """workdir/caf\\xe9/ with \\xff\\xfe.txt, caf\\xe9.txt and plain.txt; returns the dir (bytes)."""
    d = os.path.join(os.fsencode(ptc.workdir), CAFE)
    os.mkdir(d)
    for name, data in ((FFFE, b"hello ff\n"), (CAFE + b".txt", b"hello cafe\n"),
                       (b"plain.txt", b"plain\n"), (REAL_ESCAPE, b"hello real\n")):
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    return d


def listing(d):
    return sorted(os.listdir(d))


def strict_json(r):
    """The result JSON, decoded as strict UTF-8 (no surrogates, no invalid bytes)."""
    text = r.stdout.decode("utf-8")  # raises on invalid UTF-8
    text.encode("utf-8")             # raises on a lone surrogate
    return json.loads(text)


def test_print_getcwd_in_non_utf8_dir(ptc):
    d = make_tree(ptc)
    r = ptc.run('''
        import os, sys
        print(os.getcwd())
        print(os.listdir("."))
        print("to stderr", os.getcwd(), file=sys.stderr)
        sys.exit(3)
    ''', cwd=os.fsdecode(d))
    expect(r, 1, "error")
    data = strict_json(r)
    # backslashreplace: the escape Python would accept in a string literal.
    assert data["output"].startswith(os.fsdecode(ptc.workdir) + "/caf\\udce9\n"), r
    assert "'\\udcff\\udcfe.txt'" in data["output"], r
    assert "to stderr " + os.fsdecode(ptc.workdir) + "/caf\\udce9" in data["output"], r
    assert "UnicodeEncodeError" not in data["output"], r


def test_search_files_names_work_with_every_file_tool(ptc):
    d = make_tree(ptc)
    before = listing(d)
    r = ptc.run('''
        import json, os
        from hermes_tools import search_files, read_file, write_file, patch, terminal, shell_quote
        found = search_files("*.txt", target="files")["files"]
        out = {"found": [os.fsencode(f).hex() for f in sorted(found)], "read": {}}
        for f in found:
            out["read"][os.fsencode(f).hex()] = read_file(f)["content"]
        ff = next(f for f in found if f.endswith("\\udcff\\udcfe.txt"))
        # Python's own functions take the same string.
        with open(ff, "rb") as fh:
            out["open"] = fh.read().decode()
        out["write"] = write_file(ff, "one\\ntwo\\n")
        out["patch"] = patch(ff, "two", "three")
        cafe = next(f for f in found if f.endswith("caf\\udce9.txt"))
        out["v4a"] = patch(mode="patch", patch="*** Begin Patch\\n*** Update File: %s\\n"
                           "@@\\n-hello cafe\\n+bonjour\\n*** End Patch\\n" % cafe)
        out["abs"] = read_file(os.path.join(os.getcwd(), cafe))["content"]
        out["terminal"] = terminal("cat " + shell_quote(ff))
        real = next(f for f in found if os.fsencode(f) == b"./\\xf4\\x8d\\xb2\\x80.txt")
        out["real_read"] = read_file(real)["content"]
        out["real_write"] = write_file(real, "real2\\n")
        print(json.dumps(out))
    ''', cwd=os.fsdecode(d))
    expect(r, 0, "success")
    out = json.loads(strict_json(r)["output"])
    # search_files returned each name with its bytes.
    assert sorted(bytes.fromhex(h) for h in out["found"]) == sorted(b"./" + n for n in before), r
    assert out["read"][(b"./" + FFFE).hex()].startswith("     1|hello ff"), r
    assert out["read"][(b"./" + CAFE + b".txt").hex()].startswith("     1|hello cafe"), r
    assert out["read"][(b"./" + REAL_ESCAPE).hex()].startswith("     1|hello real"), r
    assert out["open"] == "hello ff\n", r
    assert "error" not in out["write"], r
    assert out["patch"].get("success") is True, r
    assert out["patch"]["files_modified"] == [os.fsdecode(b"./" + FFFE)], r
    assert out["v4a"].get("success") is True, r
    assert out["abs"].startswith("     1|bonjour"), r
    assert out["terminal"]["output"].startswith("one\nthree"), r
    assert out["real_read"].startswith("     1|hello real"), r
    assert "error" not in out["real_write"], r
    # The right files changed, and no file was made under another name.
    assert listing(d) == before, r
    with open(os.path.join(d, FFFE), "rb") as f:
        assert f.read() == b"one\nthree\n"
    with open(os.path.join(d, CAFE + b".txt"), "rb") as f:
        assert f.read() == b"bonjour\n"
    with open(os.path.join(d, REAL_ESCAPE), "rb") as f:
        assert f.read() == b"real2\n"


def test_errors_and_suggestions_name_the_file_usably(ptc):
    d = make_tree(ptc)
    r = ptc.run('''
        import json, os
        from hermes_tools import read_file, search_files
        miss = read_file("\\udcff\\udcfe.tx")
        sugg = [s for s in miss.get("similar_files", []) if s.endswith("\\udcfe.txt")]
        out = {"error": miss["error"], "again": read_file(sugg[0])["content"] if sugg else None,
               "nope": search_files("x", path="nope\\udce9")}
        print(ascii(out))
    ''', cwd=os.fsdecode(d))
    expect(r, 0, "success")
    out = strict_json(r)["output"]
    assert "File not found: \\udcff\\udcfe.tx'" in out, r
    assert "'again': '     1|hello ff" in out, r
    assert "Path not found: nope\\udce9" in out, r


def test_wire_form_through_ptc_tool(ptc):
    """`ptc tool` shows the wire form itself: U+10DC00 + byte, valid UTF-8 JSON."""
    d = make_tree(ptc)
    r = ptc.run_ptc(["tool", "search_files", json.dumps({"pattern": "*.txt", "target": "files"})],
                    cwd=os.fsdecode(d))
    expect(r, 0)
    files = strict_json(r)["files"]
    assert "./\U0010dcff\U0010dcfe.txt" in files, r
    assert "./caf\U0010dce9.txt" in files, r
    # The real U+10DC80 is reported byte by byte, so it reads back as those bytes.
    assert "./\U0010dcf4\U0010dc8d\U0010dcb2\U0010dc80.txt" in files, r
    assert not any("\ufffd" in f for f in files), r
    # Names as object keys too (search_files' count mode).
    r = ptc.run_ptc(["tool", "search_files", json.dumps({"pattern": "hello",
                                                         "output_mode": "count"})],
                    cwd=os.fsdecode(d))
    expect(r, 0)
    assert strict_json(r)["counts"]["./\U0010dcff\U0010dcfe.txt"] == 1, r
    r = ptc.run_ptc(["tool", "read_file", json.dumps({"path": "./caf\U0010dce9.txt"})],
                    cwd=os.fsdecode(d))
    expect(r, 0)
    assert strict_json(r)["content"].startswith("     1|hello cafe"), r


def test_printed_name_is_usable_in_the_next_script(ptc):
    d = make_tree(ptc)
    r = ptc.run('''
        from hermes_tools import search_files
        print(sorted(search_files("*.txt", target="files")["files"])[0])
    ''', cwd=os.fsdecode(d))
    expect(r, 0, "success")
    printed = strict_json(r)["output"].strip()
    assert printed == "./caf\\udce9.txt", r
    # The model pastes what it saw into a string literal of its next script.
    r = ptc.run('''
        from hermes_tools import read_file
        print(read_file("%s")["content"])
    ''' % printed, cwd=os.fsdecode(d))
    expect(r, 0, "success")
    assert strict_json(r)["output"].startswith("     1|hello cafe"), r


def test_non_utf8_project_dir_absolute_paths(ptc):
    """Relative and absolute paths below a cwd that is not UTF-8 (ctx->cwd is bytes)."""
    d = make_tree(ptc)
    r = ptc.run('''
        import os
        from hermes_tools import write_file, read_file
        p = os.path.join(os.getcwd(), "new\\udce9", "f.txt")
        print(write_file(p, "x\\n").get("error"), read_file(p)["content"])
    ''', cwd=os.fsdecode(d))
    expect(r, 0, "success")
    assert strict_json(r)["output"] == "None      1|x\n     2|\n", r
    with open(os.path.join(d, b"new\xe9", b"f.txt"), "rb") as f:
        assert f.read() == b"x\n"
    assert Path(os.fsdecode(d)).is_dir()
