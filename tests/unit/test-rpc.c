/* SPDX-License-Identifier: MIT */
#include "../lib/fault.h"
#include "../lib/ptc-test.h"
#include "../lib/registry-fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "basic/macro.h"
#include "basic/path-util.h"
#include "basic/time-util.h"
#include "core/output/redact.h"
#include "core/registry/registry-internal.h"
#include "core/registry/registry.h"
#include "core/rpc/rpc-server.h"
#include "core/tools/tool.h"

#define TOKEN "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define AVAILABLE "bigsecret, crash, echo, fail, secret, sleep, terminal"
/* Longest line a test client accepts. */
#define LINE_MAX_TEST (1024 * 1024)

/* ---- fake tools ---- */

static pthread_mutex_t meet_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t meet_cond = PTHREAD_COND_INITIALIZER;
static int meeting;

/* With {"meet": N}, first waits (20 s at most) until N calls are in at the same time and
 * says whether they were ("met"): calls shown side by side without a stopwatch. */
static int sleep_run(const struct tool *t, const struct tool_ctx *ctx, json_t *args, json_t **ret)
{
        json_int_t n = json_integer_value(json_object_get(args, "meet"));
        bool met = false;

        if (n > 0) {
                struct timespec until;

                clock_gettime(CLOCK_REALTIME, &until); /* the condition's default clock */
                until.tv_sec += 20;
                pthread_mutex_lock(&meet_lock);
                meeting++;
                pthread_cond_broadcast(&meet_cond);
                while (meeting < n)
                        if (pthread_cond_timedwait(&meet_cond, &meet_lock, &until) == ETIMEDOUT)
                                break;
                met = meeting >= n;
                pthread_mutex_unlock(&meet_lock);
        }
        usleep(200 * 1000);
        *ret = n > 0 ? json_pack("{s:b,s:b}", "slept", 1, "met", met)
                     : json_pack("{s:b}", "slept", 1);
        return *ret ? 0 : -ENOMEM;
}

static int fail_run(const struct tool *t, const struct tool_ctx *ctx, json_t *args, json_t **ret)
{
        *ret = tool_error_new("File not found: %s", "x");
        return *ret ? 0 : -ENOMEM;
}

/* 300 KB of text ending in the secret: redacting it needs one allocation of over 256 KiB. */
#define BIG_LEN (300 * 1000)
static char big_text[BIG_LEN + 1];

static int bigsecret_run(const struct tool *t, const struct tool_ctx *ctx, json_t *args,
                         json_t **ret)
{
        /* jansson allocates the copy itself: the fault wrappers of this test do not see it. */
        if (!big_text[0]) {
                memset(big_text, 'a', BIG_LEN - strlen(SECRET) - 1);
                big_text[BIG_LEN - strlen(SECRET) - 1] = ' ';
                memcpy(big_text + BIG_LEN - strlen(SECRET), SECRET, strlen(SECRET));
        }
        *ret = json_pack("{s:s}", "text", big_text);
        return *ret ? 0 : -ENOMEM;
}

static const struct tool_def def_bigsecret = {.name = "bigsecret", .run = bigsecret_run};
static const struct tool_def def_sleep = {.name = "sleep", .run = sleep_run};
/* Declares the arguments it drops, as the real terminal does (tool_def.dropped_args). */
static const char *const terminal_dropped[] = {
        "background", "pty",       "notify_on_complete", "watch_patterns",
        "notify",     "heartbeat", "persist_on_release", NULL,
};
static const struct tool_def def_terminal = {
        .name = "terminal", .run = echo_run, .dropped_args = terminal_dropped};
static const struct tool_def def_fail = {.name = "fail", .run = fail_run};

/* ---- fixture ---- */

struct fixture {
        char dir[64];
        char sock[128];
        struct registry_fixture reg; /* the fake tools, in dir */
        struct rpc_server *server;
};

static int setup(void **state)
{
        static const struct tool_def *const defs[] = {
                &def_echo,  &def_sleep, &def_secret,    &def_terminal,
                &def_crash, &def_fail,  &def_bigsecret,
        };
        struct fixture *f = calloc(1, sizeof(*f));

        if (!f)
                return -1;
        (void) snprintf(f->dir, sizeof(f->dir), "/tmp/ptc-test-rpc-XXXXXX");
        if (!mkdtemp(f->dir))
                return -1;
        (void) snprintf(f->sock, sizeof(f->sock), "%s/rpc.sock", f->dir);
        *state = f;
        return registry_fixture_init(&f->reg, defs, ELEMENTSOF(defs), f->dir);
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        f->server = rpc_server_free(f->server);
        registry_fixture_release(&f->reg);
        (void) rm_rf(f->dir);
        free(f);
        return 0;
}

static void start_server(struct fixture *f, int64_t max_calls, size_t frame_max, bool log_calls)
{
        struct rpc_server_opts o = {
                .socket_path = f->sock,
                .token = TOKEN,
                .registry = f->reg.registry,
                .tool_ctx = &f->reg.ctx,
                .redactor = f->reg.redactor,
                .max_tool_calls = max_calls,
                .log_calls = log_calls,
                .frame_max = frame_max,
        };
        struct stat st;

        f->server = rpc_server_free(f->server);
        (void) unlink(f->sock);
        assert_int_equal(rpc_server_new(&o, &f->server), 0);
        assert_int_equal(stat(f->sock, &st), 0);
        assert_true(S_ISSOCK(st.st_mode));
        assert_int_equal(st.st_mode & 0777, 0600);
}

/* ---- client side ---- */

struct client {
        int fd;
        char *buf;
        size_t len;
};

