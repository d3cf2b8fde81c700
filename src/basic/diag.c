/* SPDX-License-Identifier: MIT */
#include "basic/diag.h"

#include <stdio.h>

int diag_set(struct diag *d, int error, const char *fmt, ...)
{
        va_list ap;

        if (d) {
                va_start(ap, fmt);
                (void) vsnprintf(d->message, sizeof(d->message), fmt, ap);
                va_end(ap);
        }
        return error;
}
