/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The file tools' second pass (tool-chase.c; docs/policy.md "Paths"): resolve a call's path
 * with fs_chase() (core/fs/fs-chase.h) and judge the object reached, on its real path, by
 * the policy's path rules and the sensitive-path guards, before the tool touches it through
 * the descriptor it got. The registry's gate (approval_gate()) judged the call's text and
 * its resolution a moment before; this pass is what binds, since it is made on the very
 * descriptor the tool then reads or writes.
 *
 * Thread context: any thread (the builtin tools run on worker threads).
 */

#include <stdbool.h>

#include <jansson.h>

#include "basic/macro.h"
#include "core/fs/fs-chase.h"
#include "core/tools/tool.h"

enum tool_chase_flags {
        TOOL_CHASE_MISSING_OK = 1 << 0, /* FS_CHASE_MISSING_OK: a file to be created */
        TOOL_CHASE_WRITE = 1 << 1,      /* also the write guards: system paths, the deny list */
};

/*
 * Resolve @abs (absolute, "~" expanded) for @tool and judge what it reached. Returns 0 with
 * *ret filled (release with fs_chased_done()) when the tool may go on; 1 with
 * *ret_refusal (a new reference; @refusal_fields_json's members, e.g. patch's
 * {"success": false}, then "error" and "status") when it is refused: a magic link, a policy
 * deny or blocked verdict on the real path, an ask on it that nobody allowed (an ask the
 * gate already put for this very real path and rule is not put twice), a system path or a
 * credential file for TOOL_CHASE_WRITE; or another fs_chase() -errno (-ENOENT ...) for the
 * tool to word as it does today. -ENOMEM.
 */
_must_check_ int tool_chase(const struct tool_ctx *ctx, const char *tool, const char *abs,
                            unsigned flags, const char *refusal_fields_json, struct fs_chased *ret,
                            json_t **ret_refusal);

/*
 * The policy's second pass alone, on @real (a real path the caller reached with fs_chase()
 * and will act on through its descriptors): 0 (go on), 1 with *ret_refusal as tool_chase()
 * says, or -ENOMEM. Without ctx->config, 0.
 */
_must_check_ int tool_judge_real(const struct tool_ctx *ctx, const char *tool, const char *real,
                                 const char *refusal_fields_json, json_t **ret_refusal);
