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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/macro.h"
#include "core/paths/companion.h"
#include "core/web/web-fetch.h"
#include "ptc-version.h"

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
/* Written once (web_module_use_builtin() or the once-routine), read-only afterwards. */
static const struct web_module *module;
static struct diag load_error;

void web_module_use_builtin(const struct web_module *m)
{
        module = m;
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
        char *dirs[COMPANION_DIRS];

        if (module)
                return; /* web_module_use_builtin() */
        companion_dirs(dirs);
        load_from(dirs, COMPANION_DIRS);
        for (size_t i = 0; i < COMPANION_DIRS; i++)
                free(dirs[i]);
}

const struct web_module *web_module_get(struct diag *reterr)
{
        pthread_once(&load_once, load_once_routine);
        if (!module && reterr)
                *reterr = load_error;
        return module;
}
