/* SPDX-License-Identifier: MIT */
/*
 * Where a pattern match can start: byte classes, the block scanners (SSE2,
 * AVX2, plain C) and, built on them, each pass's hint.
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
#include "core/output/redact-internal.h"

#include <stdint.h>
#include <string.h>

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

/* ------------------------------------------------------------------------------------------ */
/* Scanning                                                                                    */

#ifdef REDACT_AVX2
static bool use_avx2; /* the scans below have AVX2 versions; set once by redact_scan_init() */
#endif

void redact_scan_init(void)
{
#ifdef REDACT_AVX2
        use_avx2 = __builtin_cpu_supports("avx2");
#endif
}

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

size_t redact_scan_prefix(const char *s, size_t n, size_t i, uint64_t *mask)
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

const char *redact_find_lit(const char *s, size_t n, const char *lit, size_t off)
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
/* Hints (see redact-internal.h)                                                               */

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
size_t redact_hint_env(struct pass_io *io, size_t pos)
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
size_t redact_hint_tg(struct pass_io *io, size_t pos)
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

size_t redact_hint_json(struct pass_io *io, size_t pos)
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

size_t redact_hint_db(struct pass_io *io, size_t pos)
{
        const char *s = io->s;
        size_t n = io->n;

        for (size_t j = pos; j < n; j++) {
                const char *p = redact_find_lit(s + j, n - j, "://", 0);
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
size_t redact_hint_urlq(struct pass_io *io, size_t pos)
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
                        const char *c = redact_find_lit(s + j, q - j, "://", 0);
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
size_t redact_hint_phone(struct pass_io *io, size_t pos)
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
