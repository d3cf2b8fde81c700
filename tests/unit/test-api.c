/* SPDX-License-Identifier: MIT */
/*
 * libptc through its public header only, linked against the shared library:
 * options, host tools (sync, async from another thread, one that never
 * answers), real Python scripts calling them, cancel from another thread,
 * concurrent tool calls and executions.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "ptc/ptc.h"

static const char *const params_text =
        "{\"type\": \"object\", \"properties\": {\"text\": {\"type\": \"string\"}}, "
        "\"required\": [\"text\"]}";

/* echo: synchronous, answers {"echo": text} before returning. */
static void echo_fn(ptc_tool_call *call, void *userdata)
{
        json_auto_t *args = json_loads(ptc_tool_call_arguments(call), 0, NULL);
        json_auto_t *res =
                json_pack("{s:s, s:s}", "echo", json_string_value(json_object_get(args, "text")),
                          "tool", ptc_tool_call_name(call));
        char *text = json_dumps(res, JSON_COMPACT);

        assert_int_equal(ptc_tool_call_return(call, text), 0);
        free(text);
}

/* shout: asynchronous, answered by a thread of its own after a short wait. */
static void *shout_thread(void *p)
{
        ptc_tool_call *call = p;
        json_auto_t *args = json_loads(ptc_tool_call_arguments(call), 0, NULL);
        const char *t = json_string_value(json_object_get(args, "text"));
        char out[256];
        struct timespec ts = {0, 50 * 1000 * 1000};

        nanosleep(&ts, NULL);
        snprintf(out, sizeof(out), "\"%s!\"", t ? t : "");
        for (char *c = out; *c; c++)
                if (*c >= 'a' && *c <= 'z')
                        *c = (char) (*c - 'a' + 'A');
        (void) ptc_tool_call_return(call, out);
        return NULL;
}

static void shout_fn(ptc_tool_call *call, void *userdata)
{
        pthread_t t;

        assert_int_equal(pthread_create(&t, NULL, shout_thread, call), 0);
        pthread_detach(t);
}

/* broken: answers text that is not JSON. */
static void broken_fn(ptc_tool_call *call, void *userdata)
{
        (void) ptc_tool_call_return(call, "{not json");
}

/* never: keeps the call and never answers; the test answers late. */
static ptc_tool_call *kept_call;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

static void never_fn(ptc_tool_call *call, void *userdata)
{
        pthread_mutex_lock(&kept_lock);
        kept_call = call;
        pthread_mutex_unlock(&kept_lock);
}

/* meet: returns only once 8 calls are inside at once (or after 10 s: "alone"). */
static pthread_mutex_t meet_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t meet_cond = PTHREAD_COND_INITIALIZER;
static int meet_inside;

static void meet_fn(ptc_tool_call *call, void *userdata)
{
        struct timespec until;
        bool all = true;

        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 10;
        pthread_mutex_lock(&meet_lock);
        meet_inside++;
        pthread_cond_broadcast(&meet_cond);
        while (meet_inside < 8 && all)
                all = pthread_cond_timedwait(&meet_cond, &meet_lock, &until) == 0;
        pthread_mutex_unlock(&meet_lock);
        (void) ptc_tool_call_return(call, all ? "\"met\"" : "\"alone\"");
}

/*
 * slow: synchronous and long, watching ptc_tool_call_cancelled() as the header asks; once
 * the deadline passes it must say so inside the callback, and the answer is refused.
 */
static int slow_saw_cancel, slow_answer;

static void slow_fn(ptc_tool_call *call, void *userdata)
{
        struct timespec ts = {0, 20 * 1000 * 1000};

        for (int i = 0; i < 1500 && !ptc_tool_call_cancelled(call); i++) /* 30 s at most */
                nanosleep(&ts, NULL);
        slow_saw_cancel = ptc_tool_call_cancelled(call);
        slow_answer = ptc_tool_call_return(call, "\"too late\"");
}

static void add(ptc_engine *e, const char *name, ptc_tool_fn fn)
{
        struct ptc_tool_def def = {
                .size = sizeof(def),
                .name = name,
                .description = "A test tool.",
                .parameters_json = params_text,
                .returns = "Returns something",
                .fn = fn,
        };
        struct ptc_diag d = {};

        assert_int_equal(ptc_engine_add_tool(e, &def, &d), 0);
}

static ptc_engine *new_engine(void)
{
        ptc_engine *e = NULL;
        struct ptc_diag d = {};

        assert_int_equal(ptc_engine_new(NULL, PTC_ENGINE_NO_CONFIG_FILE, &e, &d), 0);
        assert_int_equal(ptc_engine_set(e, "isolation", "none", &d), 0);
        assert_int_equal(ptc_engine_set(e, "mode", "strict", &d), 0);
        assert_int_equal(ptc_engine_set(e, "python", "python3", &d), 0);
        add(e, "echo", echo_fn);
        add(e, "shout", shout_fn);
        add(e, "broken", broken_fn);
        add(e, "never", never_fn);
        add(e, "meet", meet_fn);
        add(e, "slow", slow_fn);
        assert_int_equal(ptc_engine_start(e, &d), 0);
        return e;
}

/* Run @code on @e with @timeout (NULL: default); returns the parsed result. */
static json_t *run(ptc_engine *e, const char *code, const char *timeout,
                   enum ptc_status *ret_status)
{
        ptc_execution *x = NULL;
        struct ptc_diag d = {};
        char *text = NULL;
        json_t *v;

        assert_int_equal(ptc_execution_new(e, &x, &d), 0);
        if (timeout)
                assert_int_equal(ptc_execution_set(x, "timeout", timeout, &d), 0);
        assert_int_equal(ptc_execution_run(x, code, strlen(code), &text, ret_status, &d), 0);
        {
                enum ptc_status again_st;
                char *again = NULL;
                assert_int_equal(ptc_execution_run(x, code, strlen(code), &again, &again_st, &d),
                                 -EALREADY);
                assert_null(again);
        }
        ptc_execution_free(x);
        v = json_loads(text, 0, NULL);
        assert_non_null(v);
        ptc_free(text);
        return v;
}

