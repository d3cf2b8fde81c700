/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "basic/macro.h"

/*
 * Length of the valid UTF-8 sequence at @p (1..4), or 0 when the bytes at @p
 * do not start a valid sequence within @n bytes. Surrogates and overlong
 * forms are invalid, as in Python's strict decoder.
 */
size_t utf8_valid_seq_len(const unsigned char *p, size_t n);

/* True when all of @p is valid UTF-8 (NUL bytes allowed). */
bool utf8_is_valid(const char *p, size_t n);

/*
 * Decode @n bytes the way Python's bytes.decode("utf-8", "replace") does:
 * each maximal invalid subpart becomes U+FFFD. Returns a new NUL-terminated
 * string (caller frees) and its length in *ret_len, or NULL on ENOMEM.
 * *ret_chars, when non-NULL, receives the number of code points.
 */
char *utf8_sanitize(const char *p, size_t n, size_t *ret_len, size_t *ret_chars);

/* Number of code points in valid UTF-8 @p. */
size_t utf8_count_chars(const char *p, size_t n);
