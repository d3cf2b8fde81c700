/* SPDX-License-Identifier: MIT */
/*
 * The one export of ptc-web.so (web-module.h): the fetcher, the HTML
 * converter, and curl's URL helpers, whose results are copied into malloc()
 * memory so core frees them without knowing curl.
 */

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "basic/macro.h"
#include "core/web/html-markdown.h"
#include "core/web/web-fetch.h"
#include "core/web/web-module.h"
#include "ptc-version.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(char *, curl_free);

static char *url_escape(const char *s, size_t n)
{
        _cleanup_(curl_freep) char *q = NULL;

        /* Its handle is only used on non-ASCII hosts (and ignored since curl 7.82): none. */
        if (n > INT_MAX)
                return NULL;
        q = curl_easy_escape(NULL, s, (int) n);
        return q ? strdup(q) : NULL;
}

static char *url_unescape(const char *s)
{
        _cleanup_(curl_freep) char *d = NULL;
        int len = 0;

        d = curl_easy_unescape(NULL, s, 0, &len);
        if (!d)
                return NULL;
        /* A decoded NUL ends the string, as it did when curl's copy was used directly. */
        return strdup(d);
}

static bool url_has_password(const char *url)
{
        _cleanup_(curl_freep) char *pw = NULL;
        CURLU *u = curl_url();
        bool found = false;

        if (!u)
                return false;
        if (curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) == CURLUE_OK &&
            curl_url_get(u, CURLUPART_PASSWORD, &pw, 0) == CURLUE_OK && pw && pw[0])
                found = true;
        curl_url_cleanup(u);
        return found;
}

static char *url_host(const char *url)
{
        _cleanup_(curl_freep) char *host = NULL;
        CURLU *u = curl_url();
        char *ret = NULL;

        if (!u)
                return NULL;
        if (curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) == CURLUE_OK &&
            curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK && host && host[0]) {
                size_t n = strlen(host);

                if (host[0] == '[' && n > 2 && host[n - 1] == ']')
                        ret = strndup(host + 1, n - 2);
                else
                        ret = strdup(host);
                for (char *p = ret; p && *p; p++)
                        if (*p >= 'A' && *p <= 'Z')
                                *p = (char) (*p - 'A' + 'a');
        }
        curl_url_cleanup(u);
        return ret;
}

__attribute__((visibility("default"))) const struct web_module ptc_web_module_v1 = {
        .size = sizeof(struct web_module),
        .version = PTC_VERSION,
        .request_size = sizeof(struct web_request),
        .response_size = sizeof(struct web_response),
        .fetch_many = web_fetch_many,
        .html_to_markdown = html_to_markdown,
        .url_escape = url_escape,
        .url_unescape = url_unescape,
        .url_has_password = url_has_password,
        .url_host = url_host,
};
