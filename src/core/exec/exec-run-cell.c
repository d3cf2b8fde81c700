/* SPDX-License-Identifier: MIT */
/*
 * The session cell target of the run supervisor (exec-run.h): a session interpreter's cells
 * (exec-interp.h). The "script" is the cell inside the interpreter: it ends with the interpreter's
 * done message on the control socket, not with a process; stopping it is KeyboardInterrupt in the
 * interpreter, and an interpreter that does not unwind within the grace, dies, or breaks the
 * protocol is lost with the session's state.
 */

#include "core/exec/exec-interp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/time-util.h"
#include "core/events/trace.h"
#include "core/exec/exec-internal.h"
#include "core/exec/exec-interp-internal.h"
#include "core/exec/exec-run.h"

/* A control message is a small JSON object either way. */
#define CONTROL_MAX 4096

struct cell {
        struct run run;
        struct exec_interp *k;
        char *path;
        struct loop_source *ctl_src, *death_src;
        struct loop_source *ctl_closed; /* the control socket ended: the interpreter is dying */
        bool started;                   /* the interpreter said the cell runs: a stop reaches it */
        bool stop_pending;              /* a stop came before that: sent on "started" */
        bool one_shot;                  /* a warm pool's run: its result as a cold run's */
        bool have_exit_code;
        int exit_code;
};

/* The cell is over: its tools stop, its pipes get RUN_DRAIN_USEC to reach their end. */
static void cell_over(struct cell *c)
{
        if (c->run.ended)
                return;
        loop_remove(c->ctl_src);
        loop_remove(c->death_src);
        loop_remove(c->ctl_closed);
        c->ctl_src = c->death_src = c->ctl_closed = NULL;
        run_end(&c->run, RUN_DRAIN_USEC);
}

/* The interpreter is gone or broke the protocol: the session is lost with it. */
static void lose_interp(struct cell *c)
{
        int ws;

        /* Its status when it died by itself (os._exit(3), a crash). */
        if (!c->have_exit_code && interp_exit_status(c->k, &ws)) {
                c->have_exit_code = true;
                c->exit_code = ws;
        }
        interp_kill(c->k);
        cell_over(c);
}

/*
 * SIGINT to the interpreter's main thread (KeyboardInterrupt in the cell), SIGTERM to what the
 * interpreter started; the tools after it. Before the cell has started, the interpreter would not
 * take it: it goes when "started" comes; the grace runs from now either way.
 */
static usec_t cell_interrupt(struct run *run)
{
        struct cell *c = run->target;

        if (c->started)
                interp_interrupt(c->k);
        else
                c->stop_pending = true;
        return EXEC_KILL_GRACE_USEC;
}

/* The cell did not unwind: the interpreter goes, and its state with it. */
static usec_t cell_kill(struct run *run)
{
        lose_interp(run->target);
        return 0;
}

static void on_ctl_closed(struct loop_source *s, usec_t now, void *userdata)
{
        lose_interp(userdata);
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
                 * The interpreter is exiting (os._exit(), a crash): its death fd says when it
                 * is gone (and an origin's init then has its status). An interpreter that only
                 * closed the socket and lives on is lost all the same, after RUN_DRAIN_USEC.
                 */
                loop_remove(c->ctl_src);
                c->ctl_src = NULL;
                if (loop_add_time(c->run.loop, now_usec() + RUN_DRAIN_USEC, on_ctl_closed, c,
                                  &c->ctl_closed) < 0)
                        lose_interp(c);
                return;
        }
        if (n > 0)
                v = json_loadb(msg, (size_t) n, 0, NULL);
        if (!c->started &&
            json_integer_value(json_object_get(v, "started")) == (json_int_t) c->k->cells) {
                c->started = true;
                if (c->stop_pending)
                        interp_interrupt(c->k);
                return;
        }
        if (!v || json_integer_value(json_object_get(v, "done")) != (json_int_t) c->k->cells ||
            !json_is_integer(json_object_get(v, "exit_code"))) {
                /* The end of the socket, or anything but this cell's done: not an interpreter. */
                lose_interp(c);
                return;
        }
        c->have_exit_code = true;
        c->exit_code = (int) json_integer_value(json_object_get(v, "exit_code"));
        cell_over(c);
}

static void on_death(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        lose_interp(userdata);
}

static int cell_collect(struct run *run, struct result_input *in)
{
        struct cell *c = run->target;

        in->status = c->have_exit_code && c->exit_code == 0 ? EXEC_SUCCESS : EXEC_ERROR;
        in->have_exit_code = c->have_exit_code;
        in->exit_code = c->exit_code;
        if (!c->one_shot)
                in->cell = c->k->lost ? RESULT_CELL_LOST : RESULT_CELL_KEPT;
        if (c->k->lost && !run->stopped && !in->have_exit_code && !c->one_shot)
                in->error = "The session's interpreter died during the cell; its state is lost.";
        return 0;
}

