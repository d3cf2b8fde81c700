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

#define NONE UINT32_MAX
/* Exact matches found with memmem() before switching to KMP (periodic patterns). */
#define MEMMEM_MATCHES_MAX 32
/* Memo entries of context_aware's line-pair verdicts. */
#define MEMO_MAX (1u << 22)
/* "Did you mean" text kept at most (the seed has no cap; a snippet is old_string's size). */
#define DID_YOU_MEAN_MAX (256u * 1024)

/* --- small helpers --- */

struct slice {
        const char *p;
        size_t n;
};

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

static struct slice sl_lstrip(struct slice x)
{
        size_t k;

        while ((k = ws_at(x.p, x.n, 0)) > 0) {
                x.p += k;
                x.n -= k;
        }
        return x;
}

static struct slice sl_strip(struct slice x)
{
        size_t k;

        x = sl_lstrip(x);
        while ((k = ws_before(x.p, x.n)) > 0)
                x.n -= k;
        return x;
}

static bool sl_eq(struct slice a, struct slice b)
{
        return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}

static bool has_bytes(const char *s, size_t n, const char *w, size_t wn)
{
        return n >= wn && memmem(s, n, w, wn) != NULL;
}

/* Grow *p (elements of @size) to hold at least @need, up to @max elements. */
static int grow(void **p, size_t *alloc, size_t need, size_t size, size_t max)
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

struct lines {
        const char *s;
        size_t len;
        uint32_t *start; /* n entries */
        size_t n;
};

static void lines_release(struct lines *l)
{
        free(l->start);
        *l = (struct lines){};
}

static int lines_split(const char *s, size_t n, struct lines *ret)
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
static size_t line_end(const struct lines *l, size_t i)
{
        return i + 1 < l->n ? l->start[i + 1] - 1 : l->len;
}

static struct slice line_at(const struct lines *l, size_t i)
{
        return (struct slice){l->s + l->start[i], line_end(l, i) - l->start[i]};
}

/* --- interning: equal byte strings get equal ids --- */

struct ient {
        uint64_t h;
        const char *p; /* NULL: empty slot */
        uint32_t len, id;
};

struct itab {
        struct ient *e;
        size_t cap; /* power of two */
        uint32_t n;
};

static void itab_release(struct itab *t)
{
        free(t->e);
        *t = (struct itab){};
}

static uint64_t hash_bytes(const char *p, size_t n)
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

static int itab_id(struct itab *t, struct slice x, uint32_t *ret)
{
        uint64_t h;
        size_t k;
        int r;

        if ((size_t) t->n * 2 >= t->cap) {
                r = itab_grow(t);
                if (r < 0)
                        return r;
        }
        h = hash_bytes(x.p, x.n);
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

struct spanvec {
        struct fuzzy_span *v;
        size_t n, alloc;
};

static int spanvec_add(struct spanvec *sv, size_t start, size_t end)
{
        int r = grow((void **) &sv->v, &sv->alloc, sv->n + 1, sizeof(*sv->v), FUZZY_SPANS_MAX);

        if (r < 0)
                return r;
        sv->v[sv->n++] = (struct fuzzy_span){start, end};
        return 0;
}

struct idxvec {
        size_t *v;
        size_t n, alloc;
};

static int idxvec_add(struct idxvec *iv, size_t x)
{
        int r = grow((void **) &iv->v, &iv->alloc, iv->n + 1, sizeof(*iv->v), FUZZY_SPANS_MAX);

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
static int find_bytes(const char *s, size_t n, const char *p, size_t m, struct spanvec *out)
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
                r = spanvec_add(out, (size_t) (q - s), (size_t) (q - s) + m);
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
                        r = spanvec_add(out, i + 1 - m, i + 1);
                        if (r < 0)
                                return r;
                        k = fail[k - 1];
                }
        }
        return 0;
}

/* Every i where s[i..i+m) == p[0..m), overlapping. */
static int find_ids(const uint32_t *s, size_t n, const uint32_t *p, size_t m, struct idxvec *out)
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
                        r = idxvec_add(out, i + 1 - m);
                        if (r < 0)
                                return r;
                        k = fail[k - 1];
                }
        }
        return 0;
}

/* --- difflib.SequenceMatcher on dense symbols --- */

struct block {
        uint32_t i, j, k;
};

struct blockvec {
        struct block *v;
        size_t n, alloc;
};

static int blockvec_add(struct blockvec *bv, uint32_t i, uint32_t j, uint32_t k)
{
        int r = grow((void **) &bv->v, &bv->alloc, bv->n + 1, sizeof(*bv->v), SIZE_MAX / 16);

        if (r < 0)
                return r;
        bv->v[bv->n++] = (struct block){i, j, k};
        return 0;
}

struct range4 {
        uint32_t alo, ahi, blo, bhi;
};

/*
 * Scratch of the matcher, reused between calls. Symbols of b are 0..nsym-1; a symbol of a
 * that b lacks is NONE.
 */
struct matcher {
        uint32_t *off, *pos, *cnt;
        size_t off_alloc, pos_alloc, cnt_alloc;
        uint32_t *len[2], *stamp[2];
        size_t len_alloc[2], stamp_alloc[2];
        uint32_t gen;
        struct range4 *stack;
        size_t stack_alloc;
        /* code point decoding and densifying (ratio) */
        uint32_t *ca, *cb;
        size_t ca_alloc, cb_alloc;
        uint32_t *hk, *hv;
        size_t h_alloc;
        uint64_t work, work_max;
};

static void matcher_release(struct matcher *m)
{
        free(m->off);
        free(m->pos);
        free(m->cnt);
        for (size_t i = 0; i < 2; i++) {
                free(m->len[i]);
                free(m->stamp[i]);
        }
        free(m->stack);
        free(m->ca);
        free(m->cb);
        free(m->hk);
        free(m->hv);
        *m = (struct matcher){};
}

static bool over_budget(const struct matcher *m)
{
        return m->work > m->work_max;
}

/*
 * Build b2j for b[0..lb) over @nsym symbols. An element is "popular" (difflib's autojunk,
 * dropped from b2j) when b has at least 200 elements and it occurs more than lb/100 + 1
 * times.
 */
static int sm_index(struct matcher *m, const uint32_t *b, size_t lb, uint32_t nsym)
{
        size_t ntest;
        int r;

        r = grow((void **) &m->cnt, &m->cnt_alloc, (size_t) nsym + 1, sizeof(uint32_t),
                 SIZE_MAX / 8);
        if (r >= 0)
                r = grow((void **) &m->off, &m->off_alloc, (size_t) nsym + 1, sizeof(uint32_t),
                         SIZE_MAX / 8);
        if (r >= 0)
                r = grow((void **) &m->pos, &m->pos_alloc, MAX(lb, (size_t) 1), sizeof(uint32_t),
                         SIZE_MAX / 8);
        for (size_t i = 0; r >= 0 && i < 2; i++) {
                size_t old = m->stamp_alloc[i];

                r = grow((void **) &m->len[i], &m->len_alloc[i], lb + 1, sizeof(uint32_t),
                         SIZE_MAX / 8);
                if (r >= 0)
                        r = grow((void **) &m->stamp[i], &m->stamp_alloc[i], lb + 1,
                                 sizeof(uint32_t), SIZE_MAX / 8);
                if (r >= 0 && m->stamp_alloc[i] > old)
                        memset(m->stamp[i] + old, 0, (m->stamp_alloc[i] - old) * sizeof(uint32_t));
        }
        if (r < 0)
                return r;
        m->work += lb + nsym;

        memset(m->cnt, 0, ((size_t) nsym + 1) * sizeof(uint32_t));
        for (size_t j = 0; j < lb; j++)
                m->cnt[b[j]]++;
        ntest = lb >= 200 ? lb / 100 + 1 : SIZE_MAX;
        m->off[0] = 0;
        for (uint32_t s = 0; s < nsym; s++)
                m->off[s + 1] = m->off[s] + (m->cnt[s] > ntest ? 0 : m->cnt[s]);
        /* cnt becomes the fill cursor. */
        for (uint32_t s = 0; s < nsym; s++)
                m->cnt[s] = m->off[s];
        for (size_t j = 0; j < lb; j++)
                if (m->cnt[b[j]] < m->off[b[j] + 1])
                        m->pos[m->cnt[b[j]]++] = (uint32_t) j;
        return 0;
}

