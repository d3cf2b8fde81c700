#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check that the include graph of src/ keeps the layers of docs/ARCHITECTURE.md.

A module is a directory: src/basic, src/cli, src/core/<name>. Every `#include "..."` of
every .c and .h under src/ is an edge from the including file's module to the included
file's module. The check fails (exit status 1, one line per violation) on:

  - basic including core or cli, core including cli;
  - the engines (core/edit, core/search, core/fs) including core/tools or core/rpc;
  - core/tools including core/rpc;
  - any cycle between modules (directories);
  - a module including another's private header (*-internal.h);
  - inside a module, any cycle between its parts. A part is a family of files sharing the
    first word of their name (tool.h + tool-util.c, v4a.h + v4a-parse.c + v4a-hunk.c, the
    search-*.c), or, in a module listed in PARTS below (core/exec, whose files all start
    with "exec"), the part the table names; part A needs part B when a .c of A calls a
    function a .c of B defines. Two parts needing each other (file-safety.c calling
    tool-util.c calling file-safety.c) is the circle this catches: the shared piece belongs
    in the lower part;
  - a header declaring functions that another part of its module defines (lint.h declaring
    write-file.c's writes, so write-file.c includes lint.h and lint.c the other way round):
    each part declares its own functions. The module's own header (exec/exec.h, cli/cli.h)
    and the headers named in FACADES may declare those of all its parts;
  - a file it cannot place: a .c or .h under src/ outside a module (src/x.c, src/core/x.c),
    or one of a PARTS module that its table does not name (a new file there must be given a
    part), unless EXCEPTIONS names it; an entry of PARTS, FACADES or EXCEPTIONS naming a file
    that does not exist is an error too, so the tables stay true.

Usage: check-layers.py [SOURCE_ROOT]   (default: the repository this script is in)
Prints the module graph with -v.
"""

import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# (module prefix of the includer, module prefix it must not include, why)
FORBIDDEN = [
    ("basic", "core/", "basic is libc-only: it never includes core"),
    ("basic", "cli", "basic never includes cli"),
    ("core/", "cli", "core never includes cli"),
    ("core/edit", "core/tools", "the editing engine never includes the tools"),
    ("core/edit", "core/rpc", "the editing engine never includes rpc"),
    ("core/search", "core/tools", "the search engine never includes the tools"),
    ("core/search", "core/rpc", "the search engine never includes rpc"),
    ("core/fs", "core/tools", "path safety never includes the tools"),
    ("core/fs", "core/rpc", "path safety never includes rpc"),
    ("core/tools", "core/rpc", "a tool never includes rpc: rpc reaches tools through the registry"),
]


# The parts of the modules whose file names do not say their part: module -> part -> the
# files' names without .c/.h. Every .c and .h of such a module must be named here; a new file
# is an error until it is (check-layers says which line to add). Keep each part one seam.
PARTS = {
    "core/exec": {
        # exec_run(): the one place that picks a run's target, and the local one (a script
        # that is ptc's child); what every kind of run shares (exec-internal.h: child
        # environment, token, capture, result)
        "exec": ["exec", "exec-internal", "exec-run-local"],
        # the run supervisor: phases, deadline, cancel, tools, output, result, teardown
        "supervisor": ["exec-run"],
        # a script's confined start (isolation levels and their warnings)
        "start": ["exec-start"],
        # the captured output as the result has it (capture caps, ANSI, redaction, spill)
        "output": ["exec-output"],
        # the result JSON and its texts
        "result": ["result"],
        # the private directory of one run
        "staging": ["staging"],
        # a script's start in a trace (sandbox steps, interpreter start)
        "trace": ["exec-trace"],
        # a session's interpreter and its cells (docs/sessions.md)
        "cell": ["exec-interp", "exec-interp-internal", "exec-run-cell"],
        # the host's side of a run on a remote backend (docs/remote.md)
        "remote": ["exec-remote", "exec-remote-run", "exec-remote-calls"],
    },
}

# Headers that may declare the functions of every part of their module, besides the module's
# own <module>.h: the internal header the parts share.
FACADES = {
    "core/exec/exec-internal.h": "what the local, cell and remote runs share inside exec/",
}

# Files left out of the part checks, each with why (path relative to src/).
EXCEPTIONS = {}

# Calls from one part to another that the cycle check lets through, each with why: a known
# circle waiting for its fix. An entry whose call is gone is an error: delete it then.
ALLOWED_NEEDS = {}


def module_of(rel):
    """'core/tools/tool.h' -> 'core/tools'; 'basic/buf.h' -> 'basic'; 'cli/x.c' -> 'cli'."""
    parts = rel.split("/")
    if parts[0] == "core" and len(parts) > 2:
        return "core/" + parts[1]
    return parts[0]


DEFINITION = re.compile(
    r"^(?!static\b|typedef\b|struct\b[^(]*;|extern\b)[A-Za-z_][\w \t*]*?[\s*](\w+)\(([^;{}]*?)\)"
    r"\s*(?:_\w+_(?:\([^)]*\))?\s*|__attribute__\(\(.*?\)\)\s*)*\{", re.M | re.S)
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')
IDENT = re.compile(r"\b[A-Za-z_]\w*\b")


def family_of(rel):
    """'core/tools/file-safety.c' -> 'file'; 'core/tools/tool-util.c' -> 'tool';
    'core/exec/exec-remote-run.c' -> 'remote' (PARTS); None: a PARTS module's unnamed file."""
    stem = os.path.basename(rel).split(".")[0]
    table = PARTS.get(module_of(rel))
    if table is None:
        return stem.split("-")[0]
    for part, stems in table.items():
        if stem in stems:
            return part
    return None


def unplaced(texts):
    """Files the part checks cannot place, and table entries naming no file."""
    out = []
    for rel in sorted(texts):
        if rel in EXCEPTIONS:
            continue
        parts = rel.split("/")
        if len(parts) < 2 or (parts[0] == "core" and len(parts) < 3) or \
                parts[0] not in ("basic", "cli", "core"):
            out.append(f"unplaced: src/{rel} is in no module (src/basic, src/cli, "
                       "src/core/<module>/): move it into one, or name it in EXCEPTIONS "
                       "in scripts/check-layers.py with why")
        elif family_of(rel) is None:
            mod = module_of(rel)
            stem = os.path.basename(rel).split(".")[0]
            out.append(f"unplaced: src/{rel} is in no part of {mod}: add \"{stem}\" to one "
                       f"of PARTS[\"{mod}\"] ({', '.join(PARTS[mod])}) in "
                       "scripts/check-layers.py, or a new part for it")
    stems = {(module_of(r), os.path.basename(r).split(".")[0]) for r in texts}
    for mod, table in sorted(PARTS.items()):
        for part, names in table.items():
            for stem in names:
                if (mod, stem) not in stems:
                    out.append(f"stale: PARTS[\"{mod}\"][\"{part}\"] names \"{stem}\", but "
                               f"src/{mod}/ has no {stem}.c or {stem}.h: remove it")
    for rel in sorted(set(FACADES) | set(EXCEPTIONS)):
        if rel not in texts:
            out.append(f"stale: scripts/check-layers.py names src/{rel}, which does not exist")
    return out


def part_cycles(texts):
    """Cycles between the parts (file families) of each module, from calls to definitions."""
    defined = {}  # function -> (module, family)
    for rel, text in texts.items():
        if rel.endswith(".c") and placed(rel):
            for name, _ in DEFINITION.findall(COMMENT.sub("", text)):
                defined.setdefault(name, (module_of(rel), family_of(rel), rel))
    needs = {}  # (module, family) -> {(module, family): "a.c calls f() of b.c"}
    allowed_seen = set()
    for rel, text in texts.items():
        if not rel.endswith(".c") or not placed(rel):
            continue
        me = (module_of(rel), family_of(rel))
        body = STRING.sub('""', COMMENT.sub("", text))
        for ident in sorted(set(IDENT.findall(body))):
            d = defined.get(ident)
            if d and d[0] == me[0] and d[1] != me[1]:
                if (me[0], me[1], d[1]) in ALLOWED_NEEDS:
                    allowed_seen.add((me[0], me[1], d[1]))
                    continue
                needs.setdefault(me, {}).setdefault((d[0], d[1]),
                                                     f"{rel} calls {ident}() of {d[2]}")
    stale = [f"stale: ALLOWED_NEEDS lets {m}: {a}* -> {b}* through, but no .c of {a}* calls "
             f"{b}* any more: delete the entry from scripts/check-layers.py"
             for (m, a, b) in sorted(set(ALLOWED_NEEDS) - allowed_seen)]
    return needs, defined, stale


def foreign_declarations(texts, defined):
    """Functions a header declares that a .c of another part of its module defines."""
    out = []
    for rel, text in sorted(texts.items()):
        if not rel.endswith(".h") or not placed(rel):
            continue
        mod, fam = module_of(rel), family_of(rel)
        if os.path.basename(rel) == os.path.basename(mod) + ".h" or rel in FACADES:
            continue  # the module's facade
        body = STRING.sub('""', COMMENT.sub("", text))
        for name in sorted(set(re.findall(r"\b(\w+)\s*\(", body))):
            d = defined.get(name)
            if d and d[0] == mod and d[1] != fam:
                out.append(f"header: {rel} declares {name}() of {d[2]} (another part)")
    return out


def placed(rel):
    return rel not in EXCEPTIONS and family_of(rel) is not None


def matches(module, prefix):
    return module == prefix.rstrip("/") or module.startswith(prefix) if prefix.endswith("/") \
        else module == prefix


def main(argv):
    verbose = "-v" in argv
    args = [a for a in argv[1:] if a != "-v"]
    root = args[0] if args else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    src = os.path.join(root, "src")

    edges = {}  # (from module, to module) -> first "file: include" seen
    texts = {}
    private = []  # another module's *-internal.h included
    for dirpath, _, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, src)
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            texts[rel] = text
            for inc in INCLUDE.findall(text):
                if not os.path.exists(os.path.join(src, inc)):
                    continue  # generated (ptc-version.h) or include/ptc/: not a module
                a, b = module_of(rel), module_of(inc)
                if a != b:
                    edges.setdefault((a, b), f"{rel}: #include \"{inc}\"")
                    if inc.endswith("-internal.h"):
                        private.append(f"internal: {rel} includes {inc}, which is private to "
                                       f"{b}: use {b}'s own header")

    errors = private
    for (a, b), where in sorted(edges.items()):
        for frm, to, why in FORBIDDEN:
            if matches(a, frm) and matches(b, to) and not (frm == "core/" and to == "core/"):
                errors.append(f"layer: {a} -> {b} ({why}): {where}")

    # Cycles between modules: strongly connected components of more than one module.
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    for comp in sccs_of(graph):
        inner = [f"{a} -> {b} ({edges[(a, b)]})" for (a, b) in sorted(edges)
                 if a in comp and b in comp]
        errors.append("cycle between modules " + ", ".join(comp) + ":\n    " +
                      "\n    ".join(inner))

    # Cycles between the parts of one module.
    errors += unplaced(texts)
    needs, defined, stale = part_cycles(texts)
    errors += stale
    errors += foreign_declarations(texts, defined)
    pgraph = {}
    for a, bs in needs.items():
        pgraph.setdefault(a, set()).update(bs)
        for b in bs:
            pgraph.setdefault(b, set())
    for comp in sccs_of(pgraph):
        inner = [f"{needs[a][b]}" for a in comp for b in sorted(needs.get(a, {})) if b in comp]
        errors.append(f"cycle between parts of {comp[0][0]}: " +
                      ", ".join(f[1] + "*" for f in comp) + ":\n    " + "\n    ".join(inner))

    if verbose:
        for v in sorted(graph):
            print(f"{v} -> {', '.join(sorted(graph[v])) or '(nothing)'}")
        for v in sorted(pgraph):
            if pgraph[v]:
                print(f"  {v[0]}: {v[1]}* -> " + ", ".join(b[1] + "*" for b in sorted(pgraph[v])))
    for e in errors:
        print(e)
    if errors:
        print(f"check-layers: {len(errors)} violation(s)", file=sys.stderr)
        return 1
    print(f"check-layers: {len(graph)} modules, {len(edges)} module edges, no violations")
    return 0


def sccs_of(graph):
    """Strongly connected components of more than one node (Tarjan), each sorted."""
    index, low, on, stack, sccs, counter = {}, {}, set(), [], [], [0]

    def strongconnect(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return sccs


if __name__ == "__main__":
    sys.exit(main(sys.argv))
