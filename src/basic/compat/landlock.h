/* SPDX-License-Identifier: MIT */
#pragma once

/* Kernel-compat definitions live in src/basic/compat/, one family per header. */

#include <linux/types.h>

/*
 * Our own copy of the Landlock UAPI. <linux/landlock.h> from Debian 12 stops at ABI 2: its
 * struct landlock_ruleset_attr lacks handled_access_net (ABI 4) and scoped (ABI 6). It is not
 * included; the macros are guarded in case some other header drags it in, and the structs
 * carry names of their own so they can never clash with the system's.
 */
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#        define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#ifndef LANDLOCK_CREATE_RULESET_ERRATA
#        define LANDLOCK_CREATE_RULESET_ERRATA (1U << 1)
#endif

#ifndef LANDLOCK_ACCESS_FS_EXECUTE
#        define LANDLOCK_ACCESS_FS_EXECUTE (1ULL << 0)
#endif
#ifndef LANDLOCK_ACCESS_FS_WRITE_FILE
#        define LANDLOCK_ACCESS_FS_WRITE_FILE (1ULL << 1)
#endif
#ifndef LANDLOCK_ACCESS_FS_READ_FILE
#        define LANDLOCK_ACCESS_FS_READ_FILE (1ULL << 2)
#endif
#ifndef LANDLOCK_ACCESS_FS_READ_DIR
#        define LANDLOCK_ACCESS_FS_READ_DIR (1ULL << 3)
#endif
#ifndef LANDLOCK_ACCESS_FS_REMOVE_DIR
#        define LANDLOCK_ACCESS_FS_REMOVE_DIR (1ULL << 4)
#endif
#ifndef LANDLOCK_ACCESS_FS_REMOVE_FILE
#        define LANDLOCK_ACCESS_FS_REMOVE_FILE (1ULL << 5)
#endif
#ifndef LANDLOCK_ACCESS_FS_MAKE_CHAR
#        define LANDLOCK_ACCESS_FS_MAKE_CHAR (1ULL << 6)
#endif
#ifndef LANDLOCK_ACCESS_FS_MAKE_DIR
#        define LANDLOCK_ACCESS_FS_MAKE_DIR (1ULL << 7)
#endif
#ifndef LANDLOCK_ACCESS_FS_MAKE_REG
#        define LANDLOCK_ACCESS_FS_MAKE_REG (1ULL << 8)
#endif
#ifndef LANDLOCK_ACCESS_FS_MAKE_SOCK
#        define LANDLOCK_ACCESS_FS_MAKE_SOCK (1ULL << 9)
#endif
#ifndef LANDLOCK_ACCESS_FS_MAKE_FIFO
#        define LANDLOCK_ACCESS_FS_MAKE_FIFO (1ULL << 10)
#endif
#ifndef LANDLOCK_ACCESS_FS_MAKE_BLOCK
#        define LANDLOCK_ACCESS_FS_MAKE_BLOCK (1ULL << 11)
#endif
#ifndef LANDLOCK_ACCESS_FS_MAKE_SYM
#        define LANDLOCK_ACCESS_FS_MAKE_SYM (1ULL << 12)
#endif
#ifndef LANDLOCK_ACCESS_FS_REFER
#        define LANDLOCK_ACCESS_FS_REFER (1ULL << 13) /* ABI 2 */
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#        define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14) /* ABI 3 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#        define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */
#endif

#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#        define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0) /* ABI 4 */
#endif
#ifndef LANDLOCK_ACCESS_NET_CONNECT_TCP
#        define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1) /* ABI 4 */
#endif

#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#        define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#        define LANDLOCK_SCOPE_SIGNAL (1ULL << 1) /* ABI 6 */
#endif

/* enum landlock_rule_type in the kernel; an enum constant cannot be tested with #ifndef. */
#define PTC_LANDLOCK_RULE_PATH_BENEATH 1

/* struct landlock_ruleset_attr as of ABI 6; older kernels get a prefix of it (see below). */
struct ptc_landlock_ruleset_attr {
        __u64 handled_access_fs;
        __u64 handled_access_net; /* ABI 4 */
        __u64 scoped;             /* ABI 6 */
};

/* struct landlock_path_beneath_attr: packed in the UAPI, 12 bytes. */
struct ptc_landlock_path_beneath_attr {
        __u64 allowed_access;
        __s32 parent_fd;
} __attribute__((packed));
