/* SPDX-License-Identifier: MIT */
/*
 * The local target of the run supervisor (exec-run.h): the script is ptc's child, under an init of
 * its own (sandbox-init.c) in a staging directory with the tools' module, its RPC server
 * on a socket there. Stopping it is SIGINT to the init, which forwards it to the script's
 * main thread and SIGTERM to the rest; then SIGKILL to everything below the init; then to
 * the init.
 */
#include "core/exec/exec-internal.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/strv.h"
#include "core/events/trace.h"
#include "core/exec/exec-run.h"
#include "core/exec/exec-trace.h"
#include "core/exec/staging.h"
#include "core/sandbox/cgroup.h"
#include "core/sandbox/sandbox.h"
#include "core/spawn/proc-tree.h"
#include "core/stubs/stubs.h"

struct local {
        struct run run;
        struct staging staging;
        char **child_env;

        /* The sandbox's init, its pidfd (the loop's child source) and its status pipe (the
         * script's exit status). */
        struct sandbox_proc sp;
        struct run_cgroup cgroup; /* the run's cgroup v2 leaf, if it has one */
        struct loop_source *child_src;
        bool reaped;
        int wstatus;
        bool below_killed; /* the first kill step is over: the init's is next */

        usec_t spawned; /* the script started: its span runs from here to its reaping */
        /* With a trace only (exec-trace.h): the sandbox's steps, and the interpreter's
         * start, over when it opens the script (interp_fd, an inotify watch). */
        struct sandbox_timings timings;
        int interp_fd;
        struct loop_source *interp_src;
        usec_t interp_ready;
};

/*
 * Stop the run: the script gets SIGINT, so Python unwinds (finally blocks run, buffered
 * output is flushed), everything else it started gets SIGTERM; SIGKILL for all follows
 * after the grace period.
 *
 * SIGINT to the script's main thread, before the tools are cancelled. Python handles
 * signals only in its main thread; sent to the process, the signal may land on another
 * thread (the stub's reader), the main thread then wakes with the cancelled call's answer
 * and runs on for a few bytecodes before it notices (test_timeout_cancels_in_flight_tool_call
 * printed 'never' once in CI). Sent to the main thread, its blocked wait returns EINTR and
 * KeyboardInterrupt is raised there; cancelling only afterwards means no answer can beat the
 * signal. The sandbox's init forwards it so: SIGINT to the script's main thread, SIGTERM to
 * every other process in there.
 */
static usec_t local_interrupt(struct run *run)
{
        struct local *l = run->target;

        (void) kill(l->sp.pid, SIGINT);
        return EXEC_KILL_GRACE_USEC;
}

/*
 * Everything below the init, stopped and then killed, so nothing forked meanwhile escapes.
 * The init lives on to reap it all (it is their subreaper: killed first, it would hand them
 * to whoever is above ptc), then reports and exits; it is killed too if it has not within
 * the grace.
 */
static usec_t local_kill(struct run *run)
{
        struct local *l = run->target;

        if (!l->below_killed) {
                l->below_killed = true;
                (void) proc_tree_kill(l->sp.pid, false);
                return EXEC_KILL_GRACE_USEC;
        }
        (void) proc_tree_kill(l->sp.pid, true);
        return 0;
}

static void on_child(struct loop_source *s, const siginfo_t *si, void *userdata)
{
        struct local *l = userdata;

        l->reaped = true;
        /* The init reports the script's status; no report means it was killed. */
        if (sandbox_read_status(l->sp.status_fd, &l->wstatus) < 0)
                l->wstatus = -SIGKILL;
        l->sp.status_fd = safe_close(l->sp.status_fd);
        /*
         * The script is gone, and its init killed what it left running (background jobs,
         * daemons reparented to the init) before it exited; its cgroup goes too, and tools
         * still working for it are told to stop.
         */
        run_cgroup_kill(&l->cgroup);
        run_end(&l->run, RUN_DRAIN_USEC);
}

/* The interpreter opened the script: it is initialised (a trace's "interpreter start"). */
static void on_interpreter_ready(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct local *l = userdata;

        l->interp_ready = now_usec();
        loop_remove(s);
        l->interp_src = NULL;
        l->interp_fd = safe_close(fd);
}

static int local_collect(struct run *run, struct result_input *in)
{
        struct local *l = run->target;

        if (l->interp_ready)
                trace_span(run->o->trace, "interpreter start", "script", l->spawned,
                           l->interp_ready, NULL);
        in->status = l->wstatus == 0 ? EXEC_SUCCESS : EXEC_ERROR;
        in->have_exit_code = l->reaped;
        in->exit_code = l->wstatus;
        return 0;
}

static void local_teardown(struct run *run)
{
        struct local *l = run->target;

        loop_remove(l->child_src);
        l->child_src = NULL;
        loop_remove(l->interp_src);
        l->interp_src = NULL;
        if (l->sp.pid > 0 && !l->reaped) {
                (void) proc_tree_kill(l->sp.pid, true);
                (void) waitpid(l->sp.pid, NULL, 0);
                l->reaped = true;
        }
        l->sp.pidfd = safe_close(l->sp.pidfd);
        l->sp.status_fd = safe_close(l->sp.status_fd);
        l->interp_fd = safe_close(l->interp_fd);
}

