/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the ignore rules of search_files (src/core/search/search-ignore.c): a
 * .gitignore from a tree ptc did not write, and the globs a script passes. The input up to
 * its first NUL byte is the ignore file; after it come paths, one a line, a trailing '/'
 * marking a directory. Without a NUL the paths are a fixed list of everyday ones plus the
 * file's own lines. Checked:
 *  - parsing never fails but for -ENOMEM and keeps at most IGNORE_RULES_MAX rules;
 *  - last match wins: the file's verdict on a path is that of the last line that matches it
 *    when parsed alone, IGNORE_NONE when no line does;
 *  - a line of plain glob (no gitignore syntax) ignores exactly what ignore_glob_match()
 *    matches: the whole path when the glob has a '/', else the base name;
 *  - ignore_glob_match() agrees with a reference matcher written here from the syntax in
 *    search-ignore.h (memoised, so polynomial), each line a pattern against each path;
 *  - each line as a --glob override parses to the same rules or fails with a message, and
 *    its override verdict is the inverse of the file verdict.
 * Matching must stay fast whatever the pattern: a slow input is a libFuzzer timeout, and the
 * corpus holds pathological `*` and `**` patterns.
 *
 * The corpus (corpus/ignore/) replays under meson through fuzz-main.c; scripts/fuzz.sh
 * ignore fuzzes it for real.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/utf8.h"
#include "core/search/search-ignore.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Paths tried when the input names none. */
static const char *const default_paths[] = {
        "a",
        "a/b",
        "a/b/c",
        "README.md",
        "src/main.c",
        "src/lib/util.h",
        "build/",
        "build/out/app.o",
        "node_modules/",
        "node_modules/pkg/index.js",
        ".git/",
        ".env",
        ".env.local",
        "foo/bar/baz.txt",
        "dir/sub/",
        "x.log",
        "logs/debug.log",
        "doc/frotz/",
        "a/doc/frotz/",
        "tmp/cache/x.pyc",
        "__pycache__/",
        "dist/bundle.min.js",
        "target/debug/",
        "vendor/github.com/x/y.go",
        "deep/a/b/c/d/e/f/g/h/file.txt",
        "na\xc3\xafve/\xe3\x83\x95\xe3\x82\xa1\xe3\x82\xa4\xe3\x83\xab.txt",
        "spa ce/file name ",
        "!important",
        "#hash",
        "[ab]",
        "*",
        "a/**/b",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a",
};

/* Bounds that keep one input cheap: the checks are quadratic in lines times paths. */
#define PATHS_MAX 96
#define LINES_AS_PATHS_MAX 32
#define REF_LINES_MAX 24
#define REF_LEN_MAX 128
#define OVERRIDE_LINES_MAX 16

struct slice {
        const char *s;
        size_t n;
        bool is_dir;
};

/* ---- the reference glob matcher ---- */

struct ref {
        const unsigned char *p, *t;
        size_t pn, tn;
        /* memo[i * (tn + 1) + j]: 0 unknown, 1 no, 2 yes */
        uint8_t memo[(REF_LEN_MAX + 1) * (REF_LEN_MAX + 1)];
};

static size_t cp_len(const unsigned char *s, size_t n)
{
        size_t k = utf8_valid_seq_len(s, n);

        return k ? k : 1;
}

static uint32_t cp_at(const unsigned char *s, size_t n, size_t *ret_len)
{
        size_t k = cp_len(s, n);
        uint32_t c = s[0];

        *ret_len = k;
        if (k == 1)
                return c;
        c &= 0x7Fu >> k;
        for (size_t i = 1; i < k; i++)
                c = (c << 6) | (s[i] & 0x3Fu);
        return c;
}

/*
 * The class at p[i] == '[': its end (index after the ']'), or 0 when it is not closed.
 * *ret_in is whether @c is a member.
 */
static size_t ref_class(const struct ref *r, size_t i, uint32_t c, bool *ret_in)
{
        size_t j = i + 1;
        bool neg = false, in = false;

        if (j < r->pn && (r->p[j] == '!' || r->p[j] == '^')) {
                neg = true;
                j++;
        }
        for (bool first = true;; first = false) {
                uint32_t lo, hi;
                size_t k;

                if (j >= r->pn)
                        return 0;
                if (r->p[j] == ']' && !first)
                        break;
                if (r->p[j] == '\\' && j + 1 < r->pn)
                        j++;
                lo = hi = cp_at(r->p + j, r->pn - j, &k);
                j += k;
                if (j + 1 < r->pn && r->p[j] == '-' && r->p[j + 1] != ']') {
                        j++;
                        if (r->p[j] == '\\' && j + 1 < r->pn)
                                j++;
                        hi = cp_at(r->p + j, r->pn - j, &k);
                        j += k;
                }
                if (c >= lo && c <= hi)
                        in = true;
        }
        *ret_in = in != neg;
        return j + 1;
}

