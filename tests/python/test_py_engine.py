# SPDX-License-Identifier: MIT
"""ptc.Engine: options, errors with the library's diagnostic, schema, stubs, tool names,
call_tool, and the JSON Schema built from a function's signature."""

import errno
import json
from typing import Dict, List, Literal, Optional

import pytest

from pyhost import make_engine, ptc, scratch  # noqa: F401  (fixtures)


def test_version_and_library():
    assert ptc.version().count(".") == 2
    assert "libptc" in ptc.library_path()


def test_unknown_option_is_a_config_error_naming_it(make_engine):
    with pytest.raises(ptc.ConfigError) as ei:
        make_engine(no_such_option=1)
    e = ei.value
    assert isinstance(e, ptc.Error) and isinstance(e, ValueError)
    assert e.errno == errno.EINVAL
    assert "no_such_option" in str(e), str(e)


def test_bad_value_is_a_config_error_with_the_message(make_engine):
    with pytest.raises(ptc.Error) as ei:
        make_engine(timeout="soon")
    assert ei.value.errno == errno.EINVAL
    assert "timeout" in ei.value.message, ei.value.message
    with pytest.raises(ptc.ConfigError, match="mode"):
        make_engine(mode="sideways")


def test_missing_explicit_config_file(scratch):
    with pytest.raises(ptc.NotFoundError) as ei:
        ptc.Engine(scratch / "nope.yaml")
    assert ei.value.errno == errno.ENOENT


def test_config_file_is_read(scratch):
    cfg = scratch / "config.yaml"
    cfg.write_text("code_execution:\n  timeout: 7\n  max_tool_calls: 3\n")
    with ptc.Engine(cfg, tools="") as e:
        assert e.tool_names == []
        r = e.execute("print('hi')")
        assert r.ok and r.output == "hi\n", r


def test_get_reads_back_the_options(make_engine, scratch):
    e = make_engine(timeout=12.5, mode="strict", tools="read_file")
    assert e.get("timeout") == "12.5" and e.get("mode") == "strict"
    assert e.get("max_tool_calls") == "50"          # the built-in default
    assert e.get("terminal.timeout") == "180"
    assert e.get("cwd") == str(scratch)
    assert e.get("tools") == "read_file"
    e.set("terminal.timeout", 30)
    assert e.get("terminal.timeout") == "30"
    with pytest.raises(ptc.ConfigError, match="bogus"):
        e.get("bogus")
    e.start()
    assert e.get("tools") == "read_file" and e.get("timeout") == "12.5"


def test_options_after_start_are_refused(make_engine):
    e = make_engine(tools="read_file")
    e.start()
    with pytest.raises(ptc.StateError) as ei:
        e.set("timeout", 5)
    assert ei.value.errno == errno.EBUSY

    with pytest.raises(ptc.StateError):
        @e.tool
        def late() -> int:
            return 1


def test_option_values_are_converted(make_engine):
    e = make_engine(timeout=12, log_calls=True, tools=["read_file", "write_file"])
    e.set("terminal.timeout", 30)
    assert e.tool_names == ["read_file", "write_file"]
    assert e.warnings == []


def test_schema_tool_names_and_stubs(make_engine):
    e = make_engine(tools="read_file")

    @e.tool
    def lookup(key: str, limit: int = 5) -> dict:
        """Look a key up in the host's table."""
        return {"key": key}

    assert sorted(e.tool_names) == ["lookup", "read_file"]
    s = e.schema()
    assert s["name"] == "execute_code"
    assert s["parameters"]["required"] == ["code"]
    assert "lookup" in s["description"] and "read_file" in s["description"]
    assert "terminal" not in s["description"]
    stubs = e.stubs()
    assert "def lookup(key: str, limit: int = 5)" in stubs, stubs
    assert "Look a key up in the host's table." in stubs
    compile(stubs, "hermes_tools.py", "exec")