/* difflib's find_longest_match() (no junk function, so only the non-junk extensions apply). */
static struct block sm_longest(struct matcher *m, const uint32_t *a, const uint32_t *b,
                               struct range4 q)
{
        uint32_t besti = q.alo, bestj = q.blo, bestk = 0;

        if (m->gen > UINT32_MAX - (q.ahi - q.alo) - 4) {
                for (size_t i = 0; i < 2; i++)
                        memset(m->stamp[i], 0, m->stamp_alloc[i] * sizeof(uint32_t));
                m->gen = 0;
        }
        /* A fresh generation: the row "before" alo is empty. */
        m->gen++;
        for (uint32_t i = q.alo; i < q.ahi; i++) {
                uint32_t s = a[i], g = ++m->gen, lo, hi;
                uint32_t *cl = m->len[g & 1], *cs = m->stamp[g & 1];
                const uint32_t *pl = m->len[(g - 1) & 1], *ps = m->stamp[(g - 1) & 1];

                m->work++;
                if (s == NONE)
                        continue;
                if (over_budget(m))
                        break; /* sm_blocks() reports it */
                lo = m->off[s];
                hi = m->off[s + 1];
                /* Skip the positions below blo (difflib iterates past them). */
                while (lo < hi) {
                        uint32_t mid = lo + (hi - lo) / 2;

                        if (m->pos[mid] < q.blo)
                                lo = mid + 1;
                        else
                                hi = mid;
                }
                for (uint32_t x = lo; x < m->off[s + 1]; x++) {
                        uint32_t j = m->pos[x], k;

                        if (j >= q.bhi)
                                break;
                        m->work++;
                        k = (j > 0 && ps[j - 1] == g - 1 ? pl[j - 1] : 0) + 1;
                        cl[j] = k;
                        cs[j] = g;
                        if (k > bestk) {
                                besti = i - k + 1;
                                bestj = j - k + 1;
                                bestk = k;
                        }
                }
        }
        while (besti > q.alo && bestj > q.blo && a[besti - 1] == b[bestj - 1]) {
                besti--;
                bestj--;
                bestk++;
        }
        while (besti + bestk < q.ahi && bestj + bestk < q.bhi &&
               a[besti + bestk] == b[bestj + bestk])
                bestk++;
        m->work += bestk;
        return (struct block){besti, bestj, bestk};
}

/*
 * get_matching_blocks() before sorting: the blocks into @out (may be NULL), their total size
 * into *ret_matches. Stops with -E2BIG past the work budget.
 */
static int sm_blocks(struct matcher *m, const uint32_t *a, size_t la, const uint32_t *b, size_t lb,
                     struct blockvec *out, size_t *ret_matches)
{
        size_t sp = 0, matches = 0;
        int r;

        r = grow((void **) &m->stack, &m->stack_alloc, 1, sizeof(*m->stack), SIZE_MAX / 32);
        if (r < 0)
                return r;
        m->stack[sp++] = (struct range4){0, (uint32_t) la, 0, (uint32_t) lb};
        while (sp > 0) {
                struct range4 q = m->stack[--sp];
                struct block x;

                if (over_budget(m))
                        return -E2BIG;
                x = sm_longest(m, a, b, q);
                if (over_budget(m))
                        return -E2BIG;
                if (x.k == 0)
                        continue;
                matches += x.k;
                if (out) {
                        r = blockvec_add(out, x.i, x.j, x.k);
                        if (r < 0)
                                return r;
                }
                r = grow((void **) &m->stack, &m->stack_alloc, sp + 2, sizeof(*m->stack),
                         SIZE_MAX / 32);
                if (r < 0)
                        return r;
                if (q.alo < x.i && q.blo < x.j)
                        m->stack[sp++] = (struct range4){q.alo, x.i, q.blo, x.j};
                if (x.i + x.k < q.ahi && x.j + x.k < q.bhi)
                        m->stack[sp++] = (struct range4){x.i + x.k, q.ahi, x.j + x.k, q.bhi};
        }
        *ret_matches = matches;
        return 0;
}

/* Decode UTF-8 into code points; an invalid byte becomes 0xDC00 + byte (surrogateescape). */
static size_t decode_cp(const char *s, size_t n, uint32_t *out)
{
        const unsigned char *u = (const unsigned char *) s;
        size_t i = 0, k = 0;

        while (i < n) {
                unsigned c = u[i];
                size_t l = 0;
                uint32_t cp = 0;

                if (c < 0x80) {
                        out[k++] = c;
                        i++;
                        continue;
                }
                if (c >= 0xc2 && c <= 0xdf && i + 1 < n && (u[i + 1] & 0xc0) == 0x80) {
                        l = 2;
                        cp = (uint32_t) (c & 0x1f) << 6 | (u[i + 1] & 0x3f);
                } else if (c >= 0xe0 && c <= 0xef && i + 2 < n && (u[i + 1] & 0xc0) == 0x80 &&
                           (u[i + 2] & 0xc0) == 0x80) {
                        cp = (uint32_t) (c & 0x0f) << 12 | (uint32_t) (u[i + 1] & 0x3f) << 6 |
                             (u[i + 2] & 0x3f);
                        l = (cp >= 0x800 && (cp < 0xd800 || cp > 0xdfff)) ? 3 : 0;
                } else if (c >= 0xf0 && c <= 0xf4 && i + 3 < n && (u[i + 1] & 0xc0) == 0x80 &&
                           (u[i + 2] & 0xc0) == 0x80 && (u[i + 3] & 0xc0) == 0x80) {
                        cp = (uint32_t) (c & 0x07) << 18 | (uint32_t) (u[i + 1] & 0x3f) << 12 |
                             (uint32_t) (u[i + 2] & 0x3f) << 6 | (u[i + 3] & 0x3f);
                        l = (cp >= 0x10000 && cp <= 0x10ffff) ? 4 : 0;
                }
                if (l == 0) {
                        out[k++] = 0xdc00 + c;
                        i++;
                } else {
                        out[k++] = cp;
                        i += l;
                }
        }
        return k;
}

/* Number of code points decode_cp() makes of @s. */
static size_t cp_len(const char *s, size_t n)
{
        size_t k = 0;

        for (size_t i = 0; i < n; k++) {
                size_t l = utf8_valid_seq_len((const unsigned char *) s + i, n - i);

                i += l ? l : 1;
        }
        return k;
}

