/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Private to the redactor (src/core/output/redact*.c): what its parts share.
 *
 *   redact.c           redact_text() (the value step, then the pattern passes),
 *                      redact_has_vendor_key(), redact_strerror()
 *   redact-patterns.c  the pattern table, compiled with PCRE2 on first use, and the match calls
 *   redact-scan.c      where a match can start: byte classes, the SIMD block scanners and
 *                      each pass's hint
 *   redact-passes.c    the seed's 13 pattern passes and their replacements
 *   redact-values.c    struct redactor: the secret values, their encoded forms, the value step
 *   redact-json.c      redact_json()
 *
 * Threads as in redact.h: the compiled patterns are process-wide and read-only once
 * published; a struct pass_io belongs to one redact_text() call.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "basic/buf.h"
#include "basic/macro.h"
#include "basic/utf8.h"
#include "core/output/redact.h"

#define RX_OVEC_PAIRS 8

enum {
        RX_PREFIX,
        RX_ENV,
        RX_JSON,
        RX_AUTH,
        RX_TELEGRAM,
        RX_PKEY_BEGIN,
        RX_PKEY_END,
        RX_DB,
        RX_JWT,
        RX_USERINFO,
        RX_URLQ,
        RX_DISCORD,
        RX_PHONE,
        _RX_MAX,
};

/* One step of redact_text(): the text in, and the new text in @out when @changed. */
struct pass_io {
        const char *s;
        size_t n;
        struct buf *out;
        pcre2_match_data *md;
        bool changed;
};

static inline bool is_cont(char c)
{
        return ((unsigned char) c & 0xC0) == 0x80;
}

static inline bool has_char(const char *s, size_t n, char c)
{
        return memchr(s, c, n) != NULL;
}

static inline int put(struct buf *b, const char *p, size_t n)
{
        return buf_append(b, p, n);
}

static inline int put_str(struct buf *b, const char *p)
{
        return buf_append(b, p, strlen(p));
}

/* Decode one UTF-8 character; returns its length, or 0 (and *cp = UINT32_MAX) if invalid. */
static inline size_t decode_cp(const char *s, size_t n, uint32_t *cp)
{
        const unsigned char *p = (const unsigned char *) s;
        size_t l = utf8_valid_seq_len(p, n);

        switch (l) {
        case 1:
                *cp = p[0];
                break;
        case 2:
                *cp = (uint32_t) (p[0] & 0x1F) << 6 | (p[1] & 0x3F);
                break;
        case 3:
                *cp = (uint32_t) (p[0] & 0x0F) << 12 | (uint32_t) (p[1] & 0x3F) << 6 |
                      (p[2] & 0x3F);
                break;
        case 4:
                *cp = (uint32_t) (p[0] & 0x07) << 18 | (uint32_t) (p[1] & 0x3F) << 12 |
                      (uint32_t) (p[2] & 0x3F) << 6 | (p[3] & 0x3F);
                break;
        default:
                *cp = UINT32_MAX;
                return 0;
        }
        return l;
}

/* redact-patterns.c */

/* The process-wide pattern setup (once; any thread): 0 or a negative errno. */
_must_check_ int redact_rx_ensure(void);
/* Pattern @id searched from @pos: PCRE2's return code (matches in @md's ovector). */
_must_check_ int redact_rx_exec(int id, const char *s, size_t n, size_t pos, pcre2_match_data *md);
/* Pattern @id matched at @pos only (its rx_defs entry must have a twin). */
_must_check_ int redact_rx_exec_at(int id, const char *s, size_t n, size_t pos,
                                   pcre2_match_data *md);
/*
 * A match that failed (a resource limit, or no memory for the pattern or the
 * match) cannot tell whether a secret is there, so the whole redaction fails:
 * the callers then withhold the text (fail closed, docs/protocol.md). Never
 * called with PCRE2_ERROR_NOMATCH.
 */
_must_check_ int redact_rx_error(int id, size_t pos, int rc);

/* redact-scan.c */

/* Picks the scans' SIMD version (called once, by the pattern setup). */
void redact_scan_init(void);
/*
 * The block scanner of pass_prefix(), as scan() in redact-scan.c but 48 offsets at a time
 * (64-byte windows: the run test needs 12 bytes of look-ahead); @i is 0 or a previous
 * result + 48. Bit k of *mask: see prefix_candidates().
 */
size_t redact_scan_prefix(const char *s, size_t n, size_t i, uint64_t *mask);
/*
 * First occurrence of @lit (at least 2 bytes) in @s, searching for the byte
 * pair at @off of it first (pick a rare one: "yJ" of "eyJ", "-B" of "-----BEGIN").
 */
const char *redact_find_lit(const char *s, size_t n, const char *lit, size_t off);

/*
 * A hint returns the least offset >= @pos at which a match of its pass can
 * start, or SIZE_MAX when none can; the search then starts there. Each one
 * is a necessary condition checked in plain C (the comment says why it is
 * one), so the search finds exactly the match a search from @pos finds.
 * This keeps the regexes that have no start-of-match optimisation (env
 * assignments, Telegram tokens) from being tried at every offset.
 */
size_t redact_hint_env(struct pass_io *io, size_t pos);
size_t redact_hint_tg(struct pass_io *io, size_t pos);
size_t redact_hint_json(struct pass_io *io, size_t pos);
size_t redact_hint_db(struct pass_io *io, size_t pos);
size_t redact_hint_urlq(struct pass_io *io, size_t pos);
size_t redact_hint_phone(struct pass_io *io, size_t pos);

/* redact-passes.c */

/* The seed's pattern passes, in their order; redact_text() runs them after the value step. */
#define REDACT_N_PASSES 13
/* Whether pass @i (< REDACT_N_PASSES) is skipped in REDACT_CODE. */
bool redact_pass_full_only(size_t i);
/*
 * Pass @i on io->s: 0 with the new text in io->out when it sets io->changed, or a
 * negative errno (-ENOMEM, -E2BIG: the text could not be checked completely).
 */
_must_check_ int redact_run_pass(size_t i, struct pass_io *io);

/* redact-values.c */

/* The value step on io->s (@r may be NULL: nothing to do); returns as redact_run_pass(). */
_must_check_ int redact_pass_values(const struct redactor *r, struct pass_io *io);
