/* SPDX-License-Identifier: MIT */
#include "../lib/ptc-test.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/diag.h"
#include "basic/fd-util.h"
#include "basic/macro.h"
#include "basic/path-util.h"
#include "basic/process-util.h"
#include "basic/time-util.h"
#include "core/config/config.h"
#include "core/mcp/mcp-client.h"
#include "core/spawn/spawn.h"

/* The pyenv python3 on PATH starts slowly; the system one is enough for the fixture. */
#define PYTHON "/usr/bin/python3"

extern char **environ;

static char fake_server[4096];

struct fixture {
        char dir[64];
        char log[128];
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        if (!f)
                return -1;
        (void) snprintf(f->dir, sizeof(f->dir), "/tmp/ptc-test-mcpc-XXXXXX");
        if (!mkdtemp(f->dir))
                return -1;
        (void) snprintf(f->log, sizeof(f->log), "%s/received.log", f->dir);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        (void) rm_rf(f->dir);
        free(f);
        return 0;
}

/* Start the fake server in @mode (logging what it reads to @log, if non-NULL). */
static int start_fake(const char *mode, const char *log, usec_t timeout, char **env,
                      struct mcp_client **ret, struct diag *d)
{
        char *args[] = {fake_server, (char *) mode, (char *) log, NULL};
        char *no_env[] = {NULL};
        struct mcp_server_config cfg = {
                .name = (char *) "fake",
                .command = (char *) PYTHON,
                .args = args,
                .env = env ? env : no_env,
        };

        return mcp_client_start(&cfg, environ, now_usec() + timeout, ret, d);
}

static struct mcp_client *start_ok(const char *mode, const char *log)
{
        struct mcp_client *c = NULL;
        struct diag d = {};
        int r;

        r = start_fake(mode, log, 20 * USEC_PER_SEC, NULL, &c, &d);
        if (r < 0)
                fail_msg("start %s: %d %s", mode, r, d.message);
        assert_non_null(c);
        return c;
}

/* Call @tool with @args_json and compare the result with @expect_json. */
static void assert_call(struct mcp_client *c, const char *tool, const char *args_json,
                        const char *expect_json)
{
        json_auto_t *args = json_loads(args_json, 0, NULL);
        json_auto_t *expect = json_loads(expect_json, 0, NULL);
        json_auto_t *res = NULL;
        _cleanup_free_ char *got = NULL;

        assert_non_null(args);
        assert_non_null(expect);
        assert_int_equal(mcp_client_call(c, tool, args, now_usec() + 20 * USEC_PER_SEC, -1, &res),
                         0);
        assert_non_null(res);
        got = json_dumps(res, JSON_COMPACT | JSON_SORT_KEYS);
        if (!json_equal(res, expect))
                fail_msg("%s: got %s, expected %s", tool, got, expect_json);
}

static json_t *call(struct mcp_client *c, const char *tool, usec_t timeout, int cancel_fd)
{
        json_auto_t *args = json_object();
        json_t *res = NULL;

        assert_int_equal(mcp_client_call(c, tool, args, now_usec() + timeout, cancel_fd, &res), 0);
        assert_non_null(res);
        return res;
}

static void assert_error_text(json_t *res, const char *text)
{
        json_t *e = json_object_get(res, "error");

        assert_true(json_is_string(e));
        assert_string_equal(json_string_value(e), text);
        assert_int_equal(json_object_size(res), 1);
}

/* ---- start-up ---- */

static const char *const valid_tools[] = {
        "echo",       "add",  "fail",        "image",         "json_text", "list_text",
        "multi_text", "big",  "big_id_last", "sleep",         "hang",      "crash",
        "rpc_error",  "pids", "ping_client", "noschema_type", "not_json",
};

