/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A pool of remote targets (code_execution.backend as a list; docs/remote.md): each run
 * takes the least-loaded target that has room under the per-target cap, and gives it back
 * when it ends. A run that finds every target full waits, first come first served, until
 * one is given back, its deadline passes, or it is cancelled.
 *
 * Thread context: any thread; the pool has its own lock.
 */

#include <stddef.h>

#include "basic/diag.h"
#include "basic/macro.h"
#include "basic/time-util.h"

struct backend;
struct backend_pool;

/*
 * A pool of the SPECs @specs (NULL-terminated, at least one), each taking at most @cap runs
 * at once (>= 1). Returns 0, -EINVAL with @reterr for a bad SPEC, or -ENOMEM.
 */
_must_check_ int backend_pool_new(char *const *specs, unsigned cap, struct backend_pool **ret,
                                  struct diag *reterr);

/* NULL-safe; returns NULL. No run may hold a target. */
struct backend_pool *backend_pool_free(struct backend_pool *p);
DEFINE_TRIVIAL_CLEANUP_FUNC_RESET(struct backend_pool *, backend_pool_free);

/*
 * Take a target: *ret (owned by the pool) and its index for backend_pool_release(). Waits
 * while every target is full, until @deadline (CLOCK_MONOTONIC; USEC_INFINITY: none) or
 * until @cancel_fd (-1: none) is readable. Returns 0, -ETIMEDOUT, -ECANCELED, or -ENOMEM.
 */
_must_check_ int backend_pool_acquire(struct backend_pool *p, usec_t deadline, int cancel_fd,
                                      const struct backend **ret, size_t *ret_index);

/* Give the target back; the first run waiting for one gets it. */
void backend_pool_release(struct backend_pool *p, size_t index);