static void client_open(struct fixture *f, struct client *c)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};

        c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(c->fd >= 0);
        memcpy(sa.sun_path, f->sock, strlen(f->sock) + 1);
        assert_int_equal(connect(c->fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        c->buf = malloc(LINE_MAX_TEST);
        assert_non_null(c->buf);
        c->len = 0;
}

static void client_close(struct client *c)
{
        c->fd = safe_close(c->fd);
        c->buf = mfree_str(c->buf);
        c->len = 0;
}

/* Send all of @p; false when the peer is gone. */
static bool client_send(struct client *c, const char *p, size_t n)
{
        while (n > 0) {
                ssize_t k = send(c->fd, p, n, MSG_NOSIGNAL);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return false;
                p += k;
                n -= (size_t) k;
        }
        return true;
}

static void client_send_str(struct client *c, const char *s)
{
        assert_true(client_send(c, s, strlen(s)));
}

/*
 * The next answer line (without '\n'; caller frees), NULL on EOF, error or
 * @timeout_ms without a complete line. *ret_eof tells EOF/error apart.
 */
static char *client_recv_line(struct client *c, int timeout_ms, bool *ret_eof)
{
        usec_t end = now_usec() + (usec_t) timeout_ms * USEC_PER_MSEC;

        if (ret_eof)
                *ret_eof = false;
        for (;;) {
                char *nl = c->len ? memchr(c->buf, '\n', c->len) : NULL;
                struct pollfd p = {.fd = c->fd, .events = POLLIN};
                usec_t now;
                ssize_t k;

                if (nl) {
                        size_t n = (size_t) (nl - c->buf);
                        char *line = strndup(c->buf, n);
                        assert_non_null(line);
                        memmove(c->buf, nl + 1, c->len - n - 1);
                        c->len -= n + 1;
                        return line;
                }
                now = now_usec();
                if (now >= end)
                        return NULL;
                if (poll(&p, 1, (int) ((end - now) / USEC_PER_MSEC) + 1) <= 0)
                        continue;
                assert_true(c->len < LINE_MAX_TEST);
                k = recv(c->fd, c->buf + c->len, LINE_MAX_TEST - c->len, 0);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        if (ret_eof)
                                *ret_eof = true;
                        return NULL;
                }
                c->len += (size_t) k;
        }
}

/* The next answer, parsed (caller decrefs); fails the test on timeout. */
static json_t *client_recv(struct client *c)
{
        _cleanup_free_ char *line = client_recv_line(c, 10000, NULL);
        json_error_t err;
        json_t *j;

        assert_non_null(line);
        /* Answers are single-line compact JSON objects. */
        j = json_loads(line, 0, &err);
        if (!j)
                fail_msg("answer is not JSON (%s): %s", err.text, line);
        assert_true(json_is_object(j));
        return j;
}

static char *make_req(const char *id, const char *tool, const char *args)
{
        static const char fmt[] = "{\"id\":%s,\"token\":\"%s\",\"tool\":\"%s\",\"args\":%s}\n";
        size_t n = sizeof(fmt) + strlen(id) + strlen(TOKEN) + strlen(tool) + strlen(args);
        char *s = malloc(n);

        assert_non_null(s);
        snprintf(s, n, fmt, id, TOKEN, tool, args);
        return s;
}

static void send_req(struct client *c, const char *id, const char *tool, const char *args)
{
        _cleanup_free_ char *s = make_req(id, tool, args);

        client_send_str(c, s);
}

/* The "error" text of @answer, asserting it is an error answer. */
static const char *answer_error(json_t *answer)
{
        const char *e = json_string_value(json_object_get(answer, "error"));

        assert_non_null(e);
        assert_null(json_object_get(answer, "result"));
        return e;
}

static json_t *answer_result(json_t *answer)
{
        json_t *r = json_object_get(answer, "result");

        if (!r)
                fail_msg("not a result: %s", json_string_value(json_object_get(answer, "error")));
        assert_true(json_is_object(r));
        return r;
}

/* Send one raw line, expect an error answer with @want (exact) and id null. */
static void expect_error_raw(struct client *c, const char *raw, size_t n, json_t *want_id,
                             const char *want)
{
        json_auto_t *a = NULL;

        assert_true(client_send(c, raw, n));
        a = client_recv(c);
        if (strcmp(answer_error(a), want) != 0)
                fail_msg("for %.60s: got '%s', want '%s'", raw, answer_error(a), want);
        assert_true(json_equal(json_object_get(a, "id"), want_id ? want_id : json_null()));
}

/* ---- tests ---- */

static void test_rpc_server_good_request(void **state)
{
        struct fixture *f = *state;
        struct client c;
        _cleanup_free_ char *line = NULL;
        json_auto_t *a = NULL, *b = NULL;

        start_server(f, 50, 0, false);
        client_open(f, &c);
        send_req(&c, "1", "echo", "{\"x\":1,\"s\":\"h\\u00e9\"}");
        line = client_recv_line(&c, 3000, NULL);
        assert_non_null(line);
        /* Compact, one line, the id first, non-ASCII as raw UTF-8. */
        assert_string_equal(line, "{\"id\":1,\"result\":{\"args\":{\"x\":1,\"s\":\"h\xc3\xa9\"}}}");

        /* Missing and null args are {}. */
        client_send_str(&c, "{\"id\":2,\"token\":\"" TOKEN "\",\"tool\":\"echo\"}\n");
        a = client_recv(&c);
        assert_int_equal(json_integer_value(json_object_get(a, "id")), 2);
        assert_true(json_is_object(json_object_get(answer_result(a), "args")));
        assert_int_equal(json_object_size(json_object_get(answer_result(a), "args")), 0);
        send_req(&c, "3", "echo", "null");
        b = client_recv(&c);
        assert_int_equal(json_object_size(json_object_get(answer_result(b), "args")), 0);

        assert_int_equal(rpc_server_calls_made(f->server), 3);
        client_close(&c);
}

static void test_rpc_server_ids_echoed(void **state)
{
        struct fixture *f = *state;
        static const char *const ids[] = {
                "7",   "-12345678901", "\"abc\"",           "\"\"",  "null",
                "1.5", "true",         "{\"k\":[1,\"x\"]}", "[1,2]",
        };
        struct client c;

        start_server(f, 50, 0, false);
        client_open(f, &c);
        for (size_t i = 0; i < ELEMENTSOF(ids); i++) {
                json_auto_t *want = json_loads(ids[i], JSON_DECODE_ANY, NULL), *a = NULL;

                assert_non_null(want);
                send_req(&c, ids[i], "echo", "{}");
                a = client_recv(&c);
                answer_result(a);
                if (!json_equal(json_object_get(a, "id"), want))
                        fail_msg("id %s not echoed", ids[i]);
        }
        /* No id at all: null. */
        {
                json_auto_t *a = NULL;
                client_send_str(&c, "{\"token\":\"" TOKEN "\",\"tool\":\"echo\",\"args\":{}}\n");
                a = client_recv(&c);
                answer_result(a);
                assert_true(json_is_null(json_object_get(a, "id")));
        }
        /* An error answer echoes the id too. */
        {
                json_auto_t *a = NULL;
                send_req(&c, "\"err-id\"", "nope", "{}");
                a = client_recv(&c);
                answer_error(a);
                assert_string_equal(json_string_value(json_object_get(a, "id")), "err-id");
        }
        client_close(&c);
}

