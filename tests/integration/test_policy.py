# SPDX-License-Identifier: MIT
"""Policy and approvals through real runs (docs/policy.md): refusals as tool results the
script reads and goes on from, the decisions in --log, policy.headless, the config's
errors, `ptc tool`, and the terminal prompt driven through a real pty (an answer "for this
session" covering a 20-call loop, a denial, no answer at all while the script's own
timeout stands still)."""

import json
import textwrap
import time

import pytest

from conftest import expect, expect_usage_error
from fake_agent import FAKE_AGENT_PRELUDE
import pty_util

SCRIPT = """
    import json
    from hermes_tools import terminal, write_file
    out = []
    out.append(terminal("rm -rf /"))
    out.append(terminal("rm -rf build"))
    out.append(terminal("chmod 777 x.sh"))
    out.append(write_file("key.pem", "secret"))
    out.append(write_file("ok.txt", "fine"))
    print(json.dumps(out))
"""


def test_refusals_are_results_and_the_script_goes_on(ptc):
    cfg = ptc.write_config("""
        policy:
          headless: deny
          rules:
            - {tool: terminal, match: "rm -r* build", action: allow}
            - tool: write_file
              match: "*.pem"
              action: deny
              message: "Keys are not written by agents."
        """)
    (ptc.workdir / "build").mkdir()
    r = ptc.run_file(SCRIPT, "--config", str(cfg), "--log", input=b"")
    expect(r, 0, "success")
    blocked, allowed, asked, denied, written = r.output_json()
    assert blocked["status"] == "blocked" and blocked["exit_code"] == -1
    assert blocked["output"] == ""
    assert blocked["error"].startswith("BLOCKED (hardline): recursive delete of root filesystem")
    assert allowed["exit_code"] == 0 and "status" not in allowed
    assert not (ptc.workdir / "build").exists()
    assert asked["status"] == "denied"
    assert "world/other-writable permissions (chmod 777 x.sh)" in asked["error"]
    assert "policy.headless is deny" in asked["error"]
    assert denied == {"error": "Denied by policy: Keys are not written by agents.",
                      "status": "denied"}
    assert not (ptc.workdir / "key.pem").exists()
    assert written["bytes_written"] == 4

    log = r.data["tool_calls"]
    assert [c.get("policy", {}).get("decision") for c in log] == \
        ["blocked", "allow", "ask", "deny", None]
    assert log[0]["policy"]["origin"] == "hardline"
    assert log[1]["policy"] == {"decision": "allow", "origin": "rule", "what": "policy.rules[0]",
                                "subject": "rm -rf build", "rule": 0, "line": 5,
                                "answered_by": "policy", "allowed": True}
    assert log[2]["policy"]["answered_by"] == "headless"
    assert log[2]["policy"]["allowed"] is False
    assert log[3]["policy"]["message"] == "Keys are not written by agents."


def test_headless_allow_is_the_default(ptc):
    (ptc.workdir / "d").mkdir()
    r = ptc.run("""
        from hermes_tools import terminal
        print(terminal("rm -r d"))
        """, "--log", input=b"")
    expect(r, 0, "success")
    assert "'exit_code': 0" in r.output
    # Not silent: the result says nobody was asked, and why (docs/policy.md).
    assert "not asked (recursive delete): policy.headless is allow, and no person could be " \
        "asked" in r.output, r.output
    assert not (ptc.workdir / "d").exists()
    p = r.data["tool_calls"][0]["policy"]
    assert p["decision"] == "ask" and p["answered_by"] == "headless" and p["allowed"]


def test_ptc_tool_applies_the_policy(ptc):
    r = ptc.run_ptc(["tool", "terminal", '{"command": "sudo -S true"}'], input=b"")
    expect(r, 0)
    assert r.data["status"] == "blocked" and "sudo -S" in r.data["error"]
    cfg = ptc.write_config("policy:\n  rules:\n    - {tool: read_file, action: deny}\n")
    r = ptc.run_ptc(["tool", "--config", str(cfg), "read_file", '{"path": "x"}'], input=b"")
    expect(r, 0)
    assert r.data["status"] == "denied"


