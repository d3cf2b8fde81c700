/* SPDX-License-Identifier: MIT */
/*
 * The steps of starting an engine on core types: the config file, the
 * secrets, the upstream MCP servers, the registry. ptc_engine_start() runs
 * them in order. Nothing here prints.
 */

#include "core/api/engine.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "basic/strv.h"
#include "core/api/api-util.h"
#include "core/env/env.h"
#include "core/mcp/mcp-tools.h"
#include "core/output/redact.h"
#include "core/web/web-keys.h"

extern char **environ;

static int move_warnings(char ***from, char ***to, const char *suffix)
{
        for (char **w = *from; w && *w; w++) {
                char *line;

                if (asprintf(&line, "%s%s", *w, suffix) < 0)
                        return -ENOMEM;
                if (strv_consume(to, line) < 0)
                        return -ENOMEM;
        }
        *from = strv_free(*from);
        return 0;
}

int engine_load_config(struct ptc_config *c, const char *path, char ***warnings,
                       struct diag *reterr)
{
        int r;

        r = config_init(c);
        if (r < 0)
                return diag_set(reterr, r, "out of memory");
        return engine_merge_config(c, path, warnings, reterr);
}

int engine_merge_config(struct ptc_config *c, const char *path, char ***warnings,
                        struct diag *reterr)
{
        _cleanup_free_ char *def = NULL;
        int r;

        if (!path) {
                r = config_default_path(&def);
                if (r < 0)
                        return diag_set(reterr, r, "out of memory");
        }
        r = config_load_file(c, path ? path : def, path != NULL, reterr);
        /* The file's warnings stand even when a later key fails. */
        if (move_warnings(&c->warnings, warnings, "") < 0)
                return diag_set(reterr, -ENOMEM, "out of memory");
        if (r == -ENOENT && path)
                return diag_set(reterr, -ENOENT, "config file '%s' not found", path);
        if (r < 0)
                return r == -ENOMEM ? diag_set(reterr, r, "out of memory") : -EINVAL;
        return 0;
}

int engine_parse_tools(const char *list, char ***ret)
{
        return strv_split(list, ", \t", ret);
}

int engine_prepare_secrets(const struct ptc_config *c, bool scrub, struct redactor **ret_redactor,
                           char ***ret_base_env, char ***ret_kept, struct diag *reterr)
{
        _cleanup_redactor_ struct redactor *red = NULL;
        char **kept = NULL;
        int r;

        r = redactor_new(&red);
        if (r < 0)
                return diag_set(reterr, r, "cannot set up redaction: %s", strerror(-r));
        if (!scrub) {
                /* A host's environment is read, never changed (ptc.h, "Process"). */
                r = env_read_secrets(environ, c->env_passthrough, red);
                if (r < 0)
                        return diag_set(reterr, r, "out of memory");
        } else {
                r = env_take_secrets(c->env_passthrough, red, &kept);
                if (r < 0)
                        return diag_set(reterr, r, "cannot scrub the environment: %s",
                                        strerror(-r));
                /* The web providers' keys are the only secrets ptc itself needs later on. */
                r = web_keys_take(kept);
                if (r < 0) {
                        strv_free_wipe(kept);
                        return diag_set(reterr, r, "out of memory");
                }
                if (ret_kept)
                        *ret_kept = TAKE_PTR(kept);
                else
                        strv_free_wipe(kept);
                /*
                 * Non-dumpable: another process of this user cannot ptrace us or read
                 * /proc/<ptc>/mem or environ, where a secret could still be found.
                 */
                (void) prctl(PR_SET_DUMPABLE, 0);
        }
        r = env_build_child(environ, c->env_passthrough, ret_base_env);
        if (r < 0)
                return diag_set(reterr, r, "out of memory");
        *ret_redactor = TAKE_PTR(red);
        return 0;
}

int engine_start_upstreams(const struct ptc_config *c, char *const *env, struct mcp_upstreams **ret,
                           char ***warnings, struct diag *reterr)
{
        _cleanup_strv_free_ char **w = NULL;
        int r;

        *ret = NULL;
        if (c->n_mcp_servers == 0)
                return 0;
        r = mcp_upstreams_start(c, env, ret, &w);
        if (move_warnings(&w, warnings, "") < 0)
                r = r < 0 ? r : -ENOMEM;
        if (r < 0) {
                *ret = mcp_upstreams_free(*ret);
                return diag_set(reterr, r, "cannot start the MCP servers: %s", strerror(-r));
        }
        return 0;
}

int engine_build_registry(const struct ptc_config *c, char *const *tools,
                          const struct registry_extra_tool *extra, size_t n_extra,
                          struct registry **ret, char ***warnings, struct diag *reterr)
{
        _cleanup_strv_free_ char **w = NULL;
        int r;

        r = registry_new_with(c, tools ? tools : c->tools, extra, n_extra, ret, &w, reterr);
        if (r < 0) {
                if (!reterr || !reterr->message[0])
                        diag_set(reterr, r, "%s", strerror(-r));
                return r == -ENOMEM ? r : -EINVAL;
        }
        if (move_warnings(&w, warnings, "") < 0) {
                *ret = registry_free(*ret);
                return diag_set(reterr, -ENOMEM, "out of memory");
        }
        return 0;
}
