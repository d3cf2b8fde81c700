/* SPDX-License-Identifier: MIT */
/*
 * The pattern of a content search and the next matching line of a buffer (search_files).
 *
 * Matching: a pattern without regex metacharacters (after `\` + punctuation escapes) is
 * searched as a literal: memchr on its rarest byte, then memcmp. Everything else goes to
 * PCRE2 (JIT when available). When the regex has a literal every match must contain (as
 * ripgrep extracts one), only lines holding that literal are given to PCRE2, one at a time;
 * otherwise PCRE2 runs over the whole chunk in multi-line mode and a match that runs past the
 * end of its line is re-checked on that line alone. Either way, like ripgrep, a match never
 * spans lines. A match context caps the work per match attempt, so a catastrophic pattern such as
 * (a+)+$ on a long line ends with an error instead of hanging.
 *
 * Regex flavour: the seed used ripgrep's Rust regex; PCRE2 is close for everyday patterns
 * (same escapes, classes, \p{..}, (?i), anchors per line; \w \d \s \b are Unicode when used).
 * Differences: PCRE2 also accepts backreferences and look-around (Rust rejects them), treats
 * Rust's class set operations ([a-z&&[^x]], --, ~~) as plain characters, and backtracks (hence
 * the match limit) where Rust's engine is linear-time.
 */

#include "core/search/search.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/fd-util.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "basic/utf8.h"

/* Longest pattern compiled (bytes). */
#define PATTERN_MAX (64u * 1024)
/* Look at the clock and the cancel fd once per this many regex calls or chunks. */
#define CHECK_EVERY 256

/*
 * Rank of each byte by how often it occurs in source code and documentation (0 = rarest),
 * measured once on /usr/include, /usr/share/doc and Python/Perl library sources. The literal
 * search looks for the rarest byte of the needle.
 */
/* clang-format off */
static const uint8_t byte_rank[256] = {
        0,   1,   2,   3,   4,   5,   6,   7,   8,   195, 245, 9,   72,  73,  10,  11,
        12,  13,  14,  15,  16,  17,  18,  19,  48,  20,  21,  22,  23,  24,  25,  26,
        255, 161, 212, 207, 162, 160, 171, 198, 231, 232, 233, 169, 230, 216, 218, 234,
        214, 208, 199, 190, 186, 192, 185, 174, 183, 191, 204, 203, 209, 200, 211, 159,
        170, 221, 193, 224, 206, 235, 201, 197, 188, 228, 167, 187, 222, 205, 226, 225,
        217, 164, 223, 239, 229, 196, 189, 173, 194, 184, 163, 182, 178, 181, 155, 250,
        176, 246, 219, 244, 242, 254, 240, 227, 237, 249, 180, 215, 243, 236, 251, 247,
        241, 172, 248, 252, 253, 238, 213, 202, 210, 220, 175, 179, 168, 177, 158, 27,
        153, 140, 135, 128, 108, 96,  104, 139, 136, 107, 81,  77,  105, 95,  84,  143,
        118, 133, 110, 117, 148, 121, 145, 92,  119, 141, 116, 90,  138, 132, 85,  154,
        165, 122, 88,  106, 130, 99,  103, 127, 109, 146, 79,  124, 83,  98,  100, 82,
        114, 126, 112, 115, 125, 111, 134, 102, 150, 137, 97,  113, 131, 120, 123, 87,
        28,  29,  166, 151, 78,  94,  58,  56,  61,  65,  62,  53,  64,  51,  147, 129,
        156, 144, 59,  57,  54,  60,  101, 142, 93,  91,  55,  52,  30,  31,  32,  33,
        149, 89,  157, 86,  69,  76,  75,  74,  70,  71,  68,  67,  66,  63,  34,  80,
        152, 35,  36,  49,  46,  37,  47,  38,  39,  40,  45,  41,  42,  50,  43,  44,
};
/* clang-format on */