/*
 * Map code points to dense symbols: those of b get 0..nsym-1 (in order of appearance), those
 * of a that b lacks get NONE. In place.
 */
static int densify(struct matcher *m, uint32_t *a, size_t la, uint32_t *b, size_t lb,
                   uint32_t *ret_nsym)
{
        size_t cap = 16, mask;
        uint32_t nsym = 0;
        int r;

        while (cap < 2 * (lb + 1))
                cap *= 2;
        r = grow((void **) &m->hk, &m->h_alloc, cap, sizeof(uint32_t), SIZE_MAX / 8);
        if (r >= 0 && m->h_alloc >= cap) {
                /* hv shares h_alloc: grow it to the same size. */
                uint32_t *hv = realloc(m->hv, m->h_alloc * sizeof(uint32_t));

                if (!hv)
                        return -ENOMEM;
                m->hv = hv;
        }
        if (r < 0)
                return r;
        mask = cap - 1;
        memset(m->hk, 0xff, cap * sizeof(uint32_t));
        m->work += la + lb + cap / 8;
        for (size_t j = 0; j < lb; j++) {
                size_t h = ((size_t) b[j] * 0x9e3779b1u) & mask;

                while (m->hk[h] != NONE && m->hk[h] != b[j])
                        h = (h + 1) & mask;
                if (m->hk[h] == NONE) {
                        m->hk[h] = b[j];
                        m->hv[h] = nsym++;
                }
                b[j] = m->hv[h];
        }
        for (size_t i = 0; i < la; i++) {
                size_t h = ((size_t) a[i] * 0x9e3779b1u) & mask;

                while (m->hk[h] != NONE && m->hk[h] != a[i])
                        h = (h + 1) & mask;
                a[i] = m->hk[h] == NONE ? NONE : m->hv[h];
        }
        *ret_nsym = nsym;
        return 0;
}

static double py_ratio(size_t matches, size_t total)
{
        return total ? 2.0 * (double) matches / (double) total : 1.0;
}

/*
 * SequenceMatcher(None, a, b).ratio() of two byte strings. When @cut >= 0 the caller only
 * asks whether the ratio reaches @cut (exceeds it when @strict): then an upper bound that
 * already fails the test may be returned instead. -E2BIG past the work budget.
 */
static int ratio_bytes(struct matcher *m, struct slice a, struct slice b, double cut, bool strict,
                       double *ret)
{
        size_t la, lb, total, matches = 0, inter = 0;
        uint32_t nsym;
        double ub;
        int r;

        if (sl_eq(a, b) && a.n < 200) {
                /* Identical and too short for autojunk: the whole of it is one block. */
                *ret = 1.0;
                return 0;
        }
        r = grow((void **) &m->ca, &m->ca_alloc, a.n + 1, sizeof(uint32_t), SIZE_MAX / 8);
        if (r >= 0)
                r = grow((void **) &m->cb, &m->cb_alloc, b.n + 1, sizeof(uint32_t), SIZE_MAX / 8);
        if (r < 0)
                return r;
        la = decode_cp(a.p, a.n, m->ca);
        lb = decode_cp(b.p, b.n, m->cb);
        total = la + lb;
        if (total == 0) {
                *ret = 1.0;
                return 0;
        }
        ub = py_ratio(MIN(la, lb), total); /* real_quick_ratio() */
        if (cut >= 0 && (strict ? ub <= cut : ub < cut)) {
                *ret = ub;
                return 0;
        }
        r = densify(m, m->ca, la, m->cb, lb, &nsym);
        if (r < 0)
                return r;
        r = sm_index(m, m->cb, lb, nsym);
        if (r < 0)
                return r;
        /* quick_ratio(): the multiset intersection (cnt holds the fill cursors: recount). */
        memset(m->cnt, 0, ((size_t) nsym + 1) * sizeof(uint32_t));
        for (size_t j = 0; j < lb; j++)
                m->cnt[m->cb[j]]++;
        for (size_t i = 0; i < la; i++)
                if (m->ca[i] != NONE && m->cnt[m->ca[i]] > 0) {
                        m->cnt[m->ca[i]]--;
                        inter++;
                }
        m->work += la + lb;
        ub = py_ratio(inter, total);
        if (cut >= 0 && (strict ? ub <= cut : ub < cut)) {
                *ret = ub;
                return 0;
        }
        r = sm_blocks(m, m->ca, la, m->cb, lb, NULL, &matches);
        if (r == -E2BIG) {
                *ret = ub;
                return r;
        }
        if (r < 0)
                return r;
        *ret = py_ratio(matches, total);
        return 0;
}

double fuzzy_ratio(const char *a, size_t an, const char *b, size_t bn)
{
        struct matcher m = {.work_max = FUZZY_WORK_MAX};
        double v = 0.0;
        int r;

        r = ratio_bytes(&m, (struct slice){a, an}, (struct slice){b, bn}, -1, false, &v);
        matcher_release(&m);
        return r < 0 && r != -E2BIG ? 0.0 : v;
}

/* --- the strategies --- */

struct fz {
        const char *c, *p; /* content, pattern */
        size_t cn, pn;
        struct lines cl, pl; /* split on '\n'; cl.start NULL until needed */
        struct matcher m;
};

static int need_lines(struct fz *z)
{
        int r;

        if (z->cl.start)
                return 0;
        r = lines_split(z->c, z->cn, &z->cl);
        if (r < 0)
                return r;
        return lines_split(z->p, z->pn, &z->pl);
}

/* Spans of the windows at line indexes @wins of @pattern_lines lines, in @lines' offsets. */
static int windows_to_spans(const struct lines *l, const struct idxvec *wins, size_t pattern_lines,
                            struct spanvec *out)
{
        for (size_t w = 0; w < wins->n; w++) {
                size_t i = wins->v[w];
                int r = spanvec_add(out, l->start[i], line_end(l, i + pattern_lines - 1));

                if (r < 0)
                        return r;
        }
        return 0;
}

typedef struct slice (*line_norm_fn)(struct slice);

/*
 * _find_normalized_matches(): blocks of whole lines whose normalised lines equal the
 * pattern's normalised lines.
 */
static int match_lines(const struct lines *cl, const struct lines *pl, line_norm_fn norm,
                       struct spanvec *out)
{
        _cleanup_free_ uint32_t *cid = NULL, *pid = NULL;
        _cleanup_free_ size_t *wv = NULL;
        struct itab t = {};
        struct idxvec wins = {};
        int r = 0;

        if (pl->n > cl->n)
                return 0;
        cid = malloc(cl->n * sizeof(uint32_t));
        pid = malloc(pl->n * sizeof(uint32_t));
        if (!cid || !pid)
                return -ENOMEM;
        /* Intern the pattern first: content lines that are no pattern line need no id. */
        for (size_t k = 0; r >= 0 && k < pl->n; k++)
                r = itab_id(&t, norm(line_at(pl, k)), &pid[k]);
        for (size_t i = 0; r >= 0 && i < cl->n; i++)
                r = itab_id(&t, norm(line_at(cl, i)), &cid[i]);
        itab_release(&t);
        if (r >= 0)
                r = find_ids(cid, cl->n, pid, pl->n, &wins);
        wv = wins.v;
        if (r >= 0)
                r = windows_to_spans(cl, &wins, pl->n, out);
        return r;
}

