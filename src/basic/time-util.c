/* SPDX-License-Identifier: MIT */
#include "basic/time-util.h"

#include <limits.h>
#include <time.h>

usec_t now_usec(void)
{
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (usec_t) ts.tv_sec * USEC_PER_SEC + (usec_t) ts.tv_nsec / 1000;
}

int poll_timeout_ms(usec_t deadline)
{
        usec_t now, ms;

        if (deadline == USEC_INFINITY)
                return -1;
        now = now_usec();
        if (now >= deadline)
                return 0;
        ms = (deadline - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC;
        return ms > INT_MAX ? INT_MAX : (int) ms;
}
