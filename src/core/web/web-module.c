/* SPDX-License-Identifier: MIT */
/*
 * The loader of ptc-web.so (web-module.h). The lookup starts from the object
 * the running core code is in, so a build tree, a staged install and the
 * installed tree each find their own module, and ends at the configured
 * install directory.
 */

#include "core/web/web-module.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/macro.h"
#include "core/web/web-fetch.h"
#include "ptc-paths.h"
#include "ptc-version.h"

/* "" when bindir or libdir is absolute (meson.build): no relative install layout. */
static const char module_dir_from_bindir[] = PTC_MODULE_DIR_FROM_BINDIR;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
/* Written once (web_module_use_builtin() or the once-routine), read-only afterwards. */
static const struct web_module *module;
static struct diag load_error;

void web_module_use_builtin(const struct web_module *m)
{
        module = m;
}

/*
 * The directory of the object this function is in: the executable's (from
 * /proc/self/exe; dladdr() would give argv[0]; *ret_exe true) or the shared
 * library's, symlinks resolved. A new string, or NULL.
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

/* What @handle exports, when it is this build's module; else NULL with load_error set. */
static const struct web_module *module_check(void *handle, const char *path)
{
        const struct web_module *m = dlsym(handle, WEB_MODULE_SYMBOL);

        if (!m) {
                diag_set(&load_error, -ELIBBAD, "web tools unavailable: %s does not export %s",
                         path, WEB_MODULE_SYMBOL);
                return NULL;
        }
        /* size and version lead the struct in every layout (web-module.h). */
        if (!m->version || strcmp(m->version, PTC_VERSION) != 0) {
                diag_set(&load_error, -ELIBBAD,
                         "web tools unavailable: %s is from ptc %.64s, this is ptc %s", path,
                         m->version ? m->version : "(unknown)", PTC_VERSION);
                return NULL;
        }
        if (m->size != sizeof(*m) || m->request_size != sizeof(struct web_request) ||
            m->response_size != sizeof(struct web_response)) {
                diag_set(&load_error, -ELIBBAD,
                         "web tools unavailable: %s is from another build of ptc %s", path,
                         PTC_VERSION);
                return NULL;
        }
        return m;
}

/* Load the first module present among @dirs (NULL entries skipped). */
static void load_from(char *const *dirs, size_t n)
{
        _cleanup_free_ char *tried = NULL;

        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *path = NULL;
                const char *e;
                void *handle;

                if (!dirs[i])
                        continue;
                if (asprintf(&path, "%s/%s", dirs[i], WEB_MODULE_FILE) < 0) {
                        diag_set(&load_error, -ENOMEM, "web tools unavailable: out of memory");
                        return;
                }
                if (access(path, F_OK) < 0) {
                        char *t = NULL;

                        if (asprintf(&t, "%s%s%s", tried ?: "", tried ? ", " : "", dirs[i]) >= 0) {
                                free(tried);
                                tried = t;
                        }
                        continue;
                }
                /* The first one present is the one: a broken module is reported, not skipped. */
                handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
                if (!handle) {
                        e = dlerror();
                        diag_set(&load_error, -ELIBACC, "web tools unavailable: cannot load %s: %s",
                                 path, e ? e : "unknown error");
                        return;
                }
                module = module_check(handle, path);
                if (!module)
                        dlclose(handle);
                return;
        }
        diag_set(&load_error, -ENOENT, "web tools unavailable: %s not found in %s", WEB_MODULE_FILE,
                 tried ?: "(nowhere)");
}

static void load_once_routine(void)
{
        _cleanup_free_ char *dir = NULL, *installed = NULL;
        bool exe = false;
        int k = 0;

        if (module)
                return; /* web_module_use_builtin() */
        dir = own_dir(&exe);
        /* The install layout seen from the object: bindir -> libdir/ptc, or libdir -> ptc. */
        if (dir && exe && module_dir_from_bindir[0] != '\0')
                k = asprintf(&installed, "%s/%s", dir, module_dir_from_bindir);
        else if (dir && !exe)
                k = asprintf(&installed, "%s/ptc", dir);
        if (k < 0)
                installed = NULL;
        load_from((char *const[]){dir, installed, (char *) PTC_MODULE_DIR}, 3);
}

const struct web_module *web_module_get(struct diag *reterr)
{
        pthread_once(&load_once, load_once_routine);
        if (!module && reterr)
                *reterr = load_error;
        return module;
}
