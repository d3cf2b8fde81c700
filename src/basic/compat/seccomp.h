/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * seccomp(2) user notification constants the kernel headers may lack (Linux 5.0). Kernel-compat
 * definitions live in src/basic/compat/, one family per header.
 */

#include <linux/seccomp.h>

/* FIXME: drop once kernel 5.0 headers are the minimum */
#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#        define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#ifndef SECCOMP_GET_NOTIF_SIZES
#        define SECCOMP_GET_NOTIF_SIZES 3
#endif
