# SPDX-License-Identifier: MIT
"""ctypes declarations of libptc's C API (include/ptc/ptc.h), and the library lookup.

The library is opened with ctypes.CDLL, never PyDLL: every call releases the GIL, so
ptc_execution_run() can block while ptc's worker threads call back into Python (each
callback takes the GIL itself, through the CFUNCTYPE trampoline).
"""

import ctypes
import ctypes.util
import os
import threading
from pathlib import Path

PTC_DIAG_MAX = 1024
PTC_ENGINE_NO_CONFIG_FILE = 1 << 0

STATUS_NAMES = ("success", "error", "timeout", "interrupted")


class Diag(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("message", ctypes.c_char * PTC_DIAG_MAX)]

    def text(self):
        return self.message.decode("utf-8", "replace")


# void (*ptc_tool_fn)(ptc_tool_call *call, void *userdata)
TOOL_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
# void (*ptc_approval_fn)(ptc_approval *request, void *userdata)
APPROVAL_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
# int (*ptc_event_fn)(const char *line, size_t len, void *userdata)
EVENT_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
# void (*ptc_progress_fn)(const char *tool, int64_t count, void *userdata)
PROGRESS_FN = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_int64, ctypes.c_void_p)


class ToolDef(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("name", ctypes.c_char_p),
        ("description", ctypes.c_char_p),
        ("parameters_json", ctypes.c_char_p),
        ("returns", ctypes.c_char_p),
        ("fn", TOOL_FN),
        ("userdata", ctypes.c_void_p),
    ]


class McpOpts(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("flags", ctypes.c_uint),
        ("max_timeout", ctypes.c_double),
        ("stop_fd", ctypes.c_int),
        ("log", ctypes.c_void_p),  # ptc_mcp_log_fn; None: the server's lines are dropped
        ("log_userdata", ctypes.c_void_p),
    ]


PTC_MCP_EXPOSE_TOOLS = 1 << 0
# enum ptc_approval_answer
PTC_APPROVE_ONCE, PTC_APPROVE_SESSION, PTC_APPROVE_DENY, PTC_APPROVE_CANNOT_ASK = 0, 1, 2, 3
PTC_SESSION_FORGET = 1 << 0

_c = ctypes
_P = ctypes.c_void_p
_PP = ctypes.POINTER(ctypes.c_void_p)
_DIAG = ctypes.POINTER(Diag)