static void assert_tool_list(struct mcp_client *c)
{
        const struct mcp_upstream_tool *t;
        json_t *props;

        assert_string_equal(mcp_client_name(c), "fake");
        assert_int_equal(mcp_client_tool_count(c), ELEMENTSOF(valid_tools));
        for (size_t i = 0; i < ELEMENTSOF(valid_tools); i++) {
                t = mcp_client_tool(c, i);
                assert_non_null(t);
                assert_string_equal(t->name, valid_tools[i]);
                assert_true(json_is_object(t->input_schema));
                assert_string_equal(json_string_value(json_object_get(t->input_schema, "type")),
                                    "object");
        }
        assert_null(mcp_client_tool(c, ELEMENTSOF(valid_tools)));

        t = mcp_client_tool(c, 0);
        assert_string_equal(t->description, "Echo text back.");
        props = json_object_get(t->input_schema, "properties");
        assert_true(json_is_object(json_object_get(props, "text")));
        /* No description: "". */
        assert_string_equal(mcp_client_tool(c, 1)->description, "");
        /* A schema without "type" gets "object". */
        t = mcp_client_tool(c, ELEMENTSOF(valid_tools) - 1);
        assert_true(json_is_object(json_object_get(t->input_schema, "properties")));
        assert_true(mcp_client_is_alive(c));
}

static void test_mcp_client_start_tools(void **state)
{
        _cleanup_mcp_client_ struct mcp_client *c = NULL;
        struct diag d = {};

        assert_int_equal(start_fake("normal", NULL, 20 * USEC_PER_SEC, NULL, &c, &d), 0);
        assert_tool_list(c);
        /* Empty name, missing schema, 200-byte name, numeric name, string schema, array type. */
        assert_string_equal(d.message, "mcp server 'fake': skipped 6 invalid tools");
}

static void test_mcp_client_start_paged(void **state)
{
        _cleanup_mcp_client_ struct mcp_client *c = NULL;
        struct diag d = {};

        assert_int_equal(start_fake("paged-tools", NULL, 20 * USEC_PER_SEC, NULL, &c, &d), 0);
        assert_tool_list(c);
        assert_string_equal(d.message, "mcp server 'fake': skipped 6 invalid tools");
}

static void test_mcp_client_start_missing_command(void **state)
{
        char *args[] = {NULL}, *env[] = {NULL};
        struct mcp_server_config cfg = {
                .name = (char *) "files",
                .command = (char *) "ptc-no-such-command-4711",
                .args = args,
                .env = env,
        };
        struct mcp_client *c = NULL;
        struct diag d = {};

        assert_int_equal(mcp_client_start(&cfg, environ, now_usec() + 5 * USEC_PER_SEC, &c, &d),
                         -ENOENT);
        assert_null(c);
        assert_string_equal(
                d.message,
                "mcp server 'files': cannot execute 'ptc-no-such-command-4711': No such file or "
                "directory");
}

/* The command is looked up on the PATH the server gets: @env's, overridden by cfg->env. */
static void test_mcp_client_start_path_from_env(void **state)
{
        char *args[] = {fake_server, (char *) "normal", NULL};
        char *cfg_env[] = {(char *) "PATH=/usr/bin", NULL};
        char *env[] = {(char *) "PATH=/nonexistent", (char *) "LANG=C", NULL};
        struct mcp_server_config cfg = {
                .name = (char *) "fake",
                .command = (char *) "python3",
                .args = args,
                .env = cfg_env,
        };
        struct mcp_client *c = NULL;
        struct diag d = {};

        assert_int_equal(mcp_client_start(&cfg, env, now_usec() + 20 * USEC_PER_SEC, &c, &d), 0);
        assert_int_equal(mcp_client_tool_count(c), ELEMENTSOF(valid_tools));
        c = mcp_client_free(c);

        /* Without the override, /nonexistent is searched and nothing found. */
        cfg_env[0] = NULL;
        assert_int_equal(mcp_client_start(&cfg, env, now_usec() + 5 * USEC_PER_SEC, &c, &d),
                         -ENOENT);
        assert_string_equal(d.message, "mcp server 'fake': cannot execute 'python3': No such file "
                                       "or directory");
}

static void test_mcp_client_start_exit_at_start(void **state)
{
        struct mcp_client *c = NULL;
        struct diag d = {};

        assert_int_equal(start_fake("exit-at-start", NULL, 20 * USEC_PER_SEC, NULL, &c, &d),
                         -ESRCH);
        assert_null(c);
        assert_string_equal(d.message, "mcp server 'fake' exited during start-up (status 1)");
}

