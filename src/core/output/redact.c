/* SPDX-License-Identifier: MIT */
/*
 * Secret redaction: the seed's 13 pattern passes (agent/redact.py,
 * seed-behavior.md 1.12) plus value-based redaction (DESIGN.md 9.10).
 *
 * Regexes are PCRE2 in UTF + UCP mode so \s, \d and (?i) behave like
 * Python's re on str. PCRE2_MATCH_INVALID_UTF makes stray invalid bytes
 * non-matching instead of an error, and skips the per-call UTF check (which
 * would otherwise make a many-matches loop quadratic). Where Python writes
 * \s we write PY_S: Python's whitespace also includes U+001C..U+001F and
 * U+0085, PCRE2's does not.
 *
 * A few upstream regexes rescan the rest of the text from every candidate
 * start (private key blocks, DB connection strings, URL query strings), which
 * is quadratic on hostile input. Those passes are driven from C with
 * restart points that provably cannot skip a match the Python regex would
 * find; the comments at each pass give the argument.
 *
 * The patterns are compiled once per process (pthread_once) and are
 * read-only afterwards; each redact_text() call has its own match data, so
 * one redactor can be used from any number of threads.
 */
#include "core/output/redact.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "basic/buf.h"
#include "basic/log.h"
#include "basic/utf8.h"

/*
 * Caps on what redactor_add_secret() accepts: far more than ptc registers (the
 * scrubbed variables and provider keys), and every value costs ~15 forms.
 */
#define REDACT_SECRETS_MAX 1024
#define REDACT_SECRET_LEN_MAX (64 * 1024)

/* Resource limits for one pcre2_match() call (hostile input must not hang us). */
#define RX_MATCH_LIMIT 10000000u
#define RX_DEPTH_LIMIT 10000u
#define RX_HEAP_LIMIT_KIB (64u * 1024u)
/* After this many failed (resource-limited) match calls a pass gives up on the text. */
#define REDACT_RX_ERRORS_MAX 64
/* Nesting depth redact_json() descends to; deeper levels are left alone. */
#define REDACT_JSON_DEPTH_MAX 64
#define RX_OVEC_PAIRS 8

/* Value-based lookup table: a bloom filter and hash buckets over the first 4 bytes of each form. */
#define BLOOM_BITS 16
#define N_BUCKETS (1u << 12)

/* ------------------------------------------------------------------------------------------ */
/* Patterns                                                                                    */

/* Python's str.isspace() set, as a class body (PCRE2 UCP \s lacks \x1c-\x1f and \x85). */
#define PY_WS "\\s\\x1c-\\x1f\\x{85}"
#define PY_S "[" PY_WS "]"
#define PY_NS "[^" PY_WS "]"

/* Pass 1: vendor-prefixed keys, in upstream order (the alternation order matters). */
#define PREFIX_ALTS                     \
        "sk-[A-Za-z0-9_-]{10,}"         \
        "|ghp_[A-Za-z0-9]{10,}"         \
        "|github_pat_[A-Za-z0-9_]{10,}" \
        "|gho_[A-Za-z0-9]{10,}"         \
        "|ghu_[A-Za-z0-9]{10,}"         \
        "|ghs_[A-Za-z0-9]{10,}"         \
        "|ghr_[A-Za-z0-9]{10,}"         \
        "|xox[baprs]-[A-Za-z0-9-]{10,}" \
        "|AIza[A-Za-z0-9_-]{30,}"       \
        "|pplx-[A-Za-z0-9]{10,}"        \
        "|fal_[A-Za-z0-9_-]{10,}"       \
        "|fc-[A-Za-z0-9]{10,}"          \
        "|bb_live_[A-Za-z0-9_-]{10,}"   \
        "|gAAAA[A-Za-z0-9_=-]{20,}"     \
        "|AKIA[A-Z0-9]{16}"             \
        "|sk_live_[A-Za-z0-9]{10,}"     \
        "|sk_test_[A-Za-z0-9]{10,}"     \
        "|rk_live_[A-Za-z0-9]{10,}"     \
        "|SG\\.[A-Za-z0-9_-]{10,}"      \
        "|hf_[A-Za-z0-9]{10,}"          \
        "|r8_[A-Za-z0-9]{10,}"          \
        "|npm_[A-Za-z0-9]{10,}"         \
        "|pypi-[A-Za-z0-9_-]{10,}"      \
        "|dop_v1_[A-Za-z0-9]{10,}"      \
        "|doo_v1_[A-Za-z0-9]{10,}"      \
        "|am_[A-Za-z0-9_-]{10,}"        \
        "|sk_[A-Za-z0-9_]{10,}"         \
        "|tvly-[A-Za-z0-9]{10,}"        \
        "|exa_[A-Za-z0-9]{10,}"         \
        "|gsk_[A-Za-z0-9]{10,}"         \
        "|syt_[A-Za-z0-9]{10,}"         \
        "|retaindb_[A-Za-z0-9]{10,}"    \
        "|hsk-[A-Za-z0-9]{10,}"         \
        "|mem0_[A-Za-z0-9]{10,}"        \
        "|brv_[A-Za-z0-9]{10,}"

