/* SPDX-License-Identifier: MIT */
#include "../lib/ptc-test.h"
#include "../lib/test-child.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/fd-util.h"
#include "basic/macro.h"
#include "basic/path-util.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "core/config/config.h"
#include "core/env/env.h"
#include "core/exec/exec-run.h"
#include "core/exec/exec.h"
#include "core/exec/result.h"
#include "core/output/redact.h"
#include "core/registry/registry.h"

#define PYTHON "/usr/bin/python3"
#define SECRET "supersecretvalue-9876"

extern char **environ;

struct fixture {
        char dir[64];
        char cache[128];
        char work[128];
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        if (!f)
                return -1;
        (void) snprintf(f->dir, sizeof(f->dir), "/tmp/ptc-test-exec-XXXXXX");
        if (!mkdtemp(f->dir))
                return -1;
        (void) snprintf(f->cache, sizeof(f->cache), "%s/cache", f->dir);
        (void) snprintf(f->work, sizeof(f->work), "%s/work", f->dir);
        if (mkdir(f->work, 0700) < 0)
                return -1;
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

/* One execution, as the test describes it. */
struct exec_case {
        const char *code;
        double timeout;      /* 0 = the default (300) */
        int cancel_after_ms; /* < 0: no cancel_fd */
        bool log_calls;
        bool strict;
        int64_t max_tool_calls; /* 0 = default */
        bool with_secret;
        /* A pid the script prints on its last line, checked after the run. */
        bool check_orphan;
};

struct canceller {
        int fd;
        int after_ms;
};

static void *cancel_main(void *arg)
{
        struct canceller *c = arg;
        uint64_t one = 1;

        usleep((useconds_t) c->after_ms * 1000);
        (void) !write(c->fd, &one, sizeof(one));
        return NULL;
}

/*
 * The child: a subreaper (so the script's daemons come back to it and not
 * to init), runs exec_run and writes {"rc", "status", "result", "diag",
 * "orphan_alive"} to @out. Everything is freed before exit(), so LSan (in a
 * sanitizer build) checks exec_run for leaks in the child too.
 */
static int exec_child(const struct fixture *f, const struct exec_case *c, int out)
{
        struct ptc_config cfg;
        struct registry *reg = NULL;
        struct redactor *red = NULL;
        char **warnings = NULL, **env = NULL;
        struct diag d = {};
        json_t *res = NULL, *report;
        enum exec_status st = EXEC_ERROR;
        struct canceller cn = {.fd = -1, .after_ms = c->cancel_after_ms};
        pthread_t th;
        char *text;
        int r;

        if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
                return 2;
        /* Something readable on our stdin: the script must get /dev/null, not this. */
        {
                int sp[2];
                if (pipe(sp) < 0 || write(sp[1], "LEAKED-STDIN\n", 13) != 13 || dup2(sp[0], 0) < 0)
                        return 11;
                safe_close(sp[0]);
                safe_close(sp[1]);
        }
        if (setenv("XDG_CACHE_HOME", f->cache, 1) < 0)
                return 3;
        if (config_init(&cfg) < 0)
                return 4;
        /*
         * These tests watch the processes of the none envelope from here (orphans reaped by
         * this subreaper, pids the script prints), and a terminal command's pid-namespace
         * init would be this binary re-executed: the confined paths are tested through the
         * real binary (tests/integration).
         */
        cfg.isolation = PTC_ISOLATION_NONE;
        if (c->timeout > 0)
                cfg.timeout = c->timeout;
        if (c->max_tool_calls > 0)
                cfg.max_tool_calls = c->max_tool_calls;
        cfg.mode = c->strict ? PTC_MODE_STRICT : PTC_MODE_PROJECT;
        if (registry_new(&cfg, NULL, &reg, &warnings, &d) < 0)
                return 5;
        if (env_build_child(environ, NULL, &env) < 0)
                return 6;
        if (c->with_secret && (redactor_new(&red) < 0 || redactor_add_secret(red, SECRET) < 0))
                return 7;
        if (c->cancel_after_ms >= 0) {
                cn.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
                if (cn.fd < 0 || pthread_create(&th, NULL, cancel_main, &cn) != 0)
                        return 8;
        }
        {
                struct exec_opts o = {
                        .code = c->code,
                        .code_len = c->code ? strlen(c->code) : 0,
                        .config = &cfg,
                        .registry = reg,
                        .base_env = env,
                        .redactor = red,
                        .python = PYTHON,
                        .cwd = f->work,
                        .log_calls = c->log_calls,
                        .cancel_fd = cn.fd,
                };
                r = exec_run(&o, &res, &st, &d);
        }
        if (cn.fd >= 0) {
                (void) pthread_join(th, NULL);
                safe_close(cn.fd);
        }
        report = json_pack("{s:i, s:i, s:o?, s:s}", "rc", r, "status", (int) st, "result", res,
                           "diag", d.message);
        if (!report)
                return 9;
        if (c->check_orphan && res) {
                const char *output = json_string_value(json_object_get(res, "output"));
                const char *last = output ? strrchr(output, '\n') : NULL;
                long pid = 0;
                /* The pid is on the last non-empty line. */
                if (last && last != output && last[1] == 0) {
                        const char *p = last - 1;
                        while (p > output && p[-1] != '\n')
                                p--;
                        pid = strtol(p, NULL, 10);
                }
                json_object_set_new(report, "orphan_pid", json_integer(pid));
                json_object_set_new(report, "orphan_alive",
                                    json_boolean(pid > 0 && kill((pid_t) pid, 0) == 0));
        }
        text = json_dumps(report, JSON_COMPACT);
        json_decref(report);
        if (!text || write_all(out, text, strlen(text)) < 0)
                return 10;
        free(text);
        registry_free(reg);
        redactor_free(red);
        strv_free(warnings);
        strv_free(env);
        config_release(&cfg);
        return 0;
}

/* Run @c in a forked child; returns the report (caller decrefs) and the wall time. */
static json_t *run_exec(const struct fixture *f, const struct exec_case *c, double *ret_secs)
{
        int p[2], st = 0;
        char *buf;
        size_t len = 0, cap = 4 * 1024 * 1024;
        usec_t t0, end;
        pid_t pid;
        json_error_t err;
        json_t *j;

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        fflush(stdout);
        fflush(stderr);
        t0 = now_usec();
        pid = test_fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                safe_close(p[0]);
                exit(exec_child(f, c, p[1]));
        }
        safe_close(p[1]);
        buf = malloc(cap);
        assert_non_null(buf);
        end = now_usec() + 20 * USEC_PER_SEC;
        for (;;) {
                struct pollfd pf = {.fd = p[0], .events = POLLIN};
                ssize_t k;

                assert_true(now_usec() < end);
                if (poll(&pf, 1, 500) <= 0)
                        continue;
                k = read(p[0], buf + len, cap - 1 - len);
                if (k < 0 && errno == EINTR)
                        continue;
                assert_true(k >= 0);
                if (k == 0)
                        break;
                len += (size_t) k;
                assert_true(len < cap - 1);
        }
        buf[len] = 0;
        safe_close(p[0]);
        assert_int_equal(waitpid(pid, &st, 0), pid);
        if (ret_secs)
                *ret_secs = (double) (now_usec() - t0) / USEC_PER_SEC;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                fail_msg("exec child failed: %s %d (report: %.200s)",
                         WIFEXITED(st) ? "exit" : "signal",
                         WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), buf);
        j = json_loads(buf, 0, &err);
        if (!j)
                fail_msg("bad report (%s): %.200s", err.text, buf);
        free(buf);
        if (json_integer_value(json_object_get(j, "rc")) != 0)
                fail_msg("exec_run failed: %s", json_string_value(json_object_get(j, "diag")));
        return j;
}

