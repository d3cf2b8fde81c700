/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The one path resolver of the file tools (DESIGN §15, docs/policy.md "Paths"): walk an
 * absolute path component by component on O_PATH|O_NOFOLLOW descriptors, following symlinks
 * and ".." as the kernel does (systemd's chase() is the model), and hand back a descriptor
 * of the object reached and its real path. A tool judges the policy and the sensitive-path
 * guards on that real path and then works on the descriptor (fs_chased_open(), or
 * openat(dir_fd, name, O_NOFOLLOW) for a file it creates): the name is never looked up a
 * second time, so a symlink swapped after the check changes nothing.
 *
 * Magic links (/proc/PID/cwd, root, exe, fd/N, map_files/..., ns/...: the symlinks of procfs
 * below its root) are refused with -EXDEV: their target is an object, not a path, and the
 * text they read as need not name it. /proc/self and /proc/thread-self (plain symlinks in
 * the root of procfs) are followed.
 *
 * Thread context: any thread; no global state.
 */

#include <stdbool.h>

#include "basic/macro.h"

/* Symlinks followed in one resolution at most, as the kernel's MAXSYMLINKS: -ELOOP past it. */
#define FS_CHASE_HOPS_MAX 40

enum fs_chase_flags {
        /*
         * The object (and directories above it) may be missing: then the result names the
         * deepest directory that exists (dir_fd), the missing components below it (missing,
         * without "." and with no ".." allowed: -ENOENT, as the kernel would say) and the
         * would-be real path. Without it, a missing component is -ENOENT.
         */
        FS_CHASE_MISSING_OK = 1 << 0,
};

struct fs_chased {
        int fd;        /* O_PATH of the object; -EBADF when it does not exist */
        int dir_fd;    /* O_PATH of the directory holding it (or of the deepest existing one
                        * when it does not exist); -EBADF when the object is "/" */
        char *name;    /* the object's name in dir_fd (its first missing component when
                        * missing holds more than one); NULL for "/" */
        char *path;    /* the real absolute path of the object, or of the would-be object */
        char *missing; /* FS_CHASE_MISSING_OK: "a/b/f", the components that do not exist
                        * below dir_fd; NULL when the object exists */
        bool exists;
};

#define FS_CHASED_INIT ((struct fs_chased){.fd = -EBADF, .dir_fd = -EBADF})

/*
 * Resolve @path (absolute, "~" already expanded) into *ret (initialise with FS_CHASED_INIT;
 * release with fs_chased_done() whatever the outcome). Returns 0, or -errno: -ENOENT,
 * -ENOTDIR, -EACCES (a directory on the way cannot be searched), -ELOOP (more than
 * FS_CHASE_HOPS_MAX symlinks), -EXDEV (a magic link), -ENAMETOOLONG, -EINVAL (@path is
 * not absolute), -ENOMEM.
 */
_must_check_ int fs_chase(const char *path, unsigned flags, struct fs_chased *ret);

void fs_chased_done(struct fs_chased *c);
#define _cleanup_fs_chased_ _cleanup_(fs_chased_done)

/*
 * Open the object @c reached (it must exist) with @flags (O_RDONLY, O_WRONLY ..., O_CLOEXEC
 * added): through /proc/self/fd/N of its O_PATH descriptor, which reaches that very inode
 * whatever happened to its name since; where /proc is missing, openat(dir_fd, name,
 * O_NOFOLLOW) checked to be the same inode (-ESTALE when it is not). Returns the fd or
 * -errno.
 */
_must_check_ int fs_chased_open(const struct fs_chased *c, int flags);

/*
 * read_fd_all() (basic/fd-util.h) of the object @c reached, opened with fs_chased_open()
 * (O_NONBLOCK: a FIFO put there cannot block). Same returns.
 */
_must_check_ int fs_chased_read(const struct fs_chased *c, size_t max, char **ret, size_t *ret_len);

/*
 * Create the missing directories of @c (FS_CHASE_MISSING_OK, all of c->missing but its last
 * component) with @mode, each made with mkdirat() in the one before and opened with
 * O_NOFOLLOW: afterwards c->dir_fd is the directory to create c->name in and c->missing is
 * just that name. Returns the number of directories made, or -errno (-ELOOP: a symlink
 * appeared on the way).
 */
_must_check_ int fs_chased_mkdirs(struct fs_chased *c, unsigned mode);

/*
 * open(@path, @flags) of an absolute path that must hold no symlink at all (a real path, as
 * fs_chase() returns, or one a walk built from the names it read): openat2() with
 * RESOLVE_NO_SYMLINKS where the kernel has it (5.6), else open() checked against the
 * kernel's name of the file it opened (/proc/self/fd/N). So a directory swapped for a
 * symlink after a walk listed it is refused (-ELOOP), not followed. Returns the fd or
 * -errno.
 */
_must_check_ int fs_open_no_symlinks(const char *path, int flags);

/* "Magic link" or strerror: what a tool says of fs_chase()'s -errno @r. Static. */
const char *fs_chase_strerror(int r);
