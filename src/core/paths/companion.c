/* SPDX-License-Identifier: MIT */
#include "core/paths/companion.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/macro.h"
#include "ptc-paths.h"

/* "" when bindir or libdir is absolute (meson.build): no relative install layout. */
static const char dir_from_bindir[] = PTC_MODULE_DIR_FROM_BINDIR;

/*
 * The directory of the object this function is in: the executable's (from /proc/self/exe;
 * dladdr() would give argv[0]; *ret_exe true) or the shared library's, symlinks resolved.
 * A new string, or NULL.
 */
static char *own_dir(bool *ret_exe)
{
        _cleanup_free_ char *path = NULL;
        struct link_map *map = NULL;
        Dl_info info;
        char *slash;

        if (dladdr1((void *) own_dir, &info, (void **) &map, RTLD_DL_LINKMAP) == 0 || !map)
                return NULL;
        *ret_exe = map->l_name[0] == '\0';
        if (*ret_exe) {
                ssize_t n;

                path = malloc(PATH_MAX);
                if (!path)
                        return NULL;
                n = readlink("/proc/self/exe", path, PATH_MAX - 1);
                if (n < 0)
                        return NULL;
                path[n] = '\0';
        } else {
                path = realpath(map->l_name, NULL);
                if (!path)
                        return NULL;
        }
        slash = strrchr(path, '/');
        if (!slash || slash == path)
                return NULL;
        *slash = '\0';
        return TAKE_PTR(path);
}

void companion_dirs(char *ret[COMPANION_DIRS])
{
        bool exe = false;
        char *dir = own_dir(&exe), *installed = NULL;
        int k = 0;

        if (dir && exe && dir_from_bindir[0] != '\0')
                k = asprintf(&installed, "%s/%s", dir, dir_from_bindir);
        else if (dir && !exe)
                k = asprintf(&installed, "%s/ptc", dir);
        ret[0] = dir;
        ret[1] = k < 0 ? NULL : installed;
        ret[2] = strdup(PTC_MODULE_DIR);
}
