/* SPDX-License-Identifier: MIT */
/*
 * Secret redaction: the seed's 13 pattern passes (agent/redact.py,
 * docs/seed.md 1.12) plus value-based redaction (docs/contracts.md 9.10).
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
 * This runs on every tool result, so the common case (nothing to redact)
 * must cost about a pass over the bytes. Most regexes would be tried at every
 * offset (a lookbehind or an optional group first defeats PCRE2's
 * start-of-match optimisations), so each pass first finds, in C and mostly
 * with SIMD, the places where a match can start (a hint: a necessary
 * condition, with the argument in its comment), and runs the regex only
 * there, anchored when the hint gives the exact start. The output is
 * byte-for-byte what running the regexes everywhere gives.
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
/*
 * SIMD versions of the scans: SSE2 where the compiler targets it (all of
 * x86-64); AVX2, picked at run time, only when built with REDACT_WITH_AVX2.
 * AVX2 is opt-in because __builtin_cpu_supports() links libgcc's
 * __cpu_indicator_init constructor, which runs a series of CPUID
 * instructions at every process start; in a VM each one traps to the
 * hypervisor, and that alone was ~3% of a whole `ptc run` (measured with
 * perf), for scans that SSE2 already keeps far below a microsecond on tool
 * results. REDACT_NO_SIMD leaves SIMD out (the differential tests build all
 * variants).
 */
#if defined(__SSE2__) && !defined(REDACT_NO_SIMD)
#        include <emmintrin.h>
#        define REDACT_SSE2 1
#endif
#if defined(REDACT_SSE2) && defined(__x86_64__) && defined(__GNUC__) && \
        defined(REDACT_WITH_AVX2) && !defined(REDACT_NO_AVX2)
#        include <immintrin.h>
#        define REDACT_AVX2 1
#        define _avx2_ __attribute__((target("avx2")))
#endif
/* For the scan loops, which must be specialised per scan kind to be fast. */
#define _inline_ inline __attribute__((always_inline))

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
/* Nesting depth redact_json() descends to; a deeper value fails the redaction (-E2BIG). */
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

/*
 * @twin: also compiled with PCRE2_ANCHORED (rx_code_at), for the passes that
 * find candidate offsets in C and try the regex only there.
 */
static const struct {
        const char *pattern;
        uint32_t flags;
        bool twin;
} rx_defs[_RX_MAX] = {
        [RX_PREFIX] = {"(?<![A-Za-z0-9_-])(" PREFIX_ALTS ")(?![A-Za-z0-9_-])", 0, true},
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
                     PCRE2_CASELESS, true},
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
                     0, true},
        [RX_DISCORD] = {"<@!?(\\d{17,20})>", 0},
        [RX_PHONE] = {"(\\+[1-9]\\d{6,14})(?![A-Za-z0-9])", 0, true},
};

static pcre2_code *rx_code[_RX_MAX], *rx_code_at[_RX_MAX];
static pcre2_match_context *rx_mctx;
static int rx_init_error;
static pthread_once_t rx_once = PTHREAD_ONCE_INIT;
#ifdef REDACT_AVX2
static bool use_avx2; /* the scans below have AVX2 versions; set once by rx_init() */
#endif

static pthread_mutex_t rx_lock = PTHREAD_MUTEX_INITIALIZER;

/* Process-wide setup shared by all patterns (the patterns themselves compile lazily). */
static void rx_init(void)
{
#ifdef REDACT_AVX2
        use_avx2 = __builtin_cpu_supports("avx2");
#endif
        rx_mctx = pcre2_match_context_create(NULL);
        if (!rx_mctx) {
                rx_init_error = -ENOMEM;
                return;
        }
        (void) pcre2_set_match_limit(rx_mctx, RX_MATCH_LIMIT);
        (void) pcre2_set_depth_limit(rx_mctx, RX_DEPTH_LIMIT);
        (void) pcre2_set_heap_limit(rx_mctx, RX_HEAP_LIMIT_KIB);
}

/*
 * Pattern @id (its anchored twin with @at), compiled and JIT-compiled on first
 * use. Compiling all of them up front cost ~0.8 ms per ptc start, and most
 * texts never get past the C hints of most passes. Double-checked: readers
 * take the acquire-load fast path once the pointer is published.
 */
static pcre2_code *rx_get(int id, bool at)
{
        const uint32_t base = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF;
        pcre2_code **slot = at ? &rx_code_at[id] : &rx_code[id];
        pcre2_code *c = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
        PCRE2_UCHAR msg[256];
        PCRE2_SIZE off;
        int err;

        if (c)
                return c;
        pthread_mutex_lock(&rx_lock);
        c = *slot;
        if (!c) {
                c = pcre2_compile((PCRE2_SPTR) rx_defs[id].pattern, PCRE2_ZERO_TERMINATED,
                                  base | rx_defs[id].flags | (at ? PCRE2_ANCHORED : 0), &err, &off,
                                  NULL);
                if (!c) {
                        (void) pcre2_get_error_message(err, msg, sizeof(msg));
                        log_debug("redact: pattern %d does not compile at offset %zu: %s", id,
                                  (size_t) off, (const char *) msg);
                } else {
                        /* JIT is an optimisation only: without it the interpreter runs. */
                        if (pcre2_jit_compile(c, PCRE2_JIT_COMPLETE) < 0)
                                log_debug("redact: no JIT for pattern %d", id);
                        __atomic_store_n(slot, c, __ATOMIC_RELEASE);
                }
        }
        pthread_mutex_unlock(&rx_lock);
        return c;
}

static int rx_ensure(void)
{
        int r = pthread_once(&rx_once, rx_init);

        if (r != 0)
                return -r;
        return rx_init_error;
}

