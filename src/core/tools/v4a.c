/* SPDX-License-Identifier: MIT */
/*
 * V4A patch mode of the patch tool (docs/seed.md 2.4; the seed's
 * tools/patch_parser.py), with ptc's deliberate differences (docs/contracts.md
 * 9.12):
 *
 * - markers are whole lines, so content lines that mention the format
 *   ("+*** End Patch") cannot end or restart the patch;
 * - "*** Move to:" after an Update header renames while updating, and
 *   "*** End of File" is skipped instead of poisoning the hunk;
 * - a blank line inside a hunk is an empty context line (the seed dropped
 *   it, so the search block lost the line and often matched nothing);
 * - validation computes the complete result in memory first, on an overlay
 *   of the files the patch touches, so a failing patch leaves every file as
 *   it was, and the apply phase only writes what validation produced;
 * - Add refuses an existing file, and the write deny list is checked for
 *   every path, Move destinations included;
 * - a patch that changes nothing is an error.
 *
 * The parts: v4a-parse.c (the text), v4a-hunk.c (one hunk on a file's content),
 * v4a-validate.c (the in-memory overlay, the plans and the diff); this file applies what
 * validation planned and builds the result (v4a-internal.h).
 */

#include "core/tools/v4a-apply.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/fd-util.h"
#include "basic/macro.h"
#include "basic/path-util.h"
#include "core/edit/v4a.h"
#include "core/fs/file-safety.h"
#include "core/fs/fs-chase.h"
#include "core/tools/lint.h"
#include "core/tools/tool-chase.h"
#include "core/tools/tool-util.h"
#include "core/tools/tool.h"
#include "core/tools/v4a-internal.h"
#include "core/tools/write-file.h"

#define VALIDATION_HEADER "Patch validation failed (no files were modified):\n"
#define APPLY_HEADER "Apply phase failed (state may be inconsistent — run `git diff` to assess):\n"

/* --- apply: only what validation computed, in patch order --- */

static int fail(char **ret_err, const char *fmt, ...) _printf_(2, 3);

/*
 * The object a write to @abs goes to, through symlinks as write_file: resolved with
 * fs_chase() and its real path judged by the policy again (the file system may have changed
 * since v4a_run() judged it), into @c, whose descriptors the write then uses, so the file
 * written is the one judged (tool-chase.h). 0; 1 with *ret_err (refused, or unresolvable);
 * -ENOMEM.
 */
static int write_target(struct run *run, const char *abs, struct fs_chased *c, char **ret_err)
{
        json_t *refused = NULL;
        int r;

        r = tool_chase(run->ctx, "patch", abs, TOOL_CHASE_MISSING_OK, NULL, c, &refused);
        if (r > 0) {
                r = fail(ret_err, "%s", json_string_value(json_object_get(refused, "error")));
                json_decref(refused);
                return r < 0 ? r : 1;
        }
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                r = fail(ret_err, "%s", fs_chase_strerror(r));
                return r < 0 ? r : 1;
        }
        return 0;
}

static int fail(char **ret_err, const char *fmt, ...) _printf_(2, 3);
static int fail(char **ret_err, const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(ret_err, fmt, ap);
        va_end(ap);
        if (r < 0) {
                *ret_err = NULL;
                return -ENOMEM;
        }
        return 0;
}

/*
 * The directory entry @abs names, not followed (Delete and Move act on a symlink itself):
 * its directory resolved with fs_chase() into @dir, the entry's real path (that directory's
 * plus its name) judged by the policy, and its name in *ret_name (borrowed from @abs). The
 * caller then acts with unlinkat()/renameat2() in dir->fd: the entry judged is the one
 * touched. 0; 1 with *ret_err; -ENOMEM.
 */
static int entry_target(struct run *run, const char *abs, struct fs_chased *dir,
                        const char **ret_name, char **ret_err)
{
        _cleanup_free_ char *parent = NULL, *real = NULL;
        const char *slash = strrchr(abs, '/'), *name;
        json_t *refused = NULL;
        int r;

        name = slash ? slash + 1 : abs;
        if (!slash || !*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
                r = fail(ret_err, "%s", strerror(EISDIR));
                return r < 0 ? r : 1;
        }
        parent = strndup(abs, slash == abs ? 1 : (size_t) (slash - abs));
        if (!parent)
                return -ENOMEM;
        r = fs_chase(parent, 0, dir);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                r = fail(ret_err, "%s", r == -ENOENT ? "file not found" : fs_chase_strerror(r));
                return r < 0 ? r : 1;
        }
        if (asprintf(&real, "%s%s%s", dir->path, strcmp(dir->path, "/") == 0 ? "" : "/", name) <
            0) {
                real = NULL;
                return -ENOMEM;
        }
        r = tool_judge_real(run->ctx, "patch", real, NULL, &refused);
        if (r > 0) {
                r = fail(ret_err, "%s", json_string_value(json_object_get(refused, "error")));
                json_decref(refused);
                return r < 0 ? r : 1;
        }
        if (r < 0)
                return r;
        *ret_name = name;
        return 0;
}