/* re.sub(r"[ \t]+", " ", s) into a new buffer. */
static int ws_collapse(const char *s, size_t n, char **ret, size_t *ret_n)
{
        char *o = malloc(n + 1);
        size_t k = 0;

        if (!o)
                return -ENOMEM;
        for (size_t i = 0; i < n;) {
                if (s[i] == ' ' || s[i] == '\t') {
                        while (i < n && (s[i] == ' ' || s[i] == '\t'))
                                i++;
                        o[k++] = ' ';
                } else
                        o[k++] = s[i++];
        }
        o[k] = 0;
        *ret = o;
        *ret_n = k;
        return 0;
}

static int cmp_size(const void *x, const void *y)
{
        size_t a = *(const size_t *) x, b = *(const size_t *) y;

        return a < b ? -1 : a > b;
}

/* Sorted, unique query offsets for the mapping sweeps, with their answers. */
struct queries {
        size_t *q;
        size_t n;
        size_t *first, *last, *ge; /* SIZE_MAX: none */
};

static void queries_release(struct queries *qs)
{
        free(qs->q);
        free(qs->first);
        free(qs->last);
        free(qs->ge);
        *qs = (struct queries){};
}

static int queries_init(struct queries *qs, const struct spanvec *nm, bool with_end_minus_1)
{
        size_t k = 0;

        qs->q = malloc(MAX(nm->n * 2, (size_t) 1) * sizeof(size_t));
        if (!qs->q)
                return -ENOMEM;
        for (size_t i = 0; i < nm->n; i++) {
                qs->q[k++] = nm->v[i].start;
                qs->q[k++] = with_end_minus_1 ? nm->v[i].end - 1 : nm->v[i].end;
        }
        qsort(qs->q, k, sizeof(size_t), cmp_size);
        qs->n = 0;
        for (size_t i = 0; i < k; i++)
                if (qs->n == 0 || qs->q[qs->n - 1] != qs->q[i])
                        qs->q[qs->n++] = qs->q[i];
        qs->first = malloc(MAX(qs->n, (size_t) 1) * sizeof(size_t));
        qs->last = malloc(MAX(qs->n, (size_t) 1) * sizeof(size_t));
        qs->ge = malloc(MAX(qs->n, (size_t) 1) * sizeof(size_t));
        if (!qs->first || !qs->last || !qs->ge)
                return -ENOMEM;
        for (size_t i = 0; i < qs->n; i++)
                qs->first[i] = qs->last[i] = qs->ge[i] = SIZE_MAX;
        return 0;
}

static size_t queries_find(const struct queries *qs, size_t v)
{
        size_t lo = 0, hi = qs->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (qs->q[mid] < v)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < qs->n && qs->q[lo] == v ? lo : SIZE_MAX;
}

/* One (original index -> normalised index) pair of the seed's orig_to_norm, in order. */
struct sweep {
        struct queries *qs;
        size_t ge_next, eq_next;
};

static void sweep_emit(struct sweep *w, size_t o, size_t v)
{
        struct queries *qs = w->qs;

        while (w->ge_next < qs->n && qs->q[w->ge_next] <= v)
                qs->ge[w->ge_next++] = o;
        while (w->eq_next < qs->n && qs->q[w->eq_next] < v)
                w->eq_next++;
        if (w->eq_next < qs->n && qs->q[w->eq_next] == v) {
                if (qs->first[w->eq_next] == SIZE_MAX)
                        qs->first[w->eq_next] = o;
                qs->last[w->eq_next] = o;
        }
}

/*
 * _map_normalized_positions(): the seed's walk of original and collapsed text side by side,
 * answering only the offsets the matches need. As upstream's fix for its issue 52491, the
 * trailing whitespace after a match is taken in only when the match itself ended in one.
 */
static int ws_map(const char *o, size_t on, const char *nz, size_t nn, const struct spanvec *nm,
                  struct spanvec *out)
{
        struct queries qs = {};
        struct sweep w = {.qs = &qs};
        size_t oi = 0, ni = 0;
        int r;

        r = queries_init(&qs, nm, true);
        if (r < 0) {
                queries_release(&qs);
                return r;
        }
        while (oi < on && ni < nn) {
                bool ows = o[oi] == ' ' || o[oi] == '\t';

                sweep_emit(&w, oi, ni);
                if (o[oi] == nz[ni]) {
                        oi++;
                        ni++;
                } else if (ows && nz[ni] == ' ') {
                        oi++;
                        if (oi < on && o[oi] != ' ' && o[oi] != '\t')
                                ni++;
                } else
                        oi++;
        }
        for (; oi < on; oi++)
                sweep_emit(&w, oi, nn);

        for (size_t i = 0; r >= 0 && i < nm->n; i++) {
                size_t ns = nm->v[i].start, ne = nm->v[i].end, a, b, os, oe;

                a = queries_find(&qs, ns);
                b = queries_find(&qs, ne - 1);
                if (qs.first[a] != SIZE_MAX)
                        os = qs.first[a];
                else if (qs.ge[a] != SIZE_MAX)
                        os = qs.ge[a];
                else
                        continue; /* the seed's min() of nothing raised here */
                if (qs.last[b] != SIZE_MAX)
                        oe = qs.last[b] + 1;
                else
                        oe = os + (ne - ns);
                if (ne < nn && nz[ne - 1] == ' ')
                        while (oe < on && (o[oe] == ' ' || o[oe] == '\t'))
                                oe++;
                oe = MIN(oe, on);
                r = spanvec_add(out, os, MAX(oe, os));
        }
        queries_release(&qs);
        return r;
}

/* UNICODE_MAP of the seed era: the UTF-8 form and its ASCII replacement. */
static const struct {
        const char *from, *to;
} unicode_map[] = {
        {"\xe2\x80\x9c", "\""},  {"\xe2\x80\x9d", "\""}, /* smart double quotes */
        {"\xe2\x80\x98", "'"},   {"\xe2\x80\x99", "'"},  /* smart single quotes */
        {"\xe2\x80\x94", "--"},  {"\xe2\x80\x93", "-"},  /* em and en dash */
        {"\xe2\x80\xa6", "..."}, {"\xc2\xa0", " "},      /* ellipsis, no-break space */
};

/* The map entry at s[i], or -1. */
static int unicode_at(const char *s, size_t n, size_t i)
{
        unsigned char c = (unsigned char) s[i];

        if (c != 0xe2 && c != 0xc2)
                return -1;
        for (size_t k = 0; k < ELEMENTSOF(unicode_map); k++) {
                size_t l = strlen(unicode_map[k].from);

                if (n - i >= l && memcmp(s + i, unicode_map[k].from, l) == 0)
                        return (int) k;
        }
        return -1;
}

/*
 * _unicode_normalize() into a new buffer (never longer: every entry shrinks or keeps the
 * length). *ret_changed: whether anything was replaced.
 */
static int unicode_normalize(const char *s, size_t n, char **ret, size_t *ret_n, bool *ret_changed)
{
        char *o = malloc(n + 1);
        size_t k = 0;
        bool changed = false;

        if (!o)
                return -ENOMEM;
        for (size_t i = 0; i < n;) {
                int e = unicode_at(s, n, i);

                if (e < 0) {
                        o[k++] = s[i++];
                        continue;
                }
                memcpy(o + k, unicode_map[e].to, strlen(unicode_map[e].to));
                k += strlen(unicode_map[e].to);
                i += strlen(unicode_map[e].from);
                changed = true;
        }
        o[k] = 0;
        *ret = o;
        *ret_n = k;
        *ret_changed = changed;
        return 0;
}

