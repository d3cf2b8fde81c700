/* SPDX-License-Identifier: MIT */
/*
 * The builtin tool catalogue. It lives with the tools, not in the registry:
 * the registry and the RPC layer treat every tool alike and name none
 * (tests/unit/test-registry.c checks it); whatever is particular to one tool
 * is a field of its tool_def (usable, dropped_args).
 */

#include "core/tools/tool.h"

#include "basic/macro.h"

const struct tool_def *const tool_builtin_defs[] = {
        &tool_def_read_file, &tool_def_write_file, &tool_def_terminal,    &tool_def_search_files,
        &tool_def_patch,     &tool_def_web_search, &tool_def_web_extract,
};

const size_t tool_builtin_count = ELEMENTSOF(tool_builtin_defs);

/* The seed's seven: a harness may list any of them, even where this build lacks one. */
const char *const tool_known_names[] = {
        "web_search",   "web_extract", "read_file", "write_file",
        "search_files", "patch",       "terminal",  NULL,
};
