/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The MCP server behind ptc_mcp_serve() (docs/mcp.md). Private to
 * src/core/mcpserver; the files of the module:
 *   mcpserver.c          ptc_mcp_serve(): the server object, the read loop
 *                        (one message per line), the shutdown
 *   mcpserver-jsonrpc.c  JSON-RPC out (one message per line, one writer at a
 *                        time) and the dispatch of one message to its method
 *   mcpserver-calls.c    the calls in flight: one thread each, execute_code as
 *                        a ptc_execution, exposed tools, cancellation, the
 *                        wind-down; the object's last reference
 *   mcpserver-tools.c    the tools/list result
 *
 * Threads: the serving thread reads and dispatches; every tools/call runs on a
 * detached thread of its own; progress callbacks run on the engine's workers.
 * Output goes through mcpserver_send() from all of them. The object lives until
 * ptc_mcp_serve() has returned and the last call thread has ended: whichever
 * comes last frees it (mcpserver_unref()).
 */

#include <pthread.h>
#include <stdbool.h>

#include <jansson.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "ptc/ptc.h"

struct approver;
struct elicit_wait;
struct tool;

/* Longest message accepted; a longer line is answered -32600 and skipped. */
#define MCP_MESSAGE_MAX (16u * 1024 * 1024)
/*
 * tools/call requests running at once; more wait in line for a place, each at most its own
 * timeout (the wait counts against it), and past MCP_CALLS_MAX in flight they are refused
 * (-32000).
 */
#define MCP_CALLS_RUNNING_MAX 32
#define MCP_CALLS_MAX 1024
/* At the end: how long running calls get to wind down. */
#define MCP_SHUTDOWN_SEC 10

#define JSONRPC_PARSE_ERROR -32700
#define JSONRPC_INVALID_REQUEST -32600
#define JSONRPC_METHOD_NOT_FOUND -32601
#define JSONRPC_INVALID_PARAMS -32602
#define JSONRPC_SERVER_BUSY -32000

/* One tools/call in flight. Owned by its thread; linked in mcp_server.calls. */
struct mcp_call {
        struct mcp_call *next;
        struct mcp_server *server;
        json_t *id;              /* request id (owned) */
        json_t *progress_token;  /* or NULL (owned) */
        json_t *arguments;       /* owned */
        const struct tool *tool; /* an exposed tool, or NULL: execute_code */
        ptc_execution *x;        /* execute_code: created before the thread starts */
        int cancel_fd;           /* an exposed tool: eventfd, readable once cancelled */
        bool cancelled;          /* under server.lock */
        bool running;            /* under server.lock: it has its place (not in line) */
        usec_t arrived;          /* CLOCK_MONOTONIC: its timeout counts from here */
        usec_t waited;           /* how long it waited for a place to run */
};

struct mcp_server {
        ptc_engine *engine; /* borrowed; outlives every call */
        int out_fd;
        bool expose_tools;
        char default_session[32]; /* PTC_MCP_SESSION_PER_CONNECTION's id; "" without */
        double max_timeout;
        ptc_mcp_log_fn log; /* or NULL */
        void *log_userdata;
        json_t *tools_list; /* the tools/list result */

        pthread_mutex_t out_lock; /* one writer on out_fd at a time; out_* below */
        bool out_broken;          /* a write failed: out_error */
        int out_error;
        bool out_closed; /* ptc_mcp_serve() returned: nothing more is written */

        pthread_mutex_t lock; /* calls, n_calls, refs, client_elicits, elicit* */
        pthread_cond_t idle;  /* a call ended */
        pthread_cond_t place; /* a running call ended, or a waiting one was cancelled */
        struct mcp_call *calls;
        size_t n_calls;   /* in flight: running or waiting for a place */
        size_t n_running; /* at most MCP_CALLS_RUNNING_MAX */
        unsigned refs;    /* ptc_mcp_serve() + one per call thread */

        /* The policy's asks (mcpserver-elicit.c). */
        struct approver *approver;   /* the calls' approver: asks the client */
        bool log_events;             /* logging/setLevel at info or debug: execute_code's
                                      * events go out as notifications/message */
        bool client_elicits;         /* it declared the elicitation capability */
        struct elicit_wait *elicits; /* requests waiting for the client's response */
        long long elicit_ids;        /* the last request id sent */
};

/* mcpserver.c */

/*
 * The server of one connection on @e (borrowed; outlives it), writing to @out_fd (stays the
 * caller's): the tools/list result built, the policy's asks ready to go to the client. Each
 * line read goes to mcpserver_handle_message(). 0, or -errno (-ENOMEM); the caller ends it with
 * mcpserver_cancel_all_and_wait() and mcpserver_unref(). ptc_mcp_serve() reads the lines; a
 * test feeds them itself (tests/fuzz/fuzz-mcp-server.c).
 */
_must_check_ int mcpserver_new(ptc_engine *e, int out_fd, bool expose_tools, double max_timeout,
                               ptc_mcp_log_fn log_fn, void *log_userdata, struct mcp_server **ret);

/* Drop a reference (under no lock); the last one frees @s. */
void mcpserver_unref(struct mcp_server *s);
/* A line for the host's log callback (dropped without one). Any thread. */
void mcpserver_log(struct mcp_server *s, bool is_warning, const char *fmt, ...) _printf_(3, 4);

/* mcpserver-jsonrpc.c */

/* Write one message (a line) to out_fd, with "jsonrpc": "2.0" first. Steals @msg. Any thread. */
void mcpserver_send(struct mcp_server *s, json_t *msg);
/* A response with @result (stolen), or an error with @code and a message. */
void mcpserver_send_result(struct mcp_server *s, json_t *id, json_t *result);
void mcpserver_send_error(struct mcp_server *s, json_t *id, int code, const char *fmt, ...)
        _printf_(4, 5);
/* A tools/call result: @obj (stolen) as JSON text and as structuredContent. NULL on ENOMEM. */
json_t *mcpserver_tool_result(json_t *obj, bool is_error);
/* A tools/call result that is only a message, with isError. NULL on ENOMEM. */
json_t *mcpserver_tool_error(const char *fmt, ...) _printf_(1, 2);
/* One message (a line without its newline): parse, check, answer or dispatch. */
void mcpserver_handle_message(struct mcp_server *s, const char *line, size_t n);

/* mcpserver-calls.c */

/*
 * Start a tools/call of execute_code (@tool NULL) or of an exposed tool, with
 * @args (borrowed, an object or NULL) and the request's @meta; answers the
 * request itself (refusals included).
 */
void mcpserver_call_start(struct mcp_server *s, json_t *id, const struct tool *tool, json_t *args,
                          json_t *meta);
/* notifications/cancelled: cancel the call(s) with request id @request_id; no answer. */
void mcpserver_call_cancel(struct mcp_server *s, json_t *request_id);
/*
 * The end: cancel every call (they are not answered) and wait up to
 * MCP_SHUTDOWN_SEC for them. Returns the number still running.
 */
size_t mcpserver_cancel_all_and_wait(struct mcp_server *s);

/* mcpserver-elicit.c */

/* s->approver, asking the client once it declared the capability. 0 or -ENOMEM. */
int mcpserver_elicit_init(struct mcp_server *s);
void mcpserver_elicit_done(struct mcp_server *s);
/* A response (no method) from the client: to the elicitation waiting for @id, if any. */
void mcpserver_elicit_response(struct mcp_server *s, json_t *id, json_t *msg);

/* mcpserver-tools.c */

/* The tools/list result in s->tools_list. 0 or -ENOMEM. */
int mcpserver_tools_list_build(struct mcp_server *s);
