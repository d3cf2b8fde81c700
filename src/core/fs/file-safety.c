/* SPDX-License-Identifier: MIT */
/*
 * Which paths the file tools refuse (docs/seed.md 2.1 steps 1-2 and 2.2):
 * device files that would block a read, binary files by extension, system
 * locations and credential files a write must not touch.
 *
 * The deny lists are matched against symlink-resolved paths, as the seed does
 * with os.path.realpath, so a link in the project pointing at ~/.ssh/id_rsa is
 * refused too.
 */

#include "core/fs/file-safety.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/macro.h"
#include "core/fs/fs-chase.h"
#include "core/fs/path-resolve.h"

/* Symlink hops file_safety_realpath() follows by hand before giving up (the kernel's limit). */
#define MAX_SYMLINK_HOPS 40

/* Longest path handled; longer ones are refused rather than resolved piecemeal. */
#define PATH_LEN_MAX (2 * PATH_MAX)

/* Roots in $HERMES_WRITE_SAFE_ROOT we look at. */
#define SAFE_ROOTS_MAX 64

static const char *const blocked_devices[] = {
        "/dev/zero",    "/dev/random", "/dev/urandom", "/dev/full", "/dev/stdin", "/dev/tty",
        "/dev/console", "/dev/stdout", "/dev/stderr",  "/dev/fd/0", "/dev/fd/1",  "/dev/fd/2",
};

/* clang-format off */
static const char *const binary_extensions[] = {
        /* images */
        "png", "jpg", "jpeg", "gif", "bmp", "ico", "webp", "tiff", "tif",
        /* video */
        "mp4", "mov", "avi", "mkv", "webm", "wmv", "flv", "m4v", "mpeg", "mpg",
        /* audio */
        "mp3", "wav", "ogg", "flac", "aac", "m4a", "wma", "aiff", "opus",
        /* archives */
        "zip", "tar", "gz", "bz2", "7z", "rar", "xz", "z", "tgz", "iso",
        /* executables and libraries */
        "exe", "dll", "so", "dylib", "bin", "o", "a", "obj", "lib", "app", "msi", "deb", "rpm",
        /* Office documents (not pdf: it is text an agent may want to inspect) */
        "doc", "docx", "xls", "xlsx", "ppt", "pptx", "odt", "ods", "odp",
        /* fonts */
        "ttf", "otf", "woff", "woff2", "eot",
        /* bytecode and VM artefacts */
        "pyc", "pyo", "class", "jar", "war", "ear", "node", "wasm", "rlib",
        /* databases */
        "sqlite", "sqlite3", "db", "mdb", "idx",
        /* design and 3D */
        "psd", "ai", "eps", "sketch", "fig", "xd", "blend", "3ds", "max",
        /* Flash */
        "swf", "fla",
        /* lock files and data dumps */
        "lockb", "dat", "data",
};
/* clang-format on */

static const char *const sensitive_prefixes[] = {
        "/etc/", "/boot/", "/usr/lib/systemd/", "/private/etc/", "/private/var/",
};

static const char *const sensitive_exact[] = {
        "/var/run/docker.sock",
        "/run/docker.sock",
};

/* Relative to a home directory: files never written... */
static const char *const home_denied_files[] = {
        ".ssh/authorized_keys",
        ".ssh/id_rsa",
        ".ssh/id_ed25519",
        ".ssh/config",
        ".bashrc",
        ".zshrc",
        ".profile",
        ".bash_profile",
        ".zprofile",
        ".netrc",
        ".pgpass",
        ".npmrc",
        ".pypirc",
};

/* ... and directories nothing is written below. */
static const char *const home_denied_dirs[] = {
        ".ssh", ".aws", ".gnupg", ".kube", ".docker", ".azure", ".config/gh",
};

static const char *const system_denied_files[] = {
        "/etc/sudoers",
        "/etc/passwd",
        "/etc/shadow",
};

static const char *const system_denied_dirs[] = {
        "/etc/sudoers.d",
        "/etc/systemd",
};

