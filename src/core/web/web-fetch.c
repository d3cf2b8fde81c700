/* SPDX-License-Identifier: MIT */
#include "core/web/web-fetch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <curl/curl.h>

#include "ptc-version.h"

#include "basic/buf.h"
#include "basic/fd-util.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "core/web/net-guard.h"
#include "core/web/web-fetch-internal.h"
#include "core/web/web-idn.h"

#define USER_AGENT "ptc/" PTC_VERSION " (+web_extract)"
#define BLOCKED_TEXT "Blocked: URL targets a private or internal network address"

/*
 * Longest URL accepted. Browsers and servers give up around 8-16 KiB; a longer
 * "URL" from a script is a mistake, and curl's own limit (8 MB) is far too much
 * to copy around per request.
 */
#define WEB_FETCH_URL_MAX 16384

/* Longest scheme named in an error (curl's own limit is 40). */
#define WEB_FETCH_SCHEME_MAX 40

/*
 * curl_global_init() is not guaranteed thread-safe on every TLS backend, so it
 * runs once. Its result is written once inside the once-routine and only read
 * afterwards.
 */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result = CURLE_FAILED_INIT;

/*
 * curl maps the internationalised host of a redirect it follows itself, with libidn2, from
 * the locale's charset; ptc's locale stays "C", where that refuses every name that is not
 * ASCII. So the fetching thread reads UTF-8 while curl works (uselocale(): that thread only,
 * LC_CTYPE only). (locale_t) 0 when C.UTF-8 is missing: such a redirect then ends in
 * "invalid URL". The script's own URLs are mapped before curl sees them (web-idn.h), locale
 * or not, and so are web_extract's hops, which it follows itself (web-redirects.h): curl
 * follows only the search providers' redirects.
 */
static locale_t utf8_ctype;

static void curl_init_once(void)
{
        curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
        utf8_ctype = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t) 0);
}

int web_fetch_set_error(struct web_response *r, const char *fmt, ...)
{
        char *s = NULL;
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (n < 0)
                return -ENOMEM;
        free(r->error);
        r->error = s;
        return 0;
}

/*
 * Scheme, host (as written in the URL: IPv6 in brackets; NULL when the URL has
 * none) and port (the scheme's default when absent, 0 when unknown) of @url.
 * Returns 0, -EINVAL for a URL curl does not parse, -ENOMEM. Unknown schemes
 * parse, so the caller can name them. Strings are freed with curl_free().
 */
int web_fetch_url_parts(const char *url, char **ret_scheme, char **ret_host, long *ret_port)
{
        CURLU *u = curl_url();
        char *scheme = NULL, *host = NULL, *port = NULL;
        CURLUcode uc;
        int r = 0;

        if (!u)
                return -ENOMEM;
        uc = curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME);
        if (uc == CURLUE_OK)
                uc = curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
        if (uc == CURLUE_OK) {
                uc = curl_url_get(u, CURLUPART_HOST, &host, 0);
                /* mailto: and friends: named as unsupported by the caller. */
                if (uc == CURLUE_NO_HOST || (uc == CURLUE_OK && !host[0])) {
                        curl_free(host);
                        host = NULL;
                        uc = CURLUE_OK;
                }
        }
        if (uc == CURLUE_OK && ret_port) {
                /* An unknown scheme has no default port: that is not an error. */
                if (curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK)
                        *ret_port = strtol(port, NULL, 10);
                else
                        *ret_port = 0;
        }
        if (uc == CURLUE_OUT_OF_MEMORY)
                r = -ENOMEM;
        else if (uc != CURLUE_OK)
                r = -EINVAL;
        if (r == 0) {
                if (ret_scheme)
                        *ret_scheme = TAKE_PTR(scheme);
                if (ret_host)
                        *ret_host = TAKE_PTR(host);
        }
        curl_free(scheme);
        curl_free(host);
        curl_free(port);
        curl_url_cleanup(u);
        return r;
}

/*
 * The scheme of a URL curl does not parse because it has no "//" (mailto:,
 * javascript:, data:, links a script may well pick out of a page), lowercased
 * into @out. "host:8080/x" is not taken for a scheme: a digit after the colon
 * says it is a port.
 */
