/* SPDX-License-Identifier: MIT */
/*
 * One V4A hunk applied to a file's content in memory (the seed's search/replace through the
 * fuzzy matcher, fuzzy-match.h): an addition-only hunk goes after the line holding its
 * context hint or at the end; otherwise the hunk's old lines are replaced by its new ones,
 * retried inside a window around the hint; a hunk that does not apply says why, with the
 * seed's "did you mean" sections.
 */

#include "core/edit/v4a.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/macro.h"
#include "core/edit/fuzzy-match.h"

/* The seed's window around a hunk's context hint, in characters. */
#define HINT_WINDOW_BEFORE 500
#define HINT_WINDOW_AFTER 2000

#define NO_MATCH_HEADER "\n\nDid you mean one of these sections?\n"

/* Overlapping occurrences of @pat in @s, as the seed counts a context hint. */
static size_t count_occurrences(const char *s, size_t n, const char *pat, size_t pn)
{
        size_t count = 0, i = 0;

        if (pn == 0)
                return n + 1;
        while (i + pn <= n) {
                const char *p = memmem(s + i, n - i, pat, pn);

                if (!p)
                        break;
                count++;
                i = (size_t) (p - s) + 1;
        }
        return count;
}

/* Move @pos back by @k characters (UTF-8 lead bytes) in @s. */
static size_t back_chars(const char *s, size_t pos, size_t k)
{
        while (pos > 0 && k > 0) {
                pos--;
                if (((unsigned char) s[pos] & 0xC0) != 0x80)
                        k--;
        }
        return pos;
}

static size_t fwd_chars(const char *s, size_t n, size_t pos, size_t k)
{
        while (pos < n && k > 0) {
                pos++;
                while (pos < n && ((unsigned char) s[pos] & 0xC0) == 0x80)
                        pos++;
                k--;
        }
        return pos;
}

/* @a + @b + @c as one new string. */
static int concat3(const char *a, size_t an, const char *b, size_t bn, const char *c, size_t cn,
                   char **ret, size_t *ret_len)
{
        char *s;

        if (an > SIZE_MAX - bn - cn - 1)
                return -ENOMEM;
        s = malloc(an + bn + cn + 1);
        if (!s)
                return -ENOMEM;
        if (an)
                memcpy(s, a, an);
        if (bn)
                memcpy(s + an, b, bn);
        if (cn)
                memcpy(s + an + bn, c, cn);
        s[an + bn + cn] = 0;
        *ret = s;
        *ret_len = an + bn + cn;
        return 0;
}

static int hunk_label(const struct v4a_hunk *h, char **ret)
{
        if (h->hint)
                return asprintf(ret, "'%s'", h->hint) < 0 ? -ENOMEM : 0;
        *ret = strdup("(no hint)");
        return *ret ? 0 : -ENOMEM;
}

/* The seed's addition-only placement: after the line holding the unique hint, else at EOF. */
static int insert_addition(const struct v4a_hunk *h, const char *c, size_t cn, const char *eol,
                           const char *ins, size_t in, char **ret, size_t *ret_len, char **ret_err)
{
        size_t el = strlen(eol);
        _cleanup_free_ char *mid = NULL;
        size_t mid_len;
        int r;

        if (h->hint) {
                size_t count = count_occurrences(c, cn, h->hint, h->hint_len);
                const char *at, *nl;

                if (count == 0)
                        return asprintf(ret_err, "addition-only hunk context hint '%s' not found",
                                        h->hint) < 0
                                       ? -ENOMEM
                                       : 0;
                if (count > 1)
                        return asprintf(ret_err,
                                        "addition-only hunk context hint '%s' is ambiguous (%zu "
                                        "occurrences)",
                                        h->hint, count) < 0
                                       ? -ENOMEM
                                       : 0;
                at = memmem(c, cn, h->hint, h->hint_len);
                nl = memchr(at, '\n', cn - (size_t) (at - c));
                if (!nl)
                        return concat3(c, cn, eol, el, ins, in, ret, ret_len);
                r = concat3(ins, in, eol, el, NULL, 0, &mid, &mid_len);
                if (r < 0)
                        return r;
                return concat3(c, (size_t) (nl - c) + 1, mid, mid_len, nl + 1,
                               cn - (size_t) (nl - c) - 1, ret, ret_len);
        }

        /* No hint: content.rstrip('\n') + '\n' + text + '\n' (CR too when the file uses CRLF). */
        while (cn > 0 && (c[cn - 1] == '\n' || (el == 2 && c[cn - 1] == '\r')))
                cn--;
        r = concat3(eol, el, ins, in, eol, el, &mid, &mid_len);
        if (r < 0)
                return r;
        return concat3(c, cn, mid, mid_len, NULL, 0, ret, ret_len);
}

