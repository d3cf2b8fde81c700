/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Finding and killing every process an execution started, including
 * daemonized ones. ptc is a child subreaper (PR_SET_CHILD_SUBREAPER), so a
 * process that double-forks and calls setsid() is reparented to ptc when its
 * parent dies instead of escaping to init. The kernel attaches such orphans
 * to ptc's main thread; the script is forked from the main thread too, while
 * tool subprocesses (terminal) are forked from worker threads and reaped by
 * them. So "children of ptc's main thread" is exactly the script and the
 * orphans, and ptc may reap those without stealing a tool's child.
 *
 * That holds for a process that runs one execution at a time on its main thread (ptc run,
 * PTC_ENGINE_REAP_ORPHANS). A library host may run executions on any threads at once: it
 * passes @orphans_too false, and only @root's own tree is walked (any thread may do that).
 * With @orphans_too, or for proc_reap_orphans(), run on the main thread.
 */

#include <stdbool.h>
#include <sys/types.h>

#include "basic/macro.h"
#include "basic/time-util.h"

/*
 * Children of every thread of @pid (from /proc/<pid>/task/<tid>/children).
 * With @main_thread_only only /proc/<pid>/task/<pid>/children. Caller frees
 * *ret. Returns the count or -errno.
 */
_must_check_ int proc_children(pid_t pid, bool main_thread_only, pid_t **ret);

/*
 * Send @sig to @root's whole tree and, with @orphans_too, to every orphan
 * attached to ptc (and their trees); to @root itself only with @include_root.
 * @root may be 0 (only orphans). Returns the number of processes signalled.
 */
int proc_signal_execution(pid_t root, bool include_root, bool orphans_too, int sig);

/*
 * SIGKILL @root's tree and, with @orphans_too, all orphans, repeatedly, until
 * no process is left or @timeout passes; reaps the orphans (never @root: its
 * owner reaps it via its pidfd). Returns 0, or -ETIMEDOUT if processes survived.
 */
int proc_kill_execution(pid_t root, bool orphans_too, usec_t timeout);

/*
 * Wait until no process of group @pgid is alive (zombies do not count: their reaper is not
 * ours to wait for), at most until @deadline (CLOCK_MONOTONIC). For after a SIGKILL to the
 * group: a process killed is gone only once it has run, which under load is not at once.
 * The members are found in /proc and waited for on their pidfds. 0, or -ETIMEDOUT.
 */
int proc_group_wait_gone(pid_t pgid, usec_t deadline);

/* Reap every exited orphan attached to ptc's main thread, except @keep. */
void proc_reap_orphans(pid_t keep);