# name: (restype, argtypes). char * results the caller frees are declared c_void_p so the
# pointer survives for ptc_free().
_PROTOTYPES = {
    "ptc_version": (_c.c_char_p, []),
    "ptc_free": (None, [_P]),
    "ptc_status_to_string": (_c.c_char_p, [_c.c_int]),
    "ptc_status_to_exit": (_c.c_int, [_c.c_int]),
    "ptc_engine_new": (_c.c_int, [_c.c_char_p, _c.c_uint, _PP, _DIAG]),
    "ptc_engine_free": (_P, [_P]),
    "ptc_engine_set": (_c.c_int, [_P, _c.c_char_p, _c.c_char_p, _DIAG]),
    "ptc_engine_get": (_c.c_int, [_P, _c.c_char_p, _PP, _DIAG]),
    "ptc_engine_add_tool": (_c.c_int, [_P, _c.POINTER(ToolDef), _DIAG]),
    "ptc_engine_start": (_c.c_int, [_P, _DIAG]),
    "ptc_engine_warnings": (_P, [_P]),
    "ptc_engine_tool_names": (_P, [_P]),
    "ptc_engine_schema": (_c.c_int, [_P, _PP, _DIAG]),
    "ptc_engine_stubs": (_c.c_int, [_P, _PP, _DIAG]),
    "ptc_engine_call_tool": (_c.c_int, [_P, _c.c_char_p, _c.c_char_p, _PP, _DIAG]),
    "ptc_engine_sessions": (_P, [_P]),
    "ptc_engine_close_session": (_c.c_int, [_P, _c.c_char_p, _c.c_uint, _DIAG]),
    "ptc_engine_fork_session": (_c.c_int, [_P, _c.c_char_p, _c.c_char_p, _DIAG]),
    "ptc_execution_new": (_c.c_int, [_P, _PP, _DIAG]),
    "ptc_execution_free": (_P, [_P]),
    "ptc_execution_set": (_c.c_int, [_P, _c.c_char_p, _c.c_char_p, _DIAG]),
    "ptc_execution_on_progress": (_c.c_int, [_P, PROGRESS_FN, _P]),
    "ptc_execution_on_event": (_c.c_int, [_P, EVENT_FN, _P]),
    "ptc_execution_run": (_c.c_int, [_P, _c.c_char_p, _c.c_size_t, _PP,
                     _c.POINTER(_c.c_int), _DIAG]),
    "ptc_execution_cancel": (None, [_P]),
    "ptc_tool_call_name": (_c.c_char_p, [_P]),
    "ptc_tool_call_arguments": (_c.c_char_p, [_P]),
    "ptc_tool_call_remaining_ms": (_c.c_int64, [_P]),
    "ptc_tool_call_cancelled": (_c.c_int, [_P]),
    "ptc_tool_call_return": (_c.c_int, [_P, _c.c_char_p]),
    "ptc_tool_call_fail": (_c.c_int, [_P, _c.c_char_p]),
    "ptc_engine_set_approver": (_c.c_int, [_P, APPROVAL_FN, _P, _DIAG]),
    "ptc_engine_check_policy": (_c.c_int, [_P, _c.c_char_p, _c.c_char_p, _PP, _DIAG]),
    "ptc_approval_tool": (_c.c_char_p, [_P]),
    "ptc_approval_arguments": (_c.c_char_p, [_P]),
    "ptc_approval_verdict": (_c.c_char_p, [_P]),
    "ptc_approval_remaining_ms": (_c.c_int64, [_P]),
    "ptc_approval_answer": (_c.c_int, [_P, _c.c_int]),
    "ptc_mcp_serve": (_c.c_int, [_P, _c.c_int, _c.c_int, _c.POINTER(McpOpts), _DIAG]),
}

_lock = threading.Lock()
_lib = None
_lib_path = None


def candidates():
    """Where the library is looked for, in order: $PTC_LIBRARY; an in-tree build next to
    the package (<checkout>/build/libptc.so.0 when the package is <checkout>/python/ptc);
    the system's (ctypes.util.find_library, then the soname)."""
    env = os.environ.get("PTC_LIBRARY")
    if env:
        return [env]
    out = []
    checkout = Path(__file__).resolve().parent.parent.parent
    if (checkout / "include" / "ptc" / "ptc.h").is_file():
        for name in ("libptc.so.0", "libptc.so"):
            p = checkout / "build" / name
            if p.exists():
                out.append(str(p))
    found = ctypes.util.find_library("ptc")
    if found:
        out.append(found)
    out.append("libptc.so.0")
    return out


def lib():
    """The loaded library (loaded once, on first use). OSError when none can be loaded."""
    global _lib, _lib_path
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        errors = []
        for path in candidates():
            try:
                dll = ctypes.CDLL(path)
            except OSError as e:
                errors.append(f"{path}: {e}")
                continue
            try:
                for name, (res, args) in _PROTOTYPES.items():
                    fn = getattr(dll, name)
                    fn.restype = res
                    fn.argtypes = args
            except AttributeError as e:
                errors.append(f"{path}: not libptc's API ({e})")
                continue
            _lib, _lib_path = dll, path
            return dll
        raise OSError("libptc not found (set PTC_LIBRARY to its path): "
                  + "; ".join(errors))


def library_path():
    """The path the library was loaded from (loads it)."""
    lib()
    return _lib_path


def take_string(ptr):
    """Decode a char * the library handed out, and free it. None stays None."""
    if not ptr:
        return None
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        lib().ptc_free(ptr)
