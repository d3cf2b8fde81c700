/* SPDX-License-Identifier: MIT */
/*
 * How a command is started (command-internal.h): in its own session, as pid 1 of a pid
 * namespace (root) or under an init of its own or the sandbox's, its child confined by the
 * path rules' Landlock ruleset, the TIOCSTI filter and the exec watch's filter.
 */

#include "core/command/command-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/path-util.h"
#include "basic/process-util.h"
#include "core/command/pidns-init.h"
#include "core/sandbox/exec-notify.h"
#include "core/sandbox/landlock.h"
#include "core/sandbox/sandbox.h"
#include "core/sandbox/seccomp-policy.h"
#include "core/spawn/proc-tree.h"
#include "core/spawn/spawn.h"

/* A command started with no environment at all (command_opts.envp NULL). */
static char *const empty_env[] = {NULL};

/* -1 once the kernel refused a pid namespace: do not try again. */
static int pidns_state;

/* The pid namespace's own setup failed: start again without one (pidns_state). */
#define STAGE_PIDNS_PROC SPAWN_STAGE_SETUP

/* The TIOCSTI filter failed to install (seccomp_tty_load()). */
#define STAGE_TTY_FILTER (SPAWN_STAGE_SETUP + 1)
/* The path rules' Landlock ruleset failed to apply (path-protect.h). */
#define STAGE_PROTECT (SPAWN_STAGE_SETUP + 2)

/* What the command's child applies to itself before it execs (tty_setup()). */
struct command_setup {
        const struct seccomp_program *tty_program;  /* seccomp_tty_program() */
        const char *serve_dir;                      /* to cover in a mount namespace; "" for none */
        const struct landlock_protect *protect;     /* the path rules, or NULL */
        const struct seccomp_program *exec_program; /* exec-notify.h; NULL: none */
        int exec_sock;
};

/*
 * In the command's child, last before the exec: the path rules' Landlock ruleset; TIOCSTI and
 * TIOCLINUX refused where it keeps CAP_SYS_ADMIN (root), which would let it push input into
 * the user's terminal, a prompt's answer among it (docs/security.md, "Approvals"); the exec
 * supervisor's filter, whose listener goes to ptc. @userdata: struct command_setup.
 * Async-signal-safe.
 */
static int tty_setup(const struct spawn_child *c, void *userdata)
{
        const struct command_setup *cs = userdata;
        int r;

        (void) c;
        /* Last before the exec, after the mounts: a Landlock domain may mount nothing. */
        if (cs->protect && (r = landlock_protect_apply(cs->protect)) < 0) {
                errno = -r;
                return STAGE_PROTECT;
        }
        r = seccomp_tty_load(cs->tty_program);
        if (r < 0) {
                errno = -r;
                return STAGE_TTY_FILTER;
        }
        if (cs->exec_program)
                (void) exec_notify_child_install(cs->exec_program, cs->exec_sock);
        return 0;
}

/*
 * The host's terminals, the user's among them, are not in the command's /dev/pts: the host's
 * devpts mounts are detached (so `umount /dev/pts` uncovers nothing) and a fresh instance
 * takes their place, where /dev/ptmx makes the ptys a command asks for (ssh -t, script). A
 * pty node made elsewhere (mknod) opens nothing: the kernel finds a pty only in a devpts. A
 * failed mount leaves the command without ptys, not with the host's. Async-signal-safe.
 */
static void pidns_hide_terminals(void)
{
        struct stat st;

        if (stat("/dev/pts", &st) < 0 || !S_ISDIR(st.st_mode))
                return;
        /* Stacked mounts too; bounded, as any loop here. */
        for (int i = 0; i < 16 && umount2("/dev/pts", MNT_DETACH) == 0; i++)
                ;
        (void) mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
                     "newinstance,ptmxmode=0666,mode=0620");
}

/*
 * In the child cloned into new pid and mount namespaces: a fresh /proc shows this namespace's
 * processes only. Slave first: host mounts still reach us, ours (and the proc mount) never
 * reach the host. The host's /proc is detached, not covered: under the fresh one a root
 * command's `umount /proc` would uncover it, and ptc's process in it. ptc serve's directory
 * (@userdata, "" for none) is covered by an empty read-only tmpfs: its key would let the
 * command talk to the server (docs/sessions.md). Async-signal-safe (spawn.h).
 */
static int pidns_setup(const struct spawn_child *c, void *userdata)
{
        const struct command_setup *cs = userdata;

        if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
                return STAGE_PIDNS_PROC;
        /* EINVAL: /proc is no mount point here; nothing to uncover. */
        if (umount2("/proc", MNT_DETACH) < 0 && errno != EINVAL)
                return STAGE_PIDNS_PROC;
        if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                return STAGE_PIDNS_PROC;
        /* ENOENT: its parent is not there (no $XDG_RUNTIME_DIR): no server can be either. */
        if (cs->serve_dir[0] &&
            mount("tmpfs", cs->serve_dir, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  "size=4k,nr_inodes=1,mode=000") < 0 &&
            errno != ENOENT)
                return STAGE_PIDNS_PROC;
        pidns_hide_terminals();
        return tty_setup(c, userdata);
}