/* Does p[i..] match t[j..]? */
static bool ref_match(struct ref *r, size_t i, size_t j)
{
        uint8_t *m = &r->memo[i * (r->tn + 1) + j];
        bool ok = false;

        if (*m)
                return *m == 2;
        if (i == r->pn)
                ok = j == r->tn;
        else if (r->p[i] == '*') {
                size_t e = i;

                while (e < r->pn && r->p[e] == '*')
                        e++;
                if (e - i >= 2 && (i == 0 || r->p[i - 1] == '/') &&
                    (e == r->pn || r->p[e] == '/')) {
                        /* "**" as a whole component. */
                        if (e == r->pn)
                                ok = true;
                        else {
                                /* Any directories, or none, then what follows the slash. */
                                ok = ref_match(r, e + 1, j);
                                for (size_t k = j; !ok && k < r->tn; k++)
                                        ok = r->t[k] == '/' && ref_match(r, e + 1, k + 1);
                        }
                } else
                        ok = ref_match(r, e, j) ||
                             (j < r->tn && r->t[j] != '/' &&
                              ref_match(r, i, j + cp_len(r->t + j, r->tn - j)));
        } else if (j == r->tn)
                ok = false;
        else if (r->p[i] == '?')
                ok = r->t[j] != '/' && ref_match(r, i + 1, j + cp_len(r->t + j, r->tn - j));
        else if (r->p[i] == '[') {
                size_t k, e;
                uint32_t c = cp_at(r->t + j, r->tn - j, &k);
                bool in = false;

                e = ref_class(r, i, c, &in);
                if (e == 0) /* not closed: a literal '[' */
                        ok = r->t[j] == '[' && ref_match(r, i + 1, j + 1);
                else
                        ok = r->t[j] != '/' && in && ref_match(r, e, j + k);
        } else {
                size_t k = i;

                if (r->p[k] == '\\' && k + 1 < r->pn)
                        k++;
                ok = r->t[j] == r->p[k] && ref_match(r, k + 1, j + 1);
        }
        *m = ok ? 2 : 1;
        return ok;
}

static bool ref_glob_match(struct ref *r, const char *p, size_t pn, const char *t, size_t tn)
{
        r->p = (const unsigned char *) p;
        r->t = (const unsigned char *) t;
        r->pn = pn;
        r->tn = tn;
        memset(r->memo, 0, (pn + 1) * (tn + 1));
        return ref_match(r, 0, 0);
}

/* ---- the checks ---- */

