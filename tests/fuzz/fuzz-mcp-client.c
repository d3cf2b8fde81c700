/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for ptc's MCP client (src/core/mcp/): what an upstream MCP server writes on its
 * stdout. The input is that stream, fed line by line (each line in two pieces) through
 * mcp_feed_stdout(), the reader thread's own framing, while the client waits for one request
 * at a time as it does: initialize (id 1, its answer checked by mcp_check_initialize()),
 * tools/list pages while the server hands out cursors (mcp_take_tools()), then tools/call
 * after tools/call until the input ends (mcp_map_answer()). A request whose answer never
 * comes ends the session, as its deadline would. No process is started: the client writes
 * its answers to the server's own requests to a memfd. Each input runs twice: with the real
 * line cap (MCP_CLIENT_MESSAGE_MAX) and with a cap of 300 bytes, so that over-long answers
 * and the search for their id (struct id_scan) are reached too.
 *
 * Checked: a request of the server (a "method" and an id) gets exactly one answer with its
 * id (ping and roots/list a result, anything else -32601), a notification or any other line
 * none; an over-long line whose id was found has that integer id when it is JSON at all;
 * initialize is accepted exactly when it answers a protocol version ptc speaks; the tools
 * taken are at most MCP_CLIENT_TOOLS_MAX, each with a name of 1 to 128 bytes, no two alike,
 * an input schema of type "object", and a registry name of [A-Za-z0-9_] only, at most 200
 * bytes; a registry of them, its generated Python module (valid UTF-8) and its execute_code
 * schema build; every tools/call answer maps to a JSON object: the error of a JSON-RPC error
 * or of isError, else the structuredContent as it was, else what the text or content gives,
 * and that object survives the redaction and compact JSON. Nothing may crash or leak.
 *
 * The corpus (corpus/mcp-client/) replays under meson through fuzz-main.c; scripts/fuzz.sh
 * mcp-client fuzzes it for real (docs/testing.md, "Fuzzing").
 */

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/buf.h"
#include "basic/diag.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "basic/utf8.h"
#include "core/config/config.h"
#include "core/mcp/mcp-client-internal.h"
#include "core/mcp/mcp-tools.h"
#include "core/output/redact.h"
#include "core/registry/registry.h"
#include "core/stubs/stubs.h"
#include "core/tools/tool.h"

#define SERVER "fuzz"
#define SMALL_LINE_MAX 300
/* The registry name's cap (mcp-tools.c). */
#define REGISTRY_NAME_MAX 200

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct feed {
        const char *p, *end; /* what the server has yet to write */
        struct mcp_client *client;
        off_t read_at; /* of client->in_fd: what was checked */
};

static bool is_string(json_t *v, const char *s)
{
        return json_is_string(v) && strcmp(json_string_value(v), s) == 0;
}

