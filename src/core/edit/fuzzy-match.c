/* SPDX-License-Identifier: MIT */
/*
 * The seed's tools/fuzzy_match.py and difflib pieces, on bytes.
 *
 * The seed works on Python str: offsets are code points, strip() removes
 * Unicode whitespace, split('\n') makes lines. On valid UTF-8 a byte-level
 * search finds exactly the code-point matches (UTF-8 synchronises), so the
 * strategies run on bytes and only the similarity ratio decodes. Where the
 * seed compares joined lines ("\n".join(a) == "\n".join(b)) we compare line
 * by line: no line contains '\n', so that is the same test.
 *
 * Cost: every line-based strategy interns its (normalised) lines into ids and
 * searches the pattern's id sequence with KMP, so they are linear, not
 * lines x pattern lines as in the seed. The similarity strategies prune with
 * difflib's own upper bounds (real_quick_ratio, quick_ratio), which can only
 * reject what the full ratio would reject too, and stop at FUZZY_WORK_MAX.
 */

#include "core/edit/fuzzy-match.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/macro.h"
#include "basic/utf8.h"
#include "core/edit/fuzzy-internal.h"

/* Exact matches found with memmem() before switching to KMP (periodic patterns). */
#define MEMMEM_MATCHES_MAX 32

/* --- small helpers --- */

/* Length of the Python whitespace character (str.isspace()) starting at s[i], or 0. */
static size_t ws_at(const char *s, size_t n, size_t i)
{
        const unsigned char *u = (const unsigned char *) s + i;
        size_t left = n - i;

        if (left == 0)
                return 0;
        if (u[0] == ' ' || (u[0] >= '\t' && u[0] <= '\r') || (u[0] >= 0x1c && u[0] <= 0x1f))
                return 1;
        if (left >= 2 && u[0] == 0xc2 && (u[1] == 0x85 || u[1] == 0xa0))
                return 2;
        if (left < 3)
                return 0;
        if (u[0] == 0xe1 && u[1] == 0x9a && u[2] == 0x80) /* U+1680 */
                return 3;
        /* U+2000..U+200A, U+2028, U+2029, U+202F */
        if (u[0] == 0xe2 && u[1] == 0x80 &&
            ((u[2] >= 0x80 && u[2] <= 0x8a) || u[2] == 0xa8 || u[2] == 0xa9 || u[2] == 0xaf))
                return 3;
        if (u[0] == 0xe2 && u[1] == 0x81 && u[2] == 0x9f) /* U+205F */
                return 3;
        if (u[0] == 0xe3 && u[1] == 0x80 && u[2] == 0x80) /* U+3000 */
                return 3;
        return 0;
}

/* Length of the whitespace character ending right before s[e], or 0. */
static size_t ws_before(const char *s, size_t e)
{
        for (size_t k = 1; k <= 3 && k <= e; k++)
                if (ws_at(s, e, e - k) == k)
                        return k;
        return 0;
}

struct slice fuzzy_sl_lstrip(struct slice x)
{
        size_t k;

        while ((k = ws_at(x.p, x.n, 0)) > 0) {
                x.p += k;
                x.n -= k;
        }
        return x;
}

struct slice fuzzy_sl_strip(struct slice x)
{
        size_t k;

        x = fuzzy_sl_lstrip(x);
        while ((k = ws_before(x.p, x.n)) > 0)
                x.n -= k;
        return x;
}

bool fuzzy_sl_eq(struct slice a, struct slice b)
{
        return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}

bool fuzzy_has_bytes(const char *s, size_t n, const char *w, size_t wn)
{
        return n >= wn && memmem(s, n, w, wn) != NULL;
}

/* Grow *p (elements of @size) to hold at least @need, up to @max elements. */
int fuzzy_grow(void **p, size_t *alloc, size_t need, size_t size, size_t max)
{
        size_t a = *alloc;
        void *q;

        if (need <= a)
                return 0;
        if (need > max)
                return -E2BIG;
        a = MAX(a * 2, (size_t) 16);
        a = MAX(a, need);
        a = MIN(a, max);
        q = realloc(*p, a * size);
        if (!q)
                return -ENOMEM;
        *p = q;
        *alloc = a;
        return 0;
}

