/* SPDX-License-Identifier: MIT */
/*
 * A session kernel's cells (exec-kernel.h). A cell is supervised on an event loop of its
 * own, as exec.c supervises a script, except that the "child" is the cell inside the
 * kernel: it ends with the kernel's done message, not with a process.
 */

#include "core/exec/exec-kernel.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/time-util.h"
#include "core/events/events.h"
#include "core/events/trace.h"
#include "core/exec/exec-internal.h"
#include "core/exec/exec-kernel-internal.h"
#include "core/loop/loop.h"
#include "core/policy/pause-clock.h"
#include "core/rpc/rpc-server.h"
#include "core/tools/tool.h"

/* After the done message, how long leftover writers may keep the cell's pipes open. */
#define DRAIN_USEC (500 * USEC_PER_MSEC)
/* A control message is a small JSON object either way. */
#define CONTROL_MAX 4096

/* One cell's supervision, as struct execution is a script's (exec.c). */
struct cell {
        struct exec_kernel *k;
        const struct exec_opts *o;
        struct loop *loop;
        struct rpc_server *rpc;
        struct capture out, err;
        struct tool_ctx tool_ctx;
        char *path;
        int out_fd, err_fd;
        struct loop_source *out_src, *err_src, *ctl_src, *pid_src;
        int timer_fd, sig_fd, cancel_fd;
        struct pause_clock clock; /* stopped while calls wait for approval */
        int wake_fd;              /* written when such a wait ends */
        enum { CELL_RUNNING, CELL_STOPPING, CELL_KILLED } phase;
        enum exec_status status;
        bool stopped;
        const char *interrupt_reason;
        bool done;         /* the kernel said so, or is gone */
        bool ctl_closed;   /* the control socket ended: the kernel is dying */
        bool started;      /* the kernel said the cell runs: a stop reaches it */
        bool stop_pending; /* a stop came before that: sent on "started" */
        bool one_shot;     /* a warm pool's run: its result as a cold run's */
        bool have_exit_code;
        int exit_code;
        bool drain_timed_out;
        usec_t start, deadline;
};

static void signal_tools(struct cell *c)
{
        uint64_t one = 1;

        (void) !write(c->cancel_fd, &one, sizeof(one));
}

static void close_pipe(struct cell *c, bool is_err)
{
        loop_remove(is_err ? c->err_src : c->out_src);
        if (is_err) {
                c->err_src = NULL;
                c->err_fd = safe_close(c->err_fd);
        } else {
                c->out_src = NULL;
                c->out_fd = safe_close(c->out_fd);
        }
}

static bool is_done(const struct cell *c)
{
        return c->done && ((c->out_fd < 0 && c->err_fd < 0) || c->drain_timed_out);
}

/* The cell is over: its tools stop, its pipes get DRAIN_USEC to reach their end. */
static void cell_over(struct cell *c)
{
        if (c->done)
                return;
        c->done = true;
        loop_remove(c->ctl_src);
        c->ctl_src = NULL;
        loop_remove(c->pid_src);
        c->pid_src = NULL;
        signal_tools(c);
        exec_arm_timer(c->timer_fd, now_usec() + DRAIN_USEC);
}

/* The kernel is gone or broke the protocol: the session is lost with it. */
static void lose_kernel(struct cell *c)
{
        int ws;

        /* Its status when it died by itself (os._exit(3), a crash). */
        if (!c->have_exit_code && kernel_exit_status(c->k, &ws)) {
                c->have_exit_code = true;
                c->exit_code = ws;
        }
        kernel_kill(c->k);
        cell_over(c);
}

static void begin_stop(struct cell *c, enum exec_status why, const char *reason)
{
        if (c->phase != CELL_RUNNING || c->done)
                return;
        c->stopped = true;
        c->status = why;
        c->interrupt_reason = reason;
        c->phase = CELL_STOPPING;
        /*
         * SIGINT to the kernel's main thread (KeyboardInterrupt in the cell), SIGTERM to
         * what the kernel started. Tools after it. Before the cell has started, the kernel
         * would not take it: it goes when "started" comes; the grace runs from now either
         * way.
         */
        if (c->started)
                kernel_interrupt(c->k);
        else
                c->stop_pending = true;
        signal_tools(c);
        exec_arm_timer(c->timer_fd, now_usec() + EXEC_KILL_GRACE_USEC);
}

