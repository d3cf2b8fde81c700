/* SPDX-License-Identifier: MIT */
/*
 * Paths as a tool call names them: "~" expanded with the call's $HOME (not ptc's), relative
 * paths resolved against the call's cwd. Moved out of tools/tool-util.c so that path safety
 * (file-safety.c) needs nothing of the tools; tool-util.c's tool_*() wrappers take these
 * values from struct tool_ctx.
 */

#include "core/fs/path-resolve.h"

#include <ctype.h>
#include <errno.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/macro.h"

/* getpwnam_r()/getpwuid_r() buffer; entries longer than this are treated as absent. */
#define PW_BUF_SIZE 4096

/* Longest user name accepted after "~" (the seed validates [a-zA-Z0-9._-]+). */
#define USER_NAME_MAX 256

const char *fs_env_get(char *const *env, const char *name)
{
        size_t n;

        if (!env || !name)
                return NULL;
        n = strlen(name);
        for (char *const *e = env; *e; e++)
                if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
                        return *e + n + 1;
        return NULL;
}

/*
 * A home directory from the password database: of the user running ptc (@name NULL) or of
 * @name. 0, -ENOENT (no such user, no home) or -ENOMEM.
 */
static int passwd_home(const char *name, char **ret)
{
        char buf[PW_BUF_SIZE];
        struct passwd pw, *res = NULL;
        int r;

        r = name ? getpwnam_r(name, &pw, buf, sizeof(buf), &res)
                 : getpwuid_r(getuid(), &pw, buf, sizeof(buf), &res);
        if (r != 0 || !res || !res->pw_dir || !*res->pw_dir)
                return -ENOENT;
        *ret = strdup(res->pw_dir);
        return *ret ? 0 : -ENOMEM;
}

int fs_home_dir(char *const *env, char **ret)
{
        const char *h = fs_env_get(env, "HOME");

        if (h && *h) {
                *ret = strdup(h);
                return *ret ? 0 : -ENOMEM;
        }
        return passwd_home(NULL, ret);
}

int fs_real_home_dir(char **ret)
{
        return passwd_home(NULL, ret);
}

static bool user_name_ok(const char *s, size_t n)
{
        if (n == 0 || n >= USER_NAME_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char) s[i]) && !strchr("._-", s[i]))
                        return false;
        return true;
}

static int copy_string(const char *s, char **ret)
{
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

int fs_expand_tilde(char *const *env, const char *path, char **ret)
{
        _cleanup_free_ char *home = NULL;
        const char *rest;
        int r;

        if (path[0] != '~')
                return copy_string(path, ret);

        if (path[1] == 0 || path[1] == '/') {
                r = fs_home_dir(env, &home);
                rest = path + 1;
        } else {
                const char *slash = strchr(path + 1, '/');
                size_t n = slash ? (size_t) (slash - path - 1) : strlen(path + 1);
                char name[USER_NAME_MAX];

                /* "~user": only plain user names, as the seed; anything else is literal. */
                if (!user_name_ok(path + 1, n))
                        return copy_string(path, ret);
                memcpy(name, path + 1, n);
                name[n] = 0;
                r = passwd_home(name, &home);
                rest = path + 1 + n;
        }
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return copy_string(path, ret); /* no such home: "~" stays literal, as Python */
        if (asprintf(ret, "%s%s", home, rest) < 0) {
                *ret = NULL;
                return -ENOMEM;
        }
        return 0;
}

char *fs_resolve_path(const char *cwd, char *const *env, const char *path)
{
        _cleanup_free_ char *p = NULL;
        size_t lc;
        char *r;

        if (!cwd || cwd[0] != '/')
                cwd = "/";
        if (fs_expand_tilde(env, path ?: "", &p) < 0)
                return NULL;
        if (p[0] == '/')
                return TAKE_PTR(p);
        if (p[0] == 0)
                return strdup(cwd);

        lc = strlen(cwd);
        while (lc > 1 && cwd[lc - 1] == '/')
                lc--;
        if (asprintf(&r, "%.*s%s%s", (int) lc, cwd, cwd[lc - 1] == '/' ? "" : "/", p) < 0)
                return NULL;
        return r;
}
