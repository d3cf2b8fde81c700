/* SPDX-License-Identifier: MIT */
/* command_run() (core/command/command.h): run a command and capture it. */
#include "../lib/ptc-test.h"
#include "../lib/test-child.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <seccomp.h>

#include "basic/fd-util.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "core/command/command.h"
#include "core/output/capture.h"

#define SH "/bin/sh"

extern char **environ;

/* Far above what any command here needs: a hang guard, never a timing assertion. */
#define GUARD_USEC (60 * USEC_PER_SEC)

/* Run `sh -c @script` with @o's other fields; its output into *ret_text (caller frees). */
static int run_sh(const char *script, struct command_opts *o, struct command_result *res,
                  char **ret_text, size_t *ret_len)
{
        char *argv[] = {(char *) "sh", (char *) "-c", (char *) script, NULL};
        struct capture cap;
        struct capture_text txt = {};
        int r;

        assert_int_equal(capture_init(&cap, 1 << 20, 0, 0, NULL, 0), 0);
        o->path = SH;
        o->argv = argv;
        o->envp = environ;
        o->output = &cap;
        if (o->deadline == 0)
                o->deadline = now_usec() + GUARD_USEC;
        r = command_run(o, res);
        o->argv = NULL;
        assert_int_equal(capture_text(&cap, &txt), 0);
        capture_release(&cap);
        if (ret_text)
                *ret_text = txt.text;
        else
                free(txt.text);
        if (ret_len)
                *ret_len = txt.len;
        return r;
}

static void test_command_output_and_exit_code(void **state)
{
        struct command_opts o = {.stdin_fd = -1, .cancel_fd = -1, .merge_stderr = true};
        struct command_result res;
        char *out = NULL;

        assert_int_equal(run_sh("echo out; echo err >&2; exit 3", &o, &res, &out, NULL), 0);
        assert_int_equal(res.exit_code, 3);
        assert_false(res.timed_out);
        assert_false(res.cancelled);
        assert_string_equal(out, "out\nerr\n");
        free(out);

        /* Without merge_stderr, stderr goes to /dev/null. */
        o = (struct command_opts){.stdin_fd = -1, .cancel_fd = -1};
        assert_int_equal(run_sh("echo out; echo err >&2", &o, &res, &out, NULL), 0);
        assert_int_equal(res.exit_code, 0);
        assert_string_equal(out, "out\n");
        free(out);
}

/* More than a pipe holds, in more than one wakeup's reads: all of it arrives. */
static void test_command_large_output(void **state)
{
        struct command_opts o = {.stdin_fd = -1, .cancel_fd = -1};
        struct command_result res;
        size_t len = 0;

        assert_int_equal(run_sh("head -c 900000 /dev/zero | tr '\\0' x", &o, &res, NULL, &len), 0);
        assert_int_equal(res.exit_code, 0);
        assert_int_equal(len, 900000);
}

static void test_command_stdin_fd(void **state)
{
        _cleanup_close_ int mfd = memfd_with_data("test-command", "from stdin\n", 11);
        struct command_opts o = {.cancel_fd = -1};
        struct command_result res;
        char *out = NULL;

        assert_true(mfd >= 0);
        o.stdin_fd = mfd;
        assert_int_equal(run_sh("cat", &o, &res, &out, NULL), 0);
        assert_int_equal(res.exit_code, 0);
        assert_string_equal(out, "from stdin\n");
        free(out);
}

/* A start that fails is an error, not a result; the fallback path is tried on ENOENT. */
static void test_command_start_errors(void **state)
{
        char *argv[] = {(char *) "x", (char *) "-c", (char *) "exit 5", NULL};
        struct command_opts o = {.path = "/nonexistent/ptc-test-command",
                                 .argv = argv,
                                 .stdin_fd = -1,
                                 .cancel_fd = -1,
                                 .deadline = USEC_INFINITY};
        struct command_result res;

        assert_int_equal(command_run(&o, &res), -ENOENT);
        o.fallback_path = SH;
        assert_int_equal(command_run(&o, &res), 0);
        assert_int_equal(res.exit_code, 5);
        o.fallback_path = NULL;
        o.path = SH;
        o.cwd = "/nonexistent/ptc-test-command";
        assert_int_equal(command_run(&o, &res), -ENOENT);
}