static bool opaque_scheme(const char *url, char *out, size_t size)
{
        size_t n = 0;

        if (!(url[0] >= 'a' && url[0] <= 'z') && !(url[0] >= 'A' && url[0] <= 'Z'))
                return false;
        while (url[n] && url[n] != ':') {
                char c = url[n];

                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '+' || c == '-' || c == '.'))
                        return false;
                if (n + 1 >= size)
                        return false;
                out[n] = (char) (c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
                n++;
        }
        if (url[n] != ':' || (url[n + 1] >= '0' && url[n + 1] <= '9'))
                return false;
        out[n] = '\0';
        return strcmp(out, "http") != 0 && strcmp(out, "https") != 0;
}

/* The URL curl is given: the request's, its host in ASCII. Borrowed. */
static const char *xfer_url(const struct xfer *x)
{
        return x->ascii_url ?: x->req->url;
}

/* The URL curl is working on now (after redirects, the latest one). Borrowed. */
const char *web_fetch_current_url(struct xfer *x)
{
        char *u = NULL;

        if (x->easy && curl_easy_getinfo(x->easy, CURLINFO_EFFECTIVE_URL, &u) == CURLE_OK && u &&
            u[0])
                return u;
        return xfer_url(x);
}

/* Is @host, which may not be ASCII yet, a metadata name? True, too, when it does not map. */
static bool host_is_metadata(const char *host)
{
        _cleanup_free_ char *ascii = NULL;

        if (web_idn_host_to_ascii(host, &ascii, NULL) < 0)
                return true;
        return net_guard_host_is_metadata(ascii ?: host);
}

/* Is @host (from a URL: IPv6 in brackets) a literal address the guard refuses? */
static bool literal_is_refused(const char *host, bool allow_private)
{
        char tmp[INET6_ADDRSTRLEN + 2];
        size_t n = strlen(host);

        if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
                struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};

                if (n - 2 >= sizeof(tmp))
                        return false; /* not an address curl can connect to as such */
                memcpy(tmp, host + 1, n - 2);
                tmp[n - 2] = '\0';
                if (inet_pton(AF_INET6, tmp, &in6.sin6_addr) != 1)
                        return false; /* zone ids and the like: the socket check decides */
                return !net_guard_check((const struct sockaddr *) &in6, sizeof(in6), allow_private);
        }

        /*
         * IPv4 in every spelling the resolver reads without DNS ("127.1", "0x7f.1",
         * "2130706433"), not only dotted decimal: curl rewrites those in dotted decimal, but
         * not a host it percent-decoded ("http://%31%32%37.1/" has the host "127.1"), and
         * getaddrinfo() then reads it as 127.0.0.1 when curl connects. inet_aton() takes
         * those spellings and a little more (anything after a blank), never fewer.
         */
        struct sockaddr_in in = {.sin_family = AF_INET};
        if (inet_aton(host, &in.sin_addr) == 0) {
                /* "127.0.0.1." too: the policy reads it as that address (url_host()). */
                size_t len = net_guard_host_len(host);

                if (len == n || len >= sizeof(tmp))
                        return false;
                memcpy(tmp, host, len);
                tmp[len] = '\0';
                if (inet_aton(tmp, &in.sin_addr) == 0)
                        return false;
        }
        return !net_guard_check((const struct sockaddr *) &in, sizeof(in), allow_private);
}

/*
 * Every connection curl makes goes through here, for the first URL and after
 * each redirect, so the address judged is the address connected: no gap for
 * DNS rebinding between a check and the connect. Refusing returns
 * CURL_SOCKET_BAD before a socket exists, so the peer never sees a packet.
 * The socket is created here (also without the guard) to make it
 * close-on-exec: tools spawn processes concurrently with transfers.
 */
