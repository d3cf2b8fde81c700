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
 * This is the engine: the text parsed (v4a-parse.c) and one hunk applied to a
 * file's content in memory (v4a-hunk.c). Applying a patch to the files, under
 * the tools' path rules, is the patch tool's (core/tools/v4a-apply.h).
 *
 * Thread context: any thread; no global state.
 */

#include <stdbool.h>
#include <stddef.h>

#include "basic/macro.h"

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
DEFINE_TRIVIAL_CLEANUP_FUNC_RESET(struct v4a_patch *, v4a_patch_free)
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
 * Apply hunk @h to the content @c: *ret is the new content, or NULL when the
 * hunk changes nothing (context only); or *ret_err says why it does not
 * apply. Returns 1 when the hunk is a change, 0 when it is inert, -ENOMEM.
 * (v4a-hunk.c)
 */
_must_check_ int v4a_apply_hunk(const struct v4a_hunk *h, const char *c, size_t cn, const char *eol,
                                char **ret, size_t *ret_len, char **ret_err);

/*
 * "\r\n" for a file with CRLF line ends (FUZZY_KEEP_CRLF's rule), else "\n": hunk lines are
 * joined with it, so they match the file exactly and added lines get its line ends.
 */
const char *v4a_detect_eol(const char *c, size_t n);

/* Grow *arr (*alloc elements of @elem bytes) to hold @need. 0 or -ENOMEM. (v4a-parse.c) */
_must_check_ int v4a_grow(void **arr, size_t *alloc, size_t need, size_t elem);
