/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * pidfd_open(2) (Linux 5.3), whatever the libc knows. Kernel-compat definitions live in
 * src/basic/compat/, one family per header.
 */

#include <errno.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "basic/macro.h"

/*
 * pidfd_open(2), close-on-exec. The fd (caller closes) or -errno (ENOSYS before Linux 5.3 and
 * under valgrind).
 */
_must_check_ static inline int pidfd_open_compat(pid_t pid)
{
#ifdef SYS_pidfd_open
        /* pidfds are always close-on-exec. */
        int fd = (int) syscall(SYS_pidfd_open, pid, 0);
        return fd < 0 ? -errno : fd;
#else
        (void) pid;
        return -ENOSYS;
#endif
}

/*
 * pidfd_send_signal(2) (Linux 5.1) with no siginfo: 0 or -errno (ENOSYS where the libc or the
 * kernel does not know it). Signals the process @pidfd was opened on, never a process that
 * took its pid number later.
 */
_must_check_ static inline int pidfd_send_signal_compat(int pidfd, int sig)
{
#ifdef SYS_pidfd_send_signal
        return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0 ? -errno : 0;
#else
        (void) pidfd;
        (void) sig;
        return -ENOSYS;
#endif
}
