/* SPDX-License-Identifier: MIT */
#include "core/exec/exec.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/path-util.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "core/env/env.h"
#include "core/events/events.h"
#include "core/events/trace.h"
#include "core/exec/exec-internal.h"
#include "core/exec/exec-trace.h"
#include "core/exec/result.h"
#include "core/exec/staging.h"
#include "core/loop/loop.h"
#include "core/output/capture.h"
#include "core/policy/path-protect.h"
#include "core/registry/registry.h"
#include "core/remote/backend.h"
#include "core/rpc/rpc-server.h"
#include "core/sandbox/cgroup.h"
#include "core/sandbox/landlock.h"
#include "core/sandbox/sandbox-cwd.h"
#include "core/sandbox/sandbox.h"
#include "core/spawn/interpreter.h"
#include "core/spawn/proc-tree.h"
#include "core/stubs/stubs.h"
#include "core/tools/tool.h"

/* After the script exits, how long leftover writers may keep its pipes open. */
#define DRAIN_USEC (500 * USEC_PER_MSEC)
#define READS_PER_WAKEUP 4

enum phase {
        PHASE_RUNNING,
        PHASE_TERMINATING, /* SIGINT/SIGTERM sent, waiting for the grace period */
        PHASE_KILLED,      /* SIGKILL sent to all but the init */
        PHASE_INIT_KILLED, /* the init did not end within the grace: SIGKILL to it too */
};

struct execution {
        const struct exec_opts *o;
        struct loop *loop;
        struct staging staging;
        struct rpc_server *rpc;
        struct capture out, err;
        struct tool_ctx tool_ctx;
        char **child_env;

        pid_t pid; /* the script, or the sandbox's init */
        int pidfd;
        int status_fd;            /* the sandbox init's status pipe, or -1 */
        struct run_cgroup cgroup; /* the run's cgroup v2 leaf, if it has one */
        struct loop_source *pid_src;
        int out_fd, err_fd;
        struct loop_source *out_src, *err_src;
        int timer_fd;
        int sig_fd;
        int cancel_fd; /* eventfd written when tools must stop */
        /* The deadline's clock, stopped while calls wait for approval; wake_fd is written
         * when such a wait ends (core/policy/pause-clock.h). */
        struct pause_clock clock;
        int wake_fd;

        enum phase phase;
        enum exec_status status; /* set when the run is stopped early */
        bool stopped;            /* timeout or interrupt decided the status */
        const char *interrupt_reason;
        bool reaped;
        int wstatus;
        bool draining_timed_out;
        usec_t start, deadline;
        usec_t spawned; /* the script started: its span runs from here to its reaping */
        /* With a trace only (exec-trace.h): the sandbox's steps, and the interpreter's
         * start, over when it opens the script (interp_fd, an inotify watch). */
        struct sandbox_timings timings;
        int interp_fd;
        struct loop_source *interp_src;
        usec_t interp_ready;
};

void exec_arm_timer(int timer_fd, usec_t when)
{
        struct itimerspec its = {};
        usec_t now = now_usec();
        usec_t rel = when > now ? when - now : 1;

        its.it_value.tv_sec = (time_t) (rel / USEC_PER_SEC);
        its.it_value.tv_nsec = (long) (rel % USEC_PER_SEC) * 1000;
        (void) timerfd_settime(timer_fd, 0, &its, NULL);
}

static void arm_timer(struct execution *e, usec_t when)
{
        exec_arm_timer(e->timer_fd, when);
}

static void signal_tools(struct execution *e)
{
        uint64_t one = 1;

        (void) !write(e->cancel_fd, &one, sizeof(one));
}

/*
 * Stop the run: the script gets SIGINT, so Python unwinds (finally blocks
 * run, buffered output is flushed), everything else it started gets SIGTERM;
 * SIGKILL for all follows after the grace period.
 */
