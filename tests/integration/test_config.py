# SPDX-License-Identifier: MIT
"""The config file (docs/contracts.md 5): where it is found, precedence, every key the
run uses, and errors that name the key and the value (exit 2)."""

import os

import pytest

from conftest import expect, expect_usage_error

SLEEP = "import time; time.sleep(1.5); print('slept')"


def test_config_flag_sets_timeout(ptc):
    cfg = ptc.write_config("code_execution:\n  timeout: 1\n")
    r = ptc.run("import time; time.sleep(30)", "--config", cfg)
    expect(r, 124, "timeout")
    assert r.data["error"] == "Script timed out after 1s and was killed.", r


def test_ptc_config_env_is_used(ptc):
    cfg = ptc.write_config("code_execution:\n  timeout: 1\n")
    r = ptc.run("import time; time.sleep(30)", env={"PTC_CONFIG": str(cfg)})
    expect(r, 124, "timeout")


def test_xdg_default_path_is_used(ptc):
    d = ptc.xdg_config / "ptc"
    d.mkdir()
    (d / "config.yaml").write_text("code_execution:\n  timeout: 1\n")
    r = ptc.run("import time; time.sleep(30)")
    expect(r, 124, "timeout")


def test_config_flag_beats_ptc_config(ptc):
    env_cfg = ptc.write_config("code_execution:\n  timeout: 1\n", "env.yaml")
    flag_cfg = ptc.write_config("code_execution:\n  timeout: 20\n", "flag.yaml")
    r = ptc.run(SLEEP, "--config", flag_cfg, env={"PTC_CONFIG": str(env_cfg)})
    expect(r, 0, "success")


def test_ptc_config_beats_xdg(ptc):
    d = ptc.xdg_config / "ptc"
    d.mkdir()
    (d / "config.yaml").write_text("code_execution:\n  timeout: 1\n")
    env_cfg = ptc.write_config("code_execution:\n  timeout: 20\n", "env.yaml")
    r = ptc.run(SLEEP, env={"PTC_CONFIG": str(env_cfg)})
    expect(r, 0, "success")


def test_flag_beats_config_file(ptc):
    cfg = ptc.write_config("code_execution:\n  timeout: 1\n")
    r = ptc.run(SLEEP, "--config", cfg, "--timeout", "20")
    expect(r, 0, "success")


def test_missing_config_flag_file_exits_2(ptc):
    expect_usage_error(ptc.run_ptc(["run", "--config", str(ptc.path("nope.yaml")),
                                    "-c", "print(1)"]), "nope.yaml")


def test_missing_default_config_is_fine(ptc):
    expect(ptc.run("print(1)"), 0, "success")


def test_empty_config_file_is_fine(ptc):
    cfg = ptc.write_config("")
    expect(ptc.run("print(1)", "--config", cfg), 0, "success")


def test_unknown_section_ignored(ptc):
    cfg = ptc.write_config("""
        agent:
          model: whatever
          nested: {a: [1, 2]}
        code_execution:
          timeout: 30
        """)
    expect(ptc.run("print(1)", "--config", cfg), 0, "success")


def test_unknown_section_ignored_without_warning(ptc):
    # Sections of the agent sharing the file are no typo of ours: no noise.
    cfg = ptc.write_config("agent:\n  model: x\ndisplay: {}\nmodel: y\n")
    r = ptc.run("print(1)", "--config", cfg)
    expect(r, 0, "success")
    assert "warning" not in r.stderr, r


@pytest.mark.parametrize("name,known", [
    ("code_exection", "code_execution"),
    ("Terminal", "terminal"),
    ("sandbx", "sandbox"),
    ("mcp_server", "mcp_servers"),
])
def test_misspelled_section_warns_naming_the_closest(ptc, name, known):
    cfg = ptc.write_config(f"{name}:\n  timeout: 1\n")
    r = ptc.run("print(1)", "--config", cfg)
    expect(r, 0, "success")  # still someone else's section: the run goes on with the defaults
    assert (f"ptc: warning: config {cfg}: unknown section '{name}' "
            f"(did you mean '{known}'?)") in r.stderr, r
    # The same warning wherever a config is read.
    for args in (["schema"], ["stubs"], ["doctor"]):
        r = ptc.run_ptc([*args, "--config", str(cfg)])
        assert r.rc == 0, r
        assert f"unknown section '{name}'" in r.stderr, r


