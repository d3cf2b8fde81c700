/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Between web-fetch.c (the transfers) and web-fetch-error.c (what a failed one says): one
 * transfer's state and the helpers both use. Internal to core/web.
 */

#include <stdbool.h>

#include <curl/curl.h>

#include "basic/buf.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "core/web/web-fetch.h"

struct xfer {
        const struct web_request *req;
        struct web_response *resp;
        CURL *easy; /* NULL when the request ended before curl ran */
        struct curl_slist *headers;
        char *ascii_url; /* req->url with its host mapped to ASCII (web-idn.h), or NULL */
        struct buf body;
        usec_t timeout; /* effective total timeout (request's, cut by the deadline) */
        usec_t connect_timeout;
        bool blocked; /* the open-socket callback refused an address */
        bool nomem;   /* the write callback could not grow the body */
        bool done;    /* resp is final */
        char errbuf[CURL_ERROR_SIZE];
};

/* @r's error := the formatted text (replacing one there). 0 or -ENOMEM. */
int web_fetch_set_error(struct web_response *r, const char *fmt, ...) _printf_(2, 3);

/* @r's error := "timed out after S s" (S: @timeout in seconds, no trailing zeros). */
int web_fetch_set_timeout_error(struct web_response *r, usec_t timeout);

/*
 * Scheme, host (as written in the URL: IPv6 in brackets; NULL when the URL has
 * none) and port (the scheme's default when absent, 0 when unknown) of @url.
 * Returns 0, -EINVAL for a URL curl does not parse, -ENOMEM. Unknown schemes
 * parse, so the caller can name them. Strings are freed with curl_free().
 */
int web_fetch_url_parts(const char *url, char **ret_scheme, char **ret_host, long *ret_port);

/* The URL curl is working on now (after redirects, the latest one). Borrowed. */
const char *web_fetch_current_url(struct xfer *x);

/* @x's response error := the one sentence for curl's @rc. 0 or -ENOMEM. */
int web_fetch_set_curl_error(struct xfer *x, CURLcode rc);
