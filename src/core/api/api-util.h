/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Private to src/core/api (the implementation of include/ptc/ptc.h), api-util.c: filling a
 * ptc_diag, JSON text as ptc prints it. The files of the module:
 *   api-util.c      ptc_version(), ptc_free(), the status helpers, these
 *   engine-setup.c  the steps of a start, on core types (config, secrets, upstreams,
 *                   registry); also what ptc mcp, not yet on the API, calls
 *   engine.c        ptc_engine_*: options (set and get), host tool registration, start,
 *                   schema, stubs, calling one tool
 *   doctor-report.c ptc_doctor_report(): the engine's configuration to src/core/doctor,
 *                   and a remote backend checked end to end
 *   execution.c     ptc_execution_*: one script on exec_run(); execution.h, the output
 *                   hook a remote agent streams with
 *   host-tool.c     a struct ptc_tool_def as a registry tool, and the ptc_tool_call handle
 *
 * Nothing here prints: errors are a negative errno plus a struct diag, warnings
 * are collected in the engine.
 */

#include <jansson.h>

#include "basic/diag.h"
#include "basic/macro.h"
#include "ptc/ptc.h"

/* Copy @d into @pd (may be NULL) with @code; returns @code. */
int api_diag(struct ptc_diag *pd, int code, const struct diag *d);
/* Format into @pd (may be NULL); returns @code. */
int api_diagf(struct ptc_diag *pd, int code, const char *fmt, ...) _printf_(3, 4);
/* @v as JSON text (compact, reals at 15 digits, as ptc run prints). NULL on ENOMEM. */
char *api_json_text(const json_t *v);