static void test_mcp_client_start_slow_init(void **state)
{
        struct mcp_client *c = NULL;
        struct diag d = {};
        usec_t t0 = now_usec(), dt;

        assert_int_equal(start_fake("slow-init", NULL, USEC_PER_SEC, NULL, &c, &d), -ETIMEDOUT);
        dt = now_usec() - t0;
        assert_null(c);
        assert_string_equal(d.message, "mcp server 'fake': no answer to initialize within 1 s");
        /* The deadline is met, then the server is stopped (2 s grace after stdin EOF): the
         * fake would answer only after 60 s, so this hang guard shows it was not waited for. */
        assert_true(dt >= USEC_PER_SEC);
        assert_true(dt < 30 * USEC_PER_SEC); /* hang guard */
}

static void test_mcp_client_start_bad_version(void **state)
{
        struct mcp_client *c = NULL;
        struct diag d = {};

        assert_int_equal(start_fake("bad-version", NULL, 20 * USEC_PER_SEC, NULL, &c, &d), -EPROTO);
        assert_null(c);
        assert_string_equal(d.message,
                            "mcp server 'fake': unsupported protocol version '1999-01-01' (ptc "
                            "speaks 2025-11-25, 2025-06-18 and 2025-03-26)");
}

static void test_mcp_client_start_not_json_list(void **state)
{
        struct mcp_client *c = NULL;
        struct diag d = {};
        usec_t t0 = now_usec();

        /* The answer names its id: the start fails at once with the parser's word, instead of
         * waiting out its 20 s. */
        assert_int_equal(start_fake("not-json-list", NULL, 20 * USEC_PER_SEC, NULL, &c, &d),
                         -EPROTO);
        assert_null(c);
        assert_non_null(strstr(d.message, "mcp server 'fake': answer to tools/list is not JSON ("));
        assert_non_null(strstr(d.message, "\\u0000"));
        assert_true(now_usec() - t0 < 10 * USEC_PER_SEC); /* hang guard (vs its 20 s) */
}

/* ---- tools/call ---- */

static void test_mcp_client_call_mapping(void **state)
{
        _cleanup_mcp_client_ struct mcp_client *c = start_ok("normal", NULL);

        assert_call(c, "echo", "{\"text\": \"hi there\"}", "{\"text\": \"hi there\"}");
        assert_call(c, "add", "{\"a\": 2, \"b\": 3}", "{\"sum\": 5}");
        assert_call(c, "fail", "{}", "{\"error\": \"it failed\"}");
        assert_call(c, "image", "{}",
                    "{\"text\": \"here\", \"content\": [{\"type\": \"image\", \"data\": \"aGk=\", "
                    "\"mimeType\": \"image/png\"}]}");
        assert_call(c, "json_text", "{}", "{\"x\": 1, \"y\": [2]}");
        assert_call(c, "list_text", "{}", "{\"result\": [1, 2, 3]}");
        assert_call(c, "multi_text", "{}", "{\"text\": \"a\\nb\"}");
        assert_call(c, "echo", "{\"text\": \"42\"}", "{\"result\": 42}");
        assert_call(c, "echo", "{\"text\": \"\"}", "{\"text\": \"\"}");
        assert_call(c, "rpc_error", "{}", "{\"error\": \"mcp server 'fake': boom (code -32000)\"}");
        assert_call(c, "nope", "{}",
                    "{\"error\": \"mcp server 'fake': unknown tool nope (code -32602)\"}");
        assert_true(mcp_client_is_alive(c));
}

struct sleeper {
        struct mcp_client *c;
        json_t *res;
        int r;
};

static void *sleeper_main(void *arg)
{
        struct sleeper *s = arg;
        json_t *args = json_pack("{s:i,s:i}", "ms", 200, "meet", 8);

        s->r = mcp_client_call(s->c, "sleep", args, now_usec() + 30 * USEC_PER_SEC, -1, &s->res);
        json_decref(args);
        return NULL;
}

