/* SPDX-License-Identifier: MIT */
/*
 * ptc agent: the remote end of a run on a remote backend (docs/remote.md), the command
 * line of ptc_agent_serve(). A host starts it through the channel (`ssh HOST sh`, then
 * `exec ptc agent`); stdin and stdout are the stream, so nothing else is ever written to
 * stdout. It runs one script on its main thread, as `ptc run` does (the process setup of
 * cli_setup_process(): stop signals blocked, SIGPIPE ignored, the open-files limit raised).
 */

#include "cli/cli.h"

#include <stdio.h>
#include <unistd.h>

#include "basic/log.h"

static void help(void)
{
        printf("Usage: ptc agent\n"
               "\n"
               "The remote end of 'ptc run --backend SPEC': speaks ptc's stream on stdin and\n"
               "stdout, runs one script here with the host's configuration, and exits. ptc\n"
               "starts it through the backend's channel; it is not meant to be run by hand.\n"
               "See docs/remote.md.\n"
               "\n"
               "Options:\n"
               "  -h, --help               this help\n");
}

int cmd_agent(int argc, char **argv)
{
        const struct cli_option opts[] = {{}};
        struct ptc_diag d = {};
        int r;

        r = cli_parse_options(argc, argv, "agent", opts, false, help);
        if (r != CLI_OPTIONS_PARSED)
                return r;
        if (optind < argc) {
                log_error("unexpected argument '%s' (try 'ptc agent --help')", argv[optind]);
                return EXIT_USAGE;
        }
        if (cli_setup_process() < 0) {
                log_error("agent: cannot set up the process");
                return EXIT_INTERNAL;
        }
        r = ptc_agent_serve(0, 1, &d);
        if (r < 0) {
                log_error("agent: %s", d.message);
                return EXIT_INTERNAL;
        }
        return EXIT_OK;
}
