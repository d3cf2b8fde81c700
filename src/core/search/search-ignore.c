/* SPDX-License-Identifier: MIT */
/*
 * Gitignore rules and globs for search_files, re-created from ripgrep 13's `ignore` and
 * `globset` crates (the seed ran `rg`, so its results followed these rules).
 *
 * The matcher is git's wildmatch algorithm (with its ABORT shortcuts, so a pattern with many
 * stars stays polynomial) extended with globset's rules for `**` and decoding UTF-8 for `?` and
 * classes. `{a,b}` alternatives are expanded when a line is parsed. Each rule also keeps the
 * literal tail of its pattern: a candidate that does not end with it is rejected with one
 * memcmp, which is what most entries against most rules come to.
 */

#include "core/search/search-ignore.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/macro.h"
#include "basic/path-util.h"
#include "basic/utf8.h"

/* Longest pattern we keep; longer lines are skipped (the matcher recurses once per star). */
#define RULE_PATTERN_MAX 1024

struct rule {
        char *pat;
        size_t len;
        size_t tail;   /* bytes at the end of pat that are plain literal characters */
        bool literal;  /* no special character at all: plain comparison */
        bool anchored; /* match the whole relative path, not the base name */
        bool dir_only;
        bool whitelist; /* a "!" line */
};

struct ignore_file {
        struct rule *rules;
        size_t n, alloc;
        size_t n_plain; /* rules that are not whitelists (for the override semantics) */
        bool has_anchored;
};

enum {
        WM_MATCH = 0,
        WM_NOMATCH = 1,
        WM_ABORT_ALL = -1,
        WM_ABORT_TO_STARSTAR = -2,
};

typedef unsigned char uchar;

static bool is_special(uchar c)
{
        return c == '*' || c == '?' || c == '[' || c == '\\';
}

/* One code point at @s (an invalid byte counts alone, as its own value). */
static uint32_t cp_decode(const uchar *s, size_t n, size_t *ret_len)
{
        size_t k = n ? utf8_valid_seq_len(s, n) : 0;

        if (k <= 1) {
                *ret_len = n ? 1 : 0;
                return n ? s[0] : 0;
        }
        *ret_len = k;
        if (k == 2)
                return ((s[0] & 0x1Fu) << 6) | (s[1] & 0x3Fu);
        if (k == 3)
                return ((s[0] & 0x0Fu) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3Fu);
        return ((s[0] & 0x07u) << 18) | ((s[1] & 0x3Fu) << 12) | ((s[2] & 0x3Fu) << 6) |
               (s[3] & 0x3Fu);
}

/* One class member character at *pp (an escape takes the next one literally). */
static uint32_t class_char(const uchar **pp, const uchar *pe)
{
        size_t k;
        uint32_t c;

        if (**pp == '\\' && *pp + 1 < pe)
                (*pp)++;
        c = cp_decode(*pp, (size_t) (pe - *pp), &k);
        *pp += k;
        return c;
}

/*
 * The class starting at *pp (on the '['). Returns false when it is not terminated; else
 * sets *ret_ok to whether @c is in it and moves *pp past the ']'.
 */
static bool class_match(const uchar **pp, const uchar *pe, uint32_t c, bool *ret_ok)
{
        const uchar *p = *pp + 1;
        bool negated = false, ok = false, first = true;

        if (p < pe && (*p == '!' || *p == '^')) {
                negated = true;
                p++;
        }
        for (;;) {
                uint32_t lo, hi;

                if (p >= pe)
                        return false;
                if (*p == ']' && !first)
                        break;
                first = false;
                lo = class_char(&p, pe);
                hi = lo;
                if (p + 1 < pe && *p == '-' && p[1] != ']') {
                        p++;
                        hi = class_char(&p, pe);
                }
                if (c >= lo && c <= hi)
                        ok = true;
        }
        *pp = p + 1;
        *ret_ok = ok != negated;
        return true;
}