static int rx_run(const pcre2_code *code, const char *s, size_t n, size_t pos, pcre2_match_data *md)
{
        int rc;

        /* Only a failed compile (out of memory) leaves no code: report it as a limit hit. */
        if (!code)
                return PCRE2_ERROR_NOMEMORY;
        rc = pcre2_match(code, (PCRE2_SPTR) s, n, pos, 0, md, rx_mctx);
        /* The JIT's machine stack is small; the interpreter's heap use is bounded by the limit. */
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
                rc = pcre2_match(code, (PCRE2_SPTR) s, n, pos, PCRE2_NO_JIT, md, rx_mctx);
        return rc;
}

/*
 * A match that failed (a resource limit, or no memory for the pattern or the
 * match) cannot tell whether a secret is there, so the whole redaction fails:
 * the callers then withhold the text (fail closed, docs/protocol.md). Never
 * called with PCRE2_ERROR_NOMATCH.
 */
static int rx_error(int id, size_t pos, int rc)
{
        log_debug("redact: pattern %d failed at offset %zu (%d)", id, pos, rc);
        return rc == PCRE2_ERROR_NOMEMORY ? -ENOMEM : -E2BIG;
}

/* Search from @pos. */
static int rx_exec(int id, const char *s, size_t n, size_t pos, pcre2_match_data *md)
{
        return rx_run(rx_get(id, false), s, n, pos, md);
}

