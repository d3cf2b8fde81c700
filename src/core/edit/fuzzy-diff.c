/* SPDX-License-Identifier: MIT */
/*
 * difflib.unified_diff() on lines (the seed's diff of an edit). Part of the fuzzy matcher
 * (fuzzy-internal.h); split from fuzzy-match.c along its section banners.
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
        r = fuzzy_sm_index(m, bi, lb, nsym);
        if (r >= 0)
                r = fuzzy_sm_blocks(m, ai, la, bi, lb, bv, &matches);
        if (r == -E2BIG) {
                size_t pre = 0, suf = 0;

                bv->n = 0;
                while (pre < la && pre < lb && ai[pre] == bi[pre])
                        pre++;
                while (suf < la - pre && suf < lb - pre && ai[la - 1 - suf] == bi[lb - 1 - suf])
                        suf++;
                r = 0;
                if (pre > 0)
                        r = fuzzy_blockvec_add(bv, 0, 0, (uint32_t) pre);
                if (r >= 0 && suf > 0)
                        r = fuzzy_blockvec_add(bv, (uint32_t) (la - suf), (uint32_t) (lb - suf),
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
        return fuzzy_blockvec_add(bv, (uint32_t) la, (uint32_t) lb, 0);
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
        _cleanup_(fuzzy_plines_release) struct plines al = {}, bl = {};
        _cleanup_(fuzzy_matcher_release) struct matcher m = {.work_max = FUZZY_WORK_MAX};
        _cleanup_(fuzzy_itab_release) struct itab t = {};
        _cleanup_(blockvec_release) struct blockvec bv = {};
        _cleanup_free_ uint32_t *ai = NULL, *bi = NULL;
        _cleanup_free_ struct opcode *ops = NULL, *grp = NULL;
        struct difftext d = {.b = out, .a_s = a, .b_s = b, .al = &al, .bl = &bl};
        size_t nops = 0, ng = 0, i = 0, j = 0;
        int r;

        r = fuzzy_splitlines(a, an, &al);
        if (r >= 0)
                r = fuzzy_splitlines(b, bn, &bl);
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
                r = fuzzy_itab_id(&t, (struct slice){a + al.s[k], al.e2[k] - al.s[k]}, &ai[k]);
        for (size_t k = 0; r >= 0 && k < bl.n; k++)
                r = fuzzy_itab_id(&t, (struct slice){b + bl.s[k], bl.e2[k] - bl.s[k]}, &bi[k]);
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