static bool same_file_state(const struct stat *a, const struct stat *b)
{
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
               a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/*
 * rename(2) of the entry @from in @from_dir to @to in @to_dir that never replaces an existing
 * @to; EXDEV copies (mode kept) and unlinks. Names are never followed.
 */
static int move_file(int from_dir, const char *from, int to_dir, const char *to)
{
        _cleanup_free_ char *data = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        size_t len = 0;
        int r;

        if (renameat2(from_dir, from, to_dir, to, RENAME_NOREPLACE) == 0)
                return 0;
        r = -errno;
        if (r == -EINVAL || r == -ENOSYS) {
                /* FIXME: drop once every file system we run on has RENAME_NOREPLACE. */
                if (fstatat(to_dir, to, &st, AT_SYMLINK_NOFOLLOW) == 0)
                        return -EEXIST;
                return renameat(from_dir, from, to_dir, to) < 0 ? -errno : 0;
        }
        if (r != -EXDEV)
                return r;
        fd = openat(from_dir, from, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
        if (fd < 0 || fstat(fd, &st) < 0)
                return -errno;
        r = read_fd_all(fd, V4A_FILE_MAX, &data, &len);
        if (r < 0)
                return r;
        if (fstatat(to_dir, to, &(struct stat){}, AT_SYMLINK_NOFOLLOW) == 0)
                return -EEXIST;
        r = write_file_atomic_at(to_dir, to, data, len, (int) (st.st_mode & 07777));
        if (r < 0)
                return r;
        return unlinkat(from_dir, from, 0) < 0 ? -errno : 0;
}

/* Do operation @idx. 0 (done), or 0 with *ret_err set (a failure to report), or -ENOMEM. */
static int apply_op(struct run *run, size_t idx, char **ret_err)
{
        const struct v4a_op *op = &run->patch->ops[idx];
        const struct plan *p = &run->plans[idx];
        _cleanup_fs_chased_ struct fs_chased target = FS_CHASED_INIT, source = FS_CHASED_INIT;
        const char *name = NULL;
        struct stat st;
        int r;

        *ret_err = NULL;
        switch (op->type) {
        case V4A_OP_ADD:
                r = write_target(run, p->abs, &target, ret_err);
                if (r != 0)
                        return r < 0 ? r : 0;
                if (target.exists)
                        return fail(ret_err, "file already exists — use Update File, not Add File");
                r = fs_chased_mkdirs(&target, 0777);
                if (r >= 0)
                        r = tool_file_replace_at(target.dir_fd, target.name, p->content, p->len,
                                                 false);
                if (r == -ENOMEM)
                        return r;
                return r < 0 ? fail(ret_err, "%s", strerror(-r)) : 0;

        case V4A_OP_UPDATE:
                if (!p->write)
                        return 0;
                if (stat(p->abs, &st) < 0)
                        return fail(ret_err, "Cannot read file: %s", strerror(errno));
                if (p->check && !same_file_state(&st, &p->st))
                        return fail(ret_err, "the file changed on disk after the patch was "
                                             "validated");
                if (!p->moves) {
                        r = write_target(run, p->abs, &target, ret_err);
                        if (r != 0)
                                return r < 0 ? r : 0;
                        if (!target.exists)
                                return fail(ret_err, "Cannot read file: %s", strerror(ENOENT));
                        r = tool_file_replace_at(target.dir_fd, target.name, p->content, p->len,
                                                 true);
                        if (r == -ENOMEM)
                                return r;
                        return r < 0 ? fail(ret_err, "%s", strerror(-r)) : 0;
                }
                if (lstat(p->abs_new, &st) == 0)
                        return fail(ret_err,
                                    "%s: destination already exists — move would "
                                    "overwrite",
                                    op->new_path);
                if (stat(p->abs, &st) < 0)
                        return fail(ret_err, "Cannot read file: %s", strerror(errno));
                r = write_target(run, p->abs_new, &target, ret_err);
                if (r != 0)
                        return r < 0 ? r : 0;
                if (target.exists)
                        return fail(ret_err,
                                    "%s: destination already exists — move would "
                                    "overwrite",
                                    op->new_path);
                r = fs_chased_mkdirs(&target, 0777);
                if (r >= 0)
                        r = write_file_atomic_at(target.dir_fd, target.name, p->content, p->len,
                                                 (int) (st.st_mode & 07777));
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return fail(ret_err, "%s: %s", op->new_path, strerror(-r));
                r = entry_target(run, p->abs, &source, &name, ret_err);
                if (r != 0)
                        return r < 0 ? r : 0;
                if (unlinkat(source.fd, name, 0) < 0)
                        return fail(ret_err, "wrote %s but could not remove the old file: %s",
                                    op->new_path, strerror(errno));
                return 0;

        case V4A_OP_DELETE:
                r = entry_target(run, p->abs, &source, &name, ret_err);
                if (r != 0)
                        return r < 0 ? r : 0;
                if (unlinkat(source.fd, name, 0) < 0)
                        return fail(ret_err, "%s",
                                    errno == ENOENT ? "file not found" : strerror(errno));
                return 0;

        case V4A_OP_MOVE:
                r = entry_target(run, p->abs, &source, &name, ret_err);
                if (r != 0)
                        return r < 0 ? r : 0;
                r = write_target(run, p->abs_new, &target, ret_err);
                if (r != 0)
                        return r < 0 ? r : 0;
                if (target.exists ||
                    fstatat(target.dir_fd, target.name, &st, AT_SYMLINK_NOFOLLOW) == 0)
                        r = -EEXIST;
                else
                        r = fs_chased_mkdirs(&target, 0777);
                if (r >= 0)
                        r = move_file(source.fd, name, target.dir_fd, target.name);
                if (r == -ENOMEM)
                        return r;
                if (r == -EEXIST)
                        return fail(ret_err,
                                    "%s: destination already exists — move would "
                                    "overwrite",
                                    op->new_path);
                return r < 0 ? fail(ret_err, "%s", strerror(-r)) : 0;
        }
        return 0;
}

static const char *const op_verbs[] = {
        [V4A_OP_ADD] = "add",
        [V4A_OP_UPDATE] = "update",
        [V4A_OP_DELETE] = "delete",
        [V4A_OP_MOVE] = "move",
};

/* --- the result --- */

static int append_str(json_t *a, const char *fmt, ...) _printf_(2, 3);
static int append_str(json_t *a, const char *fmt, ...)
{
        _cleanup_free_ char *s = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        return json_array_append_new(a, tool_json_str(s)) < 0 ? -ENOMEM : 0;
}

/*
 * The seed's PatchResult.to_dict() for the first @applied operations: "success", then
 * "diff", "files_modified", "files_created", "files_deleted", "lint" when not empty, then
 * "error" when @error is set.
 */
static int build_result(struct run *run, size_t applied, const char *error, json_t **ret)
{
        const struct v4a_patch *patch = run->patch;
        json_auto_t *o = json_object(), *mod = json_array(), *cre = json_array(),
                    *del = json_array(), *lint = json_object();
        size_t dl = applied > 0 ? run->plans[applied - 1].diff_end : 0;
        bool cut = run->diff_cut_at < applied;
        int r = 0;

        if (!o || !mod || !cre || !del || !lint)
                return -ENOMEM;
        for (size_t i = 0; r >= 0 && i < applied; i++) {
                const struct v4a_op *op = &patch->ops[i];
                const struct plan *p = &run->plans[i];
                const char *shown = p->moves ? op->new_path : op->path;

                switch (op->type) {
                case V4A_OP_ADD:
                        r = append_str(cre, "%s", op->path);
                        break;
                case V4A_OP_DELETE:
                        r = append_str(del, "%s", op->path);
                        break;
                case V4A_OP_MOVE:
                        r = append_str(mod, "%s -> %s", op->path, op->new_path);
                        break;
                case V4A_OP_UPDATE:
                        if (p->moves)
                                r = append_str(mod, "%s -> %s", op->path, op->new_path);
                        else
                                r = append_str(mod, "%s", op->path);
                        break;
                }
                if (r >= 0 && (op->type == V4A_OP_ADD || op->type == V4A_OP_UPDATE)) {
                        json_t *lj = NULL;

                        r = lint_delta_json(run->ctx, shown, p->content, p->len, p->pre, p->pre_len,
                                            &lj);
                        if (r >= 0)
                                r = tool_json_set_name(lint, shown, lj);
                }
        }
        if (r < 0)
                return -ENOMEM;

        if (tool_json_set(o, "success", json_boolean(!error)) < 0)
                return -ENOMEM;
        if (dl > 0 || cut) {
                _cleanup_buf_ struct buf d = BUF_INIT((size_t) V4A_DIFF_MAX + 128);

                r = buf_append(&d, buf_str(&run->diff), dl);
                if (r >= 0 && cut &&
                    (d.len < strlen(DIFF_CUT_NOTE) ||
                     memcmp(d.data + d.len - strlen(DIFF_CUT_NOTE), DIFF_CUT_NOTE,
                            strlen(DIFF_CUT_NOTE)) != 0))
                        r = buf_append_str(&d, "\n" DIFF_CUT_NOTE);
                if (r < 0 || tool_json_set(o, "diff", tool_json_string(buf_str(&d), d.len)) < 0)
                        return -ENOMEM;
        }
        if ((json_array_size(mod) > 0 && json_object_set(o, "files_modified", mod) < 0) ||
            (json_array_size(cre) > 0 && json_object_set(o, "files_created", cre) < 0) ||
            (json_array_size(del) > 0 && json_object_set(o, "files_deleted", del) < 0) ||
            (json_object_size(lint) > 0 && json_object_set(o, "lint", lint) < 0))
                return -ENOMEM;
        if (error && tool_json_set(o, "error", tool_json_str(error)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

/* The seed's refusal of system paths, for every path of the patch (Move targets too). */
static int check_sensitive(const struct tool_ctx *ctx, const struct v4a_patch *patch,
                           json_t **ret_result)
{
        for (size_t i = 0; i < patch->n_ops; i++)
                for (size_t k = 0; k < 2; k++) {
                        const char *path = k == 0 ? patch->ops[i].path : patch->ops[i].new_path;
                        _cleanup_tool_path_ struct tool_path tp = {};
                        int r;

                        if (!path)
                                continue;
                        r = tool_path_check(ctx, path, &tp, ret_result);
                        if (r != 0)
                                return r;
                }
        return 0;
}

static void run_releasep(struct run *run)
{
        v4a_run_release(run);
}

int v4a_apply(const struct tool_ctx *ctx, const char *patch_text, size_t n, json_t **ret_result)
{
        _cleanup_v4a_patch_ struct v4a_patch *patch = NULL;
        _cleanup_free_ char *parse_err = NULL;
        _cleanup_buf_ struct buf msg = BUF_INIT(V4A_ERROR_MAX + 1024);
        _cleanup_(run_releasep) struct run run = {
                .ctx = ctx,
                .errors = BUF_INIT(V4A_ERROR_MAX + 1024),
                .diff = BUF_INIT(V4A_DIFF_MAX + 256),
                .diff_cut_at = SIZE_MAX,
        };
        size_t applied = 0;
        int r;

        r = v4a_parse(patch_text, n, &patch, &parse_err);
        if (r == -E2BIG)
                return tool_failure_result(ret_result,
                                           "Failed to parse patch: the patch is larger than %u MiB",
                                           V4A_PATCH_MAX / (1024 * 1024));
        if (r < 0)
                return r;
        if (parse_err)
                return tool_failure_result(ret_result, "Failed to parse patch: %s", parse_err);

        r = check_sensitive(ctx, patch, ret_result);
        if (r != 0)
                return r < 0 ? r : 0;

        run.patch = patch;
        run.plans = calloc(MAX(patch->n_ops, (size_t) 1), sizeof(*run.plans));
        if (!run.plans)
                return -ENOMEM;

        r = v4a_validate(&run);
        if (r == -ETIMEDOUT)
                r = v4a_add_error(&run, "Patch validation did not finish before the execution's "
                                        "deadline");
        if (r < 0)
                return r;
        if (run.n_errors > 0) {
                r = buf_append_str(&msg, VALIDATION_HEADER);
                if (r >= 0)
                        r = buf_append(&msg, buf_str(&run.errors), run.errors.len);
                if (r >= 0 && run.n_dropped > 0)
                        r = buf_printf(&msg, "\n  • ... and %zu more errors", run.n_dropped);
                if (r == -ENOMEM)
                        return r;
                return tool_failure_result(ret_result, "%s", buf_str(&msg));
        }

        for (; applied < patch->n_ops; applied++) {
                _cleanup_free_ char *err = NULL;

                r = apply_op(&run, applied, &err);
                if (r < 0)
                        return r;
                if (!err)
                        continue;
                r = buf_printf(&msg, APPLY_HEADER "  • Failed to %s %s: %s",
                               op_verbs[patch->ops[applied].type], patch->ops[applied].path, err);
                if (r >= 0 && applied + 1 < patch->n_ops)
                        r = buf_printf(&msg, "\n  • %zu later operation(s) were not applied",
                                       patch->n_ops - applied - 1);
                if (r == -E2BIG)
                        r = 0; /* the start of the message is what matters */
                if (r < 0)
                        return r;
                break;
        }
        return build_result(&run, applied, msg.len > 0 ? buf_str(&msg) : NULL, ret_result);
}
