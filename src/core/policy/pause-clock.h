/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The clock of an execution's deadline, stopped while a tool call waits for a person's
 * approval (docs/policy.md): the wait has its own limit (policy.approval_timeout) and does
 * not eat the script's timeout. Several calls may wait at once; the clock is stopped while
 * any does, so the deadline moves by the union of the waits, not their sum.
 *
 * The execution's loop sleeps on a timer; when it fires during a wait it does nothing, and
 * the end of the last wait writes to @wake_fd (an eventfd the loop watches), whose handler
 * re-arms the timer for the moved deadline. No polling.
 *
 * Thread context: begin/end from tool-call threads, the rest from the loop; all locked.
 */

#include <pthread.h>
#include <stdbool.h>

#include "basic/time-util.h"

struct pause_clock {
        pthread_mutex_t lock;
        unsigned waiting; /* calls waiting now */
        usec_t since;     /* when the current pause began */
        usec_t paused;    /* total of the pauses that ended */
        int wake_fd;      /* eventfd written when a pause ends; -1: none. Borrowed. */
};

void pause_clock_init(struct pause_clock *c, int wake_fd);
void pause_clock_done(struct pause_clock *c);

/* A call starts / stops waiting for an answer. NULL-safe. */
void pause_clock_begin(struct pause_clock *c);
void pause_clock_end(struct pause_clock *c);

/*
 * @deadline (CLOCK_MONOTONIC; USEC_INFINITY stays so) moved by the pauses that ended. While a
 * pause is on, *ret_paused (may be NULL) is true and the deadline is not yet known: the
 * caller waits for the wake. @c NULL: @deadline.
 */
usec_t pause_clock_deadline(struct pause_clock *c, usec_t deadline, bool *ret_paused);
/* Clear the eventfd after a wake. */
void pause_clock_drain(int wake_fd);