static const char *str_of(json_t *v, const char *key)
{
        return json_string_value(json_object_get(v, key));
}

static void test_version_and_status(void **state)
{
        assert_string_equal(ptc_version(), "0.2.0");
        assert_string_equal(ptc_status_to_string(PTC_STATUS_TIMEOUT), "timeout");
        assert_null(ptc_status_to_string((enum ptc_status) 9));
        assert_int_equal(ptc_status_to_exit(PTC_STATUS_INTERRUPTED), 130);
        assert_int_equal(ptc_status_to_exit(PTC_STATUS_ERROR), 1);
}

static void test_options(void **state)
{
        ptc_engine *e = NULL;
        struct ptc_diag d = {};
        char *w;

        assert_int_equal(ptc_engine_new(NULL, PTC_ENGINE_NO_CONFIG_FILE, &e, &d), 0);
        assert_int_equal(ptc_engine_set(e, "timeout", "12.5", &d), 0);
        assert_int_equal(ptc_engine_set(e, "max_tool_calls", "7", &d), 0);
        assert_int_equal(ptc_engine_set(e, "tools", "read_file, echo", &d), 0);
        assert_int_equal(ptc_engine_set(e, "log_calls", "true", &d), 0);
        assert_int_equal(ptc_engine_set(e, "terminal.timeout", "30", &d), 0);
        assert_int_equal(ptc_engine_set(e, "code_execution.max_stdout_bytes", "2000", &d), 0);

        assert_int_equal(ptc_engine_set(e, "timeout", "0", &d), -EINVAL);
        assert_int_equal(d.code, -EINVAL);
        assert_non_null(strstr(d.message, "timeout: invalid value '0'"));
        assert_int_equal(ptc_engine_set(e, "mode", "fast", &d), -EINVAL);
        assert_non_null(strstr(d.message, "allowed: project, strict"));
        assert_int_equal(ptc_engine_set(e, "bogus", "1", &d), -EINVAL);
        assert_non_null(strstr(d.message, "unknown option 'bogus'"));
        assert_int_equal(ptc_engine_set(e, "terminal.bogus", "1", &d), -EINVAL);
        assert_non_null(strstr(d.message, "terminal.bogus"));
        assert_int_equal(ptc_engine_set(e, "code_execution.max_stdout_bytes", "10", &d), -EINVAL);
        assert_non_null(strstr(d.message, "code_execution.max_stdout_bytes: invalid value '10'"));
        assert_int_equal(ptc_engine_set(e, "terminal.max_timeout", "5", &d), -EINVAL);
        assert_int_equal(ptc_engine_set(e, "cwd", "/nonexistent-ptc-dir", &d), -EINVAL);
        assert_non_null(strstr(d.message, "cwd: cannot use"));

        {
                struct ptc_tool_def def = {.size = sizeof(def), .name = "read_file", .fn = echo_fn};
                assert_int_equal(ptc_engine_add_tool(e, &def, &d), -EINVAL);
                def.name = "Bad-Name";
                assert_int_equal(ptc_engine_add_tool(e, &def, &d), -EINVAL);
                def.name = "echo";
                def.parameters_json = "[1]";
                assert_int_equal(ptc_engine_add_tool(e, &def, &d), -EINVAL);
                def.parameters_json = params_text;
                assert_int_equal(ptc_engine_add_tool(e, &def, &d), 0);
                assert_int_equal(ptc_engine_add_tool(e, &def, &d), -EINVAL); /* taken */
        }

        assert_int_equal(ptc_engine_start(e, &d), 0);
        w = ptc_engine_tool_names(e);
        assert_string_equal(w, "echo, read_file");
        ptc_free(w);
        w = ptc_engine_warnings(e);
        assert_non_null(w);
        ptc_free(w);

        assert_int_equal(ptc_engine_set(e, "timeout", "5", &d), -EBUSY);
        assert_int_equal(d.code, -EBUSY);
        {
                struct ptc_tool_def def = {.size = sizeof(def), .name = "late", .fn = echo_fn};
                assert_int_equal(ptc_engine_add_tool(e, &def, &d), -EBUSY);
        }
        ptc_engine_free(e);
}

/* @e's value of @key is @want. */
static void assert_get(const ptc_engine *e, const char *key, const char *want)
{
        struct ptc_diag d = {};
        char *v = NULL;

        if (ptc_engine_get(e, key, &v, &d) < 0)
                fail_msg("ptc_engine_get(%s): %s", key, d.message);
        if (strcmp(v, want) != 0)
                fail_msg("ptc_engine_get(%s) = '%s', want '%s'", key, v, want);
        ptc_free(v);
}

