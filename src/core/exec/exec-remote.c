/* SPDX-License-Identifier: MIT */
/*
 * A run on a remote backend, the host's side (docs/remote.md): start the channel to ptc's
 * agent on the target (channel/channel.h: ssh, docker exec, ... and the agent bootstrapped
 * through the shell it opens there); then speak the stream (remote/frame.h) on the
 * channel's stdin and stdout, whose fds this run watches on its loop. The
 * agent runs the script and the tools on files and processes there; here the script's
 * output is captured and post-processed exactly as for a local run, and the calls of the
 * tools that run on the host (tool.runs_on_host: the web tools, a host's and an MCP
 * server's) are answered, each on a thread of its own.
 *
 * The host owns the deadline: at the timeout, or on a cancel, it sends the agent a signal
 * frame (the agent stops the script as a local run does: SIGINT, then SIGKILL after the
 * grace period), and kills the channel when the agent has not ended the run by then. A
 * channel that closes, a frame that is not what the stream allows, or an agent that does
 * not answer in time ends the run with an error that says so, with the start of what the
 * channel command wrote to stderr (ssh's "Permission denied", docker's "No such
 * container").
 *
 * Threads: the loop runs on the caller's thread; each host tool call on a detached thread
 * that holds a reference on the run. Writes to the channel are serialized by its lock and
 * bounded in time (channel/channel.h), so a target that stops reading cannot hang a thread.
 */

#include "core/exec/exec-remote.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "basic/fd-util.h"
#include "basic/time-util.h"
#include "basic/utf8.h"
#include "core/channel/channel.h"
#include "core/events/events.h"
#include "core/events/trace.h"
#include "core/exec/exec-internal.h"
#include "core/exec/exec-run.h"
#include "core/loop/loop.h"
#include "core/output/redact.h"
#include "core/policy/policy.h"
#include "core/registry/registry.h"
#include "core/remote/backend.h"
#include "core/remote/frame.h"
#include "core/tools/tool.h"
#include "ptc-version.h"

/* The agent's hello must come within this (or the run's timeout, when shorter). */
#define HANDSHAKE_USEC (30 * USEC_PER_SEC)
/* After the agent's own grace period: then the channel is killed. */
#define STOP_MARGIN_USEC (3 * USEC_PER_SEC)
/* The agent's own timeout is the run's plus this: its backstop for a host that vanished. */
#define AGENT_TIMEOUT_MARGIN 10
/* After the exit frame (or a kill), how long the channel may take to close. */
#define CLOSE_USEC (5 * USEC_PER_SEC)
#define READS_PER_WAKEUP 4

/* The configuration the agent applies, as ptc_engine_set() keys. */
static const char *const forwarded_keys[] = {
        "code_execution.max_tool_calls",
        "code_execution.mode",
        "code_execution.module_name",
        "code_execution.python",
        "sandbox.isolation",
        "sandbox.network",
        "sandbox.memory_mb",
        "sandbox.pids",
        "terminal.timeout",
        "terminal.max_timeout",
        "terminal.isolation",
        "terminal.network",
        /* The agent judges its calls with the host's policy; asks come back here. */
        "policy.dangerous",
        "policy.headless",
        "policy.approval_timeout",
        "policy.threaded_exec",
};

void remote_run_unref(struct remote_run *r)
{
        unsigned left;

        pthread_mutex_lock(&r->lock);
        left = --r->refs;
        pthread_mutex_unlock(&r->lock);
        if (left > 0)
                return;
        remote_channel_done(&r->ch);
        pthread_mutex_destroy(&r->lock);
        pthread_cond_destroy(&r->calls_done);
        free(r);
}

static bool json_array_has_string(const json_t *a, const char *want)
{
        size_t i;
        json_t *v;

        json_array_foreach(a, i, v) if (json_is_string(v) &&
                                        strcmp(json_string_value(v), want) == 0) return true;
        return false;
}

/* The channel goes (the target's end with it): it has CLOSE_USEC to close. */
static void channel_goes(struct remote_run *r)
{
        remote_channel_close_input(&r->ch);
        remote_channel_kill(&r->ch);
        run_end(&r->run, CLOSE_USEC);
}

