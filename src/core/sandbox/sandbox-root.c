/* SPDX-License-Identifier: MIT */
/*
 * The child's side of the mount plan: the new root built from a sandbox_plan (sandbox-plan.h)
 * in the child's own mount namespace, every mount point made or opened without following a
 * symlink, binds attached through the new mount API, the small files of /etc copied, then the
 * pivot into it. Runs between clone and exec: system calls only, no allocation.
 */
#include "core/sandbox/sandbox-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/compat/mount-api.h"
#include "basic/macro.h"
#include "core/sandbox/sandbox-plan.h"

/* The new root's own tmpfs holds mount points, a few symlinks and the copied /etc files. */
#define ROOT_TMPFS_OPTS "size=8m,nr_inodes=4096,mode=0755"

/* The directory @name under @dfd, made (0755) unless it exists, never a symlink: an O_PATH fd. */
static int mkdir_open_at(int dfd, const char *name)
{
        if (mkdirat(dfd, name, 0755) < 0 && errno != EEXIST)
                return -1;
        return openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/*
 * The directory that holds @target, in one of our own tmpfs, with the directories on the way
 * made (0755: the way to every mount point is open to the script) and never a symlink
 * followed: an O_PATH fd, or -1 with errno.
 */
static int open_parent(const char *target)
{
        char path[PATH_MAX];
        size_t n = strlen(target);
        int dfd, fd;

        if (n >= sizeof(path)) {
                errno = ENAMETOOLONG;
                return -1;
        }
        memcpy(path, target, n + 1);
        dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        for (char *c = path + 1, *slash; dfd >= 0; c = slash + 1) {
                slash = strchr(c, '/');
                if (!slash)
                        break;
                *slash = 0;
                if (!*c)
                        continue;
                fd = mkdir_open_at(dfd, c);
                close(dfd);
                dfd = fd;
        }
        return dfd;
}

/*
 * Open the mount point of @m (an O_PATH fd, or -1 with errno), made in our tmpfs as
 * open_parent() does. One in a bound host tree (in_host_tree) must exist there and is never
 * made: nothing we do may write to the host.
 */
static int open_mount_point(const struct sandbox_mount *m)
{
        struct open_how how = {.flags = O_PATH | O_CLOEXEC,
                               .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
        const char *last = strrchr(m->target, '/') + 1;
        int dfd, fd;

        if (m->in_host_tree)
                return (int) syscall(SYS_openat2, AT_FDCWD, m->target, &how, sizeof(how));
        dfd = open_parent(m->target);
        if (dfd < 0)
                return -1;
        if (m->is_dir || m->kind == MNT_TMPFS || m->kind == MNT_PROC)
                fd = mkdir_open_at(dfd, last);
        else {
                fd = openat(dfd, last, O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (fd >= 0) {
                        close(fd);
                        fd = openat(dfd, last, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                }
        }
        close(dfd);
        return fd;
}

/*
 * Mount a clone of the source at @m's mount point, every bind nosuid (and nodev but for the
 * device nodes), read-only where planned, idmapped where planned and the file system allows:
 * the flags are set on the detached clone, so the tree is never visible without them, and
 * it is attached to the fd of its mount point (no path resolved again).
 */
static void bind_entry(struct sandbox_mount *m, int userns_fd, int errfd, int index)
{
        bool ro = m->kind == MNT_BIND_RO, idmap = m->idmap && userns_fd >= 0;
        uint64_t flags = SB_MOUNT_ATTR_NOSUID |
                         (m->kind == MNT_DEV_NODE ? 0 : SB_MOUNT_ATTR_NODEV) |
                         (ro ? SB_MOUNT_ATTR_RDONLY : 0);
        struct sb_mount_attr a = {.attr_set = flags};
        int t, target = open_mount_point(m);

        if (target < 0)
                fail(errfd, ST_MKPOINT, index);
        /* An idmapped clone is of the top mount only; a plain one keeps what is below. */
        t = (int) syscall(SYS_open_tree, m->src_fd, "",
                          OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
                                  (idmap ? 0 : AT_RECURSIVE));
        if (t < 0)
                fail(errfd, ST_BIND, index);
        if (idmap) {
                struct sb_mount_attr ia = {.attr_set = flags | SB_MOUNT_ATTR_IDMAP,
                                           .userns_fd = (uint64_t) userns_fd};

                if (syscall(SYS_mount_setattr, t, "", AT_EMPTY_PATH, &ia, sizeof(ia)) == 0)
                        a.attr_set = 0; /* set with the idmap */
                else {
                        /* A file system without idmap support: a plain bind, as below. */
                        close(t);
                        t = (int) syscall(SYS_open_tree, m->src_fd, "",
                                          OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
                                                  AT_RECURSIVE);
                        if (t < 0)
                                fail(errfd, ST_BIND, index);
                }
        }
        if (a.attr_set &&
            syscall(SYS_mount_setattr, t, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof(a)) < 0)
                fail(errfd, ST_READONLY, index);
        if (syscall(SYS_move_mount, t, "", target, "",
                    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                fail(errfd, ST_BIND, index);
        close(t);
        close(target);
}

/*
 * Cover the existing directory at @m's mount point (in a bound host tree, reached without
 * symlinks) with an empty read-only tmpfs of mode 000, made detached and attached to the
 * fd of the mount point. A directory gone since the plan has nothing to hide.
 */
static void hide_entry(const struct sandbox_mount *m, int errfd, int index)
{
        int target = open_mount_point(m), fs, mnt;

        if (target < 0) {
                if (errno == ENOENT)
                        return;
                fail(errfd, ST_MKPOINT, index);
        }
        fs = (int) syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
        if (fs < 0 || syscall(SYS_fsconfig, fs, SB_FSCONFIG_SET_STRING, "size", "4k", 0) < 0 ||
            syscall(SYS_fsconfig, fs, SB_FSCONFIG_SET_STRING, "nr_inodes", "1", 0) < 0 ||
            syscall(SYS_fsconfig, fs, SB_FSCONFIG_SET_STRING, "mode", "000", 0) < 0 ||
            syscall(SYS_fsconfig, fs, SB_FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
                fail(errfd, ST_TMPFS, index);
        mnt = (int) syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
                            SB_MOUNT_ATTR_RDONLY | SB_MOUNT_ATTR_NOSUID | SB_MOUNT_ATTR_NODEV |
                                    SB_MOUNT_ATTR_NOEXEC);
        if (mnt < 0 || syscall(SYS_move_mount, mnt, "", target, "",
                               MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                fail(errfd, ST_TMPFS, index);
        close(mnt);
        close(fs);
        close(target);
}

/*
 * Copy @m's source (opened O_RDONLY) to a new file at its target: 0 on success, 1 when the
 * target exists already (a bind of a parent directory shows the host's file there: never
 * write through it), 2 when the source is no longer a small regular file (the caller binds
 * it instead, on the empty file made here), -1 on error. The copy keeps the source's read
 * bits only.
 */
static int copy_entry(const struct sandbox_mount *m)
{
        char buf[16384];
        struct stat st;
        size_t total = 0;
        ssize_t k;
        int dfd, fd, r = 0;

        dfd = open_parent(m->target);
        if (dfd < 0)
                return -1;
        fd = openat(dfd, strrchr(m->target, '/') + 1,
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        close(dfd);
        if (fd < 0)
                return errno == EEXIST ? 1 : -1;
        if (fstat(m->src_fd, &st) < 0)
                r = -1;
        else if (!S_ISREG(st.st_mode) || st.st_size > SANDBOX_COPY_FILE_MAX)
                r = 2;
        /* sendfile(), or read()/write() where the source's file system cannot splice. */
        while (r == 0 &&
               (k = sendfile(fd, m->src_fd, NULL, SANDBOX_COPY_FILE_MAX + 1 - total)) != 0) {
                if (k < 0 && (errno == EINVAL || errno == ENOSYS)) {
                        k = read(m->src_fd, buf,
                                 MIN(sizeof(buf), SANDBOX_COPY_FILE_MAX + 1 - total));
                        if (k > 0 && write(fd, buf, (size_t) k) != k)
                                k = -1;
                        if (k == 0)
                                break;
                }
                if (k < 0 && errno != EINTR)
                        r = -1;
                else if (k > 0 && (total += (size_t) k) > SANDBOX_COPY_FILE_MAX)
                        r = 2; /* it grew since: bind it rather than cut it */
        }
        if (r == 0 && fchmod(fd, st.st_mode & 0444) < 0)
                r = -1;
        close(fd);
        return r;
}

void sandbox_build_root(struct sandbox_plan *p, int errfd)
{
        /* The modes we create are the modes we mean, whatever ptc's umask (our fs_struct). */
        umask(022);
        /* Nothing we mount may propagate back to the host. */
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                fail(errfd, ST_PRIVATE, -1);
        /* Sources first: the base tmpfs is about to hide the host's /tmp. */
        for (size_t i = 0; i < p->n; i++) {
                struct sandbox_mount *m = &p->m[i];
                if (!sandbox_mount_is_bind(m) && m->kind != MNT_COPY)
                        continue;
                /* Never blocks on what became a FIFO, nor takes a terminal: copy_entry() checks. */
                m->src_fd = open(m->src,
                                 (m->kind == MNT_COPY ? O_RDONLY | O_NONBLOCK | O_NOCTTY : O_PATH) |
                                         O_CLOEXEC);
                /* The user's trees were canonical when planned: a symlink since is refused. */
                if (m->src_fd >= 0 && m->canonical) {
                        struct open_how how = {.flags = O_PATH | O_CLOEXEC,
                                               .resolve = RESOLVE_NO_SYMLINKS};

                        close(m->src_fd);
                        m->src_fd = (int) syscall(SYS_openat2, AT_FDCWD, m->src, &how, sizeof(how));
                }
                if (m->src_fd < 0)
                        fail(errfd, ST_OPEN_SOURCE, (int) i);
        }
        /*
         * The new root is a tmpfs mounted on the host's /tmp (in this namespace only). After
         * pivot_root(".", ".") it is "/" and no longer covers anything.
         */
        if (mount("tmpfs", SANDBOX_BASE, "tmpfs", MS_NOSUID | MS_NODEV, ROOT_TMPFS_OPTS) < 0)
                fail(errfd, ST_BASE_TMPFS, -1);
        for (size_t i = 0; i < p->n; i++) {
                struct sandbox_mount *m = &p->m[i];
                int fd;

                /* A bound host tree shows what is there: nothing of ours is written into it. */
                if (m->in_host_tree && !sandbox_mount_is_bind(m) && m->kind != MNT_HIDE)
                        continue;
                switch (m->kind) {
                case MNT_BIND_RO:
                case MNT_BIND_RW:
                case MNT_DEV_NODE:
                        bind_entry(m, p->userns_fd, errfd, (int) i);
                        break;
                case MNT_TMPFS:
                case MNT_PROC:
                        /* Ours (/tmp, /proc, /dev/shm): made just now, no symlink on the way. */
                        fd = open_mount_point(m);
                        if (fd < 0)
                                fail(errfd, ST_MKPOINT, (int) i);
                        close(fd);
                        if (m->kind == MNT_TMPFS
                                    ? mount("tmpfs", m->target, "tmpfs", MS_NOSUID | MS_NODEV,
                                            m->opts) < 0
                                    : mount("proc", m->target, "proc",
                                            MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                                fail(errfd, m->kind == MNT_TMPFS ? ST_TMPFS : ST_PROC, (int) i);
                        break;
                case MNT_HIDE:
                        hide_entry(m, errfd, (int) i);
                        break;
                case MNT_SYMLINK:
                        fd = open_parent(m->target);
                        if (fd < 0)
                                fail(errfd, ST_MKPOINT, (int) i);
                        if (symlinkat(m->src, fd, strrchr(m->target, '/') + 1) < 0 &&
                            errno != EEXIST)
                                fail(errfd, ST_SYMLINK, (int) i);
                        close(fd);
                        break;
                case MNT_COPY: {
                        int r = copy_entry(m);

                        if (r < 0)
                                fail(errfd, ST_COPY, (int) i);
                        if (r == 2) {
                                m->kind = MNT_BIND_RO;
                                m->is_dir = false;
                                bind_entry(m, p->userns_fd, errfd, (int) i);
                        }
                        break;
                }
                }
        }
        for (size_t i = 0; i < p->n; i++)
                if (p->m[i].src_fd >= 0) {
                        close(p->m[i].src_fd);
                        p->m[i].src_fd = -1;
                }
        if (chdir(SANDBOX_BASE) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 ||
            umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
                fail(errfd, ST_PIVOT, -1);
        if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) <
            0)
                fail(errfd, ST_ROOT_RO, -1);
        if (sethostname("ptc", 3) < 0)
                fail(errfd, ST_HOSTNAME, -1);
}
