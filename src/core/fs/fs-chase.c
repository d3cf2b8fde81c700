/* SPDX-License-Identifier: MIT */
/*
 * fs_chase() (fs-chase.h): one walk, one component at a time, each looked up with
 * openat(dir, name, O_PATH|O_NOFOLLOW) in the descriptor of the directory reached so far.
 *
 * Why a walk of our own and not realpath() + open(): the check and the use must be of one
 * object. realpath() returns a name and open() looks it up again; between the two a symlink
 * can be swapped (a script flips one in a loop), and ".." dropped from the text before the
 * symlinks are resolved names another directory than the kernel reaches ("link/../x").
 * Here every step holds a descriptor: the name of a component is read once, the real path
 * is the walk's own bookkeeping of what it went through, and the caller uses the final
 * descriptor. openat2(RESOLVE_NO_MAGICLINKS) would do the lookup in one call but gives no
 * real path (a readlink of /proc/self/fd/N would, where /proc exists); the walk works
 * everywhere and refuses magic links on its own terms.
 */

#include "core/fs/fs-chase.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/macro.h"

/* The inode number of procfs's root (fs/proc/root.c PROC_ROOT_INO). */
#define PROC_ROOT_INO 1

/* The path still to walk, symlink targets spliced in: bounded like a path (PATH_MAX) times
 * a few, so that 40 hops of long targets cannot grow it without end. */
#define CHASE_TODO_MAX (4 * PATH_MAX)

void fs_chased_done(struct fs_chased *c)
{
        if (!c)
                return;
        c->fd = safe_close(c->fd);
        c->dir_fd = safe_close(c->dir_fd);
        free(c->name);
        free(c->path);
        free(c->missing);
        c->name = c->path = c->missing = NULL;
        c->exists = false;
}

const char *fs_chase_strerror(int r)
{
        if (r == -EXDEV)
                return "it goes through a magic link (/proc/PID/cwd, root, fd/N ...), which file "
                       "tools do not follow";
        if (r == -ELOOP)
                return "too many levels of symbolic links";
        return strerror(-r);
}

/* A symlink in procfs below its root is a magic link (its target is an object). */
static int is_magic_dir(int dirfd)
{
        struct statfs sfs;
        struct stat st;

        if (fstatfs(dirfd, &sfs) < 0)
                return -errno;
        if ((unsigned long) sfs.f_type != PROC_SUPER_MAGIC)
                return 0;
        if (fstat(dirfd, &st) < 0)
                return -errno;
        return st.st_ino != PROC_ROOT_INO;
}

/* Append "/@name" (@n bytes) to the real path @done of length *@len. */
static int push_name(char *done, size_t *len, const char *name, size_t n)
{
        if (*len + 1 + n >= PATH_MAX)
                return -ENAMETOOLONG;
        if (*len > 1) /* "/" already ends in a slash */
                done[(*len)++] = '/';
        memcpy(done + *len, name, n);
        *len += n;
        done[*len] = 0;
        return 0;
}

static void pop_name(char *done, size_t *len)
{
        while (*len > 1 && done[*len - 1] != '/')
                (*len)--;
        if (*len > 1)
                (*len)--; /* the slash before it */
        done[*len] = 0;
}

/* The rest of the walk after a missing component @name (@n bytes) with @todo after it. */
static int missing_rest(const char *name, size_t n, const char *todo, char **ret)
{
        _cleanup_free_ char *rest = malloc(n + strlen(todo) + 2);
        size_t len = 0;
        const char *p = todo;

        if (!rest)
                return -ENOMEM;
        memcpy(rest, name, n);
        len = n;
        while (*p) {
                const char *e;

                while (*p == '/')
                        p++;
                if (!*p)
                        break;
                e = strchrnul(p, '/');
                if ((size_t) (e - p) == 2 && p[0] == '.' && p[1] == '.')
                        return -ENOENT; /* the kernel cannot go up out of a missing dir */
                if (!((size_t) (e - p) == 1 && p[0] == '.')) {
                        rest[len++] = '/';
                        memcpy(rest + len, p, (size_t) (e - p));
                        len += (size_t) (e - p);
                }
                p = e;
        }
        rest[len] = 0;
        *ret = TAKE_PTR(rest);
        return 0;
}

