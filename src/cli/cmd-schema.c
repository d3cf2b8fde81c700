/* SPDX-License-Identifier: MIT */
#include "cli/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/log.h"

static void help(bool is_schema)
{
        struct cli_defaults c = {};

        (void) cli_defaults_get(&c);
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
               c.tools ? c.tools : "(out of memory)",
               is_schema ? "the mode the description speaks of" : "accepted, as ptc schema", c.mode,
               is_schema ? "one line of JSON instead of indented" : "accepted, as ptc schema");
        cli_defaults_release(&c);
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
        _cleanup_free_ char *text = NULL;
        const char *arg_tools = NULL, *arg_mode = NULL, *arg_config = NULL;
        bool compact = false;
        const struct cli_option opts[] = {
                {"tools", &arg_tools},
                {"mode", &arg_mode},
                {"config", &arg_config},
                {"compact", .flag = &compact},
                {},
        };
        ptc_engine *engine = NULL;
        struct ptc_diag d = {};
        size_t warned = 0;
        int ret = EXIT_USAGE, r;

        r = cli_parse_options(argc, argv, is_schema ? "schema" : "stubs", opts, false,
                              is_schema ? help_schema : help_stubs);
        if (r != CLI_OPTIONS_PARSED)
                return r;
        if (optind < argc) {
                log_error("unexpected argument '%s'", argv[optind]);
                return EXIT_USAGE;
        }
        /* No flags: listing upstream tools starts their servers with a scrubbed copy of
         * the environment, ours stays as it is. */
        if (cli_engine_new(arg_config, 0, &engine, &warned) < 0)
                goto out;
        if ((arg_mode && cli_engine_set(engine, "mode", arg_mode, "--mode") < 0) ||
            (arg_tools && cli_engine_set(engine, "tools", arg_tools, "--tools") < 0))
                goto out;
        r = ptc_engine_start(engine, &d);
        cli_print_warnings(engine, &warned);
        if (r < 0) {
                log_error("%s", d.message);
                ret = r == -EINVAL ? EXIT_USAGE : EXIT_INTERNAL;
                goto out;
        }
        r = is_schema ? ptc_engine_schema(engine, &text, &d) : ptc_engine_stubs(engine, &text, &d);
        if (r < 0) {
                log_error("%s", d.message);
                ret = EXIT_INTERNAL;
                goto out;
        }
        if (is_schema)
                ret = cli_print_json_text(text, !compact) < 0 ? EXIT_INTERNAL : EXIT_OK;
        else
                ret = fputs(text, stdout) < 0 || fflush(stdout) != 0 ? EXIT_INTERNAL : EXIT_OK;
out:
        ptc_engine_free(engine);
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