static void test_mcp_client_call_concurrent(void **state)
{
        _cleanup_mcp_client_ struct mcp_client *c = start_ok("normal", NULL);
        struct sleeper s[8] = {};
        pthread_t th[8];

        for (size_t i = 0; i < ELEMENTSOF(s); i++) {
                s[i].c = c;
                assert_int_equal(pthread_create(&th[i], NULL, sleeper_main, &s[i]), 0);
        }
        for (size_t i = 0; i < ELEMENTSOF(s); i++)
                assert_int_equal(pthread_join(th[i], NULL), 0);
        for (size_t i = 0; i < ELEMENTSOF(s); i++) {
                assert_int_equal(s[i].r, 0);
                assert_int_equal(json_integer_value(json_object_get(s[i].res, "slept")), 200);
                /* the eight met at the fake's barrier: in flight at once, not one by one */
                assert_true(json_is_true(json_object_get(s[i].res, "met")));
                json_decref(s[i].res);
        }
}

/* The received.log lines of @method; returns how many, the last one's params in *ret. */
static int find_logged(const char *log, const char *method, json_t **ret)
{
        _cleanup_free_ char *data = NULL;
        int n = 0;

        assert_int_equal(read_file_at(AT_FDCWD, log, 1 << 20, &data, NULL), 0);
        for (char *line = data, *nl; line && *line; line = nl ? nl + 1 : NULL) {
                json_auto_t *m = NULL;

                nl = strchr(line, '\n');
                if (nl)
                        *nl = 0;
                m = json_loads(line, 0, NULL);
                assert_non_null(m);
                if (json_is_string(json_object_get(m, "method")) &&
                    strcmp(json_string_value(json_object_get(m, "method")), method) == 0) {
                        n++;
                        json_decref(*ret);
                        *ret = json_incref(json_object_get(m, "params"));
                }
        }
        return n;
}

/* The id of the last tools/call of @tool in @log. */
static json_int_t logged_call_id(const char *log, const char *tool)
{
        _cleanup_free_ char *data = NULL;
        json_int_t id = -1;

        assert_int_equal(read_file_at(AT_FDCWD, log, 1 << 20, &data, NULL), 0);
        for (char *line = data, *nl; line && *line; line = nl ? nl + 1 : NULL) {
                json_auto_t *m = NULL;
                json_t *name;

                nl = strchr(line, '\n');
                if (nl)
                        *nl = 0;
                m = json_loads(line, 0, NULL);
                name = json_object_get(json_object_get(m, "params"), "name");
                if (json_is_string(name) && strcmp(json_string_value(name), tool) == 0)
                        id = json_integer_value(json_object_get(m, "id"));
        }
        return id;
}

static void assert_cancel_logged(struct mcp_client *c, const char *log, const char *tool,
                                 const char *reason)
{
        json_auto_t *params = NULL, *sync = NULL;

        /* The server reads in order: once echo is answered, the notification was logged. */
        sync = call(c, "echo", 10 * USEC_PER_SEC, -1);
        assert_int_equal(find_logged(log, "notifications/cancelled", &params), 1);
        assert_int_equal(json_integer_value(json_object_get(params, "requestId")),
                         logged_call_id(log, tool));
        assert_string_equal(json_string_value(json_object_get(params, "reason")), reason);
}

static void test_mcp_client_call_deadline(void **state)
{
        struct fixture *f = *state;
        _cleanup_mcp_client_ struct mcp_client *c = start_ok("normal", f->log);
        json_auto_t *res = NULL;
        usec_t t0 = now_usec(), dt;

        res = call(c, "hang", 300 * USEC_PER_MSEC, -1);
        dt = now_usec() - t0;
        assert_error_text(res, "mcp server 'fake' did not answer tools/call 'hang' within 0.3 s");
        assert_true(dt >= 300 * USEC_PER_MSEC);
        assert_true(dt < 10 * USEC_PER_SEC); /* hang guard; the text above names the 0.3 s */
        assert_cancel_logged(c, f->log, "hang", "timeout");
        assert_true(mcp_client_is_alive(c));
}

