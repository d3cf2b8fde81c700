/* SPDX-License-Identifier: MIT */
/*
 * search_files (docs/seed.md 2.3, docs/contracts.md 9.5): content search and file
 * search, in-process. The seed piped `rg` into `head`; we walk and search ourselves with the
 * same default rules (search-walk.c, search-ignore.c) and fix what the pipeline got wrong:
 *
 *   - total_count is the true total, whatever limit and offset say;
 *   - results come in a fixed order: content results by path (byte order) then line number,
 *     file results newest-modified first (ties by path);
 *   - the truncation hint is a "_hint" member of the JSON, not text after it (#81610);
 *   - an invalid regex is an error naming the offset, not zero matches.
 *
 * Result shapes (the seed's keys; the list is present even when empty):
 *   content:    {"total_count": entries, "matches": [{"path", "line", "content"}, ...]}
 *               With context > 0 the context lines are entries too, in the same shape and
 *               order (overlapping ranges merged, each line once), and count in total_count,
 *               so pages never split or repeat a line.
 *   files_only: {"total_count": files, "files": [path, ...]}
 *   count:      {"total_count": matching lines, "counts": {path: lines, ...}} (a page of files)
 *   files:      {"total_count": files, "files": [path, ...]} (target="files")
 * plus "truncated": true and "_hint" when more results follow the page. Errors are
 * {"total_count": 0, "error": "..."}. "content" is at most 500 characters, redacted.
 * Binary files (a NUL byte anywhere; rg -l/-n only look before the first reported match, rg -c
 * agrees with us) give no results; target="files" lists them.
 *
 * Memory stays bounded whatever the tree: pass 1 keeps only the first offset+limit files in
 * result order (a bounded max-heap) and exact totals, never the matches themselves. Pass 2
 * searches again the few files that hold the requested page and takes its entries from them.
 * Files are read with read() into one reusable buffer per thread, in chunks that end on a line
 * boundary (the unfinished line is carried over), so a file of any size takes the same memory.
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

#include "core/tools/tool.h"

#define PCRE2_CODE_UNIT_WIDTH 8

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pcre2.h>

#include "basic/buf.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "basic/utf8.h"
#include "core/output/redact.h"
#include "core/tools/file-safety.h"
#include "core/tools/search-ignore.h"
#include "core/tools/search-walk.h"

#define DEFAULT_LIMIT 50
/*
 * offset + limit at most: pass 1 keeps that many file records (path and count). Deeper pages
 * are refused with a message; a narrower pattern, path or file_glob gets there instead.
 */
#define SEARCH_WINDOW_MAX 100000
/* Context lines before and after a match at most. */
#define SEARCH_CONTEXT_MAX 100
/* Characters of a result line (the seed's content[:500]). */
#define LINE_CHARS_MAX 500
/* Bytes of a line looked at for its result text (more than 4 * LINE_CHARS_MAX). */
#define LINE_KEEP_BYTES 4096
/* First read buffer of a thread; files are searched in chunks of this size. */
#define SCAN_BUF_INIT (256u * 1024)
/* The buffer grows for long lines up to this; a longer line is searched in pieces. */
#define SCAN_BUF_MAX (8u * 1024 * 1024)
/* Longest pattern compiled (bytes). */
#define PATTERN_MAX (64u * 1024)
/* PCRE2 work per match attempt: a pattern needing more is "too expensive". */
#define MATCH_LIMIT 5000000
#define DEPTH_LIMIT 100000
#define HEAP_LIMIT_KIB (64u * 1024)
#define JIT_STACK_MAX (1024u * 1024)
/* Look at the clock and the cancel fd once per this many regex calls or chunks. */
#define CHECK_EVERY 256
/* Similar paths of the not-found message: the first entries of the parent, as `ls | head`. */
#define SIMILAR_LIST_MAX 20
#define SIMILAR_RESULT_MAX 5
#define SIMILAR_SCAN_MAX 100000

#define TRUNCATED_HINT_FMT                                                                       \
        "Results truncated. Use offset=%" PRIu64 " to see more, or narrow with a more specific " \
        "pattern or file_glob."

enum mode {
        MODE_CONTENT,
        MODE_FILES_ONLY,
        MODE_COUNT,
        MODE_FILES, /* target="files" */
};

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

struct lit {
        char *s;
        size_t n;
        size_t rare_at; /* index of its rarest byte */
};

struct matcher {
        bool literal; /* the pattern is the literal @lit */
        struct lit lit;
        pcre2_code *code;
        bool prefilter; /* a line matching @code must contain the literal @req */
        struct lit req;
};

/* One file of the result, as pass 1 keeps it. */
struct rec {
        char *rel; /* path below the root ("" when the root is the file) */
        uint64_t count;
        int64_t mtime_sec;
        long mtime_nsec;
};

struct search {
        const struct tool_ctx *ctx;
        enum mode mode;
        struct matcher m;
        unsigned context;
        size_t window; /* offset + limit */

        pthread_mutex_t lock; /* guards everything below */
        struct rec *heap;     /* max-heap by result order: the worst kept record on top */
        size_t n_heap, heap_alloc;
        uint64_t total;       /* entries (content), lines (count), files (the others) */
        uint64_t total_files; /* files with a result */
        char *limit_path;     /* first file where the regex hit the match limit */
};

struct scan_thread {
        struct search *s;
        unsigned calls; /* for should_stop() */
        char *buf;
        size_t cap;
        pcre2_match_data *md;
        pcre2_match_context *mctx;
        pcre2_jit_stack *jstack;
};

/* --- arguments --- */

/* {"total_count": 0, "error": msg}, the seed's SearchResult error shape. */
static int error_result(json_t **ret, const char *msg)
{
        json_auto_t *o = json_object();

        if (!o || tool_json_set(o, "total_count", json_integer(0)) < 0 ||
            tool_json_set(o, "error", tool_json_str(msg)) < 0)
                return -ENOMEM;
        *ret = json_incref(o);
        return 0;
}

