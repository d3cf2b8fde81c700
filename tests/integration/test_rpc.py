# SPDX-License-Identifier: MIT
"""The wire protocol between the script and ptc (docs/contracts.md 7,
docs/seed.md 1.5): scripts talk to the socket themselves and print what they saw."""

import textwrap

from conftest import RPC_CLIENT, expect


def rpc_run(ptc, body, *opts, **kw):
    r = ptc.run(RPC_CLIENT + textwrap.dedent(body), *opts, **kw)
    return r


def test_valid_request_roundtrip(ptc):
    r = rpc_run(ptc, """
        s = rpc_connect()
        s.sendall(req(7, 'terminal', {'command': 'echo raw'}))
        print(_json.dumps(Lines(s).msg()))
        """)
    expect(r, 0, "success")
    d = r.output_json()
    assert d["id"] == 7, d
    assert d["result"]["output"] == "raw" and d["result"]["exit_code"] == 0, d
    assert r.data["tool_calls_made"] == 1


def test_missing_wrong_and_empty_token_unauthorized_connection_stays_open(ptc):
    r = rpc_run(ptc, """
        s = rpc_connect(); L = Lines(s)
        out = []
        s.sendall(req(1, 'terminal', {'command': 'echo a'}, token=None)); out.append(L.msg())
        s.sendall(req(2, 'terminal', {'command': 'echo b'}, token='wrong')); out.append(L.msg())
        s.sendall(req(3, 'terminal', {'command': 'echo c'}, token='')); out.append(L.msg())
        s.sendall(req(4, 'terminal', {'command': 'echo d'}, token=TOKEN[:-1])); out.append(L.msg())
        s.sendall(req(5, 'terminal', {'command': 'echo e'}, token=12345)); out.append(L.msg())
        s.sendall(req(6, 'terminal', {'command': 'echo ok'})); out.append(L.msg())
        print(_json.dumps(out))
        """)
    expect(r, 0, "success")
    out = r.output_json()
    for i, m in enumerate(out[:5]):
        assert m == {"id": i + 1, "error": "Unauthorized RPC request"}, out
    assert out[5]["id"] == 6 and out[5]["result"]["output"] == "ok", out
    assert r.data["tool_calls_made"] == 1, r


def test_invalid_json_error_and_connection_goes_on(ptc):
    r = rpc_run(ptc, """
        s = rpc_connect(); L = Lines(s)
        out = []
        s.sendall(b'{this is not json\\n'); out.append(L.msg())
        s.sendall(b'[1, 2, 3]\\n'); out.append(L.msg())
        s.sendall(b'"just a string"\\n'); out.append(L.msg())
        s.sendall(req(9, 'terminal', {'command': 'echo after'})); out.append(L.msg())
        print(_json.dumps(out))
        """)
    expect(r, 0, "success")
    out = r.output_json()
    for m in out[:3]:
        assert m["error"].startswith("Invalid RPC request"), out
        assert "result" not in m
    assert out[3] == {"id": 9, "result": out[3]["result"]} and \
        out[3]["result"]["output"] == "after", out
    assert r.data["tool_calls_made"] == 1


def test_invalid_utf8_request(ptc):
    r = rpc_run(ptc, r"""
        s = rpc_connect(); L = Lines(s)
        s.sendall(b'{"id": 3, "token": "' + TOKEN.encode() + b'", "tool": "ter\xffminal", '
                  b'"args": {"command": "echo \xfe"}}\n')
        a = L.msg()
        s.sendall(req(4, 'terminal', {'command': 'echo fine'}))
        b = L.msg()
        print(_json.dumps([a, b]))
        """)
    expect(r, 0, "success")
    a, b = r.output_json()
    assert a["error"].startswith("Invalid RPC request: "), a
    assert b["result"]["output"] == "fine", b


