/* SPDX-License-Identifier: MIT */
/*
 * search_files: the glob and gitignore matcher (table-driven), rule chains across
 * directories, the literal and regex matcher through the tool on real files (chunk
 * boundaries, long lines, context, binary files, limits), the walk's rules (hidden, .git,
 * symlinks) and the result shapes.
 */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include "../lib/ptc-test.h"
/* clang-format on */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/fd-util.h"
#include "basic/macro.h"
#include "basic/path-util.h"
#include "basic/time-util.h"
#include "core/output/redact.h"
#include "core/search/search-ignore.h"
#include "core/tools/tool.h"

struct fixture {
        char dir[64];
        char *env[3];
        char home_env[128];
        struct tool_ctx ctx;
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        if (!f)
                return -1;
        (void) snprintf(f->dir, sizeof(f->dir), "/tmp/ptc-test-search-XXXXXX");
        if (!mkdtemp(f->dir))
                return -1;
        (void) snprintf(f->home_env, sizeof(f->home_env), "HOME=%s", f->dir);
        f->env[0] = f->home_env;
        f->env[1] = (char *) "PATH=/usr/bin:/bin";
        f->ctx = (struct tool_ctx){
                .cwd = f->dir,
                .env = f->env,
                .deadline = USEC_INFINITY,
                .cancel_fd = -1,
        };
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        (void) rm_rf(f->dir);
        free(f);
        return 0;
}

/* Write @n bytes to @rel below the fixture dir, creating parent directories. */
static void put(struct fixture *f, const char *rel, const void *p, size_t n)
{
        char path[512], *slash;
        int fd;

        (void) snprintf(path, sizeof(path), "%s/%s", f->dir, rel);
        slash = strrchr(path, '/');
        *slash = '\0';
        assert_int_equal(mkdir_p(path, 0755), 0);
        *slash = '/';
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, p, n), (ssize_t) n);
        assert_int_equal(close(fd), 0);
}

static void puts_(struct fixture *f, const char *rel, const char *s)
{
        put(f, rel, s, strlen(s));
}

static json_t *search(struct fixture *f, const char *fmt, ...) _printf_(2, 3);
static json_t *search(struct fixture *f, const char *fmt, ...)
{
        char *s = NULL;
        va_list ap;
        json_t *a, *res = NULL;
        json_error_t err;
        int r;

        va_start(ap, fmt);
        assert_true(vasprintf(&s, fmt, ap) >= 0);
        va_end(ap);
        a = json_loads(s, 0, &err);
        free(s);
        assert_non_null(a);
        r = tool_def_search_files.run(NULL, &f->ctx, a, &res);
        json_decref(a);
        assert_int_equal(r, 0);
        assert_non_null(res);
        return res;
}

static json_int_t total(json_t *o)
{
        json_t *v = json_object_get(o, "total_count");

        assert_true(json_is_integer(v));
        return json_integer_value(v);
}

static const char *error_of(json_t *o)
{
        json_t *v = json_object_get(o, "error");

        return json_is_string(v) ? json_string_value(v) : NULL;
}

static json_t *list(json_t *o, const char *key)
{
        json_t *v = json_object_get(o, key);

        assert_non_null(v);
        return v;
}

/* --- globs --- */

