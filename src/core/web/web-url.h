/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The secret guard of web_extract (docs/seed.md 2.7): a script must not
 * smuggle a secret out inside a URL it asks ptc to fetch.
 */

#include "basic/macro.h"

struct redactor;

/*
 * Whether @url carries what looks like a secret, in its raw form or
 * percent-decoded (once or twice):
 *  - a vendor-prefixed key (sk-..., ghp_..., AKIA..., the seed's list);
 *  - a value @r knows (a scrubbed secret or provider key), or its base64,
 *    hex or URL-encoded form (@r may be NULL);
 *  - a query parameter named like a credential (access_token, api_key,
 *    apikey, api-key, auth_token, client_secret, id_token, password,
 *    private_token, refresh_token, secret, token) with a non-empty value;
 *  - a password in the userinfo (https://user:pass@host/).
 * The percent-decoding and the userinfo parse are curl's, through the web
 * module (web-module.h). Returns 1 (refuse the call), 0, -ENOMEM, or
 * -ELIBACC when the module cannot be loaded (web_extract checks that
 * first). Any thread.
 */
_must_check_ int web_url_has_secret(const struct redactor *r, const char *url);
