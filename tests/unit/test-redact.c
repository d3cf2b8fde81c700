/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../lib/fault.h"
#include "../lib/ptc-test.h"

#include "core/output/redact.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

static char sentinel[1];

/* Redact @in (@n bytes) and compare with @want; unchanged input must return 0. */
static void check_full(const struct redactor *r, enum redact_mode mode, const char *in, size_t n,
                       const char *want, size_t want_n)
{
        char *out = sentinel;
        size_t len = 12345;
        int rc;

        rc = redact_text(r, mode, in, n, &out, &len);
        if (want_n == n && memcmp(in, want, n) == 0) {
                if (rc != 0)
                        print_message("unexpected change: '%s' -> '%s'\n", in, out);
                assert_int_equal(rc, 0);
                assert_ptr_equal(out, sentinel);
                assert_int_equal(len, 12345);
                return;
        }
        if (rc != 1)
                print_message("not redacted: '%s' (want '%s')\n", in, want);
        assert_int_equal(rc, 1);
        if (len != want_n || memcmp(out, want, want_n) != 0)
                print_message("in:   '%s'\nwant: '%s'\ngot:  '%s'\n", in, want, out);
        assert_int_equal(len, want_n);
        assert_memory_equal(out, want, want_n);
        assert_int_equal(out[len], 0);
        free(out);
}

static void check_mode(const struct redactor *r, enum redact_mode mode, const char *in,
                       const char *want)
{
        check_full(r, mode, in, strlen(in), want, strlen(want));
}

#define CHECK(in, want) check_mode(NULL, REDACT_FULL, (in), (want))
#define SAME(in) check_mode(NULL, REDACT_FULL, (in), (in))

/* The redacted text (a copy of @in when unchanged); caller frees. */
static char *redacted(const struct redactor *r, enum redact_mode mode, const char *in, size_t n,
                      size_t *ret_len)
{
        char *out = NULL;
        int rc;

        rc = redact_text(r, mode, in, n, &out, ret_len);
        assert_true(rc >= 0);
        if (rc == 0) {
                out = malloc(n + 1);
                assert_non_null(out);
                memcpy(out, in, n);
                out[n] = 0;
                *ret_len = n;
        }
        return out;
}

/* CPU time of this thread: what the redactor costs, not how busy the machine is. Used only to
 * report, and to catch catastrophic (quadratic, backtracking) blow-ups with bounds two orders
 * of magnitude above the real cost; speed itself is measured by bench/compare.sh. */
static double now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------------------------------ */

static void test_redact_text_mask_examples(void **state)
{
        /* docs/seed.md 1.12: >= 18 characters keep 6 + 4, shorter ones become "***". */
        CHECK("sk-abcdefghijklmnop1234", "sk-abc...1234");
        CHECK("key sk-abcdefghij here", "key *** here"); /* 13 characters */
        CHECK("OPENAI_API_KEY=abcdefghijklmnopqrstuvwxyz", "OPENAI_API_KEY=abcdef...wxyz");
        /* The mask counts code points, not bytes. */
        CHECK("DB_PASSWORD=ééééééééééééééééééé", "DB_PASSWORD=éééééé...éééé");
        CHECK("DB_PASSWORD=éééééééééééééééé", "DB_PASSWORD=***");     /* 16 code points */
        CHECK("X_TOKEN=abcdefghijklmnopq", "X_TOKEN=***");            /* 17 */
        CHECK("X_TOKEN=abcdefghijklmnopqr", "X_TOKEN=abcdef...opqr"); /* 18 */
}

static void test_redact_text_prefix(void **state)
{
        CHECK("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_ab...6789");
        CHECK("github_pat_11ABCDEFG0123456789_abcdefghij", "github...ghij");
        CHECK("xoxb-1234567890-abcdefghij", "xoxb-1...ghij");
        CHECK("AIzaSyA1234567890abcdefghijklmnopqrstu", "AIzaSy...rstu");
        CHECK("AKIAIOSFODNN7EXAMPLE", "AKIAIO...MPLE");
        CHECK("gAAAAABkabcdefghijklmnopqrstuv==", "gAAAAA...uv==");
        CHECK("SG.abcdefghijklmnopqrstuvwxyz", "SG.abc...wxyz");
        CHECK("sk_live_0123456789abcdef", "sk_liv...cdef");
        CHECK("hf_abcdefghijkl", "***");
        CHECK("brv_0123456789abcdefghij", "brv_01...ghij");
        CHECK("am_example_identifier_123", "am_exa..._123"); /* seed-era AgentMail pattern */
        CHECK("(sk-ant-api03-abcdefghijklmnop)", "(sk-ant...mnop)");
        /* Negative: glued to token characters, too short, wrong shape. */
        SAME("mysk-abcdefghijklmnop1234");
        CHECK("sk-abcdefghijklmnop1234_", "sk-abc...234_"); /* '_' is in sk-'s class */
        SAME("ghp_abcdefghijklmnop_x");                     /* ... but not in ghp_'s: glued */
        SAME("task-abcdefghijklmnopq");
        SAME("sk-abc");
        SAME("AKIAIOSFODNN7EXAMPL");    /* 15 after AKIA */
        SAME("AKIAIOSFODNN7EXAMPLEX");  /* 17 after AKIA */
        SAME("AIzaSyA1234567890");      /* fewer than 30 */
        SAME("ghp_abc-defghijklmnopq"); /* '-' is outside ghp_'s class and glued */
}

static void test_redact_text_env(void **state)
{
        CHECK("export GITHUB_TOKEN=ghx0123456789abcdefghij\n",
              "export GITHUB_TOKEN=ghx012...ghij\n");
        CHECK("MY_SECRET = \"hunter2\"", "MY_SECRET=\"***\"");
        CHECK("AUTH='abcdefghijklmnopqrstuvwxyz'", "AUTH='abcdef...wxyz'");
        CHECK("X_PASSWD=a b", "X_PASSWD=*** b");
        CHECK("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG", "AWS_SECRET_ACCESS_KEY=wJalrX...DENG");
        /* A name longer than 50 characters before the keyword still matches (mid-run start). */
        CHECK("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA_TOKEN=abc",
              "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA_TOKEN=***");
        /* Negative: lower-case names (code), no keyword, more than 50 characters after it. */
        SAME("openai_api_key=abcdefghijklmnopqrstuvwxyz");
        SAME("MONKEY=bananas1234567890");
        SAME("TOKEN_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=x");
        SAME("API_KEY=");
}

