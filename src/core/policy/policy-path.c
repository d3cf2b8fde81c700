/* SPDX-License-Identifier: MIT */
/*
 * Path globs and host globs of the rules (docs/policy.md, "Paths" and "Hosts").
 *
 * A path pattern is a glob with search_files' syntax (core/search/search-ignore.h: `*` and
 * `?` stay within a component, `**` spans any number of them): absolute, "~/..." (the
 * call's home), relative to the call's directory when it has a '/', or, with no '/', a
 * name matched against the last component at any depth (".env", "*.pem").
 */

#include "core/policy/policy-internal.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/search/search-ignore.h"

bool policy_path_matches(const char *pattern, const char *path, const char *cwd, const char *home)
{
        _cleanup_free_ char *full = NULL;
        const char *base;

        if (!strchr(pattern, '/') && strcmp(pattern, "~") != 0) {
                base = strrchr(path, '/');
                base = base ? base + 1 : path;
                return ignore_glob_match(pattern, strlen(pattern), base, strlen(base));
        }
        if (pattern[0] == '~' && (pattern[1] == 0 || pattern[1] == '/')) {
                if (!home || home[0] != '/')
                        return false;
                if (asprintf(&full, "%s%s", strcmp(home, "/") == 0 ? "" : home, pattern + 1) < 0)
                        return false;
        } else if (pattern[0] != '/') {
                if (!cwd ||
                    asprintf(&full, "%s/%s", strcmp(cwd, "/") == 0 ? "" : cwd,
                             pattern[0] == '.' && pattern[1] == '/' ? pattern + 2 : pattern) < 0)
                        return false;
        }
        if (full)
                pattern = full;
        if (!strpbrk(pattern, "*?[")) {
                /* A plain path also names what is below it: "/etc" covers /etc/passwd. */
                size_t n = strlen(pattern);

                while (n > 1 && pattern[n - 1] == '/')
                        n--;
                if (n == 1 && pattern[0] == '/')
                        return true;
                return strncmp(path, pattern, n) == 0 && (path[n] == 0 || path[n] == '/');
        }
        return ignore_glob_match(pattern, strlen(pattern), path, strlen(path));
}

bool policy_host_matches(const char *pattern, const char *host)
{
        return fnmatch(pattern, host, FNM_CASEFOLD) == 0;
}
