/* SPDX-License-Identifier: MIT */
#include "../lib/ptc-test.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <stdlib.h>
#include <string.h>

#include "core/output/ansi.h"

/* Strip a copy of @in (length @n) and compare with @want. */
static void check_n(const char *in, size_t n, const char *want, size_t want_n)
{
        char *s = malloc(n + 1);
        size_t r;

        assert_non_null(s);
        memcpy(s, in, n);
        s[n] = 'Z'; /* must become the terminator */
        r = ansi_strip(s, n);
        assert_int_equal(r, want_n);
        assert_memory_equal(s, want, want_n);
        assert_int_equal(s[r], 0);
        free(s);
}

static void check(const char *in, const char *want)
{
        check_n(in, strlen(in), want, strlen(want));
}

static void test_ansi_strip_fast_path(void **state)
{
        check("", "");
        check("plain text\twith tabs\nand newlines\r\n", "plain text\twith tabs\nand newlines\r\n");
        check("é中文🙂 ünïcödé", "é中文🙂 ünïcödé");
        /* U+00A0 (C2 A0) and U+00BF are not C1 controls. */
        check("a\xC2\xA0"
              "b\xC2\xBF",
              "a\xC2\xA0"
              "b\xC2\xBF");
        /* NUL bytes are kept. */
        check_n("a\0b", 3, "a\0b", 3);
}

static void test_ansi_strip_csi(void **state)
{
        check("\x1b[31mred\x1b[0m", "red");
        check("\x1b[1;32;40mX\x1b[m", "X");
        check("\x1b[?25l\x1b[?1049hY", "Y");
        check("\x1b[38:2:255:0:0mZ", "Z");
        check("\x1b[2J\x1b[H\x1b[K", "");
        check("a\x1b[1 qb", "ab");                           /* intermediate before final */
        check("a\x1b[@b", "ab");                             /* final 0x40 */
        check("a\x1b[~b", "ab");                             /* final 0x7E */
        check("é\x1b[1m中文\x1b[0m🙂", "é中文🙂"); /* mixed with UTF-8 */
}

static void test_ansi_strip_csi_unterminated(void **state)
{
        /* No final byte: only "ESC [" goes (the Fe alternative). */
        check("a\x1b[12", "a12");
        check("a\x1b[12;\n", "a12;\n");
        check("a\x1b[1 2m", "a1 2m"); /* parameter after intermediate: not a CSI */
        check("a\x1b[", "a");
        check("a\x1b[\x7f", "a\x7f");
}

static void test_ansi_strip_osc(void **state)
{
        check("\x1b]0;title\x07text", "text");
        check("\x1b]0;title\x1b\\text", "text");
        check("\x1b]8;;http://x.y/\x1b\\link\x1b]8;;\x1b\\", "link");
        /* Shortest: the first terminator ends it. */
        check("\x1b]a\x07"
              "b\x07"
              "c",
              "b\x07"
              "c");
        check("\x1b]a\x1b\\b\x1b\\c", "bc"); /* the second ST is a lone Fe escape */
        /* ESC inside the body that is not ESC \ does not end it. */
        check("\x1b]a\x1bxb\x07"
              "c",
              "c");
        /* The body may hold newlines and UTF-8. */
        check("\x1b]0;é\n中\x07ok", "ok");
}

static void test_ansi_strip_osc_unterminated(void **state)
{
        /* No BEL or ESC \ anywhere after: only "ESC ]" goes, the body stays. */
        check("a\x1b]0;title", "a0;title");
        check("a\x1b]0;ti\x1b[1mtle", "a0;title");
        /* Two unterminated ones; the second's ESC \ terminator is absent too. */
        check("\x1b]x\x1b]y", "xy");
}

static void test_ansi_strip_dcs_sos_pm_apc(void **state)
{
        check("a\x1bPq#0;2;0;0;0\x1b\\b", "ab");
        check("a\x1bXsos\x1b\\b", "ab");
        check("a\x1b^pm\x1b\\b", "ab");
        check("a\x1b_apc\x1b\\b", "ab");
        /* BEL does not end a DCS. */
        check("a\x1bPx\x07y\x1b\\b", "ab");
        /* Unterminated: only the two-byte introducer goes. */
        check("a\x1bPdata", "adata");
        check("a\x1b_x\x07y", "ax\x07y");
}

static void test_ansi_strip_nf(void **state)
{
        check("a\x1b(Bb", "ab");
        check("a\x1b)0b", "ab");
        check("a\x1b#8b", "ab");
        check("a\x1b %Gb", "ab"); /* several intermediates */
        /* Intermediates without a final: ESC is kept, so is the rest. */
        check("a\x1b(\x01", "a\x1b(\x01");
        check("a\x1b(", "a\x1b(");
}

