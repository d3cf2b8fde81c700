# SPDX-License-Identifier: MIT
"""The command line (docs/contracts.md 3): subcommands, options, exit status,
stdout carrying only the result JSON."""

import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import expect, expect_usage_error, run_ptc


def test_version_exits_0(ptc):
    r = ptc.run_ptc(["--version"])
    assert r.rc == 0, r
    assert re.search(r"\d+\.\d+", r.stdout.decode()), r


def test_help_exits_0_and_lists_subcommands(ptc):
    r = ptc.run_ptc(["--help"])
    assert r.rc == 0, r
    text = r.stdout.decode() + r.stderr
    for sub in ("run", "schema", "stubs", "tool"):
        assert re.search(rf"\b{sub}\b", text), (sub, r)


@pytest.mark.parametrize("sub", ["run", "schema", "stubs", "tool"])
def test_subcommand_help_exits_0(ptc, sub):
    r = ptc.run_ptc([sub, "--help"])
    assert r.rc == 0, r
    assert (r.stdout.decode() + r.stderr).strip(), r


def test_run_help_lists_options(ptc):
    r = ptc.run_ptc(["run", "--help"])
    assert r.rc == 0, r
    text = r.stdout.decode() + r.stderr
    for opt in ("--tools", "--timeout", "--max-tool-calls", "--mode", "--cwd", "--config",
                "--isolation", "--log", "--pretty"):
        assert opt in text, (opt, r)


def test_unknown_subcommand_exits_2(ptc):
    expect_usage_error(ptc.run_ptc(["frobnicate"]), "frobnicate")


def test_unknown_option_exits_2(ptc):
    expect_usage_error(ptc.run_ptc(["run", "--no-such-option", "-c", "print(1)"]),
                       "no-such-option")


def test_unknown_global_option_exits_2(ptc):
    expect_usage_error(ptc.run_ptc(["--no-such-option"]))


def test_missing_script_file_exits_2(ptc):
    missing = ptc.path("does-not-exist.py")
    r = ptc.run_ptc(["run", str(missing)])
    expect_usage_error(r, "does-not-exist.py", "No such file or directory")


def test_script_from_file(ptc):
    r = ptc.run_file("print('from file')\n")
    expect(r, 0, "success")
    assert r.output == "from file\n"


def test_script_from_stdin_dash(ptc):
    r = ptc.run_ptc(["run", "-"], input="print('from stdin')\n")
    expect(r, 0, "success")
    assert r.output == "from stdin\n"


def test_script_inline_c(ptc):
    r = ptc.run("print('inline')")
    expect(r, 0, "success")
    assert r.output == "inline\n"


def test_script_file_relative_to_ptc_cwd(ptc):
    (ptc.workdir / "rel.py").write_text("print('relative')\n")
    r = ptc.run_ptc(["run", "rel.py"])
    expect(r, 0, "success")
    assert r.output == "relative\n"


@pytest.mark.parametrize("value", ["abc", "-1", "0", "1e999x", ""])
def test_bad_timeout_exits_2(ptc, value):
    expect_usage_error(ptc.run_ptc(["run", "--timeout", value, "-c", "print(1)"]), "timeout")


@pytest.mark.parametrize("value", ["abc", "-1", "2.5"])
def test_bad_max_tool_calls_exits_2(ptc, value):
    r = ptc.run_ptc(["run", "--max-tool-calls", value, "-c", "print(1)"])
    expect_usage_error(r)
    assert re.search(r"max[-_]tool[-_]calls", r.stderr), r


def test_bad_mode_exits_2(ptc):
    expect_usage_error(ptc.run_ptc(["run", "--mode", "fast", "-c", "print(1)"]), "fast")


def test_bad_isolation_exits_2(ptc):
    expect_usage_error(ptc.run_ptc(["run", "--isolation", "maximum", "-c", "print(1)"]),
                       "maximum")


def test_isolation_strict_runs_confined(ptc):
    r = ptc.run("import os; print(os.getpid(), os.getppid())", "--isolation", "strict")
    expect(r, 0, "success")
    assert r.output == "2 1\n", r


