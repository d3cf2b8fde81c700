#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check that every header compiles on its own (docs/CODING_STYLE.md 11; git's hdr-check).

For each .h under src/ and include/, a .c holding only `#include "x.h"` (twice, so that a
header without `#pragma once` fails too) is compiled with -fsyntax-only -Werror, with the
exact command the build uses for x.c, else for a .c of its directory (its compiler,
include paths, dependencies' flags and warnings: from BUILD_DIR/compile_commands.json), so
a header that leans on what its includer happened to include first is an error here. A
public header (include/) is compiled as plain C11 too: -std=c11 -Wpedantic. The compiles
run in parallel, one per CPU.

Usage: check-headers.py SOURCE_ROOT BUILD_DIR [HEADER...]   (default: every header)
Exit status 1 and the compiler's messages for each header that does not compile.
"""

import concurrent.futures
import json
import os
import shlex
import subprocess
import sys
import tempfile

DIRS = ("src", "include")
# Arguments of a compile command that name its input and outputs, with how many values follow.
DROP = {"-o": 1, "-c": 0, "-MD": 0, "-MMD": 0, "-MQ": 1, "-MF": 1, "-MT": 1,
        "-fdiagnostics-color=always": 0}


def headers_of(root):
    out = []
    for top in DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            out += [os.path.relpath(os.path.join(dirpath, f), root)
                    for f in sorted(files) if f.endswith(".h")]
    return sorted(out)


def spelling(rel):
    """How the code includes @rel: 'src/core/exec/exec.h' -> 'core/exec/exec.h'."""
    return rel.split("/", 1)[1]


def commands_by_dir(root, build):
    """Source file and directory (relative to root) -> (cwd, argv without input and
    outputs): a directory gets the first command of a .c in it."""
    path = os.path.join(build, "compile_commands.json")
    try:
        with open(path, encoding="utf-8") as fh:
            entries = json.load(fh)
    except (OSError, ValueError) as e:
        sys.exit(f"check-headers: cannot read {path} ({e}): configure the build with ninja")
    by_dir = {}
    # The libraries' and the programs' commands before the tests' (tests add their own flags).
    for e in sorted(entries, key=lambda e: e.get("output", "").startswith("tests/")):
        src = os.path.relpath(os.path.join(e["directory"], e["file"]), root)
        argv = e["arguments"] if "arguments" in e else shlex.split(e["command"])
        args, skip = [], 0
        for a in argv:
            if skip:
                skip -= 1
            elif a in DROP:
                skip = DROP[a]
            elif a == e["file"] or a.startswith("-o") and len(a) > 2:
                pass
            else:
                args.append(a)
        by_dir.setdefault(src, (e["directory"], args))
        by_dir.setdefault(os.path.dirname(src), (e["directory"], args))
    return by_dir


def command_for(rel, by_dir):
    """The command of @rel's own .c (x.c for x.h: its dependencies' flags), else of a .c in
    its directory, else in the nearest one above, else any."""
    if rel[:-2] + ".c" in by_dir:
        return by_dir[rel[:-2] + ".c"]
    d = os.path.dirname(rel)
    while d:
        if d in by_dir:
            return by_dir[d]
        d = os.path.dirname(d)
    for d in sorted(by_dir):
        if d.startswith("src"):
            return by_dir[d]
    return None


def check(rel, by_dir, tmp):
    cmd = command_for(rel, by_dir)
    if cmd is None:
        return rel, "no compile command in compile_commands.json to compile it with"
    cwd, args = cmd
    name = spelling(rel)
    probe = os.path.join(tmp, rel.replace("/", "_") + ".c")
    with open(probe, "w", encoding="utf-8") as fh:
        fh.write(f'#include "{name}"\n#include "{name}"\n')
    # A public header is plain C11 (no _cleanup_, typeof or statement expressions).
    public = ["-std=c11", "-Wpedantic"] if rel.startswith("include/") else []
    p = subprocess.run(args + public + ["-fsyntax-only", "-Werror", "-fdiagnostics-color=never",
                                        "-x", "c", probe],
                       cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return rel, (p.stdout.strip() or f"exit status {p.returncode}") if p.returncode else None


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    root, build = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    headers = argv[3:] or headers_of(root)
    by_dir = commands_by_dir(root, build)
    failed = []
    with tempfile.TemporaryDirectory(prefix="check-headers-") as tmp, \
            concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for rel, err in pool.map(lambda h: check(h, by_dir, tmp), headers):
            if err:
                failed.append(rel)
                print(f"{rel} does not compile on its own:\n{err}\n")
    if failed:
        print(f"check-headers: {len(failed)} of {len(headers)} headers do not compile on "
              "their own: give each the #include, forward declaration or #pragma once it lacks "
              "(a public header: plain C11)",
              file=sys.stderr)
        return 1
    print(f"check-headers: {len(headers)} headers compile on their own")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