@pytest.mark.parametrize("text,words", [
    ("policy:\n  headless: ask\n", ["policy.headless", "allow, deny"]),
    ("policy:\n  dangerous: maybe\n", ["policy.dangerous", "allow, ask, deny"]),
    ("policy:\n  approval_timeout: 0\n", ["policy.approval_timeout"]),
    ("policy:\n  rules: {tool: x}\n", ["policy.rules", "sequence"]),
    ("policy:\n  rules:\n    - {tool: terminal}\n", ["policy.rules[0]", "action"]),
    ("policy:\n  rules:\n    - {action: deny}\n", ["policy.rules[0]", "tool"]),
    ("policy:\n  rules:\n    - {tool: terminal, action: nope}\n", ["policy.rules[0].action"]),
    ("policy:\n  rules:\n    - {tool: 'bad name', action: deny}\n", ["policy.rules[0].tool"]),
    ("policy:\n  rules:\n    - {tool: web_search, match: x, action: deny}\n",
     ["web_search takes no match"]),
    ("policy:\n  rules:\n    - {tool: 'git*', match: x, action: deny}\n", ["not a glob"]),
    ("policy:\n  rules:\n    - {tool: [terminal, write_file], match: x, action: deny}\n",
     ["match different things"]),
    ("policy:\n  rules:\n    - {tool: terminal, match: 'a | b', action: deny}\n",
     ["not one simple command"]),
    ("policy:\n  rules:\n    - {tool: terminal, match: 'rm $HOME', action: deny}\n",
     ["would expand"]),
    ("policy:\n  rules:\n    - {tool: terminal, match: 'echo \"x', action: deny}\n",
     ["does not parse"]),
    ("policy:\n  rules:\n    - {tool: terminal, match: [], action: deny}\n", ["empty list"]),
    ("policy:\n  rules:\n    - {tool: web_extract, match: bücher.de, action: deny}\n",
     ["policy.rules[0].match", "invalid host pattern 'bücher.de'", "xn-- form"]),
    ("policy:\n  rules:\n    - {tool: terminal, action: deny, colour: red}\n",
     ["policy.rules[0]", "colour"]),
])
def test_config_errors(ptc, text, words):
    cfg = ptc.write_config(text)
    r = ptc.run_ptc(["run", "--config", str(cfg), "-c", "print(1)"])
    expect_usage_error(r, *words)


# ---- the terminal prompt, through a real pty -------------------------------------------


class Pty(pty_util.Pty):
    """This module's prompts, with the waits it has always had."""

    EXPECT_TIMEOUT = 20  # hang guards
    FINISH_TIMEOUT = 30


def test_prompt_answered_for_the_session_covers_a_loop(ptc):
    for i in range(20):
        (ptc.workdir / f"d{i}").mkdir()
    script = ptc.path("loop.py")
    script.write_text(textwrap.dedent("""
        from hermes_tools import terminal
        codes = [terminal(f"rm -r d{i}")["exit_code"] for i in range(20)]
        print(codes)
        """))
    t = Pty(ptc, ["run", "--log", str(script)])
    prompt = t.expect("Allow? [o]nce, for this [s]ession, [d]eny")
    assert "terminal: rm -r d0" in prompt and "recursive delete" in prompt
    assert '"command":"rm -r d0"' in prompt
    t.send("s\n")
    rc, res, err = t.finish()
    assert rc == 0 and res["status"] == "success", (res, err)
    assert res["output"].strip() == str([0] * 20)
    assert t.seen.count(b"Allow?") == 0, t.seen  # asked once
    log = res["tool_calls"]
    assert log[0]["policy"]["answered_by"] == "callback"
    assert all(c["policy"]["answered_by"] == "session" for c in log[1:])
    assert not any((ptc.workdir / f"d{i}").exists() for i in range(20))