/* ptc_engine_get() reads back what ptc_engine_set() took, before and after the start. */
static void test_engine_get(void **state)
{
        ptc_engine *e = NULL;
        struct ptc_diag d = {};
        char *v = NULL, cwd[4096];

        assert_int_equal(ptc_engine_new(NULL, PTC_ENGINE_NO_CONFIG_FILE, &e, &d), 0);
        /* The built-in defaults (docs/config.md). */
        assert_get(e, "timeout", "300");
        assert_get(e, "max_tool_calls", "50");
        assert_get(e, "mode", "project");
        assert_get(e, "isolation", "auto");
        assert_get(e, "python", "python3");
        assert_get(e, "log_calls", "false");
        assert_get(e, "code_execution.module_name", "hermes_tools");
        assert_get(e, "terminal.timeout", "180");
        assert_get(e, "terminal.isolation", "none");
        assert_get(e, "sandbox.network", "false");
        assert_get(e, "web.extract_provider", "builtin");
        assert_get(e, "web.searxng_url", "");
        assert_non_null(getcwd(cwd, sizeof(cwd)));
        assert_get(e, "cwd", cwd);

        /* Each value as set, in the words ptc_engine_set() takes. */
        assert_int_equal(ptc_engine_set(e, "timeout", "12.5", &d), 0);
        assert_int_equal(ptc_engine_set(e, "max_tool_calls", "7", &d), 0);
        assert_int_equal(ptc_engine_set(e, "mode", "strict", &d), 0);
        assert_int_equal(ptc_engine_set(e, "isolation", "none", &d), 0);
        assert_int_equal(ptc_engine_set(e, "log_calls", "true", &d), 0);
        assert_int_equal(ptc_engine_set(e, "cwd", "/", &d), 0);
        assert_int_equal(ptc_engine_set(e, "terminal.timeout", "30", &d), 0);
        assert_int_equal(ptc_engine_set(e, "web.timeout", "0.25", &d), 0);
        assert_int_equal(ptc_engine_set(e, "web.searxng_url", "http://127.0.0.1:9", &d), 0);
        assert_get(e, "timeout", "12.5");
        assert_get(e, "code_execution.timeout", "12.5");
        assert_get(e, "max_tool_calls", "7");
        assert_get(e, "mode", "strict");
        assert_get(e, "isolation", "none");
        assert_get(e, "sandbox.isolation", "none");
        assert_get(e, "log_calls", "true");
        assert_get(e, "cwd", "/");
        assert_get(e, "terminal.timeout", "30");
        assert_get(e, "web.timeout", "0.25");
        assert_get(e, "web.searxng_url", "http://127.0.0.1:9");

        /* tools: before the start, what it would enable, host tools included. */
        add(e, "echo", echo_fn);
        assert_int_equal(ptc_engine_set(e, "tools", "read_file,echo", &d), 0);
        assert_get(e, "tools", "echo, read_file");
        assert_int_equal(ptc_engine_set(e, "tools", "", &d), 0);
        assert_get(e, "tools", "");
        assert_int_equal(ptc_engine_set(e, "tools", "read_file, nope", &d), 0);
        assert_int_equal(ptc_engine_get(e, "tools", &v, &d), -EINVAL);
        assert_null(v);
        assert_non_null(strstr(d.message, "nope"));
        assert_int_equal(ptc_engine_set(e, "tools", "terminal, echo", &d), 0);

        assert_int_equal(ptc_engine_get(e, "bogus", &v, &d), -EINVAL);
        assert_non_null(strstr(d.message, "unknown option 'bogus'"));
        assert_int_equal(ptc_engine_get(e, "terminal.bogus", &v, &d), -EINVAL);
        assert_non_null(strstr(d.message, "terminal.bogus"));

        /* After the start: the same values, tools from the registry. */
        assert_int_equal(ptc_engine_start(e, &d), 0);
        assert_get(e, "tools", "echo, terminal");
        assert_get(e, "timeout", "12.5");
        assert_get(e, "cwd", "/");
        ptc_engine_free(e);
}

/* The internal-failure result is the one ptc run and ptc_execution_run() hand out. */
static void test_internal_error_result(void **state)
{
        char *r = ptc_internal_error_result("cannot set up signal handling");

        assert_non_null(r);
        assert_string_equal(r, "{\"status\":\"error\",\"output\":\"\",\"tool_calls_made\":0,"
                               "\"duration_seconds\":0.0,\"exit_code\":null,"
                               "\"error\":\"cannot set up signal handling\"}");
        ptc_free(r);
}

/* The doctor report reads the engine's options; before the start its problems are warnings. */
static void test_doctor_report(void **state)
{
        ptc_engine *e = NULL;
        struct ptc_diag d = {};
        char *r = NULL, *w;

        assert_int_equal(ptc_engine_new(NULL, PTC_ENGINE_NO_CONFIG_FILE, &e, &d), 0);
        assert_int_equal(ptc_engine_set(e, "isolation", "none", &d), 0);
        assert_int_equal(ptc_doctor_report(e, 1, &r, &d), -EINVAL);
        assert_int_equal(ptc_doctor_report(e, 0, &r, &d), 0);
        assert_true(strncmp(r, "ptc 0.2.0\n", 10) == 0);
        assert_non_null(strstr(r, "\nconfig: none (not read)\n"));
        assert_non_null(strstr(r, "\ntools: "));
        assert_non_null(strstr(r, "\nisolation: configured none, effective none\n"));
        assert_non_null(strstr(r, "\nterminal: commands run as ptc's user (isolation none)\n"));
        ptc_free(r);

        assert_int_equal(ptc_engine_set(e, "tools", "read_file,nope", &d), 0);
        assert_int_equal(ptc_doctor_report(e, 0, &r, &d), 0);
        assert_null(strstr(r, "\ntools: "));
        ptc_free(r);
        w = ptc_engine_warnings(e);
        assert_non_null(strstr(w, "nope"));
        ptc_free(w);
        ptc_engine_free(e);
}

/*
 * A run's warnings (isolation none with / as working directory here) are the execution's and
 * the result's "warnings" list: the library prints nothing.
 */
static void test_execution_warnings(void **state)
{
        ptc_engine *e = NULL;
        ptc_execution *x = NULL;
        enum ptc_status st;
        struct ptc_diag d = {};
        char *w, *text = NULL, *p;

        assert_int_equal(ptc_engine_new(NULL, PTC_ENGINE_NO_CONFIG_FILE, &e, &d), 0);
        assert_int_equal(ptc_engine_set(e, "tools", "", &d), 0);
        assert_int_equal(ptc_engine_set(e, "isolation", "none", &d), 0);
        assert_int_equal(ptc_engine_set(e, "cwd", "/", &d), 0);
        assert_int_equal(ptc_engine_start(e, &d), 0);
        assert_int_equal(ptc_execution_new(e, &x, &d), 0);
        w = ptc_execution_warnings(x);
        assert_string_equal(w, "");
        ptc_free(w);
        assert_int_equal(ptc_execution_run(x, "print(1)", 8, &text, &st, &d), 0);
        assert_int_equal(st, PTC_STATUS_SUCCESS);
        p = strstr(text, "\"warnings\":[\"isolation none: the working directory '/' is the root "
                         "directory; ");
        assert_non_null(p);
        ptc_free(text);
        w = ptc_execution_warnings(x);
        assert_non_null(strstr(w, "isolation none: the working directory '/' is the root "
                                  "directory; the script may write wherever ptc can\n"));
        ptc_free(w);
        ptc_execution_free(x);
        ptc_engine_free(e);
}

