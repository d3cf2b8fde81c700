/* SPDX-License-Identifier: MIT */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include "../lib/ptc-test.h"
/* clang-format on */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "core/edit/fuzzy-match.h"

/*
 * Expected values come from the seed's Python (tools/fuzzy_match.py of the
 * seed era, difflib): each case was run there too.
 */

struct rep {
        int r;
        char *content; /* NULL on an error text */
        size_t len, count;
        const char *strategy;
        char *error;
};

static struct rep replace_flags(const char *content, const char *old, const char *new_text,
                                bool all, unsigned flags)
{
        struct rep x = {};

        x.r = fuzzy_replace_flags(content, strlen(content), old, strlen(old), new_text,
                                  strlen(new_text), all, flags, &x.content, &x.len, &x.count,
                                  &x.strategy, &x.error);
        return x;
}

static struct rep replace(const char *content, const char *old, const char *new_text, bool all)
{
        return replace_flags(content, old, new_text, all, 0);
}

static void rep_release(struct rep *x)
{
        free(x->content);
        free(x->error);
}

/* Replacement succeeds with @strategy, @count replacements and exactly @want. */
static void expect_ok(const char *content, const char *old, const char *new_text, bool all,
                      const char *strategy, size_t count, const char *want)
{
        struct rep x = replace(content, old, new_text, all);

        assert_int_equal(x.r, 0);
        if (x.error)
                fail_msg("unexpected error: %s", x.error);
        assert_non_null(x.content);
        assert_string_equal(x.strategy, strategy);
        assert_int_equal(x.count, count);
        assert_int_equal(x.len, strlen(want));
        assert_string_equal(x.content, want);
        rep_release(&x);
}

static void expect_error(const char *content, const char *old, const char *new_text, bool all,
                         const char *error)
{
        struct rep x = replace(content, old, new_text, all);

        assert_int_equal(x.r, 0);
        assert_null(x.content);
        assert_non_null(x.error);
        assert_string_equal(x.error, error);
        rep_release(&x);
}

/* fuzzy_find()'s deciding strategy and its spans as "start-end,..." */
static void expect_find(const char *content, const char *old, const char *strategy,
                        const char *spans)
{
        struct fuzzy_result fr;
        char buf[256] = "";
        size_t k = 0;

        assert_int_equal(fuzzy_find(content, strlen(content), old, strlen(old), &fr), 0);
        if (!strategy)
                assert_null(fr.strategy);
        else
                assert_string_equal(fr.strategy ?: "(none)", strategy);
        for (size_t i = 0; i < fr.n_spans; i++)
                k += (size_t) snprintf(buf + k, sizeof(buf) - k, "%s%zu-%zu", i ? "," : "",
                                       fr.spans[i].start, fr.spans[i].end);
        assert_string_equal(buf, spans);
        fuzzy_result_release(&fr);
}

#define NOT_FOUND "Could not find a match for old_string in the file"
#define AMBIGUOUS(n)                                                                           \
        "Found " #n " matches for old_string. Provide more context to make it unique, or use " \
        "replace_all=True."

/* --- one case per strategy, that no earlier strategy matches --- */

static void test_fuzzy_replace_exact(void **state)
{
        expect_ok("a = 1\nb = 2\n", "b = 2", "b = 3", false, "exact", 1, "a = 1\nb = 3\n");
        /* NUL bytes and invalid UTF-8 are just bytes. */
        {
                static const char c[] = "x\0\xff\xfey";
                char *out = NULL, *err = NULL;
                const char *st = NULL;
                size_t len = 0, cnt = 0;

                assert_int_equal(fuzzy_replace(c, sizeof(c) - 1, "\0\xff", 2, "Z", 1, false, &out,
                                               &len, &cnt, &st, &err),
                                 0);
                assert_null(err);
                assert_int_equal(len, 4);
                assert_memory_equal(out, "xZ\xfey", 4);
                free(out);
        }
}

static void test_fuzzy_replace_line_trimmed(void **state)
{
        expect_find("    foo()\n    bar()\n", "foo()\nbar()", "line_trimmed", "0-19");
        expect_ok("    foo()\n    bar()\n", "foo()\nbar()", "X", false, "line_trimmed", 1, "X\n");
        /* The model's indentation is written verbatim (no re-indent in the seed era). */
        expect_ok("\tif x:\n\t\ty()\n", "if x:\n    y()", "if z:\n    y()", false, "line_trimmed",
                  1, "if z:\n    y()\n");
}

