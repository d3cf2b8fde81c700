/* SPDX-License-Identifier: MIT */
/*
 * The streaming redactor (core/output/redact-stream.h): a secret or a pattern match placed
 * across a cut, at every offset, is redacted as in the whole text; pieces stay within their
 * size; nothing is lost or reordered.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/ptc-test.h"

#include "basic/buf.h"
#include "core/output/redact-stream.h"

#define SECRET "Zq7vKb2pLm9wRt4Y"

struct sink {
        struct buf all;
        size_t pieces, max_piece;
        bool split; /* a piece held part of the secret */
};

static int collect(void *userdata, const char *text, size_t n)
{
        struct sink *k = userdata;

        k->pieces++;
        /* A piece's output is at most its input: the redactions here shorten. */
        k->max_piece = MAX(k->max_piece, n);
        for (size_t i = 0; i + 4 <= strlen(SECRET); i++)
                if (memmem(text, n, &SECRET[i], 4))
                        k->split = true;
        return buf_append(&k->all, text, n);
}

static struct redactor *new_redactor(void)
{
        struct redactor *r = NULL;

        assert_int_equal(redactor_new(&r), 0);
        assert_int_equal(redactor_add_secret(r, SECRET), 0);
        return r;
}

/* @text fed in @step-byte feeds through a stream cutting pieces of @piece bytes. */
static void run_stream(const struct redactor *r, const char *text, size_t n, size_t piece,
                       size_t step, struct sink *k)
{
        _cleanup_redact_stream_ struct redact_stream *s = NULL;

        *k = (struct sink){.all = BUF_INIT(SIZE_MAX - 1)};
        assert_int_equal(redact_stream_new(r, REDACT_FULL, piece, &s), 0);
        for (size_t pos = 0; pos < n; pos += step)
                assert_int_equal(redact_stream_feed(s, text + pos, MIN(step, n - pos), collect, k),
                                 0);
        assert_int_equal(redact_stream_flush(s, collect, k), 0);
        assert_int_equal(redact_stream_held(s), 0);
}

static void test_hold_covers_values(void **state)
{
        struct redactor *r = new_redactor();
        char big[1001];

        assert_int_equal(redact_stream_hold(NULL), REDACT_STREAM_PATTERN_MAX);
        assert_true(redact_stream_hold(r) >= REDACT_STREAM_PATTERN_MAX);
        memset(big, 'a', 1000);
        big[0] = 'Q';
        big[1000] = 0;
        assert_int_equal(redactor_add_secret(r, big), 0);
        assert_true(redact_stream_hold(r) >= 6 * 1000);
        redactor_free(r);
}

/* A value across the first cut at every offset 0..len: one "***", no fragment. */
static void test_value_across_cut_every_offset(void **state)
{
        struct redactor *r = new_redactor();
        size_t piece = 4096, sl = strlen(SECRET);

        for (size_t k = 0; k <= sl; k++) {
                size_t n = piece - k + sl + 3 * REDACT_STREAM_PATTERN_MAX;
                char *t = malloc(n);
                struct sink out;

                assert_non_null(t);
                memset(t, '.', n);
                memcpy(t + piece - k, SECRET, sl);
                run_stream(r, t, n, piece, 1000, &out);
                assert_false(out.split);
                assert_true(out.pieces >= 2);
                assert_true(out.max_piece <= piece);
                /* Exactly the whole text's redaction. */
                assert_int_equal(out.all.len, n - sl + 3);
                assert_non_null(memmem(out.all.data, out.all.len, "***", 3));
                buf_release(&out.all);
                free(t);
        }
        redactor_free(r);
}

/* A pattern (a vendor key, a JWT) across the cut: masked as in the whole text. */
static void test_pattern_across_cut(void **state)
{
        static const char *const keys[] = {
                "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789",
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijklmnop",
                "postgres://admin:hunter2hunter2@db.example.com/app",
        };

        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                size_t kl = strlen(keys[i]);

                for (size_t k = 0; k <= kl; k += 3) {
                        size_t n = 200 + kl + 2 * REDACT_STREAM_PATTERN_MAX;
                        char *t = malloc(n + 1), *whole = NULL;
                        size_t wl = 0;
                        struct sink out;
                        int rc;

                        assert_non_null(t);
                        memset(t, '.', n);
                        t[199 - k] = ' ';
                        memcpy(t + 200 - k, keys[i], kl);
                        t[200 - k + kl] = ' ';
                        t[n] = 0;
                        rc = redact_text(NULL, REDACT_FULL, t, n, &whole, &wl);
                        assert_int_equal(rc, 1);
                        run_stream(NULL, t, n, 200, 777, &out);
                        if (out.all.len != wl || memcmp(out.all.data, whole, wl) != 0)
                                print_message("key %zu offset %zu differs\n", i, k);
                        assert_int_equal(out.all.len, wl);
                        assert_memory_equal(out.all.data, whole, wl);
                        buf_release(&out.all);
                        free(whole);
                        free(t);
                }
        }
}