/*
 * ptc serve's directory into @buf ("" when there is none to hide), made (0700, as the CLI
 * makes it) when missing: a server started while the command runs must be hidden too.
 */
static void serve_dir_to_hide(char *buf, size_t n)
{
        struct stat st;

        /* Not a directory (a symlink another user planted): the CLI never uses it either. */
        if (ptc_serve_dir_path(buf, n) < 0 || (mkdir(buf, 0700) < 0 && errno != EEXIST) ||
            lstat(buf, &st) < 0 || !S_ISDIR(st.st_mode))
                buf[0] = 0;
}

/*
 * Start the command, in its own session, dying with ptc, stderr merged or /dev/null. With
 * @init_argv, as pid 1 of new pid and mount namespaces: ptc's binary afresh (@init_exe_fd) as
 * the namespace's init with its signals blocked, the command as its child
 * (core/command/pidns-init.h); where the kernel refuses, a plain start, once and for all.
 */
static int start_spawned(const struct command_opts *o, int out_w, int init_exe_fd, char **init_argv,
                         struct spawn_proc *ret)
{
        sigset_t init_mask;
        bool in_pidns = o->own_pid_namespace && init_argv &&
                        __atomic_load_n(&pidns_state, __ATOMIC_RELAXED) >= 0;
        char serve_dir[PATH_MAX] = "";
        struct command_setup cs = {.tty_program = seccomp_tty_program(),
                                   .serve_dir = serve_dir,
                                   .protect = o->protect,
                                   .exec_program = o->exec_watch ? o->exec_watch->program : NULL,
                                   .exec_sock = o->exec_watch ? o->exec_watch->child_sock : -1};
        struct landlock_protect pidns_protect;

        init_signal_set(&init_mask);
        if (in_pidns)
                serve_dir_to_hide(serve_dir, sizeof(serve_dir));
        /*
         * The path rules' ruleset was built before the fresh devpts of the pid namespace was
         * mounted (pidns_hide_terminals()), and Landlock does not look at the mount point: the
         * child grants its own instance's root itself.
         */
        if (in_pidns && o->protect && o->protect->ruleset_fd >= 0) {
                static const char *const devpts[] = {"/dev/pts", NULL};

                pidns_protect = *o->protect;
                pidns_protect.grants = devpts;
                cs.protect = &pidns_protect;
        }
        for (;;) {
                struct spawn_opts so = {
                        .path = in_pidns ? NULL : o->path,
                        .fallback_path = in_pidns ? NULL : o->fallback_path,
                        .exec_fd = init_exe_fd,
                        .argv = in_pidns ? init_argv : o->argv,
                        .envp = o->envp ?: empty_env,
                        .cwd = o->cwd ?: "/",
                        .stdin_fd = o->stdin_fd,
                        .stdout_fd = out_w,
                        .stderr_fd = o->merge_stderr ? out_w : -1,
                        .new_session = true,
                        .die_with_parent = true,
                        .pass_fd = -1,
                        .exec_mask = in_pidns ? &init_mask : NULL,
                        .clone_flags = in_pidns ? CLONE_NEWPID | CLONE_NEWNS : 0,
                        .setup = in_pidns ? pidns_setup : tty_setup,
                        .userdata = (void *) &cs,
                };
                struct spawn_child_error ce = {.stage = -1};
                struct diag d = {};
                int r;

                r = spawn_start(&so, ret, &d);
                /* Out of fds is no refusal of pid namespaces: a plain start would fail too. */
                if (r < 0 && in_pidns && r != -EMFILE && r != -ENFILE) {
                        log_debug_errno(r, "command: no pid namespace (%m), commands run "
                                           "without one");
                        __atomic_store_n(&pidns_state, -1, __ATOMIC_RELAXED);
                        in_pidns = false;
                        continue;
                }
                if (r < 0)
                        return r;
                r = spawn_wait_setup(ret, &so, -1, &ce, &d);
                if (r < 0 && in_pidns && ce.stage == STAGE_PIDNS_PROC) {
                        /* Nothing ran yet: start it again, plainly, and never try again. */
                        log_debug("command: no fresh /proc in a pid namespace (%s), commands "
                                  "run without one",
                                  strerror(ce.error));
                        __atomic_store_n(&pidns_state, -1, __ATOMIC_RELAXED);
                        in_pidns = false;
                        continue;
                }
                return r;
        }
}

