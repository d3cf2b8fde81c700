/* SPDX-License-Identifier: MIT */
/*
 * The working directories a confined run refuses (sandbox-cwd.h). Each check opens the
 * directory once (O_PATH) and walks ".." from that descriptor up to the process's root,
 * comparing device and inode with those of the system trees, stat()ed now: no path text is
 * compared, so no spelling, symlink or bind mount of a system tree gets through.
 */

#include "core/sandbox/sandbox-cwd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/macro.h"

/* A path has at most PATH_MAX / 2 components; a walk longer than that is a loop. */
#define WALK_MAX (PATH_MAX / 2)
/* The lib* entries of / looked at (lib, lib32, lib64, libx32, libexec, ...). */
#define LIB_TREES_MAX 16

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir);

struct tree {
        char path[64];
        dev_t dev;
        ino_t ino;
};

static bool same(const struct stat *st, const struct tree *t)
{
        return st->st_dev == t->dev && st->st_ino == t->ino;
}

/* @path's device and inode into @t (symlinks followed: /bin -> usr/bin is /usr/bin). */
static bool tree_stat(const char *path, struct tree *t)
{
        struct stat st;

        if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
                return false;
        (void) snprintf(t->path, sizeof(t->path), "%s", path);
        t->dev = st.st_dev;
        t->ino = st.st_ino;
        return true;
}

/* The tree as a message names it: as it resolves (/bin is /usr/bin on merged-usr systems).
 * Only for a refusal: the checks of every run need no path resolved. */
static void say_tree(char *why, size_t why_len, bool inside, const struct tree *t)
{
        _cleanup_free_ char *real = realpath(t->path, NULL);

        (void) snprintf(why, why_len, "%sthe system tree %s", inside ? "inside " : "",
                        real ? real : t->path);
}

/* The trees refused with everything below them: the fixed ones, then /lib*. */
static size_t system_trees(struct tree *ret, size_t max)
{
        /* /run too: the system's sockets (docker.sock, D-Bus) are there, and a pathname
         * socket inside the working directory is reachable (docs/isolation.md). */
        static const char *const fixed[] = {"/usr",  "/etc", "/bin", "/sbin", "/boot",
                                            "/proc", "/sys", "/dev", "/run"};
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;
        size_t n = 0;

        for (size_t i = 0; i < ELEMENTSOF(fixed) && n < max; i++)
                if (tree_stat(fixed[i], &ret[n]))
                        n++;
        d = opendir("/");
        while (d && n < max && (de = readdir(d))) {
                char path[64];

                if (strncmp(de->d_name, "lib", 3) != 0 || strlen(de->d_name) > 32)
                        continue;
                (void) snprintf(path, sizeof(path), "/%s", de->d_name);
                if (tree_stat(path, &ret[n]))
                        n++;
        }
        return n;
}

int sandbox_cwd_refused(const char *dir, char *why, size_t why_len)
{
        struct tree trees[9 + LIB_TREES_MAX], root, var;
        bool have_var = tree_stat("/var", &var);
        _cleanup_close_ int fd = -EBADF;
        size_t n;
        struct stat st;

        if (!tree_stat("/", &root))
                return -errno ?: -ENOENT;
        fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0)
                return -errno;
        if (same(&st, &root)) {
                (void) snprintf(why, why_len, "the root directory");
                return 1;
        }
        if (have_var && same(&st, &var)) {
                (void) snprintf(why, why_len, "the system tree /var itself");
                return 1;
        }
        n = system_trees(trees, ELEMENTSOF(trees));
        for (unsigned depth = 0; depth < WALK_MAX; depth++) {
                struct stat up;
                int parent;

                for (size_t i = 0; i < n; i++)
                        if (same(&st, &trees[i])) {
                                say_tree(why, why_len, depth > 0, &trees[i]);
                                return 1;
                        }
                if (same(&st, &root))
                        return 0;
                parent = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (parent < 0)
                        return -errno;
                safe_close(fd);
                fd = parent;
                if (fstat(fd, &up) < 0)
                        return -errno;
                /* The top of this process's view: ".." of it is itself. */
                if (up.st_dev == st.st_dev && up.st_ino == st.st_ino)
                        return 0;
                st = up;
        }
        return -ELOOP;
}

int sandbox_check_cwd(const char *dir, struct diag *reterr)
{
        _cleanup_free_ char *real = NULL;
        char why[128];
        int r;

        r = sandbox_cwd_refused(dir, why, sizeof(why));
        if (r < 0)
                return diag_set(reterr, r, "cannot use the working directory '%s': %s", dir,
                                strerror(-r));
        if (r == 0)
                return 0;
        real = realpath(dir, NULL);
        if (real && strcmp(real, dir) != 0)
                return diag_set(reterr, -EINVAL,
                                "the working directory '%s' (that is '%s') is %s: a confined "
                                "script may write there, so it is refused (choose a project "
                                "directory with --cwd DIR, or --remote-cwd DIR on a remote "
                                "backend)",
                                dir, real, why);
        return diag_set(reterr, -EINVAL,
                        "the working directory '%s' is %s: a confined script may write there, "
                        "so it is refused (choose a project directory with --cwd DIR, or "
                        "--remote-cwd DIR on a remote backend)",
                        dir, why);
}
