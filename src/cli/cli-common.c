/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include <jansson.h>

#include "basic/diag.h"
#include "basic/log.h"
#include "basic/parse-util.h"
#include "basic/strv.h"
#include "cli/cli.h"
#include "core/env/env.h"
#include "core/mcp/mcp-tools.h"
#include "core/output/redact.h"
#include "core/registry/registry.h"
#include "core/web/web-keys.h"

extern char **environ;

/* getopt_long()'s val of the long option @opts[i] of cli_parse_options(): above any char. */
#define OPTION_VAL_BASE 0x100

int cli_load_config(const char *path, struct ptc_config *c)
{
        _cleanup_free_ char *def = NULL;
        struct diag d = {};
        int r;

        r = config_init(c);
        if (r < 0)
                return log_error_errno(r, "out of memory");
        if (!path) {
                r = config_default_path(&def);
                if (r < 0)
                        return log_error_errno(r, "out of memory");
        }
        r = config_load_file(c, path ? path : def, path != NULL, &d);
        if (r == -ENOENT && path) {
                log_error("config file '%s' not found", path);
                return -EINVAL;
        }
        for (char **w = c->warnings; w && *w; w++)
                log_warning("%s", *w);
        c->warnings = strv_free(c->warnings);
        if (r < 0) {
                log_error("%s", d.message[0] ? d.message : strerror(-r));
                return -EINVAL;
        }
        return 0;
}

int cli_parse_tools(const char *list, char ***ret)
{
        _cleanup_strv_free_ char **l = NULL;
        int r;

        r = strv_split(list, ", \t", &l);
        if (r < 0)
                return log_error_errno(r, "out of memory");
        *ret = TAKE_PTR(l);
        return 0;
}

int cli_apply_run_options(struct ptc_config *c, const char *timeout, const char *max_calls,
                          const char *mode, const char *isolation)
{
        if (timeout) {
                double t;
                if (safe_atod(timeout, &t) < 0 || t <= 0 || t > 86400) {
                        log_error("--timeout: invalid value '%s' (allowed: a number of seconds, "
                                  "0 < s <= 86400)",
                                  timeout);
                        return -EINVAL;
                }
                c->timeout = t;
        }
        if (max_calls) {
                int64_t n;
                if (safe_atoi64(max_calls, &n) < 0 || n < 0 || n > 1000000000) {
                        log_error("--max-tool-calls: invalid value '%s' (allowed: an integer "
                                  "0..1000000000)",
                                  max_calls);
                        return -EINVAL;
                }
                c->max_tool_calls = n;
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
        _cleanup_strv_free_ char **warnings = NULL;
        int r;

        *ret = NULL;
        if (c->n_mcp_servers == 0)
                return 0;
        /* A server that dies makes our next write to it EPIPE, not a fatal signal. */
        (void) signal(SIGPIPE, SIG_IGN);
        r = mcp_upstreams_start(c, env, ret, &warnings);
        for (char **w = warnings; w && *w; w++)
                log_warning("%s; its tools are left out", *w);
        if (r < 0)
                return log_error_errno(r, "cannot start the MCP servers: %m");
        return 0;
}

int cli_build_registry(const struct ptc_config *c, char *const *tools,
                       const struct mcp_upstreams *upstreams, struct registry **ret)
{
        _cleanup_strv_free_ char **warnings = NULL;
        const struct registry_extra_tool *extra;
        struct diag d = {};
        size_t n_extra;
        int r;

        extra = mcp_upstreams_tools(upstreams, &n_extra);
        r = registry_new_with(c, tools ? tools : c->tools, extra, n_extra, ret, &warnings, &d);
        if (r < 0) {
                log_error("%s", d.message[0] ? d.message : strerror(-r));
                return -EINVAL;
        }
        for (char **w = warnings; w && *w; w++)
                log_warning("%s", *w);
        return 0;
}

int cli_prepare_secrets(const struct ptc_config *c, struct redactor **ret_redactor,
                        char ***ret_base_env, char ***ret_kept)
{
        _cleanup_redactor_ struct redactor *red = NULL;
        char **kept = NULL;
        int r;

        r = redactor_new(&red);
        if (r < 0)
                return log_error_errno(r, "cannot set up redaction: %m");
        r = env_take_secrets(c->env_passthrough, red, &kept);
        if (r < 0)
                return log_error_errno(r, "cannot scrub the environment: %m");
        /* The web providers' keys are the only secrets ptc itself needs later on. */
        r = web_keys_take(kept);
        if (r < 0) {
                strv_free_wipe(kept);
                return log_error_errno(r, "out of memory");
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
        r = env_build_child(environ, c->env_passthrough, ret_base_env);
        if (r < 0)
                return log_error_errno(r, "out of memory");
        *ret_redactor = TAKE_PTR(red);
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
