/* SPDX-License-Identifier: MIT */
/*
 * ptc mcp: a Model Context Protocol server on stdio (docs/mcp.md), the
 * command line of ptc_mcp_serve(): options become the engine's, and the
 * process hosts the server alone, so it scrubs the secrets from its
 * environment (PTC_ENGINE_SCRUB_PROCESS). The executions run at once on the
 * server's threads.
 *
 * SIGINT, SIGTERM and SIGHUP stop the server as EOF on stdin does (the calls
 * running are interrupted, the exit status is 0): they are blocked before any
 * thread exists and handed to ptc_mcp_serve() as a signalfd (stop_fd).
 */

#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/log.h"

/* The defaults come from the code that applies them (cli_defaults_get()). */
static void help(void)
{
        struct cli_defaults c = {};

        (void) cli_defaults_get(&c);
        printf("Usage: ptc mcp [OPTIONS]\n"
               "\n"
               "Serve the Model Context Protocol on stdio (JSON-RPC, one message per line).\n"
               "The tool execute_code runs a Python script that calls ptc's tools; only what\n"
               "it prints comes back. See docs/mcp.md for the client configuration.\n"
               "\n"
               "Options:\n"
               "  --config FILE            config file (as ptc run)\n"
               "  --tools LIST             tools the scripts may call; default: every usable\n"
               "                           builtin tool, here:\n"
               "                           %s\n"
               "  --mode project|strict    working directory of the scripts (default %s)\n"
               "  --cwd DIR                working directory in project mode (default: .;\n"
               "                           started in / or a system tree: a private one)\n"
               "  --timeout SECONDS        default and largest timeout of a call (default:\n"
               "                           code_execution.timeout, %g)\n"
               "  --max-tool-calls N       tool-call budget of each execution (default %lld)\n"
               "  --isolation LEVEL        none | auto | strict, as ptc run (default %s)\n"
               "  --backend SPEC           where the scripts run, as ptc run (default local)\n"
               "  --remote-cwd DIR         the scripts' directory on a remote target\n"
               "  --sessions none|conversation\n"
               "                           conversation: a call without 'session' runs in\n"
               "                           the connection's own live interpreter, kept\n"
               "                           between calls (default none: a fresh one each;\n"
               "                           docs/sessions.md)\n"
               "  --expose-tools           also list each enabled tool as an MCP tool\n"
               "  -h, --help               this help\n"
               "\n"
               "stdout carries only protocol messages; logs go to stderr. Exits 0 when stdin\n"
               "closes or on SIGTERM, SIGINT or SIGHUP (the calls running are interrupted),\n"
               "2 on a usage or config error.\n",
               c.tools ? c.tools : "(out of memory)", c.mode, c.timeout, c.max_tool_calls,
               c.isolation);
        cli_defaults_release(&c);
}

/* The server's lines for a human: stderr, as every log line of ptc. */
static void server_log(int is_warning, const char *line, void *userdata)
{
        if (is_warning)
                log_warning("%s", line);
        else
                log_info("%s", line);
}

/*
 * Process state for the server (cli_setup_process(), before any thread exists: threads
 * inherit the mask), and its stop signals as a signalfd for ptc_mcp_opts.stop_fd. Returns
 * the signalfd, or -errno.
 */
static int setup_process(void)
{
        sigset_t stop;
        int r, fd;

        r = cli_setup_process();
        if (r < 0)
                return r;
        cli_stop_signals(&stop);
        fd = signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK);
        return fd < 0 ? -errno : fd;
}