def test_warnings_come_before_the_error_of_the_same_file(ptc):
    """A misspelled section warns even when a later key is refused: the warning may be
    what explains the error, so it is printed first, and the error is still the last line."""
    cfg = ptc.write_config("code_exection:\n  timeout: 1\ncode_execution:\n  mode: fast\n")
    for args in (["run", "-c", "print(1)"], ["schema"], ["doctor"]):
        r = ptc.run_ptc([*args, "--config", str(cfg)])
        assert r.rc == 2 and r.data is None and r.stdout == b"", r
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 2, r
        assert lines[0] == (f"ptc: warning: config {cfg}: unknown section 'code_exection' "
                            f"(did you mean 'code_execution'?)"), r
        assert lines[1].startswith("ptc: error: ") and "code_execution.mode" in lines[1], r


def test_misspelled_key_names_the_closest(ptc):
    cfg = ptc.write_config("code_execution:\n  timout: 5\n")
    expect_usage_error(ptc.run("print(1)", "--config", cfg), "code_execution.timout",
                       "unknown key", "did you mean 'timeout'?")
    cfg = ptc.write_config("code_execution:\n  zzz: 5\n")
    r = ptc.run("print(1)", "--config", cfg)
    expect_usage_error(r, "code_execution.zzz", "unknown key (allowed:")
    assert "did you mean" not in r.stderr, r


@pytest.mark.parametrize("yaml_text,words", [
    ("code_execution:\n  mode: fast\n", ["mode", "fast"]),
    ("code_execution:\n  timeout: -5\n", ["timeout", "-5"]),
    ("code_execution:\n  timeout: soon\n", ["timeout", "soon"]),
    ("code_execution:\n  max_tool_calls: lots\n", ["max_tool_calls", "lots"]),
    ("code_execution:\n  max_tool_calls: -1\n", ["max_tool_calls", "-1"]),
    ("code_execution:\n  module_name: my-tools\n", ["module_name", "my-tools"]),
    ("code_execution:\n  module_name: class\n", ["module_name", "class"]),
    ("code_execution:\n  max_stdout_bytes: many\n", ["max_stdout_bytes", "many"]),
    ("code_execution:\n  bogus_key: 1\n", ["bogus_key"]),
    ("terminal:\n  env_passthrough: NOT_A_LIST\n", ["env_passthrough"]),
    ("terminal:\n  timeout: forever\n", ["timeout", "forever"]),
    ("terminal:\n  bogus_terminal_key: 1\n", ["bogus_terminal_key"]),
    ("sandbox:\n  isolation: maximum\n", ["isolation", "maximum"]),
    ("sandbox:\n  network: perhaps\n", ["network", "perhaps"]),
    ("web:\n  search_provider: altavista\n", ["search_provider", "altavista"]),
])
def test_bad_value_or_unknown_key_exits_2_naming_it(ptc, yaml_text, words):
    cfg = ptc.write_config(yaml_text)
    r = ptc.run("print(1)", "--config", cfg)
    expect_usage_error(r, *words)
    assert len(r.stderr.strip().splitlines()) == 1, f"message is not one line: {r!r}"


@pytest.mark.parametrize("text", ["code_execution: [1, 2\n", "- just\n- a list\n",
                                  "code_execution:\n\ttimeout: 1\n", "\x00\x01binary"])
def test_malformed_yaml_exits_2(ptc, text):
    p = ptc.path("bad.yaml")
    p.write_text(text)
    expect_usage_error(ptc.run("print(1)", "--config", p))


def test_bad_config_via_env_also_exits_2(ptc):
    cfg = ptc.write_config("code_execution:\n  mode: fast\n")
    expect_usage_error(ptc.run("print(1)", env={"PTC_CONFIG": str(cfg)}), "fast")


