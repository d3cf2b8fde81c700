/* SPDX-License-Identifier: MIT */
/*
 * The seed's 13 pattern passes (agent/redact.py, docs/seed.md 1.12), each a
 * re.sub() over the text with upstream's replacement, in upstream's order.
 *
 * A few upstream regexes rescan the rest of the text from every candidate
 * start (private key blocks, DB connection strings, URL query strings), which
 * is quadratic on hostile input. Those passes are driven from C with
 * restart points that provably cannot skip a match the Python regex would
 * find; the comments at each pass give the argument.
 */
#include "core/output/redact-internal.h"

#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Small helpers                                                                               */

/* Offset of the character after the one at @pos (at most n + 1). */
static size_t next_char(const char *s, size_t n, size_t pos)
{
        size_t i = pos + 1;

        while (i < n && i - pos < 4 && is_cont(s[i]))
                i++;
        return i;
}

static void out_truncate(struct buf *b, size_t len)
{
        if (!b->data || len >= b->len)
                return;
        b->len = len;
        b->data[len] = 0;
}

/* Python's len(), [:k] and [-k:] on UTF-8: code points are the non-continuation bytes. */
static size_t cp_count(const char *p, size_t n)
{
        size_t c = 0;

        for (size_t i = 0; i < n; i++)
                if (!is_cont(p[i]))
                        c++;
        return c;
}

static size_t cp_head_bytes(const char *p, size_t n, size_t k)
{
        size_t i, c = 0;

        for (i = 0; i < n; i++)
                if (!is_cont(p[i]) && c++ == k)
                        break;
        return i;
}

static size_t cp_tail_start(const char *p, size_t n, size_t k)
{
        size_t c = 0;

        for (size_t i = n; i > 0; i--)
                if (!is_cont(p[i - 1]) && ++c == k)
                        return i - 1;
        return 0;
}

static int put_head_tail(struct buf *b, const char *p, size_t n, size_t head, const char *mid,
                         size_t tail)
{
        size_t t = cp_tail_start(p, n, tail);
        int r;

        r = put(b, p, cp_head_bytes(p, n, head));
        if (r < 0)
                return r;
        r = put_str(b, mid);
        if (r < 0)
                return r;
        return put(b, p + t, n - t);
}

/* upstream _mask_token(): short (< 18) or empty -> "***", else first 6 + "..." + last 4. */
static int put_masked(struct buf *b, const char *p, size_t n)
{
        if (cp_count(p, n) < 18)
                return put_str(b, "***");
        return put_head_tail(b, p, n, 6, "...", 4);
}

/* Python's str.isspace(). */
static bool py_isspace(uint32_t c)
{
        return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
               c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
               c == 0x202F || c == 0x205F || c == 0x3000;
}

/* ------------------------------------------------------------------------------------------ */
/* Query strings and form bodies                                                              */

static const char *const query_keys[] = {
        "access_token", "refresh_token", "id_token",      "token",
        "api_key",      "apikey",        "client_secret", "password",
        "auth",         "jwt",           "session",       "secret",
        "key",          "code",          "signature",     "x-amz-signature",
        NULL,
};

/* Form bodies: the query list plus these (docs/seed.md 1.12 item 11). */
static const char *const form_extra_keys[] = {"private_key", "authorization", NULL};

static bool in_list(const char *k, const char *const *list)
{
        for (; *list; list++)
                if (strcmp(k, *list) == 0)
                        return true;
        return false;
}

/*
 * Python: key.lower() in SET. Only ASCII letters and U+212A KELVIN SIGN
 * (lower() is "k") can lower-case into the ASCII key names.
 */
static bool key_is_sensitive(const char *k, size_t n, bool form)
{
        char low[32];
        size_t j = 0;

        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) k[i];

                if (j >= sizeof(low) - 1 || c == 0)
                        return false;
                if (c < 0x80) {
                        low[j++] = (char) (c >= 'A' && c <= 'Z' ? c + 32 : c);
                } else if (n - i >= 3 && memcmp(k + i, "\xE2\x84\xAA", 3) == 0) {
                        low[j++] = 'k';
                        i += 2;
                } else
                        return false;
        }
        low[j] = 0;
        return in_list(low, query_keys) || (form && in_list(low, form_extra_keys));
}