def test_prompt_denied_and_allowed_once(ptc):
    (ptc.workdir / "a").mkdir()
    (ptc.workdir / "b").mkdir()
    script = ptc.path("two.py")
    script.write_text(textwrap.dedent("""
        from hermes_tools import terminal
        print(terminal("rm -r a")["status"], terminal("rm -r b").get("approval"))
        """))
    t = Pty(ptc, ["run", str(script)])
    t.expect("Allow?")
    t.send("d\n")
    t.expect("Allow?")  # denied once: the next call asks again
    t.send("o\n")
    rc, res, err = t.finish()
    assert rc == 0, (res, err)
    assert res["output"].strip() == "denied approved (recursive delete) by callback"
    assert (ptc.workdir / "a").exists() and not (ptc.workdir / "b").exists()


def test_unanswered_prompt_times_out_without_eating_the_script_timeout(ptc):
    cfg = ptc.write_config("policy:\n  approval_timeout: 3\n")
    script = ptc.path("wait.py")
    script.write_text(textwrap.dedent("""
        import time
        from hermes_tools import terminal
        r = terminal("chmod 777 nothing")
        time.sleep(1)
        print(r["status"], "|", r["error"])
        """))
    t = Pty(ptc, ["run", "--config", str(cfg), "--timeout", "2.5", str(script)])
    t.expect("Allow?")
    start = time.monotonic()
    rc, res, err = t.finish()
    waited = time.monotonic() - start
    # 3 s unanswered, then 1 s of script: past the 2.5 s timeout, yet a success.
    assert rc == 0 and res["status"] == "success", (res, err)
    assert "denied |" in res["output"]
    assert "nobody answered within 3 s (policy.approval_timeout)" in res["output"]
    assert waited >= 3.5


# ---- a remote backend: the agent judges with the host's policy, the host answers asks ----


def remote_env(ptc):
    """The agent on the target's PATH (the build dir first), as tests/integration/test_remote.py."""
    return {"PATH": f"{ptc.bin.parent}:{ptc.env['PATH']}"}


def test_remote_target_applies_the_hosts_rules(ptc):
    cfg = ptc.write_config("""
        policy:
          headless: deny
          rules:
            - {tool: terminal, match: "git push", action: deny, message: "no pushing"}
            - {tool: write_file, match: "*.pem", action: deny}
            - {tool: terminal, match: "rm -r* build", action: allow}
        """)
    (ptc.workdir / "build").mkdir()
    r = ptc.run_file("""
        from hermes_tools import terminal, write_file
        print(terminal("git push origin main")["error"])
        print(write_file("k.pem", "x")["status"])
        print(terminal("rm -rf build")["exit_code"])
        print(terminal("chmod 777 x")["error"])
        print(terminal("rm -rf /")["status"])
        """, "--config", str(cfg), "--backend", "exec:sh", "--log", env=remote_env(ptc),
        input=b"")
    expect(r, 0, "success")
    lines = r.output.splitlines()
    assert lines[0] == "Denied by policy: no pushing", r
    assert lines[1] == "denied"
    assert lines[2] == "0" and not (ptc.workdir / "build").exists()
    assert "policy.headless is deny" in lines[3]
    assert lines[4] == "blocked"
    assert not (ptc.workdir / "k.pem").exists()
    assert r.data["tool_calls"][0]["policy"]["rule"] == 0


def test_remote_ask_is_answered_on_the_hosts_terminal(ptc):
    for i in range(5):
        (ptc.workdir / f"d{i}").mkdir()
    script = ptc.path("remote-loop.py")
    script.write_text(textwrap.dedent("""
        from hermes_tools import terminal
        print([terminal(f"rm -r d{i}")["exit_code"] for i in range(5)])
        """))
    t = Pty(ptc, ["run", "--backend", "exec:sh", str(script)], env=remote_env(ptc))
    prompt = t.expect("Allow? [o]nce, for this [s]ession, [d]eny")
    assert "terminal: rm -r d0" in prompt
    t.send("s\n")
    rc, res, err = t.finish()
    assert rc == 0 and res["status"] == "success", (res, err)
    assert res["output"].strip() == str([0] * 5)
    assert b"Allow?" not in t.seen
    assert not any((ptc.workdir / f"d{i}").exists() for i in range(5))