static bool startswith(const char *s, const char *prefix)
{
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool endswith(const char *s, const char *suffix)
{
        size_t ls = strlen(s), lx = strlen(suffix);

        return ls >= lx && memcmp(s + ls - lx, suffix, lx) == 0;
}

bool file_safety_is_blocked_device(const char *path)
{
        if (!path)
                return false;
        for (size_t i = 0; i < ELEMENTSOF(blocked_devices); i++)
                if (strcmp(path, blocked_devices[i]) == 0)
                        return true;
        return startswith(path, "/proc/") &&
               (endswith(path, "/fd/0") || endswith(path, "/fd/1") || endswith(path, "/fd/2"));
}

static bool ascii_caseeq(const char *a, const char *b)
{
        for (; *a && *b; a++, b++) {
                char x = *a, y = *b;

                if (x >= 'A' && x <= 'Z')
                        x = (char) (x - 'A' + 'a');
                if (x != y)
                        return false;
        }
        return *a == *b;
}

bool file_safety_has_binary_extension(const char *path)
{
        const char *dot;

        if (!path)
                return false;
        dot = strrchr(path, '.');
        if (!dot)
                return false;
        for (size_t i = 0; i < ELEMENTSOF(binary_extensions); i++)
                if (ascii_caseeq(dot + 1, binary_extensions[i]))
                        return true;
        return false;
}

const char *file_safety_suffix(const char *path, char *buf, size_t size)
{
        const char *name, *dot, *end;
        size_t len, n;

        if (size == 0)
                return buf;
        buf[0] = 0;
        if (!path)
                return buf;

        /* The last component, ignoring trailing slashes (PurePath normalises them away). */
        end = path + strlen(path);
        while (end > path + 1 && end[-1] == '/')
                end--;
        name = end;
        while (name > path && name[-1] != '/')
                name--;
        len = (size_t) (end - name);

        dot = NULL;
        for (const char *p = name; p < end; p++)
                if (*p == '.')
                        dot = p;
        /* A leading dot (".bashrc") or a trailing one ("file.") is not a suffix. */
        if (!dot || dot == name || dot == name + len - 1)
                return buf;

        n = MIN((size_t) (end - dot), size - 1);
        for (size_t i = 0; i < n; i++) {
                char c = dot[i];

                buf[i] = (c >= 'A' && c <= 'Z') ? (char) (c - 'A' + 'a') : c;
        }
        buf[n] = 0;
        return buf;
}

bool file_safety_is_sensitive_path(const char *resolved, const char *normalized)
{
        const char *paths[2] = {resolved, normalized};

        for (size_t k = 0; k < ELEMENTSOF(paths); k++) {
                if (!paths[k])
                        continue;
                for (size_t i = 0; i < ELEMENTSOF(sensitive_prefixes); i++)
                        if (startswith(paths[k], sensitive_prefixes[i]))
                                return true;
                for (size_t i = 0; i < ELEMENTSOF(sensitive_exact); i++)
                        if (strcmp(paths[k], sensitive_exact[i]) == 0)
                                return true;
        }
        return false;
}

int file_safety_normpath(const char *path, char **ret)
{
        _cleanup_free_ char *copy = NULL, *out = NULL;
        _cleanup_free_ const char **comps = NULL;
        size_t n, initial = 0, o = 0, ncomps = 0;
        char *s, *save = NULL;

        if (!path || !*path) {
                *ret = strdup(".");
                return *ret ? 0 : -ENOMEM;
        }
        n = strlen(path);
        /* POSIX keeps exactly two leading slashes ("//a"); three or more become one. */
        if (path[0] == '/')
                initial = (path[1] == '/' && path[2] != '/') ? 2 : 1;

        copy = strdup(path);
        comps = calloc(n / 2 + 2, sizeof(*comps));
        out = malloc(n + 3);
        if (!copy || !comps || !out)
                return -ENOMEM;
        for (s = strtok_r(copy, "/", &save); s; s = strtok_r(NULL, "/", &save)) {
                if (strcmp(s, ".") == 0)
                        continue;
                if (strcmp(s, "..") != 0 || (initial == 0 && ncomps == 0) ||
                    (ncomps > 0 && strcmp(comps[ncomps - 1], "..") == 0))
                        comps[ncomps++] = s;
                else if (ncomps > 0)
                        ncomps--;
        }

        for (size_t i = 0; i < initial; i++)
                out[o++] = '/';
        for (size_t i = 0; i < ncomps; i++) {
                size_t l = strlen(comps[i]);

                if (i > 0)
                        out[o++] = '/';
                memcpy(out + o, comps[i], l);
                o += l;
        }
        if (o == 0)
                out[o++] = '.';
        out[o] = 0;
        *ret = TAKE_PTR(out);
        return 0;
}

static int join2(const char *dir, const char *name, char **ret)
{
        size_t l = strlen(dir);

        if (asprintf(ret, "%s%s%s", dir, (l > 0 && dir[l - 1] == '/') ? "" : "/", name) < 0) {
                *ret = NULL;
                return -ENOMEM;
        }
        return 0;
}

/* The parent of an absolute, normalised path ("/a/b" -> "/a", "/a" -> "/"). */
static char *parent_of(const char *p)
{
        const char *slash = strrchr(p, '/');

        if (!slash || slash == p)
                return strdup("/");
        return strndup(p, (size_t) (slash - p));
}

static int realpath_rec(const char *path, unsigned *hops, char **ret)
{
        _cleanup_free_ char *p = NULL, *dir = NULL, *parent = NULL;
        struct stat st;
        char *r, *slash;
        const char *base;
        size_t n;

        r = realpath(path, NULL);
        if (r) {
                *ret = r;
                return 0;
        }
        if (errno == ENOMEM)
                return -ENOMEM;

        /* A dangling symlink as the last component: follow it by hand, as Python does. */
        if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && ++*hops <= MAX_SYMLINK_HOPS) {
                char target[PATH_MAX];
                ssize_t k = readlink(path, target, sizeof(target) - 1);

                if (k > 0) {
                        _cleanup_free_ char *next = NULL, *d = NULL;

                        target[k] = 0;
                        if (target[0] == '/')
                                next = strdup(target);
                        else {
                                _cleanup_free_ char *norm = NULL;

                                if (file_safety_normpath(path, &norm) < 0)
                                        return -ENOMEM;
                                d = parent_of(norm);
                                if (!d || join2(d, target, &next) < 0)
                                        return -ENOMEM;
                        }
                        if (!next)
                                return -ENOMEM;
                        return realpath_rec(next, hops, ret);
                }
        }

        p = strdup(path);
        if (!p)
                return -ENOMEM;
        n = strlen(p);
        while (n > 1 && p[n - 1] == '/')
                p[--n] = 0;
        if (strcmp(p, "/") == 0) {
                *ret = TAKE_PTR(p);
                return 0;
        }
        slash = strrchr(p, '/');
        if (!slash)
                return -EINVAL;
        base = slash + 1;
        dir = slash == p ? strdup("/") : strndup(p, (size_t) (slash - p));
        if (!dir)
                return -ENOMEM;

        r = NULL;
        {
                int q = realpath_rec(dir, hops, &parent);
                if (q < 0)
                        return q;
        }
        if (strcmp(base, ".") == 0) {
                *ret = TAKE_PTR(parent);
                return 0;
        }
        if (strcmp(base, "..") == 0) {
                r = parent_of(parent);
                if (!r)
                        return -ENOMEM;
                *ret = r;
                return 0;
        }
        return join2(parent, base, ret);
}