static curl_socket_t open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *addr)
{
        struct xfer *x = clientp;
        int fd;

        if (x->req->guard) {
                char *host = NULL;
                bool refused;

                if (purpose != CURLSOCKTYPE_IPCXN ||
                    !net_guard_check(&addr->addr, addr->addrlen, x->req->allow_private)) {
                        x->blocked = true;
                        return CURL_SOCKET_BAD;
                }
                /*
                 * A redirect may name a metadata host; its address may be one
                 * only the name gives away (a resolver mapping it into an
                 * allowed private range). curl keeps a redirect's name as the
                 * server wrote it ("ｍｅｔａｄａｔａ.goog"), so it is judged by
                 * the ASCII name curl resolved. On -ENOMEM, or a name that does
                 * not map as curl's did, refuse: fail closed.
                 */
                if (web_fetch_url_parts(web_fetch_current_url(x), NULL, &host, NULL) == -ENOMEM) {
                        x->blocked = true;
                        return CURL_SOCKET_BAD;
                }
                refused = host && host_is_metadata(host);
                curl_free(host);
                if (refused) {
                        x->blocked = true;
                        return CURL_SOCKET_BAD;
                }
        }

        fd = socket(addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);
        return fd < 0 ? CURL_SOCKET_BAD : fd;
}

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
        struct xfer *x = userdata;
        size_t n = size * nmemb;
        size_t room = x->body.cap - x->body.len;
        size_t take = MIN(n, room);

        if (take > 0 && buf_append(&x->body, ptr, take) < 0) {
                /* -E2BIG cannot happen (take <= room); this is -ENOMEM. */
                x->nomem = true;
                return 0;
        }
        if (take < n) {
                /*
                 * Keep the first max_body bytes and stop the transfer: a
                 * short count makes curl end it with CURLE_WRITE_ERROR, which
                 * complete() turns back into a success. Return 0, not @take,
                 * so the value can never be CURL_WRITEFUNC_PAUSE.
                 */
                x->resp->truncated = true;
                return 0;
        }
        return n;
}

static bool header_is_safe(const char *h)
{
        /* A CR or LF would let a header value smuggle further headers. */
        return strpbrk(h, "\r\n") == NULL && strchr(h, ':') != NULL;
}

static bool has_header(char *const *headers, const char *name)
{
        size_t n = strlen(name);

        for (char *const *h = headers; h && *h; h++)
                if (strncasecmp(*h, name, n) == 0 && (*h)[n] == ':')
                        return true;
        return false;
}

/*
 * An option that a libcurl built without the feature refuses, where that
 * libcurl then does not do the thing we wanted to switch off either (proxies)
 * or we can do without (compression).
 */
static CURLcode optional(CURLcode rc)
{
        return rc == CURLE_UNKNOWN_OPTION || rc == CURLE_NOT_BUILT_IN ? CURLE_OK : rc;
}

static long msec_long(usec_t us)
{
        return (long) MIN(us / USEC_PER_MSEC, (usec_t) LONG_MAX);
}

/*
 * The options of one transfer. Returns CURLE_OK or the first failure (only
 * CURLE_OUT_OF_MEMORY is expected: the options below exist in every libcurl
 * this file builds with, or are optional()).
 */
static CURLcode set_options(struct xfer *x, bool post, long max_redirects)
{
        const struct web_request *req = x->req;
        CURL *e = x->easy;
        CURLcode rc = CURLE_OK;

        rc = rc ?: curl_easy_setopt(e, CURLOPT_URL, xfer_url(x));
        rc = rc ?: curl_easy_setopt(e, CURLOPT_PRIVATE, x);
        rc = rc ?: curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
        /* Threads: no SIGALRM for DNS timeouts, and no signal handler games. */
        rc = rc ?: curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500 /* 7.85.0 */
        rc = rc ?: curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
        rc = rc ?: curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
        /* FIXME: drop once libcurl 7.85 is the minimum */
        rc = rc
                     ?: curl_easy_setopt(e, CURLOPT_PROTOCOLS,
                                         (long) (CURLPROTO_HTTP | CURLPROTO_HTTPS));
        rc = rc
                     ?: curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS,
                                         (long) (CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
        if (max_redirects < 0) {
                rc = rc ?: curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
        } else {
                rc = rc ?: curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
                rc = rc ?: curl_easy_setopt(e, CURLOPT_MAXREDIRS, max_redirects);
        }
        rc = rc ?: curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, msec_long(x->connect_timeout));
        rc = rc ?: curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, msec_long(x->timeout));
        /*
         * "": every encoding this libcurl decodes (gzip, deflate, br, zstd);
         * a libcurl without zlib sends none, which is fine.
         */
        rc = rc ?: optional(curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, ""));
        /*
         * Environment proxies would make curl connect to the proxy, and the
         * guard would judge the proxy's address instead of the target's.
         */
        rc = rc ?: optional(curl_easy_setopt(e, CURLOPT_PROXY, ""));
        rc = rc ?: optional(curl_easy_setopt(e, CURLOPT_NOPROXY, "*"));
        rc = rc ?: curl_easy_setopt(e, CURLOPT_USERAGENT, USER_AGENT);
        rc = rc ?: curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
        rc = rc ?: curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
        rc = rc ?: curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_socket);
        rc = rc ?: curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, x);
        if (req->guard) {
                /*
                 * The guard sees only the connects it is asked about. A
                 * connection left in the multi handle's cache by an unguarded
                 * request (a search provider on localhost, say) or by a
                 * guarded one with allow_private would be reused without a
                 * check, so a guarded transfer always opens its own
                 * connections (also after a redirect to the same host) and
                 * never leaves one behind for others.
                 */
                rc = rc ?: curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
                rc = rc ?: curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
        }
