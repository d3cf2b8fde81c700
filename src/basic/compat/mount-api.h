/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * open_tree(2), move_mount(2), fsopen(2), fsconfig(2), fsmount(2), mount_setattr(2) (Linux 5.2,
 * 5.12). Kernel-compat definitions
 * live in src/basic/compat/, one family per header.
 */

#include <fcntl.h>
#include <stdint.h>

/* The new mount API; the Debian 12 headers have the numbers but not all constants. */
#ifndef OPEN_TREE_CLONE
#        define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#        define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#        define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef MOVE_MOUNT_T_EMPTY_PATH
#        define MOVE_MOUNT_T_EMPTY_PATH 0x00000040
#endif
#ifndef AT_RECURSIVE
#        define AT_RECURSIVE 0x8000
#endif
/* fsopen(2), fsconfig(2), fsmount(2) (Linux 5.2): a new file system's mount, detached. */
#ifndef FSOPEN_CLOEXEC
#        define FSOPEN_CLOEXEC 0x00000001
#endif
#ifndef FSMOUNT_CLOEXEC
#        define FSMOUNT_CLOEXEC 0x00000001
#endif
#define SB_FSCONFIG_SET_STRING 1
#define SB_FSCONFIG_CMD_CREATE 6

/*
 * MOUNT_ATTR_* and struct mount_attr for mount_setattr(2), under names of their own so they
 * never clash with <linux/mount.h>, which <sys/mount.h> cannot be included with.
 */
#define SB_MOUNT_ATTR_RDONLY 0x00000001
#define SB_MOUNT_ATTR_NOSUID 0x00000002
#define SB_MOUNT_ATTR_NODEV 0x00000004
#define SB_MOUNT_ATTR_NOEXEC 0x00000008
#define SB_MOUNT_ATTR_IDMAP 0x00100000

struct sb_mount_attr {
        uint64_t attr_set;
        uint64_t attr_clr;
        uint64_t propagation;
        uint64_t userns_fd;
};
