/* SPDX-License-Identifier: MIT */
#include "core/tools/pidns-init.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static bool available;
static volatile sig_atomic_t pending_signal;

void pidns_init_set_available(void)
{
        __atomic_store_n(&available, true, __ATOMIC_RELAXED);
}

bool pidns_init_is_available(void)
{
        return __atomic_load_n(&available, __ATOMIC_RELAXED);
}

static void on_signal(int sig)
{
        pending_signal = sig;
}

int pidns_probe(void)
{
        int st;
        pid_t pid =
                (pid_t) syscall(SYS_clone, (unsigned long) (CLONE_NEWPID | CLONE_NEWNS | SIGCHLD),
                                0UL, NULL, NULL, 0UL);

        if (pid < 0)
                return -errno;
        if (pid == 0) {
                if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0 ||
                    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                        _exit(errno & 0xff ?: 1);
                _exit(0);
        }
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
                return 0;
        return WIFEXITED(st) ? -WEXITSTATUS(st) : -EIO;
}

void pidns_init_main(int argc, char **argv)
{
        struct sigaction sa = {.sa_handler = on_signal};
        sigset_t none;
        pid_t child;
        int status = 0;

        if (argc < 4)
                _exit(127);
        /*
         * Handlers before the fork, so a stop that arrives early is not lost: the command
         * gets the default dispositions back before its exec.
         */
        sigemptyset(&sa.sa_mask);
        (void) sigaction(SIGTERM, &sa, NULL);
        (void) sigaction(SIGINT, &sa, NULL);
        (void) sigaction(SIGHUP, &sa, NULL);

        child = fork();
        if (child < 0)
                _exit(127);
        if (child == 0) {
                struct sigaction dfl = {.sa_handler = SIG_DFL};

                (void) sigaction(SIGTERM, &dfl, NULL);
                (void) sigaction(SIGINT, &dfl, NULL);
                (void) sigaction(SIGHUP, &dfl, NULL);
                sigemptyset(&none);
                (void) sigprocmask(SIG_SETMASK, &none, NULL);
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                execve(argv[1], argv + 3, environ);
                if (errno == ENOENT && argv[2][0])
                        execve(argv[2], argv + 3, environ);
                _exit(127);
        }

        for (;;) {
                int st;
                pid_t pid = waitpid(-1, &st, 0);

                if (pid == child) {
                        status = st;
                        break;
                }
                if (pid < 0 && errno == EINTR) {
                        /* Normally the signal reached the whole process group already. */
                        if (pending_signal)
                                (void) kill(child, pending_signal);
                        pending_signal = 0;
                        continue;
                }
                if (pid < 0)
                        _exit(127);
        }
        /* pid 1 cannot die of its own signal: a signal N shows as 128+N, as in a shell. */
        if (WIFEXITED(status))
                _exit(WEXITSTATUS(status));
        _exit(128 + (WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL));
}