def test_blank_lines_ignored(ptc):
    r = rpc_run(ptc, """
        s = rpc_connect(); L = Lines(s)
        s.sendall(b'\\n\\n   \\n' + req(11, 'terminal', {'command': 'echo x'}))
        print(_json.dumps(L.msg()))
        """)
    expect(r, 0, "success")
    assert r.output_json()["id"] == 11, r


def test_unknown_tool(ptc):
    r = rpc_run(ptc, """
        print(_json.dumps(call('foo', {})))
        """, "--tools", "terminal,read_file")
    expect(r, 0, "success")
    assert r.output_json() == {
        "id": 1,
        "error": "Tool 'foo' is not available in execute_code. Available: read_file, terminal"}
    assert r.data["tool_calls_made"] == 0


def test_unknown_tool_long_name_is_cut(ptc):
    # The script chooses the name, up to a frame long: the error repeats 128 bytes of it,
    # whole characters (the 43rd "é" would be cut in half), then "...".
    r = rpc_run(ptc, """
        print(_json.dumps(call('x' + '\u00e9' * 100000, {})))
        """, "--tools", "read_file")
    expect(r, 0, "success")
    assert r.output_json() == {
        "id": 1,
        "error": "Tool 'x" + "\u00e9" * 63 + "...' is not available in execute_code. "
                 "Available: read_file"}, r


def test_disabled_tool_refused_by_server(ptc):
    r = rpc_run(ptc, """
        print(_json.dumps(call('write_file', {'path': 'x.txt', 'content': 'no'})))
        """, "--tools", "read_file")
    expect(r, 0, "success")
    assert r.output_json()["error"] == (
        "Tool 'write_file' is not available in execute_code. Available: read_file"), r
    assert not (ptc.workdir / "x.txt").exists()
    assert r.data["tool_calls_made"] == 0


def test_tool_without_provider_refused(ptc):
    # No search provider configured: web_search is not in the default set.
    r = rpc_run(ptc, """
        print(_json.dumps(call('web_search', {'query': 'x'})))
        """)
    expect(r, 0, "success")
    assert r.output_json()["error"] == ("Tool 'web_search' is not available in "
                                        "execute_code. Available: patch, read_file, "
                                        "search_files, terminal, web_extract, write_file"), r


def test_no_tools_enabled_server_refuses(ptc):
    r = rpc_run(ptc, """
        print(_json.dumps(call('terminal', {'command': 'echo x'})))
        """, "--tools", "")
    expect(r, 0, "success")
    m = r.output_json()
    assert m["error"].startswith("Tool 'terminal' is not available in execute_code."), m
    assert r.data["tool_calls_made"] == 0


def test_call_budget(ptc):
    r = ptc.run("""
        from hermes_tools import terminal
        res = [terminal(f'echo {i}') for i in range(3)]
        print([x.get('output', x.get('error')) for x in res])
        print('script continues')
        """, "--max-tool-calls", "2")
    expect(r, 0, "success")
    lines = r.output.splitlines()
    assert lines[0] == ("['0', '1', 'Tool call limit reached (2). No more tool calls allowed "
                        "in this execution.']"), r
    assert lines[1] == "script continues"
    assert r.data["tool_calls_made"] == 2


def test_call_budget_zero(ptc):
    r = rpc_run(ptc, "print(_json.dumps(call('terminal', {'command': 'echo x'})))",
                "--max-tool-calls", "0")
    expect(r, 0, "success")
    assert r.output_json() == {"id": 1, "error": "Tool call limit reached (0). No more tool "
                                                 "calls allowed in this execution."}, r
    assert r.data["tool_calls_made"] == 0


def test_tool_calls_made_counts_dispatched_only(ptc):
    r = rpc_run(ptc, """
        s = rpc_connect(); L = Lines(s)
        s.sendall(req(1, 'terminal', {'command': 'echo 1'})); L.msg()
        s.sendall(req(2, 'terminal', {'command': 'echo 2'}, token='bad')); L.msg()
        s.sendall(req(3, 'nope', {})); L.msg()
        s.sendall(b'garbage\\n'); L.msg()
        s.sendall(req(4, 'read_file', {'path': '/nonexistent'})); L.msg()
        print('done')
        """)
    expect(r, 0, "success")
    assert r.data["tool_calls_made"] == 2, r


