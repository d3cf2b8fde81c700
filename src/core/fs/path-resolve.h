/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Paths as a tool call names them (path-resolve.c): "~" with the call's $HOME, relative paths
 * against its cwd. @env is a call's environment (NULL-terminated "NAME=value" strings; may be
 * NULL). Any thread; the password database is read with the _r functions.
 */

#include "basic/macro.h"

/* Value of @name in @env, or NULL. Borrowed from @env. */
const char *fs_env_get(char *const *env, const char *name);

/*
 * $HOME of @env, else the password database's home of the user running ptc, into *ret
 * (caller frees). 0, -ENOENT (neither is known) or -ENOMEM.
 */
_must_check_ int fs_home_dir(char *const *env, char **ret);
/* The password database's home of the user running ptc. 0, -ENOENT or -ENOMEM. */
_must_check_ int fs_real_home_dir(char **ret);

/*
 * Expand a leading "~", "~/..." (@env's $HOME) or "~user/..." (password database) and
 * nothing else into *ret (caller frees); relative paths stay relative, and a "~" whose home
 * is unknown stays literal. 0 or -ENOMEM.
 */
_must_check_ int fs_expand_tilde(char *const *env, const char *path, char **ret);

/*
 * Resolve @path against @cwd (absolute; "/" when NULL or relative), "~" expanded as
 * fs_expand_tilde() does. Returns a new absolute path (not normalised, symlinks not
 * resolved) or NULL on ENOMEM.
 */
char *fs_resolve_path(const char *cwd, char *const *env, const char *path);
