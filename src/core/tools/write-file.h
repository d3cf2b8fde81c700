/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What the file-editing tools (write_file, patch replace mode, V4A) share of write-file.c: the
 * write itself (atomic, mode kept, through symlinks) and the per-path locks that serialise
 * edits of one file. Nothing outside src/core/tools includes this header.
 *
 * Thread context: every function may be called from any thread.
 */

#include <stdbool.h>
#include <stddef.h>

#include "basic/macro.h"
#include "basic/time-util.h"

/*
 * Replace the content of the regular file @target (symlinks already resolved by the caller,
 * so a symlink stays a link and its target gets the content) with @n bytes: a temp file in the
 * same directory renamed over it, keeping the file's mode (a new file, @exists false, gets
 * 0666 & ~umask). Falls back to truncate-and-write when the directory is not writable but the
 * file is, or the name leaves no room for the temp suffix. Returns 0 or -errno.
 */
_must_check_ int tool_file_replace(const char *target, const char *s, size_t n, bool exists);
/*
 * tool_file_replace() of @name in the directory @dirfd (an O_PATH descriptor from
 * fs_chase() is fine): the temp file is made and renamed in that directory, and @name is
 * never followed (O_NOFOLLOW), so the write lands on the object the caller resolved and
 * judged.
 */
_must_check_ int tool_file_replace_at(int dirfd, const char *name, const char *s, size_t n,
                                      bool exists);

/*
 * Per-path serialisation of edits (the seed's file_state.lock_path()): while a caller holds
 * the lock of a path, no other caller gets a lock that includes it. Keys are compared as
 * strings, so pass canonical paths (file_safety_realpath() of the absolute path).
 */
struct tool_path_lock;

/* Most paths one tool_path_lock() call may hold. */
#define TOOL_PATH_LOCK_PATHS_MAX 1024

/*
 * Take the locks of all @n paths at once (duplicates allowed; all-or-nothing, so two callers
 * with overlapping sets cannot deadlock), waiting while any of them is held, at most until
 * @deadline (CLOCK_MONOTONIC; USEC_INFINITY waits until the holders release, which they do
 * when their edit, itself bounded, ends). @paths are copied. On 0, *ret is the held lock
 * (release with tool_path_unlock()). Returns -ETIMEDOUT, -E2BIG (@n over
 * TOOL_PATH_LOCK_PATHS_MAX) or -ENOMEM.
 */
_must_check_ int tool_path_lock(const char *const *paths, size_t n, usec_t deadline,
                                struct tool_path_lock **ret);

/* Release and free. NULL-safe; returns NULL. */
struct tool_path_lock *tool_path_unlock(struct tool_path_lock *l);
DEFINE_TRIVIAL_CLEANUP_FUNC_RESET(struct tool_path_lock *, tool_path_unlock)
#define _cleanup_tool_path_lock_ _cleanup_(tool_path_unlockp)
