/* SPDX-License-Identifier: MIT */
/*
 * The web_search providers and the extraction providers (search-providers.h).
 *
 * Each provider is one HTTP exchange through web_fetch_many() (Firecrawl's
 * extraction: one per URL, all at once) and a mapping of its answer to the
 * seed's result shape. The failure texts name the provider and what went
 * wrong, never the request: its headers and body carry the API key.
 *
 * Provider answers are parsed leniently (duplicate keys and \u0000 are
 * accepted, a member of the wrong type reads as ""): the answer comes from a
 * service the operator chose, and a partial result is more useful than none.
 */

#include "core/web/search-providers.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/strv.h"
#include "basic/utf8.h"
#include "core/web/web-fetch.h"
#include "core/web/web-keys.h"
#include "core/web/web-module.h"

/*
 * Bytes kept of a search provider's answer: 100 results with long snippets
 * are well under 1 MiB; 4 MiB leaves room without letting a broken provider
 * fill memory.
 */
#define SEARCH_ANSWER_MAX (4u * 1024 * 1024)
/* Bytes kept of an extraction provider's answer: up to 5 whole pages in one answer (Tavily). */
#define EXTRACT_ANSWER_MAX (16u * 1024 * 1024)
/* The seed cuts a description made from page text (Firecrawl markdown, Exa text) here. */
#define DESCRIPTION_TEXT_MAX 500
/* Brave and Tavily refuse more results per request than this. */
#define PROVIDER_COUNT_MAX 20
/* At most this many URLs per extraction (the web_extract tool uses the first 5). */
#define EXTRACT_URLS_MAX 5

/* For strings that held a key (request bodies): wiped before they are freed. */
static void free_wipep(char **p)
{
        if (*p) {
                explicit_wipe(*p, strlen(*p));
                free(*p);
        }
}
#define _cleanup_free_wipe_ _cleanup_(free_wipep)

static const struct web_provider_info {
        enum web_provider_kind kind;
        const char *id;   /* the config word */
        const char *name; /* for messages */
        const char *default_url;
} providers[] = {
        {WEB_PROVIDER_SEARXNG, "searxng", "SearXNG", NULL},
        {WEB_PROVIDER_BRAVE, "brave", "Brave", "https://api.search.brave.com"},
        {WEB_PROVIDER_TAVILY, "tavily", "Tavily", "https://api.tavily.com"},
        {WEB_PROVIDER_FIRECRAWL, "firecrawl", "Firecrawl", "https://api.firecrawl.dev"},
        {WEB_PROVIDER_EXA, "exa", "Exa", "https://api.exa.ai"},
};

static const struct web_provider_info *info_by_kind(enum web_provider_kind k)
{
        for (size_t i = 0; i < ELEMENTSOF(providers); i++)
                if (providers[i].kind == k)
                        return &providers[i];
        return NULL;
}

static const struct web_provider_info *info_by_id(const char *id)
{
        for (size_t i = 0; i < ELEMENTSOF(providers); i++)
                if (strcmp(providers[i].id, id) == 0)
                        return &providers[i];
        return NULL;
}

/* --- resolution --- */

static const char *nonempty(const char *s)
{
        return s && s[0] ? s : NULL;
}

/* The configured base URL of @k, or NULL (then the public default applies). */
static const char *config_url(const struct ptc_config *c, enum web_provider_kind k)
{
        switch (k) {
        case WEB_PROVIDER_SEARXNG:
                return nonempty(c->searxng_url);
        case WEB_PROVIDER_BRAVE:
                return nonempty(c->brave_url);
        case WEB_PROVIDER_TAVILY:
                return nonempty(c->tavily_url);
        case WEB_PROVIDER_FIRECRAWL:
                return nonempty(c->firecrawl_url);
        case WEB_PROVIDER_EXA:
                return nonempty(c->exa_url);
        default:
                return NULL;
        }
}

