/* SPDX-License-Identifier: MIT */
/*
 * terminal (docs/seed.md 2.5): run one shell command in the foreground.
 *
 * Each call is a fresh `/bin/bash -c COMMAND` with the execution's scrubbed
 * environment (docs/contracts.md 8), stdin from /dev/null, stdout and stderr
 * merged, in its own session. When the shell exits, whatever it left running
 * in its process group is killed, so `cmd &` cannot outlive the call. As root
 * (unless isolation is none) the shell is pid 1 of a pid namespace of its own
 * with a fresh /proc: ptc is not visible to it, and its exit kills everything
 * it started, daemons included. Elsewhere it runs under an init of its own, a
 * child subreaper that does the same (sandbox-init.c). The seed's approval system for dangerous
 * commands is not part of ptc.
 *
 * Calls run on worker threads, many at once: the only mutable global state is
 * an atomic flag (the kernel refused pid namespaces), and children are reaped
 * by pid, never with waitpid(-1). The long-lived-process guard is in
 * terminal-guard.c.
 */

#include "core/tools/tool.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/compat/close-range.h"
#include "basic/fd-util.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/path-util.h"
#include "basic/process-util.h"
#include "basic/time-util.h"
#include "basic/utf8.h"
#include "core/output/ansi.h"
#include "core/output/capture.h"
#include "core/output/redact-stream.h"
#include "core/output/redact.h"
#include "core/policy/policy.h"
#include "core/sandbox/exec-notify.h"
#include "core/sandbox/landlock.h"
#include "core/sandbox/sandbox.h"
#include "core/sandbox/seccomp-policy.h"
#include "core/spawn/proc-tree.h"
#include "core/spawn/spawn.h"
#include "core/tools/exec-supervisor.h"
#include "core/tools/pidns-init.h"
#include "core/tools/terminal-guard.h"
#include "core/tools/terminal-process.h"
#include "core/tools/terminal-protect.h"
#include "core/tools/tool-util.h"

#define DEFAULT_TIMEOUT_SEC 180
#define DEFAULT_MAX_TIMEOUT_SEC 600
/* Output kept: the seed's 50,000-character cap with its 40/60 head/tail split. */
#define OUTPUT_HEAD_MAX 20000
#define OUTPUT_TAIL_MAX 30000
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

#define SHELL_PATH "/bin/bash"
#define SHELL_FALLBACK "/bin/sh"

/* A command started with no environment at all (tool_process.envp NULL). */
static char *const empty_env[] = {NULL};

/* ---------------------------------------------------------------------------------------- */
/* Running a process                                                                        */

/* -1 once the kernel refused a pid namespace: do not try again. */
static int pidns_state;

/* The pid namespace's own setup failed: start again without one (pidns_state). */
#define STAGE_PIDNS_PROC SPAWN_STAGE_SETUP

/*
 * In the child cloned into new pid and mount namespaces: a fresh /proc shows this namespace's
 * processes only. Slave first: host mounts still reach us, ours (and the proc mount) never
 * reach the host. The host's /proc is detached, not covered: under the fresh one a root
 * command's `umount /proc` would uncover it, and ptc's process in it. ptc serve's directory
 * (@userdata, "" for none) is covered by an empty read-only tmpfs: its key would let the
 * command talk to the server (docs/sessions.md). Async-signal-safe (spawn.h).
 */
/* The TIOCSTI filter failed to install (seccomp_tty_load()). */
#define STAGE_TTY_FILTER (SPAWN_STAGE_SETUP + 1)
/* The path rules' Landlock ruleset failed to apply (terminal-protect.h). */
#define STAGE_PROTECT (SPAWN_STAGE_SETUP + 2)

/*
 * In the command's child: TIOCSTI and TIOCLINUX refused where it keeps CAP_SYS_ADMIN (root),
 * which would let it push input into the user's terminal, a prompt's answer among it
 * (docs/security.md, "Approvals"). @userdata: seccomp_tty_program(). Async-signal-safe.
 */
