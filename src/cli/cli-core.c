/* SPDX-License-Identifier: MIT */
/*
 * The helpers of cli-core.h: the steps of an engine start on core types, each
 * printing its message, for ptc mcp until it is a client of the API too.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/diag.h"
#include "basic/log.h"
#include "basic/strv.h"
#include "cli/cli-core.h"
#include "core/api/engine.h"
#include "core/mcp/mcp-tools.h"
#include "core/registry/registry.h"

/* Print @w's lines as warnings and free them. */
static void print_warning_lines(char **w)
{
        for (char **l = w; l && *l; l++)
                log_warning("%s", *l);
        strv_free(w);
}

int cli_load_config(const char *path, struct ptc_config *c)
{
        char **warnings = NULL;
        struct diag d = {};
        int r;

        r = engine_load_config(c, path, &warnings, &d);
        print_warning_lines(warnings);
        if (r == -ENOMEM)
                return log_error_errno(r, "out of memory");
        if (r < 0) {
                log_error("%s", d.message[0] ? d.message : strerror(-r));
                return -EINVAL;
        }
        return 0;
}

int cli_parse_tools(const char *list, char ***ret)
{
        int r = engine_parse_tools(list, ret);

        return r < 0 ? log_error_errno(r, "out of memory") : 0;
}

int cli_apply_run_options(struct ptc_config *c, const char *timeout, const char *max_calls,
                          const char *mode, const char *isolation)
{
        struct ptc_diag d = {};

        /* The engine's parsers, so the flags of every subcommand accept the same words. */
        if (timeout && engine_set_timeout(timeout, &c->timeout, &d) < 0) {
                log_error("--%s", d.message); /* "timeout: invalid value ..." */
                return -EINVAL;
        }
        if (max_calls && engine_set_max_tool_calls(max_calls, &c->max_tool_calls, &d) < 0) {
                log_error("--max-tool-calls%s", d.message + strlen("max_tool_calls"));
                return -EINVAL;
        }
        if (mode && config_parse_mode(mode, &c->mode) < 0) {
                log_error("--mode: invalid value '%s' (allowed: project, strict)", mode);
                return -EINVAL;
        }
        if (isolation && config_parse_isolation(isolation, &c->isolation) < 0) {
                log_error("--isolation: invalid value '%s' (allowed: none, auto, strict)",
                          isolation);
                return -EINVAL;
        }
        return 0;
}

int cli_start_upstreams(const struct ptc_config *c, char *const *env, struct mcp_upstreams **ret)
{
        char **warnings = NULL;
        struct diag d = {};
        int r;

        *ret = NULL;
        if (c->n_mcp_servers == 0)
                return 0;
        /* A server that dies makes our next write to it EPIPE, not a fatal signal. */
        (void) signal(SIGPIPE, SIG_IGN);
        r = engine_start_upstreams(c, env, ret, &warnings, &d);
        print_warning_lines(warnings);
        if (r < 0) {
                log_error("%s", d.message);
                return r;
        }
        return 0;
}

int cli_build_registry(const struct ptc_config *c, char *const *tools,
                       const struct mcp_upstreams *upstreams, struct registry **ret)
{
        const struct registry_extra_tool *extra;
        char **warnings = NULL;
        struct diag d = {};
        size_t n_extra;
        int r;

        extra = mcp_upstreams_tools(upstreams, &n_extra);
        r = engine_build_registry(c, tools, extra, n_extra, ret, &warnings, &d);
        if (r < 0) {
                strv_free(warnings);
                log_error("%s", d.message[0] ? d.message : strerror(-r));
                return -EINVAL;
        }
        print_warning_lines(warnings);
        return 0;
}

int cli_prepare_secrets(const struct ptc_config *c, struct redactor **ret_redactor,
                        char ***ret_base_env, char ***ret_kept)
{
        struct diag d = {};
        int r;

        r = engine_prepare_secrets(c, true, ret_redactor, ret_base_env, ret_kept, &d);
        if (r < 0) {
                log_error("%s", d.message);
                return r;
        }
        return 0;
}

int cli_help_defaults(struct ptc_config *ret_config, char **ret_tools)
{
        _cleanup_registry_ struct registry *reg = NULL;
        _cleanup_strv_free_ char **warnings = NULL;
        struct diag d = {};
        int r;

        *ret_tools = NULL;
        r = config_init(ret_config);
        if (r < 0)
                return r;
        /* web_search joins the default set only when a provider is configured. */
        r = registry_new(ret_config, NULL, &reg, &warnings, &d);
        if (r < 0)
                return r;
        *ret_tools = registry_names(reg);
        return *ret_tools ? 0 : -ENOMEM;
}
