/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Starting a child process the way ptc needs it: fork + exec with everything
 * prepared before fork (only async-signal-safe calls in between), a clean
 * signal state (ptc blocks signals for its signalfd and ignores SIGPIPE; the
 * child must not inherit either), its own session, death with ptc, a chosen
 * cwd and stdio, and exec errors reported back through a CLOEXEC pipe.
 */

#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "basic/diag.h"
#include "basic/macro.h"

struct spawn_opts {
        const char *path;            /* executable, absolute or relative to cwd */
        char *const *argv;           /* borrowed */
        char *const *envp;           /* borrowed */
        const char *cwd;             /* NULL = inherit */
        int stdin_fd;                /* -1: /dev/null */
        int stdout_fd;               /* -1: /dev/null */
        int stderr_fd;               /* -1: /dev/null; may equal stdout_fd */
        bool new_session;            /* setsid() */
        bool die_with_parent;        /* PR_SET_PDEATHSIG(SIGKILL) */
        const struct rlimit *nofile; /* RLIMIT_NOFILE for the child; NULL = inherit */
        int pass_fd;                 /* > 2: becomes fd 3 in the child (a side channel, e.g.
                                      * ptc run --progress-fd 3); 0..2 or -1: none */
};

/*
 * Start the process. On success *ret_pid is its pid and *ret_pidfd (when
 * non-NULL) a pidfd for it, or -1 if the kernel has none (ENOSYS, e.g. under
 * valgrind): then wait for SIGCHLD instead. The caller reaps the child.
 * Errors: -errno of the failing step with a message in @reterr ("chdir to
 * '/x' failed", "exec '/usr/bin/python3' failed").
 */
_must_check_ int spawn_process(const struct spawn_opts *o, pid_t *ret_pid, int *ret_pidfd,
                               struct diag *reterr);
