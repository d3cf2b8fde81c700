/* SPDX-License-Identifier: MIT */
#pragma once

/* Between command.c (the run) and command-start.c (how a command is started). */

#include <stdbool.h>
#include <sys/types.h>

#include "basic/macro.h"
#include "core/command/command.h"
#include "core/sandbox/cgroup.h"

/* A started command, as command_run() supervises it. */
struct command_child {
        pid_t pid;     /* the command, its pid namespace's init, or its own (sandbox) init */
        int pidfd;     /* owned; -1 when the kernel gave none (command_run() fails then) */
        int status_fd; /* owned; with an init that reports the command's status
                        * (sandbox_read_status()), else -1 */
        struct run_cgroup cgroup; /* owned: the strict sandbox's leaf, destroyed after the reap */
};

#define COMMAND_CHILD_NULL \
        ((struct command_child){.pid = 0, .pidfd = -1, .status_fd = -1, .cgroup = RUN_CGROUP_NULL})

/*
 * Start @o with stdout (and stderr when merged) on @out_w, which the caller keeps and closes
 * after: in its own session, dying with ptc; under a pid namespace's init, the sandbox's
 * init or an init of its own as @o asks (command.h). The exec watch's filter and the path
 * rules are installed last before the exec. 0, or -errno with @error (@error_size bytes)
 * set when the sandbox said why.
 */
_must_check_ int command_start(const struct command_opts *o, int out_w, struct command_child *ret,
                               char *error, size_t error_size);

/*
 * Signal the command: its process group (the shell's own), or with an init (status_fd open)
 * the init, which forwards a SIGTERM to all it runs. SIGKILL goes to the init's whole tree
 * from here: without a pid namespace, an init killed alone would leave the command running
 * without one (sandbox.h). The child must not be reaped yet: its pid and group numbers are
 * its own only until then.
 */
void command_signal(const struct command_child *c, int sig);

/* Close the fds and destroy the cgroup; the child must have been reaped. */
void command_child_done(struct command_child *c);
