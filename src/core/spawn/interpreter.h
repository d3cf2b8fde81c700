/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Choosing the Python interpreter for a script (docs/contracts.md 6).
 *
 * strict: the configured interpreter (code_execution.python, default
 * "python3" on PATH). project: $VIRTUAL_ENV/bin/python(3), then
 * $CONDA_PREFIX/bin/python(3), when it runs and reports >= 3.8, else the
 * configured one.
 *
 * A launcher shim (pyenv, asdf: a script that finds and execs the real
 * binary) costs ~400 ms per start. When the chosen path is a script rather
 * than an ELF binary, ptc asks it once for sys.executable, caches the answer
 * (keyed by the shim's path, mtime and size, in
 * $XDG_CACHE_HOME/ptc/interpreters.json), and execs the real binary. Probes
 * of venv candidates are cached the same way.
 */

#include "basic/diag.h"
#include "basic/macro.h"
#include "core/config/config.h"

/*
 * Resolve the interpreter for @mode. *ret is a new path (absolute, or as
 * configured when that names a file); caller frees.
 * Errors: -ENOENT when no interpreter is found, with a message in @reterr.
 */
_must_check_ int interpreter_resolve(const struct ptc_config *c, enum ptc_mode mode, char **ret,
                                     struct diag *reterr);

/*
 * interpreter_resolve() for a run in @cwd (may be NULL): under an isolation that confines, a
 * candidate inside @cwd (a project venv the script can write) is never run outside the
 * sandbox to probe it; its pyvenv.cfg's version decides, and a shim there is not resolved.
 * In strict mode @cwd is not the script's (it works in a staging dir) and is ignored.
 */
_must_check_ int interpreter_resolve_in(const struct ptc_config *c, enum ptc_mode mode,
                                        const char *cwd, char **ret, struct diag *reterr);

/* Version "3.11.2" of @path via the cache or a probe (5 s limit). Caller frees. */
_must_check_ int interpreter_version(const char *path, char **ret);

/*
 * What @python needs to be shown besides /usr inside the sandbox (sandbox_opts.ro_paths), as a
 * new string vector in *ret: the parts of its Python prefixes that it reads (bin, lib,
 * lib64, pyvenv.cfg; ssl, share and etc of a conda prefix) for the venv it may be, the
 * installation it runs (its real path) and the venv's base (pyvenv.cfg's home); then the
 * absolute entries of @pythonpath (may be NULL). Never a prefix whole: that could be a home
 * directory, or hold the working directory. Returns 0 or -ENOMEM.
 */
_must_check_ int interpreter_trees(const char *python, const char *pythonpath, char ***ret);
