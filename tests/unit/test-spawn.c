/* SPDX-License-Identifier: MIT */
#include "../lib/ptc-test.h"
#include "../lib/test-child.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/diag.h"
#include "basic/fd-util.h"
#include "basic/macro.h"
#include "basic/path-util.h"
#include "basic/process-util.h"
#include "basic/time-util.h"
#include "core/config/config.h"
#include "core/spawn/interpreter.h"
#include "core/spawn/proc-tree.h"
#include "core/spawn/spawn.h"

#define PYTHON "/usr/bin/python3"

extern char **environ;

struct fixture {
        char dir[64];
        /* The interpreter tests change these; restored in teardown. */
        char *saved_path, *saved_xdg, *saved_venv, *saved_conda;
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        if (!f)
                return -1;
        (void) snprintf(f->dir, sizeof(f->dir), "/tmp/ptc-test-spawn-XXXXXX");
        if (!mkdtemp(f->dir))
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

/* Read @fd until EOF (or @cap - 1 bytes, or 20 s); NUL-terminates. Returns the length. */
static size_t read_all(int fd, char *buf, size_t cap)
{
        usec_t end = now_usec() + 20 * USEC_PER_SEC; /* hang guard */
        size_t len = 0;

        while (len + 1 < cap && now_usec() < end) {
                struct pollfd p = {.fd = fd, .events = POLLIN};
                ssize_t k;

                if (poll(&p, 1, 200) <= 0)
                        continue;
                k = read(fd, buf + len, cap - 1 - len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                len += (size_t) k;
        }
        buf[len] = 0;
        return len;
}

static int wait_status(pid_t pid)
{
        int st = 0;
        pid_t r;

        do
                r = waitpid(pid, &st, 0);
        while (r < 0 && errno == EINTR);
        assert_int_equal(r, pid);
        return st;
}

/* Spawn @argv with stdout (and stderr) into a pipe; returns the output in @out. */
static int run_capture(char *const *argv, const char *cwd, char *out, size_t cap, int *ret_status,
                       struct diag *d)
{
        struct spawn_opts o = {
                .path = argv[0],
                .argv = argv,
                .envp = environ,
                .cwd = cwd,
                .stdin_fd = -1,
                .stderr_fd = -1,
        };
        int p[2], pidfd = -1, r;
        pid_t pid = 0;

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        o.stdout_fd = p[1];
        r = spawn_process(&o, &pid, &pidfd, d);
        safe_close(p[1]);
        if (r < 0) {
                safe_close(p[0]);
                return r;
        }
        assert_true(pid > 0);
        assert_true(pidfd >= 0);
        read_all(p[0], out, cap);
        safe_close(p[0]);
        /* The pidfd becomes readable when the child exits. */
        {
                struct pollfd pf = {.fd = pidfd, .events = POLLIN};
                assert_int_equal(poll(&pf, 1, 5000), 1);
        }
        safe_close(pidfd);
        *ret_status = wait_status(pid);
        return 0;
}

/* Start a `sleep 30` and return its pid (after exec: spawn_process waits for that). */
static pid_t spawn_sleep(bool new_session, int stdout_fd)
{
        char *argv[] = {(char *) "/bin/sleep", (char *) "30", NULL};
        struct spawn_opts o = {
                .path = "/bin/sleep",
                .argv = argv,
                .envp = environ,
                .stdin_fd = -1,
                .stdout_fd = stdout_fd,
                .stderr_fd = -1,
                .new_session = new_session,
        };
        struct diag d = {};
        pid_t pid = 0;

        assert_int_equal(spawn_process(&o, &pid, NULL, &d), 0);
        return pid;
}

static void kill_and_reap(pid_t pid)
{
        int st;

        assert_int_equal(kill(pid, SIGKILL), 0);
        st = wait_status(pid);
        assert_true(WIFSIGNALED(st));
}

static void assert_no_children(void)
{
        assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
        assert_int_equal(errno, ECHILD);
}

/* The hex mask of @key ("SigBlk") in /proc/<pid>/status. */
static void proc_status_field(pid_t pid, const char *key, char *out, size_t n)
{
        char path[64], buf[8192];
        _cleanup_close_ int fd = -EBADF;
        size_t klen = strlen(key);
        ssize_t k;

        snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        k = read(fd, buf, sizeof(buf) - 1);
        assert_true(k > 0);
        buf[k] = 0;
        for (char *line = buf; line && *line;) {
                char *nl = strchr(line, '\n');
                if (nl)
                        *nl = 0;
                if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
                        const char *v = line + klen + 1;
                        v += strspn(v, " \t");
                        snprintf(out, n, "%s", v);
                        return;
                }
                line = nl ? nl + 1 : NULL;
        }
        fail_msg("no %s in %s", key, path);
}

/* ---- spawn_process ---- */

static void test_spawn_process_echo_stdout(void **state)
{
        char *argv[] = {(char *) "/bin/echo", (char *) "hello", (char *) "world", NULL};
        char out[256];
        struct diag d = {};
        int st = -1;

        assert_int_equal(run_capture(argv, NULL, out, sizeof(out), &st, &d), 0);
        assert_string_equal(out, "hello world\n");
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
        assert_no_children();
}

static void test_spawn_process_exit_status(void **state)
{
        char *exit7[] = {(char *) "/bin/sh", (char *) "-c", (char *) "echo x; exit 7", NULL};
        char *killed[] = {(char *) "/bin/sh", (char *) "-c", (char *) "kill -9 $$", NULL};
        char out[64];
        struct diag d = {};
        int st = -1;

        assert_int_equal(run_capture(exit7, NULL, out, sizeof(out), &st, &d), 0);
        assert_string_equal(out, "x\n");
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 7);

        assert_int_equal(run_capture(killed, NULL, out, sizeof(out), &st, &d), 0);
        assert_true(WIFSIGNALED(st));
        assert_int_equal(WTERMSIG(st), SIGKILL);
}

static void test_spawn_process_cwd(void **state)
{
        struct fixture *f = *state;
        char *argv[] = {(char *) "/bin/pwd", (char *) "-P", NULL};
        char out[256], want[300], *real;
        struct diag d = {};
        int st = -1;

        real = realpath(f->dir, NULL);
        assert_non_null(real);
        snprintf(want, sizeof(want), "%s\n", real);
        free(real);
        assert_int_equal(run_capture(argv, f->dir, out, sizeof(out), &st, &d), 0);
        assert_string_equal(out, want);
        assert_int_equal(WEXITSTATUS(st), 0);

        /* A relative executable path is relative to the new cwd, as with chdir + exec. */
        {
                char script[128];
                char *rel[] = {(char *) "./hello.sh", NULL};
                _cleanup_close_ int fd = -EBADF;

                snprintf(script, sizeof(script), "%s/hello.sh", f->dir);
                fd = open(script, O_WRONLY | O_CREAT | O_CLOEXEC, 0755);
                assert_true(fd >= 0);
                assert_int_equal(write_all(fd, "#!/bin/sh\necho from-script\n", 27), 0);
                fd = safe_close(fd);
                assert_int_equal(run_capture(rel, f->dir, out, sizeof(out), &st, &d), 0);
                assert_string_equal(out, "from-script\n");
        }
}

