/* SPDX-License-Identifier: MIT */
#include "core/sandbox/landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/compat/landlock.h"

/* The rights ABI 1 knows. */
#define FS_RIGHTS_ABI1                                                    \
        (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |     \
         LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR |     \
         LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE | \
         LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |     \
         LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |     \
         LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |   \
         LANDLOCK_ACCESS_FS_MAKE_SYM)

/*
 * Read-only trees: read, list and execute. REFER never goes here: it would let a file be
 * linked or renamed out of a read-only tree into a writable one.
 */
#define FS_RIGHTS_RO \
        (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)

/*
 * Read-write trees: every right the ABI knows but making device nodes. A script has no use
 * for one, and one made with CAP_MKNOD (root without the namespaces layer) would open a disk
 * or a device past every other rule, in the sandbox and, left in the working directory, after
 * it. The seccomp layer refuses the same (docs/isolation.md); this holds without it.
 */
#define FS_RIGHTS_NO_DEVICES (~(LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_BLOCK))

/*
 * The only rights a rule on a non-directory may carry; any other bit there makes
 * landlock_add_rule() fail with EINVAL (the kernel's ACCESS_FILE).
 */
#define FS_RIGHTS_FILE                                                \
        (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | \
         LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE | \
         LANDLOCK_ACCESS_FS_IOCTL_DEV)

int landlock_abi(void)
{
        long r = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

        if (r < 0)
                return -errno;
        return (int) r;
}

int landlock_errata(void)
{
        /* Kernels before 6.15 do not know the flag and answer EINVAL; passed on as is. */
        long r = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_ERRATA);

        if (r < 0)
                return -errno;
        return (int) r;
}

/* Every file-system right the kernel with @abi handles. */
static __u64 fs_rights(int abi)
{
        __u64 rights = FS_RIGHTS_ABI1;

        /*
         * On ABI 1, REFER is not handled yet the kernel refuses every rename and link across
         * directories (EXDEV) in a Landlock domain. That is stricter than asked, not looser,
         * and nothing to work around.
         */
        if (abi >= 2)
                rights |= LANDLOCK_ACCESS_FS_REFER;
        /* Below ABI 3, truncate(2) and O_TRUNC are not checked: a known best-effort gap. */
        if (abi >= 3)
                rights |= LANDLOCK_ACCESS_FS_TRUNCATE;
        if (abi >= 5)
                rights |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
        return rights;
}

/*
 * Add one path-beneath rule with @access for each path of @paths. Returns 0 or -errno.
 * Async-signal-safe: open, fstat, the Landlock call and close only.
 */
static int add_paths(int ruleset_fd, const char *const *paths, __u64 access)
{
        if (!paths)
                return 0;

        for (const char *const *path = paths; *path; path++) {
                struct ptc_landlock_path_beneath_attr rule = {};
                struct stat st;
                int fd, r = 0;

                fd = open(*path, O_PATH | O_CLOEXEC);
                if (fd < 0) {
                        /*
                         * A tree that is not there, or not reachable (a file in the middle
                         * of the path, a directory we may not search): skipping its rule
                         * grants nothing, since a Landlock domain refuses what no rule
                         * allows.
                         */
                        if (errno == ENOENT || errno == ENOTDIR || errno == EACCES)
                                continue;
                        return -errno;
                }

                rule.parent_fd = fd;
                rule.allowed_access = access;
                if (fstat(fd, &st) < 0)
                        r = -errno;
                if (r >= 0 && !S_ISDIR(st.st_mode))
                        rule.allowed_access &= FS_RIGHTS_FILE;
                if (r >= 0 && syscall(SYS_landlock_add_rule, ruleset_fd,
                                      PTC_LANDLOCK_RULE_PATH_BENEATH, &rule, 0) < 0)
                        r = -errno;
                (void) safe_close(fd);
                if (r < 0)
                        return r;
        }
        return 0;
}

