/* SPDX-License-Identifier: MIT */
/*
 * ptc_agent_serve(): ptc on a remote target, the other end of exec-remote.c
 * (docs/remote.md). It speaks the stream (remote/frame.h) on two fds, the channel's: says
 * hello, takes the host's hello and run frames, runs the script as a local execution with
 * the host's configuration, streams what the script writes as it is read, forwards the
 * calls of the tools that run on the host (their definitions came in the run frame) and
 * answers the script with the host's answers, stops the script when the host says so, and
 * ends with an exit frame.
 *
 * A session's channel (docs/sessions.md: the run frame says "session") carries many runs:
 * each is the next cell of one session of this agent's engine, and after its exit frame
 * the agent waits for the next run frame; the end of the channel ends the session.
 *
 * Threads: the caller's runs the execution; a reader thread takes the host's frames once
 * the run has started (answers, signals, a session's next run; end of file means the host
 * is gone, and the script is stopped); the forwarded calls are made from the RPC server's
 * threads. Every write to the host is one whole frame under the write lock.
 */

#include "ptc/ptc.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/buf.h"
#include "basic/fd-util.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "core/api/api-util.h"
#include "core/api/engine.h"
#include "core/api/execution.h"
#include "core/remote/frame.h"
#include "ptc-version.h"

/* The host's hello and run must come within this after our hello. */
#define OPENING_TIMEOUT_MS 60000
/* Forwarded calls waiting for their answers at once (the RPC server runs at most 16). */
#define PENDING_MAX 64
/* The longest sessions.idle_timeout there is (7 days, the config's maximum). */
#define SESSION_IDLE_MAX "604800"
/* A write to the host that makes no progress for this long breaks the stream. */
#define WRITE_STALL_MS 30000

struct pending_call {
        json_int_t id;
        ptc_tool_call *call;
};

/* An ask of the policy waiting for the host's answer (docs/policy.md). */
struct pending_ask {
        json_int_t id;
        ptc_approval *request;
};

struct agent {
        int in_fd, out_fd;
        pthread_mutex_t write_lock;
        bool write_broken;
        struct frame_reader reader;

        pthread_mutex_t lock;    /* the execution, the pending calls, host_gone, next_run */
        pthread_cond_t news;     /* next_run came, or the host is gone */
        ptc_execution *exec;     /* the run's; NULL between a session's cells */
        json_t *next_run;        /* a session's next run frame */
        pthread_t reader_thread; /* takes the host's frames, once a run has started */
        bool reader_running;
        struct pending_call pending[PENDING_MAX];
        size_t n_pending;
        struct pending_ask asks[PENDING_MAX];
        size_t n_asks;
        json_int_t next_id;
        bool host_gone;
        int stop_fd; /* eventfd: the reader thread stops */
};

static int send_buf(struct agent *a, const struct buf *b)
{
        int k = -EPIPE;

        pthread_mutex_lock(&a->write_lock);
        if (!a->write_broken) {
                k = write_all_stalling(a->out_fd, b->data, b->len, WRITE_STALL_MS, false);
                if (k < 0)
                        a->write_broken = true;
        }
        pthread_mutex_unlock(&a->write_lock);
        return k;
}

static int send_json(struct agent *a, enum frame_type type, const json_t *v)
{
        _cleanup_buf_ struct buf b = BUF_INIT(FRAME_HEADER_SIZE + FRAME_JSON_MAX);
        int k = frame_append_json(&b, type, v);

        return k < 0 ? k : send_buf(a, &b);
}

/* The last word to the host: why this end gives up. */
_printf_(3, 4) static int send_error(struct agent *a, int error, const char *fmt, ...)
{
        json_auto_t *v = NULL;
        char msg[1024];
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        v = json_pack("{s:s}", "error", msg);
        if (v)
                (void) send_json(a, FRAME_ERROR, v);
        return error;
}

