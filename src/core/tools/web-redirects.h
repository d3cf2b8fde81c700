/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * web_extract's redirects, followed by ptc rather than by curl, so that the policy judges
 * every hop before it is fetched (docs/policy.md, "Hosts"; DESIGN §15): an allowed host's
 * redirect to a denied host must not return the denied page.
 *
 * Each hop is fetched as a request of its own (web_fetch_many() with max_redirects -1, the
 * same SSRF guard, so the addresses of every hop are judged at connect time as before), and
 * the URL a redirect points to is judged between hops as the call {"urls": [HOP]} would be,
 * through the one gate every call passes (approval_gate()): its host is taken by the
 * policy's own URL parser, a deny ends that URL's response with an error naming the rule,
 * an ask asks whoever answers the run's asks (else policy.headless decides) before the hop
 * is fetched.
 *
 * Thread context: any thread (a tool call's worker); no global state.
 */

#include <stddef.h>

#include "basic/macro.h"

struct tool_ctx;
struct web_module;
struct web_request;
struct web_response;

/*
 * Fetch @reqs[0..n) (n <= WEB_FETCH_MAX_REQUESTS) as web_fetch_many() does (web-fetch.h),
 * following each one's redirects here: at most its max_redirects (0: the default, 5; past
 * them the error "too many redirects (more than 5)"), within its timeout counted over the
 * whole chain (time spent waiting for an answer not counted), never past ctx->deadline.
 * Rounds: every request's next hop is fetched concurrently, then the hops are judged one
 * after another.
 *
 * @resps[i] is the last hop's response, or the error that ended the chain, e.g. "Denied by
 * policy: redirect to HOST (policy.rules[N]). ..." (the entry then has no body).
 * @ret_notes[i] (may be NULL) is a new string when an ask about a hop was allowed
 * ("redirect to HOST: approved (policy.rules[N]) by terminal", several joined with "; "),
 * else NULL; an allow the user did not give is never silent (approval_note()).
 *
 * Without ctx->config there is no policy: hops are followed unjudged, as ptc's other calls
 * without a policy are. Returns 0 (every response set; release them and free the notes),
 * or -ENOMEM / -EINVAL with nothing left to release.
 */
_must_check_ int web_fetch_judged(const struct web_module *m, const struct tool_ctx *ctx,
                                  const struct web_request *reqs, size_t n,
                                  struct web_response *resps, char **ret_notes);
