/* SPDX-License-Identifier: MIT */
#include "basic/path-util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *path_join(const char *a, const char *b)
{
        size_t la = strlen(a);
        char *r;

        while (la > 1 && a[la - 1] == '/')
                la--;
        while (*b == '/')
                b++;
        if (asprintf(&r, "%.*s%s%s", (int) la, a, (la && a[la - 1] == '/') ? "" : "/", b) < 0)
                return NULL;
        return r;
}

bool path_is_below(const char *path, const char *dir)
{
        size_t n = strlen(dir);

        while (n > 1 && dir[n - 1] == '/')
                n--;
        if (path[0] != '/' || dir[0] != '/')
                return false;
        if (n == 1)
                return true;
        return strncmp(path, dir, n) == 0 && (path[n] == 0 || path[n] == '/');
}

int mkdir_p(const char *path, mode_t mode)
{
        _cleanup_free_ char *p = strdup(path);
        char *s;

        if (!p)
                return -ENOMEM;
        for (s = p + 1; *s; s++) {
                if (*s != '/')
                        continue;
                *s = 0;
                if (mkdir(p, mode) < 0 && errno != EEXIST)
                        return -errno;
                *s = '/';
        }
        if (mkdir(p, mode) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

static int rm_rf_at(int parent_fd, const char *name, int depth)
{
        _cleanup_close_ int fd = -EBADF;
        DIR *d;
        struct dirent *de;
        int r = 0;

        if (unlinkat(parent_fd, name, 0) == 0 || errno == ENOENT)
                return 0;
        if (errno != EISDIR && errno != EPERM)
                return -errno;
        if (depth > 256)
                return -ELOOP;
        fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        d = fdopendir(fd);
        if (!d)
                return -errno;
        fd = -EBADF; /* owned by d now */
        while ((de = readdir(d))) {
                int k;

                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                k = rm_rf_at(dirfd(d), de->d_name, depth + 1);
                if (k < 0 && r == 0)
                        r = k;
        }
        closedir(d);
        if (unlinkat(parent_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT && r == 0)
                r = -errno;
        return r;
}

int rm_rf(const char *path)
{
        return rm_rf_at(AT_FDCWD, path, 0);
}

char *xdg_cache_path(const char *sub)
{
        const char *x = getenv("XDG_CACHE_HOME");
        const char *home = getenv("HOME");
        char *p;

        if (x && x[0] == '/') {
                if (asprintf(&p, "%s/%s", x, sub) < 0)
                        return NULL;
        } else if (home && home[0] == '/') {
                if (asprintf(&p, "%s/.cache/%s", home, sub) < 0)
                        return NULL;
        } else
                return NULL;
        return p;
}

int ptc_serve_dir_path(char *buf, size_t n)
{
        const char *run = getenv("XDG_RUNTIME_DIR");
        int k;

        struct stat st;

        /*
         * Not /tmp where /var/tmp is: a script confined without the namespaces layer may
         * write all of /tmp, and with it this directory (docs/sessions.md).
         */
        if (run && run[0] == '/')
                k = snprintf(buf, n, "%s/ptc", run);
        else
                k = snprintf(buf, n, "%s/ptc-%u",
                             stat("/var/tmp", &st) == 0 && S_ISDIR(st.st_mode) ? "/var/tmp"
                                                                               : "/tmp",
                             (unsigned) getuid());
        if (k < 0 || (size_t) k >= n - sizeof("/serve.sock"))
                return -ENAMETOOLONG;
        return 0;
}

bool is_executable_file(const char *path)
{
        struct stat st;

        return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

int find_in_search_path(const char *name, const char *path, char **ret)
{
        if (!*name || strchr(name, '/'))
                return -ENOENT;
        if (!path || !*path)
                path = "/usr/local/bin:/usr/bin:/bin";
        while (*path) {
                size_t n = strcspn(path, ":");
                char *cand;

                /* An empty entry means the current directory, as for execvp(). */
                if (asprintf(&cand, "%.*s/%s", (int) (n ? n : 1), n ? path : ".", name) < 0)
                        return -ENOMEM;
                if (is_executable_file(cand)) {
                        *ret = cand;
                        return 0;
                }
                free(cand);
                path += n;
                if (*path == ':')
                        path++;
        }
        return -ENOENT;
}

char *find_in_path(const char *name)
{
        char *found = NULL;

        if (strchr(name, '/'))
                return is_executable_file(name) ? strdup(name) : NULL;
        return find_in_search_path(name, getenv("PATH"), &found) < 0 ? NULL : found;
}

void path_normalize_lexical(char *p)
{
        char *out = p, *in = p;

        /* Components are copied one by one; ".." drops the last one kept. */
        while (*in) {
                char *e;
                size_t n;

                while (*in == '/')
                        in++;
                if (!*in)
                        break;
                e = strchrnul(in, '/');
                n = (size_t) (e - in);
                if (n == 1 && in[0] == '.') {
                        /* nothing */
                } else if (n == 2 && in[0] == '.' && in[1] == '.') {
                        while (out > p && out[-1] != '/')
                                out--;
                        if (out > p)
                                out--; /* the slash before it */
                } else {
                        *out++ = '/';
                        memmove(out, in, n);
                        out += n;
                }
                in = e;
        }
        if (out == p)
                *out++ = '/';
        *out = 0;
}
