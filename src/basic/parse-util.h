/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdint.h>

#include "basic/macro.h"

/* Strict decimal parsing: whole string, no sign surprises, range checked. */
_must_check_ int safe_atoi64(const char *s, int64_t *ret);
/* Decimal seconds ("2", "0.5"); rejects negatives, NaN and garbage. */
_must_check_ int safe_atod(const char *s, double *ret);
/* The value of the hex digit @c (0-9, a-f, A-F), or -1. */
int unhexchar(char c);
