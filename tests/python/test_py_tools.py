# SPDX-License-Identifier: MIT
"""Python callables as host tools, called by real scripts: values both ways, errors,
8 concurrent calls (overlapping, the GIL free while ptc waits), a callback that blocks
past the timeout, async def tools and tools answering a Call later."""

import asyncio
import json
import threading
import time

from pyhost import HARD, Intervals, make_engine, ptc, run_in_thread, scratch, script  # noqa: F401


def test_script_calls_a_python_tool(make_engine):
    e = make_engine(tools="")
    seen = []

    @e.tool
    def lookup(key: str, default: str = "none") -> dict:
        """Look a key up."""
        seen.append((key, default, threading.current_thread() is threading.main_thread()))
        return {"key": key, "value": {"alpha": "α", "n": [1, 2.5, None, True]}.get(key, default)}

    r = e.execute(script("""
        from hermes_tools import lookup
        a = lookup("alpha")
        b = lookup(key="n")
        c = lookup("zzz", default="fallback")
        print(a["value"], b["value"], c["value"])
    """))
    assert r.ok, r
    assert r.output == "α [1, 2.5, None, True] fallback\n"
    assert r.tool_calls_made == 3
    assert [s[:2] for s in seen] == [("alpha", "none"), ("n", "none"), ("zzz", "fallback")]
    assert not any(s[2] for s in seen), "callbacks must run on ptc's worker threads"


def test_a_raising_callback_is_a_tool_error_the_script_sees(make_engine):
    e = make_engine(tools="")

    @e.tool
    def explode(what: str) -> dict:
        "Raises."
        raise ValueError(f"no such thing: {what}")

    @e.tool
    def unencodable() -> object:
        "Returns something JSON cannot hold."
        return object()

    r = e.execute(script("""
        from hermes_tools import explode, unencodable
        r = explode("x")
        print(r["error"])
        print(unencodable()["error"])
        print("still running")
    """))
    assert r.ok, r
    lines = r.output.splitlines()
    assert lines[0] == "ValueError: no such thing: x", r.output
    assert lines[1].startswith("TypeError: ") and "JSON" in lines[1], r.output
    assert lines[2] == "still running"


def test_unknown_arguments_fail_the_call_not_the_host(make_engine):
    e = make_engine(tools="")

    @e.tool(schema={"type": "object", "properties": {"a": {"type": "integer"},
                                                     "b": {"type": "integer"}}})
    def only_a(a: int) -> int:
        "Takes a."
        return a

    r = e.execute("from hermes_tools import only_a\nprint(only_a(a=1, b=2)['error'])")
    assert r.ok and r.output.startswith("TypeError: "), r


def test_eight_concurrent_calls_overlap_and_the_gil_is_free(make_engine):
    e = make_engine(tools="", timeout=60)
    iv = Intervals()
    ticks = []
    stop = threading.Event()
    # No stopwatch: the eight calls meet at a barrier (serialized calls never would), then
    # each waits for the host's ticker to tick on, which it can only while the GIL is free.
    # Both waits are bounded (20 s, hang guards).
    meet = threading.Barrier(8, timeout=20)
    ticked = []

    @e.tool
    def slow(i: int) -> dict:
        "Waits, like a tool waiting on I/O."
        t0 = iv.enter()
        try:
            meet.wait()  # releases the GIL
            n, end = len(ticks), time.monotonic() + 20
            while len(ticks) < n + 3 and time.monotonic() < end:
                time.sleep(0.01)
            ticked.append(len(ticks) >= n + 3)
            return {"i": i, "thread": threading.get_ident()}
        finally:
            iv.leave(t0)

    def ticker():
        # Runs on the host while the main thread waits inside ptc_execution_run().
        while not stop.wait(0.01):
            ticks.append(time.monotonic())

    t = threading.Thread(target=ticker, daemon=True)
    t.start()
    try:
        r = e.execute(script("""
            import threading
            from hermes_tools import slow
            out = [None] * 8
            def work(i):
                out[i] = slow(i)
            ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
            for t in ts: t.start()
            for t in ts: t.join()
            print(sorted(o["i"] for o in out), len({o["thread"] for o in out}))
        """))
    finally:
        stop.set()
        t.join(HARD)
    assert r.ok, r
    assert r.output.startswith("[0, 1, 2, 3, 4, 5, 6, 7] "), r.output
    assert r.tool_calls_made == 8
    assert iv.peak == 8, f"only {iv.peak} calls ran at once"
    starts = [s for s, _ in iv.spans]
    ends = [e_ for _, e_ in iv.spans]
    assert max(starts) < min(ends), "the 8 calls did not overlap"
    assert int(r.output.split()[-1]) == 8, "each call should run on its own worker thread"
    # The host thread kept running while the main thread waited in C: the GIL was free.
    assert ticked == [True] * 8, ticked


def test_eight_concurrent_cpu_bound_calls_are_thread_safe(make_engine):
    e = make_engine(tools="")
    lock = threading.Lock()
    total = {"n": 0}

    @e.tool
    def crunch(n: int) -> int:
        "Holds the GIL for a while."
        s = 0
        for k in range(n):
            s += k * k
        with lock:
            total["n"] += 1
        return s

    r = e.execute(script("""
        import threading
        from hermes_tools import crunch
        res = {}
        def work(i):
            res[i] = crunch(200000 + i)
        ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in ts: t.start()
        for t in ts: t.join()
        print(all(res[i] == sum(k * k for k in range(200000 + i)) for i in range(8)))
    """))
    assert r.ok and r.output == "True\n", r
    assert total["n"] == 8


