/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for ptc's MCP server (src/core/mcpserver/): what an MCP client sends. The input
 * is a whole session, cut into lines at '\n' as ptc_mcp_serve() cuts it (a last line without
 * its newline counts too), each handed in order to mcpserver_handle_message(), the server's
 * own parse and dispatch, on a server made by mcpserver_new() that writes to a memfd. The
 * engine behind it is not started, so a tools/call of execute_code stops at its checks
 * (answered "cannot start the call") and no Python runs; its registry holds three exposed
 * tools: "echo" answers {"args": ...} at once, "block" waits for its cancellation, and a
 * policy rule makes "asked" ask first: the client answers an elicitation/create when it
 * declared the capability, else the policy's headless answer (allow) decides.
 *
 * After each line the target waits until no "echo" call runs, no cancelled call is still
 * ending, and an "asked" one only waits for the client's answer to an elicitation (a "block"
 * or "asked" call may wait for a later line), then checks what the server wrote meanwhile:
 * every line one JSON-RPC 2.0 object, either a response (an "id" and a "result" object, or
 * an "error" with an integer code and a string message) or a request or notification of its
 * own (elicitation/create with the next integer id, one at a time, and notifications/cancelled
 * withdrawing it); a request with a string or integer id gets exactly one response with that
 * id while its line is handled (a tools/call of "block" or "asked" may answer later or,
 * cancelled, never), a notification none, a line that is no valid request one error; every
 * response answers some request; initialize answers a protocol version ptc speaks. At the end
 * every call is cancelled (a cancelled call does not answer; one that ended just before may).
 * Nothing may crash, hang (a call still running after 10 s) or leak.
 *
 * The corpus (corpus/mcp-server/) replays under meson through fuzz-main.c; scripts/fuzz.sh
 * mcp-server fuzzes it for real (docs/testing.md, "Fuzzing").
 */

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/buf.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "basic/utf8.h"
#include "core/api/engine.h"
#include "core/config/config.h"
#include "core/mcpserver/mcpserver.h"
#include "core/registry/registry.h"
#include "core/tools/tool.h"

/* How long a line may keep an "echo" call running before it counts as a hang. */
#define SETTLE_USEC (10 * USEC_PER_SEC)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int echo_run(const struct tool *t, const struct tool_ctx *ctx, json_t *args, json_t **ret)
{
        *ret = json_pack("{s:O}", "args", args);
        return *ret ? 0 : -ENOMEM;
}

/* Until the call is cancelled (notifications/cancelled, the end) or its deadline. */
static int block_run(const struct tool *t, const struct tool_ctx *ctx, json_t *args, json_t **ret)
{
        struct pollfd p = {.fd = ctx->cancel_fd, .events = POLLIN};

        (void) poll(&p, 1, poll_timeout_ms(ctx->deadline));
        *ret = json_object();
        return *ret ? 0 : -ENOMEM;
}

struct session {
        struct mcp_server *server;
        int out_fd;
        off_t read_at;              /* of out_fd: what was checked */
        struct buf partial;         /* a line of the output not complete yet */
        json_t *may_answer;         /* ids of "block" and "asked" calls (an array) */
        json_t *must_id;            /* the current line's request id, or NULL */
        unsigned must_answers;      /* responses with must_id seen for the current line */
        bool expect_error;          /* the current line is no valid message: one error */
        unsigned errors_without_id; /* responses with id null for the current line */
        json_int_t elicit_ids;      /* the last elicitation/create id seen */
        json_int_t elicit_waiting;  /* the one waiting for the client's response, or 0 */
};

static bool id_is_valid(json_t *id)
{
        return json_is_string(id) || json_is_integer(id);
}

static bool is_protocol_version(json_t *v)
{
        const char *s = json_string_value(v);

        return s && (strcmp(s, "2025-11-25") == 0 || strcmp(s, "2025-06-18") == 0);
}

static bool may_answer(struct session *x, json_t *id)
{
        size_t i;
        json_t *v;

        json_array_foreach(x->may_answer, i, v)
        {
                if (json_equal(v, id))
                        return true;
        }
        return false;
}

static void check_response(struct session *x, json_t *msg)
{
        json_t *id = json_object_get(msg, "id"), *result = json_object_get(msg, "result"),
               *error = json_object_get(msg, "error");

        if (!id || json_object_size(msg) != 3 || !!result == !!error)
                abort();
        if (error && (!json_is_object(error) || !json_is_integer(json_object_get(error, "code")) ||
                      !json_is_string(json_object_get(error, "message"))))
                abort();
        if (result && (!json_is_object(result) ||
                       !(json_object_get(result, "structuredContent")
                                 ? json_is_object(json_object_get(result, "structuredContent"))
                                 : true)))
                abort();
        /* initialize: a version ptc speaks, whatever the client asked for. */
        if (result && json_object_get(result, "protocolVersion") &&
            !is_protocol_version(json_object_get(result, "protocolVersion")))
                abort();
        /* A tools/call result: content (with the text), isError, structuredContent an object. */
        if (result && json_object_get(result, "isError") &&
            (!json_is_boolean(json_object_get(result, "isError")) ||
             !json_is_array(json_object_get(result, "content"))))
                abort();
        if (json_is_null(id)) {
                if (!error)
                        abort();
                x->errors_without_id++;
                return;
        }
        if (!id_is_valid(id))
                abort();
        if (x->must_id && json_equal(id, x->must_id)) {
                x->must_answers++;
                return;
        }
        /* Else it answers a call that may answer at any time. */
        if (!may_answer(x, id))
                abort();
}