def test_denied_requests_do_not_consume_budget(ptc):
    r = rpc_run(ptc, """
        s = rpc_connect(); L = Lines(s)
        for i in range(5):
            s.sendall(req(i, 'terminal', {'command': 'echo no'}, token='bad')); L.msg()
        s.sendall(req(10, 'terminal', {'command': 'echo yes'}))
        print(_json.dumps(L.msg()))
        """, "--max-tool-calls", "1")
    expect(r, 0, "success")
    assert r.output_json()["result"]["output"] == "yes", r


def test_out_of_order_answers_on_one_connection(ptc):
    r = rpc_run(ptc, """
        s = rpc_connect(); L = Lines(s)
        # The slow call ends only once the script holds the fast call's answer (bounded
        # wait, 30 s): no stopwatch, so the test does not depend on the machine's speed.
        s.sendall(req(1, 'terminal', {'command': 'for i in $(seq 600); do '
                                      '[ -e got.first ] && break; sleep 0.05; done; echo slow'}) +
                  req(2, 'terminal', {'command': 'echo fast'}))
        a = L.msg()
        open('got.first', 'w').close()
        b = L.msg()
        print(_json.dumps([a, b]))
        """)
    expect(r, 0, "success")
    a, b = r.output_json()
    assert a["id"] == 2 and a["result"]["output"] == "fast", (a, b)
    assert b["id"] == 1 and b["result"]["output"] == "slow", (a, b)


def test_many_in_flight_matched_by_id(ptc):
    r = rpc_run(ptc, """
        s = rpc_connect(); L = Lines(s)
        # A barrier instead of a stopwatch: each command marks its start and waits (up to
        # 20 s) until all six have started; run one after another, none would see the rest.
        s.sendall(b''.join(req(100 + i, 'terminal', {'command':
                      f'mkdir -p bar; touch bar/{i}; for t in $(seq 400); do '
                      f'[ $(ls bar | wc -l) -ge 6 ] && break; sleep 0.05; done; '
                      f'[ $(ls bar | wc -l) -ge 6 ] && echo n{i} || echo alone{i}'})
                           for i in range(6)))
        got = {}
        for _ in range(6):
            m = L.msg()
            got[m['id']] = m['result']['output']
        print(_json.dumps(got))
        """, timeout=150)
    expect(r, 0, "success")
    got = r.output_json()
    assert got == {str(100 + i): f"n{i}" for i in range(6)}, got


def test_id_echoed_verbatim(ptc):
    r = rpc_run(ptc, """
        s = rpc_connect(); L = Lines(s)
        out = []
        for i in (0, 2**40, 123456):
            s.sendall(req(i, 'terminal', {'command': 'true'}))
            out.append(L.msg()['id'])
        print(_json.dumps(out))
        """)
    expect(r, 0, "success")
    assert r.output_json() == [0, 2**40, 123456], r


def test_responses_are_single_lines(ptc):
    (ptc.workdir / "multi.txt").write_text("line one\nline two\n\n\"quoted\"\n")
    r = rpc_run(ptc, """
        s = rpc_connect(); L = Lines(s)
        s.sendall(req(1, 'read_file', {'path': 'multi.txt'}))
        line = L.line()
        s.settimeout(0.3)
        try:
            extra = s.recv(100)
        except Exception:
            extra = b''
        m = _json.loads(line)
        print(_json.dumps({"ok": 'line two' in m['result']['content'],
                           "extra": extra.decode('utf-8', 'replace')}))
        """)
    expect(r, 0, "success")
    assert r.output_json() == {"ok": True, "extra": ""}, r


