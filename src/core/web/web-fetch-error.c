/* SPDX-License-Identifier: MIT */
/*
 * What a failed transfer says (web-fetch-internal.h): one sentence of ptc's own per curl
 * error, naming the host and never curl's text (which may quote the URL) but for TLS.
 */
#include "core/web/web-fetch-internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Longest TLS detail taken from curl's error buffer into an error text. */
#define WEB_FETCH_TLS_DETAIL_MAX 200

/* "30", "0.3", "1.25": seconds, at millisecond precision, without trailing zeros. */
static void format_secs(char *out, size_t size, usec_t us)
{
        unsigned long long ms = (us + USEC_PER_MSEC / 2) / USEC_PER_MSEC;
        size_t n;

        if (ms % 1000 == 0) {
                (void) snprintf(out, size, "%llu", ms / 1000);
                return;
        }
        (void) snprintf(out, size, "%llu.%03llu", ms / 1000, ms % 1000);
        n = strlen(out);
        while (n > 0 && out[n - 1] == '0')
                out[--n] = '\0';
}

int web_fetch_set_timeout_error(struct web_response *r, usec_t timeout)
{
        char secs[32];

        format_secs(secs, sizeof(secs), timeout);
        return web_fetch_set_error(r, "timed out after %s s", secs);
}

static const char *connect_reason(struct xfer *x)
{
        long err = 0;

        (void) curl_easy_getinfo(x->easy, CURLINFO_OS_ERRNO, &err);
        switch (err) {
        case ECONNREFUSED:
                return "connection refused";
        case ENETUNREACH:
                return "network unreachable";
        case EHOSTUNREACH:
                return "host unreachable";
        case ETIMEDOUT:
                return "timed out";
        default:
                return "connection failed";
        }
}

static bool is_tls_error(CURLcode rc)
{
        switch (rc) {
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_SSL_CIPHER:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_ENGINE_NOTFOUND:
        case CURLE_SSL_ENGINE_SETFAILED:
        case CURLE_SSL_ENGINE_INITFAILED:
        case CURLE_SSL_SHUTDOWN_FAILED:
        case CURLE_SSL_CRL_BADFILE:
        case CURLE_SSL_ISSUER_ERROR:
        case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
        case CURLE_SSL_INVALIDCERTSTATUS:
        case CURLE_USE_SSL_FAILED:
                return true;
        default:
                return false;
        }
}

/*
 * The one sentence for a failed transfer. Only texts written here and the
 * host name go out: curl's error buffer may quote the URL (whose query can
 * hold an API key), so it is used for TLS failures only, where it names the
 * certificate problem and nothing from the request.
 */
int web_fetch_set_curl_error(struct xfer *x, CURLcode rc)
{
        struct web_response *resp = x->resp;
        char *host = NULL, *scheme = NULL;
        long port = 0;
        int r;

        r = web_fetch_url_parts(web_fetch_current_url(x), &scheme, &host, &port);
        if (r == -ENOMEM)
                return r;

        switch (rc) {
        case CURLE_COULDNT_RESOLVE_HOST:
                r = web_fetch_set_error(resp, "could not resolve host '%s'", host ? host : "?");
                break;
        case CURLE_COULDNT_CONNECT:
                r = web_fetch_set_error(resp, "could not connect to '%s:%ld' (%s)",
                                        host ? host : "?", port, connect_reason(x));
                break;
        case CURLE_OPERATION_TIMEDOUT: {
                curl_off_t connect_time = 0, total_time = 0;
                char secs[32];

                (void) curl_easy_getinfo(x->easy, CURLINFO_CONNECT_TIME_T, &connect_time);
                (void) curl_easy_getinfo(x->easy, CURLINFO_TOTAL_TIME_T, &total_time);
                if (connect_time == 0 && x->connect_timeout < x->timeout &&
                    (usec_t) total_time < x->timeout) {
                        format_secs(secs, sizeof(secs), x->connect_timeout);
                        r = web_fetch_set_error(
                                resp, "could not connect to '%s:%ld' (timed out after %s s)",
                                host ? host : "?", port, secs);
                } else
                        r = web_fetch_set_timeout_error(resp, x->timeout);
                break;
        }
        case CURLE_TOO_MANY_REDIRECTS: {
                long max = x->req->max_redirects == 0 ? WEB_FETCH_MAX_REDIRECTS
                                                      : x->req->max_redirects;
                r = web_fetch_set_error(resp, "too many redirects (more than %ld)", max);
                break;
        }
        case CURLE_UNSUPPORTED_PROTOCOL:
                /* The first URL's scheme was checked: this was a redirect. */
                if (scheme)
                        r = web_fetch_set_error(
                                resp,
                                "redirect to unsupported URL scheme '%s' (only http and "
                                "https)",
                                scheme);
                else
                        r = web_fetch_set_error(resp,
                                                "redirect to an unsupported URL scheme (only http "
                                                "and https)");
                break;
        case CURLE_URL_MALFORMAT:
                r = web_fetch_set_error(resp, "invalid URL");
                break;
        case CURLE_GOT_NOTHING:
                r = web_fetch_set_error(resp,
                                        "the server closed the connection without a response");
                break;
        case CURLE_PARTIAL_FILE:
        case CURLE_RECV_ERROR:
        case CURLE_HTTP2:
        case CURLE_HTTP2_STREAM:
                r = web_fetch_set_error(resp, "the server closed the connection early");
                break;
        case CURLE_SEND_ERROR:
                r = web_fetch_set_error(resp,
                                        "could not send the request (the connection was closed)");
                break;
        case CURLE_WEIRD_SERVER_REPLY:
                r = web_fetch_set_error(resp, "the server sent an invalid HTTP response");
                break;
        case CURLE_BAD_CONTENT_ENCODING:
                r = web_fetch_set_error(
                        resp, "could not decode the response body (bad content encoding)");
                break;
        case CURLE_OUT_OF_MEMORY:
                r = -ENOMEM;
                break;
        default:
                if (is_tls_error(rc)) {
                        char detail[WEB_FETCH_TLS_DETAIL_MAX + 1];
                        size_t n = 0;

                        for (const char *p = x->errbuf; *p && n < WEB_FETCH_TLS_DETAIL_MAX; p++)
                                if (*p >= 0x20 && *p < 0x7f)
                                        detail[n++] = *p;
                        detail[n] = '\0';
                        r = web_fetch_set_error(resp, "TLS error with '%s'%s%s%s",
                                                host ? host : "?", n ? " (" : "", detail,
                                                n ? ")" : "");
                } else
                        r = web_fetch_set_error(resp, "request failed: %s", curl_easy_strerror(rc));
                break;
        }
        curl_free(host);
        curl_free(scheme);
        return r;
}
