/* SPDX-License-Identifier: MIT */
/* ptc doctor: the report of ptc_doctor_report() for the config file, printed. */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"

static void help(void)
{
        printf("Usage: ptc doctor [--config FILE] [--backend SPEC]\n"
               "\n"
               "Report the interpreter ptc would use, the config file, the tools, and\n"
               "which isolation layers work on this machine; with a remote backend, check\n"
               "it end to end (exit status 1 when that fails).\n"
               "\n"
               "Options:\n"
               "  --config FILE            config file (default: $PTC_CONFIG, else\n"
               "                           $XDG_CONFIG_HOME/ptc/config.yaml)\n"
               "  --backend SPEC           also run a probe script on this target, as ptc run\n"
               "                           --backend would (docs/remote.md)\n"
               "  -h, --help               this help\n");
}

int cmd_doctor(int argc, char **argv)
{
        const char *arg_config = NULL, *arg_backend = NULL;
        const struct cli_option opts[] = {
                {"config", &arg_config},
                {"backend", &arg_backend},
                {},
        };
        _cleanup_free_ char *report = NULL;
        ptc_engine *engine = NULL;
        struct ptc_diag d = {};
        size_t warned = 0;
        int r;

        r = cli_parse_options(argc, argv, "doctor", opts, false, help);
        if (r != CLI_OPTIONS_PARSED)
                return r;
        if (optind < argc) {
                log_error("unexpected argument '%s' (try 'ptc doctor --help')", argv[optind]);
                return EXIT_USAGE;
        }
        /* Prints the config file's warnings, or its error (exit 2). */
        if (cli_engine_new(arg_config, 0, &engine, &warned) < 0)
                return EXIT_USAGE;
        if (arg_backend && cli_engine_set(engine, "backend", arg_backend, "--backend") < 0) {
                ptc_engine_free(engine);
                return EXIT_USAGE;
        }
        r = ptc_doctor_report(engine, 0, &report, &d);
        /* What the report met on the way: a tool left out, a tools list naming no tool. */
        cli_print_warnings(engine, &warned);
        ptc_engine_free(engine);
        if (r == -EHOSTDOWN && report) {
                /* The report says why; the status says that it failed. */
                (void) fputs(report, stdout);
                log_error("%s", d.message);
                return EXIT_SCRIPT_FAILED;
        }
        if (r < 0) {
                log_error("%s", d.message[0] ? d.message : strerror(-r));
                return EXIT_INTERNAL;
        }
        if (fputs(report, stdout) < 0 || fflush(stdout) != 0) {
                log_error_errno(-errno, "cannot write the report: %m");
                return EXIT_INTERNAL;
        }
        return EXIT_OK;
}
