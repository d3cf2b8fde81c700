/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A minimal epoll event loop (redis ae-sized): file descriptors with a
 * callback each. Timers and signals are fds too (timerfd, signalfd, pidfd),
 * so there is one wait and no fixed polling interval anywhere.
 *
 * Single-threaded: every function must be called from the thread that runs
 * the loop. A callback may remove its own source (or any other); removal is
 * safe during dispatch because sources are freed only after the current
 * batch of events has been handled.
 */

#include <stdbool.h>
#include <stdint.h>

#include "basic/macro.h"

struct loop;
struct loop_source;

typedef void (*loop_io_fn)(struct loop_source *s, int fd, uint32_t events, void *userdata);

_must_check_ int loop_new(struct loop **ret);
/* Frees all remaining sources (without closing their fds). NULL-safe. */
struct loop *loop_free(struct loop *l);

/* Watch @fd for @events (EPOLLIN, EPOLLOUT...). The fd stays owned by the
 * caller. *ret_source (optional) is borrowed and valid until removed. */
_must_check_ int loop_add(struct loop *l, int fd, uint32_t events, loop_io_fn cb, void *userdata,
                          struct loop_source **ret_source);
_must_check_ int loop_modify(struct loop_source *s, uint32_t events);
/* Stop watching; NULL-safe. The fd is not closed. */
void loop_remove(struct loop_source *s);

/*
 * Wait up to @timeout_ms (-1 = forever) and dispatch ready sources. Returns
 * the number of events handled or -errno (EINTR is retried internally).
 */
int loop_run_once(struct loop *l, int timeout_ms);