static json_t *result_of(json_t *report)
{
        json_t *r = json_object_get(report, "result");

        assert_true(json_is_object(r));
        return r;
}

static const char *str_of(json_t *o, const char *key)
{
        json_t *v = json_object_get(o, key);

        if (!json_is_string(v))
                fail_msg("'%s' is not a string", key);
        return json_string_value(v);
}

#define SKIP_WITHOUT_PYTHON()                 \
        do {                                  \
                if (access(PYTHON, X_OK) < 0) \
                        skip();               \
        } while (0)

static void assert_status(json_t *report, enum exec_status want)
{
        json_t *r = result_of(report);

        assert_int_equal(json_integer_value(json_object_get(report, "status")), want);
        assert_string_equal(str_of(r, "status"), exec_status_to_string(want));
        /* Always present (docs/contracts.md 4). */
        assert_true(json_is_string(json_object_get(r, "output")));
        assert_true(json_is_integer(json_object_get(r, "tool_calls_made")));
        assert_true(json_is_number(json_object_get(r, "duration_seconds")));
}

/* ---- tests ---- */

static void test_exec_run_print_success(void **state)
{
        struct fixture *f = *state;
        struct exec_case c = {
                .code = "import sys\nprint('hello')\nprint('warn', file=sys.stderr)\n",
                .cancel_after_ms = -1};
        json_auto_t *rep = NULL;
        json_t *r;

        SKIP_WITHOUT_PYTHON();
        rep = run_exec(f, &c, NULL);
        assert_status(rep, EXEC_SUCCESS);
        r = result_of(rep);
        /* stderr of a successful script is dropped, as the seed. */
        assert_string_equal(str_of(r, "output"), "hello\n");
        assert_null(json_object_get(r, "error"));
        assert_int_equal(json_integer_value(json_object_get(r, "tool_calls_made")), 0);
        assert_int_equal(json_integer_value(json_object_get(r, "exit_code")), 0);
        assert_null(json_object_get(r, "stdout_truncated"));
        assert_true(json_number_value(json_object_get(r, "duration_seconds")) < 5);
}