/* upstream _redact_query_string(): "k=v" pairs split on '&', sensitive values -> "***". */
static int put_redacted_query(struct buf *b, const char *q, size_t n, bool form, bool *changed)
{
        size_t i = 0;
        int r;

        for (;;) {
                const char *amp = memchr(q + i, '&', n - i);
                size_t end = amp ? (size_t) (amp - q) : n;
                const char *eq = memchr(q + i, '=', end - i);

                if (eq && key_is_sensitive(q + i, (size_t) (eq - q) - i, form)) {
                        r = put(b, q + i, (size_t) (eq - q) - i);
                        if (r >= 0)
                                r = put_str(b, "=***");
                        *changed = true;
                } else
                        r = put(b, q + i, end - i);
                if (r < 0)
                        return r;
                if (!amp)
                        return 0;
                r = put_str(b, "&");
                if (r < 0)
                        return r;
                i = end + 1;
        }
}

/* Whether put_redacted_query() would change @q. */
static bool query_is_sensitive(const char *q, size_t n, bool form)
{
        for (size_t i = 0;;) {
                const char *amp = memchr(q + i, '&', n - i);
                size_t end = amp ? (size_t) (amp - q) : n;
                const char *eq = memchr(q + i, '=', end - i);

                if (eq && key_is_sensitive(q + i, (size_t) (eq - q) - i, form))
                        return true;
                if (!amp)
                        return false;
                i = end + 1;
        }
}