static void test_rpc_server_unauthorized(void **state)
{
        struct fixture *f = *state;
        static const char *const bad[] = {
                "{\"id\":1,\"token\":\"wrong\",\"tool\":\"echo\",\"args\":{}}\n",
                "{\"id\":1,\"tool\":\"echo\",\"args\":{}}\n",
                "{\"id\":1,\"token\":null,\"tool\":\"echo\",\"args\":{}}\n",
                "{\"id\":1,\"token\":42,\"tool\":\"echo\",\"args\":{}}\n",
                /* One character short, one too long, one differing in the last byte. */
                "{\"id\":1,\"token\":\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
                "abcde\",\"tool\":\"echo\"}\n",
                "{\"id\":1,\"token\":\"" TOKEN "0\",\"tool\":\"echo\"}\n",
                "{\"id\":1,\"token\":\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
                "abcdee\",\"tool\":\"echo\"}\n",
                /* Checked before the tool: a bad tool with a bad token is unauthorized. */
                "{\"id\":1,\"tool\":5}\n",
                /* NUL inside the token string. */
                "{\"id\":1,\"token\":\"" TOKEN "\\u0000\",\"tool\":\"echo\"}\n",
        };
        json_auto_t *one = json_integer(1);
        struct client c;

        start_server(f, 50, 0, false);
        client_open(f, &c);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                expect_error_raw(&c, bad[i], strlen(bad[i]), one, "Unauthorized RPC request");
        assert_int_equal(rpc_server_calls_made(f->server), 0);
        /* The connection goes on. */
        {
                json_auto_t *a = NULL;
                send_req(&c, "2", "echo", "{}");
                a = client_recv(&c);
                answer_result(a);
        }
        client_close(&c);
}

static void test_rpc_server_invalid_requests(void **state)
{
        struct fixture *f = *state;
        static const char bad_utf8[] = "{\"id\":1,\"token\":\"" TOKEN
                                       "\",\"tool\":\"echo\",\"args\":{\"s\":\"\xff\xfe\"}}\n";
        static const char nul_line[] = "{\"id\":1,\0\"x\":2}\n";
        json_auto_t *one = json_integer(1);
        struct client c;

        start_server(f, 50, 0, false);
        client_open(f, &c);

        /* Invalid JSON: the parser's message and column; id null (unparsed). */
        {
                json_auto_t *a = NULL;
                const char *e, *col;
                client_send_str(&c, "{not json\n");
                a = client_recv(&c);
                e = answer_error(a);
                assert_true(json_is_null(json_object_get(a, "id")));
                assert_memory_equal(e, "Invalid RPC request: ", 21);
                col = strstr(e, " (column ");
                assert_non_null(col);
                assert_true(col[9] >= '0' && col[9] <= '9');
                assert_int_equal(e[strlen(e) - 1], ')');
        }
        expect_error_raw(&c, bad_utf8, sizeof(bad_utf8) - 1, NULL,
                         "Invalid RPC request: invalid UTF-8");
        expect_error_raw(&c, "[1,2]\n", 6, NULL, "Invalid RPC request: expected a JSON object");
        expect_error_raw(&c, "\"str\"\n", 6, NULL, "Invalid RPC request: expected a JSON object");
        expect_error_raw(&c, "42\n", 3, NULL, "Invalid RPC request: expected a JSON object");
        /* The id is known from here on and echoed. */
        expect_error_raw(&c, "{\"id\":1,\"token\":\"" TOKEN "\",\"tool\":5}\n",
                         strlen("{\"id\":1,\"token\":\"" TOKEN "\",\"tool\":5}\n"), one,
                         "Invalid RPC request: 'tool' must be a string");
        expect_error_raw(&c, "{\"id\":1,\"token\":\"" TOKEN "\"}\n",
                         strlen("{\"id\":1,\"token\":\"" TOKEN "\"}\n"), one,
                         "Invalid RPC request: 'tool' must be a string");
        {
                _cleanup_free_ char *r1 = make_req("1", "echo", "[1]");
                _cleanup_free_ char *r2 = make_req("1", "echo", "\"x\"");
                _cleanup_free_ char *r3 = make_req("1", "nope", "{}");
                _cleanup_free_ char *r4 = make_req("1", "read_file", "{}");
                /* "\u0000" is allowed in strings, but never in a tool name: not "echo". */
                _cleanup_free_ char *r5 = make_req("1", "echo\\u0000x", "{}");
                expect_error_raw(&c, r1, strlen(r1), one,
                                 "Invalid RPC request: 'args' must be an object");
                expect_error_raw(&c, r2, strlen(r2), one,
                                 "Invalid RPC request: 'args' must be an object");
                expect_error_raw(
                        &c, r3, strlen(r3), one,
                        "Tool 'nope' is not available in execute_code. Available: " AVAILABLE);
                /* Known to ptc but not in this registry: the same answer. */
                expect_error_raw(
                        &c, r4, strlen(r4), one,
                        "Tool 'read_file' is not available in execute_code. Available: " AVAILABLE);
                expect_error_raw(&c, r5, strlen(r5), one,
                                 "Invalid RPC request: 'tool' must not contain NUL");
        }
        /* A raw NUL byte and duplicate keys are invalid JSON, not a crash. */
        {
                json_auto_t *a = NULL, *b = NULL;
                assert_true(client_send(&c, nul_line, sizeof(nul_line) - 1));
                a = client_recv(&c);
                assert_memory_equal(answer_error(a), "Invalid RPC request: ", 21);
                client_send_str(&c,
                                "{\"id\":1,\"id\":2,\"token\":\"" TOKEN "\",\"tool\":\"echo\"}\n");
                b = client_recv(&c);
                assert_memory_equal(answer_error(b), "Invalid RPC request: ", 21);
                assert_true(json_is_null(json_object_get(b, "id")));
        }
        /* Very deep nesting: rejected by the parser's depth limit, no stack overflow. */
        {
                size_t depth = 200000;
                char *deep = malloc(depth + 2);
                json_auto_t *a = NULL;
                assert_non_null(deep);
                memset(deep, '[', depth);
                deep[depth] = '\n';
                deep[depth + 1] = 0;
                client_send_str(&c, deep);
                free(deep);
                a = client_recv(&c);
                assert_memory_equal(answer_error(a), "Invalid RPC request: ", 21);
        }
        assert_int_equal(rpc_server_calls_made(f->server), 0);

        /* After all that the connection still serves. */
        {
                json_auto_t *a = NULL;
                send_req(&c, "9", "echo", "{}");
                a = client_recv(&c);
                answer_result(a);
                assert_int_equal(json_integer_value(json_object_get(a, "id")), 9);
        }
        assert_int_equal(rpc_server_calls_made(f->server), 1);
        client_close(&c);
}

