#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check that the files and identifiers the house-rule documents name exist.

Files: every path-like word of the documents below (src/core/spawn/spawn.c,
scripts/run-tests.sh, `meson.build`, a bare `fork-call.c` or `macro.h`) must name a file or
directory of the repository: a path by itself from the top (or from src/, as #include
spells it), a bare name anywhere in the tree (git ls-files, else a walk). Placeholders
(`test-<module>.c`, `fuzz-NAME.c`, `compat/*.h`, `"basic/..."`) and system headers
(`<jansson.h>`) are not paths.

Identifiers: every name in `code spans` (outside fenced blocks) that is written like one of
the code's (snake_case: `spawn_process()`, `_cleanup_free_`; or upper case:
`RPC_FRAME_MAX`) must occur in the sources (src/, include/, tests/, scripts/, the meson
files). Fragments (`_RESET`, `TAKE_*`, `CLONE_...`) and placeholders (`X_free()`,
`<module>_<verb>`) are not names.

Modules: docs/ARCHITECTURE.md's layer list names every directory of src/core/, and only
those (with the default documents).

A name that is meant to be absent (a file of the run's staging directory) is written in
IGNORE with why.

Usage: check-docs.py [SOURCE_ROOT] [DOC...]   (default: DOCS, from the repository this
script is in). Exit status 1 and one line per name that names nothing.
"""

import os
import re
import subprocess
import sys

DOCS = ["docs/CODING_STYLE.md", "docs/ARCHITECTURE.md", "docs/testing.md"]

# Names the documents may use although no such file exists here, each with why.
IGNORE = {
    "script.py": "the script's name in a run's staging directory",
    "hermes_tools.py": "the tools module's name in a run's staging directory",
    "testlog.json": "meson's test log, named as what never to commit",
}
# Where the code's identifiers are looked for.
SOURCES = ("src/", "include/", "tests/", "scripts/", "python/", ".ci/", "meson.build",
           "meson_options.txt")
# A path piece that stands for any name: tests/fuzz/fuzz-NAME.c, foo.c.
PLACEHOLDER = re.compile(r"(?:^|[-/.])(?:NAME|MODULE|TARGET|X|foo|bar)(?:$|[-/.])")

EXT = r"(?:c|h|py|sh|md|build|txt|sym|json|ya?ml|in|toml|supp|map|pc)"
PATH = re.compile(r"(?<![\w/.<>*@$-])((?:\.?[\w-]+/)*\.?[\w-]+(?:\.[\w-]+)*\." + EXT +
                  r"|(?:src|tests|docs|scripts|include|bench|man|python|examples|\.ci)/"
                  r"(?:[\w.-]+(?:/[\w.-]+)*/?)?)(?![\w/<>*-]|\.\w)")
# Dotfiles of the top named in the documents.
DOTFILES = re.compile(r"(?<![\w/.-])(\.(?:clang-format|editorconfig|gitignore))\b")


def tree(root):
    try:
        # Tracked and new files, less those deleted from the work tree.
        files = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others",
                                "--exclude-standard"], capture_output=True, text=True,
                               check=True).stdout.split()
        files = [f for f in files if os.path.lexists(os.path.join(root, f))]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for dirpath, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith((".git", "build"))]
            files += [os.path.relpath(os.path.join(dirpath, n), root) for n in names]
    paths = set(files)
    for f in files:
        d = os.path.dirname(f)
        while d:
            paths.add(d)
            d = os.path.dirname(d)
    return paths, {os.path.basename(f) for f in files}, files


def names_in(text):
    """(line, name) for every path-like word of @text outside fenced code."""
    out = []
    for n, line in enumerate(text.split("\n"), 1):
        for m in PATH.finditer(line):
            out.append((n, m.group(1)))
        for m in DOTFILES.finditer(line):
            out.append((n, m.group(1)))
    return out


FENCE = re.compile(r"^```.*?^```", re.M | re.S)
SPAN = re.compile(r"`([^`\n]+)`")
WORD = re.compile(r"(?<![\w/.-])[A-Za-z_]\w*(?![\w/-]|\.\w)")


def identifiers_in(text):
    """(line, name) for every code-like name in the code spans of @text."""
    out = []
    # Blank out fenced blocks, keeping their lines so that the line numbers hold.
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    for n, line in enumerate(text.split("\n"), 1):
        for m in SPAN.finditer(line):
            span = re.sub(r"<[^>]*>", " ", m.group(1))
            for w in WORD.findall(span):
                if w.startswith("_") != w.endswith("_") or w.startswith("X_"):
                    continue  # a fragment (_RESET, TAKE_) or a placeholder (X_free)
                if "_" in w.strip("_") or (w.isupper() and len(w) > 2):
                    out.append((n, w))
    return out


def source_words(root, files):
    words = set()
    for f in files:
        if not f.startswith(SOURCES) or "/corpus/" in f:
            continue
        try:
            with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
                words.update(re.findall(r"\b[A-Za-z_]\w*\b", fh.read()))
        except OSError:
            pass
    return words


def exists(name, paths, basenames):
    name = name.rstrip("/")
    if "/" not in name:
        return name in basenames or name in paths
    if name in paths or "src/" + name in paths or "include/" + name in paths:
        return True
    # "core/spawn/" or "tools/foo.c" as short for a path under src/ or src/core/
    return "src/core/" + name in paths or any(p.endswith("/" + name) for p in paths)


def module_list(root):
    """Errors when ARCHITECTURE.md's layer list and the directories of src/core/ differ."""
    with open(os.path.join(root, "docs/ARCHITECTURE.md"), encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    listed, inside = {}, False
    for n, line in enumerate(lines, 1):
        if line.startswith("src/core/"):
            inside = True
        elif line.startswith("src/") or line.startswith("```"):
            inside = False
        m = re.match(r"^  ([a-z]+)/ ", line)
        if inside and m:
            listed[m.group(1)] = n
    core = os.path.join(root, "src", "core")
    dirs = {d for d in os.listdir(core) if os.path.isdir(os.path.join(core, d))}
    out = [f"docs/ARCHITECTURE.md: the layer list (## Layers) lacks src/core/{d}/: add a line "
           "for it" for d in sorted(dirs - set(listed))]
    out += [f"docs/ARCHITECTURE.md:{listed[d]}: the layer list names {d}/, which src/core/ "
            "does not have" for d in sorted(set(listed) - dirs)]
    return out


def main(argv):
    args = argv[1:]
    root = args[0] if args else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    docs = args[1:] or DOCS
    paths, basenames, files = tree(root)
    words = source_words(root, files)
    errors = []
    count = 0
    for doc in docs:
        with open(os.path.join(root, doc), encoding="utf-8") as fh:
            text = fh.read()
        for n, name in names_in(text):
            count += 1
            if name in IGNORE or PLACEHOLDER.search(name) or exists(name, paths, basenames):
                continue
            errors.append(f"{doc}:{n}: names {name}, which is not in the repository")
        for n, name in identifiers_in(text):
            count += 1
            if name not in IGNORE and name not in words:
                errors.append(f"{doc}:{n}: names {name}, which the sources do not have")
    if not args[1:]:
        errors += module_list(root)
    for e in errors:
        print(e)
    if errors:
        print(f"check-docs: {len(errors)} name(s) of nothing: fix the document (or name it "
              "in IGNORE of scripts/check-docs.py, with why)", file=sys.stderr)
        return 1
    print(f"check-docs: {count} names of files and identifiers in {len(docs)} documents, "
          "all present")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
