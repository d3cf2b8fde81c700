/* SPDX-License-Identifier: MIT */
/*
 * A script's confined start (exec-internal.h: exec_start_confined()), a local run's and a
 * session interpreter's: the isolation level's layers, what isolation auto leaves out and the
 * warnings that say so, the policy's path rules on the script's own writes.
 */
#include "core/exec/exec-internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/strv.h"
#include "core/env/env.h"
#include "core/policy/path-protect.h"
#include "core/registry/registry.h"
#include "core/sandbox/cgroup.h"
#include "core/sandbox/landlock.h"
#include "core/sandbox/sandbox-cwd.h"
#include "core/sandbox/sandbox.h"
#include "core/spawn/interpreter.h"

/* A warning for the host (exec_opts.on_warning): the library prints nothing. */
_printf_(2, 3) static void warn(const struct exec_opts *o, const char *fmt, ...)
{
        _cleanup_free_ char *line = NULL;
        va_list ap;

        if (!o->on_warning)
                return;
        va_start(ap, fmt);
        if (vasprintf(&line, fmt, ap) < 0)
                line = NULL; /* out of memory: the warning is lost, the run goes on */
        va_end(ap);
        if (line)
                o->on_warning(o->on_warning_userdata, line);
}

/*
 * What the policy's path rules cannot hold terminal commands and the script's own writes to
 * here (Landlock missing, isolation none, name patterns): said once a start, a run's or a
 * session interpreter's (core/policy/path-protect.h).
 */
static int warn_path_protect(const struct exec_opts *o)
{
        const struct ptc_config *c = o->config;
        _cleanup_strv_free_ char **lines = NULL;
        unsigned who = 0;
        int r;

        if (!path_protect_wanted(c))
                return 0;
        if (o->registry && registry_find(o->registry, "terminal"))
                who |= PATH_PROTECT_TERMINAL;
        if (c->isolation != PTC_ISOLATION_NONE)
                who |= PATH_PROTECT_SCRIPT;
        r = path_protect_describe(c, landlock_abi(), who, &lines);
        if (r >= 0 && c->isolation == PTC_ISOLATION_NONE)
                r = path_protect_unbound(c, "isolation none", PATH_PROTECT_SCRIPT, &lines);
        if (r < 0)
                return r;
        for (char **l = lines; l && *l; l++)
                warn(o, "%s", *l);
        return 0;
}

/*
 * The script's own ruleset (path-protect.h) for the layers in @sb, built at the first start
 * and again when the namespaces layer came or went (inside it the child opens the paths in
 * its own root, where /tmp is private); none without the Landlock layer. @p keeps what
 * sb->protect points to; *@built_for is -1 before the first build, then whether it was for
 * the namespaces layer. Returns 0 or -ENOMEM.
 */
static int script_protect(const struct exec_opts *o, const struct exec_child_opts *co,
                          struct sandbox_opts *sb, struct path_protect *p, int *built_for)
{
        bool own_root = sb->layers & (1u << SANDBOX_LAYER_NAMESPACES);
        int r;

        sb->protect = NULL;
        if (!path_protect_wanted(o->config) || sb->landlock_abi < 1 ||
            !(sb->layers & (1u << SANDBOX_LAYER_LANDLOCK)))
                return 0;
        if (*built_for != (int) own_root) {
                bool first = *built_for < 0;

                path_protect_done(p);
                r = path_protect_build(o->config, co->cwd, env_get(o->base_env, "HOME"),
                                       PATH_PROTECT_SCRIPT | PATH_PROTECT_QUIET |
                                               (own_root ? PATH_PROTECT_OWN_ROOT : 0),
                                       p);
                if (r < 0)
                        return r;
                *built_for = own_root;
                for (char **w = p->warnings; first && w && *w; w++)
                        warn(o, "%s", *w);
        }
        sb->protect = path_protect_landlock(p);
        return 0;
}

/*
 * The script's TMPDIR and HOME (sandbox_env()'s "/tmp") on its private /dev/shm instead: the
 * path rules leave nothing new to be made directly in its /tmp, where its working directory
 * lies (path_protect.tmp_held), and tempfile would find no directory to use.
 */
static void env_tmp_on_shm(char **env)
{
        static char tmpdir_shm[] = "TMPDIR=/dev/shm", home_shm[] = "HOME=/dev/shm";

        for (; env && *env; env++)
                if (strcmp(*env, "TMPDIR=/tmp") == 0)
                        *env = tmpdir_shm;
                else if (strcmp(*env, "HOME=/tmp") == 0)
                        *env = home_shm;
}

/* The layers an isolation level asks for, before anything was tried. */
static int wanted_layers(const struct exec_opts *o, enum ptc_isolation level, int ll_abi,
                         unsigned *ret, struct diag *reterr)
{
        char why[_SANDBOX_LAYER_MAX][256];
        unsigned missing = sandbox_kernel_missing(ll_abi, why);

        for (int l = 0; l < _SANDBOX_LAYER_MAX; l++) {
                const char *name = sandbox_layer_to_string((enum sandbox_layer) l);

                if (!(missing & (1u << l)))
                        continue;
                if (level == PTC_ISOLATION_STRICT)
                        return diag_set(reterr, -EOPNOTSUPP,
                                        "isolation 'strict' cannot be set up: %s: %s", name,
                                        why[l]);
                warn(o, "isolation auto: %s: %s; running without the %s layer (see ptc doctor)",
                     name, why[l], name);
        }
        *ret = SANDBOX_LAYERS_ALL & ~missing;
        return 0;
}