static void test_redact_text_json_fields(void **state)
{
        CHECK("{\"apiKey\": \"abcdefghijklmnopqrstuvwxyz\"}", "{\"apiKey\": \"abcdef...wxyz\"}");
        CHECK("{\"Token\":\"short\"}", "{\"Token\": \"***\"}");
        CHECK("{\"ACCESS_TOKEN\" :  \"x\", \"user\": \"bob\"}",
              "{\"ACCESS_TOKEN\": \"***\", \"user\": \"bob\"}");
        CHECK("{\"key_material\": \"0123456789abcdefghij\"}",
              "{\"key_material\": \"012345...ghij\"}");
        SAME("{\"tokenizer\": \"bert\", \"secretary\": \"ann\"}");
        SAME("{\"token\": \"\"}");
        SAME("{\"token\": 12345}");
}

static void test_redact_text_auth_header(void **state)
{
        CHECK("Authorization: Bearer abcdefghijklmnopqrstuvwxyz",
              "Authorization: Bearer abcdef...wxyz");
        CHECK("authorization:bearer   tok123", "authorization:bearer   ***");
        CHECK("AUTHORIZATION: BEARER abc\nnext", "AUTHORIZATION: BEARER ***\nnext");
        SAME("Authorization: Basic dXNlcjpwYXNz");
        SAME("Bearer abcdefghijklmnopqrstuvwxyz");
}

static void test_redact_text_telegram(void **state)
{
        CHECK("bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", "bot123456789:***");
        CHECK("url /987654321:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe",
              "url /987654321:***/getMe");
        CHECK("x12345678901234567890:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw",
              "x12345678901234567890:***");
        SAME("1234567:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"); /* 7 digits */
        SAME("123456789:short");
        SAME("12:34:56 12345678:90");
}

static void test_redact_text_private_key(void **state)
{
        CHECK("a\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nabc==\n"
              "-----END RSA PRIVATE KEY-----\nb",
              "a\n[REDACTED PRIVATE KEY]\nb");
        CHECK("-----BEGIN PRIVATE KEY-----x-----END PRIVATE KEY----- and "
              "-----BEGIN OPENSSH PRIVATE KEY-----\ny\n-----END OPENSSH PRIVATE KEY-----",
              "[REDACTED PRIVATE KEY] and [REDACTED PRIVATE KEY]");
        SAME("-----BEGIN RSA PRIVATE KEY-----\nMIIE (truncated)");
        SAME("-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----");
        SAME("-----BEGIN PRIVATE KEY-----\nx\n-----END CERTIFICATE-----");
}

static void test_redact_text_db_connstr(void **state)
{
        CHECK("postgres://user:pw@host", "postgres://user:***@host");
        CHECK("DSN postgresql://app:s3cr3t@db:5432/x", "DSN postgresql://app:***@db:5432/x");
        CHECK("MONGODB+SRV://u:p@h/db", "MONGODB+SRV://u:***@h/db");
        /* Seed quirk: [^:]+ needs a user name, so "redis://:pass@" is kept. */
        CHECK("redis://:pass@localhost:6379 amqp://guest:guest@rabbit",
              "redis://:pass@localhost:6379 amqp://guest:***@rabbit");
        SAME("postgres://localhost:5432/db");
        SAME("mysql://root:@localhost");
        SAME("sqlite:///tmp/x.db user:pw@host");
}

static void test_redact_text_jwt(void **state)
{
        CHECK("token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
              "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U end",
              "token eyJhbG...sR8U end");
        CHECK("eyJabcdefghij", "***");
        SAME("eyJshort");
        SAME("they eyJ.x");
}

static void test_redact_text_url_userinfo(void **state)
{
        CHECK("https://user:pass@example.com/x", "https://user:***@example.com/x");
        CHECK("see ftp://anon:mail@ftp.example.org/", "see ftp://anon:***@ftp.example.org/");
        CHECK("wss://bot:t0k3n@chat.example/ws", "wss://bot:***@chat.example/ws");
        SAME("https://example.com/user:pass@x");
        SAME("https://user@example.com/");
        SAME("gopher://user:pass@example.com/");
}

static void test_redact_text_url_query(void **state)
{
        CHECK("https://example.com/cb?code=ABC&state=x", "https://example.com/cb?code=***&state=x");
        CHECK("GET http://h/p?Access_Token=abc&x=1&key=&flag#frag",
              "GET http://h/p?Access_Token=***&x=1&key=***&flag#frag");
        CHECK("wss://h/?X-Amz-Signature=deadbeef&session=s1 more",
              "wss://h/?X-Amz-Signature=***&session=*** more");
        SAME("https://example.com/?state=x&page=2");
        SAME("https://a.com/?x=1#token=abc");
        SAME("https://a.com/path?tokens=1&codes=2");
        SAME("example.com/?token=abc");
}

static void test_redact_text_form_body(void **state)
{
        CHECK("username=bob&password=hunter2", "username=bob&password=***");
        CHECK("  grant_type=client_credentials&client_secret=abc&private_key=k  ",
              "grant_type=client_credentials&client_secret=***&private_key=***");
        CHECK("a=1&Authorization=xyz", "a=1&Authorization=***");
        SAME("password=hunter2");                /* a single pair is not a form body */
        SAME("username=bob&password=hunter2\n"); /* several lines */
        SAME("user name=bob&password=x");        /* not k=v&k=v */
        SAME("a=1&b=2");
}

static void test_redact_text_discord(void **state)
{
        CHECK("hi <@123456789012345678>!", "hi <@***>!");
        CHECK("<@!12345678901234567890>", "<@!***>");
        SAME("<@12345>");
        SAME("<@123456789012345678901>"); /* 21 digits */
}

static void test_redact_text_phone(void **state)
{
        CHECK("call +15551234567 now", "call +155****4567 now");
        CHECK("+1234567", "+1****67");
        CHECK("+442071838750.", "+442****8750.");
        SAME("+123456");         /* 6 digits */
        SAME("+15551234567abc"); /* glued */
        SAME("+0123456789");     /* no leading zero */
        SAME("1+1=2 and a+b");
}

static void test_redact_text_modes(void **state)
{
        const char *in = "OPENAI_API_KEY=abcdefghijklmnopqrstuvwxyz {\"token\": \"abc\"} "
                         "sk-abcdefghijklmnop1234 postgres://u:pw@h";

        check_mode(NULL, REDACT_FULL, in,
                   "OPENAI_API_KEY=abcdef...wxyz {\"token\": \"***\"} sk-abc...1234 "
                   "postgres://u:***@h");
        /* Code mode skips passes 2 (env assignments) and 3 (JSON fields). */
        check_mode(NULL, REDACT_CODE, in,
                   "OPENAI_API_KEY=abcdefghijklmnopqrstuvwxyz {\"token\": \"abc\"} sk-abc...1234 "
                   "postgres://u:***@h");
        check_mode(NULL, REDACT_NONE, in, in);
}

