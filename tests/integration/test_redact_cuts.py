# SPDX-License-Identifier: MIT
"""Redaction holds at every cut of a stream (docs/observability.md, "Redaction at the cuts";
docs/security.md): a secret placed across each place ptc cuts a script's output — the live
events' 4,096-byte pieces (also as MCP log notifications), the spill file's 1 MiB chunks,
the truncated head's end and tail's start, stderr's cap, the argument preview of the
progress, the trace and the events — at every offset 0..len, never shows: not whole, and not
a fragment of FRAG or more of its bytes on either side of the cut. And a session cell
redacts what a cold `ptc run` from the same shell redacts: the client's secrets, for that
cell only.

The secret is a variable the environment scrub removes (MY_API_KEY, DB_PASSWORD); the
script prints it from its own text or the project's .env, as a script that found it would.
"""

import json
import os
import subprocess

import pytest

from conftest import expect
from test_mcp_server import mcp  # noqa: F401 (the fixture)

SECRET = "Zq7vKb2pLm9wRt4Y"
# A fragment this long of a secret tells an attacker what it starts or ends with: none may
# show. (Shorter ones are ordinary text; a secret has at least 8 bytes to be redacted.)
FRAG = 4
ENV = {"MY_API_KEY": SECRET}
OFFSETS = range(len(SECRET) + 1)
PIECE = 4096  # EVENTS_LINE_MAX
MIB = 1 << 20


def fragments(text, secret=SECRET):
    return sorted({secret[i:i + FRAG] for i in range(len(secret) - FRAG + 1)
                   if secret[i:i + FRAG] in text})


def assert_clean(text, where, secret=SECRET):
    found = fragments(text, secret)
    assert not found, f"{where}: fragments {found} of the secret show"