def test_a_callback_blocking_past_the_timeout(make_engine):
    e = make_engine(tools="")
    answered, returned = [], []
    # The tools block until the test lets them go (30 s at most), not for a fixed time: a
    # timeout that waited for them shows as the hang guard below, on any machine.
    release = threading.Event()

    @e.tool
    def stuck() -> str:
        "Blocks well past the execution's timeout."
        release.wait(30)
        returned.append(True)
        return "late"

    @e.tool(pass_call=True)
    def stuck_async(call):
        "Answers late, from another thread."
        threading.Thread(target=lambda: release.wait(30) and
                         answered.append(call.answer("late")), daemon=True).start()

    for name in ("stuck", "stuck_async"):
        t0 = time.monotonic()
        r = e.execute(f"from hermes_tools import {name}\nprint({name}())", timeout=1)
        elapsed = time.monotonic() - t0
        assert r.status == "timeout", r
        assert r.exit_code is not None
        assert "timed out after 1s" in r.error, r
        assert elapsed < 20, f"{name}: the timeout came {elapsed:.1f}s late"  # hang guard
    e.close()
    assert not returned, "close waited for a blocked tool"
    release.set()
    deadline = time.monotonic() + 20
    while not answered and time.monotonic() < deadline:
        time.sleep(0.05)
    assert answered == [False], "a late answer is dropped, not delivered or raised"


def test_a_cooperative_tool_gives_up_when_the_script_stops(make_engine):
    e = make_engine(tools="")
    info = {}

    @e.tool
    def patient() -> str:
        "Waits until the execution is over."
        call = ptc.current_call()
        info["remaining"] = call.remaining
        end = time.monotonic() + HARD
        while not call.cancelled and call.remaining > 0 and time.monotonic() < end:
            time.sleep(0.02)
        info["gave_up_after"] = time.monotonic()
        return "gave up"

    t0 = time.monotonic()
    r = e.execute("from hermes_tools import patient\npatient()", timeout=2)
    assert r.status == "timeout", r
    assert 0 < info["remaining"] <= 2.0
    deadline = time.monotonic() + 5
    while "gave_up_after" not in info and time.monotonic() < deadline:
        time.sleep(0.02)
    assert info["gave_up_after"] - t0 < 4.0


def test_async_def_tool(make_engine):
    e = make_engine(tools="")
    loops = set()

    @e.tool
    async def fetch(url: str, delay: float = 0.3) -> dict:
        """Pretend to fetch a URL."""
        loops.add(id(asyncio.get_running_loop()))
        await asyncio.sleep(delay)
        if url == "bad":
            raise ConnectionError("refused")
        return {"url": url, "len": len(url)}

    t0 = time.monotonic()
    r = e.execute(script("""
        import threading
        from hermes_tools import fetch
        out = {}
        def work(u):
            out[u] = fetch(u)
        ts = [threading.Thread(target=work, args=(u,)) for u in ("a", "bb", "ccc", "bad")]
        for t in ts: t.start()
        for t in ts: t.join()
        print(out["a"]["len"], out["bb"]["len"], out["ccc"]["len"], out["bad"]["error"])
    """))
    assert r.ok, r
    assert r.output == "1 2 3 ConnectionError: refused\n"
    assert len(loops) == 1
    assert time.monotonic() - t0 < 15.0  # hang guard


def test_a_call_answered_later_from_another_thread(make_engine):
    e = make_engine(tools="")
    results = []

    @e.tool(pass_call=True, schema={"type": "object", "properties": {"x": {"type": "integer"}},
                                    "required": ["x"]},
            description="Squares x, later.")
    def square(call):
        assert call.name == "square" and not call.answered
        assert call.remaining is not None and call.remaining > 0

        def later():
            results.append(call.answer({"sq": call.arguments["x"] ** 2}))

        threading.Timer(0.2, later).start()

    @e.tool(pass_call=True)
    def refuse(call):
        "Fails the call itself."
        call.fail("not today")

    r = e.execute(script("""
        from hermes_tools import square, refuse
        print(square(7)["sq"], refuse()["error"])
    """))
    assert r.ok and r.output == "49 not today\n", r
    assert results == [True]


def test_a_call_left_open_is_answered_at_close(make_engine):
    e = make_engine(tools="")
    calls = []

    @e.tool(pass_call=True)
    def never(call):
        "Never answers."
        calls.append(call)

    r = e.execute("from hermes_tools import never\nnever()", timeout=1)
    assert r.status == "timeout"
    assert len(calls) == 1 and not calls[0].answered
    t0 = time.monotonic()
    e.close()
    assert time.monotonic() - t0 < 15.0  # hang guard
    assert calls[0].answered
    assert calls[0].answer("too late") is False  # closed with the engine: dropped


def test_async_tools_on_the_hosts_own_loop(make_engine):
    loop = asyncio.new_event_loop()
    t = threading.Thread(target=loop.run_forever, daemon=True)
    t.start()
    try:
        e = make_engine(tools="", loop=loop)
        ran_on = []

        @e.tool
        async def where() -> str:
            "Which loop am I on?"
            ran_on.append(asyncio.get_running_loop())
            await asyncio.sleep(0.05)
            return "host loop"

        r = e.execute("from hermes_tools import where\nprint(where())")
        assert r.ok and r.output == "host loop\n", r
        assert ran_on == [loop]
        e.close()
        assert loop.is_running(), "the host's loop is the host's to stop"
    finally:
        loop.call_soon_threadsafe(loop.stop)
        t.join(HARD)
        loop.close()