/* Make *ret's dir_fd and name from the real path @done, whose object is open as @fd. */
static int set_parent(int fd, const char *done, struct fs_chased *ret)
{
        const char *slash = strrchr(done, '/');

        if (strcmp(done, "/") == 0)
                return 0;
        ret->dir_fd = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (ret->dir_fd < 0)
                return -errno;
        ret->name = strdup(slash + 1);
        return ret->name ? 0 : -ENOMEM;
}

int fs_chase(const char *path, unsigned flags, struct fs_chased *ret)
{
        _cleanup_free_ char *todo = NULL, *buf = NULL, *done = NULL;
        _cleanup_close_ int cur = -EBADF, parent = -EBADF;
        const char *last_name = NULL;
        size_t done_len = 1, last_n = 0;
        unsigned hops = 0;
        char *p;
        int r;

        *ret = FS_CHASED_INIT;
        if (!path || path[0] != '/')
                return -EINVAL;
        if (strlen(path) >= PATH_MAX)
                return -ENAMETOOLONG;
        todo = strdup(path);
        done = malloc(PATH_MAX);
        buf = malloc(PATH_MAX);
        if (!todo || !done || !buf)
                return -ENOMEM;
        done[0] = '/';
        done[1] = 0;
        cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (cur < 0)
                return -errno;

        p = todo;
        for (;;) {
                _cleanup_close_ int child = -EBADF;
                struct stat st;
                char *e;
                size_t n;

                while (*p == '/')
                        p++;
                if (!*p)
                        break;
                e = strchrnul(p, '/');
                n = (size_t) (e - p);
                if (n == 1 && p[0] == '.') {
                        p = e;
                        continue;
                }
                if (n == 2 && p[0] == '.' && p[1] == '.') {
                        /* The kernel's "..": the parent of the directory reached, not of
                         * the text before it. At "/" it stays. */
                        p = e;
                        last_name = NULL;
                        if (done_len == 1)
                                continue;
                        child = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                        if (child < 0)
                                return -errno;
                        safe_close(cur);
                        cur = TAKE_FD(child);
                        pop_name(done, &done_len);
                        continue;
                }
                if (n > NAME_MAX)
                        return -ENAMETOOLONG;
                memcpy(buf, p, n);
                buf[n] = 0;
                child = openat(cur, buf, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (child < 0) {
                        r = -errno;
                        if (r == -ENOENT && (flags & FS_CHASE_MISSING_OK)) {
                                const char *slash;

                                r = missing_rest(p, n, e, &ret->missing);
                                if (r < 0)
                                        return r;
                                r = push_name(done, &done_len, ret->missing, strlen(ret->missing));
                                if (r < 0)
                                        return r;
                                slash = strchr(ret->missing, '/');
                                ret->name = strndup(ret->missing,
                                                    slash ? (size_t) (slash - ret->missing)
                                                          : strlen(ret->missing));
                                if (!ret->name)
                                        return -ENOMEM;
                                ret->dir_fd = TAKE_FD(cur);
                                ret->path = TAKE_PTR(done);
                                return 0;
                        }
                        return r;
                }
                if (fstat(child, &st) < 0)
                        return -errno;
                if (S_ISLNK(st.st_mode)) {
                        _cleanup_free_ char *spliced = NULL;
                        ssize_t k;

                        if (++hops > FS_CHASE_HOPS_MAX)
                                return -ELOOP;
                        r = is_magic_dir(cur);
                        if (r < 0)
                                return r;
                        if (r > 0)
                                return -EXDEV;
                        k = readlinkat(child, "", buf, PATH_MAX - 1);
                        if (k < 0)
                                return -errno;
                        if (k == 0)
                                return -ENOENT;
                        buf[k] = 0;
                        if (strlen(e) + (size_t) k + 2 > CHASE_TODO_MAX)
                                return -ENAMETOOLONG;
                        if (asprintf(&spliced, "%s%s", buf, e) < 0)
                                return -ENOMEM;
                        free(todo);
                        todo = TAKE_PTR(spliced);
                        p = todo;
                        last_name = NULL;
                        if (buf[0] == '/') {
                                /* An absolute target starts again at "/". */
                                safe_close(cur);
                                cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
                                if (cur < 0)
                                        return -errno;
                                done[0] = '/';
                                done[1] = 0;
                                done_len = 1;
                        }
                        continue;
                }
                /* Another component after a non-directory: the kernel's ENOTDIR. */
                if (!S_ISDIR(st.st_mode)) {
                        const char *q = e;

                        while (*q == '/')
                                q++;
                        if (*q || *e == '/')
                                return -ENOTDIR;
                }
                r = push_name(done, &done_len, p, n);
                if (r < 0)
                        return r;
                safe_close(parent);
                parent = TAKE_FD(cur);
                cur = TAKE_FD(child);
                last_name = p;
                last_n = n;
                p = e;
        }

        if (last_name && parent >= 0) {
                ret->dir_fd = TAKE_FD(parent);
                ret->name = strndup(last_name, last_n);
                if (!ret->name)
                        return -ENOMEM;
        } else {
                /* Ended on ".." or a symlink's target: the parent from the real path. */
                r = set_parent(cur, done, ret);
                if (r < 0)
                        return r;
        }
        ret->fd = TAKE_FD(cur);
        ret->path = TAKE_PTR(done);
        ret->exists = true;
        return 0;
}

int fs_chased_open(const struct fs_chased *c, int flags)
{
        char proc[64];
        struct stat a, b;
        int fd;

        if (!c->exists || c->fd < 0)
                return -ENOENT;
        (void) snprintf(proc, sizeof(proc), "/proc/self/fd/%d", c->fd);
        /* The magic link of our own O_PATH fd reaches that inode, not a name. */
        fd = open(proc, flags | O_CLOEXEC);
        if (fd >= 0)
                return fd;
        if (errno != ENOENT || c->dir_fd < 0 || !c->name)
                return -errno;
        /* No /proc: the name in the directory we hold, checked to be the same object. */
        fd = openat(c->dir_fd, c->name, flags | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &a) < 0 || fstat(c->fd, &b) < 0) {
                int e = -errno;

                close(fd);
                return e;
        }
        if (a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
                close(fd);
                return -ESTALE;
        }
        return fd;
}