static void test_mcp_client_call_cancel_fd(void **state)
{
        struct fixture *f = *state;
        _cleanup_mcp_client_ struct mcp_client *c = start_ok("normal", f->log);
        _cleanup_close_ int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
        struct itimerspec its = {.it_value = {.tv_nsec = 100 * 1000 * 1000}};
        json_auto_t *res = NULL;
        usec_t t0, dt;

        assert_true(tfd >= 0);
        t0 = now_usec();
        assert_int_equal(timerfd_settime(tfd, 0, &its, NULL), 0);
        res = call(c, "hang", 60 * USEC_PER_SEC, tfd);
        dt = now_usec() - t0;
        assert_error_text(res, "cancelled");
        assert_true(dt >= 100 * USEC_PER_MSEC);
        assert_true(dt < 10 * USEC_PER_SEC); /* hang guard */
        assert_cancel_logged(c, f->log, "hang", "cancelled");
}

struct hanger {
        struct mcp_client *c;
        json_t *res;
        usec_t took;
};

static void *hanger_main(void *arg)
{
        struct hanger *h = arg;
        usec_t t0 = now_usec();

        h->res = call(h->c, "hang", 60 * USEC_PER_SEC, -1);
        h->took = now_usec() - t0;
        return NULL;
}

static void test_mcp_client_call_crash(void **state)
{
        _cleanup_mcp_client_ struct mcp_client *c = start_ok("normal", NULL);
        const char *gone = "mcp server 'fake' is not running (exited with status 3)";
        json_auto_t *res = NULL, *again = NULL;
        struct hanger h = {.c = c};
        pthread_t th;
        usec_t t0;

        /* A call in flight on another thread fails too, not at its 60 s deadline. */
        assert_int_equal(pthread_create(&th, NULL, hanger_main, &h), 0);
        res = call(c, "crash", 10 * USEC_PER_SEC, -1);
        assert_error_text(res, gone);
        assert_int_equal(pthread_join(th, NULL), 0);
        assert_error_text(h.res, gone);
        json_decref(h.res);
        assert_true(h.took < 30 * USEC_PER_SEC); /* hang guard */
        assert_false(mcp_client_is_alive(c));

        /* Later calls fail at once. */
        t0 = now_usec();
        again = call(c, "echo", 60 * USEC_PER_SEC, -1);
        assert_true(now_usec() - t0 < 10 * USEC_PER_SEC); /* hang guard */
        assert_error_text(again, gone);
}

static void test_mcp_client_call_crash_on_call(void **state)
{
        _cleanup_mcp_client_ struct mcp_client *c = start_ok("crash-on-call", NULL);
        json_auto_t *res = call(c, "echo", 10 * USEC_PER_SEC, -1);

        assert_error_text(res, "mcp server 'fake' is not running (exited with status 3)");
}

static void test_mcp_client_garbage_lines(void **state)
{
        _cleanup_mcp_client_ struct mcp_client *c = start_ok("garbage-lines", NULL);

        assert_int_equal(mcp_client_tool_count(c), ELEMENTSOF(valid_tools));
        assert_call(c, "echo", "{\"text\": \"still here\"}", "{\"text\": \"still here\"}");
        assert_call(c, "add", "{\"a\": 1, \"b\": 1}", "{\"sum\": 2}");
        assert_true(mcp_client_is_alive(c));
}

static void test_mcp_client_oversized_line(void **state)
{
        _cleanup_mcp_client_ struct mcp_client *c = start_ok("normal", NULL);
        const char *tools[] = {"big", "big_id_last"};

        for (size_t i = 0; i < ELEMENTSOF(tools); i++) {
                _cleanup_free_ char *want = NULL;
                json_auto_t *res = NULL;
                usec_t t0 = now_usec();

                assert_true(asprintf(&want,
                                     "mcp server 'fake': the answer to tools/call '%s' is "
                                     "larger than 16 MiB",
                                     tools[i]) > 0);
                /* The id is found in the discarded line: the caller learns at once. */
                res = call(c, tools[i], 30 * USEC_PER_SEC, -1);
                assert_error_text(res, want);
                assert_true(now_usec() - t0 < 15 * USEC_PER_SEC); /* hang guard */
                assert_true(mcp_client_is_alive(c));
                assert_call(c, "echo", "{\"text\": \"after\"}", "{\"text\": \"after\"}");
        }
}

