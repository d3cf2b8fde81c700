/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A kernel's insides, shared by its lifetime (exec-kernel.c: start, fork, kill, free) and
 * its cells (exec-run-cell.c).
 *
 * A kernel and the forks made of it share one confinement, the box: one sandbox init (the
 * origin is the init's script; a fork is a grandchild of the kernel it was made of,
 * reparented to the init), one cgroup, one staging directory. The box goes with the last of
 * them. Each kernel has its own interpreter process, control socket, RPC socket path and
 * cell files.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/exec/exec-kernel.h"
#include "core/exec/staging.h"
#include "core/sandbox/cgroup.h"

struct kernel_box {
        unsigned refs;  /* kernels using the box; __atomic */
        unsigned forks; /* forks made in it so far (names their files); __atomic */
        struct staging staging;
        char **env;
        char *cwd; /* the cells' working directory, fixed at the start */
        pid_t pid; /* the init */
        int pidfd;
        int status_fd; /* the origin's status, as soon as it is gone (outlive_script) */
        bool rlimits;  /* under the rlimits layer, as a script's CPU time is limited */
        struct run_cgroup cgroup;
        char **warnings; /* of the start */
};

struct exec_kernel {
        struct remote_run *remote; /* a session on a remote backend: its channel, and no box */
        struct kernel_box *box;
        unsigned index;    /* 0: the box's origin; N: its Nth fork */
        pid_t pid;         /* the interpreter, as ptc sees it (SCM_CREDENTIALS of "ready") */
        int pidfd;         /* of @pid, or -1 */
        int ctl_fd;        /* the control socket */
        char *socket_path; /* where each cell's RPC server listens */
        unsigned cells;
        bool lost;
};

/*
 * The fd that turns readable when the kernel is gone: the init's status pipe for the origin
 * (which also says how it ended), the interpreter's pidfd for a fork.
 */
int kernel_death_fd(const struct exec_kernel *k);

/* Kill the kernel's interpreter and all it started (the whole box when nothing else uses
 * it); it is lost from now on. Reaps what is ptc's to reap. */
void kernel_kill(struct exec_kernel *k);

/*
 * The exit status of a kernel that is gone, when known (the origin's, from its init; a
 * fork's is its init's business): true with *ret_status.
 */
bool kernel_exit_status(struct exec_kernel *k, int *ret_status);

/* Send @text and @n_fds fds (SCM_RIGHTS) on the kernel's control socket. 0 or -errno. */
int kernel_send(struct exec_kernel *k, const char *text, const int *fds, size_t n_fds);

/* Stop the cell running in the kernel: KeyboardInterrupt in it, SIGTERM to what it started. */
void kernel_interrupt(struct exec_kernel *k);
