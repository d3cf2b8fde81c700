/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The Landlock layer of the sandbox (docs/isolation.md): file access confined to a few
 * read-only and read-write trees, TCP bind/connect refused (ABI >= 4), and, from ABI 6 on,
 * the abstract-unix-socket and signal scopes (no connecting to abstract sockets or signalling
 * processes outside the sandbox's domain).
 *
 * The kernel's ABI is probed at run time; this code defines the UAPI it needs itself, because
 * the Debian 12 headers stop at ABI 2 while kernels here have 7. Rights the running ABI does
 * not know are masked off (best effort by ABI, as the kernel documentation shows), and the
 * ruleset attribute is passed with the size the ABI knows (8, 16 or 24 bytes).
 *
 * landlock_apply() runs in a child forked from a multi-threaded ptc, between fork and exec:
 * it makes system calls only (no allocation, no stdio).
 */

#include <stdbool.h>

#include "basic/macro.h"

/*
 * The ABI version of the running kernel (>= 1), or -EOPNOTSUPP when Landlock is built in but
 * disabled at boot, -ENOSYS when the kernel has no Landlock, another -errno otherwise.
 */
int landlock_abi(void);

/* The kernel's Landlock errata bitmask (LANDLOCK_CREATE_RULESET_ERRATA), or -errno. */
int landlock_errata(void);

struct landlock_policy {
        const char *const *ro_paths;   /* NULL-terminated: read, read-dir, execute */
        const char *const *rw_paths;   /* NULL-terminated: every right but making device nodes */
        const char *const *list_paths; /* NULL-terminated: listing directories only */
        bool deny_tcp;                 /* handle TCP bind/connect with no rule: refuse all */
        bool scope;                    /* abstract unix sockets + signals scoped to the domain */
};

/*
 * Restrict the calling process (and its future children) to @p, for a kernel with ABI @abi
 * (from landlock_abi(), called before fork). Paths that do not exist are skipped. The caller
 * must already have PR_SET_NO_NEW_PRIVS set. Async-signal-safe.
 * Returns 0, or -errno of the failing system call; -EINVAL when @p is NULL or @abi < 1.
 * @p and its strings are borrowed for the call only. Every fd it opens is closed again, on
 * success and on failure. A failure before landlock_restrict_self() leaves the process
 * unrestricted: the caller must treat any error as fatal to the child.
 */
_must_check_ int landlock_apply(const struct landlock_policy *p, int abi);

/*
 * Path rules on terminal commands (docs/policy.md, "What binds terminal commands"): a ruleset
 * that handles the write rights only (writing, truncating, making, removing, renaming and
 * linking entries) and grants them on chosen paths, each path and what is below it. Reading
 * and executing stay unhandled, so they are never restricted. A directory gets every write
 * right but making device nodes, a file writing and truncating only; a symlink grants
 * nothing.
 *
 * The ruleset is either built beforehand (@ruleset_fd: landlock_protect_ruleset() and
 * landlock_protect_add(), in ptc, reusable for many children) or from @grants in the child
 * itself (where the child sees another root than ptc: terminal.isolation strict).
 */
struct landlock_protect {
        int ruleset_fd;            /* >= 0: a ruleset of landlock_protect_ruleset(), borrowed */
        const char *const *grants; /* NULL-terminated absolute paths granted in the child (added
                                    * to @ruleset_fd when there is one, which changes it for
                                    * every later user: what only the child can name, as a
                                    * devpts it mounted); missing ones and symlinks (by then)
                                    * grant nothing. NULL: none (then @ruleset_fd is needed) */
        int abi;                   /* landlock_abi() of the caller, >= 1 */
};

/* A new ruleset handling the write rights of @abi (>= 1): an fd (O_CLOEXEC), or -errno. */
int landlock_protect_ruleset(int abi);

/*
 * Grant the write rights on @fd (an O_PATH descriptor of a directory or a file; a symlink
 * grants nothing) in @ruleset_fd. Returns 0 or -errno. Async-signal-safe.
 */
_must_check_ int landlock_protect_add(int ruleset_fd, int fd, int abi);

/*
 * Restrict the calling process (and its future children) to @p, on top of any domain it is
 * in already. Without CAP_SYS_ADMIN the kernel wants PR_SET_NO_NEW_PRIVS: it is set then
 * (set-id programs no longer gain privileges), and only then. Async-signal-safe: system
 * calls only, every fd it opens closed again. Returns 0 or -errno; -EINVAL when @p or its
 * ABI is not usable. A failure leaves the process unrestricted: the caller must not exec.
 */
_must_check_ int landlock_protect_apply(const struct landlock_protect *p);
