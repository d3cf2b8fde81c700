/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The web_search providers (docs/seed.md 2.6): SearXNG, Brave, Tavily,
 * Firecrawl, Exa, and the extraction providers (Firecrawl, Tavily, Exa).
 *
 * Which provider: config web.search_provider when set (its credential must
 * then be present), else the first one whose credential is present, in the
 * seed's order: Firecrawl (FIRECRAWL_API_KEY or FIRECRAWL_API_URL), Tavily
 * (TAVILY_API_KEY), Exa (EXA_API_KEY), SearXNG (web.searxng_url or
 * SEARXNG_URL), Brave (BRAVE_API_KEY or BRAVE_SEARCH_API_KEY). Keys come from
 * web_key_get(), never from the config file. Base URLs: web.<name>_url, else
 * the provider's public API.
 *
 * Requests go through web_fetch_many() without the SSRF guard: the URL is the
 * operator's (config or environment), not the script's. The resolve functions
 * need no web module; web_search_run() and web_extract_with_provider() load it
 * (web_module_get()), and when it cannot be loaded their results carry its
 * error ("web tools unavailable: ...").
 */

#include <stddef.h>

#include <jansson.h>

#include "basic/diag.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "core/config/config.h"

enum web_provider_kind {
        WEB_PROVIDER_NONE,
        WEB_PROVIDER_SEARXNG,
        WEB_PROVIDER_BRAVE,
        WEB_PROVIDER_TAVILY,
        WEB_PROVIDER_FIRECRAWL,
        WEB_PROVIDER_EXA,
};

struct web_provider {
        enum web_provider_kind kind;
        const char *name;     /* "SearXNG", "Brave", ... (static) */
        const char *base_url; /* borrowed from the config or web_key_get(), or static */
        const char *key;      /* borrowed from web_key_get(); NULL for SearXNG and a keyless
                               * self-hosted Firecrawl */
};

/*
 * Resolve the search provider of @c. Returns 0 and fills *ret; -ENOENT when
 * none is configured (@reterr names what to configure); -EINVAL when the
 * configured one lacks its credential (@reterr names the variable).
 */
_must_check_ int web_search_provider_resolve(const struct ptc_config *c, struct web_provider *ret,
                                             struct diag *reterr);

/*
 * Resolve the extraction provider of @c: WEB_PROVIDER_NONE (builtin) when
 * web.extract_provider is unset; -EINVAL when the configured one lacks its
 * credential.
 */
_must_check_ int web_extract_provider_resolve(const struct ptc_config *c, struct web_provider *ret,
                                              struct diag *reterr);

/*
 * Search with @p: @limit already clamped to 1..100. On 0, *ret is the tool
 * result: {"success": true, "data": {"web": [{"title", "url", "description",
 * "position"}...]}} (position 1-based) or {"success": false, "error": "..."}
 * naming the provider and the HTTP status or the failure ("SearXNG returned
 * HTTP 500", "Brave request failed: timed out after 30 s", "Tavily returned
 * an answer that is not JSON"). Negative errno only for ENOMEM.
 */
_must_check_ int web_search_run(const struct web_provider *p, const char *query, int limit,
                                usec_t timeout, usec_t deadline, int cancel_fd, json_t **ret);

/*
 * Extract @n URLs (n <= 5) with provider @p (not NONE). On 0, *ret is a new
 * array of n objects {"url", "title", "content", "error"} in the order of
 * @urls (content Markdown or text as the provider gives it; error a string
 * or JSON null). Negative errno only for ENOMEM.
 */
_must_check_ int web_extract_with_provider(const struct web_provider *p, const char *const *urls,
                                           size_t n, usec_t timeout, usec_t deadline, int cancel_fd,
                                           json_t **ret);
