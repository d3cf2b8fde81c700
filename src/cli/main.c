/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "basic/fd-util.h"
#include "basic/log.h"
#include "cli/cli.h"
#include "core/command/pidns-init.h"
#include "ptc-version.h"

static void help(void)
{
        printf("ptc %s: run a model-written Python script whose tool calls travel over RPC\n"
               "\n"
               "Usage:\n"
               "  ptc run [OPTIONS] [FILE | -c CODE | -]   run a script, print the result JSON\n"
               "  ptc schema [--tools LIST] [--mode M]    print the execute_code function schema\n"
               "  ptc stubs [--tools LIST]                print the generated Python module\n"
               "  ptc tool NAME [JSON]                    call one tool directly (JSON args, or "
               "stdin)\n"
               "  ptc mcp [OPTIONS]                       serve the Model Context Protocol on "
               "stdio\n"
               "  ptc serve [OPTIONS]                     the per-user server of sessions\n"
               "  ptc session list | kill ID | reset ID   the server's sessions\n"
               "  ptc policy check TOOL [JSON]            what the policy decides of a call\n"
               "  ptc doctor [--config FILE]              interpreter, isolation layers, tools\n"
               "  ptc agent                               the remote end of --backend (started "
               "by ptc)\n"
               "  ptc --version | --help\n"
               "\n"
               "Every subcommand has --help. Exit status of 'ptc run': 0 success, 1 the script\n"
               "failed, 124 timeout, 130 interrupted, 2 usage or config error, 3 internal error.\n"
               "Docs: README.md and docs/ in the source tree.\n",
               PTC_VERSION);
}

int main(int argc, char **argv)
{
        static const struct {
                const char *name;
                int (*fn)(int, char **);
        } cmds[] = {
                {"run", cmd_run},       {"schema", cmd_schema}, {"stubs", cmd_stubs},
                {"tool", cmd_tool},     {"doctor", cmd_doctor}, {"mcp", cmd_mcp},
                {"agent", cmd_agent},   {"serve", cmd_serve},   {"session", cmd_session},
                {"policy", cmd_policy},
        };
        int r;

        /* A terminal command's pid 1 (core/command/pidns-init.h): before anything else. */
        if (argc > 0 && strcmp(argv[0], PIDNS_INIT_ARGV0) == 0)
                pidns_init_main(argc, argv);
        pidns_init_set_available();
        log_set_program_name("ptc");
        r = fd_ensure_stdio();
        if (r < 0) {
                log_error_errno(r, "cannot open /dev/null on a closed stdin/stdout/stderr: %m");
                return EXIT_INTERNAL;
        }
        if (argc < 2) {
                help();
                return EXIT_USAGE;
        }
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
            strcmp(argv[1], "help") == 0) {
                help();
                return EXIT_OK;
        }
        if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
                printf("ptc %s\n", PTC_VERSION);
                return EXIT_OK;
        }
        for (size_t i = 0; i < ELEMENTSOF(cmds); i++)
                if (strcmp(argv[1], cmds[i].name) == 0)
                        return cmds[i].fn(argc - 1, argv + 1);
        log_error("unknown command '%s' (try 'ptc --help')", argv[1]);
        return EXIT_USAGE;
}