def test_isolation_strict_that_cannot_be_set_up_fails_naming_the_layer(ptc):
    # Where the kernel refuses user namespaces (a limit of 0, set in a user namespace of the
    # test's own) strict refuses: it never runs with less.
    unshare = shutil.which("unshare")
    if not unshare:
        pytest.skip("no unshare(1)")
    r = run_ptc(["-Ur", "sh", "-c",
                 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" "$@"', ptc.bin,
                 "run", "--no-server", "--isolation", "strict", "-c", "print(1)"],
                env=ptc.make_env(), cwd=str(ptc.workdir), binary=unshare)
    if r.rc != 3 and "max_user_namespaces" in r.stderr:
        pytest.skip(f"cannot limit user namespaces in a user namespace: {r.stderr}")
    assert r.rc == 3, r
    assert "isolation 'strict' cannot be set up: namespaces:" in r.stderr, r
    assert r.data is None or "1\n" not in r.data.get("output", ""), r


@pytest.mark.parametrize("level", ["none", "auto"])
def test_isolation_none_and_auto_run(ptc, level):
    r = ptc.run("print('iso')", "--isolation", level)
    expect(r, 0, "success")
    assert r.output == "iso\n"


def test_cwd_missing_dir_exits_2(ptc):
    r = ptc.run_ptc(["run", "--cwd", str(ptc.path("nope")), "-c", "print(1)"])
    expect_usage_error(r, "nope", "No such file or directory")


def test_cwd_not_a_directory_exits_2(ptc):
    f = ptc.path("plainfile")
    f.write_text("x")
    r = ptc.run_ptc(["run", "--cwd", str(f), "-c", "print(1)"])
    expect_usage_error(r, "plainfile", "Not a directory")


def test_script_path_is_a_directory_exits_2(ptc):
    expect_usage_error(ptc.run_ptc(["run", str(ptc.workdir)]), str(ptc.workdir))


def test_two_script_sources_exit_2(ptc):
    (ptc.workdir / "a.py").write_text("print(1)\n")
    expect_usage_error(ptc.run_ptc(["run", "-c", "print(1)", "a.py"]))


def test_unknown_tool_name_exits_2(ptc):
    expect_usage_error(ptc.run_ptc(["run", "--tools", "read_file,foo", "-c", "print(1)"]),
                       "foo")


def test_web_search_without_provider_exits_2(ptc):
    # A tool the model is told about must work: naming web_search without a provider is an
    # error that says what to configure.
    expect_usage_error(ptc.run_ptc(["run", "--tools", "read_file,web_search", "-c", "print(1)"]),
                       "web.search_provider")


def test_stdout_is_exactly_one_json_document(ptc):
    r = ptc.run("""
        import sys
        print('to stdout')
        sys.stderr.write('STDERR-LEAK-CHECK\\n')
        """)
    expect(r, 0, "success")
    # Nothing but the result on stdout: the whole of it decodes as one object.
    json.loads(r.stdout.decode("utf-8"))
    assert "STDERR-LEAK-CHECK" not in r.stderr, r
    assert "to stdout" not in r.stderr, r


def test_compact_json_by_default(ptc):
    r = ptc.run("print(1)")
    expect(r, 0, "success")
    assert r.stdout.rstrip(b"\n").count(b"\n") == 0, r


def test_pretty_indents_result(ptc):
    r = ptc.run("print(1)", "--pretty")
    expect(r, 0, "success")
    text = r.stdout.decode()
    assert text.count("\n") >= 4, r
    assert re.search(r'\n +"status"', text), r
    assert r.data["output"] == "1\n"