int file_safety_realpath(const char *path, char **ret)
{
        _cleanup_fs_chased_ struct fs_chased c = FS_CHASED_INIT;
        unsigned hops = 0;
        int r;

        if (!path || path[0] != '/')
                return -EINVAL;
        if (strlen(path) > PATH_LEN_MAX)
                return -ENAMETOOLONG;
        /* The file tools' resolver first (fs-chase.h), so that the guards name what the
         * tools reach; what it cannot resolve ("missing/..", a loop, a magic link, a
         * directory that cannot be searched) gets Python's lexical answer, as the seed. */
        r = fs_chase(path, FS_CHASE_MISSING_OK, &c);
        if (r == -ENOMEM)
                return r;
        if (r >= 0) {
                *ret = TAKE_PTR(c.path);
                return 0;
        }
        return realpath_rec(path, &hops, ret);
}

/* realpath of @a joined with @b; NULL on any failure (the entry is then skipped). */
static char *resolved_join(const char *a, const char *b)
{
        _cleanup_free_ char *j = NULL;
        char *r = NULL;

        if (join2(a, b, &j) < 0)
                return NULL;
        if (file_safety_realpath(j, &r) < 0)
                return NULL;
        return r;
}

static bool under_dir(const char *resolved, const char *dir_resolved)
{
        size_t l = strlen(dir_resolved);

        if (l > 0 && dir_resolved[l - 1] == '/')
                l--;
        return strncmp(resolved, dir_resolved, l) == 0 && resolved[l] == '/';
}

