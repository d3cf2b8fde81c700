/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A client of one upstream MCP server (config mcp_servers, docs/contracts.md
 * 5): its tools become tools a script can call (<server>_<tool>).
 *
 * The server is a child process speaking JSON-RPC 2.0 over stdio, one
 * message per line (MCP stdio transport). mcp_client_start() starts it,
 * runs initialize / notifications/initialized and tools/list (all pages);
 * mcp_client_call() sends tools/call and waits for the matching answer. Many
 * calls may be in flight at once from different threads: requests carry ids
 * and one reader thread hands each answer to its caller.
 *
 * Failures never hang a caller past its deadline: a crashed server fails
 * every pending and later call with an error result; a server that does not
 * answer in time gets notifications/cancelled for that request and the
 * caller an error result; malformed lines are skipped (and counted). Server
 * stderr is passed to ptc's stderr with a "[<name>] " prefix, bounded.
 *
 * Threads: start/free from one thread; mcp_client_call() from any thread.
 */

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "basic/diag.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "core/config/config.h"

/* Longest message accepted from a server; a longer line is a protocol error for that call. */
#define MCP_CLIENT_MESSAGE_MAX (16u * 1024 * 1024)
/* Tools taken from one server; more are ignored (with a warning in the start diag). */
#define MCP_CLIENT_TOOLS_MAX 1024
/* Default start-up budget (spawn + initialize + tools/list): npx may download first. */
#define MCP_CLIENT_START_TIMEOUT_USEC (60 * USEC_PER_SEC)

struct mcp_client;

struct mcp_upstream_tool {
        char *name;           /* the server's tool name, as it gave it */
        char *description;    /* "" when none */
        json_t *input_schema; /* owned; {"type": "object", ...} ("properties" may be absent) */
};

/*
 * One entry @t (borrowed) of a tools/list answer as the tool ptc takes: the name, the
 * description ("" when none) and a copy of inputSchema with "type": "object" added when it
 * has no type. Returns 1 and the tool in *ret (release it with mcp_upstream_tool_release()),
 * 0 when the entry is invalid and skipped (the name is not a string of 1-128 bytes without
 * NUL, or inputSchema is not an object whose type, if any, is "object"), or -ENOMEM.
 * mcp_client_start() takes each tool through it; any thread.
 */
_must_check_ int mcp_upstream_tool_parse(json_t *t, struct mcp_upstream_tool *ret);
/* Free what @t holds and zero it. */
void mcp_upstream_tool_release(struct mcp_upstream_tool *t);

/*
 * Start the server of @cfg (env = @env plus cfg->env, a cfg->env entry
 * replacing @env's of the same name; command looked up on the PATH of that
 * env, used as is when it contains '/'; args; cwd = cfg->cwd or inherited),
 * in its own session and process group, dying with ptc. @cfg and @env are
 * borrowed (copied as needed). Initialize with protocol version 2025-11-25
 * (accepting 2025-06-18 and 2025-03-26 answers) and list its tools (invalid
 * ones skipped: name not a 1-128 byte string, inputSchema not an object with
 * type "object"), all before @deadline (CLOCK_MONOTONIC; USEC_INFINITY:
 * MCP_CLIENT_START_TIMEOUT_USEC from now).
 * Returns 0; on success @reterr (if non-NULL) holds a warning when tools were
 * skipped or cut off ("mcp server 'files': skipped 2 invalid tools"), else "".
 * On failure, @reterr says what, naming the server:
 *  -ENOENT (or exec's errno) "mcp server 'files': cannot execute 'npx': No such file or directory",
 *  -ETIMEDOUT "mcp server 'files': no answer to initialize within 60 s" (or tools/list),
 *  -ESRCH "mcp server 'files' exited during start-up (status 1)" ("(signal 9)"),
 *  -EPROTO a JSON-RPC error, an invalid answer or an unsupported protocol version,
 *  -ENOMEM, or another -errno of pipe/spawn/thread creation.
 * Caller frees *ret with mcp_client_free().
 */
_must_check_ int mcp_client_start(const struct mcp_server_config *cfg, char *const *env,
                                  usec_t deadline, struct mcp_client **ret, struct diag *reterr);

/*
 * Close the server's stdin; if it has not exited 2 s later, SIGTERM its process
 * group; 2 s after that (or at once after an exit) SIGKILL the whole group, so
 * nothing it started lives on; reap it; join the reader thread. Takes at most
 * about 4 s. No mcp_client_call() may be running. NULL-safe; returns NULL.
 */
struct mcp_client *mcp_client_free(struct mcp_client *c);
DEFINE_TRIVIAL_CLEANUP_FUNC_RESET(struct mcp_client *, mcp_client_free);
#define _cleanup_mcp_client_ _cleanup_(mcp_client_freep)

/* The server's name (the key under mcp_servers). Borrowed. */
const char *mcp_client_name(const struct mcp_client *c);
size_t mcp_client_tool_count(const struct mcp_client *c);
/* i-th tool in the server's order. Borrowed. */
const struct mcp_upstream_tool *mcp_client_tool(const struct mcp_client *c, size_t i);
/*
 * False once the server exited, closed its stdout, could not be written to,
 * or broke the protocol beyond repair (a message cut off mid-write). Any thread.
 */
bool mcp_client_is_alive(const struct mcp_client *c);

/*
 * Call @tool with @args (object, borrowed) and wait for the answer until
 * @deadline, or until @cancel_fd (-1: none) is readable. On 0, *ret is the
 * result for the script:
 *  - the answer's structuredContent when present (an object);
 *  - else its text content (text items joined with "\n"): parsed when it is
 *    a JSON object, {"result": value} when it is other JSON, else
 *    {"text": "..."}; non-text items (images, resources) are added as
 *    {"content": [...]};
 *  - isError true: {"error": "<text>"};
 *  - JSON-RPC error: {"error": "mcp server 'x': <message> (code N)"};
 *  - no answer in time: {"error": "mcp server 'x' did not answer tools/call
 *    'tool' within N s"}; server gone: {"error": "mcp server 'x' is not
 *    running (exited with status N)"} ("(killed by signal N)"; without the
 *    parenthesis when the status is unknown); cancelled: {"error": "cancelled"};
 *    an answer over MCP_CLIENT_MESSAGE_MAX: {"error": "mcp server 'x': the
 *    answer to tools/call 'tool' is larger than 16 MiB"}.
 * isError is checked first, then structuredContent. On timeout and cancel the
 * server gets notifications/cancelled and a late answer is dropped. @deadline
 * may be USEC_INFINITY (the answer, the server's exit or @cancel_fd ends the
 * wait). @args NULL means {}. *ret is owned by the caller. @cancel_fd stays
 * the caller's; it is only polled (an invalid fd counts as cancelled).
 * Returns -ENOMEM only. Any thread, many at once.
 */
_must_check_ int mcp_client_call(struct mcp_client *c, const char *tool, json_t *args,
                                 usec_t deadline, int cancel_fd, json_t **ret);