static void test_exec_run_exit_code(void **state)
{
        struct fixture *f = *state;
        struct exec_case c = {.code = "import sys\nprint('before')\nsys.exit(3)\n",
                              .cancel_after_ms = -1};
        json_auto_t *rep = NULL;
        json_t *r;

        SKIP_WITHOUT_PYTHON();
        rep = run_exec(f, &c, NULL);
        assert_status(rep, EXEC_ERROR);
        r = result_of(rep);
        assert_string_equal(str_of(r, "error"), "Script exited with code 3");
        assert_string_equal(str_of(r, "output"), "before\n");
        assert_int_equal(json_integer_value(json_object_get(r, "exit_code")), 3);
}

static void test_exec_run_exception(void **state)
{
        struct fixture *f = *state;
        struct exec_case c = {.code = "print('partial')\nraise ValueError('boom')\n",
                              .cancel_after_ms = -1};
        json_auto_t *rep = NULL;
        const char *out, *err;
        json_t *r;

        SKIP_WITHOUT_PYTHON();
        rep = run_exec(f, &c, NULL);
        assert_status(rep, EXEC_ERROR);
        r = result_of(rep);
        out = str_of(r, "output");
        err = str_of(r, "error");
        assert_memory_equal(out, "partial\n\n--- stderr ---\nTraceback", 32);
        assert_non_null(strstr(out, "ValueError: boom"));
        assert_non_null(strstr(err, "Traceback (most recent call last)"));
        assert_non_null(strstr(err, "ValueError: boom"));
        assert_int_equal(json_integer_value(json_object_get(r, "exit_code")), 1);
}

static void test_exec_run_timeout(void **state)
{
        struct fixture *f = *state;
        struct exec_case c = {
                .code = "import time\nprint('start', flush=True)\ntime.sleep(30)\n",
                .timeout = 1,
                .cancel_after_ms = -1,
        };
        json_auto_t *rep = NULL;
        double secs = 0;
        json_t *r;

        SKIP_WITHOUT_PYTHON();
        rep = run_exec(f, &c, &secs);
        assert_status(rep, EXEC_TIMEOUT);
        r = result_of(rep);
        assert_string_equal(str_of(r, "output"),
                            "start\n\n\n\u23f0 Script timed out after 1s and was killed.");
        assert_string_equal(str_of(r, "error"), "Script timed out after 1s and was killed.");
        if (secs < 0.9 || secs > 20) /* not early; the upper bound is a hang guard */
                fail_msg("timeout=1 took %.2f s", secs);
}

static void test_exec_run_cancel(void **state)
{
        struct fixture *f = *state;
        struct exec_case c = {
                .code = "import time\nprint('waiting', flush=True)\ntime.sleep(30)\n",
                .cancel_after_ms = 300,
        };
        json_auto_t *rep = NULL;
        double secs = 0;
        json_t *r;

        SKIP_WITHOUT_PYTHON();
        rep = run_exec(f, &c, &secs);
        assert_status(rep, EXEC_INTERRUPTED);
        r = result_of(rep);
        assert_string_equal(str_of(r, "output"), "waiting\n\n[execution interrupted]");
        assert_string_equal(str_of(r, "error"), "Execution interrupted (cancelled)");
        if (secs < 0.25 || secs > 20) /* not early; hang guard: the script sleeps 30 s */
                fail_msg("cancel after 300 ms took %.2f s", secs);
}