static void test_redact_text_unchanged(void **state)
{
        char *out = sentinel;
        size_t len = 7;

        SAME("hello world\nnothing to see here: 1 + 1 = 2, x@y, https://example.com/?a=b");
        assert_int_equal(redact_text(NULL, REDACT_FULL, "", 0, &out, &len), 0);
        assert_int_equal(redact_text(NULL, REDACT_FULL, NULL, 0, &out, &len), 0);
        assert_ptr_equal(out, sentinel);
        assert_int_equal(len, 7);
        assert_int_equal(redact_text(NULL, REDACT_FULL, NULL, 3, &out, &len), -EINVAL);
        assert_int_equal(redact_text(NULL, REDACT_FULL, "x", 1, NULL, &len), -EINVAL);
}

static void test_redact_text_nul_bytes(void **state)
{
        static const char in[] =
                "a\0sk-abcdefghijklmnop1234\0API_KEY=abcdefghijklmnopqrstuvwxyz\0b";
        /* NUL is not whitespace: the env value runs on to the end. */
        static const char want[] = "a\0sk-abc...1234\0API_KEY=abcdef...yz\0b";
        static const char plain[] = "x\0y\0z";

        check_full(NULL, REDACT_FULL, in, sizeof(in) - 1, want, sizeof(want) - 1);
        check_full(NULL, REDACT_FULL, plain, sizeof(plain) - 1, plain, sizeof(plain) - 1);
}

static void test_redact_text_invalid_utf8(void **state)
{
        /* Callers sanitize first; stray invalid bytes only act as barriers (match nothing). */
        static const char in[] = "\xff\xfesk-abcdefghijklmnop1234\xff \xc3(TOKEN=xyz\x80\x81";
        static const char want[] = "\xff\xfesk-abc...1234\xff \xc3(TOKEN=***\x80\x81";
        size_t len;
        char *out;

        check_full(NULL, REDACT_FULL, in, sizeof(in) - 1, want, sizeof(want) - 1);
        /* Truncated sequences everywhere: must not crash, whatever the result. */
        out = redacted(NULL, REDACT_FULL, "\xe2\x82", 2, &len);
        free(out);
}

/* ------------------------------------------------------------------------------------------ */
/* Value-based redaction                                                                       */

#define SECRET "s3cr3t value/with+chars??"

static struct redactor *new_redactor_with(const char *const *secrets)
{
        struct redactor *r = NULL;

        assert_int_equal(redactor_new(&r), 0);
        assert_non_null(r);
        for (; *secrets; secrets++)
                assert_int_equal(redactor_add_secret(r, *secrets), 0);
        return r;
}

static void test_redactor_add_secret(void **state)
{
        _cleanup_redactor_ struct redactor *r = NULL;
        char big[64 * 1024 + 2];

        assert_int_equal(redactor_new(&r), 0);
        assert_int_equal(redactor_secret_count(r), 0);
        assert_int_equal(redactor_add_secret(r, "short"), 0);
        assert_int_equal(redactor_add_secret(r, "1234567"), 0); /* 7 < REDACT_MIN_SECRET_LEN */
        assert_int_equal(redactor_add_secret(r, ""), 0);
        assert_int_equal(redactor_secret_count(r), 0);
        assert_int_equal(redactor_add_secret(r, "12345678"), 0);
        assert_int_equal(redactor_add_secret(r, "12345678"), 0); /* duplicate */
        assert_int_equal(redactor_secret_count(r), 1);
        assert_int_equal(redactor_add_secret(r, NULL), -EINVAL);
        assert_int_equal(redactor_add_secret(NULL, "12345678"), -EINVAL);
        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = 0;
        assert_int_equal(redactor_add_secret(r, big), -E2BIG);
        assert_int_equal(redactor_secret_count(r), 1);
        assert_int_equal(redactor_secret_count(NULL), 0);
        assert_null(redactor_free(NULL));

        /* Short values are not redacted by value. */
        check_mode(r, REDACT_NONE, "short 1234567 12345678", "short 1234567 ***");
}

static void test_redact_text_value_encodings(void **state)
{
        static const char *const secrets[] = {SECRET, NULL};
        _cleanup_redactor_ struct redactor *r = new_redactor_with(secrets);
        static const char *const forms[] = {
                SECRET,
                "czNjcjN0IHZhbHVlL3dpdGgrY2hhcnM/Pw==",               /* base64 */
                "czNjcjN0IHZhbHVlL3dpdGgrY2hhcnM/Pw",                 /* base64, no padding */
                "czNjcjN0IHZhbHVlL3dpdGgrY2hhcnM_Pw==",               /* base64url */
                "czNjcjN0IHZhbHVlL3dpdGgrY2hhcnM_Pw",                 /* base64url, no padding */
                "7333637233742076616c75652f776974682b63686172733f3f", /* hex */
                "7333637233742076616C75652F776974682B63686172733F3F", /* HEX */
                "s3cr3t%20value%2Fwith%2Bchars%3F%3F",                /* %2F style */
                "s3cr3t%20value%2fwith%2bchars%3f%3f",                /* %2f style */
                "s3cr3t+value%2Fwith%2Bchars%3F%3F",                  /* quote_plus */
                "s3cr3t%20value/with%2Bchars%3F%3F",                  /* quote, '/' safe */
                NULL,
        };
        char in[256];

        assert_int_equal(redactor_secret_count(r), 1);
        for (size_t i = 0; forms[i]; i++) {
                snprintf(in, sizeof(in), "<%s> and \"%s\"", forms[i], forms[i]);
                for (int m = 0; m < 3; m++)
                        check_mode(r, (enum redact_mode) m, in, "<***> and \"***\"");
        }
        /* Base64 of a text that contains the secret at any byte offset (HTTP Basic auth). */
        check_mode(r, REDACT_NONE, "Authorization: Basic dXNlcjpzM2NyM3QgdmFsdWUvd2l0aCtjaGFycz8/",
                   "Authorization: Basic dXNlcjp***");
        check_mode(r, REDACT_NONE, "dXNyOnMzY3IzdCB2YWx1ZS93aXRoK2NoYXJzPz8=", "dXNyOn***8=");
        check_mode(r, REDACT_NONE, "dXMzY3IzdCB2YWx1ZS93aXRoK2NoYXJzPz90YWlsLWJ5dGVz",
                   "dX***90YWlsLWJ5dGVz");
        /* JSON-escaped (Python json.dumps) form of a secret with quotes and non-ASCII. */
        {
                static const char *const s2[] = {"p\"w\\d-\xc3\xa9-secret", NULL};
                _cleanup_redactor_ struct redactor *r2 = new_redactor_with(s2);

                check_mode(r2, REDACT_NONE, "{\"pw\": \"p\\\"w\\\\d-\\u00e9-secret\"}",
                           "{\"pw\": \"***\"}");
                check_mode(r2, REDACT_NONE, "{\"pw\": \"p\\\"w\\\\d-\xc3\xa9-secret\"}",
                           "{\"pw\": \"***\"}");
        }
        /* Negative: a prefix of the secret, or a different secret, is left alone. */
        check_mode(r, REDACT_NONE, "s3cr3t value/with+char", "s3cr3t value/with+char");
        check_mode(r, REDACT_NONE, "s3cr3t%20value%2Fwith%2Bchars%3F",
                   "s3cr3t%20value%2Fwith%2Bchars%3F");
        check_mode(r, REDACT_NONE, "czNjcjN0IHZhbHVlL3dpd", "czNjcjN0IHZhbHVlL3dpd");
}

