/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The result JSON of an execution (docs/contracts.md 4) with the seed's texts
 * (docs/seed.md 1.13).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/exec/exec.h"

struct result_input {
        enum exec_status status;
        const char *stdout_text; /* post-processed (ANSI-stripped, redacted) */
        size_t stdout_len;
        const char *stderr_text;
        size_t stderr_len;
        bool have_exit_code;
        int exit_code;
        double timeout; /* seconds, for the timeout sentence */
        double duration;
        int64_t calls;
        bool truncated;
        uint64_t stdout_total, stdout_omitted;
        const char *spill_path;       /* may be NULL */
        int spill_error;              /* why there is no spill file (-errno), or 0 */
        json_t *log;                  /* borrowed; NULL without --log */
        const char *error;            /* overrides the computed error (e.g. "No code provided.") */
        const char *interrupt_reason; /* "SIGTERM", "cancelled", ... */
        /* A session's cell (docs/sessions.md): the timeout sentence says what became of the
         * session's interpreter. */
        enum { RESULT_RUN, RESULT_CELL_KEPT, RESULT_CELL_LOST } cell;
};

/* "300" for 300, "2.5" for 2.5 (as the seed prints an int timeout). */
void result_format_seconds(double s, char *buf, size_t n);

/* Build the result object; NULL on ENOMEM. */
json_t *result_build(const struct result_input *in);

/*
 * The result of a run ptc itself could not do (staging, spawn, set-up):
 * status "error", empty output, no calls, exit_code null, "error": @message.
 * NULL on ENOMEM.
 */
json_t *result_internal_error(const char *message);