static const struct run_target_ops cell_ops = {
        .interrupt = cell_interrupt,
        .kill = cell_kill,
        .collect = cell_collect,
};

/*
 * Hand the cell to the interpreter: its file, its token, its RPC socket, and the write ends of
 * its pipes. Under the rlimits layer a script's CPU time is limited (exec-run-local.c: 2 x timeout
 * + 10 s, a backstop behind the deadline): a cell may use that much from its start ("cpu"), so that
 * a runaway cell, or a thread it left spinning, ends the interpreter rather than burning a core
 * forever. The interpreter sets the limit on itself: ptc may lack the right to.
 */
static int send_cell(struct cell *c, const char *token, int out_w, int err_w)
{
        json_auto_t *m =
                json_pack("{s:I, s:s, s:s, s:s, s:I}", "cell", (json_int_t) c->k->cells, "path",
                          c->path, "token", token, "socket", c->k->socket_path, "cpu",
                          c->k->box->rlimits ? (json_int_t) c->run.o->config->timeout * 2 + 10
                                             : (json_int_t) 0);
        _cleanup_free_ char *text = m ? json_dumps(m, JSON_COMPACT) : NULL;
        const int fds[2] = {out_w, err_w};
        int k;

        if (!text)
                return -ENOMEM;
        k = interp_send(c->k, text, fds, 2);
        explicit_wipe(text, strlen(text));
        return k;
}

static int cell_setup(struct cell *c, bool one_shot, struct diag *reterr)
{
        const struct exec_opts *o = c->run.o;
        struct exec_interp *k = c->k;
        char token[65], name[64];
        int out_w = -EBADF, err_w = -EBADF;
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
        r = run_begin(&c->run, k->box->cwd, reterr);
        if (r < 0)
                return r;
        r = exec_make_token(token);
        if (r < 0)
                return diag_set(reterr, r, "cannot generate the RPC token: %s", strerror(-r));
        /* Each cell's own server on the interpreter's socket path: the last one's calls end. */
        (void) unlink(k->socket_path);
        r = run_rpc(&c->run, k->socket_path, token, reterr);
        if (r >= 0)
                r = run_pipes(&c->run, &out_w, &err_w, reterr);
        if (r >= 0 &&
            ((r = loop_add(c->run.loop, k->ctl_fd, EPOLLIN, on_control, c, &c->ctl_src)) < 0 ||
             (interp_death_fd(k) >= 0 && (r = loop_add(c->run.loop, interp_death_fd(k), EPOLLIN,
                                                       on_death, c, &c->death_src)) < 0)))
                diag_set(reterr, r, "event loop: %s", strerror(-r));
        if (r >= 0) {
                run_arm_deadline(&c->run);
                /*
                 * The cell's span starts here: once sent it runs, and its first tool call may
                 * begin before this function returns (a trace put it before the cell).
                 */
                c->run.span_start = now_usec();
                /* Last: an interpreter gone (EPIPE) ends the cell through the loop's sources. */
                if (send_cell(c, token, out_w, err_w) < 0)
                        lose_interp(c);
        }
        explicit_wipe(token, sizeof(token));
        safe_close(out_w);
        safe_close(err_w);
        return r;
}

int exec_interp_run_cell(struct exec_interp *k, const struct exec_opts *o, bool one_shot,
                         json_t **ret, enum exec_status *ret_status, bool *ret_lost,
                         struct diag *reterr)
{
        struct cell c = {
                .k = k,
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
        run_init(&c.run, o, &cell_ops, &c);
        r = cell_setup(&c, one_shot, reterr);
        t0 = c.run.span_start ? c.run.span_start : now_usec();
        trace_span(o->trace, "cell setup", "setup", c.run.start, t0, NULL);
        /* A warm interpreter's one-shot run is the run's script; a session's is a cell. */
        c.run.span_name = one_shot ? "script" : "cell";
        c.run.span_start = t0;
        c.run.span_attrs = json_pack("{s:s}", "on", one_shot ? "warm kernel" : "session kernel");
        if (r >= 0)
                r = run_supervise(&c.run, ret, ret_status, reterr);
        t0 = now_usec();
        run_teardown(&c.run);
        (void) unlink(k->socket_path);
        free(c.path);
        trace_span_now(o->trace, "teardown", "teardown", t0, NULL);
        /* A cell that could not even be set up leaves the interpreter in an unknown state. */
        if (r < 0)
                interp_kill(k);
        *ret_lost = k->lost;
        return r;
}
