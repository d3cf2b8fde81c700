/* SPDX-License-Identifier: MIT */
/*
 * Redaction at the cuts of a stream (redact-stream.h): where a piece may end, judged by
 * redacting the window around the cut whole and in two parts.
 */
#include "core/output/redact-stream.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"

/* Candidate cuts tried before giving up on a safe one. */
#define CUT_TRIES 64

struct redact_stream {
        const struct redactor *r;
        enum redact_mode mode;
        size_t piece, hold;
        struct buf pending; /* raw bytes fed and not emitted */
};

size_t redact_stream_hold(const struct redactor *r)
{
        size_t v = redactor_max_secret_len(r);

        /* A JSON \u escape is 6 bytes for each byte of a control character. */
        return MAX((size_t) REDACT_STREAM_PATTERN_MAX, 6 * v + 16);
}

static bool is_boundary(const char *s, size_t n, size_t p)
{
        return p == 0 || p >= n || ((unsigned char) s[p] & 0xC0) != 0x80;
}

/* A byte after which matches do not go on: blanks, quotes, brackets, separators. */
static bool is_delim(char c)
{
        return c && strchr(" \t\r\n\f\v\"'`,;()[]{}<>|", c);
}

/* The redaction of @s[0..n) in a new buffer (a copy when nothing changed). */
static int redact_copy(const struct redactor *r, enum redact_mode mode, const char *s, size_t n,
                       char **ret, size_t *ret_len)
{
        char *out = NULL;
        size_t len = 0;
        int k;

        k = redact_text(r, mode, s, n, &out, &len);
        if (k < 0)
                return k;
        if (k == 0) {
                out = malloc(n + 1);
                if (!out)
                        return -ENOMEM;
                memcpy(out, s, n);
                out[n] = 0;
                len = n;
        }
        *ret = out;
        *ret_len = len;
        return 0;
}

/*
 * Whether cut @c splits nothing: the parts' redactions, end to end, are the whole's (@all).
 * Returns 1 or 0 with the parts' redactions in *a and *b (the caller wipes and frees them),
 * or a negative errno.
 */
static int cut_ok(const struct redactor *r, enum redact_mode mode, const char *s, size_t n,
                  size_t c, const char *all, size_t all_len, char **a, size_t *al, char **b,
                  size_t *bl)
{
        int k;

        *a = *b = NULL;
        *al = *bl = 0;
        k = redact_copy(r, mode, s, c, a, al);
        if (k >= 0)
                k = redact_copy(r, mode, s + c, n - c, b, bl);
        if (k < 0)
                return k;
        return *al + *bl == all_len && memcmp(*a, all, *al) == 0 && memcmp(*b, all + *al, *bl) == 0;
}

/*
 * Where the match that crosses @c begins (!@forward) or ends (@forward), read from how the
 * part's redaction @p differs from the whole's: the part's bytes past the common prefix
 * (suffix) that are the raw text are the part of the match the cut left unrecognised.
 * SIZE_MAX when that cannot be told.
 */
static size_t match_edge(const char *s, size_t n, size_t c, const char *p, size_t pl,
                         const char *all, size_t all_len, bool forward)
{
        size_t d = 0, m;

        if (!forward) {
                while (d < pl && d < all_len && p[d] == all[d])
                        d++;
                m = pl - d;
                if (m == 0 || m > c || memcmp(p + d, s + c - m, m) != 0)
                        return SIZE_MAX;
                return c - m;
        }
        while (d < pl && d < all_len && p[pl - 1 - d] == all[all_len - 1 - d])
                d++;
        m = pl - d;
        if (m == 0 || m > n - c || memcmp(p, s + c, m) != 0)
                return SIZE_MAX;
        return c + m;
}

/* The start of the line of the last "-----BEGIN" in @s[lo..c) with no "-----END" after it
 * before @c, or SIZE_MAX. */
static size_t open_block(const char *s, size_t lo, size_t c)
{
        const char *p = s + lo, *last = NULL, *q;

        while (p < s + c && (q = memmem(p, (size_t) (s + c - p), "-----BEGIN", 10))) {
                last = q;
                p = q + 10;
        }
        if (!last || memmem(last, (size_t) (s + c - last), "-----END", 8))
                return SIZE_MAX;
        q = memrchr(s, '\n', (size_t) (last - s));
        return q ? (size_t) (q + 1 - s) : 0;
}

