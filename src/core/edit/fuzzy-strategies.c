/* SPDX-License-Identifier: MIT */
/*
 * The seed's matching strategies, in its order, and fuzzy_find(): every line-based
 * strategy interns its (normalised) lines and searches the pattern's ids with KMP. Part of the
 * fuzzy matcher (fuzzy-internal.h); split from fuzzy-match.c along its section banners.
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
        r = fuzzy_lines_split(z->c, z->cn, &z->cl);
        if (r < 0)
                return r;
        return fuzzy_lines_split(z->p, z->pn, &z->pl);
}

/* Spans of the windows at line indexes @wins of @pattern_lines lines, in @lines' offsets. */
static int windows_to_spans(const struct lines *l, const struct idxvec *wins, size_t pattern_lines,
                            struct spanvec *out)
{
        for (size_t w = 0; w < wins->n; w++) {
                size_t i = wins->v[w];
                int r = fuzzy_spanvec_add(out, l->start[i],
                                          fuzzy_line_end(l, i + pattern_lines - 1));

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
                r = fuzzy_itab_id(&t, norm(fuzzy_line_at(pl, k)), &pid[k]);
        for (size_t i = 0; r >= 0 && i < cl->n; i++)
                r = fuzzy_itab_id(&t, norm(fuzzy_line_at(cl, i)), &cid[i]);
        fuzzy_itab_release(&t);
        if (r >= 0)
                r = fuzzy_find_ids(cid, cl->n, pid, pl->n, &wins);
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
                r = fuzzy_spanvec_add(out, os, MAX(oe, os));
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
                r = fuzzy_spanvec_add(out, qs.first[a], qs.ge[b] == SIZE_MAX ? on : qs.ge[b]);
        }
        queries_release(&qs);
        return r;
}

static int strategy_exact(struct fz *z, struct spanvec *out)
{
        return fuzzy_find_bytes(z->c, z->cn, z->p, z->pn, out);
}

static int strategy_line_trimmed(struct fz *z, struct spanvec *out)
{
        int r = need_lines(z);

        return r < 0 ? r : match_lines(&z->cl, &z->pl, fuzzy_sl_strip, out);
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
                r = fuzzy_find_bytes(nc, ncn, np, npn, &nm);
        if (r >= 0 && nm.n > 0)
                r = ws_map(z->c, z->cn, nc, ncn, &nm, out);
        free(nm.v);
        return r;
}

