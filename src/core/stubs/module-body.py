# _socket and _thread, not socket and threading: what the calls need, without
# importing socket.py and its selectors at every start (shlex waits for its use).
import json, os, _socket, _thread, time, itertools

# One connection per thread (so threads never wait for each other), opened
# lazily and again after a fork: a child process must not share its parent's
# stream. Each connection carries one request at a time, so the line that
# comes back is the answer to it.
_local = _thread._local()
_ids = itertools.count(1)
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_names = {}
# Bumped in the child of every os.fork() (multiprocessing's too): connections made
# before the fork are the parent's. Cheaper than os.getpid() on every call.
_forks = [0]
os.register_at_fork(after_in_child=lambda: _forks.__setitem__(0, _forks[0] + 1))
# File names that are not UTF-8 (docs/protocol.md): Python holds their bytes as
# the lone surrogates U+DC80..U+DCFF (surrogateescape), which JSON cannot carry;
# on the wire they are U+10DC80..U+10DCFF, which ptc reads back as the bytes.
_TO_WIRE = {0xDC00 + b: 0x10DC00 + b for b in range(0x80, 0x100)}
_FROM_WIRE = {w: s for s, w in _TO_WIRE.items()}
_REQ = b'{"id":%d,"token":%s,"tool":%s,"args":%s}\n'
_CLOSED = ("ptc closed the tool connection "
           "(the execution has ended, the request was too large, or ptc "
           "had no file descriptor left for another connection)")


def _connect(gen):
    """Open this thread's connection to ptc, dropping one inherited by fork."""
    old = getattr(_local, "conn", None)
    _local.conn = None
    if old is not None:
        try:
            old[1].close()
        except OSError:
            pass
    path = os.environ.get("PTC_RPC_SOCKET")
    token = os.environ.get("PTC_RPC_TOKEN")
    if not path or token is None:
        raise RuntimeError("PTC_RPC_SOCKET and PTC_RPC_TOKEN are not set: "
                           "these functions work only in a script run by ptc")
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except BaseException:
        sock.close()
        raise
    conn = (gen, sock, _dumps(token).encode("utf-8"))
    _local.conn = conn
    return conn


def _unescape(v):
    """v with each U+10DC80..U+10DCFF in its strings made Python's surrogate."""
    if isinstance(v, str):
        return v.translate(_FROM_WIRE)
    if isinstance(v, dict):
        return {_unescape(k): _unescape(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_unescape(x) for x in v]
    return v


def _call(tool, args):
    """Call the tool named tool with args (a dict) and return its result."""
    gen = _forks[0]
    conn = getattr(_local, "conn", None)
    if conn is None or conn[0] != gen:
        conn = _connect(gen)
    sock = conn[1]
    name = _names.get(tool)
    if name is None:
        name = _names[tool] = _dumps(tool).encode("utf-8")
    rid = next(_ids)
    body = _dumps(args)
    try:
        body = body.encode("utf-8")
    except UnicodeEncodeError:
        body = body.translate(_TO_WIRE).encode("utf-8")
    req = _REQ % (rid, conn[2], name, body)
    try:
        sock.sendall(req)
        # Most answers are small: a 64 KiB read comes from the heap, while a
        # 1 MiB one costs an mmap and munmap each call (~10 us).
        data = sock.recv(65536)
        if data[-1:] != b"\n":
            buf = bytearray(data)
            while data:
                data = sock.recv(1 << 20)
                buf += data
                if buf.endswith(b"\n"):
                    break
            else:  # recv() gave b"": ptc closed the connection
                raise RuntimeError(_CLOSED)
            data = buf
        resp = json.loads(data)
        if not isinstance(resp, dict):
            raise RuntimeError("ptc sent a response that is not an object")
        if b"\xf4\x8d" in data:  # UTF-8 of U+10D000..U+10DFFF: maybe escapes
            resp = _unescape(resp)
        got = resp.get("id")
        if got != rid:
            if got is not None or "error" not in resp:
                raise RuntimeError("ptc answered request %d with id %r" % (rid, got))
            # id null: ptc could not read the request (it says why in "error")
            # and may close the connection: the next call starts afresh.
            _local.conn = None
            sock.close()
    except (BrokenPipeError, ConnectionResetError):
        _local.conn = None
        sock.close()
        raise RuntimeError(_CLOSED) from None
    except BaseException:
        # The stream may be out of step now: the next call starts afresh.
        _local.conn = None
        sock.close()
        raise
    if "error" in resp:
        return {"error": resp["error"]}
    result = resp.get("result")
    if isinstance(result, str):
        try:
            return json.loads(result)
        except ValueError:
            return result
    return result


# ---------------------------------------------------------------------------
# Convenience helpers (avoid common scripting pitfalls)
# ---------------------------------------------------------------------------

def json_parse(text):
    """Parse JSON tolerant of control characters (strict=False) and of a
    leading UTF-8 byte order mark; text may be str or bytes.
    Use this instead of json.loads() when parsing output from terminal()
    or other tools that may contain raw tabs/newlines in strings."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8-sig")
    elif text[:1] == "\ufeff":
        text = text[1:]
    return json.loads(text, strict=False)


def shell_quote(s):
    """Shell-escape a string for safe interpolation into commands.
    Use this when inserting dynamic content into terminal() commands:
        terminal(f"echo {shell_quote(user_input)}")
    """
    import shlex
    return shlex.quote(s)


def retry(fn, max_attempts=3, delay=2):
    """Retry a function up to max_attempts times with exponential backoff.
    Use for transient failures (network errors, API rate limits). Only an
    exception is retried, and tools return failures as values, so fn must raise:
        def issues():
            r = terminal("gh issue list ...")
            if r.get("error") or r.get("exit_code"):
                raise RuntimeError(r.get("error") or r["output"])
            return r
        result = retry(issues)
    """
    last_err = None
    for attempt in range(max_attempts):
        try:
            return fn()
        except Exception as e:
            last_err = e
            if attempt < max_attempts - 1:
                time.sleep(delay * (2 ** attempt))
    raise last_err
