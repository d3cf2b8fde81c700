/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The Python module a script imports to call tools (docs/seed.md 1.6),
 * generated from each enabled tool's JSON Schema, and the execute_code
 * function schema the model sees (docs/seed.md 1.1).
 */

#include <jansson.h>

#include "basic/macro.h"
#include "core/config/config.h"

struct buf;
struct registry;
struct tool;

/*
 * Generate the module text for the tools in @reg. The module finds ptc
 * through $PTC_RPC_SOCKET (socket path) and $PTC_RPC_TOKEN (per-run token);
 * both stay in the environment so the script's subprocesses can import the
 * module too. Wire format: docs/protocol.md. Caller frees *ret. Returns 0,
 * -ENOMEM, or -E2BIG when a tool's schema is beyond the generator's caps.
 */
_must_check_ int stubs_generate(const struct registry *reg, const char *module_name, char **ret);

/*
 * Shared by the generator and schema_build(), so the execute_code description
 * shows exactly what the module defines.
 *
 * stubs_function_names: the Python name of each tool's stub, in registry
 * order (tool names made valid, non-clashing identifiers). Caller frees the
 * strv. stubs_append_signature: append the stub's parameter list
 * ("path: str, offset: int = 1") for @t to @out.
 */
_must_check_ int stubs_function_names(const struct registry *reg, char ***ret);
_must_check_ int stubs_append_signature(struct buf *out, const struct tool *t);

/*
 * The execute_code schema ({"name", "description", "parameters"}) for the
 * tools in @reg, with the working-directory sentence of @mode and limits
 * taken from @config. Returns 0 and a new reference in *ret, or -ENOMEM.
 */
_must_check_ int schema_build(const struct registry *reg, enum ptc_mode mode,
                              const struct ptc_config *config, json_t **ret);
