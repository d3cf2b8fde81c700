/* SPDX-License-Identifier: MIT */
/*
 * The one export of ptc-web.so (web-module.h): the fetcher, the HTML
 * converter, and curl's URL helpers, whose results are copied into malloc()
 * memory so core frees them without knowing curl.
 */

#include "core/web/web-module.h"

#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "basic/macro.h"
#include "core/web/html-markdown.h"
#include "core/web/net-guard.h"
#include "core/web/web-fetch.h"
#include "core/web/web-idn.h"
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

/*
 * One spelling, the one a policy rule names, for each host curl would connect to: lower case,
 * without brackets, without the trailing dot ("localhost." is "localhost"), an IPv4-mapped
 * IPv6 address as the IPv4 address it reaches ("::ffff:127.0.0.1" is "127.0.0.1"), an IPv4
 * address in dotted decimal ("127.1", "0x7f.1", "2130706433" and "%31%32%37.1" are
 * "127.0.0.1"), an internationalised name in ASCII as web_extract fetches it ("Bücher.de" is
 * "xn--bcher-kva.de", "①②⑦.0.0.1" is "127.0.0.1": web-idn.h). A name that is not ASCII and
 * no valid domain name stays as written: web_extract refuses to fetch it.
 */
static char *url_host(const char *url)
{
        _cleanup_(curl_freep) char *host = NULL;
        CURLU *u = curl_url();
        char v4[INET_ADDRSTRLEN];
        struct in_addr a4;
        CURLUcode uc;
        char *ret = NULL;
        size_t n;

        if (!u)
                return NULL;
        uc = curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME);
        if (uc == CURLUE_OK)
                uc = curl_url_get(u, CURLUPART_HOST, &host, 0);
        curl_url_cleanup(u);
        if (uc != CURLUE_OK || !host || !host[0])
                return NULL;
        n = strlen(host);
        if (host[0] == '[' && n > 2 && host[n - 1] == ']') {
                struct in6_addr a6;

                host[n - 1] = '\0';
                if (inet_pton(AF_INET6, host + 1, &a6) == 1 && IN6_IS_ADDR_V4MAPPED(&a6) &&
                    inet_ntop(AF_INET, &a6.s6_addr[12], v4, sizeof(v4)))
                        return strdup(v4);
                ret = strdup(host + 1);
        } else {
                _cleanup_free_ char *ascii = NULL;
                char *name = host;

                if (web_idn_host_to_ascii(host, &ascii, NULL) > 0)
                        name = ascii;
                name[net_guard_host_len(name)] = '\0'; /* "a." is "a" */
                /* A host curl percent-decoded ("%31%32%37.1") is not rewritten by curl, but
                 * the resolver still reads it as an address: as web-fetch.c's guard does,
                 * take every spelling inet_aton() takes. */
                if (inet_aton(name, &a4) != 0 && inet_ntop(AF_INET, &a4, v4, sizeof(v4)))
                        return strdup(v4);
                ret = strdup(name);
        }
        for (char *p = ret; p && *p; p++)
                if (*p >= 'A' && *p <= 'Z')
                        *p = (char) (*p - 'A' + 'a');
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
