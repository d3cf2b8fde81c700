/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Test-only fault injection for the unit tests that link tests/lib/fault.c
 * with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=pcre2_match_8
 * (tests/meson.build). The wrap applies to the calls made by the objects
 * linked into the test (ptc's own code and the test), not to those inside
 * shared libraries (jansson, libc), so an armed failure lands in ptc's code.
 * Disarmed, every call goes straight to the real function. Thread-safe.
 */

#include <stdbool.h>
#include <stddef.h>

/*
 * Make the @nth allocation from now on (malloc, calloc or realloc, counting
 * from 1; only requests of at least @min_size bytes count) fail with NULL
 * and ENOMEM, once. @nth 0 disarms (fault_alloc_fired() keeps its answer).
 */
void fault_alloc_arm(unsigned long nth, size_t min_size);

/* Whether the armed allocation failure happened (and so is spent). */
bool fault_alloc_fired(void);

/* Make the @nth pcre2_match() from now on return @rc (e.g. PCRE2_ERROR_MATCHLIMIT), once. */
void fault_match_arm(unsigned long nth, int rc);
bool fault_match_fired(void);