/* The variable named in "... but X is not set" when @k lacks its credential. */
static const char *credential_name(enum web_provider_kind k)
{
        switch (k) {
        case WEB_PROVIDER_SEARXNG:
                return "web.searxng_url (or SEARXNG_URL)";
        case WEB_PROVIDER_BRAVE:
                return "BRAVE_API_KEY";
        case WEB_PROVIDER_TAVILY:
                return "TAVILY_API_KEY";
        case WEB_PROVIDER_FIRECRAWL:
                return "FIRECRAWL_API_KEY";
        case WEB_PROVIDER_EXA:
                return "EXA_API_KEY";
        default:
                return "";
        }
}

/*
 * Fill @ret for @k and return true when its credential is present. @explicit_choice: the
 * operator named the provider, so a configured web.firecrawl_url alone (a keyless self-hosted
 * Firecrawl) counts; auto-detection follows the seed and looks at the environment only.
 */
static bool provider_fill(const struct ptc_config *c, enum web_provider_kind k,
                          bool explicit_choice, struct web_provider *ret)
{
        const struct web_provider_info *info = info_by_kind(k);
        const char *base = config_url(c, k);
        const char *key = NULL;

        assert(info);
        switch (k) {
        case WEB_PROVIDER_SEARXNG:
                if (!base)
                        base = web_key_get("SEARXNG_URL");
                if (!base)
                        return false;
                break;
        case WEB_PROVIDER_BRAVE:
                key = web_key_get("BRAVE_API_KEY");
                if (!key)
                        key = web_key_get("BRAVE_SEARCH_API_KEY");
                if (!key)
                        return false;
                break;
        case WEB_PROVIDER_TAVILY:
                key = web_key_get("TAVILY_API_KEY");
                if (!key)
                        return false;
                break;
        case WEB_PROVIDER_FIRECRAWL: {
                const char *env_url = web_key_get("FIRECRAWL_API_URL");

                key = web_key_get("FIRECRAWL_API_KEY");
                if (!key && !env_url && !(explicit_choice && base))
                        return false;
                if (!base)
                        base = env_url;
                break;
        }
        case WEB_PROVIDER_EXA:
                key = web_key_get("EXA_API_KEY");
                if (!key)
                        return false;
                break;
        default:
                return false;
        }
        *ret = (struct web_provider){
                .kind = k,
                .name = info->name,
                .base_url = base ? base : info->default_url,
                .key = key,
        };
        return true;
}

int web_search_provider_resolve(const struct ptc_config *c, struct web_provider *ret,
                                struct diag *reterr)
{
        /* The seed's auto-detection order. */
        static const enum web_provider_kind order[] = {
                WEB_PROVIDER_FIRECRAWL, WEB_PROVIDER_TAVILY, WEB_PROVIDER_EXA,
                WEB_PROVIDER_SEARXNG,   WEB_PROVIDER_BRAVE,
        };
        const char *want;

        assert(c);
        assert(ret);
        want = nonempty(c->search_provider);
        if (want) {
                const struct web_provider_info *info = info_by_id(want);

                if (!info)
                        return diag_set(reterr, -EINVAL,
                                        "web.search_provider is '%s', which is not one of "
                                        "searxng, brave, tavily, firecrawl, exa",
                                        want);
                if (provider_fill(c, info->kind, true, ret))
                        return 0;
                if (info->kind == WEB_PROVIDER_SEARXNG)
                        return diag_set(reterr, -EINVAL,
                                        "web.search_provider is 'searxng' but %s is not set",
                                        credential_name(info->kind));
                return diag_set(reterr, -EINVAL,
                                "web.search_provider is '%s' but %s is not set in the environment",
                                info->id, credential_name(info->kind));
        }
        for (size_t i = 0; i < ELEMENTSOF(order); i++)
                if (provider_fill(c, order[i], false, ret))
                        return 0;
        return diag_set(reterr, -ENOENT,
                        "web_search needs a search provider: set web.search_provider (searxng, "
                        "brave, tavily, firecrawl, exa) and its API key in the environment "
                        "(BRAVE_API_KEY, TAVILY_API_KEY, FIRECRAWL_API_KEY, EXA_API_KEY), or "
                        "web.searxng_url / SEARXNG_URL");
}