static int dowild(const uchar *p, const uchar *pe, const uchar *t, const uchar *te,
                  const uchar *pstart)
{
        for (; p < pe; p++) {
                uchar pc = *p;

                if (t == te && pc != '*')
                        return WM_ABORT_ALL;
                switch (pc) {
                case '\\':
                        /* A dangling backslash is rejected at parse time; here it is literal. */
                        if (p + 1 < pe)
                                p++;
                        if (*t != *p)
                                return WM_NOMATCH;
                        t++;
                        break;
                case '?': {
                        size_t k;

                        if (*t == '/')
                                return WM_NOMATCH;
                        (void) cp_decode(t, (size_t) (te - t), &k);
                        t += k;
                        break;
                }
                case '[': {
                        const uchar *q = p;
                        size_t k;
                        uint32_t c;
                        bool ok;

                        if (*t == '/')
                                return WM_NOMATCH;
                        c = cp_decode(t, (size_t) (te - t), &k);
                        if (!class_match(&q, pe, c, &ok)) {
                                /* Unterminated (only in hand-made patterns): a literal '['. */
                                if (*t != '[')
                                        return WM_NOMATCH;
                                t++;
                                break;
                        }
                        if (!ok)
                                return WM_NOMATCH;
                        p = q - 1;
                        t += k;
                        break;
                }
                case '*': {
                        const uchar *first = p;
                        bool match_slash = false;

                        if (p + 1 < pe && p[1] == '*') {
                                while (p + 1 < pe && p[1] == '*')
                                        p++;
                                /* "**" is recursive only as a whole path component. */
                                if ((first == pstart || first[-1] == '/') &&
                                    (p + 1 == pe || p[1] == '/')) {
                                        /*
                                         * "**" + "/" may match no directory at all. When the
                                         * rest runs out of text here (WM_ABORT_ALL) it does at
                                         * every later position the loop below would try too:
                                         * stop, or "**" + "/" repeated k times costs 2^k.
                                         */
                                        if (p + 1 < pe) {
                                                int m = dowild(p + 2, pe, t, te, pstart);

                                                if (m == WM_MATCH || m == WM_ABORT_ALL)
                                                        return m;
                                        }
                                        match_slash = true;
                                }
                        }
                        p++;
                        if (p == pe) {
                                if (!match_slash && memchr(t, '/', (size_t) (te - t)))
                                        return WM_NOMATCH;
                                return WM_MATCH;
                        }
                        if (!match_slash && *p == '/') {
                                /* "*" then "/": the star takes the rest of this component. */
                                const uchar *slash = memchr(t, '/', (size_t) (te - t));

                                if (!slash)
                                        return WM_NOMATCH;
                                t = slash + 1;
                                break;
                        }
                        for (;;) {
                                size_t k;
                                int m;

                                if (t == te)
                                        return WM_ABORT_ALL;
                                if (!is_special(*p)) {
                                        /* What comes before the next literal belongs to the star.
                                         */
                                        while (t < te && (match_slash || *t != '/') && *t != *p)
                                                t++;
                                        /*
                                         * Not in the rest of the text: no later start of an
                                         * enclosing star finds it either. Not before a slash: only
                                         * an enclosing "**" can go past it. Plain WM_NOMATCH here
                                         * made every enclosing star retry each position, O(n^k)
                                         * for k "**" + "/" components.
                                         */
                                        if (t == te)
                                                return WM_ABORT_ALL;
                                        if (*t != *p)
                                                return WM_ABORT_TO_STARSTAR;
                                }
                                m = dowild(p, pe, t, te, pstart);
                                if (m != WM_NOMATCH) {
                                        if (!match_slash || m != WM_ABORT_TO_STARSTAR)
                                                return m;
                                } else if (!match_slash && *t == '/')
                                        return WM_ABORT_TO_STARSTAR;
                                (void) cp_decode(t, (size_t) (te - t), &k);
                                t += k;
                        }
                }
                default:
                        if (*t != pc)
                                return WM_NOMATCH;
                        t++;
                        break;
                }
        }
        return t == te ? WM_MATCH : WM_NOMATCH;
}

