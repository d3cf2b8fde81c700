/* SPDX-License-Identifier: MIT */
/*
 * Host tools: a struct ptc_tool_def as a registry tool, and the ptc_tool_call
 * handle its callback answers.
 *
 * host_tool_run() is the tool's run(), on an RPC worker thread. It creates a
 * call with two references (the host's and its own), calls the host's
 * function, then waits on the call's eventfd and the execution's cancel fd,
 * with the deadline as timeout, until the host answers, the execution is
 * cancelled, or the deadline passes. An answer that comes after the wait gave
 * up is dropped (-ECANCELED). The last of the two sides frees the call.
 */

#include "core/api/host-tool.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/time-util.h"
#include "core/api/api-util.h"
#include "core/tools/tool.h"

struct ptc_tool_call {
        atomic_int refs; /* the host's (until answered) and host_tool_run()'s */
        pthread_mutex_t lock;
        const char *name; /* the tool's: outlives the call */
        char *arguments;
        usec_t deadline;
        int efd;       /* written once when answered */
        int cancel_fd; /* the execution's (borrowed): valid while not abandoned */

        /* Under lock. */
        bool answered;
        bool abandoned; /* host_tool_run() stopped waiting: later answers are dropped */
        json_t *result;
};

static void call_unref(ptc_tool_call *c)
{
        if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1)
                return;
        json_decref(c->result);
        free(c->arguments);
        safe_close(c->efd);
        pthread_mutex_destroy(&c->lock);
        free(c);
}

PTC_EXPORT const char *ptc_tool_call_name(const ptc_tool_call *c)
{
        return c->name;
}

PTC_EXPORT const char *ptc_tool_call_arguments(const ptc_tool_call *c)
{
        return c->arguments;
}

PTC_EXPORT int64_t ptc_tool_call_remaining_ms(const ptc_tool_call *c)
{
        usec_t now = now_usec();

        if (c->deadline == USEC_INFINITY)
                return INT64_MAX;
        return c->deadline > now ? (int64_t) ((c->deadline - now) / USEC_PER_MSEC) : 0;
}

/*
 * Under lock: is the answer no longer wanted? Past the deadline or with the execution
 * cancelled, the call is abandoned on the spot, so a synchronous callback that looks (or
 * answers) sees what an asynchronous one would. While not abandoned, host_tool_run() still
 * waits, so the execution and its cancel fd are alive.
 */
static bool call_gone_locked(ptc_tool_call *c)
{
        if (c->abandoned)
                return true;
        if ((c->deadline != USEC_INFINITY && now_usec() >= c->deadline) ||
            fd_readable_now(c->cancel_fd))
                c->abandoned = true;
        return c->abandoned;
}

PTC_EXPORT int ptc_tool_call_cancelled(const ptc_tool_call *c)
{
        ptc_tool_call *m = (ptc_tool_call *) c;
        bool r;

        pthread_mutex_lock(&m->lock);
        r = !m->answered && call_gone_locked(m);
        pthread_mutex_unlock(&m->lock);
        return r;
}

/* Answer with @v (taken). */
static int call_answer(ptc_tool_call *c, json_t *v)
{
        uint64_t one = 1;
        int r = 0;

        pthread_mutex_lock(&c->lock);
        if (c->answered || call_gone_locked(c)) {
                r = -ECANCELED;
                json_decref(v);
        } else {
                c->answered = true;
                c->result = v;
                (void) !write(c->efd, &one, sizeof(one));
        }
        pthread_mutex_unlock(&c->lock);
        call_unref(c);
        return r;
}

PTC_EXPORT int ptc_tool_call_return(ptc_tool_call *c, const char *result_json)
{
        json_error_t jerr;
        json_t *v;

        if (!c)
                return -EINVAL;
        v = json_loads(result_json ? result_json : "", JSON_DECODE_ANY, &jerr);
        if (!v)
                v = tool_error_new("host tool returned invalid JSON: %s", jerr.text);
        return call_answer(c, v);
}

PTC_EXPORT int ptc_tool_call_fail(ptc_tool_call *c, const char *message)
{
        if (!c)
                return -EINVAL;
        return call_answer(c, tool_error_new("%s", message ? message : "host tool failed"));
}

static int host_tool_run(const struct tool *t, const struct tool_ctx *ctx, json_t *args,
                         json_t **ret_result)
{
        const struct host_tool *h = t->userdata;
        ptc_tool_call *c;
        json_t *res = NULL;
        bool answered;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        c->arguments = json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY);
        if (c->efd < 0 || !c->arguments) {
                int r = c->efd < 0 ? -errno : -ENOMEM;
                safe_close(c->efd);
                free(c->arguments);
                free(c);
                return r;
        }
        pthread_mutex_init(&c->lock, NULL);
        atomic_init(&c->refs, 2);
        c->name = t->name;
        c->deadline = ctx->deadline;
        c->cancel_fd = ctx->cancel_fd;

        h->fn(c, h->userdata);
        /* Until answered, cancelled or past the deadline: decided below. */
        fd_wait_either(c->efd, ctx->cancel_fd, ctx->deadline);

        pthread_mutex_lock(&c->lock);
        answered = c->answered;
        if (answered)
                res = TAKE_PTR(c->result);
        else
                c->abandoned = true;
        pthread_mutex_unlock(&c->lock);
        call_unref(c);

        if (answered) {
                *ret_result = res;
                return res ? 0 : -ENOMEM;
        }
        if (ctx->deadline != USEC_INFINITY && now_usec() >= ctx->deadline)
                *ret_result = tool_error_new("host tool '%s' did not answer before the deadline",
                                             t->name);
        else
                *ret_result = tool_error_new("host tool '%s' was cancelled", t->name);
        return *ret_result ? 0 : -ENOMEM;
}

struct registry_extra_tool host_tool_extra(const struct host_tool *h)
{
        return (struct registry_extra_tool){
                .name = h->name,
                .description = h->description,
                .parameters = h->parameters,
                .returns = h->returns,
                .run = host_tool_run,
                .userdata = (void *) h,
        };
}

void host_tool_release(struct host_tool *h)
{
        free(h->name);
        free(h->description);
        free(h->returns);
        json_decref(h->parameters);
        *h = (struct host_tool){};
}
