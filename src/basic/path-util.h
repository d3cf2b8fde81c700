/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "basic/macro.h"

/* "a" + "b" -> "a/b" (no double slash). New string, caller frees; NULL on ENOMEM. */
char *path_join(const char *a, const char *b);

/*
 * True when the absolute path @path is @dir or below it, by its components
 * ("/a/bc" is not below "/a/b"); no symlinks are resolved.
 */
bool path_is_below(const char *path, const char *dir);

/*
 * "/a/./b/../c//" -> "/a/c", in place, by the text alone: ".." drops the component before it,
 * whatever symlinks the path holds (what the kernel resolves is core/fs/fs-chase.h's). @p is
 * absolute.
 */
void path_normalize_lexical(char *p);

/* mkdir -p with @mode for created directories. Returns 0 or -errno. */
_must_check_ int mkdir_p(const char *path, mode_t mode);

/*
 * Remove @path and everything below it without following symlinks. Returns 0
 * (also when @path does not exist) or the first -errno.
 */
int rm_rf(const char *path);

/*
 * The user's cache directory joined with @sub: "$XDG_CACHE_HOME/@sub", else
 * "$HOME/.cache/@sub" (the XDG base directory rule; a relative value counts as
 * unset). Reads the process environment. Returns a new string, or NULL when
 * neither variable is an absolute path, or on ENOMEM.
 */
char *xdg_cache_path(const char *sub);

/*
 * The directory of this user's ptc serve (its socket and its key, docs/sessions.md):
 * "$XDG_RUNTIME_DIR/ptc" (an absolute value), else "/var/tmp/ptc-UID" ("/tmp/ptc-UID"
 * where /var/tmp is no directory), into @buf of @n bytes,
 * with room left for "/serve.sock". Reads the process environment; makes nothing. The CLI
 * uses it for the server, the sandbox and the terminal tool to keep it from what they run.
 * 0 or -ENAMETOOLONG.
 */
int ptc_serve_dir_path(char *buf, size_t n);

/* True when @path names an executable regular file. */
bool is_executable_file(const char *path);

/*
 * Find @name on $PATH (or use it as-is if it contains '/'). Returns a new
 * string or NULL (not found / ENOMEM).
 */
char *find_in_path(const char *name);

/*
 * Find @name (no '/') in the colon-separated @path (NULL or "": the default
 * /usr/local/bin:/usr/bin:/bin). Returns 0 and a new string in *ret, -ENOENT
 * when not found (or @name has a '/' or is empty), or -ENOMEM.
 */
_must_check_ int find_in_search_path(const char *name, const char *path, char **ret);