bool search_interrupted(const struct search *s)
{
        if (s->deadline != USEC_INFINITY && now_usec() >= s->deadline)
                return true;
        return fd_readable_now(s->cancel_fd);
}

/*
 * Called before each regex call and each chunk read: a long search of one file (a huge file,
 * a slow regex on many lines) still notices the deadline and the cancel fd.
 */
bool search_should_stop(struct scan_thread *t)
{
        return ++t->calls % CHECK_EVERY == 0 && search_interrupted(t->s);
}

static bool is_meta(char c)
{
        return strchr("\\^$.|?*+()[]{}", c) != NULL;
}

static bool is_ascii_alnum(char c)
{
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/*
 * The literal a pattern stands for, if it is one: no metacharacter except `\` before ASCII
 * punctuation (which PCRE2 and Rust both read as that character). Returns 1 with a new string
 * in *ret, 0 when the pattern is a real regex, -ENOMEM.
 */
static int pattern_literal(const char *p, size_t n, char **ret, size_t *ret_len)
{
        _cleanup_free_ char *s = malloc(n + 1);
        size_t k = 0;

        if (!s)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                char c = p[i];

                if (c == '\\') {
                        if (i + 1 >= n)
                                return 0;
                        c = p[++i];
                        if ((unsigned char) c >= 0x80 || is_ascii_alnum(c) || c == ' ' ||
                            c == '\t' || c == '\n')
                                return 0;
                } else if (is_meta(c))
                        return 0;
                s[k++] = c;
        }
        s[k] = '\0';
        *ret = TAKE_PTR(s);
        *ret_len = k;
        return 1;
}

/* \w \d \s \b and POSIX classes are ASCII-only in PCRE2 without UCP; Rust's are Unicode. */
static bool needs_ucp(const char *p, size_t n)
{
        for (size_t i = 0; i + 1 < n; i++) {
                if (p[i] == '\\') {
                        if (strchr("wWdDsSbB", p[i + 1]))
                                return true;
                        i++;
                } else if (p[i] == '[' && p[i + 1] == ':')
                        return true;
        }
        return false;
}

void search_matcher_release(struct matcher *m)
{
        free(m->lit.s);
        free(m->req.s);
        pcre2_code_free(m->code);
        *m = (struct matcher){};
}

static void lit_set(struct lit *l, char *s, size_t n)
{
        l->s = s;
        l->n = n;
        l->rare_at = 0;
        for (size_t i = 1; i < n; i++)
                if (byte_rank[(unsigned char) s[i]] < byte_rank[(unsigned char) s[l->rare_at]])
                        l->rare_at = i;
}

/* Skip the class starting at p[i] == '['; the index after its ']' (n when unterminated). */
static size_t skip_class(const char *p, size_t n, size_t i)
{
        size_t j = i + 1;

        if (j < n && p[j] == '^')
                j++;
        if (j < n && p[j] == ']')
                j++;
        for (; j < n; j++) {
                if (p[j] == '\\')
                        j++;
                else if (p[j] == '[' && j + 1 < n && p[j + 1] == ':') {
                        const char *e = memmem(p + j + 2, n - j - 2, ":]", 2);

                        if (e)
                                j = (size_t) (e - p) + 1;
                } else if (p[j] == ']')
                        return j + 1;
        }
        return n;
}

/*
 * A literal that every match of regex @p must contain, for a prefilter (what ripgrep does with
 * its regexes): the longest run of literal characters in the top-level concatenation. Only
 * runs we are sure of count: anything unusual ends the run, and top-level alternation, inline
 * options, \Q..\E and (*VERBS) give no literal at all. Returns 1 with a new string in *ret,
 * 0 when there is none worth using, -ENOMEM.
 */
