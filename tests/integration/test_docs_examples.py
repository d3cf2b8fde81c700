# SPDX-License-Identifier: MIT
"""Every example in README.md and docs/*.md runs as printed, and the repository cites
only files inside it.

Each fenced block of the Markdown files is one case, by its language:

  python  a ptc script, run through the real binary (`ptc run FILE`); it must end with
          status success. A block marked `signature` is a tool signature instead: the
          generated module (`ptc stubs`) must define exactly that function.
  sh      each line is a command of ptc (`build/ptc ...` becomes $PTC_BIN), run with
          bash in a scratch directory; each must exit 0. A line that is not a ptc
          command fails the case unless the block is marked.
  yaml    a config file: loaded by `ptc doctor` (PTC_CONFIG) and, when it starts no
          MCP server, by `ptc run -c pass`; both must accept it.
  json    one JSON document, or one per line (the docs show several results at once).
  text, c not examples (output, messages, trees, a C fragment): not run.

A fence without a language fails: every block says what it is. What a block needs is
said by HTML comments right before its fence, `<!-- example: DIRECTIVE -->`, one per
line:

  skip (REASON)        not run here, for REASON (an API key, a client, the full suite)
  signature            python: a stub signature (above)
  file PATH [TEXT]     create PATH (relative to the scratch cwd, or under a directory
                       an mcp-filesystem directive maps) holding TEXT (\\n for newlines);
                       without TEXT, `print("ok")` for .py files, three lines otherwise
  web URL              URL is served by the local test site (web_server.py): it is
                       replaced by a page of it, and private URLs are allowed
  search               web_search is configured with the fake SearXNG of web_server.py
  mcp-filesystem DIR   an upstream MCP server `files`: the real
                       @modelcontextprotocol/server-filesystem (tests/mcp, as in
                       test_mcp_upstream.py), serving a scratch directory that replaces DIR

An unknown directive, or a directive not followed by a fence, fails too.
"""

import json
import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import REPO_ROOT, expect, kill_group
from web_server import web, web_log_reset  # noqa: F401  (pytest fixtures)

DOCS = [REPO_ROOT / "README.md"] + sorted((REPO_ROOT / "docs").glob("*.md"))
RUN_LANGS = ("python", "sh", "yaml", "json")
TEXT_LANGS = ("text", "c")
EXAMPLE_TIMEOUT = 120.0

FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^`\s]*)\s*$")
MARKER = re.compile(r"^\s*<!--\s*example:\s*(.*?)\s*-->\s*$")


@dataclass
class Block:
    path: Path
    line: int          # 1-based line of the opening fence
    lang: str
    text: str
    markers: list = field(default_factory=list)

    @property
    def where(self):
        return f"{self.path.relative_to(REPO_ROOT)}:{self.line}"


def parse_markdown(path):
    """The fenced blocks of @path, and the marker lines not followed by a fence."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, dangling, pending = [], [], []
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        if m:
            pending.append((i + 1, m.group(1)))
            i += 1
            continue
        f = FENCE.match(lines[i])
        if not f:
            dangling += pending
            pending = []
            i += 1
            continue
        indent, fence, lang = f.group(1), f.group(2), f.group(3)
        body, j = [], i + 1
        while j < len(lines):
            c = re.match(r"^\s*(`{3,}|~{3,})\s*$", lines[j])
            if c and c.group(1)[0] == fence[0] and len(c.group(1)) >= len(fence):
                break
            line = lines[j]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            j += 1
        blocks.append(Block(path, i + 1, lang, "\n".join(body) + "\n", [t for _, t in pending]))
        pending = []
        i = j + 1
    dangling += pending
    return blocks, [(path, n, t) for n, t in dangling]


def all_blocks():
    out = []
    for p in DOCS:
        out += parse_markdown(p)[0]
    return out


BLOCKS = all_blocks()


# --- directives --------------------------------------------------------------------------


