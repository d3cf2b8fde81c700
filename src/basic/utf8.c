/* SPDX-License-Identifier: MIT */
#include "basic/utf8.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * The table of well-formed byte sequences from the Unicode standard (table
 * 3-7). The second byte's range depends on the first byte; that is what
 * rules out overlongs (E0 80..9F, F0 80..8F) and surrogates (ED A0..BF).
 */
static size_t maximal_subpart(const unsigned char *p, size_t n, bool *ret_valid)
{
        unsigned char c = p[0];
        unsigned char lo = 0x80, hi = 0xBF;
        size_t need, i;

        *ret_valid = false;
        if (c < 0x80) {
                *ret_valid = true;
                return 1;
        }
        if (c >= 0xC2 && c <= 0xDF)
                need = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
                need = 3;
                if (c == 0xE0)
                        lo = 0xA0;
                else if (c == 0xED)
                        hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
                need = 4;
                if (c == 0xF0)
                        lo = 0x90;
                else if (c == 0xF4)
                        hi = 0x8F;
        } else
                return 1; /* 80..C1, F5..FF: never valid as a lead byte */

        for (i = 1; i < need; i++) {
                if (i >= n)
                        return i;
                if (p[i] < lo || p[i] > hi)
                        return i;
                lo = 0x80;
                hi = 0xBF;
        }
        *ret_valid = true;
        return need;
}

size_t utf8_valid_seq_len(const unsigned char *p, size_t n)
{
        bool valid;
        size_t k;

        if (n == 0)
                return 0;
        k = maximal_subpart(p, n, &valid);
        return valid ? k : 0;
}

/* True when none of the 8 bytes at @p has the high bit set. */
static inline bool ascii8(const unsigned char *p)
{
        uint64_t w;

        memcpy(&w, p, sizeof(w));
        return (w & 0x8080808080808080ULL) == 0;
}

/* True when the 4 bytes at @p (@n available) are an escape code point in UTF-8. */
static bool is_escape_seq(const unsigned char *p, size_t n)
{
        return n >= 4 && p[0] == 0xF4 && p[1] == 0x8D && (p[2] == 0xB2 || p[2] == 0xB3) &&
               (p[3] & 0xC0) == 0x80;
}

/*
 * True when @s is valid UTF-8 and, with @no_escapes, holds no escape code point: one pass,
 * so valid text costs what validation alone does.
 */
static inline bool scan_text(const char *s, size_t n, bool no_escapes)
{
        const unsigned char *p = (const unsigned char *) s;
        size_t i = 0;

        while (i < n) {
                /* Most text is ASCII: skip it a word at a time. */
                while (i + 8 <= n && ascii8(p + i))
                        i += 8;
                if (i >= n)
                        break;
                bool valid;
                size_t k;

                if (p[i] < 0x80) {
                        i++;
                        continue;
                }
                k = maximal_subpart(p + i, n - i, &valid);
                if (!valid || (no_escapes && is_escape_seq(p + i, k)))
                        return false;
                i += k;
        }
        return true;
}

size_t utf8_prefix_len(const char *s, size_t n, size_t max)
{
        if (n <= max)
                return n;
        while (max > 0 && ((unsigned char) s[max] & 0xC0) == 0x80)
                max--;
        return max;
}

bool utf8_is_valid(const char *s, size_t n)
{
        return scan_text(s, n, false);
}

bool utf8_is_escape_free(const char *s, size_t n)
{
        return scan_text(s, n, true);
}

