/* SPDX-License-Identifier: MIT */
/*
 * Running one command as the terminal tool does (terminal-process.h): started in its own
 * session, as pid 1 of a pid namespace (root) or under an init of its own, its child confined
 * by the path rules' Landlock ruleset, the TIOCSTI filter and the exec supervisor's filter;
 * its merged output read into a capture until it exits, its deadline passes or the call is
 * cancelled; then whatever it left behind is killed.
 *
 * Calls run on worker threads, many at once: the only mutable global state is an atomic flag
 * (the kernel refused pid namespaces), and children are reaped by pid, never with
 * waitpid(-1).
 */

#include "core/tools/terminal-process.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/path-util.h"
#include "basic/process-util.h"
#include "basic/time-util.h"
#include "core/output/capture.h"
#include "core/policy/path-protect.h"
#include "core/sandbox/exec-notify.h"
#include "core/sandbox/landlock.h"
#include "core/sandbox/sandbox.h"
#include "core/sandbox/seccomp-policy.h"
#include "core/spawn/proc-tree.h"
#include "core/spawn/spawn.h"
#include "core/tools/exec-supervisor.h"
#include "core/tools/pidns-init.h"
#include "core/tools/tool-util.h"

/* Between SIGTERM and SIGKILL on timeout. */
#define TERM_GRACE_USEC (1 * USEC_PER_SEC)
/*
 * After the shell exited and its group was killed, how long we wait for the pipe's EOF
 * (a process that left the group may still hold it).
 */
#define DRAIN_GRACE_USEC (1 * USEC_PER_SEC)
/* Without a pidfd: how often we look for the child's exit (up to this interval). */
#define FALLBACK_POLL_MAX_USEC (100 * USEC_PER_MSEC)
#define READ_CHUNK (64 * 1024)
/* Reads per wakeup, so a chatty child cannot starve the deadline checks. */
#define READS_PER_WAKEUP 64

/* A command started with no environment at all (tool_process.envp NULL). */
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
 * (core/tools/pidns-init.h); where the kernel refuses, a plain start, once and for all.
 */
static int start_command(const struct tool_process *o, int out_w, int init_exe_fd, char **init_argv,
                         int exec_sock, struct spawn_proc *ret)
{
        sigset_t init_mask;
        bool in_pidns = o->own_pid_namespace && init_argv &&
                        __atomic_load_n(&pidns_state, __ATOMIC_RELAXED) >= 0;
        char serve_dir[PATH_MAX] = "";
        struct command_setup cs = {.tty_program = seccomp_tty_program(),
                                   .serve_dir = serve_dir,
                                   .protect = o->protect,
                                   .exec_program =
                                           exec_sock >= 0 ? exec_supervisor_program() : NULL,
                                   .exec_sock = exec_sock};
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
                        log_debug_errno(r, "terminal: no pid namespace (%m), commands run "
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
                        log_debug("terminal: no fresh /proc in a pid namespace (%s), commands "
                                  "run without one",
                                  strerror(ce.error));
                        __atomic_store_n(&pidns_state, -1, __ATOMIC_RELAXED);
                        in_pidns = false;
                        continue;
                }
                return r;
        }
}

static void reap(pid_t pid, int *status)
{
        while (waitpid(pid, status, 0) < 0 && errno == EINTR)
                ;
}

/*
 * Signal the command: its process group (the shell's own), or with a sandbox's init
 * (@status_fd open) the init, which forwards a SIGTERM to all it runs. SIGKILL goes to the
 * init's whole tree from here: without a pid namespace, an init killed alone would leave the
 * command running without one (sandbox.h).
 */
static void signal_command(pid_t pid, int status_fd, int sig)
{
        if (status_fd < 0)
                (void) kill(-pid, sig);
        else if (sig == SIGKILL)
                (void) proc_tree_kill(pid, true);
        else
                (void) kill(pid, sig);
}

