/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/diag.h"
#include "basic/log.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "cli/cli.h"
#include "core/mcp/mcp-tools.h"
#include "core/output/redact.h"
#include "core/registry/registry.h"
#include "core/spawn/interpreter.h"
#include "core/tools/tool.h"

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

int cmd_tool(int argc, char **argv)
{
        _cleanup_free_ char *python = NULL, *cwd = NULL, *input = NULL;
        _cleanup_strv_free_ char **base_env = NULL;
        _cleanup_redactor_ struct redactor *redactor = NULL;
        _cleanup_mcp_upstreams_ struct mcp_upstreams *upstreams = NULL;
        _cleanup_registry_ struct registry *reg = NULL;
        const char *arg_config = NULL, *arg_cwd = NULL, *text;
        bool pretty = false;
        const struct cli_option opts[] = {
                {"config", &arg_config},
                {"pretty", .flag = &pretty},
                {"cwd", &arg_cwd},
                {},
        };
        struct ptc_config config = {};
        json_auto_t *args = NULL;
        json_t *result = NULL;
        const struct tool *t;
        json_error_t jerr;
        struct diag d = {};
        int r, ret = EXIT_USAGE;

        /* Options come before NAME; what follows it is NAME's arguments. */
        r = cli_parse_options(argc, argv, "tool", opts, true, help);
        if (r != CLI_OPTIONS_PARSED)
                return r;
        if (optind >= argc || argc - optind > 2) {
                log_error("usage: ptc tool NAME [JSON]");
                return EXIT_USAGE;
        }
        if (cli_load_config(arg_config, &config) < 0)
                goto out;
        (void) signal(SIGPIPE, SIG_IGN);
        if (cli_prepare_secrets(&config, &redactor, &base_env, NULL) < 0) {
                ret = EXIT_INTERNAL;
                goto out;
        }
        if (cli_start_upstreams(&config, base_env, &upstreams) < 0) {
                ret = EXIT_INTERNAL;
                goto out;
        }
        if (cli_build_registry(&config, NULL, upstreams, &reg) < 0)
                goto out;
        t = registry_find(reg, argv[optind]);
        if (!t) {
                _cleanup_free_ char *names = registry_names(reg);
                log_error("unknown tool '%s' (available: %s)", argv[optind], names ? names : "");
                goto out;
        }
        if (argc - optind == 2)
                text = argv[optind + 1];
        else {
                size_t len = 0, alloc = 0;
                FILE *f = open_memstream(&input, &alloc);
                char buf[65536];
                size_t k;

                if (!f)
                        goto out;
                while ((k = fread(buf, 1, sizeof(buf), stdin)) > 0 && len < 64u * 1024 * 1024) {
                        fwrite(buf, 1, k, f);
                        len += k;
                }
                fclose(f);
                text = input ? input : "";
        }
        args = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
        if (!args || !json_is_object(args)) {
                log_error("the arguments must be a JSON object: %s",
                          args ? "got another JSON value" : jerr.text);
                goto out;
        }

        cwd = realpath(arg_cwd ? arg_cwd : ".", NULL);
        if (!cwd) {
                log_error_errno(-errno, "--cwd: cannot use '%s': %m", arg_cwd ? arg_cwd : ".");
                goto out;
        }
        /* Only linters need it; a missing interpreter just skips .py linting. */
        if (interpreter_resolve(&config, PTC_MODE_STRICT, &python, &d) < 0)
                python = NULL;
        {
                struct tool_ctx ctx = {
                        .config = &config,
                        .cwd = cwd,
                        .env = base_env,
                        .deadline = USEC_INFINITY,
                        .cancel_fd = -1,
                        .redactor = redactor,
                        .python = python,
                };
                r = t->run(t, &ctx, args, &result);
        }
        result = tool_result_finish(redactor, r, result);
        if (!result) {
                log_error_errno(-ENOMEM, "out of memory");
                ret = EXIT_INTERNAL;
                goto out;
        }
        ret = cli_print_json(result, pretty) < 0 ? EXIT_INTERNAL : EXIT_OK;
out:
        json_decref(result);
        config_release(&config);
        return ret;
}
