/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Helpers shared by the builtin tools in this directory (tool-util.c): paths as a tool call
 * checks them, error results, JSON strings. Not part of the tools module's API (tool.h is);
 * nothing outside src/core/tools includes this header.
 *
 * Everything here may be called from any thread (the builtin tools run on worker threads).
 */

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <jansson.h>

#include "basic/macro.h"

struct tool_ctx;

/*
 * $HOME of ctx->env, else the password database's home of the user running ptc, into
 * *ret (caller frees). 0, -ENOENT (neither is known) or -ENOMEM.
 */
_must_check_ int tool_home_dir(const struct tool_ctx *ctx, char **ret);
/* The password database's home of the user running ptc. 0, -ENOENT or -ENOMEM. */
_must_check_ int tool_real_home_dir(char **ret);

/*
 * Expand a leading "~", "~/..." (ctx->env's $HOME) or "~user/..." (password database)
 * and nothing else into *ret (caller frees); relative paths stay relative, as the seed
 * shows them in messages, and a "~" whose home is unknown stays literal. 0 or -ENOMEM.
 */
_must_check_ int tool_expand_tilde(const struct tool_ctx *ctx, const char *path, char **ret);

/*
 * A path as the seed's file tools check it. Owns its strings; release with
 * tool_path_release() (or _cleanup_tool_path_).
 */
struct tool_path {
        char *shown;      /* "~" expanded, relative kept (the seed's messages and headers) */
        char *abs;        /* absolute, not normalised */
        char *resolved;   /* os.path.realpath(abs); NULL when it could not be resolved */
        char *normalized; /* os.path.normpath(shown) */
};

/* Fill @ret from @path (relative to ctx->cwd). 0 or -ENOMEM; on failure @ret holds what was made.
 */
_must_check_ int tool_path_init(const struct tool_ctx *ctx, const char *path,
                                struct tool_path *ret);
void tool_path_release(struct tool_path *p);
#define _cleanup_tool_path_ _cleanup_(tool_path_release)

/* The seed's _check_sensitive_path(): true when @p names a system path no tool may write. */
bool tool_path_is_sensitive(const struct tool_path *p);

/*
 * The first check of every tool that writes (write_file, patch, each path of a V4A patch,
 * Move targets included; tool-util.c): fill @ret from @path with tool_path_init(), then
 * refuse a system path as the seed's _check_sensitive_path() does. Returns 0 when the path
 * may be written (the write deny list is checked later, on @ret), 1 when it is refused (then
 * *ret_result is the seed's {"error": "Refusing to write to sensitive system path: <path>
 * ..."}, a new reference), or -ENOMEM. On failure @ret holds what was made.
 */
_must_check_ int tool_path_check(const struct tool_ctx *ctx, const char *path,
                                 struct tool_path *ret, json_t **ret_result);

/*
 * *ret = {"error": <formatted message>}. Returns 0, or -ENOMEM (then *ret is NULL), so a tool
 * can `return tool_error_result(ret, ...)`.
 */
_must_check_ int tool_error_result(json_t **ret, const char *fmt, ...) _printf_(2, 3);
/* The same with the seed's PatchResult shape: {"success": false, "error": <message>}. */
_must_check_ int tool_failure_result(json_t **ret, const char *fmt, ...) _printf_(2, 3);

/*
 * A JSON string of @n bytes of content (file text, command output, a diff): invalid UTF-8
 * replaced by U+FFFD, as the seed decodes output. NULL on ENOMEM.
 */
json_t *tool_json_string(const char *s, size_t n);

/*
 * A JSON string for a name, or a message that may hold names (the error texts): bytes that are
 * not UTF-8 are written in the escape form (utf8_escape_bytes(), docs/protocol.md), so a name
 * taken from a result can be passed back to a tool and names the same file. NULL on ENOMEM.
 */
json_t *tool_json_name(const char *s, size_t n);
static inline json_t *tool_json_str(const char *s)
{
        return tool_json_name(s, s ? strlen(s) : 0);
}

/* Python's type name for a JSON value ("str", "int", "dict", ...; NULL is "NoneType"). */
const char *tool_json_type_name(const json_t *v);

/* Set @key of @o to a new reference, returning -ENOMEM when @v is NULL or the set failed. */
_must_check_ int tool_json_set(json_t *o, const char *key, json_t *v);

/*
 * tool_json_set() for a member named by the file name @name, written as tool_json_name()
 * writes it (a key must be UTF-8 too). Takes @v even on failure. 0 or -ENOMEM.
 */
_must_check_ int tool_json_set_name(json_t *o, const char *name, json_t *v);
