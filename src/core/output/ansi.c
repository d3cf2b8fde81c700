/* SPDX-License-Identifier: MIT */
/*
 * ANSI / VT escape stripping, a byte-level re-creation of the seed's regex
 * (tools/ansi_strip.py), tried at every position, first alternative wins:
 *
 *   ESC ( "[" [0x30-0x3F]* [0x20-0x2F]* [0x40-0x7E]     CSI
 *       | "]" .*? (BEL | ESC "\")                       OSC
 *       | [PX^_] .*? ESC "\"                            DCS/SOS/PM/APC
 *       | [0x20-0x2F]+ [0x30-0x7E]                      nF
 *       | [0x30-0x7E] )                                 Fp/Fe/Fs
 *   | U+009B [0x30-0x3F]* [0x20-0x2F]* [0x40-0x7E]      8-bit CSI
 *   | U+009D .*? (BEL | U+009C)                         8-bit OSC
 *   | [U+0080-U+009F]                                   other C1
 *
 * The regex works on code points; on valid UTF-8 every ASCII byte is a code
 * point and U+0080..U+009F is exactly C2 80..C2 9F (C2 is always a lead byte),
 * so matching bytes gives the same result.
 *
 * Unterminated strings: when an OSC or DCS/SOS/PM/APC has no terminator
 * anywhere after it, the regex alternative fails and the next one, Fp/Fe/Fs,
 * matches the introducer alone (']', 'P', 'X', '^', '_' are all in
 * 0x30-0x7E). So only "ESC ]" / "ESC P" ... is removed and the string body is
 * kept as text. A failed CSI ("ESC [" without a final byte) likewise loses
 * only "ESC [". An unterminated 8-bit OSC or failed 8-bit CSI loses only its
 * C1 character (the "other C1" alternative). ESC followed by anything else
 * (a C0 control, DEL, a non-ASCII character, or nothing) is kept, as is an
 * ESC followed by intermediates without a final byte.
 *
 * Python's regex rescans the rest of the text for every unterminated string,
 * which is quadratic; here the position of the next terminator is cached per
 * terminator kind, so the whole strip is one O(n) pass.
 *
 * Unlike the regex, the result holds no sequence it would remove: a kept ESC
 * (or a lone C2 byte) whose next byte, after an ESC's intermediates, starts a
 * sequence that is removed would otherwise meet the bytes after that sequence
 * ("ESC ESC[1m 7" gave "ESC 7", "ESC SP ESC[m F" an nF escape, and "C2 ESC[m 9B"
 * an 8-bit CSI), so a second strip, or a terminal, would still see an escape.
 * Such a start byte goes with the sequence it runs into; so does a chain of them,
 * each running into the next ("ESC ESC ESC[m"); intermediates stay as text.
 */

#include "core/output/ansi.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define ESC 0x1B
#define BEL 0x07

enum term_kind {
        TERM_OSC,  /* BEL or ESC \ */
        TERM_ST,   /* ESC \ */
        TERM_OSC8, /* BEL or U+009C (C2 9C) */
        _TERM_MAX,
};

/*
 * Cached result of the last forward search for a terminator: the first
 * terminator starting at or after @from begins at @pos (n = none). A later
 * search from f >= from is answered from the cache as long as pos >= f, so
 * every byte is scanned at most once per kind.
 */
struct term_cache {
        bool valid;
        size_t from, pos;
};

static bool is_c1(const unsigned char *s, size_t n, size_t i)
{
        return s[i] == 0xC2 && i + 1 < n && s[i + 1] >= 0x80 && s[i + 1] <= 0x9F;
}

/* Length of the terminator starting at @j, or 0 if none starts there. */
static size_t term_at(const unsigned char *s, size_t n, size_t j, enum term_kind kind)
{
        if (s[j] == BEL && kind != TERM_ST)
                return 1;
        if (kind == TERM_OSC8)
                return s[j] == 0xC2 && j + 1 < n && s[j + 1] == 0x9C ? 2 : 0;
        return s[j] == ESC && j + 1 < n && s[j + 1] == '\\' ? 2 : 0;
}

/* End (exclusive) of the shortest string body + terminator starting at @from, or 0 if none. */
static size_t find_term(const unsigned char *s, size_t n, size_t from, enum term_kind kind,
                        struct term_cache *cache)
{
        struct term_cache *c = &cache[kind];
        size_t j;

        if (!(c->valid && c->from <= from && c->pos >= from)) {
                for (j = from; j < n; j++)
                        if (term_at(s, n, j, kind) > 0)
                                break;
                c->valid = true;
                c->from = from;
                c->pos = j;
        }
        if (c->pos >= n)
                return 0;
        return c->pos + term_at(s, n, c->pos, kind);
}

/* Skip [0x30-0x3F]* [0x20-0x2F]* [0x40-0x7E] from @i; returns the end, or 0 on no match. */
static size_t match_csi_tail(const unsigned char *s, size_t n, size_t i)
{
        while (i < n && s[i] >= 0x30 && s[i] <= 0x3F)
                i++;
        while (i < n && s[i] >= 0x20 && s[i] <= 0x2F)
                i++;
        if (i < n && s[i] >= 0x40 && s[i] <= 0x7E)
                return i + 1;
        return 0;
}