#define ENV_KW "(?:API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)"

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

static const struct {
        const char *pattern;
        uint32_t flags;
} rx_defs[_RX_MAX] = {
        [RX_PREFIX] = {"(?<![A-Za-z0-9_-])(" PREFIX_ALTS ")(?![A-Za-z0-9_-])", 0},
        /*
         * Upstream: ([A-Z0-9_]{0,50}KW[A-Z0-9_]{0,50})\s*=\s*(['"]?)(\S+)\2, tried at
         * every offset of an upper-case run (hundreds of steps each). The leftmost
         * start Python finds is either the run start or exactly 50 characters before
         * a keyword, so only those two starts are tried; the match set is the same.
         * The second {0,50} may be possessive: what follows it (\s or =) is outside
         * its class. The second lookahead is implied by the rest (a name is at most
         * 50 + 10 + 50 characters) and only cuts doomed attempts short, e.g. inside
         * "TOKENTOKEN...".
         */
        [RX_ENV] = {"(?:(?<![A-Z0-9_])|(?=[A-Z0-9_]{50}" ENV_KW "))"
                    "(?=[A-Z0-9_]{0,110}+" PY_S "*=)"
                    "([A-Z0-9_]{0,50}" ENV_KW "[A-Z0-9_]{0,50}+)" PY_S "*=" PY_S "*(['\"]?)(" PY_NS
                    "+)\\2",
                    0},
        [RX_JSON] = {"(\"(?:api_?[Kk]ey|token|secret|password|access_token|refresh_token|"
                     "auth_token|bearer|secret_value|raw_secret|secret_input|key_material)\")" PY_S
                     "*:" PY_S "*\"([^\"]+)\"",
                     PCRE2_CASELESS},
        [RX_AUTH] = {"(Authorization:" PY_S "*Bearer" PY_S "+)(" PY_NS "+)", PCRE2_CASELESS},
        /*
         * Upstream: (bot)?(\d{8,}):([-A-Za-z0-9_]{30,}). A match starting inside a
         * digit run implies one at the run start, which is found first, so starts
         * inside a run are skipped (otherwise a long digit run is quadratic).
         */
        [RX_TELEGRAM] = {"(bot)?(?<!\\d)(\\d{8,}+):([-A-Za-z0-9_]{30,})", 0},
        [RX_PKEY_BEGIN] = {"-----BEGIN[A-Z ]*PRIVATE KEY-----", 0},
        [RX_PKEY_END] = {"-----END[A-Z ]*PRIVATE KEY-----", 0},
        /*
         * Upstream: ((?:scheme)://[^:]+:)([^@]+)(@). The password part is optional
         * here so that a failed attempt still reports how far it got (see pass_db()).
         */
        [RX_DB] = {"((?:postgres(?:ql)?|mysql|mongodb(?:\\+srv)?|redis|amqp)://[^:]++)"
                   "(?::([^@]++)@)?",
                   PCRE2_CASELESS},
        [RX_JWT] = {"eyJ[A-Za-z0-9_-]{10,}(?:\\.[A-Za-z0-9_=-]{4,}){0,2}", 0},
        [RX_USERINFO] = {"(https?|wss?|ftp)://([^/" PY_WS ":@]+):([^/" PY_WS "@]+)@", 0},
        /*
         * Upstream: (scheme)://([^\s/?#]+)([^\s?#]*)\?([^\s#]+)(#\S*)?. The query
         * part is optional here: a URL without one still matches, and every start
         * inside it would fail the same way, so the scan resumes at its end
         * instead of at the next byte (quadratic on "http://http://...").
         * Possessive authority/path: the split between them does not change the
         * output, only the backtracking.
         */
        [RX_URLQ] = {"(?:https?|wss?|ftp)://[^" PY_WS "/?#]++[^" PY_WS "?#]*+"
                     "(?:\\?([^" PY_WS "#]+)(?:#" PY_NS "*)?)?",
                     0},
        [RX_DISCORD] = {"<@!?(\\d{17,20})>", 0},
        [RX_PHONE] = {"(\\+[1-9]\\d{6,14})(?![A-Za-z0-9])", 0},
};

static pcre2_code *rx_code[_RX_MAX];
static pcre2_match_context *rx_mctx;
static int rx_init_error;
static pthread_once_t rx_once = PTHREAD_ONCE_INIT;

