/* SPDX-License-Identifier: MIT */
/* The gate of tool calls: the policy's verdict, and the answer to an ask (approval.h). */

#include "core/policy/approval.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/strv.h"
#include "core/output/redact.h"

#define ARGS_SHOWN_MAX 2000

struct approver {
        approval_ask_fn ask;
        void *userdata;
        const char *name;
        int turn_fd;          /* one question at a time: a semaphore eventfd of 1, so a call
                               * waiting its turn still sees its cancel and deadline */
        pthread_mutex_t lock; /* granted */
        char **granted;       /* keys answered "for this session" */
};

int approver_new(approval_ask_fn ask, void *userdata, const char *name, struct approver **ret)
{
        struct approver *a = calloc(1, sizeof(*a));

        if (!a)
                return -ENOMEM;
        a->ask = ask;
        a->userdata = userdata;
        a->name = name;
        a->turn_fd = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE);
        if (a->turn_fd < 0) {
                int r = -errno;

                free(a);
                return r;
        }
        pthread_mutex_init(&a->lock, NULL);
        *ret = a;
        return 0;
}

struct approver *approver_free(struct approver *a)
{
        if (!a)
                return NULL;
        safe_close(a->turn_fd);
        pthread_mutex_destroy(&a->lock);
        strv_free(a->granted);
        free(a);
        return NULL;
}

/* The key an answer "for this session" covers: the rule, or the built-in with the tool. */
static void grant_key(const char *tool, const struct policy_ask *a, char *buf, size_t n)
{
        if (a->origin == POLICY_ORIGIN_RULE)
                (void) snprintf(buf, n, "rule:%zu:%s", a->rule, tool);
        else
                (void) snprintf(buf, n, "builtin:%s:%s", tool, a->what);
}

/* Whether earlier answers "for this session" cover every ask of @v. */
static bool is_granted(struct approver *a, const char *tool, const struct policy_verdict *v)
{
        bool all = v->n_asks > 0 && !v->asks_overflow;

        pthread_mutex_lock(&a->lock);
        for (size_t i = 0; all && i < v->n_asks; i++) {
                char key[POLICY_TEXT_MAX + 96];

                grant_key(tool, &v->asks[i], key, sizeof(key));
                all = strv_contains(a->granted, key);
        }
        pthread_mutex_unlock(&a->lock);
        return all;
}

/* Remember an answer "for this session" for every ask of @v. */
static int grant(struct approver *a, const char *tool, const struct policy_verdict *v)
{
        int r = 0;

        pthread_mutex_lock(&a->lock);
        for (size_t i = 0; r >= 0 && i < v->n_asks; i++) {
                char key[POLICY_TEXT_MAX + 96];

                grant_key(tool, &v->asks[i], key, sizeof(key));
                if (!strv_contains(a->granted, key))
                        r = strv_extend(&a->granted, key);
        }
        pthread_mutex_unlock(&a->lock);
        return r;
}

/*
 * The arguments as a person is shown them: compact JSON, secrets redacted, cut short. Redacted
 * whole, then cut: a secret across the cut would be recognised by neither part
 * (docs/observability.md, "Redaction at the cuts").
 */
static char *shown_args(const struct approval_call *call)
{
        _cleanup_free_ char *text = json_dumps(call->args, JSON_COMPACT | JSON_SORT_KEYS);
        char *red = NULL, *p;
        size_t n;
        int r;

        if (!text)
                return NULL;
        r = redact_text(call->redactor, REDACT_FULL, text, strlen(text), &red, NULL);
        if (r < 0)
                return strdup("(arguments withheld: redaction failed)");
        if (r > 0) {
                free(text);
                text = red;
        }
        n = strlen(text);
        if (n > ARGS_SHOWN_MAX) {
                n = ARGS_SHOWN_MAX;
                while (n > 0 && ((unsigned char) text[n] & 0xC0) == 0x80)
                        n--;
                p = realloc(text, n + 4);
                if (!p)
                        return NULL;
                text = p;
                memcpy(text + n, "...", 4);
        }
        return TAKE_PTR(text);
}

static int refusal(const struct approval_call *call, const char *status, json_t **ret,
                   const char *fmt, ...) _printf_(4, 5);

static int refusal(const struct approval_call *call, const char *status, json_t **ret,
                   const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL;
        json_t *o;
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (k < 0)
                return -ENOMEM;
        o = call->refusal_fields_json ? json_loads(call->refusal_fields_json, 0, NULL)
                                      : json_object();
        if (!o || json_object_set_new(o, "error", json_string(msg)) < 0 ||
            json_object_set_new(o, "status", json_string(status)) < 0) {
                json_decref(o);
                return -ENOMEM;
        }
        *ret = o;
        return 0;
}

