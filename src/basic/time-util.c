/* SPDX-License-Identifier: MIT */
#include "basic/time-util.h"

#include <time.h>

usec_t now_usec(void)
{
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (usec_t) ts.tv_sec * USEC_PER_SEC + (usec_t) ts.tv_nsec / 1000;
}