static void test_rpc_server_budget(void **state)
{
        struct fixture *f = *state;
        struct client c;

        start_server(f, 3, 0, false);
        client_open(f, &c);
        for (int i = 0; i < 3; i++) {
                json_auto_t *a = NULL;
                send_req(&c, "1", "echo", "{}");
                a = client_recv(&c);
                answer_result(a);
        }
        for (int i = 0; i < 2; i++) {
                json_auto_t *a = NULL;
                send_req(&c, "4", "echo", "{}");
                a = client_recv(&c);
                assert_string_equal(answer_error(a),
                                    "Tool call limit reached (3). No more tool calls allowed in "
                                    "this execution.");
                assert_int_equal(json_integer_value(json_object_get(a, "id")), 4);
        }
        assert_int_equal(rpc_server_calls_made(f->server), 3);

        /* A zero budget refuses the first call. */
        client_close(&c);
        start_server(f, 0, 0, false);
        client_open(f, &c);
        {
                json_auto_t *a = NULL;
                send_req(&c, "1", "echo", "{}");
                a = client_recv(&c);
                assert_string_equal(answer_error(a),
                                    "Tool call limit reached (0). No more tool calls allowed in "
                                    "this execution.");
        }
        assert_int_equal(rpc_server_calls_made(f->server), 0);
        client_close(&c);
}

struct racer {
        struct fixture *f;
        pthread_barrier_t *barrier;
        int results, errors, other;
};

static void *racer_main(void *arg)
{
        struct racer *r = arg;
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        char buf[4096];
        size_t len = 0;
        int fd, lines = 0;
        _cleanup_free_ char *two = NULL;

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        memcpy(sa.sun_path, r->f->sock, strlen(r->f->sock) + 1);
        if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                r->other = 100;
                safe_close(fd);
                return NULL;
        }
        if (asprintf(&two,
                     "{\"id\":1,\"token\":\"" TOKEN "\",\"tool\":\"echo\",\"args\":{}}\n"
                     "{\"id\":2,\"token\":\"" TOKEN "\",\"tool\":\"echo\",\"args\":{}}\n") < 0)
                two = NULL;
        (void) pthread_barrier_wait(r->barrier);
        if (!two || send(fd, two, strlen(two), MSG_NOSIGNAL) != (ssize_t) strlen(two)) {
                r->other = 101;
                safe_close(fd);
                return NULL;
        }
        /* No cmocka asserts off the main thread: count, the test checks. */
        while (lines < 2 && len < sizeof(buf) - 1) {
                struct pollfd p = {.fd = fd, .events = POLLIN};
                ssize_t k;
                if (poll(&p, 1, 3000) <= 0)
                        break;
                k = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);
                if (k <= 0)
                        break;
                len += (size_t) k;
                buf[len] = 0;
                lines = 0;
                for (char *s = buf; (s = strchr(s, '\n')); s++)
                        lines++;
        }
        for (char *s = buf, *nl; lines == 2 && (nl = strchr(s, '\n')); s = nl + 1) {
                json_auto_t *j = json_loadb(s, (size_t) (nl - s), 0, NULL);
                const char *e = json_string_value(json_object_get(j, "error"));
                if (json_is_object(json_object_get(j, "result")))
                        r->results++;
                else if (e && strcmp(e, "Tool call limit reached (3). No more tool calls "
                                        "allowed in this execution.") == 0)
                        r->errors++;
                else
                        r->other++;
        }
        if (lines != 2)
                r->other += 1000;
        safe_close(fd);
        return NULL;
}

static void test_rpc_server_budget_race(void **state)
{
        struct fixture *f = *state;

        for (int round = 0; round < 5; round++) {
                pthread_t th[8];
                struct racer rs[8];
                pthread_barrier_t barrier;
                int results = 0, errors = 0;

                start_server(f, 3, 0, false);
                assert_int_equal(pthread_barrier_init(&barrier, NULL, ELEMENTSOF(th)), 0);
                for (size_t i = 0; i < ELEMENTSOF(th); i++) {
                        rs[i] = (struct racer){.f = f, .barrier = &barrier};
                        assert_int_equal(pthread_create(&th[i], NULL, racer_main, &rs[i]), 0);
                }
                for (size_t i = 0; i < ELEMENTSOF(th); i++) {
                        assert_int_equal(pthread_join(th[i], NULL), 0);
                        assert_int_equal(rs[i].other, 0);
                        results += rs[i].results;
                        errors += rs[i].errors;
                }
                pthread_barrier_destroy(&barrier);
                assert_int_equal(results, 3);
                assert_int_equal(errors, 16 - 3);
                assert_int_equal(rpc_server_calls_made(f->server), 3);
        }
}

