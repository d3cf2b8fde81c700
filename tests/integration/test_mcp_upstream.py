# SPDX-License-Identifier: MIT
"""Upstream MCP servers (config `mcp_servers`, docs/contracts.md 5): their tools inside scripts.

`ptc run` starts every configured server before the script, lists its tools and
offers each one as `<server>_<tool>` (made a Python identifier) in the generated
module; `ptc schema` and `ptc stubs` show them too. A script's call returns the
answer mapped to a dict (structuredContent, JSON text, {"result": ...},
{"text": ...}, {"error": ...}, non-text items under "content").

Three kinds of upstream server:
  * the reference servers @modelcontextprotocol/server-filesystem and
    server-everything, pinned in tests/mcp/package.json and run with
    `node <entry>` from tests/mcp/node_modules (no npx, no network). Without
    them (`npm ci --prefix tests/mcp`) these tests FAIL, they do not skip;
  * tests/unit/fake-mcp-server.py (stdlib only, behavior chosen by argv[1];
    argv[2] is a log file, whose unique path doubles as a marker to find the
    server's processes in /proc);
  * commands that cannot start at all.

Process checks: a server must be running during the script (found by its
marker in /proc, or by the pids the fake reports) and gone once ptc returned.
"""

import json
import os
import re
import shutil
import uuid

import pytest

from conftest import REPO_ROOT, expect, kill_pids, pid_alive, wait_gone

MCP_DIR = REPO_ROOT / "tests" / "mcp"
NODE_MODULES = MCP_DIR / "node_modules"
INSTALL_HINT = "run `npm ci --prefix tests/mcp`"
FAKE = REPO_ROOT / "tests" / "unit" / "fake-mcp-server.py"
PY = "/usr/bin/python3"

# The fake's valid tools (tests/unit/fake-mcp-server.py TOOLS), in its order.
FAKE_TOOLS = ["echo", "add", "fail", "image", "json_text", "list_text", "multi_text", "big",
              "sleep", "hang", "crash", "rpc_error", "pids", "ping_client", "noschema_type",
              "not_json"]
# The fake's invalid entries that must be skipped (their would-be stub names).
FAKE_INVALID = ["fake_no_schema", "fake_bad_schema", "fake_array_schema", "fake_x" + "x" * 20]


# --- setup ---------------------------------------------------------------------------------


def node_entry(package):
    """Absolute path of the stdio entry point (package.json "bin") of @package."""
    pj = NODE_MODULES / "@modelcontextprotocol" / package / "package.json"
    if not pj.is_file():
        pytest.fail(f"@modelcontextprotocol/{package} is not installed in {NODE_MODULES}: "
                    f"{INSTALL_HINT}")
    if not shutil.which("node"):
        pytest.fail("node not found on PATH; the upstream MCP tests need Node.js 20+")
    meta = json.loads(pj.read_text(encoding="utf-8"))
    pinned = json.loads((MCP_DIR / "package.json").read_text(encoding="utf-8"))["dependencies"]
    want = pinned.get(f"@modelcontextprotocol/{package}")
    if want and meta["version"] != want:
        pytest.fail(f"{package} {meta['version']} is installed but {want} is pinned: "
                    f"{INSTALL_HINT}")
    b = meta["bin"]
    rel = b if isinstance(b, str) else next(iter(b.values()))
    return str((pj.parent / rel).resolve())


def fake_path():
    if not FAKE.is_file():
        pytest.fail(f"{FAKE} is missing")
    return str(FAKE)


def servers_yaml(servers):
    """The mcp_servers section for @servers (name -> {command, args, env, cwd})."""
    lines = ["mcp_servers:"]
    for name, s in servers.items():
        lines.append(f"  {name}:")
        lines.append(f"    command: {json.dumps(s['command'])}")
        for key in ("args", "env", "cwd"):
            if key in s:
                lines.append(f"    {key}: {json.dumps(s[key])}")
    return "\n".join(lines) + "\n"


def config(ptc, servers, name="config.yaml"):
    return ptc.write_config(servers_yaml(servers), name=name)


def marker():
    return "ptcmark-" + uuid.uuid4().hex[:12]


def fake(ptc, mode, mark=None, **extra):
    """A fake server spec in @mode; its log file (argv[2]) carries the marker @mark."""
    mark = mark or marker()
    spec = {"command": PY, "args": [fake_path(), mode, str(ptc.tmp / f"{mark}.log")]}
    spec.update(extra)
    return spec