static void test_redact_text_value_in_words(void **state)
{
        static const char *const secrets[] = {"hunter2hunter2",      "abcdefgh12",
                                              "gh12ijklmnop",        "supersecretvalue",
                                              "mysupersecretvalue2", NULL};
        _cleanup_redactor_ struct redactor *r = new_redactor_with(secrets);

        assert_int_equal(redactor_secret_count(r), 5);
        /* Inside a longer word, repeated, adjacent. */
        check_mode(r, REDACT_NONE, "prefixhunter2hunter2suffix", "prefix***suffix");
        check_mode(r, REDACT_NONE, "hunter2hunter2 hunter2hunter2", "*** ***");
        check_mode(r, REDACT_NONE, "hunter2hunter2hunter2hunter2", "***"); /* also at offset 7 */
        check_mode(r, REDACT_NONE, "hunter2hunter2-hunter2hunter2", "***-***");
        /* Overlapping secrets: nothing of either is left. */
        check_mode(r, REDACT_NONE, "[abcdefgh12ijklmnop]", "[***]");
        /* One secret contains another. */
        check_mode(r, REDACT_NONE, "mysupersecretvalue2 supersecretvalue", "*** ***");
        /* Value redaction runs first, then the patterns see "***". */
        check_mode(r, REDACT_FULL, "DB_PASSWORD=hunter2hunter2", "DB_PASSWORD=***");
        /* Not there: unchanged, and NUL bytes are fine. */
        check_mode(r, REDACT_NONE, "hunter2 hunter3hunter2", "hunter2 hunter3hunter2");
        check_full(r, REDACT_NONE, "x\0hunter2hunter2\0y", 18, "x\0***\0y", 7);
}

/* Neither a pass's mask nor a "***" completes a secret with the text around it. */
static void test_redact_text_value_after_passes(void **state)
{
        static const char *const secrets[] = {"(sk-ant.", "***AAAAA", NULL};
        _cleanup_redactor_ struct redactor *r = new_redactor_with(secrets);

        /* The prefix pass masks the key as "(sk-ant...mnop)". */
        check_mode(r, REDACT_FULL, "(sk-ant-api03-abcdefghijklmnop)", "***..mnop)");
        /* "***" + "AAAAA" after the first round is the secret again. */
        check_mode(r, REDACT_NONE, "***AAAAAAAAAA", "***");
        check_mode(r, REDACT_NONE, "***AAAAAAAAAAAAAAA", "***");
}

static void test_redact_text_value_fast_path(void **state)
{
        static const char *const secrets[] = {"hunter2hunter2", SECRET, "AKIAIOSFODNN7EXAMPLE",
                                              NULL};
        _cleanup_redactor_ struct redactor *r = new_redactor_with(secrets);
        size_t n = 100 * 1024;
        char *in = malloc(n);
        char *out = NULL;
        size_t len;
        double t;

        assert_non_null(in);
        for (size_t i = 0; i < n; i++)
                in[i] = "The quick brown fox %2F jumps + over the lazy dog 0123456789.\n"[i % 62];
        t = now();
        for (int i = 0; i < 20; i++)
                assert_int_equal(redact_text(r, REDACT_NONE, in, n, &out, &len), 0);
        t = now() - t;
        print_message("value pass, 20 x 100 KB: %.3f s\n", t);
        assert_true(t < 20.0);
        memcpy(in + n / 2, "hunter2hunter2", 14);
        assert_int_equal(redact_text(r, REDACT_NONE, in, n, &out, &len), 1);
        assert_int_equal(len, n - 14 + 3);
        assert_memory_equal(out + n / 2, "***", 3);
        free(out);
        free(in);
}

/* ------------------------------------------------------------------------------------------ */
/* Large and hostile inputs, threads                                                           */

static char *repeat(const char *unit, const char *tail, size_t n)
{
        size_t ul = strlen(unit), tl = strlen(tail);
        char *s = malloc(n + 1);

        assert_non_null(s);
        for (size_t i = 0; i < n - tl; i++)
                s[i] = unit[i % ul];
        memcpy(s + n - tl, tail, tl);
        s[n] = 0;
        return s;
}

