#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check the house rules of docs/CODING_STYLE.md that the sources' text shows.

  - own header first (11): the first #include of a .c names its own header, so that the
    header is compiled once with nothing before it (it cannot lean on what its .c happened
    to include earlier) and a declaration that disagrees with its definition is an error in
    the file that defines it. A .c's own header is:
      1. foo.h beside foo.c, when there is one (spawn.c -> spawn.h, tool-util.c ->
         tool-util.h);
      2. else the headers of its own directory that declare what it defines (its
         non-static functions and objects): a file that implements part of a header of
         another name includes that header first (config-yaml.c -> config-internal.h,
         cmd-run.c -> cli.h, read-file.c -> tool.h, html-tree.c ->
         html-markdown-internal.h); when several headers of its directory declare its
         definitions, any one of them may come first;
      3. else the public header that declares what it defines: a file that only implements
         part of the public API includes "ptc/ptc.h" first (agent/agent.c,
         api/approval-api.c);
      4. else it has none, and nothing is asked of it (cli/main.c,
         web/web-module-builtin.c).
  - every file starts with the SPDX line; every header has #pragma once (11);
  - comments are /* */ only: no // outside strings (11);
  - no kernel-compat definition ("#ifndef X" + "#define X") in a .c: they live in
    src/basic/compat/ (11);
  - the library (src/basic, src/core) never calls exit() or prints to stdout, and logs
    above debug only where LOGGERS says (4);
  - processes are made only where FORKERS says (7): a fork(), vfork(), clone() or clone3
    anywhere else in src/ is an error, so a new one is a decision written down with its
    reason (tests fork as they need).
Every .c and .h under src/, include/ and tests/lib/ is checked, new ones included; EXCEPTIONS
names the files left out of the own-header rule, each with why.

Usage: check-style.py [SOURCE_ROOT]   (default: the repository this script is in)
Lists each .c with its own header with -v. Exit status 1 and one line per violation.
"""

import os
import re
import sys

# Files left out of the own-header rule (path relative to the root), each with why.
EXCEPTIONS = {}

# The files that make a process themselves, each with why it is not spawn/'s spawn_start()
# (docs/CODING_STYLE.md 7 lists them too).
FORKERS = {
    "src/core/spawn/spawn.c": "the one way to start a program: spawn_start(), spawn_process()",
    "src/core/spawn/fork-call.c": "fork_call(): a function run in a forked copy that never "
                                  "execs, a crash boundary",
    "src/core/sandbox/sandbox-init.c": "the sandbox's init starts the script, sharing its "
                                       "memory until the exec (CLONE_VM | CLONE_VFORK)",
    "src/core/sandbox/sandbox-plan.c": "a helper that only holds a user namespace open while "
                                       "its id maps are written, then exits",
    "src/core/command/pidns-init.c": "a probe whether a pid namespace can be made; it exits at "
                                   "once",
    "src/cli/serve-client.c": "ptc serve's daemon: a double fork that detaches it",
}
# Library files that log above debug, each with why (docs/CODING_STYLE.md 4): the library
# otherwise returns what went wrong and leaves the telling to its caller.
LOGGERS = {
    "src/core/sandbox/cgroup.c": "a run without its cgroup, or a cgroup left behind: no "
                                 "caller can act on it, the run goes on",
    "src/core/spawn/spawn.c": "a clone into the cgroup refused (kernel before 5.7): said once "
                              "per process, the start goes on without it",
}
LOUD_LOG = re.compile(r"\blog_(?:error|warning|notice|info)(?:_errno)?\s*\(")
# What the library never does: exit, or print to stdout.
LIBRARY_NEVER = re.compile(r"(?<![\w.>])(?:exit|printf|puts|putchar|vprintf)\s*\(|\bstdout\b")
# "#ifndef X" right before "#define X": a kernel-compat definition (11).
COMPAT = re.compile(r"^#\s*ifndef\s+(\w+)\s*\n#\s*define\s+\1\b", re.M)
FORK = re.compile(r"\b(?:v?fork|clone)\s*\(|\bSYS_clone3?\b")

DIRS = ("src", "include", "tests/lib")
INCLUDE = re.compile(r'^\s*#\s*include\s+(?:"([^"]+)"|<([^>]+)>)', re.M)
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
CHAR = re.compile(r"'(?:\\.|[^'\\\n])'")
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')
# A function definition at the start of a line that is not static (as scripts/check-layers.py).
FUNCTION = re.compile(
    r"^(?!static\b|typedef\b|struct\b[^(]*;|extern\b)[A-Za-z_][\w \t*]*?[\s*](\w+)\(([^;{}]*?)\)"
    r"\s*(?:_\w+_(?:\([^)]*\))?\s*|__attribute__\(\(.*?\)\)\s*)*\{", re.M | re.S)
# An object defined at file scope, not static: "const struct tool_def tool_patch = {".
OBJECT = re.compile(r"^(?!static\b|extern\b|typedef\b|#)(?:__attribute__\(\([^\n]*?\)\)\s*)?"
                    r"[A-Za-z_][\w \t*]*?\b(\w+)\s*"
                    r"(?:\[[^\]\n]*\]\s*)*=", re.M)
# What a header declares: functions (and anything called like one), extern objects.
DECL_FUNCTION = re.compile(r"\b(\w+)\s*\(")
DECL_OBJECT = re.compile(r"\bextern\b[^;(]*?\b(\w+)\s*(?:\[[^\]]*\]\s*)*;")


def strip(text):
    return STRING.sub('""', COMMENT.sub("", text))


def defined_names(text):
    body = COMMENT.sub("", text)
    return {m.group(1) for m in FUNCTION.finditer(body)} | \
        {m.group(1) for m in OBJECT.finditer(body)}


def declared_names(text):
    body = strip(text)
    return set(DECL_FUNCTION.findall(body)) | set(DECL_OBJECT.findall(body))


def resolve(root, includer, name):
    """The repository path an #include "name" of @includer means, or None."""
    for base in ("src", "include", os.path.dirname(includer), "."):
        path = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(root, path)):
            return path
    return None


