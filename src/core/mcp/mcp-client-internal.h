/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Internal to the MCP client (mcp-client.h): the parts it is split into share
 * these bounds, the client struct and the helpers below. Not for other modules.
 *   mcp-transport.c  the server process and its pipes: exit status and death,
 *                    whole-line writes under a deadline, the reader thread
 *                    (stdout and stderr, the exit)
 *   mcp-jsonrpc.c    JSON-RPC framing: lines to messages, answers to their
 *                    pending requests, requests with deadline and cancel
 *   mcp-client.c     the MCP protocol and session: start-up (initialize,
 *                    tools/list), tools/call results, teardown, accessors
 * Thread rules: as in struct mcp_client's field comments (lock, wlock, the
 * reader thread's own fields).
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "basic/buf.h"
#include "basic/diag.h"
#include "basic/time-util.h"
#include "core/mcp/mcp-client.h"

#define PROTOCOL_VERSION "2025-11-25"
/* One server stderr line passed on; the rest of that line is dropped (marked " [...]"). */
#define STDERR_LINE_MAX 4096
/* Server stderr passed on in total: a chatty server must not flood ptc's own stderr. */
#define STDERR_TOTAL_MAX (1024 * 1024)
/* tools/list pages followed; a server that hands out cursors forever is cut off here. */
#define TOOLS_PAGES_MAX 100
/* Longest tool name taken; MCP asks for 1-128 characters. */
#define TOOL_NAME_MAX 128
/* Read size for the server's stdout and stderr. */
#define READ_CHUNK (64 * 1024)
/* Bytes read from stdout after the server exited (its last answers); a grandchild holding
 * the pipe open and writing on cannot keep the reader there. */
#define EXIT_DRAIN_MAX (2 * (size_t) MCP_CLIENT_MESSAGE_MAX)
/* mcp_client_free(): wait this long after closing stdin, and again after SIGTERM. */
#define STOP_GRACE_USEC (2 * USEC_PER_SEC)
/* After EOF on stdout, how long to wait for the exit (to report its status) before
 * declaring the server dead anyway: it may close stdout and keep running. */
#define EOF_EXIT_GRACE_USEC (1 * USEC_PER_SEC)
/* Write budget of the reader thread's answers to server requests: a server that stopped
 * reading its stdin must not stall the reader (and with it every caller). */
#define REPLY_WRITE_USEC (1 * USEC_PER_SEC)
/* Write budget of notifications/cancelled: the caller already has its error result. */
#define CANCEL_WRITE_USEC (50 * USEC_PER_MSEC)
/* JSON-RPC "method not found". */
#define JSONRPC_METHOD_NOT_FOUND (-32601)

/*
 * Finds the top-level "id" of a line too long to keep, so that its caller
 * gets an error now instead of at its deadline. It tracks strings and
 * nesting, so an "id" inside the payload does not count, wherever the server
 * put the key (Python SDKs write it first, the TypeScript SDK last).
 */
struct id_scan {
        int depth;
        bool object; /* the top-level value is an object */
        bool in_string;
        bool escape;
        bool in_key;     /* reading a key of the top-level object */
        bool expect_key; /* the next string at depth 1 is a key */
        size_t key_len;
        char key[3];
        enum { ID_NONE, ID_COLON, ID_VALUE, ID_DIGITS } state;
        bool negative;
        bool found;
        int64_t value;
};

struct pending {
        int64_t id;
        int efd;        /* eventfd written when done, or when the client dies */
        json_t *answer; /* the whole response message, owned; with error -EBADMSG a string
                         * (the parser's message); NULL with -E2BIG */
        int error;      /* 0, -E2BIG (over MCP_CLIENT_MESSAGE_MAX) or -EBADMSG (not JSON) */
        bool done;
        struct pending *next;
};

struct mcp_client {
        char *name;
        struct mcp_upstream_tool *tools;
        size_t n_tools;

        pid_t pid;
        int pidfd;   /* -1 when the kernel has none */
        int in_fd;   /* the server's stdin, non-blocking; under wlock */
        int out_fd;  /* the server's stdout, non-blocking; reader thread only */
        int err_fd;  /* the server's stderr, non-blocking; reader thread only */
        int stop_fd; /* eventfd: mcp_client_free() tells the reader to end */
        int dead_fd; /* eventfd written once, when the client goes dead */