/* --- lines split on '\n' (Python's str.split("\n")) --- */

void fuzzy_lines_release(struct lines *l)
{
        free(l->start);
        *l = (struct lines){};
}

int fuzzy_lines_split(const char *s, size_t n, struct lines *ret)
{
        size_t cnt = 1, k = 0;
        const char *p = s, *end = s + n;

        for (const char *q; p < end && (q = memchr(p, '\n', (size_t) (end - p))); p = q + 1)
                if (++cnt > FUZZY_LINES_MAX)
                        return -E2BIG;
        ret->s = s;
        ret->len = n;
        ret->n = cnt;
        ret->start = malloc(cnt * sizeof(uint32_t));
        if (!ret->start)
                return -ENOMEM;
        ret->start[k++] = 0;
        for (const char *q; (q = memchr(s + ret->start[k - 1], '\n', n - ret->start[k - 1]));)
                ret->start[k++] = (uint32_t) (q - s + 1);
        return 0;
}

/* End of line @i (offset of its '\n', or the text's end). */
size_t fuzzy_line_end(const struct lines *l, size_t i)
{
        return i + 1 < l->n ? l->start[i + 1] - 1 : l->len;
}

struct slice fuzzy_line_at(const struct lines *l, size_t i)
{
        return (struct slice){l->s + l->start[i], fuzzy_line_end(l, i) - l->start[i]};
}

/* --- interning: equal byte strings get equal ids --- */

void fuzzy_itab_release(struct itab *t)
{
        free(t->e);
        *t = (struct itab){};
}

uint64_t fuzzy_hash_bytes(const char *p, size_t n)
{
        uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
        size_t i = 0;

        for (; i + 8 <= n; i += 8) {
                uint64_t w;

                memcpy(&w, p + i, 8);
                h = (h ^ w) * 0xff51afd7ed558ccdull;
                h ^= h >> 32;
        }
        if (i < n) {
                uint64_t w = 0;

                memcpy(&w, p + i, n - i);
                h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
        }
        h ^= h >> 29;
        h *= 0xff51afd7ed558ccdull;
        return h ^ (h >> 32);
}

static int itab_grow(struct itab *t)
{
        size_t cap = t->cap ? t->cap * 2 : 1024;
        struct ient *e = calloc(cap, sizeof(*e));

        if (!e)
                return -ENOMEM;
        for (size_t i = 0; i < t->cap; i++) {
                size_t k;

                if (!t->e[i].p)
                        continue;
                for (k = t->e[i].h & (cap - 1); e[k].p; k = (k + 1) & (cap - 1))
                        ;
                e[k] = t->e[i];
        }
        free(t->e);
        t->e = e;
        t->cap = cap;
        return 0;
}

int fuzzy_itab_id(struct itab *t, struct slice x, uint32_t *ret)
{
        uint64_t h;
        size_t k;
        int r;

        if ((size_t) t->n * 2 >= t->cap) {
                r = itab_grow(t);
                if (r < 0)
                        return r;
        }
        h = fuzzy_hash_bytes(x.p, x.n);
        for (k = h & (t->cap - 1); t->e[k].p; k = (k + 1) & (t->cap - 1))
                if (t->e[k].h == h && t->e[k].len == x.n &&
                    (x.n == 0 || memcmp(t->e[k].p, x.p, x.n) == 0)) {
                        *ret = t->e[k].id;
                        return 0;
                }
        /* An empty slice may have a NULL pointer; the slot needs a non-NULL one. */
        t->e[k] = (struct ient){.h = h, .p = x.p ?: "", .len = (uint32_t) x.n, .id = t->n};
        *ret = t->n++;
        return 0;
}

/* --- vectors --- */

int fuzzy_spanvec_add(struct spanvec *sv, size_t start, size_t end)
{
        int r = fuzzy_grow((void **) &sv->v, &sv->alloc, sv->n + 1, sizeof(*sv->v),
                           FUZZY_SPANS_MAX);

        if (r < 0)
                return r;
        sv->v[sv->n++] = (struct fuzzy_span){start, end};
        return 0;
}

