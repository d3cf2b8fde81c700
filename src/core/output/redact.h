/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Secret redaction (docs/seed.md 1.12, docs/contracts.md 9.10).
 *
 * Two kinds:
 *  - by pattern: the seed's 13 categories (vendor-prefixed keys, NAME=value
 *    env assignments, JSON secret fields, Authorization headers, Telegram bot
 *    tokens, private key blocks, DB connection strings, JWTs, URL userinfo,
 *    URL query secrets, form bodies, Discord mentions, E.164 phone numbers);
 *  - by value: the exact values of secrets ptc knows about (the variables the
 *    environment scrub removed because their names look secret, provider
 *    keys), and their base64 (standard and URL-safe, with and without
 *    padding), hex (lower and upper case) and URL-encoded forms.
 *
 * A struct redactor is built once, then used read-only from any thread.
 */

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "basic/macro.h"

struct redactor;

enum redact_mode {
        REDACT_FULL, /* all 13 passes (execute_code output, terminal output) */
        REDACT_CODE, /* file-content mode: skips env assignments and JSON fields */
        REDACT_NONE, /* only value-based redaction */
};

/* Minimum length of a secret value to be redacted by value (shorter ones would hit
 * ordinary text). */
#define REDACT_MIN_SECRET_LEN 8

_must_check_ int redactor_new(struct redactor **ret);
struct redactor *redactor_free(struct redactor *r);
DEFINE_TRIVIAL_CLEANUP_FUNC_RESET(struct redactor *, redactor_free);
#define _cleanup_redactor_ _cleanup_(redactor_freep)

/*
 * Register a secret value (copied; wiped on free). Values shorter than
 * REDACT_MIN_SECRET_LEN, and values already registered, are ignored (returns 0).
 * Not thread-safe: call before sharing the redactor. Returns 0, -E2BIG (value
 * over 64 KiB, or 1024 values already), -EINVAL (NULL) or -ENOMEM.
 */
_must_check_ int redactor_add_secret(struct redactor *r, const char *value);

/* Number of registered secret values (for tests and `ptc doctor`). */
size_t redactor_secret_count(const struct redactor *r);

/*
 * Register every secret of @src with @r as redactor_add_secret() does (a value over its
 * cap is skipped). Not thread-safe on @r. 0, -EINVAL or -ENOMEM.
 */
_must_check_ int redactor_add_secrets_of(struct redactor *r, const struct redactor *src);

/* Length of the longest registered secret value (0: none, or @r NULL). */
size_t redactor_max_secret_len(const struct redactor *r);

/*
 * Redact @n bytes of UTF-8 text @in. Value-based redaction always runs
 * (each occurrence of a value or one of its encodings becomes "***"); the
 * pattern passes run per @mode; then value-based redaction again, until the
 * text holds no value (a mask or a "***" could complete one). Returns 1 and a new NUL-terminated
 * string in *ret (caller frees, length in *ret_len) when something changed, 0 when nothing changed
 * (*ret untouched), or a negative errno when the text could not be checked completely: -ENOMEM,
 * -E2BIG (a pattern hit its match limit, or a pass's output its cap), -EINVAL (@in NULL with @n >
 * 0, or @ret NULL).
 * @r may be NULL (patterns only).
 *
 * Fail closed: on an error nothing says the text is free of secrets, so the
 * caller must not hand @in out; it withholds it (docs/protocol.md, "Redaction").
 */
_must_check_ int redact_text(const struct redactor *r, enum redact_mode mode, const char *in,
                             size_t n, char **ret, size_t *ret_len);

/*
 * Whether @n bytes of @s contain a vendor-prefixed key (the seed's first
 * pattern pass: sk-..., ghp_..., AKIA..., ...). Returns 1, 0, or -ENOMEM.
 * Any thread.
 */
_must_check_ int redact_has_vendor_key(const char *s, size_t n);

/*
 * Redact every string inside @v (object values, array items and object keys:
 * a key changed moves to its redacted name, "NAME (2)" when that is taken)
 * in place with @mode. Returns the number of strings changed,
 * or a negative errno as redact_text() (-E2BIG also for nesting deeper than 64
 * levels). On an error @v may be partly redacted: the caller must drop it.
 */
_must_check_ int redact_json(const struct redactor *r, enum redact_mode mode, json_t *v);

/*
 * What a redaction error @e (< 0) means, for "redaction failed (...)" messages:
 * strerror() except for -E2BIG. Static string.
 */
const char *redact_strerror(int e);