def test_explicit_schema(make_engine):
    e = make_engine(tools="")
    schema = {"type": "object",
              "properties": {"city": {"type": "string", "description": "a city"},
                             "units": {"type": "string", "default": "metric"}},
              "required": ["city"]}

    @e.tool(name="weather", description="Weather for a city.", schema=schema,
            returns="{city, temp}")
    def whatever(**args):
        return {"city": args["city"], "units": args["units"], "temp": 21}

    assert e.tool_names == ["weather"]
    assert "def weather(city: str, units: str = 'metric')" in e.stubs() or \
        'def weather(city: str, units: str = "metric")' in e.stubs(), e.stubs()
    r = e.execute("from hermes_tools import weather\nprint(weather('Oslo')['units'])")
    assert r.ok and r.output == "metric\n", r
    assert e.call_tool("weather", city="Rome", units="si") == \
        {"city": "Rome", "units": "si", "temp": 21}


def test_bad_tool_definitions_are_refused(make_engine):
    e = make_engine()
    with pytest.raises(ptc.ConfigError):
        e.add_tool(lambda: 1, name="Bad-Name")
    with pytest.raises(ptc.ConfigError):
        e.add_tool(lambda: 1, name="read_file")  # a builtin's name
    with pytest.raises(ptc.ConfigError):
        e.add_tool(lambda: 1, name="arr", schema=[1, 2])


def test_call_tool(make_engine, scratch):
    (scratch / "notes.txt").write_text("alpha\nbeta\n")
    e = make_engine(tools="read_file")

    @e.tool
    def double(n: int) -> int:
        "Twice n."
        return 2 * n

    assert e.call_tool("double", n=21) == 42
    r = e.call_tool("read_file", path=str(scratch / "notes.txt"))
    assert "beta" in r["content"], r
    failing = e.call_tool("read_file", path=str(scratch / "missing.txt"))
    assert "error" in failing
    with pytest.raises(ptc.NotFoundError) as ei:
        e.call_tool("terminal", command="true")
    assert "double" in str(ei.value) and "read_file" in str(ei.value)


def test_closed_engine_refuses_work(make_engine):
    e = make_engine()
    e.close()
    e.close()  # idempotent
    with pytest.raises(ptc.Error):
        e.execute("print(1)")


# -- the JSON Schema from a signature (pure Python) ----------------------------------------


def test_function_schema_from_type_hints():
    def f(path: str, n: int = 3, ratio: float = 0.5, deep: bool = False,
          tags: Optional[List[str]] = None, meta: Dict[str, int] = None,
          mode: Literal["fast", "slow"] = "fast", anything=None):
        """Do it.

        Args:
            path: where to look
            n (int): how many
        """

    s = ptc.function_schema(f)
    assert s["required"] == ["path"]
    p = s["properties"]
    assert p["path"] == {"type": "string", "description": "where to look"}
    assert p["n"] == {"type": "integer", "description": "how many", "default": 3}
    assert p["ratio"] == {"type": "number", "default": 0.5}
    assert p["deep"] == {"type": "boolean", "default": False}
    assert p["tags"] == {"type": "array", "items": {"type": "string"}, "default": None}
    assert p["meta"]["type"] == "object"
    assert p["mode"] == {"type": "string", "enum": ["fast", "slow"], "default": "fast"}
    assert p["anything"] == {"default": None}
    assert s["additionalProperties"] is False
    json.dumps(s)


def test_function_schema_refuses_star_args():
    def f(*items):
        pass

    with pytest.raises(TypeError):
        ptc.function_schema(f)


def test_a_started_engine_is_used_from_many_threads(make_engine):
    import threading

    e = make_engine(tools="")

    @e.tool
    def echo(n: int) -> int:
        "Echo n."
        return n

    errors, out = [], []

    def work(i):
        try:
            for k in range(10):
                out.append(e.call_tool("echo", n=i * 100 + k))
                assert e.schema()["name"] == "execute_code"
                assert e.tool_names == ["echo"]
        except BaseException as ex:  # noqa: B036
            errors.append(ex)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors, errors
    assert sorted(out) == sorted(i * 100 + k for i in range(8) for k in range(10))
