/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The RPC server between a script and ptc (docs/contracts.md 7,
 * docs/protocol.md): newline-delimited JSON over a Unix stream socket, any
 * number of connections, requests with ids answered in any order, every
 * request checked (token, tool allow-list, call budget).
 *
 * Threads: the server has its own bounded set of worker threads and its own
 * epoll set (leader/follower). The thread that wakes up for a readable
 * connection reads the request and runs the tool itself, so a call costs one
 * wake-up, not a hand-off from a reader thread to a worker. Connections are
 * registered EPOLLONESHOT: one thread reads a connection at a time and re-arms
 * it before running its tool, so the next request on the same connection can
 * be taken by another thread meanwhile. A thread about to run a tool starts
 * another one when none is left waiting (up to max_threads), so a script that
 * calls tools one at a time uses one thread and ten concurrent callers get
 * ten; quick tools (tool_def.quick: read_file) only up to one thread per CPU,
 * since more would only take turns.
 *
 * The functions below are called from the thread that owns the execution.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "basic/macro.h"

struct redactor;
struct registry;
struct tool_ctx;

/* Longest request line accepted (a large file written by a tool travels in one). */
#define RPC_FRAME_MAX (16u * 1024 * 1024)
/* Tool calls served at once (worker threads, started on demand). */
#define RPC_THREADS_MAX 16
/* Connections open at once; more are accepted and closed at once. */
#define RPC_CONNECTIONS_MAX 4096
/* Entries kept for --log. */
#define RPC_LOG_MAX 10000

struct rpc_server_opts {
        const char *socket_path;         /* bound here, mode 0600 */
        const char *token;               /* per-run secret; borrowed */
        const struct registry *registry; /* borrowed */
        size_t max_threads;              /* 0 = RPC_THREADS_MAX */
        const struct tool_ctx *tool_ctx; /* borrowed; outlives the server */
        /* For the call log; may be NULL. Tool results are redacted with tool_ctx->redactor
         * (registry_call()): when set, it must be that one. */
        const struct redactor *redactor;
        int64_t max_tool_calls;
        bool log_calls;
        size_t frame_max; /* 0 = RPC_FRAME_MAX */
        /*
         * Called on a worker thread for every dispatched call, right after it was
         * counted (@count: calls so far, this one included), before the tool runs.
         * May be called from several threads at once; must not block. NULL: none.
         */
        void (*on_call)(void *userdata, const char *tool, int64_t count);
        void *on_call_userdata;
        /* The run's live events: "call" and "call_end" of each call, "limit" when the
         * budget is spent (core/events/events.h). NULL: none. */
        struct event_sink *events;
        /* The run's trace: a span per tool call on its worker thread. NULL: none. */
        struct trace *trace;
};

struct rpc_server;

/* Bind, listen and start the first worker thread. */
_must_check_ int rpc_server_new(const struct rpc_server_opts *o, struct rpc_server **ret);

/*
 * Stop accepting and reading, wake every writer (shutdown(2) on each
 * connection) and wait up to @timeout_ms for in-flight tool calls to end
 * (tools see ctx->cancel_fd, which the caller should signal first).
 * Idempotent.
 */
void rpc_server_shutdown(struct rpc_server *s, int timeout_ms);

/*
 * The answer to one request line of a script (@line: @n bytes without the newline, not
 * necessarily NUL-terminated), as docs/protocol.md says: the checks (UTF-8, JSON, token,
 * tool, arguments, budget), then the tool, run on the calling thread. Returns 0 with
 * *ret_answer the answer line, '\n' included (caller frees), or NULL when none is due (a
 * blank line; a call that ended past the execution's deadline); -ENOMEM. The worker
 * threads answer every line they read with it; a request is answered without a socket
 * through it too (tests/fuzz/fuzz-rpc.c). Any thread.
 */
_must_check_ int rpc_server_answer(struct rpc_server *s, const char *line, size_t n,
                                   char **ret_answer);

/* Shuts down if needed, then frees. NULL-safe. */
struct rpc_server *rpc_server_free(struct rpc_server *s);

/* Dispatched tool calls so far. */
int64_t rpc_server_calls_made(const struct rpc_server *s);

/* The --log list [{tool, args_preview, duration_seconds, ok}], new reference. */
json_t *rpc_server_log(struct rpc_server *s);