bool ignore_glob_match(const char *pat, size_t plen, const char *s, size_t slen)
{
        const uchar *p = (const uchar *) pat;

        return dowild(p, p + plen, (const uchar *) s, (const uchar *) s + slen, p) == WM_MATCH;
}

/* Validate the glob syntax globset enforces: classes and braces closed, no dangling escape. */
static bool glob_is_valid(const char *s, size_t n, const char **ret_err)
{
        bool in_brace = false;

        for (size_t i = 0; i < n; i++) {
                char c = s[i];

                if (c == '\\') {
                        if (i + 1 >= n) {
                                *ret_err = "dangling '\\'";
                                return false;
                        }
                        i++;
                } else if (c == '[') {
                        size_t j = i + 1;
                        bool first = true;

                        if (j < n && (s[j] == '!' || s[j] == '^'))
                                j++;
                        for (;; j++) {
                                if (j >= n) {
                                        *ret_err = "unclosed character class; missing ']'";
                                        return false;
                                }
                                if (s[j] == ']' && !first)
                                        break;
                                if (s[j] == '\\' && j + 1 < n)
                                        j++;
                                first = false;
                        }
                        i = j;
                } else if (c == '{') {
                        if (in_brace) {
                                *ret_err = "nested alternate groups are not allowed";
                                return false;
                        }
                        in_brace = true;
                } else if (c == '}' && in_brace)
                        in_brace = false;
        }
        if (in_brace) {
                *ret_err = "unclosed alternate group; missing '}'";
                return false;
        }
        return true;
}

/* Index of the end of the class starting at s[i] == '[' (the ']'), in a validated glob. */
static size_t class_end(const char *s, size_t n, size_t i)
{
        size_t j = i + 1;
        bool first = true;

        if (j < n && (s[j] == '!' || s[j] == '^'))
                j++;
        for (; j < n; j++) {
                if (s[j] == ']' && !first)
                        return j;
                if (s[j] == '\\' && j + 1 < n)
                        j++;
                first = false;
        }
        return n;
}

static int file_push(struct ignore_file *f, const char *pat, size_t len, bool anchored,
                     bool dir_only, bool whitelist)
{
        struct rule *r;
        size_t tail = 0;
        bool backslash = memchr(pat, '\\', len) != NULL;

        if (f->n >= IGNORE_RULES_MAX)
                return 0;
        if (f->n == f->alloc) {
                size_t na = f->alloc ? f->alloc * 2 : 8;
                struct rule *nr = realloc(f->rules, na * sizeof(*nr));

                if (!nr)
                        return -ENOMEM;
                f->rules = nr;
                f->alloc = na;
        }
        r = &f->rules[f->n];
        *r = (struct rule){
                /* Not strndup(): @pat is a slice of a larger buffer, not a C string. */
                .pat = malloc(len + 1), .len = len, .anchored = anchored, .dir_only = dir_only,
                .whitelist = whitelist,
        };
        if (!r->pat)
                return -ENOMEM;
        memcpy(r->pat, pat, len);
        r->pat[len] = 0;
        /* With escapes the literal tail is not a plain suffix of the pattern: skip the shortcut. */
        if (!backslash)
                while (tail < len && !is_special((uchar) pat[len - 1 - tail]) &&
                       pat[len - 1 - tail] != ']')
                        tail++;
        /*
         * A slash right after a star may be the one of a "**" + "/" that matches no directory
         * ("**" + "/foo" matches "foo"): the candidate need not have it, so it is not part of
         * the tail. Any other slash of the tail follows a literal character and is in the text.
         */
        if (tail > 0 && tail < len && pat[len - tail] == '/' && pat[len - tail - 1] == '*')
                tail--;
        r->tail = tail;
        r->literal = !backslash && tail == len;
        f->n++;
        if (!whitelist)
                f->n_plain++;
        if (anchored)
                f->has_anchored = true;
        return 0;
}

/*
 * Expand the `{a,b}` groups of @s into rules, at most @budget of them (decremented).
 * Returns 0, -E2BIG past the budget, -ENOMEM.
 */