@dataclass
class Setup:
    skip: str = None
    signature: bool = False
    files: list = field(default_factory=list)     # (path, text or None)
    web_urls: list = field(default_factory=list)
    search: bool = False
    mcp_dir: str = None


def parse_directives(block):
    s = Setup()
    for d in block.markers:
        kind, _, rest = d.partition(" ")
        rest = rest.strip()
        if kind == "skip":
            m = re.fullmatch(r"\((.*\S.*)\)", rest)
            assert m, f"{block.where}: `skip` needs a reason in parentheses: {d!r}"
            s.skip = m.group(1)
        elif kind == "signature" and not rest:
            s.signature = True
        elif kind == "file" and rest:
            path, _, text = rest.partition(" ")
            s.files.append((path, text.replace("\\n", "\n") if text else None))
        elif kind == "web" and rest.startswith(("http://", "https://")) and " " not in rest:
            s.web_urls.append(rest)
        elif kind == "search" and not rest:
            s.search = True
        elif kind == "mcp-filesystem" and rest.startswith("/") and " " not in rest:
            s.mcp_dir = rest
        else:
            pytest.fail(f"{block.where}: unknown example directive {d!r}")
    return s


def default_text(path):
    return 'print("ok")\n' if path.endswith(".py") else "alpha\nbeta\ngamma\n"


def yaml_config(sections):
    """A config file text from {section: {key: value}} (values already YAML)."""
    out = []
    for sec, keys in sections.items():
        out.append(f"{sec}:")
        for k, v in keys.items():
            out.append(f"  {k}: {v}")
    return "\n".join(out) + "\n"


def prepare(block, ptc, request):
    """Make the fixtures @block's directives ask for. Returns (setup, the block's text
    with substitutions made, environment additions)."""
    s = parse_directives(block)
    if s.skip:
        pytest.skip(f"{block.where} is marked: {s.skip}")
    text = block.text
    subs = {}
    sections = {}
    if s.mcp_dir:
        from test_mcp_upstream import node_entry  # the suite's way to find the server
        root = ptc.tmp / "mcp-root"
        root.mkdir()
        subs[s.mcp_dir] = str(root)
        entry = node_entry("server-filesystem")
        sections["mcp_servers"] = {"files": "{command: node, args: [%s, %s]}"
                                   % (json.dumps(entry), json.dumps(str(root)))}
    if s.web_urls or s.search:
        w = request.getfixturevalue("web")
        web_keys = sections.setdefault("web", {"timeout": "10"})
        if s.web_urls:
            web_keys["allow_private_urls"] = "true"
            for u in s.web_urls:
                assert u in text, f"{block.where}: `web {u}` but the block does not use it"
                subs[u] = w.site.url("/page")
        if s.search:
            web_keys["search_provider"] = "searxng"
            web_keys["searxng_url"] = w.searxng.base_url
    for old, new in subs.items():
        text = text.replace(old, new)
    for path, content in s.files:
        for old, new in subs.items():
            if path.startswith(old + "/"):
                path = new + path[len(old):]
        p = Path(path) if path.startswith("/") else ptc.workdir / path
        assert p.is_relative_to(ptc.tmp), f"{block.where}: fixture {path} outside the scratch dir"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content if content is not None else default_text(path), encoding="utf-8")
    env = {}
    if sections:
        env["PTC_CONFIG"] = str(ptc.write_config(yaml_config(sections), name="example.yaml"))
    return s, text, env


# --- the cases ---------------------------------------------------------------------------


