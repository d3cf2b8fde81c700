/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The set of tools one execution may call: builtin tools (and later MCP
 * upstream tools and host tools), intersected with the enabled list. Sorted by
 * name. Immutable once built; safe to read from any thread.
 *
 * Every tool is alike here: what is particular to one tool is data in its
 * tool_def (usable, dropped_args), and the builtin catalogue is the tools'
 * (tool.h). registry_call() is the one way every front end runs a tool.
 */

#include <stdbool.h>
#include <stddef.h>

#include "basic/diag.h"
#include "basic/macro.h"
#include "core/config/config.h"
#include "core/policy/approval.h"
#include "core/tools/tool.h"

struct registry;

/*
 * Build the registry of the tools enabled by @enabled (strv; NULL means the
 * default set: every builtin tool that is usable). An explicit empty list
 * means no tools (fail-closed). A name ptc does not know is -EINVAL with a
 * message in @reterr; a known tool that this build or configuration cannot
 * offer is left out with a warning in *ret_warnings (strv, caller frees; may
 * be NULL). Caller frees *ret with registry_free().
 */
_must_check_ int registry_new(const struct ptc_config *config, char *const *enabled,
                              struct registry **ret, char ***ret_warnings, struct diag *reterr);
/*
 * A tool that is not builtin, added by the caller: an upstream MCP server's
 * tool (<server>_<tool>). Everything is copied except @userdata (borrowed: it
 * must outlive the registry) and @parameters (a reference is taken).
 */
struct registry_extra_tool {
        const char *name; /* [A-Za-z0-9_]+ */
        const char *description;
        json_t *parameters; /* a JSON Schema object */
        const char *returns;
        tool_run_fn run;
        void *userdata;
};

/*
 * Most parameters a tool may have: properties of its schema, and names in its "required"
 * (the script's stub takes each as an argument, core/stubs).
 */
#define REGISTRY_MAX_PARAMS 1024

/*
 * registry_new() plus @extra (@n_extra entries). The default set (@enabled
 * NULL) includes every extra tool; an explicit list may name them. An extra
 * whose name is taken by a builtin tool or an earlier extra, or whose
 * parameters have more than REGISTRY_MAX_PARAMS properties or required names,
 * is left out with a warning.
 */
_must_check_ int registry_new_with(const struct ptc_config *config, char *const *enabled,
                                   const struct registry_extra_tool *extra, size_t n_extra,
                                   struct registry **ret, char ***ret_warnings,
                                   struct diag *reterr);

struct registry *registry_free(struct registry *r);
DEFINE_TRIVIAL_CLEANUP_FUNC_RESET(struct registry *, registry_free);
#define _cleanup_registry_ _cleanup_(registry_freep)

size_t registry_count(const struct registry *r);
/* i-th tool in name order. Borrowed. */
const struct tool *registry_get(const struct registry *r, size_t i);
/* Tool by name, or NULL. Borrowed. */
const struct tool *registry_find(const struct registry *r, const char *name);
/* Comma+space separated sorted names ("a, b"; "" for none); caller frees. NULL on ENOMEM. */
char *registry_names(const struct registry *r);

/*
 * Run tool @t (of a registry) with @args and answer what the caller sends on:
 * the one dispatch path of every front end (the RPC server, ptc mcp
 * --expose-tools, ptc tool, the library API).
 *
 * @args is a JSON object (borrowed), or NULL for {}. The arguments the tool
 * drops (tool_def.dropped_args) are deleted from it first, so a caller that
 * logs @args afterwards logs what the tool saw. @ctx is borrowed and may be
 * NULL (then nothing is redacted).
 *
 * Returns 0 and *ret_result, a new reference: the tool's result, or for a
 * tool that failed (a negative errno) {"error": "Tool execution failed:
 * <strerror>"}; either way with every secret value known to ctx->redactor
 * redacted, and withheld as {"error": "tool result withheld: redaction failed
 * (<why>)"} when redaction fails (tool_result_finish()). A tool's failure is
 * a result, not a return value. -ENOMEM when out of memory, -EINVAL when
 * @args is not an object.
 *
 * First the call passes the policy's gate (core/policy/approval.h) when @ctx has a
 * config: a refused call gets the refusal as its result ({"error", "status": "denied" or
 * "blocked"}) and never runs; an ask waits for its answer, on a pause of ctx->clock.
 * *ret_outcome (may be NULL) says what the gate did, for the per-call log.
 *
 * Blocks the calling thread until the tool returns (ctx->deadline and
 * ctx->cancel_fd bound it); safe from several threads at once.
 */
_must_check_ int registry_call_tool(const struct tool *t, const struct tool_ctx *ctx, json_t *args,
                                    json_t **ret_result, struct approval_outcome *ret_outcome);
/* registry_call_tool() of the tool named @name in @r; -ENOENT when @r has none. */
_must_check_ int registry_call(const struct registry *r, const char *name,
                               const struct tool_ctx *ctx, json_t *args, json_t **ret_result);
