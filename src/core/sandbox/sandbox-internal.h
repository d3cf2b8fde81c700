/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What the two halves of the confined child share: sandbox.c (the clone, the child's
 * credentials, its init and the script's own setup, the parent's reading of a failure) and
 * sandbox-root.c (the new root built from the plan, sandbox-plan.h). A step of the child that
 * fails reports its stage, errno and mount entry through spawn's error pipe (spawn.h) and
 * exits (fail()).
 */

#include <errno.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include "basic/macro.h"
#include "core/sandbox/sandbox-plan.h"
#include "core/spawn/spawn.h"

/* One step of the child's setup, reported to the parent when it fails. */
enum stage {
        ST_SIGNALS,
        ST_PRIVATE,
        ST_OPEN_SOURCE,
        ST_BASE_TMPFS,
        ST_MKPOINT,
        ST_BIND,
        ST_COPY,
        ST_READONLY,
        ST_TMPFS,
        ST_PROC,
        ST_SYMLINK,
        ST_PIVOT,
        ST_ROOT_RO,
        ST_HOSTNAME,
        ST_DROP_IDS,
        ST_USERNS,
        ST_INIT,
        ST_FORK,
        ST_STDIO,
        ST_RLIMIT,
        ST_CHDIR,
        ST_NNP,
        ST_LANDLOCK,
        ST_SECCOMP,
        ST_EXEC,
};

/*
 * Report the failed @stage (with errno, and the mount entry @index or -1) through spawn's
 * error pipe (SPAWN_STAGE_SETUP + @stage) and exit.
 */
_noreturn_ _no_sanitize_address_ static inline void fail(int errfd, int stage, int index)
{
        spawn_child_fail(errfd, SPAWN_STAGE_SETUP + stage, index);
}

/*
 * The child's step @s ended now (sandbox_timings), when the parent asked for timings: a store
 * into the page it reads after our exec. clock_gettime() is the vDSO's, safe in a clone.
 */
_no_sanitize_address_ static inline void step_done(const struct sandbox_plan *p,
                                                   enum sandbox_step s)
{
        struct timespec ts;

        if (!p->step_end || clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
                return;
        __atomic_store_n(&p->step_end[s],
                         (usec_t) ts.tv_sec * USEC_PER_SEC + (usec_t) ts.tv_nsec / 1000,
                         __ATOMIC_RELEASE);
}

/*
 * Build the new root of @p in the child's mount namespace and pivot into it (read-only, host
 * name "ptc"). Returns only on success; a failed step is reported on @errfd (fail()).
 */
void sandbox_build_root(struct sandbox_plan *p, int errfd);

/*
 * The script's own setup in its process (limits, NO_NEW_PRIVS, Landlock, seccomp) and its
 * exec. A failed step is reported on @errfd.
 */
_noreturn_ void sandbox_exec_script(const struct sandbox_opts *o, struct sandbox_plan *p,
                                    int errfd);

/*
 * Become the start's init (sandbox-init.c): start the script as our child, reap, forward a
 * stop, and when the script is gone write its wait status to @status_fd and exit. With
 * @own_pid_ns we are pid 1 of a pid namespace; without, a child subreaper that kills every
 * descendant before it exits (and when ptc dies). With @shares_memory we run in ptc's memory
 * (spawn_opts.share_memory): @o and @p are read only until the script's exec, and nothing of
 * ptc's is written. A failed step is reported on @errfd.
 */
_noreturn_ void sandbox_run_init(const struct sandbox_opts *o, struct sandbox_plan *p, int errfd,
                                 int status_fd, bool own_pid_ns, bool shares_memory);