static int denied_for_home(const char *resolved, const char *home)
{
        for (size_t i = 0; i < ELEMENTSOF(home_denied_files); i++) {
                _cleanup_free_ char *c = resolved_join(home, home_denied_files[i]);

                if (c && strcmp(resolved, c) == 0)
                        return 1;
        }
        for (size_t i = 0; i < ELEMENTSOF(home_denied_dirs); i++) {
                _cleanup_free_ char *c = resolved_join(home, home_denied_dirs[i]);

                if (c && under_dir(resolved, c))
                        return 1;
        }
        return 0;
}

static int outside_safe_roots(const char *cwd, char *const *env, const char *resolved,
                              const char *roots)
{
        _cleanup_free_ char *copy = strdup(roots);
        char *s, *save = NULL;
        unsigned n = 0;
        bool any = false;

        if (!copy)
                return -ENOMEM;
        for (s = strtok_r(copy, ":", &save); s && n < SAFE_ROOTS_MAX;
             s = strtok_r(NULL, ":", &save), n++) {
                _cleanup_free_ char *abs = fs_resolve_path(cwd, env, s), *root = NULL;

                if (!abs)
                        return -ENOMEM;
                if (file_safety_realpath(abs, &root) < 0)
                        continue;
                any = true;
                if (strcmp(resolved, root) == 0 || under_dir(resolved, root))
                        return 0;
        }
        return any ? 1 : 0;
}

int file_safety_write_denied(const char *cwd, char *const *env, const char *abs_path)
{
        _cleanup_free_ char *resolved = NULL, *home_env = NULL, *home_pw = NULL;
        _cleanup_free_ char *hermes_home = NULL;
        const char *homes[2], *hh, *roots;
        int r;

        r = file_safety_realpath(abs_path, &resolved);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return 1; /* a path we cannot even resolve is not written */

        {
                _cleanup_free_ char *h1 = NULL, *h2 = NULL;

                /* Only -ENOENT (no home known) besides -ENOMEM: that home is then skipped. */
                r = fs_home_dir(env, &h1);
                if (r == -ENOMEM)
                        return r;
                r = fs_real_home_dir(&h2);
                if (r == -ENOMEM)
                        return r;
                if (h1 && h1[0] == '/' && file_safety_realpath(h1, &home_env) < 0)
                        home_env = NULL;
                if (h2 && h2[0] == '/' && file_safety_realpath(h2, &home_pw) < 0)
                        home_pw = NULL;
        }
        homes[0] = home_env;
        homes[1] = home_pw && (!home_env || strcmp(home_pw, home_env) != 0) ? home_pw : NULL;
        for (size_t i = 0; i < ELEMENTSOF(homes); i++)
                if (homes[i] && denied_for_home(resolved, homes[i]))
                        return 1;

        /* The agent's own secrets file, <HERMES_HOME>/.env (default ~/.hermes). */
        hh = fs_env_get(env, "HERMES_HOME");
        if (hh && *hh)
                hermes_home = fs_resolve_path(cwd, env, hh);
        else if (home_env)
                (void) join2(home_env, ".hermes", &hermes_home);
        if (hermes_home && hermes_home[0] == '/') {
                _cleanup_free_ char *c = resolved_join(hermes_home, ".env");

                if (c && strcmp(resolved, c) == 0)
                        return 1;
        }

        for (size_t i = 0; i < ELEMENTSOF(system_denied_files); i++) {
                _cleanup_free_ char *c = NULL;

                if (file_safety_realpath(system_denied_files[i], &c) >= 0 &&
                    strcmp(resolved, c) == 0)
                        return 1;
                if (strcmp(resolved, system_denied_files[i]) == 0)
                        return 1;
        }
        for (size_t i = 0; i < ELEMENTSOF(system_denied_dirs); i++) {
                _cleanup_free_ char *c = NULL;

                if (file_safety_realpath(system_denied_dirs[i], &c) >= 0 && under_dir(resolved, c))
                        return 1;
                if (under_dir(resolved, system_denied_dirs[i]))
                        return 1;
        }

        roots = fs_env_get(env, "HERMES_WRITE_SAFE_ROOT");
        if (roots && *roots)
                return outside_safe_roots(cwd, env, resolved, roots);
        return 0;
}