static void test_exec_run_empty_code(void **state)
{
        static const char *const codes[] = {"", "   \n\t\n", NULL};
        struct ptc_config cfg;

        /* No child is started: safe to run in the test process itself. */
        assert_int_equal(config_init(&cfg), 0);
        for (size_t i = 0; i < ELEMENTSOF(codes); i++) {
                struct exec_opts o = {
                        .code = codes[i],
                        .code_len = codes[i] ? strlen(codes[i]) : 0,
                        .config = &cfg,
                        .python = PYTHON,
                        .cancel_fd = -1,
                };
                enum exec_status st = EXEC_SUCCESS;
                struct diag d = {};
                json_auto_t *res = NULL;

                assert_int_equal(exec_run(&o, &res, &st, &d), 0);
                assert_int_equal(st, EXEC_ERROR);
                assert_string_equal(str_of(res, "error"), "No code provided.");
        }
        config_release(&cfg);
}

static void test_exec_run_read_file_tool(void **state)
{
        struct fixture *f = *state;
        char path[192];
        struct exec_case c = {
                .code = "from hermes_tools import read_file\n"
                        "r = read_file('a.txt')\n"
                        "print(r['content'])\n"
                        "print(read_file('missing.txt').get('error', 'NO ERROR'))\n",
                .cancel_after_ms = -1,
                .log_calls = true,
        };
        json_auto_t *rep = NULL;
        const char *out;
        json_t *r, *log;
        _cleanup_close_ int fd = -EBADF;

        SKIP_WITHOUT_PYTHON();
        snprintf(path, sizeof(path), "%s/a.txt", f->work);
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write_all(fd, "hello from file\n", 16), 0);

        rep = run_exec(f, &c, NULL);
        assert_status(rep, EXEC_SUCCESS);
        r = result_of(rep);
        out = str_of(r, "output");
        assert_non_null(strstr(out, "hello from file"));
        assert_non_null(strstr(out, "File not found"));
        assert_int_equal(json_integer_value(json_object_get(r, "tool_calls_made")), 2);
        log = json_object_get(r, "tool_calls");
        assert_true(json_is_array(log));
        assert_int_equal(json_array_size(log), 2);
        assert_string_equal(str_of(json_array_get(log, 0), "tool"), "read_file");
        assert_true(json_is_true(json_object_get(json_array_get(log, 0), "ok")));
        assert_true(json_is_false(json_object_get(json_array_get(log, 1), "ok")));
}

static void test_exec_run_tool_budget(void **state)
{
        struct fixture *f = *state;
        struct exec_case c = {
                .code = "from hermes_tools import read_file\n"
                        "read_file('x')\n"
                        "print(read_file('x').get('error'))\n",
                .cancel_after_ms = -1,
                .max_tool_calls = 1,
        };
        json_auto_t *rep = NULL;
        json_t *r;

        SKIP_WITHOUT_PYTHON();
        rep = run_exec(f, &c, NULL);
        assert_status(rep, EXEC_SUCCESS);
        r = result_of(rep);
        assert_string_equal(str_of(r, "output"), "Tool call limit reached (1). No more tool calls "
                                                 "allowed in this execution.\n");
        assert_int_equal(json_integer_value(json_object_get(r, "tool_calls_made")), 1);
        assert_null(json_object_get(r, "tool_calls"));
}

