# SPDX-License-Identifier: MIT
"""A drop-in `execute_code` for a Hermes-style tool registry, on libptc.

The seed's agent registers execute_code in its tool registry with a schema, a handler
taking the model's arguments and returning a JSON string, and runs the script in a child
process whose tools come back to the agent over RPC. This file does the same with the
`ptc` package: the schema is the engine's (engine.schema(), the text `ptc schema` prints),
the handler returns the result JSON as the seed does (status, output, tool_calls_made,
duration_seconds, ...), and every other tool of the registry is exposed to the script
through a host-tool callback, next to ptc's builtin tools.

Run it (from the checkout, after the build):
    PYTHONPATH=python python3 examples/execute_code_tool.py
"""

import json
import sys
from pathlib import Path

try:
    import ptc
except ImportError:  # run from a checkout without installing the package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
    import ptc


class ToolRegistry:
    """The shape of a Hermes-style registry: tools with an OpenAI function schema and a
    handler(args: dict, **kw) -> str (JSON)."""

    def __init__(self):
        self.tools = {}

    def register(self, name, toolset, schema, handler, check_fn=None):
        self.tools[name] = {"toolset": toolset, "schema": schema, "handler": handler,
                            "check_fn": check_fn}

    def get_definitions(self, names=None):
        return [{"type": "function", "function": t["schema"]}
                for n, t in sorted(self.tools.items()) if names is None or n in names]

    def dispatch(self, name, args, **kw):
        t = self.tools.get(name)
        if t is None:
            return json.dumps({"error": f"Unknown tool: {name}"})
        try:
            return t["handler"](args, **kw)
        except Exception as e:
            return json.dumps({"error": f"{type(e).__name__}: {e}"}, ensure_ascii=False)


registry = ToolRegistry()

# -- two of the host's own tools (an agent has many: memory, todo, delegate, ...) ----------

_MEMORY = {}


def memory_handler(args, **kw):
    action = args.get("action", "read")
    if action == "write":
        _MEMORY[args["key"]] = args.get("value", "")
        return json.dumps({"ok": True, "keys": sorted(_MEMORY)})
    return json.dumps({"key": args.get("key"), "value": _MEMORY.get(args.get("key"))})


registry.register(
    name="memory", toolset="memory",
    schema={"name": "memory", "description": "Read or write the agent's persistent notes.",
            "parameters": {"type": "object", "properties": {
                "action": {"type": "string", "enum": ["read", "write"], "default": "read"},
                "key": {"type": "string"},
                "value": {"type": "string"}}, "required": ["key"]}},
    handler=memory_handler)

_TODOS = []


def todo_handler(args, **kw):
    for item in args.get("add") or []:
        _TODOS.append({"id": len(_TODOS) + 1, "text": item, "done": False})
    return json.dumps({"todos": _TODOS}, ensure_ascii=False)


registry.register(
    name="todo", toolset="todo",
    schema={"name": "todo", "description": "Add items to the task list and return it.",
            "parameters": {"type": "object", "properties": {
                "add": {"type": "array", "items": {"type": "string"}, "default": []}}}},
    handler=todo_handler)

# -- execute_code on libptc ---------------------------------------------------------------

# ptc's own tools a script may call; the host's tools are added below.
PTC_TOOLS = "read_file,write_file,search_files,patch,terminal"


def _bridge(name):
    """A host-tool callback that answers with the registry's JSON string, unchanged."""
    def call_registry(call):
        call.answer_json(registry.dispatch(name, call.arguments))
    return call_registry


def make_engine(host_tools=("memory", "todo"), **options):
    """One engine for the agent's lifetime: config file as usual (ptc's config), ptc's
    builtin tools plus @host_tools from the registry."""
    engine = ptc.Engine(tools=",".join([PTC_TOOLS, *host_tools]), **options)
    for name in host_tools:
        s = registry.tools[name]["schema"]
        engine.add_tool(_bridge(name), name=name, description=s["description"],
                        schema=s["parameters"], pass_call=True)
    engine.start()
    return engine


_engine = None


def engine():
    global _engine
    if _engine is None:
        _engine = make_engine()
    return _engine


def execute_code(code, task_id=None, enabled_tools=None):
    """The seed's signature and result: a JSON string of the result object."""
    if not code or not code.strip():
        return json.dumps({"error": "No code provided."})
    e = engine()
    tools = None
    if enabled_tools is not None:
        tools = [t for t in e.tool_names if t in set(enabled_tools)]
    result = e.execute(code, tools=tools)
    return json.dumps(result.raw, ensure_ascii=False)  # as the seed formats it


def check_requirements():
    try:
        ptc.version()
        return True
    except OSError:
        return False


registry.register(
    name="execute_code", toolset="code_execution",
    schema=engine().schema(),
    handler=lambda args, **kw: execute_code(code=args.get("code", ""),
                                            task_id=kw.get("task_id"),
                                            enabled_tools=kw.get("enabled_tools")),
    check_fn=check_requirements)


if __name__ == "__main__":
    script = (
        "from hermes_tools import memory, todo, terminal\n"
        "memory(action='write', key='city', value='Oslo')\n"
        "t = todo(add=['book train', 'pack'])\n"
        "city = memory(key='city')['value']\n"
        "uname = terminal('uname -s')['output'].strip()\n"
        "print(f\"{len(t['todos'])} todos; city {city}; {uname}\")\n"
    )
    schema = registry.get_definitions(["execute_code"])[0]["function"]
    print("schema:", schema["name"], "parameters:", sorted(schema["parameters"]["properties"]))
    print(registry.dispatch("execute_code", {"code": script}))
    print(registry.dispatch("execute_code", {"code": "  "}))
    engine().close()
