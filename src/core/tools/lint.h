/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The post-write syntax check the file-editing tools (write_file, patch replace mode, V4A)
 * share (docs/seed.md 2.2 "Lint after write"), with the seed's delta against the old content.
 * The write itself and the per-path locks are write-file.h.
 *
 * The check never opens a file: it lints the bytes the tool wrote and the old content the
 * tool read through the descriptor it resolved and judged (tool-chase.h), handed in as
 * buffers (Python gets them through a memfd). So what is linted is what was judged, and no
 * name is looked up again for it.
 *
 * Nothing outside src/core/tools includes this header.
 *
 * Thread context: every function may be called from any thread.
 */

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "basic/macro.h"
#include "basic/time-util.h"

struct tool_ctx;

/* --- lint (lint.c) --- */

/*
 * Old content larger than this is not read for the lint baseline (the edit is then linted
 * without a delta).
 */
#define LINT_PRE_MAX (16u * 1024 * 1024)

enum lint_status {
        LINT_OK,
        LINT_ERROR,
        LINT_SKIPPED,
};

struct lint {
        enum lint_status status;
        char *text; /* owned: the output for LINT_ERROR, the message for LINT_SKIPPED; or NULL */
};

/* Free l->text. NULL-safe, and safe on a zero-initialised struct. */
void lint_release(struct lint *l);

/*
 * The lower-cased extension of @path as Python's os.path.splitext(path)[1].lower() (a leading
 * dot of the file name does not count), written into @buf (at most @size - 1 bytes, cut when
 * longer). "" when there is none.
 */
void lint_extension_of(const char *path, char *buf, size_t size);

/* True when @ext (as lint_extension_of() writes it) has a linter: .json .yaml .yml .py. */
bool lint_has_linter(const char *ext);

/*
 * Lint the @n bytes at @s as a file with extension @ext: .json with jansson, .yaml/.yml with
 * libyaml (events only, no document built), .py with ctx->python (ast.parse in a subprocess
 * with a 10 s limit and ctx->deadline, cancelled by ctx->cancel_fd). Any other extension is
 * LINT_SKIPPED "No linter for <ext> files". A linter that cannot run is LINT_SKIPPED with a
 * message, not an error. Fills @ret (release with lint_release()); returns 0 or -ENOMEM.
 */
_must_check_ int lint_check(const struct tool_ctx *ctx, const char *ext, const char *s, size_t n,
                            struct lint *ret);

/*
 * The seed's _check_lint_delta(): lint the new content @s; when it has errors and the old
 * content @pre (may be NULL; @pre_n 0 means "no baseline") had errors too, keep only the
 * error lines the old content did not have, under "New lint errors introduced by this edit
 * (pre-existing errors filtered out):". When every error was already there, @ret keeps the
 * full output and *ret_message (caller frees) is set to the seed's "already there" note;
 * otherwise *ret_message is NULL. Returns 0 or -ENOMEM.
 */
_must_check_ int lint_delta(const struct tool_ctx *ctx, const char *ext, const char *s, size_t n,
                            const char *pre, size_t pre_n, struct lint *ret, char **ret_message);

/*
 * LINT as the seed's LintResult.to_dict(): {"status": "ok", "output": ""},
 * {"status": "error", "output": ..., ["message": @message]} or {"status": "skipped",
 * "message": ...}. Returns a new reference, or NULL on ENOMEM. @message may be NULL.
 */
json_t *lint_to_json(const struct lint *l, const char *message);

/*
 * lint_delta() for the file named @path (its extension picks the linter) and lint_to_json():
 * *ret is a new reference. Returns 0 or -ENOMEM.
 */
_must_check_ int lint_delta_json(const struct tool_ctx *ctx, const char *path, const char *s,
                                 size_t n, const char *pre, size_t pre_n, json_t **ret);