static void rx_init(void)
{
        const uint32_t base = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF;

        rx_mctx = pcre2_match_context_create(NULL);
        if (!rx_mctx) {
                rx_init_error = -ENOMEM;
                return;
        }
        (void) pcre2_set_match_limit(rx_mctx, RX_MATCH_LIMIT);
        (void) pcre2_set_depth_limit(rx_mctx, RX_DEPTH_LIMIT);
        (void) pcre2_set_heap_limit(rx_mctx, RX_HEAP_LIMIT_KIB);

        for (size_t i = 0; i < _RX_MAX; i++) {
                PCRE2_UCHAR msg[256];
                PCRE2_SIZE off;
                int err;

                rx_code[i] = pcre2_compile((PCRE2_SPTR) rx_defs[i].pattern, PCRE2_ZERO_TERMINATED,
                                           base | rx_defs[i].flags, &err, &off, NULL);
                if (!rx_code[i]) {
                        (void) pcre2_get_error_message(err, msg, sizeof(msg));
                        log_debug("redact: pattern %zu does not compile at offset %zu: %s", i,
                                  (size_t) off, (const char *) msg);
                        rx_init_error = err == PCRE2_ERROR_HEAP_FAILED ? -ENOMEM : -EINVAL;
                        return;
                }
                /* JIT is an optimisation only: without it the interpreter runs. */
                if (pcre2_jit_compile(rx_code[i], PCRE2_JIT_COMPLETE) < 0)
                        log_debug("redact: no JIT for pattern %zu", i);
        }
}

static int rx_ensure(void)
{
        int r = pthread_once(&rx_once, rx_init);

        if (r != 0)
                return -r;
        return rx_init_error;
}