static void test_redact_text_large(void **state)
{
        static const char *const cases[][2] = {
                {"Log line 42: all good, nothing secret here; value=17 (ok) https://x.io/a\n", ""},
                {"A", "=x"},
                {"TOKEN", "=x"},
                {"1", ":"},
                {"redis://", "a:@"},
                {"postgres://u:", "@"},
                {"http://", "?"},
                {"-----BEGIN PRIVATE KEY-----", "-----END PUBLIC KEY-----"},
                {"\"token\" :", "\""},
                {"+1", ""},
                {"eyJ", ""},
                {"%2", ""},
        };
        static const char *const secrets[] = {"hunter2hunter2", SECRET, NULL};
        _cleanup_redactor_ struct redactor *r = new_redactor_with(secrets);
        size_t n = 1024 * 1024;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *in = repeat(cases[i][0], cases[i][1], n), *out = NULL;
                size_t len = 0;
                double t = now();
                int rc = redact_text(r, REDACT_FULL, in, n, &out, &len);

                t = now() - t;
                if (t > 0.5)
                        print_message("1 MB of '%s': %.3f s\n", cases[i][0], t);
                assert_true(rc >= 0);
                assert_true(t < 30.0);
                if (rc > 0)
                        free(out);
                free(in);
        }

        /* 1 MB of mixed text with secrets sprinkled in: all of them go. */
        {
                char *in =
                        repeat("lorem ipsum dolor sit amet, consectetur adipiscing elit\n", "", n);
                size_t len = 0;
                char *out;

                for (size_t off = 1000; off + 50000 + 64 < n; off += 100 * 1000) {
                        memcpy(in + off, " hunter2hunter2 sk-abcdefghijklmnop1234 ", 40);
                        memcpy(in + off + 50000, "OPENAI_API_KEY=abcdefghijklmnopqrstuvwxyz\n", 42);
                }
                out = redacted(r, REDACT_FULL, in, n, &len);
                assert_null(memmem(out, len, "hunter2hunter2", 14));
                assert_null(memmem(out, len, "sk-abcdefghijklmnop1234", 23));
                assert_null(memmem(out, len, "abcdefghijklmnopqrstuvwxyz", 26));
                assert_non_null(memmem(out, len, " *** sk-abc...1234 ", 19));
                free(out);
                free(in);
        }
}

/* ------------------------------------------------------------------------------------------ */
/* Pre-filters: the passes try their regex only where C code found a candidate                */

/* Expected texts from the implementation before the pre-filters (each must stay byte-identical). */
static void test_redact_text_candidates(void **state)
{
        /* Prefix tokens that may be short ('.' and '=' end the token run). */
        CHECK("x SG.abcdefghijklmnop y", "x SG.abc...mnop y");
        CHECK("gAAAA====================", "gAAAA=...====");
        SAME("gAAAA===================");
        SAME("xsk-abcdefghijklmnop1234"); /* not a token start */
        SAME("ghp_abcdefghij_klmnop");    /* the run goes on with a byte ghp_ does not take */
        /* JSON keys in any case, U+212A KELVIN SIGN being a 'k'; values must be strings. */
        CHECK("{\"to\u212Aen\": \"abcdefghijklmnopqrstuvwxyz\"}",
              "{\"to\u212Aen\": \"abcdef...wxyz\"}");
        CHECK("{\"refresh_to\u212Aen\" : \"abc\"}", "{\"refresh_to\u212Aen\": \"***\"}");
        CHECK("{\"TOKEN\":\"x\", \"token\": 5, \"Secret\" :\"abcdefghijklmnopqrstu\"}",
              "{\"TOKEN\": \"***\", \"token\": 5, \"Secret\": \"abcdef...rstu\"}");
        /* Telegram: \d is Unicode; exactly 30 token bytes are needed after the ':'. */
        CHECK("bot\u0663\u0663\u0663\u0663\u0663\u0663\u0663\u0663"
              ":abcdefghijklmnopqrstuvwxyz0123",
              "bot\u0663\u0663\u0663\u0663\u0663\u0663\u0663\u0663:***");
        CHECK("12345678:abcdefghijklmnopqrstuvwxyz012 and 123456789:abcdefghijklmnopqrstuvwxyz0123",
              "12345678:abcdefghijklmnopqrstuvwxyz012 and 123456789:***");
        /* URL queries: the first "://" of a URL is its start; '#' ends the path. */
        CHECK("see http://a/http://b?token=x end", "see http://a/http://b?token=*** end");
        CHECK("ftp://h?x=1 xhttps://h/p?code=42#frag wss://h?api_key=k&ok=1",
              "ftp://h?x=1 xhttps://h/p?code=***#frag wss://h?api_key=***&ok=1");
        /* Env names: up to 50 characters before the keyword and 50 after it. */
        CHECK("XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX_TOKEN=abc",
              "XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX_TOKEN=***");
        SAME("MY_TOKEN_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX="
             "abcdefghijklmnopqrstuvwxyz");
        CHECK("PASSWORD \u00A0= 'hunter2'", "PASSWORD='***'");
        {
                /* The longest name: 50 characters, the longest keyword, 50 characters. */
                char in[256], want[256], fifty_x[51], fifty_y[51];

                memset(fifty_x, 'X', 50);
                memset(fifty_y, 'Y', 50);
                fifty_x[50] = fifty_y[50] = 0;
                snprintf(in, sizeof(in), "X%sCREDENTIAL%s = abcdefghijklmnopqrstuvwxyz", fifty_x,
                         fifty_y);
                snprintf(want, sizeof(want), "X%sCREDENTIAL%s=abcdef...wxyz", fifty_x, fifty_y);
                CHECK(in, want);
                snprintf(in, sizeof(in), "%sCREDENTIAL%sY=abcdefghijklmnopqrstuvwxyz", fifty_x,
                         fifty_y);
                SAME(in);
        }
        /* Phone numbers: 6 to 14 more digits, Unicode ones too. */
        CHECK("1+1=2, +1555123, +15551234567, +1\u0663\u0663\u0663\u0663\u0663\u0663",
              "1+1=2, +1****23, +155****4567, +1****\u0663\u0663");
        /* DB schemes in any case, U+017F LATIN SMALL LETTER LONG S being an 's'. */
        CHECK("po\u017Ftgres://u:pw@h REDIS://a:b@c mongodb+srv://x:y@z",
              "po\u017Ftgres://u:***@h REDIS://a:***@c mongodb+srv://x:***@z");
        CHECK("AuThOrIzAtIoN:  bEaReR abcdefghijklmnop1234",
              "AuThOrIzAtIoN:  bEaReR abcdef...1234");
}

/* The scans work on blocks of 16 to 64 bytes: put each kind of match at every offset. */
static void test_redact_text_offsets(void **state)
{
        static const char *const cases[][2] = {
                {"sk-abcdefghijklmnop1234", "sk-abc...1234"},
                {"SG.abcdefghijklmnop", "SG.abc...mnop"},
                {"API_TOKEN = abcdefghijklmnopqrstuvwxyz", "API_TOKEN=abcdef...wxyz"},
                {"{\"token\": \"abcdefghijklmnopqrstuvwxyz\"}", "{\"token\": \"abcdef...wxyz\"}"},
                {"bot12345678:abcdefghijklmnopqrstuvwxyz0123", "bot12345678:***"},
                {"see http://a/http://b?token=x", "see http://a/http://b?token=***"},
                {"+15551234567", "+155****4567"},
                {"postgres://u:pw@h", "postgres://u:***@h"},
                {"Authorization: Bearer abcdefghijklmnop1234",
                 "Authorization: Bearer abcdef...1234"},
                {"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcd", "eyJhbG...abcd"},
                {"<@123456789012345678>", "<@***>"},
        };
        static const char *const tails[] = {"", " ", " end\n"};

        for (size_t c = 0; c < ELEMENTSOF(cases); c++)
                for (size_t off = 0; off < 100; off++)
                        for (size_t t = 0; t < ELEMENTSOF(tails); t++) {
                                char in[256], want[256];

                                memset(in, ' ', off);
                                memset(want, ' ', off);
                                snprintf(in + off, sizeof(in) - off, "%s%s", cases[c][0], tails[t]);
                                snprintf(want + off, sizeof(want) - off, "%s%s", cases[c][1],
                                         tails[t]);
                                CHECK(in, want);
                        }
}