static const struct run_target_ops local_ops = {
        .interrupt = local_interrupt,
        .kill = local_kill,
        .collect = local_collect,
        .teardown = local_teardown,
};

static int setup(struct local *l, struct diag *reterr)
{
        const struct exec_opts *o = l->run.o;
        const struct ptc_config *c = o->config;
        _cleanup_free_ char *module = NULL;
        char token[65];
        int out_w = -EBADF, err_w = -EBADF;
        struct exec_child_opts co = {
                /* RLIMIT_CPU is a backstop behind the wall-clock deadline. */
                .cpu_seconds = (uint64_t) c->timeout * 2 + 10,
                .timings = o->trace ? &l->timings : NULL,
        };
        usec_t t0;
        int r;

        t0 = now_usec();
        r = stubs_generate(o->registry, c->module_name, &module);
        if (r < 0)
                return diag_set(reterr, r, "cannot generate the tools module: %s", strerror(-r));
        trace_span_now(o->trace, "stubs", "setup", t0, NULL);
        t0 = now_usec();
        r = staging_create(&l->staging, o->code, o->code_len, c->module_name, module);
        if (r < 0)
                return diag_set(reterr, r, "cannot create the staging directory: %s", strerror(-r));
        trace_span_now(o->trace, "staging", "setup", t0, NULL);
        r = run_begin(&l->run, c->mode == PTC_MODE_STRICT ? l->staging.dir : o->cwd, reterr);
        if (r < 0)
                return r;

        r = exec_make_token(token);
        if (r < 0)
                return diag_set(reterr, r, "cannot generate the RPC token: %s", strerror(-r));
        t0 = now_usec();
        r = run_rpc(&l->run, l->staging.socket_path, token, reterr);
        if (r >= 0)
                trace_span_now(o->trace, "rpc server", "setup", t0, NULL);
        if (r >= 0 && (r = exec_child_env(o, &l->staging, token, &l->child_env)) < 0)
                diag_set(reterr, r, "cannot build the child environment: %s", strerror(-r));
        explicit_wipe(token, sizeof(token));
        if (r < 0)
                return r;
        r = run_pipes(&l->run, &out_w, &err_w, reterr);
        if (r < 0)
                return r;

        /* A trace sees the interpreter open the script; without a watch, no such span. */
        if (o->trace)
                l->interp_fd = exec_interpreter_watch(l->staging.script_path);
        t0 = now_usec();
        co.script_path = l->staging.script_path;
        co.staging_dir = l->staging.dir;
        co.env = l->child_env;
        co.cwd = l->run.tool_ctx.cwd;
        co.stdout_fd = out_w;
        co.stderr_fd = err_w;
        r = exec_start_confined(o, &co, &l->sp, &l->cgroup, reterr);
        safe_close(out_w);
        safe_close(err_w);
        if (r < 0)
                return r;
        /* The sandbox's layers are set up in the child, before the interpreter starts. */
        l->spawned = now_usec();
        trace_span(o->trace, "spawn", "setup", t0, l->spawned,
                   json_pack("{s:s}", "isolation", config_isolation_to_string(c->isolation)));
        exec_trace_sandbox(o->trace, &l->timings, l->spawned);
        l->run.span_name = "script";
        l->run.span_start = l->spawned;
        if (l->interp_fd >= 0) {
                exec_interpreter_watch_forget(l->interp_fd);
                r = loop_add(l->run.loop, l->interp_fd, EPOLLIN, on_interpreter_ready, l,
                             &l->interp_src);
                if (r < 0)
                        return diag_set(reterr, r, "event loop: %s", strerror(-r));
        }
        /* spawn falls back to pidfd_open(); a kernel without either (before 5.3) cannot
         * be supervised. */
        if (l->sp.pidfd < 0)
                return diag_set(reterr, -EOPNOTSUPP,
                                "cannot watch the script: no pidfd for it (Linux 5.3 or later "
                                "is needed)");
        r = loop_add_child(l->run.loop, l->sp.pid, l->sp.pidfd, on_child, l, &l->child_src);
        if (r < 0)
                return diag_set(reterr, r, "event loop: %s", strerror(-r));
        run_arm_deadline(&l->run);
        return 0;
}

int exec_run_local(const struct exec_opts *o, json_t **ret, enum exec_status *ret_status,
                   struct diag *reterr)
{
        struct local l = {
                .sp = {.pid = -1, .pidfd = -EBADF, .status_fd = -EBADF},
                .interp_fd = -EBADF,
                .cgroup = RUN_CGROUP_NULL,
        };
        usec_t t0;
        int r;

        run_init(&l.run, o, &local_ops, &l);
        r = setup(&l, reterr);
        if (r >= 0)
                r = run_supervise(&l.run, ret, ret_status, reterr);
        t0 = now_usec();
        run_teardown(&l.run);
        (void) run_cgroup_destroy(&l.cgroup, 2 * USEC_PER_SEC);
        staging_remove(&l.staging);
        strv_free(l.child_env);
        if (r >= 0)
                trace_span_now(o->trace, "teardown", "teardown", t0, NULL);
        return r;
}