/* exec_opts.on_output: each chunk as a frame, on the run's thread. */
static void on_output(void *userdata, bool is_err, const char *p, size_t n)
{
        struct agent *a = userdata;

        while (n > 0) {
                size_t c = MIN(n, (size_t) FRAME_CHUNK_MAX);
                _cleanup_buf_ struct buf b = BUF_INIT(FRAME_HEADER_SIZE + FRAME_CHUNK_MAX);

                if (frame_append(&b, is_err ? FRAME_STDERR : FRAME_STDOUT, p, c) < 0 ||
                    send_buf(a, &b) < 0)
                        return; /* the host is gone: the reader stops the script */
                p += c;
                n -= c;
        }
}

/* Each dispatched tool call, for the host's progress (ptc_execution_on_progress()). */
static void on_progress(const char *tool, int64_t count, void *userdata)
{
        json_auto_t *v = json_pack("{s:s, s:I}", "tool", tool, "count", (json_int_t) count);

        if (v)
                (void) send_json(userdata, FRAME_PROGRESS, v);
}

/* A forwarded tool: the call goes to the host, the reader thread answers it. */
static void forward_call(ptc_tool_call *call, void *userdata)
{
        struct agent *a = userdata;
        json_auto_t *args = NULL, *frame = NULL;
        json_error_t jerr;
        json_int_t id = 0;
        bool room, mine = false;

        args = json_loads(ptc_tool_call_arguments(call), 0, &jerr);
        pthread_mutex_lock(&a->lock);
        room = !a->host_gone && a->n_pending < PENDING_MAX;
        if (room) {
                id = ++a->next_id;
                a->pending[a->n_pending++] = (struct pending_call){.id = id, .call = call};
        }
        pthread_mutex_unlock(&a->lock);
        if (!room) {
                (void) ptc_tool_call_fail(call, a->host_gone ? "the host is gone"
                                                             : "too many host tool calls at once");
                return;
        }
        frame = json_pack("{s:I, s:s, s:o}", "id", id, "tool", ptc_tool_call_name(call), "args",
                          args ? json_incref(args) : json_object());
        if (frame && send_json(a, FRAME_CALL, frame) == 0)
                return;
        /* Not sent: take it back, unless the reader failed it meanwhile. */
        pthread_mutex_lock(&a->lock);
        for (size_t i = 0; i < a->n_pending; i++)
                if (a->pending[i].id == id) {
                        a->pending[i] = a->pending[--a->n_pending];
                        mine = true;
                        break;
                }
        pthread_mutex_unlock(&a->lock);
        if (mine)
                (void) ptc_tool_call_fail(call, "cannot send the call to the host");
}

/* The answer frame: {"id": N, "result": {...}}. */
static void take_answer(struct agent *a, json_t *v)
{
        json_int_t id = json_integer_value(json_object_get(v, "id"));
        json_t *result = json_object_get(v, "result");
        ptc_tool_call *call = NULL;
        _cleanup_free_ char *text = NULL;

        pthread_mutex_lock(&a->lock);
        for (size_t i = 0; i < a->n_pending; i++)
                if (a->pending[i].id == id) {
                        call = a->pending[i].call;
                        a->pending[i] = a->pending[--a->n_pending];
                        break;
                }
        pthread_mutex_unlock(&a->lock);
        if (!call)
                return; /* not ours, or answered already: ignored */
        text = json_is_object(result) ? json_dumps(result, JSON_COMPACT) : NULL;
        if (text)
                (void) ptc_tool_call_return(call, text);
        else
                (void) ptc_tool_call_fail(call, "the host's answer has no result object");
}

/*
 * The policy asks about a call the engine judged here, with the host's policy: the host
 * puts it to whoever answers there (a terminal, an MCP client, a library host) and the
 * reader thread answers the request with the host's approval frame.
 */
static void forward_ask(ptc_approval *request, void *userdata)
{
        struct agent *a = userdata;
        json_auto_t *verdict = json_loads(ptc_approval_verdict(request), 0, NULL), *frame = NULL;
        json_int_t id = 0;
        bool room, mine = false;

        pthread_mutex_lock(&a->lock);
        room = !a->host_gone && a->n_asks < PENDING_MAX && verdict;
        if (room) {
                id = ++a->next_id;
                a->asks[a->n_asks++] = (struct pending_ask){.id = id, .request = request};
        }
        pthread_mutex_unlock(&a->lock);
        if (!room) {
                (void) ptc_approval_answer(request, PTC_APPROVE_NO_ANSWER);
                return;
        }
        frame = json_pack("{s:I, s:s, s:s, s:O}", "id", id, "tool", ptc_approval_tool(request),
                          "args", ptc_approval_arguments(request), "verdict", verdict);
        if (frame && send_json(a, FRAME_ASK, frame) == 0)
                return;
        pthread_mutex_lock(&a->lock);
        for (size_t i = 0; i < a->n_asks; i++)
                if (a->asks[i].id == id) {
                        a->asks[i] = a->asks[--a->n_asks];
                        mine = true;
                        break;
                }
        pthread_mutex_unlock(&a->lock);
        if (mine)
                (void) ptc_approval_answer(request, PTC_APPROVE_NO_ANSWER);
}

