/* SPDX-License-Identifier: MIT */
/* web_extract's redirects, each hop judged by the policy before it is fetched (web-redirects.h). */

#include "core/tools/web-redirects.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "basic/time-util.h"
#include "core/policy/approval.h"
#include "core/tools/tool.h"
#include "core/web/web-fetch.h"
#include "core/web/web-module.h"

#define TIMED_OUT_PREFIX "timed out after "

/* One request's chain of hops. */
struct chain {
        char *url;       /* the hop to fetch next (owned); NULL: the request's own URL */
        usec_t deadline; /* the whole chain's, CLOCK_MONOTONIC */
        usec_t budget;   /* its time in all: the request's timeout, cut by the run's deadline */
        long max_hops;   /* redirects it may follow; -1: none (the response says where) */
        long hops;       /* redirects followed so far */
        bool done;
        char *notes; /* allowed asks about its hops (owned), or NULL */
};

/* @a + @b, USEC_INFINITY staying so. */
static usec_t usec_add_sat(usec_t a, usec_t b)
{
        return a == USEC_INFINITY || b >= USEC_INFINITY - a ? USEC_INFINITY : a + b;
}

/* End @resp with the error @text (owned; NULL: -ENOMEM); its body and redirect go. */
static int end_with_error(struct web_response *resp, char *text)
{
        if (!text)
                return -ENOMEM;
        free(resp->error);
        resp->error = text;
        resp->redirect_url = mfree_str(resp->redirect_url);
        resp->body = mfree_str(resp->body);
        resp->body_len = 0;
        resp->truncated = false;
        return 0;
}

/*
 * The entry error of a hop the gate refused: the host and the rule, and what a refusal of
 * the whole call would say (approval.c's wording). A new string, or NULL on ENOMEM.
 */
static char *refusal_text(const struct ptc_config *c, const struct approval_outcome *o)
{
        const struct policy_verdict *v = &o->verdict;
        const char *host = v->subject[0] ? v->subject : "?";
        const char *ans = o->answered_by ?: "";
        char *s = NULL;
        int k;

        if (v->kind != POLICY_VERDICT_ASK) {
                if (v->message)
                        k = asprintf(&s, "Denied by policy: redirect to %s (%s): %s", host, v->what,
                                     v->message);
                else
                        k = asprintf(&s,
                                     "Denied by policy: redirect to %s (%s). Do not retry it; "
                                     "find another way or ask the user.",
                                     host, v->what);
        } else if (strcmp(ans, "timeout") == 0)
                k = asprintf(&s,
                             "Denied by policy: redirect to %s (%s) needs approval and nobody "
                             "answered within %g s (policy.approval_timeout).",
                             host, v->what, c->policy.approval_timeout);
        else if (strcmp(ans, "cancel") == 0)
                k = asprintf(&s,
                             "Denied by policy: redirect to %s (%s) needs approval; the execution "
                             "ended while it waited for approval.",
                             host, v->what);
        else if (strcmp(ans, "headless") == 0)
                k = asprintf(&s,
                             "Denied by policy: redirect to %s (%s) needs approval and nobody "
                             "can answer (policy.headless is deny).",
                             host, v->what);
        else
                k = asprintf(&s,
                             "Denied by policy: redirect to %s (%s): the user denied it; do not "
                             "retry it.",
                             host, v->what);
        return k < 0 ? NULL : s;
}

/* Add the note of an allowed ask about a hop to @ch->notes. 0 or -ENOMEM. */
static int add_note(struct chain *ch, const struct approval_outcome *o)
{
        json_auto_t *holder = json_object();
        const char *note;
        char *s = NULL;

        if (!holder)
                return -ENOMEM;
        approval_note(o, holder);
        note = json_string_value(json_object_get(holder, "approval"));
        if (!note)
                return 0; /* not an ask */
        if (asprintf(&s, "%s%sredirect to %s: %s", ch->notes ?: "", ch->notes ? "; " : "",
                     o->verdict.subject, note) < 0)
                return -ENOMEM;
        free(ch->notes);
        ch->notes = s;
        return 0;
}