/* The run failed on our side: say why (the first reason stays), and end the channel. */
void remote_fail(struct remote_run *r, const char *fmt, ...)
{
        va_list ap;

        if (!r->failure) {
                va_start(ap, fmt);
                if (vasprintf(&r->failure, fmt, ap) < 0)
                        r->failure = NULL;
                va_end(ap);
                if (!r->failure)
                        r->failure = strdup("the remote run failed (out of memory)");
        }
        channel_goes(r);
}

/*
 * The host owns the deadline: the agent is told to stop the script (it does as a local run
 * does), and has its own grace period and STOP_MARGIN_USEC to end the run.
 */
static usec_t remote_interrupt(struct run *run)
{
        struct remote_run *r = run->target;
        json_auto_t *sig = json_pack("{s:s}", "signal", "interrupt");

        run_signal_tools(run);
        if (r->handshake || !sig || remote_channel_send_json(&r->ch, FRAME_SIGNAL, sig) < 0) {
                /* No agent to ask: the channel goes. */
                channel_goes(r);
                return 0;
        }
        return EXEC_KILL_GRACE_USEC + STOP_MARGIN_USEC;
}

/* The agent did not end the run in its grace period: the channel goes. */
static usec_t remote_kill(struct run *run)
{
        channel_goes(run->target);
        return 0;
}

/* The channel did not close within CLOSE_USEC of the run's end. */
static void remote_drained(struct run *run)
{
        struct remote_run *r = run->target;

        remote_channel_kill(&r->ch);
}

/* The target's shell asked for the agent: send exactly its bytes. */
static void ship_agent(struct remote_run *r)
{
        usec_t t0 = now_usec();
        struct diag d;

        if (remote_channel_ship_agent(&r->ch, &d) < 0) {
                remote_fail(r, "%s", d.message);
                return;
        }
        trace_span_now(r->run.o->trace, "agent upload", "setup", t0,
                       json_pack("{s:I}", "bytes", (json_int_t) r->ch.agent_size));
        /* The handshake's clock restarts: the upload took its time. */
        loop_time_set(r->handshake_timer, MIN(r->run.deadline, now_usec() + HANDSHAKE_USEC));
}

static void handle_frame(struct remote_run *r, const struct frame *f)
{
        json_auto_t *v = NULL;
        struct diag d;
        json_int_t proto;

        if (f->type == FRAME_STDOUT || f->type == FRAME_STDERR) {
                run_output(&r->run, f->type == FRAME_STDERR, f->payload, f->len);
                return;
        }
        v = frame_parse_json(f, &d);
        if (!v) {
                remote_fail(r, "%s", d.message);
                return;
        }
        switch (f->type) {
        case FRAME_HELLO:
                proto = json_integer_value(json_object_get(v, "protocol"));
                if (proto != FRAME_PROTOCOL_VERSION) {
                        remote_fail(r,
                                    "the agent on the target speaks protocol %lld, this ptc %d: "
                                    "install the same ptc version there",
                                    (long long) proto, FRAME_PROTOCOL_VERSION);
                        return;
                }
                if (r->session &&
                    !json_array_has_string(json_object_get(v, "features"), "session")) {
                        remote_fail(r, "the agent on the target has no sessions: install the "
                                       "same ptc version there");
                        return;
                }
                if (!json_array_has_string(json_object_get(v, "features"), "policy")) {
                        remote_fail(r, "the agent on the target does not apply the policy "
                                       "(docs/policy.md): install the same ptc version there");
                        return;
                }
                if (r->handshake) {
                        if (remote_channel_send(&r->ch, r->opening.data, r->opening.len) < 0) {
                                remote_fail(r, "cannot write to the channel");
                                return;
                        }
                        buf_release(&r->opening);
                        r->script_started = now_usec();
                        trace_span(r->run.o->trace, "handshake", "setup", r->channel_started,
                                   r->script_started, NULL);
                        r->handshake = false;
                        loop_time_set(r->handshake_timer, USEC_INFINITY);
                        run_arm_deadline(&r->run);
                        /* A session's opening is over; its cells are runs of their own. */
                        r->run.done = r->handshake_only;
                }
                break;
        case FRAME_CALL:
                remote_start_call(r, v);
                break;
        case FRAME_ASK:
                remote_start_ask(r, v);
                break;
        case FRAME_EXIT:
                if (!r->handshake && r->script_started)
                        trace_span_now(r->run.o->trace, r->session ? "cell" : "script", "script",
                                       r->script_started, json_pack("{s:s}", "on", "target"));
                if (r->session && !r->cell_over && !r->handshake) {
                        /* A cell's end: the agent waits for the next one. */
                        r->session_lost = json_is_true(json_object_get(v, "session_lost"));
                        r->exit = TAKE_PTR(v);
                        r->cell_over = true;
                        run_signal_tools(&r->run);
                        r->run.done = true;
                        break;
                }
                r->exit = TAKE_PTR(v);
                remote_channel_close_input(&r->ch); /* the agent exits at end of file */
                run_end(&r->run, CLOSE_USEC);
                break;
        case FRAME_PROGRESS: {
                /* Named by the registry's own string: the target's is not trusted. */
                const struct tool *t = registry_find(r->run.o->registry,
                                                     json_string_value(json_object_get(v, "tool")));
                json_int_t n = json_integer_value(json_object_get(v, "count"));

                if (t && n > 0 && r->run.o->on_call)
                        r->run.o->on_call(r->run.o->on_call_userdata, t->name, n);
                /* A call on the target: what the host knows of it. */
                if (t && n > 0)
                        event_emit(r->run.o->events, "call",
                                   json_pack("{s:s, s:I, s:b}", "tool", t->name, "count", n,
                                             "on_target", 1));
                break;
        }
        case FRAME_ERROR:
                r->agent_said_why = true;
                remote_fail(r, "the agent on the target failed: %s",
                            json_string_value(json_object_get(v, "error")) ?: "(no message)");
                break;
        default:
                break;
        }
}

