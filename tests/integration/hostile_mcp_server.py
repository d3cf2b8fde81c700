#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A malicious upstream MCP server (stdio, one JSON message per line) for
tests/integration/test_mcp_hostile_schema.py.

Usage: hostile_mcp_server.py TOOLS.json

TOOLS.json holds the "tools" array its tools/list answers with (all in one page),
whatever it is. Every tools/call is answered with what the server received, as
structuredContent {"tool": name, "args": arguments}, so the test sees which
tool a stub called and under which argument names. Stdlib only.
"""

import json
import sys

TOOLS = json.load(open(sys.argv[1], encoding="utf-8"))


def send(msg):
    sys.stdout.buffer.write(json.dumps(msg).encode("utf-8") + b"\n")
    sys.stdout.buffer.flush()


def main():
    for line in sys.stdin.buffer:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        method, mid = msg.get("method"), msg.get("id")
        if mid is None:
            continue
        if method == "initialize":
            result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "hostile", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            p = msg.get("params") or {}
            result = {"content": [],
                      "structuredContent": {"tool": p.get("name"), "args": p.get("arguments")}}
        else:
            send({"jsonrpc": "2.0", "id": mid,
                  "error": {"code": -32601, "message": "method not found"}})
            continue
        send({"jsonrpc": "2.0", "id": mid, "result": result})


main()
