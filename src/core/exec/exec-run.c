/* SPDX-License-Identifier: MIT */
/*
 * The run supervisor (exec-run.h): one event loop per run, on the thread of exec_run(), whose
 * sources are the script's output, one time source (the deadline, then each grace, then the
 * end's drain), the pause clock's wake, the caller's cancel, and the target's own.
 */
#include "core/exec/exec-run.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "core/events/events.h"
#include "core/events/trace.h"
#include "core/exec/exec-internal.h"
#include "core/rpc/rpc-server.h"

#define READS_PER_WAKEUP 4

void run_signal_tools(struct run *run)
{
        uint64_t one = 1;

        if (run->cancel_fd >= 0)
                (void) !write(run->cancel_fd, &one, sizeof(one));
}

void run_arm_deadline(struct run *run)
{
        loop_time_set(run->timer, run->deadline);
}

/* Stop the run (a timeout, an interrupt): once, while it runs. */
static void run_stop(struct run *run, enum exec_status why, const char *reason)
{
        usec_t grace;

        if (run->phase != RUN_RUNNING || run->ended || run->done)
                return;
        run->stopped = true;
        run->status = why;
        run->interrupt_reason = reason;
        run->phase = RUN_STOPPING;
        /* The target first: a tool's cancelled answer must not beat the script's interrupt
         * (exec-run-local.c says why). */
        grace = run->ops->interrupt(run);
        run_signal_tools(run);
        if (grace > 0 && !run->ended)
                loop_time_set_relative(run->timer, grace);
}

void run_end(struct run *run, usec_t drain_usec)
{
        run->ended = true;
        run_signal_tools(run);
        loop_time_set_relative(run->timer, drain_usec);
}

void run_output(struct run *run, bool is_err, const char *p, size_t n)
{
        /* A spill write failure only loses the spill, never the capture. */
        (void) capture_feed(is_err ? &run->err : &run->out, p, n);
        event_output(run->o->events, is_err, p, n);
        if (run->o->on_output)
                run->o->on_output(run->o->on_output_userdata, is_err, p, n);
}

static void close_pipe(struct run *run, bool is_err)
{
        struct loop_source **src = is_err ? &run->err_src : &run->out_src;
        int *fd = is_err ? &run->err_fd : &run->out_fd;

        loop_remove(*src);
        *src = NULL;
        *fd = safe_close(*fd);
        run->holds--;
}

static void on_pipe(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct run *run = userdata;
        bool is_err = fd == run->err_fd;
        char buf[64 * 1024];

        for (int i = 0; i < READS_PER_WAKEUP; i++) {
                ssize_t k = read(fd, buf, sizeof(buf));

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 && errno == EAGAIN)
                        return;
                if (k <= 0) {
                        close_pipe(run, is_err);
                        return;
                }
                run_output(run, is_err, buf, (size_t) k);
                if ((size_t) k < sizeof(buf))
                        return;
        }
}

static void on_timer(struct loop_source *s, usec_t now, void *userdata)
{
        struct run *run = userdata;
        usec_t grace;

        if (run->ended) {
                run->drain_timed_out = true;
                if (run->ops->drained)
                        run->ops->drained(run);
                return;
        }
        if (run->phase == RUN_RUNNING) {
                bool paused;
                usec_t d = pause_clock_deadline(&run->clock, run->deadline, &paused);

                /* A call waits for approval: the wait's end re-arms (on_wake()). */
                if (paused)
                        return;
                if (d > now_usec()) {
                        loop_time_set(run->timer, d);
                        return;
                }
                event_emit(run->o->events, "limit",
                           json_pack("{s:s, s:f}", "limit", "timeout", "timeout",
                                     run->o->config->timeout));
                run_stop(run, EXEC_TIMEOUT, NULL);
                return;
        }
        /* A grace ran out: the target's next step. */
        run->phase = RUN_KILLING;
        grace = run->ops->kill(run);
        if (grace > 0 && !run->ended)
                loop_time_set_relative(run->timer, grace);
}