static int required_literal(const char *p, size_t n, char **ret, size_t *ret_len)
{
        _cleanup_free_ char *run = malloc(n + 1), *best = malloc(n + 1);
        size_t run_len = 0, best_len = 0, atom = 0;

        if (!run || !best)
                return -ENOMEM;
        for (size_t i = 0; i < n;) {
                char c = p[i];

                if (c == '|' || (c == '(' && i + 1 < n && p[i + 1] == '*'))
                        return 0;
                if (c == '(' && i + 2 < n && p[i + 1] == '?' && strchr("imnsxJU^-)", p[i + 2]))
                        return 0;
                if (c == '\\' && i + 1 < n && (p[i + 1] == 'Q' || p[i + 1] == 'E'))
                        return 0;

                if (c == '*' || c == '?' || c == '{') {
                        /* The atom before is optional: it leaves the run. */
                        run_len = MIN(run_len, atom);
                        if (run_len > best_len) {
                                memcpy(best, run, run_len);
                                best_len = run_len;
                        }
                        run_len = 0;
                        if (c == '{') {
                                const char *e = memchr(p + i, '}', n - i);

                                i = e ? (size_t) (e - p) + 1 : n;
                        } else
                                i++;
                        /* Lazy and possessive forms. */
                        if (i < n && (p[i] == '?' || p[i] == '+'))
                                i++;
                        continue;
                }
                if (c == '+') {
                        /* The atom stays required once, but what follows is not adjacent. */
                        if (run_len > best_len) {
                                memcpy(best, run, run_len);
                                best_len = run_len;
                        }
                        run_len = 0;
                        i++;
                        if (i < n && (p[i] == '?' || p[i] == '+'))
                                i++;
                        continue;
                }

                if (c == '\\' && i + 1 < n && !is_ascii_alnum(p[i + 1]) &&
                    (unsigned char) p[i + 1] < 0x80 && p[i + 1] != ' ') {
                        atom = run_len;
                        run[run_len++] = p[i + 1];
                        i += 2;
                        continue;
                }
                if (!is_meta(c)) {
                        size_t k = utf8_valid_seq_len((const unsigned char *) p + i, n - i);

                        if (k == 0)
                                k = 1;
                        atom = run_len;
                        memcpy(run + run_len, p + i, k);
                        run_len += k;
                        i += k;
                        continue;
                }

                /* Anything else ends the run. */
                if (run_len > best_len) {
                        memcpy(best, run, run_len);
                        best_len = run_len;
                }
                run_len = 0;
                atom = 0;
                if (c == '\\') {
                        /* An escape like \w, \p{..}, \x{..}, \k<..>, \g'..', \cX. */
                        i += 2;
                        if (i - 1 < n && (p[i - 1] == 'c' || p[i - 1] == 'p' || p[i - 1] == 'P') &&
                            i < n && p[i] != '{')
                                i++;
                        if (i < n && (p[i] == '{' || p[i] == '<' || p[i] == '\'')) {
                                char close = p[i] == '{' ? '}' : p[i] == '<' ? '>' : '\'';
                                const char *e = memchr(p + i + 1, close, n - i - 1);

                                i = e ? (size_t) (e - p) + 1 : n;
                        }
                } else if (c == '[')
                        i = skip_class(p, n, i);
                else if (c == '(') {
                        /* Skip the whole group (its contents may be alternatives). */
                        int depth = 0;

                        for (; i < n; i++) {
                                if (p[i] == '\\')
                                        i++;
                                else if (p[i] == '[')
                                        i = skip_class(p, n, i) - 1;
                                else if (p[i] == '(')
                                        depth++;
                                else if (p[i] == ')' && --depth == 0) {
                                        i++;
                                        break;
                                }
                        }
                } else
                        i++;
        }
        if (run_len > best_len) {
                memcpy(best, run, run_len);
                best_len = run_len;
        }
        /* One common byte would make more work than it saves. */
        if (best_len == 0 || (best_len == 1 && byte_rank[(unsigned char) best[0]] >= 180))
                return 0;
        best[best_len] = '\0';
        *ret = TAKE_PTR(best);
        *ret_len = best_len;
        return 1;
}