int fuzzy_idxvec_add(struct idxvec *iv, size_t x)
{
        int r = fuzzy_grow((void **) &iv->v, &iv->alloc, iv->n + 1, sizeof(*iv->v),
                           FUZZY_SPANS_MAX);

        if (r < 0)
                return r;
        iv->v[iv->n++] = x;
        return 0;
}

/* --- searching --- */

/* KMP failure function of the @m elements of @p (bytes or ids) into @fail. */
#define KMP_TABLE(fail, p, m)                                \
        do {                                                 \
                size_t _k = 0;                               \
                (fail)[0] = 0;                               \
                for (size_t _i = 1; _i < (m); _i++) {        \
                        while (_k > 0 && (p)[_i] != (p)[_k]) \
                                _k = (fail)[_k - 1];         \
                        if ((p)[_i] == (p)[_k])              \
                                _k++;                        \
                        (fail)[_i] = (uint32_t) _k;          \
                }                                            \
        } while (0)

/*
 * All occurrences of @p in @s, overlapping (Python's find() loop from pos + 1), as spans.
 * memmem() for the first few; past MEMMEM_MATCHES_MAX a periodic pattern would make that
 * quadratic, so KMP takes over from the next offset.
 */
int fuzzy_find_bytes(const char *s, size_t n, const char *p, size_t m, struct spanvec *out)
{
        _cleanup_free_ uint32_t *fail = NULL;
        size_t pos = 0, found = 0, k = 0;
        int r;

        if (m == 0 || m > n)
                return 0;
        while (pos + m <= n) {
                const char *q;

                if (found >= MEMMEM_MATCHES_MAX)
                        break;
                q = memmem(s + pos, n - pos, p, m);
                if (!q)
                        return 0;
                r = fuzzy_spanvec_add(out, (size_t) (q - s), (size_t) (q - s) + m);
                if (r < 0)
                        return r;
                found++;
                pos = (size_t) (q - s) + 1;
        }
        if (pos + m > n)
                return 0;
        fail = malloc(m * sizeof(uint32_t));
        if (!fail)
                return -ENOMEM;
        KMP_TABLE(fail, p, m);
        for (size_t i = pos; i < n; i++) {
                while (k > 0 && s[i] != p[k])
                        k = fail[k - 1];
                if (s[i] == p[k])
                        k++;
                if (k == m) {
                        r = fuzzy_spanvec_add(out, i + 1 - m, i + 1);
                        if (r < 0)
                                return r;
                        k = fail[k - 1];
                }
        }
        return 0;
}

/* Every i where s[i..i+m) == p[0..m), overlapping. */
int fuzzy_find_ids(const uint32_t *s, size_t n, const uint32_t *p, size_t m, struct idxvec *out)
{
        _cleanup_free_ uint32_t *fail = NULL;
        size_t k = 0;
        int r;

        if (m == 0 || m > n)
                return 0;
        fail = malloc(m * sizeof(uint32_t));
        if (!fail)
                return -ENOMEM;
        KMP_TABLE(fail, p, m);
        for (size_t i = 0; i < n; i++) {
                while (k > 0 && s[i] != p[k])
                        k = fail[k - 1];
                if (s[i] == p[k])
                        k++;
                if (k == m) {
                        r = fuzzy_idxvec_add(out, i + 1 - m);
                        if (r < 0)
                                return r;
                        k = fail[k - 1];
                }
        }
        return 0;
}

/* --- replacing --- */

static int error_text(char **ret, const char *fmt, ...) _printf_(2, 3);
static int error_text(char **ret, const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(ret, fmt, ap);
        va_end(ap);
        if (r < 0) {
                *ret = NULL;
                return -ENOMEM;
        }
        return 0;
}

