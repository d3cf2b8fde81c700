/* SPDX-License-Identifier: MIT */
/*
 * difflib.SequenceMatcher on dense symbols (the seed's similarity ratio), with its
 * upper bounds and the work budget FUZZY_WORK_MAX. Part of the fuzzy matcher
 * (fuzzy-internal.h); split from fuzzy-match.c along its section banners.
 */

#include "core/edit/fuzzy-internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/macro.h"
#include "basic/utf8.h"

/* --- difflib.SequenceMatcher on dense symbols --- */

int fuzzy_blockvec_add(struct blockvec *bv, uint32_t i, uint32_t j, uint32_t k)
{
        int r = fuzzy_grow((void **) &bv->v, &bv->alloc, bv->n + 1, sizeof(*bv->v), SIZE_MAX / 16);

        if (r < 0)
                return r;
        bv->v[bv->n++] = (struct block){i, j, k};
        return 0;
}

void fuzzy_matcher_release(struct matcher *m)
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

bool fuzzy_over_budget(const struct matcher *m)
{
        return m->work > m->work_max;
}

/*
 * Build b2j for b[0..lb) over @nsym symbols. An element is "popular" (difflib's autojunk,
 * dropped from b2j) when b has at least 200 elements and it occurs more than lb/100 + 1
 * times.
 */
int fuzzy_sm_index(struct matcher *m, const uint32_t *b, size_t lb, uint32_t nsym)
{
        size_t ntest;
        int r;

        r = fuzzy_grow((void **) &m->cnt, &m->cnt_alloc, (size_t) nsym + 1, sizeof(uint32_t),
                       SIZE_MAX / 8);
        if (r >= 0)
                r = fuzzy_grow((void **) &m->off, &m->off_alloc, (size_t) nsym + 1,
                               sizeof(uint32_t), SIZE_MAX / 8);
        if (r >= 0)
                r = fuzzy_grow((void **) &m->pos, &m->pos_alloc, MAX(lb, (size_t) 1),
                               sizeof(uint32_t), SIZE_MAX / 8);
        for (size_t i = 0; r >= 0 && i < 2; i++) {
                size_t old = m->stamp_alloc[i];

                r = fuzzy_grow((void **) &m->len[i], &m->len_alloc[i], lb + 1, sizeof(uint32_t),
                               SIZE_MAX / 8);
                if (r >= 0)
                        r = fuzzy_grow((void **) &m->stamp[i], &m->stamp_alloc[i], lb + 1,
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
                if (fuzzy_over_budget(m))
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
int fuzzy_sm_blocks(struct matcher *m, const uint32_t *a, size_t la, const uint32_t *b, size_t lb,
                    struct blockvec *out, size_t *ret_matches)
{
        size_t sp = 0, matches = 0;
        int r;

        r = fuzzy_grow((void **) &m->stack, &m->stack_alloc, 1, sizeof(*m->stack), SIZE_MAX / 32);
        if (r < 0)
                return r;
        m->stack[sp++] = (struct range4){0, (uint32_t) la, 0, (uint32_t) lb};
        while (sp > 0) {
                struct range4 q = m->stack[--sp];
                struct block x;

                if (fuzzy_over_budget(m))
                        return -E2BIG;
                x = sm_longest(m, a, b, q);
                if (fuzzy_over_budget(m))
                        return -E2BIG;
                if (x.k == 0)
                        continue;
                matches += x.k;
                if (out) {
                        r = fuzzy_blockvec_add(out, x.i, x.j, x.k);
                        if (r < 0)
                                return r;
                }
                r = fuzzy_grow((void **) &m->stack, &m->stack_alloc, sp + 2, sizeof(*m->stack),
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
size_t fuzzy_cp_len(const char *s, size_t n)
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
        r = fuzzy_grow((void **) &m->hk, &m->h_alloc, cap, sizeof(uint32_t), SIZE_MAX / 8);
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

double fuzzy_py_ratio(size_t matches, size_t total)
{
        return total ? 2.0 * (double) matches / (double) total : 1.0;
}

/*
 * SequenceMatcher(None, a, b).ratio() of two byte strings. When @cut >= 0 the caller only
 * asks whether the ratio reaches @cut (exceeds it when @strict): then an upper bound that
 * already fails the test may be returned instead. -E2BIG past the work budget.
 */
int fuzzy_ratio_bytes(struct matcher *m, struct slice a, struct slice b, double cut, bool strict,
                      double *ret)
{
        size_t la, lb, total, matches = 0, inter = 0;
        uint32_t nsym;
        double ub;
        int r;

        if (fuzzy_sl_eq(a, b) && a.n < 200) {
                /* Identical and too short for autojunk: the whole of it is one block. */
                *ret = 1.0;
                return 0;
        }
        r = fuzzy_grow((void **) &m->ca, &m->ca_alloc, a.n + 1, sizeof(uint32_t), SIZE_MAX / 8);
        if (r >= 0)
                r = fuzzy_grow((void **) &m->cb, &m->cb_alloc, b.n + 1, sizeof(uint32_t),
                               SIZE_MAX / 8);
        if (r < 0)
                return r;
        la = decode_cp(a.p, a.n, m->ca);
        lb = decode_cp(b.p, b.n, m->cb);
        total = la + lb;
        if (total == 0) {
                *ret = 1.0;
                return 0;
        }
        ub = fuzzy_py_ratio(MIN(la, lb), total); /* real_quick_ratio() */
        if (cut >= 0 && (strict ? ub <= cut : ub < cut)) {
                *ret = ub;
                return 0;
        }
        r = densify(m, m->ca, la, m->cb, lb, &nsym);
        if (r < 0)
                return r;
        r = fuzzy_sm_index(m, m->cb, lb, nsym);
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
        ub = fuzzy_py_ratio(inter, total);
        if (cut >= 0 && (strict ? ub <= cut : ub < cut)) {
                *ret = ub;
                return 0;
        }
        r = fuzzy_sm_blocks(m, m->ca, la, m->cb, lb, NULL, &matches);
        if (r == -E2BIG) {
                *ret = ub;
                return r;
        }
        if (r < 0)
                return r;
        *ret = fuzzy_py_ratio(matches, total);
        return 0;
}

double fuzzy_ratio(const char *a, size_t an, const char *b, size_t bn)
{
        struct matcher m = {.work_max = FUZZY_WORK_MAX};
        double v = 0.0;
        int r;

        r = fuzzy_ratio_bytes(&m, (struct slice){a, an}, (struct slice){b, bn}, -1, false, &v);
        fuzzy_matcher_release(&m);
        return r < 0 && r != -E2BIG ? 0.0 : v;
}