static void test_exec_run_big_output(void **state)
{
        struct fixture *f = *state;
        struct exec_case c = {
                .code = "import sys\nsys.stdout.write('x' * 100000)\n",
                .cancel_after_ms = -1,
        };
        json_auto_t *rep = NULL;
        const char *out, *spill;
        struct stat st;
        json_t *r;

        SKIP_WITHOUT_PYTHON();
        rep = run_exec(f, &c, NULL);
        assert_status(rep, EXEC_SUCCESS);
        r = result_of(rep);
        assert_true(json_is_true(json_object_get(r, "stdout_truncated")));
        assert_int_equal(json_integer_value(json_object_get(r, "stdout_bytes_total")), 100000);
        /* 50,000 kept (40% head, 60% tail of max_stdout_bytes). */
        assert_int_equal(json_integer_value(json_object_get(r, "stdout_bytes_omitted")), 50000);
        out = str_of(r, "output");
        assert_non_null(strstr(out, "[OUTPUT TRUNCATED - 50,000 chars omitted out of 100,000 "
                                    "total]"));
        assert_true(strlen(out) < 50000 + 200);
        /* The whole stream is in the spill file, under our XDG_CACHE_HOME. */
        spill = str_of(r, "stdout_spill_path");
        assert_memory_equal(spill, f->cache, strlen(f->cache));
        assert_int_equal(stat(spill, &st), 0);
        assert_int_equal(st.st_size, 100000);
        assert_int_equal(st.st_mode & 0777, 0600);
}

static void test_exec_run_strict_cwd_and_stdin(void **state)
{
        struct fixture *f = *state;
        struct exec_case c = {
                .code = "import os, sys\nprint(os.getcwd())\nprint(repr(sys.stdin.read()))\n"
                        "print(sorted(n for n in os.listdir('.')))\n",
                .cancel_after_ms = -1,
                .strict = true,
        };
        json_auto_t *rep = NULL;
        char cwd[256], *nl;
        struct stat st;
        const char *out;

        SKIP_WITHOUT_PYTHON();
        rep = run_exec(f, &c, NULL);
        assert_status(rep, EXEC_SUCCESS);
        out = str_of(result_of(rep), "output");
        nl = strchr(out, '\n');
        assert_non_null(nl);
        snprintf(cwd, sizeof(cwd), "%.*s", (int) (nl - out), out);
        /* Strict mode runs in the staging dir, which is gone afterwards. */
        assert_non_null(strstr(cwd, "/ptc-"));
        assert_int_equal(stat(cwd, &st), -1);
        assert_int_equal(errno, ENOENT);
        assert_non_null(strstr(nl, "\n''\n"));
        assert_non_null(strstr(nl, "'hermes_tools.py'"));
        assert_non_null(strstr(nl, "'rpc.sock'"));
        assert_non_null(strstr(nl, "'script.py'"));
}

static void test_exec_run_redacts_and_decodes(void **state)
{
        struct fixture *f = *state;
        struct exec_case c = {
                .code = "import sys\nprint('the value is ' + 'supersecret' + 'value-9876')\n"
                        "sys.stdout.flush()\nsys.stdout.buffer.write(b'bad\\xff\\n')\n",
                .cancel_after_ms = -1,
                .with_secret = true,
        };
        json_auto_t *rep = NULL;
        const char *out;

        SKIP_WITHOUT_PYTHON();
        rep = run_exec(f, &c, NULL);
        assert_status(rep, EXEC_SUCCESS);
        out = str_of(result_of(rep), "output");
        assert_null(strstr(out, SECRET));
        assert_non_null(strstr(out, "***"));
        assert_non_null(strstr(out, "bad\xef\xbf\xbd\n"));
}

static void test_exec_run_kills_orphans(void **state)
{
        struct fixture *f = *state;
        struct exec_case c = {
                .code = "import subprocess\n"
                        "p = subprocess.run('setsid sleep 30 >/dev/null 2>&1 & echo $!', "
                        "shell=True, capture_output=True, text=True)\n"
                        "print(p.stdout.strip())\n",
                .cancel_after_ms = -1,
                .check_orphan = true,
        };
        json_auto_t *rep = NULL;
        double secs = 0;

        SKIP_WITHOUT_PYTHON();
        rep = run_exec(f, &c, &secs);
        assert_status(rep, EXEC_SUCCESS);
        assert_true(json_integer_value(json_object_get(rep, "orphan_pid")) > 0);
        assert_true(json_is_false(json_object_get(rep, "orphan_alive")));
        assert_true(secs < 20); /* hang guard: the orphan sleeps 30 s */
}

