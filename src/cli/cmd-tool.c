/* SPDX-License-Identifier: MIT */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/log.h"
#include "basic/strv.h"

static void help(void)
{
        printf("Usage: ptc tool [OPTIONS] NAME [JSON]\n"
               "\n"
               "Call one tool directly, as a script would, and print its result JSON.\n"
               "JSON is the arguments object; when absent it is read from stdin.\n"
               "\n"
               "Options:\n"
               "  --config FILE            config file (as ptc run)\n"
               "  --cwd DIR                directory relative paths start from (default: .)\n"
               "  --pretty                 indent the result JSON\n"
               "  -h, --help               this help\n"
               "\n"
               "Example: ptc tool read_file '{\"path\": \"README.md\", \"limit\": 5}'\n"
               "Exit status: 0 (the result may still carry an \"error\"), 2 bad usage,\n"
               "unknown tool or bad JSON.\n");
}

/* Is @name one of @names ("a, b, c")? */
static bool names_have(const char *names, const char *name)
{
        _cleanup_strv_free_ char **l = NULL;

        if (strv_split(names, ", ", &l) < 0)
                return false;
        for (char **n = l; *n; n++)
                if (strcmp(*n, name) == 0)
                        return true;
        return false;
}

int cmd_tool(int argc, char **argv)
{
        _cleanup_free_ char *input = NULL, *names = NULL, *result = NULL;
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

        /* Options come before NAME; what follows it is NAME's arguments. */
        r = cli_parse_options(argc, argv, "tool", opts, true, help);
        if (r != CLI_OPTIONS_PARSED)
                return r;
        if (optind >= argc || argc - optind > 2) {
                log_error("usage: ptc tool NAME [JSON]");
                return EXIT_USAGE;
        }
        if (cli_engine_new(arg_config, PTC_ENGINE_SCRUB_PROCESS, &engine, &warned) < 0)
                goto out;
        /* A server that dies makes our next write to it EPIPE, not a fatal signal. */
        (void) signal(SIGPIPE, SIG_IGN);
        if (cli_engine_set(engine, "cwd", arg_cwd ? arg_cwd : ".", "--cwd") < 0)
                goto out;
        r = ptc_engine_start(engine, &d);
        cli_print_warnings(engine, &warned);
        if (r < 0) {
                log_error("%s", d.message);
                ret = r == -EINVAL ? EXIT_USAGE : EXIT_INTERNAL;
                goto out;
        }
        /* A person at the terminal answers the policy's asks (docs/policy.md). */
        (void) cli_tty_approver_install(engine);
        names = ptc_engine_tool_names(engine);
        if (!names || !names_have(names, argv[optind])) {
                log_error("unknown tool '%s' (available: %s)", argv[optind], names ? names : "");
                goto out;
        }
        if (argc - optind == 2)
                text = argv[optind + 1];
        else if (cli_read_stdin(&input) < 0)
                goto out;
        else
                text = input;
        r = ptc_engine_call_tool(engine, argv[optind], text, &result, &d);
        if (r < 0) {
                log_error("%s", d.message);
                ret = r == -EINVAL || r == -ENOENT ? EXIT_USAGE : EXIT_INTERNAL;
                goto out;
        }
        ret = cli_print_json_text(result, pretty) < 0 ? EXIT_INTERNAL : EXIT_OK;
out:
        ptc_engine_free(engine);
        return ret;
}