static void test_fuzzy_replace_whitespace_normalized(void **state)
{
        expect_ok("x  =  1\n", "x = 1", "y", false, "whitespace_normalized", 1, "y\n");
        /* A match ending in a word does not swallow the spaces after it (upstream #52491). */
        expect_ok("foo   bar baz", "foo bar", "X", false, "whitespace_normalized", 1, "X baz");
        expect_ok("a\t\tb  c", "a b", "Q", false, "whitespace_normalized", 1, "Q  c");
}

static void test_fuzzy_replace_indentation_flexible_is_subsumed(void **state)
{
        /*
         * Whatever matches with leading whitespace ignored also matches with
         * both sides stripped, so line_trimmed always decides first: the
         * strategy is kept for order's sake, as in the seed.
         */
        expect_find("        deep()\n        er()\n", "  deep()\n  er()", "line_trimmed", "0-27");
}

static void test_fuzzy_replace_escape_normalized(void **state)
{
        expect_ok("a\nb\n", "a\\nb", "Z", false, "escape_normalized", 1, "Z\n");
        expect_ok("x\ty\n", "x\\ty", "T", false, "escape_normalized", 1, "T\n");
        /* No escape in old_string: the strategy is skipped. */
        expect_error("a\nb\n", "q", "r", false, NOT_FOUND);
}

static void test_fuzzy_replace_trimmed_boundary_is_subsumed(void **state)
{
        /* Trimmed first and last lines, verbatim middle: line_trimmed matches it too. */
        expect_find("  head\n mid \n  tail  \n", "head\n mid \ntail", "line_trimmed", "0-21");
}

static void test_fuzzy_replace_unicode_normalized(void **state)
{
        /* Smart quotes in the file, ASCII in old_string. */
        expect_ok("say \xe2\x80\x9chi\xe2\x80\x9d\n", "say \"hi\"", "say \"yo\"", false,
                  "unicode_normalized", 1, "say \"yo\"\n");
        /* Em dash (3 bytes) against "--": positions map back to the original bytes. */
        expect_find("a \xe2\x80\x94 b\nz", "a -- b", "unicode_normalized", "0-7");
        expect_ok("a \xe2\x80\x94 b\n", "a -- b", "c", false, "unicode_normalized", 1, "c\n");
        /* En dash, ellipsis, NBSP, and the other way round (unicode in old_string). */
        expect_ok("wait...\n", "wait\xe2\x80\xa6", "ok", false, "unicode_normalized", 1, "ok\n");
        expect_ok("1\xe2\x80\x93"
                  "2\xc2\xa0units\n",
                  "1-2 units", "3", false, "unicode_normalized", 1, "3\n");
        /* Then line-trimmed on the normalised text. */
        expect_ok("   it\xe2\x80\x99s\n  done\n", "it's\ndone", "ok", false, "unicode_normalized",
                  1, "ok\n");
}

static void test_fuzzy_replace_block_anchor(void **state)
{
        expect_ok("def f():\n    x = 1\n    y = 2\n    return x\n",
                  "def f():\n    x = 10\n    y = 2\n    return x", "def f():\n    pass", false,
                  "block_anchor", 1, "def f():\n    pass\n");
}

static void test_fuzzy_replace_block_anchor_thresholds(void **state)
{
        /* One candidate: middle ratio 0.50 is enough ... */
        expect_ok("start\nabcdefghij\nend\n", "start\nabcdeXXXXX\nend", "N", false, "block_anchor",
                  1, "N\n");
        /* ... 0.40 is not (context_aware then takes it: 2 of 3 lines match). */
        expect_ok("start\nabcdefghij\nend\n", "start\nabcdXXXXXX\nend", "N", false, "context_aware",
                  1, "N\n");
        /* Two candidates need 0.70: at 0.50 block_anchor finds none. */
        expect_ok("start\nabcdefghij\nend\nstart\nabcdefghij\nend\n", "start\nabcdeXXXXX\nend", "N",
                  true, "context_aware", 2, "N\nN\n");
        expect_ok("start\nabcdefghij\nend\nstart\nabcdefghij\nend\n", "start\nabcdefghiX\nend", "N",
                  true, "block_anchor", 2, "N\nN\n");
        expect_error("start\nabcdefghij\nend\nstart\nabcdefghij\nend\n", "start\nabcdeXXXXX\nend",
                     "N", false, AMBIGUOUS(2));
}