/* Has @pid exited? Leaves it a zombie (WNOWAIT), so its pid and process group stay ours. */
static bool child_exited(pid_t pid)
{
        siginfo_t si = {};

        if (waitid(P_PID, (id_t) pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
                return errno == ECHILD;
        return si.si_pid == pid;
}

static int drain_some(int fd, char *chunk, struct capture *cap, bool *eof)
{
        for (int i = 0; i < READS_PER_WAKEUP; i++) {
                ssize_t k = read(fd, chunk, READ_CHUNK);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return 0;
                        *eof = true; /* EIO and friends: treat as the end */
                        return 0;
                }
                if (k == 0) {
                        *eof = true;
                        return 0;
                }
                if (cap)
                        (void) capture_feed(cap, chunk, (size_t) k);
        }
        return 0;
}

static int process_run(const struct tool_process *o, struct exec_supervisor *sup, int exec_sock,
                       struct tool_process_result *ret)
{
        _cleanup_close_ int out_r = -EBADF, out_w = -EBADF;
        _cleanup_close_ int null_fd = -EBADF, pidfd = -EBADF, status_fd = -EBADF;
        _cleanup_free_ char *chunk = NULL;
        _cleanup_free_ char **init_argv = NULL; /* the strings are borrowed */
        _cleanup_close_ int init_exe_fd = -EBADF;
        _cleanup_(run_cgroup_destroyp) struct run_cgroup cgroup = RUN_CGROUP_NULL;
        struct spawn_proc child;
        int pipefd[2], status = 0, e = 0;
        bool out_open = true, zombie = false, reaped = false;
        bool timed_out = false, cancelled = false;
        usec_t kill_at = USEC_INFINITY, drain_until = USEC_INFINITY, fallback_step;
        pid_t pid;

        *ret = (struct tool_process_result){};
        chunk = malloc(READ_CHUNK);
        if (!chunk)
                return -ENOMEM;
        if (o->own_pid_namespace && __atomic_load_n(&pidns_state, __ATOMIC_RELAXED) >= 0) {
                size_t n = 0;

                while (o->argv[n])
                        n++;
                init_exe_fd = open("/proc/self/exe", O_PATH | O_CLOEXEC);
                if (init_exe_fd < 0)
                        /* No /proc: no pid namespace either (start_command() needs init_argv). */
                        log_debug_errno(-errno, "terminal: cannot open /proc/self/exe: %m");
                else {
                        init_argv = calloc(n + 4, sizeof(char *));
                        if (!init_argv)
                                return -ENOMEM;
                        init_argv[0] = (char *) PIDNS_INIT_ARGV0;
                        init_argv[1] = (char *) o->path;
                        init_argv[2] = (char *) (o->fallback_path ?: "");
                        memcpy(init_argv + 3, o->argv, n * sizeof(char *));
                }
        }

        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        out_r = pipefd[0];
        out_w = pipefd[1];
        null_fd = open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (null_fd < 0)
                return -errno;

        if (o->sandbox || (o->contain && o->stdin_fd < 0 &&
                           !(init_argv && __atomic_load_n(&pidns_state, __ATOMIC_RELAXED) >= 0))) {
                /*
                 * An init is the child and reports the command's status: the sandbox's, or
                 * (contain, without a pid namespace) one with no layer, a child subreaper that
                 * kills what the command leaves behind when it exits (sandbox-init.c).
                 */
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

                if (o->sandbox) {
                        so = *o->sandbox;
                        /* A cgroup leaf of its own where ptc may make one; destroyed on return. */
                        so.cgroup = run_cgroup_start(so.limits.data_bytes, so.limits.pids,
                                                     "terminal", &cgroup);
                } else if (o->fallback_path && access(o->path, X_OK) < 0 && errno == ENOENT)
                        so.path = o->fallback_path;
                so.tty_seccomp = seccomp_tty_program();
                so.protect = o->protect;
                so.exec_notify = exec_sock >= 0 ? exec_supervisor_program() : NULL;
                so.exec_notify_sock = exec_sock;
                so.stdout_fd = out_w;
                so.stderr_fd = o->merge_stderr ? out_w : null_fd;
                r = sandbox_spawn(&so, &sp, NULL, &d);
                if (r < 0) {
                        if (o->sandbox)
                                (void) snprintf(ret->error, sizeof(ret->error), "%.500s",
                                                d.message);
                        return r;
                }
                pid = sp.pid;
                pidfd = sp.pidfd;
                status_fd = sp.status_fd;
                out_w = safe_close(out_w);
                goto started;
        }

        e = start_command(o, out_w, init_exe_fd, init_argv, exec_sock, &child);
        if (e < 0)
                return e;
        pid = child.pid;
        pidfd = child.pidfd;
        out_w = safe_close(out_w);

started:
        e = fd_set_nonblock(out_r, true);
        if (e < 0) {
                signal_command(pid, status_fd, SIGKILL);
                reap(pid, &status);
                return e;
        }
        if (pidfd < 0)
                pidfd = pidfd_open_compat(pid);
        if (pidfd < 0) {
                /*
                 * FIXME: drop once kernel 5.3 (pidfd_open) is the minimum. Without a pidfd
                 * and without owning SIGCHLD (the loop thread does), a worker can only look
                 * with waitid(WNOWAIT), backing off to FALLBACK_POLL_MAX_USEC.
                 */
                log_debug_errno(pidfd, "pidfd_open failed, falling back to waitid polling: %m");
        }
        fallback_step = 5 * USEC_PER_MSEC;

        for (;;) {
                struct pollfd fds[4];
                int nfds = 0, i_out = -1, i_pid = -1, i_cancel = -1, i_ask = -1, timeout_ms;
                usec_t now = now_usec(), wake = USEC_INFINITY;
                /* An ask at exec stops the command's clock (exec-supervisor.h). */
                usec_t deadline = exec_supervisor_deadline(sup, o->deadline);

                /* Without a pidfd, look for the exit ourselves. */
                if (pidfd < 0 && !zombie && !reaped && child_exited(pid))
                        zombie = true;

                if (!zombie && !reaped && !timed_out && !cancelled && deadline != USEC_INFINITY &&
                    now >= deadline) {
                        timed_out = true;
                        signal_command(pid, status_fd, SIGTERM);
                        kill_at = now + TERM_GRACE_USEC;
                }
                if (kill_at != USEC_INFINITY && now >= kill_at) {
                        signal_command(pid, status_fd, SIGKILL);
                        kill_at = USEC_INFINITY;
                }
                /*
                 * The shell is gone (also when it ended within the SIGTERM grace): kill what
                 * is left of its group before reaping, while the zombie holds the group id.
                 */
                if (zombie && !reaped) {
                        signal_command(pid, status_fd, SIGKILL);
                        kill_at = USEC_INFINITY;
                        reap(pid, &status);
                        reaped = true;
                        drain_until = now + DRAIN_GRACE_USEC;
                }
                if (reaped && (!out_open || now >= drain_until))
                        break;

                if (!zombie && !reaped && !timed_out && !cancelled)
                        wake = deadline;
                if (kill_at != USEC_INFINITY)
                        wake = MIN(wake, kill_at);
                if (reaped)
                        wake = MIN(wake, drain_until);
                if (pidfd < 0 && !zombie && !reaped) {
                        wake = MIN(wake, now + fallback_step);
                        fallback_step = MIN(fallback_step * 2, FALLBACK_POLL_MAX_USEC);
                }

                if (out_open) {
                        fds[nfds] = (struct pollfd){.fd = out_r, .events = POLLIN};
                        i_out = nfds++;
                }
                if (pidfd >= 0 && !zombie && !reaped) {
                        fds[nfds] = (struct pollfd){.fd = pidfd, .events = POLLIN};
                        i_pid = nfds++;
                }
                if (o->cancel_fd >= 0 && !cancelled && !reaped) {
                        fds[nfds] = (struct pollfd){.fd = o->cancel_fd, .events = POLLIN};
                        i_cancel = nfds++;
                }
                if (sup) {
                        fds[nfds] = (struct pollfd){.fd = exec_supervisor_wake_fd(sup),
                                                    .events = POLLIN};
                        i_ask = nfds++;
                }

                if (wake == USEC_INFINITY)
                        timeout_ms = -1;
                else if (wake <= now)
                        timeout_ms = 0;
                else
                        timeout_ms = (int) MIN((wake - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC,
                                               (usec_t) INT32_MAX);

                if (poll(fds, (nfds_t) nfds, timeout_ms) < 0) {
                        if (errno == EINTR)
                                continue;
                        e = errno;
                        signal_command(pid, status_fd, SIGKILL);
                        if (!reaped)
                                reap(pid, &status);
                        return -e;
                }

                if (i_out >= 0 && fds[i_out].revents) {
                        bool eof = false;

                        (void) drain_some(out_r, chunk, o->output, &eof);
                        if (eof) {
                                out_r = safe_close(out_r);
                                out_open = false;
                        }
                }
                if (i_pid >= 0 && (fds[i_pid].revents & (POLLIN | POLLHUP | POLLERR)))
                        zombie = true;
                if (i_ask >= 0 && fds[i_ask].revents)
                        exec_supervisor_woken(sup);
                if (i_cancel >= 0 && (fds[i_cancel].revents & (POLLIN | POLLHUP | POLLERR))) {
                        cancelled = true;
                        signal_command(pid, status_fd, SIGKILL);
                        kill_at = USEC_INFINITY;
                }
        }

        ret->timed_out = timed_out;
        ret->cancelled = cancelled;
        if (status_fd >= 0) {
                /* No report: the init was killed (cancel, or SIGKILL after the grace). */
                if (sandbox_read_status(status_fd, &ret->exit_code) < 0)
                        ret->exit_code = -SIGKILL;
        } else if (WIFEXITED(status))
                ret->exit_code = WEXITSTATUS(status);
        else if (WIFSIGNALED(status))
                ret->exit_code = -WTERMSIG(status); /* Python's returncode */
        else
                ret->exit_code = -1;
        return 0;
}

int tool_process_run(const struct tool_process *o, struct tool_process_result *ret)
{
        struct exec_supervisor *sup = NULL;
        struct exec_supervisor_report rep;
        char why[sizeof(ret->exec_why)] = "";
        int exec_sock = -1, r;

        /* Started before the child: its first exec (the shell's) waits for the answer. */
        if (o->exec_policy) {
                r = exec_supervisor_start(o->exec_policy, &sup, &exec_sock, why, sizeof(why));
                if (r < 0)
                        return r;
        }
        r = process_run(o, sup, exec_sock, ret);
        exec_supervisor_stop(sup, &rep);
        ret->exec = rep;
        memcpy(ret->exec_why, why, sizeof(why));
        return r;
}