int cmd_mcp(int argc, char **argv)
{
        const char *arg_config = NULL, *arg_tools = NULL, *arg_mode = NULL, *arg_cwd = NULL;
        const char *arg_timeout = NULL, *arg_calls = NULL, *arg_isolation = NULL;
        const char *arg_backend = NULL, *arg_remote_cwd = NULL, *arg_sessions = NULL;
        bool arg_expose_tools = false;
        const struct cli_option opts[] = {
                {"config", &arg_config},
                {"tools", &arg_tools},
                {"mode", &arg_mode},
                {"cwd", &arg_cwd},
                {"timeout", &arg_timeout},
                {"max-tool-calls", &arg_calls},
                {"isolation", &arg_isolation},
                {"backend", &arg_backend},
                {"remote-cwd", &arg_remote_cwd},
                {"sessions", &arg_sessions},
                {"expose-tools", .flag = &arg_expose_tools},
                {},
        };
        _cleanup_close_ int sig_fd = -EBADF;
        ptc_engine *engine = NULL;
        struct ptc_diag d = {};
        size_t warned = 0;
        int r, ret = EXIT_USAGE;

        r = cli_parse_options(argc, argv, "mcp", opts, false, help);
        if (r != CLI_OPTIONS_PARSED)
                return r;
        if (optind < argc) {
                log_error("unexpected argument '%s' (try 'ptc mcp --help')", argv[optind]);
                return EXIT_USAGE;
        }
        if (arg_sessions && strcmp(arg_sessions, "none") != 0 &&
            strcmp(arg_sessions, "conversation") != 0) {
                log_error("--sessions: invalid value '%s' (allowed: none, conversation)",
                          arg_sessions);
                return EXIT_USAGE;
        }
        /* The server's own lines (a call cancelled) are info: shown. */
        log_set_max_level(LOG_LEVEL_INFO);

        /* A client may start it anywhere, `/` too: then it works in a private directory. */
        if (cli_engine_new(arg_config,
                           PTC_ENGINE_SCRUB_PROCESS | PTC_ENGINE_WARM_POOL | PTC_ENGINE_PRIVATE_CWD,
                           &engine, &warned) < 0)
                return EXIT_USAGE;
        if ((arg_timeout && cli_engine_set(engine, "timeout", arg_timeout, "--timeout") < 0) ||
            (arg_calls &&
             cli_engine_set(engine, "max_tool_calls", arg_calls, "--max-tool-calls") < 0) ||
            (arg_mode && cli_engine_set(engine, "mode", arg_mode, "--mode") < 0) ||
            (arg_isolation &&
             cli_engine_set(engine, "isolation", arg_isolation, "--isolation") < 0) ||
            (arg_backend &&
             cli_engine_set(engine, "code_execution.backend", arg_backend, "--backend") < 0) ||
            (arg_remote_cwd && cli_engine_set_remote_cwd(engine, arg_remote_cwd) < 0) ||
            (arg_tools && cli_engine_set(engine, "tools", arg_tools, "--tools") < 0) ||
            (arg_cwd && cli_engine_set(engine, "cwd", arg_cwd, "--cwd") < 0))
                goto out;

        sig_fd = setup_process();
        if (sig_fd < 0) {
                ret = EXIT_INTERNAL;
                log_error_errno(sig_fd, "cannot set up signal handling: %m");
                goto out;
        }
        /* After setup_process(): the MCP servers' threads inherit the blocked signals. */
        r = ptc_engine_start(engine, &d);
        cli_print_warnings(engine, &warned);
        if (r == -EINVAL) {
                log_error("%s", d.message);
                goto out;
        }
        if (r < 0) {
                ret = EXIT_INTERNAL;
                log_error("%s", d.message[0] ? d.message : strerror(-r));
                goto out;
        }

        {
                /* The default and largest timeout of a call: the engine's (--timeout). */
                const struct ptc_mcp_opts mo = {
                        .size = sizeof(mo),
                        .flags = (arg_expose_tools ? PTC_MCP_EXPOSE_TOOLS : 0) |
                                 (arg_sessions && strcmp(arg_sessions, "conversation") == 0
                                          ? PTC_MCP_SESSION_PER_CONNECTION
                                          : 0),
                        .stop_fd = sig_fd,
                        .log = server_log,
                };

                r = ptc_mcp_serve(engine, STDIN_FILENO, STDOUT_FILENO, &mo, &d);
        }
        if (r == -EBUSY) {
                /* Calls that did not wind down still use the engine: leave it be, and exit. */
                log_warning("%s", d.message);
                return EXIT_OK;
        }
        /* A client that went away (stdout broken) ends the session as EOF does. */
        if (r < 0 && r != -EPIPE) {
                ret = EXIT_INTERNAL;
                log_error("%s", d.message);
                goto out;
        }
        ret = EXIT_OK;
out:
        ptc_engine_free(engine);
        return ret;
}
