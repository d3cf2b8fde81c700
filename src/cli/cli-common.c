/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "basic/diag.h"
#include "basic/log.h"
#include "basic/parse-util.h"
#include "basic/strv.h"
#include "cli/cli-core.h"
#include "core/api/engine.h"
#include "core/mcp/mcp-tools.h"
#include "core/registry/registry.h"

/* getopt_long()'s val of the long option @opts[i] of cli_parse_options(): above any char. */
#define OPTION_VAL_BASE 0x100

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

int cli_defaults_get(struct cli_defaults *ret)
{
        struct ptc_config c = {};
        int r;

        *ret = (struct cli_defaults){};
        r = cli_help_defaults(&c, &ret->tools);
        ret->module_name = c.module_name ? strdup(c.module_name) : NULL;
        ret->timeout = c.timeout;
        ret->max_tool_calls = (long long) c.max_tool_calls;
        ret->mode = config_mode_to_string(c.mode);
        ret->isolation = config_isolation_to_string(c.isolation);
        config_release(&c);
        return r;
}

void cli_defaults_release(struct cli_defaults *d)
{
        free(d->module_name);
        free(d->tools);
        *d = (struct cli_defaults){};
}

int cli_engine_new(const char *config, unsigned flags, ptc_engine **ret, size_t *ret_printed)
{
        struct ptc_diag d = {};
        int r;

        r = ptc_engine_new(config, flags, ret, &d);
        if (r < 0) {
                log_error("%s", d.message[0] ? d.message : strerror(-r));
                return r;
        }
        *ret_printed = 0;
        cli_print_warnings(*ret, ret_printed);
        return 0;
}

int cli_engine_set(ptc_engine *e, const char *key, const char *value, const char *flag)
{
        struct ptc_diag d = {};
        size_t kl = strlen(key);
        int r;

        r = ptc_engine_set(e, key, value, &d);
        if (r >= 0)
                return 0;
        /* "timeout: invalid value ..." -> "--timeout: invalid value ..." */
        if (strncmp(d.message, key, kl) == 0 && d.message[kl] == ':')
                log_error("%s%s", flag, d.message + kl);
        else
                log_error("%s: %s", flag, d.message);
        return r;
}

void cli_print_warnings(const ptc_engine *e, size_t *printed)
{
        _cleanup_free_ char *all = ptc_engine_warnings(e);
        size_t n = all ? strlen(all) : 0;

        for (char *p = all ? all + MIN(*printed, n) : NULL; p && *p;) {
                char *nl = strchr(p, '\n');

                if (nl)
                        *nl = 0;
                log_warning("%s", p);
                p = nl ? nl + 1 : p + strlen(p);
        }
        *printed = n;
}

int cli_print_json_text(const char *text, bool pretty)
{
        json_auto_t *v = NULL;

        if (!pretty) {
                if (fputs(text, stdout) < 0 || fputc('\n', stdout) < 0 || fflush(stdout) != 0)
                        return log_error_errno(-errno, "cannot write the result: %m");
                return 0;
        }
        v = json_loads(text, JSON_DECODE_ANY, NULL);
        if (!v)
                return log_error_errno(-EINVAL, "cannot serialize the result");
        return cli_print_json(v, true);
}

int cli_print_json(json_t *v, bool pretty)
{
        size_t flags = JSON_REAL_PRECISION(15) | (pretty ? JSON_INDENT(2) : JSON_COMPACT);
        _cleanup_free_ char *s = json_dumps(v, flags);

        if (!s)
                return log_error_errno(-ENOMEM, "cannot serialize the result");
        if (fputs(s, stdout) < 0 || fputc('\n', stdout) < 0 || fflush(stdout) != 0)
                return log_error_errno(-errno, "cannot write the result: %m");
        return 0;
}

/*
 * Report a getopt_long() failure (opterr = 0) as one line naming the option,
 * e.g. "unrecognized option '--x' (try 'ptc run --help')". Returns EXIT_USAGE.
 */
static int bad_option(char **argv, const char *cmd)
{
        /* After a failure getopt has stepped past the offending word. */
        const char *word = optind > 0 ? argv[optind - 1] : "?";

        if (optopt == 0)
                log_error("unrecognized option '%s' (try 'ptc %s --help')", word, cmd);
        else if (optopt >= OPTION_VAL_BASE)
                /* A long option without its value, or with one it does not take. */
                log_error("bad use of option '%s' (try 'ptc %s --help')", word, cmd);
        else if (optopt == 'c')
                log_error("option '-c' needs a value (try 'ptc %s --help')", cmd);
        else
                log_error("unrecognized option '-%c' (try 'ptc %s --help')", optopt, cmd);
        return EXIT_USAGE;
}

int cli_parse_options(int argc, char **argv, const char *cmd, const struct cli_option *opts,
                      bool stop_at_operand, void (*help)(void))
{
        /* getopt's tables: --help first, then @opts in their order, val = base + index. */
        struct option longopts[CLI_OPTIONS_MAX + 2] = {{"help", no_argument, NULL, 'h'}};
        char shortopts[3 + 2 * CLI_OPTIONS_MAX] = {};
        size_t n, l = 1, s = 0;
        int c;

        if (stop_at_operand)
                shortopts[s++] = '+';
        shortopts[s++] = 'h';
        for (n = 0; opts[n].name || opts[n].short_name; n++) {
                assert(n < CLI_OPTIONS_MAX);
                assert(!opts[n].arg != !opts[n].flag);
                if (opts[n].name)
                        longopts[l++] = (struct option){
                                opts[n].name,
                                opts[n].arg ? required_argument : no_argument,
                                NULL,
                                OPTION_VAL_BASE + (int) n,
                        };
                if (opts[n].short_name) {
                        shortopts[s++] = opts[n].short_name;
                        if (opts[n].arg)
                                shortopts[s++] = ':';
                }
        }

        opterr = 0;
        while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) >= 0) {
                const struct cli_option *o = NULL;

                if (c == 'h') {
                        help();
                        return EXIT_OK;
                }
                if (c >= OPTION_VAL_BASE && c < OPTION_VAL_BASE + (int) n)
                        o = &opts[c - OPTION_VAL_BASE];
                else
                        for (size_t i = 0; i < n && !o; i++)
                                if (opts[i].short_name == c)
                                        o = &opts[i];
                if (!o)
                        return bad_option(argv, cmd);
                if (o->arg)
                        *o->arg = optarg;
                else
                        *o->flag = true;
        }
        return CLI_OPTIONS_PARSED;
}