/* The last wait for approval ended: the deadline moved by the pause. */
static void on_wake(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct run *run = userdata;
        bool paused;
        usec_t d;

        pause_clock_drain(fd);
        d = pause_clock_deadline(&run->clock, run->deadline, &paused);
        if (run->phase == RUN_RUNNING && !run->ended && !run->done && !paused)
                loop_time_set(run->timer, d);
}

static void on_cancel(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct run *run = userdata;
        const char *reason = NULL;

        if (run->o->cancel_reason)
                reason = __atomic_load_n(run->o->cancel_reason, __ATOMIC_ACQUIRE);
        run_stop(run, EXEC_INTERRUPTED, reason ? reason : "cancelled");
        /* Level-triggered and not ours to drain: stop watching it. */
        loop_remove(s);
}

void run_init(struct run *run, const struct exec_opts *o, const struct run_target_ops *ops,
              void *target)
{
        *run = (struct run){
                .o = o,
                .ops = ops,
                .target = target,
                .out_fd = -EBADF,
                .err_fd = -EBADF,
                .cancel_fd = -EBADF,
                .wake_fd = -EBADF,
                /* Released on every path, initialized or not. */
                .out = {.spill_fd = -EBADF},
                .err = {.spill_fd = -EBADF},
                .start = now_usec(),
        };
        run->deadline = run->start + (usec_t) (o->config->timeout * USEC_PER_SEC);
        pause_clock_init(&run->clock, -1); /* its fd comes with run_begin() */
}

int run_begin(struct run *run, const char *cwd, struct diag *reterr)
{
        const struct exec_opts *o = run->o;
        int r;

        run->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        run->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (run->cancel_fd < 0 || run->wake_fd < 0)
                return diag_set(reterr, -errno, "cannot create event fds: %m");
        run->clock.wake_fd = run->wake_fd;
        run->tool_ctx = (struct tool_ctx){
                .config = o->config,
                .cwd = cwd,
                .env = o->base_env,
                .deadline = run->deadline,
                .cancel_fd = run->cancel_fd,
                .redactor = o->redactor,
                .python = o->python,
                .approver = o->approver,
                .clock = &run->clock,
        };
        r = loop_new(&run->loop);
        if (r < 0)
                return diag_set(reterr, r, "cannot create the event loop: %s", strerror(-r));
        if ((r = loop_add_time(run->loop, USEC_INFINITY, on_timer, run, &run->timer)) < 0 ||
            (r = loop_add(run->loop, run->wake_fd, EPOLLIN, on_wake, run, NULL)) < 0 ||
            (o->cancel_fd >= 0 &&
             (r = loop_add(run->loop, o->cancel_fd, EPOLLIN, on_cancel, run, NULL)) < 0))
                return diag_set(reterr, r, "event loop: %s", strerror(-r));
        r = exec_capture_init(o, &run->out, &run->err);
        if (r < 0)
                return diag_set(reterr, r, "cannot set up output capture: %s", strerror(-r));
        return 0;
}

int run_rpc(struct run *run, const char *socket_path, const char *token, struct diag *reterr)
{
        const struct exec_opts *o = run->o;
        const struct rpc_server_opts ro = {
                .socket_path = socket_path,
                .token = token,
                .registry = o->registry,
                .tool_ctx = &run->tool_ctx,
                .redactor = o->redactor,
                .max_tool_calls = o->config->max_tool_calls,
                .log_calls = o->log_calls,
                .on_call = o->on_call,
                .on_call_userdata = o->on_call_userdata,
                .events = o->events,
                .trace = o->trace,
        };
        int r = rpc_server_new(&ro, &run->rpc);

        if (r < 0)
                return diag_set(reterr, r, "cannot start the RPC server on '%s': %s", socket_path,
                                strerror(-r));
        return 0;
}