static int rx_exec(int id, const char *s, size_t n, size_t pos, pcre2_match_data *md)
{
        int rc;

        rc = pcre2_match(rx_code[id], (PCRE2_SPTR) s, n, pos, 0, md, rx_mctx);
        /* The JIT's machine stack is small; the interpreter's heap use is bounded by the limit. */
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
                rc = pcre2_match(rx_code[id], (PCRE2_SPTR) s, n, pos, PCRE2_NO_JIT, md, rx_mctx);
        return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Small helpers                                                                               */

static bool is_cont(char c)
{
        return ((unsigned char) c & 0xC0) == 0x80;
}

/* Offset of the character after the one at @pos (at most n + 1). */
static size_t next_char(const char *s, size_t n, size_t pos)
{
        size_t i = pos + 1;

        while (i < n && i - pos < 4 && is_cont(s[i]))
                i++;
        return i;
}

static bool has(const char *s, size_t n, const char *needle)
{
        return memmem(s, n, needle, strlen(needle)) != NULL;
}

static bool has_char(const char *s, size_t n, char c)
{
        return memchr(s, c, n) != NULL;
}

static int put(struct buf *b, const char *p, size_t n)
{
        return buf_append(b, p, n);
}

static int put_str(struct buf *b, const char *p)
{
        return buf_append(b, p, strlen(p));
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

static int hexval(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* Decode one UTF-8 character; returns its length, or 0 (and *cp = UINT32_MAX) if invalid. */
static size_t decode_cp(const char *s, size_t n, uint32_t *cp)
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

/* Form bodies: the query list plus these (seed-behavior.md 1.12 item 11). */
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

struct pass_io {
        const char *s;
        size_t n;
        struct buf *out;
        pcre2_match_data *md;
        bool changed;
};

/*
 * re.sub() with @id and @emit: matches are searched left to right, each search
 * starting where the previous match ended (lookbehinds still see the text
 * before it, as in Python).
 */
static int pass_regex(struct pass_io *io, int id, redact_emit_fn emit)
{
        const char *s = io->s;
        size_t n = io->n, pos = 0, last = 0;
        unsigned errors = 0;
        int r;

        while (pos <= n) {
                const PCRE2_SIZE *ov;
                size_t saved;
                int rc;

                rc = rx_exec(id, s, n, pos, io->md);
                if (rc == PCRE2_ERROR_NOMATCH)
                        break;
                if (rc < 0) {
                        log_debug("redact: pattern %d failed at offset %zu (%d)", id, pos, rc);
                        if (++errors >= REDACT_RX_ERRORS_MAX)
                                break;
                        pos = next_char(s, n, pos);
                        continue;
                }
                ov = pcre2_get_ovector_pointer(io->md);
                saved = io->out->len;
                r = put(io->out, s + last, ov[0] - last);
                if (r < 0)
                        return r;
                r = emit(io->out, s, ov);
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

                rc = rx_exec(RX_PKEY_BEGIN, s, n, pos, io->md);
                if (rc < 0)
                        break; /* no match, or a resource limit: leave the rest alone */
                ov = pcre2_get_ovector_pointer(io->md);
                hs = ov[0];
                he = ov[1];
                if (!end_known || he < end_from || (!end_none && he > end_s)) {
                        rc = rx_exec(RX_PKEY_END, s, n, he, io->md);
                        if (rc == PCRE2_ERROR_NOMATCH)
                                end_none = true;
                        else if (rc < 0)
                                break;
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
                size_t ms, e, np;
                int rc;

                rc = rx_exec(RX_DB, s, n, pos, io->md);
                if (rc < 0)
                        break;
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

enum pass_kind {
        PASS_REGEX,
        PASS_PRIVATE_KEY,
        PASS_DB,
        PASS_FORM,
};

struct pass {
        enum pass_kind kind;
        int rx;
        redact_emit_fn emit;
        bool full_only; /* skipped in REDACT_CODE */
        /* Cheap literal pre-checks: the pass cannot match without all of them. */
        const char *need1, *need2;
};

static const struct pass passes[] = {
        {PASS_REGEX, RX_PREFIX, emit_mask_g1, false, NULL, NULL},
        {PASS_REGEX, RX_ENV, emit_env, true, "=", NULL},
        {PASS_REGEX, RX_JSON, emit_json, true, "\"", ":"},
        {PASS_REGEX, RX_AUTH, emit_auth, false, ":", NULL},
        {PASS_REGEX, RX_TELEGRAM, emit_telegram, false, ":", NULL},
        {PASS_PRIVATE_KEY, 0, NULL, false, "-----BEGIN", "-----END"},
        {PASS_DB, 0, NULL, false, "://", "@"},
        {PASS_REGEX, RX_JWT, emit_mask_g0, false, "eyJ", NULL},
        {PASS_REGEX, RX_USERINFO, emit_userinfo, false, "://", "@"},
        {PASS_REGEX, RX_URLQ, emit_urlq, false, "://", "?"},
        {PASS_FORM, 0, NULL, false, "&", "="},
        {PASS_REGEX, RX_DISCORD, emit_discord, false, "<@", NULL},
        {PASS_REGEX, RX_PHONE, emit_phone, false, "+", NULL},
};

static int run_pass(const struct pass *p, struct pass_io *io)
{
        if ((p->need1 && !has(io->s, io->n, p->need1)) ||
            (p->need2 && !has(io->s, io->n, p->need2)))
                return 0;
        switch (p->kind) {
        case PASS_REGEX:
                return pass_regex(io, p->rx, p->emit);
        case PASS_PRIVATE_KEY:
                return pass_private_key(io);
        case PASS_DB:
                return pass_db(io);
        case PASS_FORM:
                return pass_form(io);
        }
        return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Value-based redaction                                                                       */

struct vform {
        char *data;
        size_t len;
        uint32_t next; /* 1-based index of the next form in the same bucket, 0 = none */
};

struct vsecret {
        char *data;
        size_t len;
        uint32_t next; /* 1-based index of the next secret with the same first byte */
};

struct redactor {
        struct vsecret *secrets;
        size_t n_secrets;
        struct vform *forms;
        size_t n_forms;
        uint32_t first_head[256];
        uint8_t first_bits[256 / 8];
        uint32_t bucket_head[N_BUCKETS];
        uint8_t bloom[(1u << BLOOM_BITS) / 8];
};

static uint32_t prefix_hash(const char *p)
{
        uint32_t k;

        memcpy(&k, p, sizeof(k));
        return (k * 0x9E3779B1u) >> (32 - BLOOM_BITS);
}

int redactor_new(struct redactor **ret)
{
        struct redactor *r;
        int e;

        if (!ret)
                return -EINVAL;
        e = rx_ensure();
        if (e < 0)
                return e;
        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        *ret = r;
        return 0;
}

static void wipe_free(char *p, size_t n)
{
        if (!p)
                return;
        explicit_wipe(p, n);
        free(p);
}

struct redactor *redactor_free(struct redactor *r)
{
        if (!r)
                return NULL;
        for (size_t i = 0; i < r->n_secrets; i++)
                wipe_free(r->secrets[i].data, r->secrets[i].len);
        for (size_t i = 0; i < r->n_forms; i++)
                wipe_free(r->forms[i].data, r->forms[i].len);
        free(r->secrets);
        free(r->forms);
        explicit_wipe(r, sizeof(*r));
        free(r);
        return NULL;
}

size_t redactor_secret_count(const struct redactor *r)
{
        return r ? r->n_secrets : 0;
}

/* The encoded forms of one secret, built before anything is committed to the redactor. */
struct form_set {
        struct {
                char *data;
                size_t len;
        } f[24];
        size_t n;
};

static void form_set_done(struct form_set *fs)
{
        for (size_t i = 0; i < fs->n; i++)
                wipe_free(fs->f[i].data, fs->f[i].len);
        fs->n = 0;
}

/* Take @p (malloc'ed, @n bytes); drops duplicates. */
static int form_set_take(struct form_set *fs, char *p, size_t n)
{
        if (!p)
                return -ENOMEM;
        for (size_t i = 0; i < fs->n; i++)
                if (fs->f[i].len == n && memcmp(fs->f[i].data, p, n) == 0) {
                        wipe_free(p, n);
                        return 0;
                }
        if (n < 4 || fs->n >= ELEMENTSOF(fs->f)) {
                wipe_free(p, n);
                return 0;
        }
        fs->f[fs->n].data = p;
        fs->f[fs->n].len = n;
        fs->n++;
        return 0;
}

static const char b64_std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64_url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Unpadded base64 of @p; padding added when @pad. */
static char *b64_encode(const unsigned char *p, size_t n, const char *alpha, bool pad,
                        size_t *ret_len)
{
        char *o = malloc((n + 2) / 3 * 4 + 1);
        size_t j = 0, i;

        if (!o)
                return NULL;
        for (i = 0; i + 2 < n; i += 3) {
                uint32_t v = (uint32_t) p[i] << 16 | (uint32_t) p[i + 1] << 8 | p[i + 2];
                o[j++] = alpha[v >> 18 & 63];
                o[j++] = alpha[v >> 12 & 63];
                o[j++] = alpha[v >> 6 & 63];
                o[j++] = alpha[v & 63];
        }
        if (n - i == 1) {
                uint32_t v = (uint32_t) p[i] << 16;
                o[j++] = alpha[v >> 18 & 63];
                o[j++] = alpha[v >> 12 & 63];
                if (pad) {
                        o[j++] = '=';
                        o[j++] = '=';
                }
        } else if (n - i == 2) {
                uint32_t v = (uint32_t) p[i] << 16 | (uint32_t) p[i + 1] << 8;
                o[j++] = alpha[v >> 18 & 63];
                o[j++] = alpha[v >> 12 & 63];
                o[j++] = alpha[v >> 6 & 63];
                if (pad)
                        o[j++] = '=';
        }
        o[j] = 0;
        *ret_len = j;
        return o;
}

/*
 * The characters of base64(X + secret) that depend on the secret alone, for a
 * prefix X of @shift (0..2) bytes: this is what a secret looks like inside a
 * longer base64 text, e.g. "Authorization: Basic base64(user:password)".
 */
static char *b64_core(const unsigned char *v, size_t n, size_t shift, const char *alpha,
                      size_t *ret_len)
{
        unsigned char *tmp = calloc(1, n + shift);
        size_t len, lead = (8 * shift + 5) / 6, full = 8 * (n + shift) / 6;
        char *e;

        if (!tmp)
                return NULL;
        memcpy(tmp + shift, v, n);
        e = b64_encode(tmp, n + shift, alpha, false, &len);
        wipe_free((char *) tmp, n + shift);
        if (!e)
                return NULL;
        memmove(e, e + lead, full - lead);
        explicit_wipe(e + (full - lead), len - (full - lead));
        *ret_len = full - lead;
        return e;
}

static char *hex_encode(const unsigned char *p, size_t n, bool upper, size_t *ret_len)
{
        const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
        char *o = malloc(2 * n + 1);

        if (!o)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                o[2 * i] = digits[p[i] >> 4];
                o[2 * i + 1] = digits[p[i] & 15];
        }
        o[2 * n] = 0;
        *ret_len = 2 * n;
        return o;
}

static int json_esc_u(struct buf *b, uint32_t u, bool upper)
{
        return buf_printf(b, upper ? "\\u%04X" : "\\u%04x", (unsigned) u);
}

/*
 * The secret as a JSON string body: @ascii like Python's json.dumps()
 * (non-ASCII as \uXXXX, surrogate pairs), otherwise like jansson (UTF-8 kept).
 * NULL with *ret_len = 0 when not applicable (invalid UTF-8).
 */
static char *json_escape(const char *v, size_t n, bool ascii, size_t *ret_len)
{
        _cleanup_buf_ struct buf b = BUF_INIT(12 * n + 16);
        size_t i = 0;
        int r = 0;

        *ret_len = 0;
        while (i < n && r >= 0) {
                uint32_t cp;
                size_t l = decode_cp(v + i, n - i, &cp);

                if (l == 0)
                        return NULL;
                if (cp == '"')
                        r = put_str(&b, "\\\"");
                else if (cp == '\\')
                        r = put_str(&b, "\\\\");
                else if (cp == '\n')
                        r = put_str(&b, "\\n");
                else if (cp == '\r')
                        r = put_str(&b, "\\r");
                else if (cp == '\t')
                        r = put_str(&b, "\\t");
                else if (cp == '\b')
                        r = put_str(&b, "\\b");
                else if (cp == '\f')
                        r = put_str(&b, "\\f");
                else if (cp < 0x20)
                        r = json_esc_u(&b, cp, !ascii);
                else if (cp < 0x80 || !ascii)
                        r = put(&b, v + i, l);
                else if (cp < 0x10000)
                        r = json_esc_u(&b, cp, false);
                else {
                        r = json_esc_u(&b, 0xD800 + ((cp - 0x10000) >> 10), false);
                        if (r >= 0)
                                r = json_esc_u(&b, 0xDC00 + ((cp - 0x10000) & 0x3FF), false);
                }
                i += l;
        }
        if (r < 0) {
                explicit_wipe(b.data, b.len);
                *ret_len = SIZE_MAX; /* distinguishes ENOMEM from "not applicable" */
                return NULL;
        }
        return buf_steal(&b, ret_len);
}

static int build_forms(struct form_set *fs, const char *v, size_t n)
{
        const unsigned char *u = (const unsigned char *) v;
        static const char *const alphas[] = {b64_std, b64_url};
        size_t len;
        char *p;
        int r;

        r = form_set_take(fs, strndup(v, n), n);
        for (size_t upper = 0; r >= 0 && upper < 2; upper++) {
                p = hex_encode(u, n, upper, &len);
                r = form_set_take(fs, p, len);
        }
        for (size_t a = 0; r >= 0 && a < ELEMENTSOF(alphas); a++) {
                for (size_t pad = 0; r >= 0 && pad < 2; pad++) {
                        p = b64_encode(u, n, alphas[a], pad, &len);
                        r = form_set_take(fs, p, len);
                }
                for (size_t shift = 0; r >= 0 && shift < 3; shift++) {
                        p = b64_core(u, n, shift, alphas[a], &len);
                        r = form_set_take(fs, p, len);
                }
        }
        for (size_t ascii = 0; r >= 0 && ascii < 2; ascii++) {
                p = json_escape(v, n, ascii, &len);
                if (p)
                        r = form_set_take(fs, p, len);
                else if (len == SIZE_MAX)
                        r = -ENOMEM;
        }
        return r;
}

int redactor_add_secret(struct redactor *r, const char *value)
{
        struct form_set fs = {.n = 0};
        struct vsecret *ns;
        struct vform *nf;
        size_t n;
        char *copy;
        int e;

        if (!r || !value)
                return -EINVAL;
        n = strnlen(value, REDACT_SECRET_LEN_MAX + 1);
        if (n < REDACT_MIN_SECRET_LEN)
                return 0;
        if (n > REDACT_SECRET_LEN_MAX || r->n_secrets >= REDACT_SECRETS_MAX)
                return -E2BIG;
        for (size_t i = 0; i < r->n_secrets; i++)
                if (r->secrets[i].len == n && memcmp(r->secrets[i].data, value, n) == 0)
                        return 0;

        e = build_forms(&fs, value, n);
        if (e < 0)
                goto out_forms;
        copy = strndup(value, n);
        if (!copy) {
                e = -ENOMEM;
                goto out_forms;
        }
        ns = realloc(r->secrets, (r->n_secrets + 1) * sizeof(*ns));
        if (!ns) {
                wipe_free(copy, n);
                e = -ENOMEM;
                goto out_forms;
        }
        r->secrets = ns;
        nf = realloc(r->forms, (r->n_forms + fs.n) * sizeof(*nf));
        if (!nf) {
                wipe_free(copy, n);
                e = -ENOMEM;
                goto out_forms;
        }
        r->forms = nf;

        /* Commit: nothing below can fail. */
        ns[r->n_secrets] = (struct vsecret){.data = copy, .len = n};
        ns[r->n_secrets].next = r->first_head[(unsigned char) copy[0]];
        r->first_head[(unsigned char) copy[0]] = (uint32_t) ++r->n_secrets;
        r->first_bits[(unsigned char) copy[0] >> 3] |= 1u << ((unsigned char) copy[0] & 7);

        for (size_t i = 0; i < fs.n; i++) {
                uint32_t h = prefix_hash(fs.f[i].data);
                struct vform *f = &nf[r->n_forms];

                f->data = fs.f[i].data;
                f->len = fs.f[i].len;
                f->next = r->bucket_head[h % N_BUCKETS];
                r->bucket_head[h % N_BUCKETS] = (uint32_t) ++r->n_forms;
                r->bloom[h >> 3] |= 1u << (h & 7);
        }
        fs.n = 0;
        return 0;

out_forms:
        form_set_done(&fs);
        return e;
}

/* Longest literal form (raw, hex, base64, JSON-escaped) starting at @i. */
static size_t literal_at(const struct redactor *r, const char *s, size_t n, size_t i)
{
        size_t best = 0;
        uint32_t h, k;

        if (n - i < 4)
                return 0;
        h = prefix_hash(s + i);
        if (!(r->bloom[h >> 3] & (1u << (h & 7))))
                return 0;
        for (k = r->bucket_head[h % N_BUCKETS]; k; k = r->forms[k - 1].next) {
                const struct vform *f = &r->forms[k - 1];

                if (f->len > best && f->len <= n - i && memcmp(s + i, f->data, f->len) == 0)
                        best = f->len;
        }
        return best;
}

/*
 * Length of the text at @t that URL-decodes to @v: each byte either as itself,
 * as %XX (either hex case) or, for a space, as '+'. 0 when it does not.
 */
static size_t url_match(const char *t, size_t m, const char *v, size_t vl)
{
        size_t j = 0;

        for (size_t k = 0; k < vl; k++) {
                int hi, lo;

                if (j >= m)
                        return 0;
                if (t[j] == '%' && m - j >= 3 && (hi = hexval(t[j + 1])) >= 0 &&
                    (lo = hexval(t[j + 2])) >= 0 && (char) (hi << 4 | lo) == v[k])
                        j += 3;
                else if (t[j] == v[k] || (t[j] == '+' && v[k] == ' '))
                        j++;
                else
                        return 0;
        }
        return j;
}

static size_t url_at(const struct redactor *r, const char *s, size_t n, size_t i)
{
        unsigned char cand[3];
        size_t nc = 0, best = 0;
        int hi, lo;

        cand[nc++] = (unsigned char) s[i];
        if (s[i] == '%' && n - i >= 3 && (hi = hexval(s[i + 1])) >= 0 &&
            (lo = hexval(s[i + 2])) >= 0)
                cand[nc++] = (unsigned char) (hi << 4 | lo);
        if (s[i] == '+')
                cand[nc++] = ' ';
        for (size_t c = 0; c < nc; c++) {
                if (!(r->first_bits[cand[c] >> 3] & (1u << (cand[c] & 7))))
                        continue;
                for (uint32_t k = r->first_head[cand[c]]; k; k = r->secrets[k - 1].next)
                        best = MAX(best, url_match(s + i, n - i, r->secrets[k - 1].data,
                                                   r->secrets[k - 1].len));
        }
        return best;
}

/*
 * Replace every occurrence of a secret or one of its forms by "***".
 * Occurrences are collected at every offset and overlapping ones merged, so
 * secrets that contain or overlap each other leave nothing of either behind
 * (stronger than replacing longest values first).
 */
static int pass_values(const struct redactor *r, struct pass_io *io)
{
        const char *s = io->s;
        size_t n = io->n, last = 0, cs = 0, ce = 0;
        bool open = false, url;
        int e;

        if (!r || r->n_secrets == 0 || n < REDACT_MIN_SECRET_LEN)
                return 0;
        /* Without '%' or '+' a URL-encoded form is the raw form, which literal_at() finds. */
        url = has_char(s, n, '%') || has_char(s, n, '+');

        for (size_t i = 0; i < n; i++) {
                size_t m = literal_at(r, s, n, i);

                if (url)
                        m = MAX(m, url_at(r, s, n, i));
                if (m == 0)
                        continue;
                if (open && i < ce) {
                        ce = MAX(ce, i + m);
                        continue;
                }
                if (open) {
                        e = put(io->out, s + last, cs - last);
                        if (e >= 0)
                                e = put_str(io->out, "***");
                        if (e < 0)
                                return e;
                        last = ce;
                }
                open = true;
                cs = i;
                ce = i + m;
        }
        if (!open)
                return 0;
        e = put(io->out, s + last, cs - last);
        if (e >= 0)
                e = put_str(io->out, "***");
        if (e >= 0)
                e = put(io->out, s + ce, n - ce);
        if (e < 0)
                return e;
        io->changed = true;
        return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Entry points                                                                                */

static void match_data_freep(pcre2_match_data **md)
{
        pcre2_match_data_free(*md);
}

/* Intermediate texts still hold whatever the later passes removed. */
static void wipe_bufp(struct buf *b)
{
        if (b->data)
                explicit_wipe(b->data, b->alloc);
        buf_release(b);
}

/* Room for one pass's output: replacements grow text by less than 2x. */
static size_t pass_cap(size_t n)
{
        return n > (SIZE_MAX - 8192) / 2 ? SIZE_MAX - 1 : 2 * n + 4096;
}

int redact_text(const struct redactor *r, enum redact_mode mode, const char *in, size_t n,
                char **ret, size_t *ret_len)
{
        _cleanup_(wipe_bufp) struct buf b0 = BUF_INIT(0), b1 = BUF_INIT(0);
        _cleanup_(match_data_freep) pcre2_match_data *md = NULL;
        struct buf *bufs[2] = {&b0, &b1};
        const char *cur = in;
        size_t cur_n = n;
        int cur_idx = -1, e;

        if (!ret || (!in && n > 0))
                return -EINVAL;
        if (n == 0)
                return 0;
        e = rx_ensure();
        if (e < 0)
                return e;

        for (size_t p = 0; p <= ELEMENTSOF(passes); p++) {
                int next = cur_idx == 0 ? 1 : 0;
                struct pass_io io = {
                        .s = cur,
                        .n = cur_n,
                        .out = bufs[next],
                };

                /* Step 0 is value-based redaction; steps 1..13 are the seed's passes. */
                if (p > 0) {
                        if (mode == REDACT_NONE)
                                break;
                        if (mode == REDACT_CODE && passes[p - 1].full_only)
                                continue;
                        if (!md) {
                                md = pcre2_match_data_create(RX_OVEC_PAIRS, NULL);
                                if (!md)
                                        return -ENOMEM;
                        }
                        io.md = md;
                }
                buf_reset(io.out);
                io.out->cap = pass_cap(cur_n);
                e = p == 0 ? pass_values(r, &io) : run_pass(&passes[p - 1], &io);
                if (e < 0)
                        return e;
                if (!io.changed)
                        continue;
                cur_idx = next;
                cur = bufs[next]->data ? bufs[next]->data : "";
                cur_n = bufs[next]->len;
        }

        if (cur_idx < 0 || (cur_n == n && memcmp(cur, in, n) == 0))
                return 0;
        *ret = buf_steal(bufs[cur_idx], ret_len);
        if (!*ret)
                return -ENOMEM;
        return 1;
}

/* The redacted copy of string @s, or NULL if unchanged; *err < 0 on failure. */
static json_t *redact_json_string(const struct redactor *r, enum redact_mode mode, json_t *s,
                                  int *err)
{
        _cleanup_free_ char *out = NULL;
        size_t len = 0;
        json_t *j;
        int e;

        *err = 0;
        e = redact_text(r, mode, json_string_value(s), json_string_length(s), &out, &len);
        if (e <= 0) {
                *err = e;
                return NULL;
        }
        j = json_stringn(out, len);
        /* Not valid UTF-8 any more (a secret ended inside a character): fail closed. */
        if (!j)
                j = json_string("***");
        if (!j)
                *err = -ENOMEM;
        return j;
}

static int redact_json_walk(const struct redactor *r, enum redact_mode mode, json_t *v,
                            unsigned depth)
{
        int count = 0, e;

        if (depth > REDACT_JSON_DEPTH_MAX)
                return 0;
        if (json_is_object(v)) {
                for (void *it = json_object_iter(v); it; it = json_object_iter_next(v, it)) {
                        json_t *child = json_object_iter_value(it);

                        if (json_is_string(child)) {
                                json_t *j = redact_json_string(r, mode, child, &e);
                                if (!j && e < 0)
                                        return e;
                                if (!j)
                                        continue;
                                if (json_object_iter_set_new(v, it, j) < 0)
                                        return -ENOMEM;
                                count++;
                        } else {
                                e = redact_json_walk(r, mode, child, depth + 1);
                                if (e < 0)
                                        return e;
                                count += e;
                        }
                }
        } else if (json_is_array(v)) {
                for (size_t i = 0; i < json_array_size(v); i++) {
                        json_t *child = json_array_get(v, i);

                        if (json_is_string(child)) {
                                json_t *j = redact_json_string(r, mode, child, &e);
                                if (!j && e < 0)
                                        return e;
                                if (!j)
                                        continue;
                                if (json_array_set_new(v, i, j) < 0)
                                        return -ENOMEM;
                                count++;
                        } else {
                                e = redact_json_walk(r, mode, child, depth + 1);
                                if (e < 0)
                                        return e;
                                count += e;
                        }
                }
        }
        return count;
}

int redact_json(const struct redactor *r, enum redact_mode mode, json_t *v)
{
        _cleanup_free_ char *out = NULL;
        size_t len = 0;
        int e;

        if (!v)
                return 0;
        if (!json_is_string(v))
                return redact_json_walk(r, mode, v, 0);

        /* A bare string has no container to put a new value in: change it in place. */
        e = redact_text(r, mode, json_string_value(v), json_string_length(v), &out, &len);
        if (e <= 0)
                return e;
        if (json_string_setn(v, out, len) < 0 && json_string_set(v, "***") < 0)
                return -ENOMEM;
        return 1;
}
