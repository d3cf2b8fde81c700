/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the RPC server's requests (src/core/rpc/rpc-server.c): what a script sends
 * on its socket. The input is the byte stream of one connection, cut into lines at '\n' as
 * the server cuts it (a last line without its newline is never complete and never answered);
 * each line goes through rpc_server_answer(), the server's own dispatch, on a fresh server
 * per input (token, a budget of 8 calls, the call log and live events on) whose registry
 * holds two fake tools: "echo" answers {"args": <its arguments>}, "crash" fails with -EIO.
 *
 * Checked for every line: a blank one gets no answer and any other exactly one, a single
 * line of compact JSON, valid UTF-8, an object of "id" and either "result" (an object) or
 * "error" (a string); "id" is the request's own (null when there was none or the line was
 * not a JSON object); a "result" only for a request with the right token that names a tool
 * exactly (no byte after an embedded NUL), and only for the first 8 of them; no string in a
 * result (values and keys) and no event holds the secret the redactor knows (an error may
 * echo what the script sent); every event is a JSON object; an answer is
 * at most a few times the size of its request. Everything is freed (LeakSanitizer).
 *
 * The corpus (corpus/rpc/) replays under meson through fuzz-main.c; scripts/fuzz.sh rpc
 * fuzzes it for real (docs/testing.md, "Fuzzing").
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "basic/utf8.h"
#include "core/events/events.h"
#include "core/output/redact.h"
#include "core/registry/registry.h"
#include "core/rpc/rpc-server.h"
#include "core/tools/tool.h"

#define TOKEN "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define SECRET "s3cr3t-fuzz-VALUE-4242"
#define BUDGET 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int echo_run(const struct tool *t, const struct tool_ctx *ctx, json_t *args, json_t **ret)
{
        *ret = json_pack("{s:O}", "args", args);
        return *ret ? 0 : -ENOMEM;
}

static int crash_run(const struct tool *t, const struct tool_ctx *ctx, json_t *args, json_t **ret)
{
        return -EIO;
}

/* Every event is one JSON object and holds no secret. */
static int on_event(void *userdata, const char *line, size_t n)
{
        json_t *v = json_loadb(line, n, 0, NULL);

        if (!json_is_object(v) || memmem(line, n, SECRET, strlen(SECRET)))
                abort();
        json_decref(v);
        return 0;
}

/* Whether a string inside @v, or an object key, holds the secret. */
static bool holds_secret(json_t *v)
{
        const char *key;
        json_t *child;
        size_t i;

        if (json_is_string(v))
                return memmem(json_string_value(v), json_string_length(v), SECRET,
                              strlen(SECRET)) != NULL;
        json_object_foreach(v, key, child)
        {
                if (memmem(key, strlen(key), SECRET, strlen(SECRET)) || holds_secret(child))
                        return true;
        }
        json_array_foreach(v, i, child)
        {
                if (holds_secret(child))
                        return true;
        }
        return false;
}

/* The tool a request names, when it names one of ours exactly; NULL otherwise. */
static const char *named_tool(json_t *req)
{
        json_t *tool = json_object_get(req, "tool");
        const char *name = json_string_value(tool);

        if (!name || strlen(name) != json_string_length(tool))
                return NULL;
        return strcmp(name, "echo") == 0 || strcmp(name, "crash") == 0 ? name : NULL;
}

static bool token_right(json_t *req)
{
        json_t *tok = json_object_get(req, "token");

        return json_is_string(tok) && json_string_length(tok) == strlen(TOKEN) &&
               memcmp(json_string_value(tok), TOKEN, strlen(TOKEN)) == 0;
}