_printf_(2, 3) static int arg_error(json_t **ret, const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL;
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (k < 0) {
                msg = NULL;
                return -ENOMEM;
        }
        return error_result(ret, msg);
}

static int get_int(json_t *args, const char *key, int64_t def, int64_t *v, json_t **ret)
{
        json_t *j = json_object_get(args, key);

        if (json_is_boolean(j)) {
                *v = json_is_true(j) ? 1 : 0;
                return 1;
        }
        if (tool_arg_int(args, key, def, v, NULL) >= 0)
                return 1;
        return arg_error(ret, "search_files: '%s' must be an integer, got %s.", key,
                         tool_json_type_name(j));
}

static int get_string(json_t *args, const char *key, const char **v, json_t **ret)
{
        if (tool_arg_string(args, key, v, NULL) >= 0)
                return 1;
        return arg_error(ret, "search_files: '%s' must be a string, got %s.", key,
                         tool_json_type_name(json_object_get(args, key)));
}

/* --- matching --- */

static bool interrupted(const struct tool_ctx *ctx)
{
        if (ctx->deadline != USEC_INFINITY && now_usec() >= ctx->deadline)
                return true;
        if (ctx->cancel_fd >= 0) {
                struct pollfd p = {.fd = ctx->cancel_fd, .events = POLLIN};

                if (poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP)))
                        return true;
        }
        return false;
}

/*
 * Called before each regex call and each chunk read: a long search of one file (a huge file,
 * a slow regex on many lines) still notices the deadline and the cancel fd.
 */
