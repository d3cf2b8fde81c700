/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "../lib/ptc-test.h"

#include "basic/buf.h"
#include "core/json/json-write.h"

/* Our writer must produce exactly what json_dumps(JSON_COMPACT | JSON_ENCODE_ANY) does. */
static void check_same(json_t *v)
{
        _cleanup_buf_ struct buf b = BUF_INIT(1 << 24);
        _cleanup_free_ char *ref = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

        assert_non_null(ref);
        assert_int_equal(json_write_compact(&b, v), 0);
        assert_string_equal(buf_str(&b), ref);
}

static void test_json_write_compact_matches_jansson(void **state)
{
        static const char *const docs[] = {
                "{}",
                "[]",
                "{\"a\":1,\"b\":[true,false,null],\"c\":{\"d\":\"e\"}}",
                "\"plain\"",
                "\"quote \\\" backslash \\\\ slash / tab \\t nl \\n cr \\r bs \\b ff \\f\"",
                "\"ctl \\u0001 \\u001f \\u007f del\"",
                "\"utf8 \\u00e9 \\u4e2d \\ud83d\\ude42 \\u2028\"",
                "[0,-1,9223372036854775807,-9223372036854775808]",
                "[0.5,1.0,-2.25,1e300,1e-300,123456789.125,0.1,3.0e20,1.5e-7]",
                "{\"z\":1,\"a\":2,\"m\":3}",
                "{\"key\":\"nul\\u0000inside\"}",
        };

        for (size_t i = 0; i < ELEMENTSOF(docs); i++) {
                json_error_t err;
                json_t *v = json_loads(docs[i], JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);

                assert_non_null(v);
                check_same(v);
                json_decref(v);
        }
}

static void test_json_write_compact_random_strings(void **state)
{
        unsigned seed = 12345;

        for (int round = 0; round < 2000; round++) {
                char raw[64];
                size_t n = (size_t) (rand_r(&seed) % sizeof(raw));
                json_t *s, *o;

                for (size_t i = 0; i < n; i++)
                        raw[i] = (char) (rand_r(&seed) % 128); /* ASCII incl. controls and NUL */
                s = json_stringn(raw, n);
                assert_non_null(s);
                o = json_pack("{s:o, s:[i, f]}", "s", s, "n", rand_r(&seed) - RAND_MAX / 2,
                              (double) rand_r(&seed) / 7.0);
                assert_non_null(o);
                check_same(o);
                json_decref(o);
        }
}

static void test_json_write_compact_limits(void **state)
{
        struct buf small = BUF_INIT(8);
        json_t *deep = json_array(), *cur = deep;
        json_t *str = json_string("a long string");

        assert_int_equal(json_write_compact(&small, str), -E2BIG);
        json_decref(str);
        buf_release(&small);
        for (int i = 0; i < JSON_WRITE_DEPTH_MAX + 5; i++) {
                json_t *next = json_array();
                json_array_append_new(cur, next);
                cur = next;
        }
        {
                _cleanup_buf_ struct buf b = BUF_INIT(1 << 20);
                assert_int_equal(json_write_compact(&b, deep), -ELOOP);
        }
        json_decref(deep);
        {
                _cleanup_buf_ struct buf b = BUF_INIT(64);
                assert_int_equal(json_write_compact(&b, NULL), -EINVAL);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_json_write_compact_matches_jansson),
                cmocka_unit_test(test_json_write_compact_random_strings),
                cmocka_unit_test(test_json_write_compact_limits),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
