/* SPDX-License-Identifier: MIT */
/*
 * The web_search providers and the extraction providers against a real HTTP
 * server on loopback (a thread in this test that records every request and
 * answers canned JSON): the exact request of each provider (method, path,
 * query encoding, headers with the key, JSON body), the mapping of its answer
 * (SearXNG's score order, the limit cut, missing fields), the failure texts
 * (HTTP status, not JSON, wrong shape, connection refused, timeout, cancel),
 * the provider resolution and the web_search tool's arguments.
 */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include "../lib/ptc-test.h"
/* clang-format on */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/fd-util.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "core/config/config.h"
#include "core/tools/tool.h"
#include "core/web/search-providers.h"
#include "core/web/web-keys.h"

/* Made-up keys: never real credentials. */
#define KEY_BRAVE "test-brave-key-0001"
#define KEY_TAVILY "tvly-test-key-0002"
#define KEY_FIRECRAWL "fc-test-key-0003"
#define KEY_EXA "exa-test-key-0004"

/* A query with spaces, '&', '+', '/', '=' and non-ASCII, and its percent-encoding. */
#define QUERY                 \
        "rust & c++ \xc3\xbc" \
        "n\xc3\xaf"           \
        "code / x=y"
#define QUERY_ENC "rust%20%26%20c%2B%2B%20%C3%BCn%C3%AFcode%20%2F%20x%3Dy"

/* --- the loopback HTTP server --- */

#define SRV_REQS_MAX 32
#define SRV_HEAD_MAX (64 * 1024)
#define SRV_BODY_MAX (1024 * 1024)

struct srv_req {
        char method[16];
        char *target;  /* path and query */
        char *headers; /* "\r\nName: value\r\n...": each line preceded by CRLF */
        char *body;
};

struct srv;
typedef void (*srv_respond_fn)(struct srv *s, const struct srv_req *r, int *status, char **body);

struct srv {
        int listen_fd;
        int stop_fd;
        int port;
        pthread_t th;
        pthread_mutex_t lock;
        struct srv_req reqs[SRV_REQS_MAX];
        size_t n_reqs;
        /* The answer: respond() when set, else status and answer. */
        int status;
        const char *answer;
        srv_respond_fn respond;
        bool silent; /* never answer: wait until the client gives up */
        char base[64];
};

static void srv_req_release(struct srv_req *r)
{
        free(r->target);
        free(r->headers);
        free(r->body);
        *r = (struct srv_req){};
}

/* One read(); the socket has a receive timeout. */
static ssize_t read_some(int fd, char *b, size_t len)
{
        ssize_t k;

        do
                k = read(fd, b, len);
        while (k < 0 && errno == EINTR);
        return k;
}

static const char *header_value(const char *headers, const char *name, char *out, size_t outsz)
{
        char pat[128];
        const char *p;
        size_t n;

        (void) snprintf(pat, sizeof(pat), "\r\n%s:", name);
        p = strcasestr(headers, pat);
        if (!p)
                return NULL;
        p += strlen(pat);
        while (*p == ' ')
                p++;
        n = strcspn(p, "\r\n");
        if (n >= outsz)
                n = outsz - 1;
        memcpy(out, p, n);
        out[n] = '\0';
        return out;
}