def everything(mark=None, **extra):
    args = [node_entry("server-everything"), "stdio"]
    if mark:
        args.append(mark)  # index.js reads only argv[2]; the rest is a /proc marker
    spec = {"command": "node", "args": args}
    spec.update(extra)
    return spec


def filesystem(root):
    return {"command": "node", "args": [node_entry("server-filesystem"), str(root)]}


def marker_procs(mark):
    """Live processes (not zombies) whose command line contains @mark."""
    found = []
    needle = mark.encode()
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if needle in cmd and pid_alive(int(d)):
            found.append((int(d), cmd.replace(b"\0", b" ").decode("utf-8", "replace")))
    return found


def assert_gone(pids, what):
    try:
        alive = [p for p in pids if not wait_gone(p, 10.0)]
        assert not alive, f"{what}: still running after ptc returned: {alive}"
    finally:
        kill_pids(pids)


def assert_no_marker_procs(mark, what):
    left = marker_procs(mark)
    kill_pids([p for p, _ in left])
    assert not left, f"{what}: processes left after ptc returned: {left}"


# Scanning /proc from inside the script; the marker is passed split in two so that the
# script's own command line (or ptc's) never contains it.
SCAN = '''
import os
def scan(a, b):
    needle = (a + b).encode()
    me = os.getpid()
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != me:
            try:
                with open("/proc/%s/cmdline" % d, "rb") as f:
                    if needle in f.read():
                        pids.append(int(d))
            except OSError:
                pass
    return sorted(pids)
'''


def split(mark):
    return mark[:4], mark[4:]


def params(stubs, fname):
    """Parameter names of the stub @fname in the module text @stubs."""
    head = stubs.split(f"\ndef {fname}(", 1)
    assert len(head) == 2, f"{fname} not defined"
    sig = head[1].split("):\n", 1)[0]
    names = []
    for p in sig.split(","):
        p = p.strip().lstrip("*")
        if p:
            names.append(re.split(r"[:=\s]", p, 1)[0])
    return names


# Scripts that look for the upstream servers (processes of ptc, outside the script's
# confinement) in /proc run under isolation none: under auto the script has a /proc of
# its own and cannot see them (test_isolation.py checks that).
SEE_HOST = ("--isolation", "none")


def run_json(ptc, cfg, code, *opts, **kw):
    """`ptc run --config CFG OPTS FILE`; expects success and returns the printed JSON."""
    r = ptc.run_file(code, "--config", cfg, *opts, **kw)
    expect(r, 0, "success")
    return r, r.output_json()


# --- server-filesystem ---------------------------------------------------------------------


def test_filesystem_tools_in_stubs_and_schema(ptc):
    root = ptc.tmp / "data"
    root.mkdir()
    cfg = config(ptc, {"files": filesystem(root)})

    r = ptc.run_ptc(["stubs", "--config", cfg])
    expect(r, 0)
    stubs = r.stdout.decode()
    for t in ("read_text_file", "read_file", "list_directory", "write_file",
              "list_allowed_directories", "directory_tree", "move_file", "get_file_info"):
        assert f"\ndef files_{t}(" in stubs, f"files_{t} not defined: {r!r}"
    # Parameters come from inputSchema, required ones first.
    assert params(stubs, "files_read_text_file") == ["path", "tail", "head"], r
    assert params(stubs, "files_write_file") == ["path", "content"], r
    assert params(stubs, "files_move_file") == ["source", "destination"], r
    assert params(stubs, "files_list_allowed_directories") == [], r
    # Builtin tools are still there.
    assert "\ndef read_file(" in stubs and "\ndef terminal(" in stubs, r

    r = ptc.run_ptc(["schema", "--config", cfg])
    expect(r, 0)
    desc = r.data["description"]
    for t in ("files_read_text_file", "files_list_directory", "files_write_file"):
        assert f"\n  {t}(path" in desc, f"{t} not listed: {r!r}"


def test_filesystem_tools_limit(ptc):
    root = ptc.tmp / "data"
    root.mkdir()
    cfg = config(ptc, {"files": filesystem(root)})

    r = ptc.run_ptc(["stubs", "--config", cfg, "--tools", "files_read_text_file,read_file"])
    expect(r, 0)
    stubs = r.stdout.decode()
    assert "\ndef files_read_text_file(" in stubs, r
    assert "\ndef read_file(" in stubs, r
    for absent in ("files_write_file", "files_list_directory", "terminal", "write_file"):
        assert f"\ndef {absent}(" not in stubs, f"{absent} defined although not enabled: {r!r}"

    r = ptc.run_ptc(["schema", "--config", cfg, "--tools", "files_read_text_file,read_file"])
    expect(r, 0)
    desc = r.data["description"]
    assert "\n  files_read_text_file(path" in desc and "\n  read_file(path" in desc, r
    for t in ("files_write_file", "files_list_directory", "terminal", "write_file"):
        assert f"\n  {t}(" not in desc, f"{t} listed although not enabled: {r!r}"


