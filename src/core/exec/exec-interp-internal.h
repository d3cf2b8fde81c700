/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * An interpreter's insides, shared by its lifetime (exec-interp.c: start, fork, kill, free) and
 * its cells (exec-run-cell.c).
 *
 * An interpreter and the forks made of it share one confinement, the box: one sandbox init (the
 * origin is the init's script; a fork is a grandchild of the interpreter it was made of,
 * reparented to the init), one cgroup, one staging directory. The box goes with the last of
 * them. Each interpreter has its own process, control socket, RPC socket path and
 * cell files.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/exec/exec-interp.h"
#include "core/exec/staging.h"
#include "core/sandbox/cgroup.h"

struct interp_box {
        unsigned refs;  /* interpreters using the box; __atomic */
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

struct exec_interp {
        struct remote_run *remote; /* a session on a remote backend: its channel, and no box */
        struct interp_box *box;
        unsigned index;    /* 0: the box's origin; N: its Nth fork */
        pid_t pid;         /* the interpreter, as ptc sees it (SCM_CREDENTIALS of "ready") */
        int pidfd;         /* of @pid, or -1 */
        int ctl_fd;        /* the control socket */
        char *socket_path; /* where each cell's RPC server listens */
        unsigned cells;
        bool lost;
};

/*
 * The fd that turns readable when the interpreter is gone: the init's status pipe for the origin
 * (which also says how it ended), the interpreter's pidfd for a fork.
 */
int interp_death_fd(const struct exec_interp *k);

/* Kill the interpreter process and all it started (the whole box when nothing else uses
 * it); it is lost from now on. Reaps what is ptc's to reap. */
void interp_kill(struct exec_interp *k);

/*
 * The exit status of an interpreter that is gone, when known (the origin's, from its init; a
 * fork's is its init's business): true with *ret_status.
 */
bool interp_exit_status(struct exec_interp *k, int *ret_status);

/* Send @text and @n_fds fds (SCM_RIGHTS) on the interpreter's control socket. 0 or -errno. */
int interp_send(struct exec_interp *k, const char *text, const int *fds, size_t n_fds);

/* Stop the cell running in the interpreter: KeyboardInterrupt in it, SIGTERM to what it started. */
void interp_interrupt(struct exec_interp *k);