int exec_start_confined(const struct exec_opts *o, const struct exec_child_opts *co,
                        struct sandbox_proc *ret, struct run_cgroup *cgroup, struct diag *reterr)
{
        const struct ptc_config *c = o->config;
        char *argv[] = {(char *) o->python, (char *) co->script_path, NULL};
        _cleanup_strv_free_ char **trees = NULL;
        _cleanup_free_ char **ns_env = NULL; /* the strings are co->env's */
        _cleanup_(path_protect_done) struct path_protect protect = PATH_PROTECT_NULL;
        uint64_t nofile = SANDBOX_NOFILE;
        struct sandbox_opts sb;
        int ll_abi, protect_for = -1, r;

        /* What every level shares; each adds its own below. */
        sb = (struct sandbox_opts){
                .path = o->python,
                .argv = argv,
                .cwd = co->cwd,
                .staging_dir = co->staging_dir,
                .stdin_fd = co->stdin_fd,
                .outlive_script = co->outlive_script,
                .stdout_fd = co->stdout_fd,
                .stderr_fd = co->stderr_fd,
                .timings = co->timings,
        };
        /*
         * The working directory is read-write inside every layer: `/` or a system tree there
         * makes them void (docs/isolation.md). Refused here, where the script is started,
         * whatever path led here; `none` confines nothing, so it only says so. Strict mode's
         * directory is ptc's own staging dir, wherever TMPDIR is.
         */
        if (c->mode != PTC_MODE_PROJECT) {
                /* nothing to judge */
        } else if (c->isolation != PTC_ISOLATION_NONE) {
                r = sandbox_check_cwd(co->cwd, reterr);
                if (r < 0)
                        return r;
        } else {
                char why[128];

                if (sandbox_cwd_refused(co->cwd, why, sizeof(why)) > 0)
                        warn(o,
                             "isolation none: the working directory '%s' is %s; the script "
                             "may write wherever ptc can",
                             co->cwd, why);
        }
        /* The policy's deny rules on write_file/patch paths bind the script's own writes too. */
        r = warn_path_protect(o);
        if (r < 0)
                return diag_set(reterr, r, "out of memory");
        if (c->isolation == PTC_ISOLATION_NONE) {
                /*
                 * No layer, but still under an init of its own (sandbox-init.c): a child
                 * subreaper that kills what the script leaves behind, so no execution's
                 * leftovers are another's or the host process's to find.
                 */
                sb.envp = co->env;
                sb.network = true;
                sb.plain_nofile = o->child_nofile;
                return sandbox_spawn(&sb, ret, NULL, reterr);
        }

        ll_abi = landlock_abi();
        sb.network = c->network;
        sb.landlock_abi = ll_abi;
        r = wanted_layers(o, c->isolation, ll_abi, &sb.layers, reterr);
        if (r < 0)
                return r;
        if (o->child_nofile && o->child_nofile->rlim_cur < nofile)
                nofile = o->child_nofile->rlim_cur;
        sb.limits = sandbox_limits_for((uint64_t) c->memory_mb, (uint64_t) c->pids, nofile,
                                       co->cpu_seconds);
        /* A cgroup leaf of its own where ptc may make one (cgroup.h); the rlimits stay. */
        {
                struct diag why = {};

                sb.cgroup = run_cgroup_try(sb.limits.data_bytes, sb.limits.pids, cgroup, &why);
                /* Where ptc may make cgroups, one it could not make is a limit weakened. */
                if (!sb.cgroup && why.message[0])
                        warn(o, "isolation: running without a cgroup: %s", why.message);
        }
        r = interpreter_trees(o->python, env_get(o->base_env, "PYTHONPATH"), &trees);
        r = r ?: sandbox_env(co->env, sb.cwd, &ns_env);
        if (r < 0)
                return diag_set(reterr, r, "out of memory");
        sb.ro_paths = trees;

        for (;;) {
                enum sandbox_layer failed;
                struct diag why = {};

                sb.envp = sb.layers & (1u << SANDBOX_LAYER_NAMESPACES) ? ns_env : co->env;
                r = script_protect(o, co, &sb, &protect, &protect_for);
                if (r < 0)
                        return diag_set(reterr, r, "out of memory");
                if (sb.protect && protect.tmp_held && sb.envp == ns_env)
                        env_tmp_on_shm(ns_env);
                r = sandbox_spawn(&sb, ret, &failed, &why);
                if (r >= 0) {
                        ret->layers = sb.layers;
                        if (ret->cgroup_error)
                                warn(o,
                                     "isolation: running without a cgroup: cannot start inside "
                                     "%s: %s (the rlimits still bound memory and processes)",
                                     sb.cgroup && sb.cgroup->path ? sb.cgroup->path : "?",
                                     strerror(ret->cgroup_error));
                        break;
                }
                if (c->isolation == PTC_ISOLATION_STRICT)
                        return diag_set(reterr, r, "isolation 'strict' cannot be set up: %s",
                                        why.message);
                if (failed == _SANDBOX_LAYER_MAX || !(sb.layers & (1u << failed)))
                        return diag_set(reterr, r, "cannot start the script: %s", why.message);
                warn(o, "isolation auto: %s; running without the %s layer (see ptc doctor)",
                     why.message, sandbox_layer_to_string(failed));
                sb.layers &= ~(1u << failed);
                if (failed == SANDBOX_LAYER_LANDLOCK && sb.protect) {
                        _cleanup_strv_free_ char **lines = NULL;

                        if (path_protect_unbound(c, "isolation auto: no landlock layer",
                                                 PATH_PROTECT_SCRIPT, &lines) < 0)
                                return diag_set(reterr, -ENOMEM, "out of memory");
                        for (char **l = lines; l && *l; l++)
                                warn(o, "%s", *l);
                }
        }
        return 0;
}