        pthread_t reader;
        bool reader_started;

        pthread_mutex_t wlock; /* writes to in_fd: one whole line at a time */
        pthread_mutex_t lock;  /* everything below up to the atomics */
        struct pending *pending;
        bool dead;
        bool status_known;
        bool status_signal; /* killed by a signal: status is the signal number */
        int status;

        atomic_bool alive;
        atomic_int_fast64_t next_id;
        atomic_uint_fast64_t n_malformed; /* lines that were not JSON-RPC, skipped */
        atomic_uint_fast64_t n_oversized; /* lines over MCP_CLIENT_MESSAGE_MAX, discarded */

        /* Reader thread only. */
        struct buf line;
        bool discarding;
        struct id_scan scan;
        char err_line[STDERR_LINE_MAX];
        size_t err_len;
        bool err_cut;
        size_t err_total;
        bool err_muted;
};

/* ---- mcp-transport.c ---- */

/* Add one to / consume the counter of eventfd @fd; errors ignored (see the definitions). */
void mcp_efd_signal(int fd);
void mcp_efd_drain(int fd);
/*
 * Record the server's exit status if it has exited, without reaping it (takes c->lock);
 * true when it has exited.
 */
bool mcp_note_exit(struct mcp_client *c);
/*
 * "exited with status N" / "killed by signal N" in @out, or NULL while the status is
 * unknown (takes c->lock).
 */
const char *mcp_status_text(struct mcp_client *c, char *out, size_t n);
/*
 * Write @msg as one line to the server's stdin before @deadline; -errno, and the client
 * goes dead on a broken pipe.
 */
int mcp_send_message(struct mcp_client *c, json_t *msg, usec_t deadline);
/* The reader thread (pthread_create's start routine, @arg the client). */
void *mcp_reader_main(void *arg);

/* ---- mcp-client.c ---- */

/*
 * The steps of a client's life that read what the server answered, apart from the waiting
 * for it, so that a test can feed them answers (tests/fuzz/fuzz-mcp-client.c).
 *
 * mcp_client_new: a client named @name of no server yet (no process, no reader thread):
 * 0 or -errno; free it with mcp_client_free(). mcp_check_initialize: whether @answer
 * (the whole response message, borrowed) to initialize names a protocol version ptc
 * speaks: 0, or -EPROTO with @reterr. mcp_take_tools: the tools of one tools/list answer
 * into c->tools (invalid ones counted in *skipped, those over MCP_CLIENT_TOOLS_MAX in
 * *ignored); 0 with *ret_cursor the next page's cursor (caller frees) or NULL after the
 * last page (and for "method not found" on the @first page: no tools); -EPROTO or
 * -ENOMEM with @reterr. mcp_map_answer: the script's result for @msg, a response to
 * tools/call of @tool, as mcp_client_call() describes; 0 or -ENOMEM.
 */
_must_check_ int mcp_client_new(const char *name, struct mcp_client **ret);
_must_check_ int mcp_check_initialize(struct mcp_client *c, json_t *answer, struct diag *reterr);
_must_check_ int mcp_take_tools(struct mcp_client *c, json_t *answer, bool first, char **ret_cursor,
                                size_t *skipped, size_t *ignored, struct diag *reterr);
_must_check_ int mcp_map_answer(struct mcp_client *c, const char *tool, json_t *msg, json_t **ret);

/* ---- mcp-jsonrpc.c ---- */

/*
 * Bytes from the server's stdout: split into lines, each a JSON-RPC message (reader
 * thread only).
 */
void mcp_feed_stdout(struct mcp_client *c, const char *p, size_t n);
/* Free @p (its eventfd and answer); returns NULL. */
struct pending *mcp_pending_free(struct pending *p);
/*
 * Send request @method with @params (borrowed) and wait for its answer until @deadline or
 * until @cancel_fd is readable; see the definition for the error codes.
 */
int mcp_request(struct mcp_client *c, const char *method, json_t *params, usec_t deadline,
                int cancel_fd, json_t **ret);