def test_max_tool_calls_from_config(ptc):
    cfg = ptc.write_config("code_execution:\n  max_tool_calls: 1\n")
    r = ptc.run("""
        from hermes_tools import terminal
        a = terminal('echo 1'); b = terminal('echo 2')
        print(a.get('output'), b.get('error'))
        """, "--config", cfg)
    expect(r, 0, "success")
    assert r.output == ("1 Tool call limit reached (1). No more tool calls allowed in this "
                        "execution.\n"), r


def test_flag_max_tool_calls_beats_config(ptc):
    cfg = ptc.write_config("code_execution:\n  max_tool_calls: 1\n")
    r = ptc.run("""
        from hermes_tools import terminal
        print([terminal('echo %d' % i).get('output') for i in range(3)])
        """, "--config", cfg, "--max-tool-calls", "3")
    expect(r, 0, "success")
    assert r.output == "['0', '1', '2']\n", r


def test_mode_from_config(ptc):
    cfg = ptc.write_config("code_execution:\n  mode: strict\n")
    r = ptc.run("import os; print(os.path.basename(os.getcwd()).startswith('ptc-'))",
                "--config", cfg)
    expect(r, 0, "success")
    assert r.output == "True\n", r


def test_flag_mode_beats_config(ptc):
    cfg = ptc.write_config("code_execution:\n  mode: strict\n")
    r = ptc.run("import os; print(os.getcwd())", "--config", cfg, "--mode", "project")
    expect(r, 0, "success")
    assert os.path.realpath(r.output.strip()) == os.path.realpath(ptc.workdir), r


def test_module_name_from_config(ptc):
    cfg = ptc.write_config("code_execution:\n  module_name: my_tools\n")
    r = ptc.run("""
        from my_tools import terminal, json_parse
        try:
            import hermes_tools
            other = 'hermes_tools importable'
        except ImportError:
            other = 'no hermes_tools'
        print(terminal('echo named')['output'], other)
        """, "--config", cfg)
    expect(r, 0, "success")
    assert r.output == "named no hermes_tools\n", r


def test_max_stdout_bytes_from_config(ptc):
    cfg = ptc.write_config("code_execution:\n  max_stdout_bytes: 1000\n")
    r = ptc.run("import sys; sys.stdout.write(''.join('%04d' % i for i in range(1250)))",
                "--config", cfg)
    expect(r, 0, "success")
    full = "".join("%04d" % i for i in range(1250))
    d = r.data
    assert d["stdout_truncated"] is True
    assert d["stdout_bytes_total"] == 5000
    assert d["stdout_bytes_omitted"] == 4000
    assert "[OUTPUT TRUNCATED - 4,000 chars omitted out of 5,000 total]" in d["output"], d
    head, tail = d["output"].split("\n\n... [OUTPUT TRUNCATED - 4,000 chars omitted out of "
                                   "5,000 total] ...\n\n")
    assert len(head) + len(tail) == 1000
    assert full.startswith(head) and full.endswith(tail)


def test_max_stderr_bytes_from_config(ptc):
    cfg = ptc.write_config("code_execution:\n  max_stderr_bytes: 100\n")
    r = ptc.run("import sys; sys.stderr.write('e' * 5000); sys.exit(1)", "--config", cfg)
    expect(r, 1, "error")
    assert r.data["error"] == "e" * 100, r


def test_terminal_timeout_from_config(ptc):
    cfg = ptc.write_config("terminal:\n  timeout: 1\n")
    r = ptc.run("""
        from hermes_tools import terminal
        print(terminal('sleep 300')['exit_code'])
        """, "--config", cfg)
    # Exit 124 within run_ptc's hard timeout (30 s) is the 1 s timeout of the config: the
    # default (180 s) would not have ended the command in time.
    expect(r, 0, "success")
    assert r.output == "124\n", r


def test_isolation_strict_from_config(ptc):
    cfg = ptc.write_config("sandbox:\n  isolation: strict\n")
    r = ptc.run("import os; print(os.getppid())", "--config", cfg)
    expect(r, 0, "success")
    assert r.output == "1\n", r


