# SPDX-License-Identifier: MIT
"""The man pages (man/) and shell completions (completions/) say what the binary does.

ptc(1) documents, for each subcommand, exactly the options its `--help` prints; the
bash and zsh completions offer exactly those options too. groff formats every page
without a warning; ptc-config(5) names every key of docs/config.md and libptc(3) every
function of include/ptc/ptc.h. The bash completion is sourced into a real bash and asked
for `ptc r<TAB>` and `ptc run --t<TAB>`.
"""

import re
import shutil
import subprocess

import pytest

from conftest import REPO_ROOT, run_ptc

MAN = REPO_ROOT / "man"
PAGES = ["ptc.1", "ptc-config.5", "libptc.3"]
COMMANDS = ["run", "schema", "stubs", "tool", "mcp", "doctor", "agent", "serve", "session",
            "policy"]
OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def help_options(cmd):
    """The option names `ptc CMD --help` lists: its lines that start with an option."""
    r = run_ptc([cmd, "--help"])
    assert r.rc == 0, r
    opts = set()
    for line in r.stdout.decode().splitlines():
        m = re.match(r"^  (-\S.*?)(?:  |$)", line)
        if m:
            opts |= set(OPTION.findall(m.group(1)))
    assert "--help" in opts and len(opts) >= 2, (cmd, opts)
    return opts


def man_sections(text):
    """ptc.1's `.SS "ptc CMD ..."` subsections: {CMD: option names of its .TP tags}."""
    out = {}
    cur = None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r'^\.S[SH] "?(?:ptc (\w+))?', line)
        if m:
            cur = m.group(1)
            if cur:
                out[cur] = set()
            continue
        if cur and line == ".TP" and i + 1 < len(lines):
            tag = lines[i + 1].replace("\\-", "-")
            out[cur] |= set(OPTION.findall(tag))
    return out


def test_every_subcommand_has_a_man_section_with_its_options():
    sections = man_sections((MAN / "ptc.1").read_text(encoding="utf-8"))
    assert sorted(sections) == sorted(COMMANDS), sections
    for cmd in COMMANDS:
        assert sections[cmd] == help_options(cmd), (
            f"ptc.1's section on `ptc {cmd}` and `ptc {cmd} --help` differ: "
            f"only in the man page {sections[cmd] - help_options(cmd)}, "
            f"only in --help {help_options(cmd) - sections[cmd]}")


def test_global_options_are_in_the_man_page():
    r = run_ptc(["--help"])
    assert r.rc == 0, r
    text = (MAN / "ptc.1").read_text(encoding="utf-8").replace("\\-", "-")
    for opt in ("--help", "--version", "-V", "-h"):
        assert opt in text
    for cmd in COMMANDS:
        assert f"ptc {cmd}" in r.stdout.decode(), cmd


def test_config_page_names_every_key_of_the_config_doc():
    doc = (REPO_ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    page = (MAN / "ptc-config.5").read_text(encoding="utf-8").replace("\\-", "-")
    sections = re.findall(r"^### (\w+)$", doc, re.M)
    assert len(sections) == 7, sections
    for sec in sections:
        assert f".SH {sec.upper()}" in page, sec
    keys = set()
    for line in doc.splitlines():
        if line.startswith("| `"):
            keys |= set(re.findall(r"`(\w+)`", line.split("|")[1]))
    assert len(keys) > 20, keys
    missing = sorted(k for k in keys if not re.search(rf"(?<!\w){k}(?!\w)", page))
    assert not missing, f"keys of docs/config.md not in ptc-config.5: {missing}"


def test_library_page_names_every_api_function():
    header = (REPO_ROOT / "include" / "ptc" / "ptc.h").read_text(encoding="utf-8")
    funcs = set(re.findall(r"PTC_EXPORT[^;]*?\b(ptc_\w+)\(", header))
    assert len(funcs) > 20, funcs
    page = (MAN / "libptc.3").read_text(encoding="utf-8")
    missing = sorted(f for f in funcs if f not in page)
    assert not missing, f"functions of ptc.h not in libptc.3: {missing}"


@pytest.mark.parametrize("page", PAGES)
def test_groff_formats_the_page_without_warnings(page):
    if not shutil.which("groff"):
        pytest.skip("groff is not installed (.ci/run installs groff-base)")
    p = subprocess.run(["groff", "-man", "-ww", "-z", str(MAN / page)], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and not p.stderr, p.stderr
    # man-db's own check (the one `man --warnings` does) where it is installed
    if shutil.which("man"):
        p = subprocess.run(["man", "--warnings", "-l", str(MAN / page)], capture_output=True,
                           text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "MANPAGER": "cat",
                                                       "MANWIDTH": "80", "LANG": "C.UTF-8"})
        assert p.returncode == 0 and not p.stderr, p.stderr
        assert "NAME" in p.stdout


# --- completions -------------------------------------------------------------------------

BASH = REPO_ROOT / "completions" / "ptc.bash"
ZSH = REPO_ROOT / "completions" / "_ptc"


def bash_complete(*words):
    """What the bash completion offers for `ptc WORDS...`, the last word being completed."""
    assert shutil.which("bash")
    words = ["ptc", *words]
    script = (f"source {BASH}\n"
              f"COMP_WORDS=({' '.join(repr(w) for w in words)})\n"
              f"COMP_CWORD={len(words) - 1}\n"
              "COMP_LINE=\"${COMP_WORDS[*]}\"; COMP_POINT=${#COMP_LINE}\n"
              "_ptc ptc \"${COMP_WORDS[COMP_CWORD]}\" \"${COMP_WORDS[COMP_CWORD-1]}\"\n"
              "printf '%s\\n' \"${COMPREPLY[@]}\"\n")
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True,
                       text=True, timeout=30, cwd=str(REPO_ROOT))
    assert p.returncode == 0 and not p.stderr, p.stderr
    return [l for l in p.stdout.splitlines() if l]


def test_bash_completes_a_subcommand():
    assert bash_complete("r") == ["run"]
    assert sorted(bash_complete("")) == sorted(COMMANDS + ["--help", "--version", "-h", "-V"])


def test_bash_completes_run_options():
    assert sorted(bash_complete("run", "--t")) == ["--timeout", "--tools", "--trace"]
    assert bash_complete("run", "--mode", "s") == ["strict"]
    assert bash_complete("run", "--tools", "read_file,wr") == ["read_file,write_file"]


@pytest.mark.parametrize("cmd", COMMANDS)
def test_bash_offers_exactly_the_help_options(cmd):
    assert set(bash_complete(cmd, "-")) == help_options(cmd)


def zsh_options():
    """{CMD: options} of completions/_ptc's `_arguments` lines per subcommand."""
    out, cur = {}, None
    for line in ZSH.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\s*([\w|]+)\)$", line)
        if m and m.group(1) != "cmd" and m.group(1) != "args":
            cur = m.group(1).split("|")
            for c in cur:
                out[c] = {"-h", "--help"}
            continue
        if cur:
            m = re.match(r"^\s*'(--?[\w-]+)\[", line)
            if m:
                for c in cur:
                    out[c].add(m.group(1))
    return out


def test_zsh_offers_exactly_the_help_options():
    opts = zsh_options()
    assert sorted(opts) == sorted(COMMANDS), opts
    for cmd in COMMANDS:
        assert opts[cmd] == help_options(cmd), cmd
    if shutil.which("zsh"):
        p = subprocess.run(["zsh", "-n", str(ZSH)], capture_output=True, text=True, timeout=30)
        assert p.returncode == 0, p.stderr
