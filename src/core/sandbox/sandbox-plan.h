/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The sandbox's file-system plan (docs/isolation.md, "The mount plan"): every mount, symlink
 * and copy of the new root, the Landlock paths and the seccomp program, all decided and
 * allocated in ptc before the clone; the child (sandbox-root.c) only carries it out with system
 * calls.
 *
 * What the plan guarantees, checked here on the host before anything starts:
 *
 * - Every bind is of a canonical host path (no symlink in it), at that same path inside. A
 *   path the script is given through a symlink (a symlinked working directory, a venv's
 *   bin/python -> ...) gets that symlink recreated in the root's tmpfs, never a bind of
 *   whatever it pointed at.
 * - Nothing is bound from inside the working directory: what is there is visible through the
 *   working directory's own bind, and a bind of a path the script could have made a symlink
 *   would let it choose what a later run shows it.
 * - Bind only what the interpreter needs (interpreter_trees()): no whole prefix that could be
 *   a home directory or hold the working directory.
 * - Every directory the root's tmpfs gets is 0755 and ours, so the way to a mount point that
 *   is not inside another bind is always open. A mount point inside a bound host tree (the
 *   working directory inside a PYTHONPATH entry, the staging dir inside the working
 *   directory) is never created, only used where it exists, without following symlinks.
 * - The script can reach what it must: its working directory, the staging dir and the
 *   interpreter (every directory on the way searchable and the program executable by the
 *   sandbox's uid). When it cannot, the plan fails with the path and the reason, which is
 *   no layer's failure: isolation auto never drops a layer for it.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "basic/diag.h"
#include "basic/macro.h"
#include "core/sandbox/sandbox.h"
#include "core/sandbox/seccomp-policy.h"

/*
 * Where the new root is assembled, in the child's own mount namespace (sandbox-root.c,
 * sandbox_build_root()).
 */
#define SANDBOX_BASE "/tmp"
/*
 * A small file of /etc is copied into the root's tmpfs rather than bind-mounted: a bind takes
 * two mount calls, which made the single files of /etc ~1.5 ms of a strict start. Up to this
 * size per file and SANDBOX_COPY_TOTAL_MAX in all; a larger one is bound.
 */
#define SANDBOX_COPY_FILE_MAX (256 * 1024)
#define SANDBOX_COPY_TOTAL_MAX (2 * 1024 * 1024)
/* Symlinks followed on the way to one path, as the kernel's ELOOP limit. */
#define SANDBOX_SYMLINKS_MAX 40

enum sandbox_mount_kind {
        MNT_BIND_RO,
        MNT_BIND_RW,
        MNT_DEV_NODE, /* bind, keeps device access */
        MNT_TMPFS,
        MNT_PROC,
        MNT_SYMLINK, /* src is the link text */
        MNT_COPY,    /* a small regular file, copied (read-only with the root) */
        MNT_HIDE,    /* an empty read-only tmpfs over an existing directory of a bound host
                      * tree: ptc serve's (docs/sessions.md) */
};

struct sandbox_mount {
        enum sandbox_mount_kind kind;
        char *src;    /* host path (bind), link text (symlink) */
        char *target; /* SANDBOX_BASE + inside path */
        char *opts;   /* tmpfs options */
        bool is_dir;
        bool idmap;        /* bind through the idmap user namespace (root only) */
        bool canonical;    /* src has no symlink: opened refusing any (it was checked so) */
        bool in_host_tree; /* the mount point lies in a host tree bound before: used, never
                            * created */
        int src_fd;        /* opened in the child before the base tmpfs hides /tmp */
};

/* A bind of a host path (a tree, a file or a device node), rather than something of ours. */
static inline bool sandbox_mount_is_bind(const struct sandbox_mount *m)
{
        return m->kind == MNT_BIND_RO || m->kind == MNT_BIND_RW || m->kind == MNT_DEV_NODE;
}

struct sandbox_plan {
        struct sandbox_mount *m;
        size_t n;
        char **ll_ro, **ll_rw, **ll_list; /* Landlock: read, read-write, list only */
        struct seccomp_program seccomp;
        int userns_fd;     /* idmap user namespace, root only, or -1 */
        size_t copy_bytes; /* planned MNT_COPY bytes, up to SANDBOX_COPY_TOTAL_MAX */
        bool as_root;
        uid_t uid;
        gid_t gid;
        char uid_map[64], gid_map[64];
        usec_t *step_end; /* a page shared with the child (sandbox_timings.end), or NULL */
};

#define SANDBOX_PLAN_NULL ((struct sandbox_plan){.userns_fd = -1})

/*
 * Whether @error (positive) is how a kernel or a security module refuses a feature: EPERM or
 * EACCES (a container, an LSM, restricted user namespaces), EINVAL, ENOSYS or EOPNOTSUPP (a
 * kernel without it), ENOSPC or EUSERS (user namespaces limited to 0). Only such an answer
 * makes isolation auto leave a layer out; running out of descriptors or memory is an error.
 */
static inline bool sandbox_errno_is_refusal(int error)
{
        return error == EPERM || error == EACCES || error == EINVAL || error == ENOSYS ||
               error == EOPNOTSUPP || error == ENOSPC || error == EUSERS;
}

void sandbox_plan_release(struct sandbox_plan *p);

/*
 * Plan the start of @o. Errors: -errno with the reason in @reterr, and in @ret_failed_layer
 * the layer whose setup failed for a reason of the kernel or the environment, or
 * _SANDBOX_LAYER_MAX when the failure is no layer's (a path the script must reach cannot be
 * shown to it, no memory): isolation auto drops only the former.
 */
_must_check_ int sandbox_plan_build(struct sandbox_plan *p, const struct sandbox_opts *o,
                                    enum sandbox_layer *ret_failed_layer, struct diag *reterr);