/* The approval frame: {"id": N, "answer": "once"|"session"|"deny"|"timeout"|...}. */
static void take_approval(struct agent *a, json_t *v)
{
        static const struct {
                const char *word;
                int answer;
        } answers[] = {
                {"once", PTC_APPROVE_ONCE},         {"session", PTC_APPROVE_SESSION},
                {"deny", PTC_APPROVE_DENY},         {"cannot", PTC_APPROVE_CANNOT_ASK},
                {"timeout", PTC_APPROVE_NO_ANSWER}, {"cancel", PTC_APPROVE_NO_ANSWER},
        };
        json_int_t id = json_integer_value(json_object_get(v, "id"));
        const char *word = json_string_value(json_object_get(v, "answer"));
        ptc_approval *request = NULL;
        int answer = PTC_APPROVE_DENY; /* an answer not understood */

        pthread_mutex_lock(&a->lock);
        for (size_t i = 0; i < a->n_asks; i++)
                if (a->asks[i].id == id) {
                        request = a->asks[i].request;
                        a->asks[i] = a->asks[--a->n_asks];
                        break;
                }
        pthread_mutex_unlock(&a->lock);
        if (!request)
                return;
        for (size_t i = 0; word && i < ELEMENTSOF(answers); i++)
                if (strcmp(word, answers[i].word) == 0)
                        answer = answers[i].answer;
        (void) ptc_approval_answer(request, answer);
}

/* Stop the run, if one runs (@why: a literal, it outlives the call). */
static void interrupt(struct agent *a, const char *why)
{
        pthread_mutex_lock(&a->lock);
        if (a->exec)
                ptc_execution_interrupt(a->exec, why);
        pthread_mutex_unlock(&a->lock);
}

/* A session's next run frame, for the caller's thread. false: it breaks the stream. */
static bool take_run(struct agent *a, const struct frame *f)
{
        json_t *run = json_loadb(f->payload, f->len, JSON_ALLOW_NUL, NULL);
        bool ok;

        pthread_mutex_lock(&a->lock);
        /* One cell at a time: a run while one runs, or before it was taken, is not one. */
        ok = run && json_is_object(run) && !a->exec && !a->next_run;
        if (ok) {
                a->next_run = run;
                pthread_cond_broadcast(&a->news);
        }
        pthread_mutex_unlock(&a->lock);
        if (!ok)
                json_decref(run);
        return ok;
}

/* The host is gone (or broke the stream): every forwarded call fails, the script stops. */
static void host_gone(struct agent *a, const char *why)
{
        struct pending_call calls[PENDING_MAX];
        struct pending_ask asks[PENDING_MAX];
        size_t n, n_asks;

        pthread_mutex_lock(&a->lock);
        a->host_gone = true;
        n = a->n_pending;
        memcpy(calls, a->pending, n * sizeof(*calls));
        a->n_pending = 0;
        n_asks = a->n_asks;
        memcpy(asks, a->asks, n_asks * sizeof(*asks));
        a->n_asks = 0;
        pthread_mutex_unlock(&a->lock);
        for (size_t i = 0; i < n; i++)
                (void) ptc_tool_call_fail(calls[i].call, why);
        for (size_t i = 0; i < n_asks; i++)
                (void) ptc_approval_answer(asks[i].request, PTC_APPROVE_NO_ANSWER);
        interrupt(a, why);
        pthread_mutex_lock(&a->lock);
        pthread_cond_broadcast(&a->news);
        pthread_mutex_unlock(&a->lock);
}