static void test_spawn_process_bad_cwd(void **state)
{
        struct fixture *f = *state;
        char *argv[] = {(char *) "/bin/true", NULL};
        char missing[128], file[128], out[64];
        struct diag d = {};
        int st = -1, r;
        _cleanup_close_ int fd = -EBADF;

        snprintf(missing, sizeof(missing), "%s/no-such-dir", f->dir);
        r = run_capture(argv, missing, out, sizeof(out), &st, &d);
        assert_int_equal(r, -ENOENT);
        assert_non_null(strstr(d.message, missing));
        assert_non_null(strstr(d.message, "cannot change to directory"));
        /* The failed child was reaped by spawn_process. */
        assert_no_children();

        snprintf(file, sizeof(file), "%s/a-file", f->dir);
        fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        memset(&d, 0, sizeof(d));
        r = run_capture(argv, file, out, sizeof(out), &st, &d);
        assert_int_equal(r, -ENOTDIR);
        assert_non_null(strstr(d.message, file));
        assert_no_children();
}

static void test_spawn_process_missing_executable(void **state)
{
        struct fixture *f = *state;
        char *argv[] = {(char *) "/nonexistent-ptc-dir/python3", NULL};
        char noexec[128], out[64];
        struct diag d = {};
        int st = -1, r;
        _cleanup_close_ int fd = -EBADF;

        r = run_capture(argv, NULL, out, sizeof(out), &st, &d);
        assert_int_equal(r, -ENOENT);
        assert_non_null(strstr(d.message, "cannot execute"));
        assert_non_null(strstr(d.message, "/nonexistent-ptc-dir/python3"));
        assert_no_children();

        /* Present but not executable: EACCES. */
        snprintf(noexec, sizeof(noexec), "%s/noexec.sh", f->dir);
        fd = open(noexec, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write_all(fd, "#!/bin/sh\n", 10), 0);
        argv[0] = noexec;
        memset(&d, 0, sizeof(d));
        r = run_capture(argv, NULL, out, sizeof(out), &st, &d);
        assert_int_equal(r, -EACCES);
        assert_non_null(strstr(d.message, "cannot execute"));
        assert_no_children();
}

static void test_spawn_process_clean_signal_state(void **state)
{
        sigset_t block, old;
        struct sigaction ign = {.sa_handler = SIG_IGN}, old_pipe;
        char v[64];
        pid_t pid;

        sigemptyset(&block);
        sigaddset(&block, SIGINT);
        sigaddset(&block, SIGTERM);
        sigaddset(&block, SIGCHLD);
        assert_int_equal(sigprocmask(SIG_BLOCK, &block, &old), 0);
        assert_int_equal(sigaction(SIGPIPE, &ign, &old_pipe), 0);

        /* Sanity: the parent really has the state the child must not inherit. */
        proc_status_field(getpid(), "SigBlk", v, sizeof(v));
        assert_string_not_equal(v, "0000000000000000");
        proc_status_field(getpid(), "SigIgn", v, sizeof(v));
        assert_string_not_equal(v, "0000000000000000");

        pid = spawn_sleep(false, -1);

        assert_int_equal(sigprocmask(SIG_SETMASK, &old, NULL), 0);
        assert_int_equal(sigaction(SIGPIPE, &old_pipe, NULL), 0);

        /* spawn_process returned after exec; masks and ignores survive exec. */
        proc_status_field(pid, "SigBlk", v, sizeof(v));
        assert_string_equal(v, "0000000000000000");
        proc_status_field(pid, "SigIgn", v, sizeof(v));
        assert_string_equal(v, "0000000000000000");
        kill_and_reap(pid);
}

static void test_spawn_process_new_session(void **state)
{
        pid_t a, b;

        a = spawn_sleep(true, -1);
        assert_int_equal(getsid(a), a);
        assert_int_equal(getpgid(a), a);
        b = spawn_sleep(false, -1);
        assert_int_equal(getsid(b), getsid(0));
        assert_int_not_equal(getsid(b), b);
        kill_and_reap(a);
        kill_and_reap(b);
}

/*
 * Wait until @pid sleeps (state S in /proc/<pid>/stat): a freshly exec'd /bin/sleep has
 * the dynamic loader's fds (libc at fd 3) open for a moment before it reaches nanosleep.
 */
static void wait_sleeping(pid_t pid)
{
        usec_t end = now_usec() + 20 * USEC_PER_SEC; /* hang guard */
        char path[64], buf[512];

        snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        for (;;) {
                FILE *f = fopen(path, "re");
                size_t n;
                char *paren;

                assert_non_null(f);
                n = fread(buf, 1, sizeof(buf) - 1, f);
                fclose(f);
                buf[n] = 0;
                paren = strrchr(buf, ')');
                assert_non_null(paren);
                if (paren[1] == ' ' && paren[2] == 'S')
                        return;
                assert_true(now_usec() < end);
                usleep(2 * 1000);
        }
}

static void test_spawn_process_only_stdio_fds(void **state)
{
        char path[64], link[256];
        int leak, leak_pipe[2];
        int seen[3] = {}, n = 0;
        DIR *d;
        struct dirent *de;
        pid_t pid;
        ssize_t k;

        /* fds a careless library leaked (no CLOEXEC) must not reach the child. */
        leak = open("/dev/null", O_RDONLY);
        assert_true(leak >= 0);
        assert_int_equal(pipe(leak_pipe), 0);

        pid = spawn_sleep(false, -1);
        wait_sleeping(pid);
        snprintf(path, sizeof(path), "/proc/%d/fd", (int) pid);
        d = opendir(path);
        assert_non_null(d);
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                n++;
                if (strcmp(de->d_name, "0") == 0 || strcmp(de->d_name, "1") == 0 ||
                    strcmp(de->d_name, "2") == 0)
                        seen[de->d_name[0] - '0'] = 1;
                else
                        fail_msg("child has fd %s open", de->d_name);
        }
        closedir(d);
        assert_int_equal(n, 3);
        assert_true(seen[0] && seen[1] && seen[2]);
        /* -1 means /dev/null. */
        snprintf(path, sizeof(path), "/proc/%d/fd/0", (int) pid);
        k = readlink(path, link, sizeof(link) - 1);
        assert_true(k > 0);
        link[k] = 0;
        assert_string_equal(link, "/dev/null");
        kill_and_reap(pid);

        /* The same from inside: a shell listing its own fds sees 0-2 (+ ls's dir fd). */
        {
                char *argv[] = {(char *) "/bin/sh", (char *) "-c",
                                (char *) "ls /proc/self/fd | tr '\\n' ' '", NULL};
                char out[128];
                struct diag dg = {};
                int st;

                assert_int_equal(run_capture(argv, NULL, out, sizeof(out), &st, &dg), 0);
                assert_string_equal(out, "0 1 2 3 ");
        }
        safe_close(leak);
        safe_close(leak_pipe[0]);
        safe_close(leak_pipe[1]);
}