static const char *call_word(const struct approval_call *call)
{
        return strcmp(call->tool, "terminal") == 0 ? "Command" : "Call";
}

static int deny_rule(const struct approval_call *call, const struct policy_verdict *v, json_t **ret)
{
        if (v->message)
                return refusal(call, "denied", ret, "Denied by policy: %s", v->message);
        return refusal(call, "denied", ret,
                       "%s denied by policy (%s%s%s). Do not retry it; find another way or ask "
                       "the user.",
                       call_word(call), v->what, v->subject[0] ? ": " : "", v->subject);
}

static int deny_hardline(const struct approval_call *call, const struct policy_verdict *v,
                         json_t **ret)
{
        if (v->message)
                return refusal(call, "blocked", ret, "%s", v->message);
        return refusal(call, "blocked", ret,
                       "BLOCKED (hardline): %s. This command is on the unconditional blocklist "
                       "and cannot be executed through ptc. If you genuinely need to run it, run "
                       "it yourself in a terminal outside the agent.",
                       v->what);
}

/* An ask that a person (or nobody) answered no. */
static int deny_answer(const struct approval_call *call, const struct policy_verdict *v,
                       const char *why, json_t **ret)
{
        return refusal(call, "denied", ret, "%s denied: %s%s%s%s. %s", call_word(call), v->what,
                       v->subject[0] ? " (" : "", v->subject, v->subject[0] ? ")" : "", why);
}

/* Wait for the approver's turn: 0, -ECANCELED, -ETIME. */
static int take_turn(struct approver *a, int cancel_fd, usec_t deadline)
{
        uint64_t n;

        for (;;) {
                if (fd_readable_now(cancel_fd))
                        return -ECANCELED;
                if (read(a->turn_fd, &n, sizeof(n)) == (ssize_t) sizeof(n))
                        return 0;
                if (errno != EAGAIN && errno != EINTR)
                        return -errno;
                if (now_usec() >= deadline)
                        return -ETIME;
                fd_wait_either(a->turn_fd, cancel_fd, deadline);
        }
}

static void give_turn(struct approver *a)
{
        uint64_t one = 1;

        (void) !write(a->turn_fd, &one, sizeof(one));
}

int approver_ask(struct approver *a, const struct approval_question *q, enum approval_answer *ret,
                 const char **ret_by, double *ret_wait)
{
        struct approval_request req = {
                .tool = q->tool,
                .args_json = q->args_json ?: "{}",
                .verdict = q->verdict,
                .cancel_fd = q->cancel_fd,
        };
        usec_t t0 = now_usec();
        int r;

        *ret_wait = 0;
        if (!a)
                return -ENXIO;
        if (is_granted(a, q->tool, q->verdict)) {
                *ret = APPROVAL_ALLOW_ONCE;
                *ret_by = "session";
                return 0;
        }
        /* One question at a time; an answer for the session may come while this call
         * waits its turn. The turn is part of the wait: the clock stops from here, and the
         * ask's time (policy.approval_timeout) runs. */
        req.deadline = t0 + (usec_t) (q->timeout * USEC_PER_SEC);
        pause_clock_begin(q->clock);
        r = take_turn(a, q->cancel_fd, req.deadline);
        if (r >= 0) {
                if (is_granted(a, q->tool, q->verdict)) {
                        *ret = APPROVAL_ALLOW_ONCE;
                        r = 1;
                } else {
                        r = a->ask(a->userdata, &req, ret);
                        if (r >= 0 && *ret == APPROVAL_ALLOW_SESSION &&
                            grant(a, q->tool, q->verdict) < 0)
                                r = -ENOMEM;
                }
                give_turn(a);
        }
        pause_clock_end(q->clock);
        if (r == 1) {
                *ret_by = "session";
                return 0;
        }
        *ret_wait = (double) (now_usec() - t0) / USEC_PER_SEC;
        *ret_by = a->name;
        return r;
}

