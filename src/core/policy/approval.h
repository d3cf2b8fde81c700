/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The gate every tool call passes before it runs (registry_call_tool()): the policy's
 * verdict (policy.h), and for an "ask" the answer of whoever can give one (docs/policy.md):
 * a front end's approver (the terminal prompt of `ptc run`, MCP elicitation, a library
 * callback), else policy.headless. The call waits meanwhile, at most
 * policy.approval_timeout, on a pause of the execution's clock (pause-clock.h). A refusal
 * is a tool result the script reads like any other: {"error": ..., "status": "denied"} (or
 * "blocked" for the hardline list), so it can go on.
 *
 * Thread context: any thread; an approver asks one question at a time.
 */

#include <pthread.h>
#include <stdbool.h>

#include <jansson.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "core/policy/pause-clock.h"
#include "core/policy/policy.h"

struct redactor;

enum approval_answer {
        APPROVAL_ALLOW_ONCE,
        APPROVAL_ALLOW_SESSION, /* this and every later ask for the same rule or built-in */
        APPROVAL_DENY,
};

/* What an approver is asked. All borrowed for the duration of ask(). */
struct approval_request {
        const char *tool;
        const char *args_json; /* the call's arguments, secrets redacted, at most ~2 KB */
        const struct policy_verdict *verdict;
        usec_t deadline; /* CLOCK_MONOTONIC: answer by then */
        int cancel_fd;   /* readable once the call's execution ends; -1: none */
};

/*
 * Ask a person. Returns 0 with *ret; -ETIME when nobody answered by req->deadline;
 * -ECANCELED when req->cancel_fd became readable; another negative errno when it cannot
 * ask (no terminal, a client without the capability): then policy.headless decides.
 */
typedef int (*approval_ask_fn)(void *userdata, const struct approval_request *req,
                               enum approval_answer *ret);

struct approver;

/* @name says who answers in logs ("terminal", "elicitation", "callback"); static. */
_must_check_ int approver_new(approval_ask_fn ask, void *userdata, const char *name,
                              struct approver **ret);
struct approver *approver_free(struct approver *a);
DEFINE_TRIVIAL_CLEANUP_FUNC_RESET(struct approver *, approver_free);
#define _cleanup_approver_ _cleanup_(approver_freep)

/* What approver_ask() asks. All borrowed. */
struct approval_question {
        const char *tool;
        const struct policy_verdict *verdict;
        const char *args_json;     /* as shown: secrets redacted, cut short; NULL: "{}" */
        double timeout;            /* seconds to wait for the answer */
        int cancel_fd;             /* readable: stop waiting; -1: none */
        struct pause_clock *clock; /* stopped while waiting; NULL: none */
};

/*
 * Put @q to @a (NULL: nobody), one question at a time per approver: an earlier answer "for
 * this session" for the same rule or built-in answers at once (*ret_by "session"); a new
 * one is remembered. 0 with *ret and *ret_by (static); -ETIME (no answer in time),
 * -ECANCELED, -ENXIO (nobody to ask: policy.headless decides), -ENOMEM. *ret_wait: the
 * seconds waited. The gate's asks and those of a remote target's agent (judged there) go
 * through here.
 */
_must_check_ int approver_ask(struct approver *a, const struct approval_question *q,
                              enum approval_answer *ret, const char **ret_by, double *ret_wait);

/* One call, as the gate sees it. All borrowed. */
struct approval_call {
        const struct ptc_config *config;
        const char *tool;
        json_t *args;
        const char *cwd;
        char *const *env;
        struct approver *approver;       /* NULL: nobody to ask */
        struct pause_clock *clock;       /* NULL: no deadline to stop */
        const struct redactor *redactor; /* for the arguments shown; NULL: none */
        int cancel_fd;
        /* The fields a refusal of this tool carries besides error and status (the
         * terminal's {"output": "", "exit_code": -1}); NULL: none. */
        const char *refusal_fields_json;
};

/* What the gate did, for the per-call log. */
struct approval_outcome {
        struct policy_verdict verdict;
        bool allowed;
        const char *answered_by;   /* "policy", "session", "headless", "timeout", "cancel", or
                                    * the approver's name; static */
        double wait_seconds;       /* spent waiting for an answer */
        const char *could_not_ask; /* answered_by "headless": the approver that could not ask
                                    * (its name), or NULL when there was none; static */
};

/*
 * Judge @call. Returns 0 with *ret_refusal NULL when the call may run, or a new reference
 * to the result to answer instead; *ret_outcome (may be NULL) says what happened. An
 * allowed ask adds {"approval": "..."} to @approved_result later (approval_note()).
 * -ENOMEM.
 */
_must_check_ int approval_gate(const struct approval_call *call, json_t **ret_refusal,
                               struct approval_outcome *ret_outcome);

/*
 * approval_gate() on a verdict the caller already has: a file tool's second pass on the real
 * path it reached (policy_decide_real_path()), or a program a terminal command is about to
 * execute (policy_decide_exec()), @call describing it for the prompt. Same returns.
 */
_must_check_ int approval_gate_verdict(const struct approval_call *call,
                                       const struct policy_verdict *verdict, json_t **ret_refusal,
                                       struct approval_outcome *ret_outcome);

/* The outcome as the log's "policy" member: NULL for a plain allow (no rule, no ask). */
json_t *approval_outcome_to_json(const struct approval_outcome *o);

/*
 * After an allowed ask: {"approval": "approved (WHAT) by WHO"} into @result (an object); for
 * an ask policy.headless allowed, the note says so and why nobody was asked: an allow the
 * user did not give is never silent (docs/policy.md).
 */
void approval_note(const struct approval_outcome *o, json_t *result);
