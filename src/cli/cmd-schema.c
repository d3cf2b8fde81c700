/* SPDX-License-Identifier: MIT */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/log.h"
#include "basic/strv.h"
#include "cli/cli.h"
#include "core/env/env.h"
#include "core/mcp/mcp-tools.h"
#include "core/registry/registry.h"
#include "core/stubs/stubs.h"

static void help(bool is_schema)
{
        _cleanup_free_ char *tools = NULL;
        struct ptc_config c = {};

        (void) cli_help_defaults(&c, &tools);
        if (is_schema)
                printf("Usage: ptc schema [OPTIONS]\n\n"
                       "Print the execute_code function schema (OpenAI function-calling JSON)\n"
                       "for the enabled tools: the description lists only those tools.\n");
        else
                printf("Usage: ptc stubs [OPTIONS]\n\n"
                       "Print the Python module a script imports to call the enabled tools\n"
                       "(generated from each tool's JSON Schema).\n");
        printf("\n"
               "Options:\n"
               "  --tools LIST             enabled tools, comma-separated ('' = none);\n"
               "                           default: every usable builtin tool, here:\n"
               "                           %s\n"
               "  --mode project|strict    %s (default %s)\n"
               "  --config FILE            config file (as ptc run)\n"
               "  --compact                %s\n"
               "  -h, --help               this help\n",
               tools ? tools : "(out of memory)",
               is_schema ? "the mode the description speaks of" : "accepted, as ptc schema",
               config_mode_to_string(c.mode),
               is_schema ? "one line of JSON instead of indented" : "accepted, as ptc schema");
        config_release(&c);
}

static void help_schema(void)
{
        help(true);
}

static void help_stubs(void)
{
        help(false);
}

/* schema and stubs share their options; @is_schema picks the output. */
static int schema_or_stubs(int argc, char **argv, bool is_schema)
{
        _cleanup_strv_free_ char **tools = NULL, **env = NULL;
        _cleanup_mcp_upstreams_ struct mcp_upstreams *upstreams = NULL;
        _cleanup_registry_ struct registry *reg = NULL;
        const char *arg_tools = NULL, *arg_mode = NULL, *arg_config = NULL;
        bool compact = false;
        const struct cli_option opts[] = {
                {"tools", &arg_tools},
                {"mode", &arg_mode},
                {"config", &arg_config},
                {"compact", .flag = &compact},
                {},
        };
        struct ptc_config config = {};
        int ret = EXIT_USAGE, r;

        r = cli_parse_options(argc, argv, is_schema ? "schema" : "stubs", opts, false,
                              is_schema ? help_schema : help_stubs);
        if (r != CLI_OPTIONS_PARSED)
                return r;
        if (optind < argc) {
                log_error("unexpected argument '%s'", argv[optind]);
                return EXIT_USAGE;
        }
        if (cli_load_config(arg_config, &config) < 0)
                goto out;
        if (arg_mode && config_parse_mode(arg_mode, &config.mode) < 0) {
                log_error("--mode: invalid value '%s' (allowed: project, strict)", arg_mode);
                goto out;
        }
        if (arg_tools && cli_parse_tools(arg_tools, &tools) < 0)
                goto out;
        if (config.n_mcp_servers > 0) {
                /* Listing upstream tools means starting their servers, with a scrubbed env. */
                if (env_build_child(environ, config.env_passthrough, &env) < 0 ||
                    cli_start_upstreams(&config, env, &upstreams) < 0) {
                        ret = EXIT_INTERNAL;
                        goto out;
                }
        }
        if (cli_build_registry(&config, tools, upstreams, &reg) < 0)
                goto out;
        if (is_schema) {
                json_auto_t *schema = NULL;
                r = schema_build(reg, config.mode, &config, &schema);
                if (r < 0) {
                        log_error_errno(r, "cannot build the schema: %m");
                        ret = EXIT_INTERNAL;
                        goto out;
                }
                ret = cli_print_json(schema, !compact) < 0 ? EXIT_INTERNAL : EXIT_OK;
        } else {
                _cleanup_free_ char *text = NULL;
                r = stubs_generate(reg, config.module_name, &text);
                if (r < 0) {
                        log_error_errno(r, "cannot generate the module: %m");
                        ret = EXIT_INTERNAL;
                        goto out;
                }
                ret = fputs(text, stdout) < 0 || fflush(stdout) != 0 ? EXIT_INTERNAL : EXIT_OK;
        }
out:
        config_release(&config);
        return ret;
}

int cmd_schema(int argc, char **argv)
{
        return schema_or_stubs(argc, argv, true);
}

int cmd_stubs(int argc, char **argv)
{
        return schema_or_stubs(argc, argv, false);
}