static void test_rpc_server_terminal_dropped_params(void **state)
{
        struct fixture *f = *state;
        struct client c;
        json_auto_t *a = NULL, *b = NULL, *want = NULL;

        start_server(f, 50, 0, false);
        client_open(f, &c);
        send_req(&c, "1", "terminal",
                 "{\"command\":\"ls\",\"background\":true,\"pty\":true,"
                 "\"notify_on_complete\":true,\"watch_patterns\":[\"x\"],\"notify\":1,"
                 "\"heartbeat\":5,\"persist_on_release\":true,\"timeout\":5,\"workdir\":null}");
        a = client_recv(&c);
        want = json_loads("{\"command\":\"ls\",\"timeout\":5,\"workdir\":null}", 0, NULL);
        if (!json_equal(json_object_get(answer_result(a), "args"), want)) {
                _cleanup_free_ char *got = json_dumps(answer_result(a), JSON_COMPACT);
                fail_msg("terminal args not cleaned: %s", got);
        }
        /* Only for the tool that drops them: another tool sees them. */
        send_req(&c, "2", "echo", "{\"background\":true,\"pty\":false}");
        b = client_recv(&c);
        assert_int_equal(json_object_size(json_object_get(answer_result(b), "args")), 2);
        client_close(&c);
}

static void test_rpc_server_concurrent_connections(void **state)
{
        struct fixture *f = *state;
        struct client c[10];

        start_server(f, 50, 0, false);
        for (size_t i = 0; i < ELEMENTSOF(c); i++)
                client_open(f, &c[i]);
        meeting = 0;
        for (size_t i = 0; i < ELEMENTSOF(c); i++) {
                char id[16];
                snprintf(id, sizeof(id), "%zu", i);
                send_req(&c[i], id, "sleep", "{\"meet\":10}");
        }
        for (size_t i = 0; i < ELEMENTSOF(c); i++) {
                json_auto_t *a = client_recv(&c[i]);
                assert_true(json_is_true(json_object_get(answer_result(a), "slept")));
                /* Ten calls side by side (they met at the barrier), not one after another. */
                assert_true(json_is_true(json_object_get(answer_result(a), "met")));
                assert_int_equal(json_integer_value(json_object_get(a, "id")), (json_int_t) i);
        }
        assert_int_equal(rpc_server_calls_made(f->server), 10);
        for (size_t i = 0; i < ELEMENTSOF(c); i++)
                client_close(&c[i]);
}

static void test_rpc_server_pipelined(void **state)
{
        struct fixture *f = *state;
        struct client c;
        char all[4096] = "";
        bool seen[6] = {};

        start_server(f, 50, 0, false);
        client_open(f, &c);
        /* Five requests in one send; they meet at the tool's barrier (no stopwatch). */
        meeting = 0;
        for (int i = 1; i <= 5; i++) {
                char id[8];
                _cleanup_free_ char *r = NULL;
                snprintf(id, sizeof(id), "%d", i);
                r = make_req(id, "sleep", "{\"meet\":5}");
                assert_true(strlen(all) + strlen(r) < sizeof(all));
                strncat(all, r, sizeof(all) - strlen(all) - 1);
        }
        client_send_str(&c, all);
        for (int i = 0; i < 5; i++) {
                json_auto_t *a = client_recv(&c);
                json_int_t id = json_integer_value(json_object_get(a, "id"));
                /* Requests on one connection run side by side too: all five met. */
                assert_true(json_is_true(json_object_get(answer_result(a), "met")));
                assert_true(id >= 1 && id <= 5);
                assert_false(seen[id]);
                seen[id] = true;
        }

        /* Answers in completion order: a quick call overtakes a slow one. */
        {
                _cleanup_free_ char *r1 = make_req("\"slow\"", "sleep", "{}");
                _cleanup_free_ char *r2 = make_req("\"fast\"", "echo", "{}");
                json_auto_t *a = NULL, *b = NULL;
                char both[1024];
                snprintf(both, sizeof(both), "%s%s", r1, r2);
                client_send_str(&c, both);
                a = client_recv(&c);
                b = client_recv(&c);
                assert_string_equal(json_string_value(json_object_get(a, "id")), "fast");
                assert_string_equal(json_string_value(json_object_get(b, "id")), "slow");
        }
        client_close(&c);
}

static void test_rpc_server_frame_max(void **state)
{
        struct fixture *f = *state;
        struct client big, other, exact, after;
        char *line;
        bool eof = false;
        size_t n;

        start_server(f, 50, 1024, false);
        client_open(f, &big);
        client_open(f, &other);

        /* A line over the cap: an error, then the connection is closed. */
        line = malloc(4001);
        assert_non_null(line);
        memset(line, 'a', 4000);
        line[4000] = '\n';
        (void) client_send(&big, line, 4001);
        free(line);
        {
                json_auto_t *a = client_recv(&big);
                assert_string_equal(answer_error(a), "Invalid RPC request: line exceeds 1024 "
                                                     "bytes; connection closed");
        }
        line = client_recv_line(&big, 3000, &eof);
        assert_null(line);
        assert_true(eof);
        client_close(&big);

        /* The other connection is unaffected. */
        {
                json_auto_t *a = NULL;
                send_req(&other, "1", "echo", "{}");
                a = client_recv(&other);
                answer_result(a);
        }

        /* Exactly frame_max bytes plus the newline is accepted... */
        {
                char *r = make_req("1", "echo", "{\"p\":\"\"}");
                size_t base = strlen(r) - 1, pad = 1024 - base;
                char *req = malloc(1024 + 3);
                const char *q = strstr(r, "\"\"}");
                json_auto_t *a = NULL;

                assert_non_null(req);
                assert_non_null(q);
                /* Put the padding inside the "p" string. */
                n = (size_t) (q - r) + 1;
                memcpy(req, r, n);
                memset(req + n, 'x', pad);
                memcpy(req + n + pad, r + n, strlen(r) - n + 1);
                free(r);
                assert_int_equal(strlen(req), 1025);
                client_open(f, &exact);
                client_send_str(&exact, req);
                a = client_recv(&exact);
                assert_int_equal(json_string_length(json_object_get(
                                         json_object_get(answer_result(a), "args"), "p")),
                                 pad);
                client_close(&exact);

                /* ...one more byte is not. */
                memmove(req + n + 1, req + n, strlen(req + n) + 1);
                req[n] = 'x';
                client_open(f, &exact);
                client_send_str(&exact, req);
                free(req);
                {
                        json_auto_t *b = client_recv(&exact);
                        assert_string_equal(answer_error(b), "Invalid RPC request: line exceeds "
                                                             "1024 bytes; connection closed");
                }
                assert_null(client_recv_line(&exact, 3000, &eof));
                assert_true(eof);
                client_close(&exact);
        }

        /* A good request followed by an over-long one in the same send: first served. */
        {
                _cleanup_free_ char *r = make_req("\"first\"", "echo", "{}");
                size_t rl = strlen(r);
                char *both = malloc(rl + 3000);
                json_auto_t *a = NULL, *b = NULL;

                assert_non_null(both);
                memcpy(both, r, rl);
                memset(both + rl, 'b', 2999);
                both[rl + 2999] = '\n';
                client_open(f, &after);
                (void) client_send(&after, both, rl + 3000);
                free(both);
                a = client_recv(&after);
                b = client_recv(&after);
                /* Completion order: the reader may refuse the long line before the echo ends. */
                if (json_object_get(a, "error")) {
                        json_t *t = a;
                        a = b;
                        b = t;
                }
                assert_non_null(json_string_value(json_object_get(a, "id")));
                assert_string_equal(json_string_value(json_object_get(a, "id")), "first");
                answer_result(a);
                assert_memory_equal(answer_error(b), "Invalid RPC request: line exceeds", 33);
                assert_null(client_recv_line(&after, 3000, &eof));
                assert_true(eof);
                client_close(&after);
        }

        /* Still serving others. */
        {
                json_auto_t *a = NULL;
                send_req(&other, "2", "echo", "{}");
                a = client_recv(&other);
                answer_result(a);
        }
        client_close(&other);
}