/*
 * A client's secrets for one execution (ptc_execution_add_secrets()): redacted from that
 * run's output, the engine's rules applied (a name that does not look secret is not), and
 * not from another execution's.
 */
static void test_execution_add_secrets(void **state)
{
        const char *env[] = {"CLIENT_DB_PASSWORD=hunter2-client-only", "PLAIN_NAME=visible-value",
                             NULL};
        const char code[] = "print('hunter2-client-only', 'visible-value')";
        ptc_engine *e = NULL;
        ptc_execution *x = NULL;
        enum ptc_status st;
        struct ptc_diag d = {};
        char *text = NULL;

        assert_true(ptc_secret_name("DB_PASSWORD"));
        assert_true(ptc_secret_name("MY_API_KEY"));
        assert_false(ptc_secret_name("PATH"));
        assert_false(ptc_secret_name(NULL));
        assert_int_equal(ptc_engine_new(NULL, PTC_ENGINE_NO_CONFIG_FILE, &e, &d), 0);
        assert_int_equal(ptc_engine_set(e, "tools", "", &d), 0);
        assert_int_equal(ptc_engine_set(e, "isolation", "none", &d), 0);
        assert_int_equal(ptc_engine_start(e, &d), 0);

        assert_int_equal(ptc_execution_new(e, &x, &d), 0);
        assert_int_equal(ptc_execution_add_secrets(x, env, &d), 0);
        assert_int_equal(ptc_execution_run(x, code, sizeof(code) - 1, &text, &st, &d), 0);
        assert_int_equal(st, PTC_STATUS_SUCCESS);
        assert_null(strstr(text, "hunter2-client-only"));
        assert_non_null(strstr(text, "visible-value"));
        ptc_free(text);
        assert_int_equal(ptc_execution_add_secrets(x, env, &d), -EBUSY);
        ptc_execution_free(x);

        /* Another execution of the engine does not have them. */
        assert_int_equal(ptc_execution_new(e, &x, &d), 0);
        assert_int_equal(ptc_execution_run(x, code, sizeof(code) - 1, &text, &st, &d), 0);
        assert_non_null(strstr(text, "hunter2-client-only"));
        ptc_free(text);
        ptc_execution_free(x);
        assert_int_equal(ptc_execution_add_secrets(NULL, env, &d), -EINVAL);
        ptc_engine_free(e);
}

/*
 * Under auto, / and the system trees are refused as working directory (docs/isolation.md):
 * the engine's start, an execution's "cwd"; a server's engine (PTC_ENGINE_PRIVATE_CWD)
 * started there without "cwd" works in a private directory instead.
 */
static void test_refused_working_directories(void **state)
{
        char home[] = "/tmp/ptc-test-api-XXXXXX", old[4096];
        const char *saved = getenv("XDG_CACHE_HOME");
        char *saved_copy = saved ? strdup(saved) : NULL, sub[4200];
        ptc_engine *e = NULL;
        ptc_execution *x = NULL;
        struct ptc_diag d = {};
        enum ptc_status st;
        char *cwd = NULL, *text = NULL;

        /* An engine that may never run a script there starts (ptc schema, ptc tool); its
         * runs are refused before anything runs, without a result. */
        assert_int_equal(ptc_engine_new(NULL, PTC_ENGINE_NO_CONFIG_FILE, &e, &d), 0);
        assert_int_equal(ptc_engine_set(e, "tools", "", &d), 0);
        assert_int_equal(ptc_engine_set(e, "cwd", "/usr/..", &d), 0);
        assert_int_equal(ptc_engine_start(e, &d), 0);
        assert_int_equal(ptc_execution_new(e, &x, &d), 0);
        assert_int_equal(ptc_execution_run(x, "print(1)", 8, &text, &st, &d), -EINVAL);
        assert_null(text);
        assert_non_null(strstr(d.message, "the working directory '/' is the root directory"));
        assert_non_null(strstr(d.message, "--cwd DIR"));
        ptc_execution_free(x);
        x = NULL;
        ptc_engine_free(e);

        /* A server's explicit choice is refused at its start. */
        assert_int_equal(
                ptc_engine_new(NULL, PTC_ENGINE_NO_CONFIG_FILE | PTC_ENGINE_PRIVATE_CWD, &e, &d),
                0);
        assert_int_equal(ptc_engine_set(e, "cwd", "/", &d), 0);
        assert_int_equal(ptc_engine_start(e, &d), -EINVAL);
        assert_non_null(strstr(d.message, "the working directory '/' is the root directory"));
        ptc_engine_free(e);

        assert_int_equal(ptc_engine_new(NULL, PTC_ENGINE_NO_CONFIG_FILE, &e, &d), 0);
        assert_int_equal(ptc_engine_set(e, "tools", "", &d), 0);
        assert_int_equal(ptc_engine_set(e, "cwd", "/tmp", &d), 0);
        assert_int_equal(ptc_engine_start(e, &d), 0);
        assert_int_equal(ptc_execution_new(e, &x, &d), 0);
        assert_int_equal(ptc_execution_set(x, "cwd", "/var", &d), -EINVAL);
        assert_non_null(strstr(d.message, "the system tree /var itself"));
        assert_int_equal(ptc_execution_set(x, "cwd", "/etc/ssl", &d), -EINVAL);
        assert_non_null(strstr(d.message, "inside the system tree /etc"));
        assert_int_equal(ptc_execution_set(x, "cwd", "/var/tmp", &d), 0);
        ptc_execution_free(x);
        ptc_engine_free(e);

        /* A server's engine started in /. */
        assert_non_null(mkdtemp(home));
        assert_int_equal(setenv("XDG_CACHE_HOME", home, 1), 0);
        assert_non_null(getcwd(old, sizeof(old)));
        assert_int_equal(chdir("/"), 0);
        assert_int_equal(
                ptc_engine_new(NULL, PTC_ENGINE_NO_CONFIG_FILE | PTC_ENGINE_PRIVATE_CWD, &e, &d),
                0);
        assert_int_equal(ptc_engine_set(e, "tools", "", &d), 0);
        assert_int_equal(ptc_engine_start(e, &d), 0);
        assert_int_equal(chdir(old), 0);
        assert_int_equal(ptc_engine_get(e, "cwd", &cwd, &d), 0);
        assert_true(strncmp(cwd, home, strlen(home)) == 0);
        assert_non_null(strstr(cwd, "/ptc/workdirs/ptc-work-"));
        assert_int_equal(access(cwd, F_OK), 0);
        {
                char *w = ptc_engine_warnings(e);
                assert_non_null(strstr(w, "cwd: ptc was started in '/' (the root directory)"));
                assert_non_null(strstr(w, cwd));
                ptc_free(w);
        }
        /* Empty at the end: removed. */
        ptc_engine_free(e);
        assert_int_equal(access(cwd, F_OK), -1);
        ptc_free(cwd);
        if (saved_copy)
                assert_int_equal(setenv("XDG_CACHE_HOME", saved_copy, 1), 0);
        else
                assert_int_equal(unsetenv("XDG_CACHE_HOME"), 0);
        free(saved_copy);
        (void) snprintf(sub, sizeof(sub), "%s/ptc/workdirs", home);
        assert_int_equal(rmdir(sub), 0);
        (void) snprintf(sub, sizeof(sub), "%s/ptc", home);
        assert_int_equal(rmdir(sub), 0);
        assert_int_equal(rmdir(home), 0);
}

