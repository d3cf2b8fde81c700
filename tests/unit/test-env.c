/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "../lib/ptc-test.h"

#include "basic/strv.h"
#include "core/env/env.h"
#include "core/output/redact.h"

extern char **environ;

static void test_env_name_is_secret(void **state)
{
        static const char *const secret[] = {
                "OPENAI_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD",   "MY_PASSWD", "AUTH_CREDENTIAL",
                "MY_SECRET",      "SENTRY_DSN",   "SLACK_WEBHOOK", "AWS_CREDS", "X_BEARER",
                "myapikey",       "KEYBOARD",     "oauth_thing",
        };
        static const char *const plain[] = {"PATH", "HOME", "LANG", "DISPLAY", "TERM_PROGRAM"};

        for (size_t i = 0; i < ELEMENTSOF(secret); i++)
                assert_true(env_name_is_secret(secret[i]));
        for (size_t i = 0; i < ELEMENTSOF(plain); i++)
                assert_false(env_name_is_secret(plain[i]));
}

static void test_env_build_child_scrubs_like_the_seed(void **state)
{
        char *src[] = {
                "PATH=/usr/bin",
                "HOME=/home/u",
                "PATHOLOGY=1",
                "HOMEBREW_PREFIX=/opt",
                "LANGUAGE=en",
                "TERM_PROGRAM=x",
                "HERMES_FOO=1",
                "DISPLAY=:0",
                "SSH_AUTH_SOCK=/s",
                "KEYBOARD=us",
                "HERMES_API_KEY=zzz",
                "TENOR_API_KEY=keep",
                "TZ=UTC",
                "PTC_TIMEZONE= Asia/Kolkata ",
                "RANDOM_VAR=1",
                NULL,
        };
        char *pass[] = {"TENOR_API_KEY", NULL};
        _cleanup_strv_free_ char **out = NULL;

        assert_int_equal(env_build_child(src, pass, &out), 0);
        assert_string_equal(env_get(out, "PATH"), "/usr/bin");
        assert_non_null(env_get(out, "HOME"));
        assert_non_null(env_get(out, "PATHOLOGY"));
        assert_non_null(env_get(out, "HOMEBREW_PREFIX"));
        assert_non_null(env_get(out, "LANGUAGE"));
        assert_non_null(env_get(out, "TERM_PROGRAM"));
        assert_non_null(env_get(out, "HERMES_FOO"));
        assert_string_equal(env_get(out, "TENOR_API_KEY"), "keep");
        assert_null(env_get(out, "DISPLAY"));
        assert_null(env_get(out, "SSH_AUTH_SOCK"));
        assert_null(env_get(out, "KEYBOARD"));
        assert_null(env_get(out, "HERMES_API_KEY"));
        assert_null(env_get(out, "RANDOM_VAR"));
        assert_null(env_get(out, "PTC_TIMEZONE"));
        /* The inherited TZ is dropped; PTC_TIMEZONE (trimmed) becomes TZ. */
        assert_string_equal(env_get(out, "TZ"), "Asia/Kolkata");
}

static void test_env_take_secrets_wipes_and_removes(void **state)
{
        _cleanup_redactor_ struct redactor *r = NULL;
        _cleanup_strv_free_ char **kept = NULL;
        char *e1 = strdup("PTC_TEST_SECRET_TOKEN=abcdefghijklmnop");
        char *e2 = strdup("PTC_TEST_PLAIN=1");
        char *e3 = strdup("PASS_ME_KEY=visible-value");
        char **saved = environ;
        char *fake[] = {e1, e2, e3, NULL};
        char *pass[] = {"PASS_ME_KEY", NULL};

        assert_int_equal(redactor_new(&r), 0);
        environ = fake;
        assert_int_equal(env_take_secrets(pass, r, &kept), 1);
        assert_ptr_equal(environ[0], e2);
        assert_ptr_equal(environ[1], e3);
        assert_null(environ[2]);
        environ = saved;
        /* The original bytes are gone, not just unlinked. */
        for (size_t i = 0; i < strlen("PTC_TEST_SECRET_TOKEN=abcdefghijklmnop"); i++)
                assert_true(e1[i] == 0 || e1[i] == '=');
        assert_int_equal(strv_length(kept), 1);
        assert_string_equal(kept[0], "PTC_TEST_SECRET_TOKEN=abcdefghijklmnop");
        assert_int_equal(redactor_secret_count(r), 1);
        free(e1);
        free(e2);
        free(e3);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_env_name_is_secret),
                cmocka_unit_test(test_env_build_child_scrubs_like_the_seed),
                cmocka_unit_test(test_env_take_secrets_wipes_and_removes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
