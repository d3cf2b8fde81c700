/* SPDX-License-Identifier: MIT */
/*
 * The redactor's pattern table (the seed's regexes, docs/seed.md 1.12) and the
 * PCRE2 calls that run them, with the resource limits that keep hostile input
 * from hanging a match.
 *
 * Regexes are PCRE2 in UTF + UCP mode so \s, \d and (?i) behave like
 * Python's re on str. PCRE2_MATCH_INVALID_UTF makes stray invalid bytes
 * non-matching instead of an error, and skips the per-call UTF check (which
 * would otherwise make a many-matches loop quadratic). Where Python writes
 * \s we write PY_S: Python's whitespace also includes U+001C..U+001F and
 * U+0085, PCRE2's does not.
 */
#include "core/output/redact-internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include "basic/log.h"

/* Resource limits for one pcre2_match() call (hostile input must not hang us). */
#define RX_MATCH_LIMIT 10000000u
#define RX_DEPTH_LIMIT 10000u
#define RX_HEAP_LIMIT_KIB (64u * 1024u)

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

static pthread_mutex_t rx_lock = PTHREAD_MUTEX_INITIALIZER;

/* Process-wide setup shared by all patterns (the patterns themselves compile lazily). */
static void rx_init(void)
{
        redact_scan_init();
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

int redact_rx_ensure(void)
{
        int r = pthread_once(&rx_once, rx_init);

        if (r != 0)
                return -r;
        return rx_init_error;
}

static int rx_run(const pcre2_code *code, const char *s, size_t n, size_t pos, pcre2_match_data *md)
{
        int rc;

        /* Only a failed compile (out of memory) leaves no code: -ENOMEM (redact_rx_error()). */
        if (!code)
                return PCRE2_ERROR_NOMEMORY;
        rc = pcre2_match(code, (PCRE2_SPTR) s, n, pos, 0, md, rx_mctx);
        /* The JIT's machine stack is small; the interpreter's heap use is bounded by the limit. */
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
                rc = pcre2_match(code, (PCRE2_SPTR) s, n, pos, PCRE2_NO_JIT, md, rx_mctx);
        return rc;
}

int redact_rx_error(int id, size_t pos, int rc)
{
        log_debug("redact: pattern %d failed at offset %zu (%d)", id, pos, rc);
        return rc == PCRE2_ERROR_NOMEMORY ? -ENOMEM : -E2BIG;
}

int redact_rx_exec(int id, const char *s, size_t n, size_t pos, pcre2_match_data *md)
{
        return rx_run(rx_get(id, false), s, n, pos, md);
}

int redact_rx_exec_at(int id, const char *s, size_t n, size_t pos, pcre2_match_data *md)
{
        return rx_run(rx_get(id, true), s, n, pos, md);
}
