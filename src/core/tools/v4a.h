/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The patch tool's V4A multi-file mode (docs/seed.md 2.4, "V4A patch
 * mode", with docs/contracts.md 9.12):
 *
 *   *** Begin Patch                  optional; a whole line
 *   *** Update File: <path>          hunks follow
 *   *** Move to: <path>              optional, after an Update header: rename while updating
 *   @@ <hint> @@                     optional; starts a new hunk
 *    <context> / -<removed> / +<added>
 *   *** End of File                  accepted and skipped
 *   *** Add File: <path>             '+' lines are the content
 *   *** Delete File: <path>
 *   *** Move File: <src> -> <dst>
 *   *** End Patch                    optional; a whole line
 *
 * Markers are whole lines (a "+*** End Patch" content line does not end the
 * patch), CRLF line ends are accepted, and a blank line inside a hunk is an
 * empty context line (blank lines ending a hunk are dropped).
 *
 * Applying is two-phase: every operation is simulated on an in-memory overlay
 * of the files first (so a Move followed by an Update of the new path
 * validates), and only a patch that validates completely touches the disk.
 * Each written file is replaced atomically (temp file + rename, mode kept).
 *
 * Thread context: any thread; no global state.
 */

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "basic/macro.h"

struct tool_ctx;

/* Largest patch text accepted: an RPC frame (16 MiB) cannot carry more anyway. */
#define V4A_PATCH_MAX (16u * 1024 * 1024)
/*
 * Operations per patch: a model's patch has a handful. Bounds the O(n^2) overlay lookups, and
 * two paths per operation stay within TOOL_PATH_LOCK_PATHS_MAX (1024).
 */
#define V4A_OPS_MAX 500
/* Largest file an Update reads (and a Delete reads for its diff). */
#define V4A_FILE_MAX (32u * 1024 * 1024)
/* Combined diff text in the result; the rest is cut with a note. */
#define V4A_DIFF_MAX (4u * 1024 * 1024)
/* Error text of a failed patch (bullets past it are summarised). */
#define V4A_ERROR_MAX (256u * 1024)

enum v4a_op_type {
        V4A_OP_ADD,
        V4A_OP_UPDATE,
        V4A_OP_DELETE,
        V4A_OP_MOVE,
};

struct v4a_line {
        char prefix;      /* '+', '-' or ' ' */
        const char *text; /* borrowed from v4a_patch.text; not NUL-terminated, may hold NULs */
        size_t len;
};

struct v4a_hunk {
        char *hint; /* text between "@@" and "@@", trimmed; NULL when none */
        size_t hint_len;
        struct v4a_line *lines;
        size_t n_lines;
};

struct v4a_op {
        enum v4a_op_type type;
        char *path;     /* as written (trimmed), escaped bytes undone (docs/protocol.md) */
        char *new_path; /* Move File destination, or an Update's "Move to"; NULL when none */
        struct v4a_hunk *hunks;
        size_t n_hunks;
};

/* A parsed patch. Owns everything it points to. */
struct v4a_patch {
        char *text; /* private copy of the input; the hunk lines point into it */
        size_t text_len;
        struct v4a_op *ops;
        size_t n_ops;
};

/* NULL-safe; returns NULL. */
struct v4a_patch *v4a_patch_free(struct v4a_patch *p);
static inline void v4a_patch_freep(struct v4a_patch **p)
{
        *p = v4a_patch_free(*p);
}
#define _cleanup_v4a_patch_ _cleanup_(v4a_patch_freep)

/*
 * Parse @n bytes of V4A text (any bytes; NULs allowed). Returns 0 and sets
 * exactly one of *ret (the patch, caller frees with v4a_patch_free()) or
 * *ret_error (the seed's "Parse error: e1; e2" text, caller frees). An empty
 * patch parses to zero operations. Negative: -ENOMEM, -E2BIG (@n over
 * V4A_PATCH_MAX).
 */
_must_check_ int v4a_parse(const char *text, size_t n, struct v4a_patch **ret, char **ret_error);

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
