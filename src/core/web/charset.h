/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Text of a fetched document as UTF-8 (gumbo and JSON need UTF-8).
 *
 * The charset comes from, in order: a byte order mark, the Content-Type
 * header's charset parameter, and for HTML a <meta charset=...> or
 * <meta http-equiv="Content-Type" content="...charset=..."> in the first
 * 1024 bytes; else UTF-8. Labels follow the WHATWG Encoding standard:
 * "latin1", "iso-8859-1", "ascii", "us-ascii" mean windows-1252, "gbk" and
 * "gb2312" GB18030, "shift_jis" windows-31j; a <meta> naming UTF-16 means
 * UTF-8. Conversion uses iconv (glibc). Bytes that do not decode become
 * U+FFFD (also windows-1252's five undefined bytes). An unknown charset name
 * is treated as windows-1252 when the text is not valid UTF-8, as browsers
 * do for Latin-1 labels, else kept as UTF-8. A byte order mark is removed.
 * Thread context: any thread.
 */

#include <stdbool.h>
#include <stddef.h>

#include "basic/macro.h"

/*
 * Convert @n bytes to UTF-8. @content_type is the header value (may be NULL).
 * @is_html enables the <meta> sniffing. On 0, *ret is a new NUL-terminated
 * string (caller frees; it may contain NUL bytes from the input), its length
 * in *ret_len. @data may be NULL when @n is 0. Returns 0 or -ENOMEM.
 */
_must_check_ int charset_to_utf8(const char *data, size_t n, const char *content_type, bool is_html,
                                 char **ret, size_t *ret_len);

/*
 * The charset parameter of a Content-Type value, lower-cased, quotes removed
 * (new string, caller frees), or NULL when absent (or on ENOMEM).
 */
char *charset_from_content_type(const char *content_type);