static void test_spawn_process_stdio_pipes(void **state)
{
        char *argv[] = {(char *) "/bin/sh", (char *) "-c",
                        (char *) "read x; echo \"got $x\"; echo err >&2", NULL};
        struct spawn_opts o = {
                .path = "/bin/sh",
                .argv = argv,
                .envp = environ,
        };
        int in[2], out[2], st;
        char buf[128];
        struct diag d = {};
        pid_t pid;

        assert_int_equal(pipe2(in, O_CLOEXEC), 0);
        assert_int_equal(pipe2(out, O_CLOEXEC), 0);
        o.stdin_fd = in[0];
        o.stdout_fd = out[1];
        o.stderr_fd = out[1]; /* may equal stdout_fd */
        assert_int_equal(spawn_process(&o, &pid, NULL, &d), 0);
        safe_close(in[0]);
        safe_close(out[1]);
        assert_int_equal(write_all(in[1], "hello\n", 6), 0);
        safe_close(in[1]);
        read_all(out[0], buf, sizeof(buf));
        safe_close(out[0]);
        assert_string_equal(buf, "got hello\nerr\n");
        st = wait_status(pid);
        assert_int_equal(WEXITSTATUS(st), 0);

        /* stdin -1 is /dev/null: immediate EOF. */
        {
                char *cat[] = {(char *) "/bin/sh", (char *) "-c", (char *) "cat; echo done", NULL};
                assert_int_equal(run_capture(cat, NULL, buf, sizeof(buf), &st, &d), 0);
                assert_string_equal(buf, "done\n");
        }
}

/*
 * stdout_fd/stderr_fd that are themselves 1 and 2, swapped: the dup2 order
 * must not clobber a source. Runs in a forked child (it rewires its own 1/2).
 */
static int swapped_stdio_child(void)
{
        char *argv[] = {(char *) "/bin/sh", (char *) "-c", (char *) "echo out; echo err >&2", NULL};
        struct spawn_opts o = {
                .path = "/bin/sh",
                .argv = argv,
                .envp = environ,
                .stdin_fd = -1,
                .stdout_fd = 2,
                .stderr_fd = 1,
        };
        int a[2], b[2], st = 0;
        char ba[64], bb[64];
        pid_t pid;

        if (pipe(a) < 0 || pipe(b) < 0)
                return 10;
        /* fd 2 -> pipe a, fd 1 -> pipe b. */
        if (dup2(a[1], 2) < 0 || dup2(b[1], 1) < 0)
                return 11;
        safe_close(a[1]);
        safe_close(b[1]);
        if (spawn_process(&o, &pid, NULL, NULL) < 0)
                return 12;
        (void) close(1);
        (void) close(2);
        read_all(a[0], ba, sizeof(ba));
        read_all(b[0], bb, sizeof(bb));
        (void) waitpid(pid, &st, 0);
        if (strcmp(ba, "out\n") != 0)
                return 13;
        if (strcmp(bb, "err\n") != 0)
                return 14;
        return 0;
}

