/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The upstream MCP servers of a config (mcp_servers) as tools of ptc: every
 * server started, its tools offered to the registry as <server>_<tool>.
 *
 * The servers are started by a thread of their own that lives until they are
 * stopped: they die with the thread that forked them (PR_SET_PDEATHSIG), and
 * they are not children of the main thread, whose children ptc run treats as
 * the execution's orphans. Start and free from one thread; start after the
 * signal mask is set (the spawner thread inherits it).
 */

#include <stddef.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "core/config/config.h"
#include "core/registry/registry.h"

struct mcp_upstreams;

/*
 * Start every server of @c (in config order, each bounded by its start-up
 * budget) with environment @env (borrowed; the scrubbed environment plus each
 * server's own env). A server that cannot start is left out with a warning in
 * *ret_warnings (strv, caller frees; may stay NULL) ("...; its tools are left
 * out"), and a server that started but advertised tools ptc does not take adds
 * its note there too ("mcp server 'files': skipped 2 invalid tools"). Returns 0
 * or -ENOMEM.
 * Caller frees *ret with mcp_upstreams_free(), which stops the servers.
 */
_must_check_ int mcp_upstreams_start(const struct ptc_config *c, char *const *env,
                                     struct mcp_upstreams **ret, char ***ret_warnings);

/* The tools of every running server, for registry_new_with(). Borrowed. */
const struct registry_extra_tool *mcp_upstreams_tools(const struct mcp_upstreams *u, size_t *ret_n);

struct mcp_upstreams *mcp_upstreams_free(struct mcp_upstreams *u);
DEFINE_TRIVIAL_CLEANUP_FUNC_RESET(struct mcp_upstreams *, mcp_upstreams_free);
#define _cleanup_mcp_upstreams_ _cleanup_(mcp_upstreams_freep)

/*
 * The registry name of @tool of @server: "<server>_<tool>" with every byte
 * outside [A-Za-z0-9_] made '_', at most 200 bytes. New string or NULL (ENOMEM).
 */
char *mcp_upstream_tool_name(const char *server, const char *tool);
