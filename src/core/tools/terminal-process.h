/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Running a helper process as the terminal tool does (terminal.c): also used by lint.c for the
 * Python linter. Any thread.
 */

#include <stdbool.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "core/tools/exec-supervisor.h"

struct capture;

struct sandbox_opts;     /* core/sandbox/sandbox.h */
struct landlock_protect; /* core/sandbox/landlock.h */

struct tool_process {
        const char *path;          /* executable, absolute */
        const char *fallback_path; /* tried when @path does not exist (ENOENT); may be NULL */
        char *const *argv;         /* borrowed */
        char *const *envp;         /* borrowed; NULL = empty environment */
        const char *cwd;           /* NULL = "/" */
        int stdin_fd;              /* -1 = /dev/null */
        bool merge_stderr;         /* stderr into the output pipe; else /dev/null */
        usec_t deadline;           /* CLOCK_MONOTONIC; USEC_INFINITY = none */
        int cancel_fd;             /* POLLIN = cancel; -1 = none */
        struct capture *output;    /* where the output goes; NULL = discarded */
        /*
         * Start it as pid 1 of new pid and mount namespaces with a fresh /proc: it sees its
         * own processes only, never ptc (root only: unprivileged, a pid namespace needs a
         * user namespace, which would change file ownership and break sudo). Where the
         * kernel refuses (a container, no CAP_SYS_ADMIN), a plain start, once and for all.
         */
        bool own_pid_namespace;
        /*
         * Without a pid namespace (and with stdin_fd -1): start it under an init of its own,
         * a child subreaper that kills everything it left behind when it exits, daemons that
         * double-forked and left its process group included (sandbox.h). So what a command
         * started never outlives it, in any process (a library host, ptc mcp, where no
         * process-wide subreaper catches it later).
         */
        bool contain;
        /*
         * Confine it in the script's sandbox instead (terminal.isolation: strict): path,
         * argv, envp, cwd and the limits come from here, the stdio fds are set by
         * tool_process_run(). Borrowed; NULL = not confined.
         */
        const struct sandbox_opts *sandbox;
        /* The policy's path rules as a Landlock ruleset, applied last before the exec
         * (core/policy/path-protect.h). Borrowed; NULL = none. */
        const struct landlock_protect *protect;
        /*
         * Judge every program its tree executes (exec-supervisor.h); NULL: none. Borrowed.
         */
        const struct exec_supervisor_opts *exec_policy;
};

struct tool_process_result {
        int exit_code; /* exit status, or -signal as Python's returncode */
        bool timed_out;
        bool cancelled;
        char error[512]; /* when it could not start: why, if more is known than the errno */
        /* With exec_policy: what the supervisor saw, and when it could not supervise
         * (exec.supervised false), why not. */
        struct exec_supervisor_report exec;
        char exec_why[256];
};

/*
 * Run the process in its own session with a clean signal state, feed its
 * output into o->output until it exits and the pipe is drained, and reap it.
 * At the deadline the process group (or its init) gets SIGTERM, one second of grace, then
 * SIGKILL; on cancel SIGKILL at once. When the process exits, what is left of
 * its process group is killed too (with an init: everything it started). Returns 0 (the result is
 * in @ret) or -errno when it could not be started (exec and chdir errors included).
 */
_must_check_ int tool_process_run(const struct tool_process *o, struct tool_process_result *ret);
