# SPDX-License-Identifier: MIT
"""What the bench scripts share: the environment ptc runs in during a measurement."""

import os


def ptc_env(tmp, python):
    """This process's environment, with @python first on PATH as `python3` (the interpreter
    ptc finds, and the one a limit row runs) and no user config (PTC_CONFIG unset, an empty
    XDG_CONFIG_HOME), both under the scratch directory @tmp."""
    bindir = os.path.join(tmp, "bin")
    os.mkdir(bindir)
    os.symlink(python, os.path.join(bindir, "python3"))
    xdg = os.path.join(tmp, "xdg")
    os.mkdir(xdg)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""),
               XDG_CONFIG_HOME=xdg)
    env.pop("PTC_CONFIG", None)
    return env