static void test_mcp_client_not_json_answer(void **state)
{
        _cleanup_mcp_client_ struct mcp_client *c = start_ok("normal", NULL);
        const char *kinds[] = {"{\"kind\": \"nul\"}", "{\"kind\": \"bigint\"}"};

        for (size_t i = 0; i < ELEMENTSOF(kinds); i++) {
                json_auto_t *args = json_loads(kinds[i], 0, NULL);
                json_auto_t *res = NULL;
                usec_t t0 = now_usec();
                const char *e;

                assert_non_null(args);
                assert_int_equal(mcp_client_call(c, "not_json", args,
                                                 now_usec() + 30 * USEC_PER_SEC, -1, &res),
                                 0);
                e = json_string_value(json_object_get(res, "error"));
                assert_non_null(e);
                assert_non_null(strstr(e, "mcp server 'fake': the answer to tools/call "
                                          "'not_json' is not JSON ("));
                assert_true(now_usec() - t0 < 15 * USEC_PER_SEC); /* hang guard */
                assert_true(mcp_client_is_alive(c));
                assert_call(c, "echo", "{\"text\": \"after\"}", "{\"text\": \"after\"}");
        }
}

static void test_mcp_client_server_ping(void **state)
{
        _cleanup_mcp_client_ struct mcp_client *c = start_ok("server-ping", NULL);
        json_auto_t *res = call(c, "ping_client", 20 * USEC_PER_SEC, -1);
        json_t *ping = json_object_get(res, "ping"), *roots = json_object_get(res, "roots");
        json_t *sampling = json_object_get(res, "sampling");
        json_auto_t *empty = json_object(), *no_roots = json_pack("{s:[]}", "roots");

        assert_string_equal(json_string_value(json_object_get(ping, "id")), "s1");
        assert_true(json_equal(json_object_get(ping, "result"), empty));
        assert_string_equal(json_string_value(json_object_get(roots, "id")), "s2");
        assert_true(json_equal(json_object_get(roots, "result"), no_roots));
        assert_string_equal(json_string_value(json_object_get(sampling, "id")), "s3");
        assert_null(json_object_get(sampling, "result"));
        assert_int_equal(
                json_integer_value(json_object_get(json_object_get(sampling, "error"), "code")),
                -32601);
}

/* ---- teardown ---- */

static bool pidfd_exits_within(int pidfd, int ms)
{
        struct pollfd p = {.fd = pidfd, .events = POLLIN};

        return poll(&p, 1, ms) == 1;
}

static void test_mcp_client_free_kills_group(void **state)
{
        struct mcp_client *c = start_ok("fork-child", NULL);
        json_auto_t *res = call(c, "pids", 10 * USEC_PER_SEC, -1);
        pid_t pid = (pid_t) json_integer_value(json_object_get(res, "pid"));
        pid_t child = (pid_t) json_integer_value(json_object_get(res, "child"));
        _cleanup_close_ int child_fd = -EBADF;
        usec_t t0;

        assert_true(pid > 0);
        assert_true(child > 0);
        assert_int_equal(getpgid(child), pid);
        child_fd = pidfd_open_compat(child);
        assert_true(child_fd >= 0);
        assert_false(pidfd_exits_within(child_fd, 0));

        t0 = now_usec();
        c = mcp_client_free(c);
        /* The server exits on stdin EOF; its child (asleep for 60 s) is killed with the group. */
        assert_true(now_usec() - t0 < 20 * USEC_PER_SEC); /* hang guard */
        assert_int_equal(kill(pid, 0), -1);
        assert_int_equal(errno, ESRCH);
        /* The grandchild is reaped by init, later: its pidfd says it is dead already. */
        assert_true(pidfd_exits_within(child_fd, 10000));
}

static void test_mcp_client_free_sigkill(void **state)
{
        struct mcp_client *c = start_ok("ignore-term", NULL);
        json_auto_t *res = call(c, "pids", 10 * USEC_PER_SEC, -1);
        pid_t pid = (pid_t) json_integer_value(json_object_get(res, "pid"));
        usec_t t0 = now_usec(), dt;

        c = mcp_client_free(c);
        dt = now_usec() - t0;
        /* stdin EOF and SIGTERM ignored: 2 s + 2 s, then SIGKILL. */
        assert_true(dt >= 4 * USEC_PER_SEC - 100 * USEC_PER_MSEC);
        assert_true(dt < 30 * USEC_PER_SEC); /* hang guard: the fake sleeps 60 s */
        assert_int_equal(kill(pid, 0), -1);
        assert_int_equal(errno, ESRCH);
}