int web_extract_provider_resolve(const struct ptc_config *c, struct web_provider *ret,
                                 struct diag *reterr)
{
        const struct web_provider_info *info;
        const char *want;

        assert(c);
        assert(ret);
        want = nonempty(c->extract_provider);
        if (!want) {
                *ret = (struct web_provider){.kind = WEB_PROVIDER_NONE, .name = "builtin"};
                return 0;
        }
        info = info_by_id(want);
        if (!info || (info->kind != WEB_PROVIDER_FIRECRAWL && info->kind != WEB_PROVIDER_TAVILY &&
                      info->kind != WEB_PROVIDER_EXA))
                return diag_set(reterr, -EINVAL,
                                "web.extract_provider is '%s', which is not one of firecrawl, "
                                "tavily, exa",
                                want);
        if (provider_fill(c, info->kind, true, ret))
                return 0;
        return diag_set(reterr, -EINVAL,
                        "web.extract_provider is '%s' but %s is not set in the environment",
                        info->id, credential_name(info->kind));
}

/* --- requests --- */

/* @base without its trailing '/'s, then @path (which starts with '/'). NULL on ENOMEM. */
static char *url_join(const char *base, const char *path)
{
        size_t n = strlen(base);
        char *s;

        while (n > 0 && base[n - 1] == '/')
                n--;
        if (asprintf(&s, "%.*s%s", (int) MIN(n, (size_t) INT_MAX), base, path) < 0)
                return NULL;
        return s;
}

/*
 * Add "<prefix><value>" to @l; NULL @value adds nothing. The strv may hold a key: it is freed
 * with strv_free_wipe(). Returns 0 or -ENOMEM.
 */
static int header_add(char ***l, const char *prefix, const char *value)
{
        char *h;

        if (!value)
                return 0;
        if (asprintf(&h, "%s%s", prefix, value) < 0)
                return -ENOMEM;
        return strv_consume(l, h);
}

/* The headers of a request to @p; @json_body: a POST with a JSON body. Returns 0 or -ENOMEM. */
static int provider_headers(const struct web_provider *p, bool json_body, char ***l)
{
        int r = 0;

        if (json_body)
                r = header_add(l, "Content-Type: ", "application/json");
        switch (p->kind) {
        case WEB_PROVIDER_BRAVE:
                if (r >= 0)
                        r = header_add(l, "X-Subscription-Token: ", p->key);
                if (r >= 0)
                        r = header_add(l, "Accept: ", "application/json");
                break;
        case WEB_PROVIDER_TAVILY:
        case WEB_PROVIDER_FIRECRAWL:
                /* No key (a self-hosted Firecrawl): no header at all. */
                if (r >= 0)
                        r = header_add(l, "Authorization: Bearer ", p->key);
                break;
        case WEB_PROVIDER_EXA:
                if (r >= 0)
                        r = header_add(l, "x-api-key: ", p->key);
                break;
        default:
                break;
        }
        return r;
}

/* json_dumps() of @body (a new reference, consumed). NULL on ENOMEM. */
static char *body_dump(json_t *body)
{
        char *s;

        if (!body)
                return NULL;
        s = json_dumps(body, JSON_COMPACT);
        json_decref(body);
        return s;
}

static json_t *json_str(const char *s)
{
        return json_string(s ? s : "");
}

/* A failure result {"success": false, "error": msg}. NULL on ENOMEM. */
static json_t *failure_new(const char *fmt, ...) _printf_(1, 2);
static json_t *failure_new(const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL, *clean = NULL;
        va_list ap;
        size_t len;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0)
                return NULL;
        /* A transport error may quote bytes from a URL: keep the message, replace bad UTF-8. */
        clean = utf8_sanitize(msg, (size_t) r, &len, NULL);
        if (!clean)
                return NULL;
        return json_pack("{s:b, s:s%}", "success", 0, "error", clean, len);
}

