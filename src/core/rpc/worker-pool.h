/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A bounded pool of worker threads for tool calls. Threads are started on
 * demand (a script that makes no call starts none) up to @max_threads; jobs
 * beyond that wait in a FIFO. The queue itself is bounded by the caller
 * (the RPC server stops reading requests while too many are in flight).
 *
 * Thread-safe: submit from any thread.
 */

#include <stddef.h>

#include "basic/macro.h"

struct worker_pool;

typedef void (*worker_job_fn)(void *userdata);

_must_check_ int worker_pool_new(size_t max_threads, struct worker_pool **ret);
/* Waits for queued and running jobs to finish, then joins the threads. NULL-safe. */
struct worker_pool *worker_pool_free(struct worker_pool *p);

/* Queue @fn(@userdata). Returns 0, or -ENOMEM (the job did not run). */
_must_check_ int worker_pool_submit(struct worker_pool *p, worker_job_fn fn, void *userdata);

/* Threads started so far (for tests and `ptc doctor`). */
size_t worker_pool_threads(struct worker_pool *p);
