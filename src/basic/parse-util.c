/* SPDX-License-Identifier: MIT */
#include "basic/parse-util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>

int safe_atoi64(const char *s, int64_t *ret)
{
        char *end;
        long long v;

        if (!s || !*s || isspace((unsigned char) *s))
                return -EINVAL;
        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno)
                return -errno;
        if (*end)
                return -EINVAL;
        *ret = v;
        return 0;
}

int safe_atod(const char *s, double *ret)
{
        char *end;
        double v;

        if (!s || !*s || isspace((unsigned char) *s))
                return -EINVAL;
        errno = 0;
        v = strtod(s, &end);
        if (errno)
                return -errno;
        if (*end || !isfinite(v))
                return -EINVAL;
        *ret = v;
        return 0;
}

int unhexchar(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}