/*
 * _map_positions_norm_to_orig(): a match must start where an original character's
 * replacement starts (else it is dropped), and ends after the last original character whose
 * replacement starts before the match's end.
 */
static int unicode_map_back(const char *o, size_t on, const struct spanvec *nm, struct spanvec *out)
{
        struct queries qs = {};
        size_t oi = 0, ni = 0, qi = 0;
        int r;

        r = queries_init(&qs, nm, false);
        if (r < 0) {
                queries_release(&qs);
                return r;
        }
        /* first = the original offset whose unit starts at q; ge = first unit at or after q. */
        while (qi < qs.n) {
                int e = oi < on ? unicode_at(o, on, oi) : -1;
                size_t ol = e < 0 ? 1 : strlen(unicode_map[e].from);
                size_t nl = e < 0 ? 1 : strlen(unicode_map[e].to);

                while (qi < qs.n && qs.q[qi] <= ni) {
                        if (qs.q[qi] == ni && oi < on)
                                qs.first[qi] = oi;
                        qs.ge[qi] = oi;
                        qi++;
                }
                if (oi >= on)
                        break;
                /* Queries strictly inside this unit's replacement: no start, ge is the next. */
                while (qi < qs.n && qs.q[qi] < ni + nl)
                        qs.ge[qi++] = oi + ol;
                oi += ol;
                ni += nl;
        }
        for (size_t i = 0; r >= 0 && i < nm->n; i++) {
                size_t a = queries_find(&qs, nm->v[i].start), b = queries_find(&qs, nm->v[i].end);

                if (qs.first[a] == SIZE_MAX)
                        continue;
                r = spanvec_add(out, qs.first[a], qs.ge[b] == SIZE_MAX ? on : qs.ge[b]);
        }
        queries_release(&qs);
        return r;
}

static int strategy_exact(struct fz *z, struct spanvec *out)
{
        return find_bytes(z->c, z->cn, z->p, z->pn, out);
}

static int strategy_line_trimmed(struct fz *z, struct spanvec *out)
{
        int r = need_lines(z);

        return r < 0 ? r : match_lines(&z->cl, &z->pl, sl_strip, out);
}

static int strategy_whitespace_normalized(struct fz *z, struct spanvec *out)
{
        _cleanup_free_ char *nc = NULL, *np = NULL;
        struct spanvec nm = {};
        size_t ncn, npn;
        int r;

        r = ws_collapse(z->c, z->cn, &nc, &ncn);
        if (r >= 0)
                r = ws_collapse(z->p, z->pn, &np, &npn);
        if (r >= 0)
                r = find_bytes(nc, ncn, np, npn, &nm);
        if (r >= 0 && nm.n > 0)
                r = ws_map(z->c, z->cn, nc, ncn, &nm, out);
        free(nm.v);
        return r;
}

static int strategy_indentation_flexible(struct fz *z, struct spanvec *out)
{
        int r = need_lines(z);

        return r < 0 ? r : match_lines(&z->cl, &z->pl, sl_lstrip, out);
}

static int strategy_escape_normalized(struct fz *z, struct spanvec *out)
{
        _cleanup_free_ char *u = malloc(z->pn + 1);
        size_t k = 0;
        bool changed = false;

        if (!u)
                return -ENOMEM;
        /* The seed's three str.replace() passes touch disjoint pairs: one pass is the same. */
        for (size_t i = 0; i < z->pn; i++) {
                char c = i + 1 < z->pn && z->p[i] == '\\' ? z->p[i + 1] : 0;

                if (c == 'n' || c == 't' || c == 'r') {
                        u[k++] = c == 'n' ? '\n' : c == 't' ? '\t' : '\r';
                        i++;
                        changed = true;
                } else
                        u[k++] = z->p[i];
        }
        if (!changed)
                return 0;
        return find_bytes(z->c, z->cn, u, k, out);
}

static int strategy_trimmed_boundary(struct fz *z, struct spanvec *out)
{
        _cleanup_free_ uint32_t *ecid = NULL, *scid = NULL, *epid = NULL, *spid = NULL;
        _cleanup_free_ size_t *mv = NULL;
        struct idxvec mids = {}, wins = {};
        struct itab t = {};
        size_t P, L;
        int r;

        r = need_lines(z);
        if (r < 0)
                return r;
        P = z->pl.n;
        L = z->cl.n;
        if (P > L)
                return 0;
        ecid = malloc(L * sizeof(uint32_t));
        scid = malloc(L * sizeof(uint32_t));
        epid = malloc(P * sizeof(uint32_t));
        spid = malloc(P * sizeof(uint32_t));
        if (!ecid || !scid || !epid || !spid)
                return -ENOMEM;
        for (size_t k = 0; r >= 0 && k < P; k++) {
                r = itab_id(&t, line_at(&z->pl, k), &epid[k]);
                if (r >= 0)
                        r = itab_id(&t, sl_strip(line_at(&z->pl, k)), &spid[k]);
        }
        for (size_t i = 0; r >= 0 && i < L; i++) {
                r = itab_id(&t, line_at(&z->cl, i), &ecid[i]);
                if (r >= 0)
                        r = itab_id(&t, sl_strip(line_at(&z->cl, i)), &scid[i]);
        }
        itab_release(&t);
        if (r < 0)
                return r;
        if (P >= 3) {
                /* Middle lines verbatim: search them, then check the trimmed boundaries. */
                r = find_ids(ecid, L, epid + 1, P - 2, &mids);
                mv = mids.v;
                for (size_t x = 0; r >= 0 && x < mids.n; x++) {
                        size_t i = mids.v[x] - 1;

                        if (mids.v[x] == 0 || i + P > L)
                                continue;
                        if (scid[i] == spid[0] && scid[i + P - 1] == spid[P - 1])
                                r = idxvec_add(&wins, i);
                }
        } else
                for (size_t i = 0; r >= 0 && i + P <= L; i++)
                        if (scid[i] == spid[0] && scid[i + P - 1] == spid[P - 1])
                                r = idxvec_add(&wins, i);
        if (r >= 0)
                r = windows_to_spans(&z->cl, &wins, P, out);
        free(wins.v);
        return r;
}

static int strategy_unicode_normalized(struct fz *z, struct spanvec *out)
{
        _cleanup_free_ char *nc = NULL, *np = NULL;
        struct lines ncl = {}, npl = {};
        struct spanvec nm = {};
        size_t ncn, npn;
        bool cc, pc;
        int r;

        r = unicode_normalize(z->c, z->cn, &nc, &ncn, &cc);
        if (r >= 0)
                r = unicode_normalize(z->p, z->pn, &np, &npn, &pc);
        if (r < 0 || (!cc && !pc))
                return r;
        r = find_bytes(nc, ncn, np, npn, &nm);
        if (r >= 0 && nm.n == 0) {
                r = lines_split(nc, ncn, &ncl);
                if (r >= 0)
                        r = lines_split(np, npn, &npl);
                if (r >= 0)
                        r = match_lines(&ncl, &npl, sl_strip, &nm);
                lines_release(&ncl);
                lines_release(&npl);
        }
        if (r >= 0 && nm.n > 0)
                r = unicode_map_back(z->c, z->cn, &nm, out);
        free(nm.v);
        return r;
}