static void test_fuzzy_replace_context_aware(void **state)
{
        /* The last line differs, so no anchor; 2 of 3 lines are >= 0.80 similar. */
        expect_ok("alpha one\nbeta two\ngamma three\n", "alpha one\nbeta twx\ngamma thrXX", "Q",
                  false, "context_aware", 1, "Q\n");
        /* Only 1 of 3 similar: no match. */
        expect_error("alpha one\nbeta two\ngamma three\n", "alpha one\nzzzz\nqqqq", "Q", false,
                     NOT_FOUND);
}

/* --- the rules around the strategies --- */

static void test_fuzzy_replace_errors(void **state)
{
        expect_error("abc", "", "x", false, "old_string cannot be empty");
        expect_error("abc", "b", "b", false, "old_string and new_string are identical");
        expect_error("abc", "zzz", "y", false, NOT_FOUND);
}

static void test_fuzzy_replace_ambiguity_and_replace_all(void **state)
{
        expect_error("x = 1\nx = 1\n", "x = 1", "y", false, AMBIGUOUS(2));
        expect_ok("x = 1\nx = 1\n", "x = 1", "y", true, "exact", 2, "y\ny\n");
        /* The seed's overlapping scan: "aa" occurs twice in "aaa" ... */
        expect_error("aaa", "aa", "X", false, AMBIGUOUS(2));
        /* ... and replace_all skips the overlapping one. */
        expect_ok("aaaa", "aa", "X", true, "exact", 2, "XX");
        expect_ok("aaa", "aa", "X", true, "exact", 1, "Xa");
        /* Line strategies replace all blocks too. */
        expect_ok("  k\n  j\nz\n k\n j\n", "k\nj", "m", true, "line_trimmed", 2, "m\nz\nm\n");
}

static void test_fuzzy_replace_escape_drift(void **state)
{
        expect_error("def f():\n    s = 'it'\n    return s\n",
                     "def f():\n    s = \\'it\\'\n    return s",
                     "def f():\n    s = \\'its\\'\n    return s", false,
                     "Escape-drift detected: old_string and new_string contain the literal "
                     "sequence \"\\\\'\" but the matched region of the file does not. This is "
                     "almost always a tool-call serialization artifact where an apostrophe or "
                     "quote got prefixed with a spurious backslash. Re-read the file with "
                     "read_file and pass old_string/new_string without backslash-escaping \"'\" "
                     "characters.");
        expect_error("  x = \"a\"\n  y = 1\n  z = 2\n", "x = \\\"a\\\"\n  y = 1\n  z = 2",
                     "x = \\\"b\\\"\n  y = 1\n  z = 2", false,
                     "Escape-drift detected: old_string and new_string contain the literal "
                     "sequence '\\\\\"' but the matched region of the file does not. This is "
                     "almost always a tool-call serialization artifact where an apostrophe or "
                     "quote got prefixed with a spurious backslash. Re-read the file with "
                     "read_file and pass old_string/new_string without backslash-escaping '\"' "
                     "characters.");
        /* The file really has the escapes: fine. */
        expect_ok("  s = 'it\\'s'  \n  t = 1\n", "s = 'it\\'s'\nt = 1", "s = 'it\\'ll'\nt = 1",
                  false, "line_trimmed", 1, "s = 'it\\'ll'\nt = 1\n");
        /* Exact matches are never checked. */
        expect_ok("a \\' b", "a \\' b", "c \\' d", false, "exact", 1, "c \\' d");
}

static void test_fuzzy_replace_crlf(void **state)
{
        struct rep x;

        /* The seed: an LF old_string matches a CRLF file line-trimmed; LFs written as sent. */
        expect_ok("a\r\nb\r\nc\r\n", "a\nb", "x\ny", false, "line_trimmed", 1, "x\ny\nc\r\n");
        /* FUZZY_KEEP_CRLF: the replacement gets the file's CRLF, the block's last CR is kept. */
        x = replace_flags("a\r\nb\r\nc\r\n", "a\nb", "x\ny", false, FUZZY_KEEP_CRLF);
        assert_int_equal(x.r, 0);
        assert_string_equal(x.content, "x\r\ny\r\nc\r\n");
        rep_release(&x);
        x = replace_flags("a\r\nb\r\nc\r\n", "a\nb", "", false, FUZZY_KEEP_CRLF);
        assert_string_equal(x.content, "\r\nc\r\n");
        rep_release(&x);
        /* An LF file is left alone by the flag. */
        x = replace_flags("a\nb\nc\n", "b", "1\n2", false, FUZZY_KEEP_CRLF);
        assert_string_equal(x.content, "a\n1\n2\nc\n");
        rep_release(&x);
}