/* The next candidate after (forward) or before @c: just after a delimiter, on a boundary. */
static size_t next_candidate(const char *s, size_t n, size_t c, bool forward)
{
        if (forward) {
                for (size_t p = c + 1; p < n; p++)
                        if (is_delim(s[p - 1]) && is_boundary(s, n, p))
                                return p;
                return SIZE_MAX;
        }
        for (size_t p = c; p > 1; p--)
                if (is_delim(s[p - 2]) && is_boundary(s, n, p - 1))
                        return p - 1;
        return SIZE_MAX;
}

/*
 * Judge cut @c on the text up to @span bytes either side of it (a match is shorter than
 * that, so what lies further cannot change the verdict; it keeps each try cheap in a
 * 1 MiB window). 1 when the cut splits nothing; 0 with *ret_edge where the crossing match
 * begins (!@forward) or ends (SIZE_MAX: not known); or a negative errno.
 */
static int judge(const struct redactor *r, enum redact_mode mode, const char *s, size_t n, size_t c,
                 size_t span, bool forward, size_t *ret_edge)
{
        size_t lo = c > span ? c - span : 0, hi = n - c > span ? c + span : n;
        char *all = NULL, *a = NULL, *b = NULL;
        size_t all_len = 0, al = 0, bl = 0, e;
        int k;

        *ret_edge = SIZE_MAX;
        while (lo > 0 && !is_boundary(s, n, lo))
                lo--;
        while (hi < n && !is_boundary(s, n, hi))
                hi++;
        k = redact_copy(r, mode, s + lo, hi - lo, &all, &all_len);
        if (k >= 0)
                k = cut_ok(r, mode, s + lo, hi - lo, c - lo, all, all_len, &a, &al, &b, &bl);
        if (k == 0) {
                e = match_edge(s + lo, hi - lo, c - lo, forward ? b : a, forward ? bl : al, all,
                               all_len, forward);
                if (e != SIZE_MAX)
                        *ret_edge = e + lo;
        }
        free_wiped(all, all_len);
        free_wiped(a, al);
        free_wiped(b, bl);
        return k;
}

static int find_cut(const struct redactor *r, enum redact_mode mode, const char *s, size_t n,
                    size_t want, bool forward, size_t *ret_cut, bool *ret_safe, char **ret_before,
                    size_t *ret_before_len)
{
        size_t c = MIN(want, n), first, reach = REDACT_STREAM_PATTERN_MAX,
               span = 2 * redact_stream_hold(r);
        int k = 0;

        /* On a character boundary. */
        if (!forward)
                while (c > 0 && !is_boundary(s, n, c))
                        c--;
        if (forward || c == 0) {
                c = MIN(want, n);
                while (c < n && !is_boundary(s, n, c))
                        c++;
        }
        first = c;
        *ret_safe = false;
        *ret_cut = first;
        if (c == 0 || c >= n) {
                *ret_safe = true;
                goto done;
        }

        /* A key block the cut would open: cut before its line, or after its end. */
        {
                size_t lo = c > reach ? c - reach : 0, b = open_block(s, lo, c);

                if (b != SIZE_MAX && !forward && b > 0)
                        c = b;
                else if (b != SIZE_MAX && forward) {
                        const char *e = memmem(s + c, n - c, "-----END", 8);
                        const char *nl = e ? memchr(e, '\n', (size_t) (s + n - e)) : NULL;

                        if (nl)
                                c = (size_t) (nl + 1 - s);
                }
        }

        for (unsigned t = 0; t < CUT_TRIES && c > 0 && c < n; t++) {
                size_t edge;

                k = judge(r, mode, s, n, c, span, forward, &edge);
                if (k < 0)
                        return k;
                if (k > 0) {
                        *ret_safe = true;
                        *ret_cut = c;
                        break;
                }
                /* Next: where the crossing match begins, else the delimiter before. */
                if (edge != SIZE_MAX && edge != c && is_boundary(s, n, edge))
                        c = edge;
                else {
                        size_t d = next_candidate(s, n, c, forward);

                        /* No delimiter near: one character further. */
                        if (d == SIZE_MAX || (forward ? d - c : c - d) > reach) {
                                d = forward ? c + 1 : c - 1;
                                while (d > 0 && d < n && !is_boundary(s, n, d))
                                        d += forward ? 1 : (size_t) -1;
                        }
                        c = d;
                }
                /* No safe cut within reach: a match longer than the hold, cut where asked. */
                if (c == SIZE_MAX || (forward ? c - first : first - c) > 2 * reach)
                        break;
        }
        k = 0;
done:
        return ret_before ? redact_copy(r, mode, s, *ret_cut, ret_before, ret_before_len) : k;
}