static void close_out(struct remote_run *r)
{
        loop_remove(r->out_src);
        r->out_src = NULL;
        r->ch.out_fd = safe_close(r->ch.out_fd);
        r->run.holds--;
}

static void on_out(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct remote_run *r = userdata;
        struct frame f;
        struct diag d;
        int k;

        for (int i = 0; i < READS_PER_WAKEUP && r->ch.out_fd >= 0; i++) {
                ssize_t n = frame_reader_fill(&r->ch.reader, fd);

                if (n == -EAGAIN)
                        return;
                if (n <= 0) {
                        if (!r->exit && !r->failure && !r->run.stopped) {
                                if (n < 0)
                                        remote_fail(r, "reading the channel: %s",
                                                    strerror((int) -n));
                                else if (frame_reader_eof(&r->ch.reader, &d) < 0)
                                        remote_fail(r, "%s", d.message);
                                else
                                        remote_fail(r,
                                                    "the channel closed before the script ended");
                        }
                        close_out(r);
                        return;
                }
                while ((k = frame_reader_next(&r->ch.reader, &f, &d)) == 1 && r->ch.out_fd >= 0) {
                        handle_frame(r, &f);
                        if (r->failure)
                                break;
                }
                if (k < 0) {
                        remote_fail(r, "%s", d.message);
                        close_out(r);
                        return;
                }
                if (r->handshake && remote_channel_wants_agent(&r->ch))
                        ship_agent(r);
                if (r->failure) {
                        close_out(r);
                        return;
                }
        }
}

static void on_err(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct remote_run *r = userdata;
        int k = remote_channel_read_err(&r->ch);

        if (k == -EAGAIN || k > 0)
                return;
        loop_remove(r->err_src);
        r->err_src = NULL;
        r->ch.err_fd = safe_close(r->ch.err_fd);
        r->run.holds--;
}

static void on_child(struct loop_source *s, const siginfo_t *si, void *userdata)
{
        struct remote_run *r = userdata;

        remote_channel_reaped(&r->ch);
        r->run.holds--;
        if (!r->run.ended)
                run_end(&r->run, CLOSE_USEC);
}

static void on_handshake_timer(struct loop_source *s, usec_t now, void *userdata)
{
        struct remote_run *r = userdata;

        if (r->handshake && !r->run.ended)
                remote_fail(r, "no answer within %g s",
                            (double) (MIN(r->run.deadline, r->run.start + HANDSHAKE_USEC) -
                                      r->run.start) /
                                    USEC_PER_SEC);
}