static void test_mcp_client_stderr_forwarding(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *path = path_join(f->dir, "stderr"), *data = NULL;
        _cleanup_close_ int saved = -EBADF, fd = -EBADF;
        struct mcp_client *c = NULL;
        json_auto_t *res = NULL;
        size_t len = 0;
        int r;

        assert_non_null(path);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        saved = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
        assert_true(saved >= 0);
        assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);

        /* 5 MB of stderr before the initialize answer: start-up works only if it is drained. */
        r = start_fake("stderr-spam", NULL, 20 * USEC_PER_SEC, NULL, &c, NULL);
        if (r == 0) {
                json_auto_t *args = json_pack("{s:s}", "text", "ok");

                r = mcp_client_call(c, "echo", args, now_usec() + 10 * USEC_PER_SEC, -1, &res);
        }
        c = mcp_client_free(c);
        assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
        assert_int_equal(r, 0);
        assert_string_equal(json_string_value(json_object_get(res, "text")), "ok");

        assert_int_equal(read_file_at(AT_FDCWD, path, 4 << 20, &data, &len), 0);
        assert_memory_equal(data, "[fake] spam spam ", 17);
        /* 1 MiB of lines, the note, nothing after it. */
        assert_true(len > 1024 * 1024);
        assert_true(len < 1024 * 1024 + 8192);
        assert_non_null(strstr(data, "[fake] (further stderr output of this server dropped: "
                                     "over 1 MiB)\n"));
        assert_int_equal(data[len - 1], '\n');
        assert_null(strstr(strstr(data, "dropped: over 1 MiB"), "spam"));
}

int main(void)
{
        const char *env = getenv("FAKE_MCP_SERVER");
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_mcp_client_start_tools),
                cmocka_unit_test(test_mcp_client_start_paged),
                cmocka_unit_test(test_mcp_client_start_missing_command),
                cmocka_unit_test(test_mcp_client_start_path_from_env),
                cmocka_unit_test(test_mcp_client_start_exit_at_start),
                cmocka_unit_test(test_mcp_client_start_slow_init),
                cmocka_unit_test(test_mcp_client_start_bad_version),
                cmocka_unit_test(test_mcp_client_start_not_json_list),
                cmocka_unit_test(test_mcp_client_call_mapping),
                cmocka_unit_test(test_mcp_client_call_concurrent),
                cmocka_unit_test_setup_teardown(test_mcp_client_call_deadline, setup, teardown),
                cmocka_unit_test_setup_teardown(test_mcp_client_call_cancel_fd, setup, teardown),
                cmocka_unit_test(test_mcp_client_call_crash),
                cmocka_unit_test(test_mcp_client_call_crash_on_call),
                cmocka_unit_test(test_mcp_client_garbage_lines),
                cmocka_unit_test(test_mcp_client_oversized_line),
                cmocka_unit_test(test_mcp_client_not_json_answer),
                cmocka_unit_test(test_mcp_client_server_ping),
                cmocka_unit_test(test_mcp_client_free_kills_group),
                cmocka_unit_test(test_mcp_client_free_sigkill),
                cmocka_unit_test_setup_teardown(test_mcp_client_stderr_forwarding, setup, teardown),
        };

        /* meson passes the fixture; else it sits next to this source file. */
        if (env && *env) {
                (void) snprintf(fake_server, sizeof(fake_server), "%s", env);
        } else {
                const char *slash = strrchr(__FILE__, '/');
                int n = slash ? (int) (slash - __FILE__) : 1;

                (void) snprintf(fake_server, sizeof(fake_server), "%.*s/fake-mcp-server.py", n,
                                slash ? __FILE__ : ".");
        }
        return cmocka_run_group_tests(tests, NULL, NULL);
}