static void test_fuzzy_find_caps(void **state)
{
        struct fuzzy_result fr;
        char *big = malloc(FUZZY_PATTERN_MAX + 1);

        assert_non_null(big);
        memset(big, 'a', FUZZY_PATTERN_MAX + 1);
        assert_int_equal(fuzzy_find("aaa", 3, big, FUZZY_PATTERN_MAX + 1, &fr), -E2BIG);
        free(big);
        /* More than FUZZY_LINES_MAX lines, once a line strategy is needed. */
        big = malloc(FUZZY_LINES_MAX + 10);
        assert_non_null(big);
        memset(big, '\n', FUZZY_LINES_MAX + 10);
        assert_int_equal(fuzzy_find(big, FUZZY_LINES_MAX + 10, "zz", 2, &fr), -E2BIG);
        /* ... but an exact match needs no lines. */
        big[100] = 'q';
        assert_int_equal(fuzzy_find(big, FUZZY_LINES_MAX + 10, "q", 1, &fr), 0);
        assert_string_equal(fr.strategy, "exact");
        assert_int_equal(fr.n_spans, 1);
        fuzzy_result_release(&fr);
        free(big);
}

/* --- ratio, did you mean, diff --- */

static void test_fuzzy_ratio_difflib(void **state)
{
        /* Exact doubles of difflib.SequenceMatcher(None, a, b).ratio(). */
        assert_true(fuzzy_ratio("abcd", 4, "bcde", 4) == 0.75);
        assert_true(fuzzy_ratio("", 0, "", 0) == 1.0);
        assert_true(fuzzy_ratio("abc", 3, "", 0) == 0.0);
        /* Code points, not bytes: "é" vs "e" is one different character each. */
        assert_true(fuzzy_ratio("caf\xc3\xa9", 5, "cafe", 4) == 0.75);
        {
                /* autojunk: b has >= 200 elements, so its popular characters are junk. */
                char a[221], b[221];

                memset(a, 'x', 20);
                memset(b + 200, 'x', 20);
                for (size_t i = 0; i < 200; i++)
                        a[20 + i] = b[i] = i % 2 ? 'b' : 'a';
                assert_true(fuzzy_ratio(a, 220, b, 220) == 0.0);
        }
        {
                char a[62], b[212];

                memset(a, ' ', 50);
                memcpy(a + 50, "hello world", 11);
                memcpy(b, "hello world", 11);
                memset(b + 11, ' ', 200);
                assert_true(fuzzy_ratio(a, 61, b, 211) == 0.08088235294117647);
        }
}

static void test_fuzzy_did_you_mean(void **state)
{
        char *s;

        s = fuzzy_did_you_mean("def foo():\n    return 1\n", 24, "def bar(x):\n    y = x * 2", 26);
        assert_non_null(s);
        assert_string_equal(s, "   1| def foo():\n   2|     return 1");
        free(s);
        /* Up to 3, best first, +-2 lines (plus old_string's line count), joined by ---. */
        {
                const char *c = "a\nb\nc\nd\nvalue = compute(1)\ne\nf\ng\nh\ni\nj\nk\n"
                                "value = compute(2)\nl\nm\n";

                s = fuzzy_did_you_mean(c, strlen(c), "value = compute(3)", 18);
                assert_non_null(s);
                assert_string_equal(s, "   3| c\n   4| d\n   5| value = compute(1)\n   6| e\n"
                                       "   7| f\n---\n  11| j\n  12| k\n  13| value = "
                                       "compute(2)\n  14| l\n  15| m");
                free(s);
        }
        /* Nothing similar, or a blank old_string: "". */
        s = fuzzy_did_you_mean("zzz\n", 4, "qqqq", 4);
        assert_string_equal(s, "");
        free(s);
        s = fuzzy_did_you_mean("zzz\n", 4, "  \n \n", 5);
        assert_string_equal(s, "");
        free(s);
        /* The first non-blank line is the anchor. */
        s = fuzzy_did_you_mean("one\ntwo\n", 8, "\n  twoo", 7);
        assert_string_equal(s, "   1| one\n   2| two");
        free(s);
}