def test_remote_unanswered_ask_does_not_eat_the_timeout(ptc):
    cfg = ptc.write_config("policy:\n  approval_timeout: 3\n")
    script = ptc.path("remote-wait.py")
    script.write_text(textwrap.dedent("""
        import time
        from hermes_tools import terminal
        r = terminal("chmod 777 nothing")
        time.sleep(1)
        print(r["status"], "|", r["error"])
        """))
    t = Pty(ptc, ["run", "--config", str(cfg), "--backend", "exec:sh", "--timeout", "2.5",
                  str(script)], env=remote_env(ptc))
    t.expect("Allow?")
    rc, res, err = t.finish()
    assert rc == 0 and res["status"] == "success", (res, err)
    assert "nobody answered within 3 s" in res["output"], res


ASKING_AGENT = FAKE_AGENT_PRELUDE + r'''
inp.readline()
out.write(MAGIC)
frame(1, {"protocol": 1, "ptc": "fake", "features": ["session", "policy"]})
assert inp.read(8) == MAGIC
read_frame()                        # hello
t, run = read_frame()               # run: the host's policy rides in its options
verdict = {"decision": "ask", "origin": "dangerous", "what": "recursive delete",
           "subject": "rm -r x"}
frame(11, {"id": 7, "tool": "terminal", "args": '{"command": "rm -r x"}', "verdict": verdict})
t, a = read_frame()
seen = {"options": {k: v for k, v in run["options"].items() if k.startswith("policy.")},
        "approval": a}
ASK_MORE
frame(3, (json.dumps(seen) + "\n").encode())
frame(8, {"status": "success", "exit_code": 0, "tool_calls_made": 0})
inp.read()
'''


def test_an_agents_ask_is_answered_and_a_broken_one_fails_the_stream(ptc):
    cfg = ptc.write_config("""
        policy:
          headless: deny
          approval_timeout: 7
          rules:
            - {tool: terminal, match: "git push", action: ask}
        """)
    agent = ptc.path("asking_agent.py")
    agent.write_text(ASKING_AGENT.replace("ASK_MORE", ""))
    r = ptc.run('print("never runs")', "--backend", f"exec:python3 {agent}", "--config",
                str(cfg), input=b"")
    expect(r, 0, "success")
    seen = json.loads(r.output)
    # Nobody at this host's terminal: the agent is told to let its headless decide.
    assert seen["approval"] == {"id": 7, "answer": "cannot", "by": ""}, seen
    assert seen["options"]["policy.headless"] == "deny"
    assert seen["options"]["policy.approval_timeout"] == "7"
    assert json.loads(seen["options"]["policy.rules"]) == [
        {"tool": ["terminal"], "match": ["git push"], "action": "ask"}]

    # The target is not trusted: an ask about a tool of the host's, or with no verdict,
    # breaks the stream.
    agent.write_text(ASKING_AGENT.replace("ASK_MORE", textwrap.dedent('''
        frame(11, {"id": 8, "tool": "web_search", "args": "{}", "verdict": verdict})
        read_frame()
        ''')))
    r = ptc.run('print("never runs")', "--backend", f"exec:python3 {agent}", "--config",
                str(cfg), input=b"")
    assert r.data["status"] == "error", r
    assert "an ask frame without" in r.data["error"], r


def test_the_prompt_shows_no_control_characters_of_the_script(ptc):
    script = ptc.path("esc.py")
    script.write_text(textwrap.dedent(r"""
        from hermes_tools import terminal
        print(terminal("rm -r '\x1b[2J\x1b[1;1Hfine\x07'")["status"])
        """))
    t = Pty(ptc, ["run", str(script)])
    prompt = t.expect("Allow?")
    t.send("d\n")
    rc, res, err = t.finish()
    assert rc == 0 and res["output"].strip() == "denied", (res, err)
    assert "\x1b" not in prompt and "\x07" not in prompt, repr(prompt)
    assert "rm -r ?[2J?[1;1Hfine?" in prompt, repr(prompt)