def run_python(block, ptc, s, text, env):
    if s.signature:
        for sig in filter(None, (l.strip() for l in text.splitlines())):
            name = sig.split("(", 1)[0]
            r = ptc.run_ptc(["stubs", "--tools", name], env=env)
            assert r.rc == 0, f"{block.where}: {r!r}"
            defs = [l for l in r.stdout.decode().splitlines() if l.startswith(f"def {name}(")]
            assert defs == [f"def {sig}:"], f"{block.where}: the module defines {defs!r}"
        return
    script = ptc.tmp / "docs-example.py"
    script.write_text(text, encoding="utf-8")
    r = ptc.run_ptc(["run", script], env=env, timeout=EXAMPLE_TIMEOUT)
    assert r.rc == 0 and r.data and r.data["status"] == "success", f"{block.where}: {r!r}"


PTC_WORD = re.compile(r"(?<![\w./-])build/ptc(?![\w./-])")


def run_sh(block, ptc, s, text, env):
    cmds = [l.strip() for l in text.splitlines()]
    cmds = [c for c in cmds if c and not c.startswith("#")]
    assert cmds, f"{block.where}: an empty sh block"
    for c in cmds:
        assert PTC_WORD.search(c), (f"{block.where}: `{c}` is not a ptc command; mark the "
                                    f"block `<!-- example: skip (why) -->` if it cannot run here")
        line = PTC_WORD.sub(shlex.quote(str(ptc.bin)), c)
        proc = subprocess.Popen(["/bin/bash", "-c", line], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=ptc.make_env(env), cwd=str(ptc.workdir),
                                start_new_session=True)
        try:
            out, err = proc.communicate(timeout=EXAMPLE_TIMEOUT)
        except subprocess.TimeoutExpired:
            kill_group(proc.pid)
            out, err = proc.communicate()
            pytest.fail(f"{block.where}: `{c}` did not finish: {out[:2000]!r} {err[:2000]!r}")
        assert proc.returncode == 0, (f"{block.where}: `{c}` exited {proc.returncode}\n"
                                      f"stdout={out[:3000]!r}\nstderr={err[:3000]!r}")


def run_yaml(block, ptc, s, text, env):
    cfg = ptc.write_config(text, name="docs-example.yaml")
    r = ptc.run_ptc(["doctor"], env={**env, "PTC_CONFIG": str(cfg)})
    assert r.rc == 0, f"{block.where}: ptc doctor refuses the config: {r!r}"
    assert f"config: {cfg} (present)" in r.stdout.decode(), f"{block.where}: {r!r}"
    assert "error" not in r.stderr, f"{block.where}: {r!r}"
    if "mcp_servers" in text:
        return  # `ptc run` would start the servers (npx: the network)
    r = ptc.run_ptc(["run", "--config", cfg, "-c", "pass"], env=env)
    expect(r, 0, "success")


def run_json(block, ptc, s, text, env):
    try:
        json.loads(text)
        return
    except ValueError as e:
        whole = e
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            json.loads(line)
        except ValueError as e:
            pytest.fail(f"{block.where}: neither one JSON document ({whole}) nor one per "
                        f"line (line {n}: {e})")


RUNNERS = {"python": run_python, "sh": run_sh, "yaml": run_yaml, "json": run_json}


@pytest.mark.parametrize("block", BLOCKS, ids=[f"{b.where}-{b.lang or 'none'}" for b in BLOCKS])
def test_example(block, ptc, request):
    assert block.lang in RUN_LANGS + TEXT_LANGS, (
        f"{block.where}: a fence without a known language ({block.lang!r}): say ```text for "
        f"output, or one of {', '.join(RUN_LANGS)} for an example")
    if block.lang in TEXT_LANGS:
        assert not block.markers, f"{block.where}: directives on a {block.lang} block"
        return
    s, text, env = prepare(block, ptc, request)
    RUNNERS[block.lang](block, ptc, s, text, env)


def test_every_directive_precedes_a_fence():
    dangling = []
    for p in DOCS:
        dangling += parse_markdown(p)[1]
    assert not dangling, f"example directives not right before a fence: {dangling!r}"