#if LIBCURL_VERSION_NUM >= 0x075700 /* 7.87.0 */
        /*
         * Without this, removing a transfer that is still resolving waits for
         * the resolver thread (getaddrinfo cannot be interrupted), which could
         * hold a cancelled call far past its deadline. With it the thread is
         * detached and finishes on its own.
         */
        rc = rc ?: curl_easy_setopt(e, CURLOPT_QUICK_EXIT, 1L);
#endif
        if (post) {
                rc = rc
                             ?: curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
                                                 (curl_off_t) (req->body ? req->body_len : 0));
                rc = rc ?: curl_easy_setopt(e, CURLOPT_POSTFIELDS, req->body ? req->body : "");
        }
        if (x->headers)
                rc = rc ?: curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->headers);
        return rc;
}

/*
 * Validate @x's request and start it on @multi. Returns 0 (started, or ended
 * at once with an error in x->resp and x->done set) or -ENOMEM.
 */
static int xfer_start(struct xfer *x, CURLM *multi, usec_t now, usec_t deadline)
{
        const struct web_request *req = x->req;
        struct web_response *resp = x->resp;
        char *scheme = NULL, *host = NULL;
        const char *reason = NULL;
        long max_redirects;
        bool post;
        int r;

        x->done = true; /* until the transfer is handed to curl */

        if (!req->method || strcasecmp(req->method, "GET") == 0)
                post = false;
        else if (strcasecmp(req->method, "POST") == 0)
                post = true;
        else
                return web_fetch_set_error(resp, "unsupported HTTP method (only GET and POST)");

        for (char *const *h = req->headers; h && *h; h++)
                if (!header_is_safe(*h))
                        /* Never quote it: headers carry API keys. */
                        return web_fetch_set_error(resp, "invalid request header");

        if (!req->url || strnlen(req->url, WEB_FETCH_URL_MAX + 1) > WEB_FETCH_URL_MAX)
                return web_fetch_set_error(resp,
                                           req->url ? "invalid URL (too long)" : "invalid URL");
        /* Before any check: the guard and curl see the same name. */
        r = web_idn_url_to_ascii(req->url, &x->ascii_url, &reason);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return web_fetch_set_error(
                        resp, "invalid URL (its host is no valid domain name: %s)", reason);
        r = web_fetch_url_parts(xfer_url(x), &scheme, &host, NULL);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                char other[WEB_FETCH_SCHEME_MAX + 1];

                if (opaque_scheme(xfer_url(x), other, sizeof(other)))
                        return web_fetch_set_error(
                                resp, "unsupported URL scheme '%s' (only http and https)", other);
                return web_fetch_set_error(resp, "invalid URL");
        }
        if (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0) {
                /* curl's parser allows only [A-Za-z0-9+.-] in a scheme, at most 40. */
                r = web_fetch_set_error(resp, "unsupported URL scheme '%s' (only http and https)",
                                        scheme);
                curl_free(scheme);
                curl_free(host);
                return r;
        }
        curl_free(scheme);
        if (!host)
                return web_fetch_set_error(resp, "invalid URL");

        if (req->guard &&
            (net_guard_host_is_metadata(host) || literal_is_refused(host, req->allow_private))) {
                curl_free(host);
                resp->blocked = true;
                return web_fetch_set_error(resp, BLOCKED_TEXT);
        }
        curl_free(host);

        x->timeout = req->timeout ? req->timeout : WEB_FETCH_TIMEOUT_USEC;
        if (deadline != USEC_INFINITY)
                x->timeout = MIN(x->timeout, deadline > now ? deadline - now : 0);
        /* curl counts in ms, and 0 ms would mean "no timeout" to it. */
        if (x->timeout < USEC_PER_MSEC)
                return web_fetch_set_timeout_error(resp, x->timeout);
        x->connect_timeout = MIN(WEB_FETCH_CONNECT_TIMEOUT_USEC, x->timeout);
        max_redirects = req->max_redirects == 0 ? WEB_FETCH_MAX_REDIRECTS : req->max_redirects;
        buf_init(&x->body, req->max_body ? req->max_body : WEB_FETCH_MAX_BODY);

        /*
         * A POST body larger than 1 KiB makes curl send "Expect: 100-continue"
         * and wait up to a second for the server's go-ahead; most APIs never
         * send one.
         */
        if (post && !has_header(req->headers, "Expect")) {
                x->headers = curl_slist_append(NULL, "Expect:");
                if (!x->headers)
                        return -ENOMEM;
        }
        for (char *const *h = req->headers; h && *h; h++) {
                struct curl_slist *l = curl_slist_append(x->headers, *h);

                if (!l)
                        return -ENOMEM;
                x->headers = l;
        }

        x->easy = curl_easy_init();
        if (!x->easy)
                return -ENOMEM;
        CURLcode rc = set_options(x, post, max_redirects);
        if (rc == CURLE_OUT_OF_MEMORY)
                return -ENOMEM;
        if (rc != CURLE_OK)
                return web_fetch_set_error(resp, "request failed: %s", curl_easy_strerror(rc));

        CURLMcode mc = curl_multi_add_handle(multi, x->easy);
        if (mc == CURLM_OUT_OF_MEMORY)
                return -ENOMEM;
        if (mc != CURLM_OK)
                return web_fetch_set_error(resp, "request failed: %s", curl_multi_strerror(mc));
        x->done = false;
        return 0;
}