/*
 * Check one exchange: on a failure (transport, HTTP status, oversized or non-JSON answer)
 * *ret_fail is a new message naming the provider (caller frees); otherwise *ret_root is the
 * parsed answer (a new reference). Returns 0 or -ENOMEM.
 */
static int answer_parse(const char *name, const struct web_response *resp, size_t max_body,
                        json_t **ret_root, char **ret_fail)
{
        json_t *root;
        int r;

        *ret_root = NULL;
        *ret_fail = NULL;
        if (resp->error)
                r = asprintf(ret_fail, "%s request failed: %s", name, resp->error);
        else if (resp->status >= 400)
                r = asprintf(ret_fail, "%s returned HTTP %ld", name, resp->status);
        else if (resp->truncated)
                r = asprintf(ret_fail, "%s returned an answer larger than %zu MiB", name,
                             max_body / (1024 * 1024));
        else {
                root = json_loadb(resp->body ? resp->body : "", resp->body_len,
                                  JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
                if (root) {
                        *ret_root = root;
                        return 0;
                }
                r = asprintf(ret_fail, "%s returned an answer that is not JSON", name);
        }
        return r < 0 ? -ENOMEM : 0;
}

/* Member @key of @o when it is a string, else "". Borrowed. */
static const char *member_str(const json_t *o, const char *key)
{
        const json_t *v = json_object_get(o, key);

        return json_is_string(v) ? json_string_value(v) : "";
}

/* @s cut to DESCRIPTION_TEXT_MAX code points (as Python's s[:500]). A new JSON string. */
static json_t *text_cut(const char *s)
{
        size_t chars = 0, i = 0, n = strlen(s);

        /* jansson validated the UTF-8, so counting lead bytes counts code points. */
        for (; i < n; i++)
                if (((unsigned char) s[i] & 0xC0) != 0x80 && chars++ == DESCRIPTION_TEXT_MAX)
                        break;
        return json_stringn(s, i);
}

/* Exa: highlights joined with " ", else the text cut. A new JSON string or NULL (ENOMEM). */
static json_t *exa_description(const json_t *item)
{
        _cleanup_buf_ struct buf b = BUF_INIT(SEARCH_ANSWER_MAX);
        const json_t *hl = json_object_get(item, "highlights"), *v;
        size_t i;
        bool any = false;

        json_array_foreach(hl, i, v)
        {
                if (!json_is_string(v))
                        continue;
                if ((any && buf_append_char(&b, ' ') < 0) ||
                    buf_append(&b, json_string_value(v), json_string_length(v)) < 0)
                        return NULL; /* -E2BIG cannot happen: the answer itself is smaller */
                any = true;
        }
        if (any)
                return json_stringn(buf_str(&b), b.len);
        return text_cut(member_str(item, "text"));
}

static json_t *item_description(enum web_provider_kind k, const json_t *item)
{
        const json_t *v;

        switch (k) {
        case WEB_PROVIDER_SEARXNG:
        case WEB_PROVIDER_TAVILY:
                return json_str(member_str(item, "content"));
        case WEB_PROVIDER_FIRECRAWL:
                v = json_object_get(item, "description");
                if (json_is_string(v))
                        return json_copy((json_t *) v);
                return text_cut(member_str(item, "markdown"));
        case WEB_PROVIDER_EXA:
                return exa_description(item);
        default:
                return json_str(member_str(item, "description"));
        }
}

struct scored {
        const json_t *item;
        double score;
        size_t index;
};

/* Score descending; equal scores keep the provider's order. */
static int scored_cmp(const void *a, const void *b)
{
        const struct scored *x = a, *y = b;

        if (x->score != y->score)
                return x->score > y->score ? -1 : 1;
        return x->index < y->index ? -1 : x->index > y->index;
}

/*
 * The results list of @root in *ret (borrowed; NULL for "nothing found"). False when the
 * answer has another shape.
 */
static bool results_list(enum web_provider_kind k, const json_t *root, const json_t **ret)
{
        const json_t *v;

        switch (k) {
        case WEB_PROVIDER_BRAVE:
                v = json_object_get(root, "web");
                /* Brave leaves "web" out when nothing was found. */
                if (!v && json_is_object(root) && strcmp(member_str(root, "type"), "search") == 0) {
                        *ret = NULL;
                        return true;
                }
                v = json_object_get(v, "results");
                break;
        case WEB_PROVIDER_FIRECRAWL:
                v = json_object_get(root, "data");
                if (json_is_object(v))
                        v = json_object_get(v, "web");
                break;
        default:
                v = json_object_get(root, "results");
                break;
        }
        *ret = v;
        return json_is_array(v);
}

/* The seed's result object from the provider's list @list. *ret new, or -ENOMEM. */
static int results_map(enum web_provider_kind k, const json_t *list, int limit, json_t **ret)
{
        _cleanup_free_ struct scored *items = NULL;
        json_auto_t *web = NULL;
        size_t n = 0, i;
        const json_t *v;

        items = calloc(json_array_size(list) + 1, sizeof(*items));
        web = json_array();
        if (!items || !web)
                return -ENOMEM;
        json_array_foreach(list, i, v)
        {
                const json_t *score = json_object_get(v, "score");

                if (!json_is_object(v))
                        continue;
                items[n] = (struct scored){
                        .item = v,
                        .score = json_is_number(score) ? json_number_value(score) : 0.0,
                        .index = n,
                };
                n++;
        }
        if (k == WEB_PROVIDER_SEARXNG)
                qsort(items, n, sizeof(*items), scored_cmp);
        for (i = 0; i < n && i < (size_t) limit; i++) {
                json_t *e = json_object();

                if (!e || json_array_append_new(web, e) < 0)
                        return -ENOMEM;
                if (json_object_set_new(e, "title", json_str(member_str(items[i].item, "title"))) <
                            0 ||
                    json_object_set_new(e, "url", json_str(member_str(items[i].item, "url"))) < 0 ||
                    json_object_set_new(e, "description", item_description(k, items[i].item)) < 0 ||
                    json_object_set_new(e, "position", json_integer((json_int_t) i + 1)) < 0)
                        return -ENOMEM;
        }
        *ret = json_pack("{s:b, s:{s:O}}", "success", 1, "data", "web", web);
        return *ret ? 0 : -ENOMEM;
}

/*
 * The URL and body of a search with @p: *ret_url and *ret_body (NULL for a GET; may hold the
 * key) are new strings. Returns 0 or -ENOMEM.
 */
static int search_request(const struct web_module *m, const struct web_provider *p,
                          const char *query, int limit, char **ret_url, char **ret_body)
{
        _cleanup_free_ char *q = NULL;
        _cleanup_free_ char *path = NULL;
        _cleanup_free_wipe_ char *body = NULL;
        size_t qlen = strlen(query);
        int r = 0;

        /* curl_easy_escape(): everything but RFC 3986's unreserved characters is encoded. */
        if (qlen > INT_MAX)
                return -E2BIG;
        q = m->url_escape(query, qlen);
        if (!q)
                return -ENOMEM;

        switch (p->kind) {
        case WEB_PROVIDER_SEARXNG:
                r = asprintf(&path, "/search?q=%s&format=json&pageno=1", q);
                break;
        case WEB_PROVIDER_BRAVE:
                r = asprintf(&path, "/res/v1/web/search?q=%s&count=%d", q,
                             MIN(limit, PROVIDER_COUNT_MAX));
                break;
        case WEB_PROVIDER_TAVILY:
                path = strdup("/search");
                body = body_dump(json_pack("{s:s, s:s, s:i}", "api_key", p->key ? p->key : "",
                                           "query", query, "max_results",
                                           MIN(limit, PROVIDER_COUNT_MAX)));
                break;
        case WEB_PROVIDER_FIRECRAWL:
                path = strdup("/v1/search");
                body = body_dump(json_pack("{s:s, s:i}", "query", query, "limit", limit));
                break;
        case WEB_PROVIDER_EXA:
                path = strdup("/search");
                body = body_dump(json_pack("{s:s, s:i, s:{s:b}}", "query", query, "numResults",
                                           limit, "contents", "highlights", 1));
                break;
        default:
                return -EINVAL;
        }
        if (r < 0 || !path)
                return -ENOMEM;
        if (p->kind != WEB_PROVIDER_SEARXNG && p->kind != WEB_PROVIDER_BRAVE && !body)
                return -ENOMEM;
        *ret_url = url_join(p->base_url, path);
        if (!*ret_url)
                return -ENOMEM;
        *ret_body = TAKE_PTR(body);
        return 0;
}

int web_search_run(const struct web_provider *p, const char *query, int limit, usec_t timeout,
                   usec_t deadline, int cancel_fd, json_t **ret)
{
        _cleanup_(strv_free_wipep) char **headers = NULL;
        _cleanup_free_wipe_ char *body = NULL;
        _cleanup_free_ char *url = NULL, *fail = NULL;
        json_auto_t *root = NULL;
        _cleanup_(web_response_release) struct web_response resp = {0};
        const struct web_module *m;
        struct web_request req;
        const json_t *list;
        struct diag d = {};
        int r;

        assert(p);
        assert(query);
        assert(ret);
        limit = MAX(1, MIN(limit, 100));
        if (!info_by_kind(p->kind) || !p->base_url) {
                *ret = failure_new("web_search has no search provider configured");
                return *ret ? 0 : -ENOMEM;
        }
        m = web_module_get(&d);
        if (!m) {
                *ret = failure_new("%s", d.message);
                return *ret ? 0 : -ENOMEM;
        }

        r = search_request(m, p, query, limit, &url, &body);
        if (r == -E2BIG) {
                *ret = failure_new("web_search query is too long");
                return *ret ? 0 : -ENOMEM;
        }
        if (r < 0)
                return r;
        r = provider_headers(p, body != NULL, &headers);
        if (r < 0)
                return r;
        req = (struct web_request){
                .url = url,
                .method = body ? "POST" : "GET",
                .body = body,
                .body_len = body ? strlen(body) : 0,
                .headers = headers,
                .guard = false, /* the operator's URL, see search-providers.h */
                .max_body = SEARCH_ANSWER_MAX,
                .timeout = timeout,
        };
        r = m->fetch_many(&req, 1, &resp, deadline, cancel_fd);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                *ret = failure_new("%s request failed: %s", p->name, strerror(-r));
                return *ret ? 0 : -ENOMEM;
        }

        r = answer_parse(p->name, &resp, SEARCH_ANSWER_MAX, &root, &fail);
        if (r < 0)
                return r;
        if (fail)
                *ret = failure_new("%s", fail);
        else if (!results_list(p->kind, root, &list))
                *ret = failure_new("%s returned an unexpected answer (no results list)", p->name);
        else
                return results_map(p->kind, list, limit, ret);
        return *ret ? 0 : -ENOMEM;
}

