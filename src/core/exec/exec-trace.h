/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A script's start in a trace (docs/observability.md, "Traces"): the sandbox's steps, each
 * layer's setup as the child timed it, and the interpreter's own start, from its exec to its
 * opening the script file (Python does that once it is initialised, site imported, right
 * before it compiles the script), seen through inotify without touching the script.
 *
 * Only with a trace: a run without one starts nothing of this.
 */

#include "basic/macro.h"
#include "basic/time-util.h"
#include "core/events/trace.h"
#include "core/sandbox/sandbox.h"

/* Spans for @st's steps and the exec that ended at @spawned, on the calling thread. NULL-safe. */
void exec_trace_sandbox(struct trace *t, const struct sandbox_timings *st, usec_t spawned);

/* An inotify fd (non-blocking) that becomes readable when @script_path is opened, or -errno. */
_must_check_ int exec_interpreter_watch(const char *script_path);

/* Drop the opens seen so far on @fd (before the exec, they were not the interpreter's). */
void exec_interpreter_watch_forget(int fd);