static void test_rpc_server_blank_lines(void **state)
{
        struct fixture *f = *state;
        struct client c;
        _cleanup_free_ char *r1 = make_req("1", "echo", "{}");
        _cleanup_free_ char *r2 = make_req("2", "echo", "{}");
        char buf[1024];

        start_server(f, 50, 0, false);
        client_open(f, &c);
        snprintf(buf, sizeof(buf), "\n\r\n   \n\t\n%s\n\n", r1);
        client_send_str(&c, buf);
        {
                json_auto_t *a = client_recv(&c);
                assert_int_equal(json_integer_value(json_object_get(a, "id")), 1);
                answer_result(a);
        }
        /* Nothing else was answered for the blank lines. */
        assert_null(client_recv_line(&c, 100, NULL));
        /* A CRLF-terminated request works too. */
        snprintf(buf, sizeof(buf), "%.*s\r\n", (int) strlen(r2) - 1, r2);
        client_send_str(&c, buf);
        {
                json_auto_t *a = client_recv(&c);
                assert_int_equal(json_integer_value(json_object_get(a, "id")), 2);
                answer_result(a);
        }
        assert_null(client_recv_line(&c, 100, NULL));
        assert_int_equal(rpc_server_calls_made(f->server), 2);
        client_close(&c);
}

static void test_rpc_server_redacts_results(void **state)
{
        struct fixture *f = *state;
        struct client c;
        _cleanup_free_ char *line = NULL;
        json_auto_t *a = NULL;
        json_t *r;

        start_server(f, 50, 0, false);
        client_open(f, &c);
        send_req(&c, "1", "secret", "{}");
        line = client_recv_line(&c, 3000, NULL);
        assert_non_null(line);
        assert_null(strstr(line, SECRET));
        a = json_loads(line, 0, NULL);
        assert_non_null(a);
        r = answer_result(a);
        assert_string_equal(json_string_value(json_object_get(r, "text")), "the key is *** here");
        assert_string_equal(json_string_value(json_array_get(json_object_get(r, "list"), 0)),
                            "***");
        assert_string_equal(json_string_value(json_object_get(json_object_get(r, "nested"), "k")),
                            "prefix-***");
        client_close(&c);
}

/* A result whose redaction fails is withheld: an error answer, never the raw result. */
static void test_rpc_server_withholds_result_when_redaction_fails(void **state)
{
        struct fixture *f = *state;
        struct client c;
        _cleanup_free_ char *line = NULL;
        json_auto_t *a = NULL, *log = NULL;

        start_server(f, 50, 0, true);
        client_open(f, &c);
        /* Without a fault the secret at the end is redacted as usual. */
        send_req(&c, "1", "bigsecret", "{}");
        line = client_recv_line(&c, 3000, NULL);
        assert_non_null(line);
        assert_null(strstr(line, SECRET));
        assert_non_null(strstr(line, " ***\""));
        line = mfree_str(line);

        fault_alloc_arm(1, 200 * 1000);
        send_req(&c, "2", "bigsecret", "{}");
        line = client_recv_line(&c, 3000, NULL);
        fault_alloc_arm(0, 0);
        assert_non_null(line);
        assert_null(strstr(line, SECRET));
        a = json_loads(line, 0, NULL);
        assert_non_null(a);
        assert_string_equal(json_string_value(json_object_get(answer_result(a), "error")),
                            "tool result withheld: redaction failed (Cannot allocate memory)");
        log = rpc_server_log(f->server);
        assert_int_equal(json_array_size(log), 2);
        assert_true(json_is_false(json_object_get(json_array_get(log, 1), "ok")));
        client_close(&c);
}

/* A log preview whose redaction fails is dropped ("" in args_preview). */
static void test_rpc_server_log_drops_preview_when_redaction_fails(void **state)
{
        struct fixture *f = *state;
        struct client c;
        json_auto_t *log = NULL;
        static const int rcs[] = {PCRE2_ERROR_MATCHLIMIT, PCRE2_ERROR_NOMEMORY};

        start_server(f, 50, 0, true);
        client_open(f, &c);
        for (size_t i = 0; i < ELEMENTSOF(rcs); i++) {
                json_auto_t *a = NULL;

                /* A vendor-prefixed key: only the pattern passes (pcre2) can hide it. */
                fault_match_arm(1, rcs[i]);
                send_req(&c, "1", "fail", "{\"k\":\"sk-abcdefghijklmnop1234\"}");
                a = client_recv(&c);
                answer_result(a);
                assert_true(fault_match_fired());
        }
        fault_match_arm(0, 0);
        log = rpc_server_log(f->server);
        assert_int_equal(json_array_size(log), ELEMENTSOF(rcs));
        for (size_t i = 0; i < ELEMENTSOF(rcs); i++)
                assert_string_equal(
                        json_string_value(json_object_get(json_array_get(log, i), "args_preview")),
                        "");
        client_close(&c);
}

