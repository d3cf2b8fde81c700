# SPDX-License-Identifier: MIT
"""ptc: programmatic tool calling for LLM agents, over libptc (standard library only).

    import ptc

    with ptc.Engine(no_config_file=True, tools="", timeout=30) as engine:
        @engine.tool
        def add(a: int, b: int = 1) -> int:
            "Add two integers."
            return a + b

        r = engine.execute("from hermes_tools import add\\nprint(add(2, b=3))")
        print(r.status, r.output)   # success 5

docs/python.md describes the package; include/ptc/ptc.h the C API it wraps.
"""

from ._lib import library_path
from .engine import Call, Engine, Execution, current_call
from .errors import ConfigError, Error, NotFoundError, StateError
from .result import Result, ToolCallRecord
from .schema import function_schema

__all__ = [
    "Call", "ConfigError", "Engine", "Error", "Execution", "NotFoundError", "Result",
    "StateError", "ToolCallRecord", "current_call", "function_schema", "library_path",
    "version",
]

__version__ = "0.2.0"


def version():
    """The loaded library's version ("0.2.0")."""
    from ._lib import lib
    return lib().ptc_version().decode()