/* pass_fd becomes fd 3 in the child; nothing above it crosses exec. */
static void test_spawn_process_pass_fd(void **state)
{
        char *argv[] = {(char *) "/bin/sh", (char *) "-c",
                        (char *) "echo side >&3; if [ -e /proc/self/fd/4 ]; then echo leak4; fi; "
                                 "echo main",
                        NULL};
        struct spawn_opts o = {
                .path = "/bin/sh",
                .argv = argv,
                .envp = environ,
                .stdin_fd = -1,
                .stderr_fd = -1,
        };
        int out[2], side[2], st;
        char buf[128];
        struct diag d = {};
        pid_t pid;

        assert_int_equal(pipe2(out, O_CLOEXEC), 0);
        assert_int_equal(pipe2(side, O_CLOEXEC), 0);
        o.stdout_fd = out[1];
        o.pass_fd = side[1];
        assert_int_equal(spawn_process(&o, &pid, NULL, &d), 0);
        safe_close(out[1]);
        safe_close(side[1]);
        read_all(out[0], buf, sizeof(buf));
        safe_close(out[0]);
        assert_string_equal(buf, "main\n");
        read_all(side[0], buf, sizeof(buf));
        safe_close(side[0]);
        assert_string_equal(buf, "side\n");
        st = wait_status(pid);
        assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_spawn_process_swapped_stdio(void **state)
{
        pid_t pid;
        int st;

        fflush(stdout);
        fflush(stderr);
        pid = test_fork();
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(swapped_stdio_child());
        st = wait_status(pid);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
}

/*
 * An intermediate process spawns `sleep 30` (with or without die_with_parent),
 * reports its pid and exits when told. Returns a pidfd for the sleep.
 */
static int start_orphan_sleep(bool die_with_parent, pid_t *ret_mid, pid_t *ret_sleep)
{
        int rep[2], ctl[2];
        pid_t mid, sleeper = 0;
        int pidfd;

        assert_int_equal(pipe2(rep, O_CLOEXEC), 0);
        assert_int_equal(pipe2(ctl, O_CLOEXEC), 0);
        fflush(stdout);
        fflush(stderr);
        mid = test_fork();
        assert_true(mid >= 0);
        if (mid == 0) {
                char *argv[] = {(char *) "/bin/sleep", (char *) "30", NULL};
                struct spawn_opts o = {
                        .path = "/bin/sleep",
                        .argv = argv,
                        .envp = environ,
                        .stdin_fd = -1,
                        .stdout_fd = -1,
                        .stderr_fd = -1,
                        .die_with_parent = die_with_parent,
                };
                pid_t p = 0;
                char c;

                safe_close(rep[0]);
                safe_close(ctl[1]);
                if (spawn_process(&o, &p, NULL, NULL) < 0)
                        _exit(1);
                if (write(rep[1], &p, sizeof(p)) != (ssize_t) sizeof(p))
                        _exit(2);
                (void) !read(ctl[0], &c, 1);
                _exit(0);
        }
        safe_close(rep[1]);
        safe_close(ctl[0]);
        assert_int_equal(read(rep[0], &sleeper, sizeof(sleeper)), (ssize_t) sizeof(sleeper));
        safe_close(rep[0]);
        assert_true(sleeper > 0);
        pidfd = pidfd_open_compat(sleeper);
        assert_true(pidfd >= 0);
        /* Let the intermediate exit; the sleep is orphaned now. */
        safe_close(ctl[1]);
        assert_true(WIFEXITED(wait_status(mid)));
        *ret_mid = mid;
        *ret_sleep = sleeper;
        return pidfd;
}

static void test_spawn_process_die_with_parent(void **state)
{
        struct pollfd p;
        pid_t mid, sleeper;
        int pidfd;

        pidfd = start_orphan_sleep(true, &mid, &sleeper);
        p = (struct pollfd){.fd = pidfd, .events = POLLIN};
        assert_int_equal(poll(&p, 1, 3000), 1);
        safe_close(pidfd);

        /* Control: without die_with_parent the orphan lives on. */
        pidfd = start_orphan_sleep(false, &mid, &sleeper);
        p = (struct pollfd){.fd = pidfd, .events = POLLIN};
        assert_int_equal(poll(&p, 1, 300), 0);
        assert_int_equal(kill(sleeper, SIGKILL), 0);
        assert_int_equal(poll(&p, 1, 3000), 1);
        safe_close(pidfd);
}

static void test_pidfd_open_compat(void **state)
{
        int fd = pidfd_open_compat(getpid());

        assert_true(fd >= 0);
        safe_close(fd);
        assert_int_equal(pidfd_open_compat(0x3ffffff0), -ESRCH);
}

/* ---- proc-tree ---- */

static bool pid_in(const pid_t *v, int n, pid_t p)
{
        for (int i = 0; i < n; i++)
                if (v[i] == p)
                        return true;
        return false;
}

static void test_proc_children_two(void **state)
{
        char *argv[] = {(char *) "/bin/sh", (char *) "-c", (char *) "sleep 30 & sleep 30 & wait",
                        NULL};
        struct spawn_opts o = {
                .path = "/bin/sh",
                .argv = argv,
                .envp = environ,
                .stdin_fd = -1,
                .stdout_fd = -1,
                .stderr_fd = -1,
        };
        pid_t *kids = NULL, sh, a, b;
        usec_t end = now_usec() + 20 * USEC_PER_SEC; /* hang guard */
        int n;

        /* Our own children, on the main thread. */
        a = spawn_sleep(false, -1);
        b = spawn_sleep(false, -1);
        /*
         * At least these two: a child of an earlier test in this process may
         * not be reaped yet when the runner is loaded, so "exactly 2" flaked.
         */
        n = proc_children(getpid(), true, &kids);
        assert_true(n >= 2);
        assert_true(pid_in(kids, n, a) && pid_in(kids, n, b));
        free(kids);
        n = proc_children(getpid(), false, &kids);
        assert_true(n >= 2);
        assert_true(pid_in(kids, n, a) && pid_in(kids, n, b));
        free(kids);
        kill_and_reap(a);
        kill_and_reap(b);

        /* A shell with two background children. */
        assert_int_equal(spawn_process(&o, &sh, NULL, NULL), 0);
        for (;;) {
                kids = NULL;
                n = proc_children(sh, false, &kids);
                assert_true(n >= 0);
                if (n == 2)
                        break;
                free(kids);
                assert_true(now_usec() < end);
                usleep(10 * 1000);
        }
        assert_int_not_equal(kids[0], kids[1]);
        /* Our child list holds the shell only, not its children. */
        {
                pid_t *mine = NULL;
                int m = proc_children(getpid(), true, &mine);
                assert_int_equal(m, 1);
                assert_int_equal(mine[0], sh);
                free(mine);
        }
        /*
         * The shell first: killed after its children, its `wait` could return and the shell
         * exit on its own before our SIGKILL (seen under ASan, 2 runs in 30). With SIGKILL
         * pending it can no longer exit by itself.
         */
        assert_int_equal(kill(sh, SIGKILL), 0);
        for (int i = 0; i < n; i++)
                (void) kill(kids[i], SIGKILL);
        free(kids);
        assert_true(WIFSIGNALED(wait_status(sh)));

        assert_true(proc_children(0x3ffffff0, false, &kids) < 0);
        assert_true(proc_children(0x3ffffff0, true, &kids) < 0);
}

static bool pid_alive(pid_t p)
{
        return kill(p, 0) == 0;
}

static pid_t read_pid_file(const char *path)
{
        char buf[32];
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t k;

        if (fd < 0)
                return 0;
        k = read(fd, buf, sizeof(buf) - 1);
        if (k <= 0 || buf[k - 1] != '\n')
                return 0;
        buf[k] = 0;
        return (pid_t) strtol(buf, NULL, 10);
}

/*
 * A root (a shell that exec's `sleep 30`) with a child and a grandchild in a subshell that
 * stays. Fills the pids once the tree is complete. Returns 0 or a step number.
 */
static int build_tree(const char *dir, pid_t *root, pid_t *child, pid_t *grandchild)
{
        char script[1024], c1[128], gc[128];
        char *argv[] = {(char *) "/bin/sh", (char *) "-c", script, NULL};
        struct spawn_opts o = {
                .path = "/bin/sh",
                .argv = argv,
                .envp = environ,
                .stdin_fd = -1,
                .stdout_fd = -1,
                .stderr_fd = -1,
                .new_session = true,
        };
        usec_t end = now_usec() + 10 * USEC_PER_SEC;

        snprintf(c1, sizeof(c1), "%s/c1", dir);
        snprintf(gc, sizeof(gc), "%s/gc", dir);
        (void) unlink(c1);
        (void) unlink(gc);
        /* The pids are written by the shell's builtin echo, one write each (read_pid_file()
         * takes a line only once its newline is there): a `mv` into place was a process of
         * its own, and a tree looked at before it was reaped had one member too many. */
        snprintf(script, sizeof(script),
                 "sleep 30 & echo $! > %s; ( sleep 30 & echo $! > %s; wait ) & exec sleep 30", c1,
                 gc);
        if (spawn_process(&o, root, NULL, NULL) < 0)
                return 20;
        for (;;) {
                pid_t *rk = NULL;
                int m;

                *child = read_pid_file(c1);
                *grandchild = read_pid_file(gc);
                /* Complete: the root has exec'd into sleep with its two children. */
                m = proc_children(*root, false, &rk);
                free(rk);
                if (*child > 0 && *grandchild > 0 && m == 2)
                        return 0;
                if (now_usec() > end)
                        return 21;
                usleep(10 * 1000);
        }
}

/* Wait (at most 10 s) until @pid has exited, with a pidfd: it is not our child. */
static bool wait_gone(pid_t pid)
{
        _cleanup_close_ int fd = pidfd_open_compat(pid);
        struct pollfd p = {.fd = fd, .events = POLLIN};

        if (fd == -ESRCH)
                return true;
        return fd >= 0 && poll(&p, 1, 10000) == 1;
}

static int kill_tree_scenario(const char *dir)
{
        pid_t root = 0, child = 0, grandchild = 0, bystander;
        int r, st = 0;

        r = build_tree(dir, &root, &child, &grandchild);
        if (r != 0)
                return r;
        /* A child of ours that is no part of the tree: it must live on. */
        bystander = spawn_sleep(false, -1);
        if (proc_tree_kill(root, true) < 3)
                return 3;
        /* The root is left to its owner to reap, killed. */
        if (waitpid(root, &st, 0) != root)
                return 4;
        if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
                return 5;
        if (!wait_gone(child) || !wait_gone(grandchild))
                return 6;
        if (!pid_alive(bystander) || waitpid(bystander, NULL, WNOHANG) != 0)
                return 7;
        kill_and_reap(bystander);
        return 0;
}

static int signal_tree_scenario(const char *dir)
{
        pid_t root = 0, child = 0, grandchild = 0;
        int r, st = 0, n;

        r = build_tree(dir, &root, &child, &grandchild);
        if (r != 0)
                return r;
        /* Everything but the root: its child, the subshell and its child. */
        n = proc_tree_signal(root, false, SIGTERM);
        if (n != 3)
                return 30 + (n < 0 ? 0 : n > 9 ? 9 : n);
        if (!wait_gone(child) || !wait_gone(grandchild))
                return 3;
        if (!pid_alive(root) || waitpid(root, &st, WNOHANG) != 0)
                return 4;
        /* Without the root: the root lives on (its children are zombies it never reaps). */
        (void) proc_tree_kill(root, false);
        usleep(50 * 1000);
        if (!pid_alive(root) || waitpid(root, &st, WNOHANG) != 0)
                return 5;
        if (kill(root, SIGKILL) < 0 || waitpid(root, &st, 0) != root || !WIFSIGNALED(st))
                return 6;
        return 0;
}

/*
 * A tree that forks as fast as it can while it is killed: after proc_tree_kill() no process
 * of it is left (each process is marked by its argv[0] and counted in /proc).
 */
static int count_marked(const char *mark)
{
        DIR *d = opendir("/proc");
        struct dirent *de;
        int n = 0;

        if (!d)
                return -1;
        while ((de = readdir(d))) {
                char path[300], buf[256], state;
                ssize_t k;
                int fd;

                if (de->d_name[0] < '1' || de->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                k = read(fd, buf, sizeof(buf) - 1);
                close(fd);
                if (k <= 0)
                        continue;
                buf[k] = 0;
                if (strcmp(buf, mark) != 0)
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                k = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
                if (fd >= 0)
                        close(fd);
                if (k <= 0)
                        continue;
                buf[k] = 0;
                if (strrchr(buf, ')') && sscanf(strrchr(buf, ')') + 1, " %c", &state) == 1 &&
                    state != 'Z' && state != 'X')
                        n++;
        }
        closedir(d);
        return n;
}

static int forking_tree_scenario(const char *dir)
{
        char mark[64], script[512];
        char *argv[] = {(char *) "/bin/bash", (char *) "-c", script, NULL};
        struct spawn_opts o = {
                .path = "/bin/bash",
                .argv = argv,
                .envp = environ,
                .stdin_fd = -1,
                .stdout_fd = -1,
                .stderr_fd = -1,
                .new_session = true,
        };
        usec_t end = now_usec() + 10 * USEC_PER_SEC;
        pid_t root;
        int st;

        (void) dir;
        snprintf(mark, sizeof(mark), "ptc-fork-mark-%d", (int) getpid());
        /* 300 sleepers, each forked by a subshell that forks the next: a chain that grows. */
        snprintf(script, sizeof(script),
                 "f() { (exec -a %s sleep 30) & [ $1 -gt 0 ] && f $(($1 - 1)); wait; }; f 300",
                 mark);
        if (spawn_process(&o, &root, NULL, NULL) < 0)
                return 40;
        /* Some have started: the kill comes in the middle of the forking. */
        while (count_marked(mark) < 20) {
                if (now_usec() > end)
                        return 41;
                usleep(1000);
        }
        (void) proc_tree_kill(root, true);
        if (waitpid(root, &st, 0) != root)
                return 42;
        /* Killed processes end once they run; under load that is not at once. */
        while (count_marked(mark) > 0) {
                if (now_usec() > end)
                        return 43;
                usleep(10 * 1000);
        }
        return 0;
}

static void run_forked(int (*fn)(const char *dir), const char *dir)
{
        pid_t pid;
        int st;

        fflush(stdout);
        fflush(stderr);
        pid = test_fork();
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(fn(dir));
        st = wait_status(pid);
        assert_true(WIFEXITED(st));
        if (WEXITSTATUS(st) != 0)
                fail_msg("scenario failed at step %d", WEXITSTATUS(st));
}

static void test_proc_tree_kill(void **state)
{
        struct fixture *f = *state;

        run_forked(kill_tree_scenario, f->dir);
        assert_no_children();
}

static void test_proc_tree_signal_spares_root(void **state)
{
        struct fixture *f = *state;

        run_forked(signal_tree_scenario, f->dir);
        assert_no_children();
}

static void test_proc_tree_kill_while_forking(void **state)
{
        struct fixture *f = *state;

        run_forked(forking_tree_scenario, f->dir);
        assert_no_children();
}

/* ---- interpreter ---- */

static char *dup_env(const char *name)
{
        const char *v = getenv(name);
        return v ? strdup(v) : NULL;
}

static void restore_env(const char *name, char *v)
{
        if (v)
                assert_int_equal(setenv(name, v, 1), 0);
        else
                (void) unsetenv(name);
        free(v);
}

static int setup_interp(void **state)
{
        struct fixture *f;
        char cache[128];

        if (setup(state) < 0)
                return -1;
        f = *state;
        f->saved_path = dup_env("PATH");
        f->saved_xdg = dup_env("XDG_CACHE_HOME");
        f->saved_venv = dup_env("VIRTUAL_ENV");
        f->saved_conda = dup_env("CONDA_PREFIX");
        /* Never write the real user's cache. */
        snprintf(cache, sizeof(cache), "%s/cache", f->dir);
        if (setenv("XDG_CACHE_HOME", cache, 1) < 0 || setenv("PATH", "/usr/bin", 1) < 0)
                return -1;
        (void) unsetenv("VIRTUAL_ENV");
        (void) unsetenv("CONDA_PREFIX");
        return 0;
}

static int teardown_interp(void **state)
{
        struct fixture *f = *state;

        restore_env("PATH", f->saved_path);
        restore_env("XDG_CACHE_HOME", f->saved_xdg);
        restore_env("VIRTUAL_ENV", f->saved_venv);
        restore_env("CONDA_PREFIX", f->saved_conda);
        return teardown(state);
}

static void write_script(const char *path, const char *text)
{
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);

        assert_true(fd >= 0);
        assert_int_equal(write_all(fd, text, strlen(text)), 0);
}

static void make_dir(const char *dir, const char *sub, char *out, size_t n)
{
        snprintf(out, n, "%s/%s", dir, sub);
        assert_int_equal(mkdir_p(out, 0755), 0);
}

/* interpreter_resolve reads only c->python (this test does not link the config module). */
static void init_config(struct ptc_config *c, const char *python)
{
        *c = (struct ptc_config){.python = strdup(python)};
        assert_non_null(c->python);
}

static void release_config(struct ptc_config *c)
{
        c->python = mfree_str(c->python);
}

static void test_interpreter_resolve_strict_path(void **state)
{
        struct ptc_config c;
        struct diag d = {};
        char *p = NULL;

        if (access(PYTHON, X_OK) < 0)
                skip();
        init_config(&c, "python3");
        assert_int_equal(interpreter_resolve(&c, PTC_MODE_STRICT, &p, &d), 0);
        assert_string_equal(p, PYTHON);
        free(p);

        /* An absolute configured path is taken as is. */
        free(c.python);
        c.python = strdup(PYTHON);
        assert_int_equal(interpreter_resolve(&c, PTC_MODE_STRICT, &p, &d), 0);
        assert_string_equal(p, PYTHON);
        free(p);

        /* Not found: -ENOENT naming the interpreter. */
        free(c.python);
        c.python = strdup("ptc-no-such-python-xyz");
        assert_int_equal(interpreter_resolve(&c, PTC_MODE_STRICT, &p, &d), -ENOENT);
        assert_non_null(strstr(d.message, "'ptc-no-such-python-xyz' not found on PATH"));
        release_config(&c);
}

static void test_interpreter_resolve_shim_cached(void **state)
{
        struct fixture *f = *state;
        char bin[128], shim[160], path[300], cache[160], prefix[200];
        _cleanup_free_ char *text = NULL;
        struct ptc_config c;
        struct diag d = {};
        json_t *j, *v;
        const char *key, *found_key = NULL;
        size_t len;
        char *p = NULL;

        if (access(PYTHON, X_OK) < 0)
                skip();
        make_dir(f->dir, "shimbin", bin, sizeof(bin));
        snprintf(shim, sizeof(shim), "%s/python3", bin);
        write_script(shim, "#!/bin/sh\nexec /usr/bin/python3 \"$@\"\n");
        snprintf(path, sizeof(path), "%s:/usr/bin", bin);
        assert_int_equal(setenv("PATH", path, 1), 0);
        init_config(&c, "python3");

        assert_int_equal(interpreter_resolve(&c, PTC_MODE_STRICT, &p, &d), 0);
        /* The real binary the shim execs, not the shim. */
        assert_string_equal(p, PYTHON);
        free(p);

        snprintf(cache, sizeof(cache), "%s/cache/ptc/interpreters.json", f->dir);
        assert_int_equal(read_file_at(AT_FDCWD, cache, 1 << 20, &text, &len), 0);
        j = json_loads(text, 0, NULL);
        assert_non_null(j);
        snprintf(prefix, sizeof(prefix), "%s|", shim);
        json_object_foreach(j, key, v)
        {
                if (strncmp(key, prefix, strlen(prefix)) == 0)
                        found_key = key;
        }
        assert_non_null(found_key);
        v = json_object_get(j, found_key);
        assert_string_equal(json_string_value(json_object_get(v, "executable")), PYTHON);
        assert_memory_equal(json_string_value(json_object_get(v, "version")), "3.", 2);

        /* The second resolve is served from the cache: prove it with a doctored entry. */
        assert_int_equal(json_object_set_new(v, "executable", json_string("/bin/sh")), 0);
        assert_int_equal(json_dump_file(j, cache, 0), 0);
        assert_int_equal(interpreter_resolve(&c, PTC_MODE_STRICT, &p, &d), 0);
        assert_string_equal(p, "/bin/sh");
        free(p);

        /* A changed shim (other size) is a new key: probed again. */
        write_script(shim, "#!/bin/sh\n# changed\nexec /usr/bin/python3 \"$@\"\n");
        assert_int_equal(interpreter_resolve(&c, PTC_MODE_STRICT, &p, &d), 0);
        assert_string_equal(p, PYTHON);
        free(p);
        json_decref(j);
        release_config(&c);
}

static void test_interpreter_resolve_shim_broken(void **state)
{
        struct fixture *f = *state;
        char bin[128], shim[160], path[300];
        struct ptc_config c;
        struct diag d = {};
        char *p = NULL;
        int r;

        make_dir(f->dir, "badbin", bin, sizeof(bin));
        snprintf(shim, sizeof(shim), "%s/python3", bin);
        write_script(shim, "#!/bin/sh\nexit 1\n");
        snprintf(path, sizeof(path), "%s:/usr/bin", bin);
        assert_int_equal(setenv("PATH", path, 1), 0);
        init_config(&c, "python3");
        r = interpreter_resolve(&c, PTC_MODE_STRICT, &p, &d);
        assert_true(r < 0);
        assert_non_null(strstr(d.message, shim));
        assert_non_null(strstr(d.message, "does not run"));
        release_config(&c);
}

/* A shim that never answers: the probe gives up at its deadline instead of hanging ptc. */
static void test_interpreter_resolve_shim_hangs(void **state)
{
        struct fixture *f = *state;
        char bin[128], shim[160], path[300];
        struct ptc_config c;
        struct diag d = {};
        char *p = NULL;
        usec_t start = now_usec();
        int r;

        make_dir(f->dir, "hangbin", bin, sizeof(bin));
        snprintf(shim, sizeof(shim), "%s/python3", bin);
        write_script(shim, "#!/bin/sh\nexec sleep 60\n");
        snprintf(path, sizeof(path), "%s:/usr/bin", bin);
        assert_int_equal(setenv("PATH", path, 1), 0);
        init_config(&c, "python3");
        r = interpreter_resolve(&c, PTC_MODE_STRICT, &p, &d);
        assert_true(r < 0);
        assert_non_null(strstr(d.message, shim));
        assert_true(now_usec() - start < 20 * USEC_PER_SEC);
        release_config(&c);
}

static void test_interpreter_resolve_project_venv(void **state)
{
        struct fixture *f = *state;
        char venv[128], bin[160], py[200];
        struct ptc_config c;
        struct diag d = {};
        char *p = NULL;

        if (access(PYTHON, X_OK) < 0)
                skip();
        init_config(&c, "python3");
        make_dir(f->dir, "venv", venv, sizeof(venv));
        make_dir(venv, "bin", bin, sizeof(bin));
        snprintf(py, sizeof(py), "%s/python", bin);
        assert_int_equal(setenv("VIRTUAL_ENV", venv, 1), 0);

        /* A broken venv interpreter: fall back to the configured one. */
        write_script(py, "#!/bin/sh\necho broken >&2\nexit 1\n");
        assert_int_equal(interpreter_resolve(&c, PTC_MODE_PROJECT, &p, &d), 0);
        assert_string_equal(p, PYTHON);
        free(p);

        /* Too old (3.6): also skipped. */
        write_script(py, "#!/bin/sh\necho /opt/old/python; echo 3.6.15\n");
        assert_int_equal(interpreter_resolve(&c, PTC_MODE_PROJECT, &p, &d), 0);
        assert_string_equal(p, PYTHON);
        free(p);

        /* A working one is used (its own path, as the venv's python). */
        write_script(py, "#!/bin/sh\n# working\nexec /usr/bin/python3 \"$@\"\n");
        assert_int_equal(interpreter_resolve(&c, PTC_MODE_PROJECT, &p, &d), 0);
        assert_string_equal(p, py);
        free(p);

        /* Strict mode ignores the venv. */
        assert_int_equal(interpreter_resolve(&c, PTC_MODE_STRICT, &p, &d), 0);
        assert_string_equal(p, PYTHON);
        free(p);

        /* A relative VIRTUAL_ENV is ignored. */
        assert_int_equal(setenv("VIRTUAL_ENV", "venv", 1), 0);
        assert_int_equal(interpreter_resolve(&c, PTC_MODE_PROJECT, &p, &d), 0);
        assert_string_equal(p, PYTHON);
        free(p);

        /* No venv: a conda prefix with only bin/python3. */
        (void) unsetenv("VIRTUAL_ENV");
        {
                char conda[128], cbin[160], cpy[200];
                make_dir(f->dir, "conda", conda, sizeof(conda));
                make_dir(conda, "bin", cbin, sizeof(cbin));
                snprintf(cpy, sizeof(cpy), "%s/python3", cbin);
                write_script(cpy, "#!/bin/sh\n# conda\nexec /usr/bin/python3 \"$@\"\n");
                assert_int_equal(setenv("CONDA_PREFIX", conda, 1), 0);
                assert_int_equal(interpreter_resolve(&c, PTC_MODE_PROJECT, &p, &d), 0);
                assert_string_equal(p, cpy);
                free(p);
        }
        release_config(&c);
}

static void test_interpreter_version(void **state)
{
        char *v = NULL;
        int dots = 0;

        if (access(PYTHON, X_OK) < 0)
                skip();
        assert_int_equal(interpreter_version(PYTHON, &v), 0);
        assert_memory_equal(v, "3.", 2);
        for (const char *s = v; *s; s++) {
                if (*s == '.')
                        dots++;
                else
                        assert_true(*s >= '0' && *s <= '9');
        }
        assert_int_equal(dots, 2);
        free(v);
        assert_true(interpreter_version("/nonexistent-ptc/python3", &v) < 0);
}

/* ---- spawn_opts: the options only some callers use ---- */

/* A path that does not exist: the fallback runs; neither exists: the message names the path. */
static void test_spawn_fallback_path(void **state)
{
        char *argv[] = {(char *) "sh", (char *) "-c", (char *) "echo fallback", NULL};
        struct spawn_opts o = {
                .path = "/nonexistent-ptc-dir/bash",
                .fallback_path = "/bin/sh",
                .argv = argv,
                .envp = environ,
                .stdin_fd = -1,
                .stderr_fd = -1,
        };
        int p[2], st;
        char buf[64];
        struct diag d = {};
        pid_t pid;

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        o.stdout_fd = p[1];
        assert_int_equal(spawn_process(&o, &pid, NULL, &d), 0);
        safe_close(p[1]);
        read_all(p[0], buf, sizeof(buf));
        safe_close(p[0]);
        assert_string_equal(buf, "fallback\n");
        st = wait_status(pid);
        assert_int_equal(WEXITSTATUS(st), 0);

        o.fallback_path = "/nonexistent-ptc-dir/sh";
        o.stdout_fd = -1;
        assert_int_equal(spawn_process(&o, &pid, NULL, &d), -ENOENT);
        assert_non_null(strstr(d.message, "cannot execute '/nonexistent-ptc-dir/bash'"));
        assert_no_children();
}

/* The exec mask is what the program starts with (a pid namespace's init keeps its set). */
static void test_spawn_exec_mask(void **state)
{
        char *argv[] = {(char *) "grep", (char *) "^SigBlk:", (char *) "/proc/self/status", NULL};
        struct spawn_opts o = {
                .path = "/bin/grep",
                .fallback_path = "/usr/bin/grep",
                .argv = argv,
                .envp = environ,
                .stdin_fd = -1,
                .stderr_fd = -1,
        };
        sigset_t mask;
        int p[2], st;
        char buf[128];
        struct diag d = {};
        pid_t pid;

        sigemptyset(&mask);
        sigaddset(&mask, SIGUSR1); /* 10: bit 9 */
        o.exec_mask = &mask;
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        o.stdout_fd = p[1];
        assert_int_equal(spawn_process(&o, &pid, NULL, &d), 0);
        safe_close(p[1]);
        read_all(p[0], buf, sizeof(buf));
        safe_close(p[0]);
        assert_string_equal(buf, "SigBlk:\t0000000000000200\n");
        st = wait_status(pid);
        assert_int_equal(WEXITSTATUS(st), 0);
}

static int hook_fails(const struct spawn_child *c, void *userdata)
{
        (void) c;
        (void) userdata;
        errno = EPERM;
        return SPAWN_STAGE_SETUP + 2;
}

static const char *hook_describe(const struct spawn_child_error *e, void *userdata,
                                 const char **ret_subject)
{
        *ret_subject = e->stage == SPAWN_STAGE_SETUP + 2 ? (const char *) userdata : NULL;
        return e->stage == SPAWN_STAGE_SETUP + 2 ? "hook: cannot do the second step" : NULL;
}

/* A failing setup hook's stage comes back, in the one message format; no exec, no child left. */
static void test_spawn_setup_hook_fails(void **state)
{
        char *argv[] = {(char *) "/bin/true", NULL};
        struct spawn_opts o = {
                .path = "/bin/true",
                .argv = argv,
                .envp = environ,
                .stdin_fd = -1,
                .stdout_fd = -1,
                .stderr_fd = -1,
                .setup = hook_fails,
                .userdata = (void *) "/the/subject",
                .describe = hook_describe,
        };
        struct spawn_child_error ce = {.stage = -1};
        struct spawn_proc sp;
        struct diag d = {};
        pid_t pid;

        assert_int_equal(spawn_start(&o, &sp, &d), 0);
        assert_int_equal(spawn_wait_setup(&sp, &o, -1, &ce, &d), -EPERM);
        assert_int_equal(ce.stage, SPAWN_STAGE_SETUP + 2);
        assert_int_equal(ce.error, EPERM);
        assert_int_equal(sp.errfd, -1);
        assert_int_equal(sp.pidfd, -1);
        assert_string_equal(d.message,
                            "hook: cannot do the second step '/the/subject': Operation not "
                            "permitted");
        assert_no_children();

        /* Without a describe callback: the common text. */
        o.describe = NULL;
        assert_int_equal(spawn_process(&o, &pid, NULL, &d), -EPERM);
        assert_string_equal(d.message, "child setup failed (?): Operation not permitted");
        assert_no_children();
}

static int hook_says_hello(const struct spawn_child *c, void *userdata)
{
        (void) c;
        (void) !write(1, userdata, strlen(userdata));
        return 0;
}

/* A hook that succeeds runs in the child, after stdio, before the exec. */
static void test_spawn_setup_hook_runs(void **state)
{
        char *argv[] = {(char *) "/bin/sh", (char *) "-c", (char *) "echo exec", NULL};
        struct spawn_opts o = {
                .path = "/bin/sh",
                .argv = argv,
                .envp = environ,
                .stdin_fd = -1,
                .stderr_fd = -1,
                .setup = hook_says_hello,
                .userdata = (void *) "hook\n",
        };
        int p[2], st;
        char buf[64];
        struct diag d = {};
        pid_t pid;

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        o.stdout_fd = p[1];
        assert_int_equal(spawn_process(&o, &pid, NULL, &d), 0);
        safe_close(p[1]);
        read_all(p[0], buf, sizeof(buf));
        safe_close(p[0]);
        assert_string_equal(buf, "hook\nexec\n");
        st = wait_status(pid);
        assert_int_equal(WEXITSTATUS(st), 0);
}

struct keep_check {
        int kept, dropped;
};

/* A child that never execs: exit 0 when the kept fd is open and the other one closed. */
static int hook_checks_fds(const struct spawn_child *c, void *userdata)
{
        const struct keep_check *k = userdata;

        (void) c;
        if (fcntl(k->kept, F_GETFD) < 0)
                _exit(10);
        if (fcntl(k->dropped, F_GETFD) >= 0 || errno != EBADF)
                _exit(11);
        _exit(0);
}

/* close_other_fds closes every fd but stdio, the error pipe and keep_fds before the hook. */
static void test_spawn_close_other_fds(void **state)
{
        struct keep_check k;
        struct spawn_opts o = {
                .stdin_fd = -1,
                .stdout_fd = -1,
                .stderr_fd = -1,
                .close_other_fds = true,
                .setup = hook_checks_fds,
                .userdata = &k,
        };
        struct spawn_proc sp;
        struct diag d = {};
        int a[2], b[2], st;

        assert_int_equal(pipe2(a, 0), 0); /* not CLOEXEC: only the close can drop it */
        assert_int_equal(pipe2(b, 0), 0);
        k = (struct keep_check){.kept = a[1], .dropped = b[1]};
        o.keep_fds = &k.kept;
        o.n_keep_fds = 1;
        assert_int_equal(spawn_start(&o, &sp, &d), 0);
        assert_int_equal(spawn_wait_setup(&sp, &o, 5000, NULL, &d), 0);
        st = wait_status(sp.pid);
        safe_close(sp.pidfd);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
        safe_close(a[0]);
        safe_close(a[1]);
        safe_close(b[0]);
        safe_close(b[1]);
}

static int hook_hangs(const struct spawn_child *c, void *userdata)
{
        char ch;

        (void) c;
        (void) !read(*(const int *) userdata, &ch, 1);
        _exit(0);
}

/* A setup that does not finish in time: -ETIMEDOUT, the child killed and reaped. */
static void test_spawn_setup_timeout(void **state)
{
        int p[2];
        struct spawn_opts o = {
                .stdin_fd = -1,
                .stdout_fd = -1,
                .stderr_fd = -1,
                .close_other_fds = true,
                .setup = hook_hangs,
                .userdata = &p[0],
        };
        struct spawn_proc sp;
        struct diag d = {};

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        o.keep_fds = &p[0];
        o.n_keep_fds = 1;
        assert_int_equal(spawn_start(&o, &sp, &d), 0);
        assert_int_equal(spawn_wait_setup(&sp, &o, 200, NULL, &d), -ETIMEDOUT);
        assert_non_null(strstr(d.message, "did not finish its setup"));
        assert_no_children();
        safe_close(p[0]);
        safe_close(p[1]);
}

/*
 * A cgroup the kernel refuses (a plain directory): started without it. Either clone3() says
 * no to CLONE_INTO_CGROUP, or there is no clone3() and the old clone() runs it plainly.
 */
static void test_spawn_cgroup_fallback(void **state)
{
        struct fixture *f = *state;
        char *argv[] = {(char *) "/bin/true", NULL};
        struct spawn_opts o = {
                .path = "/bin/true",
                .argv = argv,
                .envp = environ,
                .stdin_fd = -1,
                .stdout_fd = -1,
                .stderr_fd = -1,
                .cgroup_path = "(a plain directory)",
        };
        _cleanup_close_ int dir = -EBADF;
        struct diag d = {};
        pid_t pid;
        int st;

        dir = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(dir > 2);
        o.cgroup_fd = dir;
        assert_int_equal(spawn_process(&o, &pid, NULL, &d), 0);
        st = wait_status(pid);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
}

/*
 * clone_flags: pid 1 of a new pid namespace, with a pidfd from the clone; the parent-death
 * check there uses ptc's pidfd (getppid() is 0). Needs the privilege to make one.
 */
static void test_spawn_clone_pid_namespace(void **state)
{
        char *argv[] = {(char *) "/bin/sh", (char *) "-c", (char *) "echo $$", NULL};
        struct spawn_opts o = {
                .path = "/bin/sh",
                .argv = argv,
                .envp = environ,
                .stdin_fd = -1,
                .stderr_fd = -1,
                .die_with_parent = true,
                .clone_flags = CLONE_NEWPID | CLONE_NEWNS,
        };
        int p[2], st, pidfd = -1, r;
        char buf[64];
        struct diag d = {};
        pid_t pid;

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        o.stdout_fd = p[1];
        r = spawn_process(&o, &pid, &pidfd, &d);
        safe_close(p[1]);
        if (r == -EPERM || r == -EINVAL || r == -ENOSPC || r == -EUSERS) {
                safe_close(p[0]);
                skip();
        }
        assert_int_equal(r, 0);
        read_all(p[0], buf, sizeof(buf));
        safe_close(p[0]);
        assert_string_equal(buf, "1\n");
        assert_true(pidfd >= 0);
        safe_close(pidfd);
        st = wait_status(pid);
        assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_spawn_process_echo_stdout),
                cmocka_unit_test(test_spawn_process_exit_status),
                cmocka_unit_test_setup_teardown(test_spawn_process_cwd, setup, teardown),
                cmocka_unit_test_setup_teardown(test_spawn_process_bad_cwd, setup, teardown),
                cmocka_unit_test_setup_teardown(test_spawn_process_missing_executable, setup,
                                                teardown),
                cmocka_unit_test(test_spawn_process_clean_signal_state),
                cmocka_unit_test(test_spawn_process_new_session),
                cmocka_unit_test(test_spawn_process_only_stdio_fds),
                cmocka_unit_test(test_spawn_process_stdio_pipes),
                cmocka_unit_test(test_spawn_process_pass_fd),
                cmocka_unit_test(test_spawn_process_swapped_stdio),
                cmocka_unit_test(test_spawn_process_die_with_parent),
                cmocka_unit_test(test_spawn_fallback_path),
                cmocka_unit_test(test_spawn_exec_mask),
                cmocka_unit_test(test_spawn_setup_hook_fails),
                cmocka_unit_test(test_spawn_setup_hook_runs),
                cmocka_unit_test(test_spawn_close_other_fds),
                cmocka_unit_test(test_spawn_setup_timeout),
                cmocka_unit_test(test_spawn_clone_pid_namespace),
                cmocka_unit_test_setup_teardown(test_spawn_cgroup_fallback, setup, teardown),
                cmocka_unit_test(test_pidfd_open_compat),
                cmocka_unit_test(test_proc_children_two),
                cmocka_unit_test_setup_teardown(test_proc_tree_kill, setup, teardown),
                cmocka_unit_test_setup_teardown(test_proc_tree_kill_while_forking, setup, teardown),
                cmocka_unit_test_setup_teardown(test_proc_tree_signal_spares_root, setup, teardown),
                cmocka_unit_test_setup_teardown(test_interpreter_resolve_strict_path, setup_interp,
                                                teardown_interp),
                cmocka_unit_test_setup_teardown(test_interpreter_resolve_shim_cached, setup_interp,
                                                teardown_interp),
                cmocka_unit_test_setup_teardown(test_interpreter_resolve_shim_hangs, setup_interp,
                                                teardown_interp),
                cmocka_unit_test_setup_teardown(test_interpreter_resolve_shim_broken, setup_interp,
                                                teardown_interp),
                cmocka_unit_test_setup_teardown(test_interpreter_resolve_project_venv, setup_interp,
                                                teardown_interp),
                cmocka_unit_test_setup_teardown(test_interpreter_version, setup_interp,
                                                teardown_interp),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
