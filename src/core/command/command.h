/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Run a command and capture it: the one helper that starts a child, reads its output into a
 * capture until it exits, its deadline passes or the call is cancelled, and then kills
 * whatever it left behind (git's pipe_command() beside start_command(): spawn/ starts a
 * process, this runs one to its end). The terminal tool's commands, the Python linter and
 * pdftotext run through it.
 *
 * Why a module of its own and not spawn/: it starts commands under the sandbox's init
 * (core/sandbox), which itself starts processes through spawn/, so spawn/ cannot use it; and
 * it feeds a capture (core/output) and supervises on core/loop, neither of which spawn/'s
 * users need. Nor tools/: lint.c and web-extract.c, not only the terminal, run through it.
 * It knows nothing of tools or policy: the exec supervisor (core/tools/exec-supervisor.h)
 * reaches it as a struct command_exec_watch.
 *
 * Any thread, many calls at once: every call has its own loop and reaps its own child by pid
 * (never waitpid(-1)); the only shared state is an atomic flag (the kernel refused pid
 * namespaces, command-start.c).
 */

#include <stdbool.h>

#include "basic/macro.h"
#include "basic/time-util.h"

struct capture;          /* core/output/capture.h */
struct landlock_protect; /* core/sandbox/landlock.h */
struct sandbox_opts;     /* core/sandbox/sandbox.h */
struct seccomp_program;  /* core/sandbox/seccomp-policy.h */

/*
 * Someone who judges the programs the command's tree executes and may stop the command's
 * clock while it asks (the terminal's exec supervisor, core/tools/exec-supervisor.h). All
 * borrowed: the watch outlives command_run().
 */
struct command_exec_watch {
        /* Installed in the command's child last before its exec, its listener sent over
         * @child_sock (core/sandbox/exec-notify.h). */
        const struct seccomp_program *program;
        int child_sock;
        /* Readable when the clock moves again (an ask ended): then woken() is called. */
        int wake_fd;
        /* @deadline moved by the time asks waited; USEC_INFINITY while one waits. */
        usec_t (*deadline)(void *userdata, usec_t deadline);
        void (*woken)(void *userdata);
        void *userdata;
};

/* How to run it. Everything is borrowed for the length of command_run(). */
struct command_opts {
        const char *path;          /* executable, absolute */
        const char *fallback_path; /* tried when @path does not exist (ENOENT); may be NULL */
        char *const *argv;
        char *const *envp;      /* NULL = empty environment */
        const char *cwd;        /* NULL = "/" */
        int stdin_fd;           /* -1 = /dev/null */
        bool merge_stderr;      /* stderr into the output pipe; else /dev/null */
        usec_t deadline;        /* CLOCK_MONOTONIC; USEC_INFINITY = none */
        int cancel_fd;          /* readable = cancel; -1 = none */
        struct capture *output; /* where the output goes; NULL = discarded */
        /*
         * Start it as pid 1 of new pid and mount namespaces with a fresh /proc: it sees its
         * own processes only, never ptc (root only: unprivileged, a pid namespace needs a
         * user namespace, which would change file ownership and break sudo). The init is
         * ptc's binary afresh (core/command/pidns-init.h). Where the kernel refuses (a
         * container, no CAP_SYS_ADMIN), a plain start, once and for all.
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
         * command_run(). NULL = not confined.
         */
        const struct sandbox_opts *sandbox;
        /* The policy's path rules as a Landlock ruleset, applied last before the exec
         * (core/policy/path-protect.h). NULL = none. */
        const struct landlock_protect *protect;
        /* Judge every program its tree executes; NULL = none. */
        const struct command_exec_watch *exec_watch;
};

struct command_result {
        int exit_code; /* exit status, or -signal as Python's returncode */
        bool timed_out;
        bool cancelled;
        /* When it could not start or be supervised: why, if more is known than the errno
         * ("" otherwise). */
        char error[512];
};

/*
 * Run the command in its own session with a clean signal state, feed its output into
 * o->output until it exits and the pipe is drained, and reap it. At the deadline the process
 * group (or its init) gets SIGTERM, one second of grace, then SIGKILL; on cancel SIGKILL at
 * once. When the command exits, what is left of its process group is killed too (with an
 * init: everything it started), then its pipe gets one more second to reach EOF. The
 * supervision is one struct loop: the pipe, the cancel fd and the watch's wake fd are io
 * sources, the child a child source (on its pidfd: where none can be had, before Linux 5.3,
 * the command is killed and the call fails with ret->error saying why, never a polling wait),
 * the deadline, the kill and the drain time sources.
 *
 * Returns 0 (the result is in @ret) or -errno when it could not be started or supervised
 * (exec and chdir errors included), with ret->error set when more is known.
 */
_must_check_ int command_run(const struct command_opts *o, struct command_result *ret);
