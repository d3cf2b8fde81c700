/* SPDX-License-Identifier: MIT */
/*
 * patch (docs/seed.md 2.4): the seed's file_tools.patch_tool() and
 * file_operations.patch_replace(). Replace mode is here; V4A mode is
 * v4a_apply() (v4a.c).
 *
 * Order as the seed: the sensitive-path refusal for @path comes before any
 * argument check; then the mode. Replace mode: write-deny check, read the
 * whole file, fuzzy find-and-replace (fuzzy-match.c), write (write_file's
 * atomic write, mode kept, through symlinks), re-read and compare, diff and
 * lint against the pre-edit content.
 *
 * Deliberate differences: the write is atomic (docs/contracts.md 9.11);
 * a CRLF file keeps CRLF line ends in the replaced text (FUZZY_KEEP_CRLF);
 * files over PATCH_FILE_MAX are refused instead of read; the diff's last line
 * without a newline gets "\ No newline at end of file". Concurrent patches of
 * one file are serialised by a per-path lock held from the read to the
 * verification, so none of them can lose another's edit.
 */

#include "core/tools/tool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "basic/fd-util.h"
#include "basic/macro.h"
#include "basic/utf8.h"
#include "core/edit/fuzzy-match.h"
#include "core/edit/v4a.h"
#include "core/fs/file-safety.h"
#include "core/tools/lint.h"
#include "core/tools/tool-chase.h"
#include "core/tools/tool-util.h"
#include "core/tools/v4a-apply.h"
#include "core/tools/write-file.h"

/* Largest file replace mode reads: the RPC answer (16 MiB) could not carry a larger diff. */
#define PATCH_FILE_MAX (16u * 1024 * 1024)
/* The diff in the answer; past it the diff is cut with a note. */
#define PATCH_DIFF_MAX (4u * 1024 * 1024)

#define DID_YOU_MEAN_HEAD "\n\nDid you mean one of these sections?\n"
#define NOT_FOUND_HINT                                                                        \
        "old_string not found. Use read_file to verify the current content, or search_files " \
        "to locate the text."

/* Python's len() of @s with line ends normalised (\r\n and \r as \n); invalid bytes count 1. */
static size_t normalized_chars(const char *s, size_t n)
{
        size_t c = 0;

        for (size_t i = 0; i < n; i++) {
                if (s[i] == '\r' && i + 1 < n && s[i + 1] == '\n')
                        continue;
                if (((unsigned char) s[i] & 0xc0) != 0x80)
                        c++;
        }
        return c;
}

/* Equal after normalising line ends? */
static bool same_normalized(const char *a, size_t an, const char *b, size_t bn)
{
        size_t i = 0, j = 0;

        for (;;) {
                char x, y;

                if (i >= an || j >= bn)
                        return i >= an && j >= bn;
                x = a[i++];
                y = b[j++];
                if (x == '\r') {
                        x = '\n';
                        if (i < an && a[i] == '\n')
                                i++;
                }
                if (y == '\r') {
                        y = '\n';
                        if (j < bn && b[j] == '\n')
                                j++;
                }
                if (x != y)
                        return false;
        }
}

/* The regular file @name in @dirfd, never through a symlink. */
static int read_name_at(int dirfd, const char *name, size_t max, char **ret, size_t *ret_len)
{
        _cleanup_close_ int fd =
                openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);

        if (fd < 0)
                return -errno;
        return read_fd_all(fd, max, ret, ret_len);
}