/* A request or notification of the server's own. */
static void check_server_message(struct session *x, json_t *msg)
{
        const char *m = json_string_value(json_object_get(msg, "method"));
        json_t *id = json_object_get(msg, "id"), *params = json_object_get(msg, "params");

        if (!m || !json_is_object(params))
                abort();
        if (strcmp(m, "elicitation/create") == 0) {
                /* Ids 1, 2, 3 ...: the client's response names one of them. */
                if (!json_is_integer(id) || json_integer_value(id) != ++x->elicit_ids ||
                    !json_is_string(json_object_get(params, "message")) ||
                    !json_is_object(json_object_get(params, "requestedSchema")))
                        abort();
                /* One question at a time. */
                if (x->elicit_waiting)
                        abort();
                x->elicit_waiting = x->elicit_ids;
        } else if (strcmp(m, "notifications/cancelled") == 0) {
                /* An elicitation withdrawn: its call was cancelled. */
                json_t *rid = json_object_get(params, "requestId");

                if (id || !json_is_integer(rid) || json_integer_value(rid) != x->elicit_waiting)
                        abort();
                x->elicit_waiting = 0;
        } else
                abort(); /* progress and log notifications belong to execute_code runs */
}

static void check_output_line(struct session *x, const char *p, size_t n)
{
        json_t *msg;

        if (!utf8_is_valid(p, n))
                abort();
        msg = json_loadb(p, n, JSON_REJECT_DUPLICATES, NULL);
        if (!json_is_object(msg) || !json_is_string(json_object_get(msg, "jsonrpc")) ||
            strcmp(json_string_value(json_object_get(msg, "jsonrpc")), "2.0") != 0)
                abort();
        if (json_object_get(msg, "method"))
                check_server_message(x, msg);
        else
                check_response(x, msg);
        json_decref(msg);
}

/* Check what the server wrote since the last call. */
static void drain(struct session *x)
{
        char chunk[4096];
        ssize_t k;

        while ((k = pread(x->out_fd, chunk, sizeof(chunk), x->read_at)) > 0) {
                x->read_at += k;
                if (buf_append(&x->partial, chunk, (size_t) k) < 0)
                        abort();
        }
        for (;;) {
                char *nl = x->partial.len ? memchr(x->partial.data, '\n', x->partial.len) : NULL;

                if (!nl)
                        break;
                check_output_line(x, x->partial.data, (size_t) (nl - x->partial.data));
                buf_consume(&x->partial, (size_t) (nl - x->partial.data) + 1);
        }
}

/*
 * Whether the server waits for the client: no call of "echo" runs (it must end while its
 * line is handled; one waiting in line behind 32 running calls answers once a place frees,
 * MCP_CALLS_RUNNING_MAX), no cancelled call is still ending (withdrawing its elicitation), and a
 * running call of "asked" is only there while an elicitation waits for the client's response
 * (the other asks wait for their turn, one question at a time; one in line waits for a place).
 */
static bool settled(struct session *x)
{
        bool busy = false, asked = false;

        pthread_mutex_lock(&x->server->lock);
        for (struct mcp_call *c = x->server->calls; c; c = c->next) {
                const char *name = c->tool ? c->tool->name : "";
                /* Running, or about to: its thread takes a free place when it starts. One
                 * waiting in line (every place taken) does nothing until a place frees. */
                bool on = c->running || x->server->n_running < MCP_CALLS_RUNNING_MAX;

                busy = busy || c->cancelled || (strcmp(name, "echo") == 0 && on);
                asked = asked || (strcmp(name, "asked") == 0 && on);
        }
        pthread_mutex_unlock(&x->server->lock);
        /* After the look at the calls: a call answers before it leaves the list. */
        drain(x);
        return !busy && (!asked || x->elicit_waiting);
}

static void settle(struct session *x)
{
        usec_t until = now_usec() + SETTLE_USEC;

        while (!settled(x)) {
                if (now_usec() > until)
                        abort();
                (void) usleep(50);
        }
}

/*
 * What the server must answer to @line, as mcpserver_handle_message() reads it: sets
 * x->must_id (a request), x->expect_error (no valid message), or neither (a notification, a
 * response); records the ids of calls that may answer later.
 */