static bool should_stop(struct scan_thread *t)
{
        return ++t->calls % CHECK_EVERY == 0 && interrupted(t->s->ctx);
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

static void matcher_release(struct matcher *m)
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

/* Compile @pattern. Returns 0, -ENOMEM, or -EINVAL with the message for the caller in *ret. */
static int matcher_init(struct matcher *m, const char *pattern, size_t n, json_t **ret)
{
        _cleanup_free_ char *lit = NULL;
        pcre2_compile_context *cc = NULL;
        PCRE2_UCHAR emsg[256];
        PCRE2_SIZE eoff = 0;
        uint32_t opts;
        size_t lit_len = 0;
        int r, ecode = 0;

        if (memchr(pattern, '\n', n)) {
                r = error_result(ret, "Invalid regex: the literal \"\\n\" is not allowed in a "
                                      "regex (search_files matches one line at a time)");
                return r < 0 ? r : -EINVAL;
        }
        if (n > PATTERN_MAX) {
                r = error_result(ret, "Invalid regex: the pattern is longer than 65536 bytes");
                return r < 0 ? r : -EINVAL;
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
                r = error_result(ret, msg);
                return r < 0 ? r : -EINVAL;
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

static size_t line_end(const char *buf, size_t end, size_t p)
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
static int find_line(struct scan_thread *t, const char *buf, size_t end, size_t from,
                     size_t *ret_ls, size_t *ret_le)
{
        const struct matcher *m = &t->s->m;

        if (m->literal) {
                const char *p;

                if (m->lit.n == 0) {
                        *ret_ls = from;
                        *ret_le = line_end(buf, end, from);
                        return 1;
                }
                p = literal_find(&m->lit, buf + from, buf + end);
                if (!p)
                        return 0;
                *ret_ls = line_start(buf, from, (size_t) (p - buf));
                *ret_le = line_end(buf, end, (size_t) (p - buf));
                return 1;
        }

        while (m->prefilter && from < end) {
                /* Only lines holding the required literal can match: run the regex on those. */
                const char *p = literal_find(&m->req, buf + from, buf + end);
                size_t ls, le;
                int rc;

                if (!p)
                        return 0;
                if (should_stop(t))
                        return -ECANCELED;
                ls = line_start(buf, from, (size_t) (p - buf));
                le = line_end(buf, end, (size_t) (p - buf));
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

                if (should_stop(t))
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
                le = line_end(buf, end, MIN(s, end));
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

/* --- result lines --- */

/* A line's result text: at most LINE_CHARS_MAX characters, invalid UTF-8 replaced, redacted. */
static json_t *line_text(const struct tool_ctx *ctx, const char *p, size_t n)
{
        _cleanup_free_ char *clean = NULL, *red = NULL;
        const char *text;
        size_t len, chars, cut = 0, c = 0;
        int r;

        clean = utf8_sanitize(p, MIN(n, (size_t) LINE_KEEP_BYTES), &len, &chars);
        if (!clean)
                return NULL;
        text = clean;
        if (len > 0) {
                size_t rlen;

                /* Redact before cutting, so a secret at the cut cannot leave a prefix behind. */
                r = redact_text(ctx->redactor, REDACT_CODE, clean, len, &red, &rlen);
                if (r < 0)
                        return NULL;
                if (r > 0) {
                        text = red;
                        len = rlen;
                }
        }
        while (cut < len && c < LINE_CHARS_MAX) {
                cut++;
                while (cut < len && ((unsigned char) text[cut] & 0xC0) == 0x80)
                        cut++;
                c++;
        }
        return tool_json_string(text, cut);
}

/* --- scanning one file --- */

struct scan {
        struct scan_thread *t;
        unsigned context;
        bool need_lines; /* line numbers: extraction or context */
        bool first_only; /* files_only: one match decides */
        /* extraction (pass 2) */
        bool extract;
        uint64_t from, to; /* entries with these indices go to out */
        json_t *out;
        const char *display;
        /* results */
        uint64_t entries; /* matching lines plus context lines */
        uint64_t lines;   /* matching lines */
        bool binary;
        int err;
        /* state */
        bool search_done, read_done;
        uint64_t last_emitted; /* line number of the last entry, 0 = none */
        unsigned pending_after;
        size_t ac_pos;      /* start of the line after the last entry while pending_after > 0 */
        size_t cur_pos;     /* a position whose line number is known ... */
        uint64_t cur_line;  /* ... this one */
        bool mid;           /* buf[base] continues a line split at the buffer cap */
        bool split_matched; /* that line has matched already */
        bool buf0_mid;      /* buf[0] is not a line start */
};

static uint64_t count_nl(const char *p, size_t n)
{
        uint64_t k = 0;

        for (size_t i = 0; i < n; i++)
                k += p[i] == '\n';
        return k;
}

/* Line number of the line holding @pos; moves the known point there. */
static uint64_t line_at(struct scan *sc, const char *buf, size_t pos)
{
        if (pos >= sc->cur_pos)
                sc->cur_line += count_nl(buf + sc->cur_pos, pos - sc->cur_pos);
        else
                sc->cur_line -= count_nl(buf + pos, sc->cur_pos - pos);
        sc->cur_pos = pos;
        return sc->cur_line;
}

static int emit(struct scan *sc, uint64_t line, const char *p, size_t n)
{
        uint64_t idx = sc->entries++;

        sc->last_emitted = line;
        if (!sc->extract)
                return 0;
        if (idx >= sc->from && idx < sc->to) {
                json_auto_t *o = json_object();

                if (!o || tool_json_set(o, "path", tool_json_str(sc->display)) < 0 ||
                    tool_json_set(o, "line", json_integer((json_int_t) line)) < 0 ||
                    tool_json_set(o, "content", line_text(sc->t->s->ctx, p, n)) < 0 ||
                    json_array_append(sc->out, o) < 0)
                        return -ENOMEM;
        }
        if (sc->entries >= sc->to)
                sc->search_done = sc->read_done = true;
        return 0;
}

/* After-context lines from ac_pos up to @limit (a line start, or the region end). */
static int after_context(struct scan *sc, const char *buf, size_t limit, size_t end)
{
        while (sc->pending_after > 0 && sc->ac_pos < limit && !sc->search_done) {
                size_t le = line_end(buf, end, sc->ac_pos);
                uint64_t line = line_at(sc, buf, sc->ac_pos);
                int r = emit(sc, line, buf + sc->ac_pos, le - sc->ac_pos);

                if (r < 0)
                        return r;
                sc->pending_after--;
                sc->ac_pos = le + 1;
        }
        return 0;
}

static int before_context(struct scan *sc, const char *buf, size_t ls, uint64_t line)
{
        size_t starts[SEARCH_CONTEXT_MAX];
        uint64_t first = line > sc->context ? line - sc->context : 1;
        size_t want, have = 0, p = ls;

        if (first <= sc->last_emitted)
                first = sc->last_emitted + 1;
        want = first < line ? (size_t) (line - first) : 0;
        /* Only lines still in the buffer; both passes keep the same ones. */
        while (have < want && p > 0) {
                const char *q = p >= 2 ? memrchr(buf, '\n', p - 1) : NULL;

                if (!q && sc->buf0_mid)
                        break;
                starts[have++] = q ? (size_t) (q - buf) + 1 : 0;
                p = starts[have - 1];
        }
        for (size_t i = have; i > 0; i--) {
                size_t s = starts[i - 1];
                int r = emit(sc, line - i, buf + s, line_end(buf, ls, s) - s);

                if (r < 0)
                        return r;
        }
        return 0;
}

/* Search the complete lines buf[base..end). Returns 0 or -errno (-ELOOP: match limit). */
static int scan_region(struct scan *sc, const char *buf, size_t base, size_t end, bool split)
{
        size_t pos = base, last_le = SIZE_MAX;
        int r;

        while (pos < end && !sc->search_done) {
                size_t ls, le;
                uint64_t line = 0;

                int found = find_line(sc->t, buf, end, pos, &ls, &le);

                if (found < 0)
                        return found;
                if (sc->need_lines) {
                        r = after_context(sc, buf, found > 0 ? ls : end, end);
                        if (r < 0)
                                return r;
                }
                if (found == 0 || sc->search_done)
                        break;
                if (sc->mid && ls == base && sc->split_matched) {
                        /* The rest of a split line that already matched. */
                        pos = le + 1;
                        continue;
                }
                last_le = le;
                sc->lines++;
                if (sc->need_lines) {
                        line = line_at(sc, buf, ls);
                        if (sc->context > 0) {
                                r = before_context(sc, buf, ls, line);
                                if (r < 0)
                                        return r;
                        }
                        r = emit(sc, line, buf + ls, le - ls);
                        if (r < 0)
                                return r;
                        sc->pending_after = sc->context;
                        sc->ac_pos = le + 1;
                } else
                        sc->entries++;
                if (sc->first_only)
                        sc->search_done = true;
                pos = le + 1;
        }
        if (split) {
                bool no_nl = !memchr(buf + base, '\n', end - base);

                sc->split_matched = last_le == end || (sc->mid && sc->split_matched && no_nl);
                sc->mid = true;
        } else {
                sc->mid = false;
                sc->split_matched = false;
        }
        return 0;
}

/* Where the carried-over part starts: @context whole lines before @end, within half the buffer. */
static size_t carry_from(struct scan *sc, const char *buf, size_t end, size_t cap)
{
        size_t p = end;

        for (unsigned i = 0; i < sc->context && p > 0; i++) {
                const char *q = p >= 2 ? memrchr(buf, '\n', p - 1) : NULL;

                if (!q && sc->buf0_mid)
                        break;
                p = q ? (size_t) (q - buf) + 1 : 0;
        }
        return end - p > cap / 2 ? end : p;
}

static int grow(struct scan_thread *t)
{
        size_t na = MIN(t->cap * 2, (size_t) SCAN_BUF_MAX);
        char *nb;

        if (na <= t->cap)
                return -E2BIG;
        nb = realloc(t->buf, na);
        if (!nb)
                return -ENOMEM;
        t->buf = nb;
        t->cap = na;
        return 0;
}

/* Scan the open file @fd with @sc set up. Returns 0 (results in @sc) or -errno. */
static int scan_fd(struct scan *sc, int fd)
{
        struct scan_thread *t = sc->t;
        size_t len = 0, base = 0;
        int r;

        sc->cur_pos = 0;
        sc->cur_line = 1;
        for (;;) {
                size_t end;
                ssize_t n;
                bool eof, split = false;

                if (should_stop(t))
                        return -ECANCELED;
                if (len == t->cap) {
                        r = grow(t);
                        if (r == -ENOMEM)
                                return r;
                }
                n = len < t->cap ? read(fd, t->buf + len, t->cap - len) : 0;
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n > 0 && memchr(t->buf + len, '\0', (size_t) n)) {
                        /* Binary, as ripgrep: such a file gives no results at all. */
                        sc->binary = true;
                        return 0;
                }
                len += (size_t) n;
                eof = n == 0 && len < t->cap;
                if (n > 0 && len < t->cap)
                        continue;
                if (sc->search_done && !eof) {
                        /* Only reading on for the binary check. */
                        len = base = 0;
                        sc->cur_pos = 0;
                        continue;
                }
                if (eof)
                        end = len;
                else {
                        const char *nl =
                                len > base ? memrchr(t->buf + base, '\n', len - base) : NULL;

                        if (nl)
                                end = (size_t) (nl - t->buf) + 1;
                        else if (t->cap < SCAN_BUF_MAX) {
                                /* One unfinished line fills the buffer: make room for it. */
                                r = grow(t);
                                if (r == -ENOMEM)
                                        return r;
                                continue;
                        } else {
                                end = len;
                                split = true;
                        }
                }
                if (end > base) {
                        r = scan_region(sc, t->buf, base, end, split);
                        if (r < 0)
                                return r;
                }
                if (eof || sc->read_done)
                        return 0;

                {
                        size_t keep = split ? end : carry_from(sc, t->buf, end, t->cap);

                        if (sc->need_lines) {
                                (void) line_at(sc, t->buf, keep);
                                sc->cur_pos -= keep;
                        }
                        memmove(t->buf, t->buf + keep, len - keep);
                        len -= keep;
                        base = end - keep;
                        if (sc->pending_after > 0)
                                sc->ac_pos -= keep;
                        sc->buf0_mid = split ? true : keep == 0 ? sc->buf0_mid : false;
                }
        }
}

/* --- pass 1: records --- */

static int rec_cmp(const struct search *s, const struct rec *a, const struct rec *b)
{
        if (s->mode == MODE_FILES) {
                if (a->mtime_sec != b->mtime_sec)
                        return a->mtime_sec > b->mtime_sec ? -1 : 1;
                if (a->mtime_nsec != b->mtime_nsec)
                        return a->mtime_nsec > b->mtime_nsec ? -1 : 1;
        }
        return strcmp(a->rel, b->rel);
}

static void heap_sift_down(struct search *s, size_t i)
{
        for (;;) {
                size_t l = 2 * i + 1, r = l + 1, m = i;
                struct rec tmp;

                if (l < s->n_heap && rec_cmp(s, &s->heap[l], &s->heap[m]) > 0)
                        m = l;
                if (r < s->n_heap && rec_cmp(s, &s->heap[r], &s->heap[m]) > 0)
                        m = r;
                if (m == i)
                        return;
                tmp = s->heap[i];
                s->heap[i] = s->heap[m];
                s->heap[m] = tmp;
                i = m;
        }
}

static void heap_sift_up(struct search *s, size_t i)
{
        while (i > 0) {
                size_t p = (i - 1) / 2;
                struct rec tmp;

                if (rec_cmp(s, &s->heap[i], &s->heap[p]) <= 0)
                        return;
                tmp = s->heap[i];
                s->heap[i] = s->heap[p];
                s->heap[p] = tmp;
                i = p;
        }
}

/* Count a file with results and keep it when it is among the first `window` in order. */
static int commit(struct search *s, const struct rec *key, uint64_t total_add)
{
        int r = 0;

        pthread_mutex_lock(&s->lock);
        s->total += total_add;
        s->total_files++;
        if (s->n_heap < s->window || rec_cmp(s, key, &s->heap[0]) < 0) {
                char *rel = strdup(key->rel);

                if (!rel)
                        r = -ENOMEM;
                else if (s->n_heap < s->window) {
                        if (s->n_heap == s->heap_alloc) {
                                size_t na = MIN(MAX(s->heap_alloc * 2, (size_t) 64), s->window);
                                struct rec *nh = realloc(s->heap, na * sizeof(*nh));

                                if (!nh) {
                                        free(rel);
                                        r = -ENOMEM;
                                        goto out;
                                }
                                s->heap = nh;
                                s->heap_alloc = na;
                        }
                        s->heap[s->n_heap] = *key;
                        s->heap[s->n_heap].rel = rel;
                        heap_sift_up(s, s->n_heap++);
                } else {
                        free(s->heap[0].rel);
                        s->heap[0] = *key;
                        s->heap[0].rel = rel;
                        heap_sift_down(s, 0);
                }
        }
out:
        pthread_mutex_unlock(&s->lock);
        return r;
}

static void note_limit(struct search *s, const char *rel)
{
        pthread_mutex_lock(&s->lock);
        if (!s->limit_path)
                s->limit_path = strdup(rel);
        pthread_mutex_unlock(&s->lock);
}

static void scan_thread_free(struct scan_thread *t)
{
        if (!t)
                return;
        free(t->buf);
        pcre2_match_data_free(t->md);
        pcre2_match_context_free(t->mctx);
        pcre2_jit_stack_free(t->jstack);
        free(t);
}

static int scan_thread_new(void *userdata, void **ret)
{
        struct search *s = userdata;
        struct scan_thread *t = calloc(1, sizeof(*t));

        if (!t)
                return -ENOMEM;
        t->s = s;
        if (s->mode != MODE_FILES) {
                t->buf = malloc(SCAN_BUF_INIT);
                t->cap = SCAN_BUF_INIT;
                if (!t->buf) {
                        scan_thread_free(t);
                        return -ENOMEM;
                }
        }
        if (s->m.code) {
                t->md = pcre2_match_data_create(1, NULL);
                t->mctx = pcre2_match_context_create(NULL);
                t->jstack = pcre2_jit_stack_create(32 * 1024, JIT_STACK_MAX, NULL);
                if (!t->md || !t->mctx) {
                        scan_thread_free(t);
                        return -ENOMEM;
                }
                (void) pcre2_set_match_limit(t->mctx, MATCH_LIMIT);
                (void) pcre2_set_depth_limit(t->mctx, DEPTH_LIMIT);
                (void) pcre2_set_heap_limit(t->mctx, HEAP_LIMIT_KIB);
                /* Without a JIT stack of its own the JIT uses 32 KiB of the machine stack. */
                if (t->jstack)
                        pcre2_jit_stack_assign(t->mctx, NULL, t->jstack);
        }
        *ret = t;
        return 0;
}

static void scan_thread_done(void *state, void *userdata)
{
        scan_thread_free(state);
}

static void scan_setup(struct scan *sc, struct scan_thread *t)
{
        *sc = (struct scan){
                .t = t,
                .context = t->s->context,
                .need_lines = t->s->context > 0,
                .first_only = t->s->mode == MODE_FILES_ONLY,
        };
}

/* Pass 1 for one open file. Returns >= 0, or -errno to stop the search. */
static int search_one(struct scan_thread *t, int fd, const char *rel)
{
        struct search *s = t->s;
        struct scan sc;
        int r;

        scan_setup(&sc, t);
        r = scan_fd(&sc, fd);
        if (r == -ELOOP) {
                note_limit(s, rel);
                return -ELOOP;
        }
        if (r == -ENOMEM || r == -ECANCELED)
                return r;
        /* Unreadable files are skipped, like unreadable directories. */
        if (r < 0 || sc.binary || sc.lines == 0)
                return 0;
        return commit(s, &(struct rec){.rel = (char *) rel, .count = sc.entries},
                      s->mode == MODE_COUNT     ? sc.lines
                      : s->mode == MODE_CONTENT ? sc.entries
                                                : 1);
}

static int on_file(void *state, int dirfd, const char *name, const char *rel, size_t rel_len,
                   void *userdata)
{
        struct scan_thread *t = state;
        struct search *s = t->s;
        _cleanup_close_ int fd = -EBADF;

        if (s->mode == MODE_FILES) {
                struct stat st;

                if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                        return 0;
                return commit(s,
                              &(struct rec){.rel = (char *) rel,
                                            .mtime_sec = st.st_mtim.tv_sec,
                                            .mtime_nsec = st.st_mtim.tv_nsec},
                              1);
        }
        fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
        if (fd < 0)
                return 0;
        return search_one(t, fd, rel);
}

static int check(void *userdata)
{
        struct search *s = userdata;

        return interrupted(s->ctx) ? -ECANCELED : 0;
}

/* --- paths --- */

/* rg prints the root as given, joined with the path below it. */
static char *display_path(const char *root_shown, bool root_is_file, const char *rel)
{
        size_t n = strlen(root_shown);
        char *p;

        if (root_is_file)
                return strdup(root_shown);
        if (asprintf(&p, "%s%s%s", root_shown, n > 0 && root_shown[n - 1] == '/' ? "" : "/", rel) <
            0)
                return NULL;
        return p;
}

/*
 * What ripgrep matches --glob rules against for files below @shown: the printed path without
 * a leading "./" and without the cwd's bytes (then a leading '/'), as its ignore crate does.
 */
static char *override_prefix(const char *cwd, const char *shown)
{
        _cleanup_free_ char *p = display_path(shown, false, "");
        const char *q;
        size_t cl = strlen(cwd);

        if (!p)
                return NULL;
        q = p;
        if (strncmp(q, "./", 2) == 0)
                q += 2;
        if (cl > 1 && strncmp(q, cwd, cl) == 0) {
                q += cl;
                if (*q == '/')
                        q++;
        }
        return strdup(q);
}

static void ascii_lower(char *s)
{
        for (; *s; s++)
                if (*s >= 'A' && *s <= 'Z')
                        *s = (char) (*s - 'A' + 'a');
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/*
 * The seed's missing-path result: "Path not found: P[. Similar paths: a, b]", the candidates
 * taken from the first SIMILAR_LIST_MAX names of the parent in `ls -1` order whose lower-cased
 * name contains the query, is contained in it or starts with its first three characters.
 */
static int not_found(const struct tool_ctx *ctx, const char *shown, json_t **ret)
{
        _cleanup_free_ char *parent = NULL, *parent_abs = NULL, *query = NULL, *msg = NULL;
        _cleanup_free_ char **names = NULL;
        _cleanup_buf_ struct buf b = BUF_INIT(16 * 1024);
        const char *slash = strrchr(shown, '/');
        size_t n_names = 0, taken = 0;
        struct stat st;
        int r;

        if (slash) {
                size_t l = (size_t) (slash - shown);

                /* os.path.dirname keeps a lone root slash. */
                while (l > 0 && shown[l - 1] == '/')
                        l--;
                parent = l > 0 ? strndup(shown, l) : strndup(shown, (size_t) (slash - shown) + 1);
                query = strdup(slash + 1);
        } else {
                parent = strdup(".");
                query = strdup(shown);
        }
        if (!parent || !query)
                return -ENOMEM;
        ascii_lower(query);

        r = buf_printf(&b, "Path not found: %s", shown);
        if (r == -ENOMEM)
                return r;
        parent_abs = tool_resolve_path(ctx, parent);
        if (!parent_abs)
                return -ENOMEM;
        if (query[0] && stat(parent_abs, &st) >= 0 && S_ISDIR(st.st_mode)) {
                DIR *d = opendir(parent_abs);
                struct dirent *de;
                size_t scanned = 0;

                names = calloc(SIMILAR_SCAN_MAX + 1, sizeof(*names));
                if (!names) {
                        if (d)
                                closedir(d);
                        return -ENOMEM;
                }
                while (d && (de = readdir(d)) && scanned++ < SIMILAR_SCAN_MAX) {
                        if (de->d_name[0] == '.')
                                continue;
                        names[n_names] = strdup(de->d_name);
                        if (!names[n_names])
                                break;
                        n_names++;
                }
                if (d)
                        closedir(d);
                qsort(names, n_names, sizeof(*names), cmp_str);
                for (size_t i = 0; i < n_names && i < SIMILAR_LIST_MAX; i++) {
                        _cleanup_free_ char *le = strdup(names[i]);
                        size_t ql = strlen(query), pl = strlen(parent);

                        if (!le)
                                break;
                        ascii_lower(le);
                        if (!(strstr(le, query) || strstr(query, le) ||
                              strncmp(le, query, MIN(ql, (size_t) 3)) == 0))
                                continue;
                        if (taken >= SIMILAR_RESULT_MAX)
                                break;
                        r = buf_printf(&b, "%s%s%s%s", taken ? ", " : ". Similar paths: ", parent,
                                       pl > 0 && parent[pl - 1] == '/' ? "" : "/", names[i]);
                        if (r == -ENOMEM)
                                break;
                        taken++;
                }
                for (size_t i = 0; i < n_names; i++)
                        free(names[i]);
        }
        msg = buf_steal(&b, NULL);
        if (!msg)
                return -ENOMEM;
        return error_result(ret, msg);
}

/* --- pass 2 and the result --- */

static char *path_join_abs(const char *root, const char *rel)
{
        size_t n = strlen(root);
        char *p;

        if (asprintf(&p, "%s%s%s", root, n > 0 && root[n - 1] == '/' ? "" : "/", rel) < 0)
                return NULL;
        return p;
}

static int set_truncation(json_t *o, uint64_t total, uint64_t window)
{
        char hint[256];

        if (total <= window)
                return 0;
        (void) snprintf(hint, sizeof(hint), TRUNCATED_HINT_FMT, window);
        if (tool_json_set(o, "truncated", json_true()) < 0 ||
            tool_json_set(o, "_hint", json_string(hint)) < 0)
                return -ENOMEM;
        return 0;
}

static int cmp_rec_ctx(const void *a, const void *b, void *s)
{
        return rec_cmp(s, a, b);
}

/* Entries [from, to) of one file of the page into @out. */
static int extract(struct search *s, struct scan_thread *t, const char *abs, const char *display,
                   uint64_t from, uint64_t to, json_t *out)
{
        _cleanup_close_ int fd = -EBADF;
        struct scan sc;
        int r;

        fd = open(abs, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return 0; /* gone since pass 1: its entries are missing from the page */
        scan_setup(&sc, t);
        sc.need_lines = true;
        sc.first_only = false;
        sc.extract = true;
        sc.from = from;
        sc.to = to;
        sc.out = out;
        sc.display = display;
        r = scan_fd(&sc, fd);
        return r == -ENOMEM || r == -ECANCELED ? r : 0;
}

static int build_result(struct search *s, struct scan_thread *t, const char *root_abs,
                        const char *shown, bool root_is_file, uint64_t offset, uint64_t limit,
                        json_t **ret)
{
        json_auto_t *o = json_object(), *list = NULL;
        uint64_t cum = 0;
        int r;

        if (!o)
                return -ENOMEM;
        /* qsort_r(NULL, 0, ...) is undefined: an empty page has no array. */
        if (s->n_heap > 1)
                qsort_r(s->heap, s->n_heap, sizeof(*s->heap), cmp_rec_ctx, s);
        if (tool_json_set(o, "total_count", json_integer((json_int_t) s->total)) < 0)
                return -ENOMEM;
        list = s->mode == MODE_COUNT ? json_object() : json_array();
        if (!list)
                return -ENOMEM;

        for (size_t i = 0; i < s->n_heap; i++) {
                _cleanup_free_ char *display = NULL, *abs = NULL;
                const struct rec *rc = &s->heap[i];
                uint64_t n = s->mode == MODE_CONTENT ? rc->count : 1;

                if (cum + n <= offset) {
                        cum += n;
                        continue;
                }
                if (cum >= offset + limit)
                        break;
                display = display_path(shown, root_is_file, rc->rel);
                if (!display)
                        return -ENOMEM;
                if (s->mode == MODE_CONTENT) {
                        uint64_t from = offset > cum ? offset - cum : 0;
                        uint64_t to = MIN(n, offset + limit - cum);

                        abs = root_is_file ? strdup(root_abs) : path_join_abs(root_abs, rc->rel);
                        if (!abs)
                                return -ENOMEM;
                        r = extract(s, t, abs, display, from, to, list);
                        if (r < 0)
                                return r;
                } else if (s->mode == MODE_COUNT) {
                        r = tool_json_set_name(list, display, json_integer((json_int_t) rc->count));
                        if (r < 0)
                                return r;
                } else if (json_array_append_new(list, tool_json_str(display)) < 0)
                        return -ENOMEM;
                cum += n;
        }

        if (tool_json_set(o,
                          s->mode == MODE_CONTENT ? "matches"
                          : s->mode == MODE_COUNT ? "counts"
                                                  : "files",
                          TAKE_PTR(list)) < 0)
                return -ENOMEM;
        r = set_truncation(o, s->mode == MODE_CONTENT ? s->total : s->total_files, offset + limit);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

static void search_release(struct search *s)
{
        for (size_t i = 0; i < s->n_heap; i++)
                free(s->heap[i].rel);
        free(s->heap);
        free(s->limit_path);
        matcher_release(&s->m);
        pthread_mutex_destroy(&s->lock);
}

/* The seed's rule for target="files": a bare name matches names ending in it. */
static char *files_glob(const char *pattern)
{
        char *g;

        if (strchr(pattern, '/') || pattern[0] == '*')
                return strdup(pattern);
        if (asprintf(&g, "*%s", pattern) < 0)
                return NULL;
        return g;
}

static int glob_error(json_t **ret, const char *what, const char *glob, const char *err)
{
        _cleanup_free_ char *msg = NULL;

        if (asprintf(&msg, "Invalid %s '%.200s': %s", what, glob, err) < 0) {
                msg = NULL;
                return -ENOMEM;
        }
        return error_result(ret, msg);
}

static int search_files_run(const struct tool *tool, const struct tool_ctx *ctx, json_t *args,
                            json_t **ret_result)
{
        _cleanup_free_ char *shown = NULL, *abs = NULL, *real = NULL, *prefix = NULL;
        _cleanup_free_ char *glob = NULL, *path_bytes = NULL, *glob_bytes = NULL;
        _cleanup_free_ char *name_pattern = NULL;
        _cleanup_ignore_file_ struct ignore_file *overrides = NULL, *global_excludes = NULL;
        _cleanup_(search_release) struct search s = {
                .ctx = ctx,
                .lock = PTHREAD_MUTEX_INITIALIZER,
        };
        struct scan_thread *t = NULL;
        const char *pattern = NULL, *target = NULL, *path = NULL, *file_glob = NULL;
        const char *output_mode = NULL, *err = NULL;
        int64_t limit, offset, context;
        json_t *pv;
        size_t pattern_len;
        struct stat st;
        bool root_is_file;
        int r;

        if (!json_is_object(args))
                return arg_error(ret_result, "search_files: the arguments must be an object.");
        pv = json_object_get(args, "pattern");
        if (!pv || json_is_null(pv))
                return arg_error(ret_result, "search_files: missing required field 'pattern'.");
        if ((r = get_string(args, "pattern", &pattern, ret_result)) <= 0 ||
            (r = get_string(args, "target", &target, ret_result)) <= 0 ||
            (r = get_string(args, "path", &path, ret_result)) <= 0 ||
            (r = get_string(args, "file_glob", &file_glob, ret_result)) <= 0 ||
            (r = get_string(args, "output_mode", &output_mode, ret_result)) <= 0 ||
            (r = get_int(args, "limit", DEFAULT_LIMIT, &limit, ret_result)) <= 0 ||
            (r = get_int(args, "offset", 0, &offset, ret_result)) <= 0 ||
            (r = get_int(args, "context", 0, &context, ret_result)) <= 0)
                return r;
        pattern_len = json_string_length(pv);

        /* The seed's legacy names for the targets. */
        if (!target || strcmp(target, "content") == 0 || strcmp(target, "grep") == 0)
                s.mode = MODE_CONTENT;
        else if (strcmp(target, "files") == 0 || strcmp(target, "find") == 0)
                s.mode = MODE_FILES;
        else
                return arg_error(ret_result,
                                 "search_files: unknown target '%.100s' (use 'content' or "
                                 "'files').",
                                 target);
        if (s.mode == MODE_CONTENT && output_mode && strcmp(output_mode, "content") != 0) {
                if (strcmp(output_mode, "files_only") == 0)
                        s.mode = MODE_FILES_ONLY;
                else if (strcmp(output_mode, "count") == 0)
                        s.mode = MODE_COUNT;
                else
                        return arg_error(ret_result,
                                         "search_files: unknown output_mode '%.100s' (use "
                                         "'content', 'files_only' or 'count').",
                                         output_mode);
        }

        /*
         * Names are bytes: the path and the name globs take the escape form of bytes that are
         * not UTF-8 (docs/protocol.md). A content regex is matched against text and keeps it.
         */
        if ((path && (r = utf8_unescape_bytes(path, strlen(path), &path_bytes, NULL)) < 0) ||
            (file_glob &&
             (r = utf8_unescape_bytes(file_glob, strlen(file_glob), &glob_bytes, NULL)) < 0) ||
            (s.mode == MODE_FILES &&
             (r = utf8_unescape_bytes(pattern, strlen(pattern), &name_pattern, NULL)) < 0))
                return r;
        if (path)
                path = path_bytes;
        if (file_glob)
                file_glob = glob_bytes;
        if (s.mode == MODE_FILES)
                pattern = name_pattern;

        limit = MAX(limit, (int64_t) 1);
        offset = MAX(offset, (int64_t) 0);
        if (offset >= SEARCH_WINDOW_MAX) {
                char msg[256];

                (void) snprintf(msg, sizeof(msg),
                                "search_files: offset must be below %d; narrow the search with a "
                                "more specific pattern, path or file_glob instead.",
                                SEARCH_WINDOW_MAX);
                return error_result(ret_result, msg);
        }
        limit = MIN(limit, (int64_t) SEARCH_WINDOW_MAX - offset);
        s.window = (size_t) (offset + limit);
        s.context = s.mode == MODE_CONTENT ? (unsigned) MIN(MAX(context, (int64_t) 0),
                                                            (int64_t) SEARCH_CONTEXT_MAX)
                                           : 0;

        if (s.mode == MODE_FILES) {
                glob = files_glob(pattern);
                if (!glob)
                        return -ENOMEM;
                r = ignore_glob_parse(glob, &overrides, &err);
                if (r == -EINVAL)
                        return glob_error(ret_result, "glob pattern", glob, err);
                if (r < 0)
                        return r;
        } else {
                r = matcher_init(&s.m, pattern, pattern_len, ret_result);
                if (r == -EINVAL)
                        return 0;
                if (r < 0)
                        return r;
                if (file_glob && file_glob[0]) {
                        r = ignore_glob_parse(file_glob, &overrides, &err);
                        if (r == -EINVAL)
                                return glob_error(ret_result, "file_glob", file_glob, err);
                        if (r < 0)
                                return r;
                }
        }

        if (!path || !path[0])
                path = ".";
        r = tool_expand_tilde(ctx, path, &shown);
        if (r < 0)
                return r;
        abs = tool_resolve_path(ctx, path);
        if (!abs)
                return -ENOMEM;
        if (stat(abs, &st) < 0)
                return not_found(ctx, shown, ret_result);
        real = realpath(abs, NULL);
        if (!real) {
                if (errno == ENOMEM)
                        return -ENOMEM;
                real = TAKE_PTR(abs);
        }
        root_is_file = !S_ISDIR(st.st_mode);

        r = scan_thread_new(&s, (void **) &t);
        if (r < 0)
                return r;
        if (root_is_file) {
                /* A path given explicitly is searched whatever the ignore rules say, as rg. */
                if (s.mode == MODE_FILES && S_ISREG(st.st_mode))
                        r = commit(&s,
                                   &(struct rec){.rel = (char *) "",
                                                 .mtime_sec = st.st_mtim.tv_sec,
                                                 .mtime_nsec = st.st_mtim.tv_nsec},
                                   1);
                else if (S_ISREG(st.st_mode)) {
                        _cleanup_close_ int fd =
                                open(real, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

                        r = fd >= 0 ? search_one(t, fd, "") : 0;
                }
        } else {
                /* As rg: git's core.excludesFile of the script's user, from its environment. */
                r = ignore_global_excludes_load(tool_env_get(ctx, "HOME"),
                                                tool_env_get(ctx, "XDG_CONFIG_HOME"),
                                                &global_excludes);
                if (r < 0) {
                        scan_thread_free(t);
                        return r;
                }
                struct search_walk_opts o = {
                        .root = real,
                        .overrides = overrides,
                        .global_excludes = global_excludes,
                        .on_file = on_file,
                        .thread_init = scan_thread_new,
                        .thread_done = scan_thread_done,
                        .check = check,
                        .userdata = &s,
                };

                if (ignore_file_has_anchored(overrides)) {
                        prefix = override_prefix(ctx->cwd, shown);
                        if (!prefix) {
                                scan_thread_free(t);
                                return -ENOMEM;
                        }
                        o.override_prefix = prefix;
                }
                r = search_walk_run(&o);
        }

        if (r >= 0 || (r != -ENOMEM && r != -ECANCELED && r != -ELOOP)) {
                /* Other failures (an unreadable root directory) just find nothing, as rg. */
                r = interrupted(ctx)
                            ? -ECANCELED
                            : build_result(&s, t, real, shown, root_is_file, (uint64_t) offset,
                                           (uint64_t) limit, ret_result);
        }
        if (r == -ECANCELED)
                r = error_result(ret_result, "search_files interrupted: the execution was "
                                             "cancelled or ran out of time");
        else if (r == -ELOOP) {
                _cleanup_free_ char *msg = NULL, *where = NULL;

                where = display_path(shown, root_is_file, s.limit_path ? s.limit_path : "");
                if (where && asprintf(&msg,
                                      "Regex too expensive: PCRE2 hit its match limit on a line "
                                      "of %s. Simplify the pattern (nested quantifiers such as "
                                      "(a+)+ backtrack exponentially).",
                                      where) < 0)
                        msg = NULL;
                r = msg ? error_result(ret_result, msg) : -ENOMEM;
        }
        scan_thread_free(t);
        return r;
}

const struct tool_def tool_def_search_files = {
        .name = "search_files",
        .description =
                "Search file contents (target=\"content\") or find files by name "
                "(target=\"files\"). Returns dict with \"matches\".\n"
                "Content search takes a regex (PCRE2; a plain string is searched literally) and "
                "honours .gitignore/.ignore, skipping hidden and binary files, as ripgrep. "
                "Results: content -> {\"total_count\", \"matches\": [{\"path\", \"line\", "
                "\"content\"}]} sorted by path and line (context lines are entries too); "
                "files_only -> {\"files\"}; count -> {\"counts\": {path: n}}; target=\"files\" "
                "-> {\"files\"} newest first. total_count is the true total; \"truncated\" and "
                "\"_hint\" say when more pages exist.",
        .parameters_json =
                "{\"type\": \"object\", \"properties\": {"
                "\"pattern\": {\"type\": \"string\", \"description\": \"Regex pattern for content "
                "search, or glob pattern (e.g., '*.py') for file search\"}, "
                "\"target\": {\"type\": \"string\", \"enum\": [\"content\", \"files\"], "
                "\"description\": \"'content' searches inside file contents, 'files' searches "
                "for files by name\", \"default\": \"content\"}, "
                "\"path\": {\"type\": \"string\", \"description\": \"Directory or file to search "
                "in (default: current working directory)\", \"default\": \".\"}, "
                "\"file_glob\": {\"type\": \"string\", \"description\": \"Filter files by pattern "
                "in grep mode (e.g., '*.py' to only search Python files)\"}, "
                "\"limit\": {\"type\": \"integer\", \"description\": \"Maximum number of results "
                "to return (default: 50)\", \"default\": 50, \"minimum\": 1}, "
                "\"offset\": {\"type\": \"integer\", \"description\": \"Skip first N results for "
                "pagination (default: 0)\", \"default\": 0, \"minimum\": 0}, "
                "\"output_mode\": {\"type\": \"string\", \"enum\": [\"content\", \"files_only\", "
                "\"count\"], \"description\": \"Output format for grep mode: 'content' shows "
                "matching lines with line numbers, 'files_only' lists file paths, 'count' shows "
                "match counts per file\", \"default\": \"content\"}, "
                "\"context\": {\"type\": \"integer\", \"description\": \"Number of context lines "
                "before and after each match (grep mode only)\", \"default\": 0}}, "
                "\"required\": [\"pattern\"]}",
        .returns = "target: \"content\" (search inside files) or \"files\" (find files by name). "
                   "Returns {\"matches\": [...]}",
        .run = search_files_run,
};