/* Does the concatenation of the matched regions contain the 2-byte @w? */
static bool regions_have(const char *c, const struct fuzzy_span *s, size_t ns, const char *w)
{
        for (size_t i = 0; i < ns; i++) {
                if (fuzzy_has_bytes(c + s[i].start, s[i].end - s[i].start, w, 2))
                        return true;
                /* Across the seam to the next non-empty region. */
                if (s[i].end > s[i].start && c[s[i].end - 1] == w[0])
                        for (size_t k = i + 1; k < ns; k++)
                                if (s[k].end > s[k].start) {
                                        if (c[s[k].start] == w[1])
                                                return true;
                                        break;
                                }
        }
        return false;
}

/* _detect_escape_drift(): 1 with *ret_error set, 0 when fine, -ENOMEM. */
static int escape_drift(const char *c, const struct fuzzy_span *s, size_t ns, const char *old,
                        size_t old_n, const char *new_text, size_t new_n, char **ret_error)
{
        static const struct {
                const char *seq, *seq_repr, *plain_repr;
        } suspects[] = {
                {"\\'", "\"\\\\'\"", "\"'\""},
                {"\\\"", "'\\\\\"'", "'\"'"},
        };

        for (size_t i = 0; i < ELEMENTSOF(suspects); i++) {
                if (!fuzzy_has_bytes(new_text, new_n, suspects[i].seq, 2) ||
                    !fuzzy_has_bytes(old, old_n, suspects[i].seq, 2) ||
                    regions_have(c, s, ns, suspects[i].seq))
                        continue;
                if (error_text(ret_error,
                               "Escape-drift detected: old_string and new_string contain the "
                               "literal sequence %s but the matched region of the file does "
                               "not. This is almost always a tool-call serialization artifact "
                               "where an apostrophe or quote got prefixed with a spurious "
                               "backslash. Re-read the file with read_file and pass "
                               "old_string/new_string without backslash-escaping %s characters.",
                               suspects[i].seq_repr, suspects[i].plain_repr) < 0)
                        return -ENOMEM;
                return 1;
        }
        return 0;
}

/* @new_text with its bare LFs as CRLF; *ret_n its length. */
static int crlf_text(const char *t, size_t n, char **ret, size_t *ret_n)
{
        size_t extra = 0, k = 0;
        char *o;

        for (size_t i = 0; i < n; i++)
                if (t[i] == '\n' && (i == 0 || t[i - 1] != '\r'))
                        extra++;
        o = malloc(n + extra + 2);
        if (!o)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (t[i] == '\n' && (i == 0 || t[i - 1] != '\r'))
                        o[k++] = '\r';
                o[k++] = t[i];
        }
        o[k] = 0;
        *ret = o;
        *ret_n = k;
        return 0;
}