static void test_rpc_server_log(void **state)
{
        struct fixture *f = *state;
        struct client c;
        json_auto_t *log = NULL;
        static const struct {
                const char *tool, *args;
                bool ok;
        } calls[] = {
                {"echo", "{\"x\":1}", true},
                {"fail", "{}", false},
                {"crash", "{}", false},
                /* fail does not echo its args: only the log's own redaction hides this. */
                {"fail", "{\"k\":\"" SECRET "\"}", false},
                {"echo",
                 "{\"long\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}",
                 true},
        };

        start_server(f, 50, 0, true);
        client_open(f, &c);
        for (size_t i = 0; i < ELEMENTSOF(calls); i++) {
                json_auto_t *a = NULL;
                send_req(&c, "1", calls[i].tool, calls[i].args);
                a = client_recv(&c);
                if (strcmp(calls[i].tool, "crash") == 0)
                        /* A tool's own failure is a result, counted. */
                        assert_string_equal(
                                json_string_value(json_object_get(answer_result(a), "error")),
                                "Tool execution failed: Input/output error");
                else
                        answer_result(a);
        }
        /* Refused requests are not logged. */
        {
                json_auto_t *a = NULL;
                send_req(&c, "1", "nope", "{}");
                a = client_recv(&c);
                answer_error(a);
        }
        assert_int_equal(rpc_server_calls_made(f->server), ELEMENTSOF(calls));

        log = rpc_server_log(f->server);
        assert_true(json_is_array(log));
        assert_int_equal(json_array_size(log), ELEMENTSOF(calls));
        for (size_t i = 0; i < ELEMENTSOF(calls); i++) {
                json_t *e = json_array_get(log, i);
                const char *preview = json_string_value(json_object_get(e, "args_preview"));
                assert_string_equal(json_string_value(json_object_get(e, "tool")), calls[i].tool);
                assert_true(json_is_boolean(json_object_get(e, "ok")));
                if (json_is_true(json_object_get(e, "ok")) != calls[i].ok)
                        fail_msg("log entry %zu (%s): ok should be %d", i, calls[i].tool,
                                 calls[i].ok);
                assert_true(json_is_number(json_object_get(e, "duration_seconds")));
                assert_true(json_number_value(json_object_get(e, "duration_seconds")) >= 0);
                assert_non_null(preview);
                assert_null(strstr(preview, SECRET));
                assert_true(strlen(preview) <= 80);
        }
        assert_non_null(
                strstr(json_string_value(json_object_get(json_array_get(log, 0), "args_preview")),
                       "\"x\""));
        assert_non_null(strstr(
                json_string_value(json_object_get(json_array_get(log, 3), "args_preview")), "***"));
        assert_int_equal(
                strlen(json_string_value(json_object_get(json_array_get(log, 4), "args_preview"))),
                80);
        client_close(&c);

        /* Without log_calls nothing is kept. */
        start_server(f, 50, 0, false);
        client_open(f, &c);
        {
                json_auto_t *a = NULL, *l = NULL;
                send_req(&c, "1", "echo", "{}");
                a = client_recv(&c);
                l = rpc_server_log(f->server);
                assert_true(json_is_array(l));
                assert_int_equal(json_array_size(l), 0);
        }
        client_close(&c);
}

static void test_rpc_server_shutdown_unanswered(void **state)
{
        struct fixture *f = *state;
        struct client slow, stuck, idle;
        size_t big = 4 * 1024 * 1024;
        char *args;
        usec_t t0, dt;

        start_server(f, 50, 0, false);
        client_open(f, &slow);
        client_open(f, &stuck);
        client_open(f, &idle);

        /* A call in flight whose answer nobody reads. */
        send_req(&slow, "1", "sleep", "{}");
        /* An answer far larger than the socket buffer, never read: the writer blocks. */
        args = malloc(big + 16);
        assert_non_null(args);
        memcpy(args, "{\"p\":\"", 6);
        memset(args + 6, 'y', big);
        memcpy(args + 6 + big, "\"}", 3);
        {
                _cleanup_free_ char *r = make_req("2", "echo", args);
                assert_true(client_send(&stuck, r, strlen(r)));
        }
        free(args);
        usleep(100 * 1000);

        /* A writer left blocked would hold the shutdown for its whole 60 s: the 30 s bound is
         * a hang guard (the call in flight takes 0.2 s), not a stopwatch. */
        t0 = now_usec();
        rpc_server_shutdown(f->server, 60000);
        dt = now_usec() - t0;
        if (dt >= 30 * USEC_PER_SEC) /* hang guard */
                fail_msg("shutdown took %llu ms", (unsigned long long) (dt / 1000));
        /* Idempotent. */
        rpc_server_shutdown(f->server, 60000);
        t0 = now_usec();
        f->server = rpc_server_free(f->server);
        assert_true(now_usec() - t0 < 10 * USEC_PER_SEC); /* hang guard */

        /* Every connection was shut down: the idle client sees EOF. */
        {
                bool eof = false;
                assert_null(client_recv_line(&idle, 1000, &eof));
                assert_true(eof);
        }
        client_close(&slow);
        client_close(&stuck);
        client_close(&idle);
}

/*
 * The same with a client that half-closed its side after the request: the
 * server sees EOF and stops reading that connection, but the answer is still
 * being written into a socket nobody reads. Shutdown must wake that writer too.
 */
static void test_rpc_server_shutdown_half_closed_writer(void **state)
{
        struct fixture *f = *state;
        struct client stuck;
        size_t big = 4 * 1024 * 1024;
        char *args;
        usec_t t0, dt;

        start_server(f, 50, 0, false);
        client_open(f, &stuck);
        args = malloc(big + 16);
        assert_non_null(args);
        memcpy(args, "{\"p\":\"", 6);
        memset(args + 6, 'z', big);
        memcpy(args + 6 + big, "\"}", 3);
        {
                _cleanup_free_ char *r = make_req("1", "echo", args);
                assert_true(client_send(&stuck, r, strlen(r)));
        }
        free(args);
        assert_int_equal(shutdown(stuck.fd, SHUT_WR), 0);
        /* Let the server read the request and the EOF and block writing the answer. */
        usleep(200 * 1000);

        /* The writer left blocked would hold the shutdown for its whole 60 s. */
        t0 = now_usec();
        rpc_server_shutdown(f->server, 60000);
        dt = now_usec() - t0;
        if (dt >= 30 * USEC_PER_SEC) /* hang guard */
                fail_msg("shutdown took %llu ms", (unsigned long long) (dt / 1000));
        f->server = rpc_server_free(f->server);
        client_close(&stuck);
}

