/* SPDX-License-Identifier: MIT */
/*
 * The calls of the tools that run on the host (tool.runs_on_host) during a remote run
 * (docs/remote.md): each call frame from the agent runs on a detached thread holding a
 * reference on the run, and its answer goes back as an answer frame. The target is not
 * trusted: only a tool that runs on the host is run here, and no more of them than the
 * run's tool budget, which the host counts itself.
 */

#include "core/exec/exec-remote.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/time-util.h"
#include "core/events/trace.h"
#include "core/output/redact.h"
#include "core/policy/approval.h"
#include "core/registry/registry.h"

struct host_call {
        struct remote_run *run;
        json_int_t id;
        const struct tool *tool;
        json_t *args;
};

static void answer(struct remote_run *r, json_int_t id, json_t *result)
{
        json_auto_t *a = json_pack("{s:I, s:O}", "id", id, "result", result);

        if (a)
                (void) remote_channel_send_json(&r->ch, FRAME_ANSWER, a);
}

static void answer_error(struct remote_run *r, json_int_t id, const char *message)
{
        json_auto_t *res = json_pack("{s:s}", "error", message);

        if (res)
                answer(r, id, res);
}

/* A call's (an ask's) thread is over: the run may end without it. */
static void done(struct remote_run *r)
{
        pthread_mutex_lock(&r->lock);
        if (--r->calls == 0)
                pthread_cond_broadcast(&r->calls_done);
        pthread_mutex_unlock(&r->lock);
        remote_run_unref(r);
}

/* Undo enter() when no thread could be started. */
static void leave(struct remote_run *r)
{
        pthread_mutex_lock(&r->lock);
        r->calls--;
        r->refs--;
        pthread_mutex_unlock(&r->lock);
}

/* Count a call (an ask) and take a reference for its thread; false when too many run. */
static bool enter(struct remote_run *r)
{
        bool full;

        pthread_mutex_lock(&r->lock);
        full = r->calls >= HOST_CALLS_MAX;
        if (!full) {
                r->calls++;
                r->refs++;
        }
        pthread_mutex_unlock(&r->lock);
        return !full;
}

static int start_detached(void *(*fn)(void *), void *arg)
{
        pthread_attr_t attr;
        pthread_t th;
        int k;

        if (pthread_attr_init(&attr) != 0)
                return -ENOMEM;
        (void) pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        k = -pthread_create(&th, &attr, fn, arg);
        pthread_attr_destroy(&attr);
        return k;
}

static void *host_call_main(void *arg)
{
        struct host_call *c = arg;
        struct remote_run *r = c->run;
        json_auto_t *result = NULL;
        usec_t t0 = now_usec();
        int k;

        k = registry_call_tool(c->tool, &r->run.tool_ctx, c->args, &result, NULL);
        if (r->run.o->trace) {
                char name[160];

                (void) snprintf(name, sizeof(name), "tool: %s", c->tool->name);
                trace_span_now(
                        r->run.o->trace, name, "tool", t0,
                        json_pack("{s:s, s:b}", "on", "host", "ok",
                                  k >= 0 && result &&
                                          !json_is_string(json_object_get(result, "error"))));
        }
        if (k < 0 || !result)
                answer_error(r, c->id, "Tool execution failed: out of memory");
        else
                answer(r, c->id, result);
        json_decref(c->args);
        free(c);
        done(r);
        return NULL;
}

/*
 * A call frame: {"id": N, "tool": NAME, "args": {...}}. Only a tool that runs on the host
 * is run here: the agent, like anything on the target, is not trusted to name another.
 */
void remote_start_call(struct remote_run *r, json_t *call)
{
        json_t *id = json_object_get(call, "id"), *args = json_object_get(call, "args");
        const char *name = json_string_value(json_object_get(call, "tool"));
        const struct tool *t = name ? registry_find(r->run.o->registry, name) : NULL;
        struct host_call *c;

        if (!json_is_integer(id) || !name || !json_is_object(args)) {
                remote_fail(r, "broken remote stream: a call frame without an integer id, a tool "
                               "name and an arguments object");
                return;
        }
        if (!t || !t->runs_on_host) {
                answer_error(r, json_integer_value(id), "this tool does not run on the host");
                return;
        }
        /* The agent keeps the budget; the host keeps it too for what runs here. */
        if (++r->host_calls > r->run.o->config->max_tool_calls) {
                char msg[160];

                (void) snprintf(msg, sizeof(msg),
                                "Tool call limit reached (%lld). No more tool calls allowed in "
                                "this execution.",
                                (long long) r->run.o->config->max_tool_calls);
                answer_error(r, json_integer_value(id), msg);
                return;
        }
        if (!enter(r)) {
                answer_error(r, json_integer_value(id),
                             "too many calls of host tools at once (at most 16)");
                return;
        }
        c = calloc(1, sizeof(*c));
        if (c) {
                *c = (struct host_call){
                        .run = r,
                        .id = json_integer_value(id),
                        .tool = t,
                        .args = json_incref(args),
                };
                if (start_detached(host_call_main, c) == 0)
                        return;
                json_decref(c->args);
                free(c);
        }
        answer_error(r, json_integer_value(id), "Tool execution failed: cannot start a thread");
        leave(r);
}

