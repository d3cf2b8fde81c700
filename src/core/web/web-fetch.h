/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * HTTP(S) requests through libcurl, for web_extract (pages named by the
 * script: hostile) and the search providers (URLs from the config: trusted).
 *
 * Every request is bounded: connect timeout, total timeout, the caller's
 * deadline, a body cap, a redirect limit, http/https only (also after
 * redirects). A request may instead leave its redirects to the caller
 * (max_redirects -1): web_extract follows them itself, so that the policy
 * judges each hop before it is fetched (web-redirects.h). Many requests run
 * at once on one curl multi handle, and the wait is event-driven
 * (curl_multi_poll) with the execution's cancel fd as an extra descriptor, so
 * a cancelled execution stops every transfer at once.
 *
 * The SSRF guard (@guard): every address curl is about to connect to, for
 * the first URL and after every redirect, is checked with net_guard_check()
 * in curl's open-socket callback. The address checked is the address
 * connected, so a DNS answer that changes between a check and the connection
 * (rebinding) cannot slip through. Proxies from the environment are ignored
 * (a proxy would make the connected address meaningless for the guard).
 *
 * Threading: web_fetch_many() may run on many threads at once; it keeps no
 * global state besides curl_global_init(), done once (pthread_once).
 *
 * web_fetch_many() is in the web module (web-module.h): core calls it as
 * web_module_get()->fetch_many; only the module and the unit tests link it.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/time-util.h"

/* Defaults when a request leaves the field 0. */
#define WEB_FETCH_MAX_BODY (10u * 1024 * 1024)     /* bytes kept of a body */
#define WEB_FETCH_TIMEOUT_USEC (30 * USEC_PER_SEC) /* whole request */
#define WEB_FETCH_CONNECT_TIMEOUT_USEC (10 * USEC_PER_SEC)
#define WEB_FETCH_MAX_REDIRECTS 5
/* At most this many requests in one web_fetch_many() call. */
#define WEB_FETCH_MAX_REQUESTS 16

struct web_request {
        const char *url;    /* http:// or https:// (anything else: an error result) */
        const char *method; /* "GET" (NULL means GET) or "POST" */
        const char *body;   /* POST body (sent as is) or NULL */
        size_t body_len;
        char *const *headers; /* "Name: value" strv or NULL (e.g. "Content-Type: ...") */
        bool guard;           /* SSRF guard on (script-supplied URLs) */
        bool allow_private;   /* with @guard: private and loopback allowed, metadata never */
        size_t max_body;      /* 0: WEB_FETCH_MAX_BODY */
        usec_t timeout;       /* 0: WEB_FETCH_TIMEOUT_USEC */
        long max_redirects;   /* 0: WEB_FETCH_MAX_REDIRECTS; -1: do not follow, say where
                               * a redirect points (web_response.redirect_url) */
};

struct web_response {
        long status;     /* final HTTP status; 0 when no response arrived */
        char *final_url; /* URL after redirects (owned), or NULL */
        /*
         * max_redirects -1 only: the absolute http(s) URL a redirect response points to
         * (its Location resolved against the request's URL, as curl would follow it;
         * owned), with no body kept; NULL for any other response. A redirect to another
         * scheme is an error instead ("redirect to unsupported URL scheme 'ftp' (only http
         * and https)").
         */
        char *redirect_url;
        char *content_type; /* Content-Type header of the final response (owned) or NULL */
        char *body;         /* owned, NUL-terminated (the NUL not counted), decoded from
                             * gzip/deflate/brotli when the server used them; may be NULL
                             * when empty */
        size_t body_len;
        bool truncated; /* the body was cut at max_body (the transfer was stopped) */
        bool blocked;   /* the SSRF guard refused an address (error says so) */
        char *error;    /* owned; NULL on success (any HTTP status counts as success
                         * here). Otherwise one sentence for the caller, e.g.
                         * "Blocked: URL targets a private or internal network address",
                         * "could not resolve host 'x.invalid'", "timed out after 30 s",
                         * "too many redirects (more than 5)",
                         * "unsupported URL scheme 'ftp' (only http and https)",
                         * "cancelled". Never contains request headers or body. */
};

/*
 * Run @n requests (n <= WEB_FETCH_MAX_REQUESTS) concurrently and fill
 * @resps[0..n) (zeroed by the caller or not; every field is set). Returns 0
 * once every request has finished, failed, timed out or was cancelled (each
 * response says which), or -ENOMEM / -EINVAL (n too large, NULL args) when
 * nothing could run. Waits at most until @deadline (CLOCK_MONOTONIC usec;
 * USEC_INFINITY for none); @cancel_fd (readable = stop; -1 for none) ends
 * every transfer early with error "cancelled".
 *
 * Ownership: @reqs and everything they point to are borrowed for the call;
 * @cancel_fd stays the caller's and is only polled, never read or closed.
 * Each @resps[i] owns its strings afterwards (web_response_release()), also
 * on error results; on a negative return nothing is left to release.
 * Other errors (besides the examples at struct web_response): "invalid URL",
 * "could not connect to 'host:port' (connection refused)", "TLS error with
 * 'host' (...)", "the server closed the connection early", "request failed: ...".
 */
_must_check_ int web_fetch_many(const struct web_request *reqs, size_t n,
                                struct web_response *resps, usec_t deadline, int cancel_fd);

/*
 * Free what @r owns and zero it. NULL-safe. Inline: core and ptc-web.so
 * (web-module.h) each have it; the strings are plain malloc() memory.
 */
static inline void web_response_release(struct web_response *r)
{
        if (!r)
                return;
        free(r->final_url);
        free(r->redirect_url);
        free(r->content_type);
        free(r->body);
        free(r->error);
        memset(r, 0, sizeof(*r));
}
