/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Path safety rules of the file tools (docs/seed.md 2.1 and 2.2, the
 * seed's agent/file_safety.py and tools/binary_extensions.py): what paths a
 * tool may touch. Below the tools: this module never includes core/tools/
 * (scripts/check-layers.py); a call's cwd and environment come as arguments.
 *
 * Everything here may be called from any thread (the builtin tools run on worker threads).
 */

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>

#include "basic/macro.h"

/* --- deny lists and path classification (file-safety.c) --- */

/*
 * The device paths read_file refuses by name, without resolving symlinks:
 * /dev/zero, /dev/random, /dev/urandom, /dev/full, /dev/stdin, /dev/tty,
 * /dev/console, /dev/stdout, /dev/stderr, /dev/fd/0..2 and /proc/ * /fd/0..2.
 * @path is the argument after "~" expansion.
 */
bool file_safety_is_blocked_device(const char *path);

/*
 * True when @path ends in one of the seed's binary extensions (images, video,
 * audio, archives, executables and libraries, Office documents, fonts,
 * bytecode, databases, design files, Flash, .lockb/.dat/.data; not .pdf). As
 * the seed, the extension is everything after the last '.' of the whole
 * path, compared case-insensitively.
 */
bool file_safety_has_binary_extension(const char *path);

/*
 * The suffix the seed names in the binary-file message (Python's
 * PurePath.suffix, lower-cased) written into @buf; "" when there is none.
 */
const char *file_safety_suffix(const char *path, char *buf, size_t size);

/*
 * write_file's refusal of system locations: true when @resolved or
 * @normalized starts with /etc/, /boot/, /usr/lib/systemd/, /private/etc/ or
 * /private/var/, or is a docker socket. Either may be NULL.
 */
bool file_safety_is_sensitive_path(const char *resolved, const char *normalized);

/*
 * The write deny list (credentials, shell start-up files, /etc/sudoers ...)
 * and $HERMES_WRITE_SAFE_ROOT, checked on the symlink-resolved form of
 * @abs_path, for the home directory of @env's $HOME and for the real one
 * from the password database. @cwd and @env are the tool call's (struct
 * tool_ctx; relative roots resolve against @cwd). Returns 1 when denied, 0
 * when allowed, -ENOMEM.
 */
_must_check_ int file_safety_write_denied(const char *cwd, char *const *env, const char *abs_path);

/*
 * Python's os.path.realpath (non-strict): symlinks resolved in the part of
 * @path that exists, the rest appended as is, dangling symlinks followed. Made by
 * fs_chase() (fs-chase.h), the file tools' resolver, where it can resolve @path; by
 * Python's rules otherwise ("missing/.." is lexical).
 * @path must be absolute. Returns 0 or -errno (ENOMEM, ENAMETOOLONG, EINVAL).
 */
_must_check_ int file_safety_realpath(const char *path, char **ret);

/* Python's os.path.normpath (lexical) of @path into *ret (caller frees). 0 or -ENOMEM. */
_must_check_ int file_safety_normpath(const char *path, char **ret);
