/* SPDX-License-Identifier: MIT */
#include "core/command/pidns-init.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/process-util.h"
#include "core/spawn/spawn.h"

extern char **environ;

static bool available;

void pidns_init_set_available(void)
{
        __atomic_store_n(&available, true, __ATOMIC_RELAXED);
}

bool pidns_init_is_available(void)
{
        return __atomic_load_n(&available, __ATOMIC_RELAXED);
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

/*
 * The signals stay blocked (since before our exec) and are taken with sigwaitinfo(): none is
 * lost between a check and a wait, as with a handler that sets a flag.
 */
void pidns_init_main(int argc, char **argv)
{
        sigset_t wait_set;
        pid_t child;

        if (argc < 4)
                _exit(127);
        init_signal_set(&wait_set);
        (void) sigprocmask(SIG_BLOCK, &wait_set, NULL);

        {
                /* Dies with us; stdio is ours; the exec's mask is empty (spawn.h). */
                struct spawn_opts so = {
                        .path = argv[1],
                        .fallback_path = argv[2][0] ? argv[2] : NULL,
                        .argv = argv + 3,
                        .envp = environ,
                        .stdin_fd = 0,
                        .stdout_fd = 1,
                        .stderr_fd = 2,
                        .die_with_parent = true,
                        .pass_fd = -1,
                };

                if (spawn_process(&so, &child, NULL, NULL) < 0)
                        _exit(127);
        }

        for (;;) {
                siginfo_t si;
                pid_t pid;
                int st, sig = sigwaitinfo(&wait_set, &si);

                if (sig < 0) {
                        if (errno == EINTR)
                                continue;
                        _exit(127);
                }
                if (sig != SIGCHLD) {
                        /* Normally the signal reached the whole process group already. */
                        (void) kill(child, sig);
                        continue;
                }
                while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
                        if (pid == child) {
                                /* pid 1 cannot die of its own signal: N shows as 128+N. */
                                if (WIFEXITED(st))
                                        _exit(WEXITSTATUS(st));
                                _exit(128 + (WIFSIGNALED(st) ? WTERMSIG(st) : SIGKILL));
                        }
                if (pid < 0 && errno == ECHILD)
                        _exit(127);
        }
}