static void test_ansi_strip_fp_fe_fs(void **state)
{
        check("a\x1b"
              "7b\x1b"
              "8c",
              "abc");           /* Fp: DECSC/DECRC */
        check("a\x1bMb", "ab"); /* Fe: RI */
        check("a\x1b"
              "cb",
              "ab");             /* Fs: RIS */
        check("a\x1b\\b", "ab"); /* lone ST */
        check("a\x1b~b", "ab");
}

static void test_ansi_strip_esc_kept(void **state)
{
        check("a\x1b", "a\x1b");
        check("a\x1b\nb", "a\x1b\nb");
        /* ... unless what follows is removed: it would meet the bytes after it (ansi.c). */
        check("a\x1b\x1b[1mb", "ab");
        check("a\x1b\x7f", "a\x1b\x7f");
        check("a\x1bé", "a\x1bé");
}

/* No escape is formed where a sequence was removed: stripping the result changes nothing. */
static void test_ansi_strip_no_new_sequence(void **state)
{
        check("a\x1b\x1b[1m7b", "a7b");        /* not "a ESC 7 b" (DECSC) */
        check("a\x1b\x1b\x1b[m[m7", "a[m7");   /* a chain of kept ESCs */
        check("a\x1b \x1b[0mFb", "a Fb");      /* not the nF "ESC SP F" */
        check("a\x1b \x1b\x1b[m(Bb", "a (Bb"); /* intermediates stay as text */
        check("a\x1b\xC2\x85"
              "7b",
              "a7b"); /* ESC before a removed C1 */
        check("a\xC2\x1b[m\x9B"
              "1mb",
              "a\x9B"
              "1mb"); /* not the 8-bit CSI C2 9B: the lone C2 goes */
        check("a\xC2\xC2\x85\x85", "a\x85");
        /* A kept ESC before a start byte that is kept stays. */
        check("a\x1b\x1b\n", "a\x1b\x1b\n");
        check("a\x1b \xC2\xA0", "a\x1b \xC2\xA0");
}

static void test_ansi_strip_c1(void **state)
{
        /* 8-bit CSI U+009B. */
        check("a\xC2\x9B"
              "31mb",
              "ab");
        check("a\xC2\x9B"
              "31",
              "a31"); /* no final: only the C1 goes */
        /* 8-bit OSC U+009D ... BEL or U+009C. */
        check("a\xC2\x9D"
              "0;t\x07"
              "b",
              "ab");
        check("a\xC2\x9D"
              "0;t\xC2\x9C"
              "b",
              "ab");
        check("a\xC2\x9D"
              "0;t",
              "a0;t"); /* unterminated */
        check("a\xC2\x9D"
              "x\x1b\\y",
              "axy"); /* ESC \ does not end an 8-bit OSC */
        /* Other C1 controls, including the boundaries. */
        check("a\xC2\x80"
              "b\xC2\x85"
              "c\xC2\x9F"
              "d",
              "abcd");
        check("a\xC2\x9C"
              "b",
              "ab");
        check("é\xC2\x84中文\xC2\x9B"
              "1m🙂",
              "é中文🙂");
}

static void test_ansi_strip_mixed(void **state)
{
        check("\x1b[1m\x1b]0;t\x07\x1b(Bé\x1bPq\x1b\\中\xC2\x9B"
              "0m文\x1b"
              "7🙂\n",
              "é中文🙂\n");
        check("line1\r\n\x1b[32mline2\x1b[0m\r\n", "line1\r\nline2\r\n");
}

static void test_ansi_strip_many_unterminated(void **state)
{
        /* Many unterminated OSCs must not be quadratic; result keeps the bodies. */
        size_t k = 200000, n = k * 3, i;
        char *s = malloc(n + 1), *want = malloc(k + 1);

        assert_non_null(s);
        assert_non_null(want);
        for (i = 0; i < k; i++) {
                memcpy(s + i * 3, "\x1b]x", 3);
                want[i] = 'x';
        }
        assert_int_equal(ansi_strip(s, n), k);
        assert_memory_equal(s, want, k);
        free(s);
        free(want);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ansi_strip_fast_path),
                cmocka_unit_test(test_ansi_strip_csi),
                cmocka_unit_test(test_ansi_strip_csi_unterminated),
                cmocka_unit_test(test_ansi_strip_osc),
                cmocka_unit_test(test_ansi_strip_osc_unterminated),
                cmocka_unit_test(test_ansi_strip_dcs_sos_pm_apc),
                cmocka_unit_test(test_ansi_strip_nf),
                cmocka_unit_test(test_ansi_strip_fp_fe_fs),
                cmocka_unit_test(test_ansi_strip_esc_kept),
                cmocka_unit_test(test_ansi_strip_no_new_sequence),
                cmocka_unit_test(test_ansi_strip_c1),
                cmocka_unit_test(test_ansi_strip_mixed),
                cmocka_unit_test(test_ansi_strip_many_unterminated),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