def test_many_connections(ptc):
    r = rpc_run(ptc, """
        conns = [rpc_connect() for _ in range(40)]
        for i, c in enumerate(conns):
            c.sendall(req(i, 'terminal', {'command': f'echo c{i}'}))
        got = [Lines(c).msg() for c in conns]
        print(all(m['id'] == i and m['result']['output'] == f'c{i}'
                  for i, m in enumerate(got)))
        """, "--max-tool-calls", "100")
    expect(r, 0, "success")
    assert r.output == "True\n", r
    assert r.data["tool_calls_made"] == 40


def test_idle_connections_do_not_block_exit(ptc):
    r = rpc_run(ptc, """
        keep = [rpc_connect() for _ in range(10)]
        print('bye')
        """)
    expect(r, 0, "success")
    assert r.elapsed < 10, r  # hang guard


def test_late_first_connection_is_served(ptc):
    # The seed accepted a connection only within 5 s of the start.
    r = ptc.run("""
        import time
        time.sleep(5.5)
        from hermes_tools import terminal
        print(terminal('echo late')['output'])
        """)
    expect(r, 0, "success")
    assert r.output == "late\n", r


def test_terminal_blocked_params_dropped(ptc):
    r = rpc_run(ptc, """
        m = call('terminal', {'command': 'echo fg', 'background': True, 'pty': True,
                              'notify_on_complete': True, 'watch_patterns': ['x']})
        print(_json.dumps(m))
        """)
    expect(r, 0, "success")
    m = r.output_json()
    assert m["result"]["output"] == "fg" and m["result"]["exit_code"] == 0, m


def test_frame_over_cap_closes_that_connection_only(ptc):
    r = rpc_run(ptc, """
        import threading
        s = rpc_connect(); L = Lines(s)
        big = b'{"id": 1, "token": "' + TOKEN.encode() + b'", "tool": "terminal", ' \\
              b'"args": {"command": "' + b'x' * (17 * 1024 * 1024) + b'"}}\\n'
        def send():
            try:
                s.sendall(big)
            except OSError:
                pass
        t = threading.Thread(target=send); t.start()
        first = L.msg()
        try:
            after = L.line()
        except OSError as e:
            after = None
        t.join(10)
        again = call('terminal', {'command': 'echo still-serving'}, id=2)
        print(_json.dumps({"first": first, "eof": after is None, "again": again}))
        """, timeout=40)
    expect(r, 0, "success")
    d = r.output_json()
    assert "error" in d["first"] and "result" not in d["first"], d["first"]
    assert d["eof"] is True, d
    assert d["again"]["result"]["output"] == "still-serving", d
    assert r.data["tool_calls_made"] == 1


def test_one_mebibyte_frame_accepted(ptc):
    r = ptc.run("""
        from hermes_tools import write_file, read_file
        data = ('0123456789abcde\\n' * 65536)
        w = write_file('big.txt', data)
        print(w.get('bytes_written'))
        """)
    expect(r, 0, "success")
    assert r.output == f"{16 * 65536}\n", r
    assert (ptc.workdir / "big.txt").stat().st_size == 16 * 65536


def test_non_object_args_is_an_error(ptc):
    r = rpc_run(ptc, """
        s = rpc_connect(); L = Lines(s)
        out = []
        for args in ([1], 'str', 5):
            s.sendall(req(1, 'terminal', args)); out.append(L.msg())
        s.sendall(_json.dumps({"id": 2, "token": TOKEN, "args": {}}).encode() + b'\\n')
        out.append(L.msg())
        print(_json.dumps(out))
        """)
    expect(r, 0, "success")
    for m in r.output_json():
        assert "error" in m and "result" not in m, m


def test_client_disconnect_mid_call(ptc):
    r = rpc_run(ptc, """
        import time
        s = rpc_connect()
        s.sendall(req(1, 'terminal', {'command': 'sleep 0.5; echo gone'}))
        s.close()
        time.sleep(1.0)
        print(call('terminal', {'command': 'echo alive'})['result']['output'])
        """)
    expect(r, 0, "success")
    assert r.output == "alive\n", r