static void on_pipe(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct cell *c = userdata;
        bool is_err = fd == c->err_fd;
        char buf[64 * 1024];

        for (int i = 0; i < 4; i++) {
                ssize_t n = read(fd, buf, sizeof(buf));

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return;
                if (n <= 0) {
                        close_pipe(c, is_err);
                        return;
                }
                (void) capture_feed(is_err ? &c->err : &c->out, buf, (size_t) n);
                event_output(c->o->events, is_err, buf, (size_t) n);
                if (c->o->on_output)
                        c->o->on_output(c->o->on_output_userdata, is_err, buf, (size_t) n);
                if ((size_t) n < sizeof(buf))
                        return;
        }
}

static void on_control(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct cell *c = userdata;
        char msg[CONTROL_MAX];
        json_auto_t *v = NULL;
        ssize_t n;

        n = recv(fd, msg, sizeof(msg), MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n == 0) {
                /*
                 * The kernel is exiting (os._exit(), a crash): its death fd says when it
                 * is gone (and an origin's init then has its status). A kernel that only
                 * closed the socket and lives on is lost all the same, after DRAIN_USEC.
                 */
                loop_remove(c->ctl_src);
                c->ctl_src = NULL;
                c->ctl_closed = true;
                exec_arm_timer(c->timer_fd, now_usec() + DRAIN_USEC);
                return;
        }
        if (n > 0)
                v = json_loadb(msg, (size_t) n, 0, NULL);
        if (!c->started &&
            json_integer_value(json_object_get(v, "started")) == (json_int_t) c->k->cells) {
                c->started = true;
                if (c->stop_pending)
                        kernel_interrupt(c->k);
                return;
        }
        if (!v || json_integer_value(json_object_get(v, "done")) != (json_int_t) c->k->cells ||
            !json_is_integer(json_object_get(v, "exit_code"))) {
                /* The end of the socket, or anything but this cell's done: not a kernel. */
                lose_kernel(c);
                return;
        }
        c->have_exit_code = true;
        c->exit_code = (int) json_integer_value(json_object_get(v, "exit_code"));
        cell_over(c);
}

static void on_death(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        lose_kernel(userdata);
}

static void on_timer(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct cell *c = userdata;
        uint64_t n;

        (void) !read(fd, &n, sizeof(n));
        if (c->done) {
                c->drain_timed_out = true;
                return;
        }
        if (c->ctl_closed) {
                lose_kernel(c);
                return;
        }
        if (c->phase == CELL_RUNNING) {
                bool paused;
                usec_t d = pause_clock_deadline(&c->clock, c->deadline, &paused);

                /* A call waits for approval: the wait's end re-arms (on_wake()). */
                if (paused)
                        return;
                if (d > now_usec())
                        exec_arm_timer(c->timer_fd, d);
                else {
                        exec_event_timeout(c->o);
                        begin_stop(c, EXEC_TIMEOUT, NULL);
                }
        } else if (c->phase == CELL_STOPPING) {
                /* The cell did not unwind: the kernel goes, and its state with it. */
                c->phase = CELL_KILLED;
                lose_kernel(c);
        }
}

/* The last wait for approval ended: the deadline moved by the pause. */
static void on_wake(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct cell *c = userdata;
        bool paused;
        usec_t d;

        pause_clock_drain(fd);
        d = pause_clock_deadline(&c->clock, c->deadline, &paused);
        if (c->phase == CELL_RUNNING && !c->done && !paused)
                exec_arm_timer(c->timer_fd, d);
}