/* Value-based redaction probes every 4th offset, and looks for URL forms near '%' and '+'. */
static void test_redact_text_value_offsets(void **state)
{
        static const char *const secrets[] = {"hunter2hunter2", "s3cr3t value", "a bcdefghij",
                                              NULL};
        static const char *const forms[] = {
                "hunter2hunter2",       "68756e7465723268756e74657232",
                "aHVudGVyMmh1bnRlcjI=", "hunter2%68unter2",
                "%68unter2hunter%32",   "s3cr3t+value",
                "s3cr3t%20value",       "%73%33cr3t value",
                "a+bcdefghij",          "a%20bcdefghij",
        };
        _cleanup_redactor_ struct redactor *r = new_redactor_with(secrets);

        for (size_t f = 0; f < ELEMENTSOF(forms); f++)
                for (size_t off = 0; off < 40; off++)
                        for (size_t fill = 0; fill < 2; fill++) {
                                char in[128], want[128];

                                memset(in, fill ? '+' : ' ', off);
                                memset(want, fill ? '+' : ' ', off);
                                snprintf(in + off, sizeof(in) - off, "%s x", forms[f]);
                                snprintf(want + off, sizeof(want) - off, "*** x");
                                check_mode(r, REDACT_NONE, in, want);
                        }
        /* Adjacent occurrences stay separate, overlapping ones merge. */
        check_mode(r, REDACT_NONE, "hunter2hunter2hunter2hunter2", "***");
        check_mode(r, REDACT_NONE, "hunter2hunter2 hunter2hunter2", "*** ***");
        check_mode(r, REDACT_NONE, "s3cr3t+values3cr3t%20value", "******");
}

/* Plain text: every pre-filter says no, and nothing is allocated or returned. */
static void test_redact_text_fast_path(void **state)
{
        static const char *const secrets[] = {"hunter2hunter2", SECRET, NULL};
        _cleanup_redactor_ struct redactor *r = new_redactor_with(secrets);
        static const char *const texts[] = {
                "2024-01-02T03:04:05.123+00:00 INFO server: on http://127.0.0.1:8080/ (pid=42)\n",
                "tests/test_foo.py::test_bar PASSED [ 12%]\n  x = 17 + 4 * y  # offset: base + d\n",
                "{\"name\": \"pkg\", \"version\": \"1.2.3\", \"url\": \"https://a.io/a.tgz\"}\n",
                "commit 3f2a9c8e1b7d4a6f0e5c2b1a9d8e7f6a5b4c3d2e (HEAD -> main)\nC++ and 1+1=2\n",
                "see https://docs.python.org/3/library/re.html#re.sub and mail bob@example.com\n",
        };
        char plain[4096];
        size_t n = 0;

        for (int i = 1; i <= 40; i++)
                n += (size_t) snprintf(plain + n, sizeof(plain) - n,
                                       "line %02d: the quick brown fox jumps over the lazy dog 7\n",
                                       i);
        for (int mode = REDACT_FULL; mode <= REDACT_NONE; mode++) {
                check_full(NULL, mode, plain, n, plain, n);
                check_full(r, mode, plain, n, plain, n);
                for (size_t i = 0; i < ELEMENTSOF(texts); i++) {
                        check_mode(NULL, mode, texts[i], texts[i]);
                        check_mode(r, mode, texts[i], texts[i]);
                }
        }
}

/* Linear in the input: ~1 ms of CPU a MB; a bound 100x above that only trips on a blow-up. */
static void test_redact_text_speed(void **state)
{
        static const char *const secrets[] = {"hunter2hunter2", SECRET, NULL};
        static const char *const units[] = {
                "line 01: the quick brown fox jumps over the lazy dog 7\n",
                ("2024-01-02T03:04:05.123+00:00 INFO x: GET http://127.0.0.1:8080/a?b=1 (pid=42) "
                 "{\"name\": \"v\", \"n\": 1} C++ 1+1=2 key: value\n"),
        };
        _cleanup_redactor_ struct redactor *r = new_redactor_with(secrets);
        size_t n = 1024 * 1024;

        for (size_t u = 0; u < ELEMENTSOF(units); u++)
                for (int mode = REDACT_FULL; mode <= REDACT_CODE; mode++) {
                        char *in = repeat(units[u], "", n), *out = NULL;
                        size_t len = 0;
                        double t = now();
                        int rc = redact_text(r, mode, in, n, &out, &len);

                        t = now() - t;
                        print_message("1 MB of '%.20s...', mode %d: %.1f ms\n", units[u], mode,
                                      t * 1e3);
                        assert_int_equal(rc, 0);
                        assert_true(t < 20.0);
                        free(in);
                }
}

struct thread_arg {
        const struct redactor *r;
        const char *in;
        const char *want;
        int failures;
};

static void *thread_main(void *p)
{
        struct thread_arg *a = p;

        for (int i = 0; i < 300; i++) {
                char *out = NULL;
                size_t len = 0;
                int rc = redact_text(a->r, REDACT_FULL, a->in, strlen(a->in), &out, &len);

                if (rc != 1 || len != strlen(a->want) || memcmp(out, a->want, len) != 0)
                        a->failures++;
                free(out);
        }
        return NULL;
}

static void test_redact_text_threads(void **state)
{
        static const char *const secrets[] = {"hunter2hunter2", NULL};
        _cleanup_redactor_ struct redactor *r = new_redactor_with(secrets);
        const char *in =
                "pw hunter2hunter2, key sk-abcdefghijklmnop1234, "
                "https://h/?token=abc, +15551234567, AWS_SECRET=abcdefghijklmnopqrstuvwxyz";
        /* The query value runs to the next space, so it takes the comma with it. */
        const char *want = "pw ***, key sk-abc...1234, https://h/?token=*** +155****4567, "
                           "AWS_SECRET=abcdef...wxyz";
        struct thread_arg args[6];
        pthread_t th[6];

        check_mode(r, REDACT_FULL, in, want);
        for (size_t i = 0; i < ELEMENTSOF(th); i++) {
                args[i] = (struct thread_arg){.r = r, .in = in, .want = want};
                assert_int_equal(pthread_create(&th[i], NULL, thread_main, &args[i]), 0);
        }
        for (size_t i = 0; i < ELEMENTSOF(th); i++) {
                assert_int_equal(pthread_join(th[i], NULL), 0);
                assert_int_equal(args[i].failures, 0);
        }
}