static int replace_run(const struct tool_ctx *ctx, const struct tool_path *t, const char *old,
                       size_t old_n, const char *new_text, size_t new_n, bool replace_all,
                       json_t **ret)
{
        _cleanup_tool_path_lock_ struct tool_path_lock *lock = NULL;
        _cleanup_free_ char *content = NULL, *result = NULL, *error = NULL, *back = NULL;
        _cleanup_free_ char *diff = NULL, *from = NULL, *to = NULL;
        _cleanup_fs_chased_ struct fs_chased target = FS_CHASED_INIT;
        json_auto_t *res = NULL, *refused = NULL;
        json_t *lint = NULL, *files;
        const char *strategy = NULL, *keys[1];
        size_t n = 0, result_n = 0, back_n = 0, count = 0;
        int r;

        r = file_safety_write_denied(ctx->cwd, ctx->env, t->abs);
        if (r < 0)
                return r;
        if (r > 0)
                return tool_failure_result(
                        ret, "Write denied: '%s' is a protected system/credential file.", t->shown);

        /*
         * The file as the kernel resolves it, judged on its real path (policy, write guards),
         * then read through that descriptor and replaced within its directory's descriptor:
         * a symlink swapped after the check changes nothing (tool-chase.h).
         */
        r = tool_chase(ctx, "patch", t->abs, TOOL_CHASE_WRITE, "{\"success\": false}", &target,
                       &refused);
        if (r > 0) {
                *ret = TAKE_PTR(refused);
                return 0;
        }
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return tool_failure_result(ret, "Failed to read file: %s", t->shown);
        keys[0] = target.path;

        /* From the read to the verification: another patch of this file waits. */
        r = tool_path_lock(keys, 1, ctx->deadline, &lock);
        if (r == -ETIMEDOUT)
                return tool_failure_result(
                        ret,
                        "Failed to read file: %s (timed out waiting for another edit of "
                        "this file)",
                        t->shown);
        if (r < 0)
                return r;

        /* By its name in the directory held, now that the lock is: another patch may have
         * replaced the inode the walk reached. O_NOFOLLOW: never a link put there since. */
        r = read_name_at(target.dir_fd, target.name, PATCH_FILE_MAX, &content, &n);
        if (r == -ENOMEM)
                return r;
        if (r == -E2BIG)
                return tool_failure_result(
                        ret, "Failed to read file: %s (larger than %u MiB, the patch limit)",
                        t->shown, PATCH_FILE_MAX / (1024 * 1024));
        if (r < 0)
                return tool_failure_result(ret, "Failed to read file: %s", t->shown);

        r = fuzzy_replace_flags(content, n, old, old_n, new_text, new_n, replace_all,
                                FUZZY_KEEP_CRLF, &result, &result_n, &count, &strategy, &error);
        if (r == -E2BIG)
                return tool_failure_result(
                        ret,
                        "old_string could not be matched within the fuzzy matcher's "
                        "limits (a file of more than %u lines, more than %u matches, an "
                        "old_string over %u MiB, a result over %u MiB, or similarity "
                        "matching too costly). Use a shorter old_string copied exactly "
                        "from the file.",
                        FUZZY_LINES_MAX, FUZZY_SPANS_MAX, FUZZY_PATTERN_MAX / (1024 * 1024),
                        FUZZY_OUTPUT_MAX / (1024 * 1024));
        if (r < 0)
                return r;
        if (error) {
                _cleanup_free_ char *hint = NULL, *msg = NULL;

                /* format_no_match_hint(): only for the plain "not found". */
                if (strncmp(error, "Could not find", 14) == 0) {
                        hint = fuzzy_did_you_mean(content, n, old, old_n);
                        if (!hint)
                                return -ENOMEM;
                        if (*hint && asprintf(&msg, "%s" DID_YOU_MEAN_HEAD "%s", error, hint) < 0)
                                return -ENOMEM;
                }
                return tool_failure_result(ret, "%s", msg ?: error);
        }

        r = tool_file_replace_at(target.dir_fd, target.name, result, result_n, true);
        if (r < 0)
                return tool_failure_result(ret,
                                           "Failed to write changes: Failed to write file: %s: %s",
                                           t->shown, strerror(-r));

        /* The seed's post-write verification: re-read, compare with line ends normalised. */
        r = read_name_at(target.dir_fd, target.name, MAX(result_n, (size_t) 1) * 2 + 4096, &back,
                         &back_n);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return tool_failure_result(
                        ret, "Post-write verification failed: could not re-read %s", t->shown);
        if (!same_normalized(result, result_n, back, back_n))
                return tool_failure_result(
                        ret,
                        "Post-write verification failed for %s: on-disk content differs "
                        "from intended write (wrote %zu chars, read back %zu chars after "
                        "normalizing line endings). The patch did not persist. Re-read "
                        "the file and try again.",
                        t->shown, normalized_chars(result, result_n),
                        normalized_chars(back, back_n));
        lock = tool_path_unlock(lock);

        if (asprintf(&from, "a/%s", t->shown) < 0) {
                from = NULL;
                return -ENOMEM;
        }
        if (asprintf(&to, "b/%s", t->shown) < 0) {
                to = NULL;
                return -ENOMEM;
        }
        r = fuzzy_unified_diff(content, n, result, result_n, from, to, PATCH_DIFF_MAX, &diff, NULL);
        if (r < 0)
                return r;
        r = lint_delta_json(ctx, t->shown, result, result_n, content, n, &lint);
        if (r < 0)
                return r;

        /* PatchResult.to_dict(): empty members are left out. */
        res = json_object();
        files = json_array();
        if (!res || !files || json_array_append_new(files, tool_json_str(t->shown)) < 0 ||
            tool_json_set(res, "success", json_true()) < 0 ||
            (*diff && tool_json_set(res, "diff", tool_json_string(diff, strlen(diff))) < 0)) {
                json_decref(files);
                json_decref(lint);
                return -ENOMEM;
        }
        if (tool_json_set(res, "files_modified", files) < 0) {
                json_decref(lint);
                return -ENOMEM;
        }
        if (tool_json_set(res, "lint", lint) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(res);
        return 0;
}

/*
 * V4A mode: lock every file the patch names (sorted order is moot: all are taken at once), so
 * that a replace-mode patch of one of them waits. Paths that do not parse are left to
 * v4a_apply(), which reports the parse error.
 */
static int v4a_run(const struct tool_ctx *ctx, const char *text, size_t n, json_t **ret)
{
        _cleanup_tool_path_lock_ struct tool_path_lock *lock = NULL;
        _cleanup_v4a_patch_ struct v4a_patch *p = NULL;
        _cleanup_free_ char *perr = NULL;
        char **keys = NULL;
        size_t nk = 0;
        int r;

        r = v4a_parse(text, n, &p, &perr);
        if (r == -ENOMEM)
                return r;
        if (r >= 0 && p && p->n_ops > 0) {
                keys = calloc(2 * p->n_ops, sizeof(char *));
                if (!keys)
                        return -ENOMEM;
                for (size_t i = 0; r >= 0 && i < p->n_ops && nk < TOOL_PATH_LOCK_PATHS_MAX; i++) {
                        const char *names[2] = {p->ops[i].path, p->ops[i].new_path};

                        for (size_t k = 0; k < 2 && r >= 0; k++) {
                                _cleanup_free_ char *abs = NULL;
                                char *key = NULL;

                                if (!names[k] || !*names[k] || nk >= TOOL_PATH_LOCK_PATHS_MAX)
                                        continue;
                                abs = tool_resolve_path(ctx, names[k]);
                                if (!abs) {
                                        r = -ENOMEM;
                                        break;
                                }
                                /*
                                 * Each file is judged on its real path by the policy before
                                 * any is touched (the write guards are v4a-validate.c's,
                                 * which reports them all at once). V4A's own work then goes by
                                 * these names: unlike replace mode it does not yet hold the
                                 * descriptors (docs/security.md says so).
                                 */
                                {
                                        _cleanup_fs_chased_ struct fs_chased c = FS_CHASED_INIT;
                                        json_t *refused = NULL;

                                        r = tool_chase(ctx, "patch", abs, TOOL_CHASE_MISSING_OK,
                                                       "{\"success\": false}", &c, &refused);
                                        if (r > 0) {
                                                for (size_t i2 = 0; i2 < nk; i2++)
                                                        free(keys[i2]);
                                                free(keys);
                                                *ret = refused;
                                                return 0;
                                        }
                                        if (r == -ENOMEM)
                                                break;
                                        key = r == 0 ? TAKE_PTR(c.path) : TAKE_PTR(abs);
                                        r = 0;
                                }
                                keys[nk++] = key;
                        }
                }
                if (r >= 0)
                        r = tool_path_lock((const char *const *) keys, nk, ctx->deadline, &lock);
                for (size_t i = 0; i < nk; i++)
                        free(keys[i]);
                free(keys);
                if (r == -ETIMEDOUT)
                        return tool_failure_result(
                                ret, "Patch not applied: timed out waiting for another "
                                     "edit of the same files");
                if (r < 0)
                        return r;
        }
        return v4a_apply(ctx, text, n, ret);
}

/* The mode for "Unknown mode: <m>": a string as is, anything else as JSON. */
static char *mode_text(json_t *v)
{
        if (json_is_string(v))
                return strdup(json_string_value(v));
        return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
}

static int patch_run(const struct tool *tool, const struct tool_ctx *ctx, json_t *args,
                     json_t **ret_result)
{
        _cleanup_tool_path_ struct tool_path t = {};
        _cleanup_free_ char *path_bytes = NULL;
        json_auto_t *res = NULL;
        json_t *mv, *ov, *nv, *pv, *err;
        const char *path = NULL, *errmsg = NULL;
        bool replace_all = false;
        int r;

        if (!json_is_object(args))
                return tool_error_result(ret_result, "path required");
        r = tool_arg_string(args, "path", &path, &errmsg);
        if (r < 0)
                return tool_error_result(ret_result, "path: %s", errmsg);
        if (path && strlen(path) != json_string_length(json_object_get(args, "path")))
                return tool_error_result(ret_result, "path: contains a NUL byte");
        /* The file name's bytes: escapes of bytes that are not UTF-8 (docs/protocol.md) undone. */
        if (path) {
                r = utf8_unescape_bytes(path, strlen(path), &path_bytes, NULL);
                if (r < 0)
                        return r;
                path = path_bytes;
        }

        /* _check_sensitive_path() first, whatever the mode. */
        if (path && *path) {
                r = tool_path_check(ctx, path, &t, ret_result);
                if (r != 0)
                        return r < 0 ? r : 0;
        }

        mv = json_object_get(args, "mode");
        if (!mv || json_is_null(mv) ||
            (json_is_string(mv) && strcmp(json_string_value(mv), "replace") == 0)) {
                ov = json_object_get(args, "old_string");
                nv = json_object_get(args, "new_string");
                if (!path || !*path)
                        return tool_error_result(ret_result, "path required");
                if (!ov || json_is_null(ov) || !nv || json_is_null(nv))
                        return tool_error_result(ret_result, "old_string and new_string required");
                if (!json_is_string(ov) || !json_is_string(nv))
                        return tool_error_result(ret_result,
                                                 "old_string and new_string must be strings");
                r = tool_arg_bool(args, "replace_all", false, &replace_all, &errmsg);
                if (r < 0)
                        return tool_error_result(ret_result, "replace_all: %s", errmsg);
                r = replace_run(ctx, &t, json_string_value(ov), json_string_length(ov),
                                json_string_value(nv), json_string_length(nv), replace_all, &res);
        } else if (json_is_string(mv) && strcmp(json_string_value(mv), "patch") == 0) {
                pv = json_object_get(args, "patch");
                if (!pv || !json_is_string(pv) || json_string_length(pv) == 0)
                        return tool_error_result(ret_result, "patch content required");
                r = v4a_run(ctx, json_string_value(pv), json_string_length(pv), &res);
        } else {
                _cleanup_free_ char *m = mode_text(mv);

                if (!m)
                        return -ENOMEM;
                return tool_error_result(ret_result, "Unknown mode: %s", m);
        }
        if (r < 0)
                return r;

        /* The seed's nudge for a plain miss that came without "did you mean" snippets. */
        err = json_object_get(res, "error");
        if (json_is_string(err) && strstr(json_string_value(err), "Could not find") &&
            !strstr(json_string_value(err), "Did you mean one of these sections?") &&
            tool_json_set(res, "_hint", json_string(NOT_FOUND_HINT)) < 0)
                return -ENOMEM;
        *ret_result = TAKE_PTR(res);
        return 0;
}

const struct tool_def tool_def_patch = {
        .name = "patch",
        .description = "Targeted find-and-replace (mode=\"replace\") or V4A multi-file patches "
                       "(mode=\"patch\"). Returns dict with status.",
        .parameters_json =
                "{\"type\": \"object\", \"properties\": {"
                "\"path\": {\"type\": \"string\", \"description\": "
                "\"File path to edit (required for 'replace' mode)\"}, "
                "\"old_string\": {\"type\": \"string\", \"description\": "
                "\"Text to find in the file (required for 'replace' mode). Must be unique in the "
                "file unless replace_all=true. Include enough surrounding context to ensure "
                "uniqueness.\"}, "
                "\"new_string\": {\"type\": \"string\", \"description\": "
                "\"Replacement text (required for 'replace' mode). Can be empty string to delete "
                "the matched text.\"}, "
                "\"replace_all\": {\"type\": \"boolean\", \"description\": "
                "\"Replace all occurrences instead of requiring a unique match\", "
                "\"default\": false}, "
                "\"mode\": {\"type\": \"string\", \"enum\": [\"replace\", \"patch\"], "
                "\"description\": \"Edit mode: 'replace' for targeted find-and-replace, 'patch' "
                "for V4A multi-file patches\", \"default\": \"replace\"}, "
                "\"patch\": {\"type\": \"string\", \"description\": "
                "\"V4A format patch content (required for 'patch' mode). Format:\\n*** Begin "
                "Patch\\n*** Update File: path/to/file\\n@@ context hint @@\\n context line\\n"
                "-removed line\\n+added line\\n*** End Patch\"}}, "
                "\"required\": []}",
        .returns = "Replaces old_string with new_string in the file.",
        .run = patch_run,
};