static void srv_handle(struct srv *s, int fd)
{
        _cleanup_free_ char *head = calloc(1, SRV_HEAD_MAX + 1);
        struct srv_req r = {};
        char *end = NULL, *sp, cl[32], ex[64];
        size_t have = 0, need = 0, body_have;
        int status = s->status;
        _cleanup_free_ char *answer = NULL;
        char line[256];

        if (!head)
                return;
        while (!end && have < SRV_HEAD_MAX) {
                ssize_t k = read_some(fd, head + have, SRV_HEAD_MAX - have);

                if (k <= 0)
                        return;
                have += (size_t) k;
                head[have] = '\0';
                end = strstr(head, "\r\n\r\n");
        }
        if (!end)
                return;
        sp = strchr(head, ' ');
        if (!sp || (size_t) (sp - head) >= sizeof(r.method))
                return;
        memcpy(r.method, head, (size_t) (sp - head));
        r.target = strndup(sp + 1, strcspn(sp + 1, " \r\n"));
        r.headers = strndup(head + strcspn(head, "\r"),
                            (size_t) (end + 2 - head) - strcspn(head, "\r"));
        if (header_value(r.headers, "Content-Length", cl, sizeof(cl)))
                need = strtoul(cl, NULL, 10);
        if (need > SRV_BODY_MAX)
                need = SRV_BODY_MAX;
        if (header_value(r.headers, "Expect", ex, sizeof(ex)) &&
            strcasecmp(ex, "100-continue") == 0)
                if (write_all(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25) < 0) {
                        srv_req_release(&r); /* the client is gone */
                        return;
                }
        r.body = calloc(1, need + 1);
        if (!r.target || !r.headers || !r.body) {
                srv_req_release(&r);
                return;
        }
        body_have = have - (size_t) (end + 4 - head);
        memcpy(r.body, end + 4, MIN(body_have, need));
        while (body_have < need) {
                ssize_t k = read_some(fd, r.body + body_have, need - body_have);

                if (k <= 0)
                        break;
                body_have += (size_t) k;
        }

        if (s->respond)
                s->respond(s, &r, &status, &answer);
        else
                answer = strdup(s->answer ? s->answer : "");
        (void) pthread_mutex_lock(&s->lock);
        if (s->n_reqs < SRV_REQS_MAX)
                s->reqs[s->n_reqs++] = r;
        else
                srv_req_release(&r);
        (void) pthread_mutex_unlock(&s->lock);

        if (s->silent) {
                /* Wait for the client to hang up (its timeout) or for the test to end. */
                struct pollfd p[2] = {{.fd = fd, .events = POLLIN},
                                      {.fd = s->stop_fd, .events = POLLIN}};

                (void) poll(p, 2, -1);
                return;
        }
        (void) snprintf(line, sizeof(line),
                        "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
                        "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                        status, answer ? strlen(answer) : 0);
        if (write_all(fd, line, strlen(line)) < 0 || !answer) {
                /* The client is gone, or there is no body to send. */
                return;
        }
        if (write_all(fd, answer, strlen(answer)) < 0) {
                /* The client is gone: its request fails, as the test expects then. */
        }
}

static void *srv_main(void *userdata)
{
        struct srv *s = userdata;

        for (;;) {
                struct pollfd p[2] = {{.fd = s->listen_fd, .events = POLLIN},
                                      {.fd = s->stop_fd, .events = POLLIN}};
                struct timeval tv = {.tv_sec = 10};
                int fd;

                /* No timeout: the test's stop_fd ends the wait. */
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (p[1].revents)
                        break;
                fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
                if (fd < 0)
                        continue;
                /* A bound on a broken client; curl sends the whole request at once. */
                (void) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
                srv_handle(s, fd);
                (void) close(fd);
        }
        return NULL;
}

static struct srv *srv_start(void)
{
        struct srv *s = calloc(1, sizeof(*s));
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t alen = sizeof(a);

        assert_non_null(s);
        s->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(s->listen_fd >= 0);
        assert_int_equal(bind(s->listen_fd, (struct sockaddr *) &a, sizeof(a)), 0);
        assert_int_equal(listen(s->listen_fd, 16), 0);
        assert_int_equal(getsockname(s->listen_fd, (struct sockaddr *) &a, &alen), 0);
        s->port = ntohs(a.sin_port);
        (void) snprintf(s->base, sizeof(s->base), "http://127.0.0.1:%d", s->port);
        s->stop_fd = eventfd(0, EFD_CLOEXEC);
        assert_true(s->stop_fd >= 0);
        assert_int_equal(pthread_mutex_init(&s->lock, NULL), 0);
        s->status = 200;
        assert_int_equal(pthread_create(&s->th, NULL, srv_main, s), 0);
        return s;
}

static void srv_stop(struct srv *s)
{
        uint64_t one = 1;

        if (!s)
                return;
        assert_int_equal(write(s->stop_fd, &one, sizeof(one)), (ssize_t) sizeof(one));
        assert_int_equal(pthread_join(s->th, NULL), 0);
        for (size_t i = 0; i < s->n_reqs; i++)
                srv_req_release(&s->reqs[i]);
        (void) close(s->listen_fd);
        (void) close(s->stop_fd);
        (void) pthread_mutex_destroy(&s->lock);
        free(s);
}

/* A port nothing listens on (bound, then closed). */
static int dead_port(void)
{
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t alen = sizeof(a);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        assert_true(fd >= 0);
        assert_int_equal(bind(fd, (struct sockaddr *) &a, sizeof(a)), 0);
        assert_int_equal(getsockname(fd, (struct sockaddr *) &a, &alen), 0);
        (void) close(fd);
        return ntohs(a.sin_port);
}

static void assert_header(const struct srv_req *r, const char *name, const char *value)
{
        char v[512];

        assert_non_null(header_value(r->headers, name, v, sizeof(v)));
        assert_string_equal(v, value);
}

static void assert_no_header(const struct srv_req *r, const char *name)
{
        char v[512];

        assert_null(header_value(r->headers, name, v, sizeof(v)));
}

/* The recorded body equals the JSON @expect (a new reference, consumed). */
static void assert_body_json(const struct srv_req *r, json_t *expect)
{
        json_t *got = json_loads(r->body, 0, NULL);

        assert_non_null(expect);
        assert_non_null(got);
        if (!json_equal(got, expect)) {
                char *g = json_dumps(got, JSON_SORT_KEYS), *e = json_dumps(expect, JSON_SORT_KEYS);

                print_error("body %s\nexpected %s\n", g, e);
                free(g);
                free(e);
                fail();
        }
        json_decref(got);
        json_decref(expect);
}

/* --- helpers --- */

static struct web_provider provider(enum web_provider_kind k, const char *name, const char *base,
                                    const char *key)
{
        return (struct web_provider){.kind = k, .name = name, .base_url = base, .key = key};
}

static json_t *search(const struct web_provider *p, const char *q, int limit)
{
        json_t *res = NULL;

        assert_int_equal(web_search_run(p, q, limit, 5 * USEC_PER_SEC, USEC_INFINITY, -1, &res), 0);
        assert_non_null(res);
        return res;
}

/* The error text of a failure result (borrowed from @res). */
static const char *failure_text(json_t *res)
{
        assert_true(json_is_false(json_object_get(res, "success")));
        assert_true(json_is_string(json_object_get(res, "error")));
        return json_string_value(json_object_get(res, "error"));
}

/* The web list of a success result (borrowed). */
static json_t *web_list(json_t *res)
{
        json_t *web = json_object_get(json_object_get(res, "data"), "web");

        if (!json_is_true(json_object_get(res, "success")))
                print_error("not a success: %s\n",
                            json_string_value(json_object_get(res, "error")));
        assert_true(json_is_true(json_object_get(res, "success")));
        assert_true(json_is_array(web));
        return web;
}

static void assert_entry(json_t *web, size_t i, const char *title, const char *url,
                         const char *desc)
{
        json_t *e = json_array_get(web, i);

        assert_non_null(e);
        assert_int_equal(json_object_size(e), 4);
        assert_string_equal(json_string_value(json_object_get(e, "title")), title);
        assert_string_equal(json_string_value(json_object_get(e, "url")), url);
        assert_string_equal(json_string_value(json_object_get(e, "description")), desc);
        assert_int_equal(json_integer_value(json_object_get(e, "position")), (json_int_t) i + 1);
}

/* --- search: each provider's request and mapping --- */

static void test_search_searxng_request_and_score_order(void **state)
{
        struct srv *s = srv_start();
        char base[96];
        struct web_provider p;
        json_t *res, *web;

        /* A base URL with a path and a trailing '/'. */
        (void) snprintf(base, sizeof(base), "%s/searx/", s->base);
        p = provider(WEB_PROVIDER_SEARXNG, "SearXNG", base, NULL);
        s->answer = "{\"results\": ["
                    "{\"title\": \"low\", \"url\": \"https://l.example\", \"content\": \"c-low\","
                    " \"score\": 0.5},"
                    "{\"title\": \"none\", \"url\": \"https://n.example\"},"
                    "{\"title\": \"high\", \"url\": \"https://h.example\", \"content\": \"c-high\","
                    " \"score\": 3},"
                    "{\"title\": \"mid1\", \"url\": \"https://m1.example\", \"content\": \"c-m1\","
                    " \"score\": 1.5},"
                    "{\"title\": \"mid2\", \"url\": \"https://m2.example\", \"content\": \"c-m2\","
                    " \"score\": 1.5},"
                    "\"not an object\","
                    "{\"url\": \"https://z.example\", \"title\": 7, \"score\": -1}]}";
        res = search(&p, QUERY, 10);
        assert_int_equal(s->n_reqs, 1);
        assert_string_equal(s->reqs[0].method, "GET");
        assert_string_equal(s->reqs[0].target,
                            "/searx/search?q=" QUERY_ENC "&format=json&pageno=1");
        assert_string_equal(s->reqs[0].body, "");
        assert_no_header(&s->reqs[0], "Authorization");

        web = web_list(res);
        assert_int_equal(json_array_size(web), 6);
        assert_entry(web, 0, "high", "https://h.example", "c-high");
        assert_entry(web, 1, "mid1", "https://m1.example", "c-m1"); /* stable on ties */
        assert_entry(web, 2, "mid2", "https://m2.example", "c-m2");
        assert_entry(web, 3, "low", "https://l.example", "c-low");
        assert_entry(web, 4, "none", "https://n.example", ""); /* no score: 0 */
        assert_entry(web, 5, "", "https://z.example", "");     /* title not a string */
        json_decref(res);

        /* The limit cuts after sorting. */
        res = search(&p, "q", 2);
        web = web_list(res);
        assert_int_equal(json_array_size(web), 2);
        assert_entry(web, 0, "high", "https://h.example", "c-high");
        assert_entry(web, 1, "mid1", "https://m1.example", "c-m1");
        json_decref(res);
        srv_stop(s);
}

static void test_search_brave_request_and_mapping(void **state)
{
        struct srv *s = srv_start();
        struct web_provider p = provider(WEB_PROVIDER_BRAVE, "Brave", s->base, KEY_BRAVE);
        json_t *res, *web;

        s->answer =
                "{\"type\": \"search\", \"web\": {\"results\": ["
                "{\"title\": \"A\", \"url\": \"https://a.example\", \"description\": \"da\"},"
                "{\"title\": \"B\", \"url\": \"https://b.example\"},"
                "{\"title\": \"C\", \"url\": \"https://c.example\", \"description\": \"dc\"}]}}";
        res = search(&p, QUERY, 2);
        assert_int_equal(s->n_reqs, 1);
        assert_string_equal(s->reqs[0].method, "GET");
        assert_string_equal(s->reqs[0].target, "/res/v1/web/search?q=" QUERY_ENC "&count=2");
        assert_header(&s->reqs[0], "X-Subscription-Token", KEY_BRAVE);
        assert_header(&s->reqs[0], "Accept", "application/json");
        web = web_list(res);
        assert_int_equal(json_array_size(web), 2); /* the provider sent 3: cut */
        assert_entry(web, 0, "A", "https://a.example", "da");
        assert_entry(web, 1, "B", "https://b.example", "");
        json_decref(res);

        /* count is at most 20; an answer without "web" is no results. */
        s->answer = "{\"type\": \"search\", \"query\": {\"original\": \"q\"}}";
        res = search(&p, "q", 100);
        assert_string_equal(s->reqs[1].target, "/res/v1/web/search?q=q&count=20");
        assert_int_equal(json_array_size(web_list(res)), 0);
        json_decref(res);
        srv_stop(s);
}

static void test_search_tavily_request_and_mapping(void **state)
{
        struct srv *s = srv_start();
        char base[96];
        struct web_provider p;
        json_t *res, *web;

        (void) snprintf(base, sizeof(base), "%s/", s->base);
        p = provider(WEB_PROVIDER_TAVILY, "Tavily", base, KEY_TAVILY);
        s->answer = "{\"query\": \"q\", \"results\": ["
                    "{\"title\": \"T1\", \"url\": \"https://t1.example\", \"content\": \"ct1\","
                    " \"score\": 0.1},"
                    "{\"url\": \"https://t2.example\", \"content\": \"ct2\", \"score\": 0.9}]}";
        res = search(&p, QUERY, 50);
        assert_int_equal(s->n_reqs, 1);
        assert_string_equal(s->reqs[0].method, "POST");
        assert_string_equal(s->reqs[0].target, "/search");
        assert_header(&s->reqs[0], "Content-Type", "application/json");
        assert_header(&s->reqs[0], "Authorization", "Bearer " KEY_TAVILY);
        assert_body_json(&s->reqs[0], json_pack("{s:s, s:s, s:i}", "api_key", KEY_TAVILY, "query",
                                                QUERY, "max_results", 20));
        web = web_list(res);
        assert_int_equal(json_array_size(web), 2);
        /* Only SearXNG is sorted by score: the provider's order stays. */
        assert_entry(web, 0, "T1", "https://t1.example", "ct1");
        assert_entry(web, 1, "", "https://t2.example", "ct2");
        json_decref(res);
        srv_stop(s);
}

static void test_search_firecrawl_request_and_mapping(void **state)
{
        struct srv *s = srv_start();
        struct web_provider p =
                provider(WEB_PROVIDER_FIRECRAWL, "Firecrawl", s->base, KEY_FIRECRAWL);
        _cleanup_free_ char *answer = NULL, *long_md = malloc(2001), *cut = NULL;
        json_t *res, *web, *a;

        /* 1000 two-byte characters: the description keeps 500 characters (1000 bytes). */
        assert_non_null(long_md);
        for (size_t i = 0; i < 1000; i++)
                memcpy(long_md + 2 * i, "\xc3\xa9", 2);
        long_md[2000] = '\0';
        cut = strndup(long_md, 1000);
        a = json_pack("{s:b, s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}, {s:s}]}", "success", 1, "data",
                      "title", "F1", "url", "https://f1.example", "description", "df1", "title",
                      "F2", "url", "https://f2.example", "markdown", long_md, "url",
                      "https://f3.example");
        assert_non_null(a);
        answer = json_dumps(a, 0);
        json_decref(a);
        s->answer = answer;
        res = search(&p, QUERY, 7);
        assert_string_equal(s->reqs[0].method, "POST");
        assert_string_equal(s->reqs[0].target, "/v1/search");
        assert_header(&s->reqs[0], "Authorization", "Bearer " KEY_FIRECRAWL);
        assert_body_json(&s->reqs[0], json_pack("{s:s, s:i}", "query", QUERY, "limit", 7));
        web = web_list(res);
        assert_int_equal(json_array_size(web), 3);
        assert_entry(web, 0, "F1", "https://f1.example", "df1");
        assert_entry(web, 1, "F2", "https://f2.example", cut);
        assert_entry(web, 2, "", "https://f3.example", "");
        json_decref(res);

        /* {"data": {"web": [...]}}, and no key (self-hosted): no Authorization header. */
        p.key = NULL;
        s->answer = "{\"success\": true, \"data\": {\"web\": [{\"title\": \"W\", \"url\": "
                    "\"https://w.example\", \"description\": \"dw\"}]}}";
        res = search(&p, "q", 1);
        assert_no_header(&s->reqs[1], "Authorization");
        web = web_list(res);
        assert_int_equal(json_array_size(web), 1);
        assert_entry(web, 0, "W", "https://w.example", "dw");
        json_decref(res);
        srv_stop(s);
}

static void test_search_exa_request_and_mapping(void **state)
{
        struct srv *s = srv_start();
        struct web_provider p = provider(WEB_PROVIDER_EXA, "Exa", s->base, KEY_EXA);
        json_t *res, *web;

        s->answer = "{\"results\": ["
                    "{\"title\": \"E1\", \"url\": \"https://e1.example\", "
                    "\"highlights\": [\"one\", \"two\", 3, \"three\"], \"text\": \"ignored\"},"
                    "{\"title\": \"E2\", \"url\": \"https://e2.example\", \"highlights\": [], "
                    "\"text\": \"the text\"},"
                    "{\"title\": \"E3\", \"url\": \"https://e3.example\"}]}";
        res = search(&p, QUERY, 3);
        assert_string_equal(s->reqs[0].method, "POST");
        assert_string_equal(s->reqs[0].target, "/search");
        assert_header(&s->reqs[0], "x-api-key", KEY_EXA);
        assert_header(&s->reqs[0], "Content-Type", "application/json");
        assert_no_header(&s->reqs[0], "Authorization");
        assert_body_json(&s->reqs[0], json_pack("{s:s, s:i, s:{s:b}}", "query", QUERY, "numResults",
                                                3, "contents", "highlights", 1));
        web = web_list(res);
        assert_int_equal(json_array_size(web), 3);
        assert_entry(web, 0, "E1", "https://e1.example", "one two three");
        assert_entry(web, 1, "E2", "https://e2.example", "the text");
        assert_entry(web, 2, "E3", "https://e3.example", "");
        json_decref(res);
        srv_stop(s);
}

/* --- search: failures --- */

static void test_search_http_error_status(void **state)
{
        struct srv *s = srv_start();
        struct web_provider p = provider(WEB_PROVIDER_SEARXNG, "SearXNG", s->base, NULL);
        struct web_provider b = provider(WEB_PROVIDER_BRAVE, "Brave", s->base, KEY_BRAVE);
        json_t *res;

        s->status = 500;
        s->answer = "{\"results\": []}";
        res = search(&p, "q", 5);
        assert_string_equal(failure_text(res), "SearXNG returned HTTP 500");
        assert_int_equal(json_object_size(res), 2);
        json_decref(res);

        s->status = 401;
        s->answer = "{\"error\": \"bad token " KEY_BRAVE "\"}";
        res = search(&b, "q", 5);
        assert_string_equal(failure_text(res), "Brave returned HTTP 401");
        json_decref(res);
        srv_stop(s);
}

static void test_search_not_json_and_wrong_shape(void **state)
{
        struct srv *s = srv_start();
        struct web_provider t = provider(WEB_PROVIDER_TAVILY, "Tavily", s->base, KEY_TAVILY);
        struct web_provider e = provider(WEB_PROVIDER_EXA, "Exa", s->base, KEY_EXA);
        struct web_provider b = provider(WEB_PROVIDER_BRAVE, "Brave", s->base, KEY_BRAVE);
        struct web_provider f = provider(WEB_PROVIDER_FIRECRAWL, "Firecrawl", s->base, NULL);
        json_t *res;

        s->answer = "<html>Bad gateway</html>";
        res = search(&t, "q", 5);
        assert_string_equal(failure_text(res), "Tavily returned an answer that is not JSON");
        json_decref(res);

        s->answer = "";
        res = search(&e, "q", 5);
        assert_string_equal(failure_text(res), "Exa returned an answer that is not JSON");
        json_decref(res);

        s->answer = "{\"results\": {\"a\": 1}}";
        res = search(&e, "q", 5);
        assert_string_equal(failure_text(res),
                            "Exa returned an unexpected answer (no results list)");
        json_decref(res);

        s->answer = "[1, 2]";
        res = search(&t, "q", 5);
        assert_string_equal(failure_text(res),
                            "Tavily returned an unexpected answer (no results list)");
        json_decref(res);

        s->answer = "42";
        res = search(&b, "q", 5);
        assert_string_equal(failure_text(res),
                            "Brave returned an unexpected answer (no results list)");
        json_decref(res);

        s->answer = "{\"success\": false, \"error\": \"quota\"}";
        res = search(&f, "q", 5);
        assert_string_equal(failure_text(res),
                            "Firecrawl returned an unexpected answer (no results list)");
        json_decref(res);

        /* Duplicate keys are accepted (the last one wins in jansson). */
        s->answer = "{\"results\": [{\"title\": \"x\", \"title\": \"y\", \"url\": \"u\"}]}";
        res = search(&t, "q", 5);
        assert_int_equal(json_array_size(web_list(res)), 1);
        json_decref(res);
        srv_stop(s);
}

static void test_search_connection_refused(void **state)
{
        char base[64];
        struct web_provider p;
        json_t *res;
        const char *err;

        (void) snprintf(base, sizeof(base), "http://127.0.0.1:%d", dead_port());
        p = provider(WEB_PROVIDER_BRAVE, "Brave", base, KEY_BRAVE);
        res = search(&p, "q", 5);
        err = failure_text(res);
        assert_true(strncmp(err, "Brave request failed: ", 22) == 0);
        assert_true(strlen(err) > 22);
        assert_null(strstr(err, KEY_BRAVE));
        assert_null(strstr(err, "X-Subscription-Token"));
        json_decref(res);
}

static void test_search_timeout_and_cancel(void **state)
{
        struct srv *s = srv_start();
        struct web_provider p = provider(WEB_PROVIDER_SEARXNG, "SearXNG", s->base, NULL);
        json_t *res = NULL;
        usec_t t0 = now_usec();
        uint64_t one = 1;
        int cfd;

        s->silent = true;
        assert_int_equal(web_search_run(&p, "q", 5, 300 * USEC_PER_MSEC, USEC_INFINITY, -1, &res),
                         0);
        assert_true(now_usec() - t0 < 10 * USEC_PER_SEC); /* hang guard */
        assert_true(strncmp(failure_text(res), "SearXNG request failed: ", 24) == 0);
        assert_non_null(strstr(failure_text(res), "timed out"));
        json_decref(res);
        res = NULL;

        /* The deadline bounds the request too. */
        t0 = now_usec();
        assert_int_equal(web_search_run(&p, "q", 5, 30 * USEC_PER_SEC,
                                        now_usec() + 300 * USEC_PER_MSEC, -1, &res),
                         0);
        assert_true(now_usec() - t0 < 10 * USEC_PER_SEC); /* hang guard */
        assert_true(strncmp(failure_text(res), "SearXNG request failed: ", 24) == 0);
        json_decref(res);
        res = NULL;

        /* An execution cancelled while the request waits. */
        cfd = eventfd(0, EFD_CLOEXEC);
        assert_true(cfd >= 0);
        assert_int_equal(write(cfd, &one, sizeof(one)), (ssize_t) sizeof(one));
        t0 = now_usec();
        assert_int_equal(web_search_run(&p, "q", 5, 30 * USEC_PER_SEC, USEC_INFINITY, cfd, &res),
                         0);
        assert_true(now_usec() - t0 < 10 * USEC_PER_SEC); /* hang guard */
        assert_string_equal(failure_text(res), "SearXNG request failed: cancelled");
        json_decref(res);
        (void) close(cfd);
        srv_stop(s);
}

/* --- extraction --- */

/* Firecrawl /v1/scrape: the page named in the request, or a failure for "fail" URLs. */
static void firecrawl_scrape(struct srv *s, const struct srv_req *r, int *status, char **body)
{
        json_t *req = json_loads(r->body, 0, NULL);
        const char *url = json_string_value(json_object_get(req, "url"));
        json_t *a;

        if (!url)
                url = "";
        if (strstr(url, "/http500")) {
                *status = 500;
                *body = strdup("{}");
        } else if (strstr(url, "/refused")) {
                *status = 200;
                *body = strdup("{\"success\": false, \"error\": \"Site is blocked\"}");
        } else {
                char md[256];

                (void) snprintf(md, sizeof(md), "# page %s", url);
                a = json_pack("{s:b, s:{s:s, s:{s:s, s:s}}}", "success", 1, "data", "markdown", md,
                              "metadata", "title", "Title", "sourceURL", url);
                *body = json_dumps(a, 0);
                json_decref(a);
        }
        json_decref(req);
}

static void assert_extract_entry(json_t *a, size_t i, const char *url, const char *title,
                                 const char *content, const char *error)
{
        json_t *e = json_array_get(a, i);

        assert_non_null(e);
        assert_int_equal(json_object_size(e), 4);
        assert_string_equal(json_string_value(json_object_get(e, "url")), url);
        assert_string_equal(json_string_value(json_object_get(e, "title")), title);
        assert_string_equal(json_string_value(json_object_get(e, "content")), content);
        if (error)
                assert_string_equal(json_string_value(json_object_get(e, "error")), error);
        else
                assert_true(json_is_null(json_object_get(e, "error")));
}

static void test_extract_firecrawl(void **state)
{
        struct srv *s = srv_start();
        struct web_provider p =
                provider(WEB_PROVIDER_FIRECRAWL, "Firecrawl", s->base, KEY_FIRECRAWL);
        const char *urls[] = {"https://a.example/x", "https://b.example/http500",
                              "https://c.example/refused"};
        json_t *a = NULL;
        bool seen[3] = {};

        s->respond = firecrawl_scrape;
        assert_int_equal(
                web_extract_with_provider(&p, urls, 3, 5 * USEC_PER_SEC, USEC_INFINITY, -1, &a), 0);
        assert_int_equal(s->n_reqs, 3);
        for (size_t i = 0; i < 3; i++) {
                json_t *b = json_loads(s->reqs[i].body, 0, NULL);
                const char *u = json_string_value(json_object_get(b, "url"));

                assert_string_equal(s->reqs[i].method, "POST");
                assert_string_equal(s->reqs[i].target, "/v1/scrape");
                assert_header(&s->reqs[i], "Authorization", "Bearer " KEY_FIRECRAWL);
                assert_non_null(u);
                for (size_t k = 0; k < 3; k++)
                        if (strcmp(u, urls[k]) == 0)
                                seen[k] = true;
                assert_body_json(&s->reqs[i],
                                 json_pack("{s:s, s:[s]}", "url", u, "formats", "markdown"));
                json_decref(b);
        }
        assert_true(seen[0] && seen[1] && seen[2]);
        assert_int_equal(json_array_size(a), 3);
        assert_extract_entry(a, 0, urls[0], "Title", "# page https://a.example/x", NULL);
        assert_extract_entry(a, 1, urls[1], "", "", "Firecrawl returned HTTP 500");
        assert_extract_entry(a, 2, urls[2], "", "",
                             "Firecrawl could not scrape the page: Site is blocked");
        json_decref(a);
        srv_stop(s);
}

static void test_extract_tavily(void **state)
{
        struct srv *s = srv_start();
        struct web_provider p = provider(WEB_PROVIDER_TAVILY, "Tavily", s->base, KEY_TAVILY);
        const char *urls[] = {"https://a.example", "https://b.example/p", "https://c.example/q"};
        json_t *a = NULL;

        s->answer = "{\"results\": [{\"url\": \"https://b.example/p\", \"raw_content\": \"B!\"},"
                    "{\"url\": \"https://a.example/\", \"raw_content\": \"A!\", \"title\": "
                    "\"At\"}],"
                    "\"failed_results\": [{\"url\": \"https://c.example/q\", \"error\": "
                    "\"boom\"}]}";
        assert_int_equal(
                web_extract_with_provider(&p, urls, 3, 5 * USEC_PER_SEC, USEC_INFINITY, -1, &a), 0);
        assert_int_equal(s->n_reqs, 1);
        assert_string_equal(s->reqs[0].target, "/extract");
        assert_header(&s->reqs[0], "Authorization", "Bearer " KEY_TAVILY);
        assert_body_json(&s->reqs[0], json_pack("{s:s, s:[s, s, s]}", "api_key", KEY_TAVILY, "urls",
                                                urls[0], urls[1], urls[2]));
        assert_extract_entry(a, 0, urls[0], "At", "A!", NULL);
        assert_extract_entry(a, 1, urls[1], "", "B!", NULL);
        assert_extract_entry(a, 2, urls[2], "", "", "boom");
        json_decref(a);

        /* A URL in neither list; and a whole-request failure reaches every entry. */
        s->answer = "{\"results\": [], \"failed_results\": []}";
        assert_int_equal(
                web_extract_with_provider(&p, urls, 1, 5 * USEC_PER_SEC, USEC_INFINITY, -1, &a), 0);
        assert_extract_entry(a, 0, urls[0], "", "", "not returned by Tavily");
        json_decref(a);
        s->status = 502;
        assert_int_equal(
                web_extract_with_provider(&p, urls, 2, 5 * USEC_PER_SEC, USEC_INFINITY, -1, &a), 0);
        assert_extract_entry(a, 0, urls[0], "", "", "Tavily returned HTTP 502");
        assert_extract_entry(a, 1, urls[1], "", "", "Tavily returned HTTP 502");
        json_decref(a);
        srv_stop(s);
}

static void test_extract_exa(void **state)
{
        struct srv *s = srv_start();
        struct web_provider p = provider(WEB_PROVIDER_EXA, "Exa", s->base, KEY_EXA);
        const char *urls[] = {"https://a.example/1", "https://b.example/2"};
        json_t *a = NULL;

        s->answer = "{\"results\": [{\"id\": \"https://a.example/1\", \"url\": "
                    "\"https://a.example/1\", \"title\": \"A1\", \"text\": \"text a\"}]}";
        assert_int_equal(
                web_extract_with_provider(&p, urls, 2, 5 * USEC_PER_SEC, USEC_INFINITY, -1, &a), 0);
        assert_string_equal(s->reqs[0].target, "/contents");
        assert_header(&s->reqs[0], "x-api-key", KEY_EXA);
        assert_body_json(&s->reqs[0],
                         json_pack("{s:[s, s], s:b}", "urls", urls[0], urls[1], "text", 1));
        assert_extract_entry(a, 0, urls[0], "A1", "text a", NULL);
        assert_extract_entry(a, 1, urls[1], "", "", "not returned by Exa");
        json_decref(a);

        s->answer = "nope";
        assert_int_equal(
                web_extract_with_provider(&p, urls, 1, 5 * USEC_PER_SEC, USEC_INFINITY, -1, &a), 0);
        assert_extract_entry(a, 0, urls[0], "", "", "Exa returned an answer that is not JSON");
        json_decref(a);
        srv_stop(s);
}

/* --- resolution --- */

static void cfg_init(struct ptc_config *c)
{
        assert_int_equal(config_init(c), 0);
}

static void keys(const char *a, const char *b)
{
        char *l[3] = {(char *) a, (char *) b, NULL};

        if (!a)
                l[0] = NULL;
        assert_int_equal(web_keys_take(l), 0);
}

static void test_resolve_none_configured(void **state)
{
        struct ptc_config c;
        struct web_provider p;
        struct diag d = {};

        cfg_init(&c);
        web_keys_clear();
        assert_int_equal(web_search_provider_resolve(&c, &p, &d), -ENOENT);
        assert_string_equal(d.message,
                            "web_search needs a search provider: set web.search_provider "
                            "(searxng, brave, tavily, firecrawl, exa) and its API key in the "
                            "environment (BRAVE_API_KEY, TAVILY_API_KEY, FIRECRAWL_API_KEY, "
                            "EXA_API_KEY), or web.searxng_url / SEARXNG_URL");
        /* The extraction provider defaults to the builtin one. */
        assert_int_equal(web_extract_provider_resolve(&c, &p, &d), 0);
        assert_int_equal(p.kind, WEB_PROVIDER_NONE);
        config_release(&c);
}

static void test_resolve_auto_order(void **state)
{
        struct ptc_config c;
        struct web_provider p;
        struct diag d = {};

        cfg_init(&c);
        /* Brave last, SearXNG before it. */
        keys("BRAVE_SEARCH_API_KEY=" KEY_BRAVE, NULL);
        assert_int_equal(web_search_provider_resolve(&c, &p, &d), 0);
        assert_int_equal(p.kind, WEB_PROVIDER_BRAVE);
        assert_string_equal(p.name, "Brave");
        assert_string_equal(p.key, KEY_BRAVE);
        assert_string_equal(p.base_url, "https://api.search.brave.com");

        c.searxng_url = strdup("http://127.0.0.1:8888/");
        assert_int_equal(web_search_provider_resolve(&c, &p, &d), 0);
        assert_int_equal(p.kind, WEB_PROVIDER_SEARXNG);
        assert_string_equal(p.base_url, "http://127.0.0.1:8888/");
        assert_null(p.key);

        keys("EXA_API_KEY=" KEY_EXA, "BRAVE_API_KEY=" KEY_BRAVE);
        assert_int_equal(web_search_provider_resolve(&c, &p, &d), 0);
        assert_int_equal(p.kind, WEB_PROVIDER_EXA);
        assert_string_equal(p.base_url, "https://api.exa.ai");

        keys("EXA_API_KEY=" KEY_EXA, "TAVILY_API_KEY=" KEY_TAVILY);
        assert_int_equal(web_search_provider_resolve(&c, &p, &d), 0);
        assert_int_equal(p.kind, WEB_PROVIDER_TAVILY);
        assert_string_equal(p.key, KEY_TAVILY);

        /* Firecrawl first, also keyless with FIRECRAWL_API_URL. */
        keys("FIRECRAWL_API_URL=http://127.0.0.1:3002", "TAVILY_API_KEY=" KEY_TAVILY);
        assert_int_equal(web_search_provider_resolve(&c, &p, &d), 0);
        assert_int_equal(p.kind, WEB_PROVIDER_FIRECRAWL);
        assert_string_equal(p.base_url, "http://127.0.0.1:3002");
        assert_null(p.key);

        /* The config's URL wins over FIRECRAWL_API_URL. */
        c.firecrawl_url = strdup("http://fc.internal");
        keys("FIRECRAWL_API_URL=http://127.0.0.1:3002", "FIRECRAWL_API_KEY=" KEY_FIRECRAWL);
        assert_int_equal(web_search_provider_resolve(&c, &p, &d), 0);
        assert_int_equal(p.kind, WEB_PROVIDER_FIRECRAWL);
        assert_string_equal(p.base_url, "http://fc.internal");
        assert_string_equal(p.key, KEY_FIRECRAWL);

        /* SEARXNG_URL from the environment (getenv fallback: never taken). */
        web_keys_clear();
        free(c.searxng_url);
        c.searxng_url = NULL;
        free(c.firecrawl_url);
        c.firecrawl_url = NULL;
        assert_int_equal(setenv("SEARXNG_URL", "http://sx.internal", 1), 0);
        assert_int_equal(web_search_provider_resolve(&c, &p, &d), 0);
        assert_int_equal(p.kind, WEB_PROVIDER_SEARXNG);
        assert_string_equal(p.base_url, "http://sx.internal");
        assert_int_equal(unsetenv("SEARXNG_URL"), 0);
        config_release(&c);
}

static void test_resolve_explicit_provider(void **state)
{
        struct ptc_config c;
        struct web_provider p;
        struct diag d = {};

        cfg_init(&c);
        keys("TAVILY_API_KEY=" KEY_TAVILY, "EXA_API_KEY=" KEY_EXA);
        c.search_provider = strdup("exa");
        c.exa_url = strdup("http://exa.internal/");
        assert_int_equal(web_search_provider_resolve(&c, &p, &d), 0);
        assert_int_equal(p.kind, WEB_PROVIDER_EXA);
        assert_string_equal(p.name, "Exa");
        assert_string_equal(p.base_url, "http://exa.internal/");
        assert_string_equal(p.key, KEY_EXA);

        free(c.search_provider);
        c.search_provider = strdup("brave");
        assert_int_equal(web_search_provider_resolve(&c, &p, &d), -EINVAL);
        assert_string_equal(d.message, "web.search_provider is 'brave' but BRAVE_API_KEY is not "
                                       "set in the environment");

        free(c.search_provider);
        c.search_provider = strdup("searxng");
        assert_int_equal(web_search_provider_resolve(&c, &p, &d), -EINVAL);
        assert_string_equal(d.message, "web.search_provider is 'searxng' but web.searxng_url (or "
                                       "SEARXNG_URL) is not set");

        free(c.search_provider);
        c.search_provider = strdup("firecrawl");
        assert_int_equal(web_search_provider_resolve(&c, &p, &d), -EINVAL);
        assert_string_equal(d.message, "web.search_provider is 'firecrawl' but FIRECRAWL_API_KEY "
                                       "is not set in the environment");
        /* Named explicitly with a configured URL: a keyless self-hosted Firecrawl. */
        c.firecrawl_url = strdup("http://fc.internal");
        assert_int_equal(web_search_provider_resolve(&c, &p, &d), 0);
        assert_int_equal(p.kind, WEB_PROVIDER_FIRECRAWL);
        assert_null(p.key);

        /* The environment is read through web_key_get()'s getenv fallback too. */
        web_keys_clear();
        free(c.search_provider);
        c.search_provider = strdup("brave");
        assert_int_equal(setenv("BRAVE_API_KEY", KEY_BRAVE, 1), 0);
        assert_int_equal(web_search_provider_resolve(&c, &p, &d), 0);
        assert_string_equal(p.key, KEY_BRAVE);
        assert_int_equal(unsetenv("BRAVE_API_KEY"), 0);

        /* Extraction. */
        keys("TAVILY_API_KEY=" KEY_TAVILY, NULL);
        c.extract_provider = strdup("tavily");
        assert_int_equal(web_extract_provider_resolve(&c, &p, &d), 0);
        assert_int_equal(p.kind, WEB_PROVIDER_TAVILY);
        assert_string_equal(p.base_url, "https://api.tavily.com");
        free(c.extract_provider);
        c.extract_provider = strdup("exa");
        assert_int_equal(web_extract_provider_resolve(&c, &p, &d), -EINVAL);
        assert_string_equal(d.message, "web.extract_provider is 'exa' but EXA_API_KEY is not set "
                                       "in the environment");
        web_keys_clear();
        config_release(&c);
}

/* --- the tool --- */

static json_t *tool_call(const struct ptc_config *c, const char *args_json)
{
        struct tool_ctx ctx = {
                .config = c,
                .cwd = "/",
                .deadline = USEC_INFINITY,
                .cancel_fd = -1,
        };
        json_t *args = json_loads(args_json, 0, NULL), *res = NULL;

        assert_non_null(args);
        assert_int_equal(tool_def_web_search.run(NULL, &ctx, args, &res), 0);
        json_decref(args);
        assert_non_null(res);
        return res;
}

static void test_tool_arguments(void **state)
{
        static const struct {
                const char *args;
                int limit;
        } cases[] = {
                {"{\"query\": \"q\"}", 5},
                {"{\"query\": \"q\", \"limit\": null}", 5},
                {"{\"query\": \"q\", \"limit\": 9}", 9},
                {"{\"query\": \"q\", \"limit\": \"7\"}", 7},
                {"{\"query\": \"q\", \"limit\": 0}", 1},
                {"{\"query\": \"q\", \"limit\": -4}", 1},
                {"{\"query\": \"q\", \"limit\": 500}", 100},
                {"{\"query\": \"q\", \"limit\": 3.5}", 5},
                {"{\"query\": \"q\", \"limit\": \"many\"}", 5},
                {"{\"query\": \"q\", \"limit\": [1]}", 5},
        };
        struct srv *s = srv_start();
        struct ptc_config c;
        json_t *res;

        cfg_init(&c);
        web_keys_clear();
        c.search_provider = strdup("firecrawl");
        c.firecrawl_url = strdup(s->base);
        s->answer = "{\"success\": true, \"data\": []}";
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                json_t *b;

                res = tool_call(&c, cases[i].args);
                assert_int_equal(json_array_size(web_list(res)), 0);
                json_decref(res);
                assert_int_equal(s->n_reqs, i + 1);
                b = json_loads(s->reqs[i].body, 0, NULL);
                assert_non_null(b);
                if (json_integer_value(json_object_get(b, "limit")) != cases[i].limit)
                        print_error("case %zu: %s\n", i, cases[i].args);
                assert_int_equal(json_integer_value(json_object_get(b, "limit")), cases[i].limit);
                json_decref(b);
        }

        /* A bad query never reaches the provider. */
        for (size_t i = 0; i < 4; i++) {
                static const char *bad[] = {"{}", "{\"query\": \"\"}", "{\"query\": 5}",
                                            "{\"query\": null}"};

                res = tool_call(&c, bad[i]);
                assert_string_equal(failure_text(res),
                                    "web_search needs a non-empty 'query' string");
                json_decref(res);
        }
        assert_int_equal(s->n_reqs, ELEMENTSOF(cases));

        /* The configured timeout applies. */
        s->silent = true;
        c.web_timeout = 0.3;
        res = tool_call(&c, "{\"query\": \"q\"}");
        assert_non_null(strstr(failure_text(res), "Firecrawl request failed: "));
        json_decref(res);
        config_release(&c);
        srv_stop(s);
}