int redact_find_cut(const struct redactor *r, enum redact_mode mode, const char *s, size_t n,
                    size_t want, bool forward, size_t *ret_cut, bool *ret_safe)
{
        if ((!s && n > 0) || !ret_cut || !ret_safe)
                return -EINVAL;
        return find_cut(r, mode, s, n, want, forward, ret_cut, ret_safe, NULL, NULL);
}

int redact_stream_new(const struct redactor *r, enum redact_mode mode, size_t piece,
                      struct redact_stream **ret)
{
        struct redact_stream *s;

        if (piece == 0 || !ret)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->r = r;
        s->mode = mode;
        s->piece = piece;
        s->hold = redact_stream_hold(r);
        s->pending = (struct buf) BUF_INIT(SIZE_MAX - 1);
        *ret = s;
        return 0;
}

static void pending_drop(struct redact_stream *s, size_t n)
{
        size_t old = s->pending.len;

        buf_consume(&s->pending, n);
        /* The bytes moved down still sit past the end. */
        if (s->pending.data && old > s->pending.len)
                explicit_wipe(s->pending.data + s->pending.len + 1, old - s->pending.len - 1);
}

struct redact_stream *redact_stream_free(struct redact_stream *s)
{
        if (!s)
                return NULL;
        if (s->pending.data)
                explicit_wipe(s->pending.data, s->pending.alloc);
        buf_release(&s->pending);
        free(s);
        return NULL;
}

size_t redact_stream_held(const struct redact_stream *s)
{
        return s ? s->pending.len : 0;
}

/* One piece of at most @want bytes from the start of what is held. */
static int emit_piece(struct redact_stream *s, size_t want, redact_emit_fn emit, void *userdata)
{
        char *out = NULL;
        size_t out_len = 0, c = 0;
        bool safe;
        int k;

        k = find_cut(s->r, s->mode, s->pending.data, s->pending.len, want, false, &c, &safe, &out,
                     &out_len);
        if (k < 0) {
                /* Not known to be free of secrets: this piece is dropped, never shown. */
                c = MIN(want, s->pending.len);
                while (c > 0 && c < s->pending.len &&
                       !is_boundary(s->pending.data, s->pending.len, c))
                        c--;
                pending_drop(s, c > 0 ? c : MIN(want, s->pending.len));
                return k;
        }
        if (c == 0) { /* cannot happen: the wanted cut is > 0 */
                free_wiped(out, out_len);
                return -EINVAL;
        }
        pending_drop(s, c);
        k = out_len > 0 ? emit(userdata, out, out_len) : 0;
        free_wiped(out, out_len);
        return k;
}

int redact_stream_feed(struct redact_stream *s, const char *p, size_t n, redact_emit_fn emit,
                       void *userdata)
{
        int k;

        if (!s || (!p && n > 0) || !emit)
                return -EINVAL;
        if (n > 0 && buf_append(&s->pending, p, n) < 0)
                return -ENOMEM;
        while (s->pending.len >= s->piece + s->hold) {
                k = emit_piece(s, s->piece, emit, userdata);
                if (k < 0)
                        return k;
        }
        return 0;
}

int redact_stream_flush(struct redact_stream *s, redact_emit_fn emit, void *userdata)
{
        char *out = NULL;
        size_t out_len = 0;
        int k = 0;

        if (!s || !emit)
                return -EINVAL;
        while (s->pending.len > s->piece && k >= 0)
                k = emit_piece(s, s->piece, emit, userdata);
        if (k >= 0 && s->pending.len > 0) {
                k = redact_copy(s->r, s->mode, s->pending.data, s->pending.len, &out, &out_len);
                if (k >= 0 && out_len > 0)
                        k = emit(userdata, out, out_len);
                free_wiped(out, out_len);
        }
        pending_drop(s, s->pending.len);
        return k;
}