def test_filesystem_list_read_write(ptc):
    root = ptc.tmp / "data"
    (root / "sub").mkdir(parents=True)
    (root / "hello.txt").write_text("line one\nline two\n", encoding="utf-8")
    cfg = config(ptc, {"files": filesystem(root)})
    r, out = run_json(ptc, cfg, f'''
        import json
        from hermes_tools import (files_list_directory, files_read_text_file,
                                  files_write_file)
        root = {str(root)!r}
        out = {{}}
        out["list"] = files_list_directory(path=root)
        out["read"] = files_read_text_file(path=root + "/hello.txt")
        out["write"] = files_write_file(path=root + "/new.txt", content="written by ptc\\n")
        out["reread"] = files_read_text_file(path=root + "/new.txt")
        out["denied"] = files_read_text_file(path="/etc/hostname")
        print(json.dumps(out))
    ''')
    # structuredContent {"content": text} is the result.
    listing = sorted(out["list"]["content"].splitlines())
    assert listing == ["[DIR] sub", "[FILE] hello.txt"], r
    assert out["list"] == {"content": out["list"]["content"]}, r
    assert out["read"] == {"content": "line one\nline two\n"}, r
    assert out["write"] == {"content": f"Successfully wrote to {root}/new.txt"}, r
    assert (root / "new.txt").read_text(encoding="utf-8") == "written by ptc\n"
    assert out["reread"] == {"content": "written by ptc\n"}, r
    # isError answer -> {"error": text}
    assert set(out["denied"]) == {"error"}, r
    assert "Access denied - path outside allowed directories" in out["denied"]["error"], r
    assert r.data["tool_calls_made"] == 5, r


# --- server-everything ---------------------------------------------------------------------


def test_everything_tools_and_results(ptc):
    cfg = config(ptc, {"everything": everything()})

    r = ptc.run_ptc(["schema", "--config", cfg])
    expect(r, 0)
    desc = r.data["description"]
    for t in ("everything_echo(message", "everything_get_sum(a", "everything_get_env()",
              "everything_get_tiny_image()", "everything_get_structured_content(location",
              "everything_trigger_long_running_operation("):
        assert "\n  " + t in desc, f"{t} missing from the schema: {r!r}"

    r, out = run_json(ptc, cfg, '''
        import json
        from hermes_tools import (everything_echo, everything_get_sum,
                                  everything_get_structured_content, everything_get_tiny_image)
        print(json.dumps({
            "echo": everything_echo(message="hi there"),
            "sum": everything_get_sum(a=2, b=40),
            "weather": everything_get_structured_content(location="Chicago"),
            "image": everything_get_tiny_image(),
            "bad": everything_get_sum(a="x", b=1),
        }))
    ''')
    assert out["echo"] == {"text": "Echo: hi there"}, r
    assert out["sum"] == {"text": "The sum of 2 and 40 is 42."}, r
    assert out["weather"] == {"temperature": 36, "conditions": "Light rain / drizzle",
                              "humidity": 82}, r
    img = out["image"]
    assert img["text"] == "Here's the image you requested:\nThe image above is the MCP logo.", r
    assert len(img["content"]) == 1, r
    assert img["content"][0]["type"] == "image", r
    assert img["content"][0]["mimeType"] == "image/png", r
    assert img["content"][0]["data"].startswith("iVBORw0KGgo"), r
    assert set(img) == {"text", "content"}, r
    assert set(out["bad"]) == {"error"}, r
    assert "Input validation error" in out["bad"]["error"], r


def test_everything_concurrent_calls(ptc):
    cfg = config(ptc, {"everything": everything()})
    r, out = run_json(ptc, cfg, '''
        import json, threading, time
        from hermes_tools import everything_trigger_long_running_operation as op
        results = [None] * 10
        def work(i):
            results[i] = op(duration=1, steps=1)
        ts = [threading.Thread(target=work, args=(i,)) for i in range(10)]
        t0 = time.monotonic()
        for t in ts: t.start()
        for t in ts: t.join()
        print(json.dumps({"results": results, "elapsed": time.monotonic() - t0}))
    ''')
    want = {"text": "Long running operation completed. Duration: 1 seconds, Steps: 1."}
    assert out["results"] == [want] * 10, r
    # Each call takes 1 s upstream: one after the other would take at least 10 s, however
    # fast the machine; at once they take about 1 s (the bound is 10x that).
    assert 0.9 <= out["elapsed"] < 10.0, r
    assert r.data["tool_calls_made"] == 10, r


