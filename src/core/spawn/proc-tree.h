/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Finding and signalling the processes a run started: the tree below a root that is the
 * caller's own child (a run's init, sandbox-init.c), walked through
 * /proc/<pid>/task/<tid>/children. Only that tree: a process is a member when its parent is
 * one, checked after a pidfd pins it, and it is signalled through that pidfd, so neither a
 * process the caller did not start (a child ptc inherited from the shell that exec'd it) nor
 * one that took a member's pid number is ever signalled. ptc is no child subreaper: what a
 * run leaves behind is reparented to the run's own init, never to ptc (docs/ARCHITECTURE.md,
 * "Processes"). Any thread may call these.
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
 * Send @sig to every process of @root's tree, to @root itself only with @include_root.
 * Returns the number of processes signalled.
 */
int proc_tree_signal(pid_t root, bool include_root, int sig);

/*
 * SIGKILL @root's whole tree, @root too with @include_root: SIGSTOP first, walk after walk,
 * until a walk finds no process it has not stopped (a stopped process cannot fork, so nothing
 * escapes the kill), then SIGKILL. Without @include_root the root keeps running, so a
 * subreaper root reaps what dies below it. Never waits and never reaps. Returns the number
 * of processes killed.
 */
int proc_tree_kill(pid_t root, bool include_root);

/*
 * Wait until no process of group @pgid is alive (zombies do not count: their reaper is not
 * ours to wait for), at most until @deadline (CLOCK_MONOTONIC). For after a SIGKILL to the
 * group: a process killed is gone only once it has run, which under load is not at once.
 * The members are found in /proc and waited for on their pidfds. 0, or -ETIMEDOUT.
 */
int proc_group_wait_gone(pid_t pgid, usec_t deadline);
