# SPDX-License-Identifier: MIT
"""The patch tool's replace mode (docs/seed.md 2.4 "Replace mode",
docs/contracts.md 9.11) through scripts: `ptc run` with patch(path=..., old_string=...,
new_string=...)."""

import json
import os
import stat

from conftest import expect


def run_script(ptc, body, *opts):
    """Run @body (it prints one JSON document) and decode what it printed."""
    r = ptc.run_file("import json\nfrom hermes_tools import patch\n" + body, *opts)
    expect(r, 0, "success")
    return r.output_json()


def patch(ptc, **kw):
    """One patch(**kw) call from a script; returns the tool's result dict."""
    return run_script(ptc, f"print(json.dumps(patch(**{kw!r})))\n")


def test_replace_success_shape_and_diff(ptc):
    f = ptc.workdir / "app.py"
    f.write_text("def main():\n    print('hi')\n\n\nmain()\n")
    d = patch(ptc, path="app.py", old_string="print('hi')", new_string="print('hello')")
    assert list(d) == ["success", "diff", "files_modified", "lint"], d
    assert d["success"] is True
    assert d["diff"] == ("--- a/app.py\n+++ b/app.py\n@@ -1,5 +1,5 @@\n def main():\n"
                         "-    print('hi')\n+    print('hello')\n \n \n main()\n"), d
    assert d["files_modified"] == ["app.py"]
    assert d["lint"] == {"status": "ok", "output": ""}, d
    assert f.read_text() == "def main():\n    print('hello')\n\n\nmain()\n"


def test_replace_ambiguous_then_replace_all(ptc):
    f = ptc.workdir / "dup.txt"
    f.write_text("x = 1\ny = 2\nx = 1\n")
    d = patch(ptc, path="dup.txt", old_string="x = 1", new_string="x = 3")
    assert d == {"success": False,
                 "error": "Found 2 matches for old_string. Provide more context to make it "
                          "unique, or use replace_all=True."}, d
    assert f.read_text() == "x = 1\ny = 2\nx = 1\n"
    d = patch(ptc, path="dup.txt", old_string="x = 1", new_string="x = 3", replace_all=True)
    assert d["success"] is True, d
    assert f.read_text() == "x = 3\ny = 2\nx = 3\n"


def test_replace_not_found_did_you_mean(ptc):
    (ptc.workdir / "m.py").write_text("def foo():\n    return 1\n")
    d = patch(ptc, path="m.py", old_string="def bar(x):\n    y = x * 2", new_string="z")
    assert d == {"success": False,
                 "error": "Could not find a match for old_string in the file\n\nDid you mean "
                          "one of these sections?\n   1| def foo():\n   2|     return 1"}, d
    # Nothing similar: the seed's _hint instead of snippets.
    d = patch(ptc, path="m.py", old_string="qqqqqqqqqq", new_string="z")
    assert d == {"success": False,
                 "error": "Could not find a match for old_string in the file",
                 "_hint": "old_string not found. Use read_file to verify the current content, "
                          "or search_files to locate the text."}, d


def test_replace_fuzzy_strategies(ptc):
    w = ptc.workdir
    # Indentation differs (line-trimmed): the call's text is written as sent.
    (w / "i.py").write_text("class A:\n\tdef f(self):\n\t\treturn 1\n")
    d = patch(ptc, path="i.py", old_string="def f(self):\n    return 1",
              new_string="def f(self):\n\t\treturn 2")
    assert d["success"] is True, d
    assert (w / "i.py").read_text() == "class A:\ndef f(self):\n\t\treturn 2\n"
    # Smart quotes and an em dash in the file, ASCII in the call.
    (w / "u.md").write_text("He said \u201chello\u201d \u2014 twice.\n", encoding="utf-8")
    d = patch(ptc, path="u.md", old_string='He said "hello" -- twice.', new_string="Bye.")
    assert d["success"] is True, d
    assert (w / "u.md").read_text(encoding="utf-8") == "Bye.\n"
    # Literal \n in old_string (escape-normalized).
    (w / "e.txt").write_text("a\nb\n")
    d = patch(ptc, path="e.txt", old_string="a\\nb", new_string="c")
    assert d["success"] is True, d
    assert (w / "e.txt").read_text() == "c\n"


def test_replace_escape_drift_refused(ptc):
    f = ptc.workdir / "q.py"
    f.write_text("def f():\n    s = 'it'\n    return s\n")
    d = patch(ptc, path="q.py", old_string="def f():\n    s = \\'it\\'\n    return s",
              new_string="def f():\n    s = \\'its\\'\n    return s")
    assert d["success"] is False
    assert d["error"].startswith("Escape-drift detected: old_string and new_string contain the "
                                 "literal sequence \"\\\\'\""), d
    assert f.read_text() == "def f():\n    s = 'it'\n    return s\n"


