# SPDX-License-Identifier: MIT
"""search_files (docs/seed.md 2.3, docs/contracts.md 9.5) through `ptc tool` and
through scripts. Real trees are searched by ptc and by ripgrep (the seed's engine) and the
results compared: file sets for --files, per-file match counts, matching and context lines.
The ripgrep comparisons are skipped when `rg` is not installed (CI installs it).

Known, deliberate differences from rg that the trees below avoid or filter out: ptc never
descends into .git (rg -g '*' does); a NUL byte anywhere makes a file binary for ptc in every
output mode (rg -l and -n still report matches read before a late NUL, rg -c does not); ptc
applies the ignore rules of parent directories the same way
whatever spelling the search path has (rg 13 misapplies anchored parent rules for a relative
path other than "."), so the comparisons use "." and absolute paths.
"""

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import expect

RG = shutil.which("rg")
needs_rg = pytest.mark.skipif(RG is None, reason="ripgrep (rg) is not installed")


def search(ptc, args, cwd=None, rc=0):
    r = ptc.run_ptc(["tool", "search_files", json.dumps(args)], cwd=cwd)
    assert r.rc == rc, r
    assert r.data is not None, r
    return r.data


def rg(ptc, args, cwd):
    """Run rg with the test's minimal environment (its own HOME and XDG dirs, no rg config)."""
    p = subprocess.run([RG] + args, cwd=str(cwd), env=ptc.make_env(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    assert p.returncode in (0, 1), (args, p.stderr)
    return p.stdout.decode("utf-8")


def rg_counts(ptc, cwd, pattern, path, glob=None):
    args = ["-c"] + (["--glob", glob] if glob else []) + ["-e", pattern, path]
    out = {}
    for line in rg(ptc, args, cwd).splitlines():
        name, n = line.rsplit(":", 1)
        out[name] = int(n)
    return out


def rg_lines(ptc, cwd, pattern, path, context=0, glob=None):
    """{(path, line)} of rg's matches and context lines, from its JSON output."""
    args = ["--json"] + (["-C", str(context)] if context else []) + \
        (["--glob", glob] if glob else []) + ["-e", pattern, path]
    got = set()
    for line in rg(ptc, args, cwd).splitlines():
        ev = json.loads(line)
        if ev["type"] in ("match", "context"):
            got.add((ev["data"]["path"]["text"], ev["data"]["line_number"]))
    return got


def rg_files(ptc, cwd, glob, path):
    return set(rg(ptc, ["--files", "-g", glob, path], cwd).splitlines())


def write(root, rel, data):
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    p.write_bytes(data)
    return p


def make_repo(root):
    """A git work tree exercising the ignore rules ripgrep applies by default."""
    (root / ".git" / "info").mkdir(parents=True)
    write(root, ".git/info/exclude", "excluded.txt\n")
    write(root, ".git/HEAD", "TODO in git\n")
    files = {
        ".gitignore": "*.log\n!keep.log\nbuild/\n/top_only.txt\ndocs/**/*.tmp\n\\#literal\n"
                      "*.o\ntrailing.txt   \n",
        ".ignore": "vendor/\n",
        ".rgignore": "!important.o\n",
        "src/.gitignore": "generated_*.c\n!generated_keep.c\n",
        "src/main.c": "int main() { /* TODO: one */ }\nTODO two\n",
        "src/generated_a.c": "TODO\n",
        "src/generated_keep.c": "TODO\n",
        "src/sub/deep/x.c": "TODO deep\nnothing\nTODO deeper\n",
        "a.log": "TODO\n",
        "keep.log": "TODO\n",
        "build/out.txt": "TODO\n",
        "lib/build/x.txt": "TODO\n",
        "lib/builder.txt": "TODO\n",
        "top_only.txt": "TODO\n",
        "nested/top_only.txt": "TODO\n",
        "docs/a/b/c.tmp": "TODO\n",
        "docs/c.tmp": "TODO\n",
        "other/c.tmp": "TODO\n",
        "#literal": "TODO\n",
        "trailing.txt": "TODO\n",
        "important.o": "TODO\n",
        "x.o": "TODO\n",
        "vendor/v.c": "TODO\n",
        ".hidden/h.c": "TODO\n",
        ".env": "TODO=1\n",
        "excluded.txt": "TODO\n",
        "unicode/\u00e9t\u00e9.txt": "TODO \u00fcn\u00efcode\n",
        "space dir/file name.txt": "TODO spaced\n",
        "tests/test_one.py": "# TODO\n",
        "tests/unit/test_two.py": "# TODO\n",
        "conftest.py": "x = 1  # TODO\n",
        "a.py": "TODO = 2\n",
        "data/f1": "f1\n",
        "data/xf1": "f1\n",
        "data/f10": "f10\n",
        "nested_repo/.gitignore": "*.txt\n",
        "nested_repo/n.log": "TODO nested log\n",
        "nested_repo/n.txt": "TODO nested txt\n",
        "crlf.txt": "TODO crlf\r\nplain\r\nTODO again\r\n",
        "noeol.txt": "first\nTODO last",
    }
    for rel, text in files.items():
        write(root, rel, text)
    (root / "nested_repo" / ".git").mkdir()
    write(root, "bin.dat", b"TODO\n\x00\x01\x02TODO\n")
    write(root, "late.bin", b"TODO\n" + b"x" * 300000 + b"\x00\n")
    os.symlink("src", root / "link_to_src")
    os.symlink("src/main.c", root / "link.c")
    os.symlink(".", root / "loop")
    os.symlink("missing", root / "dangling")


@pytest.fixture
def repo(ptc):
    root = ptc.workdir / "repo"
    root.mkdir()
    make_repo(root)
    return root


# --- comparisons with ripgrep ---------------------------------------------------

PATTERNS = ["TODO", "T.D.", r"\bTODO\b", "deep|main", r"^TODO$", "f1", r"\w+ed\b", "TODO last"]


@needs_rg
@pytest.mark.parametrize("pattern", PATTERNS)
def test_counts_match_rg(ptc, repo, pattern):
    d = search(ptc, {"pattern": pattern, "output_mode": "count", "limit": 10000}, cwd=repo)
    want = rg_counts(ptc, repo, pattern, ".")
    assert d["counts"] == want, (d, want)
    assert d["total_count"] == sum(want.values())


@needs_rg
@pytest.mark.parametrize("glob", ["*.c", "!*.c", "src/**", "*.{c,py}", "*.txt", "*.o"])
def test_counts_with_file_glob_match_rg(ptc, repo, glob):
    d = search(ptc, {"pattern": "TODO", "output_mode": "count", "file_glob": glob,
                     "limit": 10000}, cwd=repo)
    assert d["counts"] == rg_counts(ptc, repo, "TODO", ".", glob=glob), d


@needs_rg
def test_absolute_and_sub_roots_match_rg(ptc, repo):
    for root in (repo, repo / "src", repo / "nested_repo"):
        d = search(ptc, {"pattern": "TODO", "output_mode": "count", "path": str(root),
                         "limit": 10000})
        assert d["counts"] == rg_counts(ptc, ptc.workdir, "TODO", str(root)), (root, d)


@needs_rg
def test_files_only_matches_rg(ptc, repo):
    d = search(ptc, {"pattern": "TODO", "output_mode": "files_only", "limit": 10000}, cwd=repo)
    want = set(rg(ptc, ["-l", "TODO", "."], repo).splitlines())
    # rg -l and -n report a match seen before a NUL byte that comes in a later read (rg -c
    # does not); for ptc a NUL anywhere makes the file binary, in every output mode.
    want.discard("./late.bin")
    assert set(d["files"]) == want
    assert d["total_count"] == len(want)
    assert d["files"] == sorted(d["files"])


@needs_rg
@pytest.mark.parametrize("context", [0, 1, 3])
def test_match_and_context_lines_match_rg(ptc, repo, context):
    d = search(ptc, {"pattern": "TODO", "context": context, "limit": 10000}, cwd=repo)
    got = [(m["path"], m["line"]) for m in d["matches"]]
    want = {k for k in rg_lines(ptc, repo, "TODO", ".", context=context)
            if k[0] != "./late.bin"}  # see test_files_only_matches_rg
    assert set(got) == want
    assert len(got) == len(set(got)) == d["total_count"]


@needs_rg
@pytest.mark.parametrize("pattern", ["*.py", "*", "*.txt", "src/*.c", "**/test_*.py", "f1",
                                     "*.{c,log}", "data/*"])
def test_files_target_matches_rg(ptc, repo, pattern):
    d = search(ptc, {"pattern": pattern, "target": "files", "limit": 10000}, cwd=repo)
    glob = pattern if ("/" in pattern or pattern.startswith("*")) else "*" + pattern
    # ptc never walks into .git, even when a glob whitelists it (rg -g '*' does).
    want = {p for p in rg_files(ptc, repo, glob, ".") if not p.startswith("./.git/")}
    assert set(d["files"]) == want, (pattern, d["files"], want)
    assert d["total_count"] == len(want)


# --- results and errors -----------------------------------------------------------

def test_content_shape_and_paths(ptc, repo):
    d = search(ptc, {"pattern": "TODO two"}, cwd=repo)
    assert d == {"total_count": 1,
                 "matches": [{"path": "./src/main.c", "line": 2, "content": "TODO two"}]}, d
    d = search(ptc, {"pattern": "TODO two", "path": "src"}, cwd=repo)
    assert d["matches"][0]["path"] == "src/main.c", d
    d = search(ptc, {"pattern": "TODO two", "path": "src/main.c"}, cwd=repo)
    assert d["matches"][0]["path"] == "src/main.c", d
    d = search(ptc, {"pattern": "nothing at all here"}, cwd=repo)
    assert d == {"total_count": 0, "matches": []}, d


def test_invalid_regex_is_an_error(ptc, repo):
    d = search(ptc, {"pattern": "foo(bar"}, cwd=repo)
    assert d["total_count"] == 0
    assert d["error"].startswith("Invalid regex at offset 7: missing closing parenthesis"), d
    d = search(ptc, {"pattern": "[z-a]"}, cwd=repo)
    assert "Invalid regex at offset" in d["error"], d


def test_hostile_regex_returns_promptly(ptc):
    (ptc.workdir / "evil.txt").write_text("a" * 50000 + "b\n")
    t0 = time.monotonic()
    d = search(ptc, {"pattern": "(a+)+$"})
    assert time.monotonic() - t0 < 10  # hang guard
    assert "too expensive" in d["error"] and "evil.txt" in d["error"], d


def test_symlink_loop_and_links_not_followed(ptc):
    root = ptc.workdir
    write(root, "real/f.txt", "needle\n")
    os.symlink("..", root / "real" / "up")
    os.symlink(".", root / "self")
    os.symlink("real/f.txt", root / "flink.txt")
    d = search(ptc, {"pattern": "needle", "output_mode": "count"})
    assert d["counts"] == {"./real/f.txt": 1}, d
    d = search(ptc, {"pattern": "*", "target": "files"})
    assert d["files"] == ["./real/f.txt"], d
    if RG:
        assert rg_counts(ptc, root, "needle", ".") == {"./real/f.txt": 1}


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads unreadable directories anyway")
def test_unreadable_dir_and_file_skipped(ptc):
    root = ptc.workdir
    write(root, "ok/a.txt", "needle\n")
    write(root, "closed/b.txt", "needle\n")
    f = write(root, "secret.txt", "needle\n")
    os.chmod(root / "closed", 0)
    os.chmod(f, 0)
    try:
        d = search(ptc, {"pattern": "needle", "output_mode": "count"})
        assert d["counts"] == {"./ok/a.txt": 1}, d
        assert "error" not in d
    finally:
        os.chmod(root / "closed", 0o755)
        os.chmod(f, 0o644)


def test_binary_files_skipped(ptc, repo):
    d = search(ptc, {"pattern": "TODO", "output_mode": "files_only", "limit": 1000}, cwd=repo)
    assert "./bin.dat" not in d["files"] and "./late.bin" not in d["files"], d
    d = search(ptc, {"pattern": "*.dat", "target": "files"}, cwd=repo)
    assert d["files"] == ["./bin.dat"], d  # listing does not look inside


def test_total_count_is_the_true_total_across_pages(ptc):
    for i in range(30):
        write(ptc.workdir, f"p/f{i:02d}.txt", "hit\n" * 7)
    full = search(ptc, {"pattern": "hit", "limit": 1000})
    assert full["total_count"] == 210 and len(full["matches"]) == 210
    assert "truncated" not in full and "_hint" not in full
    pages, offset = [], 0
    while True:
        d = search(ptc, {"pattern": "hit", "limit": 40, "offset": offset})
        assert d["total_count"] == 210, d
        pages += d["matches"]
        if not d.get("truncated"):
            assert "_hint" not in d
            break
        assert d["_hint"] == (f"Results truncated. Use offset={offset + 40} to see more, or "
                              "narrow with a more specific pattern or file_glob."), d
        offset += 40
    assert pages == full["matches"]
    d = search(ptc, {"pattern": "hit", "output_mode": "count", "limit": 5})
    assert d["total_count"] == 210 and len(d["counts"]) == 5 and d["truncated"] is True
    d = search(ptc, {"pattern": "hit", "output_mode": "files_only", "limit": 5, "offset": 28})
    assert d["total_count"] == 30 and d["files"] == ["./p/f28.txt", "./p/f29.txt"], d


def test_hint_inside_json_in_a_script(ptc):
    # The seed appended the hint after the JSON text, so the script's json.loads failed (#81610).
    for i in range(3):
        write(ptc.workdir, f"h{i}.txt", "needle\n")
    r = ptc.run("""
        import json
        from hermes_tools import search_files
        r = search_files("needle", limit=1)
        print(json.dumps({"total": r["total_count"], "n": len(r["matches"]),
                          "truncated": r.get("truncated"), "hint": r.get("_hint")}))
        """)
    expect(r, 0, "success")
    out = r.output_json()
    assert out["total"] == 3 and out["n"] == 1 and out["truncated"] is True, out
    assert out["hint"].startswith("Results truncated. Use offset=1"), out


def test_deterministic_order(ptc, repo):
    a = search(ptc, {"pattern": "TODO", "limit": 1000, "context": 1}, cwd=repo)
    for _ in range(3):
        assert search(ptc, {"pattern": "TODO", "limit": 1000, "context": 1}, cwd=repo) == a
    keys = [(m["path"].encode(), m["line"]) for m in a["matches"]]
    assert keys == sorted(keys)


def test_files_target_newest_first(ptc):
    root = ptc.workdir
    for name, t in (("old.py", 1_000_000), ("mid_b.py", 2_000_000), ("mid_a.py", 2_000_000),
                    ("new.py", 3_000_000), ("other.txt", 4_000_000)):
        p = write(root, name, "")
        os.utime(p, (t, t))
    d = search(ptc, {"pattern": "*.py", "target": "files"})
    assert d == {"total_count": 4,
                 "files": ["./new.py", "./mid_a.py", "./mid_b.py", "./old.py"]}, d
    d = search(ptc, {"pattern": "*.py", "target": "files", "limit": 1, "offset": 1})
    assert d["files"] == ["./mid_a.py"] and d["total_count"] == 4 and d["truncated"] is True


def test_path_not_found_suggests_similar(ptc):
    (ptc.workdir / "repo").mkdir()
    d = search(ptc, {"pattern": "x", "path": "rep"})
    assert d == {"total_count": 0, "error": "Path not found: rep. Similar paths: ./repo"}, d


# --- git's global excludes (core.excludesFile), as rg reads them --------------

def _global_excludes_case(ptc, repo, files):
    env = ptc.make_env()
    home, xdg = Path(env["HOME"]), Path(env["XDG_CONFIG_HOME"])
    created = [write(xdg if rel.startswith("$XDG/") else home, rel.replace("$XDG/", ""), text)
               for rel, text in files]
    try:
        d = search(ptc, {"pattern": "TODO", "output_mode": "count", "limit": 10000}, cwd=repo)
        want = rg_counts(ptc, repo, "TODO", ".")
        assert d["counts"] == want, (d, want)
        return want
    finally:
        for p in created:
            p.unlink()


GLOBAL_EXCLUDES = {
    # core.excludesFile in ~/.gitconfig, "~/" expanded, other sections around it
    "gitconfig": ([(".gitconfig", '[user]\n\tname = x\n[core]\n\texcludesFile = ~/my-ign\n'),
                   ("my-ign", "a.py\nsrc/sub/\n")], "./a.py"),
    # no gitconfig: $XDG_CONFIG_HOME/git/ignore
    "xdg-default": ([("$XDG/git/ignore", "conftest.py\n/noeol.txt\n")], "./conftest.py"),
    # $XDG_CONFIG_HOME/git/config names the file, key spelt in lower case
    "xdg-config": ([("$XDG/git/config", "[core]\n  excludesfile = ~/.gexcl\n"),
                    (".gexcl", "*.c\n")], "./src/main.c"),
}


@needs_rg
@pytest.mark.parametrize("how", sorted(GLOBAL_EXCLUDES))
def test_global_git_excludes_match_rg(ptc, repo, how):
    files, hidden = GLOBAL_EXCLUDES[how]
    want = _global_excludes_case(ptc, repo, files)
    assert hidden not in want  # the global rules were applied, not just agreed on