static int strategy_block_anchor(struct fz *z, struct spanvec *out)
{
        _cleanup_free_ char *nc = NULL, *np = NULL;
        _cleanup_free_ uint32_t *sid = NULL;
        _cleanup_free_ size_t *cv = NULL;
        struct lines ncl = {}, npl = {};
        struct idxvec cands = {};
        struct itab t = {};
        uint32_t first, last;
        size_t ncn, npn, P;
        double threshold;
        bool cc, pc;
        int r;

        r = need_lines(z);
        if (r < 0)
                return r;
        if (z->pl.n < 2 || z->pl.n > z->cl.n)
                return 0;
        r = unicode_normalize(z->c, z->cn, &nc, &ncn, &cc);
        if (r >= 0)
                r = unicode_normalize(z->p, z->pn, &np, &npn, &pc);
        if (r >= 0)
                r = lines_split(nc, ncn, &ncl);
        if (r >= 0)
                r = lines_split(np, npn, &npl);
        P = npl.n;
        if (r >= 0)
                r = itab_id(&t, sl_strip(line_at(&npl, 0)), &first);
        if (r >= 0)
                r = itab_id(&t, sl_strip(line_at(&npl, P - 1)), &last);
        if (r >= 0 && !(sid = malloc(ncl.n * sizeof(uint32_t))))
                r = -ENOMEM;
        for (size_t i = 0; r >= 0 && i < ncl.n; i++)
                r = itab_id(&t, sl_strip(line_at(&ncl, i)), &sid[i]);
        itab_release(&t);
        for (size_t i = 0; r >= 0 && i + P <= ncl.n; i++)
                if (sid[i] == first && sid[i + P - 1] == last)
                        r = idxvec_add(&cands, i);
        cv = cands.v;
        threshold = cands.n == 1 ? 0.50 : 0.70;
        for (size_t x = 0; r >= 0 && x < cands.n; x++) {
                size_t i = cands.v[x];
                double sim = 1.0;

                if (P > 2) {
                        struct slice cm = {nc + ncl.start[i + 1],
                                           line_end(&ncl, i + P - 2) - ncl.start[i + 1]};
                        struct slice pm = {np + npl.start[1], line_end(&npl, P - 2) - npl.start[1]};

                        r = ratio_bytes(&z->m, cm, pm, threshold, false, &sim);
                        if (r < 0)
                                break;
                }
                if (sim >= threshold)
                        /* Offsets from the original lines: normalising keeps the line count. */
                        r = spanvec_add(out, z->cl.start[i], line_end(&z->cl, i + P - 1));
        }
        lines_release(&ncl);
        lines_release(&npl);
        return r;
}

/* Memo of context_aware's "ratio >= 0.80" per (pattern line, content line) id pair. */
struct memo {
        uint64_t *k; /* key + 1 (0 = empty) */
        uint8_t *v;
        size_t cap, n;
};

static void memo_release(struct memo *mm)
{
        free(mm->k);
        free(mm->v);
        *mm = (struct memo){};
}

static int memo_get(const struct memo *mm, uint64_t key)
{
        if (mm->cap == 0)
                return -1;
        for (size_t h = (size_t) (hash_bytes((const char *) &key, 8) & (mm->cap - 1)); mm->k[h];
             h = (h + 1) & (mm->cap - 1))
                if (mm->k[h] == key + 1)
                        return mm->v[h];
        return -1;
}

static void memo_put(struct memo *mm, uint64_t key, bool val)
{
        size_t h;

        if (mm->n * 2 >= mm->cap) {
                size_t cap = mm->cap ? mm->cap * 2 : 4096;
                uint64_t *k;
                uint8_t *v;

                if (cap > MEMO_MAX)
                        return; /* full: later pairs are just computed again */
                k = calloc(cap, sizeof(*k));
                v = calloc(cap, 1);
                if (!k || !v) {
                        free(k);
                        free(v);
                        return;
                }
                for (size_t i = 0; i < mm->cap; i++) {
                        if (!mm->k[i])
                                continue;
                        for (h = (size_t) (hash_bytes((const char *) &mm->k[i], 8) & (cap - 1));
                             k[h]; h = (h + 1) & (cap - 1))
                                ;
                        k[h] = mm->k[i];
                        v[h] = mm->v[i];
                }
                free(mm->k);
                free(mm->v);
                mm->k = k;
                mm->v = v;
                mm->cap = cap;
        }
        key++;
        for (h = (size_t) (hash_bytes((const char *) &key, 8) & (mm->cap - 1)); mm->k[h];
             h = (h + 1) & (mm->cap - 1))
                ;
        mm->k[h] = key;
        mm->v[h] = val;
        mm->n++;
}

static int strategy_context_aware(struct fz *z, struct spanvec *out)
{
        _cleanup_free_ uint32_t *cid = NULL, *pid = NULL, *clen = NULL, *plen = NULL;
        _cleanup_free_ struct slice *cs = NULL, *ps = NULL;
        struct memo mm = {};
        struct itab t = {};
        size_t P, L, need;
        int r;

        r = need_lines(z);
        if (r < 0)
                return r;
        P = z->pl.n;
        L = z->cl.n;
        if (P > L)
                return 0;
        /* "at least half the lines": count >= P * 0.5. */
        need = (P + 1) / 2;
        cid = malloc(L * sizeof(uint32_t));
        pid = malloc(P * sizeof(uint32_t));
        cs = malloc(L * sizeof(struct slice));
        ps = malloc(P * sizeof(struct slice));
        clen = malloc(L * sizeof(uint32_t));
        plen = malloc(P * sizeof(uint32_t));
        if (!cid || !pid || !cs || !ps || !clen || !plen)
                return -ENOMEM;
        for (size_t k = 0; r >= 0 && k < P; k++) {
                ps[k] = sl_strip(line_at(&z->pl, k));
                plen[k] = (uint32_t) cp_len(ps[k].p, ps[k].n);
                r = itab_id(&t, ps[k], &pid[k]);
        }
        for (size_t i = 0; r >= 0 && i < L; i++) {
                cs[i] = sl_strip(line_at(&z->cl, i));
                clen[i] = (uint32_t) cp_len(cs[i].p, cs[i].n);
                r = itab_id(&t, cs[i], &cid[i]);
        }
        itab_release(&t);
        for (size_t i = 0; r >= 0 && i + P <= L; i++) {
                size_t count = 0;

                for (size_t k = 0; k < P && count < need && count + (P - k) >= need; k++) {
                        uint64_t key = (uint64_t) pid[k] << 32 | cid[i + k];
                        size_t la = plen[k], lb = clen[i + k];
                        double sim;
                        int v;

                        z->m.work++;
                        /* real_quick_ratio() from the lengths alone: no decoding, no memo. */
                        if (la + lb > 0 && py_ratio(MIN(la, lb), la + lb) < 0.80)
                                continue;
                        /* Equal and too short for autojunk: ratio 1.0. */
                        v = pid[k] == cid[i + k] && la < 200 ? 1 : memo_get(&mm, key);
                        if (v < 0) {
                                /* SequenceMatcher(None, p_line.strip(), c_line.strip()) */
                                r = ratio_bytes(&z->m, ps[k], cs[i + k], 0.80, false, &sim);
                                if (r < 0)
                                        break;
                                v = sim >= 0.80;
                                memo_put(&mm, key, v);
                        }
                        count += (size_t) v;
                }
                if (r >= 0 && over_budget(&z->m))
                        r = -E2BIG;
                if (r >= 0 && count >= need)
                        r = spanvec_add(out, z->cl.start[i], line_end(&z->cl, i + P - 1));
        }
        memo_release(&mm);
        return r;
}

