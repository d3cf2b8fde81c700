#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A small MCP server (stdio, one JSON message per line) for tests/unit/test-mcp-client.c.

Usage: fake-mcp-server.py MODE [LOGFILE]

MODE selects a behavior:
  normal         answer initialize, tools/list and the tools below
  crash-on-call  exit with status 3 on any tools/call
  hang-on-call   never answer a tools/call
  garbage-lines  write junk lines (not JSON, arrays, unknown ids, notifications) before answers
  slow-init      answer initialize after 60 s
  exit-at-start  exit with status 1 before reading anything
  stderr-spam    write 5 MB to stderr before answering initialize
  paged-tools    tools/list in pages of 3 tools (nextCursor)
  server-ping    like normal (the ping_client tool sends requests to the client)
  fork-child     fork a child that sleeps 60 s (the tool "pids" names both)
  ignore-term    ignore SIGTERM and stdin EOF (the client must SIGKILL)
  bad-version    answer initialize with an unsupported protocol version
  not-json-list  answer tools/list with a line jansson refuses (a \u0000 in a description)
LOGFILE, when given, receives every line read from stdin (flushed at once).
"""

import json
import os
import signal
import sys
import threading
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "normal"
LOG = open(sys.argv[2], "a", encoding="utf-8") if len(sys.argv) > 2 else None

out_lock = threading.Lock()
child_pid = 0
# Answers to requests this server sent to the client: id -> message, with an event each.
client_answers = {}
client_events = {}
client_lock = threading.Lock()
# "sleep" calls with a "meet" argument N first wait (20 s at most) until N of them are in
# at the same time: proof of concurrent calls without a stopwatch.
meet_cond = threading.Condition()
meeting = [0]

TOOLS = [
    {"name": "echo", "description": "Echo text back.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    {"name": "add", "inputSchema": {"type": "object", "properties": {
        "a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}},
    {"name": "fail", "description": "Always fails.", "inputSchema": {"type": "object"}},
    {"name": "image", "description": "Text and an image.", "inputSchema": {"type": "object"}},
    {"name": "json_text", "description": "A JSON object as text.", "inputSchema": {"type": "object"}},
    {"name": "list_text", "description": "A JSON array as text.", "inputSchema": {"type": "object"}},
    {"name": "multi_text", "description": "Two text items.", "inputSchema": {"type": "object"}},
    {"name": "big", "description": "A 20 MiB answer.", "inputSchema": {"type": "object"}},
    {"name": "big_id_last", "description": "A 20 MiB answer, id at the end.",
     "inputSchema": {"type": "object"}},
    {"name": "sleep", "description": "Sleep ms.", "inputSchema": {"type": "object"}},
    {"name": "hang", "description": "Never answers.", "inputSchema": {"type": "object"}},
    {"name": "crash", "description": "Exits with status 3.", "inputSchema": {"type": "object"}},
    {"name": "rpc_error", "description": "A JSON-RPC error.", "inputSchema": {"type": "object"}},
    {"name": "pids", "description": "Own pid and child pid.", "inputSchema": {"type": "object"}},
    {"name": "ping_client", "description": "Send requests to the client.",
     "inputSchema": {"type": "object"}},
    {"name": "noschema_type", "inputSchema": {"properties": {}}},
    {"name": "not_json", "description": "An answer jansson refuses (kind: nul or bigint).",
     "inputSchema": {"type": "object", "properties": {"kind": {"type": "string"}}}},
    # Invalid entries the client must skip.
    {"name": "", "inputSchema": {"type": "object"}},
    {"name": "no_schema"},
    {"name": "x" * 200, "inputSchema": {"type": "object"}},
    {"name": 5, "inputSchema": {"type": "object"}},
    {"name": "bad_schema", "inputSchema": "object"},
    {"name": "array_schema", "inputSchema": {"type": "array"}},
]


def send(msg):
    data = (json.dumps(msg) + "\n").encode()
    with out_lock:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


def send_raw(line):
    with out_lock:
        sys.stdout.buffer.write(line.encode() + b"\n")
        sys.stdout.buffer.flush()


def answer(mid, result):
    if MODE == "garbage-lines":
        send_raw("this is not json")
        send_raw("[1, 2, 3]")
        send_raw('{"jsonrpc": "2.0", "id": 987654, "result": {}}')
        send_raw('{"jsonrpc": "2.0", "method": "notifications/message", '
                 '"params": {"level": "info", "data": "hi"}}')
        send_raw("")
        send_raw('{"jsonrpc": "2.0", "id": "str", "result": {}}')
        send_raw('{"unterminated": ')
    send({"jsonrpc": "2.0", "id": mid, "result": result})


def text(s):
    return {"content": [{"type": "text", "text": s}]}


def ask_client(method, sid):
    ev = threading.Event()
    with client_lock:
        client_events[sid] = ev
    send({"jsonrpc": "2.0", "id": sid, "method": method, "params": {}})
    if not ev.wait(5):
        return {"timeout": True}
    with client_lock:
        return client_answers.pop(sid)


def call_tool(mid, params):
    name = params.get("name")
    args = params.get("arguments") or {}
    if MODE == "crash-on-call" or name == "crash":
        os._exit(3)
    if MODE == "hang-on-call" or name == "hang":
        return
    if name == "echo":
        answer(mid, text(args.get("text", "")))
    elif name == "add":
        s = args.get("a", 0) + args.get("b", 0)
        answer(mid, {"content": [{"type": "text", "text": json.dumps({"sum": s})}],
                     "structuredContent": {"sum": s}})
    elif name == "fail":
        answer(mid, {"content": [{"type": "text", "text": "it failed"}], "isError": True})
    elif name == "image":
        answer(mid, {"content": [{"type": "text", "text": "here"},
                                 {"type": "image", "data": "aGk=", "mimeType": "image/png"}]})
    elif name == "json_text":
        answer(mid, text('{"x": 1, "y": [2]}'))
    elif name == "list_text":
        answer(mid, text("[1, 2, 3]"))
    elif name == "multi_text":
        answer(mid, {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]})
    elif name == "big":
        answer(mid, text("x" * (20 * 1024 * 1024)))
    elif name == "big_id_last":
        # Like the TypeScript SDK: "id" last; decoy "id" keys inside the payload.
        payload = {"content": [{"type": "text", "text": "x" * (20 * 1024 * 1024), "id": 1}],
                   "meta": {"id": 2}}
        send_raw('{"result": ' + json.dumps(payload) + ', "jsonrpc": "2.0", "id": '
                 + json.dumps(mid) + '}')
    elif name == "not_json":
        # Valid JSON to Python, not to jansson: a NUL in a string, an integer past 64 bits.
        value = "a\x00b" if args.get("kind") == "nul" else 2 ** 70
        send_raw('{"jsonrpc": "2.0", "id": ' + json.dumps(mid) + ', "result": {"content": [], '
                 '"structuredContent": {"v": ' + json.dumps(value) + '}}}')
    elif name == "sleep":
        sc = {"slept": args.get("ms", 200)}
        if "meet" in args:
            with meet_cond:
                meeting[0] += 1
                meet_cond.notify_all()
                sc["met"] = meet_cond.wait_for(lambda: meeting[0] >= args["meet"], 20)
        time.sleep(args.get("ms", 200) / 1000.0)
        answer(mid, {"content": [], "structuredContent": sc})
    elif name == "rpc_error":
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32000, "message": "boom"}})
    elif name == "pids":
        answer(mid, {"content": [], "structuredContent": {"pid": os.getpid(), "child": child_pid}})
    elif name == "ping_client":
        res = {"ping": ask_client("ping", "s1"), "roots": ask_client("roots/list", "s2"),
               "sampling": ask_client("sampling/createMessage", "s3")}
        answer(mid, {"content": [], "structuredContent": res})
    else:
        send({"jsonrpc": "2.0", "id": mid,
              "error": {"code": -32602, "message": "unknown tool " + str(name)}})


def list_tools(mid, params):
    if MODE == "not-json-list":
        bad = [{"name": "nul", "description": "a\x00b", "inputSchema": {"type": "object"}}]
        send_raw(json.dumps({"jsonrpc": "2.0", "id": mid, "result": {"tools": bad}}))
        return
    if MODE != "paged-tools":
        answer(mid, {"tools": TOOLS})
        return
    start = int(params.get("cursor") or 0)
    page = TOOLS[start:start + 3]
    result = {"tools": page}
    if start + 3 < len(TOOLS):
        result["nextCursor"] = str(start + 3)
    answer(mid, result)


def handle(msg):
    method = msg.get("method")
    mid = msg.get("id")
    if method is None:
        # An answer to one of our requests.
        with client_lock:
            ev = client_events.pop(mid, None)
            if ev:
                client_answers[mid] = msg
        if ev:
            ev.set()
        return
    if method == "initialize":
        if MODE == "slow-init":
            time.sleep(60)
        if MODE == "stderr-spam":
            line = ("spam " * 20 + "\n").encode()
            for _ in range(5 * 1024 * 1024 // len(line) + 1):
                sys.stderr.buffer.write(line)
            sys.stderr.buffer.flush()
        version = "1999-01-01" if MODE == "bad-version" else "2025-06-18"
        answer(mid, {"protocolVersion": version, "capabilities": {"tools": {}},
                     "serverInfo": {"name": "fake", "version": "1"}})
    elif method == "tools/list":
        list_tools(mid, msg.get("params") or {})
    elif method == "tools/call":
        threading.Thread(target=call_tool, args=(mid, msg.get("params") or {}),
                         daemon=True).start()
    elif mid is not None:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no " + method}})


def main():
    global child_pid
    if MODE == "exit-at-start":
        sys.exit(1)
    if MODE == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if MODE == "fork-child":
        child_pid = os.fork()
        if child_pid == 0:
            time.sleep(60)
            os._exit(0)
    for raw in sys.stdin.buffer:
        if LOG:
            LOG.write(raw.decode("utf-8", "replace"))
            LOG.flush()
        try:
            msg = json.loads(raw)
        except ValueError:
            continue
        handle(msg)
    if MODE == "ignore-term":
        time.sleep(60)


main()
