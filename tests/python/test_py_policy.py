# SPDX-License-Identifier: MIT
"""The policy from Python (docs/policy.md, docs/python.md): an approver function answers the
asks of a script's calls while the script waits; check_policy() says what would happen."""

import threading

from pyhost import make_engine, ptc, scratch, script  # noqa: F401  (fixtures)

LOOP = script("""
    from hermes_tools import terminal
    print([terminal(f"rm -r d{i}")["exit_code"] for i in range(20)])
    """)


def test_session_answer_covers_a_loop(make_engine, scratch):
    for i in range(20):
        (scratch / f"d{i}").mkdir()
    seen = []
    lock = threading.Lock()

    def approve(req):
        with lock:
            seen.append((req.tool, req.arguments, req.verdict, req.remaining))
        return "session"

    e = make_engine(approver=approve, log_calls=True)
    r = e.execute(LOOP)
    assert r.status == "success" and r.output.strip() == str([0] * 20), r
    assert len(seen) == 1
    tool, args, verdict, remaining = seen[0]
    assert tool == "terminal" and args["command"] == "rm -r d0"
    assert verdict["decision"] == "ask" and verdict["what"] == "recursive delete"
    assert verdict["subject"] == "rm -r d0"
    assert 0 < remaining <= 120
    assert not any((scratch / f"d{i}").exists() for i in range(20))


def test_deny_and_failures_deny(make_engine, scratch):
    (scratch / "a").mkdir()
    answers = iter([False, "deny", "maybe"])

    def approve(req):
        a = next(answers)
        if a == "maybe":
            raise RuntimeError("no idea")
        return a

    e = make_engine(approver=approve)
    r = e.execute(script("""
        from hermes_tools import terminal
        for _ in range(3):
            print(terminal("rm -r a")["status"])
        """))
    assert r.status == "success" and r.output.split() == ["denied"] * 3, r
    assert (scratch / "a").exists()


def test_none_lets_headless_decide(make_engine, scratch):
    (scratch / "b").mkdir()
    e = make_engine(approver=lambda req: None)
    e.set("policy.headless", "deny")
    r = e.execute('from hermes_tools import terminal\nprint(terminal("rm -r b")["error"])')
    assert "policy.headless is deny" in r.output, r
    assert (scratch / "b").exists()


def test_check_policy(make_engine):
    e = make_engine()
    v = e.check_policy("terminal", command="rm -rf /")
    assert v["decision"] == "blocked" and v["origin"] == "hardline", v
    v = e.check_policy("terminal", command="git push --force")
    assert v["decision"] == "ask" and v["headless"] == "allow", v
    assert e.check_policy("read_file", path="x")["decision"] == "allow"


def test_set_approver_after_start_is_a_state_error(make_engine):
    e = make_engine()
    e.start()
    try:
        e.set_approver(lambda req: "once")
    except ptc.StateError:
        pass
    else:
        raise AssertionError("set_approver after start was accepted")


def test_concurrent_asks_are_put_one_at_a_time(make_engine, scratch):
    for i in range(8):
        (scratch / f"c{i}").mkdir()
    lock = threading.Lock()
    state = {"active": 0, "peak": 0, "asked": 0}

    def approve(req):
        with lock:
            state["active"] += 1
            state["asked"] += 1
            state["peak"] = max(state["peak"], state["active"])
        try:
            import time
            time.sleep(0.2)
            return "session"
        finally:
            with lock:
                state["active"] -= 1

    e = make_engine(approver=approve, log_calls=True)
    r = e.execute(script("""
        import threading
        from hermes_tools import terminal
        codes = [None] * 8
        def one(i):
            codes[i] = terminal(f"rm -r c{i}")["exit_code"]
        ts = [threading.Thread(target=one, args=(i,)) for i in range(8)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        print(codes)
        """))
    assert r.status == "success" and r.output.strip() == str([0] * 8), r
    # One question, the others waited their turn and found the session's answer.
    assert state["asked"] == 1 and state["peak"] == 1, state
    by = sorted(c.policy["answered_by"] for c in r.tool_calls)
    assert by == ["callback"] + ["session"] * 7, by


def test_a_session_answer_does_not_cover_a_new_kind_of_ask(make_engine, scratch):
    for d in ("d0", "d1"):
        (scratch / d).mkdir()
    asked = []

    def approve(req):
        asked.append(req.verdict)
        return "session"

    e = make_engine(approver=approve)
    r = e.execute(script("""
        from hermes_tools import terminal
        print(terminal("rm -r d0")["exit_code"])
        print(terminal("rm -r d1 && chmod 777 nothing-here")["output"] != "")
        """))
    assert r.status == "success", r
    # The second call asks again: its chmod is not what was answered, and the prompt
    # names both things.
    assert len(asked) == 2, asked
    whats = [a["what"] for a in asked[1]["asks"]]
    assert whats == ["recursive delete", "world/other-writable permissions"], asked[1]