/* What the client must write back to the line @p (@n bytes, without its newline). */
static json_t *expected_reply(struct mcp_client *c, const char *p, size_t n)
{
        json_t *msg, *id, *method, *want = NULL;
        size_t i;

        if (n > c->line.cap)
                return NULL; /* discarded unread */
        for (i = 0; i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r'); i++)
                ;
        if (i == n)
                return NULL;
        msg = json_loadb(p, n, 0, NULL);
        method = json_object_get(msg, "method");
        id = json_object_get(msg, "id");
        if (json_is_object(msg) && json_is_string(method) && id && !json_is_null(id))
                want = json_pack("{s:O, s:s}", "id", id, "method", json_string_value(method));
        json_decref(msg);
        return want;
}

/* What the client wrote since the last look: nothing, or the one answer to @want. */
static void check_reply(struct feed *f, json_t *want)
{
        struct buf out = BUF_INIT(SIZE_MAX / 2);
        char chunk[4096];
        const char *method;
        json_t *msg, *id;
        ssize_t k;

        while ((k = pread(f->client->in_fd, chunk, sizeof(chunk), f->read_at)) > 0) {
                f->read_at += k;
                if (buf_append(&out, chunk, (size_t) k) < 0)
                        abort();
        }
        if (k < 0)
                abort();
        if (!want) {
                if (out.len != 0)
                        abort();
                return;
        }
        if (out.len < 2 || out.data[out.len - 1] != '\n' || memchr(out.data, '\n', out.len - 1))
                abort();
        msg = json_loadb(out.data, out.len - 1, JSON_REJECT_DUPLICATES, NULL);
        buf_release(&out);
        id = json_object_get(msg, "id");
        method = json_string_value(json_object_get(want, "method"));
        if (!json_is_object(msg) || !json_equal(id, json_object_get(want, "id")) ||
            !is_string(json_object_get(msg, "jsonrpc"), "2.0"))
                abort();
        if (strcmp(method, "ping") == 0 || strcmp(method, "roots/list") == 0) {
                if (!json_is_object(json_object_get(msg, "result")))
                        abort();
        } else if (json_integer_value(json_object_get(json_object_get(msg, "error"), "code")) !=
                   -32601)
                abort();
        json_decref(msg);
}

/* An over-long line: an id found in it is its own, an integer as handle_line() takes it. */
static void check_scan(struct mcp_client *c, const char *p, size_t n)
{
        json_t *msg, *id;

        if (!c->scan.found)
                return;
        msg = json_loadb(p, n, JSON_REJECT_DUPLICATES, NULL);
        id = json_object_get(msg, "id");
        if (json_is_object(msg) &&
            (!json_is_integer(id) || json_integer_value(id) != c->scan.value))
                abort();
        json_decref(msg);
}

/* Feed the server's next line, in two pieces, as reads may cut it anywhere. */
static void feed_line(struct feed *f)
{
        struct mcp_client *c = f->client;
        const char *nl = memchr(f->p, '\n', (size_t) (f->end - f->p));
        size_t n = nl ? (size_t) (nl - f->p) : (size_t) (f->end - f->p);
        size_t all = n + (nl ? 1 : 0), half = all / 2;
        uint_fast64_t oversized = atomic_load(&c->n_oversized);
        size_t buffered = c->line.len;
        json_t *want = nl && buffered == 0 ? expected_reply(c, f->p, n) : NULL;

        mcp_feed_stdout(c, f->p, half);
        mcp_feed_stdout(c, f->p + half, all - half);
        if (nl && buffered == 0 && atomic_load(&c->n_oversized) != oversized)
                check_scan(c, f->p, n);
        check_reply(f, want);
        json_decref(want);
        f->p += all;
}

/*
 * Send a request (in thought) and feed lines until its answer comes. Returns true with
 * *ret and *ret_error as struct pending has them, false when the input ended first.
 */
static bool await_answer(struct feed *f, json_t **ret, int *ret_error)
{
        struct mcp_client *c = f->client;
        struct pending *p = calloc(1, sizeof(*p));
        bool done;

        if (!p)
                abort();
        p->id = atomic_fetch_add(&c->next_id, 1);
        p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (p->efd < 0)
                abort();
        pthread_mutex_lock(&c->lock);
        p->next = c->pending;
        c->pending = p;
        pthread_mutex_unlock(&c->lock);
        while (f->p < f->end && !p->done)
                feed_line(f);
        pthread_mutex_lock(&c->lock);
        c->pending = p->next; /* the only one */
        pthread_mutex_unlock(&c->lock);
        done = p->done;
        /* A response to our request: an object with our id; not JSON: the parser's message,
         * printable ASCII; too long: nothing. */
        if (done && p->error == 0 &&
            (!json_is_object(p->answer) ||
             json_integer_value(json_object_get(p->answer, "id")) != p->id))
                abort();
        if (done && p->error == -EBADMSG) {
                const char *why = json_string_value(p->answer);

                for (; why && *why; why++)
                        if (*why < 0x20 || *why >= 0x7f)
                                abort();
        }
        if (done && ((p->error == -E2BIG) != !p->answer ||
                     (p->error != 0 && p->error != -E2BIG && p->error != -EBADMSG)))
                abort();
        *ret = TAKE_PTR(p->answer);
        *ret_error = p->error;
        mcp_pending_free(p);
        return done;
}

static void check_initialize(json_t *answer, int r, const struct diag *d)
{
        static const char *const accepted[] = {"2025-11-25", "2025-06-18", "2025-03-26"};
        json_t *result = json_object_get(answer, "result");
        const char *v = json_string_value(json_object_get(result, "protocolVersion"));
        bool ok = false;

        for (size_t i = 0; v && i < ELEMENTSOF(accepted); i++)
                ok = ok || strcmp(v, accepted[i]) == 0;
        ok = ok && json_is_object(result) && !json_is_object(json_object_get(answer, "error"));
        if (ok != (r == 0) || (r < 0 && (r != -EPROTO || !strstr(d->message, "'" SERVER "'"))))
                abort();
}

static bool is_word_char(char ch)
{
        return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
               ch == '_';
}

/* The tools taken, then what ptc makes of them: registry names, a registry, the module. */
static void check_tools(struct mcp_client *c)
{
        size_t n = mcp_client_tool_count(c);
        struct registry_extra_tool *extra = calloc(n + 1, sizeof(*extra));
        char **names = calloc(n + 1, sizeof(char *));
        struct registry *reg = NULL;
        struct ptc_config config;
        json_t *schema = NULL;
        char *module = NULL;
        int r;

        if (n > MCP_CLIENT_TOOLS_MAX || !extra || !names || config_init(&config) < 0)
                abort();
        for (size_t i = 0; i < n; i++) {
                const struct mcp_upstream_tool *t = mcp_client_tool(c, i);
                size_t len = strlen(t->name);

                if (len == 0 || len > 128 || !t->description ||
                    !utf8_is_valid(t->description, strlen(t->description)) ||
                    !utf8_is_valid(t->name, len) || !json_is_object(t->input_schema) ||
                    !is_string(json_object_get(t->input_schema, "type"), "object"))
                        abort();
                for (size_t j = 0; j < i; j++)
                        if (strcmp(mcp_client_tool(c, j)->name, t->name) == 0)
                                abort();
                names[i] = mcp_upstream_tool_name(SERVER, t->name);
                if (!names[i] || strlen(names[i]) > REGISTRY_NAME_MAX)
                        abort();
                for (const char *p = names[i]; *p; p++)
                        if (!is_word_char(*p))
                                abort();
                extra[i] = (struct registry_extra_tool){
                        .name = names[i],
                        .description = t->description,
                        .parameters = t->input_schema,
                };
        }
        /* Only these tools: names that became alike are left out, with a warning. */
        r = registry_new_with(NULL, names, extra, n, &reg, NULL, NULL);
        if (r < 0 || registry_count(reg) > n)
                abort();
        r = stubs_generate(reg, "hermes_tools", &module);
        if (r == 0 && !utf8_is_valid(module, strlen(module)))
                abort();
        if (r < 0 && r != -E2BIG)
                abort();
        r = schema_build(reg, PTC_MODE_PROJECT, &config, &schema);
        if (r < 0 || !json_is_object(schema))
                abort();

        json_decref(schema);
        free(module);
        registry_free(reg);
        config_release(&config);
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
        free(extra);
}

/* The script's result for @answer, and what it must be. */
static void check_call(struct mcp_client *c, const char *tool, json_t *answer,
                       const struct redactor *red)
{
        json_t *res = NULL, *result = json_object_get(answer, "result"), *sc, *err;
        char *text;

        if (mcp_map_answer(c, tool, answer, &res) < 0)
                abort(); /* -ENOMEM only */
        if (!json_is_object(res) || json_object_size(res) == 0)
                abort();
        err = json_object_get(res, "error");
        sc = json_object_get(result, "structuredContent");
        if (json_is_object(json_object_get(answer, "error")) || !json_is_object(result)) {
                if (!json_is_string(err) || json_object_size(res) != 1 ||
                    strncmp(json_string_value(err), "mcp server '" SERVER "'",
                            strlen("mcp server '" SERVER "'")) != 0)
                        abort();
        } else if (json_is_true(json_object_get(result, "isError"))) {
                if (!json_is_string(err) || json_object_size(res) != 1)
                        abort();
        } else if (json_is_object(sc) && !json_equal(res, sc))
                abort();

        /* What the script gets: redacted (tool_result_finish() takes @res), one JSON line. */
        res = tool_result_finish(red, 0, res);
        if (!json_is_object(res))
                abort();
        text = json_dumps(res, JSON_COMPACT);
        if (!text || !utf8_is_valid(text, strlen(text)))
                abort();
        free(text);
        json_decref(res);
}

static json_t *drop(json_t *v)
{
        json_decref(v);
        return NULL;
}

static void session(const uint8_t *data, size_t size, size_t line_max, const struct redactor *red)
{
        struct feed f = {.p = (const char *) data, .end = (const char *) data + size};
        struct mcp_client *c = NULL;
        json_t *answer = NULL;
        int error;
        char *cursor = NULL;
        size_t skipped = 0, ignored = 0;
        const char *tool;
        struct diag d = {};
        int r;

        if (mcp_client_new(SERVER, &c) < 0)
                abort();
        c->in_fd = memfd_create("fuzz-mcp-client", MFD_CLOEXEC);
        if (c->in_fd < 0)
                abort();
        c->line.cap = line_max;
        f.client = c;

        if (!await_answer(&f, &answer, &error) || error)
                goto out;
        r = mcp_check_initialize(c, answer, &d);
        check_initialize(answer, r, &d);
        answer = drop(answer);
        if (r < 0)
                goto out;

        for (int page = 0; page < TOOLS_PAGES_MAX; page++) {
                if (!await_answer(&f, &answer, &error) || error)
                        goto out;
                r = mcp_take_tools(c, answer, page == 0, &cursor, &skipped, &ignored, &d);
                answer = drop(answer);
                if (r < 0 && r != -EPROTO)
                        abort();
                if (r < 0 || !cursor)
                        break;
                free(cursor);
                cursor = NULL;
        }
        if (ignored > 0 && mcp_client_tool_count(c) != MCP_CLIENT_TOOLS_MAX)
                abort();
        check_tools(c);
        if (r < 0)
                goto out; /* the start failed */

        tool = mcp_client_tool_count(c) > 0 ? mcp_client_tool(c, 0)->name : "tool";
        while (await_answer(&f, &answer, &error)) {
                if (!error)
                        check_call(c, tool, answer, red);
                answer = drop(answer);
        }
out:
        free(cursor);
        json_decref(answer);
        mcp_client_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct redactor *red = NULL;

        if (redactor_new(&red) < 0 || redactor_add_secret(red, "s3cr3t-fuzz-VALUE-4242") < 0)
                abort();
        session(data, size, MCP_CLIENT_MESSAGE_MAX, red);
        session(data, size, SMALL_LINE_MAX, red);
        redactor_free(red);
        return 0;
}