int landlock_apply(const struct landlock_policy *p, int abi)
{
        struct ptc_landlock_ruleset_attr attr = {};
        size_t attr_size;
        __u64 fs;
        int ruleset_fd, r;

        /* Not assert(): its failure path prints, and this runs between fork and exec. */
        if (!p || abi < 1)
                return -EINVAL;

        fs = fs_rights(abi);
        attr.handled_access_fs = fs;

        /*
         * The kernel accepts a shorter struct than its own (the missing fields count as zero)
         * and refuses a longer one with non-zero bytes it does not know (E2BIG), so the size
         * follows the ABI: 8 bytes up to ABI 3, 16 for ABI 4 and 5, 24 from ABI 6 on.
         */
        if (abi >= 6)
                attr_size =
                        offsetof(struct ptc_landlock_ruleset_attr, scoped) + sizeof(attr.scoped);
        else if (abi >= 4)
                attr_size = offsetof(struct ptc_landlock_ruleset_attr, handled_access_net) +
                            sizeof(attr.handled_access_net);
        else
                attr_size = offsetof(struct ptc_landlock_ruleset_attr, handled_access_fs) +
                            sizeof(attr.handled_access_fs);

        /* Handled with no rule at all: every TCP bind and connect is refused. */
        if (p->deny_tcp && abi >= 4)
                attr.handled_access_net =
                        LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
        if (p->scope && abi >= 6)
                attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;

        ruleset_fd = (int) syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0);
        if (ruleset_fd < 0)
                return -errno;

        r = add_paths(ruleset_fd, p->ro_paths, FS_RIGHTS_RO & fs);
        if (r >= 0)
                r = add_paths(ruleset_fd, p->rw_paths, fs & FS_RIGHTS_NO_DEVICES);
        if (r >= 0)
                r = add_paths(ruleset_fd, p->list_paths, LANDLOCK_ACCESS_FS_READ_DIR);
        if (r >= 0 && syscall(SYS_landlock_restrict_self, ruleset_fd, 0) < 0)
                r = -errno;

        (void) safe_close(ruleset_fd);
        return r < 0 ? r : 0;
}

/* The write rights of @abi: what landlock_protect_apply() handles. */
static __u64 write_rights(int abi)
{
        return fs_rights(abi) & ~(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE |
                                  LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_IOCTL_DEV);
}

int landlock_protect_ruleset(int abi)
{
        struct ptc_landlock_ruleset_attr attr = {.handled_access_fs = write_rights(abi)};
        int fd;

        if (abi < 1)
                return -EINVAL;
        /* The file-system field alone: 8 bytes, which every ABI knows. */
        fd = (int) syscall(SYS_landlock_create_ruleset, &attr,
                           offsetof(struct ptc_landlock_ruleset_attr, handled_access_fs) +
                                   sizeof(attr.handled_access_fs),
                           0);
        return fd < 0 ? -errno : fd;
}

int landlock_protect_add(int ruleset_fd, int fd, int abi)
{
        struct ptc_landlock_path_beneath_attr rule = {.parent_fd = fd};
        __u64 fs = write_rights(abi);
        struct stat st;

        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISLNK(st.st_mode))
                return 0;
        rule.allowed_access = S_ISDIR(st.st_mode) ? fs & FS_RIGHTS_NO_DEVICES : fs & FS_RIGHTS_FILE;
        if (syscall(SYS_landlock_add_rule, ruleset_fd, PTC_LANDLOCK_RULE_PATH_BENEATH, &rule, 0) <
            0)
                return -errno;
        return 0;
}

/* landlock_restrict_self(), with no_new_privs first where the kernel wants it. */
static int restrict_self(int ruleset_fd)
{
        int r;

        if (syscall(SYS_landlock_restrict_self, ruleset_fd, 0) == 0)
                return 0;
        /* EPERM: no CAP_SYS_ADMIN, so the kernel wants no_new_privs first. */
        r = -errno;
        if (r == -EPERM && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0)
                r = syscall(SYS_landlock_restrict_self, ruleset_fd, 0) < 0 ? -errno : 0;
        return r;
}

int landlock_protect_apply(const struct landlock_protect *p)
{
        int ruleset_fd, r = 0;

        if (!p || p->abi < 1 || (p->ruleset_fd < 0 && !p->grants))
                return -EINVAL;
        ruleset_fd = p->ruleset_fd >= 0 ? p->ruleset_fd : landlock_protect_ruleset(p->abi);
        if (ruleset_fd < 0)
                return ruleset_fd;
        for (const char *const *path = p->grants; r >= 0 && path && *path; path++) {
                /* Not followed: the parent listed a real entry; a symlink now grants nothing. */
                int fd = open(*path, O_PATH | O_NOFOLLOW | O_CLOEXEC);

                if (fd < 0) {
                        if (errno == ENOENT || errno == ENOTDIR || errno == EACCES)
                                continue; /* gone since: granting nothing is the safe side */
                        r = -errno;
                        break;
                }
                r = landlock_protect_add(ruleset_fd, fd, p->abi);
                (void) safe_close(fd);
        }
        if (r >= 0)
                r = restrict_self(ruleset_fd);
        if (ruleset_fd != p->ruleset_fd)
                (void) safe_close(ruleset_fd);
        return r < 0 ? r : 0;
}
