/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * close_range(2) (Linux 5.9; CLOSE_RANGE_CLOEXEC 5.11), whatever the libc and kernel headers
 * know. Kernel-compat definitions live in src/basic/compat/, one family per header.
 */

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#        define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/*
 * close_range(@lo, @hi, @flags): 0 or -errno (-ENOSYS when the headers had no number for it).
 * Async-signal-safe: a child between fork/clone and exec may call it.
 */
static inline int close_range_compat(unsigned lo, unsigned hi, unsigned flags)
{
#ifdef SYS_close_range
        return syscall(SYS_close_range, lo, hi, flags) < 0 ? -errno : 0;
#else
        (void) lo;
        (void) hi;
        (void) flags;
        return -ENOSYS;
#endif
}