struct command_setup {
        const struct seccomp_program *tty_program;  /* seccomp_tty_program() */
        const char *serve_dir;                      /* to cover in a mount namespace; "" for none */
        const struct landlock_protect *protect;     /* the path rules, or NULL */
        const struct seccomp_program *exec_program; /* exec-notify.h; NULL: none */
        int exec_sock;
};

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

static bool is_space(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* ---------------------------------------------------------------------------------------- */
/* Result details                                                                           */

struct exit_meaning {
        const char *cmd;
        int code;
        const char *text;
};

static const struct exit_meaning exit_meanings[] = {
        {"grep", 1, "No lines matched (grep exits 1 for that; not an error)"},
        {"egrep", 1, "No lines matched (egrep exits 1 for that; not an error)"},
        {"fgrep", 1, "No lines matched (fgrep exits 1 for that; not an error)"},
        {"rg", 1, "No lines matched (rg exits 1 for that; not an error)"},
        {"ag", 1, "No lines matched (ag exits 1 for that; not an error)"},
        {"ack", 1, "No lines matched (ack exits 1 for that; not an error)"},
        {"diff", 1, "The inputs differ (diff exits 1 for that; not an error)"},
        {"colordiff", 1, "The inputs differ (colordiff exits 1 for that; not an error)"},
        {"find", 1, "Some paths could not be read; the results shown may still be usable"},
        {"test", 1, "The condition is false (not an error)"},
        {"[", 1, "The condition is false (not an error)"},
        {"curl", 6, "curl could not resolve the host name"},
        {"curl", 7, "curl could not connect to the host"},
        {"curl", 22, "The server answered with an HTTP error status (4xx or 5xx)"},
        {"curl", 28, "curl gave up: the operation timed out"},
        {"git", 1,
         "git exits 1 in ordinary cases too (e.g. 'git diff' when there are differences)"},
};

/*
 * What a non-zero exit status of the last command of a pipeline or chain
 * means when it is not a failure (grep's "no match" ...), or NULL.
 */
static const char *exit_code_meaning(const char *cmd, int code)
{
        const char *seg = cmd, *p, *w, *base;
        char word[256];
        size_t wl;

        if (code == 0)
                return NULL;
        /* The last segment after ||, &&, | or ; */
        for (p = cmd; *p; p++) {
                if ((p[0] == '|' && p[1] == '|') || (p[0] == '&' && p[1] == '&')) {
                        seg = p + 2;
                        p++;
                } else if (*p == '|' || *p == ';')
                        seg = p + 1;
        }

        /* Its first word that is not a VAR=value assignment. */
        for (p = seg;;) {
                while (is_space(*p))
                        p++;
                if (!*p)
                        return NULL;
                w = p;
                while (*p && !is_space(*p))
                        p++;
                wl = (size_t) (p - w);
                if (memchr(w, '=', wl) && w[0] != '-')
                        continue;
                break;
        }
        if (wl >= sizeof(word))
                return NULL;
        memcpy(word, w, wl);
        word[wl] = 0;
        base = strrchr(word, '/');
        base = base ? base + 1 : word;

        for (size_t i = 0; i < ELEMENTSOF(exit_meanings); i++)
                if (exit_meanings[i].code == code && strcmp(exit_meanings[i].cmd, base) == 0)
                        return exit_meanings[i].text;
        return NULL;
}

static bool workdir_char_ok(unsigned char c)
{
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               strchr("/\\:_-.~ +@=,", c);
}

/* Python's repr() of the one character at @p, into @buf. */
static const char *char_repr(const char *p, char *buf, size_t size)
{
        unsigned char c = (unsigned char) *p;

        if (c == '\'')
                (void) snprintf(buf, size, "\"'\"");
        else if (c == '\n')
                (void) snprintf(buf, size, "'\\n'");
        else if (c == '\r')
                (void) snprintf(buf, size, "'\\r'");
        else if (c == '\t')
                (void) snprintf(buf, size, "'\\t'");
        else if (c < 0x20 || c == 0x7f)
                (void) snprintf(buf, size, "'\\x%02x'", c);
        else if (c < 0x80)
                (void) snprintf(buf, size, "'%c'", c);
        else {
                size_t n = 1;

                while (n < 4 && ((unsigned char) p[n] & 0xC0) == 0x80)
                        n++;
                /* U+0080..U+00A0 and U+00AD are not printable for Python. */
                if (c == 0xC2 && n == 2 &&
                    ((unsigned char) p[1] <= 0xA0 || (unsigned char) p[1] == 0xAD))
                        (void) snprintf(buf, size, "'\\x%02x'", (unsigned char) p[1] & 0xFF);
                else
                        (void) snprintf(buf, size, "'%.*s'", (int) n, p);
        }
        return buf;
}

/*
 * terminal.isolation: strict: the command in the script's sandbox (docs/isolation.md), with
 * @cwd read-write and at its host path, the rest of the view read-only, no network unless
 * terminal.network, the sandbox's limits, HOME and TMPDIR as for the script (sandbox_env():
 * *ret_env is the caller's to free). Fails (-EOPNOTSUPP, why in @err) when a layer is
 * missing from this kernel.
 */
static int strict_sandbox(const struct ptc_config *c, char **argv, char *const *envp,
                          const char *cwd, struct sandbox_opts *ret, char ***ret_env, char *err,
                          size_t errlen)
{
        char why[_SANDBOX_LAYER_MAX][256];
        int abi = landlock_abi(), r;
        unsigned missing = sandbox_kernel_missing(abi, why);

        for (int l = 0; l < _SANDBOX_LAYER_MAX; l++)
                if (missing & (1u << l)) {
                        (void) snprintf(err, errlen, "%s: %s",
                                        sandbox_layer_to_string((enum sandbox_layer) l), why[l]);
                        return -EOPNOTSUPP;
                }
        r = sandbox_env(envp, cwd, ret_env);
        if (r < 0) {
                (void) snprintf(err, errlen, "out of memory");
                return r;
        }
        *ret = (struct sandbox_opts){
                .layers = SANDBOX_LAYERS_ALL,
                .path = SHELL_PATH,
                .argv = argv,
                .envp = *ret_env,
                .cwd = cwd,
                .network = c->terminal_network,
                .landlock_abi = abi,
                .limits = sandbox_limits_for((uint64_t) c->memory_mb, (uint64_t) c->pids,
                                             SANDBOX_NOFILE,
                                             (uint64_t) c->terminal_max_timeout * 2 + 10),
        };
        return 0;
}

/* {"output": "", "exit_code": -1, "error": msg, "status": status} */
static int status_result(json_t **ret, const char *status, const char *fmt, ...) _printf_(3, 4);
static int status_result(json_t **ret, const char *status, const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL;
        json_auto_t *o = json_object();
        va_list ap;
        int r;

        if (!o)
                return -ENOMEM;
        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0) {
                msg = NULL;
                return -ENOMEM;
        }
        if (tool_json_set(o, "output", json_string("")) < 0 ||
            tool_json_set(o, "exit_code", json_integer(-1)) < 0 ||
            tool_json_set(o, "error", tool_json_str(msg)) < 0 ||
            tool_json_set(o, "status", json_string(status)) < 0)
                return -ENOMEM;
        *ret = json_incref(o);
        return 0;
}