static int strategy_indentation_flexible(struct fz *z, struct spanvec *out)
{
        int r = need_lines(z);

        return r < 0 ? r : match_lines(&z->cl, &z->pl, fuzzy_sl_lstrip, out);
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
        return fuzzy_find_bytes(z->c, z->cn, u, k, out);
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
                r = fuzzy_itab_id(&t, fuzzy_line_at(&z->pl, k), &epid[k]);
                if (r >= 0)
                        r = fuzzy_itab_id(&t, fuzzy_sl_strip(fuzzy_line_at(&z->pl, k)), &spid[k]);
        }
        for (size_t i = 0; r >= 0 && i < L; i++) {
                r = fuzzy_itab_id(&t, fuzzy_line_at(&z->cl, i), &ecid[i]);
                if (r >= 0)
                        r = fuzzy_itab_id(&t, fuzzy_sl_strip(fuzzy_line_at(&z->cl, i)), &scid[i]);
        }
        fuzzy_itab_release(&t);
        if (r < 0)
                return r;
        if (P >= 3) {
                /* Middle lines verbatim: search them, then check the trimmed boundaries. */
                r = fuzzy_find_ids(ecid, L, epid + 1, P - 2, &mids);
                mv = mids.v;
                for (size_t x = 0; r >= 0 && x < mids.n; x++) {
                        size_t i = mids.v[x] - 1;

                        if (mids.v[x] == 0 || i + P > L)
                                continue;
                        if (scid[i] == spid[0] && scid[i + P - 1] == spid[P - 1])
                                r = fuzzy_idxvec_add(&wins, i);
                }
        } else
                for (size_t i = 0; r >= 0 && i + P <= L; i++)
                        if (scid[i] == spid[0] && scid[i + P - 1] == spid[P - 1])
                                r = fuzzy_idxvec_add(&wins, i);
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
        r = fuzzy_find_bytes(nc, ncn, np, npn, &nm);
        if (r >= 0 && nm.n == 0) {
                r = fuzzy_lines_split(nc, ncn, &ncl);
                if (r >= 0)
                        r = fuzzy_lines_split(np, npn, &npl);
                if (r >= 0)
                        r = match_lines(&ncl, &npl, fuzzy_sl_strip, &nm);
                fuzzy_lines_release(&ncl);
                fuzzy_lines_release(&npl);
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
                r = fuzzy_lines_split(nc, ncn, &ncl);
        if (r >= 0)
                r = fuzzy_lines_split(np, npn, &npl);
        P = npl.n;
        if (r >= 0)
                r = fuzzy_itab_id(&t, fuzzy_sl_strip(fuzzy_line_at(&npl, 0)), &first);
        if (r >= 0)
                r = fuzzy_itab_id(&t, fuzzy_sl_strip(fuzzy_line_at(&npl, P - 1)), &last);
        if (r >= 0 && !(sid = malloc(ncl.n * sizeof(uint32_t))))
                r = -ENOMEM;
        for (size_t i = 0; r >= 0 && i < ncl.n; i++)
                r = fuzzy_itab_id(&t, fuzzy_sl_strip(fuzzy_line_at(&ncl, i)), &sid[i]);
        fuzzy_itab_release(&t);
        for (size_t i = 0; r >= 0 && i + P <= ncl.n; i++)
                if (sid[i] == first && sid[i + P - 1] == last)
                        r = fuzzy_idxvec_add(&cands, i);
        cv = cands.v;
        threshold = cands.n == 1 ? 0.50 : 0.70;
        for (size_t x = 0; r >= 0 && x < cands.n; x++) {
                size_t i = cands.v[x];
                double sim = 1.0;

                if (P > 2) {
                        struct slice cm = {nc + ncl.start[i + 1],
                                           fuzzy_line_end(&ncl, i + P - 2) - ncl.start[i + 1]};
                        struct slice pm = {np + npl.start[1],
                                           fuzzy_line_end(&npl, P - 2) - npl.start[1]};

                        r = fuzzy_ratio_bytes(&z->m, cm, pm, threshold, false, &sim);
                        if (r < 0)
                                break;
                }
                if (sim >= threshold)
                        /* Offsets from the original lines: normalising keeps the line count. */
                        r = fuzzy_spanvec_add(out, z->cl.start[i],
                                              fuzzy_line_end(&z->cl, i + P - 1));
        }
        fuzzy_lines_release(&ncl);
        fuzzy_lines_release(&npl);
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
        for (size_t h = (size_t) (fuzzy_hash_bytes((const char *) &key, 8) & (mm->cap - 1));
             mm->k[h]; h = (h + 1) & (mm->cap - 1))
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
                        for (h = (size_t) (fuzzy_hash_bytes((const char *) &mm->k[i], 8) &
                                           (cap - 1));
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
        for (h = (size_t) (fuzzy_hash_bytes((const char *) &key, 8) & (mm->cap - 1)); mm->k[h];
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
                ps[k] = fuzzy_sl_strip(fuzzy_line_at(&z->pl, k));
                plen[k] = (uint32_t) fuzzy_cp_len(ps[k].p, ps[k].n);
                r = fuzzy_itab_id(&t, ps[k], &pid[k]);
        }
        for (size_t i = 0; r >= 0 && i < L; i++) {
                cs[i] = fuzzy_sl_strip(fuzzy_line_at(&z->cl, i));
                clen[i] = (uint32_t) fuzzy_cp_len(cs[i].p, cs[i].n);
                r = fuzzy_itab_id(&t, cs[i], &cid[i]);
        }
        fuzzy_itab_release(&t);
        for (size_t i = 0; r >= 0 && i + P <= L; i++) {
                size_t count = 0;

                for (size_t k = 0; k < P && count < need && count + (P - k) >= need; k++) {
                        uint64_t key = (uint64_t) pid[k] << 32 | cid[i + k];
                        size_t la = plen[k], lb = clen[i + k];
                        double sim;
                        int v;

                        z->m.work++;
                        /* real_quick_ratio() from the lengths alone: no decoding, no memo. */
                        if (la + lb > 0 && fuzzy_py_ratio(MIN(la, lb), la + lb) < 0.80)
                                continue;
                        /* Equal and too short for autojunk: ratio 1.0. */
                        v = pid[k] == cid[i + k] && la < 200 ? 1 : memo_get(&mm, key);
                        if (v < 0) {
                                /* SequenceMatcher(None, p_line.strip(), c_line.strip()) */
                                r = fuzzy_ratio_bytes(&z->m, ps[k], cs[i + k], 0.80, false, &sim);
                                if (r < 0)
                                        break;
                                v = sim >= 0.80;
                                memo_put(&mm, key, v);
                        }
                        count += (size_t) v;
                }
                if (r >= 0 && fuzzy_over_budget(&z->m))
                        r = -E2BIG;
                if (r >= 0 && count >= need)
                        r = fuzzy_spanvec_add(out, z->cl.start[i],
                                              fuzzy_line_end(&z->cl, i + P - 1));
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
        fuzzy_lines_release(&z.cl);
        fuzzy_lines_release(&z.pl);
        fuzzy_matcher_release(&z.m);
        if (r < 0) {
                free(sv.v);
                return r;
        }
        ret->spans = sv.v;
        ret->n_spans = sv.n;
        return 0;
}
