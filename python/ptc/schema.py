# SPDX-License-Identifier: MIT
"""A tool's JSON Schema from a Python function's signature, type hints and docstring."""

import dataclasses
import enum
import inspect
import json
import os
import re
import types
import typing

_SCALARS = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    bytes: {"type": "string"},
}


def type_schema(tp):
    """The JSON Schema of one annotation. Unknown types give {} (anything)."""
    if tp is inspect.Parameter.empty or tp is typing.Any or tp is object:
        return {}
    if tp in _SCALARS:
        return dict(_SCALARS[tp])
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union or (hasattr(types, "UnionType")
                                  and isinstance(tp, getattr(types, "UnionType"))):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return type_schema(rest[0])  # Optional[X]: X, not required when defaulted
        return {"anyOf": [type_schema(a) for a in args]}
    if origin is typing.Literal:
        s = {"enum": list(args)}
        for name, t in (("string", str), ("boolean", bool), ("integer", int)):
            if all(type(a) is t for a in args):
                s["type"] = name
                break
        return s
    if origin is typing.Annotated:
        s = type_schema(args[0])
        for extra in args[1:]:
            if isinstance(extra, str):
                s["description"] = extra
            elif isinstance(extra, dict):
                s.update(extra)
        return s
    if tp in (list, tuple, set, frozenset) or origin in (list, tuple, set, frozenset):
        s = {"type": "array"}
        if args and origin is not tuple:
            s["items"] = type_schema(args[0])
        elif args and origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            s["items"] = type_schema(args[0])
        return s
    if tp is dict or origin is dict:
        s = {"type": "object"}
        if len(args) == 2 and args[1] is not typing.Any:
            s["additionalProperties"] = type_schema(args[1])
        return s
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"enum": [m.value for m in tp]}
    return {}


def doc_summary(fn):
    """The docstring's first paragraph, joined into one line."""
    doc = inspect.getdoc(fn) or ""
    first = doc.strip().split("\n\n", 1)[0]
    return " ".join(first.split())


_ARG_SECTION = re.compile(r"^(Args|Arguments|Parameters):\s*$", re.M)


def doc_params(fn):
    """Per-parameter descriptions from a Google-style "Args:" section or ":param x:" lines."""
    doc = inspect.getdoc(fn) or ""
    out = {}
    for m in re.finditer(r"^:param\s+(?:\w+\s+)?(\w+):\s*(.+)$", doc, re.M):
        out[m.group(1)] = m.group(2).strip()
    m = _ARG_SECTION.search(doc)
    if m:
        for line in doc[m.end():].splitlines():
            if not line.strip():
                continue
            if not line.startswith((" ", "\t")):
                break
            pm = re.match(r"^\s+(\w+)(?:\s*\([^)]*\))?:\s*(.+)$", line)
            if pm:
                out[pm.group(1)] = pm.group(2).strip()
    return out


def _json_default(value):
    try:
        json.dumps(value)
        return True
    except (TypeError, ValueError):
        return False


def function_schema(fn):
    """{"type": "object", "properties": ..., "required": [...]} for @fn's keyword
    parameters. Parameters without a default are required; a default that JSON can hold
    becomes "default". *args is refused; **kwargs allows extra properties."""
    sig = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:
        hints = {}
    docs = doc_params(fn)
    props, required = {}, []
    extra = False
    for name, p in sig.parameters.items():
        if p.kind is p.VAR_POSITIONAL:
            raise TypeError(f"tool {fn.__name__}: *{name} cannot be passed by a script; "
                            "use named parameters")
        if p.kind is p.POSITIONAL_ONLY:
            raise TypeError(f"tool {fn.__name__}: positional-only parameter {name}")
        if p.kind is p.VAR_KEYWORD:
            extra = True
            continue
        s = type_schema(hints.get(name, p.annotation))
        if name in docs:
            s.setdefault("description", docs[name])
        if p.default is p.empty:
            required.append(name)
        else:
            default = p.default
            if isinstance(default, enum.Enum):
                default = default.value
            if _json_default(default):
                s["default"] = default
        props[name] = s
    schema = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    if not extra:
        schema["additionalProperties"] = False
    return schema


def to_json(value):
    """JSON text of a tool's return value: dataclasses, paths, sets and tuples included."""
    return json.dumps(value, ensure_ascii=False, default=_encode_default)


def _encode_default(o):
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        return dataclasses.asdict(o)
    if isinstance(o, os.PathLike):
        return os.fspath(o)
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    if isinstance(o, enum.Enum):
        return o.value
    if isinstance(o, bytes):
        return o.decode("utf-8", "replace")
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")
