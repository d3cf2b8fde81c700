# SPDX-License-Identifier: MIT
"""Engine.serve_mcp(): a Python host serves its own tools over MCP (ptc_mcp_serve()), on
pipes: the tool list names them, a direct call and a script's call reach the Python
function, and EOF (or closing the engine) ends the server."""

import json
import os
import select
import time

from pyhost import HARD, make_engine, ptc, run_in_thread, scratch  # noqa: F401  (fixtures)


class Peer:
    """The client side: requests on one pipe, messages read back from the other."""

    def __init__(self, engine, **kw):
        self.in_r, self.in_w = os.pipe2(os.O_CLOEXEC)
        self.out_r, self.out_w = os.pipe2(os.O_CLOEXEC)
        self.buf = b""
        self.thread, self.box = run_in_thread(engine.serve_mcp, self.in_r, self.out_w, **kw)

    def send(self, obj):
        os.write(self.in_w, json.dumps(obj).encode() + b"\n")

    def message(self):
        end = time.monotonic() + HARD
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            assert left > 0 and select.select([self.out_r], [], [], left)[0], "no message"
            chunk = os.read(self.out_r, 65536)
            assert chunk, "EOF"
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        msg = json.loads(line)
        assert msg["jsonrpc"] == "2.0", msg
        return msg

    def request(self, id, method, params=None):
        self.send({"jsonrpc": "2.0", "id": id, "method": method, "params": params or {}})
        while True:
            m = self.message()
            if m.get("id") == id:
                return m

    def close(self):
        for fd in (self.in_r, self.in_w, self.out_r, self.out_w):
            try:
                os.close(fd)
            except OSError:
                pass


def test_serve_mcp_with_python_tools(make_engine):
    engine = make_engine(tools="read_file", timeout=30)
    calls = []

    @engine.tool
    def lookup_price(item: str) -> dict:
        """Price of an item."""
        calls.append(item)
        return {"item": item, "price": {"apple": 0.5}.get(item, 1.0)}

    p = Peer(engine, expose_tools=True)
    try:
        tools = p.request(1, "tools/list")["result"]["tools"]
        names = [t["name"] for t in tools]
        assert names[0] == "execute_code" and "lookup_price" in names, names
        assert "lookup_price(" in tools[0]["description"], tools[0]
        assert "item" in tools[names.index("lookup_price")]["inputSchema"]["properties"]

        r = p.request(2, "tools/call", {"name": "lookup_price",
                                        "arguments": {"item": "apple"}})["result"]
        assert r["isError"] is False and r["structuredContent"]["price"] == 0.5, r

        r = p.request(3, "tools/call", {"name": "execute_code", "arguments": {
            "code": "from hermes_tools import lookup_price\n"
                    "print(lookup_price(item='pear')['price'])\n"}})["result"]
        assert r["isError"] is False, r
        assert r["structuredContent"]["output"] == "1.0\n", r
        assert calls == ["apple", "pear"], calls

        os.close(p.in_w)
        p.thread.join(HARD)
        assert not p.thread.is_alive() and "error" not in p.box, p.box
    finally:
        p.close()


def test_close_stops_a_serving_engine(make_engine):
    engine = make_engine(timeout=30)
    p = Peer(engine)
    try:
        assert p.request(1, "ping")["result"] == {}
        p.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "execute_code", "arguments": {"code": "import time\ntime.sleep(30)"}}})
        time.sleep(0.5)
        t0 = time.monotonic()
        engine.close()
        p.thread.join(HARD)
        assert not p.thread.is_alive() and "error" not in p.box, p.box
        assert time.monotonic() - t0 < 20  # hang guard: the script sleeps 30 s
    finally:
        p.close()