static bool is_trim_space(unsigned char c)
{
        /* str.strip(): ASCII whitespace and the information separators 0x1c..0x1f. */
        return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/* The head's end and the tail's start: where no secret is cut (docs/observability.md). */
static int output_seam(const char *s, size_t n, size_t want, bool forward, size_t *ret_cut,
                       void *userdata)
{
        bool safe;

        return redact_find_cut(userdata, REDACT_FULL, s, n, want, forward, ret_cut, &safe);
}

/* Capture -> note -> ANSI strip -> trim -> redact, as the seed's post-processing. */
static int finish_output(const struct tool_ctx *ctx, const struct capture *cap, const char *note,
                         char **ret, size_t *ret_len)
{
        struct capture_text txt = {};
        _cleanup_free_ char *s = NULL;
        char *redacted = NULL;
        size_t n, start = 0, rlen;
        int r;

        r = capture_text_cut(cap, output_seam, (void *) ctx->redactor, &txt);
        if (r < 0)
                return r;
        n = txt.len;
        if (note) {
                size_t nl = strlen(note);
                char *p = realloc(txt.text, n + nl + 1);

                if (!p) {
                        free(txt.text);
                        return -ENOMEM;
                }
                memcpy(p + n, note, nl + 1);
                txt.text = p;
                n += nl;
        }
        s = txt.text;
        n = ansi_strip(s, n);

        while (start < n && is_trim_space((unsigned char) s[start]))
                start++;
        while (n > start && is_trim_space((unsigned char) s[n - 1]))
                n--;
        memmove(s, s + start, n - start);
        n -= start;
        s[n] = 0;

        r = redact_text(ctx->redactor, REDACT_FULL, s, n, &redacted, &rlen);
        if (r < 0)
                return r;
        if (r > 0) {
                *ret = redacted;
                *ret_len = rlen;
                return 0;
        }
        *ret_len = n;
        *ret = TAKE_PTR(s);
        return 0;
}

static int terminal_run(const struct tool *t, const struct tool_ctx *ctx, json_t *args,
                        json_t **ret_result)
{
        _cleanup_free_ char *workdir_abs = NULL, *output = NULL, *command_bytes = NULL;
        _cleanup_(terminal_protect_done) struct terminal_protect protect = TERMINAL_PROTECT_NULL;
        json_auto_t *res = NULL;
        struct tool_process_result pr = {};
        struct capture cap;
        const char *command, *workdir = NULL, *guidance, *err = NULL, *meaning;
        json_t *cv, *wv;
        struct policy_verdict text_verdict;
        struct exec_supervisor_opts exec_opts;
        _cleanup_free_ char *exec_note = NULL;
        int64_t timeout = 0, def_timeout, max_timeout;
        usec_t start, timeout_deadline, deadline;
        char note[96];
        size_t output_len;
        struct stat st;
        int r;

        def_timeout = ctx->config && ctx->config->terminal_timeout > 0
                              ? ctx->config->terminal_timeout
                              : DEFAULT_TIMEOUT_SEC;
        max_timeout = ctx->config && ctx->config->terminal_max_timeout > 0
                              ? ctx->config->terminal_max_timeout
                              : DEFAULT_MAX_TIMEOUT_SEC;

        cv = json_is_object(args) ? json_object_get(args, "command") : NULL;
        if (!cv || !json_is_string(cv))
                return status_result(ret_result, "error",
                                     "Invalid command: expected string, got %s",
                                     tool_json_type_name(cv && !json_is_null(cv) ? cv : NULL));
        command = json_string_value(cv);
        /* A name put into the command (shell_quote(name)) is bytes again (docs/protocol.md). */
        r = utf8_unescape_bytes(command, strlen(command), &command_bytes, NULL);
        if (r < 0)
                return r;
        command = command_bytes;

        if (tool_arg_int(args, "timeout", 0, &timeout, &err) < 0)
                return status_result(ret_result, "error", "Invalid timeout: %s, got %s", err,
                                     tool_json_type_name(json_object_get(args, "timeout")));
        if (timeout > max_timeout) {
                *ret_result = tool_error_new("Foreground timeout %" PRId64
                                             "s exceeds the maximum of %" PRId64
                                             "s. Use a timeout up to the maximum, or split the "
                                             "work into shorter commands.",
                                             timeout, max_timeout);
                return *ret_result ? 0 : -ENOMEM;
        }
        /* Like the seed's `timeout or default`: 0 (and nonsense below it) means the default. */
        if (timeout <= 0)
                timeout = def_timeout;

        r = terminal_guard_check(command, &guidance);
        if (r < 0)
                return r;
        if (guidance)
                return status_result(ret_result, "error", "%s", guidance);

        wv = json_is_object(args) ? json_object_get(args, "workdir") : NULL;
        if (wv && !json_is_null(wv)) {
                if (!json_is_string(wv))
                        return status_result(ret_result, "error",
                                             "Invalid workdir: expected string, got %s",
                                             tool_json_type_name(wv));
                workdir = json_string_value(wv);
        }
        if (workdir && *workdir) {
                for (const char *p = workdir; *p; p++)
                        if (!workdir_char_ok((unsigned char) *p)) {
                                char rep[16];

                                return status_result(ret_result, "blocked",
                                                     "Blocked: workdir contains disallowed "
                                                     "character %s. Use a simple filesystem path "
                                                     "without shell metacharacters.",
                                                     char_repr(p, rep, sizeof(rep)));
                        }
                workdir_abs = tool_resolve_path(ctx, workdir);
        } else
                workdir_abs = strdup(ctx->cwd && ctx->cwd[0] == '/' ? ctx->cwd : "/");
        if (!workdir_abs)
                return -ENOMEM;
        if (stat(workdir_abs, &st) < 0)
                return status_result(ret_result, "error", "workdir does not exist: %s",
                                     workdir_abs);
        if (!S_ISDIR(st.st_mode))
                return status_result(ret_result, "error", "workdir is not a directory: %s",
                                     workdir_abs);

        /* The policy's deny rules on write_file/patch paths hold for the command too. */
        r = terminal_protect_build(ctx->config, ctx->cwd, tool_env_get(ctx, "HOME"), &protect);
        if (r < 0)
                return r;

        r = capture_init(&cap, OUTPUT_HEAD_MAX, OUTPUT_TAIL_MAX, 0, NULL, 0);
        if (r < 0)
                return r;
        /* The bytes around the head's end and the tail's start, to cut where no secret is. */
        r = capture_set_context(&cap, redact_stream_hold(ctx->redactor));
        if (r < 0) {
                capture_release(&cap);
                return r;
        }

        start = now_usec();
        timeout_deadline = start + (usec_t) timeout * USEC_PER_SEC;
        deadline = MIN(timeout_deadline, ctx->deadline);
        {
                char *argv[] = {(char *) SHELL_PATH, (char *) "-c", (char *) command, NULL};
                _cleanup_free_ char **sb_env = NULL; /* the strings are borrowed */
                struct sandbox_opts sb;
                struct tool_process p = {
                        .path = SHELL_PATH,
                        .fallback_path = SHELL_FALLBACK,
                        .argv = argv,
                        .envp = ctx->env,
                        .cwd = workdir_abs,
                        .stdin_fd = -1,
                        .merge_stderr = true,
                        .deadline = deadline,
                        .cancel_fd = ctx->cancel_fd,
                        .output = &cap,
                        /* ptc invisible to the command (docs/contracts.md 8); none: the seed's. */
                        .own_pid_namespace = geteuid() == 0 && pidns_init_is_available() &&
                                             ctx->config &&
                                             ctx->config->isolation != PTC_ISOLATION_NONE,
                        /* Elsewhere an init of its own: its daemons die with it too. */
                        .contain = true,
                        .protect = terminal_protect_landlock(&protect),
                };

                /* Every program the command runs is judged too (exec-supervisor.h). */
                r = exec_supervisor_opts_for(ctx, args, &exec_opts, &text_verdict);
                if (r < 0) {
                        capture_release(&cap);
                        return r;
                }
                if (r > 0)
                        p.exec_policy = &exec_opts;
                if (ctx->config && ctx->config->terminal_strict) {
                        r = strict_sandbox(ctx->config, argv, ctx->env, workdir_abs, &sb, &sb_env,
                                           pr.error, sizeof(pr.error));
                        if (r < 0) {
                                capture_release(&cap);
                                return status_result(ret_result, "error",
                                                     "Failed to run command: terminal isolation "
                                                     "'strict' cannot be set up: %s",
                                                     pr.error);
                        }
                        p.sandbox = &sb;
                }
                r = tool_process_run(&p, &pr);
        }
        if (r < 0 && pr.error[0]) {
                capture_release(&cap);
                return status_result(ret_result, "error",
                                     "Failed to run command: terminal isolation 'strict' cannot "
                                     "be set up: %s",
                                     pr.error);
        }
        if (r < 0) {
                capture_release(&cap);
                if (r == -ENOENT && stat(workdir_abs, &st) < 0)
                        return status_result(ret_result, "error", "workdir does not exist: %s",
                                             workdir_abs);
                return status_result(ret_result, "error", "Failed to run command: %s",
                                     strerror(-r));
        }

        if (pr.cancelled) {
                pr.exit_code = 130;
                (void) snprintf(note, sizeof(note), "\n[Command interrupted]");
        } else if (pr.timed_out) {
                int64_t secs = timeout;

                /* Cut short by the execution's own deadline: say how long it really ran. */
                if (deadline < timeout_deadline)
                        secs = (int64_t) ((now_usec() - start + USEC_PER_SEC / 2) / USEC_PER_SEC);
                pr.exit_code = 124;
                (void) snprintf(note, sizeof(note), "\n[Command timed out after %" PRId64 "s]",
                                secs);
        } else
                note[0] = 0;

        exec_note = exec_supervisor_note(&pr.exec, note);
        if (!exec_note) {
                capture_release(&cap);
                return -ENOMEM;
        }
        r = finish_output(ctx, &cap, exec_note[0] ? exec_note : NULL, &output, &output_len);
        capture_release(&cap);
        if (r < 0)
                return r;

        res = json_object();
        if (!res || tool_json_set(res, "output", tool_json_string(output, output_len)) < 0 ||
            tool_json_set(res, "exit_code", json_integer(pr.exit_code)) < 0 ||
            tool_json_set(res, "error", json_null()) < 0)
                return -ENOMEM;
        if (ctx->config && !pr.exec.supervised &&
            tool_json_set(res, "warnings", exec_supervisor_warnings(pr.exec_why)) < 0)
                return -ENOMEM;
        meaning = exit_code_meaning(command, pr.exit_code);
        if (meaning && tool_json_set(res, "exit_code_meaning", json_string(meaning)) < 0)
                return -ENOMEM;
        if (terminal_protect_add_warnings(&protect, res) < 0)
                return -ENOMEM;
        *ret_result = TAKE_PTR(res);
        return 0;
}

/*
 * The seed's terminal parameters for jobs that outlive the call: a script may send them
 * (the seed's execute_code drops them, docs/seed.md 1.5 step 4), this foreground-only
 * terminal has none of them, so they are dropped silently, never an error.
 */
static const char *const terminal_dropped_args[] = {
        "background", "pty",       "notify_on_complete", "watch_patterns",
        "notify",     "heartbeat", "persist_on_release", NULL,
};

const struct tool_def tool_def_terminal = {
        .name = "terminal",
        .description = "Run a shell command (foreground only). Returns dict with \"output\" and "
                       "\"exit_code\".",
        .parameters_json = "{\"type\": \"object\", \"properties\": {"
                           "\"command\": {\"type\": \"string\", \"description\": "
                           "\"The shell command to run (bash -c)\"}, "
                           "\"timeout\": {\"type\": \"integer\", \"description\": "
                           "\"Seconds before the command is killed (default: the configured "
                           "terminal timeout)\", \"default\": null}, "
                           "\"workdir\": {\"type\": \"string\", \"description\": "
                           "\"Working directory (default: the execution's working directory)\"}}, "
                           "\"required\": [\"command\"]}",
        .returns = "Foreground only (no background/pty). Returns {\"output\": \"...\", "
                   "\"exit_code\": N}",
        .run = terminal_run,
        .dropped_args = terminal_dropped_args,
        .refusal_fields_json = "{\"output\": \"\", \"exit_code\": -1}",
};