def test_garbage_bytes_then_valid(ptc):
    r = rpc_run(ptc, """
        import os
        s = rpc_connect(); L = Lines(s)
        junk = bytes(range(256)).replace(b'\\n', b'') * 8
        s.sendall(junk + b'\\n')
        first = L.msg()
        s.sendall(b'\\x00\\x00\\x00\\n')
        second = L.msg()
        s.sendall(req(5, 'terminal', {'command': 'echo clean'}))
        print(_json.dumps([first, second, L.msg()]))
        """)
    expect(r, 0, "success")
    a, b, c = r.output_json()
    assert a["error"].startswith("Invalid RPC request"), a
    assert b["error"].startswith("Invalid RPC request"), b
    assert c["result"]["output"] == "clean", c


def test_half_request_at_exit_does_not_hang(ptc):
    r = rpc_run(ptc, """
        s = rpc_connect()
        s.sendall(b'{"id": 1, "tool": "term')
        print('left a partial frame')
        """)
    expect(r, 0, "success")
    assert r.elapsed < 10, r  # hang guard


def test_script_exit_while_call_in_flight(ptc):
    r = rpc_run(ptc, """
        s = rpc_connect()
        s.sendall(req(1, 'terminal', {'command': 'sleep 300'}))
        print('leaving')
        """)
    expect(r, 0, "success")
    assert r.elapsed < 15, r  # hang guard: waiting for the call would take 300 s


def test_budget_is_exact_under_concurrency(ptc):
    r = ptc.run("""
        import threading, json
        from hermes_tools import terminal
        res = []
        lock = threading.Lock()
        def work(i):
            x = terminal('echo %d' % i)
            with lock:
                res.append(x)
        ts = [threading.Thread(target=work, args=(i,)) for i in range(20)]
        for t in ts: t.start()
        for t in ts: t.join()
        ok = sum(1 for x in res if x.get('exit_code') == 0)
        limited = sum(1 for x in res if (x.get('error') or '').startswith(
            'Tool call limit reached (7).'))
        print(ok, limited)
        """, "--max-tool-calls", "7")
    expect(r, 0, "success")
    assert r.output == "7 13\n", r
    assert r.data["tool_calls_made"] == 7, r


def test_many_pipelined_requests_on_one_connection(ptc):
    (ptc.workdir / "p.txt").write_text("pipelined\n")
    r = rpc_run(ptc, """
        s = rpc_connect(); L = Lines(s)
        s.sendall(b''.join(req(i, 'read_file', {'path': 'p.txt'}) for i in range(300)))
        ids = set()
        for _ in range(300):
            m = L.msg()
            assert 'pipelined' in m['result']['content'], m
            ids.add(m['id'])
        print(ids == set(range(300)))
        """, "--max-tool-calls", "1000")
    expect(r, 0, "success")
    assert r.output == "True\n", r
    assert r.data["tool_calls_made"] == 300, r


def test_large_tool_result_over_socket(ptc):
    (ptc.workdir / "wide.txt").write_text(("w" * 1900 + "\n") * 50)
    r = ptc.run("""
        from hermes_tools import read_file, terminal
        f = read_file('wide.txt')
        t = terminal('head -c 45000 /dev/zero | tr "\\\\0" q')
        print(len(f['content']), len(t['output']))
        """)
    expect(r, 0, "success")
    assert r.output == f"{50 * (7 + 1900) + 50 + 7} 45000\n", r


def test_deeply_nested_json_request(ptc):
    r = rpc_run(ptc, """
        s = rpc_connect(); L = Lines(s)
        s.sendall(b'{"id": 1, "token": "' + TOKEN.encode() + b'", "tool": "read_file", '
                  b'"args": ' + b'[' * 100000 + b']' * 100000 + b'}\\n')
        a = L.msg()
        s.sendall(req(2, 'terminal', {'command': 'echo survived'}))
        print(_json.dumps([a, L.msg()]))
        """)
    expect(r, 0, "success")
    a, b = r.output_json()
    assert a["error"].startswith("Invalid RPC request"), a
    assert b["result"]["output"] == "survived", b