static void expect_diff(const char *a, const char *b, const char *want)
{
        char *d = NULL;
        size_t n = 0;

        assert_int_equal(
                fuzzy_unified_diff(a, strlen(a), b, strlen(b), "a/f.txt", "b/f.txt", 4096, &d, &n),
                0);
        assert_string_equal(d, want);
        assert_int_equal(n, strlen(want));
        free(d);
}

static void test_fuzzy_unified_diff(void **state)
{
        expect_diff("a\nb\nc\n", "a\nB\nc\n",
                    "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n");
        expect_diff("same\n", "same\n", "");
        /* 3 lines of context; a far second change gets its own hunk. */
        expect_diff("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n",
                    "1\n2\n3\nX\n5\n6\n7\n8\n9\n10\n11\nY\n13\n14\n",
                    "--- a/f.txt\n+++ b/f.txt\n@@ -1,7 +1,7 @@\n 1\n 2\n 3\n-4\n+X\n 5\n 6\n 7\n"
                    "@@ -9,6 +9,6 @@\n 9\n 10\n 11\n-12\n+Y\n 13\n 14\n");
        /* Insertion and deletion ranges (difflib's "start,0"). */
        expect_diff("a\nb\n", "a\nb\nc\n",
                    "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,3 @@\n a\n b\n+c\n");
        expect_diff("x\n", "", "--- a/f.txt\n+++ b/f.txt\n@@ -1 +0,0 @@\n-x\n");
        /* The last line without a newline is marked (difflib glued lines here). */
        expect_diff("a\nb", "a\nc",
                    "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of "
                    "file\n+c\n\\ No newline at end of file\n");
        /* Lines end at \r and \r\n too, as splitlines(). */
        expect_diff("a\r\nb\rc\n", "a\r\nB\rc\n",
                    "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n a\r\n-b\r+B\r c\n");
}

static void test_fuzzy_unified_diff_cap(void **state)
{
        char a[4000], b[4000], *d = NULL;

        for (size_t i = 0; i < sizeof(a) - 1; i++) {
                a[i] = i % 4 == 3 ? '\n' : 'a';
                b[i] = i % 4 == 3 ? '\n' : 'b';
        }
        a[sizeof(a) - 1] = b[sizeof(b) - 1] = 0;
        assert_int_equal(
                fuzzy_unified_diff(a, strlen(a), b, strlen(b), "a/x", "b/x", 300, &d, NULL), 0);
        assert_true(strlen(d) <= 300);
        assert_non_null(strstr(d, "[... diff truncated]\n"));
        free(d);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fuzzy_replace_exact),
                cmocka_unit_test(test_fuzzy_replace_line_trimmed),
                cmocka_unit_test(test_fuzzy_replace_whitespace_normalized),
                cmocka_unit_test(test_fuzzy_replace_indentation_flexible_is_subsumed),
                cmocka_unit_test(test_fuzzy_replace_escape_normalized),
                cmocka_unit_test(test_fuzzy_replace_trimmed_boundary_is_subsumed),
                cmocka_unit_test(test_fuzzy_replace_unicode_normalized),
                cmocka_unit_test(test_fuzzy_replace_block_anchor),
                cmocka_unit_test(test_fuzzy_replace_block_anchor_thresholds),
                cmocka_unit_test(test_fuzzy_replace_context_aware),
                cmocka_unit_test(test_fuzzy_replace_errors),
                cmocka_unit_test(test_fuzzy_replace_ambiguity_and_replace_all),
                cmocka_unit_test(test_fuzzy_replace_escape_drift),
                cmocka_unit_test(test_fuzzy_replace_crlf),
                cmocka_unit_test(test_fuzzy_find_caps),
                cmocka_unit_test(test_fuzzy_ratio_difflib),
                cmocka_unit_test(test_fuzzy_did_you_mean),
                cmocka_unit_test(test_fuzzy_unified_diff),
                cmocka_unit_test(test_fuzzy_unified_diff_cap),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
