/* SPDX-License-Identifier: MIT */
/* fork_call(): a forked copy of ptc as a crash boundary (fork-call.h). */

#include "core/spawn/fork-call.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/fd-util.h"

#define READ_CHUNK (64 * 1024)

_noreturn_ static void run_copy(fork_call_fn fn, void *userdata, int out_fd, pid_t parent)
{
        static const int crash_signals[] = {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP};
        sigset_t none;
        int devnull, r;

        /* A crash must end the copy, whatever handler the host (a Python faulthandler, say)
         * installed; and the copy must not outlive ptc. */
        for (size_t i = 0; i < ELEMENTSOF(crash_signals); i++)
                (void) signal(crash_signals[i], SIG_DFL);
        sigemptyset(&none);
        (void) sigprocmask(SIG_SETMASK, &none, NULL);
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
                _exit(ESRCH);
        /* Only the result pipe stays: a copy of another thread's pipe end (a terminal
         * command's output) would keep that pipe open while the copy runs. What a crashing
         * library prints (an assertion's text) is not ptc's to show: the caller names the
         * crash. */
        if (out_fd <= STDERR_FILENO) /* ptc started without stdio: keep it off 0-2 */
                out_fd = fcntl(out_fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
        if (out_fd < 0 || close_all_fds_but(&out_fd, 1) < 0)
                _exit(errno);
        /* What it parses is a web page's: no controlling terminal (the user's) for it, and
         * /dev/null for stdio (docs/security.md, "Approvals"). */
        (void) setsid();
        devnull = open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (devnull < 0 || dup2(devnull, STDIN_FILENO) < 0 || dup2(devnull, STDOUT_FILENO) < 0 ||
            dup2(devnull, STDERR_FILENO) < 0)
                _exit(errno);
        r = fn(out_fd, userdata);
        _exit(r < 0 ? MIN(-r, 255) : 0);
}

/* Wait for @pid, killing it first when @kill_it; its status in *ret_status. */
static void reap(pid_t pid, bool kill_it, int *ret_status)
{
        if (kill_it)
                (void) kill(pid, SIGKILL);
        while (waitpid(pid, ret_status, 0) < 0 && errno == EINTR)
                ;
}

int fork_call(fork_call_fn fn, void *userdata, size_t max, usec_t deadline, int cancel_fd,
              char **ret, size_t *ret_len, int *ret_signal)
{
        _cleanup_buf_ struct buf out = BUF_INIT(max);
        _cleanup_close_ int rd = -EBADF;
        pid_t parent = getpid(), pid;
        int fds[2], status = 0, r = 0;

        if (pipe2(fds, O_CLOEXEC) < 0)
                return -errno;
        pid = fork();
        if (pid < 0) {
                r = -errno;
                safe_close(fds[0]);
                safe_close(fds[1]);
                return r;
        }
        if (pid == 0) {
                (void) close(fds[0]);
                run_copy(fn, userdata, fds[1], parent);
        }
        safe_close(fds[1]);
        rd = fds[0];

        for (;;) {
                char chunk[READ_CHUNK];
                ssize_t k;
                int n;

                n = fd_wait_either(rd, cancel_fd, deadline);
                if (n < 0) {
                        r = n;
                        break;
                }
                if (n & FD_WAIT_B) {
                        r = -ECANCELED;
                        break;
                }
                if (n == 0) {
                        r = -ETIMEDOUT;
                        break;
                }
                k = read(rd, chunk, sizeof(chunk));
                if (k < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (k < 0) {
                        r = -errno;
                        break;
                }
                if (k == 0)
                        break; /* the copy is done, or dead */
                if (buf_append(&out, chunk, (size_t) k) < 0) {
                        r = out.len + (size_t) k > max ? -E2BIG : -ENOMEM;
                        break;
                }
        }
        reap(pid, r < 0, &status);
        if (r < 0)
                return r;
        if (WIFSIGNALED(status)) {
                if (ret_signal)
                        *ret_signal = WTERMSIG(status);
                return -ECHILD;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return -(WIFEXITED(status) ? WEXITSTATUS(status) : EPROTO);
        *ret = buf_steal(&out, ret_len);
        return *ret ? 0 : -ENOMEM;
}