static void on_signal(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct cell *c = userdata;
        struct signalfd_siginfo si;

        while (read(fd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
                if (si.ssi_signo == SIGINT)
                        begin_stop(c, EXEC_INTERRUPTED, "SIGINT");
                else if (si.ssi_signo == SIGTERM)
                        begin_stop(c, EXEC_INTERRUPTED, "SIGTERM");
                else if (si.ssi_signo == SIGHUP)
                        begin_stop(c, EXEC_INTERRUPTED, "SIGHUP");
        }
}

static void on_cancel(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct cell *c = userdata;
        const char *reason = NULL;

        if (c->o->cancel_reason)
                reason = __atomic_load_n(c->o->cancel_reason, __ATOMIC_ACQUIRE);
        begin_stop(c, EXEC_INTERRUPTED, reason ? reason : "cancelled");
        loop_remove(s);
}

/*
 * Hand the cell to the kernel: its file, its token, its RPC socket, and the write ends of
 * its pipes. Under the rlimits layer a script's CPU time is limited (exec.c: 2 x timeout +
 * 10 s, a backstop behind the deadline): a cell may use that much from its start ("cpu"),
 * so that a runaway cell, or a thread it left spinning, ends the kernel rather than burning
 * a core forever. The kernel sets the limit on itself: ptc may lack the right to.
 */
static int send_cell(struct cell *c, const char *token, int out_w, int err_w)
{
        json_auto_t *m = json_pack(
                "{s:I, s:s, s:s, s:s, s:I}", "cell", (json_int_t) c->k->cells, "path", c->path,
                "token", token, "socket", c->k->socket_path, "cpu",
                c->k->box->rlimits ? (json_int_t) c->o->config->timeout * 2 + 10 : (json_int_t) 0);
        _cleanup_free_ char *text = m ? json_dumps(m, JSON_COMPACT) : NULL;
        int fds[2] = {out_w, err_w};
        char cbuf[CMSG_SPACE(sizeof(fds))] = {};
        struct iovec iov;
        struct msghdr mh = {};
        struct cmsghdr *cm;

        if (!text)
                return -ENOMEM;
        iov = (struct iovec){.iov_base = text, .iov_len = strlen(text)};
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        mh.msg_control = cbuf;
        mh.msg_controllen = sizeof(cbuf);
        cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(fds));
        memcpy(CMSG_DATA(cm), fds, sizeof(fds));
        for (;;) {
                ssize_t n = sendmsg(c->k->ctl_fd, &mh, MSG_NOSIGNAL);
                int k = n < 0 ? -errno : 0;

                if (k == -EINTR)
                        continue;
                explicit_wipe(text, strlen(text));
                return k;
        }
}

