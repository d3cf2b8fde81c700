/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The helpers of the subcommands not yet on the API (ptc mcp, ptc doctor): the
 * steps of an engine start on core types (src/core/api/engine-setup.c), each
 * printing its message. ptc run, ptc tool, ptc schema and ptc stubs use
 * include/ptc/ptc.h only (cli.h).
 */

#include "cli/cli.h"
#include "core/config/config.h"

struct mcp_upstreams;
struct redactor;
struct registry;

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
 * The defaults --help texts print, from the code that applies them: the
 * built-in config values (config_init()) and the tools the registry enables
 * by default with those values. @ret_tools: "read_file, write_file, ...";
 * caller frees. Returns 0 or -ENOMEM (the help then says so, never a guess).
 */
int cli_help_defaults(struct ptc_config *ret_config, char **ret_tools);
