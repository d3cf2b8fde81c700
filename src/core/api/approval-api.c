/* SPDX-License-Identifier: MIT */
/*
 * ptc_engine_set_approver() and the request handles (include/ptc/ptc.h, "Approvals"): the
 * engine's approver (core/policy/approval.h) hands each ask to the host's callback and
 * waits for the answer, a cancel of the execution or the deadline, as host tools wait
 * (host-tool.c). A handle lives until both sides are done with it: the host's until it
 * answers, the waiting call's until it stops waiting; an answer after that is dropped.
 */

#include "ptc/ptc.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/time-util.h"
#include "core/api/api-util.h"
#include "core/api/engine.h"
#include "core/api/execution.h"
#include "core/policy/approval.h"

struct ptc_approval {
        atomic_int refs; /* the host's (until answered) and the waiting call's */
        pthread_mutex_t lock;
        char *tool; /* copies: a host answering late still reads its own */
        char *arguments;
        char *verdict;
        usec_t deadline;
        int answered_fd; /* written once when answered */
        int gone_fd;     /* written once when the call stops waiting */

        /* Under lock. */
        bool answered;
        bool abandoned;
        int answer;
};

static void approval_unref(ptc_approval *a)
{
        if (atomic_fetch_sub_explicit(&a->refs, 1, memory_order_acq_rel) != 1)
                return;
        free(a->tool);
        free(a->arguments);
        free(a->verdict);
        safe_close(a->answered_fd);
        safe_close(a->gone_fd);
        pthread_mutex_destroy(&a->lock);
        free(a);
}

PTC_EXPORT const char *ptc_approval_tool(const ptc_approval *a)
{
        return a ? a->tool : NULL;
}

PTC_EXPORT const char *ptc_approval_arguments(const ptc_approval *a)
{
        return a ? a->arguments : NULL;
}

PTC_EXPORT const char *ptc_approval_verdict(const ptc_approval *a)
{
        return a ? a->verdict : NULL;
}

PTC_EXPORT int64_t ptc_approval_remaining_ms(const ptc_approval *a)
{
        usec_t now = now_usec();

        if (!a || now >= a->deadline)
                return 0;
        return (int64_t) ((a->deadline - now) / 1000);
}

PTC_EXPORT int ptc_approval_cancel_fd(const ptc_approval *a)
{
        return a ? a->gone_fd : -1;
}

PTC_EXPORT int ptc_approval_answer(ptc_approval *a, int answer)
{
        uint64_t one = 1;
        int r = 0;

        if (!a)
                return -EINVAL;
        if (answer < PTC_APPROVE_ONCE || answer > PTC_APPROVE_NO_ANSWER)
                return -EINVAL;
        pthread_mutex_lock(&a->lock);
        if (a->answered || a->abandoned)
                r = -ECANCELED;
        else {
                a->answered = true;
                a->answer = answer;
                (void) !write(a->answered_fd, &one, sizeof(one));
        }
        pthread_mutex_unlock(&a->lock);
        approval_unref(a);
        return r;
}

/* The core approver's ask(): the host's callback @fn answers. */
static int host_ask(ptc_approval_fn fn, void *fn_userdata, const struct approval_request *req,
                    enum approval_answer *ret)
{
        json_auto_t *verdict = policy_verdict_to_json(req->verdict);
        ptc_approval *a;
        uint64_t one = 1;
        bool answered, cancelled;
        int answer = PTC_APPROVE_DENY;

        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->answered_fd = a->gone_fd = -EBADF;
        atomic_init(&a->refs, 1);
        pthread_mutex_init(&a->lock, NULL);
        a->tool = strdup(req->tool);
        a->arguments = strdup(req->args_json);
        a->verdict = verdict ? json_dumps(verdict, JSON_COMPACT) : NULL;
        if (!a->tool || !a->arguments || !a->verdict) {
                approval_unref(a);
                return -ENOMEM;
        }
        a->answered_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        a->gone_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (a->answered_fd < 0 || a->gone_fd < 0) {
                int r = -errno;

                approval_unref(a);
                return r;
        }
        atomic_init(&a->refs, 2);
        a->deadline = req->deadline;

        fn(a, fn_userdata);
        fd_wait_either(a->answered_fd, req->cancel_fd, req->deadline);

        /* An answer counts only while it is wanted: not after a cancel, nor (from a host
         * that blocked past it) after the deadline. */
        cancelled = fd_readable_now(req->cancel_fd);
        pthread_mutex_lock(&a->lock);
        answered = a->answered && !cancelled && now_usec() <= req->deadline;
        if (answered)
                answer = a->answer;
        else if (!a->answered) {
                a->abandoned = true;
                (void) !write(a->gone_fd, &one, sizeof(one));
        }
        pthread_mutex_unlock(&a->lock);
        approval_unref(a);