/* Copy what curl knows about the response so far into x->resp. */
static int take_info(struct xfer *x)
{
        struct web_response *resp = x->resp;
        char *s = NULL;
        long status = 0;

        if (curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK)
                resp->status = status;
        if (!resp->final_url &&
            curl_easy_getinfo(x->easy, CURLINFO_EFFECTIVE_URL, &s) == CURLE_OK && s) {
                /* Not redirected: the URL as the script wrote it, not its ASCII host. */
                bool as_given = x->ascii_url && strcmp(s, x->ascii_url) == 0;

                resp->final_url = strdup(as_given ? x->req->url : s);
                if (!resp->final_url)
                        return -ENOMEM;
        }
        s = NULL;
        if (!resp->content_type &&
            curl_easy_getinfo(x->easy, CURLINFO_CONTENT_TYPE, &s) == CURLE_OK && s) {
                resp->content_type = strdup(s);
                if (!resp->content_type)
                        return -ENOMEM;
        }
        return 0;
}

/*
 * With max_redirects -1, where a redirect response points, for the caller to judge and
 * follow (web-redirects.h): curl resolved its Location against the request's URL as it would
 * have followed it (CURLINFO_REDIRECT_URL). A scheme other than http and https ends the
 * request here, as curl's own check does when it follows. Returns 1 when the response was a
 * redirect (resp->redirect_url or resp->error is set), 0 when not, -ENOMEM.
 */