static int expand_braces(struct ignore_file *f, const char *s, size_t n, bool anchored,
                         bool dir_only, bool whitelist, size_t *budget)
{
        _cleanup_free_ char *tmp = NULL;
        size_t open = n, close = n, start;

        for (size_t i = 0; i < n; i++) {
                if (s[i] == '\\') {
                        i++;
                        continue;
                }
                if (s[i] == '[') {
                        i = class_end(s, n, i);
                        continue;
                }
                if (s[i] == '{' && open == n)
                        open = i;
                else if (s[i] == '}' && open < n) {
                        close = i;
                        break;
                }
        }
        if (open == n || close == n) {
                if (*budget == 0)
                        return -E2BIG;
                (*budget)--;
                return file_push(f, s, n, anchored, dir_only, whitelist);
        }

        tmp = malloc(n + 1);
        if (!tmp)
                return -ENOMEM;
        start = open + 1;
        for (size_t i = open + 1; i <= close; i++) {
                size_t alt_len, len;
                int r;

                if (i < close && s[i] == '\\') {
                        i++;
                        continue;
                }
                if (i < close && s[i] == '[') {
                        i = class_end(s, close, i);
                        continue;
                }
                if (i < close && s[i] != ',')
                        continue;
                alt_len = i - start;
                memcpy(tmp, s, open);
                memcpy(tmp + open, s + start, alt_len);
                memcpy(tmp + open + alt_len, s + close + 1, n - close - 1);
                len = open + alt_len + (n - close - 1);
                r = expand_braces(f, tmp, len, anchored, dir_only, whitelist, budget);
                if (r < 0)
                        return r;
                start = i + 1;
        }
        return 0;
}

