# SPDX-License-Identifier: MIT
"""The policy's asks answered by an MCP client through elicitation (docs/policy.md), with the
official TypeScript SDK as the client (tests/mcp/elicit.mjs): accept for the session over a
20-call loop, decline, a client that never answers, a client without the capability, and a
tool called directly (--expose-tools)."""

import json
import textwrap

from test_mcp_sdk import Sdk, call_result  # noqa: F401  (the SDK runner)

LOOP = textwrap.dedent("""
    from hermes_tools import terminal
    print([terminal(f"rm -r d{i}")["exit_code"] for i in range(20)])
    """)


def sdk_run(ptc, spec_args, calls, timeout=60, **params):
    sdk = Sdk(ptc)
    return sdk.run("elicit", sdk.spec(spec_args, calls=calls, **params), timeout=timeout)


def execute(code, **extra):
    return {"name": "execute_code", "arguments": {"code": code, **extra}}


def structured(call):
    _, s = call_result(call, "")
    return s


def test_accept_for_the_session_covers_a_loop(ptc):
    for i in range(20):
        (ptc.workdir / f"d{i}").mkdir()
    data = sdk_run(ptc, [], [execute(LOOP)],
                   answers=[{"action": "accept", "decision": "allow_session"}])
    assert len(data["asked"]) == 1, data["asked"]
    p = data["asked"][0]
    assert "terminal: rm -r d0" in p["message"] and "recursive delete" in p["message"]
    assert '"command":"rm -r d0"' in p["message"]
    schema = p["requestedSchema"]
    assert schema["properties"]["decision"]["enum"] == ["allow_once", "allow_session", "deny"]
    assert schema["required"] == ["decision"]
    s = structured(data["calls"][0])
    assert s["status"] == "success" and s["output"].strip() == str([0] * 20), s
    assert not any((ptc.workdir / f"d{i}").exists() for i in range(20))


def test_decline_denies_and_the_script_goes_on(ptc):
    (ptc.workdir / "keep").mkdir()
    code = textwrap.dedent("""
        from hermes_tools import terminal
        r = terminal("rm -rf keep")
        print(r["status"], "|", r["error"])
        print(terminal("echo still here")["output"])
        """)
    data = sdk_run(ptc, [], [execute(code)], answers=[{"action": "decline"}])
    s = structured(data["calls"][0])
    assert s["status"] == "success", s
    assert s["output"].startswith("denied | Command denied: recursive delete (rm -rf keep). "
                                  "The user denied it"), s
    assert "still here" in s["output"]
    assert (ptc.workdir / "keep").exists()


def test_allow_once_asks_again(ptc):
    (ptc.workdir / "a").mkdir()
    (ptc.workdir / "b").mkdir()
    code = 'from hermes_tools import terminal\nprint(terminal("rm -r a")["exit_code"], ' \
           'terminal("rm -r b")["exit_code"])'
    data = sdk_run(ptc, [], [execute(code)],
                   answers=[{"action": "accept", "decision": "allow_once"}])
    assert len(data["asked"]) == 2
    assert structured(data["calls"][0])["output"].strip() == "0 0"


def test_a_client_that_never_answers(ptc):
    cfg = ptc.write_config("policy:\n  approval_timeout: 2\n")
    code = textwrap.dedent("""
        import time
        from hermes_tools import terminal
        r = terminal("chmod 777 nothing")
        time.sleep(1)
        print(r["status"], "|", r["error"])
        """)
    data = sdk_run(ptc, ["--config", cfg], [execute(code, timeout=2)], answers=["never"])
    assert data["withdrawn"] == [0], data
    s = structured(data["calls"][0])
    # 2 s unanswered then 1 s of script: past the 2 s timeout, and still a success.
    assert s["status"] == "success", s
    assert "nobody answered within 2 s (policy.approval_timeout)" in s["output"]
    assert data["calls"][0]["ms"] >= 2900


def test_a_client_without_the_capability_gets_headless(ptc):
    (ptc.workdir / "x").mkdir()
    code = 'from hermes_tools import terminal\nprint(terminal("rm -r x")["exit_code"])'
    data = sdk_run(ptc, [], [execute(code)], no_capability=True)
    assert structured(data["calls"][0])["output"].strip() == "0"
    assert not (ptc.workdir / "x").exists()
    (ptc.workdir / "y").mkdir()
    cfg = ptc.write_config("policy:\n  headless: deny\n")
    code = 'from hermes_tools import terminal\nprint(terminal("rm -r y")["error"])'
    data = sdk_run(ptc, ["--config", cfg], [execute(code)], no_capability=True)
    assert "policy.headless is deny" in structured(data["calls"][0])["output"]
    assert (ptc.workdir / "y").exists()


def test_an_exposed_tool_asks_too(ptc):
    (ptc.workdir / "z").mkdir()
    data = sdk_run(ptc, ["--expose-tools"],
                   [{"name": "terminal", "arguments": {"command": "rm -r z"}}],
                   answers=[{"action": "accept", "decision": "deny"}])
    assert len(data["asked"]) == 1
    r, s = call_result(data["calls"][0], "")
    assert s["status"] == "denied" and r["isError"] is True, s
    assert (ptc.workdir / "z").exists()