/* Take every whole frame the reader holds. false when the reader thread is done. */
static bool take_frames(struct agent *a)
{
        struct frame f;
        struct diag d;
        int k;

        while ((k = frame_reader_next(&a->reader, &f, &d)) == 1) {
                json_auto_t *v = NULL;

                if (f.type == FRAME_RUN) {
                        if (take_run(a, &f))
                                continue;
                        (void) send_error(a, -EPROTO, "a run frame while a run runs");
                        host_gone(a, "the host broke the stream");
                        return false;
                }
                v = frame_parse_json(&f, &d);
                if (!v)
                        break;
                if (f.type == FRAME_ANSWER)
                        take_answer(a, v);
                else if (f.type == FRAME_APPROVAL)
                        take_approval(a, v);
                else if (f.type == FRAME_SIGNAL)
                        interrupt(a, "interrupted by the host");
                else if (f.type == FRAME_ERROR) {
                        host_gone(a, "the host gave up");
                        return false;
                }
        }
        if (k != 0) {
                (void) send_error(a, -EPROTO, "%s", d.message);
                host_gone(a, "the host broke the stream");
                return false;
        }
        return true;
}

static void *reader_main(void *arg)
{
        struct agent *a = arg;

        /* What came with the run frame first (a signal right after it). */
        while (take_frames(a)) {
                /* No deadline: a frame, the channel's end or the stop wakes this. */
                int k = fd_wait_either(a->in_fd, a->stop_fd, USEC_INFINITY);
                ssize_t n;

                if (k < 0) {
                        host_gone(a, "the host's channel failed");
                        return NULL;
                }
                if (k & FD_WAIT_B)
                        return NULL;
                n = frame_reader_fill(&a->reader, a->in_fd);
                if (n == -EAGAIN || n == -EINTR)
                        continue;
                if (n <= 0) {
                        host_gone(a, n == 0 ? "the host closed the channel"
                                            : "the host's channel failed");
                        return NULL;
                }
        }
        return NULL;
}

/* Read until a whole frame is in (the opening: before the reader thread exists). */
static int read_frame(struct agent *a, struct frame *f, struct diag *d)
{
        for (;;) {
                ssize_t n;
                int k = frame_reader_next(&a->reader, f, d);

                if (k != 0)
                        return k;
                k = fd_wait_readable(a->in_fd, now_usec() + OPENING_TIMEOUT_MS * USEC_PER_MSEC);
                if (k == 0)
                        return diag_set(d, -ETIMEDOUT, "the host sent no run within %d s",
                                        OPENING_TIMEOUT_MS / 1000);
                if (k < 0)
                        return diag_set(d, k, "poll: %s", strerror(-k));
                n = frame_reader_fill(&a->reader, a->in_fd);
                if (n == 0) {
                        k = frame_reader_eof(&a->reader, d);
                        return k < 0 ? k : diag_set(d, -EPIPE, "the host closed the channel");
                }
                if (n < 0 && n != -EAGAIN && n != -EINTR)
                        return diag_set(d, (int) n, "reading the channel: %s", strerror((int) -n));
        }
}

/* The host's tools, stand-ins here: each call goes back over the stream. */
static int add_host_tools(struct agent *a, ptc_engine *e, json_t *defs, struct diag *d)
{
        size_t i;
        json_t *def;

        json_array_foreach(defs, i, def)
        {
                _cleanup_free_ char *params =
                        json_dumps(json_object_get(def, "parameters"), JSON_COMPACT);
                struct ptc_tool_def td = {
                        .size = sizeof(td),
                        .name = json_string_value(json_object_get(def, "name")),
                        .description = json_string_value(json_object_get(def, "description")),
                        .parameters_json = params,
                        .returns = json_string_value(json_object_get(def, "returns")),
                        .fn = forward_call,
                        .userdata = a,
                };
                struct ptc_diag pd = {};
                int k;

                if (!td.name)
                        return diag_set(d, -EPROTO, "a host tool without a name");
                k = engine_add_host_tool(e, &td, true, &pd);
                if (k < 0)
                        return diag_set(d, k, "%s", pd.message);
        }
        return 0;
}