/* ---- the policy's asks of the agent (docs/policy.md) ---------------------------------- */

struct host_ask {
        struct remote_run *run;
        json_int_t id;
        const struct tool *tool; /* the registry's: its name is ours, not the target's */
        char *args;
        struct policy_verdict verdict;
};

static const char *answer_word(int k, enum approval_answer a)
{
        if (k == -ETIME)
                return "timeout";
        if (k == -ECANCELED)
                return "cancel";
        if (k < 0)
                return "cannot";
        return a == APPROVAL_ALLOW_ONCE ? "once" : a == APPROVAL_ALLOW_SESSION ? "session" : "deny";
}

static void *host_ask_main(void *arg)
{
        struct host_ask *q = arg;
        struct remote_run *r = q->run;
        const struct approval_question question = {
                .tool = q->tool->name,
                .verdict = &q->verdict,
                .args_json = q->args,
                .timeout = r->run.o->config->policy.approval_timeout,
                .cancel_fd = r->run.cancel_fd,
                .clock = &r->run.clock,
        };
        enum approval_answer a = APPROVAL_DENY;
        const char *by = NULL;
        double waited;
        json_auto_t *v = NULL;
        int k;

        /* The host's approver, its "for this session" answers, and the host's clock. */
        k = approver_ask(r->run.o->approver, &question, &a, &by, &waited);
        v = json_pack("{s:I, s:s, s:s}", "id", q->id, "answer", answer_word(k, a), "by",
                      k >= 0 && by ? by : "");
        if (v)
                (void) remote_channel_send_json(&r->ch, FRAME_APPROVAL, v);
        free(q->args);
        free(q);
        done(r);
        return NULL;
}

/* Where the arguments an ask shows end: 4096 bytes, on a character boundary. */
static size_t args_cut(const char *s)
{
        size_t n = strnlen(s, 4097);

        if (n <= 4096)
                return n;
        n = 4096;
        while (n > 0 && ((unsigned char) s[n] & 0xC0) == 0x80)
                n--;
        return n;
}

static void cut_args(char *s)
{
        s[args_cut(s)] = 0;
}

/*
 * An ask frame: {"id": N, "tool": NAME, "args": TEXT, "verdict": {...}}: the agent judged a
 * call of a tool that runs there and asks who the host has to ask. Like a call frame, only
 * a tool of the host's registry is named; what the person is shown is redacted again here.
 */
void remote_start_ask(struct remote_run *r, json_t *ask)
{
        json_t *id = json_object_get(ask, "id");
        const char *name = json_string_value(json_object_get(ask, "tool"));
        const char *args = json_string_value(json_object_get(ask, "args"));
        const struct tool *t = name ? registry_find(r->run.o->registry, name) : NULL;
        _cleanup_free_ char *red = NULL;
        struct policy_verdict v;
        struct host_ask *q;
        int k;

        if (!json_is_integer(id) || !t || !args || t->runs_on_host ||
            policy_verdict_from_json(json_object_get(ask, "verdict"), &v) < 0) {
                remote_fail(r, "broken remote stream: an ask frame without an integer id, a "
                               "tool of the target, its arguments and an ask's verdict");
                return;
        }
        /* Redacted whole, then cut: a secret across the cut would be recognised by neither
         * part (docs/observability.md, "Redaction at the cuts"). */
        k = redact_text(r->run.o->redactor, REDACT_FULL, args, strlen(args), &red, NULL);
        if (k > 0)
                cut_args(red);
        if (k < 0 || !enter(r)) {
                json_auto_t *a = json_pack("{s:I, s:s}", "id", json_integer_value(id), "answer",
                                           k < 0 ? "deny" : "cannot");

                if (a)
                        (void) remote_channel_send_json(&r->ch, FRAME_APPROVAL, a);
                return;
        }
        q = calloc(1, sizeof(*q));
        if (q) {
                *q = (struct host_ask){
                        .run = r,
                        .id = json_integer_value(id),
                        .tool = t,
                        .args = k > 0 ? TAKE_PTR(red) : strndup(args, args_cut(args)),
                        .verdict = v,
                };
                if (q->args && start_detached(host_ask_main, q) == 0)
                        return;
                free(q->args);
                free(q);
        }
        leave(r);
        remote_fail(r, "cannot answer the agent's ask: out of memory");
}

/*
 * Wait for the host tool calls still running, after telling them to stop: they use the
 * registry and the configuration, which are the caller's once the run returns. As for a
 * local run, a tool that never ends holds the result (web and MCP calls watch the cancel).
 */
void remote_wait_calls(struct remote_run *r)
{
        run_signal_tools(&r->run);
        pthread_mutex_lock(&r->lock);
        while (r->calls > 0)
                pthread_cond_wait(&r->calls_done, &r->lock);
        pthread_mutex_unlock(&r->lock);
}