int run_pipes(struct run *run, int *ret_out_w, int *ret_err_w, struct diag *reterr)
{
        int outp[2] = {-1, -1}, errp[2] = {-1, -1};
        int r;

        /* Our read ends are non-blocking; the child's write ends stay blocking. */
        if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
                r = -errno;
                safe_close(outp[0]);
                safe_close(outp[1]);
                return diag_set(reterr, r, "cannot create pipes: %s", strerror(-r));
        }
        run->out_fd = outp[0];
        run->err_fd = errp[0];
        run->holds += 2;
        if (fd_set_nonblock(run->out_fd, true) < 0 || fd_set_nonblock(run->err_fd, true) < 0) {
                r = diag_set(reterr, -errno, "cannot set up pipes: %m");
                goto fail;
        }
        if ((r = loop_add(run->loop, run->out_fd, EPOLLIN, on_pipe, run, &run->out_src)) < 0 ||
            (r = loop_add(run->loop, run->err_fd, EPOLLIN, on_pipe, run, &run->err_src)) < 0) {
                r = diag_set(reterr, r, "event loop: %s", strerror(-r));
                goto fail;
        }
        *ret_out_w = outp[1];
        *ret_err_w = errp[1];
        return 0;
fail:
        safe_close(outp[1]);
        safe_close(errp[1]);
        return r;
}

static bool run_is_done(const struct run *run)
{
        return run->done || (run->ended && (run->holds == 0 || run->drain_timed_out));
}

int run_loop(struct run *run, struct diag *reterr)
{
        while (!run_is_done(run)) {
                int r = loop_run_once(run->loop, -1);

                if (r < 0)
                        return diag_set(reterr, r, "event loop failed: %s", strerror(-r));
        }
        return 0;
}

int run_supervise(struct run *run, json_t **ret, enum exec_status *ret_status, struct diag *reterr)
{
        struct result_input in = {};
        json_auto_t *log = NULL;
        usec_t t0;
        int r = run_loop(run, reterr);

        if (r < 0)
                return r;
        if (run->span_name)
                trace_span_now(run->o->trace, run->span_name, "script", run->span_start,
                               TAKE_PTR(run->span_attrs));
        r = run->ops->collect(run, &in);
        log = in.log;
        if (r < 0)
                return diag_set(reterr, r, "cannot assemble the result: %s", strerror(-r));

        t0 = now_usec();
        if (run->rpc) {
                /* Tools first: nothing may still be writing when we assemble. */
                rpc_server_shutdown(run->rpc, 5000);
                in.calls = rpc_server_calls_made(run->rpc);
                /* Redacted by the RPC server as each call was made. */
                if (run->o->log_calls)
                        in.log = log = rpc_server_log(run->rpc);
        }
        if (run->stopped)
                in.status = run->status;
        in.duration = (double) (now_usec() - run->start) / USEC_PER_SEC;
        if (!in.interrupt_reason)
                in.interrupt_reason = run->interrupt_reason;
        r = exec_result(run->o, &run->out, &run->err, &in, run->redact_log, ret, ret_status);
        trace_span_now(run->o->trace, "result", "output", t0, NULL);
        if (r < 0)
                return diag_set(reterr, r, "cannot assemble the result: %s", strerror(-r));
        return 0;
}

void run_teardown(struct run *run)
{
        if (run->ops->teardown)
                run->ops->teardown(run);
        run_signal_tools(run);
        run->rpc = rpc_server_free(run->rpc);
        /* Its sources go with it; the fds they watched are closed below. */
        run->loop = loop_free(run->loop);
        run->out_src = run->err_src = run->timer = NULL;
        run->out_fd = safe_close(run->out_fd);
        run->err_fd = safe_close(run->err_fd);
        run->cancel_fd = safe_close(run->cancel_fd);
        pause_clock_done(&run->clock);
        run->wake_fd = safe_close(run->wake_fd);
        capture_release(&run->out);
        capture_release(&run->err);
        json_decref(TAKE_PTR(run->span_attrs));
}