static int take_redirect(struct xfer *x)
{
        struct web_response *resp = x->resp;
        char *loc = NULL, *scheme = NULL;
        int r;

        if (x->req->max_redirects >= 0 ||
            curl_easy_getinfo(x->easy, CURLINFO_REDIRECT_URL, &loc) != CURLE_OK || !loc || !loc[0])
                return 0;
        r = web_fetch_url_parts(loc, &scheme, NULL, NULL);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                char other[WEB_FETCH_SCHEME_MAX + 1];

                if (opaque_scheme(loc, other, sizeof(other)))
                        r = web_fetch_set_error(
                                resp,
                                "redirect to unsupported URL scheme '%s' (only http and "
                                "https)",
                                other);
                else
                        r = web_fetch_set_error(resp, "invalid URL");
                return r < 0 ? r : 1;
        }
        if (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0)
                r = web_fetch_set_error(
                        resp, "redirect to unsupported URL scheme '%s' (only http and https)",
                        scheme);
        else if (strnlen(loc, WEB_FETCH_URL_MAX + 1) > WEB_FETCH_URL_MAX)
                r = web_fetch_set_error(resp, "invalid URL (too long)");
        else {
                resp->redirect_url = strdup(loc);
                r = resp->redirect_url ? 0 : -ENOMEM;
        }
        curl_free(scheme);
        return r < 0 ? r : 1;
}

/* A transfer curl finished with @rc. Returns 0 or -ENOMEM. */
static int complete(struct xfer *x, CURLcode rc)
{
        struct web_response *resp = x->resp;
        int r;

        x->done = true;
        r = take_info(x);
        if (r < 0)
                return r;
        if (x->nomem) {
                buf_release(&x->body);
                return -ENOMEM;
        }
        if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && resp->truncated)) {
                r = take_redirect(x);
                if (r != 0) {
                        /* The redirect's own body is nobody's business. */
                        buf_release(&x->body);
                        resp->truncated = false;
                        return r < 0 ? r : 0;
                }
                resp->body = buf_steal(&x->body, &resp->body_len);
                return resp->body ? 0 : -ENOMEM;
        }
        buf_release(&x->body);
        resp->truncated = false;
        /*
         * With several addresses (happy eyeballs) curl may try a refused one
         * and then connect to an allowed one; only a transfer that could not
         * connect at all counts as blocked.
         */
        if (x->blocked && rc == CURLE_COULDNT_CONNECT) {
                resp->blocked = true;
                return web_fetch_set_error(resp, BLOCKED_TEXT);
        }
        return web_fetch_set_curl_error(x, rc);
}

/* Stop an unfinished transfer: "cancelled", or a timeout when @cancelled is false. */
static int abandon(struct xfer *x, bool cancelled)
{
        int r;

        x->done = true;
        r = take_info(x);
        if (r < 0)
                return r;
        buf_release(&x->body);
        x->resp->truncated = false;
        if (cancelled)
                return web_fetch_set_error(x->resp, "cancelled");
        return web_fetch_set_timeout_error(x->resp, x->timeout);
}

static bool cancel_requested(int cancel_fd)
{
        /* POLLHUP/POLLERR count too: a closed cancel pipe must not be ignored. */
        return fd_readable_now(cancel_fd);
}

/*
 * Drive @multi until every transfer has ended, the deadline passed or the
 * cancel fd became readable. Returns 0 or -ENOMEM.
 */