/* The run's tools as the "tools" option: ours (tools) and the host's (host_tools). */
static int tool_names(json_t *run, struct buf *names)
{
        json_t *v;
        size_t i;

        json_array_foreach(json_object_get(run, "tools"), i,
                           v) if (buf_printf(names, "%s%s", names->len ? "," : "",
                                             json_string_value(v) ?: "") < 0) return -ENOMEM;
        json_array_foreach(json_object_get(run, "host_tools"), i,
                           v) if (buf_printf(names, "%s%s", names->len ? "," : "",
                                             json_string_value(json_object_get(v, "name")) ?: "") <
                                  0) return -ENOMEM;
        return 0;
}

/* The host's configuration, its tools and ours, as the run frame gives them. */
static int make_engine(struct agent *a, json_t *run, ptc_engine **ret, struct diag *d)
{
        ptc_engine *e = NULL;
        struct ptc_diag pd = {};
        json_t *opts = json_object_get(run, "options"), *tools = json_object_get(run, "tools");
        json_t *host = json_object_get(run, "host_tools"), *v;
        _cleanup_buf_ struct buf names = BUF_INIT(1 << 20);
        const char *key;
        int k;

        if (!json_is_object(opts) || !json_is_array(tools) || !json_is_array(host))
                return diag_set(d, -EPROTO, "the run frame lacks options, tools or host_tools");
        /*
         * Without a remote_cwd, the target's own directory is where the channel started (a
         * container's is often `/`): refused there, the run works in a private directory
         * of the target, as `ptc mcp` started in `/` (docs/remote.md). A remote_cwd the user
         * named is judged and refused, never replaced.
         */
        k = ptc_engine_new(
                NULL, PTC_ENGINE_NO_CONFIG_FILE | PTC_ENGINE_SCRUB_PROCESS | PTC_ENGINE_PRIVATE_CWD,
                &e, &pd);
        if (k < 0)
                return diag_set(d, k, "%s", pd.message);
        json_object_foreach(opts, key, v)
        {
                if (!json_is_string(v) ||
                    (k = ptc_engine_set(e, key, json_string_value(v), &pd)) < 0) {
                        ptc_engine_free(e);
                        if (!json_is_string(v))
                                return diag_set(d, -EPROTO, "option %s: not a string", key);
                        /* The one option the user gave as a path of the target. */
                        if (strcmp(key, "cwd") == 0)
                                return diag_set(d, k, "code_execution.remote_cwd: %s",
                                                strncmp(pd.message, "cwd: ", 5) == 0
                                                        ? pd.message + 5
                                                        : pd.message);
                        return diag_set(d, k, "option %s: %s", key, pd.message);
                }
        }
        k = tool_names(run, &names);
        if (k == -ENOMEM || (k = add_host_tools(a, e, host, d)) < 0 ||
            /* The policy's asks go to the host (docs/policy.md). */
            (k = ptc_engine_set_approver(e, forward_ask, a, &pd)) < 0 ||
            (k = ptc_engine_set(e, "tools", buf_str(&names), &pd)) < 0 ||
            /* A session lives as long as the host keeps the channel: the host's idle
             * timeout closes it, never this engine's. */
            (json_is_true(json_object_get(run, "session")) &&
             (k = ptc_engine_set(e, "sessions.idle_timeout", SESSION_IDLE_MAX, &pd)) < 0) ||
            (k = ptc_engine_start(e, &pd)) < 0 ||
            /* The target's directory is judged here, as a local run's (docs/isolation.md):
             * refused before the run, with the reason for the host. */
            (k = engine_check_cwd(&e->config, false, e->cwd, &pd)) < 0) {
                /* A refused directory is the one the user named as a path of the target. */
                if (!d->message[0] && json_object_get(opts, "cwd") &&
                    strncmp(pd.message, "cwd: ", 5) == 0)
                        diag_set(d, k, "code_execution.remote_cwd: %s", pd.message + 5);
                if (!d->message[0])
                        diag_set(d, k, "%s", pd.message[0] ? pd.message : strerror(-k));
                ptc_engine_free(e);
                return k;
        }
        *ret = e;
        return 0;
}

/* The exit frame from the run's result: what the host needs of it besides the output,
 * and the run's warnings (isolation auto's left-out layers here). */
