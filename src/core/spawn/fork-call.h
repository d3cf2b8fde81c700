/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * A crash boundary for in-process work on hostile bytes: run a function in a forked copy of
 * this process and take what it writes. A library that aborts or crashes on some input
 * (Debian's gumbo asserts on some HTML) then ends the copy, not ptc, and the caller gets an
 * error for that input.
 *
 * Not a way to start a program (that is spawn.h): the copy never execs and ends with
 * _exit(). It is a fork() of a multi-threaded process, so @fn may use malloc() (glibc makes
 * it safe across fork) and its own code, but no lock another thread may hold: no stdio, no
 * logging, no jansson, no curl handle shared with other threads.
 */

#include <stddef.h>

#include "basic/macro.h"
#include "basic/time-util.h"

/*
 * In the copy: write the result to @out_fd; return 0 or -errno (the copy exits with that
 * errno as its status).
 */
typedef int (*fork_call_fn)(int out_fd, void *userdata);

/*
 * Run @fn(out_fd, @userdata) in a forked copy and read what it writes, at most @max bytes,
 * until @deadline (CLOCK_MONOTONIC; USEC_INFINITY: none) or until @cancel_fd (-1: none) is
 * readable; then the copy is killed and reaped. Returns 0 with *ret (a new buffer, NUL
 * terminated after its *ret_len bytes) when @fn returned 0 and the copy exited; -errno that
 * @fn returned; -ECHILD when the copy died of a signal (*ret_signal says which); -E2BIG when
 * it wrote more than @max; -ETIMEDOUT; -ECANCELED; or -errno of pipe() or fork().
 */
_must_check_ int fork_call(fork_call_fn fn, void *userdata, size_t max, usec_t deadline,
                           int cancel_fd, char **ret, size_t *ret_len, int *ret_signal);
