/* SPDX-License-Identifier: MIT */
#include "basic/fd-util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/compat/close-range.h"

int fd_ensure_stdio(void)
{
        for (int fd = 0; fd < 3; fd++) {
                int n;

                if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
                        continue;
                /* The lowest free fd: this one, as the ones below are open. Not CLOEXEC. */
                n = open("/dev/null", O_RDWR);
                if (n < 0)
                        return -errno;
                if (n != fd) {
                        (void) close(n);
                        return -EBADF;
                }
        }
        return 0;
}

int fd_set_nonblock(int fd, bool nonblock)
{
        int flags, nflags;

        flags = fcntl(fd, F_GETFL);
        if (flags < 0)
                return -errno;
        nflags = nonblock ? flags | O_NONBLOCK : flags & ~O_NONBLOCK;
        if (nflags == flags)
                return 0;
        if (fcntl(fd, F_SETFL, nflags) < 0)
                return -errno;
        return 0;
}

int poll_until(struct pollfd *p, size_t n, usec_t deadline)
{
        for (;;) {
                int k = poll(p, (nfds_t) n, poll_timeout_ms(deadline));

                if (k < 0) {
                        if (errno == EINTR)
                                continue; /* on for the time that is left */
                        return -errno;
                }
                if (k == 0) {
                        /* poll() rounds its timeout up to milliseconds, so this is after the
                         * deadline; looking costs little and keeps the promise. */
                        if (deadline == USEC_INFINITY || now_usec() < deadline)
                                continue;
                        return 0;
                }
                for (size_t i = 0; i < n; i++)
                        if (p[i].fd >= 0 && (p[i].revents & POLLNVAL))
                                return -EBADF;
                return k;
        }
}

int fd_wait(int fd, short events, usec_t deadline)
{
        struct pollfd p = {.fd = fd, .events = events};
        int k;

        if (fd < 0)
                return -EBADF;
        k = poll_until(&p, 1, deadline);
        return k <= 0 ? k : p.revents;
}

int fd_wait_readable(int fd, usec_t deadline)
{
        int k = fd_wait(fd, POLLIN, deadline);

        return k <= 0 ? k : 1;
}

int fd_wait_writable(int fd, usec_t deadline)
{
        int k = fd_wait(fd, POLLOUT, deadline);

        return k <= 0 ? k : 1;
}

int fd_wait_either(int a, int b, usec_t deadline)
{
        struct pollfd p[2] = {
                {.fd = a, .events = POLLIN},
                {.fd = b, .events = POLLIN},
        };
        int k;

        if (a < 0 && b < 0)
                return -EBADF;
        k = poll_until(p, 2, deadline);
        if (k <= 0)
                return k;
        return (p[0].revents ? FD_WAIT_A : 0) | (p[1].revents ? FD_WAIT_B : 0);
}

bool fd_readable_now(int fd)
{
        return fd >= 0 && fd_wait_readable(fd, 0) != 0;
}

int write_all(int fd, const void *p, size_t n)
{
        const char *c = p;

        while (n > 0) {
                ssize_t k = write(fd, c, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                c += k;
                n -= (size_t) k;
        }
        return 0;
}

int write_all_stalling(int fd, const void *p, size_t n, int stall_ms, bool nosignal)
{
        const char *c = p;

        while (n > 0) {
                ssize_t k = nosignal ? send(fd, c, n, MSG_NOSIGNAL) : write(fd, c, n);

                if (k < 0 && errno == EAGAIN) {
                        usec_t until = stall_ms < 0
                                               ? USEC_INFINITY
                                               : now_usec() + (usec_t) stall_ms * USEC_PER_MSEC;
                        int w = fd_wait_writable(fd, until);

                        if (w == 0)
                                return -ETIMEDOUT;
                        if (w < 0)
                                return w;
                        continue;
                }
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                c += k;
                n -= (size_t) k;
        }
        return 0;
}

int write_string_at(int dirfd, const char *path, const char *s)
{
        _cleanup_close_ int fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        size_t n = strlen(s);
        ssize_t k;

        if (fd < 0)
                return -errno;
        k = write(fd, s, n);
        if (k < 0)
                return -errno;
        if ((size_t) k != n) {
                errno = EIO;
                return -EIO;
        }
        return 0;
}

int read_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len)
{
        _cleanup_close_ int fd = -EBADF;

        /* O_NONBLOCK so a FIFO cannot block us before the type check. */
        fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        return read_fd_all(fd, max, ret, ret_len);
}

