# SPDX-License-Identifier: MIT
"""A minimal agent loop around execute_code (examples/execute_code_tool.py).

The "model" is scripted (no network, no API key): on the user's request it answers with
one execute_code tool call holding a script, then, given the tool's result, with a final
message. A real host sends `registry.get_definitions(...)` as the tools of a chat
completion request and the same messages; nothing else changes.

Run it (from the checkout, after the build):
    PYTHONPATH=python python3 examples/agent_loop.py
"""

import json
import os
import tempfile

# The agent works in a project directory: scripts run there (project mode, the process's
# working directory when the engine starts). A scratch one here, before the engine exists.
os.chdir(tempfile.mkdtemp(prefix="ptc-agent-"))

from execute_code_tool import engine, registry  # noqa: E402

SCRIPT = """\
from hermes_tools import write_file, read_file, search_files

for i in range(1, 6):
    write_file(f"notes/day{i}.txt", f"day {i}\\n" + ("TODO: call Bob\\n" if i % 2 else "all done\\n"))
hits = search_files("TODO", path="notes", output_mode="files_only")
files = sorted(m.rsplit("/", 1)[-1] for m in hits.get("files", []))
first = read_file("notes/day1.txt")["content"].splitlines()[1].split("|", 1)[1]
print(f"{len(files)} of 5 notes have a TODO: {', '.join(files)}; day1 says {first!r}")
"""


class ScriptedModel:
    """Stands in for a chat model: one tool call, then a final answer."""

    def __call__(self, messages, tools):
        assert any(t["function"]["name"] == "execute_code" for t in tools)
        last = messages[-1]
        if last["role"] == "user":
            return {"role": "assistant", "content": None, "tool_calls": [{
                "id": "call_1", "type": "function",
                "function": {"name": "execute_code", "arguments": json.dumps({"code": SCRIPT})}}]}
        result = json.loads(last["content"])
        if result.get("status") != "success":
            return {"role": "assistant", "content": f"The script failed: {result.get('error')}"}
        return {"role": "assistant", "content": "Done. " + result["output"].strip()}


def agent_loop(user_message, model, max_turns=5):
    tools = registry.get_definitions(["execute_code"])
    messages = [{"role": "system", "content": "You are a helpful agent."},
                {"role": "user", "content": user_message}]
    for _ in range(max_turns):
        reply = model(messages, tools)
        messages.append(reply)
        if not reply.get("tool_calls"):
            return reply["content"], messages
        for tc in reply["tool_calls"]:
            fn = tc["function"]
            out = registry.dispatch(fn["name"], json.loads(fn["arguments"]))
            print(f"[tool {fn['name']}] {out}")
            messages.append({"role": "tool", "tool_call_id": tc["id"], "content": out})
    return "(gave up)", messages


if __name__ == "__main__":
    answer, _ = agent_loop("Which of my notes still have a TODO?", ScriptedModel())
    print(answer)
    engine().close()