/* The caller's message for an invalid pattern: -EINVAL, or -ENOMEM. */
static int invalid(char **ret_msg, const char *msg)
{
        *ret_msg = strdup(msg);
        return *ret_msg ? -EINVAL : -ENOMEM;
}

int search_matcher_init(struct matcher *m, const char *pattern, size_t n, char **ret_msg)
{
        _cleanup_free_ char *lit = NULL;
        pcre2_compile_context *cc = NULL;
        PCRE2_UCHAR emsg[256];
        PCRE2_SIZE eoff = 0;
        uint32_t opts;
        size_t lit_len = 0;
        int r, ecode = 0;

        if (memchr(pattern, '\n', n)) {
                return invalid(ret_msg, "Invalid regex: the literal \"\\n\" is not allowed in a "
                                        "regex (search_files matches one line at a time)");
        }
        if (n > PATTERN_MAX) {
                return invalid(ret_msg, "Invalid regex: the pattern is longer than 65536 bytes");
        }
        r = pattern_literal(pattern, n, &lit, &lit_len);
        if (r < 0)
                return r;
        if (r > 0) {
                m->literal = true;
                lit_set(&m->lit, TAKE_PTR(lit), lit_len);
                return 0;
        }

        opts = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_MULTILINE | PCRE2_NEVER_BACKSLASH_C;
        if (needs_ucp(pattern, n))
                opts |= PCRE2_UCP;
        cc = pcre2_compile_context_create(NULL);
        if (!cc)
                return -ENOMEM;
        (void) pcre2_set_newline(cc, PCRE2_NEWLINE_LF);
        m->code = pcre2_compile((PCRE2_SPTR) pattern, n, opts, &ecode, &eoff, cc);
        pcre2_compile_context_free(cc);
        if (!m->code) {
                _cleanup_free_ char *msg = NULL, *shown = NULL;
                size_t sl = MIN(n, (size_t) 200);

                if (ecode == PCRE2_ERROR_NOMEMORY)
                        return -ENOMEM;
                if (pcre2_get_error_message(ecode, emsg, sizeof(emsg)) < 0)
                        (void) snprintf((char *) emsg, sizeof(emsg), "error %d", ecode);
                shown = strndup(pattern, sl);
                if (!shown)
                        return -ENOMEM;
                if (asprintf(&msg, "Invalid regex at offset %zu: %s (pattern: %s%s)", (size_t) eoff,
                             (const char *) emsg, shown, sl < n ? "..." : "") < 0) {
                        msg = NULL;
                        return -ENOMEM;
                }
                *ret_msg = TAKE_PTR(msg);
                return -EINVAL;
        }
        /* Without JIT the interpreter runs, under the same limits. */
        (void) pcre2_jit_compile(m->code, PCRE2_JIT_COMPLETE);
        r = required_literal(pattern, n, &lit, &lit_len);
        if (r < 0)
                return r;
        if (r > 0) {
                m->prefilter = true;
                lit_set(&m->req, TAKE_PTR(lit), lit_len);
        }
        return 0;
}

/* Start of the line holding @p, not before @from (a line start). */
static size_t line_start(const char *buf, size_t from, size_t p)
{
        const char *q = p > from ? memrchr(buf + from, '\n', p - from) : NULL;

        return q ? (size_t) (q - buf) + 1 : from;
}

size_t search_line_end(const char *buf, size_t end, size_t p)
{
        const char *q = p < end ? memchr(buf + p, '\n', end - p) : NULL;

        return q ? (size_t) (q - buf) : end;
}

