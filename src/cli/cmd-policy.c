/* SPDX-License-Identifier: MIT */
/* ptc policy check TOOL [JSON]: what the policy would decide of a call (docs/policy.md). */
#include "cli/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"

static void help(void)
{
        printf("Usage: ptc policy check [OPTIONS] TOOL [JSON]\n"
               "\n"
               "Print what the policy would decide of calling TOOL with the arguments JSON\n"
               "(an object; read from stdin when absent), without calling it: the decision\n"
               "(allow, ask, deny or blocked), what matched (a rule of policy.rules or\n"
               "ptc's built-in lists) and the subject it matched (a simple command, a path,\n"
               "a host). For writing and testing rules; any tool name can be checked.\n"
               "\n"
               "Options:\n"
               "  --config FILE            config file (as ptc run)\n"
               "  --cwd DIR                directory relative paths start from (default: .)\n"
               "  --pretty                 indent the JSON\n"
               "  -h, --help               this help\n"
               "\n"
               "Example: ptc policy check terminal '{\"command\": \"git push --force\"}'\n"
               "Exit status: 0, 2 bad usage, config error or bad JSON.\n");
}

int cmd_policy(int argc, char **argv)
{
        _cleanup_free_ char *input = NULL, *result = NULL;
        const char *arg_config = NULL, *arg_cwd = NULL, *text;
        bool pretty = false;
        const struct cli_option opts[] = {
                {"config", &arg_config},
                {"pretty", .flag = &pretty},
                {"cwd", &arg_cwd},
                {},
        };
        ptc_engine *engine = NULL;
        struct ptc_diag d = {};
        size_t warned = 0;
        int r, ret = EXIT_USAGE;

        if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
                if (argc < 2) {
                        log_error("usage: ptc policy check [OPTIONS] TOOL [JSON]");
                        return EXIT_USAGE;
                }
                help();
                return EXIT_OK;
        }
        if (strcmp(argv[1], "check") != 0) {
                log_error("unknown policy command '%s' (allowed: check)", argv[1]);
                return EXIT_USAGE;
        }
        argc--;
        argv++;
        r = cli_parse_options(argc, argv, "policy check", opts, true, help);
        if (r != CLI_OPTIONS_PARSED)
                return r;
        if (optind >= argc || argc - optind > 2) {
                log_error("usage: ptc policy check [OPTIONS] TOOL [JSON]");
                return EXIT_USAGE;
        }
        if (cli_engine_new(arg_config, 0, &engine, &warned) < 0)
                goto out;
        if (arg_cwd && cli_engine_set(engine, "cwd", arg_cwd, "--cwd") < 0)
                goto out;
        if (argc - optind == 2)
                text = argv[optind + 1];
        else if (cli_read_stdin(&input) < 0)
                goto out;
        else
                text = input;
        r = ptc_engine_check_policy(engine, argv[optind], text, &result, &d);
        if (r < 0) {
                log_error("%s", d.message);
                ret = r == -EINVAL ? EXIT_USAGE : EXIT_INTERNAL;
                goto out;
        }
        ret = cli_print_json_text(result, pretty) < 0 ? EXIT_INTERNAL : EXIT_OK;
out:
        ptc_engine_free(engine);
        return ret;
}
