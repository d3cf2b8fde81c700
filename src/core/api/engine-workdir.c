/* SPDX-License-Identifier: MIT */
/*
 * The working directory a run may have (docs/isolation.md, "Working directories that are
 * refused"): which runs the rule of sandbox-cwd.h binds, its message for the engine's and an
 * execution's "cwd", and the private directory a server started in `/` works in instead
 * (PTC_ENGINE_PRIVATE_CWD).
 */

#include "core/api/engine.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/path-util.h"
#include "core/api/api-util.h"
#include "core/sandbox/sandbox-cwd.h"

/* Under the user's cache directory: the scripts' files are work, kept past a reboot. */
#define PRIVATE_CWD_SUB "ptc/workdirs"

bool engine_cwd_is_judged(const struct ptc_config *c, bool remote)
{
        /* strict mode runs in its staging dir; none confines nothing; a remote target
         * judges its own directory (its agent's engine). */
        return c->mode == PTC_MODE_PROJECT && c->isolation != PTC_ISOLATION_NONE && !remote;
}

int engine_check_cwd(const struct ptc_config *c, bool remote, const char *cwd, struct ptc_diag *pd)
{
        struct diag d = {};
        int r;

        if (!engine_cwd_is_judged(c, remote))
                return 0;
        r = sandbox_check_cwd(cwd, &d);
        if (r < 0)
                return api_diagf(pd, r == -EINVAL ? r : -EINVAL, "cwd: %s", d.message);
        return 0;
}

/* Whether a directory may be made at @path: its nearest existing ancestor is no refused one. */
static bool may_work_below(const char *path)
{
        _cleanup_free_ char *p = strdup(path);
        char why[128], *slash;

        if (!p || p[0] != '/')
                return false;
        /* The directory may not exist yet. */
        while (access(p, F_OK) < 0 && (slash = strrchr(p, '/')) && slash != p)
                *slash = 0;
        return sandbox_cwd_refused(p, why, sizeof(why)) == 0;
}

char *engine_private_cwd_base(void)
{
        _cleanup_free_ char *cache = xdg_cache_path(PRIVATE_CWD_SUB);
        const char *tmp = getenv("TMPDIR");

        /* A cache or TMPDIR in a refused tree (HOME=/etc, /run/user/UID) is not a place to
         * work either; /tmp always is. */
        if (cache && may_work_below(cache))
                return TAKE_PTR(cache);
        return strdup(tmp && may_work_below(tmp) ? tmp : "/tmp");
}

int engine_make_private_cwd(const char *why_started, char **ret, char **ret_note, struct diag *d)
{
        _cleanup_free_ char *base = engine_private_cwd_base(), *dir = NULL, *note = NULL;
        int r;

        if (!base)
                return diag_set(d, -ENOMEM, "out of memory");
        r = mkdir_p(base, 0700);
        if (r < 0)
                return diag_set(d, r, "cannot create '%s' for a private working directory: %s",
                                base, strerror(-r));
        if (asprintf(&dir, "%s/ptc-work-%d-XXXXXX", base, (int) getpid()) < 0)
                return diag_set(d, -ENOMEM, "out of memory");
        /* 0700, a new name: nobody else's files, nobody else's reach. */
        if (!mkdtemp(dir))
                return diag_set(d, -errno, "cannot create a private working directory in '%s': %m",
                                base);
        if (asprintf(&note,
                     "cwd: ptc was started in %s, which a confined script may not use as its "
                     "working directory: scripts run in the private directory %s instead "
                     "(kept at exit unless empty; give --cwd DIR to choose one)",
                     why_started, dir) < 0)
                return diag_set(d, -ENOMEM, "out of memory");
        *ret = TAKE_PTR(dir);
        *ret_note = TAKE_PTR(note);
        return 0;
}