static const char *literal_find(const struct lit *m, const char *p, const char *end)
{
        const size_t nl = m->n, ra = m->rare_at;
        const char rare = m->s[ra];

        if ((size_t) (end - p) < nl)
                return NULL;
        if (nl == 1)
                return memchr(p, rare, (size_t) (end - p));
        for (const char *q = p + ra; q < end - (nl - 1 - ra);) {
                const char *c = memchr(q, rare, (size_t) (end - (nl - 1 - ra) - q));

                if (!c)
                        return NULL;
                if (memcmp(c - ra, m->s, nl) == 0)
                        return c - ra;
                q = c + 1;
        }
        return NULL;
}

static bool is_limit_error(int rc)
{
        return rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
               rc == PCRE2_ERROR_HEAPLIMIT || rc == PCRE2_ERROR_JIT_STACKLIMIT;
}

/*
 * The first line at or after @from (a line start) in buf[0..end) that matches. Returns 1 and
 * the line as [*ret_ls, *ret_le) (without its '\n'), 0 when there is none, -ELOOP when the
 * regex hit its match limit.
 */
int search_find_line(struct scan_thread *t, const char *buf, size_t end, size_t from,
                     size_t *ret_ls, size_t *ret_le)
{
        const struct matcher *m = &t->s->m;

        if (m->literal) {
                const char *p;

                if (m->lit.n == 0) {
                        *ret_ls = from;
                        *ret_le = search_line_end(buf, end, from);
                        return 1;
                }
                p = literal_find(&m->lit, buf + from, buf + end);
                if (!p)
                        return 0;
                *ret_ls = line_start(buf, from, (size_t) (p - buf));
                *ret_le = search_line_end(buf, end, (size_t) (p - buf));
                return 1;
        }

        while (m->prefilter && from < end) {
                /* Only lines holding the required literal can match: run the regex on those. */
                const char *p = literal_find(&m->req, buf + from, buf + end);
                size_t ls, le;
                int rc;

                if (!p)
                        return 0;
                if (search_should_stop(t))
                        return -ECANCELED;
                ls = line_start(buf, from, (size_t) (p - buf));
                le = search_line_end(buf, end, (size_t) (p - buf));
                rc = pcre2_match(m->code, (PCRE2_SPTR) buf + ls, le - ls, 0, 0, t->md, t->mctx);
                if (rc >= 0) {
                        *ret_ls = ls;
                        *ret_le = le;
                        return 1;
                }
                if (is_limit_error(rc))
                        return -ELOOP;
                if (rc == PCRE2_ERROR_NOMEMORY)
                        return -ENOMEM;
                from = le + 1;
        }
        while (from < end) {
                PCRE2_SIZE *ov;
                size_t s, e, ls, le;
                int rc;

                if (search_should_stop(t))
                        return -ECANCELED;
                rc = pcre2_match(m->code, (PCRE2_SPTR) buf, end, from, 0, t->md, t->mctx);

                if (rc == PCRE2_ERROR_NOMATCH)
                        return 0;
                if (is_limit_error(rc))
                        return -ELOOP;
                if (rc < 0)
                        return rc == PCRE2_ERROR_NOMEMORY ? -ENOMEM : 0;
                ov = pcre2_get_ovector_pointer(t->md);
                s = ov[0];
                e = ov[1];
                /* An empty match after the last newline is not on any line. */
                if (s >= end && buf[end - 1] == '\n')
                        return 0;
                ls = line_start(buf, from, MIN(s, end));
                le = search_line_end(buf, end, MIN(s, end));
                if (e <= le) {
                        *ret_ls = ls;
                        *ret_le = le;
                        return 1;
                }
                /* The match runs into the next line: does this line match on its own? */
                rc = pcre2_match(m->code, (PCRE2_SPTR) buf + ls, le - ls, 0, 0, t->md, t->mctx);
                if (rc >= 0 || rc == PCRE2_ERROR_NOMATCH) {
                        if (rc >= 0) {
                                *ret_ls = ls;
                                *ret_le = le;
                                return 1;
                        }
                } else if (is_limit_error(rc))
                        return -ELOOP;
                from = le + 1;
        }
        return 0;
}
