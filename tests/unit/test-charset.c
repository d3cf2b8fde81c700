/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/ptc-test.h"

#include "basic/macro.h"
#include "core/web/charset.h"

static void check(const char *data, size_t n, const char *ct, bool is_html, const char *want,
                  size_t want_len)
{
        _cleanup_free_ char *out = NULL;
        size_t len = 12345;

        assert_int_equal(charset_to_utf8(data, n, ct, is_html, &out, &len), 0);
        assert_non_null(out);
        assert_int_equal(len, want_len);
        assert_memory_equal(out, want, want_len);
        assert_int_equal(out[len], 0);
}

#define CHECK(data, ct, html, want) check(data, sizeof(data) - 1, ct, html, want, sizeof(want) - 1)

static void test_charset_from_content_type(void **state)
{
        _cleanup_free_ char *a = charset_from_content_type("text/html; charset=ISO-8859-1");
        _cleanup_free_ char *b = charset_from_content_type("text/html;Charset=\"Shift_JIS\" ;x=y");
        _cleanup_free_ char *c = charset_from_content_type("text/html");
        _cleanup_free_ char *d = charset_from_content_type("text/plain; charset= utf-8 ");

        assert_string_equal(a, "iso-8859-1");
        assert_string_equal(b, "shift_jis");
        assert_null(c);
        assert_string_equal(d, "utf-8");
        assert_null(charset_from_content_type(NULL));
        assert_null(charset_from_content_type("text/html; charset="));
}

static void test_charset_to_utf8_latin1(void **state)
{
        /* Header label; "latin1" is windows-1252, so 0x80 is the euro sign. */
        CHECK("caf\xe9 \x80", "text/html; charset=latin1", true, "caf\xc3\xa9 \xe2\x82\xac");
        CHECK("caf\xe9", "text/plain; charset=iso-8859-1", false, "caf\xc3\xa9");
        CHECK("a\xe9", "text/plain; charset=us-ascii", false, "a\xc3\xa9");
        /* <meta charset> and http-equiv, only for HTML and only without a header label. */
        CHECK("<html><head><meta charset=\"iso-8859-1\"><title>\xe9</title>", NULL, true,
              "<html><head><meta charset=\"iso-8859-1\"><title>\xc3\xa9</title>");
        CHECK("<meta http-equiv='Content-Type' content='text/html; charset=windows-1252'>\xe9",
              "text/html", true,
              "<meta http-equiv='Content-Type' content='text/html; charset=windows-1252'>"
              "\xc3\xa9");
        CHECK("<meta charset=latin1>\xe9", NULL, false, "<meta charset=latin1>\xef\xbf\xbd");
        CHECK("<meta charset=latin1>\xc3\xa9", "text/html; charset=utf-8", true,
              "<meta charset=latin1>\xc3\xa9");
}

static void test_charset_to_utf8_meta_window(void **state)
{
        char doc[1200];
        _cleanup_free_ char *out = NULL;
        size_t len;

        /* A <meta> past the first 1024 bytes is not looked at. */
        memset(doc, ' ', sizeof(doc));
        memcpy(doc + 1100, "<meta charset=latin1>\xe9", 22);
        assert_int_equal(charset_to_utf8(doc, 1122, NULL, true, &out, &len), 0);
        assert_int_equal(len, 1124);
        assert_memory_equal(out + 1121, "\xef\xbf\xbd", 3);
}

static void test_charset_to_utf8_bom(void **state)
{
        /* UTF-16LE with BOM beats the header; the BOM is not in the output. */
        CHECK("\xff\xfeh\0i\0 \0\xe9\0\x3d\xd8\x00\xde", "text/html; charset=latin1", true,
              "hi \xc3\xa9\xf0\x9f\x98\x80");
        CHECK("\xfe\xff\0h\0i", NULL, false, "hi");
        CHECK("\xef\xbb\xbfok \xc3\xa9", "text/plain; charset=latin1", false, "ok \xc3\xa9");
        /* A lone trailing byte of UTF-16 becomes U+FFFD. */
        CHECK("\xff\xfeh\0i", NULL, false, "h\xef\xbf\xbd");
}

static void test_charset_to_utf8_windows1252(void **state)
{
        CHECK("\x93quoted\x94 \x91single\x92 \x96 dash \x85", "text/html; charset=windows-1252",
              false,
              "\xe2\x80\x9cquoted\xe2\x80\x9d \xe2\x80\x98single\xe2\x80\x99 \xe2\x80\x93 dash "
              "\xe2\x80\xa6");
}

static void test_charset_to_utf8_cjk(void **state)
{
        /* "日本語" in Shift_JIS and "中文" in GBK. */
        CHECK("\x93\xfa\x96\x7b\x8c\xea", "text/plain; charset=Shift_JIS", false,
              "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e");
        CHECK("\xd6\xd0\xce\xc4", "text/html; charset=gbk", true, "\xe4\xb8\xad\xe6\x96\x87");
        CHECK("<meta charset=\"gb2312\">\xd6\xd0", NULL, true,
              "<meta charset=\"gb2312\">\xe4\xb8\xad");
}

static void test_charset_to_utf8_invalid(void **state)
{
        /* No label: UTF-8 with each invalid part replaced. */
        CHECK("a\xff"
              "b\xc3(\xe2\x82",
              NULL, false,
              "a\xef\xbf\xbd"
              "b\xef\xbf\xbd(\xef\xbf\xbd");
        CHECK("nul\0byte", NULL, false, "nul\0byte");
        CHECK("", NULL, true, "");
        /* Shift_JIS lead byte without its trail byte. */
        CHECK("ok\x93", "text/plain; charset=shift_jis", false, "ok\xef\xbf\xbd");
}

static void test_charset_to_utf8_unknown_label(void **state)
{
        CHECK("caf\xc3\xa9", "text/html; charset=x-made-up", true, "caf\xc3\xa9");
        CHECK("caf\xe9 \x93x\x94", "text/html; charset=x-made-up", true,
              "caf\xc3\xa9 \xe2\x80\x9cx\xe2\x80\x9d");
        /* A <meta> cannot declare UTF-16 for bytes that were read as ASCII. */
        CHECK("<meta charset=utf-16>\xc3\xa9", NULL, true, "<meta charset=utf-16>\xc3\xa9");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_charset_from_content_type),
                cmocka_unit_test(test_charset_to_utf8_latin1),
                cmocka_unit_test(test_charset_to_utf8_meta_window),
                cmocka_unit_test(test_charset_to_utf8_bom),
                cmocka_unit_test(test_charset_to_utf8_windows1252),
                cmocka_unit_test(test_charset_to_utf8_cjk),
                cmocka_unit_test(test_charset_to_utf8_invalid),
                cmocka_unit_test(test_charset_to_utf8_unknown_label),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