/* --- extraction --- */

/* Equal, or equal but for one trailing '/' (providers normalise "https://a.example" to ".../"). */
static bool url_same(const char *a, const char *b)
{
        size_t na = strlen(a), nb = strlen(b);

        if (na > 0 && a[na - 1] == '/')
                na--;
        if (nb > 0 && b[nb - 1] == '/')
                nb--;
        return na == nb && memcmp(a, b, na) == 0;
}

/* The element of array @list whose @key (or @alt_key) is @url, or NULL. Borrowed. */
static const json_t *find_by_url(const json_t *list, const char *key, const char *alt_key,
                                 const char *url)
{
        const json_t *v;
        size_t i;

        json_array_foreach(list, i, v)
        {
                const json_t *u = json_object_get(v, key);

                if (!json_is_string(u) && alt_key)
                        u = json_object_get(v, alt_key);
                if (json_is_string(u) && url_same(json_string_value(u), url))
                        return v;
        }
        return NULL;
}

static int entry_set_str(json_t *e, const char *key, const char *s)
{
        return json_object_set_new(e, key, json_str(s)) < 0 ? -ENOMEM : 0;
}

/* The n entries {"url", "title": "", "content": "", "error": null}. */
static int entries_new(const char *const *urls, size_t n, json_t **ret)
{
        json_auto_t *a = json_array();

        if (!a)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_t *e = json_pack("{s:s, s:s, s:s, s:n}", "url", urls[i], "title", "",
                                      "content", "", "error");

                if (!e || json_array_append_new(a, e) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(a);
        return 0;
}

/* Firecrawl's answer to one /v1/scrape into entry @e. */
static int firecrawl_fill(json_t *e, const json_t *root)
{
        const json_t *data = json_object_get(root, "data");
        const json_t *meta = json_object_get(data, "metadata");
        const char *src;
        int r;

        if (!json_is_object(data)) {
                const json_t *err = json_object_get(root, "error");

                if (json_is_string(err)) {
                        _cleanup_free_ char *m = NULL;

                        if (asprintf(&m, "Firecrawl could not scrape the page: %s",
                                     json_string_value(err)) < 0)
                                return -ENOMEM;
                        return entry_set_str(e, "error", m);
                }
                return entry_set_str(e, "error",
                                     "Firecrawl returned an unexpected answer (no data)");
        }
        r = entry_set_str(e, "content", member_str(data, "markdown"));
        if (r >= 0)
                r = entry_set_str(e, "title", member_str(meta, "title"));
        src = member_str(meta, "sourceURL");
        if (r >= 0 && src[0])
                r = entry_set_str(e, "url", src);
        return r;
}

static void responses_release(struct web_response *resps, size_t n)
{
        for (size_t i = 0; i < n; i++)
                web_response_release(&resps[i]);
}

static int extract_firecrawl(const struct web_module *m, const struct web_provider *p,
                             const char *const *urls, size_t n, usec_t timeout, usec_t deadline,
                             int cancel_fd, json_t *entries)
{
        _cleanup_(strv_free_wipep) char **headers = NULL;
        _cleanup_(strv_freep) char **bodies = NULL;
        _cleanup_free_ char *url = NULL;
        struct web_request reqs[EXTRACT_URLS_MAX] = {};
        struct web_response resps[EXTRACT_URLS_MAX] = {};
        int r;

        url = url_join(p->base_url, "/v1/scrape");
        if (!url)
                return -ENOMEM;
        r = provider_headers(p, true, &headers);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                char *b =
                        body_dump(json_pack("{s:s, s:[s]}", "url", urls[i], "formats", "markdown"));

                if (!b || strv_consume(&bodies, b) < 0)
                        return -ENOMEM;
                reqs[i] = (struct web_request){
                        .url = url,
                        .method = "POST",
                        .body = b,
                        .body_len = strlen(b),
                        .headers = headers,
                        .max_body = EXTRACT_ANSWER_MAX,
                        .timeout = timeout,
                };
        }
        r = m->fetch_many(reqs, n, resps, deadline, cancel_fd);
        if (r < 0) {
                responses_release(resps, n);
                return r;
        }
        for (size_t i = 0; i < n && r >= 0; i++) {
                json_auto_t *root = NULL;
                _cleanup_free_ char *fail = NULL;
                json_t *e = json_array_get(entries, i);

                r = answer_parse(p->name, &resps[i], EXTRACT_ANSWER_MAX, &root, &fail);
                if (r < 0)
                        break;
                if (fail)
                        r = entry_set_str(e, "error", fail);
                else
                        r = firecrawl_fill(e, root);
        }
        responses_release(resps, n);
        return r;
}

