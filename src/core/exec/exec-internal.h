/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What the two ways of running a script share inside exec/: a local run (exec.c: the
 * script is ptc's child) and a remote one (exec-remote.c: the script runs on a target
 * through ptc's agent there, docs/remote.md). Both capture the output the same way and
 * build the result from it the same way.
 */

#include <stdbool.h>

#include <jansson.h>

#include "basic/diag.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "core/exec/exec.h"
#include "core/exec/result.h"
#include "core/output/capture.h"

/* Arm the one-shot timerfd @timer_fd for @when (CLOCK_MONOTONIC; the past fires at once). */
void exec_arm_timer(int timer_fd, usec_t when);

/* Set up the stdout capture (head, tail, spill file) and the stderr one for @o's limits. */
_must_check_ int exec_capture_init(const struct exec_opts *o, struct capture *out,
                                   struct capture *err);

/*
 * The result from the captured output and @in's status, exit code, counters and log:
 * ANSI stripped and redacted (the spill file too), the output withheld when redaction
 * fails. @redact_log: @in->log was made where the redactor could not see it (a remote
 * agent) and is redacted here. Returns 0 with *ret, or -ENOMEM.
 */
_must_check_ int exec_result(const struct exec_opts *o, struct capture *out, struct capture *err,
                             struct result_input *in, bool redact_log, json_t **ret,
                             enum exec_status *ret_status);

/* exec_run() for a remote backend (exec-remote.c). */
_must_check_ int exec_run_remote(const struct exec_opts *o, json_t **ret,
                                 enum exec_status *ret_status, struct diag *reterr);
