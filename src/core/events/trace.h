/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A trace of one execution (docs/observability.md, "Traces"): spans of what ptc did — the
 * run, stub generation, staging, the RPC server, the script's start in its sandbox, its
 * life, each tool call on the thread that served it, the result's post-processing, the
 * teardown — kept in memory and written at the end in the Chrome trace-event format
 * (JSON, "X" complete events with microsecond timestamps), which Perfetto and
 * chrome://tracing open.
 *
 * Thread context: spans are added from any thread (locked); trace_write() once at the end.
 */

#include <stddef.h>

#include <jansson.h>

#include "basic/macro.h"
#include "basic/time-util.h"

/* Spans kept; later ones are counted in the trace's metadata, not kept. */
#define TRACE_SPANS_MAX 100000

struct trace;

/* A trace whose time 0 is @origin (CLOCK_MONOTONIC). 0 or -ENOMEM. */
_must_check_ int trace_new(usec_t origin, struct trace **ret);
struct trace *trace_free(struct trace *t);
DEFINE_TRIVIAL_CLEANUP_FUNC_RESET(struct trace *, trace_free);

/*
 * A span @name (static or copied: it is copied) of category @cat (static) from @begin to
 * @end (CLOCK_MONOTONIC) on the calling thread, with @args (an object, taken; may be NULL).
 * NULL-safe on @t.
 */
void trace_span(struct trace *t, const char *name, const char *cat, usec_t begin, usec_t end,
                json_t *args);

/* A span from @begin to now, on the calling thread. NULL-safe. */
void trace_span_now(struct trace *t, const char *name, const char *cat, usec_t begin, json_t *args);

/*
 * Write the trace to @path (created 0600, replaced atomically): {"traceEvents": [...],
 * "displayTimeUnit": "ms", "otherData": {...}}. 0 or -errno.
 */
_must_check_ int trace_write(struct trace *t, const char *path);