/* A config file's warnings stay with the engine when a later key is refused. */
static void test_config_warnings_before_its_error(void **state)
{
        char path[] = "/tmp/ptc-test-api-XXXXXX";
        static const char text[] = "code_exection:\n  timeout: 1\n"
                                   "code_execution:\n  mode: fast\n";
        ptc_engine *e = NULL;
        struct ptc_diag d = {};
        char *w;
        int fd = mkstemp(path);

        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t) sizeof(text) - 1);
        close(fd);
        assert_int_equal(ptc_engine_new(path, 0, &e, &d), -EINVAL);
        assert_null(e);
        assert_non_null(strstr(d.message, "code_execution.mode"));

        assert_int_equal(ptc_engine_new(NULL, PTC_ENGINE_NO_CONFIG_FILE, &e, &d), 0);
        assert_int_equal(ptc_engine_load_config(e, path, &d), -EINVAL);
        assert_non_null(strstr(d.message, "code_execution.mode: invalid value 'fast'"));
        w = ptc_engine_warnings(e);
        assert_non_null(strstr(w, "unknown section 'code_exection'"));
        ptc_free(w);
        ptc_engine_free(e);
        unlink(path);
}

static void test_schema_stubs_call_tool(void **state)
{
        ptc_engine *e = new_engine();
        struct ptc_diag d = {};
        char *s = NULL;

        assert_int_equal(ptc_engine_schema(e, &s, &d), 0);
        assert_non_null(strstr(s, "execute_code"));
        assert_non_null(strstr(s, "echo"));
        ptc_free(s);
        assert_int_equal(ptc_engine_stubs(e, &s, &d), 0);
        assert_non_null(strstr(s, "def echo("));
        ptc_free(s);

        assert_int_equal(ptc_engine_call_tool(e, "nope", "{}", &s, &d), -ENOENT);
        assert_non_null(strstr(d.message, "unknown tool 'nope'"));
        assert_int_equal(ptc_engine_call_tool(e, "echo", "[1]", &s, &d), -EINVAL);
        assert_int_equal(ptc_engine_call_tool(e, "echo", "{\"text\": \"hi\"}", &s, &d), 0);
        assert_string_equal(s, "{\"echo\":\"hi\",\"tool\":\"echo\"}");
        ptc_free(s);
        assert_int_equal(ptc_engine_call_tool(e, "broken", "{\"text\": \"x\"}", &s, &d), 0);
        assert_non_null(strstr(s, "host tool returned invalid JSON"));
        ptc_free(s);

        /* The .py lint needs the interpreter: resolved by the first call, kept for the next. */
        {
                char dir[] = "/tmp/ptc-test-api-XXXXXX", args[256];

                assert_non_null(mkdtemp(dir));
                for (int i = 0; i < 2; i++) {
                        (void) snprintf(args, sizeof(args),
                                        "{\"path\": \"%s/m%d.py\", \"content\": \"%s\"}", dir, i,
                                        i ? "x = (\\n" : "x = 1\\n");
                        assert_int_equal(ptc_engine_call_tool(e, "write_file", args, &s, &d), 0);
                        assert_non_null(
                                strstr(s, i ? "\"status\":\"error\"" : "\"status\":\"ok\""));
                        ptc_free(s);
                        (void) snprintf(args, sizeof(args), "%s/m%d.py", dir, i);
                        (void) unlink(args);
                }
                (void) rmdir(dir);
        }
        ptc_engine_free(e);
}

static void test_script_calls_host_tools(void **state)
{
        ptc_engine *e = new_engine();
        enum ptc_status st;
        json_auto_t *r = run(e,
                             "from hermes_tools import echo, shout, broken\n"
                             "print(echo(text='hello')['echo'])\n"
                             "print(shout(text='async'))\n"
                             "print(broken(text='x')['error'][:31])\n",
                             NULL, &st);

        assert_int_equal(st, PTC_STATUS_SUCCESS);
        assert_string_equal(str_of(r, "status"), "success");
        assert_string_equal(str_of(r, "output"),
                            "hello\nASYNC!\nhost tool returned invalid JSON\n");
        assert_int_equal(json_integer_value(json_object_get(r, "tool_calls_made")), 3);
        ptc_engine_free(e);
}