int fuzzy_replace_flags(const char *content, size_t n, const char *old, size_t old_n,
                        const char *new_text, size_t new_n, bool replace_all, unsigned flags,
                        char **ret_content, size_t *ret_len, size_t *ret_count,
                        const char **ret_strategy, char **ret_error)
{
        _cleanup_free_ char *crlf = NULL;
        _cleanup_buf_ struct buf out = BUF_INIT(FUZZY_OUTPUT_MAX);
        struct fuzzy_result fr = {};
        const char *nt = new_text ?: "";
        size_t ntn = new_n, last = 0, count = 0;
        bool keep_crlf;
        char *s;
        int r;

        *ret_content = NULL;
        *ret_error = NULL;
        content = content ?: "";
        if (old_n == 0)
                return error_text(ret_error, "old_string cannot be empty");
        if (old_n == new_n && memcmp(old, nt, old_n) == 0)
                return error_text(ret_error, "old_string and new_string are identical");
        if (new_n > FUZZY_OUTPUT_MAX)
                return -E2BIG;

        r = fuzzy_find(content, n, old, old_n, &fr);
        if (r < 0)
                return r;
        if (fr.n_spans == 0)
                r = error_text(ret_error, "Could not find a match for old_string in the file");
        else if (fr.n_spans > 1 && !replace_all)
                r = error_text(ret_error,
                               "Found %zu matches for old_string. Provide more context to make "
                               "it unique, or use replace_all=True.",
                               fr.n_spans);
        else if (strcmp(fr.strategy, "exact") != 0)
                r = escape_drift(content, fr.spans, fr.n_spans, old, old_n, nt, new_n, ret_error);
        if (r != 0 || *ret_error) {
                fuzzy_result_release(&fr);
                return r < 0 ? r : 0;
        }

        keep_crlf = (flags & FUZZY_KEEP_CRLF) && fuzzy_has_bytes(content, n, "\r\n", 2);
        if (keep_crlf) {
                r = crlf_text(nt, ntn, &crlf, &ntn);
                if (r < 0) {
                        fuzzy_result_release(&fr);
                        return r;
                }
                nt = crlf;
        }
        for (size_t i = 0; r >= 0 && i < fr.n_spans; i++) {
                const struct fuzzy_span *sp = &fr.spans[i];

                if (sp->start < last)
                        continue; /* overlaps the previous replacement */
                r = buf_append(&out, content + last, sp->start - last);
                if (r >= 0)
                        r = buf_append(&out, nt, ntn);
                /* A block of whole lines ends before its last '\n': keep that line's CR. */
                if (r >= 0 && keep_crlf && sp->end > sp->start && sp->end < n &&
                    content[sp->end] == '\n' && content[sp->end - 1] == '\r' &&
                    (ntn == 0 || nt[ntn - 1] != '\r'))
                        r = buf_append_char(&out, '\r');
                last = sp->end;
                count++;
        }
        if (r >= 0)
                r = buf_append(&out, content + last, n - last);
        if (r >= 0 && !(s = buf_steal(&out, ret_len)))
                r = -ENOMEM;
        if (r < 0) {
                fuzzy_result_release(&fr);
                return r;
        }
        *ret_content = s;
        *ret_count = count;
        *ret_strategy = fr.strategy;
        fuzzy_result_release(&fr);
        return 0;
}

int fuzzy_replace(const char *content, size_t n, const char *old, size_t old_n,
                  const char *new_text, size_t new_n, bool replace_all, char **ret_content,
                  size_t *ret_len, size_t *ret_count, const char **ret_strategy, char **ret_error)
{
        return fuzzy_replace_flags(content, n, old, old_n, new_text, new_n, replace_all, 0,
                                   ret_content, ret_len, ret_count, ret_strategy, ret_error);
}

/* --- splitlines() --- */

void fuzzy_plines_release(struct plines *l)
{
        free(l->s);
        free(l->e);
        free(l->e2);
        *l = (struct plines){};
}

/* Length of the line boundary (Python's str.splitlines()) at s[i], or 0. */
static size_t boundary_at(const char *s, size_t n, size_t i)
{
        unsigned char c = (unsigned char) s[i];

        if (c == '\r')
                return i + 1 < n && s[i + 1] == '\n' ? 2 : 1;
        if (c == '\n' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e))
                return 1;
        if (c == 0xc2 && i + 1 < n && (unsigned char) s[i + 1] == 0x85)
                return 2;
        if (c == 0xe2 && i + 2 < n && (unsigned char) s[i + 1] == 0x80 &&
            ((unsigned char) s[i + 2] == 0xa8 || (unsigned char) s[i + 2] == 0xa9))
                return 3;
        return 0;
}

int fuzzy_splitlines(const char *s, size_t n, struct plines *ret)
{
        size_t cnt = 0, alloc;

        for (size_t i = 0; i < n;) {
                size_t b = 0, j = i;

                while (j < n && !(b = boundary_at(s, n, j)))
                        j++;
                cnt++;
                i = j + b;
        }
        if (cnt > FUZZY_LINES_MAX)
                return -E2BIG;
        alloc = MAX(cnt, (size_t) 1);
        ret->s = malloc(alloc * sizeof(size_t));
        ret->e = malloc(alloc * sizeof(size_t));
        ret->e2 = malloc(alloc * sizeof(size_t));
        if (!ret->s || !ret->e || !ret->e2)
                return -ENOMEM;
        ret->n = 0;
        for (size_t i = 0; i < n;) {
                size_t b = 0, j = i;

                while (j < n && !(b = boundary_at(s, n, j)))
                        j++;
                ret->s[ret->n] = i;
                ret->e[ret->n] = j;
                ret->e2[ret->n] = j + b;
                ret->n++;
                i = j + b;
        }
        return 0;
}

