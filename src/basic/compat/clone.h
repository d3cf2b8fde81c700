/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * clone(2) flags and argument order the libc headers may lack. Kernel-compat definitions live
 * in src/basic/compat/, one family per header.
 */

#include <sched.h>

#ifndef CLONE_NEWTIME
#        define CLONE_NEWTIME 0x00000080 /* Linux 5.6 */
#endif

/*
 * clone(2) takes its flags first, except on s390 (CLONE_BACKWARDS2), where the stack comes
 * first.
 */
#if defined(__s390__)
#        define CLONE_FLAGS_ARG 1
#else
#        define CLONE_FLAGS_ARG 0
#endif