char *utf8_sanitize(const char *s, size_t n, size_t *ret_len, size_t *ret_chars)
{
        const unsigned char *p = (const unsigned char *) s;
        size_t i = 0, o = 0, chars = 0;
        char *out;

        /* Worst case: every byte becomes EF BF BD. */
        if (n > (SIZE_MAX - 1) / 3)
                return NULL;
        out = malloc(n * 3 + 1);
        if (!out)
                return NULL;
        while (i < n) {
                bool valid;
                size_t k;

                if (p[i] < 0x80) {
                        out[o++] = (char) p[i++];
                        chars++;
                        continue;
                }
                k = maximal_subpart(p + i, n - i, &valid);
                if (valid) {
                        memcpy(out + o, p + i, k);
                        o += k;
                } else {
                        memcpy(out + o, "\xEF\xBF\xBD", 3);
                        o += 3;
                }
                i += k;
                chars++;
        }
        out[o] = 0;
        /* Give back the slack; failure to shrink is harmless. */
        char *shrunk = realloc(out, o + 1);
        if (shrunk)
                out = shrunk;
        if (ret_len)
                *ret_len = o;
        if (ret_chars)
                *ret_chars = chars;
        return out;
}

size_t utf8_count_chars(const char *s, size_t n)
{
        size_t c = 0;

        for (size_t i = 0; i < n; i++)
                if (((unsigned char) s[i] & 0xC0) != 0x80)
                        c++;
        return c;
}

/*
 * The escape of byte @b (0x80..0xFF): UTF8_ESCAPE_BASE + b in UTF-8, F4 8D B2|B3 80..BF.
 * Written out so the encoder needs no general code-point writer.
 */
static void put_escape(char *out, unsigned char b)
{
        out[0] = (char) 0xF4;
        out[1] = (char) 0x8D;
        out[2] = (char) (0xB0 | (b >> 6));
        out[3] = (char) (0x80 | (b & 0x3F));
}

int utf8_escape_bytes(const char *s, size_t n, char **ret, size_t *ret_len)
{
        const unsigned char *p = (const unsigned char *) s;
        size_t i = 0, o = 0;
        char *out;

        /* Worst case: every byte becomes a 4-byte escape. */
        if (n > (SIZE_MAX - 1) / 4)
                return -ENOMEM;
        out = malloc(n * 4 + 1);
        if (!out)
                return -ENOMEM;
        while (i < n) {
                bool valid;
                size_t k;

                if (p[i] < 0x80) {
                        out[o++] = (char) p[i++];
                        continue;
                }
                k = maximal_subpart(p + i, n - i, &valid);
                /* A real escape code point is escaped too, or unescaping would change it. */
                if (valid && !is_escape_seq(p + i, k)) {
                        memcpy(out + o, p + i, k);
                        o += k;
                } else
                        for (size_t j = 0; j < k; j++, o += 4)
                                put_escape(out + o, p[i + j]);
                i += k;
        }
        out[o] = 0;
        /* Give back the slack; failure to shrink is harmless. */
        char *shrunk = realloc(out, o + 1);
        if (shrunk)
                out = shrunk;
        *ret = out;
        if (ret_len)
                *ret_len = o;
        return 0;
}

int utf8_unescape_bytes(const char *s, size_t n, char **ret, size_t *ret_len)
{
        const unsigned char *p = (const unsigned char *) s;
        size_t i = 0, o = 0;
        char *out;

        if (n == SIZE_MAX)
                return -ENOMEM;
        out = malloc(n + 1);
        if (!out)
                return -ENOMEM;
        while (i < n) {
                if (is_escape_seq(p + i, n - i)) {
                        out[o++] = (char) (((p[i + 2] & 0x03) << 6) | (p[i + 3] & 0x3F));
                        i += 4;
                } else
                        out[o++] = (char) p[i++];
        }
        out[o] = 0;
        *ret = out;
        if (ret_len)
                *ret_len = o;
        return 0;
}

void utf8_replace_controls(char *s, bool keep_newline)
{
        for (unsigned char *p = (unsigned char *) s; *p; p++) {
                if ((*p < 0x20 && !(keep_newline && *p == '\n')) || *p == 0x7F)
                        *p = '?';
                else if (p[0] == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F) {
                        p[0] = p[1] = '?';
                        p++;
                }
        }
}
