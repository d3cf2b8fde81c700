/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Registry constructor over an arbitrary set of tool definitions, so unit
 * tests can build registries from fake tools. registry_new() calls it with the
 * builtin tools of this build. Not part of the module's public API.
 */

#include <stddef.h>

#include "core/registry/registry.h"

/*
 * Like registry_new(), with @defs (@n entries) as the tools this build can
 * offer. A name in tool_known_names that is not among @defs is "known
 * but unavailable"; a name in neither is unknown. Each def's parameters_json
 * must be a JSON object (a parse failure is -EINVAL naming the tool).
 */
_must_check_ int registry_new_from_defs(const struct tool_def *const *defs, size_t n,
                                        char *const *enabled, struct registry **ret,
                                        char ***ret_warnings, struct diag *reterr);