/*
 * Judge the hop from @from to @url as the call {"urls": [url]} would be: the policy reads
 * "urls" only; "redirected_from" tells a person asked why a URL the script did not write is
 * to be fetched. 1: follow it; 0: refused (@resp ends with the reason); -ENOMEM.
 * *ret_waited: the time spent waiting for an answer.
 */
static int judge_hop(const struct tool_ctx *ctx, struct chain *ch, const char *from,
                     const char *url, struct web_response *resp, usec_t *ret_waited)
{
        json_auto_t *args = json_pack("{s:[s], s:s}", "urls", url, "redirected_from", from);
        json_auto_t *refusal = NULL;
        struct approval_outcome o = {};
        int r;

        *ret_waited = 0;
        if (!args)
                return -ENOMEM;
        const struct approval_call call = tool_ctx_approval_call(ctx, "web_extract", args, NULL);
        r = approval_gate(&call, &refusal, &o);
        if (r < 0)
                return r;
        if (o.wait_seconds > 0)
                *ret_waited = (usec_t) (o.wait_seconds * (double) USEC_PER_SEC);
        if (refusal || !o.allowed)
                return end_with_error(resp, refusal_text(ctx->config, &o));
        r = add_note(ch, &o);
        return r < 0 ? r : 1;
}

/*
 * Whether the hop from @from to @to stays on its host, in the policy's spelling of hosts
 * (url_host(), the parser policy_decide() uses): http to https, another path. The policy
 * judges web_extract by host alone, and @from's host was judged already (the call's gate,
 * or the hop before), so the verdict would be the same: an ask is not put twice.
 */
static bool same_host(const struct web_module *m, const char *from, const char *to)
{
        _cleanup_free_ char *a = NULL, *b = NULL;

        if (!m->url_host)
                return false;
        a = m->url_host(from);
        b = a ? m->url_host(to) : NULL;
        return a && b && strcmp(a, b) == 0;
}

/*
 * A timeout after a redirect was the whole chain's: say the chain's time (the request's
 * timeout, or less when the run's deadline cut it), as a chain curl followed said it, not
 * what was left of it for the last hop.
 */
static int fix_timeout_error(struct web_response *resp, usec_t timeout)
{
        char *s = NULL;

        if (!resp->error || strncmp(resp->error, TIMED_OUT_PREFIX, strlen(TIMED_OUT_PREFIX)) != 0)
                return 0;
        if (asprintf(&s, TIMED_OUT_PREFIX "%g s",
                     (double) ((timeout + USEC_PER_MSEC / 2) / USEC_PER_MSEC) / 1000) < 0)
                return -ENOMEM;
        free(resp->error);
        resp->error = s;
        return 0;
}

/*
 * What the round's response for chain @ch means: final (moved to @out), or a redirect that
 * is judged and, when allowed, becomes the chain's next hop. 0 or -ENOMEM; *ret_waited as
 * judge_hop().
 */
static int take_hop(const struct web_module *m, const struct tool_ctx *ctx,
                    const struct web_request *req, struct chain *ch, struct web_response *hop,
                    struct web_response *out, usec_t *ret_waited)
{
        const char *from = ch->url ?: req->url;
        int r;

        *ret_waited = 0;
        if (hop->redirect_url && !hop->error && ch->max_hops >= 0) {
                char *too_many = NULL;

                if (ch->hops >= ch->max_hops)
                        r = asprintf(&too_many, "too many redirects (more than %ld)",
                                     ch->max_hops) < 0
                                    ? -ENOMEM
                                    : end_with_error(hop, too_many);
                else if (!ctx->config || same_host(m, from, hop->redirect_url))
                        r = 1; /* no policy, or judged already */
                else
                        r = judge_hop(ctx, ch, from, hop->redirect_url, hop, ret_waited);
                if (r < 0)
                        return r;
                if (r > 0) {
                        free(ch->url);
                        ch->url = TAKE_PTR(hop->redirect_url);
                        ch->hops++;
                        web_response_release(hop);
                        return 0;
                }
        }
        if (ch->hops > 0) {
                r = fix_timeout_error(hop, ch->budget);
                if (r < 0)
                        return r;
        }
        *out = *hop;
        memset(hop, 0, sizeof(*hop));
        ch->done = true;
        return 0;
}

