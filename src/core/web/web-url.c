/* SPDX-License-Identifier: MIT */
/*
 * The URL secret guard. It errs on the side of refusing: a false positive
 * costs the script one fetch and says why; a false negative sends a key to
 * a server the script chose.
 */

#include "core/web/web-url.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "basic/macro.h"
#include "core/output/redact.h"
#include "core/web/web-module.h"

/* Longest URL we look at; web_extract refuses longer ones before this. */
#define WEB_URL_MAX (64 * 1024)

static const char *const credential_params[] = {
        "access_token",  "api_key",  "apikey",   "api-key",       "auth_token",
        "client_secret", "id_token", "password", "private_token", "refresh_token",
        "secret",        "token",    NULL,
};

static bool is_credential_param(const char *name, size_t n)
{
        for (size_t i = 0; credential_params[i]; i++)
                if (strlen(credential_params[i]) == n &&
                    strncasecmp(credential_params[i], name, n) == 0)
                        return true;
        return false;
}

/* A "name=value" pair of the query (before any '#') with a credential name and a value. */
static bool query_has_credential(const char *url)
{
        const char *q = strchr(url, '?');

        if (!q)
                return false;
        for (const char *p = q + 1; *p && *p != '#';) {
                size_t len = strcspn(p, "&#");
                const char *eq = memchr(p, '=', len);

                if (eq && (size_t) (eq - p) + 1 < len && is_credential_param(p, (size_t) (eq - p)))
                        return true;
                p += len;
                if (*p == '&')
                        p++;
        }
        return false;
}

static int check_one(const struct redactor *r, const char *s)
{
        _cleanup_free_ char *red = NULL;
        size_t n = strlen(s), red_len;
        int k;

        k = redact_has_vendor_key(s, n);
        if (k != 0)
                return k;
        if (query_has_credential(s))
                return 1;
        if (r) {
                k = redact_text(r, REDACT_NONE, s, n, &red, &red_len);
                if (k != 0)
                        return k;
        }
        return 0;
}

int web_url_has_secret(const struct redactor *r, const char *url)
{
        const struct web_module *m = web_module_get(NULL);
        _cleanup_free_ char *once = NULL, *twice = NULL;
        int k;

        if (!url)
                return 0;
        if (!m)
                return -ELIBACC;
        if (strlen(url) > WEB_URL_MAX)
                return 1;
        k = check_one(r, url);
        if (k != 0)
                return k;
        if (m->url_has_password(url))
                return 1;
        /* Decoded forms: "%73k-..." must not pass where "sk-..." would not. */
        once = m->url_unescape(url); /* curl's decoder */
        if (!once)
                return -ENOMEM;
        k = check_one(r, once);
        if (k != 0)
                return k;
        twice = m->url_unescape(once);
        if (!twice)
                return -ENOMEM;
        return check_one(r, twice);
}