def test_the_docs_have_examples():
    # The parser must not silently find nothing.
    langs = {b.lang for b in BLOCKS}
    assert {"python", "sh", "yaml", "json"} <= langs, langs
    assert len(BLOCKS) > 30, len(BLOCKS)


def test_quick_start_demo_runs(ptc):
    """What scripts/demo.sh runs after building: examples/demo.py, real tool calls."""
    work = ptc.tmp / "demo"
    work.mkdir()
    r = ptc.run_ptc(["run", REPO_ROOT / "examples" / "demo.py", "--cwd", work, "--pretty"],
                    timeout=EXAMPLE_TIMEOUT)
    expect(r, 0, "success")
    assert r.data["tool_calls_made"] >= 3, r


# --- citations: the repository stands alone ----------------------------------------------

SKIP_DIRS = {".git", "node_modules", "__pycache__", ".pytest_cache"}
TEXT_SUFFIXES = {".c", ".h", ".py", ".md", ".sh", ".build", ".txt", ".txt", ".yaml", ".yml",
                 ".json", ".mjs", ".in", ".map", ".options", ""}
# The benchmark measures ptc against the seed, whose harness is by nature not part of this
# repository: bench/compare.sh and bench/search-bench.sh take it from $PTC_SHARED.
OUTSIDE_OK = {"bench/RESULTS.md", "bench/compare.sh", "bench/search-bench.sh"}
SELF = "tests/integration/test_docs_examples.py"


def repo_files():
    for dirpath, dirnames, filenames in os.walk(REPO_ROOT):
        rel = Path(dirpath).relative_to(REPO_ROOT)
        dirnames[:] = [d for d in dirnames
                       if d not in SKIP_DIRS and not (rel == Path(".") and d.startswith("build"))]
        for f in filenames:
            p = Path(dirpath) / f
            if p.suffix in TEXT_SUFFIXES and p.stat().st_size < 4 << 20:
                try:
                    yield p, p.read_text(encoding="utf-8")
                except UnicodeDecodeError:
                    continue


OUTSIDE = re.compile(r"(DESIGN\.md|seed-behavior\.md|\.\./shared\b|/work/shared\b)")


def test_no_file_cites_a_path_outside_the_repository():
    bad = []
    for p, text in repo_files():
        rel = str(p.relative_to(REPO_ROOT))
        if rel in OUTSIDE_OK or rel == SELF:
            continue
        for m in OUTSIDE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            bad.append(f"{rel}:{line}: {m.group(1)}")
    assert not bad, "cited outside the repository:\n" + "\n".join(bad)


# `docs/NAME.md`, then optionally the sections cited: "1.12", "9.10", "6 and 8", "1.7-1.9",
# "section 8", "sections 6 and 8".
DOC_CITE = re.compile(r"(?<![\w/.-])docs/([A-Za-z0-9_-]+\.md)"
                      r"(?:,? (?:sections? )?(\d+(?:\.\d+)?(?:(?:, | and |-)\d+(?:\.\d+)?)*))?")


def headings(path):
    """The section numbers of @path's headings (`## 8. Isolation`, `### 1.12 Secret`)."""
    nums = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^#{2,4} (\d+(?:\.\d+)?)\.? ", line)
        if m:
            nums.add(m.group(1))
    return nums


def test_every_cited_doc_and_section_exists():
    bad = []
    for p, text in repo_files():
        rel = str(p.relative_to(REPO_ROOT))
        if rel == SELF:
            continue
        for m in DOC_CITE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            doc = REPO_ROOT / "docs" / m.group(1)
            if not doc.is_file():
                bad.append(f"{rel}:{line}: docs/{m.group(1)} does not exist")
                continue
            if m.group(2) and doc.name in ("contracts.md", "seed.md"):
                have = headings(doc)
                for num in re.split(r", | and |-", m.group(2)):
                    if num not in have:
                        bad.append(f"{rel}:{line}: docs/{m.group(1)} has no section {num}")
    assert not bad, "\n".join(bad)
