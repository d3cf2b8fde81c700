/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Shared pieces of the ptc subcommands. Only src/cli reports errors to the
 * user (once, at the boundary) and decides exit codes.
 */

#include <stdbool.h>

#include <jansson.h>

#include "basic/macro.h"
#include "core/config/config.h"
#include "ptc/ptc.h"

struct mcp_upstreams;
struct redactor;
struct registry;

enum {
        EXIT_OK = PTC_EXIT_OK,
        EXIT_SCRIPT_FAILED = PTC_EXIT_SCRIPT_FAILED,
        EXIT_USAGE = PTC_EXIT_USAGE,
        EXIT_INTERNAL = PTC_EXIT_INTERNAL,
        EXIT_TIMEOUT = PTC_EXIT_TIMEOUT,
        EXIT_INTERRUPTED = PTC_EXIT_INTERRUPTED,
};

int cmd_run(int argc, char **argv);
int cmd_schema(int argc, char **argv);
int cmd_stubs(int argc, char **argv);
int cmd_tool(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_mcp(int argc, char **argv);

/*
 * Load defaults + the config file (@path, or the default location when NULL;
 * an explicit path must exist). On error prints the message and returns
 * -EINVAL (exit 2).
 */
int cli_load_config(const char *path, struct ptc_config *c);

/* "a,b" -> strv; "" -> empty strv (no tools). Prints and returns -EINVAL on a bad name. */
int cli_parse_tools(const char *list, char ***ret);

/*
 * Apply the options ptc run and ptc mcp share (each may be NULL): --timeout,
 * --max-tool-calls, --mode, --isolation. Prints and returns -EINVAL on a bad
 * value, and for isolation strict, which this build cannot set up.
 */
int cli_apply_run_options(struct ptc_config *c, const char *timeout, const char *max_calls,
                          const char *mode, const char *isolation);

/*
 * Start the upstream MCP servers of @c (config mcp_servers) with environment
 * @env, printing a warning for each that does not start. Call after signals
 * are set up (the servers' spawner thread inherits the mask). Returns 0 or
 * -ENOMEM (printed).
 */
int cli_start_upstreams(const struct ptc_config *c, char *const *env, struct mcp_upstreams **ret);

/*
 * Build the registry for @tools (or config->tools, or the default set) plus
 * the tools of @upstreams (may be NULL), printing warnings for left-out
 * tools. Prints and returns <0 on error.
 */
int cli_build_registry(const struct ptc_config *c, char *const *tools,
                       const struct mcp_upstreams *upstreams, struct registry **ret);

/*
 * The process-wide secret handling of docs/contracts.md 8: take secret
 * variables out of the environment (values go to the redactor), become
 * non-dumpable, and build the scrubbed environment for children.
 * @ret_kept (may be NULL): the removed "NAME=VALUE" entries, for a host that
 * starts ptc processes of its own (ptc mcp); caller frees with strv_free_wipe().
 */
int cli_prepare_secrets(const struct ptc_config *c, struct redactor **ret_redactor,
                        char ***ret_base_env, char ***ret_kept);

/*
 * One option of a subcommand, for cli_parse_options(): "--@name" and "-@short_name" (either
 * may be unset) store their value in *@arg; or, with @arg NULL, take no value and set *@flag.
 */
struct cli_option {
        const char *name;
        const char **arg;
        bool *flag;
        char short_name;
};

/* Most options of one subcommand, --help aside (ptc run has 11). */
#define CLI_OPTIONS_MAX 16

/* cli_parse_options() went through: the operands start at optind. No exit status is < 0. */
#define CLI_OPTIONS_PARSED (-1)

/*
 * The option parsing of every subcommand 'ptc @cmd': getopt_long() over -h/--help and @opts
 * (ended by an entry with neither name), in that order. Options and operands may mix, or with
 * @stop_at_operand the options end at the first operand. An option given twice keeps its last
 * value. Returns CLI_OPTIONS_PARSED; EXIT_OK once -h/--help has printed @help(); or
 * EXIT_USAGE after one line naming a bad option, e.g. "unrecognized option '--x' (try 'ptc
 * run --help')".
 */
int cli_parse_options(int argc, char **argv, const char *cmd, const struct cli_option *opts,
                      bool stop_at_operand, void (*help)(void));

/*
 * The defaults --help texts print, from the code that applies them: the
 * built-in config values (config_init()) and the tools the registry enables
 * by default with those values. @ret_tools: "read_file, write_file, ...";
 * caller frees. Returns 0 or -ENOMEM (the help then says so, never a guess).
 */
int cli_help_defaults(struct ptc_config *ret_config, char **ret_tools);

/* Print @v as JSON on stdout (pretty or one line) with a newline. */
int cli_print_json(json_t *v, bool pretty);