/* The run frame: the script, the configuration the agent applies, the tools and where. */
json_t *remote_run_frame(const struct remote_run *r)
{
        const struct exec_opts *o = r->run.o;
        json_auto_t *run = NULL, *opts = NULL, *tools = NULL, *host = NULL;
        char timeout[64];

        opts = json_object();
        tools = json_array();
        host = json_array();
        if (!opts || !tools || !host)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(forwarded_keys); i++) {
                _cleanup_free_ char *v = NULL;

                if (config_get_value(o->config, forwarded_keys[i], &v, NULL) < 0)
                        return NULL;
                if (json_object_set_new(opts, forwarded_keys[i], json_string(v)) < 0)
                        return NULL;
        }
        result_format_seconds(o->config->timeout + AGENT_TIMEOUT_MARGIN, timeout, sizeof(timeout));
        if (json_object_set_new(opts, "code_execution.timeout", json_string(timeout)) < 0)
                return NULL;
        if (o->config->policy.n_rules > 0) {
                json_auto_t *rules = policy_rules_to_json(&o->config->policy);
                _cleanup_free_ char *text = rules ? json_dumps(rules, JSON_COMPACT) : NULL;

                if (!text || json_object_set_new(opts, "policy.rules", json_string(text)) < 0)
                        return NULL;
        }
        /* The agent's engine checks it where it is a path: on the target. */
        if (o->config->remote_cwd &&
            json_object_set_new(opts, "cwd", json_string(o->config->remote_cwd)) < 0)
                return NULL;
        for (size_t i = 0; i < registry_count(o->registry); i++) {
                const struct tool *t = registry_get(o->registry, i);
                json_t *def;

                if (!t->runs_on_host) {
                        if (json_array_append_new(tools, json_string(t->name)) < 0)
                                return NULL;
                        continue;
                }
                def = json_pack("{s:s, s:s, s:O, s:s}", "name", t->name, "description",
                                t->description, "parameters", t->parameters, "returns", t->returns);
                if (!def || json_array_append_new(host, def) < 0)
                        return NULL;
        }
        run = json_pack("{s:s%, s:O, s:O, s:O, s:b, s:b, s:b}", "code", o->code, o->code_len,
                        "options", opts, "tools", tools, "host_tools", host, "log_calls",
                        o->log_calls, "progress", o->on_call != NULL, "session", r->session);
        return TAKE_PTR(run);
}

static void remote_teardown(struct run *run)
{
        struct remote_run *r = run->target;

        remote_wait_calls(r);
        /* The loop's sources go with it; the channel's fds stay open. */
        r->out_src = r->err_src = r->child_src = r->handshake_timer = NULL;
        json_decref(TAKE_PTR(r->exit));
        free(TAKE_PTR(r->error_text));
}

static const struct run_target_ops remote_ops = {
        .interrupt = remote_interrupt,
        .kill = remote_kill,
        .drained = remote_drained,
        .collect = remote_collect,
        .teardown = remote_teardown,
};

/* The channel's sources on the run's loop: what the run's end waits for (holds). */
static int attach_channel(struct remote_run *r, struct diag *reterr)
{
        struct run *run = &r->run;
        struct remote_channel *c = &r->ch;
        int k;

        if ((c->out_fd >= 0 &&
             (k = loop_add(run->loop, c->out_fd, EPOLLIN, on_out, r, &r->out_src)) < 0) ||
            (c->err_fd >= 0 &&
             (k = loop_add(run->loop, c->err_fd, EPOLLIN, on_err, r, &r->err_src)) < 0) ||
            (!c->reaped &&
             (k = loop_add_child(run->loop, c->pid, c->pidfd, on_child, r, &r->child_src)) < 0))
                return diag_set(reterr, k, "event loop: %s", strerror(-k));
        run->holds = (c->out_fd >= 0) + (c->err_fd >= 0) + !c->reaped;
        return 0;
}

