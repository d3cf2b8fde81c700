/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the fuzzy matcher (src/core/edit/fuzzy-*.c). Input: a flags byte (bit 0
 * replace_all, bit 1 FUZZY_KEEP_CRLF), two little-endian 16-bit lengths (old_string and new_string,
 * each cut to what is left), old_string, new_string, and the rest is the content. Besides "no
 * crash, no sanitizer report" it checks what the functions promise: spans in bounds and in order,
 * fuzzy_replace() equal to applying fuzzy_find()'s spans, ratios in [0, 1], a diff exactly when the
 * texts differ.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/edit/fuzzy-match.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
        if (!ok) {
                fprintf(stderr, "fuzz-fuzzy: %s\n", what);
                abort();
        }
}

static size_t take16(const uint8_t **p, size_t *left)
{
        size_t v = 0;

        if (*left >= 2) {
                v = (size_t) (*p)[0] | (size_t) (*p)[1] << 8;
                *p += 2;
                *left -= 2;
        }
        return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const uint8_t *p = data;
        size_t left = size, old_n, new_n, n, len = 0, count = 0, last = 0, want_len = 0;
        const char *old, *new_text, *content, *strategy = NULL;
        char *out = NULL, *err = NULL, *d = NULL, *hint;
        struct fuzzy_result fr;
        unsigned flags = 0;
        bool all = false;
        double ratio;
        int r, rf, rd;

        if (left > 0) {
                all = p[0] & 1;
                flags = p[0] & 2 ? FUZZY_KEEP_CRLF : 0;
                p++;
                left--;
        }
        old_n = take16(&p, &left);
        new_n = take16(&p, &left);
        old_n = old_n % (left + 1);
        old = (const char *) p;
        p += old_n;
        left -= old_n;
        new_n = new_n % (left + 1);
        new_text = (const char *) p;
        p += new_n;
        left -= new_n;
        content = (const char *) p;
        n = left;

        rf = fuzzy_find(content, n, old, old_n, &fr);
        check(rf == 0 || rf == -E2BIG, "fuzzy_find: unexpected error");
        if (rf == 0) {
                check((fr.n_spans == 0) == (fr.strategy == NULL), "strategy without spans");
                for (size_t i = 0; i < fr.n_spans; i++) {
                        check(fr.spans[i].start <= fr.spans[i].end, "span start after end");
                        check(fr.spans[i].end <= n, "span past the content");
                        check(i == 0 || fr.spans[i - 1].start <= fr.spans[i].start,
                              "spans out of order");
                }
        }

        r = fuzzy_replace_flags(content, n, old, old_n, new_text, new_n, all, flags, &out, &len,
                                &count, &strategy, &err);
        check(r == 0 || r == -E2BIG, "fuzzy_replace: unexpected error");
        check(!(out && err), "both a result and an error");
        if (r == 0 && out && !flags) {
                /* Without the CRLF flag the result is the spans applied left to right. */
                size_t kept = 0;

                check(fr.n_spans > 0, "a replacement without a match");
                check(strcmp(strategy, fr.strategy) == 0, "another strategy than fuzzy_find's");
                for (size_t i = 0; i < fr.n_spans; i++) {
                        if (fr.spans[i].start < last)
                                continue;
                        check(memcmp(out + want_len, content + last, fr.spans[i].start - last) == 0,
                              "text before a match changed");
                        want_len += fr.spans[i].start - last;
                        check(memcmp(out + want_len, new_text, new_n) == 0, "replacement differs");
                        want_len += new_n;
                        last = fr.spans[i].end;
                        kept++;
                }
                check(memcmp(out + want_len, content + last, n - last) == 0, "tail changed");
                want_len += n - last;
                check(want_len == len, "result length");
                check(kept == count, "replacement count");
                check(count == 1 || all, "several replacements without replace_all");
        }
        if (out) {
                rd = fuzzy_unified_diff(content, n, out, len, "a/f", "b/f", 1 << 20, &d, NULL);
                check(rd == 0, "fuzzy_unified_diff failed");
                check((*d == 0) == (n == len && memcmp(content, out, n) == 0),
                      "diff presence does not match the change");
                free(d);
        }
        if (rf == 0 && fr.n_spans == 0) {
                hint = fuzzy_did_you_mean(content, n, old, old_n);
                check(hint != NULL, "fuzzy_did_you_mean: NULL");
                free(hint);
        }
        ratio = fuzzy_ratio(old, old_n, new_text, new_n);
        check(ratio >= 0.0 && ratio <= 1.0, "ratio out of range");
        fuzzy_result_release(&fr);
        free(out);
        free(err);
        return 0;
}
