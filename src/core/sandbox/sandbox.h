/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Starting the script confined (docs/contracts.md 8, docs/isolation.md).
 *
 * With every layer, sandbox_spawn() makes a child in new user, mount, pid, net, ipc, uts and
 * cgroup namespaces. That child is pid 1 of the new pid namespace: it builds a read-only root
 * from bind mounts (usr, a few files of /etc, what the interpreter reads: sandbox-plan.h), a
 * private size-limited /tmp, a fresh /proc and a minimal /dev, with the working directory
 * mounted read-write and the staging directory at the same paths as on the host
 * (sandbox-root.c), pivots into it, drops to an unprivileged uid, and stays behind as a small
 * reaping init. The script runs as its child (pid 2) under resource limits, NO_NEW_PRIVS,
 * Landlock and seccomp.
 *
 * When ptc runs as root the mount work happens as root in the new mount namespace, and the
 * script then runs as SANDBOX_HOST_UID (a uid no account uses) in a user namespace of its own,
 * so RLIMIT_NPROC holds. The working and staging directories are idmapped onto that uid, so
 * the script can use a root-owned working directory and what it writes there stays owned by
 * root on disk. Unprivileged, the user namespace comes first (the kernel requires it for the
 * rest) and the script keeps the user's uid.
 *
 * Without the namespace layer (isolation none with no layer at all, or auto on a machine
 * without user namespaces), the child is still the script's init, but a child subreaper
 * instead of a pid namespace's pid 1 (sandbox-init.c): the script, its child, applies what is
 * left (limits, NO_NEW_PRIVS unless no layer is on, Landlock, seccomp) and execs.
 *
 * The init forwards a stop: SIGINT (or SIGHUP) to it means SIGINT to the script's main thread
 * and SIGTERM to every other process of the start; SIGTERM to it means SIGTERM to all (for a
 * shell, which would ignore the SIGINT). It exits as soon as the script does, after killing
 * every process the script left behind (in a pid namespace the kernel does that as the init
 * exits), and reports the script's wait status through a pipe (sandbox_read_status()). So
 * killing a start's init with SIGKILL directly would leave the script's tree running without
 * one: stop it with a signal it forwards, or SIGKILL its whole tree (proc-tree.h).
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "basic/diag.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "core/sandbox/cgroup.h"

struct seccomp_program;

/* The host uid and gid of a script started by root (see above). */
#define SANDBOX_HOST_UID ((uid_t) 2147483646)
/* The uid and gid the script has inside when ptc runs as root. */
#define SANDBOX_INSIDE_UID ((uid_t) 1000)

enum sandbox_layer {
        SANDBOX_LAYER_NAMESPACES, /* 7 namespaces + the file-system view */
        SANDBOX_LAYER_LANDLOCK,
        SANDBOX_LAYER_SECCOMP,
        SANDBOX_LAYER_RLIMITS,
        _SANDBOX_LAYER_MAX,
};

#define SANDBOX_LAYERS_ALL ((1u << _SANDBOX_LAYER_MAX) - 1)

const char *sandbox_layer_to_string(enum sandbox_layer l);

struct sandbox_limits {
        uint64_t data_bytes;  /* RLIMIT_DATA; RLIMIT_AS is 4x this */
        uint64_t pids;        /* RLIMIT_NPROC */
        uint64_t nofile;      /* RLIMIT_NOFILE, soft and hard */
        uint64_t fsize_bytes; /* RLIMIT_FSIZE */
        uint64_t cpu_seconds; /* RLIMIT_CPU, a backstop behind the wall-clock deadline */
        uint64_t tmp_bytes;   /* size of the private /tmp and /dev/shm */
};

/* RLIMIT_NOFILE inside: room for a thousand RPC connections, small enough to bound a run. */
#define SANDBOX_NOFILE 4096

/*
 * The limits of a confined run (script or terminal command) from the sandbox config:
 * RLIMIT_DATA @memory_mb MiB, NPROC @pids, NOFILE @nofile, FSIZE 1 GiB, CPU @cpu_seconds, and
 * a /tmp of a quarter of the memory (at least 16 MiB).
 */
struct sandbox_limits sandbox_limits_for(uint64_t memory_mb, uint64_t pids, uint64_t nofile,
                                         uint64_t cpu_seconds);

/*
 * The environment inside the namespaces, where only @cwd of the host's file system is
 * writable: @envp with TMPDIR=/tmp, and HOME=/tmp unless HOME is inside @cwd. *ret is a new
 * array of pointers into @envp and static strings: free the array, not the strings.
 * Returns 0 or -ENOMEM.
 */
_must_check_ int sandbox_env(char *const *envp, const char *cwd, char ***ret);

/*
 * The steps of a confined start, in order, for a trace (docs/observability.md): the parent
 * plans, clones and hands over; the child (the init to be) writes its user namespace's maps,
 * builds the file system, takes the sandbox uid (root only), becomes the init and forks the
 * script, which sets its limits, NO_NEW_PRIVS (with its working directory and stdin),
 * Landlock and seccomp before its exec. A step a start does not take has no time.
 */
enum sandbox_step {
        SANDBOX_STEP_PLAN,
        SANDBOX_STEP_CLONE,
        SANDBOX_STEP_USERNS,
        SANDBOX_STEP_FILE_SYSTEM,
        SANDBOX_STEP_SANDBOX_UID,
        SANDBOX_STEP_INIT,
        SANDBOX_STEP_SCRIPT_FORK,
        SANDBOX_STEP_RLIMITS,
        SANDBOX_STEP_NO_NEW_PRIVS,
        SANDBOX_STEP_LANDLOCK,
        SANDBOX_STEP_SECCOMP,
        _SANDBOX_STEP_MAX,
};