/* An ask: the approver's answer, else policy.headless. */
static int gate_ask(const struct approval_call *call, struct approval_outcome *o,
                    json_t **ret_refusal)
{
        _cleanup_free_ char *shown = shown_args(call);
        const struct ptc_config *c = call->config;
        const struct approval_question q = {
                .tool = call->tool,
                .verdict = &o->verdict,
                .args_json = shown,
                .timeout = c->policy.approval_timeout,
                .cancel_fd = call->cancel_fd,
                .clock = call->clock,
        };
        enum approval_answer answer = APPROVAL_DENY;
        char why[160];
        int r;

        r = approver_ask(call->approver, &q, &answer, &o->answered_by, &o->wait_seconds);
        if (r == -ENOMEM)
                return r;
        if (r == -ETIME) {
                o->answered_by = "timeout";
                (void) snprintf(why, sizeof(why),
                                "It needs approval and nobody answered within %g s "
                                "(policy.approval_timeout).",
                                c->policy.approval_timeout);
                return deny_answer(call, &o->verdict, why, ret_refusal);
        }
        if (r == -ECANCELED) {
                o->answered_by = "cancel";
                return deny_answer(call, &o->verdict,
                                   "The execution ended while it waited for approval.",
                                   ret_refusal);
        }
        if (r < 0) {
                /* Nobody to ask. */
                o->could_not_ask = call->approver ? o->answered_by : NULL;
                o->answered_by = "headless";
                o->allowed = c->policy.headless == POLICY_ALLOW;
                return o->allowed ? 0
                                  : deny_answer(call, &o->verdict,
                                                "It needs approval and nobody can answer "
                                                "(policy.headless is deny).",
                                                ret_refusal);
        }
        if (answer == APPROVAL_DENY)
                return deny_answer(call, &o->verdict, "The user denied it; do not retry it.",
                                   ret_refusal);
        o->allowed = true;
        return 0;
}

int approval_gate(const struct approval_call *call, json_t **ret_refusal,
                  struct approval_outcome *ret_outcome)
{
        struct policy_verdict v;
        int r;

        *ret_refusal = NULL;
        r = policy_decide(call->config, call->tool, call->args, call->cwd, call->env, &v);
        if (r < 0)
                return r;
        return approval_gate_verdict(call, &v, ret_refusal, ret_outcome);
}

int approval_gate_verdict(const struct approval_call *call, const struct policy_verdict *verdict,
                          json_t **ret_refusal, struct approval_outcome *ret_outcome)
{
        struct approval_outcome o = {.answered_by = "policy", .verdict = *verdict};
        const struct policy_verdict *v = &o.verdict;
        int r = 0;

        *ret_refusal = NULL;
        switch (v->kind) {
        case POLICY_VERDICT_ALLOW:
                o.allowed = true;
                break;
        case POLICY_VERDICT_BLOCKED:
                r = deny_hardline(call, v, ret_refusal);
                break;
        case POLICY_VERDICT_DENY:
                r = deny_rule(call, v, ret_refusal);
                break;
        case POLICY_VERDICT_ASK:
                r = gate_ask(call, &o, ret_refusal);
                break;
        }
        if (ret_outcome)
                *ret_outcome = o;
        return r < 0 ? r : 0;
}

json_t *approval_outcome_to_json(const struct approval_outcome *o)
{
        json_t *j;

        if (o->verdict.origin == POLICY_ORIGIN_DEFAULT)
                return NULL;
        j = policy_verdict_to_json(&o->verdict);
        if (j &&
            (json_object_set_new(j, "answered_by", json_string(o->answered_by)) < 0 ||
             json_object_set_new(j, "allowed", json_boolean(o->allowed)) < 0 ||
             (o->verdict.kind == POLICY_VERDICT_ASK &&
              json_object_set_new(j, "wait_seconds",
                                  json_real((double) (long long) (o->wait_seconds * 1000 + 0.5) /
                                            1000)) < 0))) {
                json_decref(j);
                return NULL;
        }
        return j;
}

void approval_note(const struct approval_outcome *o, json_t *result)
{
        char note[POLICY_TEXT_MAX + 256];

        if (!json_is_object(result) || o->verdict.kind != POLICY_VERDICT_ASK || !o->allowed)
                return;
        /* Nobody was asked: the script (and the model reading its output) learns that the
         * call ran on the configured rule, not on a person's word, and why. */
        if (strcmp(o->answered_by, "headless") == 0) {
                if (o->could_not_ask)
                        (void) snprintf(note, sizeof(note),
                                        "not asked (%s): policy.headless is allow, and no person "
                                        "could be asked (the %s approver could not ask)",
                                        o->verdict.what, o->could_not_ask);
                else
                        (void) snprintf(note, sizeof(note),
                                        "not asked (%s): policy.headless is allow, and no person "
                                        "could be asked (no terminal prompt, MCP elicitation or "
                                        "approver callback answers this run's asks)",
                                        o->verdict.what);
                (void) json_object_set_new(result, "approval", json_string(note));
                return;
        }
        (void) snprintf(note, sizeof(note), "approved (%s) by %s", o->verdict.what,
                        strcmp(o->answered_by, "session") == 0
                                ? "an earlier answer for this session"
                                : o->answered_by);
        (void) json_object_set_new(result, "approval", json_string(note));
}