def test_over_a_thousand_connections(ptc):
    # At least 1000 connections open at once are served; past ptc's cap
    # (RPC_CONNECTIONS_MAX) a connection may be closed at once, but nothing
    # hangs and the execution goes on.
    r = rpc_run(ptc, """
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = 4096 if hard == resource.RLIM_INFINITY else min(4096, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        n = min(1200, want - 64)
        conns = [rpc_connect() for _ in range(n)]
        served = closed = 0
        for i, c in enumerate(conns):
            try:
                c.sendall(req(i, 'read_file', {'path': '/nonexistent-%d' % i}))
                m = Lines(c).msg()
            except OSError:
                m = None
            if m is None:
                closed += 1
            elif m['id'] == i and 'result' in m:
                served += 1
        for c in conns:
            c.close()
        import time
        for _ in range(40):  # closed slots are freed asynchronously
            try:
                after = call('terminal', {'command': 'echo after'})
            except OSError:
                after = None
            if after:
                break
            time.sleep(0.05)
        print(served >= min(n, 1000), served + closed == n, n >= 1100,
              after['result']['output'])
        """, "--max-tool-calls", "5000")
    expect(r, 0, "success")
    assert r.output == "True True True after\n", r


RPC_THREADS = """
import os
def rpc_threads():
    # The script's parent is its init; under isolation none ptc is the init's parent.
    init = os.getppid()
    with open(f"/proc/{init}/status") as f:
        ptc = int(next(l for l in f if l.startswith("PPid:")).split()[1])
    n = 0
    for tid in os.listdir(f"/proc/{ptc}/task"):
        try:
            with open(f"/proc/{ptc}/task/{tid}/comm") as f:
                n += f.read().strip() == "ptc-rpc"
        except OSError:
            pass
    return n
"""


def test_quick_calls_use_a_thread_per_cpu_at_most(ptc):
    """read_file is quick (tool_def.quick): eight script threads calling it at once are
    served by at most one server thread per CPU, not one each. Blocking calls still get
    one each (the control: six terminal calls at once)."""
    r = ptc.run(RPC_THREADS + """
from concurrent.futures import ThreadPoolExecutor
from hermes_tools import read_file, terminal
path = os.path.abspath(__file__)
def quick(k):
    for _ in range(60):
        assert "content" in read_file(path)
with ThreadPoolExecutor(max_workers=8) as ex:
    list(ex.map(quick, range(8)))
after_quick = rpc_threads()
with ThreadPoolExecutor(max_workers=6) as ex:
    list(ex.map(lambda i: terminal("sleep 0.4"), range(6)))
print(after_quick, rpc_threads(), os.cpu_count())
""", "--isolation", "none", "--max-tool-calls", "1000", timeout=60)
    expect(r, 0, "success")
    quick, blocking, cpus = map(int, r.output.split())
    assert 1 <= quick <= max(cpus, 1), r.output
    assert blocking >= 6, r.output


def test_blocking_call_served_during_a_flood_of_quick_ones(ptc):
    """Quick calls keep no thread spare, but a blocking call is still taken up as soon as a
    thread frees itself, and runs beside them."""
    r = ptc.run("""
import os, threading, time
from hermes_tools import read_file, terminal
path = os.path.abspath(__file__)
stop = False
def flood():
    while not stop:
        read_file(path)
threads = [threading.Thread(target=flood) for _ in range(8)]
for t in threads:
    t.start()
time.sleep(0.2)
t0 = time.monotonic()
out = [terminal("sleep 0.3; echo done")["output"] for _ in range(3)]
elapsed = time.monotonic() - t0
stop = True
for t in threads:
    t.join()
print(out, round(elapsed, 2))
""", "--max-tool-calls", "1000000", timeout=60)
    expect(r, 0, "success")
    assert r.output.startswith("['done', 'done', 'done'] "), r.output
    # The flood stops only once the calls are done: starved, they would never end.
    assert float(r.output.split()[-1]) < 15.0, r.output  # hang guard
