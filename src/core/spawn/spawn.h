/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The one way ptc starts a process (in the spirit of git's run-command): a struct says what
 * the child gets, spawn_start() forks or clones it, spawn_wait_setup() waits until it exec'd
 * or reads why it could not. spawn_process() does both.
 *
 * Everything is prepared before the fork (the process is multi-threaded): between the fork
 * and the exec the child makes async-signal-safe calls only, no malloc. A child with no setup
 * hook, no clone flags and no cgroup shares ptc's memory until its exec (CLONE_VM |
 * CLONE_VFORK, as posix_spawn): no copy of ptc's page tables, which cost a fork of ptc 2-3 ms
 * of CPU on a VM here; the caller's thread waits until the exec. Its steps, in order:
 * default signal dispositions and the exec mask (ptc blocks signals for its signalfd and
 * ignores SIGPIPE; the child must not inherit either), its own session, death with ptc (and
 * the check that ptc did not die before), stdio, the passed fd, the other fds (CLOEXEC, or
 * closed at once for a child that never execs), the open-files limit, the cwd, the caller's
 * setup hook, the exec (the fallback path on ENOENT). A failing step writes its stage and
 * errno to a CLOEXEC pipe and exits 127; the parent turns that into one message format,
 * "<what failed>[ '<subject>']: <strerror>".
 *
 * Any thread may start processes at once; the only state shared between starts is a flag
 * that the cgroup warning was given. The options and everything they point to are borrowed
 * and must live until spawn_wait_setup() returns. The caller reaps the child; any thread
 * may.
 */

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <unistd.h>

#include "basic/diag.h"
#include "basic/macro.h"

/* The common steps of the child, as reported when one fails. */
enum spawn_stage {
        SPAWN_STAGE_SIGNALS,
        SPAWN_STAGE_SESSION,
        SPAWN_STAGE_PDEATHSIG,
        SPAWN_STAGE_STDIO,
        SPAWN_STAGE_FDS,
        SPAWN_STAGE_RLIMIT,
        SPAWN_STAGE_CHDIR,
        SPAWN_STAGE_EXEC,
        _SPAWN_STAGE_MAX,
};

/* A setup hook's own stages are SPAWN_STAGE_SETUP + n. */
#define SPAWN_STAGE_SETUP 64

/* What a failed child reports through the error pipe. */
struct spawn_child_error {
        int stage; /* enum spawn_stage, or SPAWN_STAGE_SETUP + n */
        int error; /* errno */
        int index; /* the hook's detail (e.g. a mount entry), or -1 */
};

/* What the child knows of its start, for a setup hook. */
struct spawn_child {
        int errfd;             /* the error pipe's write end (CLOEXEC) */
        pid_t parent;          /* getpid() of the parent */
        int parent_pidfd;      /* self_pidfd() of the parent with CLONE_NEWPID, else -1 */
        bool in_pid_namespace; /* cloned with CLONE_NEWPID: getppid() is 0 */
        bool shares_memory;    /* spawn_opts.share_memory was granted: no copy of ours */
};

/*
 * In the child: report @stage (errno, and @index or -1) and _exit(127). Async-signal-safe,
 * and not instrumented: it may run on a stack ASan does not know (a CLONE_VM child's).
 */
_noreturn_ _no_sanitize_address_ static inline void spawn_child_fail(int errfd, int stage,
                                                                     int index)
{
        struct spawn_child_error e = {.stage = stage, .error = errno, .index = index};

        (void) !write(errfd, &e, sizeof(e));
        _exit(127);
}

/*
 * In the child: did the parent die before our parent-death signal was armed? Outside a pid
 * namespace getppid() says. Inside (it is 0 there) the parent's pidfd does; without one
 * (Linux < 5.3), the error pipe's POLLERR: its read end is the parent's alone once every
 * child dropped what it inherited, which ours do first thing (a sibling cloned meanwhile may
 * still hold one: best effort). Async-signal-safe.
 */
bool spawn_child_parent_gone(const struct spawn_child *c);