def test_everything_env_scrubbed_plus_configured(ptc):
    cfg = config(ptc, {"everything": everything(env={"FOO": "bar", "PTC_UP_X": "y z"})})
    r, out = run_json(ptc, cfg, '''
        import json
        from hermes_tools import everything_get_env
        print(json.dumps(everything_get_env()))
    ''', env={"MY_SERVICE_API_KEY": "sk-upstreamsecret0123456789",
              "GITHUB_TOKEN": "ghp_upstreamsecret0123456789abcdefABCDEF",
              "DATABASE_PASSWORD": "hunter2hunter2", "RANDOM_UNSAFE_NAME": "v"})
    # The text is a JSON object: parsed into the result.
    assert out["FOO"] == "bar", r
    assert out["PTC_UP_X"] == "y z", r
    assert out["HOME"] == str(ptc.home), r
    assert "PATH" in out, r
    for name in ("MY_SERVICE_API_KEY", "GITHUB_TOKEN", "DATABASE_PASSWORD",
                 "RANDOM_UNSAFE_NAME"):
        assert name not in out, f"{name} reached the upstream server: {r!r}"
    assert "sk-upstreamsecret" not in r.stdout.decode(), r


def test_everything_server_stopped_after_run(ptc):
    mark = marker()
    cfg = config(ptc, {"everything": everything(mark)})
    a, b = split(mark)
    r, out = run_json(ptc, cfg, SCAN + f'''
import json
from hermes_tools import everything_echo
print(json.dumps({{"echo": everything_echo(message="x"), "pids": scan({a!r}, {b!r})}}))
''', *SEE_HOST)
    assert out["echo"] == {"text": "Echo: x"}, r
    assert len(out["pids"]) >= 1, f"server not found by its marker during the run: {r!r}"
    assert_gone(out["pids"], "server-everything")
    assert_no_marker_procs(mark, "server-everything")


# --- the fake server: result mapping -------------------------------------------------------


def test_fake_result_mapping(ptc):
    cfg = config(ptc, {"fake": fake(ptc, "normal")})
    r, out = run_json(ptc, cfg, '''
        import json
        import hermes_tools as h
        print(json.dumps({
            "echo": h.fake_echo(text="hello"),
            "add": h.fake_add(a=2, b=3),
            "fail": h.fake_fail(),
            "image": h.fake_image(),
            "json_text": h.fake_json_text(),
            "list_text": h.fake_list_text(),
            "multi_text": h.fake_multi_text(),
            "sleep": h.fake_sleep(),
            "rpc_error": h.fake_rpc_error(),
            "noschema_type": h.fake_noschema_type(),
            "echo_json": h.fake_echo(text='{"a": [1, {"b": null}]}'),
            "echo_num": h.fake_echo(text="42"),
            "echo_str": h.fake_echo(text='"quoted"'),
            "echo_empty": h.fake_echo(text=""),
        }))
    ''')
    assert out["echo"] == {"text": "hello"}, r
    assert out["add"] == {"sum": 5}, r                          # structuredContent wins
    assert out["fail"] == {"error": "it failed"}, r             # isError
    assert out["image"] == {"text": "here", "content": [
        {"type": "image", "data": "aGk=", "mimeType": "image/png"}]}, r
    assert out["json_text"] == {"x": 1, "y": [2]}, r            # JSON object text, parsed
    assert out["list_text"] == {"result": [1, 2, 3]}, r         # other JSON
    assert out["multi_text"] == {"text": "a\nb"}, r             # text items joined
    assert out["sleep"] == {"slept": 200}, r
    assert out["rpc_error"] == {"error": "mcp server 'fake': boom (code -32000)"}, r
    # The fake answers a tool it has no branch for with a JSON-RPC error.
    assert out["noschema_type"] == {
        "error": "mcp server 'fake': unknown tool noschema_type (code -32602)"}, r
    assert out["echo_json"] == {"a": [1, {"b": None}]}, r
    assert out["echo_num"] == {"result": 42}, r
    assert out["echo_str"] == {"result": "quoted"}, r
    assert out["echo_empty"] == {"text": ""}, r
    assert r.data["tool_calls_made"] == 14, r