def test_replace_argument_errors(ptc):
    assert patch(ptc, old_string="a", new_string="b") == {"error": "path required"}
    assert patch(ptc, path="x.txt", old_string="a") == \
        {"error": "old_string and new_string required"}
    assert patch(ptc, mode="patch") == {"error": "patch content required"}
    assert patch(ptc, mode="sideways", path="x.txt") == {"error": "Unknown mode: sideways"}
    (ptc.workdir / "x.txt").write_text("abc\n")
    assert patch(ptc, path="x.txt", old_string="", new_string="b") == \
        {"success": False, "error": "old_string cannot be empty"}
    assert patch(ptc, path="x.txt", old_string="abc", new_string="abc") == \
        {"success": False, "error": "old_string and new_string are identical"}
    assert patch(ptc, path="missing.txt", old_string="a", new_string="b") == \
        {"success": False, "error": "Failed to read file: missing.txt"}


def test_replace_refusals(ptc):
    d = patch(ptc, path="/etc/hostname", old_string="a", new_string="b")
    assert d == {"error": "Refusing to write to sensitive system path: /etc/hostname\nUse the "
                          "terminal tool with sudo if you need to modify system files."}, d
    rc = ptc.home / ".bashrc"
    rc.write_text("alias ll='ls -l'\n")
    d = patch(ptc, path="~/.bashrc", old_string="ll", new_string="la")
    assert d == {"success": False,
                 "error": f"Write denied: '{ptc.home}/.bashrc' is a protected "
                          "system/credential file."}, d
    assert rc.read_text() == "alias ll='ls -l'\n"


def test_replace_keeps_mode_and_writes_through_symlink(ptc):
    w = ptc.workdir
    t = w / "tool.sh"
    t.write_text("#!/bin/sh\necho one\n")
    os.chmod(t, 0o750)
    os.symlink("tool.sh", w / "link.sh")
    ino = os.stat(t).st_ino
    d = patch(ptc, path="link.sh", old_string="echo one", new_string="echo two")
    assert d["success"] is True and d["files_modified"] == ["link.sh"], d
    assert os.path.islink(w / "link.sh")
    assert t.read_text() == "#!/bin/sh\necho two\n"
    assert stat.S_IMODE(os.stat(t).st_mode) == 0o750
    # Atomic: the file was replaced by a rename (a new inode), no temp file left behind.
    assert os.stat(t).st_ino != ino
    assert sorted(os.listdir(w)) == ["link.sh", "tool.sh"]


def test_replace_crlf_file_keeps_crlf(ptc):
    f = ptc.workdir / "win.txt"
    f.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    d = patch(ptc, path="win.txt", old_string="one\ntwo", new_string="uno\ndos")
    assert d["success"] is True, d
    assert f.read_bytes() == b"uno\r\ndos\r\nthree\r\n"


def test_replace_lint_delta(ptc):
    f = ptc.workdir / "broken.py"
    f.write_text("def f():\n    return 1\n")
    d = patch(ptc, path="broken.py", old_string="return 1", new_string="return (1")
    assert d["success"] is True, d
    assert d["lint"] == {"status": "error",
                         "output": "SyntaxError: '(' was never closed (line 2, column 12)"}, d
    # Editing elsewhere in the still-broken file: the error is noted as already there.
    d = patch(ptc, path="broken.py", old_string="def f():", new_string="def g():")
    assert d["lint"]["status"] == "error" and "message" in d["lint"], d


def test_replace_concurrent_calls_lose_no_edit(ptc):
    f = ptc.workdir / "many.txt"
    f.write_text("".join(f"line {i:02d} = old\n" for i in range(24)))
    d = run_script(ptc, """
from concurrent.futures import ThreadPoolExecutor
def one(i):
    return patch(path="many.txt", old_string=f"line {i:02d} = old",
                 new_string=f"line {i:02d} = new")["success"]
with ThreadPoolExecutor(8) as ex:
    print(json.dumps(list(ex.map(one, range(24)))))
""")
    assert d == [True] * 24, d
    assert f.read_text() == "".join(f"line {i:02d} = new\n" for i in range(24))


def test_replace_through_ptc_tool(ptc):
    (ptc.workdir / "t.txt").write_text("alpha\n")
    r = ptc.run_ptc(["tool", "patch", json.dumps({"path": "t.txt", "old_string": "alpha",
                                                  "new_string": "beta"})])
    assert r.rc == 0, r
    assert r.data["success"] is True, r
    assert (ptc.workdir / "t.txt").read_text() == "beta\n"