static void test_ignore_glob_match_table(void **state)
{
        static const struct {
                const char *pat, *s;
                bool match;
        } cases[] = {
                {"*.c", "a.c", true},
                {"*.c", ".c", true},
                {"*.c", "a/b.c", false},
                {"*.c", "a.h", false},
                {"a?c", "abc", true},
                {"a?c", "a/c", false},
                {"?", "\xc3\xa9", true}, /* one code point, two bytes */
                {"\xc3\xa9?", "\xc3\xa9x", true},
                {"[ab]x", "ax", true},
                {"[ab]x", "cx", false},
                {"[!ab]x", "cx", true},
                {"[!ab]x", "ax", false},
                {"[^a]x", "bx", true},
                {"[a-c]", "b", true},
                {"[a-c]", "d", false},
                {"[]]", "]", true},
                {"[!x]", "/", false},
                {"[\xc3\xa9]", "\xc3\xa9", true},
                {"**", "a/b/c", true},
                {"**/x", "x", true},
                {"**/x", "a/b/x", true},
                {"**/x", "ax", false},
                {"a/**/b", "a/b", true},
                {"a/**/b", "a/x/y/b", true},
                {"a/**/b", "a/xb", false},
                {"a/**", "a/x/y", true},
                {"a/**", "a", false},
                {"a**b", "axxb", true}, /* not a whole component: a plain star */
                {"a**b", "ax/b", false},
                {"\\*", "*", true},
                {"\\*", "a", false},
                {"a*/b", "ax/b", true},
                {"a*/b", "ax/y/b", false},
                {"*a*a*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                 false},
                /* Each "**" + "/" once tried every position again: 2^k, then n^k (fuzz-ignore). */
                {"a/**/**/**/**/**/**/**/**/**/**/**/**/**/**/**/**/**/**/**/**/b",
                 "a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a",
                 false},
                {"**/**/**/**/**/**/**/**/**/**/**/**/**/**/**/**/**/**/**/**/b",
                 "a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a",
                 false},
                {"**/a*/**/a*/**/a*/**/a*/**/a*/**/a*/**/a*/**/b",
                 "a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a",
                 false},
                {"**/**/b", "a/b", true},
                {"x*y*z", "xay/z", false},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                bool m = ignore_glob_match(cases[i].pat, strlen(cases[i].pat), cases[i].s,
                                           strlen(cases[i].s));

                if (m != cases[i].match)
                        fail_msg("glob '%s' on '%s': got %d", cases[i].pat, cases[i].s, m);
        }
}

/* --- gitignore files --- */

static void test_ignore_file_match_table(void **state)
{
        static const struct {
                const char *text, *path;
                bool is_dir;
                enum ignore_match want;
        } cases[] = {
                {"*.log\n!keep.log\n", "x.log", false, IGNORE_IGNORE},
                {"*.log\n!keep.log\n", "keep.log", false, IGNORE_WHITELIST},
                {"*.log\n!keep.log\n", "a/keep.log", false, IGNORE_WHITELIST},
                {"*.log\n!keep.log\n", "x.txt", false, IGNORE_NONE},
                {"build/\n", "build", true, IGNORE_IGNORE},
                {"build/\n", "build", false, IGNORE_NONE}, /* directory-only */
                {"build/\n", "a/build", true, IGNORE_IGNORE},
                {"/root.txt\n", "root.txt", false, IGNORE_IGNORE},
                {"/root.txt\n", "a/root.txt", false, IGNORE_NONE}, /* anchored */
                {"a/b\n", "a/b", false, IGNORE_IGNORE},
                {"a/b\n", "x/a/b", false, IGNORE_NONE}, /* a middle slash anchors */
                {"doc/**/*.md\n", "doc/x.md", false, IGNORE_IGNORE},
                {"doc/**/*.md\n", "doc/a/b/x.md", false, IGNORE_IGNORE},
                {"doc/**/*.md\n", "x/doc/y.md", false, IGNORE_NONE},
                {"foo/**\n", "foo/x", false, IGNORE_IGNORE},
                {"foo/**\n", "foo", true, IGNORE_NONE},
                {"**/bar\n", "a/b/bar", false, IGNORE_IGNORE},
                {"**/bar\n", "bar", false, IGNORE_IGNORE}, /* "**" + "/" matches no directory */
                {"**/**/bar\n", "bar", false, IGNORE_IGNORE},
                {"**/bar\n", "xbar", false, IGNORE_NONE},
                {"\\!important\n", "!important", false, IGNORE_IGNORE},
                {"\\#hash\n", "#hash", false, IGNORE_IGNORE},
                {"#comment\n", "#comment", false, IGNORE_NONE},
                {"trail   \n", "trail", false, IGNORE_IGNORE},
                {"sp\\ \n", "sp ", false, IGNORE_IGNORE},
                {"*.{c,h}\n", "x.c", false, IGNORE_IGNORE},
                {"*.{c,h}\n", "x.h", false, IGNORE_IGNORE},
                {"*.{c,h}\n", "x.o", false, IGNORE_NONE},
                {"[abc\n*.o\n", "x.o", false, IGNORE_IGNORE}, /* an invalid line is dropped */
                {"[abc\n", "[abc", false, IGNORE_NONE},
                {"*.txt\n!a.txt\na.txt\n", "a.txt", false, IGNORE_IGNORE}, /* last line wins */
                {"*.txt\n!a.txt\n", "a.txt", false, IGNORE_WHITELIST},
                {"*.o\r\n", "x.o", false, IGNORE_IGNORE},
                {"node_modules\n", "a/node_modules", true, IGNORE_IGNORE},
                {"node_modules\n", "node_modules_x", true, IGNORE_NONE},
                {"*\n!*/\n!*.c\n", "src", true, IGNORE_WHITELIST},
                {"*\n!*/\n!*.c\n", "src/x.h", false, IGNORE_IGNORE},
                {"*\n!*/\n!*.c\n", "src/x.c", false, IGNORE_WHITELIST},
                {"", "x", false, IGNORE_NONE},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_ignore_file_ struct ignore_file *f = NULL;
                enum ignore_match m;

                assert_int_equal(ignore_file_parse(cases[i].text, strlen(cases[i].text), &f), 0);
                m = ignore_file_match(f, cases[i].path, strlen(cases[i].path), cases[i].is_dir);
                if (m != cases[i].want)
                        fail_msg("rules %s on '%s' (dir %d): got %d, want %d", cases[i].text,
                                 cases[i].path, cases[i].is_dir, m, cases[i].want);
        }
}

static void test_ignore_glob_parse_override(void **state)
{
        _cleanup_ignore_file_ struct ignore_file *py = NULL, *neg = NULL, *anch = NULL;
        struct ignore_file *bad = NULL;
        const char *err = NULL;

        assert_int_equal(ignore_glob_parse("*.py", &py, &err), 0);
        assert_int_equal(ignore_override_match(py, "a/b.py", 6, false), IGNORE_WHITELIST);
        assert_int_equal(ignore_override_match(py, "a/b.txt", 7, false), IGNORE_IGNORE);
        assert_int_equal(ignore_override_match(py, "src", 3, true), IGNORE_NONE);
        assert_false(ignore_file_has_anchored(py));

        assert_int_equal(ignore_glob_parse("!*.min.js", &neg, &err), 0);
        assert_int_equal(ignore_override_match(neg, "x.min.js", 8, false), IGNORE_IGNORE);
        assert_int_equal(ignore_override_match(neg, "x.js", 4, false), IGNORE_NONE);

        assert_int_equal(ignore_glob_parse("src/*.c", &anch, &err), 0);
        assert_true(ignore_file_has_anchored(anch));
        assert_int_equal(ignore_override_match(anch, "src/a.c", 7, false), IGNORE_WHITELIST);
        assert_int_equal(ignore_override_match(anch, "x/src/a.c", 9, false), IGNORE_IGNORE);

        assert_int_equal(ignore_glob_parse("[x", &bad, &err), -EINVAL);
        assert_null(bad);
        assert_non_null(strstr(err, "unclosed character class"));
        assert_int_equal(ignore_glob_parse("{a,b", &bad, &err), -EINVAL);
        assert_non_null(strstr(err, "alternate"));
        assert_int_equal(ignore_glob_parse("a\\", &bad, &err), -EINVAL);
}

/* --- rule chains --- */

static void parse_into(struct ignore_dir *d, enum ignore_kind k, const char *text)
{
        assert_int_equal(ignore_file_parse(text, strlen(text), &d->files[k]), 0);
}

static enum ignore_match chain(const struct ignore_dir *d, const char *abs, bool is_dir)
{
        return ignore_dir_match(d, abs, strlen(abs), is_dir);
}

static void test_ignore_dir_match_nested(void **state)
{
        /* "/" (no repository) > "/r" (holds .git) > "/r/a" */
        struct ignore_dir top = {}, repo = {}, sub = {};

        parse_into(&top, IGNORE_KIND_GITIGNORE, "*.txt\n"); /* above the repository */
        parse_into(&top, IGNORE_KIND_IGNORE, "*.tmp\n");
        ignore_dir_link(&top, NULL, 0, false);
        parse_into(&repo, IGNORE_KIND_GITIGNORE, "*.log\n/only-top.c\n");
        parse_into(&repo, IGNORE_KIND_EXCLUDE, "secret\n");
        ignore_dir_link(&repo, &top, 2, true);
        parse_into(&sub, IGNORE_KIND_GITIGNORE, "!keep.log\n");
        parse_into(&sub, IGNORE_KIND_IGNORE, "z.c\n!x.tmp\n");
        parse_into(&sub, IGNORE_KIND_RGIGNORE, "!z.c\n");
        ignore_dir_link(&sub, &repo, 4, false);

        assert_int_equal(chain(&sub, "/r/a/x.log", false), IGNORE_IGNORE);
        /* The nearest file with a matching rule decides. */
        assert_int_equal(chain(&sub, "/r/a/keep.log", false), IGNORE_WHITELIST);
        assert_int_equal(chain(&repo, "/r/keep.log", false), IGNORE_IGNORE);
        /* Anchored to the directory of the file that holds the rule. */
        assert_int_equal(chain(&repo, "/r/only-top.c", false), IGNORE_IGNORE);
        assert_int_equal(chain(&sub, "/r/a/only-top.c", false), IGNORE_NONE);
        /* .git/info/exclude of the repository. */
        assert_int_equal(chain(&sub, "/r/a/secret", false), IGNORE_IGNORE);
        /* .gitignore above the repository's top does not apply inside it; .ignore does. */
        assert_int_equal(chain(&sub, "/r/a/notes.txt", false), IGNORE_NONE);
        assert_int_equal(chain(&sub, "/r/a/y.tmp", false), IGNORE_IGNORE);
        /* Precedence: .rgignore over .ignore over .gitignore. */
        assert_int_equal(chain(&sub, "/r/a/z.c", false), IGNORE_WHITELIST);
        assert_int_equal(chain(&sub, "/r/a/x.tmp", false), IGNORE_WHITELIST);
        /* Outside any repository .gitignore rules do not count at all. */
        assert_int_equal(chain(&top, "/notes.txt", false), IGNORE_NONE);
        assert_int_equal(chain(&top, "/x.tmp", false), IGNORE_IGNORE);
        assert_int_equal(chain(NULL, "/x", false), IGNORE_NONE);

        ignore_dir_release(&sub);
        ignore_dir_release(&repo);
        ignore_dir_release(&top);
}

static void put_file(const char *dir, const char *rel, const char *text)
{
        _cleanup_free_ char *p = path_join(dir, rel);

        assert_non_null(p);
        assert_int_equal(write_file_atomic(p, text, strlen(text), 0644), 0);
}

static void test_ignore_global_excludes(void **state)
{
        char home[] = "/tmp/ptc-test-gexcl-XXXXXX";
        _cleanup_free_ char *xdg = NULL;
        struct ignore_file *f = NULL;
        struct ignore_dir top = {}, repo = {};

        assert_non_null(mkdtemp(home));
        xdg = path_join(home, "xdg");
        assert_non_null(xdg);

        /* Nothing configured, no default file: none. */
        assert_int_equal(ignore_global_excludes_load(home, xdg, &f), 0);
        assert_null(f);
        assert_int_equal(ignore_global_excludes_load(NULL, xdg, &f), 0);
        assert_null(f);

        /* The XDG default. */
        assert_int_equal(mkdir_p(xdg, 0755), 0);
        {
                _cleanup_free_ char *g = path_join(xdg, "git");
                assert_int_equal(mkdir_p(g, 0755), 0);
        }
        put_file(xdg, "git/ignore", "*.swp\n");
        assert_int_equal(ignore_global_excludes_load(home, xdg, &f), 0);
        assert_non_null(f);
        assert_int_equal(ignore_file_size(f), 1);
        f = ignore_file_free(f);

        /* ~/.gitconfig wins over the XDG config; quotes as git writes them; "~/" expanded. */
        put_file(xdg, "git/config", "[core]\n\texcludesfile = ~/from-xdg\n");
        put_file(home, ".gitconfig", "[core]\n  ExcludesFile = \"~/from-home\"\n");
        put_file(home, "from-xdg", "a\nb\n");
        put_file(home, "from-home", "*.bak\n/top.c\nc\n");
        assert_int_equal(ignore_global_excludes_load(home, xdg, &f), 0);
        assert_non_null(f);
        assert_int_equal(ignore_file_size(f), 3);

        /* Applied only inside a repository, below its top directory, with lowest precedence. */
        top.global = f;
        ignore_dir_link(&top, NULL, 0, false);
        parse_into(&repo, IGNORE_KIND_GITIGNORE, "!keep.bak\n");
        ignore_dir_link(&repo, &top, 2, true);
        assert_int_equal(chain(&top, "/x.bak", false), IGNORE_NONE);
        assert_int_equal(chain(&repo, "/r/x.bak", false), IGNORE_IGNORE);
        assert_int_equal(chain(&repo, "/r/keep.bak", false), IGNORE_WHITELIST);
        assert_int_equal(chain(&repo, "/r/top.c", false), IGNORE_IGNORE);
        ignore_dir_release(&repo);
        ignore_dir_release(&top);
        ignore_file_free(f);
        (void) rm_rf(home);
}

/* --- the tool: matching --- */

static void test_search_literal_and_paths(void **state)
{
        struct fixture *f = *state;
        json_t *m;
        json_auto_t *r = NULL, *r2 = NULL;

        puts_(f, "a.txt", "one TODO(bench) here\nnothing\nTODO(bench) again\n");
        puts_(f, "sub/b.txt", "no\nTODO(bench)\n");
        r = search(f, "{\"pattern\": \"TODO\\\\(bench\\\\)\"}");
        assert_null(error_of(r));
        assert_int_equal(total(r), 3);
        m = list(r, "matches");
        assert_int_equal(json_array_size(m), 3);
        assert_string_equal(json_string_value(json_object_get(json_array_get(m, 0), "path")),
                            "./a.txt");
        assert_int_equal(json_integer_value(json_object_get(json_array_get(m, 1), "line")), 3);
        assert_string_equal(json_string_value(json_object_get(json_array_get(m, 2), "path")),
                            "./sub/b.txt");
        assert_string_equal(json_string_value(json_object_get(json_array_get(m, 2), "content")),
                            "TODO(bench)");
        assert_null(json_object_get(r, "truncated"));
        assert_null(json_object_get(r, "_hint"));

        /* An absolute root is printed absolute. */
        r2 = search(f, "{\"pattern\": \"again\", \"path\": \"%s\"}", f->dir);
        assert_int_equal(total(r2), 1);
        assert_true(strncmp(json_string_value(json_object_get(
                                    json_array_get(list(r2, "matches"), 0), "path")),
                            f->dir, strlen(f->dir)) == 0);
}

static void test_search_regex_lines(void **state)
{
        struct fixture *f = *state;
        json_auto_t *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL, *g = NULL;

        puts_(f, "r.txt", "foo\nfooo\nxfoo\na\nb\na b\nend");
        a = search(f, "{\"pattern\": \"^fo+$\", \"output_mode\": \"count\"}");
        assert_int_equal(total(a), 2);
        /* A match never spans lines: \s does not take the newline. */
        b = search(f, "{\"pattern\": \"a\\\\sb\"}");
        assert_int_equal(total(b), 1);
        assert_int_equal(
                json_integer_value(json_object_get(json_array_get(list(b, "matches"), 0), "line")),
                6);
        /* The last line has no newline and still counts; $ matches at its end. */
        c = search(f, "{\"pattern\": \"d$\"}");
        assert_int_equal(total(c), 1);
        /* The empty pattern matches every line (7 of them, the last without newline). */
        d = search(f, "{\"pattern\": \"\", \"output_mode\": \"count\"}");
        assert_int_equal(total(d), 7);
        /* A regex with a required literal (prefilter path) and one without. */
        e = search(f, "{\"pattern\": \"\\\\w+oo\\\\b\", \"output_mode\": \"count\"}");
        assert_int_equal(total(e), 3);
        g = search(f, "{\"pattern\": \"[ab]\", \"output_mode\": \"count\"}");
        assert_int_equal(total(g), 3);
}

static void test_search_invalid_regex_is_an_error(void **state)
{
        struct fixture *f = *state;
        json_auto_t *r = NULL, *n = NULL;

        puts_(f, "x.txt", "foo(\n");
        r = search(f, "{\"pattern\": \"foo(bar\"}");
        assert_non_null(error_of(r));
        assert_non_null(strstr(error_of(r), "Invalid regex at offset 7"));
        assert_non_null(strstr(error_of(r), "missing closing parenthesis"));
        assert_int_equal(total(r), 0);
        n = search(f, "{\"pattern\": \"a\\nb\"}");
        assert_non_null(strstr(error_of(n), "not allowed"));
}

static void test_search_hostile_regex_returns(void **state)
{
        struct fixture *f = *state;
        char line[20002];
        json_auto_t *r = NULL;
        usec_t t0 = now_usec();

        memset(line, 'a', sizeof(line) - 2);
        line[sizeof(line) - 2] = 'b';
        line[sizeof(line) - 1] = '\n';
        put(f, "evil.txt", line, sizeof(line));
        r = search(f, "{\"pattern\": \"(a+)+$\"}");
        assert_non_null(error_of(r));
        assert_non_null(strstr(error_of(r), "too expensive"));
        assert_non_null(strstr(error_of(r), "evil.txt"));
        assert_true(now_usec() - t0 < 10 * USEC_PER_SEC); /* hang guard */
}

static void test_search_binary_skipped(void **state)
{
        struct fixture *f = *state;
        size_t n = 600 * 1024;
        char *big = malloc(n);
        json_auto_t *r = NULL;

        assert_non_null(big);
        /* A match first, the NUL byte chunks later: the whole file is binary. */
        memset(big, 'x', n);
        memcpy(big, "needle\n", 7);
        big[n - 10] = '\0';
        put(f, "late.bin", big, n);
        put(f, "early.bin", "needle\n\0needle\n", 15);
        puts_(f, "text.txt", "needle\n");
        free(big);
        r = search(f, "{\"pattern\": \"needle\", \"output_mode\": \"files_only\"}");
        assert_int_equal(total(r), 1);
        assert_string_equal(json_string_value(json_array_get(list(r, "files"), 0)), "./text.txt");
}

/* Lines "L<n> ..." with "needle" on the lines of @hits; a file larger than one chunk. */
static void put_numbered(struct fixture *f, const char *rel, size_t lines, const size_t *hits,
                         size_t n_hits)
{
        size_t cap = lines * 40 + 64, len = 0, h = 0;
        char *p = malloc(cap);

        assert_non_null(p);
        for (size_t i = 1; i <= lines; i++) {
                bool hit = h < n_hits && hits[h] == i;

                len += (size_t) snprintf(p + len, cap - len, "L%zu %s\n", i,
                                         hit ? "has the needle" : "plain filler text here");
                if (hit)
                        h++;
        }
        put(f, rel, p, len);
        free(p);
}

static void test_search_chunk_boundaries_and_context(void **state)
{
        struct fixture *f = *state;
        /* ~30 bytes a line: 256 KiB chunks end near lines 8700, 17400, ... */
        static const size_t hits[] = {1, 5, 7, 8737, 8738, 8739, 17000, 17476, 30000, 40000};
        json_auto_t *all = NULL, *ctx = NULL, *page = NULL;
        json_t *m;

        put_numbered(f, "big.txt", 40000, hits, ELEMENTSOF(hits));
        all = search(f, "{\"pattern\": \"needle\", \"limit\": 100}");
        assert_int_equal(total(all), ELEMENTSOF(hits));
        m = list(all, "matches");
        for (size_t i = 0; i < ELEMENTSOF(hits); i++)
                assert_int_equal(json_integer_value(json_object_get(json_array_get(m, i), "line")),
                                 (json_int_t) hits[i]);

        /* Context 2: merged ranges, 40000 is the last line. Expected entries computed here. */
        ctx = search(f, "{\"pattern\": \"needle\", \"context\": 2, \"limit\": 1000}");
        {
                size_t want = 0, last = 0, k = 0;

                for (size_t i = 0; i < ELEMENTSOF(hits); i++) {
                        size_t lo = hits[i] > 2 ? hits[i] - 2 : 1, hi = MIN(hits[i] + 2, 40000);

                        if (lo <= last)
                                lo = last + 1;
                        want += hi >= lo ? hi - lo + 1 : 0;
                        last = MAX(last, hi);
                }
                assert_int_equal(total(ctx), (json_int_t) want);
                m = list(ctx, "matches");
                assert_int_equal(json_array_size(m), want);
                /* Strictly increasing line numbers: no duplicates across chunk boundaries. */
                for (size_t i = 1; i < json_array_size(m); i++)
                        assert_true(
                                json_integer_value(json_object_get(json_array_get(m, i), "line")) >
                                json_integer_value(
                                        json_object_get(json_array_get(m, i - 1), "line")));
                /* Context lines carry their own text. */
                for (k = 0; k < json_array_size(m); k++)
                        if (json_integer_value(json_object_get(json_array_get(m, k), "line")) ==
                            8736)
                                break;
                assert_true(k < json_array_size(m));
                assert_string_equal(
                        json_string_value(json_object_get(json_array_get(m, k), "content")),
                        "L8736 plain filler text here");
        }
        /* A page in the middle has the same entries as the whole list. */
        page = search(f, "{\"pattern\": \"needle\", \"context\": 2, \"limit\": 3, \"offset\": 10}");
        assert_int_equal(json_array_size(list(page, "matches")), 3);
        assert_true(json_equal(json_array_get(list(page, "matches"), 0),
                               json_array_get(list(ctx, "matches"), 10)));
        assert_true(json_equal(json_array_get(list(page, "matches"), 2),
                               json_array_get(list(ctx, "matches"), 12)));
}

static void test_search_long_line_split(void **state)
{
        struct fixture *f = *state;
        size_t n = 9u * 1024 * 1024;
        char *p = malloc(n + 32);
        json_auto_t *r = NULL, *c = NULL;
        json_t *m;

        assert_non_null(p);
        /* One line longer than the 8 MiB buffer, the needle at both ends, then a short line. */
        memset(p, 'y', n);
        memcpy(p, "needle", 6);
        memcpy(p + n - 6, "needle", 6);
        memcpy(p + n, "\nneedle 2\n", 10);
        put(f, "long.txt", p, n + 10);
        free(p);
        r = search(f, "{\"pattern\": \"needle\", \"output_mode\": \"count\"}");
        assert_int_equal(total(r), 2);
        c = search(f, "{\"pattern\": \"needle\"}");
        m = list(c, "matches");
        assert_int_equal(json_array_size(m), 2);
        assert_int_equal(json_integer_value(json_object_get(json_array_get(m, 1), "line")), 2);
        /* Result text is cut to 500 characters. */
        assert_int_equal(
                strlen(json_string_value(json_object_get(json_array_get(m, 0), "content"))), 500);
}

static void test_search_content_clipped_and_redacted(void **state)
{
        struct fixture *f = *state;
        _cleanup_(redactor_freep) struct redactor *red = NULL;
        char line[2000];
        const char *c;
        json_auto_t *r = NULL;

        assert_int_equal(redactor_new(&red), 0);
        assert_int_equal(redactor_add_secret(red, "s3cr3t-VALUE-for-test"), 0);
        f->ctx.redactor = red;
        /* 600 two-byte characters: the cut counts characters, not bytes. */
        for (size_t i = 0; i < 600; i++)
                memcpy(line + 2 * i, "\xc3\xa9", 2);
        line[1200] = '\n';
        put(f, "wide.txt", line, 1201);
        puts_(f, "sec.txt", "token s3cr3t-VALUE-for-test here\n");
        r = search(f, "{\"pattern\": \"\xc3\xa9|s3cr3t\", \"limit\": 5}");
        f->ctx.redactor = NULL;
        assert_int_equal(total(r), 2);
        c = json_string_value(json_object_get(json_array_get(list(r, "matches"), 0), "content"));
        assert_null(strstr(c, "s3cr3t-VALUE"));
        assert_non_null(strstr(c, "***"));
        c = json_string_value(json_object_get(json_array_get(list(r, "matches"), 1), "content"));
        assert_int_equal(strlen(c), 1000);
}

/* --- totals, pages, order --- */

static void test_search_total_count_and_pages(void **state)
{
        struct fixture *f = *state;
        json_auto_t *first = NULL, *last = NULL, *cnt = NULL, *fo = NULL;
        const char *hint;

        for (int i = 0; i < 12; i++) {
                char name[32];

                (void) snprintf(name, sizeof(name), "d/f%02d.txt", i);
                puts_(f, name, "hit\nhit\nmiss\nhit\nhit\nhit\nhit\nhit\nhit\nhit\nhit\n");
        }
        first = search(f, "{\"pattern\": \"hit\", \"limit\": 50}");
        assert_int_equal(total(first), 120);
        assert_int_equal(json_array_size(list(first, "matches")), 50);
        assert_true(json_is_true(json_object_get(first, "truncated")));
        hint = json_string_value(json_object_get(first, "_hint"));
        assert_string_equal(hint, "Results truncated. Use offset=50 to see more, or narrow with a "
                                  "more specific pattern or file_glob.");
        last = search(f, "{\"pattern\": \"hit\", \"limit\": 50, \"offset\": 100}");
        assert_int_equal(total(last), 120);
        assert_int_equal(json_array_size(list(last, "matches")), 20);
        assert_null(json_object_get(last, "truncated"));
        assert_string_equal(json_string_value(json_object_get(
                                    json_array_get(list(last, "matches"), 0), "path")),
                            "./d/f10.txt");
        cnt = search(f, "{\"pattern\": \"hit\", \"output_mode\": \"count\", \"limit\": 2, "
                        "\"offset\": \"3\"}");
        assert_int_equal(total(cnt), 120);
        assert_int_equal(json_object_size(list(cnt, "counts")), 2);
        assert_int_equal(json_integer_value(json_object_get(list(cnt, "counts"), "./d/f03.txt")),
                         10);
        fo = search(f, "{\"pattern\": \"hit\", \"output_mode\": \"files_only\", \"limit\": 5, "
                       "\"offset\": 10}");
        assert_int_equal(total(fo), 12);
        assert_int_equal(json_array_size(list(fo, "files")), 2);
        assert_string_equal(json_string_value(json_array_get(list(fo, "files"), 1)), "./d/f11.txt");
}

static void set_mtime(struct fixture *f, const char *rel, time_t t)
{
        char path[512];
        struct timespec ts[2] = {{.tv_sec = t}, {.tv_sec = t}};

        (void) snprintf(path, sizeof(path), "%s/%s", f->dir, rel);
        assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static void test_search_files_target_newest_first(void **state)
{
        struct fixture *f = *state;
        json_auto_t *r = NULL, *bare = NULL, *bad = NULL;
        json_t *l;

        puts_(f, "old.py", "");
        puts_(f, "new.py", "");
        puts_(f, "b/tie.py", "");
        puts_(f, "a/tie.py", "");
        puts_(f, "skip.txt", "");
        set_mtime(f, "old.py", 1000000);
        set_mtime(f, "new.py", 3000000);
        set_mtime(f, "a/tie.py", 2000000);
        set_mtime(f, "b/tie.py", 2000000);
        r = search(f, "{\"pattern\": \"*.py\", \"target\": \"files\"}");
        assert_int_equal(total(r), 4);
        l = list(r, "files");
        assert_string_equal(json_string_value(json_array_get(l, 0)), "./new.py");
        assert_string_equal(json_string_value(json_array_get(l, 1)), "./a/tie.py");
        assert_string_equal(json_string_value(json_array_get(l, 2)), "./b/tie.py");
        assert_string_equal(json_string_value(json_array_get(l, 3)), "./old.py");
        /* A bare name matches names ending in it (the seed's "*" prefix); legacy "find". */
        bare = search(f, "{\"pattern\": \"ie.py\", \"target\": \"find\"}");
        assert_int_equal(total(bare), 2);
        bad = search(f, "{\"pattern\": \"[x\", \"target\": \"files\"}");
        assert_non_null(strstr(error_of(bad), "unclosed character class"));
}

/* --- the walk's rules --- */

static void test_search_ignore_rules_in_repo(void **state)
{
        struct fixture *f = *state;
        char path[512];
        json_auto_t *r = NULL, *g = NULL, *sub = NULL;
        json_t *c;

        (void) snprintf(path, sizeof(path), "%s/repo/.git/info", f->dir);
        assert_int_equal(mkdir_p(path, 0755), 0);
        puts_(f, "repo/.git/info/exclude", "excluded.txt\n");
        puts_(f, "repo/.gitignore", "*.log\n!keep.log\nbuild/\n/top.txt\n");
        puts_(f, "repo/src/.gitignore", "gen.c\n");
        puts_(f, "repo/.ignore", "vendor/\n");
        puts_(f, "repo/keep.log", "x\n");
        puts_(f, "repo/drop.log", "x\n");
        puts_(f, "repo/build/out.txt", "x\n");
        puts_(f, "repo/top.txt", "x\n");
        puts_(f, "repo/src/top.txt", "x\n");
        puts_(f, "repo/src/gen.c", "x\n");
        puts_(f, "repo/src/main.c", "x\n");
        puts_(f, "repo/vendor/v.c", "x\n");
        puts_(f, "repo/excluded.txt", "x\n");
        puts_(f, "repo/.hidden/h.txt", "x\n");
        puts_(f, "repo/.dot.txt", "x\n");
        r = search(f, "{\"pattern\": \"x\", \"path\": \"repo\", \"output_mode\": \"count\"}");
        c = list(r, "counts");
        assert_int_equal(total(r), 3);
        assert_non_null(json_object_get(c, "repo/keep.log"));
        assert_non_null(json_object_get(c, "repo/src/top.txt"));
        assert_non_null(json_object_get(c, "repo/src/main.c"));

        /* file_glob whitelists like rg --glob: even an ignored or hidden file. */
        g = search(f, "{\"pattern\": \"x\", \"path\": \"repo\", \"file_glob\": \"*.txt\", "
                      "\"output_mode\": \"files_only\"}");
        assert_int_equal(total(g), 4); /* top, src/top, excluded, .dot (build/ stays pruned) */

        /* Searching below the top still applies the parent's rules. */
        sub = search(f, "{\"pattern\": \"x\", \"path\": \"repo/src\", \"output_mode\": \"count\"}");
        assert_int_equal(total(sub), 2);
}

static void test_search_no_repo_no_gitignore(void **state)
{
        struct fixture *f = *state;
        json_auto_t *r = NULL;

        /* Without a .git anywhere above, .gitignore is not honoured (rg's default). */
        puts_(f, "plain/.gitignore", "*.log\n");
        puts_(f, "plain/a.log", "x\n");
        r = search(f, "{\"pattern\": \"x\", \"path\": \"plain\", \"output_mode\": \"count\"}");
        assert_int_equal(total(r), 1);
}

static void test_search_symlinks_not_followed(void **state)
{
        struct fixture *f = *state;
        char a[512], b[512];
        json_auto_t *r = NULL, *fl = NULL;

        puts_(f, "t/real.txt", "x\n");
        (void) snprintf(a, sizeof(a), "%s/t/loop", f->dir);
        assert_int_equal(symlink(".", a), 0);
        (void) snprintf(b, sizeof(b), "%s/t/link.txt", f->dir);
        assert_int_equal(symlink("real.txt", b), 0);
        r = search(f, "{\"pattern\": \"x\", \"path\": \"t\", \"output_mode\": \"count\"}");
        assert_int_equal(total(r), 1);
        fl = search(f, "{\"pattern\": \"*\", \"target\": \"files\", \"path\": \"t\"}");
        assert_int_equal(total(fl), 1);
}

static void test_search_path_not_found_similar(void **state)
{
        struct fixture *f = *state;
        json_auto_t *r = NULL, *n = NULL;

        puts_(f, "repo/x.txt", "x\n");
        puts_(f, "report.md", "x\n");
        puts_(f, "zzz", "x\n");
        r = search(f, "{\"pattern\": \"x\", \"path\": \"rep\"}");
        assert_string_equal(error_of(r), "Path not found: rep. Similar paths: ./repo, ./report.md");
        assert_int_equal(total(r), 0);
        n = search(f, "{\"pattern\": \"x\", \"path\": \"nothing/here\"}");
        assert_string_equal(error_of(n), "Path not found: nothing/here");
}

static void test_search_bad_arguments(void **state)
{
        struct fixture *f = *state;
        json_auto_t *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL;

        a = search(f, "{\"target\": \"content\"}");
        assert_non_null(strstr(error_of(a), "missing required field 'pattern'"));
        b = search(f, "{\"pattern\": \"x\", \"target\": \"dirs\"}");
        assert_non_null(strstr(error_of(b), "unknown target"));
        c = search(f, "{\"pattern\": \"x\", \"output_mode\": \"lines\"}");
        assert_non_null(strstr(error_of(c), "unknown output_mode"));
        d = search(f, "{\"pattern\": \"x\", \"limit\": \"many\"}");
        assert_non_null(strstr(error_of(d), "'limit' must be an integer"));
        e = search(f, "{\"pattern\": \"x\", \"offset\": 100000}");
        assert_non_null(strstr(error_of(e), "offset must be below"));
}

static void test_search_interrupted(void **state)
{
        struct fixture *f = *state;
        int p[2];
        json_auto_t *r = NULL, *c = NULL;

        puts_(f, "a.txt", "x\n");
        f->ctx.deadline = now_usec() - 1;
        r = search(f, "{\"pattern\": \"x\"}");
        f->ctx.deadline = USEC_INFINITY;
        assert_non_null(strstr(error_of(r), "interrupted"));

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_int_equal(write(p[1], "x", 1), 1);
        f->ctx.cancel_fd = p[0];
        c = search(f, "{\"pattern\": \"x\"}");
        f->ctx.cancel_fd = -1;
        assert_non_null(strstr(error_of(c), "interrupted"));
        (void) close(p[0]);
        (void) close(p[1]);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ignore_glob_match_table),
                cmocka_unit_test(test_ignore_file_match_table),
                cmocka_unit_test(test_ignore_glob_parse_override),
                cmocka_unit_test(test_ignore_dir_match_nested),
                cmocka_unit_test(test_ignore_global_excludes),
                cmocka_unit_test_setup_teardown(test_search_literal_and_paths, setup, teardown),
                cmocka_unit_test_setup_teardown(test_search_regex_lines, setup, teardown),
                cmocka_unit_test_setup_teardown(test_search_invalid_regex_is_an_error, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_search_hostile_regex_returns, setup, teardown),
                cmocka_unit_test_setup_teardown(test_search_binary_skipped, setup, teardown),
                cmocka_unit_test_setup_teardown(test_search_chunk_boundaries_and_context, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_search_long_line_split, setup, teardown),
                cmocka_unit_test_setup_teardown(test_search_content_clipped_and_redacted, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_search_total_count_and_pages, setup, teardown),
                cmocka_unit_test_setup_teardown(test_search_files_target_newest_first, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_search_ignore_rules_in_repo, setup, teardown),
                cmocka_unit_test_setup_teardown(test_search_no_repo_no_gitignore, setup, teardown),
                cmocka_unit_test_setup_teardown(test_search_symlinks_not_followed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_search_path_not_found_similar, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_search_bad_arguments, setup, teardown),
                cmocka_unit_test_setup_teardown(test_search_interrupted, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
