/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The patch tool's V4A mode applied to the files (v4a.c, v4a-validate.c); the format and its
 * parser are core/edit/v4a.h.
 *
 * Applying is two-phase: every operation is simulated on an in-memory overlay
 * of the files first (so a Move followed by an Update of the new path
 * validates), and only a patch that validates completely touches the disk.
 * Each written file is replaced atomically (temp file + rename, mode kept).
 *
 * Thread context: any thread; no global state.
 */

#include <stddef.h>

#include <jansson.h>

#include "basic/macro.h"
#include "core/edit/v4a.h"

struct tool_ctx;

/*
 * Parse, validate and apply @patch_text (@n bytes). On return 0, *ret_result
 * is a new reference to the seed's result object: {"success": true, "diff",
 * "files_modified" (updated paths and "src -> dst"), "files_created",
 * "files_deleted", "lint": {path: LINT}} where, as the seed's PatchResult,
 * empty members are left out; or {"success": false, "error": "Failed to
 * parse patch: ...", "Patch validation failed (no files were modified):\n
 * • ..." or "Apply phase failed ...", plus what was applied}; or, for a
 * system path, the seed's bare {"error": "Refusing to write to sensitive
 * system path: ..."}. Negative: -ENOMEM.
 *
 * @ctx is borrowed (cwd, env for "~" and the deny list, deadline, python
 * for the linter). Locking is the caller's: patch.c holds tool_path_lock()
 * (lint.h) on every path of the patch around this call (the locks are not
 * reentrant, so this function takes none).
 */
_must_check_ int v4a_apply(const struct tool_ctx *ctx, const char *patch_text, size_t n,
                           json_t **ret_result);
