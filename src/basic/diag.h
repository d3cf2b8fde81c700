/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Rich error detail next to a -errno return (jansson's json_error_t, redis
 * anet's caller buffer). Filled only on failure; callers may pass NULL.
 */

#include <stdarg.h>

#include "basic/macro.h"

struct diag {
        char message[1024];
};

/* Format into @d (if non-NULL) and return @error (a negative errno). */
int diag_set(struct diag *d, int error, const char *fmt, ...) _printf_(3, 4);
