/* SPDX-License-Identifier: MIT */
#pragma once

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
