/* SPDX-License-Identifier: MIT */
#include "core/web/web-idn.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <idn2.h>

#include "basic/macro.h"

static bool is_ascii(const char *s)
{
        for (; *s; s++)
                if ((unsigned char) *s >= 0x80)
                        return false;
        return true;
}

/*
 * Without IDNA's STD3 rules (which curl does not use either, and which libidn2 2.3 applies by
 * dropping the characters they refuse: "a＠b" would become "ab") compatibility forms map to
 * any ASCII: "127.0.0.1：80" to "127.0.0.1:80", "a＠b" to "a@b", "﹈" to "]". A host made so
 * would split the URL it is put back into; only what a host name holds may come out.
 */
static bool is_host_name(const char *s)
{
        if (!*s)
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                      (*s >= '0' && *s <= '9') || *s == '-' || *s == '.' || *s == '_'))
                        return false;
        return true;
}

int web_idn_host_to_ascii(const char *host, char **ret, const char **ret_reason)
{
        uint8_t *out = NULL;
        int rc;

        *ret = NULL;
        if (is_ascii(host))
                return 0;
        /* curl's flags: a name IDNA 2008 disallows (some symbols) may still map under the
         * transitional rules of IDNA 2003, as browsers read it. */
        rc = idn2_lookup_u8((const uint8_t *) host, &out, IDN2_NFC_INPUT | IDN2_NONTRANSITIONAL);
        if (rc == IDN2_DISALLOWED)
                rc = idn2_lookup_u8((const uint8_t *) host, &out,
                                    IDN2_NFC_INPUT | IDN2_TRANSITIONAL);
        if (rc == IDN2_MALLOC)
                return -ENOMEM;
        if (rc != IDN2_OK) {
                if (ret_reason)
                        *ret_reason = idn2_strerror(rc);
                return -EINVAL;
        }
        if (!is_host_name((const char *) out)) {
                idn2_free(out);
                if (ret_reason)
                        *ret_reason = "it maps to characters no host name has";
                return -EINVAL;
        }
        /* libidn2 allocates with its own malloc: copy, so the caller frees with free(). */
        *ret = strdup((const char *) out);
        idn2_free(out);
        return *ret ? 1 : -ENOMEM;
}

int web_idn_url_to_ascii(const char *url, char **ret, const char **ret_reason)
{
        _cleanup_free_ char *ascii = NULL;
        char *host = NULL, *mapped = NULL;
        CURLU *u = curl_url();
        CURLUcode uc;
        int r = 0;

        *ret = NULL;
        if (!u)
                return -ENOMEM;
        uc = curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME);
        if (uc == CURLUE_OK)
                uc = curl_url_get(u, CURLUPART_HOST, &host, 0);
        if (uc == CURLUE_OUT_OF_MEMORY)
                r = -ENOMEM;
        else if (uc == CURLUE_OK && host)
                r = web_idn_host_to_ascii(host, &ascii, ret_reason);
        if (r > 0) {
                uc = curl_url_set(u, CURLUPART_HOST, ascii, 0);
                if (uc == CURLUE_OK)
                        uc = curl_url_get(u, CURLUPART_URL, &mapped, 0);
                if (uc == CURLUE_OK) {
                        *ret = strdup(mapped);
                        r = *ret ? 1 : -ENOMEM;
                } else if (uc == CURLUE_OUT_OF_MEMORY) {
                        r = -ENOMEM;
                } else {
                        /* curl refuses the mapped name even so. */
                        if (ret_reason)
                                *ret_reason = "the name it maps to is not a host name";
                        r = -EINVAL;
                }
        }
        curl_free(host);
        curl_free(mapped);
        curl_url_cleanup(u);
        return r;
}
