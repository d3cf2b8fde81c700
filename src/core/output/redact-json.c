/* SPDX-License-Identifier: MIT */
/*
 * redact_json(): redact_text() on every string inside a JSON value, in place.
 */
#include "core/output/redact.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

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

/*
 * Redact the keys of object @v: a secret is a secret as a key too (a tool's result keyed by
 * what it found). A key changed is moved to its redacted name; when that name is taken
 * (two keys that differ only in their secrets), the value goes under "NAME (2)", "(3)", ...
 * so none is lost. Returns the number of keys changed or a negative errno.
 */
static int redact_json_keys(const struct redactor *r, enum redact_mode mode, json_t *v)
{
        json_auto_t *moves = NULL; /* [[old key, new key], ...]: not while iterating */
        int count = 0;

        for (void *it = json_object_iter(v); it; it = json_object_iter_next(v, it)) {
                const char *key = json_object_iter_key(it);
                _cleanup_free_ char *out = NULL;
                size_t len = 0;
                json_t *move;
                int e;

                e = redact_text(r, mode, key, strlen(key), &out, &len);
                if (e < 0)
                        return e;
                if (e == 0)
                        continue;
                if (!moves && !(moves = json_array()))
                        return -ENOMEM;
                /* Cut inside a character (not UTF-8 any more): fail closed, as for values. */
                move = json_pack("[s, s%]", key, out, len) ?: json_pack("[s, s]", key, "***");
                if (!move || json_array_append_new(moves, move) < 0)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < json_array_size(moves); i++) {
                const char *from = json_string_value(json_array_get(json_array_get(moves, i), 0));
                const char *to = json_string_value(json_array_get(json_array_get(moves, i), 1));
                json_t *value = json_incref(json_object_get(v, from));
                _cleanup_free_ char *name = NULL;

                if (!value)
                        continue;
                (void) json_object_del(v, from);
                for (unsigned n = 2; json_object_get(v, name ?: to); n++) {
                        free(name);
                        if (asprintf(&name, "%s (%u)", to, n) < 0) {
                                name = NULL;
                                json_decref(value);
                                return -ENOMEM;
                        }
                }
                if (json_object_set_new(v, name ?: to, value) < 0)
                        return -ENOMEM;
                count++;
        }
        return count;
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
                e = redact_json_keys(r, mode, v);
                if (e < 0)
                        return e;
                count += e;
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
