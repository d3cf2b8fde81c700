/* SPDX-License-Identifier: MIT */
#include "../lib/ptc-test.h"

#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "core/output/redact.h"
#include "core/web/web-keys.h"
#include "core/web/web-url.h"

/* Made-up secret, registered with the redactor as a scrubbed variable's value would be. */
#define SECRET_VALUE "q8Zt3MadeUpValue77"

static struct redactor *secret_redactor(void)
{
        struct redactor *r = NULL;

        assert_int_equal(redactor_new(&r), 0);
        assert_int_equal(redactor_add_secret(r, SECRET_VALUE), 0);
        return r;
}

static void test_web_url_has_secret_refused(void **state)
{
        _cleanup_redactor_ struct redactor *r = secret_redactor();
        static const char *const bad[] = {
                "https://example.com/?q=sk-abcdefghijklmnop1234",
                "https://example.com/ghp_abcdefghijklmnopqrst12345/x",
                "https://example.com/?q=%73k-abcdefghijklmnop1234",   /* %73 = s */
                "https://example.com/?q=%2573k-abcdefghijklmnop1234", /* twice encoded */
                "https://example.com/?x=AKIAABCDEFGHIJKLMNOP",        /* AWS key id */
                ("https://example.com/leak/" SECRET_VALUE),           /* by value */
                "https://example.com/?d=cThadDNNYWRlVXBWYWx1ZTc3",    /* its base64 */
                "https://example.com/?access_token=abc",              /* credential name */
                "https://example.com/a?x=1&API_KEY=abc#frag",         /* any case */
                "https://example.com/a?x=1&api%5Fkey=abc",            /* decoded name */
                "https://example.com/?token=t&x=y",
                "https://user:hunter2@example.com/", /* userinfo password */
        };

        (void) state;
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                int k = web_url_has_secret(r, bad[i]);

                if (k != 1)
                        fail_msg("not refused (%d): %s", k, bad[i]);
        }
}

static void test_web_url_has_secret_allowed(void **state)
{
        _cleanup_redactor_ struct redactor *r = secret_redactor();
        static const char *const good[] = {
                "https://example.com/",
                "https://example.com/search?q=python+asyncio&page=2",
                "https://example.com/?key=maps", /* innocent names are not refused */
                "https://example.com/?code=python&session=1",
                "https://example.com/?token=",         /* empty value */
                "https://example.com/#access_token=x", /* fragment, not query */
                "https://user@example.com/",           /* user without password */
                "https://en.wikipedia.org/wiki/Sk-8",
                "http://127.0.0.1:8080/page?id=42",
        };

        (void) state;
        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                int k = web_url_has_secret(r, good[i]);

                if (k != 0)
                        fail_msg("refused (%d): %s", k, good[i]);
        }
        /* Without a redactor only the value check is skipped. */
        assert_int_equal(web_url_has_secret(NULL, "https://x.example/" SECRET_VALUE), 0);
        assert_int_equal(web_url_has_secret(NULL, "https://x.example/?q=sk-abcdefghijklmnop1234"),
                         1);
        assert_int_equal(web_url_has_secret(NULL, NULL), 0);
}

static void test_web_keys_take_and_get(void **state)
{
        char *kept[] = {(char *) "TAVILY_API_KEY=tv-value", (char *) "GITHUB_TOKEN=not-ours",
                        (char *) "EXA_API_KEY=", (char *) "BROKEN", NULL};

        (void) state;
        unsetenv("TAVILY_API_KEY");
        unsetenv("GITHUB_TOKEN");
        unsetenv("EXA_API_KEY");
        assert_int_equal(web_keys_take(kept), 0);
        assert_string_equal(web_key_get("TAVILY_API_KEY"), "tv-value");
        /* Only provider variables are kept; an empty value is no value. */
        assert_null(web_key_get("GITHUB_TOKEN"));
        assert_null(web_key_get("EXA_API_KEY"));
        assert_null(web_key_get(NULL));
        /* Names never taken fall back to the environment. */
        assert_int_equal(setenv("SEARXNG_URL", "http://127.0.0.1:1", 1), 0);
        assert_string_equal(web_key_get("SEARXNG_URL"), "http://127.0.0.1:1");
        unsetenv("SEARXNG_URL");
        assert_null(web_key_get("SEARXNG_URL"));
        web_keys_clear();
        assert_null(web_key_get("TAVILY_API_KEY"));
        assert_int_equal(web_keys_take(NULL), 0);
        web_keys_clear();
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_web_url_has_secret_refused),
                cmocka_unit_test(test_web_url_has_secret_allowed),
                cmocka_unit_test(test_web_keys_take_and_get),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