static bool is_blank(char c)
{
        return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/*
 * A line that add_line() takes as it is: no comment, negation, leading slash, escape at the
 * start, trailing slash or blank, alternatives, or "/" + "**" at the end.
 */
static bool is_plain_glob(const struct slice *l)
{
        if (l->n == 0 || l->n > 1024 || strchr("#!/\\", l->s[0]) || l->s[l->n - 1] == '/' ||
            is_blank(l->s[l->n - 1]))
                return false;
        if (memchr(l->s, '{', l->n) || memchr(l->s, '}', l->n))
                return false;
        return !(l->n >= 3 && memcmp(l->s + l->n - 3, "/**", 3) == 0);
}

static size_t base_off(const struct slice *p)
{
        for (size_t i = p->n; i > 0; i--)
                if (p->s[i - 1] == '/')
                        return i;
        return 0;
}

static bool is_match(enum ignore_match m)
{
        return m == IGNORE_NONE || m == IGNORE_IGNORE || m == IGNORE_WHITELIST;
}

/* Split @s at '\n' into at most @max slices (the rest is not looked at). */
static size_t split_lines(const char *s, size_t n, struct slice *out, size_t max)
{
        size_t k = 0, pos = 0;

        while (pos < n && k < max) {
                const char *nl = memchr(s + pos, '\n', n - pos);
                size_t end = nl ? (size_t) (nl - s) : n;

                out[k++] = (struct slice){.s = s + pos, .n = end - pos};
                pos = end + 1;
        }
        return k;
}

static void add_path(struct slice *paths, size_t *np, const char *s, size_t n)
{
        bool dir = false;

        while (n > 0 && s[0] == '/')
                s++, n--;
        if (n > 0 && s[n - 1] == '/') {
                dir = true;
                n--;
        }
        if (n == 0 || *np >= PATHS_MAX)
                return;
        paths[(*np)++] = (struct slice){.s = s, .n = n, .is_dir = dir};
}

static void check_override(const struct slice *line, const struct ignore_file *alone,
                           const struct slice *paths, size_t np)
{
        _cleanup_ignore_file_ struct ignore_file *g = NULL;
        _cleanup_free_ char *s = strndup(line->s, line->n);
        const char *err = NULL;
        int r;

        if (!s || strlen(s) != line->n)
                return;
        r = ignore_glob_parse(s, &g, &err);
        if (r == -ENOMEM)
                return;
        if (r == -EINVAL) {
                if (!err || !*err)
                        abort();
                return;
        }
        if (r != 0 || !g)
                abort();
        for (size_t i = 0; i < np; i++) {
                enum ignore_match m = ignore_file_match(g, paths[i].s, paths[i].n, paths[i].is_dir);
                enum ignore_match o =
                        ignore_override_match(g, paths[i].s, paths[i].n, paths[i].is_dir);

                /* The same line read the same way by both entry points. */
                if (m != ignore_file_match(alone, paths[i].s, paths[i].n, paths[i].is_dir))
                        abort();
                if (!is_match(o) || (m == IGNORE_IGNORE && o != IGNORE_WHITELIST) ||
                    (m == IGNORE_WHITELIST && o != IGNORE_IGNORE))
                        abort();
        }
}

/* Each line against each path: the checks that need the lines parsed one by one. */
static void check_lines(const struct ignore_file *f, const struct slice *lines,
                        struct ignore_file *const *alone, size_t nlines, const struct slice *paths,
                        size_t np, struct ref *ref)
{
        /* The file's verdict is that of the last line that says something. */
        if (ignore_file_size(f) < IGNORE_RULES_MAX)
                for (size_t j = 0; j < np; j++) {
                        enum ignore_match want = IGNORE_NONE;

                        for (size_t i = nlines; i > 0 && want == IGNORE_NONE; i--)
                                want = ignore_file_match(alone[i - 1], paths[j].s, paths[j].n,
                                                         paths[j].is_dir);
                        if (ignore_file_match(f, paths[j].s, paths[j].n, paths[j].is_dir) != want)
                                abort();
                }

        /* A plain glob line matches what the glob matcher says. */
        for (size_t i = 0; i < nlines; i++) {
                bool anchored = memchr(lines[i].s, '/', lines[i].n) != NULL;

                if (!is_plain_glob(&lines[i]) || ignore_file_size(alone[i]) != 1)
                        continue;
                for (size_t j = 0; j < np; j++) {
                        size_t b = anchored ? 0 : base_off(&paths[j]);
                        bool want = ignore_glob_match(lines[i].s, lines[i].n, paths[j].s + b,
                                                      paths[j].n - b);

                        if ((ignore_file_match(alone[i], paths[j].s, paths[j].n, paths[j].is_dir) ==
                             IGNORE_IGNORE) != want)
                                abort();
                }
        }

        /* The glob matcher against the reference, on valid UTF-8 (see ref_match()). */
        for (size_t i = 0; i < MIN(nlines, (size_t) REF_LINES_MAX); i++) {
                if (lines[i].n > REF_LEN_MAX || !utf8_is_valid(lines[i].s, lines[i].n))
                        continue;
                for (size_t j = 0; j < np; j++) {
                        if (paths[j].n > REF_LEN_MAX || !utf8_is_valid(paths[j].s, paths[j].n))
                                continue;
                        if (ignore_glob_match(lines[i].s, lines[i].n, paths[j].s, paths[j].n) !=
                            ref_glob_match(ref, lines[i].s, lines[i].n, paths[j].s, paths[j].n))
                                abort();
                }
        }

        for (size_t i = 0; i < MIN(nlines, (size_t) OVERRIDE_LINES_MAX); i++)
                check_override(&lines[i], alone[i], paths, np);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *text = (const char *) data, *nul = memchr(data, 0, size);
        size_t text_n = nul ? (size_t) (nul - text) : size;
        _cleanup_ignore_file_ struct ignore_file *f = NULL;
        _cleanup_free_ struct slice *lines = NULL;
        _cleanup_free_ struct ignore_file **alone = NULL;
        _cleanup_free_ struct ref *ref = NULL;
        struct slice paths[PATHS_MAX];
        size_t nlines, nalone = 0, np = 0;
        int r;

        r = ignore_file_parse(text, text_n, &f);
        if (r == -ENOMEM)
                return 0;
        if (r != 0 || !f || ignore_file_size(f) > IGNORE_RULES_MAX)
                abort();

        lines = calloc(text_n + 1, sizeof(*lines));
        alone = calloc(text_n + 1, sizeof(*alone));
        ref = malloc(sizeof(*ref));
        if (!lines || !alone || !ref)
                return 0;
        nlines = split_lines(text, text_n, lines, text_n + 1);

        if (nul) {
                struct slice given[PATHS_MAX];
                size_t k = split_lines(nul + 1, size - text_n - 1, given, PATHS_MAX);

                for (size_t i = 0; i < k; i++)
                        add_path(paths, &np, given[i].s, given[i].n);
        } else {
                for (size_t i = 0; i < ELEMENTSOF(default_paths); i++)
                        add_path(paths, &np, default_paths[i], strlen(default_paths[i]));
                for (size_t i = 0; i < MIN(nlines, (size_t) LINES_AS_PATHS_MAX); i++)
                        add_path(paths, &np, lines[i].s, lines[i].n);
        }

        for (size_t i = 0; i < np; i++)
                if (!is_match(ignore_file_match(f, paths[i].s, paths[i].n, paths[i].is_dir)))
                        abort();

        for (r = 0; nalone < nlines && r == 0; nalone++)
                r = ignore_file_parse(lines[nalone].s, lines[nalone].n, &alone[nalone]);
        if (r != 0 && r != -ENOMEM)
                abort();
        if (r == 0)
                check_lines(f, lines, alone, nlines, paths, np, ref);
        for (size_t i = 0; i < nalone; i++)
                alone[i] = ignore_file_free(alone[i]);
        return 0;
}