/* The secret's encoded forms (hex, base64, URL-encoded) across the cut at every offset. */
static void test_encoded_forms_across_cut(void **state)
{
        static const char *const forms[] = {
                "5a7137764b6232704c6d397752743459",                 /* hex, upper-case tail */
                "5a7137764b6232704c6d397752743459",                 /* hex */
                "WnE3dktiMnBMbTl3UnQ0WQ==",                         /* base64 */
                "%5Aq7vKb2pLm9wRt4%59",                             /* URL-encoded, in part */
                "%5A%71%37%76%4B%62%32%70%4C%6D%39%77%52%74%34%59", /* URL-encoded, all */
        };
        struct redactor *r = new_redactor();

        for (size_t i = 0; i < ELEMENTSOF(forms); i++) {
                size_t fl = strlen(forms[i]);

                for (size_t k = 0; k <= fl; k++) {
                        size_t n = 4096 + fl + 2 * REDACT_STREAM_PATTERN_MAX, wl = 0;
                        char *t = malloc(n), *whole = NULL;
                        struct sink out;

                        assert_non_null(t);
                        memset(t, '.', n);
                        memcpy(t + 4096 - k, forms[i], fl);
                        assert_int_equal(redact_text(r, REDACT_FULL, t, n, &whole, &wl), 1);
                        run_stream(r, t, n, 4096, 1500, &out);
                        assert_int_equal(out.all.len, wl);
                        assert_memory_equal(out.all.data, whole, wl);
                        for (size_t j = 0; j + 4 <= fl; j++)
                                assert_null(memmem(out.all.data, out.all.len, forms[i] + j, 4));
                        buf_release(&out.all);
                        free(whole);
                        free(t);
                }
        }
        redactor_free(r);
}

/* A private key block across the cut is removed whole. */
static void test_key_block_across_cut(void **state)
{
        static const char key[] = "-----BEGIN RSA PRIVATE KEY-----\n"
                                  "MIIEpAIBAAKCAQEAx1234567890abcdefghijklmnopqrstuvwxyzABCDEFGH\n"
                                  "MIIEpAIBAAKCAQEAx1234567890abcdefghijklmnopqrstuvwxyzABCDEFGH\n"
                                  "-----END RSA PRIVATE KEY-----\n";
        size_t n = 4096 + 2 * REDACT_STREAM_PATTERN_MAX;
        char *t = malloc(n);
        struct sink out;

        assert_non_null(t);
        memset(t, 'a', n);
        for (size_t i = 63; i < n; i += 64)
                t[i] = '\n';
        memcpy(t + 4096 - 70, key, strlen(key));
        run_stream(NULL, t, n, 4096, 4096, &out);
        assert_null(memmem(out.all.data, out.all.len, "MIIEpAIBAAKCAQEA", 16));
        buf_release(&out.all);
        free(t);
}

/* Many secrets, many cuts, odd feeds: the output is the whole text's redaction. */
static void test_many_cuts_equal_whole(void **state)
{
        struct redactor *r = new_redactor();
        size_t n = 300000, wl = 0;
        char *t = malloc(n), *whole = NULL;
        struct sink out;

        assert_non_null(t);
        for (size_t i = 0; i < n; i++)
                t[i] = (char) ('a' + (i * 7) % 26);
        for (size_t pos = 1000; pos + 16 < n; pos += 4093)
                memcpy(t + pos, SECRET, 16);
        assert_int_equal(redact_text(r, REDACT_FULL, t, n, &whole, &wl), 1);
        run_stream(r, t, n, 4096, 1 + 3001, &out);
        assert_false(out.split);
        assert_int_equal(out.all.len, wl);
        assert_memory_equal(out.all.data, whole, wl);
        buf_release(&out.all);
        free(whole);
        free(t);
        redactor_free(r);
}

/* Cuts never split a UTF-8 character. */
static void test_cuts_on_char_boundaries(void **state)
{
        size_t n = 3 * REDACT_STREAM_PATTERN_MAX + 1;
        char *t = malloc(n);
        struct sink out;

        assert_non_null(t);
        t[0] = 'x';
        for (size_t i = 1; i + 1 < n; i += 2) {
                t[i] = '\xC3';
                t[i + 1] = '\xA9';
        }
        run_stream(NULL, t, n, 1001, 997, &out);
        assert_int_equal(out.all.len, n);
        assert_memory_equal(out.all.data, t, n);
        buf_release(&out.all);
        free(t);
}

/* redact_find_cut() in both directions: before a secret, after it. */
static void test_find_cut_directions(void **state)
{
        struct redactor *r = new_redactor();
        char t[200];
        size_t c = 0;
        bool safe = false;

        memset(t, '.', sizeof(t));
        memcpy(t + 100, SECRET, 16);
        assert_int_equal(redact_find_cut(r, REDACT_FULL, t, sizeof(t), 108, false, &c, &safe), 0);
        assert_true(safe);
        assert_int_equal(c, 100);
        assert_int_equal(redact_find_cut(r, REDACT_FULL, t, sizeof(t), 108, true, &c, &safe), 0);
        assert_true(safe);
        assert_int_equal(c, 116);
        assert_int_equal(redact_find_cut(r, REDACT_FULL, t, sizeof(t), 50, false, &c, &safe), 0);
        assert_int_equal(c, 50);
        redactor_free(r);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_hold_covers_values),
                cmocka_unit_test(test_value_across_cut_every_offset),
                cmocka_unit_test(test_pattern_across_cut),
                cmocka_unit_test(test_encoded_forms_across_cut),
                cmocka_unit_test(test_key_block_across_cut),
                cmocka_unit_test(test_many_cuts_equal_whole),
                cmocka_unit_test(test_cuts_on_char_boundaries),
                cmocka_unit_test(test_find_cut_directions),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
