/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A cgroup v2 leaf per confined run (docs/contracts.md 8, docs/isolation.md "cgroup v2").
 *
 * Where ptc may create cgroups below its own (root in the root cgroup of its cgroup namespace,
 * or a cgroup delegated to it: writable for a user, marked with the trusted.delegate xattr
 * for root), every confined run starts inside a leaf of its own through
 * clone3(CLONE_INTO_CGROUP), so no process of the run starts outside it. The leaf is as
 * strong as the other layers: its control files belong to the run's user when ptc is not
 * root, and only the namespaces (no /sys inside) or Landlock (read-only outside the working
 * directory) keep the script from raising its limits or moving itself out. The leaf gets
 * memory.max (swap off, OOM kills the whole run) and pids.max when the memory and pids
 * controllers are there, and cgroup.kill ends the run at once. The rlimits stay either way:
 * the cgroup adds to them and never replaces them, so a machine without a delegated cgroup
 * (our CI machines: cgroup v1 for memory and pids) is still bounded.
 *
 * cgroup v2 lets a cgroup other than the root enable controllers for its children only while
 * it holds no process itself. A delegated cgroup usually holds the process it was made for
 * (here: ptc), so when the controllers are offered but not enabled and ptc is the only process
 * there, ptc moves itself into a leaf "ptc-main" and enables them, as systemd asks of a
 * process it delegates a cgroup to.
 */

#include <stdint.h>
#include <sys/types.h>

#include "basic/diag.h"
#include "basic/macro.h"
#include "basic/time-util.h"

enum {
        CGROUP_LIMIT_MEMORY = 1u << 0, /* memory.max, memory.swap.max, memory.oom.group */
        CGROUP_LIMIT_PIDS = 1u << 1,   /* pids.max */
};

/* Where the runs' leaves go. */
struct cgroup_base {
        char *path;      /* the cgroup the leaves are made in; NULL: no cgroup for the runs */
        unsigned limits; /* CGROUP_LIMIT_* the leaves get */
        char why[320];   /* what is used, or why not: for ptc doctor */
};

/*
 * The process's cgroup base, found and prepared on first use (may move ptc, see above) and
 * kept for the process's life. Thread-safe. Never fails: ->path is NULL when there is no
 * usable cgroup, with the reason in ->why.
 */
const struct cgroup_base *cgroup_base(void);

/*
 * The work of cgroup_base(), on explicit inputs so it can be tested on a directory tree that
 * stands in for cgroupfs: @mountinfo and @self_cgroup are the texts of /proc/self/mountinfo
 * and /proc/self/cgroup, @self the pid that may move itself, @euid its effective uid. Fills *ret
 * (->path owned: cgroup_base_release()). Returns 0 (usable or not: see ->path) or -ENOMEM.
 */
_must_check_ int cgroup_base_prepare(const char *mountinfo, const char *self_cgroup, pid_t self,
                                     uid_t euid, struct cgroup_base *ret);
void cgroup_base_release(struct cgroup_base *b);

/* One run's leaf. */
struct run_cgroup {
        char *path; /* owned; NULL when the run has none */
        int fd;     /* the directory, for clone3's cgroup field */
};

#define RUN_CGROUP_NULL ((struct run_cgroup){.path = NULL, .fd = -1})

/*
 * Create a leaf below @b with the limits @b allows: memory.max @memory_bytes and pids.max
 * @pids (0: not set). Returns 0, or -errno with a message in @reterr (the caller runs without
 * a cgroup then).
 */
_must_check_ int run_cgroup_create(const struct cgroup_base *b, uint64_t memory_bytes,
                                   uint64_t pids, struct run_cgroup *ret, struct diag *reterr);

/*
 * The leaf a run starts in, below cgroup_base(): run_cgroup_create() there, or NULL (and
 * *ret RUN_CGROUP_NULL) without a base or when the leaf cannot be made, which is logged as a
 * warning naming @who ("isolation", "terminal"). Returns @ret or NULL.
 */
const struct run_cgroup *run_cgroup_start(uint64_t memory_bytes, uint64_t pids, const char *who,
                                          struct run_cgroup *ret);

/* run_cgroup_start() that prints nothing: why the leaf could not be made is in @why ("" when
 * there is no base: ptc makes no cgroups here). */
const struct run_cgroup *run_cgroup_try(uint64_t memory_bytes, uint64_t pids,
                                        struct run_cgroup *ret, struct diag *why);

/*
 * Write the limits @limits (CGROUP_LIMIT_*) allows into the cgroup directory @fd:
 * memory.max @memory_bytes with memory.swap.max 0 and memory.oom.group 1, pids.max @pids;
 * a value of 0 is not written. Returns 0 or -errno.
 */
_must_check_ int run_cgroup_set_limits(int fd, unsigned limits, uint64_t memory_bytes,
                                       uint64_t pids);

/* Kill every process in the leaf (cgroup.kill; without it, SIGKILL to each). Does not wait. */
void run_cgroup_kill(const struct run_cgroup *c);

/*
 * Kill what is left, wait up to @timeout for the leaf to empty (cgroup.events, no polling
 * interval), remove it and reset *c to RUN_CGROUP_NULL. Returns 0, or -errno when the leaf
 * could not be removed (it is left behind; the reason is logged).
 */
int run_cgroup_destroy(struct run_cgroup *c, usec_t timeout);

static inline void run_cgroup_destroyp(struct run_cgroup *c)
{
        (void) run_cgroup_destroy(c, 2 * USEC_PER_SEC);
}
