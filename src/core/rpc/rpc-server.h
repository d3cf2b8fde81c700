/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The RPC server between a script and ptc (DESIGN.md section 7,
 * docs/protocol.md): newline-delimited JSON over a Unix stream socket, any
 * number of connections, requests with ids answered in any order, every
 * request checked (token, tool allow-list, call budget) on the loop thread
 * and dispatched to the worker pool; workers run the tool, redact the result
 * by value and write the one-line answer themselves.
 *
 * The server lives on one loop (loop thread functions) and its jobs on the
 * worker pool.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "basic/macro.h"

struct loop;
struct redactor;
struct registry;
struct tool_ctx;
struct worker_pool;

/* Longest request line accepted (a write_file of a large file travels in one). */
#define RPC_FRAME_MAX (16u * 1024 * 1024)
/* Requests being served at once; beyond this the server stops reading. */
#define RPC_INFLIGHT_MAX 256
/* Entries kept for --log. */
#define RPC_LOG_MAX 10000

struct rpc_server_opts {
        const char *socket_path;         /* bound here, mode 0600 */
        const char *token;               /* per-run secret; borrowed */
        const struct registry *registry; /* borrowed */
        struct worker_pool *pool;        /* borrowed */
        const struct tool_ctx *tool_ctx; /* borrowed; outlives the server */
        const struct redactor *redactor; /* may be NULL */
        int64_t max_tool_calls;
        bool log_calls;
        size_t frame_max; /* 0 = RPC_FRAME_MAX */
};

struct rpc_server;

_must_check_ int rpc_server_new(struct loop *loop, const struct rpc_server_opts *o,
                                struct rpc_server **ret);

/*
 * Stop accepting and reading, wake every writer (shutdown(2) on each
 * connection) and wait up to @timeout_ms for in-flight tool calls to end
 * (tools see ctx->cancel_fd). Loop thread. Idempotent.
 */
void rpc_server_shutdown(struct rpc_server *s, int timeout_ms);

/* Shuts down if needed, then frees. NULL-safe. */
struct rpc_server *rpc_server_free(struct rpc_server *s);

/* Dispatched tool calls so far. */
int64_t rpc_server_calls_made(const struct rpc_server *s);

/* The --log list [{tool, args_preview, duration_seconds, ok}], new reference. */
json_t *rpc_server_log(struct rpc_server *s);