/* Match at @pos only (the pattern must have a twin). */
static int rx_exec_at(int id, const char *s, size_t n, size_t pos, pcre2_match_data *md)
{
        return rx_run(rx_get(id, true), s, n, pos, md);
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
/* Scanning                                                                                    */

/*
 * Most pattern passes run only where the text holds something every match
 * needs (a candidate), found by the scans below. Each has an SSE2 version
 * (the x86-64 baseline), an AVX2 one picked at run time, and a byte loop for
 * the rest of the text and other CPUs; all give the same answers.
 *
 * Byte classes. CT_LOOSE_WS is every byte that can be part of a PY_S
 * character (ASCII whitespace, U+001C..U+001F, and any non-ASCII byte, which
 * covers U+0085, U+00A0, U+2000...): a superset, so a filter built on it
 * never rejects a real match. CT_DIGITISH likewise stands for \d.
 */
enum {
        CT_TOKEN = 1 << 0,     /* [A-Za-z0-9_-]: the prefix pass's token class */
        CT_UPPER = 1 << 1,     /* [A-Z0-9_]: env variable names */
        CT_DIGITISH = 1 << 2,  /* ASCII digit or non-ASCII byte */
        CT_LOOSE_WS = 1 << 3,  /* see above */
        CT_URL_STOP = 1 << 4,  /* ASCII whitespace or '#': ends a URL before any '?' */
        CT_PREFIX_SG = 1 << 5, /* 'S' or 'g': "SG." and "gAAAA" tokens can be short */
};

static const uint8_t ctype[256] = {
        ['\t' ... '\r'] = CT_LOOSE_WS | CT_URL_STOP,
        [0x1C ... ' '] = CT_LOOSE_WS | CT_URL_STOP,
        ['#'] = CT_URL_STOP,
        ['-'] = CT_TOKEN,
        ['0' ... '9'] = CT_TOKEN | CT_UPPER | CT_DIGITISH,
        ['A' ... 'R'] = CT_TOKEN | CT_UPPER,
        ['S'] = CT_TOKEN | CT_UPPER | CT_PREFIX_SG,
        ['T' ... 'Z'] = CT_TOKEN | CT_UPPER,
        ['_'] = CT_TOKEN | CT_UPPER,
        ['a' ... 'f'] = CT_TOKEN,
        ['g'] = CT_TOKEN | CT_PREFIX_SG,
        ['h' ... 'z'] = CT_TOKEN,
        [0x80 ... 0xFF] = CT_DIGITISH | CT_LOOSE_WS,
};

static bool ct(char c, unsigned cls)
{
        return ctype[(unsigned char) c] & cls;
}

/* What the block scanner looks for (one byte, with its neighbours). */
enum scan_kind {
        SCAN_JSON_KEY_END, /* '"' then ':' or CT_LOOSE_WS: where a JSON key can end */
        SCAN_TG_COLON, /* ':' between CT_DIGITISH and CT_TOKEN: digits, then a Telegram secret */
        SCAN_ENV_EQ,   /* '=' after CT_UPPER or CT_LOOSE_WS: after an env assignment's name */
        SCAN_PHONE,    /* '+' then [1-9] */
};

static _inline_ bool hit_at(enum scan_kind k, const char *s, size_t n, size_t i)
{
        char prev = i > 0 ? s[i - 1] : 0, next = i + 1 < n ? s[i + 1] : 0;

        switch (k) {
        case SCAN_JSON_KEY_END:
                return s[i] == '"' && i + 1 < n && (next == ':' || ct(next, CT_LOOSE_WS));
        case SCAN_TG_COLON:
                return s[i] == ':' && i > 0 && ct(prev, CT_DIGITISH) && ct(next, CT_TOKEN);
        case SCAN_ENV_EQ:
                return s[i] == '=' && i > 0 && ct(prev, CT_UPPER | CT_LOOSE_WS);
        case SCAN_PHONE:
                return s[i] == '+' && next >= '1' && next <= '9';
        }
        return false;
}

/*
 * Bit k of the result: the token start at p + k (k < 48) is a prefix-pass
 * candidate (see pass_prefix()). @m: the token bytes among the 64 bytes at
 * @p, @sg: their 'S' and 'g' bytes, @carry: whether p[-1] is a token byte.
 */
static uint64_t prefix_candidates(uint64_t m, uint64_t sg, bool carry)
{
        uint64_t run = m & m >> 1; /* bits k, k+1 set */

        run &= run >> 2; /* k..k+3 */
        run &= run >> 4; /* k..k+7 */
        run &= run >> 5; /* k..k+12 */
        return m & ~(m << 1 | (uint64_t) carry) & (run | sg) & ((UINT64_C(1) << 48) - 1);
}

#ifdef REDACT_SSE2
/* The bytes of @v in [lo, lo + len), by signed compares on v + 0x80 - lo. */
static __m128i sse_range(__m128i v, int lo, int len)
{
        return _mm_cmplt_epi8(_mm_add_epi8(v, _mm_set1_epi8((char) (0x80 - lo))),
                              _mm_set1_epi8((char) (len - 128)));
}

static __m128i sse_eq(__m128i v, char c)
{
        return _mm_cmpeq_epi8(v, _mm_set1_epi8(c));
}

static __m128i sse_load(const char *p)
{
        return _mm_loadu_si128((const __m128i *) (const void *) p);
}

static __m128i sse_token(__m128i v)
{
        __m128i alpha = sse_range(_mm_or_si128(v, _mm_set1_epi8(0x20)), 'a', 26);

        return _mm_or_si128(_mm_or_si128(alpha, sse_range(v, '0', 10)),
                            _mm_or_si128(sse_eq(v, '_'), sse_eq(v, '-')));
}

/* Bytes >= 0x80. */
static __m128i sse_high(__m128i v)
{
        return _mm_cmplt_epi8(v, _mm_setzero_si128());
}

static __m128i sse_loose_ws(__m128i v)
{
        return _mm_or_si128(_mm_or_si128(sse_range(v, '\t', 5), sse_range(v, 0x1C, 5)),
                            sse_high(v));
}

/* hit_at() for the 16 offsets at @p (p[-1] .. p[16] readable). */
static _inline_ uint32_t sse_hits(enum scan_kind k, const char *p)
{
        __m128i x = sse_load(p), y = sse_load(p + 1), z = sse_load(p - 1), h;

        switch (k) {
        case SCAN_JSON_KEY_END:
                h = _mm_and_si128(sse_eq(x, '"'), _mm_or_si128(sse_eq(y, ':'), sse_loose_ws(y)));
                break;
        case SCAN_TG_COLON:
                h = _mm_and_si128(_mm_and_si128(sse_eq(x, ':'), sse_token(y)),
                                  _mm_or_si128(sse_range(z, '0', 10), sse_high(z)));
                break;
        case SCAN_ENV_EQ:
                h = _mm_or_si128(_mm_or_si128(sse_range(z, 'A', 26), sse_range(z, '0', 10)),
                                 _mm_or_si128(sse_eq(z, '_'), sse_loose_ws(z)));
                h = _mm_and_si128(sse_eq(x, '='), h);
                break;
        case SCAN_PHONE:
                h = _mm_and_si128(sse_eq(x, '+'), sse_range(y, '1', 9));
                break;
        default:
                h = _mm_setzero_si128();
        }
        return (uint32_t) _mm_movemask_epi8(h);
}

static uint64_t sse_token_masks(const char *p, uint64_t *sg)
{
        uint64_t m = 0, g = 0;

        for (unsigned k = 0; k < 4; k++) {
                __m128i v = sse_load(p + 16 * k);

                m |= (uint64_t) (unsigned) _mm_movemask_epi8(sse_token(v)) << (16 * k);
                g |= (uint64_t) (unsigned) _mm_movemask_epi8(
                             _mm_or_si128(sse_eq(v, 'S'), sse_eq(v, 'g')))
                     << (16 * k);
        }
        *sg = g;
        return m;
}
#endif

#ifdef REDACT_AVX2
/* The same, 32 bytes a step; each scan stops at a hit or where under 64 bytes are left. */
_avx2_ static __m256i avx_range(__m256i v, int lo, int len)
{
        return _mm256_cmpgt_epi8(_mm256_set1_epi8((char) (len - 128)),
                                 _mm256_add_epi8(v, _mm256_set1_epi8((char) (0x80 - lo))));
}

_avx2_ static __m256i avx_eq(__m256i v, char c)
{
        return _mm256_cmpeq_epi8(v, _mm256_set1_epi8(c));
}

_avx2_ static __m256i avx_load(const char *p)
{
        return _mm256_loadu_si256((const __m256i *) (const void *) p);
}

_avx2_ static __m256i avx_token(__m256i v)
{
        __m256i alpha = avx_range(_mm256_or_si256(v, _mm256_set1_epi8(0x20)), 'a', 26);

        return _mm256_or_si256(_mm256_or_si256(alpha, avx_range(v, '0', 10)),
                               _mm256_or_si256(avx_eq(v, '_'), avx_eq(v, '-')));
}

_avx2_ static __m256i avx_high(__m256i v)
{
        return _mm256_cmpgt_epi8(_mm256_setzero_si256(), v);
}

_avx2_ static __m256i avx_loose_ws(__m256i v)
{
        return _mm256_or_si256(_mm256_or_si256(avx_range(v, '\t', 5), avx_range(v, 0x1C, 5)),
                               avx_high(v));
}

_avx2_ static _inline_ uint32_t avx_hits(enum scan_kind k, const char *p)
{
        __m256i x = avx_load(p), y = avx_load(p + 1), z = avx_load(p - 1), h;

        switch (k) {
        case SCAN_JSON_KEY_END:
                h = _mm256_and_si256(avx_eq(x, '"'),
                                     _mm256_or_si256(avx_eq(y, ':'), avx_loose_ws(y)));
                break;
        case SCAN_TG_COLON:
                h = _mm256_and_si256(_mm256_and_si256(avx_eq(x, ':'), avx_token(y)),
                                     _mm256_or_si256(avx_range(z, '0', 10), avx_high(z)));
                break;
        case SCAN_ENV_EQ:
                h = _mm256_or_si256(_mm256_or_si256(avx_range(z, 'A', 26), avx_range(z, '0', 10)),
                                    _mm256_or_si256(avx_eq(z, '_'), avx_loose_ws(z)));
                h = _mm256_and_si256(avx_eq(x, '='), h);
                break;
        case SCAN_PHONE:
                h = _mm256_and_si256(avx_eq(x, '+'), avx_range(y, '1', 9));
                break;
        default:
                h = _mm256_setzero_si256();
        }
        return (uint32_t) _mm256_movemask_epi8(h);
}

_avx2_ static _inline_ size_t avx_scan(enum scan_kind k, const char *s, size_t n, size_t i,
                                       uint32_t *mask)
{
        for (; n - i >= 64; i += 32) {
                *mask = avx_hits(k, s + i);
                if (*mask)
                        return i;
        }
        *mask = 0;
        return i;
}

#        define AVX_SCAN(kind, name)                                                         \
                _avx2_ static size_t name(const char *s, size_t n, size_t i, uint32_t *mask) \
                {                                                                            \
                        return avx_scan(kind, s, n, i, mask);                                \
                }
AVX_SCAN(SCAN_JSON_KEY_END, avx_scan_json_key_end)
AVX_SCAN(SCAN_TG_COLON, avx_scan_tg_colon)
AVX_SCAN(SCAN_ENV_EQ, avx_scan_env_eq)
AVX_SCAN(SCAN_PHONE, avx_scan_phone)
#        undef AVX_SCAN

static size_t avx_scan_any(enum scan_kind k, const char *s, size_t n, size_t i, uint32_t *mask)
{
        switch (k) {
        case SCAN_JSON_KEY_END:
                return avx_scan_json_key_end(s, n, i, mask);
        case SCAN_TG_COLON:
                return avx_scan_tg_colon(s, n, i, mask);
        case SCAN_ENV_EQ:
                return avx_scan_env_eq(s, n, i, mask);
        case SCAN_PHONE:
                return avx_scan_phone(s, n, i, mask);
        }
        *mask = 0;
        return i;
}

_avx2_ static size_t avx_find_pair(const char *s, size_t n, size_t i, char a, char b)
{
        for (; n - i >= 64; i += 32) {
                uint32_t m = (uint32_t) _mm256_movemask_epi8(_mm256_and_si256(
                        avx_eq(avx_load(s + i), a), avx_eq(avx_load(s + i + 1), b)));

                if (m)
                        return i + (size_t) __builtin_ctz(m);
        }
        return i;
}

_avx2_ static size_t avx_scan_prefix(const char *s, size_t n, size_t i, uint64_t *mask)
{
        for (; n - i >= 64; i += 48) {
                __m256i v0 = avx_load(s + i), v1 = avx_load(s + i + 32);
                uint64_t m = (uint32_t) _mm256_movemask_epi8(avx_token(v0)) |
                             (uint64_t) (uint32_t) _mm256_movemask_epi8(avx_token(v1)) << 32;
                uint64_t sg = (uint32_t) _mm256_movemask_epi8(
                                      _mm256_or_si256(avx_eq(v0, 'S'), avx_eq(v0, 'g'))) |
                              (uint64_t) (uint32_t) _mm256_movemask_epi8(
                                      _mm256_or_si256(avx_eq(v1, 'S'), avx_eq(v1, 'g')))
                                      << 32;

                *mask = prefix_candidates(m, sg, i > 0 && ct(s[i - 1], CT_TOKEN));
                if (*mask)
                        return i;
        }
        *mask = 0;
        return i;
}
#endif

/*
 * The block scanner: from @i on, 32 offsets at a time, find the first block
 * holding a hit and return its start, with bit k of *mask set when offset
 * start + k is one; or return @n (*mask = 0). The caller walks the bits,
 * which costs far less than a new search per hit where hits are dense (the
 * ':' of log lines, the '"' of JSON).
 */
static _inline_ size_t scan(enum scan_kind k, const char *s, size_t n, size_t i, uint32_t *mask)
{
        for (; i < n; i += 32) {
                uint32_t m = 0;
                size_t j = 0;

#ifdef REDACT_AVX2
                if (use_avx2 && i > 0 && n - i >= 64) {
                        i = avx_scan_any(k, s, n, i, mask);
                        if (*mask)
                                return i;
                }
#endif

#ifdef REDACT_SSE2
                for (; i + j > 0 && j < 32 && n - i - j >= 17; j += 16)
                        m |= sse_hits(k, s + i + j) << j;
#endif
                for (; j < 32 && i + j < n; j++)
                        if (hit_at(k, s, n, i + j))
                                m |= UINT32_C(1) << j;
                if (m) {
                        *mask = m;
                        return i;
                }
        }
        *mask = 0;
        return n;
}

/*
 * The same for pass_prefix(), 48 offsets at a time (64-byte windows: the
 * run test needs 12 bytes of look-ahead); @i is 0 or a previous result + 48.
 */
static size_t scan_prefix(const char *s, size_t n, size_t i, uint64_t *mask)
{
#ifdef REDACT_AVX2
        if (use_avx2) {
                i = avx_scan_prefix(s, n, i, mask);
                if (*mask)
                        return i;
        }
#endif
        for (; i < n; i += 48) {
                char pad[64];
                const char *p = s + i;
                uint64_t m = 0, sg = 0;

                if (n - i < sizeof(pad)) {
                        /* NUL is not a token byte: the text ends the last run. */
                        memset(pad, 0, sizeof(pad));
                        memcpy(pad, s + i, n - i);
                        p = pad;
                }
#ifdef REDACT_SSE2
                m = sse_token_masks(p, &sg);
#else
                for (unsigned k = 0; k < 64; k++) {
                        m |= (uint64_t) ct(p[k], CT_TOKEN) << k;
                        sg |= (uint64_t) ct(p[k], CT_PREFIX_SG) << k;
                }
#endif
                *mask = prefix_candidates(m, sg, i > 0 && ct(s[i - 1], CT_TOKEN));
                if (*mask)
                        return i;
        }
        *mask = 0;
        return n;
}

/*
 * First offset i with s[i] == a and s[i + 1] == b, or NULL. glibc's memmem()
 * is ~0.35 ns/byte for short needles; this is ~10x faster, and it is what
 * every multi-byte pre-check is built on.
 */
static const char *find_pair(const char *s, size_t n, char a, char b)
{
        size_t i = 0;

        if (n < 2)
                return NULL;
#ifdef REDACT_AVX2
        if (use_avx2)
                i = avx_find_pair(s, n, i, a, b);
#endif
#ifdef REDACT_SSE2
        for (; n - i >= 17; i += 16) {
                unsigned m = (unsigned) _mm_movemask_epi8(
                        _mm_and_si128(sse_eq(sse_load(s + i), a), sse_eq(sse_load(s + i + 1), b)));

                if (m)
                        return s + i + __builtin_ctz(m);
        }
#endif
        for (; i + 1 < n; i++)
                if (s[i] == a && s[i + 1] == b)
                        return s + i;
        return NULL;
}

/*
 * First occurrence of @lit (at least 2 bytes) in @s, searching for the byte
 * pair at @off of it first (pick a rare one: "yJ" of "eyJ", "-B" of "-----BEGIN").
 */
static const char *find_lit(const char *s, size_t n, const char *lit, size_t off)
{
        size_t len = strlen(lit), i = off;

        while (i < n && n - i >= len - off) {
                const char *p = find_pair(s + i, n - i - (len - off) + 2, lit[off], lit[off + 1]);

                if (!p)
                        return NULL;
                if (memcmp(p - off, lit, len) == 0)
                        return p - off;
                i = (size_t) (p - s) + 1;
        }
        return NULL;
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

struct pass_io {
        const char *s;
        size_t n;
        struct buf *out;
        pcre2_match_data *md;
        bool changed;
};

/*
 * A hint returns the least offset >= @pos at which a match of its pass can
 * start, or SIZE_MAX when none can; the search then starts there. Each one
 * is a necessary condition checked in plain C (the comment says why it is
 * one), so the search finds exactly the match a search from @pos finds.
 * This keeps the regexes that have no start-of-match optimisation (env
 * assignments, Telegram tokens) from being tried at every offset.
 */
typedef size_t (*redact_hint_fn)(struct pass_io *io, size_t pos);

/* Whether p[0..n) is @lit (lower case) in any ASCII case; strncasecmp() depends on the locale. */
static bool ascii_ci_eq(const char *p, const char *lit, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if ((p[i] >= 'A' && p[i] <= 'Z' ? p[i] + 32 : p[i]) != lit[i])
                        return false;
        return true;
}

/* Length of the longest of @names (NULL-terminated) that s[0..j) ends with, or 0. */
static size_t suffix_len(const char *s, size_t j, const char *const *names, bool icase)
{
        size_t best = 0;

        for (; *names; names++) {
                size_t l = strlen(*names);

                if (l > best && j >= l &&
                    (icase ? ascii_ci_eq(s + j - l, *names, l) : memcmp(s + j - l, *names, l) == 0))
                        best = l;
        }
        return best;
}

static bool has_env_keyword(const char *p, size_t n)
{
        static const char *const kw[] = {"API_KEY", "APIKEY", "TOKEN",     "SECRET",
                                         "PASSW",   "AUTH",   "CREDENTIAL"};

        for (size_t i = 0; i + 4 <= n; i++) {
                if (!memchr("ATSPC", p[i], 5))
                        continue;
                for (size_t k = 0; k < ELEMENTSOF(kw); k++) {
                        size_t l = strlen(kw[k]);

                        if (l <= n - i && memcmp(p + i, kw[k], l) == 0)
                                return true;
                }
        }
        return false;
}

/*
 * Env assignments: the name ([A-Z0-9_], at most 50 + 10 + 50 characters,
 * holding a keyword) ends right before the optional whitespace and the '='.
 * So a match has an '=' whose preceding run of name characters holds a
 * keyword within its last 110 bytes, and starts in that window.
 */
static size_t hint_env(struct pass_io *io, size_t pos)
{
        const char *s = io->s;
        size_t n = io->n;

        for (size_t b = pos; b < n; b += 32) {
                uint32_t m;

                b = scan(SCAN_ENV_EQ, s, n, b, &m);
                for (; m; m &= m - 1) {
                        size_t e = b + (size_t) __builtin_ctz(m), j, k;

                        for (j = e; j > pos && ct(s[j - 1], CT_LOOSE_WS); j--)
                                ;
                        for (k = j; k > pos && j - k < 110 && ct(s[k - 1], CT_UPPER); k--)
                                ;
                        if (has_env_keyword(s + k, j - k))
                                return k;
                }
        }
        return SIZE_MAX;
}

/*
 * Telegram tokens: (bot)?(\d{8,}):([-A-Za-z0-9_]{30,}). A match has a ':'
 * followed by 30 ASCII token bytes and preceded by at least 8 bytes that can
 * be digits (\d is Unicode: any non-ASCII byte may be part of one); it
 * starts at those digits or at "bot" before them.
 */
static size_t hint_tg(struct pass_io *io, size_t pos)
{
        const char *s = io->s;
        size_t n = io->n;

        for (size_t b = pos; b < n; b += 32) {
                uint32_t m;

                b = scan(SCAN_TG_COLON, s, n, b, &m);
                for (; m; m &= m - 1) {
                        size_t c = b + (size_t) __builtin_ctz(m), d, k;

                        if (n - c <= 30)
                                return SIZE_MAX;
                        for (k = 1; k <= 30 && ct(s[c + k], CT_TOKEN); k++)
                                ;
                        if (k <= 30)
                                continue;
                        for (d = c; d > pos && ct(s[d - 1], CT_DIGITISH); d--)
                                ;
                        if (c - d >= 8)
                                return d - pos >= 3 ? d - 3 : pos;
                }
        }
        return SIZE_MAX;
}

/*
 * JSON secret fields: ("name")\s*:\s*"value", the name any case. So a match
 * starts at the '"' before a key name that is followed by a '"',
 * whitespace and ':'. Names are compared in ASCII lower case; a name with a
 * non-ASCII byte (U+212A KELVIN SIGN is a 'k' here) is left to the regex.
 * Exact starts.
 */
static bool json_key_name(const char *p, size_t l)
{
        static const struct {
                const char *name;
                size_t len;
        } names[] = {
#define N(s) {s, sizeof(s) - 1}
                N("apikey"),       N("api_key"),      N("token"),         N("secret"),
                N("password"),     N("access_token"), N("refresh_token"), N("auth_token"),
                N("bearer"),       N("secret_value"), N("raw_secret"),    N("secret_input"),
                N("key_material"),
#undef N
        };
        char low[16];

        for (size_t i = 0; i < l; i++)
                if ((unsigned char) p[i] >= 0x80)
                        return true;
        if (l < 5 || l >= sizeof(low))
                return false;
        for (size_t i = 0; i < l; i++)
                low[i] = (char) (p[i] >= 'A' && p[i] <= 'Z' ? p[i] + 32 : p[i]);
        for (size_t k = 0; k < ELEMENTSOF(names); k++)
                if (names[k].len == l && memcmp(low, names[k].name, l) == 0)
                        return true;
        return false;
}

static size_t hint_json(struct pass_io *io, size_t pos)
{
        const char *s = io->s;
        size_t n = io->n;

        for (size_t b = pos; b < n; b += 32) {
                uint32_t m;

                b = scan(SCAN_JSON_KEY_END, s, n, b, &m);
                for (; m; m &= m - 1) {
                        size_t q = b + (size_t) __builtin_ctz(m), k, o;

                        for (k = q + 1; k < n && ct(s[k], CT_LOOSE_WS); k++)
                                ;
                        if (k >= n || s[k] != ':')
                                continue;
                        /* The value: whitespace, '"', and something other than '"'. */
                        for (k++; k < n && ct(s[k], CT_LOOSE_WS); k++)
                                ;
                        if (n - k < 2 || s[k] != '"' || s[k + 1] == '"')
                                continue;
                        /* The name is at most 13 characters of up to 3 bytes. */
                        for (o = q; o > pos && q - o < 40 && s[o - 1] != '"'; o--)
                                ;
                        if (o > pos && s[o - 1] == '"' && json_key_name(s + o, q - o))
                                return o - 1;
                }
        }
        return SIZE_MAX;
}

/*
 * DB connection strings: "scheme://" with one of the scheme names right
 * before it, in any case. Case variants outside ASCII (U+017F for 's') are
 * not spelled out: any non-ASCII byte among the 16 bytes before the "://"
 * (the longest name, see pass_db()) makes it a candidate.
 */
static bool db_scheme_before(const char *s, size_t j)
{
        static const char *const names[] = {"postgres",    "postgresql", "mysql", "mongodb",
                                            "mongodb+srv", "redis",      "amqp",  NULL};

        for (size_t k = j; k > 0 && j - k < 16; k--)
                if ((unsigned char) s[k - 1] >= 0x80)
                        return true;
        return suffix_len(s, j, names, true) > 0;
}

static size_t hint_db(struct pass_io *io, size_t pos)
{
        const char *s = io->s;
        size_t n = io->n;

        for (size_t j = pos; j < n; j++) {
                const char *p = find_lit(s + j, n - j, "://", 0);
                size_t h;

                if (!p)
                        break;
                j = (size_t) (p - s);
                if (!db_scheme_before(s + pos, j - pos))
                        continue;
                h = j - pos > 16 ? j - 16 : pos;
                while (h > pos && is_cont(s[h]))
                        h--;
                return h;
        }
        return SIZE_MAX;
}

/*
 * URL query strings: the query's '?' is the first '?' after the URL's
 * "scheme://" (http, https, ws, wss, ftp), and no whitespace or '#' comes
 * between them. So for each '?', the text back to the previous '?',
 * whitespace or '#' must hold such a "scheme://" (ASCII whitespace only is
 * looked at: a superset), and a match can start only at such a scheme.
 * URLs without a query match the regex too but change nothing, and skipping
 * them cannot expose another match: a URL ends at the same byte whichever of
 * its "://" it is read from. Exact starts: the pass uses the anchored regex.
 */
static size_t hint_urlq(struct pass_io *io, size_t pos)
{
        static const char *const schemes[] = {"http", "https", "ws", "wss", "ftp", NULL};
        const char *s = io->s;
        size_t n = io->n;

        for (size_t from = pos; from < n;) {
                const char *p = memchr(s + from, '?', n - from);
                size_t q, a;

                if (!p)
                        break;
                q = (size_t) (p - s);
                for (a = q; a > from && !ct(s[a - 1], CT_URL_STOP); a--)
                        ;
                for (size_t j = a; j < q; j++) {
                        const char *c = find_lit(s + j, q - j, "://", 0);
                        size_t l;

                        if (!c)
                                break;
                        j = (size_t) (c - s);
                        l = suffix_len(s + pos, j - pos, schemes, false);
                        if (l > 0)
                                return j - l;
                }
                from = q + 1;
        }
        return SIZE_MAX;
}

/* Phone numbers: '+', an ASCII [1-9] and at least 6 digits (of 1 to 4 bytes). Exact starts. */
static size_t hint_phone(struct pass_io *io, size_t pos)
{
        const char *s = io->s;
        size_t n = io->n;

        for (size_t b = pos; b < n; b += 32) {
                uint32_t m;

                b = scan(SCAN_PHONE, s, n, b, &m);
                for (; m; m &= m - 1) {
                        size_t i = b + (size_t) __builtin_ctz(m), k;

                        for (k = 2; k < 8 && i + k < n && ct(s[i + k], CT_DIGITISH); k++)
                                ;
                        if (k == 8)
                                return i;
                }
        }
        return SIZE_MAX;
}

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
                rc = at ? rx_exec_at(id, s, n, pos, io->md) : rx_exec(id, s, n, pos, io->md);
                if (rc == PCRE2_ERROR_NOMATCH && at) {
                        pos = next_char(s, n, pos);
                        continue;
                }
                if (rc == PCRE2_ERROR_NOMATCH)
                        break;
                if (rc < 0)
                        return rx_error(id, pos, rc);
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

                i = scan_prefix(s, n, i, &cand);
                for (; cand; cand &= cand - 1) {
                        size_t c = i + (size_t) __builtin_ctzll(cand);
                        const PCRE2_SIZE *ov;
                        int rc;

                        if (c < pos || !prefix_literal_at(s + c, n - c))
                                continue;
                        rc = rx_exec_at(RX_PREFIX, s, n, c, io->md);
                        if (rc == PCRE2_ERROR_NOMATCH)
                                continue;
                        if (rc < 0)
                                return rx_error(RX_PREFIX, c, rc);
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

                rc = rx_exec(RX_PKEY_BEGIN, s, n, pos, io->md);
                if (rc == PCRE2_ERROR_NOMATCH)
                        break;
                if (rc < 0)
                        return rx_error(RX_PKEY_BEGIN, pos, rc);
                ov = pcre2_get_ovector_pointer(io->md);
                hs = ov[0];
                he = ov[1];
                if (!end_known || he < end_from || (!end_none && he > end_s)) {
                        rc = rx_exec(RX_PKEY_END, s, n, he, io->md);
                        if (rc == PCRE2_ERROR_NOMATCH)
                                end_none = true;
                        else if (rc < 0)
                                return rx_error(RX_PKEY_END, he, rc);
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

                h = hint_db(io, pos);
                if (h > n)
                        break;
                pos = h;
                rc = rx_exec(RX_DB, s, n, pos, io->md);
                if (rc == PCRE2_ERROR_NOMATCH)
                        break;
                if (rc < 0)
                        return rx_error(RX_DB, pos, rc);
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
        {PASS_REGEX, RX_ENV, emit_env, NULL, hint_env, false, true, "=", NULL, 0, 0},
        {PASS_REGEX, RX_JSON, emit_json, NULL, hint_json, true, true, "\"", ":", 0, 0},
        {PASS_REGEX, RX_AUTH, emit_auth, NULL, NULL, false, false, ":", NULL, 0, 0},
        {PASS_REGEX, RX_TELEGRAM, emit_telegram, NULL, hint_tg, false, false, ":", NULL, 0, 0},
        {PASS_PRIVATE_KEY, 0, NULL, NULL, NULL, false, false, "-----BEGIN", "-----END", 4, 4},
        {PASS_DB, 0, NULL, NULL, NULL, false, false, "@", "://", 0, 0},
        {PASS_REGEX, RX_JWT, emit_mask_g0, NULL, NULL, false, false, "eyJ", NULL, 1, 0},
        {PASS_REGEX, RX_USERINFO, emit_userinfo, NULL, NULL, false, false, "@", "://", 0, 0},
        {PASS_REGEX, RX_URLQ, emit_urlq, urlq_changes, hint_urlq, true, false, "?", "://", 0, 0},
        {PASS_FORM, 0, NULL, NULL, NULL, false, false, "&", "=", 0, 0},
        {PASS_REGEX, RX_DISCORD, emit_discord, NULL, NULL, false, false, "<@", NULL, 0, 0},
        {PASS_REGEX, RX_PHONE, emit_phone, NULL, hint_phone, true, false, "+", NULL, 0, 0},
};
/* clang-format on */

static bool has_need(const char *s, size_t n, const char *lit, size_t off)
{
        if (!lit)
                return true;
        if (!lit[1])
                return has_char(s, n, lit[0]);
        return find_lit(s, n, lit, off) != NULL;
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

/* ------------------------------------------------------------------------------------------ */
/* Value-based redaction                                                                       */

struct vform {
        char *data;
        size_t len;
};

/*
 * pass_values() probes the text at every 4th offset only. That sees every
 * occurrence of a form because forms are at least VALUE_FORM_MIN bytes long
 * and are indexed by their 4-byte grams at offsets 0..3: one of the first 4
 * offsets of an occurrence is a multiple of 4, and the gram there lies
 * inside the form.
 */
#define VALUE_FORM_MIN 8
struct vgram {
        uint32_t form; /* index into forms */
        uint32_t off;  /* 0..3 */
        uint32_t next; /* 1-based index of the next gram in the same bucket, 0 = none */
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
        struct vgram *grams;
        size_t n_grams;
        size_t max_len; /* of the secrets */
        uint32_t first_head[256];
        uint8_t first_bits[256 / 8];
        /*
         * For url_at(): the byte pairs a URL-encoded secret can start with
         * when its first byte is not encoded: (v[0], v[1]), (v[0], '%'), and
         * (v[0], '+') for a v[1] of ' '.
         */
        uint8_t url_pairs[65536 / 8];
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
        free(r->grams);
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
        /*
         * Secrets have at least REDACT_MIN_SECRET_LEN (8) bytes, and none of
         * their forms is shorter (hex: 2n, base64: over 4n/3 - 2), so the
         * length check drops nothing; pass_values() depends on it.
         */
        if (n < VALUE_FORM_MIN || fs->n >= ELEMENTSOF(fs->f)) {
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
        struct vgram *ng;
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
        ng = realloc(r->grams, (r->n_grams + 4 * fs.n) * sizeof(*ng));
        if (!ng) {
                wipe_free(copy, n);
                e = -ENOMEM;
                goto out_forms;
        }
        r->grams = ng;

        /* Commit: nothing below can fail. */
        ns[r->n_secrets] = (struct vsecret){.data = copy, .len = n};
        ns[r->n_secrets].next = r->first_head[(unsigned char) copy[0]];
        r->first_head[(unsigned char) copy[0]] = (uint32_t) ++r->n_secrets;
        r->first_bits[(unsigned char) copy[0] >> 3] |= 1u << ((unsigned char) copy[0] & 7);

        r->max_len = MAX(r->max_len, n);
        for (size_t k = 0; k < 3; k++) {
                static const char second[] = {0, '%', '+'};
                unsigned pair = (unsigned char) copy[0] |
                                (unsigned) (unsigned char) (k == 0 ? copy[1] : second[k]) << 8;

                if (k < 2 || copy[1] == ' ')
                        r->url_pairs[pair >> 3] |= (uint8_t) (1u << (pair & 7));
        }

        for (size_t i = 0; i < fs.n; i++) {
                nf[r->n_forms] = (struct vform){.data = fs.f[i].data, .len = fs.f[i].len};
                for (uint32_t off = 0; off < 4; off++) {
                        uint32_t h = prefix_hash(fs.f[i].data + off);

                        ng[r->n_grams] = (struct vgram){
                                .form = (uint32_t) r->n_forms,
                                .off = off,
                                .next = r->bucket_head[h % N_BUCKETS],
                        };
                        r->bucket_head[h % N_BUCKETS] = (uint32_t) ++r->n_grams;
                        r->bloom[h >> 3] |= 1u << (h & 7);
                }
                r->n_forms++;
        }
        fs.n = 0;
        return 0;

out_forms:
        form_set_done(&fs);
        return e;
}

/*
 * best[j]: the longest literal form (raw, hex, base64, JSON-escaped) at
 * offset k - 3 + j, for the forms whose gram at @k is theirs (see struct vgram).
 */
static void literal_probe(const struct redactor *r, const char *s, size_t n, size_t k,
                          size_t best[4])
{
        uint32_t h;

        if (n - k < 4)
                return;
        h = prefix_hash(s + k);
        if (!(r->bloom[h >> 3] & (1u << (h & 7))))
                return;
        for (uint32_t g = r->bucket_head[h % N_BUCKETS]; g; g = r->grams[g - 1].next) {
                const struct vgram *e = &r->grams[g - 1];
                const struct vform *f = &r->forms[e->form];
                size_t i;

                if (e->off > k)
                        continue;
                i = k - e->off;
                if (f->len > best[3 - e->off] && f->len <= n - i &&
                    memcmp(s + i, f->data, f->len) == 0)
                        best[3 - e->off] = f->len;
        }
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

        if (s[i] != '%' && s[i] != '+') {
                unsigned pair;

                /* Every secret byte takes at least one byte of text. */
                if (n - i < REDACT_MIN_SECRET_LEN)
                        return 0;
                pair = (unsigned char) s[i] | (unsigned) (unsigned char) s[i + 1] << 8;
                if (!(r->url_pairs[pair >> 3] & (1u << (pair & 7))))
                        return 0;
        }
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
static size_t next_byte(const char *s, size_t n, size_t i, char c)
{
        const char *p = memchr(s + i, c, n - i);

        return p ? (size_t) (p - s) : SIZE_MAX;
}

static int pass_values(const struct redactor *r, struct pass_io *io)
{
        const char *s = io->s;
        size_t n = io->n, last = 0, cs = 0, ce = 0, pct = 0, plus = 0;
        bool open = false, url;
        int e;

        if (!r || r->n_secrets == 0 || n < REDACT_MIN_SECRET_LEN)
                return 0;
        /*
         * A URL-encoded occurrence that is not also a raw one holds a '%' or
         * '+', and the bytes before the first of them are raw secret bytes:
         * it starts less than max_len bytes before one. pct and plus: the
         * next '%' and '+' at or after the offset (SIZE_MAX: none).
         */
        url = has_char(s, n, '%') || has_char(s, n, '+');

        for (size_t k = 0; k < n + 3; k += 4) {
                size_t best[4] = {0, 0, 0, 0};

                if (k < n)
                        literal_probe(r, s, n, k, best);
                if ((best[0] | best[1] | best[2] | best[3]) == 0 &&
                    (!url || MIN(pct, plus) > k + r->max_len))
                        continue;
                for (size_t j = 0; j < 4; j++) {
                        size_t i = k + j - 3, m = best[j];

                        if (k + j < 3)
                                continue;
                        if (i >= n)
                                break;
                        if (url) {
                                if (pct < i)
                                        pct = next_byte(s, n, i, '%');
                                if (plus < i)
                                        plus = next_byte(s, n, i, '+');
                                if (MIN(pct, plus) - i < r->max_len)
                                        m = MAX(m, url_at(r, s, n, i));
                        }
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

        /* Strings further down would go out unredacted: fail instead. */
        if (depth > REDACT_JSON_DEPTH_MAX)
                return -E2BIG;
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

int redact_has_vendor_key(const char *s, size_t n)
{
        _cleanup_(match_data_freep) pcre2_match_data *md = NULL;
        int r, rc;

        if (!s)
                return 0;
        r = rx_ensure();
        if (r < 0)
                return r;
        md = pcre2_match_data_create(RX_OVEC_PAIRS, NULL);
        if (!md)
                return -ENOMEM;
        rc = rx_exec(RX_PREFIX, s, n, 0, md);
        if (rc == PCRE2_ERROR_NOMATCH)
                return 0;
        /* A limit hit on a hostile text counts as "found": the caller refuses the URL. */
        return 1;
}

const char *redact_strerror(int e)
{
        if (e == -E2BIG)
                return "the text is too large or complex to scan";
        return strerror(e < 0 ? -e : e);
}