/* ------------------------------------------------------------------------------------------ */
/* redact_json                                                                                 */

static void assert_json_str(json_t *v, const char *want)
{
        assert_true(json_is_string(v));
        if (strcmp(json_string_value(v), want) != 0)
                print_message("want '%s', got '%s'\n", want, json_string_value(v));
        assert_string_equal(json_string_value(v), want);
}

static void test_redact_json_nested(void **state)
{
        static const char *const secrets[] = {"hunter2hunter2", NULL};
        _cleanup_redactor_ struct redactor *r = new_redactor_with(secrets);
        json_error_t err;
        json_t *v, *b;

        v = json_loads("{\"a\": \"sk-abcdefghijklmnop1234\","
                       " \"b\": [1, \"x\", {\"c\": \"OPENAI_API_KEY=abcdefghijklmnopqrstuvwxyz\"},"
                       "        [\"pw=hunter2hunter2\", null, true]],"
                       " \"sk-abcdefghijklmnop1234\": \"a key is redacted too\","
                       " \"token hunter2hunter2\": 1, \"token hunter2hunter2 \": 2,"
                       " \"token ***\": 3,"
                       " \"d\": {\"e\": {\"f\": \"ok\"}}}",
                       0, &err);
        assert_non_null(v);
        assert_int_equal(redact_json(r, REDACT_FULL, v), 6);
        assert_json_str(json_object_get(v, "a"), "sk-abc...1234");
        b = json_object_get(v, "b");
        assert_int_equal(json_array_size(b), 4);
        assert_int_equal(json_integer_value(json_array_get(b, 0)), 1);
        assert_json_str(json_array_get(b, 1), "x");
        assert_json_str(json_object_get(json_array_get(b, 2), "c"), "OPENAI_API_KEY=abcdef...wxyz");
        assert_json_str(json_array_get(json_array_get(b, 3), 0), "pw=***");
        assert_true(json_is_null(json_array_get(json_array_get(b, 3), 1)));
        assert_null(json_object_get(v, "sk-abcdefghijklmnop1234"));
        assert_json_str(json_object_get(v, "sk-abc...1234"), "a key is redacted too");
        /* Keys that meet under one redacted name: none is lost. */
        assert_int_equal(json_integer_value(json_object_get(v, "token ***")), 3);
        assert_int_equal(json_integer_value(json_object_get(v, "token *** ")), 2);
        assert_int_equal(json_integer_value(json_object_get(v, "token *** (2)")), 1);
        assert_json_str(json_object_get(json_object_get(json_object_get(v, "d"), "e"), "f"), "ok");

        json_decref(v);

        /* Nothing to change; code mode leaves env assignments alone. */
        v = json_pack("{s:s, s:[s, {s:s}]}", "a", "plain", "b", "text", "g",
                      "MY_TOKEN=abcdefghijklmnopqrstuvwxyz");
        assert_non_null(v);
        assert_int_equal(redact_json(r, REDACT_CODE, v), 0);
        assert_int_equal(redact_json(r, REDACT_FULL, v), 1);
        json_decref(v);

        /* A string with a NUL byte inside. */
        v = json_array();
        json_array_append_new(v, json_stringn("a\0hunter2hunter2", 16));
        assert_int_equal(redact_json(r, REDACT_NONE, v), 1);
        assert_int_equal(json_string_length(json_array_get(v, 0)), 5);
        assert_memory_equal(json_string_value(json_array_get(v, 0)), "a\0***", 5);
        json_decref(v);

        /* A bare string is changed in place. */
        v = json_string("token sk-abcdefghijklmnop1234");
        assert_int_equal(redact_json(r, REDACT_FULL, v), 1);
        assert_json_str(v, "token sk-abc...1234");
        json_decref(v);

        assert_int_equal(redact_json(r, REDACT_FULL, NULL), 0);
        v = json_integer(5);
        assert_int_equal(redact_json(r, REDACT_FULL, v), 0);
        json_decref(v);
}

static void test_redact_json_depth(void **state)
{
        json_t *root = json_array(), *cur = root, *deepest;

        /* 64 levels below the root: every string is redacted. */
        for (int d = 0; d < 64; d++) {
                json_t *next = json_array();

                json_array_append_new(cur, json_string("sk-abcdefghijklmnop1234"));
                json_array_append_new(cur, next);
                cur = next;
        }
        json_array_append_new(cur, json_string("sk-abcdefghijklmnop1234"));
        deepest = cur;
        assert_int_equal(redact_json(NULL, REDACT_FULL, root), 65);
        cur = root;
        for (int d = 0; d <= 64; d++) {
                assert_json_str(json_array_get(cur, 0), "sk-abc...1234");
                cur = json_array_get(cur, 1);
        }

        /* One more level would go unredacted: the whole redaction fails instead. */
        json_array_append_new(deepest, json_array());
        json_array_append_new(json_array_get(deepest, 1), json_string("sk-abcdefghijklmnop1234"));
        assert_int_equal(redact_json(NULL, REDACT_FULL, root), -E2BIG);
        json_decref(root);
}

/* ------------------------------------------------------------------------------------------ */
/* Fail closed: a failure inside the redaction is an error, never the text unchanged           */

/* Texts that each need a pattern pass (and one a value) to come out clean. */
static const char *const fault_texts[] = {
        "key sk-abcdefghijklmnop1234 end",
        "OPENAI_API_KEY=abcdefghijklmnopqrstuvwxyz",
        "{\"token\": \"abcdefghijklmnopqrstuvwxyz\"}",
        "Authorization: Bearer abcdefghijklmnopqrstuvwxyz",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIabc\n-----END RSA PRIVATE KEY-----",
        "postgres://user:hunter2pass@db.example.com/x",
        "https://x.io/a?access_token=abcdefghijklmnop&b=1",
        "see eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefghijklmnopqrstuvwxyz here",
        "the value hunter2hunter2 twice: aHVudGVyMmh1bnRlcjI=",
};