static void test_unanswered_call_times_out(void **state)
{
        ptc_engine *e = new_engine();
        enum ptc_status st;
        json_auto_t *r =
                run(e, "from hermes_tools import never\nnever(text='x')\nprint('no')\n", "2", &st);

        assert_int_equal(st, PTC_STATUS_TIMEOUT);
        assert_string_equal(str_of(r, "status"), "timeout");
        pthread_mutex_lock(&kept_lock);
        assert_non_null(kept_call);
        /* The script is gone: the late answer is dropped, and the handle with it. */
        assert_int_equal(ptc_tool_call_return(kept_call, "\"late\""), -ECANCELED);
        kept_call = NULL;
        pthread_mutex_unlock(&kept_lock);
        ptc_engine_free(e);
}

static void test_slow_sync_tool_sees_the_deadline(void **state)
{
        ptc_engine *e = new_engine();
        enum ptc_status st;
        json_auto_t *r =
                run(e, "from hermes_tools import slow\nslow(text='x')\nprint('no')\n", "1", &st);

        assert_int_equal(st, PTC_STATUS_TIMEOUT);
        assert_int_equal(slow_saw_cancel, 1);
        assert_int_equal(slow_answer, -ECANCELED);
        assert_null(strstr(str_of(r, "output"), "too late"));
        ptc_engine_free(e);
}

struct canceller {
        ptc_execution *x;
};

static void *cancel_later(void *p)
{
        struct canceller *c = p;
        struct timespec ts = {0, 700 * 1000 * 1000};

        nanosleep(&ts, NULL);
        ptc_execution_cancel(c->x);
        ptc_execution_cancel(c->x); /* as often as wanted */
        return NULL;
}

static void test_cancel_from_another_thread(void **state)
{
        ptc_engine *e = new_engine();
        const char *code = "import time\nprint('start', flush=True)\ntime.sleep(30)\n";
        struct canceller c = {};
        struct ptc_diag d = {};
        enum ptc_status st;
        char *text = NULL;
        pthread_t t;

        assert_int_equal(ptc_execution_new(e, &c.x, &d), 0);
        assert_int_equal(pthread_create(&t, NULL, cancel_later, &c), 0);
        assert_int_equal(ptc_execution_run(c.x, code, strlen(code), &text, &st, &d), 0);
        pthread_join(t, NULL);
        assert_int_equal(st, PTC_STATUS_INTERRUPTED);
        {
                json_auto_t *r = json_loads(text, 0, NULL);
                assert_string_equal(str_of(r, "status"), "interrupted");
                assert_string_equal(str_of(r, "error"), "Execution interrupted (cancelled)");
        }
        ptc_free(text);
        ptc_execution_cancel(c.x); /* after the run, too */
        ptc_execution_free(c.x);

        /* Cancelled before the run: interrupted at once. */
        assert_int_equal(ptc_execution_new(e, &c.x, &d), 0);
        ptc_execution_interrupt(c.x, "SIGTERM");
        assert_int_equal(ptc_execution_run(c.x, code, strlen(code), &text, &st, &d), 0);
        assert_int_equal(st, PTC_STATUS_INTERRUPTED);
        assert_non_null(strstr(text, "Execution interrupted (SIGTERM)"));
        ptc_free(text);
        ptc_execution_free(c.x);
        ptc_engine_free(e);
}

static int64_t progress_calls;

static void on_progress(const char *tool, int64_t count, void *userdata)
{
        __atomic_fetch_add(&progress_calls, 1, __ATOMIC_SEQ_CST);
}

static void test_concurrent_tool_calls(void **state)
{
        ptc_engine *e = new_engine();
        const char *code = "from concurrent.futures import ThreadPoolExecutor\n"
                           "from hermes_tools import meet\n"
                           "with ThreadPoolExecutor(8) as p:\n"
                           "    print(sorted(p.map(lambda i: meet(text=str(i)), range(8))))\n";
        ptc_execution *x = NULL;
        struct ptc_diag d = {};
        enum ptc_status st;
        char *text = NULL;

        meet_inside = 0;
        assert_int_equal(ptc_execution_new(e, &x, &d), 0);
        assert_int_equal(ptc_execution_on_progress(x, on_progress, NULL), 0);
        assert_int_equal(ptc_execution_run(x, code, strlen(code), &text, &st, &d), 0);
        assert_int_equal(st, PTC_STATUS_SUCCESS);
        {
                json_auto_t *r = json_loads(text, 0, NULL);
                assert_string_equal(str_of(r, "output"), "['met', 'met', 'met', 'met', 'met', "
                                                         "'met', 'met', 'met']\n");
        }
        assert_int_equal(__atomic_load_n(&progress_calls, __ATOMIC_SEQ_CST), 8);
        ptc_free(text);
        ptc_execution_free(x);
        ptc_engine_free(e);
}

struct parallel {
        ptc_engine *e;
        const char *word;
        json_t *result;
        enum ptc_status st;
};

static void *run_one(void *p)
{
        struct parallel *w = p;
        char code[256];

        snprintf(code, sizeof(code),
                 "import time\nfrom hermes_tools import echo\ntime.sleep(0.5)\n"
                 "print(echo(text='%s')['echo'])\n",
                 w->word);
        w->result = run(w->e, code, NULL, &w->st);
        return NULL;
}

static void test_two_executions_at_once(void **state)
{
        ptc_engine *e = new_engine();
        struct parallel a = {.e = e, .word = "one"}, b = {.e = e, .word = "two"};
        pthread_t ta, tb;

        assert_int_equal(pthread_create(&ta, NULL, run_one, &a), 0);
        assert_int_equal(pthread_create(&tb, NULL, run_one, &b), 0);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        assert_int_equal(a.st, PTC_STATUS_SUCCESS);
        assert_int_equal(b.st, PTC_STATUS_SUCCESS);
        assert_string_equal(str_of(a.result, "output"), "one\n");
        assert_string_equal(str_of(b.result, "output"), "two\n");
        json_decref(a.result);
        json_decref(b.result);
        ptc_engine_free(e);
}