def test_fake_secret_as_a_key_is_redacted(ptc):
    """A secret is redacted where it is an object key of a result too (docs/security.md 1),
    and two keys that meet under one redacted name both stay."""
    secret = "zq" + "Hx7p" * 6
    cfg = config(ptc, {"fake": fake(ptc, "normal")})
    r, out = run_json(ptc, cfg, f'''
        import json
        import hermes_tools as h
        s = {secret[::-1]!r}[::-1]
        res = h.fake_echo(text=json.dumps({{s: 1, "id " + s: 2, "id " + s[::-1]: 3}}))
        print(json.dumps({{"leaked": s in json.dumps(res), "values": sorted(res.values()),
                           "redacted_keys": sum("***" in k for k in res)}}))
    ''', env={"PTC_TEST_API_KEY": secret})
    assert out == {"leaked": False, "values": [1, 2, 3], "redacted_keys": 2}, r


def test_fake_stubs_valid_tools_only(ptc):
    mark = marker()
    cfg = config(ptc, {"fake": fake(ptc, "normal", mark)})
    r = ptc.run_ptc(["stubs", "--config", cfg])
    expect(r, 0)
    assert_no_marker_procs(mark, "fake server after ptc stubs")
    log = ptc.tmp / f"{mark}.log"
    assert "tools/list" in log.read_text(encoding="utf-8"), "ptc stubs did not list tools"
    stubs = r.stdout.decode()
    for t in FAKE_TOOLS:
        assert f"\ndef fake_{t}(" in stubs, f"fake_{t} not defined: {r!r}"
    for bad in FAKE_INVALID:
        assert f"\ndef {bad}" not in stubs, f"invalid upstream tool {bad} defined: {r!r}"
    # Left out, and said so.
    assert "warning: mcp server 'fake': skipped 6 invalid tools" in r.stderr, r
    assert "\ndef fake_(" not in stubs and "\ndef fake_5(" not in stubs, r
    # Parameters from inputSchema, required ones first.
    assert params(stubs, "fake_add") == ["a", "b"], r
    assert params(stubs, "fake_echo") == ["text"], r
    assert params(stubs, "fake_fail") == [], r


def test_fake_server_name_made_identifier(ptc):
    cfg = config(ptc, {"my-srv": fake(ptc, "normal")})
    r = ptc.run_ptc(["stubs", "--config", cfg])
    expect(r, 0)
    assert "\ndef my_srv_echo(" in r.stdout.decode(), r
    r, out = run_json(ptc, cfg, '''
        import json
        from hermes_tools import my_srv_echo, my_srv_rpc_error
        print(json.dumps([my_srv_echo(text="dash"), my_srv_rpc_error()]))
    ''')
    # The error names the server as configured.
    assert out == [{"text": "dash"}, {"error": "mcp server 'my-srv': boom (code -32000)"}], r


def test_colliding_names_first_server_wins(ptc):
    cfg = config(ptc, {"my-srv": fake(ptc, "normal"), "my_srv": fake(ptc, "normal")})
    r, out = run_json(ptc, cfg, '''
        import json
        from hermes_tools import my_srv_rpc_error
        print(json.dumps(my_srv_rpc_error()))
    ''')
    # Config order: the first server's tool is kept, the second one's left out with a warning.
    assert out == {"error": "mcp server 'my-srv': boom (code -32000)"}, r
    assert "my_srv_echo" in r.stderr and "warning" in r.stderr.lower(), r


def test_fake_tools_limit_and_unknown(ptc):
    cfg = config(ptc, {"fake": fake(ptc, "normal")})
    r, out = run_json(ptc, cfg, '''
        import json
        import hermes_tools as h
        print(json.dumps({"echo": h.fake_echo(text="only"), "add": hasattr(h, "fake_add"),
                          "read_file": hasattr(h, "read_file")}))
    ''', "--tools", "fake_echo")
    assert out == {"echo": {"text": "only"}, "add": False, "read_file": False}, r

    r = ptc.run_ptc(["schema", "--config", cfg, "--tools", "fake_echo,fake_add"])
    expect(r, 0)
    desc = r.data["description"]
    assert "\n  fake_echo(" in desc and "\n  fake_add(a" in desc, r
    assert "\n  fake_fail(" not in desc and "\n  read_file(" not in desc, r

    r = ptc.run_ptc(["run", "--config", cfg, "--tools", "fake_nope", "-c", "print(1)"])
    assert r.rc == 2, f"unknown tool accepted: {r!r}"
    assert "fake_nope" in r.stderr, r