static void test_tool_provider_errors(void **state)
{
        struct ptc_config c;
        json_t *res;

        cfg_init(&c);
        web_keys_clear();
        res = tool_call(&c, "{\"query\": \"q\"}");
        assert_int_equal(json_object_size(res), 2);
        assert_true(strncmp(failure_text(res), "web_search needs a search provider: ", 36) == 0);
        json_decref(res);

        c.search_provider = strdup("tavily");
        res = tool_call(&c, "{\"query\": \"q\"}");
        assert_string_equal(failure_text(res), "web.search_provider is 'tavily' but "
                                               "TAVILY_API_KEY is not set in the environment");
        json_decref(res);
        config_release(&c);
}

static void test_tool_definition(void **state)
{
        json_t *schema = json_loads(tool_def_web_search.parameters_json, 0, NULL);
        json_t *props = json_object_get(schema, "properties"), *req;

        assert_string_equal(tool_def_web_search.name, "web_search");
        assert_string_equal(tool_def_web_search.description,
                            "Search the web; returns titles, URLs and descriptions of the top "
                            "results.");
        assert_non_null(schema);
        assert_string_equal(
                json_string_value(json_object_get(json_object_get(props, "query"), "type")),
                "string");
        assert_int_equal(
                json_integer_value(json_object_get(json_object_get(props, "limit"), "default")), 5);
        req = json_pack("[s]", "query");
        assert_true(json_equal(json_object_get(schema, "required"), req));
        json_decref(req);
        json_decref(schema);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_search_searxng_request_and_score_order),
                cmocka_unit_test(test_search_brave_request_and_mapping),
                cmocka_unit_test(test_search_tavily_request_and_mapping),
                cmocka_unit_test(test_search_firecrawl_request_and_mapping),
                cmocka_unit_test(test_search_exa_request_and_mapping),
                cmocka_unit_test(test_search_http_error_status),
                cmocka_unit_test(test_search_not_json_and_wrong_shape),
                cmocka_unit_test(test_search_connection_refused),
                cmocka_unit_test(test_search_timeout_and_cancel),
                cmocka_unit_test(test_extract_firecrawl),
                cmocka_unit_test(test_extract_tavily),
                cmocka_unit_test(test_extract_exa),
                cmocka_unit_test(test_resolve_none_configured),
                cmocka_unit_test(test_resolve_auto_order),
                cmocka_unit_test(test_resolve_explicit_provider),
                cmocka_unit_test(test_tool_arguments),
                cmocka_unit_test(test_tool_provider_errors),
                cmocka_unit_test(test_tool_definition),
        };

        /* Only the keys a test gives count: none from the environment running the tests. */
        for (size_t i = 0; web_key_names[i]; i++)
                (void) unsetenv(web_key_names[i]);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