def test_log_adds_tool_calls(ptc):
    (ptc.workdir / "f.txt").write_text("x\n")
    r = ptc.run("""
        from hermes_tools import read_file, terminal
        read_file('f.txt')
        terminal('echo hi')
        """, "--log")
    expect(r, 0, "success")
    calls = r.data.get("tool_calls")
    assert isinstance(calls, list) and len(calls) == 2, r
    assert [c["tool"] for c in calls] == ["read_file", "terminal"], r
    for c in calls:
        assert set(c) >= {"tool", "args_preview", "duration_seconds", "ok"}, c
        assert c["ok"] is True, c
        assert isinstance(c["args_preview"], str), c
        assert isinstance(c["duration_seconds"], (int, float)), c
    assert "f.txt" in calls[0]["args_preview"], calls
    assert "echo hi" in calls[1]["args_preview"], calls


def test_log_absent_without_flag(ptc):
    r = ptc.run("from hermes_tools import terminal\nterminal('true')")
    expect(r, 0, "success")
    assert "tool_calls" not in r.data, r


def test_log_marks_failed_call_not_ok(ptc):
    r = ptc.run("""
        from hermes_tools import read_file
        print(read_file('/nonexistent/zzz').get('error') is not None)
        """, "--log")
    expect(r, 0, "success")
    calls = r.data["tool_calls"]
    assert len(calls) == 1 and calls[0]["ok"] is False, r


def test_tool_subcommand_with_json_argument(ptc):
    r = ptc.run_ptc(["tool", "terminal", '{"command": "echo direct"}'])
    assert r.rc == 0, r
    assert r.data["output"] == "direct", r
    assert r.data["exit_code"] == 0, r


def test_tool_subcommand_reads_json_from_stdin(ptc):
    (ptc.workdir / "in.txt").write_text("stdin args\n")
    r = ptc.run_ptc(["tool", "read_file"], input='{"path": "in.txt"}')
    assert r.rc == 0, r
    assert "stdin args" in r.data["content"], r


@pytest.mark.parametrize("arg", ['{"command": ', "[1, 2]", "not json"])
def test_tool_subcommand_bad_json_exits_2(ptc, arg):
    expect_usage_error(ptc.run_ptc(["tool", "terminal", arg]))


def test_tool_subcommand_unknown_tool_exits_2(ptc):
    expect_usage_error(ptc.run_ptc(["tool", "foo", "{}"]), "foo")


def test_schema_and_stubs_print_to_stdout(ptc):
    r = ptc.run_ptc(["schema"])
    assert r.rc == 0 and r.data and r.data.get("name") == "execute_code", r
    r = ptc.run_ptc(["stubs"])
    assert r.rc == 0, r
    compile(r.stdout.decode("utf-8"), "hermes_tools.py", "exec")


# --- --help texts against the real option tables and defaults --------------------------------

SRC = Path(__file__).resolve().parents[2] / "src" / "cli"
# subcommand -> the file holding its getopt table
TABLES = {"run": "cmd-run.c", "schema": "cmd-schema.c", "stubs": "cmd-schema.c",
          "tool": "cmd-tool.c", "mcp": "cmd-mcp.c", "doctor": "cmd-doctor.c"}


def option_table(sub):
    """{long option name: takes a value} from the subcommand's struct cli_option table,
    with the --help that cli_parse_options() adds to every table."""
    text = (SRC / TABLES[sub]).read_text()
    table = re.search(r"const struct cli_option opts\[\] = \{(.*?)\n\s*\};", text, re.S)
    assert table, sub
    # {"config", &arg_config} takes a value; {"pretty", .flag = &pretty} does not.
    options = {m.group(1): m.group(2) != ".flag"
               for m in re.finditer(r'\{"([a-z-]+)",\s*(\.flag|\.arg|&)', table.group(1))}
    assert options, sub
    return {"help": False, **options}


def help_text(ptc, sub):
    r = ptc.run_ptc([sub, "--help"])
    assert r.rc == 0 and r.stderr == "", r
    return r.stdout.decode()


@pytest.mark.parametrize("sub", sorted(TABLES))
def test_help_lists_exactly_the_option_table(ptc, sub):
    table = option_table(sub)
    listed = set(re.findall(r"(?<![\w-])--([a-z][a-z-]+)", help_text(ptc, sub)))
    assert listed == set(table), (sub, sorted(listed), sorted(table))