/* At the deadline SIGTERM; one that ignores it gets SIGKILL after the grace. */
static void test_command_deadline(void **state)
{
        struct command_opts o = {.stdin_fd = -1, .cancel_fd = -1, .merge_stderr = true};
        struct command_result res;
        char *out = NULL;

        o.deadline = now_usec() + 100 * USEC_PER_MSEC;
        assert_int_equal(run_sh("echo started; exec sleep 100", &o, &res, &out, NULL), 0);
        assert_true(res.timed_out);
        assert_false(res.cancelled);
        assert_int_equal(res.exit_code, -SIGTERM);
        assert_string_equal(out, "started\n");
        free(out);

        o = (struct command_opts){.stdin_fd = -1, .cancel_fd = -1};
        o.deadline = now_usec() + 100 * USEC_PER_MSEC;
        assert_int_equal(run_sh("trap '' TERM; sleep 100; sleep 100", &o, &res, NULL, NULL), 0);
        assert_true(res.timed_out);
        assert_int_equal(res.exit_code, -SIGKILL);

        /* A deadline already past when it starts. */
        o = (struct command_opts){.stdin_fd = -1, .cancel_fd = -1};
        o.deadline = 1;
        assert_int_equal(run_sh("exec sleep 100", &o, &res, NULL, NULL), 0);
        assert_true(res.timed_out);
}

static void test_command_cancel(void **state)
{
        _cleanup_close_ int efd = eventfd(0, EFD_CLOEXEC);
        struct command_opts o = {.stdin_fd = -1};
        struct command_result res;
        uint64_t one = 1;

        assert_true(efd >= 0);
        assert_int_equal(write(efd, &one, sizeof(one)), (ssize_t) sizeof(one));
        o.cancel_fd = efd;
        assert_int_equal(run_sh("exec sleep 100", &o, &res, NULL, NULL), 0);
        assert_true(res.cancelled);
        assert_false(res.timed_out);
        assert_int_equal(res.exit_code, -SIGKILL);
}