/* ptc's own failure (the interpreter cannot start): -errno, a message, nothing left behind. */
static void test_exec_run_bad_python(void **state)
{
        struct fixture *f = *state;
        struct ptc_config cfg;
        struct registry *reg = NULL;
        struct diag d = {};
        json_t *res = NULL;
        enum exec_status st = EXEC_SUCCESS;
        char *old_tmp = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
        char *env[] = {(char *) "PATH=/usr/bin:/bin", NULL};
        DIR *dir;
        struct dirent *de;
        int n = 0, r;

        assert_int_equal(config_init(&cfg), 0);
        assert_int_equal(registry_new(&cfg, NULL, &reg, NULL, &d), 0);
        /* Staging goes under TMPDIR: ours, so we can see it is cleaned up. */
        assert_int_equal(setenv("TMPDIR", f->work, 1), 0);
        {
                struct exec_opts o = {
                        .code = "print(1)\n",
                        .code_len = 9,
                        .config = &cfg,
                        .registry = reg,
                        .base_env = env,
                        .python = "/nonexistent-ptc/python3",
                        .cwd = f->work,
                        .cancel_fd = -1,
                };
                r = exec_run(&o, &res, &st, &d);
        }
        if (old_tmp)
                assert_int_equal(setenv("TMPDIR", old_tmp, 1), 0);
        else
                (void) unsetenv("TMPDIR");
        free(old_tmp);
        assert_int_equal(r, -ENOENT);
        assert_null(res);
        assert_non_null(strstr(d.message, "cannot execute '/nonexistent-ptc/python3'"));
        dir = opendir(f->work);
        assert_non_null(dir);
        while ((de = readdir(dir)))
                if (de->d_name[0] != '.')
                        n++;
        closedir(dir);
        assert_int_equal(n, 0);
        /* The failed child was reaped; nothing else of ours is running. */
        assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
        assert_int_equal(errno, ECHILD);
        registry_free(reg);
        config_release(&cfg);
}

static void test_result_format_seconds(void **state)
{
        char buf[64];

        result_format_seconds(300, buf, sizeof(buf));
        assert_string_equal(buf, "300");
        result_format_seconds(2.5, buf, sizeof(buf));
        assert_string_equal(buf, "2.5");
        result_format_seconds(1, buf, sizeof(buf));
        assert_string_equal(buf, "1");
        result_format_seconds(0.25, buf, sizeof(buf));
        assert_string_equal(buf, "0.25");
        /* A small buffer truncates, never overflows. */
        result_format_seconds(123456, buf, 4);
        assert_string_equal(buf, "123");
}

static void test_result_build_shapes(void **state)
{
        struct result_input in = {
                .status = EXEC_TIMEOUT,
                .stdout_text = "",
                .timeout = 2.5,
                .have_exit_code = false,
        };
        json_auto_t *t = result_build(&in), *e = NULL;

        assert_non_null(t);
        /* Empty stdout: just the sentence, no leading blank lines. */
        assert_string_equal(str_of(t, "output"),
                            "\u23f0 Script timed out after 2.5s and was killed.");
        assert_true(json_is_null(json_object_get(t, "exit_code")));

        in = (struct result_input){.status = EXEC_INTERRUPTED, .stdout_text = ""};
        e = result_build(&in);
        assert_non_null(e);
        assert_string_equal(str_of(e, "output"), "\n[execution interrupted]");
        assert_string_equal(str_of(e, "status"), "interrupted");
}

/*
 * The run supervisor (core/exec/exec-run.h) with a target of the test's own, no process: what it
 * asks of the target, when, and what the result says.
 */
struct fake_target {
        struct run run;
        unsigned interrupts, kills, collects, teardowns;
        bool end_on_interrupt; /* the target ends the run itself (a remote run without agent) */
        int pipe_w[2];         /* the write ends of run_pipes(), kept open: nothing closes */
};

static usec_t fake_interrupt(struct run *run)
{
        struct fake_target *t = run->target;

        t->interrupts++;
        if (t->end_on_interrupt) {
                run_end(run, 20 * USEC_PER_MSEC);
                return 0;
        }
        return 30 * USEC_PER_MSEC;
}

/* Two steps, as a local run's: all below the init, then the init, whose exit ends the run. */
static usec_t fake_kill(struct run *run)
{
        struct fake_target *t = run->target;

        if (++t->kills == 1)
                return 30 * USEC_PER_MSEC;
        run_end(run, 20 * USEC_PER_MSEC);
        return 0;
}

static int fake_collect(struct run *run, struct result_input *in)
{
        struct fake_target *t = run->target;

        t->collects++;
        in->status = EXEC_SUCCESS; /* a stopped run's status is the supervisor's */
        in->have_exit_code = true;
        in->exit_code = -9;
        return 0;
}