static int cell_setup(struct cell *c, bool one_shot, struct diag *reterr)
{
        const struct exec_opts *o = c->o;
        struct exec_kernel *k = c->k;
        char token[65], name[64];
        int outp[2] = {-1, -1}, errp[2] = {-1, -1};
        struct rpc_server_opts ro;
        sigset_t mask;
        int r;

        k->cells++;
        if (one_shot)
                (void) snprintf(name, sizeof(name), "script.py");
        else if (k->index == 0)
                (void) snprintf(name, sizeof(name), "cell-%u.py", k->cells);
        else
                (void) snprintf(name, sizeof(name), "fork-%u-cell-%u.py", k->index, k->cells);
        r = staging_add_file(&k->box->staging, name, o->code, o->code_len, &c->path);
        if (r < 0)
                return diag_set(reterr, r, "cannot write the cell: %s", strerror(-r));
        r = exec_make_token(token);
        if (r < 0)
                return diag_set(reterr, r, "cannot generate the RPC token: %s", strerror(-r));

        c->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        c->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        c->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (c->cancel_fd < 0 || c->timer_fd < 0 || c->wake_fd < 0)
                return diag_set(reterr, -errno, "cannot create event fds: %m");
        c->clock.wake_fd = c->wake_fd;
        c->tool_ctx = (struct tool_ctx){
                .config = o->config,
                .cwd = k->box->cwd,
                .env = o->base_env,
                .deadline = c->deadline,
                .cancel_fd = c->cancel_fd,
                .redactor = o->redactor,
                .python = o->python,
                .approver = o->approver,
                .clock = &c->clock,
        };
        r = loop_new(&c->loop);
        if (r < 0)
                return diag_set(reterr, r, "cannot create the event loop: %s", strerror(-r));
        /* Each cell's own server on the kernel's socket path: the last one's calls end. */
        (void) unlink(k->socket_path);
        ro = (struct rpc_server_opts){
                .socket_path = k->socket_path,
                .token = token,
                .registry = o->registry,
                .tool_ctx = &c->tool_ctx,
                .redactor = o->redactor,
                .max_tool_calls = o->config->max_tool_calls,
                .log_calls = o->log_calls,
                .on_call = o->on_call,
                .on_call_userdata = o->on_call_userdata,
                .events = o->events,
                .trace = o->trace,
        };
        r = rpc_server_new(&ro, &c->rpc);
        if (r < 0) {
                explicit_wipe(token, sizeof(token));
                return diag_set(reterr, r, "cannot start the RPC server on '%s': %s",
                                k->socket_path, strerror(-r));
        }
        r = exec_capture_init(o, &c->out, &c->err);
        if (r < 0) {
                explicit_wipe(token, sizeof(token));
                return diag_set(reterr, r, "cannot set up output capture: %s", strerror(-r));
        }
        if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
                r = -errno;
                safe_close(outp[0]);
                safe_close(outp[1]);
                explicit_wipe(token, sizeof(token));
                return diag_set(reterr, r, "cannot create pipes: %s", strerror(-r));
        }
        c->out_fd = outp[0];
        c->err_fd = errp[0];
        if (fd_set_nonblock(c->out_fd, true) < 0 || fd_set_nonblock(c->err_fd, true) < 0) {
                safe_close(outp[1]);
                safe_close(errp[1]);
                explicit_wipe(token, sizeof(token));
                return diag_set(reterr, -errno, "cannot set up pipes: %m");
        }
        if ((r = loop_add(c->loop, c->out_fd, EPOLLIN, on_pipe, c, &c->out_src)) < 0 ||
            (r = loop_add(c->loop, c->err_fd, EPOLLIN, on_pipe, c, &c->err_src)) < 0 ||
            (r = loop_add(c->loop, c->timer_fd, EPOLLIN, on_timer, c, NULL)) < 0 ||
            (r = loop_add(c->loop, c->wake_fd, EPOLLIN, on_wake, c, NULL)) < 0 ||
            (r = loop_add(c->loop, k->ctl_fd, EPOLLIN, on_control, c, &c->ctl_src)) < 0 ||
            (kernel_death_fd(k) >= 0 &&
             (r = loop_add(c->loop, kernel_death_fd(k), EPOLLIN, on_death, c, &c->pid_src)) < 0))
                goto fail;
        if (o->handle_signals) {
                sigemptyset(&mask);
                sigaddset(&mask, SIGINT);
                sigaddset(&mask, SIGTERM);
                sigaddset(&mask, SIGHUP);
                c->sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
                r = c->sig_fd < 0 ? -errno
                                  : loop_add(c->loop, c->sig_fd, EPOLLIN, on_signal, c, NULL);
                if (r < 0)
                        goto fail;
        }
        if (o->cancel_fd >= 0) {
                r = loop_add(c->loop, o->cancel_fd, EPOLLIN, on_cancel, c, NULL);
                if (r < 0)
                        goto fail;
        }
        exec_arm_timer(c->timer_fd, c->deadline);
        /* Last: a kernel found gone (EPIPE) ends the cell through the loop's sources. */
        r = send_cell(c, token, outp[1], errp[1]);
        explicit_wipe(token, sizeof(token));
        safe_close(outp[1]);
        safe_close(errp[1]);
        if (r < 0)
                lose_kernel(c);
        return 0;
fail:
        safe_close(outp[1]);
        safe_close(errp[1]);
        explicit_wipe(token, sizeof(token));
        return diag_set(reterr, r, "event loop: %s", strerror(-r));
}

