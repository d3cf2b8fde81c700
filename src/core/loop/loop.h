/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A minimal epoll event loop (redis ae-sized, with sd-event's kinds of source): file
 * descriptors, time, and child exits, each with a callback. There is one wait, and no fixed
 * polling interval anywhere: epoll_wait() sleeps until the next fd event or the earliest
 * armed time source, whichever comes first.
 *
 * Single-threaded: every function must be called from the thread that runs the loop. A
 * callback may remove its own source (or any other) and add new ones; removal is safe during
 * dispatch because sources are freed only after the current batch has been handled.
 */

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "basic/macro.h"
#include "basic/time-util.h"

struct loop;
struct loop_source;

typedef void (*loop_io_fn)(struct loop_source *s, int fd, uint32_t events, void *userdata);
/* A time source came due; it is disarmed now (loop_time_set() arms it again). */
typedef void (*loop_time_fn)(struct loop_source *s, usec_t now, void *userdata);
/* The child exited and was reaped (unless loop_child_set_reap()): @si as waitid() filled it
 * (si_code CLD_EXITED or a signal's CLD_KILLED/CLD_DUMPED, si_status; si_code 0 when someone
 * else reaped it and how it ended is unknown). The source stays until removed, quiet. */
typedef void (*loop_child_fn)(struct loop_source *s, const siginfo_t *si, void *userdata);

_must_check_ int loop_new(struct loop **ret);
/* Frees all remaining sources (without closing the fds they watch). NULL-safe. */
struct loop *loop_free(struct loop *l);

/* Watch @fd for @events (EPOLLIN, EPOLLOUT...). The fd stays owned by the
 * caller. *ret_source (optional) is borrowed and valid until removed. */
_must_check_ int loop_add(struct loop *l, int fd, uint32_t events, loop_io_fn cb, void *userdata,
                          struct loop_source **ret_source);
_must_check_ int loop_modify(struct loop_source *s, uint32_t events);

/*
 * A time source (CLOCK_MONOTONIC, now_usec()'s clock), one-shot: it fires once @when has
 * come (a @when in the past fires at the next dispatch), then stays disarmed until
 * loop_time_set() arms it again. USEC_INFINITY adds it disarmed. The loop wakes for it
 * with millisecond granularity, never early.
 */
_must_check_ int loop_add_time(struct loop *l, usec_t when, loop_time_fn cb, void *userdata,
                               struct loop_source **ret_source);
/* Arm @s (a time source) for @when, or disarm it with USEC_INFINITY. */
void loop_time_set(struct loop_source *s, usec_t when);
/* ...for @usec from now. */
void loop_time_set_relative(struct loop_source *s, usec_t usec);
/* When @s fires next; USEC_INFINITY when disarmed. */
usec_t loop_time_get(const struct loop_source *s);

/*
 * The exit of the child @pid, watched through @pidfd (borrowed: the caller closes it after
 * removing the source; it is no longer watched once the child was reaped). When it exits the
 * loop reaps it (waitid(WEXITED)) and calls @cb once. -EBADF without a pidfd.
 */
_must_check_ int loop_add_child(struct loop *l, pid_t pid, int pidfd, loop_child_fn cb,
                                void *userdata, struct loop_source **ret_source);
/*
 * Leave the child of @s (a child source) unreaped when it exits, as sd-event's WNOWAIT: its
 * callback runs while it is still a zombie, so its pid and process-group numbers stay its
 * own while the callback signals what it left behind; the callback must reap it. Call
 * before the loop runs.
 */
void loop_child_set_reap(struct loop_source *s, bool reap);
/* Whether the child of @s exited (its callback ran; reaped unless loop_child_set_reap()). */
bool loop_child_exited(const struct loop_source *s);

/* Stop watching; NULL-safe. The fd is not closed. */
void loop_remove(struct loop_source *s);

/*
 * Wait up to @timeout_ms (-1 = forever; time sources cut it short) and dispatch ready
 * sources, fds first, then the time sources that are due. Returns the number of events
 * (fd events, including those of sources removed meanwhile, and time sources fired) or
 * -errno (EINTR is retried internally).
 */
int loop_run_once(struct loop *l, int timeout_ms);