const char *sandbox_step_to_string(enum sandbox_step s);

/*
 * When the steps of a start ended (CLOCK_MONOTONIC; 0: not taken), the child's read back
 * from a page it shares with the parent until its exec. What follows the last step is the
 * exec itself, which ends when sandbox_spawn() returns.
 */
struct sandbox_timings {
        usec_t begin; /* sandbox_spawn() was called */
        usec_t end[_SANDBOX_STEP_MAX];
};

struct sandbox_opts {
        unsigned layers;          /* bit set of enum sandbox_layer */
        const char *path;         /* interpreter, absolute */
        char *const *argv;        /* borrowed */
        char *const *envp;        /* borrowed */
        const char *cwd;          /* working directory: read-write, same path inside */
        const char *staging_dir;  /* read-only inside unless it is @cwd */
        char *const *ro_paths;    /* more trees to show read-only (interpreter prefixes,
                                   * PYTHONPATH entries); missing ones are skipped */
        int stdout_fd, stderr_fd; /* required */
        int stdin_fd;             /* > 0: the script's stdin (a session interpreter's
                                   * control socket, docs/sessions.md); 0: /dev/null */
        bool outlive_script;      /* a session's interpreter (docs/sessions.md): the init reports
                                   * the script's status as soon as it is gone and lives on
                                   * while anything else does (the interpreter's forks); ptc
                                   * stops an interpreter's cells itself */
        bool network;             /* keep the host network (no net namespace, inet sockets) */
        struct sandbox_limits limits;
        int landlock_abi;                  /* from landlock_abi(); < 1 skips Landlock */
        const struct run_cgroup *cgroup;   /* start inside this leaf (CLONE_INTO_CGROUP), or NULL */
        const struct rlimit *plain_nofile; /* without the rlimits layer: the script's
                                            * RLIMIT_NOFILE (ptc's own may be raised), or NULL */
        struct sandbox_timings *timings;   /* filled on success when set (a trace), else NULL:
                                            * then the start costs nothing more */
        /* Without the seccomp layer: this program (seccomp_tty_program(), borrowed) where
         * it may be installed (seccomp_tty_load()), or NULL. */
        const struct seccomp_program *tty_seccomp;
        /* A terminal command's path rules (landlock_protect_apply()), after every layer but
         * seccomp; borrowed, NULL = none. */
        const struct landlock_protect *protect;
        /* A terminal command's exec supervisor (exec-notify.h): its filter and the socket
         * its listener goes to; NULL and -1: none. The caller sets both or neither. */
        const struct seccomp_program *exec_notify;
        int exec_notify_sock;
};

struct sandbox_proc {
        pid_t pid;        /* the init */
        int pidfd;        /* for pid, or -1 */
        int status_fd;    /* read end of the init's status pipe (non-blocking) */
        unsigned layers;  /* the layers it runs under (sandbox_opts.layers) */
        int cgroup_error; /* spawn_proc.cgroup_error: started outside sandbox_opts.cgroup */
};

/*
 * Start the script confined by o->layers. The caller reaps ret->pid and closes the fds.
 * Errors: -errno with a message in @reterr that names the layer and the step ("namespaces:
 * cannot mount a fresh /proc: Operation not permitted"), and in @ret_failed_layer (may be
 * NULL) the layer the kernel or the environment refused (EPERM, EACCES, EINVAL, ENOSYS,
 * EOPNOTSUPP, ENOSPC or EUSERS from a step that depends on no path: the clone, a user
 * namespace's maps, a fresh tmpfs or /proc, pivot_root, Landlock, seccomp, an rlimit), or
 * _SANDBOX_LAYER_MAX when the failure is no layer's: a path the script needs that the plan
 * cannot show it (sandbox-plan.h), a bind, a chdir, an exec, no memory. isolation auto
 * retries without a refused layer only; nothing a script writes can make it drop one.
 */
_must_check_ int sandbox_spawn(const struct sandbox_opts *o, struct sandbox_proc *ret,
                               enum sandbox_layer *ret_failed_layer, struct diag *reterr);

/*
 * After the init was reaped: the script's exit status as ptc reports it (the exit code, or -N
 * for a signal). Never waits (the pipe is non-blocking). Returns -ENODATA when the init died
 * before reporting (it was killed).
 */
int sandbox_read_status(int status_fd, int *ret_status);

/* What works on this machine, for ptc doctor and for isolation auto. */
struct sandbox_probe {
        bool works[_SANDBOX_LAYER_MAX];
        char why[_SANDBOX_LAYER_MAX][256]; /* when it does not work: why */
        int landlock_abi;                  /* or -errno */
};

/*
 * The layers this kernel cannot give at all, whatever the machine's setup: Landlock
 * (@landlock_abi, landlock_abi()'s answer, < 1) and seccomp. Returns their bit set and, for
 * each, why in @ret_why[layer] ("disabled at boot (add landlock to lsm=)"). Cheap: strict and
 * auto ask it for every start, ptc doctor through sandbox_probe().
 */
unsigned sandbox_kernel_missing(int landlock_abi, char ret_why[_SANDBOX_LAYER_MAX][256]);

/*
 * Probe every layer; the namespaces probe starts a short-lived child. The cgroup, an extra
 * rather than a layer, is cgroup_base()'s to tell.
 */
void sandbox_probe(struct sandbox_probe *ret);