/* Number of bytes of the escape at @i (s[i] == ESC) to remove; 0 keeps the ESC. */
static size_t match_esc(const unsigned char *s, size_t n, size_t i, struct term_cache *cache)
{
        size_t e;
        unsigned char c;

        if (i + 1 >= n)
                return 0;
        c = s[i + 1];

        if (c == '[') {
                e = match_csi_tail(s, n, i + 2);
                if (e > 0)
                        return e - i;
        } else if (c == ']') {
                e = find_term(s, n, i + 2, TERM_OSC, cache);
                if (e > 0)
                        return e - i;
        } else if (c == 'P' || c == 'X' || c == '^' || c == '_') {
                e = find_term(s, n, i + 2, TERM_ST, cache);
                if (e > 0)
                        return e - i;
        } else if (c >= 0x20 && c <= 0x2F) {
                /* nF. On failure nothing else can match: an intermediate is not Fp/Fe/Fs. */
                e = i + 1;
                while (e < n && s[e] >= 0x20 && s[e] <= 0x2F)
                        e++;
                if (e < n && s[e] >= 0x30 && s[e] <= 0x7E)
                        return e + 1 - i;
                return 0;
        }

        /* Fp/Fe/Fs, also the fallback for a failed CSI and unterminated strings. */
        if (c >= 0x30 && c <= 0x7E)
                return 2;
        return 0;
}

/* Number of bytes to remove at the C1 control at @i (C2 80..C2 9F). Always >= 2. */
static size_t match_c1(const unsigned char *s, size_t n, size_t i, struct term_cache *cache)
{
        size_t e = 0;

        if (s[i + 1] == 0x9B)
                e = match_csi_tail(s, n, i + 2);
        else if (s[i + 1] == 0x9D)
                e = find_term(s, n, i + 2, TERM_OSC8, cache);
        if (e > 0)
                return e - i;
        return 2;
}

/*
 * Whether the kept start byte at @i (an ESC that starts no sequence, or a C2 that is no C1
 * control) runs into another start byte: one after an ESC's intermediates, or right after a
 * C2. Whether it stays depends on whether that one is removed.
 */
static bool runs_into_start(const unsigned char *s, size_t n, size_t i)
{
        size_t j = i + 1;

        if (s[i] == ESC)
                while (j < n && s[j] >= 0x20 && s[j] <= 0x2F)
                        j++;
        return j < n && (s[j] == ESC || s[j] == 0xC2);
}

/* Drop the start bytes (ESC, C2) of s[from..w), keeping the intermediates; the new end. */
static size_t drop_starts(unsigned char *s, size_t from, size_t w)
{
        size_t o = from;

        for (size_t i = from; i < w; i++)
                if (s[i] != ESC && s[i] != 0xC2)
                        s[o++] = s[i];
        return o;
}

static bool has_escape(const unsigned char *s, size_t n)
{
        const unsigned char *p;

        if (memchr(s, ESC, n))
                return true;
        for (p = s; (p = memchr(p, 0xC2, n - (size_t) (p - s))); p++)
                if (is_c1(s, n, (size_t) (p - s)))
                        return true;
        return false;
}

size_t ansi_strip(char *str, size_t n)
{
        unsigned char *s = (unsigned char *) str;
        struct term_cache cache[_TERM_MAX] = {};
        /* Where the kept start bytes that run into the next one begin in the output. */
        size_t r = 0, w = 0, chain = SIZE_MAX;

        if (!s)
                return 0;
        if (!has_escape(s, n)) {
                s[n] = 0;
                return n;
        }

        while (r < n) {
                size_t run = r, k;

                /* Copy a run of bytes that cannot start a sequence in one go. */
                while (run < n && s[run] != ESC && s[run] != 0xC2)
                        run++;
                if (run > r) {
                        if (w != r)
                                memmove(s + w, s + r, run - r);
                        w += run - r;
                        r = run;
                        if (r >= n)
                                break;
                }

                if (s[r] == ESC)
                        k = match_esc(s, n, r, cache);
                else if (is_c1(s, n, r))
                        k = match_c1(s, n, r, cache);
                else
                        k = 0;

                if (k > 0) {
                        r += k;
                        /* They ran into a removed sequence: they go too (see the top). */
                        if (chain != SIZE_MAX)
                                w = drop_starts(s, chain, w);
                        chain = SIZE_MAX;
                        continue;
                }
                /*
                 * Kept. A chain only ever holds start bytes and intermediates, so the runs
                 * copied above while one is open are intermediates.
                 */
                if (!runs_into_start(s, n, r))
                        chain = SIZE_MAX;
                else if (chain == SIZE_MAX)
                        chain = w;
                s[w++] = s[r++];
        }

        s[w] = 0;
        return w;
}