/* Tavily /extract or Exa /contents: one request for every URL. */
static int extract_batch(const struct web_module *m, const struct web_provider *p,
                         const char *const *urls, size_t n, usec_t timeout, usec_t deadline,
                         int cancel_fd, json_t *entries)
{
        _cleanup_(strv_free_wipep) char **headers = NULL;
        _cleanup_free_wipe_ char *body = NULL;
        _cleanup_free_ char *url = NULL, *fail = NULL, *missing = NULL;
        json_auto_t *root = NULL;
        json_auto_t *list = json_array();
        _cleanup_(web_response_release) struct web_response resp = {0};
        struct web_request req;
        bool tavily = p->kind == WEB_PROVIDER_TAVILY;
        const json_t *results, *failed;
        int r;

        if (!list)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (json_array_append_new(list, json_str(urls[i])) < 0)
                        return -ENOMEM;
        url = url_join(p->base_url, tavily ? "/extract" : "/contents");
        if (tavily)
                body = body_dump(
                        json_pack("{s:s, s:O}", "api_key", p->key ? p->key : "", "urls", list));
        else
                body = body_dump(json_pack("{s:O, s:b}", "urls", list, "text", 1));
        if (!url || !body)
                return -ENOMEM;
        r = provider_headers(p, true, &headers);
        if (r < 0)
                return r;
        req = (struct web_request){
                .url = url,
                .method = "POST",
                .body = body,
                .body_len = strlen(body),
                .headers = headers,
                .max_body = EXTRACT_ANSWER_MAX,
                .timeout = timeout,
        };
        r = m->fetch_many(&req, 1, &resp, deadline, cancel_fd);
        if (r < 0)
                return r;
        r = answer_parse(p->name, &resp, EXTRACT_ANSWER_MAX, &root, &fail);
        if (r < 0)
                return r;
        results = json_object_get(root, "results");
        if (!fail && !json_is_array(results) &&
            asprintf(&fail, "%s returned an unexpected answer (no results list)", p->name) < 0)
                return -ENOMEM;
        if (asprintf(&missing, "not returned by %s", p->name) < 0)
                return -ENOMEM;
        failed = json_object_get(root, "failed_results");

        for (size_t i = 0; i < n; i++) {
                json_t *e = json_array_get(entries, i);
                const json_t *hit, *miss;

                if (fail) {
                        r = entry_set_str(e, "error", fail);
                } else if ((hit = find_by_url(results, "url", tavily ? NULL : "id", urls[i]))) {
                        r = entry_set_str(e, "content",
                                          member_str(hit, tavily ? "raw_content" : "text"));
                        if (r >= 0)
                                r = entry_set_str(e, "title", member_str(hit, "title"));
                } else if (tavily && (miss = find_by_url(failed, "url", NULL, urls[i]))) {
                        const char *err = member_str(miss, "error");

                        r = entry_set_str(e, "error", err[0] ? err : "extraction failed");
                } else {
                        r = entry_set_str(e, "error", missing);
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

int web_extract_with_provider(const struct web_provider *p, const char *const *urls, size_t n,
                              usec_t timeout, usec_t deadline, int cancel_fd, json_t **ret)
{
        const struct web_module *m = NULL;
        json_auto_t *entries = NULL;
        struct diag d = {};
        int r;

        assert(p);
        assert(urls || n == 0);
        assert(ret);
        assert(n <= EXTRACT_URLS_MAX);
        r = entries_new(urls, n, &entries);
        if (r < 0)
                return r;
        if (n > 0)
                m = web_module_get(&d);
        if (n > 0 && !m) {
                /* No fetcher: every entry says why. */
                for (size_t i = 0; i < n; i++)
                        if (entry_set_str(json_array_get(entries, i), "error", d.message) < 0)
                                return -ENOMEM;
        } else if (n > 0) {
                switch (p->kind) {
                case WEB_PROVIDER_FIRECRAWL:
                        r = extract_firecrawl(m, p, urls, n, timeout, deadline, cancel_fd, entries);
                        break;
                case WEB_PROVIDER_TAVILY:
                case WEB_PROVIDER_EXA:
                        r = extract_batch(m, p, urls, n, timeout, deadline, cancel_fd, entries);
                        break;
                default:
                        r = -EINVAL;
                        break;
                }
        }
        if (r == -EINVAL) {
                /* A provider that cannot extract, or a request web_fetch_many() refused. */
                for (size_t i = 0; i < n; i++)
                        if (entry_set_str(json_array_get(entries, i), "error",
                                          "extraction provider is not usable") < 0)
                                return -ENOMEM;
                r = 0;
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(entries);
        return 0;
}