/* Whether @pid is gone (or a zombie someone else will reap), waiting up to a hang guard. */
static bool gone(pid_t pid)
{
        usec_t end = now_usec() + GUARD_USEC;

        while (now_usec() < end) {
                char path[64], buf[512], *p;
                FILE *f;

                (void) snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
                f = fopen(path, "re");
                if (!f)
                        return true;
                p = fgets(buf, sizeof(buf), f);
                fclose(f);
                p = p ? strrchr(buf, ')') : NULL;
                if (!p || (p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X')))
                        return true;
                (void) usleep(10000);
        }
        return false;
}

/*
 * What the command leaves in its process group dies with it; with contain, a daemon that left
 * the group (setsid) too. Neither holds the call up: the pipe they keep open gets its grace.
 */
static void test_command_leftovers_killed(void **state)
{
        struct command_opts o = {.stdin_fd = -1, .cancel_fd = -1};
        struct command_result res;
        char *out = NULL;
        long pid;

        assert_int_equal(run_sh("sleep 100 & echo $!", &o, &res, &out, NULL), 0);
        assert_int_equal(res.exit_code, 0);
        pid = strtol(out, NULL, 10);
        free(out);
        assert_true(pid > 1);
        assert_true(gone((pid_t) pid));

        o = (struct command_opts){.stdin_fd = -1, .cancel_fd = -1, .contain = true};
        assert_int_equal(run_sh("setsid sleep 100 >/dev/null 2>&1 </dev/null & echo $!", &o, &res,
                                &out, NULL),
                         0);
        assert_int_equal(res.exit_code, 0);
        pid = strtol(out, NULL, 10);
        free(out);
        assert_true(pid > 1);
        assert_true(gone((pid_t) pid));
}

/* A watch whose clock the test holds and lets go (core/tools/exec-supervisor.h's part). */
struct fake_watch {
        int paused; /* atomic */
        int wake_fd;
        int woken;
        usec_t extra; /* added to the deadline once let go */
};

static usec_t fake_deadline(void *userdata, usec_t deadline)
{
        struct fake_watch *w = userdata;

        if (__atomic_load_n(&w->paused, __ATOMIC_ACQUIRE))
                return USEC_INFINITY;
        return deadline + w->extra;
}

static void fake_woken(void *userdata)
{
        struct fake_watch *w = userdata;
        uint64_t v;

        w->woken++;
        (void) !read(w->wake_fd, &v, sizeof(v));
}

static void *let_go(void *userdata)
{
        struct fake_watch *w = userdata;
        uint64_t one = 1;

        (void) usleep(200 * 1000);
        __atomic_store_n(&w->paused, 0, __ATOMIC_RELEASE);
        (void) !write(w->wake_fd, &one, sizeof(one));
        return NULL;
}

static void test_command_exec_watch_pauses_deadline(void **state)
{
        struct fake_watch fw = {.paused = 1, .wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
        struct command_exec_watch w = {.program = NULL,
                                       .child_sock = -1,
                                       .wake_fd = fw.wake_fd,
                                       .deadline = fake_deadline,
                                       .woken = fake_woken,
                                       .userdata = &fw};
        struct command_opts o = {.stdin_fd = -1, .cancel_fd = -1, .exec_watch = &w};
        struct command_result res;
        pthread_t t;

        assert_true(fw.wake_fd >= 0);
        /* Held for the whole run: a deadline long past does not end it. */
        o.deadline = now_usec() + 10 * USEC_PER_MSEC;
        assert_int_equal(run_sh("sleep 0.3; exit 4", &o, &res, NULL, NULL), 0);
        assert_false(res.timed_out);
        assert_int_equal(res.exit_code, 4);
        assert_int_equal(fw.woken, 0);

        /* Let go while it runs: the deadline, past by then, ends it. */
        o.deadline = now_usec() + 10 * USEC_PER_MSEC;
        assert_int_equal(pthread_create(&t, NULL, let_go, &fw), 0);
        assert_int_equal(run_sh("exec sleep 100", &o, &res, NULL, NULL), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_true(res.timed_out);
        assert_int_equal(res.exit_code, -SIGTERM);
        assert_int_equal(fw.woken, 1);
        close(fw.wake_fd);
}

/*
 * In a child where the kernel gives no pidfd (pidfd_open and clone3 answer ENOSYS, as before
 * Linux 5.3): the call fails and says why, and the command is killed and reaped at once
 * rather than waited for by polling. 0, or the step that failed (1-5).
 */
static int run_without_pidfd(void *userdata)
{
        char *argv[] = {(char *) "sh", (char *) "-c", (char *) "exec sleep 100", NULL};
        struct command_opts o = {.path = SH,
                                 .argv = argv,
                                 .envp = environ,
                                 .stdin_fd = -1,
                                 .cancel_fd = -1,
                                 .deadline = USEC_INFINITY};
        struct command_result res;
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        siginfo_t si = {};
        int r;

        if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(pidfd_open), 0) < 0 ||
            seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0) < 0 ||
            seccomp_load(ctx) < 0)
                return 1;
        seccomp_release(ctx);
        r = command_run(&o, &res);
        if (r != -ENOSYS)
                return 2;
        if (!strstr(res.error, "no pidfd"))
                return 3;
        /* Nothing left to reap: it was killed and reaped, not left running for 100 s. */
        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG) == 0 || errno != ECHILD)
                return 4;
        return 0;
}

static void test_command_no_pidfd_fails(void **state)
{
        int status = test_run_child(true, run_without_pidfd, NULL);

        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_command_output_and_exit_code),
                cmocka_unit_test(test_command_large_output),
                cmocka_unit_test(test_command_stdin_fd),
                cmocka_unit_test(test_command_start_errors),
                cmocka_unit_test(test_command_deadline),
                cmocka_unit_test(test_command_cancel),
                cmocka_unit_test(test_command_leftovers_killed),
                cmocka_unit_test(test_command_exec_watch_pauses_deadline),
                cmocka_unit_test(test_command_no_pidfd_fails),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