static const struct {
        const char *name;
        int (*fn)(struct fz *z, struct spanvec *out);
} strategies[] = {
        {"exact", strategy_exact},
        {"line_trimmed", strategy_line_trimmed},
        {"whitespace_normalized", strategy_whitespace_normalized},
        {"indentation_flexible", strategy_indentation_flexible},
        {"escape_normalized", strategy_escape_normalized},
        {"trimmed_boundary", strategy_trimmed_boundary},
        {"unicode_normalized", strategy_unicode_normalized},
        {"block_anchor", strategy_block_anchor},
        {"context_aware", strategy_context_aware},
};

void fuzzy_result_release(struct fuzzy_result *r)
{
        if (!r)
                return;
        free(r->spans);
        *r = (struct fuzzy_result){};
}

int fuzzy_find(const char *content, size_t n, const char *old, size_t old_n,
               struct fuzzy_result *ret)
{
        struct fz z = {.c = content ?: "", .cn = n, .p = old ?: "", .pn = old_n};
        struct spanvec sv = {};
        int r = 0;

        *ret = (struct fuzzy_result){};
        if (n > FUZZY_CONTENT_MAX || old_n > FUZZY_PATTERN_MAX)
                return -E2BIG;
        if (old_n == 0)
                return 0;
        z.m.work_max = FUZZY_WORK_MAX;
        for (size_t i = 0; i < ELEMENTSOF(strategies); i++) {
                r = strategies[i].fn(&z, &sv);
                if (r < 0 || sv.n > 0) {
                        if (r >= 0)
                                ret->strategy = strategies[i].name;
                        break;
                }
        }
        lines_release(&z.cl);
        lines_release(&z.pl);
        matcher_release(&z.m);
        if (r < 0) {
                free(sv.v);
                return r;
        }
        ret->spans = sv.v;
        ret->n_spans = sv.n;
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
                if (has_bytes(c + s[i].start, s[i].end - s[i].start, w, 2))
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
                if (!has_bytes(new_text, new_n, suspects[i].seq, 2) ||
                    !has_bytes(old, old_n, suspects[i].seq, 2) ||
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

        keep_crlf = (flags & FUZZY_KEEP_CRLF) && has_bytes(content, n, "\r\n", 2);
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

struct plines {
        size_t *s, *e; /* [s, e) without the line end; e2: with it */
        size_t *e2;
        size_t n;
};

static void plines_release(struct plines *l)
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

static int splitlines(const char *s, size_t n, struct plines *ret)
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
        _cleanup_(plines_release) struct plines ol = {}, cl = {};
        _cleanup_(matcher_release) struct matcher m = {.work_max = FUZZY_WORK_MAX};
        _cleanup_free_ struct scored *sc = NULL;
        struct slice anchor = {};
        size_t nsc = 0, keys[3][2], nkeys = 0;
        int r;

        r = splitlines(old, old_n, &ol);
        if (r >= 0)
                r = splitlines(content, n, &cl);
        if (r == -E2BIG)
                return 0; /* too many lines to score */
        if (r < 0 || ol.n == 0 || cl.n == 0)
                return r;
        for (size_t k = 0; k < ol.n; k++) {
                anchor = sl_strip((struct slice){old + ol.s[k], ol.e[k] - ol.s[k]});
                if (anchor.n > 0)
                        break;
        }
        if (anchor.n == 0)
                return 0;
        sc = malloc(cl.n * sizeof(*sc));
        if (!sc)
                return -ENOMEM;
        for (size_t i = 0; i < cl.n; i++) {
                struct slice line = sl_strip((struct slice){content + cl.s[i], cl.e[i] - cl.s[i]});
                double v;

                if (line.n == 0)
                        continue;
                r = ratio_bytes(&m, anchor, line, 0.3, true, &v);
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

/* --- unified diff --- */

/* difflib's _format_range_unified(). */
static int put_range(struct buf *b, size_t start, size_t stop)
{
        size_t beginning = start + 1, length = stop - start;

        if (length == 1)
                return buf_printf(b, "%zu", beginning);
        if (length == 0)
                beginning--;
        return buf_printf(b, "%zu,%zu", beginning, length);
}

struct opcode {
        char tag; /* 'e'qual 'r'eplace 'd'elete 'i'nsert */
        size_t i1, i2, j1, j2;
};

static int cmp_block(const void *x, const void *y)
{
        const struct block *a = x, *b = y;

        if (a->i != b->i)
                return a->i < b->i ? -1 : 1;
        return a->j < b->j ? -1 : a->j > b->j;
}

struct difftext {
        struct buf *b;
        const char *a_s, *b_s;
        const struct plines *al, *bl;
        bool cut;
};

static int put_line(struct difftext *d, char mark, const char *s, const struct plines *l, size_t i)
{
        struct buf *b = d->b;
        size_t len = l->e2[i] - l->s[i];
        int r;

        if (d->cut)
                return 0;
        if (b->len + len + 64 > b->cap) {
                d->cut = true;
                return buf_append_str(b, "[... diff truncated]\n");
        }
        r = buf_append_char(b, mark);
        if (r >= 0)
                r = buf_append(b, s + l->s[i], len);
        if (r >= 0 && l->e2[i] == l->e[i])
                r = buf_append_str(b, "\n\\ No newline at end of file\n");
        return r;
}

static int put_group(struct difftext *d, const struct opcode *g, size_t ng)
{
        int r;

        if (d->cut)
                return 0;
        r = buf_append_str(d->b, "@@ -");
        if (r >= 0)
                r = put_range(d->b, g[0].i1, g[ng - 1].i2);
        if (r >= 0)
                r = buf_append_str(d->b, " +");
        if (r >= 0)
                r = put_range(d->b, g[0].j1, g[ng - 1].j2);
        if (r >= 0)
                r = buf_append_str(d->b, " @@\n");
        for (size_t x = 0; r >= 0 && x < ng; x++) {
                const struct opcode *o = &g[x];

                if (o->tag == 'e') {
                        for (size_t y = o->i1; r >= 0 && y < o->i2; y++)
                                r = put_line(d, ' ', d->a_s, d->al, y);
                        continue;
                }
                if (o->tag == 'r' || o->tag == 'd')
                        for (size_t y = o->i1; r >= 0 && y < o->i2; y++)
                                r = put_line(d, '-', d->a_s, d->al, y);
                if (o->tag == 'r' || o->tag == 'i')
                        for (size_t y = o->j1; r >= 0 && y < o->j2; y++)
                                r = put_line(d, '+', d->b_s, d->bl, y);
        }
        return r;
}

/*
 * difflib's get_matching_blocks() for line ids. Past the work budget only the common leading
 * and trailing lines are matched (the changed middle then shows as one replace).
 */
static int diff_blocks(struct matcher *m, uint32_t *ai, size_t la, uint32_t *bi, size_t lb,
                       uint32_t nids, struct blockvec *bv)
{
        _cleanup_free_ uint32_t *bmap = NULL;
        size_t ncol = 0, matches;
        uint32_t nsym = 0;
        int r;

        /* Dense symbols of b; a's lines that b lacks become NONE. */
        bmap = malloc(MAX((size_t) nids, (size_t) 1) * sizeof(uint32_t));
        if (!bmap)
                return -ENOMEM;
        memset(bmap, 0xff, MAX((size_t) nids, (size_t) 1) * sizeof(uint32_t));
        for (size_t k = 0; k < lb; k++) {
                if (bmap[bi[k]] == NONE)
                        bmap[bi[k]] = nsym++;
                bi[k] = bmap[bi[k]];
        }
        for (size_t k = 0; k < la; k++)
                ai[k] = bmap[ai[k]];
        r = sm_index(m, bi, lb, nsym);
        if (r >= 0)
                r = sm_blocks(m, ai, la, bi, lb, bv, &matches);
        if (r == -E2BIG) {
                size_t pre = 0, suf = 0;

                bv->n = 0;
                while (pre < la && pre < lb && ai[pre] == bi[pre])
                        pre++;
                while (suf < la - pre && suf < lb - pre && ai[la - 1 - suf] == bi[lb - 1 - suf])
                        suf++;
                r = 0;
                if (pre > 0)
                        r = blockvec_add(bv, 0, 0, (uint32_t) pre);
                if (r >= 0 && suf > 0)
                        r = blockvec_add(bv, (uint32_t) (la - suf), (uint32_t) (lb - suf),
                                         (uint32_t) suf);
        }
        if (r < 0)
                return r;
        if (bv->n > 1)
                qsort(bv->v, bv->n, sizeof(*bv->v), cmp_block);
        /* Collapse adjacent blocks, then difflib's (la, lb, 0) sentinel. */
        for (size_t k = 0; k < bv->n; k++) {
                struct block *p = ncol > 0 ? &bv->v[ncol - 1] : NULL;

                if (p && p->i + p->k == bv->v[k].i && p->j + p->k == bv->v[k].j)
                        p->k += bv->v[k].k;
                else
                        bv->v[ncol++] = bv->v[k];
        }
        bv->n = ncol;
        return blockvec_add(bv, (uint32_t) la, (uint32_t) lb, 0);
}

static void blockvec_release(struct blockvec *bv)
{
        free(bv->v);
        *bv = (struct blockvec){};
}

/* The diff of @a and @b into @out: 0 (also when cut at the cap), or -ENOMEM. */
static int diff_text(const char *a, size_t an, const char *b, size_t bn, const char *from_name,
                     const char *to_name, struct buf *out)
{
        _cleanup_(plines_release) struct plines al = {}, bl = {};
        _cleanup_(matcher_release) struct matcher m = {.work_max = FUZZY_WORK_MAX};
        _cleanup_(itab_release) struct itab t = {};
        _cleanup_(blockvec_release) struct blockvec bv = {};
        _cleanup_free_ uint32_t *ai = NULL, *bi = NULL;
        _cleanup_free_ struct opcode *ops = NULL, *grp = NULL;
        struct difftext d = {.b = out, .a_s = a, .b_s = b, .al = &al, .bl = &bl};
        size_t nops = 0, ng = 0, i = 0, j = 0;
        int r;

        r = splitlines(a, an, &al);
        if (r >= 0)
                r = splitlines(b, bn, &bl);
        if (r == -E2BIG) {
                /* More lines than can be indexed: say so instead of a wrong diff. */
                if (an == bn && memcmp(a, b, an) == 0)
                        return 0;
                r = buf_printf(out, "--- %s\n+++ %s\n[... diff omitted: too many lines]\n",
                               from_name, to_name);
                return r == -E2BIG ? 0 : r;
        }
        if (r < 0)
                return r;
        ai = malloc(MAX(al.n, (size_t) 1) * sizeof(uint32_t));
        bi = malloc(MAX(bl.n, (size_t) 1) * sizeof(uint32_t));
        if (!ai || !bi)
                return -ENOMEM;
        for (size_t k = 0; r >= 0 && k < al.n; k++)
                r = itab_id(&t, (struct slice){a + al.s[k], al.e2[k] - al.s[k]}, &ai[k]);
        for (size_t k = 0; r >= 0 && k < bl.n; k++)
                r = itab_id(&t, (struct slice){b + bl.s[k], bl.e2[k] - bl.s[k]}, &bi[k]);
        if (r >= 0)
                r = diff_blocks(&m, ai, al.n, bi, bl.n, t.n, &bv);
        if (r < 0)
                return r;

        /* get_opcodes() */
        ops = malloc((2 * bv.n + 1) * sizeof(*ops));
        grp = malloc((2 * bv.n + 2) * sizeof(*grp));
        if (!ops || !grp)
                return -ENOMEM;
        for (size_t k = 0; k < bv.n; k++) {
                size_t bi2 = bv.v[k].i, bj = bv.v[k].j, sz = bv.v[k].k;
                char tag = 0;

                if (i < bi2 && j < bj)
                        tag = 'r';
                else if (i < bi2)
                        tag = 'd';
                else if (j < bj)
                        tag = 'i';
                if (tag)
                        ops[nops++] = (struct opcode){tag, i, bi2, j, bj};
                i = bi2 + sz;
                j = bj + sz;
                if (sz)
                        ops[nops++] = (struct opcode){'e', bi2, i, bj, j};
        }
        if (nops == 0 || (nops == 1 && ops[0].tag == 'e'))
                return 0; /* no difference: difflib yields nothing */

        /* get_grouped_opcodes(3) */
        if (ops[0].tag == 'e') {
                ops[0].i1 = MAX(ops[0].i1, ops[0].i2 >= 3 ? ops[0].i2 - 3 : 0);
                ops[0].j1 = MAX(ops[0].j1, ops[0].j2 >= 3 ? ops[0].j2 - 3 : 0);
        }
        if (ops[nops - 1].tag == 'e') {
                ops[nops - 1].i2 = MIN(ops[nops - 1].i2, ops[nops - 1].i1 + 3);
                ops[nops - 1].j2 = MIN(ops[nops - 1].j2, ops[nops - 1].j1 + 3);
        }
        r = buf_printf(out, "--- %s\n+++ %s\n", from_name, to_name);
        for (size_t k = 0; r >= 0 && k < nops; k++) {
                struct opcode o = ops[k];

                if (o.tag == 'e' && o.i2 - o.i1 > 6) {
                        grp[ng++] = (struct opcode){'e', o.i1, MIN(o.i2, o.i1 + 3), o.j1,
                                                    MIN(o.j2, o.j1 + 3)};
                        r = put_group(&d, grp, ng);
                        ng = 0;
                        o.i1 = MAX(o.i1, o.i2 - 3);
                        o.j1 = MAX(o.j1, o.j2 - 3);
                }
                grp[ng++] = o;
        }
        if (r >= 0 && ng > 0 && !(ng == 1 && grp[0].tag == 'e'))
                r = put_group(&d, grp, ng);
        return r == -E2BIG ? 0 : r; /* at the cap: cut */
}

int fuzzy_unified_diff(const char *a, size_t an, const char *b, size_t bn, const char *from_name,
                       const char *to_name, size_t cap, char **ret, size_t *ret_len)
{
        _cleanup_buf_ struct buf out = BUF_INIT(MAX(cap, (size_t) 256));
        char *s;
        int r;

        r = diff_text(a ?: "", an, b ?: "", bn, from_name, to_name, &out);
        if (r < 0)
                return r;
        s = buf_steal(&out, ret_len);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}