def test_fake_big_answer_is_error_and_script_continues(ptc):
    cfg = config(ptc, {"fake": fake(ptc, "normal")})
    r, out = run_json(ptc, cfg, '''
        import json
        import hermes_tools as h
        big = h.fake_big()
        print(json.dumps({"big_keys": sorted(big), "err": str(big.get("error", ""))[:300],
                          "after": h.fake_echo(text="still here")}))
    ''', timeout=40)
    assert out["big_keys"] == ["error"], r
    assert "mcp server 'fake'" in out["err"] and "'big'" in out["err"], r
    assert out["after"] == {"text": "still here"}, r


# --- the fake server: failures -------------------------------------------------------------


def test_fake_crash_on_call(ptc):
    cfg = config(ptc, {"fake": fake(ptc, "crash-on-call")})
    r, out = run_json(ptc, cfg, '''
        import json
        from hermes_tools import fake_echo, read_file
        first = fake_echo(text="a")
        second = fake_echo(text="b")
        builtin = read_file(path="nonexistent-file.txt")
        print(json.dumps({"first": first, "second": second, "builtin": sorted(builtin)}))
    ''')
    for k in ("first", "second"):
        assert set(out[k]) == {"error"}, r
        assert "not running" in out[k]["error"], r
        assert "'fake'" in out[k]["error"], r
    assert "status 3" in out["second"]["error"], r
    assert "error" in out["builtin"], r   # other tools keep working
    assert r.data["tool_calls_made"] == 3, r


def test_fake_crash_tool_in_normal_mode(ptc):
    cfg = config(ptc, {"fake": fake(ptc, "normal"), "other": fake(ptc, "normal")})
    r, out = run_json(ptc, cfg, '''
        import json
        import hermes_tools as h
        print(json.dumps([h.fake_crash(), h.fake_echo(text="x"), h.other_echo(text="alive")]))
    ''')
    assert "not running" in out[0]["error"], r
    assert "not running" in out[1]["error"] and "status 3" in out[1]["error"], r
    assert out[2] == {"text": "alive"}, r


def test_fake_hang_on_call_timeout(ptc):
    mark = marker()
    cfg = config(ptc, {"fake": fake(ptc, "hang-on-call", mark)})
    r = ptc.run_file('''
        from hermes_tools import fake_echo
        print("BEFORE-CALL", flush=True)
        fake_echo(text="never")
        print("AFTER-CALL")
    ''', "--config", cfg, "--timeout", "3", timeout=60)
    expect(r, 124, "timeout")
    # hang guard: the upstream call never returns
    assert r.elapsed < 30, f"hanging upstream call kept ptc past the deadline: {r!r}"
    assert r.output.startswith("BEFORE-CALL\n") and "AFTER-CALL" not in r.output, r
    assert "timed out after 3s" in r.output, r
    assert_no_marker_procs(mark, "hang-on-call fake after a timeout")


def test_fake_garbage_lines(ptc):
    cfg = config(ptc, {"fake": fake(ptc, "garbage-lines")})
    r, out = run_json(ptc, cfg, '''
        import json
        import hermes_tools as h
        print(json.dumps([h.fake_echo(text="one"), h.fake_add(a=1, b=2),
                          h.fake_echo(text="two")]))
    ''')
    assert out == [{"text": "one"}, {"sum": 3}, {"text": "two"}], r


def test_fake_answer_that_is_not_json_fails_that_call(ptc):
    cfg = config(ptc, {"fake": fake(ptc, "normal")})
    r, out = run_json(ptc, cfg, '''
        import json, time
        import hermes_tools as h
        t0 = time.monotonic()
        nul, big = h.fake_not_json(kind="nul"), h.fake_not_json(kind="bigint")
        print(json.dumps({"nul": nul, "big": big, "fast": time.monotonic() - t0 < 10,
                          "after": h.fake_echo(text="still here")}))
    ''', timeout=60)
    for k in ("nul", "big"):
        assert set(out[k]) == {"error"}, r
        assert out[k]["error"].startswith(
            "mcp server 'fake': the answer to tools/call 'not_json' is not JSON ("), r
    assert "too big integer" in out["big"]["error"], r
    assert out["fast"] and out["after"] == {"text": "still here"}, r


