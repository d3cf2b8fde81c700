/* SPDX-License-Identifier: MIT */
#include "core/spawn/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/compat/close-range.h"
#include "basic/fd-util.h"
#include "basic/process-util.h"

enum stage {
        STAGE_SIGNALS,
        STAGE_SESSION,
        STAGE_PDEATHSIG,
        STAGE_STDIO,
        STAGE_RLIMIT,
        STAGE_CHDIR,
        STAGE_EXEC,
};

struct child_error {
        int stage;
        int error;
};

_noreturn_ static void child_fail(int errpipe, int stage)
{
        struct child_error e = {.stage = stage, .error = errno};

        (void) !write(errpipe, &e, sizeof(e));
        _exit(127);
}

/* Move @fd to @target; the result must not be CLOEXEC. */
static int move_fd(int fd, int target)
{
        if (fd == target)
                return fcntl(fd, F_SETFD, 0);
        return dup2(fd, target) < 0 ? -1 : 0;
}

_noreturn_ static void child_main(const struct spawn_opts *o, pid_t parent, int errpipe,
                                  int devnull)
{
        sigset_t none;
        int in = o->stdin_fd >= 0 ? o->stdin_fd : devnull;
        int out = o->stdout_fd >= 0 ? o->stdout_fd : devnull;
        int err = o->stderr_fd >= 0 ? o->stderr_fd : devnull;

        /* ptc blocks SIGINT/SIGTERM/SIGCHLD (signalfd) and ignores SIGPIPE. */
        sigemptyset(&none);
        if (sigprocmask(SIG_SETMASK, &none, NULL) < 0)
                child_fail(errpipe, STAGE_SIGNALS);
        for (int s = 1; s < NSIG; s++)
                if (s != SIGKILL && s != SIGSTOP)
                        (void) signal(s, SIG_DFL);

        if (o->new_session && setsid() < 0)
                child_fail(errpipe, STAGE_SESSION);
        if (o->die_with_parent) {
                if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                        child_fail(errpipe, STAGE_PDEATHSIG);
                /* The parent may have died before prctl took effect. */
                if (getppid() != parent)
                        _exit(127);
        }

        /*
         * dup2 onto 0..2 in an order that cannot clobber a source: copy the
         * sources above 2 first when they sit in the target range.
         */
        if (in < 3 && in != 0)
                in = fcntl(in, F_DUPFD_CLOEXEC, 3);
        if (out < 3 && out != 1)
                out = fcntl(out, F_DUPFD_CLOEXEC, 3);
        if (err < 3 && err != 2)
                err = fcntl(err, F_DUPFD_CLOEXEC, 3);
        if (in < 0 || out < 0 || err < 0 || move_fd(in, 0) < 0 || move_fd(out, 1) < 0 ||
            move_fd(err, 2) < 0)
                child_fail(errpipe, STAGE_STDIO);
        if (o->pass_fd > 2) {
                if (o->pass_fd == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(o->pass_fd, 3) < 0)
                        child_fail(errpipe, STAGE_STDIO);
        }
        /* Nothing of ptc's but 0-2 (and the passed fd) may cross exec, even leaked fds. */
        (void) close_range_compat(o->pass_fd > 2 ? 4U : 3U, ~0U, CLOSE_RANGE_CLOEXEC);

        if (o->nofile && setrlimit(RLIMIT_NOFILE, o->nofile) < 0)
                child_fail(errpipe, STAGE_RLIMIT);
        if (o->cwd && chdir(o->cwd) < 0)
                child_fail(errpipe, STAGE_CHDIR);
        execve(o->path, o->argv, o->envp);
        child_fail(errpipe, STAGE_EXEC);
}

int spawn_process(const struct spawn_opts *o, pid_t *ret_pid, int *ret_pidfd, struct diag *reterr)
{
        _cleanup_close_ int devnull = -EBADF;
        int errpipe[2];
        struct child_error ce;
        pid_t parent = getpid(), pid;
        ssize_t k;

        devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (devnull < 0)
                return diag_set(reterr, -errno, "cannot open /dev/null: %s", strerror(errno));
        if (pipe2(errpipe, O_CLOEXEC) < 0)
                return diag_set(reterr, -errno, "pipe2 failed: %s", strerror(errno));

        pid = fork();
        if (pid < 0) {
                int r = -errno;
                safe_close(errpipe[0]);
                safe_close(errpipe[1]);
                return diag_set(reterr, r, "fork failed: %s", strerror(-r));
        }
        if (pid == 0) {
                safe_close(errpipe[0]);
                child_main(o, parent, errpipe[1], devnull);
        }
        safe_close(errpipe[1]);

        do
                k = read(errpipe[0], &ce, sizeof(ce));
        while (k < 0 && errno == EINTR);
        safe_close(errpipe[0]);
        if (k == (ssize_t) sizeof(ce)) {
                static const char *const what[] = {
                        [STAGE_SIGNALS] = "resetting signals",
                        [STAGE_SESSION] = "setsid",
                        [STAGE_PDEATHSIG] = "setting the parent-death signal",
                        [STAGE_STDIO] = "setting up stdio",
                        [STAGE_RLIMIT] = "restoring the open-files limit",
                        [STAGE_CHDIR] = "changing to the working directory",
                        [STAGE_EXEC] = "exec",
                };
                (void) waitpid(pid, NULL, 0);
                if (ce.stage == STAGE_CHDIR)
                        return diag_set(reterr, -ce.error, "cannot change to directory '%s': %s",
                                        o->cwd, strerror(ce.error));
                if (ce.stage == STAGE_EXEC)
                        return diag_set(reterr, -ce.error, "cannot execute '%s': %s", o->path,
                                        strerror(ce.error));
                return diag_set(reterr, -ce.error, "child setup failed (%s): %s",
                                ce.stage >= 0 && ce.stage <= STAGE_EXEC ? what[ce.stage] : "?",
                                strerror(ce.error));
        }

        if (ret_pidfd) {
                int fd = pidfd_open_compat(pid);
                *ret_pidfd = fd >= 0 ? fd : -1;
        }
        *ret_pid = pid;
        return 0;
}