int web_fetch_judged(const struct web_module *m, const struct tool_ctx *ctx,
                     const struct web_request *reqs, size_t n, struct web_response *resps,
                     char **ret_notes)
{
        struct chain chains[WEB_FETCH_MAX_REQUESTS] = {};
        struct web_request hop_reqs[WEB_FETCH_MAX_REQUESTS];
        struct web_response hop_resps[WEB_FETCH_MAX_REQUESTS];
        size_t idx[WEB_FETCH_MAX_REQUESTS];
        usec_t start = now_usec(), waited = 0;
        int r = 0;

        if (!m || !ctx || n > WEB_FETCH_MAX_REQUESTS || (n > 0 && (!reqs || !resps)))
                return -EINVAL;
        memset(resps, 0, n * sizeof(*resps));
        for (size_t i = 0; i < n; i++) {
                usec_t timeout = reqs[i].timeout ? reqs[i].timeout : WEB_FETCH_TIMEOUT_USEC;

                if (ctx->deadline != USEC_INFINITY)
                        timeout = MIN(timeout, ctx->deadline > start ? ctx->deadline - start : 0);
                chains[i].budget = timeout;
                chains[i].deadline = usec_add_sat(start, timeout);
                chains[i].max_hops = reqs[i].max_redirects == 0 ? WEB_FETCH_MAX_REDIRECTS
                                                                : reqs[i].max_redirects;
        }

        /* Each round fetches one hop of every chain still going: at most max_hops + 1. */
        for (;;) {
                usec_t now = now_usec(), deadline;
                size_t k = 0;

                for (size_t i = 0; i < n; i++) {
                        struct chain *ch = &chains[i];

                        if (ch->done)
                                continue;
                        hop_reqs[k] = reqs[i];
                        hop_reqs[k].url = ch->url ?: reqs[i].url;
                        /* curl must not follow: the redirect comes back here to be judged. */
                        hop_reqs[k].max_redirects = -1;
                        /* What is left of the chain's time; 1 us ends it as timed out (0
                         * would mean the default). */
                        hop_reqs[k].timeout = ch->deadline > now ? ch->deadline - now : 1;
                        idx[k++] = i;
                }
                if (k == 0)
                        break;

                /* The run's deadline, moved by this call's own waits for an answer (the
                 * gate moved it for the waits before the call ran). */
                deadline = usec_add_sat(ctx->deadline, waited);
                r = m->fetch_many(hop_reqs, k, hop_resps, deadline, ctx->cancel_fd);
                if (r < 0)
                        break;
                for (size_t j = 0; j < k; j++) {
                        size_t i = idx[j];
                        usec_t w = 0;

                        if (r >= 0)
                                r = take_hop(m, ctx, &reqs[i], &chains[i], &hop_resps[j], &resps[i],
                                             &w);
                        web_response_release(&hop_resps[j]);
                        if (w > 0) {
                                /* The clock stood still meanwhile: so do the chains. */
                                waited += w;
                                for (size_t l = 0; l < n; l++)
                                        chains[l].deadline = usec_add_sat(chains[l].deadline, w);
                        }
                }
                if (r < 0)
                        break;
        }

        for (size_t i = 0; i < n; i++) {
                free(chains[i].url);
                if (r >= 0 && ret_notes)
                        ret_notes[i] = TAKE_PTR(chains[i].notes);
                free(chains[i].notes);
        }
        if (r < 0)
                for (size_t i = 0; i < n; i++)
                        web_response_release(&resps[i]);
        return r;
}