static void test_execution_options(void **state)
{
        ptc_engine *e = new_engine();
        ptc_execution *x = NULL;
        struct ptc_diag d = {};
        enum ptc_status st;
        const char *code =
                "import hermes_tools as t\nprint(hasattr(t, 'shout'), hasattr(t, 'echo'))\n";
        char *text = NULL;

        assert_int_equal(ptc_execution_new(e, &x, &d), 0);
        assert_int_equal(ptc_execution_set(x, "mode", "strict", &d), -EINVAL);
        assert_int_equal(ptc_execution_set(x, "tools", "nope", &d), -EINVAL);
        assert_non_null(strstr(d.message, "'nope'"));
        assert_int_equal(ptc_execution_set(x, "tools", "echo", &d), 0);
        assert_int_equal(ptc_execution_set(x, "log_calls", "true", &d), 0);
        assert_int_equal(ptc_execution_run(x, code, strlen(code), &text, &st, &d), 0);
        assert_int_equal(st, PTC_STATUS_SUCCESS);
        assert_non_null(strstr(text, "False True"));
        assert_int_equal(ptc_execution_set(x, "timeout", "5", &d), -EBUSY);
        ptc_free(text);
        ptc_execution_free(x);
        ptc_engine_free(e);
}

/* ------------------------------------------------------------------------------------------ */
/* ptc_mcp_serve(): a host's own tools served over MCP, on pipes                                */

struct mcp_peer {
        ptc_engine *e;
        int in[2], out[2]; /* the server reads in[0] and writes out[1] */
        int stop_fd;
        unsigned flags;
        int ret;
        struct ptc_diag d;
        pthread_t thread;
        char buf[65536];
        size_t len;
        pthread_mutex_t log_lock;
        char log[512]; /* the server's lines, info ones prefixed "i ", warnings "w " */
};

static void serve_log(int is_warning, const char *line, void *userdata)
{
        struct mcp_peer *m = userdata;
        size_t n;

        pthread_mutex_lock(&m->log_lock);
        n = strlen(m->log);
        snprintf(m->log + n, sizeof(m->log) - n, "%s %s\n", is_warning ? "w" : "i", line);
        pthread_mutex_unlock(&m->log_lock);
}

static void *serve_thread(void *p)
{
        struct mcp_peer *m = p;
        const struct ptc_mcp_opts o = {
                .size = sizeof(o),
                .flags = m->flags,
                .max_timeout = 30,
                .stop_fd = m->stop_fd,
                .log = serve_log,
                .log_userdata = m,
        };

        m->ret = ptc_mcp_serve(m->e, m->in[0], m->out[1], &o, &m->d);
        return NULL;
}

static void mcp_start(struct mcp_peer *m, ptc_engine *e, unsigned flags, int stop_fd)
{
        *m = (struct mcp_peer){.e = e, .flags = flags, .stop_fd = stop_fd, .ret = 1};
        pthread_mutex_init(&m->log_lock, NULL);
        assert_int_equal(pipe2(m->in, O_CLOEXEC), 0);
        assert_int_equal(pipe2(m->out, O_CLOEXEC), 0);
        assert_int_equal(pthread_create(&m->thread, NULL, serve_thread, m), 0);
}

static void mcp_send(struct mcp_peer *m, const char *line)
{
        size_t n = strlen(line);

        assert_int_equal(write(m->in[1], line, n), (ssize_t) n);
        assert_int_equal(write(m->in[1], "\n", 1), 1);
}

/* The next message the server writes, within 20 s; NULL at EOF or on a timeout. */
static json_t *mcp_next(struct mcp_peer *m)
{
        for (;;) {
                char *nl = memchr(m->buf, '\n', m->len);
                struct pollfd p = {.fd = m->out[0], .events = POLLIN};
                ssize_t k;

                if (nl) {
                        json_t *v = json_loadb(m->buf, (size_t) (nl - m->buf), 0, NULL);

                        m->len -= (size_t) (nl + 1 - m->buf);
                        memmove(m->buf, nl + 1, m->len);
                        assert_non_null(v);
                        assert_string_equal(str_of(v, "jsonrpc"), "2.0");
                        return v;
                }
                if (poll(&p, 1, 20000) <= 0)
                        return NULL;
                assert_true(m->len < sizeof(m->buf));
                k = read(m->out[0], m->buf + m->len, sizeof(m->buf) - m->len);
                if (k <= 0)
                        return NULL;
                m->len += (size_t) k;
        }
}

/* The response to request @id; notifications before it are counted in *@n_progress. */
static json_t *mcp_response(struct mcp_peer *m, json_int_t id, int *n_progress)
{
        for (;;) {
                json_t *v = mcp_next(m);

                assert_non_null(v);
                if (json_integer_value(json_object_get(v, "id")) == id)
                        return v;
                assert_string_equal(str_of(v, "method"), "notifications/progress");
                if (n_progress)
                        (*n_progress)++;
                assert_string_equal(str_of(json_object_get(v, "params"), "message"),
                                    "echo (call 1)");
                json_decref(v);
        }
}