int read_fd_all(int fd, size_t max, char **ret, size_t *ret_len)
{
        _cleanup_free_ char *data = NULL;
        struct stat st;
        size_t len = 0, alloc;

        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        if ((size_t) st.st_size > max)
                return -E2BIG;
        alloc = (size_t) st.st_size + 1;
        data = malloc(alloc);
        if (!data)
                return -ENOMEM;
        for (;;) {
                ssize_t k;

                if (len + 1 >= alloc) {
                        char *p;
                        if (alloc > max + 1)
                                return -E2BIG;
                        alloc = MIN(alloc * 2, max + 2);
                        p = realloc(data, alloc);
                        if (!p)
                                return -ENOMEM;
                        data = p;
                }
                k = read(fd, data + len, alloc - 1 - len);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                len += (size_t) k;
                if (len > max)
                        return -E2BIG;
        }
        data[len] = 0;
        *ret = TAKE_PTR(data);
        if (ret_len)
                *ret_len = len;
        return 0;
}

int write_file_atomic(const char *path, const void *p, size_t n, int mode)
{
        return write_file_atomic_at(AT_FDCWD, path, p, n, mode);
}

int write_file_atomic_at(int dirfd, const char *path, const void *p, size_t n, int mode)
{
        _cleanup_free_ char *tmp = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        unsigned char rnd[6];
        mode_t m;
        int r;

        if (mode < 0) {
                if (fstatat(dirfd, path, &st, 0) == 0)
                        m = st.st_mode & 07777;
                else if (errno == ENOENT)
                        m = 0644;
                else
                        return -errno;
        } else
                m = (mode_t) mode;

        if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t) sizeof(rnd))
                memset(rnd, 0x5a, sizeof(rnd));
        if (asprintf(&tmp, "%s.ptc-tmp-%02x%02x%02x%02x%02x%02x", path, rnd[0], rnd[1], rnd[2],
                     rnd[3], rnd[4], rnd[5]) < 0) {
                tmp = NULL;
                return -ENOMEM;
        }
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        r = write_all(fd, p, n);
        /* fchmod: the umask must not change the mode we keep. */
        if (r >= 0 && fchmod(fd, m) < 0)
                r = -errno;
        if (close(TAKE_FD(fd)) < 0 && r >= 0)
                r = -errno;
        if (r >= 0 && renameat(dirfd, tmp, dirfd, path) < 0)
                r = -errno;
        if (r < 0)
                (void) unlinkat(dirfd, tmp, 0);
        return r;
}

int memfd_with_data(const char *name, const void *p, size_t n)
{
        _cleanup_close_ int fd = memfd_create(name, MFD_CLOEXEC);
        int r;

        if (fd < 0)
                return -errno;
        r = write_all(fd, p, n);
        if (r < 0)
                return r;
        if (lseek(fd, 0, SEEK_SET) < 0)
                return -errno;
        return TAKE_FD(fd);
}

/*
 * close_range(2) of [@lo, @hi], or when that fails (ENOSYS before Linux 5.9; EPERM from a
 * container's seccomp profile that does not know it) close() of each fd below RLIMIT_NOFILE.
 */
static int close_fd_range(unsigned lo, unsigned hi)
{
        struct rlimit rl;

        if (close_range_compat(lo, hi, 0U) == 0)
                return 0;
        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return -errno;
        for (unsigned fd = lo; fd <= hi && fd < rl.rlim_cur; fd++)
                (void) close((int) fd);
        return 0;
}

int close_all_fds_but(int *keep, size_t n)
{
        unsigned next = 0;

        /* Insertion sort: a handful of fds, and no library call. */
        for (size_t i = 1; i < n; i++)
                for (size_t j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
                        int t = keep[j];
                        keep[j] = keep[j - 1];
                        keep[j - 1] = t;
                }
        for (size_t i = 0; i < n; i++) {
                int r;

                if (keep[i] < 0 || (unsigned) keep[i] < next)
                        continue; /* skipped, or a duplicate */
                if ((unsigned) keep[i] > next) {
                        r = close_fd_range(next, (unsigned) keep[i] - 1);
                        if (r < 0)
                                return r;
                }
                next = (unsigned) keep[i] + 1;
        }
        return close_fd_range(next, ~0U);
}