static void cell_teardown(struct cell *c)
{
        if (c->cancel_fd >= 0)
                signal_tools(c);
        c->rpc = rpc_server_free(c->rpc);
        (void) unlink(c->k->socket_path);
        loop_remove(c->out_src);
        loop_remove(c->err_src);
        loop_remove(c->ctl_src);
        loop_remove(c->pid_src);
        c->loop = loop_free(c->loop);
        safe_close(c->out_fd);
        safe_close(c->err_fd);
        safe_close(c->timer_fd);
        safe_close(c->sig_fd);
        safe_close(c->cancel_fd);
        pause_clock_done(&c->clock);
        safe_close(c->wake_fd);
        capture_release(&c->out);
        capture_release(&c->err);
        free(c->path);
}

static int cell_finish(struct cell *c, json_t **ret, enum exec_status *ret_status)
{
        struct result_input in = {};
        json_auto_t *log = NULL;

        rpc_server_shutdown(c->rpc, 5000);
        if (c->stopped)
                in.status = c->status;
        else
                in.status = c->have_exit_code && c->exit_code == 0 ? EXEC_SUCCESS : EXEC_ERROR;
        in.have_exit_code = c->have_exit_code;
        in.exit_code = c->exit_code;
        in.duration = (double) (now_usec() - c->start) / USEC_PER_SEC;
        in.calls = rpc_server_calls_made(c->rpc);
        in.interrupt_reason = c->interrupt_reason;
        if (!c->one_shot)
                in.cell = c->k->lost ? RESULT_CELL_LOST : RESULT_CELL_KEPT;
        if (c->k->lost && !c->stopped && !in.have_exit_code && !c->one_shot)
                in.error = "The session's interpreter died during the cell; its state is lost.";
        if (c->o->log_calls) {
                log = rpc_server_log(c->rpc);
                in.log = log;
        }
        return exec_result(c->o, &c->out, &c->err, &in, false, ret, ret_status);
}

int exec_kernel_run_cell(struct exec_kernel *k, const struct exec_opts *o, bool one_shot,
                         json_t **ret, enum exec_status *ret_status, bool *ret_lost,
                         struct diag *reterr)
{
        struct cell c = {
                .k = k,
                .o = o,
                .out_fd = -EBADF,
                .err_fd = -EBADF,
                .timer_fd = -EBADF,
                .sig_fd = -EBADF,
                .cancel_fd = -EBADF,
                .wake_fd = -EBADF,
                .one_shot = one_shot,
        };
        usec_t t0;
        int r;

        *ret_lost = false;
        if (k->lost)
                return diag_set(reterr, -ESRCH, "the session's interpreter is gone");
        if (k->remote) {
                r = exec_remote_session_cell(k->remote, o, ret, ret_status, ret_lost, reterr);
                k->lost = *ret_lost;
                return r;
        }
        c.start = now_usec();
        c.deadline = c.start + (usec_t) (o->config->timeout * USEC_PER_SEC);
        pause_clock_init(&c.clock, -1); /* its fd comes with cell_setup() */
        r = cell_setup(&c, one_shot, reterr);
        t0 = now_usec();
        trace_span(o->trace, "cell setup", "setup", c.start, t0, NULL);
        while (r >= 0 && !is_done(&c)) {
                r = loop_run_once(c.loop, -1);
                if (r < 0)
                        diag_set(reterr, r, "event loop failed: %s", strerror(-r));
        }
        /* A warm kernel's one-shot run is the run's script; a session's is a cell. */
        trace_span_now(o->trace, one_shot ? "script" : "cell", "script", t0,
                       json_pack("{s:s}", "on", one_shot ? "warm kernel" : "session kernel"));
        if (r >= 0) {
                t0 = now_usec();
                r = cell_finish(&c, ret, ret_status);
                if (r < 0)
                        diag_set(reterr, r, "cannot assemble the result: %s", strerror(-r));
                trace_span_now(o->trace, "result", "output", t0, NULL);
        }
        t0 = now_usec();
        cell_teardown(&c);
        trace_span_now(o->trace, "teardown", "teardown", t0, NULL);
        /* A cell that could not even be set up leaves the kernel in an unknown state. */
        if (r < 0)
                kernel_kill(k);
        *ret_lost = k->lost;
        return r;
}