        if (!answered || answer == PTC_APPROVE_NO_ANSWER)
                return cancelled ? -ECANCELED : -ETIME;
        switch (answer) {
        case PTC_APPROVE_ONCE:
                *ret = APPROVAL_ALLOW_ONCE;
                return 0;
        case PTC_APPROVE_SESSION:
                *ret = APPROVAL_ALLOW_SESSION;
                return 0;
        case PTC_APPROVE_DENY:
                *ret = APPROVAL_DENY;
                return 0;
        default:
                return -ENXIO; /* cannot ask: policy.headless */
        }
}

/* The engine's approver: ptc_engine_set_approver()'s callback. */
static int engine_ask(void *userdata, const struct approval_request *req, enum approval_answer *ret)
{
        ptc_engine *e = userdata;

        return host_ask(e->approval_fn, e->approval_userdata, req, ret);
}

/* An execution's own (ptc_execution_set_approver()). */
struct execution_host {
        ptc_approval_fn fn;
        void *userdata;
};

static int execution_ask(void *userdata, const struct approval_request *req,
                         enum approval_answer *ret)
{
        struct execution_host *h = userdata;

        return host_ask(h->fn, h->userdata, req, ret);
}

PTC_EXPORT int ptc_execution_set_approver(ptc_execution *x, ptc_approval_fn fn, void *userdata,
                                          struct ptc_diag *diag)
{
        _cleanup_free_ struct execution_host *h = NULL;
        _cleanup_approver_ struct approver *a = NULL;
        int r;

        if (!x)
                return api_diagf(diag, -EINVAL, "ptc_execution_set_approver: a NULL execution");
        if (fn) {
                h = malloc(sizeof(*h));
                if (!h)
                        return api_diagf(diag, -ENOMEM, "out of memory");
                *h = (struct execution_host){.fn = fn, .userdata = userdata};
                r = approver_new(execution_ask, h, "callback", &a);
                if (r < 0)
                        return api_diagf(diag, r, "out of memory");
        }
        r = execution_adopt_approver(x, a, h);
        if (r < 0)
                return api_diagf(diag, r, "ptc_execution_set_approver: %s",
                                 r == -EBUSY ? "the execution has run" : strerror(-r));
        TAKE_PTR(a);
        TAKE_PTR(h);
        return 0;
}

PTC_EXPORT int ptc_engine_set_approver(ptc_engine *e, ptc_approval_fn fn, void *userdata,
                                       struct ptc_diag *diag)
{
        struct approver *a = NULL;
        int r;

        if (!e)
                return api_diagf(diag, -EINVAL, "ptc_engine_set_approver: a NULL engine");
        if (e->started)
                return api_diagf(diag, -EBUSY, "ptc_engine_set_approver: the engine has started");
        if (fn) {
                r = approver_new(engine_ask, e, "callback", &a);
                if (r < 0)
                        return api_diagf(diag, r, "out of memory");
        }
        approver_free(e->approver);
        e->approver = a;
        e->approval_fn = fn;
        e->approval_userdata = userdata;
        return 0;
}

PTC_EXPORT int ptc_engine_check_policy(ptc_engine *e, const char *tool, const char *args_json,
                                       char **ret, struct ptc_diag *diag)
{
        _cleanup_free_ char *cwd = NULL;
        json_auto_t *args = NULL, *out = NULL;
        struct policy_verdict v;
        json_error_t jerr;
        int r;

        if (!e || !tool || !ret)
                return api_diagf(diag, -EINVAL, "ptc_engine_check_policy: a NULL argument");
        *ret = NULL;
        args = json_loads(args_json ? args_json : "{}", JSON_REJECT_DUPLICATES, &jerr);
        if (!args || !json_is_object(args))
                return api_diagf(diag, -EINVAL, "arguments: %s",
                                 args ? "not a JSON object" : jerr.text);
        if (!e->cwd && !(cwd = getcwd(NULL, 0)))
                return api_diagf(diag, -errno, "cannot get the working directory: %m");
        /* Before the start the call's environment is this process's. */
        r = policy_decide(&e->config, tool, args, e->cwd ?: cwd, e->base_env ?: environ, &v);
        if (r < 0)
                return api_diagf(diag, r, "out of memory");
        out = policy_verdict_to_json(&v);
        if (out && v.kind == POLICY_VERDICT_ASK &&
            json_object_set_new(
                    out, "headless",
                    json_string(config_policy_action_to_string(e->config.policy.headless))) < 0)
                return api_diagf(diag, -ENOMEM, "out of memory");
        *ret = out ? json_dumps(out, JSON_COMPACT) : NULL;
        return *ret ? 0 : api_diagf(diag, -ENOMEM, "out of memory");
}
