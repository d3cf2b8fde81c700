# SPDX-License-Identifier: MIT
"""`ptc schema` (the execute_code function schema, docs/seed.md 1.1) and
`ptc stubs` (the generated module, 1.6), including the module's wire behaviour
against a fake server, and the helpers json_parse / shell_quote / retry."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import expect, expect_usage_error


def schema(ptc, *args):
    r = ptc.run_ptc(["schema", *args])
    assert r.rc == 0 and r.data is not None, r
    return r.data


def stubs(ptc, *args):
    r = ptc.run_ptc(["stubs", *args])
    assert r.rc == 0, r
    return r.stdout.decode("utf-8")


# --- schema -------------------------------------------------------------------

# A tool is "mentioned" by its signature line; the fixed text also says
# "terminal()" in passing, as the seed's does.
SIG = {"read_file": "read_file(path", "write_file": "write_file(path",
       "terminal": "terminal(command", "search_files": "search_files(pattern",
       "patch": "patch(path", "web_search": "web_search(query", "web_extract": "web_extract(urls"}


def test_schema_shape(ptc):
    s = schema(ptc)
    assert s["name"] == "execute_code"
    p = s["parameters"]
    assert p["type"] == "object"
    assert list(p["properties"]) == ["code"]
    assert p["properties"]["code"]["type"] == "string"
    assert p["required"] == ["code"]
    assert isinstance(s["description"], str) and len(s["description"]) > 200


def test_schema_default_mentions_enabled_tools_only(ptc):
    desc = schema(ptc)["description"]
    for name in ("read_file", "write_file", "terminal", "search_files", "patch", "web_extract"):
        assert SIG[name] in desc, name
    # No search provider configured: web_search is not offered.
    assert SIG["web_search"] not in desc


def test_schema_subset(ptc):
    desc = schema(ptc, "--tools", "terminal,read_file")["description"]
    assert SIG["terminal"] in desc and SIG["read_file"] in desc
    assert "write_file" not in desc and "web_search" not in desc and "web_extract" not in desc


def test_schema_single_tool(ptc):
    desc = schema(ptc, "--tools", "read_file")["description"]
    assert SIG["read_file"] in desc
    assert SIG["terminal"] not in desc and "write_file" not in desc


BUILTIN = ["read_file", "write_file", "search_files", "patch", "terminal", "web_search",
           "web_extract"]
# A search provider, so web_search can be enabled (`ptc schema` does not reach it).
SEARCH_CFG = "web:\n  search_provider: searxng\n  searxng_url: http://127.0.0.1:9/\n"
FAKE_MCP = Path(__file__).resolve().parents[1] / "unit" / "fake-mcp-server.py"


def calls_named(desc, names):
    """The names of @names that @desc mentions as a call ("name(")."""
    return [n for n in names if re.search(r"\b" + re.escape(n) + r"\(", desc)]


@pytest.mark.parametrize("mode", ["project", "strict"])
@pytest.mark.parametrize("tools", [[t] for t in BUILTIN] + [[], ["web_search", "web_extract"]],
                         ids=lambda t: ",".join(t) or "none")
def test_schema_description_calls_only_enabled_tools(ptc, tools, mode):
    cfg = ptc.write_config(SEARCH_CFG)
    s = schema(ptc, "--config", cfg, "--mode", mode, "--tools", ",".join(tools))
    text = s["description"] + "\n" + code_desc(s)
    disabled = [t for t in BUILTIN if t not in tools]
    assert calls_named(text, disabled) == [], text
    for t in tools:
        assert f"\n  {t}(" in s["description"], t


def test_schema_description_only_mcp_tools(ptc):
    cfg = ptc.write_config(f"""\
        mcp_servers:
          fake:
            command: /usr/bin/python3
            args: [{json.dumps(str(FAKE_MCP))}, normal, {json.dumps(str(ptc.tmp / "fake.log"))}]
        """)
    for mode in ("project", "strict"):
        s = schema(ptc, "--config", cfg, "--mode", mode, "--tools", "fake_echo")
        text = s["description"] + "\n" + code_desc(s)
        assert "\n  fake_echo(" in s["description"], text
        assert calls_named(text, BUILTIN) == [], text


def code_desc(s):
    return s["parameters"]["properties"]["code"]["description"]


def test_schema_import_example(ptc):
    assert "from hermes_tools import terminal, ..." in code_desc(schema(ptc))
    assert "from hermes_tools import read_file, write_file, ..." in code_desc(
        schema(ptc, "--tools", "write_file,read_file"))
    assert "from hermes_tools import terminal, ..." in code_desc(
        schema(ptc, "--tools", "read_file,terminal"))


def test_schema_empty_tool_set_has_no_broken_import(ptc):
    s = schema(ptc, "--tools", "")
    text = json.dumps(s)
    assert "import , " not in text and "import ," not in text
    assert "from hermes_tools import ..." in code_desc(s)
    for name in ("read_file", "write_file", "terminal"):
        assert SIG[name] not in s["description"], name


def test_schema_limits_and_helpers(ptc):
    desc = schema(ptc)["description"]
    for phrase in ("5-minute timeout", "50KB", "50 tool calls", "json_parse", "shell_quote",
                   "retry"):
        assert phrase in desc, phrase


@pytest.mark.parametrize("mode", ["project", "strict"])
def test_schema_forbidden_words(ptc, mode):
    desc = schema(ptc, "--mode", mode)["description"].lower()
    for word in ("sandbox", "isolated", "cloud"):
        assert word not in desc, word


def test_schema_mode_sentences(ptc):
    strict = schema(ptc, "--mode", "strict")["description"]
    project = schema(ptc, "--mode", "project")["description"]
    assert "temp dir" in strict
    assert "session" in project and "venv" in project
    assert strict != project
    assert abs(len(strict) - len(project)) < 200


def test_schema_default_mode_is_configured_mode(ptc):
    assert schema(ptc) == schema(ptc, "--mode", "project")
    cfg = ptc.write_config("code_execution:\n  mode: strict\n")
    r = ptc.run_ptc(["schema"], env={"PTC_CONFIG": str(cfg)})
    assert r.rc == 0 and r.data == schema(ptc, "--mode", "strict"), r


def test_schema_bad_mode_and_unknown_tool_exit_2(ptc):
    expect_usage_error(ptc.run_ptc(["schema", "--mode", "fast"]), "fast")
    expect_usage_error(ptc.run_ptc(["schema", "--tools", "foo"]), "foo")


def test_schema_web_search_without_provider_exits_2(ptc):
    r = ptc.run_ptc(["schema", "--tools", "terminal,web_search"])
    expect_usage_error(r, "web.search_provider")


# --- stubs --------------------------------------------------------------------

def test_stubs_compile_and_define_default_tools(ptc):
    src = stubs(ptc)
    compile(src, "hermes_tools.py", "exec")
    for name in ("read_file", "write_file", "terminal", "search_files", "patch", "web_extract",
                 "json_parse", "shell_quote", "retry"):
        assert f"def {name}(" in src, name
    for name in ("web_search", "execute_code"):
        assert f"def {name}(" not in src, name
    assert "PTC_RPC_SOCKET" in src and "PTC_RPC_TOKEN" in src
    assert "AF_UNIX" in src


def test_stubs_subset_and_empty(ptc):
    src = stubs(ptc, "--tools", "read_file")
    assert "def read_file(" in src and "def terminal(" not in src
    src = stubs(ptc, "--tools", "")
    compile(src, "hermes_tools.py", "exec")
    for name in ("read_file", "write_file", "terminal"):
        assert f"def {name}(" not in src, name
    assert "def json_parse(" in src


def test_stubs_unknown_tool_exits_2(ptc):
    expect_usage_error(ptc.run_ptc(["stubs", "--tools", "foo"]), "foo")


# The module, driven by a fake ptc: a socket server that records requests and
# answers them out of order after a delay.
DRIVER = r'''
import inspect, json, os, socket, sys, threading, time
moddir = sys.argv[1]
sys.path.insert(0, moddir)
path = os.path.join(moddir, "s.sock")
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(16)
seen = []
lock = threading.Lock()
# The ten "sleep" calls meet at a barrier before any is answered (bounded wait): calls
# made one after another never all get there, whatever the machine's speed.
arrived, met, cond = [0], [], threading.Condition()

def answer(c, m):
    args = m.get("args") or {}
    cmd = args.get("command") or ""
    if cmd.startswith("sleep"):
        with cond:
            arrived[0] += 1
            cond.notify_all()
            met.append(cond.wait_for(lambda: arrived[0] >= 10, timeout=20))
        time.sleep(float(cmd.split()[1]))
    if cmd == "ERR":
        resp = {"id": m["id"], "error": "boom"}
    else:
        resp = {"id": m["id"], "result": {"tool": m["tool"], "echo": cmd}}
    with lock:
        c.sendall((json.dumps(resp) + "\n").encode())

def handle(c):
    buf = b""
    while True:
        d = c.recv(65536)
        if not d:
            return
        buf += d
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            m = json.loads(line)
            seen.append(m)
            threading.Thread(target=answer, args=(c, m), daemon=True).start()

def serve():
    while True:
        c, _ = srv.accept()
        threading.Thread(target=handle, args=(c,), daemon=True).start()

threading.Thread(target=serve, daemon=True).start()
os.environ["PTC_RPC_SOCKET"] = path
os.environ["PTC_RPC_TOKEN"] = "tok-123"
import hermes_tools as h

def sig(f):
    return [[p.name] + ([] if p.default is inspect.Parameter.empty else [p.default])
            for p in inspect.signature(f).parameters.values()]
out = {"sigs": {n: sig(getattr(h, n)) for n in ("read_file", "write_file", "terminal")}}
out["res"] = [h.read_file("a.txt"), h.write_file("b.txt", "c"), h.terminal("ls"),
              h.terminal("ERR")]
results = {}
def work(i):
    results[i] = h.terminal("sleep %s" % (0.2 + 0.1 * (9 - i)))["echo"]
ts = [threading.Thread(target=work, args=(i,)) for i in range(10)]
for t in ts: t.start()
for t in ts: t.join()
out["parallel"] = [results[i] for i in range(10)]
out["parallel_met"] = met
out["seen"] = seen[:4]
out["ids"] = [m["id"] for m in seen]
print(json.dumps(out))
'''


def test_stubs_wire_format_against_fake_server(ptc):
    moddir = ptc.path("mod")
    moddir.mkdir()
    (moddir / "hermes_tools.py").write_text(stubs(ptc), encoding="utf-8")
    p = subprocess.run([sys.executable, "-c", DRIVER, str(moddir)], capture_output=True,
                       timeout=60, env=ptc.make_env())
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    d = json.loads(p.stdout)
    assert d["sigs"] == {
        "read_file": [["path"], ["offset", 1], ["limit", 500]],
        "write_file": [["path"], ["content"]],
        "terminal": [["command"], ["timeout", None], ["workdir", None]],
    }, d["sigs"]
    seen = d["seen"]
    assert [m["tool"] for m in seen] == ["read_file", "write_file", "terminal", "terminal"]
    assert all(m["token"] == "tok-123" for m in seen), seen
    assert seen[0]["args"] == {"path": "a.txt", "offset": 1, "limit": 500}, seen[0]
    assert seen[1]["args"] == {"path": "b.txt", "content": "c"}, seen[1]
    assert seen[2]["args"] == {"command": "ls", "timeout": None, "workdir": None}, seen[2]
    assert len(set(map(json.dumps, d["ids"]))) == len(d["ids"]), "request ids repeat"
    assert d["res"][0] == {"tool": "read_file", "echo": ""}
    assert d["res"][2] == {"tool": "terminal", "echo": "ls"}
    # An error response comes back as a dict, not an exception.
    assert d["res"][3] == {"error": "boom"}, d["res"][3]
    assert d["parallel"] == ["sleep %s" % (0.2 + 0.1 * (9 - i)) for i in range(10)]
    # ten callers, answered out of order: all ten were in flight at once (not serialized)
    assert d["parallel_met"] == [True] * 10, d["parallel_met"]


# --- helpers ------------------------------------------------------------------

def test_json_parse_accepts_control_characters(ptc):
    r = ptc.run(r"""
        from hermes_tools import json_parse
        v = json_parse('{"a": "tab\there", "b": "new\nline"}')
        print(repr(v['a']), repr(v['b']))
        """)
    expect(r, 0, "success")
    assert r.output == "'tab\\there' 'new\\nline'\n", r


def test_shell_quote(ptc):
    r = ptc.run("""
        from hermes_tools import shell_quote
        for s in ['', 'safe-word_1.txt', 'a b', "it's", '$(rm -rf /)']:
            print(shell_quote(s))
        """)
    expect(r, 0, "success")
    assert r.output.split("\n")[:5] == ["''", "safe-word_1.txt", "'a b'", "'it'\"'\"'s'",
                                       "'$(rm -rf /)'"], r


def test_shell_quote_roundtrip_through_terminal(ptc):
    r = ptc.run("""
        from hermes_tools import shell_quote, terminal
        s = "weird 'quote' \\"dq\\" $HOME `x` ; | > <"
        print(terminal('printf %s ' + shell_quote(s))['output'] == s)
        """)
    expect(r, 0, "success")
    assert r.output == "True\n", r


def test_retry_semantics(ptc):
    r = ptc.run("""
        import time
        from hermes_tools import retry
        calls = []
        def flaky():
            calls.append(1)
            if len(calls) < 3:
                raise ValueError('fail %d' % len(calls))
            return 'ok'
        t0 = time.monotonic()
        print(retry(flaky, max_attempts=3, delay=0.05), len(calls))
        print(retry(lambda: 'first', delay=10))
        n = []
        def bad():
            n.append(1)
            raise KeyError('last-%d' % len(n))
        try:
            retry(bad, max_attempts=2, delay=0.05)
        except KeyError as e:
            print('raised', e, len(n))
        print(time.monotonic() - t0 < 9.0)  # the delay=10 was not waited (a hang guard)
        """)
    expect(r, 0, "success")
    assert r.output == "ok 3\nfirst\nraised 'last-2' 2\nTrue\n", r


def test_retry_backoff_delays(ptc):
    r = ptc.run("""
        import time
        from hermes_tools import retry
        stamps, asked = [], []
        real_sleep = time.sleep
        def sleep(s):  # the delays asked for, exactly: no stopwatch needed for the backoff
            asked.append(s)
            real_sleep(s)
        time.sleep = sleep
        def f():
            stamps.append(time.monotonic())
            raise RuntimeError('x')
        try:
            retry(f, max_attempts=3, delay=0.2)
        except RuntimeError:
            pass
        print(stamps[1] - stamps[0], stamps[2] - stamps[1], len(stamps), asked)
        """)
    expect(r, 0, "success")
    d1, d2, n, asked = r.output.split(" ", 3)
    assert n == "3", r
    assert asked.strip() == "[0.2, 0.4]", r
    assert float(d1) >= 0.19 and float(d2) >= 0.39, r  # really slept (lower bounds only)


def test_schema_default_equals_explicit_default_set(ptc):
    default = schema(ptc)
    assert default == schema(ptc, "--tools",
                             "read_file,terminal,write_file,search_files,patch,web_extract")


def test_stubs_default_equals_explicit_default_set(ptc):
    assert stubs(ptc) == stubs(ptc, "--tools",
                               "terminal,write_file,read_file,patch,search_files,web_extract")