def test_fake_paged_tools(ptc):
    cfg = config(ptc, {"fake": fake(ptc, "paged-tools")})
    r = ptc.run_ptc(["stubs", "--config", cfg])
    expect(r, 0)
    stubs = r.stdout.decode()
    for t in FAKE_TOOLS:
        assert f"\ndef fake_{t}(" in stubs, f"fake_{t} (a later page) not defined: {r!r}"
    r, out = run_json(ptc, cfg, '''
        import json
        import hermes_tools as h
        print(json.dumps([h.fake_pids()["pid"] > 0, h.fake_echo(text="paged")]))
    ''')
    assert out == [True, {"text": "paged"}], r


def test_fake_server_requests_answered(ptc):
    cfg = config(ptc, {"fake": fake(ptc, "server-ping")})
    r, out = run_json(ptc, cfg, '''
        import json
        from hermes_tools import fake_ping_client, fake_echo
        print(json.dumps({"ping": fake_ping_client(), "echo": fake_echo(text="ok")}))
    ''', timeout=40)
    res = out["ping"]
    assert res["ping"].get("result") == {}, f"ping not answered with an empty result: {r!r}"
    for k in ("roots", "sampling"):
        assert "timeout" not in res[k], f"{k} request never answered: {r!r}"
        assert "error" in res[k] or "result" in res[k], r
    assert res["sampling"].get("error", {}).get("code") == -32601, r
    assert out["echo"] == {"text": "ok"}, r
    # No stopwatch: an unanswered request shows as "timeout" (the fake waits 5 s).


def test_fake_stderr_spam(ptc):
    cfg = config(ptc, {"spam": fake(ptc, "stderr-spam")})
    r, out = run_json(ptc, cfg, '''
        import json
        from hermes_tools import spam_echo
        print(json.dumps(spam_echo(text="through")))
    ''', timeout=40)
    assert out == {"text": "through"}, r
    assert "[spam] spam spam" in r.stderr, r
    # Drained (the server did not block on a full pipe) but passed through bounded:
    # far less than the 5 MB the server wrote.
    assert len(r.stderr) < 2 * 1024 * 1024, f"stderr not bounded: {len(r.stderr)} bytes"
    # Besides the fake's invalid tools/list entries, left out with a warning.
    assert all(l.startswith("[spam] ")
               or l == "ptc: warning: mcp server 'spam': skipped 6 invalid tools"
               for l in r.stderr.splitlines()), r


def test_fake_cwd_and_env(ptc):
    srvdir = ptc.tmp / "srvdir"
    srvdir.mkdir()
    mark = marker()
    # A relative log file path: it lands in the configured cwd.
    spec = {"command": PY, "args": [fake_path(), "normal", f"{mark}.log"],
            "cwd": str(srvdir), "env": {"FOO": "bar"}}
    cfg = config(ptc, {"fake": spec})
    r, out = run_json(ptc, cfg, '''
        import json
        from hermes_tools import fake_echo
        print(json.dumps(fake_echo(text="cwd")))
    ''')
    assert out == {"text": "cwd"}, r
    log = srvdir / f"{mark}.log"
    assert log.is_file(), f"the server did not run in its configured cwd: {r!r}"
    lines = [json.loads(l) for l in log.read_text(encoding="utf-8").splitlines() if l.strip()]
    methods = [m.get("method") for m in lines]
    assert methods[:3] == ["initialize", "notifications/initialized", "tools/list"], methods
    assert "tools/call" in methods, methods
    call = next(m for m in lines if m.get("method") == "tools/call")
    assert call["params"]["name"] == "echo", call
    assert call["params"]["arguments"] == {"text": "cwd"}, call
    assert not (ptc.workdir / f"{mark}.log").exists()


# --- servers that cannot start -------------------------------------------------------------


def test_exit_at_start_is_left_out(ptc):
    cfg = config(ptc, {"good": fake(ptc, "normal"), "dead": fake(ptc, "exit-at-start")})
    r, out = run_json(ptc, cfg, '''
        import json
        import hermes_tools as h
        print(json.dumps({"dead": [n for n in dir(h) if n.startswith("dead_")],
                          "good": h.good_echo(text="fine")}))
    ''')
    assert out == {"dead": [], "good": {"text": "fine"}}, r
    assert "warning" in r.stderr.lower() and "'dead'" in r.stderr, r
    # Of 'good', only that its invalid tools/list entries are left out.
    assert all("'good'" not in l or l.endswith("'good': skipped 6 invalid tools")
               for l in r.stderr.splitlines()), r


