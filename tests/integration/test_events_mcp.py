# SPDX-License-Identifier: MIT
"""execute_code's live events through `ptc mcp` (docs/observability.md, docs/mcp.md): a
client that sets the logging level to info gets each event as notifications/message,
checked against docs/events.schema.json; at the default level, none. The official
TypeScript SDK is the client (tests/mcp/logging.mjs)."""

import json

import jsonschema

from conftest import REPO_ROOT
from test_mcp_sdk import Sdk, call_result

SCHEMA = json.loads((REPO_ROOT / "docs" / "events.schema.json").read_text(encoding="utf-8"))
CODE = "from hermes_tools import read_file\nprint('hello')\nread_file('nothing.txt')\n"


def run(ptc, level):
    sdk = Sdk(ptc)
    params = {"calls": [{"name": "execute_code", "arguments": {"code": CODE}}]}
    if level:
        params["level"] = level
    return sdk.run("logging", sdk.spec([], **params))


def test_info_level_gets_the_events(ptc):
    data = run(ptc, "info")
    _, result = call_result(data["calls"][0], "")
    assert result["status"] == "success", result
    msgs = data["messages"]
    assert msgs and all(m["logger"] == "ptc" and m["level"] == "info" for m in msgs), msgs
    events = [m["data"]["event"] for m in msgs]
    for e in events:
        jsonschema.validate(e, SCHEMA)
    ids = {json.dumps(m["data"]["request_id"]) for m in msgs}
    assert len(ids) == 1, ids
    kinds = [e["event"] for e in events]
    assert kinds[0] == "start" and kinds[-1] == "end", kinds
    assert "call" in kinds and "call_end" in kinds
    assert {"event": "output", "stream": "stdout", "text": "hello\n"}.items() <= \
        next(e for e in events if e["event"] == "output").items()
    assert events[-1]["result"]["status"] == "success"


def test_default_level_sends_none(ptc):
    data = run(ptc, None)
    assert data["messages"] == [], data["messages"]
    data = run(ptc, "warning")
    assert data["messages"] == [], data["messages"]