int fs_open_no_symlinks(const char *path, int flags)
{
        struct open_how how = {
                .flags = (uint64_t) (flags | O_CLOEXEC),
                .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        char proc[64], name[PATH_MAX];
        ssize_t k;
        int fd;

        fd = (int) syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
        if (fd >= 0)
                return fd;
        if (errno != ENOSYS && errno != EPERM)
                return -errno;
        /* No openat2 (or a seccomp filter that refuses it): the kernel's name of what the
         * open reached must be the path itself, or a symlink was followed on the way. */
        fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        (void) snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        k = readlink(proc, name, sizeof(name) - 1);
        if (k < 0 || (size_t) k >= sizeof(name) - 1) {
                close(fd);
                return -ELOOP; /* no /proc: cannot vouch for it, fail closed */
        }
        name[k] = 0;
        if (strcmp(name, path) != 0) {
                close(fd);
                return -ELOOP;
        }
        return fd;
}

int fs_chased_read(const struct fs_chased *c, size_t max, char **ret, size_t *ret_len)
{
        _cleanup_close_ int fd = fs_chased_open(c, O_RDONLY | O_NOCTTY | O_NONBLOCK);

        if (fd < 0)
                return fd;
        return read_fd_all(fd, max, ret, ret_len);
}

int fs_chased_mkdirs(struct fs_chased *c, unsigned mode)
{
        char *p, *slash;
        int made = 0;

        if (c->exists || !c->missing || c->dir_fd < 0)
                return 0;
        p = c->missing;
        while ((slash = strchr(p, '/'))) {
                _cleanup_free_ char *name = strndup(p, (size_t) (slash - p));
                int fd;

                if (!name)
                        return -ENOMEM;
                if (mkdirat(c->dir_fd, name, (mode_t) mode) < 0 && errno != EEXIST)
                        return -errno;
                made++;
                /* O_NOFOLLOW: a symlink put there since is not gone through. */
                fd = openat(c->dir_fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return errno == ENOTDIR ? -ELOOP : -errno;
                safe_close(c->dir_fd);
                c->dir_fd = fd;
                p = slash + 1;
        }
        if (p != c->missing) {
                char *last = strdup(p);

                if (!last)
                        return -ENOMEM;
                free(c->missing);
                c->missing = last;
                free(c->name);
                c->name = strdup(last);
                if (!c->name)
                        return -ENOMEM;
        }
        return made;
}