int remote_begin_run(struct remote_run *r, const struct exec_opts *o, struct diag *reterr)
{
        int k;

        run_init(&r->run, o, &remote_ops, r);
        r->run.redact_log = true; /* the agent's log: the redactor did not see it */
        r->host_calls = 0;        /* each cell has its own budget */
        r->cell_over = r->session_lost = false;
        k = run_begin(&r->run, o->cwd, reterr);
        /* A session's channel is there already: its sources join the cell's loop. */
        if (k >= 0 && r->ch.pid > 0)
                k = attach_channel(r, reterr);
        return k;
}

void remote_end_run(struct remote_run *r)
{
        run_teardown(&r->run);
}

/*
 * Start the channel and tell the target's shell to exec the agent; @opening (our magic,
 * hello and, for a one-shot run, the run frame) goes when the agent's hello comes.
 */
int remote_open_channel(struct remote_run *r, struct diag *reterr)
{
        json_auto_t *hello = NULL, *run = NULL;
        int k;

        hello = json_pack("{s:i, s:s, s:[]}", "protocol", FRAME_PROTOCOL_VERSION, "ptc",
                          PTC_VERSION, "features");
        if (!r->session) {
                /* The run frame is JSON: the script travels as a string. */
                if (!utf8_is_valid(r->run.o->code, r->run.o->code_len))
                        return diag_set(reterr, -EINVAL,
                                        "a remote run takes a UTF-8 script; this one is not valid "
                                        "UTF-8");
                run = remote_run_frame(r);
                if (!run)
                        return diag_set(reterr, -ENOMEM, "out of memory");
        }
        if (!hello)
                return diag_set(reterr, -ENOMEM, "out of memory");
        r->opening = BUF_INIT(FRAME_MAGIC_SIZE + 2 * (FRAME_HEADER_SIZE + FRAME_JSON_MAX));
        k = frame_append_magic(&r->opening);
        k = k ?: frame_append_json(&r->opening, FRAME_HELLO, hello);
        if (run)
                k = k ?: frame_append_json(&r->opening, FRAME_RUN, run);
        if (k == -E2BIG)
                return diag_set(reterr, k,
                                "the script is too large for the remote stream (at "
                                "most 16 MiB with its options)");
        if (k < 0)
                return diag_set(reterr, k, "out of memory");

        k = remote_channel_find_agent(&r->ch);
        if (k < 0)
                return diag_set(reterr, k, "out of memory");
        r->channel_started = now_usec();
        k = remote_channel_start(&r->ch, r->run.o->backend, r->run.o->base_env, r->run.o->cwd,
                                 reterr);
        if (k < 0)
                return k;
        trace_span_now(r->run.o->trace, "channel", "setup", r->channel_started,
                       json_pack("{s:s}", "backend", backend_kind_name(r->run.o->backend->kind)));
        /* spawn falls back to pidfd_open(); without either (before Linux 5.3) the channel's
         * end cannot be watched. */
        if (r->ch.pidfd < 0)
                return diag_set(reterr, -EOPNOTSUPP,
                                "backend '%s': cannot watch the channel: no pidfd for it (Linux "
                                "5.3 or later is needed)",
                                r->run.o->backend->spec);
        k = attach_channel(r, reterr);
        k = k
                    ?: loop_add_time(r->run.loop,
                                     MIN(r->run.deadline, r->run.start + HANDSHAKE_USEC),
                                     on_handshake_timer, r, &r->handshake_timer);
        if (k < 0)
                return diag_set(reterr, k, "event loop: %s", strerror(-k));

        return remote_channel_bootstrap(&r->ch, reterr);
}

void remote_close_channel(struct remote_run *r)
{
        remote_channel_close_input(&r->ch);
        loop_remove(r->out_src);
        loop_remove(r->err_src);
        loop_remove(r->child_src);
        r->out_src = r->err_src = r->child_src = NULL;
        remote_channel_close(&r->ch);
        free(TAKE_PTR(r->failure));
        buf_release(&r->opening);
}

struct remote_run *remote_run_new(void)
{
        struct remote_run *r = calloc(1, sizeof(*r));

        if (!r)
                return NULL;
        *r = (struct remote_run){
                .refs = 1,
                .handshake = true,
                .run = {.cancel_fd = -EBADF, .wake_fd = -EBADF},
        };
        pthread_mutex_init(&r->lock, NULL);
        pthread_cond_init(&r->calls_done, NULL);
        remote_channel_init(&r->ch);
        return r;
}