def read_events(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_events_cut_every_offset(ptc):
    """A line longer than a piece: the secret across the 4,096-byte cut at each offset goes
    out as '***' and the pieces join to the whole line's redaction; a vendor key too."""
    path = ptc.path("events.jsonl")
    r = ptc.run_file(f"""
        import sys
        s = "{SECRET}"
        tok = "ghp_" + "Ab1" * 12
        print("T " + tok, flush=True)
        for k in range(len(s) + 1):
            sys.stdout.write("." * ({PIECE} - k) + s + "\\n")
        for k in range(0, len(tok) + 1, 3):
            sys.stdout.write("." * ({PIECE} - 1 - k) + " " + tok + "\\n")
        """, "--events", str(path), env=ENV)
    expect(r, 0, "success")
    events = read_events(path)
    assert events[-1]["events_dropped"] == 0
    texts = [e["text"] for e in events if e["event"] == "output" and e["stream"] == "stdout"]
    assert all(len(t.encode()) <= PIECE for t in texts), [len(t) for t in texts]
    joined = "".join(texts)
    assert_clean(joined, "events")
    tok = "ghp_" + "Ab1" * 12
    mask = texts[0][2:-1]
    assert texts[0].startswith("T ") and tok not in mask, texts[0]
    want = "T " + mask + "\n"
    want += "".join("." * (PIECE - k) + "***\n" for k in OFFSETS)
    want += "".join("." * (PIECE - 1 - k) + " " + mask + "\n" for k in range(0, len(tok) + 1, 3))
    assert joined == want
    # The line was cut: each long line went out in more than one piece.
    assert len(texts) > 2 * len(OFFSETS)


def test_mcp_log_and_progress_every_offset(mcp, ptc):  # noqa: F811
    """The same cut as MCP log notifications (logging/setLevel info), with progress."""
    c = mcp(env=ENV)
    c.result("logging/setLevel", {"level": "info"})
    code = (f"import sys\nfrom hermes_tools import terminal\ns = '{SECRET}'\n"
            f"for k in range(len(s) + 1):\n"
            f"    sys.stdout.write('.' * ({PIECE} - k) + s + '\\n')\n"
            f"terminal('echo ' + '.' * 60 + s)\n")
    id = c.send_request("tools/call", {"name": "execute_code", "arguments": {"code": code},
                                       "_meta": {"progressToken": "p"}})
    r = c.response(id, timeout=60)
    assert "result" in r, r
    notes = c.stashed + c.notifications
    logs = [n for n in c.notifications if n.get("method") == "notifications/message"]
    prog = [n for n in c.notifications if n.get("method") == "notifications/progress"]
    assert logs and prog, c.notifications
    out = "".join(n["params"]["data"]["event"].get("text", "") for n in logs
                  if n["params"]["data"]["event"]["event"] == "output")
    assert out.count("***") == len(OFFSETS), out.count("***")
    for n in notes:
        assert_clean(json.dumps(n), "an MCP notification")
    assert_clean(json.dumps(r), "the MCP answer")


def test_spill_cut_every_offset(ptc):
    """A stdout of one long line: the secret across each 1 MiB chunk boundary of the spill
    file, four per run (the spill holds 5 MB)."""
    ks = list(OFFSETS)
    for i in range(0, len(ks), 4):
        group = ks[i:i + 4]
        r = ptc.run_file(f"""
            import sys
            s = "{SECRET}"
            pos, out = 0, []
            for i, k in enumerate({group}):
                at = (i + 1) * {MIB} - k
                out.append("." * (at - pos) + s)
                pos = at + len(s)
            sys.stdout.write("".join(out) + "." * 1000)
            """, env=ENV)
        expect(r, 0, "success")
        spill = r.data["stdout_spill_path"]
        text = open(spill, encoding="utf-8").read()
        os.unlink(spill)
        assert_clean(text, f"the spill file (offsets {group})")
        assert text.count("***") == len(group), (group, text.count("***"))
        assert_clean(r.data["output"], "the output")


@pytest.mark.parametrize("k", OFFSETS)
def test_truncation_head_tail_and_stderr_cut(ptc, k):
    """The secret across the head's end (40 % of max_stdout_bytes), the tail's start and
    stderr's cap (max_stderr_bytes), at offset k: left out whole, counted as omitted."""
    head, tail, total, err = 20000, 30000, 200000, 10000
    r = ptc.run_file(f"""
        import sys
        s, k = "{SECRET}", {k}
        a = "." * ({head} - k) + s
        b = "." * ({total} - {tail} - k - len(a)) + s
        sys.stdout.write(a + b + "." * ({total} - len(a) - len(b)))
        sys.stderr.write("." * ({err} - k) + s + "." * 100)
        sys.exit(1)
        """, env=ENV)
    expect(r, 1, "error")
    assert r.data["stdout_truncated"] and r.data["stdout_bytes_total"] == total
    assert r.data["stdout_bytes_omitted"] >= total - head - tail
    assert_clean(r.data["output"], "the truncated output")
    assert_clean(r.data["error"], "stderr")
    os.unlink(r.data["stdout_spill_path"])


def test_trace_events_and_progress_previews(ptc):
    """The 80-character argument preview (events, trace, progress): the secret across its
    end at every offset."""
    events, trace, prog = ptc.path("events.jsonl"), ptc.path("trace.json"), ptc.path("prog")
    script = ptc.path("preview.py")
    # {"command":"echo  is 17 characters: the secret starts at 80 - k.
    script.write_text(f"""
from hermes_tools import terminal
s = "{SECRET}"
for k in range(len(s) + 1):
    terminal("echo " + "." * (80 - 17 - k) + s)
""")
    fd = os.open(prog, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        p = subprocess.run([str(ptc.bin), "run", "--events", str(events), "--trace", str(trace),
                            "--progress-fd", str(fd), "--max-tool-calls", "100", str(script)],
                           stdin=subprocess.DEVNULL, capture_output=True,
                           env=ptc.make_env(ENV), cwd=str(ptc.workdir), pass_fds=(fd,),
                           timeout=120)
    finally:
        os.close(fd)
    assert p.returncode == 0, p
    assert_clean(p.stdout.decode(), "the result")
    ev = events.read_text(encoding="utf-8")
    tr = trace.read_text(encoding="utf-8")
    progress = prog.read_text(encoding="utf-8")
    previews = [e["args_preview"] for e in read_events(events) if e["event"] == "call"]
    assert len(previews) == len(OFFSETS), previews
    assert_clean(ev, "the events")
    assert_clean(tr, "the trace")
    assert_clean(progress, "the progress")
    assert "args_preview" in tr and progress.count("terminal") == len(OFFSETS), progress


def test_session_cell_redacts_the_clients_secrets(ptc, srv):
    """DB_PASSWORD only in the client's environment (and the project's .env): a cold run
    redacts it, and so does a session cell; the server keeps it for that cell only."""
    password = "hunter2-Xq9LmZ7pW"
    (ptc.workdir / ".env").write_text(f"DB_PASSWORD={password}\n")
    code = """
        import sys
        pw = open(".env").read().split("=", 1)[1].strip()
        print("pw:", pw)
        k = 5
        a = "." * (20000 - k) + pw
        sys.stdout.write(a + "." * 100000)
        """
    # The server starts without it (the first cell's environment is the server's).
    r = ptc.run("print('hi')", "--session", "s")
    expect(r, 0, "success")
    with_pw = {"DB_PASSWORD": password}
    cold = ptc.run_file(code, env=with_pw)
    expect(cold, 0, "success")
    assert_clean(cold.data["output"], "the cold run", password)
    cell = ptc.run_file(code, "--session", "s", env=with_pw)
    expect(cell, 0, "success")
    assert cell.data["cell"] == 2
    assert_clean(cell.data["output"], "the session cell", password)
    assert cell.data["output"].startswith("pw: ***\n"), cell.data["output"][:100]
    # Not kept past the cell: the next client, without it, is not the one who knew it.
    later = ptc.run("print(open('.env').read().split('=', 1)[1].strip())", "--session", "s")
    expect(later, 0, "success")
    assert later.data["output"] == password + "\n", later.data
    for p in (cold, cell):
        if p.data.get("stdout_spill_path"):
            os.unlink(p.data["stdout_spill_path"])


def test_terminal_output_head_tail_cut(ptc):
    """The terminal tool's own head (20,000 bytes) and tail (30,000): the secret across
    each cut at every offset never reaches the script in part."""
    r = ptc.run_file(f"""
        from hermes_tools import terminal
        s = "{SECRET}"
        for k in range(len(s) + 1):
            head = "." * (20000 - k) + s
            mid = "." * (100000 - 30000 - k - len(head)) + s
            cmd = ("python3 -c 'import sys; sys.stdout.write(\\"%s\\" + \\"%s\\" + \\".\\" * %d)'"
                   % (head, mid, 100000 - len(head) - len(mid)))
            out = terminal(cmd)["output"]
            assert "OUTPUT TRUNCATED" in out, out[:200]
            print(k, out[19900:20100], out[-30100:-29900])
        """, "--max-tool-calls", "100", env=ENV)
    expect(r, 0, "success")
    assert_clean(r.data["output"], "the terminal's output")
    assert r.data["tool_calls_made"] == len(OFFSETS)


def test_approval_prompt_arguments_cut(ptc):
    """The arguments a policy ask shows (cut to 2000 characters): the secret across the cut
    at every offset is not shown in part."""
    from test_policy import Pty
    script = ptc.path("ask.py")
    # {"command":"rm -r d_ is 20 characters: the secret starts at 2000 - k.
    script.write_text(f"""
from hermes_tools import terminal
s = "{SECRET}"
for k in range(len(s) + 1):
    terminal("rm -r d_" + "." * (2000 - 20 - k) + s)
""")
    t = Pty(ptc, ["run", "--max-tool-calls", "100", str(script)], env=ENV)
    prompts = []
    for _ in OFFSETS:
        prompts.append(t.expect("Allow? [o]nce, for this [s]ession, [d]eny"))
        t.send("d\n")
    rc, res, err = t.finish()
    assert rc == 0 and res["status"] == "success", (res, err)
    assert all("arguments: " in p for p in prompts), prompts[0][-300:]
    for p in prompts:
        assert_clean(p, "the approval prompt")


def test_remote_ask_arguments_cut(ptc):
    """An agent's ask whose arguments pass the host's 4096-byte cut: the host's secret
    across it at every offset is not shown in part."""
    from test_policy import ASKING_AGENT, Pty
    more = f'''
s = "{SECRET}"
for k in range(len(s) + 1):
    a = json.dumps({{"command": "rm -r " + "." * (4096 - 19 - k) + s + "." * 50}})
    assert a.index(s) == 4096 - k
    frame(11, {{"id": 100 + k, "tool": "terminal", "args": a, "verdict": verdict}})
    read_frame()
'''
    agent = ptc.path("asking_agent.py")
    agent.write_text(ASKING_AGENT.replace("ASK_MORE", more))
    t = Pty(ptc, ["run", "--backend", f"exec:python3 {agent}", "-c", "print(1)"],
            env=ENV)
    prompts = []
    for _ in range(1 + len(OFFSETS)):
        prompts.append(t.expect("Allow? [o]nce, for this [s]ession, [d]eny"))
        t.send("d\n")
    rc, res, err = t.finish()
    assert rc == 0 and res["status"] == "success", (res, err)
    assert sum(p.count("....") > 0 for p in prompts) == len(OFFSETS), prompts[-1][-200:]
    for p in prompts:
        assert_clean(p, "the approval prompt")
