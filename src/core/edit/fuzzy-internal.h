/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What the parts of the fuzzy matcher share (not part of the edit module's API; fuzzy-match.h
 * is):
 *
 *   fuzzy-match.c       small helpers, lines, interning, vectors, searching; replacing,
 *                       splitlines() and "did you mean"
 *   fuzzy-ratio.c       difflib.SequenceMatcher on dense symbols, the similarity ratio
 *   fuzzy-strategies.c  the seed's matching strategies and fuzzy_find()
 *   fuzzy-diff.c        difflib's unified diff
 *
 * Thread context: any thread; no global state.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/edit/fuzzy-match.h"

#define NONE UINT32_MAX
/* Memo entries of context_aware's line-pair verdicts. */
#define MEMO_MAX (1u << 22)
/* "Did you mean" text kept at most (the seed has no cap; a snippet is old_string's size). */
#define DID_YOU_MEAN_MAX (256u * 1024)

struct slice {
        const char *p;
        size_t n;
};

struct lines {
        const char *s;
        size_t len;
        uint32_t *start; /* n entries */
        size_t n;
};

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

struct spanvec {
        struct fuzzy_span *v;
        size_t n, alloc;
};

struct idxvec {
        size_t *v;
        size_t n, alloc;
};

struct block {
        uint32_t i, j, k;
};

struct blockvec {
        struct block *v;
        size_t n, alloc;
};

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

struct plines {
        size_t *s, *e; /* [s, e) without the line end; e2: with it */
        size_t *e2;
        size_t n;
};

/* fuzzy-match.c */
int fuzzy_grow(void **p, size_t *alloc, size_t need, size_t size, size_t max);
bool fuzzy_sl_eq(struct slice a, struct slice b);
int fuzzy_lines_split(const char *s, size_t n, struct lines *ret);
size_t fuzzy_line_end(const struct lines *l, size_t i);
int fuzzy_spanvec_add(struct spanvec *sv, size_t start, size_t end);
struct slice fuzzy_line_at(const struct lines *l, size_t i);
int fuzzy_itab_id(struct itab *t, struct slice x, uint32_t *ret);
void fuzzy_itab_release(struct itab *t);
int fuzzy_find_ids(const uint32_t *s, size_t n, const uint32_t *p, size_t m, struct idxvec *out);
int fuzzy_find_bytes(const char *s, size_t n, const char *p, size_t m, struct spanvec *out);
struct slice fuzzy_sl_strip(struct slice x);
struct slice fuzzy_sl_lstrip(struct slice x);
int fuzzy_idxvec_add(struct idxvec *iv, size_t x);
void fuzzy_lines_release(struct lines *l);
uint64_t fuzzy_hash_bytes(const char *p, size_t n);
bool fuzzy_has_bytes(const char *s, size_t n, const char *w, size_t wn);

void fuzzy_plines_release(struct plines *l);
int fuzzy_splitlines(const char *s, size_t n, struct plines *ret);

/* fuzzy-ratio.c */
int fuzzy_ratio_bytes(struct matcher *m, struct slice a, struct slice b, double cut, bool strict,
                      double *ret);
size_t fuzzy_cp_len(const char *s, size_t n);
double fuzzy_py_ratio(size_t matches, size_t total);
bool fuzzy_over_budget(const struct matcher *m);
void fuzzy_matcher_release(struct matcher *m);
int fuzzy_sm_index(struct matcher *m, const uint32_t *b, size_t lb, uint32_t nsym);
int fuzzy_sm_blocks(struct matcher *m, const uint32_t *a, size_t la, const uint32_t *b, size_t lb,
                    struct blockvec *out, size_t *ret_matches);
int fuzzy_blockvec_add(struct blockvec *bv, uint32_t i, uint32_t j, uint32_t k);