static void begin_stop(struct execution *e, enum exec_status why, const char *reason)
{
        if (e->phase != PHASE_RUNNING || e->reaped)
                return;
        e->stopped = true;
        e->status = why;
        e->interrupt_reason = reason;
        e->phase = PHASE_TERMINATING;
        /*
         * SIGINT to the script's main thread, before the tools are cancelled. Python
         * handles signals only in its main thread; sent to the process, the signal may land
         * on another thread (the stub's reader), the main thread then wakes with the
         * cancelled call's answer and runs on for a few bytecodes before it notices
         * (test_timeout_cancels_in_flight_tool_call printed 'never' once in CI). Sent to
         * the main thread, its blocked wait returns EINTR and KeyboardInterrupt is raised
         * there; cancelling only afterwards means no answer can beat the signal.
         */
        if (e->status_fd >= 0)
                /* The sandbox's init forwards: SIGINT to the script's main thread, SIGTERM to
                 * every other process in there. */
                (void) kill(e->pid, SIGINT);
        else if (syscall(SYS_tgkill, e->pid, e->pid, SIGINT) < 0)
                (void) kill(e->pid, SIGINT);
        signal_tools(e);
        if (e->status_fd < 0)
                (void) proc_tree_signal(e->pid, false, SIGTERM);
        arm_timer(e, now_usec() + EXEC_KILL_GRACE_USEC);
}

static bool is_done(const struct execution *e)
{
        return e->reaped && ((e->out_fd < 0 && e->err_fd < 0) || e->draining_timed_out);
}

static void close_pipe(struct execution *e, bool is_err)
{
        if (is_err) {
                loop_remove(e->err_src);
                e->err_src = NULL;
                e->err_fd = safe_close(e->err_fd);
        } else {
                loop_remove(e->out_src);
                e->out_src = NULL;
                e->out_fd = safe_close(e->out_fd);
        }
}

static void on_pipe(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct execution *e = userdata;
        bool is_err = fd == e->err_fd;
        struct capture *c = is_err ? &e->err : &e->out;
        char buf[64 * 1024];

        for (int i = 0; i < READS_PER_WAKEUP; i++) {
                ssize_t k = read(fd, buf, sizeof(buf));
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return;
                        close_pipe(e, is_err);
                        return;
                }
                if (k == 0) {
                        close_pipe(e, is_err);
                        return;
                }
                /* A spill write failure only loses the spill, never the capture. */
                (void) capture_feed(c, buf, (size_t) k);
                event_output(e->o->events, is_err, buf, (size_t) k);
                if (e->o->on_output)
                        e->o->on_output(e->o->on_output_userdata, is_err, buf, (size_t) k);
                if ((size_t) k < sizeof(buf))
                        return;
        }
}

