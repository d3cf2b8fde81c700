# SPDX-License-Identifier: MIT
"""The result of one execution: the result JSON (docs/contracts.md 4) as a dataclass."""

import json
from dataclasses import dataclass, field
from typing import Any, Optional, Tuple


@dataclass(frozen=True)
class ToolCallRecord:
    """One entry of ``tool_calls`` (an execution run with log_calls=True); ``policy`` is
    what the policy decided when it was more than the default allow (docs/policy.md, "In
    the log"), else None."""
    tool: str
    args_preview: str
    duration_seconds: float
    ok: bool
    policy: Optional[dict] = None

    @classmethod
    def from_dict(cls, d):
        return cls(tool=d.get("tool", ""), args_preview=d.get("args_preview", ""),
                   duration_seconds=d.get("duration_seconds", 0.0), ok=bool(d.get("ok")),
                   policy=d.get("policy"))


@dataclass(frozen=True)
class Result:
    """status ("success", "error", "timeout", "interrupted"), output (what the script
    printed), tool_calls_made, duration_seconds, exit_code (None when the child never ran),
    error (when failing), tool_calls (with log_calls), stdout_truncated, warnings (each layer
    the run went without, and what else it did differently than asked; empty when none);
    ``raw`` is the whole result JSON as a dict, ``json`` its text as the library gave it."""
    status: str
    output: str
    tool_calls_made: int
    duration_seconds: float
    exit_code: Optional[int]
    error: Optional[str] = None
    tool_calls: Optional[Tuple[ToolCallRecord, ...]] = None
    stdout_truncated: bool = False
    warnings: Tuple[str, ...] = ()
    raw: Any = field(default=None, compare=False, hash=False, repr=False)
    json: str = field(default="", compare=False, hash=False, repr=False)

    @property
    def ok(self):
        """True for status "success"."""
        return self.status == "success"

    @classmethod
    def from_json(cls, text):
        d = json.loads(text)
        calls = d.get("tool_calls")
        return cls(
            status=d.get("status", "error"),
            output=d.get("output", ""),
            tool_calls_made=d.get("tool_calls_made", 0),
            duration_seconds=d.get("duration_seconds", 0.0),
            exit_code=d.get("exit_code"),
            error=d.get("error"),
            tool_calls=(tuple(ToolCallRecord.from_dict(c) for c in calls)
                        if calls is not None else None),
            stdout_truncated=bool(d.get("stdout_truncated", False)),
            warnings=tuple(d.get("warnings") or ()),
            raw=d,
            json=text,
        )