@pytest.mark.parametrize("text,words", [
    ("terminal:\n  isolation: auto\n", ["terminal.isolation", "auto", "none", "strict"]),
    ("terminal:\n  network: maybe\n", ["terminal.network", "maybe"]),
])
def test_terminal_isolation_bad_values(ptc, text, words):
    expect_usage_error(ptc.run("print(1)", "--config", ptc.write_config(text)), *words)


def test_terminal_strict_from_config(ptc):
    cfg = ptc.write_config("terminal:\n  isolation: strict\n")
    r = ptc.run("""
        import time
        from hermes_tools import terminal
        print(terminal('ls /proc | grep -c "^[0-9]"; exit 7')['exit_code'])
        t = time.monotonic()
        d = terminal('echo started; sleep 60; echo after', timeout=1)
        print(d['exit_code'], repr(d['output']), time.monotonic() - t < 20)  # hang guard
        print(terminal('pwd', workdir='/')['error'])
        """, "--config", cfg)
    expect(r, 0, "success")
    assert r.output.split("\n")[:2] == [
        "7", "124 'started\\n\\n[Command timed out after 1s]' True"], r
    assert r.output.split("\n")[2].startswith(
        "Failed to run command: terminal isolation 'strict' cannot be set up: namespaces: "
        "the working directory '/' cannot be confined"), r


def test_isolation_flag_beats_config(ptc):
    cfg = ptc.write_config("sandbox:\n  isolation: strict\n")
    expect(ptc.run("print(1)", "--config", cfg, "--isolation", "none"), 0, "success")


def test_full_documented_config_is_accepted(ptc):
    cfg = ptc.write_config("""
        code_execution:
          timeout: 300
          max_tool_calls: 50
          mode: project
          module_name: hermes_tools
          max_stdout_bytes: 50000
          max_stderr_bytes: 10000
        terminal:
          env_passthrough: [TENOR_API_KEY]
          timeout: 180
        sandbox:
          isolation: auto
          memory_mb: 1024
          pids: 256
          network: false
        web:
          search_provider: searxng
          searxng_url: http://127.0.0.1:8888
          allow_private_urls: false
        """)
    r = ptc.run("print('all keys ok')", "--config", cfg)
    expect(r, 0, "success")
    assert r.output == "all keys ok\n"


def test_schema_reads_config_too(ptc):
    cfg = ptc.write_config("code_execution:\n  mode: fast\n")
    # `ptc schema` has no --config (docs/contracts.md 3); it still honours PTC_CONFIG.
    r = ptc.run_ptc(["schema"], env={"PTC_CONFIG": str(cfg)})
    expect_usage_error(r, "fast")


def test_yaml_comments_and_quoting(ptc):
    cfg = ptc.write_config("""
        # a comment
        code_execution:
          timeout: 1   # trailing comment
          mode: 'project'
        """)
    r = ptc.run("import time; time.sleep(30)", "--config", cfg)
    expect(r, 124, "timeout")


@pytest.mark.parametrize("value", ["STRICT", "' Strict '", "strict"])
def test_mode_is_trimmed_and_case_insensitive(ptc, value):
    cfg = ptc.write_config(f"code_execution:\n  mode: {value}\n")
    r = ptc.run("import os; print(os.path.basename(os.getcwd())[:4])", "--config", cfg)
    expect(r, 0, "success")
    assert r.output == "ptc-\n", r


def test_mode_flag_case_insensitive(ptc):
    r = ptc.run("import os; print(os.path.basename(os.getcwd())[:4])", "--mode", "Strict")
    expect(r, 0, "success")
    assert r.output == "ptc-\n", r


@pytest.mark.parametrize("value", ["", "~", "null"])
def test_empty_mode_is_an_error_not_a_fallback(ptc, value):
    cfg = ptc.write_config(f"code_execution:\n  mode: {value}\n")
    expect_usage_error(ptc.run("print(1)", "--config", cfg), "mode")
