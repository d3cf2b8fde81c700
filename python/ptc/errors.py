# SPDX-License-Identifier: MIT
"""Exceptions: a negative errno from libptc plus its one-line diagnostic."""

import errno as _errno
import os


class Error(Exception):
    """libptc refused or failed. ``errno`` is the positive errno value, ``message`` the
    library's one-line diagnostic (the strerror text when it gave none)."""

    def __init__(self, errno, message="", *, function=None):
        self.errno = errno
        self.message = message or os.strerror(errno)
        self.function = function
        super().__init__(self.message)

    def __repr__(self):
        name = _errno.errorcode.get(self.errno, str(self.errno))
        return f"{type(self).__name__}({name}, {self.message!r})"


class ConfigError(Error, ValueError):
    """-EINVAL: an unknown option, a bad value, a bad config file or tool definition."""


class NotFoundError(Error, LookupError):
    """-ENOENT: a config file, a tool or a live session that does not exist."""


class StateError(Error):
    """-EBUSY / -EALREADY: the call does not fit the object's state (configuring a started
    engine, running an execution twice)."""


_BY_ERRNO = {
    _errno.EINVAL: ConfigError,
    _errno.ENOENT: NotFoundError,
    _errno.EBUSY: StateError,
    _errno.EALREADY: StateError,
}


def from_rc(rc, diag=None, function=None):
    """The exception for a negative return code @rc and its struct ptc_diag."""
    code = -rc
    msg = diag.text() if diag is not None else ""
    cls = _BY_ERRNO.get(code, Error)
    return cls(code, msg, function=function)


def check(rc, diag=None, function=None):
    """Raise for a negative @rc; else return it."""
    if rc < 0:
        raise from_rc(rc, diag, function)
    return rc