static void expect(struct session *x, const char *line, size_t n)
{
        json_t *msg = NULL, *id, *method, *params, *name, *jsonrpc;

        x->must_id = NULL;
        x->expect_error = false;
        x->must_answers = x->errors_without_id = 0;
        while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
                n--;
        if (n == 0)
                return;
        if (utf8_is_valid(line, n))
                msg = json_loadb(line, n, JSON_DECODE_ANY, NULL);
        id = json_object_get(msg, "id");
        if (!json_is_object(msg) || (id && !id_is_valid(id))) {
                x->expect_error = true;
                json_decref(msg);
                return;
        }
        method = json_object_get(msg, "method");
        jsonrpc = json_object_get(msg, "jsonrpc");
        params = json_object_get(msg, "params");
        if (!method && (json_object_get(msg, "result") || json_object_get(msg, "error"))) {
                /* A response: to the elicitation waiting, when it names its id. */
                if (json_is_integer(id) && json_integer_value(id) == x->elicit_waiting)
                        x->elicit_waiting = 0;
                json_decref(msg);
                return;
        }
        if (!json_is_string(method) || !json_is_string(jsonrpc) ||
            strcmp(json_string_value(jsonrpc), "2.0") != 0) {
                if (id)
                        x->must_id = json_incref(id);
                else
                        x->expect_error = true;
                json_decref(msg);
                return;
        }
        if (!id) {
                json_decref(msg); /* a notification */
                return;
        }
        name = json_object_get(params, "name");
        /* "echo" too: it waits in line when 32 calls run. */
        if (strcmp(json_string_value(method), "tools/call") == 0 && json_is_object(params) &&
            json_is_string(name) &&
            (strcmp(json_string_value(name), "block") == 0 ||
             strcmp(json_string_value(name), "asked") == 0 ||
             strcmp(json_string_value(name), "echo") == 0)) {
                if (json_array_append(x->may_answer, id) < 0)
                        abort();
        }
        x->must_id = json_incref(id);
        json_decref(msg);
}

/* After @line: its one answer came (unless a call that may answer later) and nothing else. */
static void check_answered(struct session *x)
{
        if (x->expect_error && x->errors_without_id != 1)
                abort();
        if (!x->expect_error && x->errors_without_id != 0)
                abort();
        if (x->must_id) {
                /* One answer; the count is open when a call that may answer late has its id. */
                if (x->must_answers != 1 && !may_answer(x, x->must_id))
                        abort();
                json_decref(x->must_id);
                x->must_id = NULL;
        }
}

static int engine_init(ptc_engine *e)
{
        static const char *const enabled[] = {"echo", "block", "asked", NULL};
        const struct registry_extra_tool tools[] = {
                {.name = "echo", .description = "Echo the arguments.", .run = echo_run},
                {.name = "block", .description = "Wait until cancelled.", .run = block_run},
                {.name = "asked", .description = "Echo, once allowed.", .run = echo_run},
        };
        struct policy_rule *rule;

        *e = (ptc_engine){};
        if (config_init(&e->config) < 0)
                return -ENOMEM;
        rule = calloc(1, sizeof(*rule));
        if (!rule || strv_extend(&rule->tools, "asked") < 0) {
                free(rule);
                return -ENOMEM;
        }
        rule->action = POLICY_ASK;
        e->config.policy.rules = rule;
        e->config.policy.n_rules = 1;
        pthread_mutex_init(&e->tool_python_lock, NULL);
        pthread_mutex_init(&e->sessions_lock, NULL);
        e->tool_python_resolved = true; /* no linter: nothing to look for */
        return registry_new_with(&e->config, (char *const *) enabled, tools, ELEMENTSOF(tools),
                                 &e->registry, NULL, NULL);
}

static void engine_release(ptc_engine *e)
{
        e->registry = registry_free(e->registry);
        pthread_mutex_destroy(&e->tool_python_lock);
        pthread_mutex_destroy(&e->sessions_lock);
        config_release(&e->config);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *p = (const char *) data, *end = p + size;
        struct session x = {.partial = BUF_INIT(64u * 1024 * 1024)};
        ptc_engine e;

        x.out_fd = memfd_create("fuzz-mcp-server", MFD_CLOEXEC);
        x.may_answer = json_array();
        if (x.out_fd < 0 || !x.may_answer || engine_init(&e) < 0 ||
            mcpserver_new(&e, x.out_fd, true, 60, NULL, NULL, &x.server) < 0)
                abort();

        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                size_t n = nl ? (size_t) (nl - p) : (size_t) (end - p);

                expect(&x, p, n);
                mcpserver_handle_message(x.server, p, n);
                settle(&x);
                check_answered(&x);
                p += n + (nl ? 1 : 0);
        }

        /* The end, as ptc_mcp_serve() ends: cancelled calls do not answer. */
        if (mcpserver_cancel_all_and_wait(x.server) != 0)
                abort();
        drain(&x);
        if (x.partial.len != 0)
                abort();
        /* Wait for the call threads to let go of the server: then it is ours to free. */
        for (;;) {
                unsigned refs;

                pthread_mutex_lock(&x.server->lock);
                refs = x.server->refs;
                pthread_mutex_unlock(&x.server->lock);
                if (refs == 1)
                        break;
                (void) usleep(50);
        }
        mcpserver_unref(x.server);

        engine_release(&e);
        buf_release(&x.partial);
        json_decref(x.may_answer);
        safe_close(x.out_fd);
        return 0;
}