/* Check the answer @a (@alen bytes) to @line (@n bytes); *calls counts results so far. */
static void check(const char *line, size_t n, const char *a, size_t alen, unsigned *calls)
{
        json_t *req = NULL, *ans, *id, *result, *error;
        size_t trimmed = n;

        while (trimmed > 0 &&
               (line[trimmed - 1] == '\r' || line[trimmed - 1] == ' ' || line[trimmed - 1] == '\t'))
                trimmed--;
        if (!a) {
                if (trimmed > 0)
                        abort(); /* only a blank line goes unanswered */
                return;
        }
        if (trimmed == 0 || alen < 2 || a[alen - 1] != '\n' || memchr(a, '\n', alen - 1) ||
            !utf8_is_valid(a, alen) || alen > 4 * n + 4096)
                abort();
        ans = json_loadb(a, alen - 1, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
        if (!json_is_object(ans))
                abort();
        id = json_object_get(ans, "id");
        result = json_object_get(ans, "result");
        error = json_object_get(ans, "error");
        if (!id || json_object_size(ans) != 2 || !!result == !!error ||
            (result && !json_is_object(result)) || (error && !json_is_string(error)))
                abort();

        if (utf8_is_valid(line, trimmed))
                req = json_loadb(line, trimmed,
                                 JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, NULL);
        if (!json_is_object(req)) {
                if (!json_is_null(id) || result)
                        abort();
        } else {
                json_t *rid = json_object_get(req, "id");

                if (!json_equal(id, rid ? rid : json_null()))
                        abort();
        }
        if (result) {
                /* A result: the right token, one of our tools named exactly, within the budget;
                 * a secret in the arguments comes back redacted. */
                if (!token_right(req) || !named_tool(req) || ++*calls > BUDGET ||
                    holds_secret(result))
                        abort();
        }
        json_decref(ans);
        json_decref(req);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const char *const enabled[] = {"echo", "crash", NULL};
        const struct registry_extra_tool tools[] = {
                {.name = "echo", .description = "echo", .run = echo_run},
                {.name = "crash", .description = "crash", .run = crash_run},
        };
        char dir[] = "/tmp/fuzz-rpc-XXXXXX", sock[64];
        struct registry *reg = NULL;
        struct redactor *red = NULL;
        struct event_sink *events = NULL;
        struct rpc_server *s = NULL;
        struct tool_ctx ctx;
        struct rpc_server_opts o;
        const char *p = (const char *) data, *end = p + size, *nl;
        unsigned calls = 0;

        if (registry_new_with(NULL, (char *const *) enabled, tools, ELEMENTSOF(tools), &reg, NULL,
                              NULL) < 0 ||
            redactor_new(&red) < 0 || redactor_add_secret(red, SECRET) < 0 ||
            event_sink_new(on_event, NULL, red, &events) < 0 || !mkdtemp(dir))
                abort();
        (void) snprintf(sock, sizeof(sock), "%s/rpc.sock", dir);
        ctx = (struct tool_ctx){
                .cwd = "/",
                .deadline = USEC_INFINITY,
                .cancel_fd = -1,
                .redactor = red,
        };
        o = (struct rpc_server_opts){
                .socket_path = sock,
                .token = TOKEN,
                .registry = reg,
                .max_threads = 1,
                .tool_ctx = &ctx,
                .redactor = red,
                .max_tool_calls = BUDGET,
                .log_calls = true,
                .events = events,
        };
        if (rpc_server_new(&o, &s) < 0)
                abort();
        /* Nothing connects: the socket and its directory can go at once. */
        (void) unlink(sock);
        (void) rmdir(dir);

        while (p < end && (nl = memchr(p, '\n', (size_t) (end - p)))) {
                char *answer = NULL;
                int r = rpc_server_answer(s, p, (size_t) (nl - p), &answer);

                if (r < 0 && r != -ENOMEM)
                        abort();
                if (r == 0)
                        check(p, (size_t) (nl - p), answer, answer ? strlen(answer) : 0, &calls);
                free(answer);
                p = nl + 1;
        }
        if ((unsigned) rpc_server_calls_made(s) > BUDGET)
                abort();

        s = rpc_server_free(s);
        event_sink_free(events);
        redactor_free(red);
        registry_free(reg);
        return 0;
}