static void test_mcp_serve_host_tools(void **state)
{
        ptc_engine *e = new_engine();
        struct mcp_peer m;
        json_t *tools, *sc;
        int n_progress = 0;

        mcp_start(&m, e, PTC_MCP_EXPOSE_TOOLS, -1);
        mcp_send(&m, "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"initialize\", \"params\": "
                     "{\"protocolVersion\": \"2025-06-18\"}}");
        {
                json_auto_t *r = mcp_response(&m, 1, NULL);
                assert_string_equal(str_of(json_object_get(r, "result"), "protocolVersion"),
                                    "2025-06-18");
        }

        /* The host's tools are MCP tools too, with their own schemas. */
        mcp_send(&m, "{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": \"tools/list\"}");
        {
                json_auto_t *r = mcp_response(&m, 2, NULL);
                bool echo = false;
                size_t i;
                json_t *t;

                tools = json_object_get(json_object_get(r, "result"), "tools");
                assert_string_equal(str_of(json_array_get(tools, 0), "name"), "execute_code");
                assert_non_null(strstr(str_of(json_array_get(tools, 0), "description"), "echo("));
                json_array_foreach(tools, i, t) if (strcmp(str_of(t, "name"), "echo") == 0)
                {
                        echo = true;
                        assert_non_null(json_object_get(
                                json_object_get(json_object_get(t, "inputSchema"), "properties"),
                                "text"));
                }
                assert_true(echo);
        }

        /* Called directly... */
        mcp_send(&m, "{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\": \"tools/call\", \"params\": "
                     "{\"name\": \"echo\", \"arguments\": {\"text\": \"direct\"}}}");
        {
                json_auto_t *r = mcp_response(&m, 3, NULL);
                json_t *res = json_object_get(r, "result");

                assert_true(json_is_false(json_object_get(res, "isError")));
                sc = json_object_get(res, "structuredContent");
                assert_string_equal(str_of(sc, "echo"), "direct");
        }

        /* ...and from a script, with progress: in-process, on the host's callbacks. */
        mcp_send(&m, "{\"jsonrpc\": \"2.0\", \"id\": 4, \"method\": \"tools/call\", \"params\": "
                     "{\"name\": \"execute_code\", \"_meta\": {\"progressToken\": 9}, "
                     "\"arguments\": {\"code\": \"from hermes_tools import echo\\n"
                     "print(echo(text='hi')['echo'])\", \"timeout\": 20}}}");
        {
                json_auto_t *r = mcp_response(&m, 4, &n_progress);
                json_t *res = json_object_get(r, "result");

                assert_true(json_is_false(json_object_get(res, "isError")));
                sc = json_object_get(res, "structuredContent");
                assert_string_equal(str_of(sc, "status"), "success");
                assert_string_equal(str_of(sc, "output"), "hi\n");
                assert_int_equal(n_progress, 1);
        }

        /* EOF: the server returns 0 and writes nothing more. */
        close(m.in[1]);
        m.in[1] = -1;
        pthread_join(m.thread, NULL);
        assert_int_equal(m.ret, 0);
        close(m.out[1]);
        m.out[1] = -1;
        assert_null(mcp_next(&m));
        close(m.in[0]);
        close(m.out[0]);
        ptc_engine_free(e);
}

static void test_mcp_serve_stop_fd_cancels(void **state)
{
        ptc_engine *e = new_engine();
        int stop = eventfd(0, EFD_CLOEXEC);
        uint64_t one = 1;
        struct ptc_diag d = {};
        struct mcp_peer m;
        struct timespec t0, t1;
        json_t *v;

        /* Bad options, and an engine that is not started. */
        {
                struct ptc_mcp_opts o = {.size = 4};
                ptc_engine *raw = NULL;

                assert_int_equal(ptc_mcp_serve(e, 0, 1, &o, &d), -EINVAL);
                o = (struct ptc_mcp_opts){.size = sizeof(o), .max_timeout = -1};
                assert_int_equal(ptc_mcp_serve(e, 0, 1, &o, &d), -EINVAL);
                assert_non_null(strstr(d.message, "max_timeout"));
                assert_int_equal(ptc_engine_new(NULL, PTC_ENGINE_NO_CONFIG_FILE, &raw, &d), 0);
                assert_int_equal(ptc_mcp_serve(raw, 0, 1, NULL, &d), -EINVAL);
                ptc_engine_free(raw);
        }

        assert_true(stop > 0);
        mcp_start(&m, e, 0, stop);
        mcp_send(&m, "{\"jsonrpc\": \"2.0\", \"id\": 7, \"method\": \"tools/call\", \"params\": "
                     "{\"name\": \"execute_code\", \"arguments\": {\"code\": \"import time\\n"
                     "print('started', flush=True)\\ntime.sleep(30)\"}}}");
        /* Without --expose-tools a host tool is not an MCP tool. */
        mcp_send(&m, "{\"jsonrpc\": \"2.0\", \"id\": 8, \"method\": \"tools/call\", \"params\": "
                     "{\"name\": \"echo\", \"arguments\": {}}}");
        v = mcp_response(&m, 8, NULL);
        assert_true(json_is_true(json_object_get(json_object_get(v, "result"), "isError")));
        json_decref(v);
        {
                /* Let the script start: the stop must interrupt a running execution. */
                struct timespec ts = {1, 0};
                nanosleep(&ts, NULL);
        }
        clock_gettime(CLOCK_MONOTONIC, &t0);
        assert_int_equal(write(stop, &one, sizeof(one)), (ssize_t) sizeof(one));
        pthread_join(m.thread, NULL);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        assert_int_equal(m.ret, 0);
        assert_true(t1.tv_sec - t0.tv_sec < 8);
        /* The cancellation is the host's to log, through its callback. */
        assert_string_equal(m.log, "i request 7 cancelled: the execution was interrupted\n");
        /* The cancelled call is not answered (MCP); the input is still open, unread. */
        close(m.out[1]);
        m.out[1] = -1;
        assert_null(mcp_next(&m));
        for (int i = 0; i < 2; i++) {
                if (m.in[i] >= 0)
                        close(m.in[i]);
                if (m.out[i] >= 0)
                        close(m.out[i]);
        }
        close(stop);
        ptc_engine_free(e);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_version_and_status),
                cmocka_unit_test(test_options),
                cmocka_unit_test(test_engine_get),
                cmocka_unit_test(test_internal_error_result),
                cmocka_unit_test(test_doctor_report),
                cmocka_unit_test(test_execution_warnings),
                cmocka_unit_test(test_refused_working_directories),
                cmocka_unit_test(test_execution_add_secrets),
                cmocka_unit_test(test_config_warnings_before_its_error),
                cmocka_unit_test(test_schema_stubs_call_tool),
                cmocka_unit_test(test_script_calls_host_tools),
                cmocka_unit_test(test_unanswered_call_times_out),
                cmocka_unit_test(test_slow_sync_tool_sees_the_deadline),
                cmocka_unit_test(test_cancel_from_another_thread),
                cmocka_unit_test(test_concurrent_tool_calls),
                cmocka_unit_test(test_two_executions_at_once),
                cmocka_unit_test(test_execution_options),
                cmocka_unit_test(test_mcp_serve_host_tools),
                cmocka_unit_test(test_mcp_serve_stop_fd_cancels),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
