/* SPDX-License-Identifier: MIT */
#include "../lib/ptc-test.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "core/web/web-idn.h"

static void test_web_idn_host_to_ascii_maps(void **state)
{
        static const struct {
                const char *host, *ascii;
        } cases[] = {
                {"bücher.de", "xn--bcher-kva.de"},
                {"BÜCHER.DE", "xn--bcher-kva.de"},         /* case folded */
                {"bücher.de.", "xn--bcher-kva.de."},       /* the root dot kept */
                {"faß.de", "xn--fa-hia.de"},               /* non-transitional: ß stays */
                {"例え.テスト", "xn--r8jz45g.xn--zckzah"}, /* not Latin */
                {"①②⑦.0.0.1", "127.0.0.1"},                /* compatibility forms */
                {"ｌｏｃａｌｈｏｓｔ", "localhost"},       /* full width */
        };
        (void) state;
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *a = NULL;

                assert_int_equal(web_idn_host_to_ascii(cases[i].host, &a, NULL), 1);
                assert_string_equal(a, cases[i].ascii);
        }
}

static void test_web_idn_host_to_ascii_leaves_ascii_alone(void **state)
{
        static const char *const hosts[] = {"example.com", "Example.COM",      "127.0.0.1",
                                            "a_b..",       "xn--bcher-kva.de", ""};
        (void) state;
        for (size_t i = 0; i < ELEMENTSOF(hosts); i++) {
                char *a = (char *) 1;

                assert_int_equal(web_idn_host_to_ascii(hosts[i], &a, NULL), 0);
                assert_null(a);
        }
}

static void test_web_idn_host_to_ascii_refuses_invalid_names(void **state)
{
        static const char *const hosts[] = {
                "\xcc\x80"
                "a.de", /* a leading combining mark */
                "a\xe2\x80\x8d"
                "b.de",                /* ZERO WIDTH JOINER out of context */
                "\xc3\xa9\xd7\x90.de", /* left-to-right and right-to-left in a label */
                "ab--cd-\xc3\xa9.de",  /* "--" in the third and fourth place */
                "\xff\xfe.de",         /* not UTF-8 */
                "127.0.0.1\xef\xbc\x9a"
                "80", /* FULLWIDTH COLON: "127.0.0.1:80" */
                "a\xef\xbc\xa0"
                "b.de",         /* FULLWIDTH COMMERCIAL AT: "a@b.de" */
                "\xef\xb9\x88", /* a vertical "]" (the fuzz-url finding) */
                "\xc2\xad",     /* SOFT HYPHEN: nothing */
        };
        (void) state;
        for (size_t i = 0; i < ELEMENTSOF(hosts); i++) {
                const char *reason = NULL;
                char *a = (char *) 1;

                assert_int_equal(web_idn_host_to_ascii(hosts[i], &a, &reason), -EINVAL);
                assert_null(a);
                assert_non_null(reason);
                assert_true(reason[0] != '\0');
        }
}

static void test_web_idn_url_to_ascii(void **state)
{
        static const struct {
                const char *url, *ascii;
        } cases[] = {
                {"https://bücher.de/", "https://xn--bcher-kva.de/"},
                {"http://user@Bücher.de:8443/a/b?q=1#f",
                 "http://user@xn--bcher-kva.de:8443/a/b?q=1#f"},
                {"http://b%C3%BCcher.de/x", "http://xn--bcher-kva.de/x"}, /* curl decodes a host */
                {"http://①②⑦.0.0.1:80/", "http://127.0.0.1:80/"},
        };
        (void) state;
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *u = NULL;

                assert_int_equal(web_idn_url_to_ascii(cases[i].url, &u, NULL), 1);
                assert_string_equal(u, cases[i].ascii);
        }
}

static void test_web_idn_url_to_ascii_nothing_to_do(void **state)
{
        static const char *const urls[] = {"https://example.com/ü", "not a url", "mailto:a@b.c",
                                           "http://[::1]/", ""};
        (void) state;
        for (size_t i = 0; i < ELEMENTSOF(urls); i++) {
                char *u = (char *) 1;

                assert_int_equal(web_idn_url_to_ascii(urls[i], &u, NULL), 0);
                assert_null(u);
        }
}

static void test_web_idn_url_to_ascii_refuses_what_would_split_the_url(void **state)
{
        static const char *const urls[] = {
                "http://127.0.0.1\xef\xbc\x9a"
                "8080/", /* ":8080" */
                "http://evil.example\xef\xbc\x8f"
                "x.good.example/", /* "/": FULLWIDTH SOLIDUS */
                "http://a\xef\xbc\xa0"
                "169.254.169.254/", /* "@" */
                "http://a\xef\xbc\x83"
                "b.de/", /* "#" */
        };
        (void) state;
        for (size_t i = 0; i < ELEMENTSOF(urls); i++) {
                const char *reason = NULL;
                char *u = (char *) 1;

                assert_int_equal(web_idn_url_to_ascii(urls[i], &u, &reason), -EINVAL);
                assert_null(u);
                assert_string_equal(reason, "it maps to characters no host name has");
        }
}

static void test_web_idn_url_to_ascii_refuses_invalid_host(void **state)
{
        const char *reason = NULL;
        char *u = (char *) 1;

        (void) state;
        assert_int_equal(web_idn_url_to_ascii("http://\xcc\x80"
                                              "a.de/",
                                              &u, &reason),
                         -EINVAL);
        assert_null(u);
        assert_string_equal(reason, "string contains a forbidden leading combining character");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_web_idn_host_to_ascii_maps),
                cmocka_unit_test(test_web_idn_host_to_ascii_leaves_ascii_alone),
                cmocka_unit_test(test_web_idn_host_to_ascii_refuses_invalid_names),
                cmocka_unit_test(test_web_idn_url_to_ascii),
                cmocka_unit_test(test_web_idn_url_to_ascii_nothing_to_do),
                cmocka_unit_test(test_web_idn_url_to_ascii_refuses_what_would_split_the_url),
                cmocka_unit_test(test_web_idn_url_to_ascii_refuses_invalid_host),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
