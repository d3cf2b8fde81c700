# SPDX-License-Identifier: MIT
#
# The Python side of a session interpreter (docs/sessions.md): the script an interpreter runs,
# written to the staging directory as .kernel.py. The build embeds this file byte for byte as
# exec_interp_source (scripts/embed-text.py; src/core/exec/exec-interp.h).
#
# The protocol on the control socket (fd 0 at the start, a SOCK_SEQPACKET socket: one
# message is one datagram):
#   interp -> ptc  {"ready": true}                  the module is imported, cells may come
#   ptc -> interp  {"cell": N, "path": P, "token": T, "socket": S, "cpu": C}
#                  + SCM_RIGHTS [stdout, stderr]     C: the cell's CPU seconds (0: no limit)
#   interp -> ptc  {"started": N}                    SIGINT now reaches the cell: ptc
#                                                    sends a stop only after this
#   interp -> ptc  {"done": N, "exit_code": C}       after the cell's output is flushed
#   ptc -> interp  {"fork": F} + SCM_RIGHTS [ctl]    between cells: make a copy whose
#                                                    control socket is ctl
#   copy -> ptc    {"ready": true}                   on ctl, from then on its own interpreter
#   interp -> ptc  {"forked": F[, "error": E]}       the interpreter is back in its loop
# ptc's ends have SO_PASSCRED: "ready" tells ptc the interpreter's pid. The copy is forked twice
# so that it is the init's child, not the interpreter's: each lives and dies on its own. The end
# of the socket is the end of the interpreter. The cell's code is the file P (so
# tracebacks show its lines, and functions a cell defined keep theirs); the module's
# connections are dropped at each cell (its fork counter), so every call of the cell goes
# over the cell's own RPC server with the cell's token.

import builtins, json, os, signal, socket, sys, traceback, types

_ctl = socket.socket(fileno=os.dup(0))
_null = os.open(os.devnull, os.O_RDWR)
os.dup2(_null, 0)
_pid = os.getpid()
_main = types.ModuleType("__main__")
_main.__builtins__ = builtins
sys.modules["__main__"] = _main
_tools = __import__(os.environ["PTC_INTERP_MODULE"])
del os.environ["PTC_INTERP_MODULE"]
_INT = {signal.SIGINT}


def _on_sigint(signum, frame):
    raise KeyboardInterrupt


# SIGINT is blocked but while a cell runs: a stop meant for a cell that has ended waits
# in the interpreter and is thrown away before the next one starts (ptc sends a
# cell's stop only after its "started"), so no KeyboardInterrupt lands in this loop.
signal.signal(signal.SIGINT, _on_sigint)
signal.pthread_sigmask(signal.SIG_BLOCK, _INT)


def _flush():
    for f in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            f.flush()
        except BaseException:
            pass


def _status(code):
    """SystemExit's code as a process's exit status (sys.exit(256) is 0)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _tb(info):
    # The interpreter's own frame (this exec) is not the cell's business.
    t, v, tb = info
    traceback.print_exception(t, v, tb.tb_next if tb is not None else None)


def _run(path, cell):
    """Run the cell in path in the session's __main__; its exit code."""
    with open(path, "rb") as f:
        src = f.read()
    while signal.sigtimedwait(_INT, 0) is not None:
        pass
    _ctl.send(b'{"started":%d}' % cell)
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _INT)
        try:
            exec(compile(src, path, "exec"), _main.__dict__)
            return 0
        except SystemExit as e:
            return _status(e.code)
        except KeyboardInterrupt:
            _tb(sys.exc_info())
            return -2
        except BaseException:
            _tb(sys.exc_info())
            return 1
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, _INT)


def _limit_cpu(seconds):
    """A script's CPU time limit, counted from now: seconds more."""
    import resource
    u = resource.getrusage(resource.RUSAGE_SELF)
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    soft = int(u.ru_utime + u.ru_stime) + seconds
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    except (OSError, ValueError):
        pass  # a cell lowered the hard limit below this: that one holds


def _fork(fd):
    """Copy this interpreter, whose control socket is fd: True in the copy."""
    global _ctl, _pid
    try:
        pid = os.fork()
    except BaseException:
        os.close(fd)
        raise
    if pid == 0:
        try:
            if os.fork() != 0:
                os._exit(0)
            _ctl.close()
            _ctl = socket.socket(fileno=fd)
            _pid = os.getpid()
            _ctl.send(b'{"ready":true}')
            return True
        except BaseException:
            os._exit(1)
    os.close(fd)
    if os.waitpid(pid, 0)[1] != 0:
        raise OSError("the copy could not be forked in turn")
    return False


_ctl.send(b'{"ready":true}')
while True:
    try:
        msg, anc, _, _ = _ctl.recvmsg(65536, socket.CMSG_SPACE(8))
    except KeyboardInterrupt:
        continue
    if not msg:
        break
    fds = []
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += [int.from_bytes(data[i:i + 4], sys.byteorder)
                    for i in range(0, len(data) - len(data) % 4, 4)]
    m = json.loads(msg)
    if "fork" in m:
        answer = {"forked": m["fork"]}
        try:
            if _fork(fds[0]):
                continue
        except BaseException as e:
            answer["error"] = str(e) or type(e).__name__
        _ctl.send(json.dumps(answer).encode())
        continue
    code = 1
    try:
        _flush()
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        for fd in fds:
            os.close(fd)
        os.environ["PTC_RPC_TOKEN"] = m["token"]
        os.environ["PTC_RPC_SOCKET"] = m["socket"]
        if m["cpu"]:
            _limit_cpu(m["cpu"])
        # What a script run by itself sees: its path as argv[0] and __file__.
        sys.argv = [m["path"]]
        _main.__file__ = m["path"]
        _tools._forks[0] += 1
        code = _run(m["path"], m["cell"])
    except KeyboardInterrupt:
        code = -2
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, _INT)
        _flush()
        if os.getpid() != _pid:
            # A cell's os.fork() whose child came back here: it is no interpreter.
            os._exit(code & 0xFF)
        os.dup2(_null, 1)
        os.dup2(_null, 2)
    _ctl.send(json.dumps({"done": m["cell"], "exit_code": code}).encode())