static void fake_teardown(struct run *run)
{
        struct fake_target *t = run->target;

        t->teardowns++;
        safe_close(t->pipe_w[0]);
        safe_close(t->pipe_w[1]);
}

static const struct run_target_ops fake_ops = {
        .interrupt = fake_interrupt,
        .kill = fake_kill,
        .collect = fake_collect,
        .teardown = fake_teardown,
};

static void run_fake(struct fixture *f, struct fake_target *t, double timeout, int cancel_fd,
                     const char *const *reason, json_t **ret, enum exec_status *ret_status)
{
        struct ptc_config cfg;
        struct exec_opts o;
        struct diag d = {};

        assert_int_equal(setenv("XDG_CACHE_HOME", f->cache, 1), 0);
        assert_int_equal(config_init(&cfg), 0);
        cfg.timeout = timeout;
        o = (struct exec_opts){.config = &cfg, .cancel_fd = cancel_fd, .cancel_reason = reason};
        t->pipe_w[0] = t->pipe_w[1] = -EBADF;
        run_init(&t->run, &o, &fake_ops, t);
        assert_int_equal(run_begin(&t->run, f->work, &d), 0);
        assert_int_equal(run_pipes(&t->run, &t->pipe_w[0], &t->pipe_w[1], &d), 0);
        assert_true(t->run.tool_ctx.cancel_fd >= 0);
        run_arm_deadline(&t->run);
        assert_int_equal(run_supervise(&t->run, ret, ret_status, &d), 0);
        run_teardown(&t->run);
        assert_int_equal(t->teardowns, 1);
        config_release(&cfg);
}

static void test_run_supervisor_timeout_escalates(void **state)
{
        struct fake_target t = {};
        json_auto_t *res = NULL;
        enum exec_status st;
        usec_t t0 = now_usec();

        run_fake(*state, &t, 0.05, -1, NULL, &res, &st);
        /* Interrupted at the deadline, killed in two steps after each grace, then drained
         * though its pipes never closed. */
        assert_int_equal(st, EXEC_TIMEOUT);
        assert_int_equal(t.interrupts, 1);
        assert_int_equal(t.kills, 2);
        assert_int_equal(t.collects, 1);
        assert_true(t.run.drain_timed_out);
        assert_string_equal(str_of(res, "status"), "timeout");
        assert_int_equal(json_integer_value(json_object_get(res, "exit_code")), -9);
        /* Not before the deadline; ~0.6 s expected (the graces and the drain). */
        assert_true(now_usec() - t0 >= 50 * USEC_PER_MSEC);
        if (now_usec() - t0 > 20 * USEC_PER_SEC) /* hang guard */
                fail_msg("a 50 ms timeout took %.3f s", (double) (now_usec() - t0) / 1e6);
}

static void test_run_supervisor_cancel(void **state)
{
        static const char *reason = "SIGTERM";
        struct fake_target t = {.end_on_interrupt = true};
        _cleanup_close_ int cancel = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
        json_auto_t *res = NULL;
        enum exec_status st;

        assert_true(cancel >= 0);
        run_fake(*state, &t, 300, cancel, &reason, &res, &st);
        /* Cancelled before the deadline; the target ended the run: no kill step. */
        assert_int_equal(st, EXEC_INTERRUPTED);
        assert_int_equal(t.interrupts, 1);
        assert_int_equal(t.kills, 0);
        assert_string_equal(str_of(res, "error"), "Execution interrupted (SIGTERM)");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_exec_run_print_success, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exec_run_exit_code, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exec_run_exception, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exec_run_timeout, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exec_run_cancel, setup, teardown),
                cmocka_unit_test(test_exec_run_empty_code),
                cmocka_unit_test_setup_teardown(test_exec_run_read_file_tool, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exec_run_tool_budget, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exec_run_big_output, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exec_run_strict_cwd_and_stdin, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_exec_run_redacts_and_decodes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exec_run_kills_orphans, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exec_run_bad_python, setup, teardown),
                cmocka_unit_test_setup_teardown(test_run_supervisor_timeout_escalates, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_run_supervisor_cancel, setup, teardown),
                cmocka_unit_test(test_result_format_seconds),
                cmocka_unit_test(test_result_build_shapes),
        };

        /* Without PYTHON the end-to-end tests skip themselves; the rest still run. */
        return cmocka_run_group_tests(tests, NULL, NULL);
}