def test_missing_command_is_left_out(ptc):
    cfg = config(ptc, {"ghost": {"command": "/nonexistent/ptc-no-such-mcp-server",
                                 "args": ["x"]},
                       "ghost2": {"command": "ptc-no-such-mcp-server-on-path"}})
    r = ptc.run_file('print("ran")', "--config", cfg)
    expect(r, 0, "success")
    assert r.output == "ran\n", r
    lines = [l for l in r.stderr.splitlines() if "ghost" in l]
    assert any("'ghost'" in l and "warning" in l.lower() for l in lines), r
    assert any("'ghost2'" in l and "warning" in l.lower() for l in lines), r


def test_bad_protocol_version_is_left_out(ptc):
    cfg = config(ptc, {"old": fake(ptc, "bad-version")})
    r, out = run_json(ptc, cfg, '''
        import json
        import hermes_tools as h
        print(json.dumps([n for n in dir(h) if n.startswith("old_")]))
    ''')
    assert out == [], r
    assert "warning" in r.stderr.lower() and "'old'" in r.stderr, r


def test_tools_list_that_is_not_json_is_left_out_at_once(ptc):
    # Valid JSON to Python, not to jansson (a \u0000): the start fails as soon as the line
    # comes, naming the parser's reason, instead of waiting out the 60 s start timeout.
    cfg = config(ptc, {"nul": fake(ptc, "not-json-list"), "good": fake(ptc, "normal")})
    r, out = run_json(ptc, cfg, '''
        import json
        import hermes_tools as h
        print(json.dumps({"nul": [n for n in dir(h) if n.startswith("nul_")],
                          "good": h.good_echo(text="fine")}))
    ''', timeout=30)
    assert out == {"nul": [], "good": {"text": "fine"}}, r
    assert r.elapsed < 25, r  # hang guard: waiting out the 60 s start timeout fails it
    assert "mcp server 'nul': answer to tools/list is not JSON (" in r.stderr, r
    assert "its tools are left out" in r.stderr, r


# --- no process left -----------------------------------------------------------------------


def test_fake_normal_stopped_after_run(ptc):
    mark = marker()
    cfg = config(ptc, {"fake": fake(ptc, "normal", mark)})
    a, b = split(mark)
    r, out = run_json(ptc, cfg, SCAN + f'''
import json
from hermes_tools import fake_pids
p = fake_pids()
print(json.dumps({{"pid": p["pid"], "found": scan({a!r}, {b!r})}}))
''', *SEE_HOST)
    assert out["pid"] in out["found"], r
    assert_gone([out["pid"]], "fake server")
    assert_no_marker_procs(mark, "fake server")


def test_fake_fork_child_stopped_after_run(ptc):
    mark = marker()
    cfg = config(ptc, {"fake": fake(ptc, "fork-child", mark)})
    r, out = run_json(ptc, cfg, '''
        import json, os
        from hermes_tools import fake_pids
        p = fake_pids()
        p["alive"] = [os.path.exists("/proc/%d" % p["pid"]), os.path.exists("/proc/%d" % p["child"])]
        print(json.dumps(p))
    ''', *SEE_HOST)
    assert out["child"] > 0 and out["alive"] == [True, True], r
    assert_gone([out["pid"], out["child"]], "fork-child fake and its child")
    assert_no_marker_procs(mark, "fork-child fake")

    # ptc stubs starts the servers too (to list their tools), without a script whose
    # process-tree cleanup could hide a leak: the child must be gone as well.
    mark = marker()
    cfg = config(ptc, {"fake": fake(ptc, "fork-child", mark)}, name="stubs.yaml")
    r = ptc.run_ptc(["stubs", "--config", cfg])
    expect(r, 0)
    assert "\ndef fake_pids(" in r.stdout.decode(), r
    assert_no_marker_procs(mark, "fork-child fake (and its child) after ptc stubs")


def test_fake_ignoring_sigterm_is_killed(ptc):
    mark = marker()
    cfg = config(ptc, {"fake": fake(ptc, "ignore-term", mark)})
    r, out = run_json(ptc, cfg, '''
        import json
        from hermes_tools import fake_pids
        print(json.dumps(fake_pids()))
    ''', timeout=90)
    assert out["pid"] > 0, r
    assert r.elapsed < 50, r  # hang guard: the fake ignores SIGTERM and sleeps 60 s
    assert_gone([out["pid"]], "fake ignoring SIGTERM")
    assert_no_marker_procs(mark, "fake ignoring SIGTERM")
