/* SPDX-License-Identifier: MIT */
/*
 * web_search (docs/seed.md 2.6): the arguments and the provider choice;
 * the providers themselves are in web/search-providers.c.
 *
 * A missing provider or key is an answer to the script ({"success": false,
 * "error": ...}), as any provider failure, not a failed tool call: the
 * script can read it and go on.
 */

#include "core/tools/tool.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>

#include "basic/diag.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "core/tools/tool-util.h"
#include "core/web/search-providers.h"

/* The seed's default and range of "limit". */
#define WEB_SEARCH_LIMIT_DEFAULT 5
#define WEB_SEARCH_LIMIT_MAX 100

static int web_search_tool_run(const struct tool *t, const struct tool_ctx *ctx, json_t *args,
                               json_t **ret_result)
{
        struct web_provider p;
        struct diag d = {};
        const char *query = NULL;
        int64_t limit;
        usec_t timeout = 0;
        int r;

        (void) t;
        r = tool_arg_string(args, "query", &query, NULL);
        if (r < 0 || !query || !query[0])
                return tool_failure_result(ret_result,
                                           "web_search needs a non-empty 'query' string");
        /* The seed: a non-integer limit is the default, anything else is clamped. */
        if (tool_arg_int(args, "limit", WEB_SEARCH_LIMIT_DEFAULT, &limit, NULL) < 0)
                limit = WEB_SEARCH_LIMIT_DEFAULT;
        limit = MAX(1, MIN(limit, WEB_SEARCH_LIMIT_MAX));

        r = web_search_provider_resolve(ctx->config, &p, &d);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return tool_failure_result(ret_result, "%s", d.message);

        if (ctx->config->web_timeout > 0 && isfinite(ctx->config->web_timeout))
                timeout = (usec_t) (ctx->config->web_timeout * (double) USEC_PER_SEC);
        return web_search_run(&p, query, (int) limit, timeout, ctx->deadline, ctx->cancel_fd,
                              ret_result);
}

/* Usable only with a search provider (and its key): the registry asks before offering it. */
static int web_search_usable(const struct ptc_config *config, struct diag *reterr)
{
        struct web_provider p;

        return web_search_provider_resolve(config, &p, reterr);
}

const struct tool_def tool_def_web_search = {
        .name = "web_search",
        .description = "Search the web; returns titles, URLs and descriptions of the top "
                       "results.",
        .parameters_json = "{\"type\": \"object\", \"properties\": {"
                           "\"query\": {\"type\": \"string\", \"description\": "
                           "\"The search query\"}, "
                           "\"limit\": {\"type\": \"integer\", \"default\": 5, \"description\": "
                           "\"Maximum number of results (1-100)\"}}, "
                           "\"required\": [\"query\"]}",
        .returns = "Returns {\"success\": true, \"data\": {\"web\": [{\"title\", \"url\", "
                   "\"description\", \"position\"}]}}",
        .run = web_search_tool_run,
        .usable = web_search_usable,
        .runs_on_host = true,
};