/* Every pcre2_match() failure (a match limit, no memory) fails the redaction. */
static void test_redact_text_match_failure(void **state)
{
        static const char *const secrets[] = {"hunter2hunter2", NULL};
        static const int rcs[] = {PCRE2_ERROR_MATCHLIMIT, PCRE2_ERROR_DEPTHLIMIT,
                                  PCRE2_ERROR_HEAPLIMIT, PCRE2_ERROR_NOMEMORY};
        _cleanup_redactor_ struct redactor *r = new_redactor_with(secrets);

        for (size_t t = 0; t < ELEMENTSOF(fault_texts); t++)
                for (size_t i = 0; i < ELEMENTSOF(rcs); i++)
                        for (unsigned long k = 1;; k++) {
                                const char *in = fault_texts[t];
                                char *out = NULL;
                                size_t len = 0;
                                int rc;

                                fault_match_arm(k, rcs[i]);
                                rc = redact_text(r, REDACT_FULL, in, strlen(in), &out, &len);
                                fault_match_arm(0, 0);
                                if (!fault_match_fired()) {
                                        /* Past the last match call: the real result. */
                                        assert_int_equal(rc, 1);
                                        free(out);
                                        break;
                                }
                                if (rc >= 0)
                                        print_message("'%s': match %lu failed (%d), rc %d\n", in, k,
                                                      rcs[i], rc);
                                assert_int_equal(rc,
                                                 rcs[i] == PCRE2_ERROR_NOMEMORY ? -ENOMEM : -E2BIG);
                        }
}

/* Each allocation of a redaction, made to fail in turn: an error or the right text, never less. */
static void test_redact_text_alloc_failure(void **state)
{
        static const char *const secrets[] = {"hunter2hunter2", NULL};
        _cleanup_redactor_ struct redactor *r = new_redactor_with(secrets);

        for (size_t t = 0; t < ELEMENTSOF(fault_texts); t++) {
                const char *in = fault_texts[t];
                size_t want_len = 0;
                char *want = redacted(r, REDACT_FULL, in, strlen(in), &want_len);
                unsigned long failed = 0;

                assert_true(want_len != strlen(in) || memcmp(want, in, want_len) != 0);
                for (unsigned long k = 1;; k++) {
                        char *out = NULL;
                        size_t len = 0;
                        int rc;

                        fault_alloc_arm(k, 0);
                        rc = redact_text(r, REDACT_FULL, in, strlen(in), &out, &len);
                        fault_alloc_arm(0, 0);
                        if (!fault_alloc_fired()) {
                                assert_int_equal(rc, 1);
                                free(out);
                                break;
                        }
                        failed++;
                        assert_int_not_equal(rc, 0);
                        if (rc > 0) {
                                assert_int_equal(len, want_len);
                                assert_memory_equal(out, want, len);
                                free(out);
                        } else
                                assert_int_equal(rc, -ENOMEM);
                }
                assert_true(failed > 0);
                free(want);
        }
}

/* redact_json() passes every failure up (the caller then drops the half-redacted value). */
static void test_redact_json_failure(void **state)
{
        static const char *const secrets[] = {"hunter2hunter2", NULL};
        _cleanup_redactor_ struct redactor *r = new_redactor_with(secrets);

        for (unsigned long k = 1;; k++) {
                json_t *v = json_pack("{s:s, s:[s, {s:s}]}", "a", "x hunter2hunter2 y", "b",
                                      "hunter2hunter2", "c", "z hunter2hunter2");
                int rc;

                assert_non_null(v);
                fault_alloc_arm(k, 0);
                rc = redact_json(r, REDACT_NONE, v);
                fault_alloc_arm(0, 0);
                json_decref(v);
                if (!fault_alloc_fired()) {
                        assert_int_equal(rc, 3);
                        break;
                }
                assert_int_equal(rc, -ENOMEM);
        }
        for (unsigned long k = 1;; k++) {
                json_t *v = json_pack("[s]", "key sk-abcdefghijklmnop1234");
                int rc;

                assert_non_null(v);
                fault_match_arm(k, PCRE2_ERROR_MATCHLIMIT);
                rc = redact_json(r, REDACT_FULL, v);
                fault_match_arm(0, 0);
                json_decref(v);
                if (!fault_match_fired()) {
                        assert_int_equal(rc, 1);
                        break;
                }
                assert_int_equal(rc, -E2BIG);
        }
        assert_string_equal(redact_strerror(-E2BIG), "the text is too large or complex to scan");
        assert_string_equal(redact_strerror(-ENOMEM), "Cannot allocate memory");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_redact_text_mask_examples),
                cmocka_unit_test(test_redact_text_prefix),
                cmocka_unit_test(test_redact_text_env),
                cmocka_unit_test(test_redact_text_json_fields),
                cmocka_unit_test(test_redact_text_auth_header),
                cmocka_unit_test(test_redact_text_telegram),
                cmocka_unit_test(test_redact_text_private_key),
                cmocka_unit_test(test_redact_text_db_connstr),
                cmocka_unit_test(test_redact_text_jwt),
                cmocka_unit_test(test_redact_text_url_userinfo),
                cmocka_unit_test(test_redact_text_url_query),
                cmocka_unit_test(test_redact_text_form_body),
                cmocka_unit_test(test_redact_text_discord),
                cmocka_unit_test(test_redact_text_phone),
                cmocka_unit_test(test_redact_text_modes),
                cmocka_unit_test(test_redact_text_unchanged),
                cmocka_unit_test(test_redact_text_nul_bytes),
                cmocka_unit_test(test_redact_text_invalid_utf8),
                cmocka_unit_test(test_redactor_add_secret),
                cmocka_unit_test(test_redact_text_value_encodings),
                cmocka_unit_test(test_redact_text_value_in_words),
                cmocka_unit_test(test_redact_text_value_after_passes),
                cmocka_unit_test(test_redact_text_value_fast_path),
                cmocka_unit_test(test_redact_text_large),
                cmocka_unit_test(test_redact_text_candidates),
                cmocka_unit_test(test_redact_text_offsets),
                cmocka_unit_test(test_redact_text_value_offsets),
                cmocka_unit_test(test_redact_text_fast_path),
                cmocka_unit_test(test_redact_text_speed),
                cmocka_unit_test(test_redact_text_threads),
                cmocka_unit_test(test_redact_json_nested),
                cmocka_unit_test(test_redact_json_depth),
                cmocka_unit_test(test_redact_text_match_failure),
                cmocka_unit_test(test_redact_text_alloc_failure),
                cmocka_unit_test(test_redact_json_failure),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
