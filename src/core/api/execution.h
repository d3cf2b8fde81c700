/* SPDX-License-Identifier: MIT */
#pragma once

/* What execution.c offers the rest of the core beyond include/ptc/ptc.h. */

#include <stdbool.h>
#include <stddef.h>

#include "ptc/ptc.h"

struct approver;
struct backend;

/*
 * Before the run: run on @backend (borrowed; must outlive the run), not on a target the
 * engine's pool picks: how ptc doctor checks each target of a pool. -EINVAL, -EBUSY.
 */
int execution_set_backend(ptc_execution *x, const struct backend *backend);

/*
 * Before the run: hand each chunk the script writes to @fn as it is read (exec_opts
 * .on_output), on the run's thread, besides the capture: how a remote agent streams the
 * output to its host. -EINVAL without an execution, -EBUSY after the run.
 */
int execution_on_output(ptc_execution *x,
                        void (*fn)(void *userdata, bool is_err, const char *p, size_t n),
                        void *userdata);

/*
 * Before the run: @a (borrowed; must outlive the run) answers the policy's asks of this
 * run instead of the engine's approver: how `ptc mcp` asks its client (MCP elicitation).
 * -EINVAL, -EBUSY.
 */
int execution_set_approver(ptc_execution *x, struct approver *a);

/*
 * Before the run: as execution_set_approver(), but the execution owns @a and @host_data
 * (freed with approver_free() and free() when it goes or another replaces them); NULL @a:
 * the engine's approver again. -EINVAL, -EBUSY (then the caller still owns both).
 */
int execution_adopt_approver(ptc_execution *x, struct approver *a, void *host_data);