/* --- did you mean --- */

struct scored {
        double ratio;
        size_t idx;
};

static int cmp_scored(const void *x, const void *y)
{
        const struct scored *a = x, *b = y;

        /* The seed's stable sort on -ratio: ties keep file order. */
        if (a->ratio != b->ratio)
                return a->ratio > b->ratio ? -1 : 1;
        return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* find_closest_lines() into @out: 0, or -ENOMEM. */
static int did_you_mean(const char *content, size_t n, const char *old, size_t old_n,
                        struct buf *out)
{
        _cleanup_(fuzzy_plines_release) struct plines ol = {}, cl = {};
        _cleanup_(fuzzy_matcher_release) struct matcher m = {.work_max = FUZZY_WORK_MAX};
        _cleanup_free_ struct scored *sc = NULL;
        struct slice anchor = {};
        size_t nsc = 0, keys[3][2], nkeys = 0;
        int r;

        r = fuzzy_splitlines(old, old_n, &ol);
        if (r >= 0)
                r = fuzzy_splitlines(content, n, &cl);
        if (r == -E2BIG)
                return 0; /* too many lines to score */
        if (r < 0 || ol.n == 0 || cl.n == 0)
                return r;
        for (size_t k = 0; k < ol.n; k++) {
                anchor = fuzzy_sl_strip((struct slice){old + ol.s[k], ol.e[k] - ol.s[k]});
                if (anchor.n > 0)
                        break;
        }
        if (anchor.n == 0)
                return 0;
        sc = malloc(cl.n * sizeof(*sc));
        if (!sc)
                return -ENOMEM;
        for (size_t i = 0; i < cl.n; i++) {
                struct slice line =
                        fuzzy_sl_strip((struct slice){content + cl.s[i], cl.e[i] - cl.s[i]});
                double v;

                if (line.n == 0)
                        continue;
                r = fuzzy_ratio_bytes(&m, anchor, line, 0.3, true, &v);
                if (r == -E2BIG)
                        break; /* out of budget: suggest from the lines scored so far */
                if (r < 0)
                        return r;
                if (v > 0.3)
                        sc[nsc++] = (struct scored){v, i};
        }
        if (nsc > 1)
                qsort(sc, nsc, sizeof(*sc), cmp_scored);
        r = 0;
        for (size_t k = 0; k < MIN(nsc, (size_t) 3) && r >= 0; k++) {
                size_t idx = sc[k].idx, start = idx >= 2 ? idx - 2 : 0;
                size_t end = MIN(cl.n, idx + ol.n + 2);
                bool seen = false;

                for (size_t x = 0; x < nkeys; x++)
                        seen = seen || (keys[x][0] == start && keys[x][1] == end);
                if (seen)
                        continue;
                keys[nkeys][0] = start;
                keys[nkeys][1] = end;
                if (nkeys++ > 0)
                        r = buf_append_str(out, "\n---\n");
                for (size_t j = start; r >= 0 && j < end; j++) {
                        r = buf_printf(out, "%s%4zu| ", j > start ? "\n" : "", j + 1);
                        if (r >= 0)
                                r = buf_append(out, content + cl.s[j], cl.e[j] - cl.s[j]);
                }
        }
        return r == -E2BIG ? 0 : r; /* at the cap: what fits */
}

char *fuzzy_did_you_mean(const char *content, size_t n, const char *old, size_t old_n)
{
        _cleanup_buf_ struct buf out = BUF_INIT(DID_YOU_MEAN_MAX);

        if (old_n == 0 || n == 0 || n > FUZZY_CONTENT_MAX || old_n > FUZZY_PATTERN_MAX)
                return strdup("");
        if (did_you_mean(content, n, old, old_n, &out) < 0)
                return NULL;
        return buf_steal(&out, NULL);
}
