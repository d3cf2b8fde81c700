/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Internationalised host names: "bücher.de" in the one spelling DNS, TLS and the policy
 * know, "xn--bcher-kva.de" (UTS #46 processing, non-transitional, as curl maps a name in a
 * UTF-8 locale; ptc leaves its locale "C", where curl refuses every non-ASCII host). The
 * mapping also folds width and compatibility forms: "ｌｏｃａｌｈｏｓｔ" is "localhost" and
 * "①②⑦.0.0.1" is "127.0.0.1", so the guard and the policy must judge the mapped name, never
 * the one written.
 */

/*
 * @host (UTF-8, as curl's URL parser gives it) in ASCII. Returns 0 with *ret NULL when it
 * is ASCII already (nothing to do), 1 with *ret the mapped name (caller frees; only letters,
 * digits, '-', '_' and '.'), -ENOMEM, or -EINVAL when it is no valid name or maps to other
 * characters ("127.0.0.1：80" to "127.0.0.1:80"); then *ret_reason (when not NULL) says why,
 * a static string.
 */
int web_idn_host_to_ascii(const char *host, char **ret, const char **ret_reason);

/*
 * @url with its host in ASCII (web_idn_host_to_ascii()). Returns 0 with *ret NULL when
 * there is nothing to map (an ASCII host, or no URL curl's parser takes: the caller's own
 * checks name that), 1 with *ret the URL curl fetches (caller frees), -ENOMEM, or -EINVAL
 * with *ret_reason as above.
 */
int web_idn_url_to_ascii(const char *url, char **ret, const char **ret_reason);
