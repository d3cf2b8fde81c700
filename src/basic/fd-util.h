/* SPDX-License-Identifier: MIT */
#pragma once

/* File-descriptor helpers. All fds we create are O_CLOEXEC. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "basic/macro.h"
#include "basic/time-util.h"

_must_check_ int fd_set_nonblock(int fd, bool nonblock);

/*
 * One wait for a descriptor, with a deadline (in the spirit of systemd's ppoll_usec() and
 * fd_wait_for_event()): for a caller that does nothing else meanwhile. A thread that serves
 * several sources at once runs a struct loop (core/loop/loop.h) instead.
 *
 * Each waits until what it names is ready or @deadline has come: CLOCK_MONOTONIC (now_usec()'s
 * clock); USEC_INFINITY for none; one already passed still looks once, without waiting. A
 * signal (EINTR) does not end the wait: it goes on for the time that is left. None of them
 * returns 0 before @deadline. "Readable" means what a read() would learn without blocking:
 * data, the end (POLLHUP: the other side closed) or an error (POLLERR). Any thread; they call
 * only poll() and clock_gettime(): async-signal-safe, for a child between clone and exec too.
 */
struct pollfd;

/*
 * poll() the @n entries of @p (negative fds are skipped, as poll() does; with none it is a
 * sleep until @deadline) until one is ready or @deadline: the number ready, with their revents
 * set; 0 at the deadline; -EBADF when an entry's fd is not open (POLLNVAL, its revents say
 * which); or -errno.
 */
int poll_until(struct pollfd *p, size_t n, usec_t deadline);

/*
 * Wait for @events (POLLIN, POLLOUT, POLLPRI; 0 for only the end or an error) on @fd: its
 * revents (> 0; POLLHUP and POLLERR come unasked), 0 at the deadline, -EBADF for a negative
 * or closed @fd, or -errno.
 */
int fd_wait(int fd, short events, usec_t deadline);

/* Wait until @fd is readable: 1, 0 at the deadline, or -errno (-EBADF: not open). */
int fd_wait_readable(int fd, usec_t deadline);

/* Wait until @fd has room to write, or its reader is gone (the write says so): 1, 0 at the
 * deadline, or -errno (-EBADF: not open). */
int fd_wait_writable(int fd, usec_t deadline);

/* Which of its two fds fd_wait_either() found readable: a bit each. */
enum {
        FD_WAIT_A = 1 << 0,
        FD_WAIT_B = 1 << 1,
};

/*
 * Wait until @a or @b is readable, typically what a caller waits for and a cancel or stop fd.
 * Either may be negative: not watched (both: -EBADF, nothing to wait for). FD_WAIT_A and/or
 * FD_WAIT_B, 0 at the deadline, -EBADF when one is not open, or -errno.
 */
int fd_wait_either(int a, int b, usec_t deadline);

/* Whether @fd (may be negative: false) has something to read, its end, or an error (one that
 * is not open included) right now: a look that does not wait. */
bool fd_readable_now(int fd);

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