static int send_exit(struct agent *a, const char *result_json, const char *warnings)
{
        json_auto_t *res = json_loads(result_json ?: "{}", 0, NULL), *exit = json_object();
        static const char *const keys[] = {"status",     "exit_code",    "tool_calls_made", "error",
                                           "tool_calls", "session_lost", "session_note"};

        if (!res || !exit)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                json_t *v = json_object_get(res, keys[i]);

                if (v && json_object_set(exit, keys[i], v) < 0)
                        return -ENOMEM;
        }
        if (warnings && warnings[0] &&
            json_object_set_new(exit, "warnings", json_string(warnings)) < 0)
                return -ENOMEM;
        return send_json(a, FRAME_EXIT, exit);
}

/*
 * One run of @run's code on @e, its output and calls streamed, then its exit frame: the run
 * of a one-shot channel, or the next cell of a session's (@session: its options are this
 * cell's, its tools the session's).
 */
static int run_one(struct agent *a, ptc_engine *e, json_t *run, bool session, struct diag *d)
{
        json_t *code = json_object_get(run, "code"), *opts = json_object_get(run, "options");
        _cleanup_free_ char *result = NULL, *warnings = NULL;
        struct ptc_diag pd = {};
        ptc_execution *x = NULL;
        enum ptc_status st;
        int k;

        if (!json_is_string(code))
                return send_error(a, diag_set(d, -EPROTO, "the run frame has no code"), "%s",
                                  d->message);
        k = ptc_execution_new(e, &x, &pd);
        if (k >= 0 && session)
                k = ptc_execution_set(x, "session", "remote", &pd);
        if (k >= 0 && session) {
                /* The cell's own limits (the engine has the first cell's). */
                const char *t = json_string_value(json_object_get(opts, "code_execution.timeout"));
                const char *m =
                        json_string_value(json_object_get(opts, "code_execution.max_tool_calls"));

                _cleanup_buf_ struct buf names = BUF_INIT(1 << 20);

                if (t)
                        k = ptc_execution_set(x, "timeout", t, &pd);
                if (k >= 0 && m)
                        k = ptc_execution_set(x, "max_tool_calls", m, &pd);
                /* The cell's tools: a subset of the session's, as a local cell's may be. */
                if (k >= 0 && (k = tool_names(run, &names)) >= 0)
                        k = ptc_execution_set(x, "tools", buf_str(&names), &pd);
        }
        if (k >= 0 && json_is_true(json_object_get(run, "log_calls")))
                k = ptc_execution_set(x, "log_calls", "true", &pd);
        if (k >= 0)
                k = execution_on_output(x, on_output, a);
        if (k >= 0 && json_is_true(json_object_get(run, "progress")))
                k = ptc_execution_on_progress(x, on_progress, a);
        if (k < 0) {
                ptc_execution_free(x);
                return send_error(a, diag_set(d, k, "%s", pd.message), "%s", d->message);
        }
        pthread_mutex_lock(&a->lock);
        a->exec = x;
        if (a->host_gone)
                ptc_execution_interrupt(x, "the host is gone");
        pthread_mutex_unlock(&a->lock);
        /* After the first run has its execution: a signal right after its frame stops it. */
        if (!a->reader_running) {
                k = -pthread_create(&a->reader_thread, NULL, reader_main, a);
                if (k < 0) {
                        pthread_mutex_lock(&a->lock);
                        a->exec = NULL;
                        pthread_mutex_unlock(&a->lock);
                        ptc_execution_free(x);
                        return send_error(a, diag_set(d, k, "cannot start a thread"), "%s",
                                          d->message);
                }
                a->reader_running = true;
        }
        (void) ptc_execution_run(x, json_string_value(code), json_string_length(code), &result, &st,
                                 &pd);
        warnings = ptc_execution_warnings(x);
        pthread_mutex_lock(&a->lock);
        a->exec = NULL;
        pthread_mutex_unlock(&a->lock);
        ptc_execution_free(x);
        k = send_exit(a, result, warnings);
        return k < 0 ? diag_set(d, k, "cannot send the exit frame: %s", strerror(-k)) : 0;
}

