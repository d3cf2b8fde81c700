/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The live events of one execution (docs/observability.md): JSON objects, one per line,
 * handed to a writer as things happen — the run's start, each tool call's start and end,
 * the script's output as it is written, limits hit, the end with the result. Every event
 * has "event" (its type) and "t" (seconds since the run started, millisecond precision).
 *
 * Nothing a script could learn of a secret leaves: argument previews and output are
 * redacted with the run's redactor (output line by line; a line longer than EVENTS_LINE_MAX
 * goes in pieces, cut only where no secret or pattern match crosses the cut, judged with
 * redact_stream_hold() bytes after it: redact-stream.h), and an event whose
 * redaction fails is dropped (fail closed), counted in the end event's "events_dropped".
 *
 * Thread context: emitted from the run's thread and the RPC worker threads at once; the
 * writer is called under the sink's lock, one line at a time, in the order of "t".
 */

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "basic/macro.h"
#include "basic/time-util.h"

struct redactor;

/* The most output bytes of one event: a longer line goes in pieces. */
#define EVENTS_LINE_MAX 4096
/* Output bytes of one stream that go out as events (the spill file's cap): past it, one
 * "limit" event ({"limit": "output", "stream"}) and no more of that stream. */
#define EVENTS_OUTPUT_MAX (5u * 1024 * 1024)

/*
 * Called with one event: @line (@n bytes, no newline) is valid for the call only. Returns 0,
 * or <0 when the event could not be taken (a full pipe): it is counted as dropped.
 */
typedef int (*event_write_fn)(void *userdata, const char *line, size_t n);

struct event_sink;

/* A sink writing to @write; @red (borrowed, may be NULL) redacts. 0 or -ENOMEM. */
_must_check_ int event_sink_new(event_write_fn write, void *userdata, const struct redactor *red,
                                struct event_sink **ret);
struct event_sink *event_sink_free(struct event_sink *s);
DEFINE_TRIVIAL_CLEANUP_FUNC_RESET(struct event_sink *, event_sink_free);
#define _cleanup_event_sink_ _cleanup_(event_sink_freep)

/* Emit an event of @type with the members of @fields (an object, taken; may be NULL).
 * NULL-safe on @s. */
void event_emit(struct event_sink *s, const char *type, json_t *fields);

/* The script wrote @p (@n bytes) to stdout (@is_err: stderr): "output" events of whole
 * lines, redacted. NULL-safe. */
void event_output(struct event_sink *s, bool is_err, const char *p, size_t n);

/* The run is over: what output is still held goes out. NULL-safe. */
void event_output_flush(struct event_sink *s);

/* Events that could not be written or were withheld so far. */
size_t event_sink_dropped(const struct event_sink *s);
