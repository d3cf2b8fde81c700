/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the charset detection and conversion of fetched documents
 * (src/core/web/charset.c): a server ptc does not trust picks both the Content-Type header
 * and the body. The first input byte says whether the body is HTML (bit 7, <meta> sniffing)
 * and how many bytes follow as the Content-Type value (bits 0-6; 127: no header); the rest is
 * the body. Checked:
 *  - the conversion succeeds (an input this small never runs out of memory, so -ENOMEM would
 *    be a cap miscounted), and its result is valid UTF-8, NUL-terminated, at most 3 bytes
 *    per input byte;
 *  - valid UTF-8 with neither byte order mark, header nor HTML comes back unchanged, and so
 *    does the result when converted again as UTF-8;
 *  - the charset parameter taken from the header is NULL or a trimmed, lower-case label.
 *
 * The corpus (corpus/charset/) replays under meson through fuzz-main.c; scripts/fuzz.sh
 * charset fuzzes it for real.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/utf8.h"
#include "core/web/charset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Inputs below this never fail for want of memory: the fuzzer's limit is 2 GiB. */
#define SMALL_INPUT_MAX (1024 * 1024)

#define NO_HEADER 127

static bool has_bom(const char *s, size_t n)
{
        const unsigned char *u = (const unsigned char *) s;

        return (n >= 3 && u[0] == 0xEF && u[1] == 0xBB && u[2] == 0xBF) ||
               (n >= 2 && ((u[0] == 0xFF && u[1] == 0xFE) || (u[0] == 0xFE && u[1] == 0xFF)));
}

static void check_label(const char *ct)
{
        _cleanup_free_ char *label = charset_from_content_type(ct);
        size_t n;

        if (!label)
                return;
        n = strlen(label);
        if (n == 0 || n >= 64 || label[0] == ' ' || label[n - 1] == ' ')
                abort();
        for (size_t i = 0; i < n; i++)
                if (label[i] >= 'A' && label[i] <= 'Z')
                        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_free_ char *ct = NULL, *out = NULL, *again = NULL;
        const char *body;
        size_t ct_len, body_len, len = 0, len2 = 0;
        bool is_html;
        int r;

        if (size < 1 || size > SMALL_INPUT_MAX)
                return 0;
        is_html = data[0] & 0x80;
        ct_len = data[0] & 0x7F;
        if (ct_len != NO_HEADER) {
                ct_len = MIN(ct_len, size - 1);
                /* A header value is a C string: a NUL in it ends it, as curl hands it over. */
                ct = strndup((const char *) data + 1, ct_len);
                if (!ct)
                        return 0;
        } else
                ct_len = 0;
        body = (const char *) data + 1 + ct_len;
        body_len = size - 1 - ct_len;

        if (ct)
                check_label(ct);

        r = charset_to_utf8(body, body_len, ct, is_html, &out, &len);
        if (r != 0 || !out)
                abort();
        if (out[len] != '\0' || !utf8_is_valid(out, len) || len > 3 * body_len)
                abort();
        if (!ct && !is_html && !has_bom(body, body_len) && utf8_is_valid(body, body_len) &&
            (len != body_len || memcmp(out, body, len) != 0))
                abort();

        /* UTF-8 stays as it is; a byte order mark the first pass left is the only change. */
        if (has_bom(out, len))
                return 0;
        r = charset_to_utf8(out, len, "text/html; charset=utf-8", is_html, &again, &len2);
        if (r != 0 || len2 != len || memcmp(again, out, len) != 0)
                abort();
        return 0;
}