@pytest.mark.parametrize("sub", sorted(TABLES))
def test_every_listed_option_is_accepted(ptc, sub):
    # getopt reads left to right: an option it refuses fails (exit 2) before --help is seen.
    for name, takes_value in option_table(sub).items():
        args = [sub, f"--{name}"] + (["x"] if takes_value else []) + ["--help"]
        r = ptc.run_ptc(args)
        assert r.rc == 0, (args, r)


def config_doc_default(section, key):
    doc = (Path(__file__).resolve().parents[2] / "docs" / "config.md").read_text()
    part = doc[doc.index(f"### {section}\n"):]
    m = re.search(rf"^\| `{key}` \| \w+ \| `([^`]*)` \|", part, re.M)
    assert m, (section, key)
    return m.group(1)


@pytest.mark.parametrize("sub", ["run", "mcp"])
def test_help_defaults_are_the_compiled_defaults(ptc, sub):
    text = help_text(ptc, sub)
    timeout = re.search(r"--timeout SECONDS .*?(\d+)\)", text, re.S).group(1)
    calls = re.search(r"--max-tool-calls N .*?\(default (\d+)\)", text).group(1)
    assert timeout == config_doc_default("code_execution", "timeout"), text
    assert calls == config_doc_default("code_execution", "max_tool_calls"), text
    # The default tool list is the registry's: what doctor (same empty config) enables,
    # and what the schema of a run without --tools describes.
    listed = re.search(r"here:\s+([a-z_, ]+)\n", text).group(1).strip()
    doctor = ptc.run_ptc(["doctor"])
    assert f"tools: {listed}\n" in doctor.stdout.decode(), (listed, doctor)
    with_search = ptc.run_ptc([sub, "--help"], env={"BRAVE_API_KEY": "k" * 20})
    assert "web_search" in with_search.stdout.decode(), with_search


def test_top_level_help_is_current(ptc):
    text = ptc.run_ptc(["--help"]).stdout.decode()
    assert "not in this build" not in text
    for sub in TABLES:
        assert re.search(rf"^  ptc {sub}\b", text, re.M), (sub, text)


@pytest.mark.parametrize("args,word", [
    (["run", "--no-such-option", "-c", "print(1)"], "--no-such-option"),
    (["run", "a.py", "b.py"], "b.py"),
    (["schema", "--no-such-option"], "--no-such-option"),
    (["schema", "stray"], "stray"),
    (["stubs", "--no-such-option"], "--no-such-option"),
    (["stubs", "stray"], "stray"),
    (["tool", "--no-such-option", "read_file", "{}"], "--no-such-option"),
    (["tool", "read_file", "{}", "stray"], "usage"),
    (["mcp", "--no-such-option"], "--no-such-option"),
    (["mcp", "stray"], "stray"),
    (["doctor", "--no-such-option"], "--no-such-option"),
    (["doctor", "stray"], "stray"),
])
def test_every_subcommand_refuses_unknown_arguments(ptc, args, word):
    expect_usage_error(ptc.run_ptc(args), word)


def test_doctor_uses_config_flag(ptc):
    expect_usage_error(ptc.run_ptc(["doctor", "--config", str(ptc.path("nope.yaml"))]),
                       "nope.yaml", "not found")
    cfg = ptc.write_config("sandbox:\n  isolation: none\n")
    r = ptc.run_ptc(["doctor", "--config", str(cfg)])
    assert r.rc == 0, r
    out = r.stdout.decode()
    assert f"config: {cfg} (--config)" in out, out
    assert "isolation: configured none" in out, out
    bad = ptc.write_config("sandbox:\n  isolation: maximum\n", name="bad.yaml")
    expect_usage_error(ptc.run_ptc(["doctor", "--config", str(bad)]), "maximum")


def test_c_dash_reads_code_from_stdin(ptc):
    r = ptc.run_ptc(["run", "-c", "-"], input="print('from stdin via -c')\n")
    expect(r, 0, "success")
    assert r.output == "from stdin via -c\n", r