/*
 * The pid namespace's init's argv into *@ret (the strings borrowed from @o) and ptc's binary
 * into *@ret_exe_fd; both stay unset (NULL, -1) when @o wants no pid namespace, the kernel
 * refused one before, or there is no /proc to find the binary in.
 */
static int pidns_init_argv(const struct command_opts *o, char ***ret, int *ret_exe_fd)
{
        _cleanup_close_ int exe_fd = -EBADF;
        char **argv;
        size_t n = 0;

        *ret = NULL;
        *ret_exe_fd = -EBADF;
        if (!o->own_pid_namespace || __atomic_load_n(&pidns_state, __ATOMIC_RELAXED) < 0)
                return 0;
        exe_fd = open("/proc/self/exe", O_PATH | O_CLOEXEC);
        if (exe_fd < 0) {
                /* No /proc: no pid namespace either (start_spawned() needs the argv). */
                log_debug_errno(-errno, "command: cannot open /proc/self/exe: %m");
                return 0;
        }
        while (o->argv[n])
                n++;
        argv = calloc(n + 4, sizeof(char *));
        if (!argv)
                return -ENOMEM;
        argv[0] = (char *) PIDNS_INIT_ARGV0;
        argv[1] = (char *) o->path;
        argv[2] = (char *) (o->fallback_path ?: "");
        memcpy(argv + 3, o->argv, n * sizeof(char *));
        *ret = argv;
        *ret_exe_fd = TAKE_FD(exe_fd);
        return 0;
}

/*
 * Start @o under an init that reports its status: the sandbox's, or (contain, without a pid
 * namespace) one with no layer, a child subreaper that kills what the command leaves behind
 * when it exits (sandbox-init.c).
 */
static int start_under_init(const struct command_opts *o, int out_w, struct command_child *ret,
                            char *error, size_t error_size)
{
        _cleanup_close_ int null_fd = -EBADF;
        const struct command_exec_watch *w = o->exec_watch;
        struct sandbox_opts so = {
                .path = o->path,
                .argv = o->argv,
                .envp = o->envp ?: empty_env,
                .cwd = o->cwd ?: "/",
                .network = true,
        };
        struct sandbox_proc sp;
        struct diag d = {};
        int r;

        null_fd = open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (null_fd < 0)
                return -errno;
        if (o->sandbox) {
                so = *o->sandbox;
                /* A cgroup leaf of its own where ptc may make one; destroyed after the reap. */
                so.cgroup = run_cgroup_start(so.limits.data_bytes, so.limits.pids, "terminal",
                                             &ret->cgroup);
        } else if (o->fallback_path && access(o->path, X_OK) < 0 && errno == ENOENT)
                so.path = o->fallback_path;
        so.tty_seccomp = seccomp_tty_program();
        so.protect = o->protect;
        so.exec_notify = w ? w->program : NULL;
        so.exec_notify_sock = w ? w->child_sock : -1;
        so.stdout_fd = out_w;
        so.stderr_fd = o->merge_stderr ? out_w : null_fd;
        r = sandbox_spawn(&so, &sp, NULL, &d);
        if (r < 0) {
                if (o->sandbox)
                        (void) snprintf(error, error_size, "%.500s", d.message);
                return r;
        }
        ret->pid = sp.pid;
        ret->pidfd = sp.pidfd;
        ret->status_fd = sp.status_fd;
        return 0;
}

int command_start(const struct command_opts *o, int out_w, struct command_child *ret, char *error,
                  size_t error_size)
{
        _cleanup_free_ char **init_argv = NULL; /* the strings are borrowed */
        _cleanup_close_ int init_exe_fd = -EBADF;
        struct spawn_proc child;
        int r;

        *ret = COMMAND_CHILD_NULL;
        r = pidns_init_argv(o, &init_argv, &init_exe_fd);
        if (r < 0)
                return r;
        if (o->sandbox || (o->contain && o->stdin_fd < 0 &&
                           !(init_argv && __atomic_load_n(&pidns_state, __ATOMIC_RELAXED) >= 0)))
                return start_under_init(o, out_w, ret, error, error_size);

        r = start_spawned(o, out_w, init_exe_fd, init_argv, &child);
        if (r < 0)
                return r;
        ret->pid = child.pid;
        ret->pidfd = child.pidfd;
        return 0;
}

void command_signal(const struct command_child *c, int sig)
{
        if (c->status_fd < 0)
                (void) kill(-c->pid, sig);
        else if (sig == SIGKILL)
                (void) proc_tree_kill(c->pid, true);
        else
                (void) kill(c->pid, sig);
}

void command_child_done(struct command_child *c)
{
        c->pidfd = safe_close(c->pidfd);
        c->status_fd = safe_close(c->status_fd);
        run_cgroup_destroyp(&c->cgroup);
}