def own_headers(root, rel, text, headers_of_dir, public):
    """(headers, why): the headers that may come first in @rel; empty when it has none."""
    same = rel[:-2] + ".h"
    if os.path.isfile(os.path.join(root, same)):
        return [same], "the header beside it"
    defs = defined_names(text)
    for candidates, why in ((headers_of_dir, "the header of its directory that declares "
                             "what it defines"),
                            (public, "the public header that declares what it defines")):
        found = []
        for h in candidates:
            with open(os.path.join(root, h), encoding="utf-8", errors="replace") as fh:
                if defs & declared_names(fh.read()):
                    found.append(h)
        if found:
            return found, why
    return [], None


def main(argv):
    verbose = "-v" in argv
    args = [a for a in argv[1:] if a != "-v"]
    root = args[0] if args else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    sources, headers = [], {}
    for top in DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                rel = os.path.relpath(os.path.join(dirpath, f), root)
                if f.endswith(".c"):
                    sources.append(rel)
                elif f.endswith(".h"):
                    headers.setdefault(os.path.dirname(rel), []).append(rel)

    public = []
    for dirpath, _, files in os.walk(os.path.join(root, "include")):
        public += [os.path.relpath(os.path.join(dirpath, f), root)
                   for f in sorted(files) if f.endswith(".h")]

    errors = []
    checked = 0
    forkers, loggers = set(), set()
    for rel in sorted(sources + [h for hs in headers.values() for h in hs]):
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        if not text.startswith("/* SPDX-License-Identifier: MIT */\n"):
            errors.append(f"{rel}: the first line is not /* SPDX-License-Identifier: MIT */")
        if rel.endswith(".h") and not re.search(r"^#pragma once$", text, re.M):
            errors.append(f"{rel}: no #pragma once")
        if rel.endswith(".c"):
            for m in COMPAT.finditer(text):
                n = text.count("\n", 0, m.start()) + 1
                errors.append(f"{rel}:{n}: defines {m.group(1)} if missing: a kernel-compat "
                              "definition belongs in src/basic/compat/<family>.h")
        code = CHAR.sub("' '", BLOCK_COMMENT.sub(lambda c: "\n" * c.group(0).count("\n"), text))
        code = STRING.sub('""', code)
        for n, line in enumerate(code.split("\n"), 1):
            if "//" in line:
                errors.append(f"{rel}:{n}: a // comment (comments are /* */ only)")
            library = rel.startswith(("src/core/", "src/basic/")) and \
                rel not in ("src/basic/log.c", "src/basic/log.h")
            if library and LOUD_LOG.search(line):
                loggers.add(rel)
                if rel not in LOGGERS:
                    errors.append(f"{rel}:{n}: the library logs above debug ({line.strip()}): "
                                  "return -errno with a diag instead, or add the file to "
                                  "LOGGERS in scripts/check-style.py with why")
            if library and not line.lstrip().startswith("#") and LIBRARY_NEVER.search(line):
                errors.append(f"{rel}:{n}: the library never exits or prints to stdout "
                              f"({line.strip()})")
            if rel.startswith("src/") and FORK.search(line) and not line.lstrip().startswith("#"):
                forkers.add(rel)
                if rel not in FORKERS:
                    errors.append(f"{rel}:{n}: makes a process ({line.strip()}): start it "
                                  "through spawn/ (spawn_start(), fork_call()), or add the "
                                  "file to FORKERS in scripts/check-style.py and to "
                                  "docs/CODING_STYLE.md 7 with why")
    for rel in sorted(set(LOGGERS) - loggers):
        errors.append(f"stale: LOGGERS names {rel}, which logs nothing above debug: remove it "
                      "from scripts/check-style.py")
    for rel in sorted(set(FORKERS) - forkers):
        errors.append(f"stale: FORKERS names {rel}, which makes no process: remove it from "
                      "scripts/check-style.py and docs/CODING_STYLE.md 7")

    for rel in sorted(sources):
        if rel in EXCEPTIONS:
            continue
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        own, why = own_headers(root, rel, text, sorted(headers.get(os.path.dirname(rel), [])),
                               public)
        if not own:
            if verbose:
                print(f"{rel}: no own header")
            continue
        checked += 1
        m = INCLUDE.search(COMMENT.sub(lambda c: "\n" * c.group(0).count("\n"), text))
        first = m and m.group(1) and resolve(root, rel, m.group(1))
        if verbose:
            print(f"{rel}: {' or '.join(own)}")
        if first in own:
            continue
        shown = (f'#include "{m.group(1)}"' if m.group(1) else f"#include <{m.group(2)}>") \
            if m else "no #include"
        names = " or ".join(f'"{h.split("/", 1)[1] if h.startswith(("src/", "include/")) else h}"'
                            for h in own)
        errors.append(f"{rel}: the first include is {shown}, not its own header {names} "
                      f"({why}): move that #include above the others")
    for rel in sorted(EXCEPTIONS):
        if not os.path.isfile(os.path.join(root, rel)):
            errors.append(f"stale: EXCEPTIONS names {rel}, which does not exist: remove it")

    for e in errors:
        print(e)
    if errors:
        print(f"check-style: {len(errors)} violation(s)", file=sys.stderr)
        return 1
    print(f"check-style: {len(sources)} .c and {sum(map(len, headers.values()))} .h files; "
          f"{checked} include their own header first, {len(forkers)} make processes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
