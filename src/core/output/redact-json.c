/* SPDX-License-Identifier: MIT */
/*
 * redact_json(): redact_text() on every string inside a JSON value, in place.
 */
#include "core/output/redact.h"

#include <errno.h>

#include <jansson.h>

/* Nesting depth redact_json() descends to; a deeper value fails the redaction (-E2BIG). */
#define REDACT_JSON_DEPTH_MAX 64

/* The redacted copy of string @s, or NULL if unchanged; *err < 0 on failure. */
static json_t *redact_json_string(const struct redactor *r, enum redact_mode mode, json_t *s,
                                  int *err)
{
        _cleanup_free_ char *out = NULL;
        size_t len = 0;
        json_t *j;
        int e;

        *err = 0;
        e = redact_text(r, mode, json_string_value(s), json_string_length(s), &out, &len);
        if (e <= 0) {
                *err = e;
                return NULL;
        }
        j = json_stringn(out, len);
        /* Not valid UTF-8 any more (a secret ended inside a character): fail closed. */
        if (!j)
                j = json_string("***");
        if (!j)
                *err = -ENOMEM;
        return j;
}

static int redact_json_walk(const struct redactor *r, enum redact_mode mode, json_t *v,
                            unsigned depth)
{
        int count = 0, e;

        /* Strings further down would go out unredacted: fail instead. */
        if (depth > REDACT_JSON_DEPTH_MAX)
                return -E2BIG;
        if (json_is_object(v)) {
                for (void *it = json_object_iter(v); it; it = json_object_iter_next(v, it)) {
                        json_t *child = json_object_iter_value(it);

                        if (json_is_string(child)) {
                                json_t *j = redact_json_string(r, mode, child, &e);
                                if (!j && e < 0)
                                        return e;
                                if (!j)
                                        continue;
                                if (json_object_iter_set_new(v, it, j) < 0)
                                        return -ENOMEM;
                                count++;
                        } else {
                                e = redact_json_walk(r, mode, child, depth + 1);
                                if (e < 0)
                                        return e;
                                count += e;
                        }
                }
        } else if (json_is_array(v)) {
                for (size_t i = 0; i < json_array_size(v); i++) {
                        json_t *child = json_array_get(v, i);

                        if (json_is_string(child)) {
                                json_t *j = redact_json_string(r, mode, child, &e);
                                if (!j && e < 0)
                                        return e;
                                if (!j)
                                        continue;
                                if (json_array_set_new(v, i, j) < 0)
                                        return -ENOMEM;
                                count++;
                        } else {
                                e = redact_json_walk(r, mode, child, depth + 1);
                                if (e < 0)
                                        return e;
                                count += e;
                        }
                }
        }
        return count;
}

int redact_json(const struct redactor *r, enum redact_mode mode, json_t *v)
{
        _cleanup_free_ char *out = NULL;
        size_t len = 0;
        int e;

        if (!v)
                return 0;
        if (!json_is_string(v))
                return redact_json_walk(r, mode, v, 0);

        /* A bare string has no container to put a new value in: change it in place. */
        e = redact_text(r, mode, json_string_value(v), json_string_length(v), &out, &len);
        if (e <= 0)
                return e;
        if (json_string_setn(v, out, len) < 0 && json_string_set(v, "***") < 0)
                return -ENOMEM;
        return 1;
}
