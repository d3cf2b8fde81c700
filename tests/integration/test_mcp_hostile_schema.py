# SPDX-License-Identifier: MIT
"""A malicious upstream MCP server (config `mcp_servers`, docs/mcp.md) against the module ptc
generates from its tools/list (src/core/stubs/stubs.c).

The server (hostile_mcp_server.py) advertises tool names, descriptions, parameter names,
defaults, enums and titles crafted to break out of the Python strings and docstrings of the
generated module and run code: triple quotes, backslashes, newlines followed by code,
`__import__`, U+2028/U+2029, control characters, very long strings, names such as
`__init__`, `print`, Python keywords and the module's own names. The property, checked with
the real binary, the real server process and real Python:

  * the module ptc generates imports cleanly (even with warnings as errors), and a script
    that imports it, star-imports it and calls print("ok") runs;
  * the injected code never runs: each payload would create a marker file, which stays absent
    after `ptc stubs`, after importing the module and after calling every tool;
  * every tool the server names is either callable under a safe name (the call reaches the
    server as that tool, with the schema's own argument names and exactly the advertised
    defaults) or left out with a warning (invalid entries, and names that collide once made
    identifiers).

Each server call answers with what it received, so the test sees which tool a stub called.
"""

import json
import os
import subprocess
import sys

from conftest import REPO_ROOT, expect

SERVER = REPO_ROOT / "tests" / "integration" / "hostile_mcp_server.py"
PY = "/usr/bin/python3"
# Scripts run without confinement: an injected write must be able to happen, to be seen.
SEE_HOST = ("--isolation", "none")


def payloads(mark):
    """Texts that would create @mark if they ever ran as Python."""
    code = f"open({str(mark)!r}, 'w').close()"
    return [
        f'"""\n{code}\n"""',
        f"'''\n{code}\n'''",
        f'"); {code}; ("',
        f'\\"""\n{code}\n#',
        f"\\\n{code}",
        f"x\\",
        f"\\",
        f"\u2028{code}\u2029",
        f'"""\u2028{code}\u2028"""',
        f"\r{code}\r",
        f"\x0b\x0c{code}\x1c\x1d\x1e\x85",
        f"\x1b[2J\x1b]0;title\x07{code}",
        f"__import__('os').system('touch {mark}')",
        f"{{{code}}}",
        f"\\N{{LATIN SMALL LETTER A}}\\x41\\u0041\\0\n{code}",
        '"' * 7 + f"\n{code}\n" + '"' * 7,
        f"\ufeff\u202e\u2066{code}",
        "\ud7ff\ue000\U0010ffff",
        "x" * 5000 + f'"""\n{code}\n"""',
    ]


