/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * One execution end to end (docs/contracts.md 2): staging dir, stub module,
 * RPC server, the child, supervision on one event loop, output capture and
 * post-processing, the result JSON.
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>

#include <jansson.h>

#include "basic/diag.h"
#include "basic/macro.h"
#include "core/config/config.h"

struct approver;
struct backend;
struct event_sink;
struct trace;
struct redactor;
struct registry;

struct exec_opts {
        const char *code; /* the script; may contain NUL bytes */
        size_t code_len;
        const struct ptc_config *config; /* merged; timeout, limits, mode, module */
        const struct registry *registry; /* enabled tools */
        char *const *base_env;           /* scrubbed environment (env_build_child) */
        const struct redactor *redactor; /* may be NULL */
        struct approver *approver;       /* who answers the policy's asks; NULL: nobody */
        const char *python;              /* resolved interpreter */
        const char *cwd;                 /* project mode working directory (absolute) */
        bool log_calls;                  /* add tool_calls to the result */
        int cancel_fd;                   /* readable = cancel (status interrupted); -1 for none */
        /* Read (atomically) when cancel_fd fires: what the result names ("Execution
         * interrupted (SIGTERM)"); NULL, or pointing to NULL, for "cancelled". */
        const char *const *cancel_reason;
        const struct rlimit *child_nofile; /* RLIMIT_NOFILE for the script; NULL = ptc's */
        /* Each dispatched tool call, from a worker thread (see rpc_server_opts.on_call). */
        void (*on_call)(void *userdata, const char *tool, int64_t count);
        void *on_call_userdata;
        /* A warning for the host, one line ("isolation auto: ...: running without the
         * namespaces layer ..."), on the thread of exec_run(); NULL drops them. */
        void (*on_warning)(void *userdata, const char *line);
        void *on_warning_userdata;
        /*
         * Each chunk the script writes (@is_err: to stderr), as it is read, from the thread
         * of exec_run(), besides the capture: how a remote agent streams the output to its
         * host (docs/remote.md). NULL: none.
         */
        void (*on_output)(void *userdata, bool is_err, const char *p, size_t n);
        void *on_output_userdata;
        /*
         * Where the script runs (remote/backend.h): NULL or a local backend for this
         * machine; otherwise the script and the tools on files and processes run on the
         * target through ptc's agent there, and the tools that run on the host
         * (tool.runs_on_host) answer its calls here.
         */
        const struct backend *backend;
        /* The run's live events (core/events/events.h); NULL: none. Borrowed. */
        struct event_sink *events;
        /* The run's trace (core/events/trace.h): spans of its phases; NULL: none. Borrowed. */
        struct trace *trace;
};

enum exec_status {
        EXEC_SUCCESS,
        EXEC_ERROR,
        EXEC_TIMEOUT,
        EXEC_INTERRUPTED,
};

/*
 * Run the script. On 0, *ret is the result object (docs/contracts.md 4) and
 * *ret_status its status. A negative errno means ptc itself failed before or
 * around the script (staging, socket, spawn); @reterr says what.
 */
_must_check_ int exec_run(const struct exec_opts *o, json_t **ret, enum exec_status *ret_status,
                          struct diag *reterr);

const char *exec_status_to_string(enum exec_status s);

/* Grace between SIGTERM/SIGINT and SIGKILL. */
#define EXEC_KILL_GRACE_USEC (2 * USEC_PER_SEC)
/* Full stdout kept in the spill file at most. */
#define EXEC_SPILL_MAX (5u * 1000 * 1000)