/* "hunk <label> not found — <reason>" plus the seed's "did you mean" sections. */
static int not_found_error(const struct v4a_hunk *h, const char *c, size_t cn, const char *search,
                           size_t sn, const char *reason, char **ret_err)
{
        _cleanup_free_ char *label = NULL, *snippets = NULL;
        bool no_match = reason && strncmp(reason, "Could not find", 14) == 0;
        int r;

        r = hunk_label(h, &label);
        if (r < 0)
                return r;
        if (no_match) {
                snippets = fuzzy_did_you_mean(c, cn, search, sn);
                if (!snippets)
                        return -ENOMEM;
        }
        r = asprintf(ret_err, "hunk %s not found%s%s%s%s", label, reason && *reason ? " — " : "",
                     reason ?: "", snippets && *snippets ? NO_MATCH_HEADER : "",
                     snippets && *snippets ? snippets : "");
        return r < 0 ? -ENOMEM : 0;
}

/*
 * Apply hunk @h to the content @c: *ret is the new content, or NULL when the
 * hunk changes nothing (context only); or *ret_err says why it does not
 * apply. Returns 1 when the hunk is a change, 0 when it is inert, -ENOMEM.
 */
int v4a_apply_hunk(const struct v4a_hunk *h, const char *c, size_t cn, const char *eol, char **ret,
                   size_t *ret_len, char **ret_err)
{
        _cleanup_buf_ struct buf search = BUF_INIT(2 * (size_t) V4A_PATCH_MAX + 16);
        _cleanup_buf_ struct buf repl = BUF_INIT(2 * (size_t) V4A_PATCH_MAX + 16);
        _cleanup_buf_ struct buf added = BUF_INIT(2 * (size_t) V4A_PATCH_MAX + 16);
        _cleanup_free_ char *out = NULL, *err = NULL, *wout = NULL, *werr = NULL;
        size_t ns = 0, nr = 0, na = 0, out_len = 0, count = 0;
        const char *strategy = NULL, *hp;
        int r = 0;

        *ret = NULL;
        *ret_err = NULL;
        for (size_t i = 0; r >= 0 && i < h->n_lines; i++) {
                const struct v4a_line *l = &h->lines[i];

                if (l->prefix != '+') {
                        if (ns++ > 0)
                                r = buf_append_str(&search, eol);
                        if (r >= 0)
                                r = buf_append(&search, l->text, l->len);
                }
                if (r >= 0 && l->prefix != '-') {
                        if (nr++ > 0)
                                r = buf_append_str(&repl, eol);
                        if (r >= 0)
                                r = buf_append(&repl, l->text, l->len);
                }
                if (r >= 0 && l->prefix == '+') {
                        if (na++ > 0)
                                r = buf_append_str(&added, eol);
                        if (r >= 0)
                                r = buf_append(&added, l->text, l->len);
                }
        }
        if (r < 0)
                return -ENOMEM; /* -E2BIG cannot happen: the caps hold twice the patch */

        /* Lines never hold '\n', so equal joined texts of equal counts are equal line lists. */
        if (ns == nr && search.len == repl.len &&
            memcmp(buf_str(&search), buf_str(&repl), search.len) == 0)
                return 0;

        if (search.len == 0) {
                r = insert_addition(h, c, cn, eol, buf_str(&added), added.len, ret, ret_len,
                                    ret_err);
                return r < 0 ? r : 1;
        }

        r = fuzzy_replace_flags(c, cn, buf_str(&search), search.len, buf_str(&repl), repl.len,
                                false, FUZZY_KEEP_CRLF, &out, &out_len, &count, &strategy, &err);
        if (r == -E2BIG) {
                _cleanup_free_ char *label = NULL;

                if (hunk_label(h, &label) < 0)
                        return -ENOMEM;
                return asprintf(ret_err,
                                "hunk %s could not be matched: the file or the hunk is too large "
                                "for fuzzy matching",
                                label) < 0
                               ? -ENOMEM
                               : 1;
        }
        if (r < 0)
                return r;
        if (out) {
                *ret = TAKE_PTR(out);
                *ret_len = out_len;
                return 1;
        }

        /* The seed's retry inside a window around the hint's first occurrence. */
        hp = h->hint ? memmem(c, cn, h->hint, h->hint_len) : NULL;
        if (hp) {
                size_t pos = (size_t) (hp - c), ws, we, wl = 0;

                ws = back_chars(c, pos, HINT_WINDOW_BEFORE);
                we = fwd_chars(c, cn, pos, HINT_WINDOW_AFTER);
                r = fuzzy_replace_flags(c + ws, we - ws, buf_str(&search), search.len,
                                        buf_str(&repl), repl.len, false, FUZZY_KEEP_CRLF, &wout,
                                        &wl, &count, &strategy, &werr);
                if (r == -ENOMEM)
                        return r;
                if (r >= 0 && wout) {
                        r = concat3(c, ws, wout, wl, c + we, cn - we, ret, ret_len);
                        return r < 0 ? r : 1;
                }
        }
        r = not_found_error(h, c, cn, buf_str(&search), search.len, err, ret_err);
        return r < 0 ? r : 1;
}

/*
 * "\r\n" for a file with CRLF line ends (FUZZY_KEEP_CRLF's rule), else "\n": hunk lines are
 * joined with it, so they match the file exactly and added lines get its line ends.
 */
const char *v4a_detect_eol(const char *c, size_t n)
{
        return memmem(c, n, "\r\n", 2) ? "\r\n" : "\n";
}