static int run(CURLM *multi, struct xfer *xs, size_t n, usec_t deadline, int cancel_fd)
{
        struct curl_waitfd extra = {.fd = cancel_fd, .events = CURL_WAIT_POLLIN};
        CURLMcode failed = CURLM_OK;
        usec_t longest = 0;
        int running = 0, r;

        for (size_t i = 0; i < n; i++)
                if (!xs[i].done)
                        longest = MAX(longest, xs[i].timeout);

        for (;;) {
                CURLMcode mc = curl_multi_perform(multi, &running);
                struct CURLMsg *msg;
                int left;
                long wait_ms;
                usec_t now;

                if (mc == CURLM_OUT_OF_MEMORY)
                        return -ENOMEM;
                while ((msg = curl_multi_info_read(multi, &left))) {
                        struct xfer *x = NULL;
                        char *priv = NULL;

                        if (msg->msg != CURLMSG_DONE)
                                continue;
                        (void) curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
                        x = (struct xfer *) priv;
                        if (!x || x->done)
                                continue;
                        r = complete(x, msg->data.result);
                        if (r < 0)
                                return r;
                }
                if (mc != CURLM_OK) {
                        failed = mc;
                        break;
                }
                if (running == 0)
                        break;

                /* Each transfer has a curl timeout, so curl always names a time to wake. */
                if (curl_multi_timeout(multi, &wait_ms) != CURLM_OK || wait_ms < 0)
                        wait_ms = (long) MIN(longest / USEC_PER_MSEC + 1, (usec_t) INT_MAX);
                now = now_usec();
                if (deadline != USEC_INFINITY) {
                        usec_t left_ms;

                        if (now >= deadline)
                                break;
                        left_ms = (deadline - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC;
                        wait_ms = (long) MIN((usec_t) wait_ms, left_ms);
                }
                wait_ms = MIN(wait_ms, (long) INT_MAX);

                mc = curl_multi_poll(multi, cancel_fd >= 0 ? &extra : NULL, cancel_fd >= 0 ? 1 : 0,
                                     (int) wait_ms, NULL);
                if (mc == CURLM_OUT_OF_MEMORY)
                        return -ENOMEM;
                if (mc != CURLM_OK) {
                        failed = mc;
                        break;
                }
                if (cancel_requested(cancel_fd)) {
                        for (size_t i = 0; i < n; i++)
                                if (!xs[i].done) {
                                        r = abandon(&xs[i], true);
                                        if (r < 0)
                                                return r;
                                }
                        return 0;
                }
        }

        /* The deadline passed (or curl failed as a whole): whatever is left ends here. */
        for (size_t i = 0; i < n; i++)
                if (!xs[i].done) {
                        r = abandon(&xs[i], false);
                        if (r >= 0 && failed != CURLM_OK)
                                r = web_fetch_set_error(xs[i].resp, "request failed: %s",
                                                        curl_multi_strerror(failed));
                        if (r < 0)
                                return r;
                }
        return 0;
}

static void xfers_free(CURLM *multi, struct xfer *xs, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                struct xfer *x = &xs[i];

                if (x->easy) {
                        if (multi)
                                (void) curl_multi_remove_handle(multi, x->easy);
                        curl_easy_cleanup(x->easy);
                }
                curl_slist_free_all(x->headers);
                free(x->ascii_url);
                buf_release(&x->body);
        }
        free(xs);
}

int web_fetch_many(const struct web_request *reqs, size_t n, struct web_response *resps,
                   usec_t deadline, int cancel_fd)
{
        locale_t caller_locale = (locale_t) 0;
        struct xfer *xs;
        CURLM *multi;
        usec_t now;
        int r = 0;

        if (n > WEB_FETCH_MAX_REQUESTS || (n > 0 && (!reqs || !resps)))
                return -EINVAL;
        if (n == 0)
                return 0;
        if (pthread_once(&curl_once, curl_init_once) != 0 || curl_init_result != CURLE_OK)
                return -ENOMEM;

        memset(resps, 0, n * sizeof(*resps));
        xs = calloc(n, sizeof(*xs));
        if (!xs)
                return -ENOMEM;
        multi = curl_multi_init();
        if (!multi) {
                free(xs);
                return -ENOMEM;
        }
        if (utf8_ctype)
                caller_locale = uselocale(utf8_ctype);

        if (cancel_requested(cancel_fd)) {
                for (size_t i = 0; i < n && r >= 0; i++) {
                        xs[i].done = true;
                        r = web_fetch_set_error(&resps[i], "cancelled");
                }
        } else {
                now = now_usec();
                for (size_t i = 0; i < n && r >= 0; i++) {
                        xs[i].req = &reqs[i];
                        xs[i].resp = &resps[i];
                        r = xfer_start(&xs[i], multi, now, deadline);
                }
                if (r >= 0)
                        r = run(multi, xs, n, deadline, cancel_fd);
        }

        xfers_free(multi, xs, n);
        (void) curl_multi_cleanup(multi);
        if (caller_locale)
                (void) uselocale(caller_locale);
        if (r < 0)
                for (size_t i = 0; i < n; i++)
                        web_response_release(&resps[i]);
        return r;
}