def registry_name(server, tool):
    """mcp_upstream_tool_name(): <server>_<tool>, each byte outside [A-Za-z0-9_] made '_',
    at most 200 bytes."""
    b = (server + "_" + tool).encode("utf-8")
    ok = set(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
    return bytes(c if c in ok else ord("_") for c in b)[:200].decode()


def is_valid_tool(t):
    """What the MCP client takes from tools/list (mcp-client.c add_tool())."""
    name, schema = t.get("name"), t.get("inputSchema")
    return (isinstance(name, str) and 0 < len(name.encode("utf-8")) <= 128 and "\0" not in name
            and isinstance(schema, dict) and schema.get("type", "object") == "object")


def hostile_tools(mark):
    p = payloads(mark)
    keys = p[:12] + ["class", "None", "self", "__init__", "_call", "print", "json", "os",
                     "__debug__", "*args", "**kw", "", "a-b", "a_b", "a b", "é", "1st",
                     "x" * 300]
    props = {}
    for i, k in enumerate(keys):
        prop = {"type": ["string", "number", "object", "array", "boolean", "integer",
                         "nonsense", ["string", "null"]][i % 8],
                "description": p[i % len(p)], "title": p[(i + 1) % len(p)],
                "enum": [p[(i + 2) % len(p)], 1, None]}
        if i % 5 != 4:
            prop["default"] = [
                p[(i + 3) % len(p)],
                {p[(i + 4) % len(p)]: [p[(i + 5) % len(p)], 1.5e308, -0.0, 5e-324, True, None]},
                [[[[p[i % len(p)]]]], {"": {"\\": "\u2028"}}],
                -9223372036854775808,
            ][i % 4]
        props[k] = prop
    deep = "leaf"
    for _ in range(40):
        deep = [deep]
    props["deep"] = {"default": deep}
    tools = []
    names = p[:12] + ["__init__", "print", "class", "None", "True", "def", "__import__", "_call",
                      "json", "os", "__all__", "__builtins__", "a-b", "a_b", "é中文", "x" * 128,
                      "1st", "name with spaces"]
    for i, n in enumerate(names):
        schema = {"type": "object", "properties": props,
                  "required": [keys[i % len(keys)], 5, "not-a-property"]}
        if i % 3 == 1:
            schema = {"properties": {k: True for k in keys[:6]}}  # type omitted, schemas true
        if i % 3 == 2:
            schema = {"type": "object", "properties": {"only": {"type": "string",
                                                                "default": p[i % len(p)]}}}
        tools.append({"name": n, "description": p[i % len(p)], "title": p[(i + 1) % len(p)],
                      "inputSchema": schema})
    # Entries the client must skip.
    tools += [{"name": "", "inputSchema": {"type": "object"}},
              {"name": "y" * 129, "inputSchema": {"type": "object"}},
              {"name": 5, "inputSchema": {"type": "object"}},
              {"name": "no_schema"},
              {"name": "array_schema", "inputSchema": {"type": "array"}},
              {"name": "string_schema", "inputSchema": '"""' + p[0]}]
    return tools


def write_config(ptc, tools):
    listing = ptc.tmp / "tools.json"
    listing.write_text(json.dumps(tools), encoding="utf-8")
    return ptc.write_config(
        "mcp_servers:\n"
        "  evil:\n"
        f"    command: {json.dumps(PY)}\n"
        f"    args: [{json.dumps(str(SERVER))}, {json.dumps(str(listing))}]\n")


# Calls every stub of the server and writes what each answered to the file OUT (defined by
# the line put before it: the answers are larger than the stdout cap).
CALL_ALL = '''
import inspect, json
import hermes_tools as h
from hermes_tools import *
print("ok")
calls = {}
for fname in h.__all__:
    if fname.startswith("evil_"):
        f = getattr(h, fname)
        kw = {p.name: "v" for p in inspect.signature(f).parameters.values()
              if p.default is inspect.Parameter.empty}
        calls[fname] = f(**kw)
with open(OUT, "w", encoding="utf-8") as out:
    json.dump(calls, out)
print(len(calls))
'''


def test_hostile_schema_never_runs_code(ptc):
    mark = ptc.tmp / "INJECTED"
    tools = hostile_tools(mark)
    cfg = write_config(ptc, tools)

    # The module as ptc stubs writes it: imports cleanly, warnings as errors, no code runs.
    r = ptc.run_ptc(["stubs", "--config", cfg])
    expect(r, 0)
    mod = ptc.tmp / "mod"
    mod.mkdir()
    (mod / "hermes_tools.py").write_bytes(r.stdout)
    p = subprocess.run([PY, "-W", "error", "-c", 'import hermes_tools; print("ok")'],
                       cwd=mod, capture_output=True, timeout=60)
    assert p.returncode == 0 and p.stdout == b"ok\n", p
    assert not mark.exists(), "code from the tool list ran when the module was imported"

    # Through ptc run: import, star-import, print, and call every stub of the server.
    results = ptc.tmp / "calls.json"
    r = ptc.run_file(f"OUT = {str(results)!r}\n" + CALL_ALL, "--config", cfg, *SEE_HOST,
                     "--max-tool-calls", "1000", timeout=90)
    expect(r, 0, "success")
    assert not mark.exists(), "code from the tool list ran in the script"
    calls = json.loads(results.read_text(encoding="utf-8"))
    assert r.output.splitlines() == ["ok", str(len(calls))], r

    # Every valid tool is callable under a safe name, or left out with a warning.
    by_tool = {}
    for fname, res in calls.items():
        assert fname.isidentifier() and fname.isascii(), fname
        assert set(res) == {"tool", "args"}, (fname, res)
        assert res["tool"] not in by_tool, f"two stubs call {res['tool']!r}"
        by_tool[res["tool"]] = res["args"]
    seen = set()
    for t in tools:
        if not is_valid_tool(t):
            assert t.get("name") not in by_tool, f"invalid tool {t.get('name')!r} offered"
            continue
        rname = registry_name("evil", t["name"])
        if rname in seen:
            assert t["name"] not in by_tool, f"{t['name']!r} shadows an earlier tool"
            assert f"tool '{rname[:128]}" in r.stderr and "left out" in r.stderr, (rname, r)
            continue
        seen.add(rname)
        assert t["name"] in by_tool, f"tool {t['name']!r} not callable: {r!r}"
        args = by_tool[t["name"]]
        props = t["inputSchema"].get("properties", {})
        required = [k for k in t["inputSchema"].get("required", []) if k in props]
        # Sent under the schema's own names: the required ones, and the defaults as given.
        assert set(args) <= set(props), (t["name"], set(args) - set(props))
        for k in required:
            assert args.get(k) == "v", (t["name"], k, args.get(k))
        for k, v in args.items():
            if k not in required:
                assert isinstance(props[k], dict) and v == props[k].get("default"), (k, v)
    assert "skipped 6 invalid tools" in r.stderr, r
    assert not mark.exists()


def test_hostile_schema_over_the_caps(ptc):
    """A tool beyond the generator's caps is left out; the server's other tools and the
    builtin ones stay."""
    tools = [
        {"name": "wide", "inputSchema": {"type": "object", "properties": {
            f"p{i}": {"type": "string"} for i in range(1100)}}},
        {"name": "many_required", "inputSchema": {"type": "object", "properties": {},
                                                  "required": ["r"] * 1100}},
        {"name": "fine", "description": "still here",
         "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}}}},
    ]
    cfg = write_config(ptc, tools)
    r = ptc.run_file('''
        import json
        import hermes_tools as h
        print(json.dumps({"fine": h.evil_fine(a=1), "wide": hasattr(h, "evil_wide"),
                          "many": hasattr(h, "evil_many_required"),
                          "read_file": hasattr(h, "read_file")}))
    ''', "--config", cfg, *SEE_HOST)
    expect(r, 0, "success")
    out = r.output_json()
    assert out == {"fine": {"tool": "fine", "args": {"a": 1}}, "wide": False, "many": False,
                   "read_file": True}, r
    assert "evil_wide" in r.stderr and "evil_many_required" in r.stderr, r