/* Requests that arrive in pieces, many at once, and followed by EOF are all served. */
static void test_rpc_server_partial_and_bulk(void **state)
{
        struct fixture *f = *state;
        struct client c;
        _cleanup_free_ char *r = make_req("\"split\"", "echo", "{\"a\":[1,2,3]}");
        enum { BULK = 300 };
        bool seen[BULK] = {};
        char *all;
        size_t len = 0;

        start_server(f, 1000, 0, false);
        client_open(f, &c);
        /* One byte per send. */
        for (size_t i = 0; r[i]; i++) {
                assert_true(client_send(&c, r + i, 1));
                if (i % 16 == 0)
                        usleep(1000);
        }
        {
                json_auto_t *a = client_recv(&c);
                assert_string_equal(json_string_value(json_object_get(a, "id")), "split");
                assert_int_equal(json_array_size(json_object_get(
                                         json_object_get(answer_result(a), "args"), "a")),
                                 3);
        }

        /* 300 requests in one send, then EOF from our side: every one is answered. */
        all = malloc(BULK * 200);
        assert_non_null(all);
        for (int i = 0; i < BULK; i++) {
                char id[16];
                _cleanup_free_ char *q = NULL;
                snprintf(id, sizeof(id), "%d", i);
                q = make_req(id, "echo", "{}");
                memcpy(all + len, q, strlen(q));
                len += strlen(q);
        }
        assert_true(client_send(&c, all, len));
        free(all);
        assert_int_equal(shutdown(c.fd, SHUT_WR), 0);
        for (int i = 0; i < BULK; i++) {
                json_auto_t *a = client_recv(&c);
                json_int_t id = json_integer_value(json_object_get(a, "id"));
                answer_result(a);
                assert_true(id >= 0 && id < BULK);
                assert_false(seen[id]);
                seen[id] = true;
        }
        {
                bool eof = false;
                assert_null(client_recv_line(&c, 2000, &eof));
                assert_true(eof);
        }
        assert_int_equal(rpc_server_calls_made(f->server), BULK + 1);
        client_close(&c);
}

static void test_rpc_server_client_vanishes(void **state)
{
        struct fixture *f = *state;
        struct client gone, ok;

        start_server(f, 50, 0, false);
        /* Disconnect while the call runs: the answer hits a closed socket (no SIGPIPE). */
        client_open(f, &gone);
        send_req(&gone, "1", "sleep", "{}");
        client_close(&gone);
        /* Many connections opened and closed at once. */
        for (int i = 0; i < 50; i++) {
                struct client c;
                client_open(f, &c);
                if (i % 2)
                        send_req(&c, "1", "echo", "{}");
                client_close(&c);
        }
        usleep(300 * 1000);
        client_open(f, &ok);
        {
                json_auto_t *a = NULL;
                send_req(&ok, "\"alive\"", "echo", "{}");
                a = client_recv(&ok);
                answer_result(a);
        }
        client_close(&ok);
        /* Half-written request then EOF: never dispatched. */
        client_open(f, &gone);
        client_send_str(&gone, "{\"id\":1,\"token\":\"" TOKEN "\",\"tool\":\"echo\"");
        client_close(&gone);
        usleep(50 * 1000);
        assert_true(rpc_server_calls_made(f->server) >= 1);
        assert_true(rpc_server_calls_made(f->server) <= 27);
}

static void test_rpc_server_new_errors(void **state)
{
        struct fixture *f = *state;
        char longpath[200];
        struct rpc_server_opts o = {
                .socket_path = longpath,
                .token = TOKEN,
                .registry = f->reg.registry,
                .tool_ctx = &f->reg.ctx,
                .max_tool_calls = 1,
        };
        struct rpc_server *s = NULL;

        memset(longpath, 'p', sizeof(longpath) - 1);
        longpath[0] = '/';
        longpath[sizeof(longpath) - 1] = 0;
        assert_int_equal(rpc_server_new(&o, &s), -ENAMETOOLONG);
        /* A log redactor that is not the one the results are redacted with. */
        snprintf(longpath, sizeof(longpath), "%s/other.sock", f->dir);
        o.redactor = f->reg.redactor;
        o.tool_ctx = &(const struct tool_ctx){.cancel_fd = -1};
        assert_int_equal(rpc_server_new(&o, &s), -EINVAL);
        o.redactor = NULL;
        o.tool_ctx = &f->reg.ctx;
        /* A directory that does not exist. */
        snprintf(longpath, sizeof(longpath), "%s/missing/rpc.sock", f->dir);
        assert_int_equal(rpc_server_new(&o, &s), -ENOENT);
        /* Address in use. */
        start_server(f, 1, 0, false);
        o.socket_path = f->sock;
        assert_int_equal(rpc_server_new(&o, &s), -EADDRINUSE);
        assert_null(rpc_server_free(NULL));
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
        const struct CMUnitTest tests[] = {
                T(test_rpc_server_good_request),
                T(test_rpc_server_ids_echoed),
                T(test_rpc_server_unauthorized),
                T(test_rpc_server_invalid_requests),
                T(test_rpc_server_budget),
                T(test_rpc_server_budget_race),
                T(test_rpc_server_terminal_dropped_params),
                T(test_rpc_server_concurrent_connections),
                T(test_rpc_server_pipelined),
                T(test_rpc_server_frame_max),
                T(test_rpc_server_blank_lines),
                T(test_rpc_server_redacts_results),
                T(test_rpc_server_log),
                T(test_rpc_server_withholds_result_when_redaction_fails),
                T(test_rpc_server_log_drops_preview_when_redaction_fails),
                T(test_rpc_server_shutdown_unanswered),
                T(test_rpc_server_shutdown_half_closed_writer),
                T(test_rpc_server_partial_and_bulk),
                T(test_rpc_server_client_vanishes),
                T(test_rpc_server_new_errors),
        };
#undef T

        return cmocka_run_group_tests(tests, NULL, NULL);
}