struct spawn_opts {
        const char *path;            /* executable, absolute or relative to cwd */
        const char *fallback_path;   /* tried when @path does not exist (ENOENT); may be NULL */
        int exec_fd;                 /* with @path NULL: execveat(exec_fd, "", AT_EMPTY_PATH) */
        char *const *argv;           /* borrowed */
        char *const *envp;           /* borrowed */
        const char *cwd;             /* NULL = inherit */
        int stdin_fd;                /* -1: /dev/null */
        int stdout_fd;               /* -1: /dev/null */
        int stderr_fd;               /* -1: /dev/null; may equal stdout_fd */
        bool new_session;            /* setsid() */
        bool die_with_parent;        /* PR_SET_PDEATHSIG(SIGKILL), and the race check */
        const struct rlimit *nofile; /* RLIMIT_NOFILE for the child; NULL = inherit */
        int pass_fd;                 /* > 2: becomes fd 3 in the child (a side channel, e.g.
                                      * ptc run --progress-fd 3); 0..2 or -1: none */
        /*
         * The signal mask the setup hook runs with and the exec keeps; NULL = empty. A pid
         * namespace's init keeps its signals blocked to take them with sigwaitinfo().
         */
        const sigset_t *exec_mask;
        /* CLONE_NEW* flags: clone3() with CLONE_PIDFD; 0 = a vfork or a fork (above). */
        uint64_t clone_flags;
        /*
         * Start inside this cgroup (CLONE_INTO_CGROUP); -1 or 0 = no. A kernel before 5.7 or
         * a leaf it refuses: started without it, with one warning per process naming
         * @cgroup_path.
         */
        int cgroup_fd;
        const char *cgroup_path;
        /*
         * For a child that never execs (no CLOEXEC to rely on): close every fd but 0-2, the
         * passed fd, the error pipe, the parent's pidfd and @keep_fds at once, before the
         * setup hook. Otherwise every fd above those is made CLOEXEC.
         */
        bool close_other_fds;
        const int *keep_fds;
        size_t n_keep_fds; /* at most SPAWN_KEEP_FDS_MAX */
        /*
         * For a child that lives on without an exec (an init): run it in our memory
         * (CLONE_VM without CLONE_VFORK) on a stack of its own, cloned by a thread of its own
         * that stays until the child's memory is no longer ours and then frees the stack. No
         * copy of ptc's page tables, and no copy-on-write fault on either side for the
         * child's whole life (a fork of ptc cost 2-3 ms a start on a VM here). The child's
         * errno and TLS are that thread's, which does nothing else. The setup hook must then
         * write nothing of ours but its stack and errno, and may read what the options point
         * to only until spawn_wait_setup() returns. With clone flags or a cgroup it is a
         * fork all the same; struct spawn_child says which the child got.
         */
        bool share_memory;
        /*
         * Run in the child after the common steps, before the exec: 0 to go on to the exec,
         * or a stage SPAWN_STAGE_SETUP + n with errno set (or it calls spawn_child_fail(),
         * or never returns). Async-signal-safe calls only.
         */
        int (*setup)(const struct spawn_child *c, void *userdata);
        void *userdata;
        /*
         * In the parent, the text of a failed stage (and in *ret_subject, a subject quoted
         * after it, or NULL); NULL = the common text. Needed for the hook's stages.
         */
        const char *(*describe)(const struct spawn_child_error *e, void *userdata,
                                const char **ret_subject);
};

#define SPAWN_KEEP_FDS_MAX 16

/* A started child whose setup may still run. */
struct spawn_proc {
        pid_t pid;
        int pidfd; /* -1 if the kernel has none (ENOSYS, e.g. under valgrind) */
        int errfd; /* the error pipe's read end, until spawn_wait_setup() */
        /* The kernel refused the cgroup (errno; 0: none asked, or it holds the child): the
         * child started without it. */
        int cgroup_error;
};

/*
 * Fork or clone the child. On success @ret holds it; the caller must call
 * spawn_wait_setup() (the only thing it may do in between is talk to the child through fds
 * of its own, e.g. a sync pipe). Errors: -errno with a message ("fork failed: ...",
 * "clone failed: ...").
 */
_must_check_ int spawn_start(const struct spawn_opts *o, struct spawn_proc *ret,
                             struct diag *reterr);

/*
 * Wait until the child exec'd (the error pipe closes without a word), at most @timeout_ms
 * (-1 = no limit). On a failure the child is killed and reaped, @p's fds are closed, and
 * -errno returned with the message and (when @ret_error is non-NULL) the child's report;
 * -ETIMEDOUT when the time ran out ("the child did not finish its setup within N s").
 */
_must_check_ int spawn_wait_setup(struct spawn_proc *p, const struct spawn_opts *o, int timeout_ms,
                                  struct spawn_child_error *ret_error, struct diag *reterr);

/*
 * Start the process and wait for its exec. On success *ret_pid is its pid and *ret_pidfd
 * (when non-NULL) a pidfd for it, or -1 if the kernel has none: then wait for SIGCHLD
 * instead. The caller reaps the child. Errors: as spawn_wait_setup() ("cannot change to
 * directory '/x': ...", "cannot execute '/usr/bin/python3': ...").
 */
_must_check_ int spawn_process(const struct spawn_opts *o, pid_t *ret_pid, int *ret_pidfd,
                               struct diag *reterr);
