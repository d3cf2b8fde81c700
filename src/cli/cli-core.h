/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The helpers of the subcommand not yet on the API (ptc doctor): the steps of
 * an engine start on core types (src/core/api/engine-setup.c), each printing
 * its message. ptc run, ptc tool, ptc schema, ptc stubs and ptc mcp use
 * include/ptc/ptc.h only (cli.h).
 */

#include "cli/cli.h"
#include "core/config/config.h"

struct mcp_upstreams;
struct registry;

/*
 * Load defaults + the config file (@path, or the default location when NULL;
 * an explicit path must exist). On error prints the message and returns
 * -EINVAL (exit 2).
 */
int cli_load_config(const char *path, struct ptc_config *c);

/*
 * Build the registry for @tools (or config->tools, or the default set) plus
 * the tools of @upstreams (may be NULL), printing warnings for left-out
 * tools. Prints and returns <0 on error.
 */
int cli_build_registry(const struct ptc_config *c, char *const *tools,
                       const struct mcp_upstreams *upstreams, struct registry **ret);

/*
 * The defaults --help texts print, from the code that applies them: the
 * built-in config values (config_init()) and the tools the registry enables
 * by default with those values. @ret_tools: "read_file, write_file, ...";
 * caller frees. Returns 0 or -ENOMEM (the help then says so, never a guess).
 */
int cli_help_defaults(struct ptc_config *ret_config, char **ret_tools);
