# SPDX-License-Identifier: MIT
"""Engine, host tools, tool calls and executions over libptc (include/ptc/ptc.h).

Threads: an Engine is configured (set(), tool()) before it starts; start() happens
implicitly on the first execute(), schema(), stubs(), tool_names or call_tool(). After
that every method is safe from any thread. Host tools and progress callbacks run on ptc's
worker threads, several at once; they take the GIL for their own run only, because every
libptc call (ptc_execution_run() above all) is made through ctypes.CDLL, which releases it.
"""

import asyncio
import contextvars
import ctypes
import inspect
import json
import logging
import os
import threading
import weakref

from . import _lib, approval
from .errors import Error, StateError, check
from .result import Result
from .schema import doc_summary, function_schema, to_json

log = logging.getLogger("ptc")

_INT64_MAX = (1 << 63) - 1
_current_call = contextvars.ContextVar("ptc_current_call", default=None)


def current_call():
    """The Call a synchronous tool is answering, inside that tool; else None. A long tool
    can look at ``current_call().remaining`` and ``.cancelled`` and give up."""
    return _current_call.get()


def _text(value):
    """An option value as the config file's text: booleans "true"/"false", lists joined
    with commas, paths as paths."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple, set, frozenset)):
        return ",".join(str(v) for v in value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return str(value)


def _enc(s):
    return s.encode("utf-8") if isinstance(s, str) else s


def _exc_text(e):
    msg = str(e)
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__


class Call:
    """One call of a host tool by a script. A tool registered with ``pass_call=True``
    receives it and answers it exactly once, now or later, from any thread, with
    answer() or fail(). ``name`` and ``arguments`` (a dict) stay readable afterwards."""

    def __init__(self, handle, engine):
        lib = _lib.lib()
        self._h = handle
        self._lock = threading.Lock()
        self._engine = engine
        self._dropped = False
        self.name = (lib.ptc_tool_call_name(handle) or b"").decode("utf-8", "replace")
        raw = lib.ptc_tool_call_arguments(handle) or b"{}"
        self.arguments = json.loads(raw.decode("utf-8", "surrogateescape"))
        if not isinstance(self.arguments, dict):
            self.arguments = {}
        engine._call_begin(self)

    @property
    def answered(self):
        return self._h is None

    @property
    def remaining(self):
        """Seconds left before the execution's deadline (0.0 when past), or None when it
        has none. RuntimeError once answered."""
        with self._lock:
            if self._h is None:
                raise RuntimeError("the call was already answered")
            ms = _lib.lib().ptc_tool_call_remaining_ms(self._h)
        return None if ms >= _INT64_MAX else ms / 1000.0

    @property
    def cancelled(self):
        """True when the execution was cancelled (or timed out): stop working on it.
        Also True once answered."""
        with self._lock:
            if self._h is None:
                return True
            return bool(_lib.lib().ptc_tool_call_cancelled(self._h))

    def _answer(self, fn, payload):
        with self._lock:
            h, self._h = self._h, None
            if h is None:
                if self._dropped:
                    return False  # the engine closed it: nobody waits any more
                raise RuntimeError(f"call of {self.name} answered twice")
            rc = fn(h, payload)
        self._engine._call_end(self)
        return rc == 0

    def answer(self, value):
        """Answer with @value, encoded as JSON (a dict with an "error" member is a tool
        error, as for builtin tools). True when delivered, False when the script no
        longer waits (timeout, cancel). TypeError (call still open) when @value cannot be
        encoded."""
        text = to_json(value)
        return self._answer(_lib.lib().ptc_tool_call_return, text.encode("utf-8"))

    def answer_json(self, text):
        """Answer with JSON text as is."""
        return self._answer(_lib.lib().ptc_tool_call_return, _enc(text))

    def fail(self, message):
        """Answer with {"error": @message}."""
        return self._answer(_lib.lib().ptc_tool_call_fail, _enc(str(message)))

    def _fail_if_open(self, message):
        try:
            self.fail(message)
        except RuntimeError:
            pass

    def __repr__(self):
        state = "answered" if self._h is None else "open"
        return f"<ptc.Call {self.name} {state}>"


class _Tool:
    """A registered host tool: the Python callable and the C trampoline that must live as
    long as the engine."""

    def __init__(self, engine, fn, name, pass_call):
        self.fn = fn
        self.name = name
        self.pass_call = pass_call
        eng = weakref.ref(engine)

        def trampoline(handle, _userdata):
            # Runs on a ptc worker thread, the GIL taken by ctypes. Nothing may escape
            # into C: an exception would be printed and the call never answered.
            call = None
            try:
                e = eng()
                if e is None:
                    raise RuntimeError("the ptc.Engine is gone")
                call = Call(handle, e)
                if inspect.iscoroutinefunction(self.fn):
                    self.dispatch(e, call)  # makes the coroutine and schedules it
                else:
                    # The tool runs on a thread of ours, not on ptc's worker: the worker
                    # waits for the answer with the execution's deadline and cancel in
                    # view, so a tool that blocks cannot hold the execution past them.
                    threading.Thread(target=self.dispatch_safely, args=(e, call),
                                     name=f"ptc-tool-{self.name}", daemon=True).start()
            except BaseException as ex:  # noqa: B036 (answer, whatever it was)
                try:
                    if call is None:
                        _lib.lib().ptc_tool_call_fail(handle, _enc(_exc_text(ex)))
                    else:
                        call._fail_if_open(_exc_text(ex))
                except BaseException:
                    pass

        self.c_fn = _lib.TOOL_FN(trampoline)

    def dispatch_safely(self, engine, call):
        try:
            self.dispatch(engine, call)
        except BaseException as ex:  # noqa: B036 (the call must be answered)
            call._fail_if_open(_exc_text(ex))

    def dispatch(self, engine, call):
        token = _current_call.set(call)
        try:
            if self.pass_call:
                value = self.fn(call)
            else:
                value = self.fn(**call.arguments)
        except Exception as ex:
            call._fail_if_open(_exc_text(ex))
            return
        finally:
            _current_call.reset(token)
        if inspect.isawaitable(value):
            self._schedule(engine, call, value)
        elif not self.pass_call:
            try:
                call.answer(value)
            except (TypeError, ValueError) as ex:  # not JSON-encodable
                call._fail_if_open(_exc_text(ex))

    def _schedule(self, engine, call, awaitable):
        async def runner():
            return await awaitable

        fut = asyncio.run_coroutine_threadsafe(runner(), engine._async_loop())

        def done(f):
            try:
                value = f.result()
            except BaseException as ex:
                call._fail_if_open(_exc_text(ex))
                return
            if self.pass_call:
                if not call.answered:
                    call._fail_if_open(f"tool {self.name} returned without answering")
                return
            try:
                call.answer(value)
            except (TypeError, ValueError) as ex:
                call._fail_if_open(_exc_text(ex))
            except RuntimeError:
                pass

        fut.add_done_callback(done)


class Engine:
    """A libptc engine: config, tool registry (builtin, upstream MCP and your own),
    redaction. Options are the config file's keys (docs/config.md) as keyword arguments,
    e.g. ``Engine(timeout=30, tools="read_file,terminal", mode="strict")``; keys with a
    dot ("terminal.timeout") go through set(). Use it as a context manager or close() it.

    ``loop``: an asyncio event loop (running in another thread) for ``async def`` tools;
    by default the engine runs its own in a daemon thread, on first need.

    ``approver``: answers the policy's asks (set_approver())."""

    def __init__(self, config_file=None, *, no_config_file=False, loop=None, approver=None,
                 **options):
        self._lib = _lib.lib()
        self._h = None
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._started = False
        self._closed = False
        self._tools = {}
        self._executions = weakref.WeakSet()
        self._running = set()
        self._calls = set()
        self._calls_lock = threading.Lock()
        self._loop = loop
        self._loop_thread = None
        self._tools_option = None
        self._approver = None  # the C callback, kept alive
        flags = _lib.PTC_ENGINE_NO_CONFIG_FILE if no_config_file else 0
        path = os.fsencode(config_file) if config_file is not None else None
        diag = _lib.Diag()
        h = ctypes.c_void_p()
        check(self._lib.ptc_engine_new(path, flags, ctypes.byref(h), ctypes.byref(diag)), diag,
              "ptc_engine_new")
        self._h = h.value
        try:
            for key, value in options.items():
                self.set(key, value)
            if approver is not None:
                self.set_approver(approver)
        except BaseException:
            self.close()
            raise

    # -- configuration ------------------------------------------------------------------

    def _handle(self):
        h = self._h
        if h is None:
            raise StateError(9, "the engine is closed")  # EBADF
        return h

    def set(self, key, value):
        """Set one option before start (ptc_engine_set()): ConfigError for an unknown key
        or a bad value, StateError after start. Returns self."""
        with self._lock:
            self._set(key, _text(value))
            if key == "tools":
                self._tools_option = [t for t in (x.strip() for x in _text(value).split(","))
                                      if t]
        return self

    def get(self, key):
        """The effective value of option @key as text, in the words set() takes
        (ptc_engine_get()): ``get("timeout") == "300"``, ``get("tools") == "read_file, ..."``.
        Before or after start; ConfigError for an unknown key."""
        with self._lock:
            diag = _lib.Diag()
            out = ctypes.c_void_p()
            rc = self._lib.ptc_engine_get(self._handle(), _enc(key), ctypes.byref(out),
                                          ctypes.byref(diag))
            text = _lib.take_string(out.value)
            check(rc, diag, "ptc_engine_get")
            return text

    def _set(self, key, text):
        diag = _lib.Diag()
        check(self._lib.ptc_engine_set(self._handle(), _enc(key), _enc(text),
                                       ctypes.byref(diag)), diag, "ptc_engine_set")

    def set_approver(self, fn):
        """Before start: @fn(request) answers the calls the policy (docs/policy.md) says to
        ask about, on a worker thread, one at a time: return "once", "session", "deny" (or
        True/False), or None to let policy.headless decide; see ptc.approval. None removes
        it. Returns self."""
        with self._lock:
            rc, diag, c_fn = approval.set_approver(self._handle(), fn)
            check(rc, diag, "ptc_engine_set_approver")
            self._approver = c_fn
        return self

    def check_policy(self, tool, /, **args):
        """What the policy decides of calling @tool with @args, without calling it (what
        `ptc policy check` prints), as a dict: decision, origin, what, subject, ..."""
        diag = _lib.Diag()
        out = ctypes.c_void_p()
        rc = self._lib.ptc_engine_check_policy(self._handle(), _enc(tool),
                                               to_json(args).encode("utf-8"),
                                               ctypes.byref(out), ctypes.byref(diag))
        text = _lib.take_string(out.value)
        check(rc, diag, "ptc_engine_check_policy")
        return json.loads(text)

    def tool(self, fn=None, *, name=None, description=None, schema=None, returns=None,
             pass_call=False):
        """Register a host tool; usable as ``@engine.tool`` or ``@engine.tool(name=...)``.

        The JSON Schema comes from @fn's signature and type hints (str, int, float, bool,
        list[...], dict, Optional, Literal; defaults become "default", the rest
        "required"; parameter descriptions from an "Args:" docstring section) unless
        @schema (a dict or JSON text) is given. The description defaults to the
        docstring's first paragraph. The script's call runs @fn(**arguments) on a worker
        thread; its return value is answered as JSON, an exception as
        {"error": "<ExcType>: <message>"}. An ``async def`` tool runs on the engine's
        event loop. With ``pass_call=True`` @fn gets a Call and answers it itself, now or
        later, from any thread. Returns @fn."""

        def register(f):
            self.add_tool(f, name=name, description=description, schema=schema,
                          returns=returns, pass_call=pass_call)
            return f

        return register if fn is None else register(fn)

    def add_tool(self, fn, *, name=None, description=None, schema=None, returns=None,
                 pass_call=False):
        """tool() without the decorator."""
        name = name or getattr(fn, "__name__", None)
        if not name:
            raise TypeError("a tool needs a name")
        if schema is None:
            schema = ({"type": "object", "properties": {}} if pass_call
                      else function_schema(fn))
        schema_text = schema if isinstance(schema, str) else json.dumps(schema)
        description = description or doc_summary(fn) or name
        with self._lock:
            t = _Tool(self, fn, name, pass_call)
            d = _lib.ToolDef(size=ctypes.sizeof(_lib.ToolDef), name=_enc(name),
                             description=_enc(description), parameters_json=_enc(schema_text),
                             returns=_enc(returns) if returns else None, fn=t.c_fn,
                             userdata=None)
            diag = _lib.Diag()
            check(self._lib.ptc_engine_add_tool(self._handle(), ctypes.byref(d),
                                                ctypes.byref(diag)), diag,
                  "ptc_engine_add_tool")
            self._tools[name] = t
        return fn

    def start(self):
        """Freeze the configuration and start (MCP servers, registry, interpreter).
        Implicit on first use; calling it again does nothing. Returns self."""
        with self._lock:
            if not self._started:
                if self._tools_option is not None:
                    # A "tools" option names ptc's tools; the ones registered here are
                    # meant to be offered too (the C API wants them listed).
                    extra = [n for n in self._tools if n not in self._tools_option]
                    if extra:
                        self._set("tools", ",".join(self._tools_option + extra))
                diag = _lib.Diag()
                check(self._lib.ptc_engine_start(self._handle(), ctypes.byref(diag)), diag,
                      "ptc_engine_start")
                self._started = True
        return self

    @property
    def started(self):
        return self._started

    # -- introspection ------------------------------------------------------------------

    @property
    def warnings(self):
        """The warnings collected so far (a misspelled config key, an MCP server that did
        not start), one string each."""
        text = _lib.take_string(self._lib.ptc_engine_warnings(self._handle()))
        if text is None:
            raise MemoryError("ptc_engine_warnings")
        return [line for line in text.splitlines() if line.strip()]

    @property
    def tool_names(self):
        """The enabled tools' names (starts the engine)."""
        self.start()
        text = _lib.take_string(self._lib.ptc_engine_tool_names(self._handle()))
        if text is None:
            raise MemoryError("ptc_engine_tool_names")
        return [n.strip() for n in text.split(",") if n.strip()]

    def _string(self, fn, name, *args):
        self.start()
        diag = _lib.Diag()
        out = ctypes.c_void_p()
        rc = fn(self._handle(), *args, ctypes.byref(out), ctypes.byref(diag))
        text = _lib.take_string(out.value)
        check(rc, diag, name)
        return text

    def schema(self):
        """The execute_code function schema (what `ptc schema` prints), as a dict."""
        return json.loads(self._string(self._lib.ptc_engine_schema, "ptc_engine_schema"))

    def stubs(self):
        """The Python module a script imports (what `ptc stubs` prints)."""
        return self._string(self._lib.ptc_engine_stubs, "ptc_engine_stubs")

    def call_tool(self, name, /, **args):
        """Call one enabled tool directly, as a script would; returns its decoded result
        (a tool's own failure is a dict with "error"). NotFoundError for an unknown tool."""
        text = self._string(self._lib.ptc_engine_call_tool, "ptc_engine_call_tool",
                            _enc(name), to_json(args).encode("utf-8"))
        return json.loads(text)

    # -- executions ---------------------------------------------------------------------

    def execution(self, *, timeout=None, tools=None, cwd=None, log_calls=None,
                  max_tool_calls=None, on_progress=None, **options):
        """A new Execution with these options (None keeps the engine's). Run it once with
        run(code); cancel() from any thread."""
        return Execution(self, timeout=timeout, tools=tools, cwd=cwd, log_calls=log_calls,
                         max_tool_calls=max_tool_calls, on_progress=on_progress, **options)

    def execute(self, code, *, timeout=None, tools=None, cwd=None, log_calls=None,
                max_tool_calls=None, on_progress=None, **options):
        """Run @code (str or bytes) to its end and return its Result. Blocks this thread
        (not the GIL)."""
        x = self.execution(timeout=timeout, tools=tools, cwd=cwd, log_calls=log_calls,
                           max_tool_calls=max_tool_calls, on_progress=on_progress, **options)
        try:
            return x.run(code)
        finally:
            x.close()

    # -- sessions -----------------------------------------------------------------------

    def sessions(self):
        """The live sessions (docs/sessions.md): a list of dicts with "session", "cells",
        "idle_seconds", "busy" and "pid"."""
        self.start()
        text = _lib.take_string(self._lib.ptc_engine_sessions(self._handle()))
        if text is None:
            raise MemoryError("ptc_engine_sessions")
        return json.loads(text)

    def close_session(self, session, *, forget=False):
        """End a live session now. Its next cell starts afresh and is told it was killed,
        or, with @forget, is not told (a reset). NotFoundError when it is not live."""
        self.start()
        diag = _lib.Diag()
        check(self._lib.ptc_engine_close_session(
            self._handle(), _enc(session), _lib.PTC_SESSION_FORGET if forget else 0,
            ctypes.byref(diag)), diag, "ptc_engine_close_session")

    def fork_session(self, session, new_session):
        """Make @new_session a copy of the live @session as it is now (its variables,
        imports and data; files are shared); then each goes its own way."""
        self.start()
        diag = _lib.Diag()
        check(self._lib.ptc_engine_fork_session(self._handle(), _enc(session),
                                                _enc(new_session), ctypes.byref(diag)),
              diag, "ptc_engine_fork_session")

    # -- MCP ----------------------------------------------------------------------------

    def serve_mcp(self, in_fd, out_fd, *, expose_tools=False, max_timeout=0):
        """Serve MCP on two file descriptors until EOF on @in_fd (ptc_mcp_serve(), what
        `ptc mcp` runs on stdio): execute_code on this engine, and with @expose_tools
        every enabled tool, the ones registered here included. Blocks this thread (not
        the GIL); close() stops it as EOF does. Raises Error for a broken descriptor."""
        self.start()
        stop_r, stop_w = os.pipe2(os.O_CLOEXEC)
        server = _McpServing(stop_w)
        opts = _lib.McpOpts(ctypes.sizeof(_lib.McpOpts),
                            _lib.PTC_MCP_EXPOSE_TOOLS if expose_tools else 0,
                            float(max_timeout), stop_r)
        diag = _lib.Diag()
        with self._cond:
            h = self._handle()
            self._running.add(server)
        try:
            rc = self._lib.ptc_mcp_serve(h, in_fd, out_fd, ctypes.byref(opts),
                                         ctypes.byref(diag))
        finally:
            with self._cond:
                self._running.discard(server)
                self._cond.notify_all()
            server.close()
            os.close(stop_r)
        check(rc, diag, "ptc_mcp_serve")

    # -- internals ------------------------------------------------------------------------

    def _call_begin(self, call):
        with self._calls_lock:
            self._calls.add(call)

    def _call_end(self, call):
        with self._calls_lock:
            self._calls.discard(call)

    def _async_loop(self):
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                t = threading.Thread(target=loop.run_forever, name="ptc-asyncio", daemon=True)
                t.start()
                self._loop, self._loop_thread = loop, t
            return self._loop

    # -- lifetime -------------------------------------------------------------------------

    @property
    def closed(self):
        return self._closed

    def close(self):
        """Cancel running executions and wait for them, answer the calls still open with
        an error, free the engine (stops its MCP servers). Idempotent. Must not be called
        from a tool or progress callback."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            while self._running:
                for x in list(self._running):
                    x.cancel()
                self._cond.wait(1.0)
            for x in list(self._executions):
                x.close()
            h, self._h = self._h, None
        with self._calls_lock:
            calls = list(self._calls)
        for c in calls:
            c._dropped = True
            c._fail_if_open("the ptc engine was closed")
        if h is not None:
            self._lib.ptc_engine_free(h)
        loop, t = self._loop, self._loop_thread
        if t is not None:  # our own loop, not one the caller gave
            loop.call_soon_threadsafe(loop.stop)
            t.join(5.0)
            if not t.is_alive():
                loop.close()
            self._loop, self._loop_thread = None, None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        state = "closed" if self._closed else ("started" if self._started else "new")
        return f"<ptc.Engine {state}, {len(self._tools)} host tools>"


class _McpServing:
    """A running serve_mcp(), as Engine.close() sees it: cancel() stops it like EOF."""

    def __init__(self, stop_w):
        self._lock = threading.Lock()
        self._stop_w = stop_w

    def cancel(self):
        with self._lock:
            if self._stop_w is not None:
                os.write(self._stop_w, b"x")

    def close(self):
        with self._lock:
            fd, self._stop_w = self._stop_w, None
        if fd is not None:
            os.close(fd)


class Execution:
    """One script run. Options are set at creation; run(code) once, on one thread;
    cancel() from any thread at any time (before the run: it is interrupted at once).
    ``on_progress(tool, count)`` is called on a worker thread as each tool call is
    dispatched; keep it short. ``on_event(event)`` gets the run's live events as dicts
    (docs/observability.md), one at a time, in order; keep it short too."""

    def __init__(self, engine, *, on_progress=None, on_event=None, **options):
        engine.start()
        self._engine = engine
        self._lib = engine._lib
        self._lock = threading.Lock()
        self._ran = False
        self._progress = None
        self._events = None
        diag = _lib.Diag()
        h = ctypes.c_void_p()
        with engine._lock:
            check(self._lib.ptc_execution_new(engine._handle(), ctypes.byref(h),
                                              ctypes.byref(diag)), diag, "ptc_execution_new")
            self._h = h.value
            engine._executions.add(self)
        try:
            for key, value in options.items():
                if value is not None:
                    self.set(key, value)
            if on_progress is not None:
                self._set_progress(on_progress)
            if on_event is not None:
                self._set_events(on_event)
        except BaseException:
            self.close()
            raise

    def set(self, key, value):
        """Set one per-execution option ("timeout", "max_tool_calls", "tools", "cwd",
        "log_calls") before the run."""
        with self._lock:
            if self._h is None:
                raise StateError(9, "the execution is closed")
            diag = _lib.Diag()
            check(self._lib.ptc_execution_set(self._h, _enc(key), _enc(_text(value)),
                                              ctypes.byref(diag)), diag, "ptc_execution_set")
        return self

    def _set_progress(self, fn):
        def trampoline(tool, count, _userdata):
            try:
                fn((tool or b"").decode("utf-8", "replace"), int(count))
            except BaseException:  # noqa: B036 (never into C)
                log.exception("ptc progress callback failed")

        c_fn = _lib.PROGRESS_FN(trampoline)
        check(self._lib.ptc_execution_on_progress(self._h, c_fn, None), None,
              "ptc_execution_on_progress")
        self._progress = c_fn  # alive as long as the handle

    def _set_events(self, fn):
        def trampoline(line, n, _userdata):
            try:
                fn(json.loads(ctypes.string_at(line, n).decode("utf-8", "replace")))
                return 0
            except BaseException:  # noqa: B036 (never into C)
                log.exception("ptc event callback failed")
                return -1

        c_fn = _lib.EVENT_FN(trampoline)
        check(self._lib.ptc_execution_on_event(self._h, c_fn, None), None,
              "ptc_execution_on_event")
        self._events = c_fn  # alive as long as the handle

    def run(self, code):
        """Run @code to its end: a Result (status success, error, timeout or
        interrupted). Raises Error when ptc itself failed and could not even build a
        result; when it could, that result (status "error") is returned."""
        engine = self._engine
        if isinstance(code, str):
            code = code.encode("utf-8", "surrogateescape")
        with engine._cond:
            with self._lock:
                if self._ran:
                    raise StateError(114, "an execution runs once")  # EALREADY
                if self._h is None:
                    raise StateError(9, "the execution is closed")
                self._ran = True
                h = self._h
            engine._running.add(self)
        out = ctypes.c_void_p()
        status = ctypes.c_int(-1)
        diag = _lib.Diag()
        try:
            rc = self._lib.ptc_execution_run(h, code, len(code), ctypes.byref(out),
                                              ctypes.byref(status), ctypes.byref(diag))
            text = _lib.take_string(out.value)
        finally:
            self._free()
            with engine._cond:
                engine._running.discard(self)
                engine._cond.notify_all()
        if text is None:
            check(rc if rc < 0 else -5, diag, "ptc_execution_run")  # EIO: no result
        r = Result.from_json(text)
        if rc < 0 and not r.error and diag.text():
            r = Result.from_json(json.dumps({**r.raw, "error": diag.text()},
                                            ensure_ascii=False))
        return r

    def cancel(self):
        """Stop the execution (SIGINT, then SIGKILL after a grace); its run returns
        status "interrupted". Any thread, any time; after the run it does nothing."""
        with self._lock:
            if self._h is not None:
                self._lib.ptc_execution_cancel(self._h)

    def _free(self):
        with self._lock:
            h, self._h = self._h, None
            if h is not None:
                self._lib.ptc_execution_free(h)
            self._progress = None

    def close(self):
        """Free it (not while it runs: cancel it and let run() return)."""
        if self in self._engine._running:
            raise StateError(16, "the execution is running; cancel it first")  # EBUSY
        self._free()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self in self._engine._running:
            self.cancel()
        else:
            self.close()

    def __del__(self):
        try:
            self._free()
        except Exception:
            pass