static bool form_key_start(char c)
{
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static bool form_key_char(char c)
{
        return form_key_start(c) || (c >= '0' && c <= '9') || c == '.' || c == '-';
}

/* upstream _FORM_BODY_RE: ^K=[^&\s]*(?:&K=[^&\s]*)+$ with K = [A-Za-z_][A-Za-z0-9_.-]* */
static bool is_form_body(const char *s, size_t n)
{
        size_t i = 0, pairs = 0;

        for (;;) {
                if (i >= n || !form_key_start(s[i]))
                        return false;
                while (i < n && form_key_char(s[i]))
                        i++;
                if (i >= n || s[i] != '=')
                        return false;
                i++;
                while (i < n && s[i] != '&') {
                        uint32_t cp;
                        size_t l = decode_cp(s + i, n - i, &cp);

                        if (l == 0 || py_isspace(cp))
                                return false;
                        i += l;
                }
                pairs++;
                if (i >= n)
                        return pairs >= 2;
                i++; /* '&' */
        }
}

/* ------------------------------------------------------------------------------------------ */
/* Pattern passes                                                                              */

#define GSET(ov, g) ((ov)[2 * (g)] != PCRE2_UNSET)
#define GPTR(s, ov, g) ((s) + (ov)[2 * (g)])
#define GLEN(ov, g) ((size_t) ((ov)[2 * (g) + 1] - (ov)[2 * (g)]))

/* Write the replacement for one match; return 1 if replaced, 0 to keep the match as it is. */
typedef int (*redact_emit_fn)(struct buf *b, const char *s, const PCRE2_SIZE *ov);
/* Whether the emit function would replace this match (for those that may keep it). */
typedef bool (*redact_changes_fn)(const char *s, const PCRE2_SIZE *ov);

static int emit_mask_g1(struct buf *b, const char *s, const PCRE2_SIZE *ov)
{
        int r = put_masked(b, GPTR(s, ov, 1), GLEN(ov, 1));
        return r < 0 ? r : 1;
}

static int emit_mask_g0(struct buf *b, const char *s, const PCRE2_SIZE *ov)
{
        int r = put_masked(b, GPTR(s, ov, 0), GLEN(ov, 0));
        return r < 0 ? r : 1;
}

/* f"{name}={quote}{mask(value)}{quote}" */
static int emit_env(struct buf *b, const char *s, const PCRE2_SIZE *ov)
{
        int r;

        r = put(b, GPTR(s, ov, 1), GLEN(ov, 1));
        if (r >= 0)
                r = put_str(b, "=");
        if (r >= 0)
                r = put(b, GPTR(s, ov, 2), GLEN(ov, 2));
        if (r >= 0)
                r = put_masked(b, GPTR(s, ov, 3), GLEN(ov, 3));
        if (r >= 0)
                r = put(b, GPTR(s, ov, 2), GLEN(ov, 2));
        return r < 0 ? r : 1;
}

/* f'{key}: "{mask(value)}"' */
static int emit_json(struct buf *b, const char *s, const PCRE2_SIZE *ov)
{
        int r;

        r = put(b, GPTR(s, ov, 1), GLEN(ov, 1));
        if (r >= 0)
                r = put_str(b, ": \"");
        if (r >= 0)
                r = put_masked(b, GPTR(s, ov, 2), GLEN(ov, 2));
        if (r >= 0)
                r = put_str(b, "\"");
        return r < 0 ? r : 1;
}

static int emit_auth(struct buf *b, const char *s, const PCRE2_SIZE *ov)
{
        int r;

        r = put(b, GPTR(s, ov, 1), GLEN(ov, 1));
        if (r >= 0)
                r = put_masked(b, GPTR(s, ov, 2), GLEN(ov, 2));
        return r < 0 ? r : 1;
}

/* f"{prefix}{digits}:***" */
static int emit_telegram(struct buf *b, const char *s, const PCRE2_SIZE *ov)
{
        int r = 0;

        if (GSET(ov, 1))
                r = put(b, GPTR(s, ov, 1), GLEN(ov, 1));
        if (r >= 0)
                r = put(b, GPTR(s, ov, 2), GLEN(ov, 2));
        if (r >= 0)
                r = put_str(b, ":***");
        return r < 0 ? r : 1;
}

/* f"{scheme}://{user}:***@" */
static int emit_userinfo(struct buf *b, const char *s, const PCRE2_SIZE *ov)
{
        int r;

        r = put(b, GPTR(s, ov, 1), GLEN(ov, 1));
        if (r >= 0)
                r = put_str(b, "://");
        if (r >= 0)
                r = put(b, GPTR(s, ov, 2), GLEN(ov, 2));
        if (r >= 0)
                r = put_str(b, ":***@");
        return r < 0 ? r : 1;
}

/*
 * Most URLs have no query, or nothing secret in it. Telling so before
 * anything is written matters: pass_regex() would otherwise copy all the text
 * since the last change for each of them, and drop it again (quadratic).
 */
static bool urlq_changes(const char *s, const PCRE2_SIZE *ov)
{
        return GSET(ov, 1) && query_is_sensitive(GPTR(s, ov, 1), GLEN(ov, 1), false);
}

static int emit_urlq(struct buf *b, const char *s, const PCRE2_SIZE *ov)
{
        bool changed = false;
        int r;

        if (!GSET(ov, 1))
                return 0; /* no query string: nothing to do, resume after the URL */
        r = put(b, s + ov[0], ov[2] - ov[0]);
        if (r >= 0)
                r = put_redacted_query(b, GPTR(s, ov, 1), GLEN(ov, 1), false, &changed);
        if (r >= 0)
                r = put(b, s + ov[3], ov[1] - ov[3]);
        if (r < 0)
                return r;
        return changed ? 1 : 0;
}

static int emit_discord(struct buf *b, const char *s, const PCRE2_SIZE *ov)
{
        bool bang = memchr(s + ov[0], '!', ov[1] - ov[0]) != NULL;
        int r = put_str(b, bang ? "<@!***>" : "<@***>");
        return r < 0 ? r : 1;
}

/* phone[:4] + "****" + phone[-4:], or 2/2 for up to 8 characters. */
static int emit_phone(struct buf *b, const char *s, const PCRE2_SIZE *ov)
{
        const char *p = GPTR(s, ov, 1);
        size_t n = GLEN(ov, 1);
        size_t k = cp_count(p, n) <= 8 ? 2 : 4;
        int r = put_head_tail(b, p, n, k, "****", k);
        return r < 0 ? r : 1;
}

/* Where a match can start (see redact-internal.h; the hints are in redact-scan.c). */
typedef size_t (*redact_hint_fn)(struct pass_io *io, size_t pos);

/*
 * re.sub() with @id and @emit: matches are searched left to right, each search
 * starting where the previous match ended (lookbehinds still see the text
 * before it, as in Python). @hint (optional) skips ahead to where a match
 * can start; with @at it yields every offset where one can start, and only
 * those are tried (anchored).
 */
enum pass_kind {
        PASS_REGEX,
        PASS_PREFIX,
        PASS_PRIVATE_KEY,
        PASS_DB,
        PASS_FORM,
};

struct pass {
        enum pass_kind kind;
        int rx;
        redact_emit_fn emit;
        redact_changes_fn changes; /* optional, see urlq_changes() */
        redact_hint_fn hint;
        bool at;        /* the hint gives exact starts: try the anchored twin there */
        bool full_only; /* skipped in REDACT_CODE */
        /*
         * Cheap literal pre-checks: the pass cannot match without both. The
         * byte pair at off1/off2 is searched for first, so it should be a rare one.
         */
        const char *need1, *need2;
        uint8_t off1, off2;
};

static int pass_regex(struct pass_io *io, const struct pass *p)
{
        const int id = p->rx;
        const bool at = p->at;
        const char *s = io->s;
        size_t n = io->n, pos = 0, last = 0;
        int r;

        while (pos <= n) {
                const PCRE2_SIZE *ov;
                size_t saved;
                int rc;

                if (p->hint) {
                        size_t h = p->hint(io, pos);

                        if (h > n)
                                break;
                        pos = h;
                }
                rc = at ? redact_rx_exec_at(id, s, n, pos, io->md)
                        : redact_rx_exec(id, s, n, pos, io->md);
                if (rc == PCRE2_ERROR_NOMATCH && at) {
                        pos = next_char(s, n, pos);
                        continue;
                }
                if (rc == PCRE2_ERROR_NOMATCH)
                        break;
                if (rc < 0)
                        return redact_rx_error(id, pos, rc);
                ov = pcre2_get_ovector_pointer(io->md);
                if (p->changes && !p->changes(s, ov)) {
                        pos = ov[1] > ov[0] ? ov[1] : next_char(s, n, ov[1]);
                        continue;
                }
                saved = io->out->len;
                r = put(io->out, s + last, ov[0] - last);
                if (r < 0)
                        return r;
                r = p->emit(io->out, s, ov);
                if (r < 0)
                        return r;
                if (r > 0) {
                        io->changed = true;
                        last = ov[1];
                } else
                        out_truncate(io->out, saved);
                pos = ov[1] > ov[0] ? ov[1] : next_char(s, n, ov[1]);
        }
        if (io->changed)
                return put(io->out, s + last, n - last);
        return 0;
}

/* Whether the fixed start of a prefix alternative is at @p ("sk_" covers sk_live_, sk_test_). */
static bool prefix_literal_at(const char *p, size_t n)
{
#define LIT(l) (n >= sizeof(l) - 1 && memcmp(p, l, sizeof(l) - 1) == 0)
        switch (p[0]) {
        case 'A':
                return LIT("AIza") || LIT("AKIA");
        case 'S':
                return LIT("SG.");
        case 'a':
                return LIT("am_");
        case 'b':
                return LIT("bb_live_") || LIT("brv_");
        case 'd':
                return LIT("dop_v1_") || LIT("doo_v1_");
        case 'e':
                return LIT("exa_");
        case 'f':
                return LIT("fal_") || LIT("fc-");
        case 'g':
                return LIT("ghp_") || LIT("github_pat_") || LIT("gho_") || LIT("ghu_") ||
                       LIT("ghs_") || LIT("ghr_") || LIT("gAAAA") || LIT("gsk_");
        case 'h':
                return LIT("hf_") || LIT("hsk-");
        case 'm':
                return LIT("mem0_");
        case 'n':
                return LIT("npm_");
        case 'p':
                return LIT("pplx-") || LIT("pypi-");
        case 'r':
                return LIT("rk_live_") || LIT("r8_") || LIT("retaindb_");
        case 's':
                return LIT("sk-") || LIT("sk_") || LIT("syt_");
        case 't':
                return LIT("tvly-");
        case 'x':
                return LIT("xox");
        }
        return false;
#undef LIT
}

/*
 * Pass 1 without trying the 35-way alternation at every offset. A match
 * starts at a token start (the lookbehind, and every alternative starts with
 * a token byte), and apart from "SG." and "gAAAA" (which go on with '.' or
 * '=') it is made of token bytes only, at least 13 ("sk-" + 10). So the
 * candidates are token starts followed by a 13-byte token run, or starting
 * with 'S' or 'g'. Windows of 64 bytes give bit masks for 48 offsets at a
 * time (a run test needs 12 bytes of look-ahead); a candidate is checked
 * against the literal prefixes, then the anchored regex at its offset gives
 * the match a search from the previous match's end would find there. The
 * text between candidates cannot hold a match, so the result is the same.
 */
static int pass_prefix(struct pass_io *io)
{
        const char *s = io->s;
        size_t n = io->n, pos = 0, last = 0;
        int r;

        for (size_t i = 0; i < n; i += 48) {
                uint64_t cand;

                i = redact_scan_prefix(s, n, i, &cand);
                for (; cand; cand &= cand - 1) {
                        size_t c = i + (size_t) __builtin_ctzll(cand);
                        const PCRE2_SIZE *ov;
                        int rc;

                        if (c < pos || !prefix_literal_at(s + c, n - c))
                                continue;
                        rc = redact_rx_exec_at(RX_PREFIX, s, n, c, io->md);
                        if (rc == PCRE2_ERROR_NOMATCH)
                                continue;
                        if (rc < 0)
                                return redact_rx_error(RX_PREFIX, c, rc);
                        ov = pcre2_get_ovector_pointer(io->md);
                        r = put(io->out, s + last, ov[0] - last);
                        if (r >= 0)
                                r = emit_mask_g1(io->out, s, ov);
                        if (r < 0)
                                return r;
                        io->changed = true;
                        last = pos = ov[1];
                }
        }
        if (io->changed)
                return put(io->out, s + last, n - last);
        return 0;
}

/*
 * Pass 6: BEGIN ... PRIVATE KEY----- [\s\S]*? -----END ... PRIVATE KEY-----.
 * The lazy body ends at the first END marker after the BEGIN marker; that
 * marker is looked up once and reused by every BEGIN before it, and when
 * there is none no later BEGIN can have one either.
 */
static int pass_private_key(struct pass_io *io)
{
        const char *s = io->s;
        size_t n = io->n, pos = 0, last = 0;
        size_t end_from = 0, end_s = 0, end_e = 0;
        bool end_known = false, end_none = false;
        int r;

        while (pos < n) {
                const PCRE2_SIZE *ov;
                size_t hs, he;
                int rc;

                rc = redact_rx_exec(RX_PKEY_BEGIN, s, n, pos, io->md);
                if (rc == PCRE2_ERROR_NOMATCH)
                        break;
                if (rc < 0)
                        return redact_rx_error(RX_PKEY_BEGIN, pos, rc);
                ov = pcre2_get_ovector_pointer(io->md);
                hs = ov[0];
                he = ov[1];
                if (!end_known || he < end_from || (!end_none && he > end_s)) {
                        rc = redact_rx_exec(RX_PKEY_END, s, n, he, io->md);
                        if (rc == PCRE2_ERROR_NOMATCH)
                                end_none = true;
                        else if (rc < 0)
                                return redact_rx_error(RX_PKEY_END, he, rc);
                        else {
                                ov = pcre2_get_ovector_pointer(io->md);
                                end_s = ov[0];
                                end_e = ov[1];
                        }
                        end_known = true;
                        end_from = he;
                }
                if (end_none)
                        break;
                r = put(io->out, s + last, hs - last);
                if (r >= 0)
                        r = put_str(io->out, "[REDACTED PRIVATE KEY]");
                if (r < 0)
                        return r;
                io->changed = true;
                last = pos = end_e;
        }
        if (io->changed)
                return put(io->out, s + last, n - last);
        return 0;
}

/*
 * Pass 7: ((?:scheme)://[^:]+:)([^@]+)(@) -> f"{g1}***@". The regex here makes
 * the password part optional, so a failed attempt ends at E, the first ':' (or
 * barrier) after "://". No scheme can start between the attempt's start and
 * E - 16 (its "://" colon would lie before E, and no scheme name is a suffix of
 * another), so the search resumes there instead of at the next byte, which
 * keeps the pass linear. 16 bytes cover the longest scheme name even with
 * two-byte case variants (U+017F for 's').
 */
static int pass_db(struct pass_io *io)
{
        const char *s = io->s;
        size_t n = io->n, pos = 0, last = 0, last_at;
        const char *at = memrchr(s, '@', n);
        int r;

        if (!at)
                return 0;
        last_at = (size_t) (at - s);

        while (pos < n) {
                const PCRE2_SIZE *ov;
                size_t ms, e, np, h;
                int rc;

                h = redact_hint_db(io, pos);
                if (h > n)
                        break;
                pos = h;
                rc = redact_rx_exec(RX_DB, s, n, pos, io->md);
                if (rc == PCRE2_ERROR_NOMATCH)
                        break;
                if (rc < 0)
                        return redact_rx_error(RX_DB, pos, rc);
                ov = pcre2_get_ovector_pointer(io->md);
                ms = ov[0];
                if (rc >= 3 && GSET(ov, 2)) {
                        r = put(io->out, s + last, ov[3] - last); /* up to the colon */
                        if (r >= 0)
                                r = put_str(io->out, ":***@");
                        if (r < 0)
                                return r;
                        io->changed = true;
                        last = pos = ov[1];
                        continue;
                }
                e = ov[1];
                /* No ':' after "://", or no '@' after the ':' plus one character: nothing later. */
                if (e >= n || (s[e] == ':' && last_at <= e + 1))
                        break;
                np = e > 16 ? e - 16 : 0;
                while (np > 0 && is_cont(s[np]))
                        np--;
                pos = MAX(np, next_char(s, n, ms));
        }
        if (io->changed)
                return put(io->out, s + last, n - last);
        return 0;
}

/*
 * Pass 11: only when the whole text is one k=v&k=v line (upstream
 * _redact_form_body()). Like upstream, the result is the stripped text.
 */
static int pass_form(struct pass_io *io)
{
        const char *s = io->s;
        size_t n = io->n, a = 0, b = n;
        bool changed = false;
        uint32_t cp;
        int r;

        if (has_char(s, n, '\n'))
                return 0;
        while (a < n) {
                size_t l = decode_cp(s + a, n - a, &cp);
                if (l == 0 || !py_isspace(cp))
                        break;
                a += l;
        }
        while (b > a) {
                size_t j = b - 1;
                while (j > a && b - j < 4 && is_cont(s[j]))
                        j--;
                if (decode_cp(s + j, b - j, &cp) != b - j || !py_isspace(cp))
                        break;
                b = j;
        }
        if (!is_form_body(s + a, b - a))
                return 0;
        r = put_redacted_query(io->out, s + a, b - a, true, &changed);
        if (r < 0)
                return r;
        io->changed = changed || a > 0 || b < n;
        return 0;
}

/* clang-format off */
/* kind, regex, emit, changes, hint, at, full_only, need1, need2, off1, off2 */
static const struct pass passes[] = {
        {.kind = PASS_PREFIX},
        {PASS_REGEX, RX_ENV, emit_env, NULL, redact_hint_env, false, true, "=", NULL, 0, 0},
        {PASS_REGEX, RX_JSON, emit_json, NULL, redact_hint_json, true, true, "\"", ":", 0, 0},
        {PASS_REGEX, RX_AUTH, emit_auth, NULL, NULL, false, false, ":", NULL, 0, 0},
        {PASS_REGEX, RX_TELEGRAM, emit_telegram, NULL, redact_hint_tg, false, false, ":", NULL, 0, 0},
        {PASS_PRIVATE_KEY, 0, NULL, NULL, NULL, false, false, "-----BEGIN", "-----END", 4, 4},
        {PASS_DB, 0, NULL, NULL, NULL, false, false, "@", "://", 0, 0},
        {PASS_REGEX, RX_JWT, emit_mask_g0, NULL, NULL, false, false, "eyJ", NULL, 1, 0},
        {PASS_REGEX, RX_USERINFO, emit_userinfo, NULL, NULL, false, false, "@", "://", 0, 0},
        {PASS_REGEX, RX_URLQ, emit_urlq, urlq_changes, redact_hint_urlq, true, false, "?", "://", 0, 0},
        {PASS_FORM, 0, NULL, NULL, NULL, false, false, "&", "=", 0, 0},
        {PASS_REGEX, RX_DISCORD, emit_discord, NULL, NULL, false, false, "<@", NULL, 0, 0},
        {PASS_REGEX, RX_PHONE, emit_phone, NULL, redact_hint_phone, true, false, "+", NULL, 0, 0},
};
/* clang-format on */

static bool has_need(const char *s, size_t n, const char *lit, size_t off)
{
        if (!lit)
                return true;
        if (!lit[1])
                return has_char(s, n, lit[0]);
        return redact_find_lit(s, n, lit, off) != NULL;
}

static int run_pass(const struct pass *p, struct pass_io *io)
{
        if (!has_need(io->s, io->n, p->need1, p->off1) ||
            !has_need(io->s, io->n, p->need2, p->off2))
                return 0;
        switch (p->kind) {
        case PASS_REGEX:
                return pass_regex(io, p);
        case PASS_PREFIX:
                return pass_prefix(io);
        case PASS_PRIVATE_KEY:
                return pass_private_key(io);
        case PASS_DB:
                return pass_db(io);
        case PASS_FORM:
                return pass_form(io);
        }
        return 0;
}

_Static_assert(ELEMENTSOF(passes) == REDACT_N_PASSES, "redact-internal.h counts the passes");

bool redact_pass_full_only(size_t i)
{
        return passes[i].full_only;
}

int redact_run_pass(size_t i, struct pass_io *io)
{
        return run_pass(&passes[i], io);
}