static int serve(struct agent *a, struct diag *d)
{
        _cleanup_buf_ struct buf hello_buf = BUF_INIT(1 << 16);
        json_auto_t *hello = NULL, *theirs = NULL, *run = NULL;
        ptc_engine *e = NULL;
        const char *code;
        struct frame f;
        bool session;
        int k;

        hello = json_pack("{s:i, s:s, s:[s, s]}", "protocol", FRAME_PROTOCOL_VERSION, "ptc",
                          PTC_VERSION, "features", "session", "policy");
        if (!hello || frame_append_magic(&hello_buf) < 0 ||
            frame_append_json(&hello_buf, FRAME_HELLO, hello) < 0)
                return diag_set(d, -ENOMEM, "out of memory");
        if (send_buf(a, &hello_buf) < 0)
                return diag_set(d, -EPIPE, "cannot write to the channel");

        k = read_frame(a, &f, d);
        if (k < 0)
                return k;
        theirs = frame_parse_json(&f, d);
        if (!theirs)
                return send_error(a, -EPROTO, "%s", d->message);
        if (json_integer_value(json_object_get(theirs, "protocol")) != FRAME_PROTOCOL_VERSION)
                return send_error(a, diag_set(d, -EPROTO, "the host speaks another protocol"),
                                  "this agent speaks protocol %d", FRAME_PROTOCOL_VERSION);
        k = read_frame(a, &f, d);
        if (k < 0)
                return send_error(a, k, "%s", d->message);
        if (f.type != FRAME_RUN)
                return send_error(a,
                                  diag_set(d, -EPROTO, "expected a run frame, got %s",
                                           frame_type_name(f.type)),
                                  "%s", d->message);
        {
                json_error_t jerr;

                run = json_loadb(f.payload, f.len, JSON_ALLOW_NUL, &jerr);
        }
        code = run ? json_string_value(json_object_get(run, "code")) : NULL;
        if (!code)
                return send_error(a, diag_set(d, -EPROTO, "the run frame has no code"), "%s",
                                  d->message);

        session = json_is_true(json_object_get(run, "session"));
        k = make_engine(a, run, &e, d);
        if (k < 0)
                return send_error(a, k, "%s", d->message);
        for (;;) {
                k = run_one(a, e, run, session, d);
                json_decref(run);
                run = NULL;
                if (k < 0 || !session)
                        break;
                /* The session's next cell, or the end of the channel. */
                pthread_mutex_lock(&a->lock);
                while (!a->next_run && !a->host_gone)
                        pthread_cond_wait(&a->news, &a->lock);
                run = TAKE_PTR(a->next_run);
                pthread_mutex_unlock(&a->lock);
                if (!run)
                        break;
        }
        if (!session) {
                /* The host closes the channel after the exit frame; the reader sees it. */
                (void) fd_wait_readable(a->in_fd, now_usec() + 5 * USEC_PER_SEC);
        }
        if (a->reader_running) {
                (void) !write(a->stop_fd, &(uint64_t){1}, sizeof(uint64_t));
                pthread_join(a->reader_thread, NULL);
        }
        json_decref(a->next_run);
        a->next_run = NULL;
        ptc_engine_free(e);
        return k;
}

PTC_EXPORT int ptc_agent_serve(int in_fd, int out_fd, struct ptc_diag *diag)
{
        struct agent a = {.in_fd = in_fd, .out_fd = out_fd};
        struct diag d = {};
        int k;

        if (in_fd < 0 || out_fd < 0)
                return api_diagf(diag, -EINVAL, "ptc_agent_serve: a negative descriptor");
        a.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (a.stop_fd < 0)
                return api_diagf(diag, -errno, "eventfd: %s", strerror(errno));
        pthread_mutex_init(&a.write_lock, NULL);
        pthread_mutex_init(&a.lock, NULL);
        pthread_cond_init(&a.news, NULL);
        frame_reader_init(&a.reader, FRAME_SIDE_AGENT);
        k = serve(&a, &d);
        frame_reader_release(&a.reader);
        pthread_cond_destroy(&a.news);
        pthread_mutex_destroy(&a.lock);
        pthread_mutex_destroy(&a.write_lock);
        safe_close(a.stop_fd);
        return k < 0 ? api_diag(diag, k, &d) : 0;
}
