/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for secret redaction (src/core/output/redact*.c): text and JSON from a tool or
 * a script, with secret values registered. Input: a control byte (bits 0-1 the mode: full,
 * code, none, full; bit 2 JSON; bits 3-4 the number of secrets, 0-3), then per secret a length
 * byte and that many bytes (the value, up to its first NUL, as redactor_add_secret() takes a C
 * string); the rest is the text, or the JSON document (JSON_DECODE_ANY | JSON_ALLOW_NUL; one
 * that does not parse is redacted as text). Invariants:
 *   - redact_text() returns 1 with a NUL-terminated text of the length it gives, 0 (the text
 *     unchanged) or fails closed with -E2BIG or -ENOMEM;
 *   - no registered secret value (one of REDACT_MIN_SECRET_LEN bytes or more: shorter ones
 *     are ignored by design) appears in the redacted text, nor in any string or object key of
 *     the redacted JSON;
 *   - redacted JSON is still JSON: it dumps, and the dump loads again;
 *   - no crash, no leak.
 *
 * The corpus (corpus/redact/) replays under meson through fuzz-main.c; scripts/fuzz.sh
 * builds and runs the libFuzzer program.
 */

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "basic/macro.h"
#include "core/output/redact.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SECRETS_MAX 3

struct secrets {
        char *v[SECRETS_MAX];
        size_t n;
};

static void check(bool ok, const char *what)
{
        if (!ok) {
                fprintf(stderr, "fuzz-redact: %s\n", what);
                abort();
        }
}

static void check_no_secret(const struct secrets *s, const char *text, size_t n)
{
        for (size_t i = 0; i < s->n; i++) {
                size_t l = strlen(s->v[i]);

                if (l >= REDACT_MIN_SECRET_LEN && memmem(text, n, s->v[i], l)) {
                        fprintf(stderr, "fuzz-redact: secret %zu ('%s') left in the output\n", i,
                                s->v[i]);
                        abort();
                }
        }
}

static void check_json_strings(const struct secrets *s, json_t *v)
{
        const char *key;
        json_t *item;
        size_t i;

        if (json_is_string(v))
                check_no_secret(s, json_string_value(v), json_string_length(v));
        else if (json_is_array(v))
                json_array_foreach(v, i, item) check_json_strings(s, item);
        else if (json_is_object(v))
                json_object_foreach(v, key, item)
                {
                        check_no_secret(s, key, strlen(key));
                        check_json_strings(s, item);
                }
}

static void fuzz_text(const struct redactor *r, enum redact_mode mode, const struct secrets *s,
                      const char *text, size_t n)
{
        char *out = NULL;
        size_t len = SIZE_MAX;
        int k;

        k = redact_text(r, mode, text, n, &out, &len);
        if (k < 0) {
                check(k == -E2BIG || k == -ENOMEM, "redact_text: unexpected error");
                check(!out, "redact_text: a text on failure");
                return;
        }
        if (k == 0) {
                check(!out && len == SIZE_MAX, "redact_text: 0 with a result");
                check_no_secret(s, text, n);
                return;
        }
        check(k == 1 && out && len != SIZE_MAX && out[len] == 0, "redact_text: bad result");
        check_no_secret(s, out, len);
        free(out);
}

static void fuzz_json(const struct redactor *r, enum redact_mode mode, const struct secrets *s,
                      const char *text, size_t n)
{
        json_t *v = json_loadb(text, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL), *again;
        char *dump;
        int k;

        if (!v) {
                fuzz_text(r, mode, s, text, n);
                return;
        }
        k = redact_json(r, mode, v);
        if (k < 0) {
                /* Fails closed: the caller drops @v. */
                check(k == -E2BIG || k == -ENOMEM, "redact_json: unexpected error");
                json_decref(v);
                return;
        }
        check_json_strings(s, v);
        dump = json_dumps(v, JSON_ENCODE_ANY);
        check(dump != NULL, "redacted JSON does not dump");
        again = json_loads(dump, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        check(again != NULL, "redacted JSON does not load again");
        json_decref(again);
        free(dump);
        json_decref(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const enum redact_mode modes[] = {REDACT_FULL, REDACT_CODE, REDACT_NONE,
                                                 REDACT_FULL};
        struct redactor *r = NULL;
        struct secrets s = {};
        enum redact_mode mode;
        size_t at = 1, n_secrets;
        bool json;

        if (size < 1)
                return 0;
        mode = modes[data[0] & 3];
        json = data[0] & 4;
        n_secrets = (data[0] >> 3) & 3;
        if (redactor_new(&r) < 0)
                return 0;
        for (size_t i = 0; i < n_secrets && at < size && i < SECRETS_MAX; i++) {
                size_t l = MIN((size_t) data[at], size - at - 1);
                int k;

                s.v[s.n] = strndup((const char *) data + at + 1, l);
                at += 1 + l;
                if (!s.v[s.n])
                        goto out;
                k = redactor_add_secret(r, s.v[s.n++]);
                check(k == 0 || k == -ENOMEM, "redactor_add_secret: unexpected error");
                if (k < 0)
                        goto out;
        }
        if (json)
                fuzz_json(r, mode, &s, (const char *) data + at, size - at);
        else
                fuzz_text(r, mode, &s, (const char *) data + at, size - at);
out:
        for (size_t i = 0; i < s.n; i++)
                free(s.v[i]);
        redactor_free(r);
        return 0;
}
