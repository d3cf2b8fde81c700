/* SPDX-License-Identifier: MIT */
#pragma once

/* File-descriptor helpers. All fds we create are O_CLOEXEC. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "basic/macro.h"
#include "basic/time-util.h"

_must_check_ int fd_set_nonblock(int fd, bool nonblock);

/* Whether @fd (may be negative: false) has something to read, or an end or error, right
 * now: a poll() that does not wait. */
bool fd_readable_now(int fd);

/*
 * Wait until @a or @b (either may be negative: not watched) is readable, at its end or in
 * error, or until @deadline (CLOCK_MONOTONIC; USEC_INFINITY: none). EINTR is retried; the
 * caller looks at what it waited for.
 */
void fd_wait_either(int a, int b, usec_t deadline);

/*
 * Open /dev/null on each of fds 0-2 that is closed, so that no fd made later lands there: a
 * child dup2()s its stdio over 0-2 and would lose a pipe of ours that sat on one. For the
 * start of main(). 0 or -errno.
 */
_must_check_ int fd_ensure_stdio(void);

/* Write all of @p, retrying on EINTR (blocking fds). Returns 0 or -errno. */
_must_check_ int write_all(int fd, const void *p, size_t n);

/*
 * Write all of @p to a blocking or a non-blocking @fd: on a full one it waits for room, and
 * gives up with -ETIMEDOUT when none comes for @stall_ms (a peer that stopped reading).
 * @nosignal: @fd is a socket, written with MSG_NOSIGNAL (a peer gone is -EPIPE, never a
 * SIGPIPE for a process that did not ignore it). Returns 0 or -errno.
 */
_must_check_ int write_all_stalling(int fd, const void *p, size_t n, int stall_ms, bool nosignal);

/*
 * Write @s in one write() to the existing file @path under @dirfd (AT_FDCWD for a plain path),
 * as the control files of /proc and cgroupfs want it: a short write is an error. Async-signal-
 * safe (a sandbox child uses it); errno stays that of the failed call. 0, -errno or -EIO.
 */
_must_check_ int write_string_at(int dirfd, const char *path, const char *s);

/*
 * Close every fd of this process but those in @keep (@n of them; negative entries are
 * skipped, the array is sorted in place). For a child between clone and exec, where CLOEXEC
 * has not acted yet and a copy of another thread's pipe end would keep that pipe open:
 * async-signal-safe. 0 or -errno.
 */
int close_all_fds_but(int *keep, size_t n);

/*
 * A memfd (named @name, close-on-exec) holding the @n bytes of @p, its offset
 * rewound to 0: a child's stdin that cannot deadlock the way a pipe can.
 * Returns the fd (caller closes) or -errno.
 */
_must_check_ int memfd_with_data(const char *name, const void *p, size_t n);

/*
 * Read the whole regular file at @path (relative to @dirfd, AT_FDCWD allowed)
 * into a new NUL-terminated buffer. Fails with -E2BIG if it is larger than
 * @max bytes, -EISDIR/-EINVAL for non-regular files. Caller frees *ret.
 */
_must_check_ int read_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len);
/* read_file_at() of the open file @fd (not closed; read from its current offset). */
_must_check_ int read_fd_all(int fd, size_t max, char **ret, size_t *ret_len);

/*
 * Create or replace @path with @n bytes atomically: write a temp file in the
 * same directory, fsync is NOT done (speed over durability), rename over.
 * @mode is used for a new file; -1 keeps the existing file's mode (0644 when
 * the file does not exist yet).
 */
_must_check_ int write_file_atomic(const char *path, const void *p, size_t n, int mode);
/*
 * write_file_atomic() of @path relative to @dirfd (AT_FDCWD allowed): the temp file is made
 * and renamed within @dirfd, so a caller holding a directory's descriptor writes into that
 * directory whatever its name leads to meanwhile.
 */
_must_check_ int write_file_atomic_at(int dirfd, const char *path, const void *p, size_t n,
                                      int mode);
