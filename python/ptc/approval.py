# SPDX-License-Identifier: MIT
"""The policy's asks answered by Python (docs/policy.md, "Who answers"; docs/python.md).

``Engine(approver=fn)`` or ``engine.set_approver(fn)`` before the start: each call the
policy says to ask about waits while ``fn(request)`` runs on a thread of its own (one
request at a time per engine), at most ``request.remaining`` seconds: a later answer is
dropped, the call having been denied. ``request`` is an :class:`Approval`; ``fn`` returns
``"once"`` (or ``True``), ``"session"`` (this rule or built-in for the rest of the
engine's life), ``"deny"`` (or ``False``), or ``None`` when nobody could be asked after all
(``policy.headless`` decides). An exception denies, and is logged.
"""

import ctypes
import json
import logging
import threading

from . import _lib

log = logging.getLogger("ptc")

ANSWERS = {"once": _lib.PTC_APPROVE_ONCE, True: _lib.PTC_APPROVE_ONCE,
           "session": _lib.PTC_APPROVE_SESSION, "deny": _lib.PTC_APPROVE_DENY,
           False: _lib.PTC_APPROVE_DENY, None: _lib.PTC_APPROVE_CANNOT_ASK}


class Approval:
    """One ask: the tool, its arguments (a dict, secrets redacted), the policy's verdict
    (a dict: ``what`` matched, the ``subject`` it matched, ``origin``, ...) and the seconds
    left to answer (``remaining``; the wait does not count against the script's timeout)."""

    def __init__(self, handle):
        lib = _lib.lib()
        self._h = handle
        self.tool = lib.ptc_approval_tool(handle).decode("utf-8", "replace")
        self.arguments = json.loads(lib.ptc_approval_arguments(handle).decode("utf-8",
                                                                              "replace"))
        self.verdict = json.loads(lib.ptc_approval_verdict(handle).decode("utf-8", "replace"))

    @property
    def remaining(self):
        return _lib.lib().ptc_approval_remaining_ms(self._h) / 1000.0

    def __repr__(self):
        return (f"<Approval {self.tool}: {self.verdict.get('what')} "
                f"({self.verdict.get('subject')})>")


def trampoline(fn):
    """The C callback (ptc_approval_fn) that asks @fn; keep it alive as long as the engine.

    @fn runs on a thread of its own, so the call's wait keeps watching its deadline and
    cancel: an answer that comes too late is dropped (the call was denied meanwhile)."""

    def run(handle, request):
        lib = _lib.lib()
        try:
            got = fn(request)
            if isinstance(got, str):
                got = got.lower()
            code = ANSWERS.get(got)
            if code is None and got is not None:
                raise ValueError(f"approver returned {got!r} (allowed: 'once', 'session', "
                                 f"'deny', True, False, None)")
        except BaseException:
            log.exception("ptc: the approver failed; the call is denied")
            code = _lib.PTC_APPROVE_DENY
        lib.ptc_approval_answer(handle, code)

    def answer(handle, userdata):
        try:
            request = Approval(handle)
        except BaseException:
            log.exception("ptc: cannot read the approval request; the call is denied")
            _lib.lib().ptc_approval_answer(handle, _lib.PTC_APPROVE_DENY)
            return
        threading.Thread(target=run, args=(handle, request), name="ptc-approver",
                         daemon=True).start()

    return _lib.APPROVAL_FN(answer)


def set_approver(engine_handle, fn):
    """ptc_engine_set_approver() with @fn (None: none). Returns the C callback to keep."""
    c_fn = trampoline(fn) if fn is not None else None
    diag = _lib.Diag()
    rc = _lib.lib().ptc_engine_set_approver(engine_handle, c_fn, None, ctypes.byref(diag))
    return rc, diag, c_fn