static void child_exited(struct execution *e)
{
        siginfo_t si = {};

        if (e->reaped)
                return;
        if (waitid(P_PID, (id_t) e->pid, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
                return;
        e->reaped = true;
        if (e->status_fd >= 0) {
                /* The init reports the script's status; no report means it was killed. */
                if (sandbox_read_status(e->status_fd, &e->wstatus) < 0)
                        e->wstatus = -SIGKILL;
                e->status_fd = safe_close(e->status_fd);
        } else if (si.si_code == CLD_EXITED)
                e->wstatus = si.si_status;
        else
                e->wstatus = -si.si_status; /* killed by a signal: -N, as Python reports it */
        loop_remove(e->pid_src);
        e->pid_src = NULL;
        e->pidfd = safe_close(e->pidfd);

        /*
         * The script is gone, and its init killed what it left running (background jobs,
         * daemons reparented to the init) before it exited; its cgroup goes too, and tools
         * still working for it are told to stop.
         */
        signal_tools(e);
        run_cgroup_kill(&e->cgroup);
        arm_timer(e, now_usec() + DRAIN_USEC);
}

static void on_pidfd(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        child_exited(userdata);
}

static void on_timer(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct execution *e = userdata;
        uint64_t n;

        (void) !read(fd, &n, sizeof(n));
        if (e->reaped) {
                e->draining_timed_out = true;
                return;
        }
        switch (e->phase) {
        case PHASE_RUNNING: {
                bool paused;
                usec_t d = pause_clock_deadline(&e->clock, e->deadline, &paused);

                /* A call waits for approval: the wait's end re-arms (on_wake()). */
                if (paused)
                        break;
                if (d > now_usec()) {
                        arm_timer(e, d);
                        break;
                }
                exec_event_timeout(e->o);
                begin_stop(e, EXEC_TIMEOUT, NULL);
                break;
        }
        case PHASE_TERMINATING:
                /*
                 * Everything below the init, stopped and then killed, so nothing forked
                 * meanwhile escapes. The init lives on to reap it all (it is their
                 * subreaper: killed first, it would hand them to whoever is above ptc),
                 * then reports and exits; it is killed too if it has not within the grace.
                 */
                e->phase = PHASE_KILLED;
                (void) proc_tree_kill(e->pid, false);
                arm_timer(e, now_usec() + EXEC_KILL_GRACE_USEC);
                break;
        case PHASE_KILLED:
                e->phase = PHASE_INIT_KILLED;
                (void) proc_tree_kill(e->pid, true);
                break;
        case PHASE_INIT_KILLED:
        default:
                break;
        }
}

/* The interpreter opened the script: it is initialised (a trace's "interpreter start"). */
static void on_interpreter_ready(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct execution *e = userdata;

        e->interp_ready = now_usec();
        loop_remove(s);
        e->interp_src = NULL;
        e->interp_fd = safe_close(fd);
}

/* The last wait for approval ended: the deadline moved by the pause. */
static void on_wake(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct execution *e = userdata;
        bool paused;
        usec_t d;

        pause_clock_drain(fd);
        d = pause_clock_deadline(&e->clock, e->deadline, &paused);
        if (e->phase == PHASE_RUNNING && !e->reaped && !paused)
                arm_timer(e, d);
}

static void on_signal(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct execution *e = userdata;
        struct signalfd_siginfo si;

        while (read(fd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
                if (si.ssi_signo == SIGCHLD)
                        child_exited(e);
                else if (si.ssi_signo == SIGINT)
                        begin_stop(e, EXEC_INTERRUPTED, "SIGINT");
                else if (si.ssi_signo == SIGTERM)
                        begin_stop(e, EXEC_INTERRUPTED, "SIGTERM");
                else if (si.ssi_signo == SIGHUP)
                        begin_stop(e, EXEC_INTERRUPTED, "SIGHUP");
        }
}

static void on_cancel(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct execution *e = userdata;
        const char *reason = NULL;

        if (e->o->cancel_reason)
                reason = __atomic_load_n(e->o->cancel_reason, __ATOMIC_ACQUIRE);
        begin_stop(e, EXEC_INTERRUPTED, reason ? reason : "cancelled");
        /* Level-triggered and not ours to drain: stop watching it. */
        loop_remove(s);
}

int exec_make_token(char out[65])
{
        unsigned char raw[32];

        if (getrandom(raw, sizeof(raw), 0) != (ssize_t) sizeof(raw))
                return -errno ? -errno : -EIO;
        for (size_t i = 0; i < sizeof(raw); i++)
                snprintf(out + 2 * i, 3, "%02x", raw[i]);
        explicit_wipe(raw, sizeof(raw));
        return 0;
}

int exec_child_env(const struct exec_opts *o, const struct staging *st, const char *token,
                   char ***ret)
{
        _cleanup_strv_free_ char **env = NULL;
        _cleanup_free_ char *pp = NULL;
        const char *inherited;
        int r;

        r = strv_copy(o->base_env, &env);
        if (r < 0)
                return r;
        inherited = env_get(o->base_env, "PYTHONPATH");
        if (inherited && *inherited) {
                if (asprintf(&pp, "%s:%s", st->dir, inherited) < 0)
                        return -ENOMEM;
        } else {
                pp = strdup(st->dir);
                if (!pp)
                        return -ENOMEM;
        }
        if ((r = env_set(&env, "PTC_RPC_SOCKET", st->socket_path)) < 0 ||
            (r = env_set(&env, "PTC_RPC_TOKEN", token)) < 0 ||
            (r = env_set(&env, "PYTHONDONTWRITEBYTECODE", "1")) < 0 ||
            (r = env_set(&env, "PYTHONIOENCODING", "utf-8:backslashreplace")) < 0 ||
            (r = env_set(&env, "PYTHONUTF8", "1")) < 0 || (r = env_set(&env, "PYTHONPATH", pp)) < 0)
                return r;
        /* Someone watches the output live (events): it goes out as it is printed. */
        if (o->events && (r = env_set(&env, "PYTHONUNBUFFERED", "1")) < 0)
                return r;
        *ret = TAKE_PTR(env);
        return 0;
}

static bool code_is_blank(const char *code, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (!isspace((unsigned char) code[i]))
                        return false;
        return true;
}

/* A warning for the host (exec_opts.on_warning): the library prints nothing. */
_printf_(2, 3) static void warn(const struct exec_opts *o, const char *fmt, ...)
{
        _cleanup_free_ char *line = NULL;
        va_list ap;

        if (!o->on_warning)
                return;
        va_start(ap, fmt);
        if (vasprintf(&line, fmt, ap) < 0)
                line = NULL; /* out of memory: the warning is lost, the run goes on */
        va_end(ap);
        if (line)
                o->on_warning(o->on_warning_userdata, line);
}

/*
 * What the policy's path rules cannot hold terminal commands and the script's own writes to
 * here (Landlock missing, isolation none, name patterns): said once a start, a run's or a
 * session kernel's (core/policy/path-protect.h).
 */
static int warn_path_protect(const struct exec_opts *o)
{
        const struct ptc_config *c = o->config;
        _cleanup_strv_free_ char **lines = NULL;
        unsigned who = 0;
        int r;

        if (!path_protect_wanted(c))
                return 0;
        if (o->registry && registry_find(o->registry, "terminal"))
                who |= PATH_PROTECT_TERMINAL;
        if (c->isolation != PTC_ISOLATION_NONE)
                who |= PATH_PROTECT_SCRIPT;
        r = path_protect_describe(c, landlock_abi(), who, &lines);
        if (r >= 0 && c->isolation == PTC_ISOLATION_NONE)
                r = path_protect_unbound(c, "isolation none", PATH_PROTECT_SCRIPT, &lines);
        if (r < 0)
                return r;
        for (char **l = lines; l && *l; l++)
                warn(o, "%s", *l);
        return 0;
}

/*
 * The script's own ruleset (path-protect.h) for the layers in @sb, built at the first start
 * and again when the namespaces layer came or went (inside it the child opens the paths in
 * its own root, where /tmp is private); none without the Landlock layer. @p keeps what
 * sb->protect points to; *@built_for is -1 before the first build, then whether it was for
 * the namespaces layer. Returns 0 or -ENOMEM.
 */
static int script_protect(const struct exec_opts *o, const struct exec_child_opts *co,
                          struct sandbox_opts *sb, struct path_protect *p, int *built_for)
{
        bool own_root = sb->layers & (1u << SANDBOX_LAYER_NAMESPACES);
        int r;

        sb->protect = NULL;
        if (!path_protect_wanted(o->config) || sb->landlock_abi < 1 ||
            !(sb->layers & (1u << SANDBOX_LAYER_LANDLOCK)))
                return 0;
        if (*built_for != (int) own_root) {
                bool first = *built_for < 0;

                path_protect_done(p);
                r = path_protect_build(o->config, co->cwd, env_get(o->base_env, "HOME"),
                                       PATH_PROTECT_SCRIPT | PATH_PROTECT_QUIET |
                                               (own_root ? PATH_PROTECT_OWN_ROOT : 0),
                                       p);
                if (r < 0)
                        return r;
                *built_for = own_root;
                for (char **w = p->warnings; first && w && *w; w++)
                        warn(o, "%s", *w);
        }
        sb->protect = path_protect_landlock(p);
        return 0;
}

/*
 * The script's TMPDIR and HOME (sandbox_env()'s "/tmp") on its private /dev/shm instead: the
 * path rules leave nothing new to be made directly in its /tmp, where its working directory
 * lies (path_protect.tmp_held), and tempfile would find no directory to use.
 */
static void env_tmp_on_shm(char **env)
{
        static char tmpdir_shm[] = "TMPDIR=/dev/shm", home_shm[] = "HOME=/dev/shm";

        for (; env && *env; env++)
                if (strcmp(*env, "TMPDIR=/tmp") == 0)
                        *env = tmpdir_shm;
                else if (strcmp(*env, "HOME=/tmp") == 0)
                        *env = home_shm;
}

/* The layers an isolation level asks for, before anything was tried. */
static int wanted_layers(const struct exec_opts *o, enum ptc_isolation level, int ll_abi,
                         unsigned *ret, struct diag *reterr)
{
        char why[_SANDBOX_LAYER_MAX][256];
        unsigned missing = sandbox_kernel_missing(ll_abi, why);

        for (int l = 0; l < _SANDBOX_LAYER_MAX; l++) {
                const char *name = sandbox_layer_to_string((enum sandbox_layer) l);

                if (!(missing & (1u << l)))
                        continue;
                if (level == PTC_ISOLATION_STRICT)
                        return diag_set(reterr, -EOPNOTSUPP,
                                        "isolation 'strict' cannot be set up: %s: %s", name,
                                        why[l]);
                warn(o, "isolation auto: %s: %s; running without the %s layer (see ptc doctor)",
                     name, why[l], name);
        }
        *ret = SANDBOX_LAYERS_ALL & ~missing;
        return 0;
}

int exec_start_confined(const struct exec_opts *o, const struct exec_child_opts *co,
                        struct sandbox_proc *ret, struct run_cgroup *cgroup, struct diag *reterr)
{
        const struct ptc_config *c = o->config;
        char *argv[] = {(char *) o->python, (char *) co->script_path, NULL};
        _cleanup_strv_free_ char **trees = NULL;
        _cleanup_free_ char **ns_env = NULL; /* the strings are co->env's */
        _cleanup_(path_protect_done) struct path_protect protect = PATH_PROTECT_NULL;
        uint64_t nofile = SANDBOX_NOFILE;
        struct sandbox_opts sb;
        int ll_abi, protect_for = -1, r;

        /* What every level shares; each adds its own below. */
        sb = (struct sandbox_opts){
                .path = o->python,
                .argv = argv,
                .cwd = co->cwd,
                .staging_dir = co->staging_dir,
                .stdin_fd = co->stdin_fd,
                .outlive_script = co->outlive_script,
                .stdout_fd = co->stdout_fd,
                .stderr_fd = co->stderr_fd,
                .timings = co->timings,
        };
        /*
         * The working directory is read-write inside every layer: `/` or a system tree there
         * makes them void (docs/isolation.md). Refused here, where the script is started,
         * whatever path led here; `none` confines nothing, so it only says so. Strict mode's
         * directory is ptc's own staging dir, wherever TMPDIR is.
         */
        if (c->mode != PTC_MODE_PROJECT) {
                /* nothing to judge */
        } else if (c->isolation != PTC_ISOLATION_NONE) {
                r = sandbox_check_cwd(co->cwd, reterr);
                if (r < 0)
                        return r;
        } else {
                char why[128];

                if (sandbox_cwd_refused(co->cwd, why, sizeof(why)) > 0)
                        warn(o,
                             "isolation none: the working directory '%s' is %s; the script "
                             "may write wherever ptc can",
                             co->cwd, why);
        }
        /* The policy's deny rules on write_file/patch paths bind the script's own writes too. */
        r = warn_path_protect(o);
        if (r < 0)
                return diag_set(reterr, r, "out of memory");
        if (c->isolation == PTC_ISOLATION_NONE) {
                /*
                 * No layer, but still under an init of its own (sandbox-init.c): a child
                 * subreaper that kills what the script leaves behind, so no execution's
                 * leftovers are another's or the host process's to find.
                 */
                sb.envp = co->env;
                sb.network = true;
                sb.plain_nofile = o->child_nofile;
                return sandbox_spawn(&sb, ret, NULL, reterr);
        }

        ll_abi = landlock_abi();
        sb.network = c->network;
        sb.landlock_abi = ll_abi;
        r = wanted_layers(o, c->isolation, ll_abi, &sb.layers, reterr);
        if (r < 0)
                return r;
        if (o->child_nofile && o->child_nofile->rlim_cur < nofile)
                nofile = o->child_nofile->rlim_cur;
        sb.limits = sandbox_limits_for((uint64_t) c->memory_mb, (uint64_t) c->pids, nofile,
                                       co->cpu_seconds);
        /* A cgroup leaf of its own where ptc may make one (cgroup.h); the rlimits stay. */
        {
                struct diag why = {};

                sb.cgroup = run_cgroup_try(sb.limits.data_bytes, sb.limits.pids, cgroup, &why);
                /* Where ptc may make cgroups, one it could not make is a limit weakened. */
                if (!sb.cgroup && why.message[0])
                        warn(o, "isolation: running without a cgroup: %s", why.message);
        }
        r = interpreter_trees(o->python, env_get(o->base_env, "PYTHONPATH"), &trees);
        r = r ?: sandbox_env(co->env, sb.cwd, &ns_env);
        if (r < 0)
                return diag_set(reterr, r, "out of memory");
        sb.ro_paths = trees;

        for (;;) {
                enum sandbox_layer failed;
                struct diag why = {};

                sb.envp = sb.layers & (1u << SANDBOX_LAYER_NAMESPACES) ? ns_env : co->env;
                r = script_protect(o, co, &sb, &protect, &protect_for);
                if (r < 0)
                        return diag_set(reterr, r, "out of memory");
                if (sb.protect && protect.tmp_held && sb.envp == ns_env)
                        env_tmp_on_shm(ns_env);
                r = sandbox_spawn(&sb, ret, &failed, &why);
                if (r >= 0) {
                        ret->layers = sb.layers;
                        if (ret->cgroup_error)
                                warn(o,
                                     "isolation: running without a cgroup: cannot start inside "
                                     "%s: %s (the rlimits still bound memory and processes)",
                                     sb.cgroup && sb.cgroup->path ? sb.cgroup->path : "?",
                                     strerror(ret->cgroup_error));
                        break;
                }
                if (c->isolation == PTC_ISOLATION_STRICT)
                        return diag_set(reterr, r, "isolation 'strict' cannot be set up: %s",
                                        why.message);
                if (failed == _SANDBOX_LAYER_MAX || !(sb.layers & (1u << failed)))
                        return diag_set(reterr, r, "cannot start the script: %s", why.message);
                warn(o, "isolation auto: %s; running without the %s layer (see ptc doctor)",
                     why.message, sandbox_layer_to_string(failed));
                sb.layers &= ~(1u << failed);
                if (failed == SANDBOX_LAYER_LANDLOCK && sb.protect) {
                        _cleanup_strv_free_ char **lines = NULL;

                        if (path_protect_unbound(c, "isolation auto: no landlock layer",
                                                 PATH_PROTECT_SCRIPT, &lines) < 0)
                                return diag_set(reterr, -ENOMEM, "out of memory");
                        for (char **l = lines; l && *l; l++)
                                warn(o, "%s", *l);
                }
        }
        return 0;
}

static int start_child(struct execution *e, int out_fd, int err_fd, struct diag *reterr)
{
        const struct exec_child_opts co = {
                .script_path = e->staging.script_path,
                .env = e->child_env,
                .cwd = e->tool_ctx.cwd,
                .staging_dir = e->staging.dir,
                .stdout_fd = out_fd,
                .stderr_fd = err_fd,
                /* RLIMIT_CPU is a backstop behind the wall-clock deadline. */
                .cpu_seconds = (uint64_t) e->o->config->timeout * 2 + 10,
                .timings = e->o->trace ? &e->timings : NULL,
        };
        struct sandbox_proc sp;
        int r;

        r = exec_start_confined(e->o, &co, &sp, &e->cgroup, reterr);
        if (r < 0)
                return r;
        e->pid = sp.pid;
        e->pidfd = sp.pidfd;
        e->status_fd = sp.status_fd;
        return 0;
}

static int setup(struct execution *e, struct diag *reterr)
{
        const struct exec_opts *o = e->o;
        const struct ptc_config *c = o->config;
        _cleanup_free_ char *module = NULL;
        char token[65];
        int outp[2] = {-1, -1}, errp[2] = {-1, -1};
        struct rpc_server_opts ro;
        sigset_t mask;
        usec_t t0;
        int r;

        t0 = now_usec();
        r = stubs_generate(o->registry, c->module_name, &module);
        if (r < 0)
                return diag_set(reterr, r, "cannot generate the tools module: %s", strerror(-r));
        trace_span_now(o->trace, "stubs", "setup", t0, NULL);
        t0 = now_usec();
        r = staging_create(&e->staging, o->code, o->code_len, c->module_name, module);
        if (r < 0)
                return diag_set(reterr, r, "cannot create the staging directory: %s", strerror(-r));
        trace_span_now(o->trace, "staging", "setup", t0, NULL);
        r = exec_make_token(token);
        if (r < 0)
                return diag_set(reterr, r, "cannot generate the RPC token: %s", strerror(-r));

        e->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        e->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        e->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (e->cancel_fd < 0 || e->timer_fd < 0 || e->wake_fd < 0)
                return diag_set(reterr, -errno, "cannot create event fds: %m");
        e->clock.wake_fd = e->wake_fd;

        e->tool_ctx = (struct tool_ctx){
                .config = c,
                .cwd = c->mode == PTC_MODE_STRICT ? e->staging.dir : o->cwd,
                .env = o->base_env,
                .deadline = e->deadline,
                .cancel_fd = e->cancel_fd,
                .redactor = o->redactor,
                .python = o->python,
                .approver = o->approver,
                .clock = &e->clock,
        };

        r = loop_new(&e->loop);
        if (r < 0)
                return diag_set(reterr, r, "cannot create the event loop: %s", strerror(-r));
        ro = (struct rpc_server_opts){
                .socket_path = e->staging.socket_path,
                .token = token,
                .registry = o->registry,
                .tool_ctx = &e->tool_ctx,
                .redactor = o->redactor,
                .max_tool_calls = c->max_tool_calls,
                .log_calls = o->log_calls,
                .on_call = o->on_call,
                .on_call_userdata = o->on_call_userdata,
                .events = o->events,
                .trace = o->trace,
        };
        t0 = now_usec();
        r = rpc_server_new(&ro, &e->rpc);
        if (r < 0)
                return diag_set(reterr, r, "cannot start the RPC server on '%s': %s",
                                e->staging.socket_path, strerror(-r));
        trace_span_now(o->trace, "rpc server", "setup", t0, NULL);

        r = exec_child_env(o, &e->staging, token, &e->child_env);
        explicit_wipe(token, sizeof(token));
        if (r < 0)
                return diag_set(reterr, r, "cannot build the child environment: %s", strerror(-r));

        r = exec_capture_init(o, &e->out, &e->err);
        if (r < 0)
                return diag_set(reterr, r, "cannot set up output capture: %s", strerror(-r));

        /* Our read ends are non-blocking; the child's write ends stay blocking. */
        if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
                r = -errno;
                safe_close(outp[0]);
                safe_close(outp[1]);
                return diag_set(reterr, r, "cannot create pipes: %s", strerror(-r));
        }
        e->out_fd = outp[0];
        e->err_fd = errp[0];
        if (fd_set_nonblock(e->out_fd, true) < 0 || fd_set_nonblock(e->err_fd, true) < 0) {
                safe_close(outp[1]);
                safe_close(errp[1]);
                return diag_set(reterr, -errno, "cannot set up pipes: %m");
        }

        /* A trace sees the interpreter open the script; without a watch, no such span. */
        if (o->trace)
                e->interp_fd = exec_interpreter_watch(e->staging.script_path);
        t0 = now_usec();
        r = start_child(e, outp[1], errp[1], reterr);
        safe_close(outp[1]);
        safe_close(errp[1]);
        if (r < 0)
                return r;
        /* The sandbox's layers are set up in the child, before the interpreter starts. */
        e->spawned = now_usec();
        trace_span(o->trace, "spawn", "setup", t0, e->spawned,
                   json_pack("{s:s}", "isolation", config_isolation_to_string(c->isolation)));
        exec_trace_sandbox(o->trace, &e->timings, e->spawned);
        if (e->interp_fd >= 0) {
                exec_interpreter_watch_forget(e->interp_fd);
                r = loop_add(e->loop, e->interp_fd, EPOLLIN, on_interpreter_ready, e,
                             &e->interp_src);
                if (r < 0)
                        return diag_set(reterr, r, "event loop: %s", strerror(-r));
        }

        if ((r = loop_add(e->loop, e->out_fd, EPOLLIN, on_pipe, e, &e->out_src)) < 0 ||
            (r = loop_add(e->loop, e->err_fd, EPOLLIN, on_pipe, e, &e->err_src)) < 0 ||
            (r = loop_add(e->loop, e->timer_fd, EPOLLIN, on_timer, e, NULL)) < 0 ||
            (r = loop_add(e->loop, e->wake_fd, EPOLLIN, on_wake, e, NULL)) < 0)
                return diag_set(reterr, r, "event loop: %s", strerror(-r));

        sigemptyset(&mask);
        if (o->handle_signals) {
                sigaddset(&mask, SIGINT);
                sigaddset(&mask, SIGTERM);
                sigaddset(&mask, SIGHUP);
        }
        if (e->pidfd >= 0) {
                r = loop_add(e->loop, e->pidfd, EPOLLIN, on_pidfd, e, &e->pid_src);
                if (r < 0)
                        return diag_set(reterr, r, "event loop: %s", strerror(-r));
        } else
                /* No pidfd (old kernel, valgrind): SIGCHLD, blocked by the caller. */
                sigaddset(&mask, SIGCHLD);
        if (!sigisemptyset(&mask)) {
                e->sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
                if (e->sig_fd < 0)
                        return diag_set(reterr, -errno, "signalfd: %m");
                r = loop_add(e->loop, e->sig_fd, EPOLLIN, on_signal, e, NULL);
                if (r < 0)
                        return diag_set(reterr, r, "event loop: %s", strerror(-r));
        }
        if (o->cancel_fd >= 0) {
                r = loop_add(e->loop, o->cancel_fd, EPOLLIN, on_cancel, e, NULL);
                if (r < 0)
                        return diag_set(reterr, r, "event loop: %s", strerror(-r));
        }
        arm_timer(e, e->deadline);
        /* The child might already be gone (SIGCHLD before the signalfd existed). */
        if (e->pidfd < 0)
                child_exited(e);
        return 0;
}

static void teardown(struct execution *e)
{
        if (e->pid > 0 && !e->reaped) {
                (void) proc_tree_kill(e->pid, true);
                (void) waitpid(e->pid, NULL, 0);
                e->reaped = true;
        }
        if (e->cancel_fd >= 0)
                signal_tools(e);
        e->rpc = rpc_server_free(e->rpc);
        (void) run_cgroup_destroy(&e->cgroup, 2 * USEC_PER_SEC);
        loop_remove(e->out_src);
        loop_remove(e->err_src);
        loop_remove(e->pid_src);
        loop_remove(e->interp_src);
        e->loop = loop_free(e->loop);
        safe_close(e->out_fd);
        safe_close(e->err_fd);
        safe_close(e->pidfd);
        safe_close(e->timer_fd);
        safe_close(e->sig_fd);
        safe_close(e->cancel_fd);
        safe_close(e->status_fd);
        safe_close(e->interp_fd);
        pause_clock_done(&e->clock);
        safe_close(e->wake_fd);
        capture_release(&e->out);
        capture_release(&e->err);
        staging_remove(&e->staging);
        strv_free(e->child_env);
}

void exec_event_timeout(const struct exec_opts *o)
{
        event_emit(o->events, "limit",
                   json_pack("{s:s, s:f}", "limit", "timeout", "timeout", o->config->timeout));
}

static int finish(struct execution *e, json_t **ret, enum exec_status *ret_status)
{
        struct result_input in = {};
        json_auto_t *log = NULL;

        /* Tools first: nothing may still be writing when we assemble. */
        rpc_server_shutdown(e->rpc, 5000);

        if (e->stopped)
                in.status = e->status;
        else
                in.status = e->wstatus == 0 ? EXEC_SUCCESS : EXEC_ERROR;
        in.have_exit_code = e->reaped;
        in.exit_code = e->wstatus;
        in.duration = (double) (now_usec() - e->start) / USEC_PER_SEC;
        in.calls = rpc_server_calls_made(e->rpc);
        in.interrupt_reason = e->interrupt_reason;
        if (e->o->log_calls) {
                /* Redacted by the RPC server as each call was made. */
                log = rpc_server_log(e->rpc);
                in.log = log;
        }
        return exec_result(e->o, &e->out, &e->err, &in, false, ret, ret_status);
}

int exec_run(const struct exec_opts *o, json_t **ret, enum exec_status *ret_status,
             struct diag *reterr)
{
        struct execution e = {
                .o = o,
                .pid = -1,
                .pidfd = -EBADF,
                .out_fd = -EBADF,
                .err_fd = -EBADF,
                .timer_fd = -EBADF,
                .wake_fd = -EBADF,
                .sig_fd = -EBADF,
                .cancel_fd = -EBADF,
                .status_fd = -EBADF,
                .interp_fd = -EBADF,
                .cgroup = RUN_CGROUP_NULL,
        };
        usec_t t0;
        int r;

        e.start = now_usec();
        e.deadline = e.start + (usec_t) (o->config->timeout * USEC_PER_SEC);

        if (!o->code || code_is_blank(o->code, o->code_len)) {
                struct result_input in = {
                        .status = EXEC_ERROR,
                        .stdout_text = "",
                        .error = "No code provided.",
                };
                *ret = result_build(&in);
                *ret_status = EXEC_ERROR;
                return *ret ? 0 : -ENOMEM;
        }

        if (o->backend && o->backend->kind != BACKEND_LOCAL)
                return exec_run_remote(o, ret, ret_status, reterr);

        pause_clock_init(&e.clock, -1); /* its fd comes with setup() */
        r = setup(&e, reterr);
        if (r < 0) {
                teardown(&e);
                return r;
        }
        while (!is_done(&e)) {
                r = loop_run_once(e.loop, -1);
                if (r < 0) {
                        diag_set(reterr, r, "event loop failed: %s", strerror(-r));
                        teardown(&e);
                        return r;
                }
        }
        trace_span_now(o->trace, "script", "script", e.spawned, NULL);
        if (e.interp_ready)
                trace_span(o->trace, "interpreter start", "script", e.spawned, e.interp_ready,
                           NULL);
        t0 = now_usec();
        r = finish(&e, ret, ret_status);
        trace_span_now(o->trace, "result", "output", t0, NULL);
        t0 = now_usec();
        teardown(&e);
        trace_span_now(o->trace, "teardown", "teardown", t0, NULL);
        if (r < 0)
                return diag_set(reterr, r, "cannot assemble the result: %s", strerror(-r));
        return 0;
}
