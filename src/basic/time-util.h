/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdint.h>

typedef uint64_t usec_t;

#define USEC_PER_SEC ((usec_t) 1000000ULL)
#define USEC_PER_MSEC ((usec_t) 1000ULL)
#define USEC_INFINITY ((usec_t) UINT64_MAX)

/* CLOCK_MONOTONIC in microseconds. */
usec_t now_usec(void);

/*
 * The poll() timeout until @deadline (CLOCK_MONOTONIC): milliseconds rounded up, so that poll
 * never returns before it; 0 once it has passed, -1 for USEC_INFINITY, at most INT_MAX.
 */
int poll_timeout_ms(usec_t deadline);

/*
 * Seconds as ptc prints them, without libm (its shared object is one fewer to map at every
 * start): whether @s is whole and below 1e15 in magnitude (printable as an integer)...
 */
static inline bool seconds_are_whole(double s)
{
        return s > -1e15 && s < 1e15 && s == (double) (long long) s;
}

/* ...and @s to hundredths, halves away from zero as round(); beyond +-1e13 as it is. */
static inline double seconds_to_hundredths(double s)
{
        if (!(s > -1e13 && s < 1e13))
                return s;
        return (double) (long long) (s * 100.0 + (s < 0 ? -0.5 : 0.5)) / 100.0;
}