static bool is_blank(char c)
{
        return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/*
 * One line as ripgrep's GitignoreBuilder::add_line. Returns 0 (also for skipped lines),
 * -EINVAL with *ret_err for an invalid glob, -ENOMEM.
 */
static int add_line(struct ignore_file *f, const char *line, size_t n, const char **ret_err)
{
        bool anchored = false, dir_only = false, whitelist = false;
        size_t budget = IGNORE_ALTERNATIVES_MAX;
        const char *err = NULL;
        int r;

        if (n > 0 && line[0] == '#')
                return 0;
        if (!(n >= 2 && line[n - 2] == '\\' && line[n - 1] == ' '))
                while (n > 0 && is_blank(line[n - 1]))
                        n--;
        if (n == 0)
                return 0;
        if (n >= 2 && line[0] == '\\' && (line[1] == '!' || line[1] == '#')) {
                line++;
                n--;
        } else {
                if (line[0] == '!') {
                        whitelist = true;
                        line++;
                        n--;
                }
                if (n > 0 && line[0] == '/') {
                        anchored = true;
                        line++;
                        n--;
                }
        }
        if (n > 0 && line[n - 1] == '/') {
                dir_only = true;
                n--;
                if (n > 0 && line[n - 1] == '\\')
                        n--;
        }
        if (n == 0 || n > RULE_PATTERN_MAX)
                return 0;
        if (memchr(line, '/', n))
                anchored = true;
        if (!glob_is_valid(line, n, &err)) {
                if (ret_err)
                        *ret_err = err;
                return -EINVAL;
        }

        if (n >= 3 && memcmp(line + n - 3, "/**", 3) == 0) {
                /*
                 * A trailing slash + double star matches what is inside the directory, not the
                 * directory itself: ripgrep appends a slash + star to force that.
                 */
                _cleanup_free_ char *ext = malloc(n + 3);

                if (!ext)
                        return -ENOMEM;
                memcpy(ext, line, n);
                memcpy(ext + n, "/*", 3);
                r = expand_braces(f, ext, n + 2, anchored, dir_only, whitelist, &budget);
        } else
                r = expand_braces(f, line, n, anchored, dir_only, whitelist, &budget);
        if (r == -E2BIG) {
                if (ret_err)
                        *ret_err = "too many alternatives";
                return -EINVAL;
        }
        return r;
}

struct ignore_file *ignore_file_free(struct ignore_file *f)
{
        if (!f)
                return NULL;
        for (size_t i = 0; i < f->n; i++)
                free(f->rules[i].pat);
        free(f->rules);
        free(f);
        return NULL;
}

int ignore_file_parse(const char *text, size_t n, struct ignore_file **ret)
{
        _cleanup_ignore_file_ struct ignore_file *f = calloc(1, sizeof(*f));
        size_t pos = 0;

        if (!f)
                return -ENOMEM;
        while (pos < n && f->n < IGNORE_RULES_MAX) {
                const char *nl = memchr(text + pos, '\n', n - pos);
                size_t end = nl ? (size_t) (nl - text) : n;
                int r = add_line(f, text + pos, end - pos, NULL);

                /* An invalid glob only loses its own line, as in ripgrep. */
                if (r == -ENOMEM)
                        return r;
                pos = end + 1;
        }
        *ret = TAKE_PTR(f);
        return 0;
}

int ignore_glob_parse(const char *glob, struct ignore_file **ret, const char **ret_err)
{
        _cleanup_ignore_file_ struct ignore_file *f = calloc(1, sizeof(*f));
        const char *err = "invalid glob";
        int r;

        if (!f)
                return -ENOMEM;
        r = add_line(f, glob, strlen(glob), &err);
        if (r == -EINVAL) {
                *ret_err = err;
                return r;
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(f);
        return 0;
}

size_t ignore_file_size(const struct ignore_file *f)
{
        return f ? f->n : 0;
}

bool ignore_file_has_anchored(const struct ignore_file *f)
{
        return f && f->has_anchored;
}

static bool rule_match(const struct rule *r, const char *s, size_t n)
{
        if (r->tail > n || memcmp(r->pat + r->len - r->tail, s + n - r->tail, r->tail) != 0)
                return false;
        if (r->literal)
                return r->len == n;
        return ignore_glob_match(r->pat, r->len, s, n);
}

enum ignore_match ignore_file_match(const struct ignore_file *f, const char *path, size_t len,
                                    bool is_dir)
{
        const char *base = path;
        size_t base_len = len;

        if (!f || f->n == 0)
                return IGNORE_NONE;
        for (size_t i = len; i > 0; i--)
                if (path[i - 1] == '/') {
                        base = path + i;
                        base_len = len - i;
                        break;
                }
        for (size_t i = f->n; i > 0; i--) {
                const struct rule *r = &f->rules[i - 1];

                if (r->dir_only && !is_dir)
                        continue;
                if (r->anchored ? rule_match(r, path, len) : rule_match(r, base, base_len))
                        return r->whitelist ? IGNORE_WHITELIST : IGNORE_IGNORE;
        }
        return IGNORE_NONE;
}

enum ignore_match ignore_override_match(const struct ignore_file *f, const char *path, size_t len,
                                        bool is_dir)
{
        enum ignore_match m;

        if (!f || f->n == 0)
                return IGNORE_NONE;
        m = ignore_file_match(f, path, len, is_dir);
        if (m == IGNORE_IGNORE)
                return IGNORE_WHITELIST;
        if (m == IGNORE_WHITELIST)
                return IGNORE_IGNORE;
        if (f->n_plain > 0 && !is_dir)
                return IGNORE_IGNORE;
        return IGNORE_NONE;
}

/* --- directory chains --- */

static const char *const kind_names[_IGNORE_KIND_MAX] = {
        [IGNORE_KIND_RGIGNORE] = ".rgignore",
        [IGNORE_KIND_IGNORE] = ".ignore",
        [IGNORE_KIND_GITIGNORE] = ".gitignore",
        [IGNORE_KIND_EXCLUDE] = ".git",
};

unsigned ignore_present_bit(const char *name)
{
        if (name[0] != '.')
                return 0;
        for (unsigned k = 0; k < _IGNORE_KIND_MAX; k++)
                if (strcmp(name, kind_names[k]) == 0)
                        return 1u << k;
        return 0;
}

/* Read @name below @dirfd (at most IGNORE_FILE_BYTES_MAX) and parse it. *ret stays NULL when
 * the file is missing, not regular or unreadable. */
static int load_file(int dirfd, const char *name, struct ignore_file **ret)
{
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *text = NULL;
        size_t len = 0, alloc = 0;
        struct stat st;

        fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return 0;
        for (;;) {
                ssize_t k;

                if (len == alloc) {
                        size_t na = alloc ? alloc * 2 : 4096;
                        char *nt;

                        if (alloc >= IGNORE_FILE_BYTES_MAX)
                                break;
                        na = MIN(na, (size_t) IGNORE_FILE_BYTES_MAX);
                        nt = realloc(text, na);
                        if (!nt)
                                return -ENOMEM;
                        text = nt;
                        alloc = na;
                }
                k = read(fd, text + len, alloc - len);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return 0;
                }
                if (k == 0)
                        break;
                len += (size_t) k;
        }
        return ignore_file_parse(text ? text : "", len, ret);
}

void ignore_dir_link(struct ignore_dir *d, const struct ignore_dir *parent, size_t abs_len,
                     bool has_git)
{
        d->parent = parent;
        d->abs_len = abs_len;
        d->has_git = has_git;
        d->git_root = has_git ? d : parent ? parent->git_root : NULL;
        if (parent)
                d->global = parent->global;
        for (unsigned k = 0; k < _IGNORE_KIND_MAX; k++)
                d->next[k] = d->files[k] ? d : parent ? parent->next[k] : NULL;
}

int ignore_dir_load(struct ignore_dir *d, const struct ignore_dir *parent, int dirfd,
                    size_t abs_len, unsigned present)
{
        bool has_git = false;
        struct stat st;
        int r;

        if (present & IGNORE_PRESENT_GIT) {
                has_git = fstatat(dirfd, ".git", &st, 0) >= 0;
                if (has_git && S_ISDIR(st.st_mode)) {
                        r = load_file(dirfd, ".git/info/exclude", &d->files[IGNORE_KIND_EXCLUDE]);
                        if (r < 0)
                                return r;
                }
        }
        for (unsigned k = IGNORE_KIND_RGIGNORE; k <= IGNORE_KIND_GITIGNORE; k++) {
                if (!(present & (1u << k)))
                        continue;
                /* .gitignore outside a repository is never consulted: do not read it. */
                if (k == IGNORE_KIND_GITIGNORE && !has_git && !(parent && parent->git_root))
                        continue;
                r = load_file(dirfd, kind_names[k], &d->files[k]);
                if (r < 0)
                        return r;
        }
        for (unsigned k = 0; k < _IGNORE_KIND_MAX; k++)
                if (d->files[k] && ignore_file_size(d->files[k]) == 0)
                        d->files[k] = ignore_file_free(d->files[k]);
        ignore_dir_link(d, parent, abs_len, has_git);
        if (has_git)
                return 1;
        for (unsigned k = 0; k < _IGNORE_KIND_MAX; k++)
                if (d->files[k])
                        return 1;
        return 0;
}

void ignore_dir_release(struct ignore_dir *d)
{
        if (!d)
                return;
        for (unsigned k = 0; k < _IGNORE_KIND_MAX; k++)
                d->files[k] = ignore_file_free(d->files[k]);
}

enum ignore_match ignore_dir_match(const struct ignore_dir *d, const char *abs, size_t len,
                                   bool is_dir)
{
        const struct ignore_dir *git;

        if (!d)
                return IGNORE_NONE;
        git = d->git_root;
        for (unsigned k = 0; k < _IGNORE_KIND_MAX; k++) {
                bool git_kind = k == IGNORE_KIND_GITIGNORE || k == IGNORE_KIND_EXCLUDE;

                if (git_kind && !git)
                        continue;
                for (const struct ignore_dir *p = d->next[k]; p;
                     p = p->parent ? p->parent->next[k] : NULL) {
                        enum ignore_match m;

                        /* Rules above the repository's top directory do not apply inside it. */
                        if (git_kind && p->abs_len < git->abs_len)
                                break;
                        if (p->abs_len + 1 >= len)
                                continue;
                        m = ignore_file_match(p->files[k], abs + p->abs_len + 1,
                                              len - p->abs_len - 1, is_dir);
                        if (m != IGNORE_NONE)
                                return m;
                }
        }
        if (git && d->global && git->abs_len + 1 < len)
                return ignore_file_match(d->global, abs + git->abs_len + 1, len - git->abs_len - 1,
                                         is_dir);
        return IGNORE_NONE;
}

/* --- git's global excludes --- */

/*
 * The value of the last "excludesfile = VALUE" line of @text, as the regex of ripgrep's
 * ignore crate reads it: case-insensitive key, any section, optional quotes, no spaces
 * inside the value. *ret NULL when there is none.
 */
static int gitconfig_excludes_value(const char *text, size_t n, char **ret)
{
        static const char key[] = "excludesfile";
        const char *line = text, *end = text + n;

        *ret = NULL;
        while (line < end) {
                const char *eol = memchr(line, '\n', (size_t) (end - line));
                const char *p = line, *q;

                if (!eol)
                        eol = end;
                while (p < eol && (*p == ' ' || *p == '\t'))
                        p++;
                if ((size_t) (eol - p) > sizeof(key) - 1 &&
                    strncasecmp(p, key, sizeof(key) - 1) == 0) {
                        p += sizeof(key) - 1;
                        while (p < eol && (*p == ' ' || *p == '\t'))
                                p++;
                        if (p < eol && *p == '=') {
                                p++;
                                while (p < eol && (*p == ' ' || *p == '\t' || *p == '"'))
                                        p++;
                                q = eol;
                                while (q > p && (q[-1] == ' ' || q[-1] == '\t' || q[-1] == '\r' ||
                                                 q[-1] == '"'))
                                        q--;
                                if (q > p && !memchr(p, ' ', (size_t) (q - p)) &&
                                    !memchr(p, '\t', (size_t) (q - p))) {
                                        char *v = strndup(p, (size_t) (q - p));

                                        if (!v)
                                                return -ENOMEM;
                                        free(*ret);
                                        *ret = v;
                                }
                        }
                }
                line = eol + 1;
        }
        return 0;
}

/* core.excludesFile of the gitconfig at @path, "~/" expanded; *ret NULL when unset. */
static int gitconfig_excludes_path(const char *path, const char *home, char **ret)
{
        _cleanup_free_ char *text = NULL, *v = NULL;
        size_t n = 0;
        int r;

        *ret = NULL;
        r = read_file_at(AT_FDCWD, path, IGNORE_FILE_BYTES_MAX, &text, &n);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return 0;
        r = gitconfig_excludes_value(text, n, &v);
        if (r < 0 || !v)
                return r;
        if (strncmp(v, "~/", 2) == 0) {
                *ret = path_join(home, v + 2);
                return *ret ? 0 : -ENOMEM;
        }
        *ret = TAKE_PTR(v);
        return 0;
}

int ignore_global_excludes_load(const char *home, const char *xdg_config_home,
                                struct ignore_file **ret)
{
        _cleanup_free_ char *gitconfig = NULL, *xdg = NULL, *xdg_config = NULL, *path = NULL;
        int r;

        *ret = NULL;
        if (!home || home[0] != '/')
                return 0;
        xdg = xdg_config_home && xdg_config_home[0] == '/' ? strdup(xdg_config_home)
                                                           : path_join(home, ".config");
        gitconfig = path_join(home, ".gitconfig");
        xdg_config = xdg ? path_join(xdg, "git/config") : NULL;
        if (!xdg || !gitconfig || !xdg_config)
                return -ENOMEM;
        r = gitconfig_excludes_path(gitconfig, home, &path);
        if (r >= 0 && !path)
                r = gitconfig_excludes_path(xdg_config, home, &path);
        if (r < 0)
                return r;
        if (!path) {
                path = path_join(xdg, "git/ignore");
                if (!path)
                        return -ENOMEM;
        }
        return load_file(AT_FDCWD, path, ret);
}
