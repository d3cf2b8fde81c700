/* SPDX-License-Identifier: MIT */
/*
 * Validation of a V4A patch: every operation is simulated, in patch order, on an in-memory
 * overlay of the files the patch touches (one entry per path, read from disk on first use), so
 * a Move followed by an Update of the new path validates and a failing patch leaves every file
 * as it was. Each operation gets a plan (what the apply phase in v4a.c writes) and its part of
 * the combined diff; every problem found becomes a bullet of the error text.
 */

#include "core/tools/v4a-internal.h"

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
#include "basic/time-util.h"
#include "core/edit/fuzzy-match.h"
#include "core/edit/v4a.h"
#include "core/fs/file-safety.h"
#include "core/fs/fs-chase.h"
#include "core/tools/lint.h"
#include "core/tools/tool-chase.h"
#include "core/tools/tool-util.h"
#include "core/tools/tool.h"

/* Everything validation holds in memory at once (file contents, new contents, baselines). */
#define V4A_MEMORY_MAX (512u * 1024 * 1024)

/* --- validation: every operation simulated on an in-memory overlay of the files --- */

/* One path the patch touches, as it stands after the operations simulated so far. */
struct entry {
        char *key; /* lexically normalised absolute path */
        bool exists;
        bool is_reg;
        int stat_errno;   /* stat() failed for another reason than absence; 0 */
        int absent_errno; /* ENOENT or ENOTDIR (a parent is not a directory) when absent on disk */
        bool from_disk;   /* no operation changed it yet */
        struct stat st;   /* from_disk && exists */
        bool loaded;
        const char *cur; /* the content when loaded: own, or a plan's content */
        size_t cur_len;
        char *own;  /* content read from disk */
        char *disk; /* where the content is on disk while not loaded */
};

static void entry_free(struct entry *e)
{
        if (!e)
                return;
        free(e->key);
        free(e->own);
        free(e->disk);
        free(e);
}

void v4a_run_release(struct run *run)
{
        for (size_t i = 0; i < run->n_entries; i++)
                entry_free(run->entries[i]);
        free(run->entries);
        if (run->plans)
                for (size_t i = 0; i < run->patch->n_ops; i++) {
                        struct plan *p = &run->plans[i];

                        free(p->abs);
                        free(p->abs_new);
                        free(p->content);
                        free(p->pre);
                }
        free(run->plans);
        buf_release(&run->errors);
        buf_release(&run->diff);
}

int v4a_add_error(struct run *run, const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL;
        size_t room;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        run->n_errors++;
        /* Past the cap only a count is kept; the first error is always there, cut if need be. */
        room = V4A_ERROR_MAX > run->errors.len ? V4A_ERROR_MAX - run->errors.len : 0;
        if (run->errors.len > 0 && (size_t) r + 8 > room) {
                run->n_dropped++;
                return 0;
        }
        r = buf_printf(&run->errors, "%s  • ", run->errors.len > 0 ? "\n" : "");
        if (r >= 0)
                r = buf_append(&run->errors, msg, MIN(strlen(msg), room));
        return r == -ENOMEM ? r : 0;
}

static int entry_get(struct run *run, const char *key, struct entry **ret)
{
        struct entry *e;
        int r;

        for (size_t i = 0; i < run->n_entries; i++)
                if (strcmp(run->entries[i]->key, key) == 0) {
                        *ret = run->entries[i];
                        return 0;
                }
        r = v4a_grow((void **) &run->entries, &run->entries_alloc, run->n_entries + 1,
                     sizeof(*run->entries));
        if (r < 0)
                return r;
        e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        e->key = strdup(key);
        e->disk = strdup(key);
        if (!e->key || !e->disk) {
                entry_free(e);
                return -ENOMEM;
        }
        e->from_disk = true;
        if (stat(key, &e->st) == 0) {
                e->exists = true;
                e->is_reg = S_ISREG(e->st.st_mode);
        } else if (errno == ENOENT || errno == ENOTDIR)
                e->absent_errno = errno;
        else
                e->stat_errno = errno;
        run->entries[run->n_entries++] = e;
        *ret = e;
        return 0;
}

/* The entry's content, read from disk on first use. 0 or -errno (-EFBIG: over the budget). */
static int entry_load(struct run *run, struct entry *e)
{
        size_t len = 0;
        int r;

        if (e->loaded)
                return 0;
        if (!e->disk)
                return -ENOENT;
        /* Read what the kernel resolves the name to, judged by the policy on its real path
         * (the file system may have changed since v4a_run() judged it): a file a rule
         * denies never becomes a patch's base, its lines never a diff (tool-chase.h). */
        {
                _cleanup_fs_chased_ struct fs_chased c = FS_CHASED_INIT;
                json_t *refused = NULL;

                r = tool_chase(run->ctx, "patch", e->disk, 0, NULL, &c, &refused);
                json_decref(refused);
                if (r > 0)
                        return -EACCES;
                if (r >= 0)
                        r = fs_chased_read(&c, V4A_FILE_MAX, &e->own, &len);
        }
        if (r < 0) {
                e->own = NULL;
                return r;
        }
        if (run->mem + len > V4A_MEMORY_MAX) {
                e->own = mfree_str(e->own);
                return -EFBIG;
        }
        run->mem += len;
        e->cur = e->own;
        e->cur_len = len;
        e->loaded = true;
        return 0;
}

/* Forget the entry's content (it was deleted, moved away or replaced). */
static void entry_drop_content(struct run *run, struct entry *e)
{
        if (e->own) {
                run->mem -= MIN(run->mem, e->cur == e->own ? e->cur_len : 0);
                e->own = mfree_str(e->own);
        }
        e->disk = mfree_str(e->disk);
        e->cur = NULL;
        e->cur_len = 0;
        e->loaded = false;
        e->from_disk = false;
}

static void entry_set_absent(struct run *run, struct entry *e)
{
        entry_drop_content(run, e);
        e->exists = false;
        e->is_reg = false;
        e->stat_errno = 0;
        e->absent_errno = ENOENT;
}

/* The entry now holds @s (borrowed from a plan). */
static void entry_set_content(struct run *run, struct entry *e, const char *s, size_t n)
{
        entry_drop_content(run, e);
        e->exists = true;
        e->is_reg = true;
        e->stat_errno = 0;
        e->cur = s;
        e->cur_len = n;
        e->loaded = true;
}

/* Why a new file cannot be created at @e, or NULL when the path is free. */
static const char *occupied(struct run *run, const struct entry *e, char *buf, size_t size)
{
        size_t kl = strlen(e->key);

        if (e->exists)
                return "exists";
        if (e->stat_errno || e->absent_errno == ENOTDIR) {
                (void) snprintf(buf, size, "could not confirm the path is free — %s",
                                strerror(e->stat_errno ?: e->absent_errno));
                return buf;
        }
        /* A parent that an earlier operation of this patch made a file. */
        for (size_t i = 0; i < run->n_entries; i++) {
                const struct entry *o = run->entries[i];
                size_t ol = strlen(o->key);

                if (o->exists && o->is_reg && ol < kl && e->key[ol] == '/' &&
                    memcmp(o->key, e->key, ol) == 0) {
                        (void) snprintf(buf, size,
                                        "could not confirm the path is free — Not a directory");
                        return buf;
                }
        }
        return NULL;
}

static bool deadline_passed(const struct run *run)
{
        return run->ctx->deadline != USEC_INFINITY && now_usec() >= run->ctx->deadline;
}

static int resolve(const struct tool_ctx *ctx, const char *path, char **ret_abs, char **ret_key)
{
        _cleanup_free_ char *abs = tool_resolve_path(ctx, path);
        int r;

        if (!abs)
                return -ENOMEM;
        r = file_safety_normpath(abs, ret_key);
        if (r < 0)
                return r;
        *ret_abs = TAKE_PTR(abs);
        return 0;
}

/* Append "\n" (between operations) and then this operation's diff via @fn. */
static int diff_begin(struct run *run, size_t idx)
{
        if (run->diff_cut_at != SIZE_MAX)
                return -E2BIG;
        if (idx > 0 && buf_append_char(&run->diff, '\n') < 0) {
                run->diff_cut_at = idx;
                return -E2BIG;
        }
        return 0;
}

static int diff_end(struct run *run, size_t idx, int r)
{
        if (r == -E2BIG && run->diff_cut_at == SIZE_MAX)
                run->diff_cut_at = idx;
        run->plans[idx].diff_end = run->diff.len;
        return r == -E2BIG ? 0 : r;
}

static int diff_text(struct run *run, size_t idx, const char *fmt, ...) _printf_(3, 4);
static int diff_text(struct run *run, size_t idx, const char *fmt, ...)
{
        va_list ap;
        int r;

        r = diff_begin(run, idx);
        if (r >= 0) {
                va_start(ap, fmt);
                r = buf_vprintf(&run->diff, fmt, ap);
                va_end(ap);
        }
        return diff_end(run, idx, r);
}

static int diff_unified(struct run *run, size_t idx, const char *a, size_t an, const char *b,
                        size_t bn, const char *from, const char *to)
{
        _cleanup_free_ char *d = NULL;
        size_t dl = 0, room;
        int r = diff_begin(run, idx);

        if (r >= 0) {
                room = V4A_DIFF_MAX > run->diff.len ? V4A_DIFF_MAX - run->diff.len : 0;
                r = fuzzy_unified_diff(a, an, b, bn, from, to, room, &d, &dl);
                if (r >= 0)
                        r = buf_append(&run->diff, d, dl);
                /* Cut to fit: the diffs of later operations are left out. */
                if (r >= 0 && dl >= strlen(DIFF_CUT_NOTE) &&
                    memcmp(d + dl - strlen(DIFF_CUT_NOTE), DIFF_CUT_NOTE, strlen(DIFF_CUT_NOTE)) ==
                            0)
                        r = -E2BIG;
        }
        return diff_end(run, idx, r);
}

static int validate_add(struct run *run, size_t idx, struct entry *e)
{
        const struct v4a_op *op = &run->patch->ops[idx];
        struct plan *p = &run->plans[idx];
        _cleanup_buf_ struct buf content = BUF_INIT((size_t) V4A_PATCH_MAX);
        char why[256];
        const char *o;
        size_t k = 0;
        int r = 0;

        o = occupied(run, e, why, sizeof(why));
        if (o && strcmp(o, "exists") == 0)
                return v4a_add_error(run, "%s: file already exists — use Update File, not Add File",
                                     op->path);
        if (o)
                return v4a_add_error(run, "%s: %s", op->path, o);

        for (size_t h = 0; r >= 0 && h < op->n_hunks; h++)
                for (size_t i = 0; r >= 0 && i < op->hunks[h].n_lines; i++) {
                        const struct v4a_line *l = &op->hunks[h].lines[i];

                        if (l->prefix != '+')
                                continue;
                        if (k++ > 0)
                                r = buf_append_char(&content, '\n');
                        if (r >= 0)
                                r = buf_append(&content, l->text, l->len);
                }
        if (r < 0)
                return -ENOMEM; /* the content is part of the patch: it fits */
        p->len = content.len;
        p->content = buf_steal(&content, NULL);
        if (!p->content)
                return -ENOMEM;
        entry_set_content(run, e, p->content, p->len);
        run->changes++;

        if (run->n_errors > 0)
                return 0;
        r = diff_begin(run, idx);
        if (r >= 0)
                r = buf_printf(&run->diff, "--- /dev/null\n+++ b/%s\n", op->path);
        for (size_t h = 0, first = 1; r >= 0 && h < op->n_hunks; h++)
                for (size_t i = 0; r >= 0 && i < op->hunks[h].n_lines; i++) {
                        const struct v4a_line *l = &op->hunks[h].lines[i];

                        if (l->prefix != '+')
                                continue;
                        r = buf_printf(&run->diff, "%s+", first ? "" : "\n");
                        if (r >= 0)
                                r = buf_append(&run->diff, l->text, l->len);
                        first = 0;
                }
        return diff_end(run, idx, r);
}

static int read_error(struct run *run, const char *path, int err)
{
        if (err == ENOENT || err == ENOTDIR)
                return v4a_add_error(run, "%s: File not found: %s", path, path);
        if (err == E2BIG)
                return v4a_add_error(run, "%s: Failed to read file: %s: larger than %u MiB", path,
                                     path, V4A_FILE_MAX / (1024 * 1024));
        if (err == EFBIG)
                return v4a_add_error(
                        run, "%s: the patch needs more than %u MiB of file content in memory", path,
                        V4A_MEMORY_MAX / (1024 * 1024));
        return v4a_add_error(run, "%s: Failed to read file: %s: %s", path, path, strerror(err));
}

static int validate_update(struct run *run, size_t idx, struct entry *e, struct entry *dst)
{
        const struct v4a_op *op = &run->patch->ops[idx];
        struct plan *p = &run->plans[idx];
        _cleanup_free_ char *work = NULL, *from = NULL, *to = NULL;
        const char *eol, *base;
        size_t work_len, base_len;
        char ext[64], why[256];
        bool failed = false;
        int r;

        if (e->stat_errno)
                return read_error(run, op->path, e->stat_errno);
        if (!e->exists)
                return read_error(run, op->path, ENOENT);
        if (!e->is_reg)
                return read_error(run, op->path, S_ISDIR(e->st.st_mode) ? EISDIR : EINVAL);
        r = entry_load(run, e);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return read_error(run, op->path, -r);
        base = e->cur;
        base_len = e->cur_len;

        work = malloc(base_len + 1);
        if (!work)
                return -ENOMEM;
        memcpy(work, base, base_len);
        work[base_len] = 0;
        work_len = base_len;
        eol = v4a_detect_eol(base, base_len);

        for (size_t h = 0; h < op->n_hunks; h++) {
                _cleanup_free_ char *nw = NULL, *err = NULL;
                size_t nwl = 0;

                if (deadline_passed(run))
                        return -ETIMEDOUT;
                r = v4a_apply_hunk(&op->hunks[h], work, work_len, eol, &nw, &nwl, &err);
                if (r < 0)
                        return r;
                if (err) {
                        r = v4a_add_error(run, "%s: %s", op->path, err);
                        if (r < 0)
                                return r;
                        failed = true;
                        continue;
                }
                run->changes += (size_t) r;
                if (nw) {
                        free(work);
                        work = TAKE_PTR(nw);
                        work_len = nwl;
                }
        }

        if (p->moves) {
                const char *o = occupied(run, dst, why, sizeof(why));

                if (o && strcmp(o, "exists") == 0)
                        r = v4a_add_error(run,
                                          "%s: destination already exists — move would overwrite",
                                          op->new_path);
                else if (o)
                        r = v4a_add_error(run, "%s: %s", op->new_path, o);
                if (o)
                        return r;
        }
        if (failed)
                return 0;

        p->write = p->moves || work_len != base_len || memcmp(work, base, base_len) != 0;
        if (p->moves)
                run->changes++;
        p->check = e->from_disk;
        p->st = e->st;
        lint_extension_of(p->moves ? op->new_path : op->path, ext, sizeof(ext));
        if (lint_has_linter(ext) && base_len <= LINT_PRE_MAX) {
                if (run->mem + base_len > V4A_MEMORY_MAX)
                        return read_error(run, op->path, EFBIG);
                p->pre = malloc(base_len + 1);
                if (!p->pre)
                        return -ENOMEM;
                memcpy(p->pre, base, base_len);
                p->pre[base_len] = 0;
                p->pre_len = base_len;
                run->mem += base_len;
        }

        if (run->n_errors == 0) {
                size_t before = run->diff.len + (idx > 0);

                if (asprintf(&from, "a/%s", op->path) < 0 ||
                    asprintf(&to, "b/%s", p->moves ? op->new_path : op->path) < 0)
                        return -ENOMEM;
                r = diff_unified(run, idx, base, base_len, work, work_len, from, to);
                if (r < 0)
                        return r;
                if (p->moves && run->diff.len == before && run->diff_cut_at == SIZE_MAX) {
                        /* Moved without a content change: the diff says what happened. */
                        r = buf_printf(&run->diff, "# Moved: %s -> %s", op->path, op->new_path);
                        r = diff_end(run, idx, r);
                        if (r < 0)
                                return r;
                }
        }

        if (run->mem + work_len > V4A_MEMORY_MAX)
                return read_error(run, op->path, EFBIG);
        run->mem += work_len;
        p->content = TAKE_PTR(work);
        p->len = work_len;
        if (p->moves) {
                entry_set_absent(run, e);
                entry_set_content(run, dst, p->content, p->len);
        } else
                entry_set_content(run, e, p->content, p->len);
        return 0;
}

static int validate_delete(struct run *run, size_t idx, struct entry *e)
{
        const struct v4a_op *op = &run->patch->ops[idx];
        _cleanup_free_ char *from = NULL;
        int r;

        if (e->stat_errno)
                return v4a_add_error(run, "%s: could not check the file — %s", op->path,
                                     strerror(e->stat_errno));
        if (!e->exists)
                return v4a_add_error(run, "%s: file not found for deletion", op->path);
        if (!e->is_reg)
                return v4a_add_error(run,
                                     "%s: is a directory or special file; Delete File removes "
                                     "regular files only",
                                     op->path);
        run->changes++;
        if (run->n_errors == 0) {
                r = entry_load(run, e);
                if (r == -ENOMEM)
                        return r;
                if (r >= 0 && e->cur_len > 0) {
                        if (asprintf(&from, "a/%s", op->path) < 0)
                                return -ENOMEM;
                        r = diff_unified(run, idx, e->cur, e->cur_len, "", 0, from, "/dev/null");
                } else
                        /* An empty (or unreadable) file has no unified diff: the seed's note. */
                        r = diff_text(run, idx, "# Deleted: %s", op->path);
                if (r < 0)
                        return r;
        }
        entry_set_absent(run, e);
        return 0;
}

static int validate_move(struct run *run, size_t idx, struct entry *src, struct entry *dst)
{
        const struct v4a_op *op = &run->patch->ops[idx];
        char why[256];
        const char *o;
        bool bad = false;
        int r = 0;

        if (src == dst)
                return v4a_add_error(run, "%s: source and destination are the same file", op->path);
        if (src->stat_errno) {
                r = v4a_add_error(run, "%s: could not check the file — %s", op->path,
                                  strerror(src->stat_errno));
                bad = true;
        } else if (!src->exists) {
                r = v4a_add_error(run, "%s: source file not found for move", op->path);
                bad = true;
        } else if (!src->is_reg) {
                r = v4a_add_error(run,
                                  "%s: is a directory or special file; Move File moves regular "
                                  "files only",
                                  op->path);
                bad = true;
        }
        if (r < 0)
                return r;
        o = occupied(run, dst, why, sizeof(why));
        if (o && strcmp(o, "exists") == 0)
                return v4a_add_error(run, "%s: destination already exists — move would overwrite",
                                     op->new_path);
        if (o)
                return v4a_add_error(run, "%s: %s", op->new_path, o);
        if (bad)
                return 0;

        /* The destination takes over the source's state (content loaded or still on disk). */
        entry_drop_content(run, dst);
        dst->exists = true;
        dst->is_reg = true;
        dst->stat_errno = 0;
        dst->loaded = src->loaded;
        dst->cur = src->cur;
        dst->cur_len = src->cur_len;
        dst->own = TAKE_PTR(src->own);
        dst->disk = TAKE_PTR(src->disk);
        src->loaded = false;
        src->cur = NULL;
        src->cur_len = 0;
        entry_set_absent(run, src);
        run->changes++;
        if (run->n_errors > 0)
                return 0;
        return diff_text(run, idx, "# Moved: %s -> %s", op->path, op->new_path);
}

/* The write deny list for @path; adds the seed's refusal as an error. 1 when denied. */
static int check_denied(struct run *run, const char *path, const char *abs)
{
        _cleanup_free_ char *shown = NULL;
        int r;

        r = file_safety_write_denied(run->ctx->cwd, run->ctx->env, abs);
        if (r <= 0)
                return r;
        r = tool_expand_tilde(run->ctx, path, &shown);
        if (r < 0)
                return r;
        r = v4a_add_error(run, "Write denied: '%s' is a protected system/credential file.", shown);
        return r < 0 ? r : 1;
}

int v4a_validate(struct run *run)
{
        const struct v4a_patch *patch = run->patch;
        int r;

        for (size_t i = 0; i < patch->n_ops; i++) {
                const struct v4a_op *op = &patch->ops[i];
                struct plan *p = &run->plans[i];
                _cleanup_free_ char *key = NULL, *key_new = NULL;
                struct entry *e = NULL, *dst = NULL;
                bool denied = false;

                if (deadline_passed(run))
                        return -ETIMEDOUT;
                r = resolve(run->ctx, op->path, &p->abs, &key);
                if (r < 0)
                        return r;
                if (op->new_path) {
                        r = resolve(run->ctx, op->new_path, &p->abs_new, &key_new);
                        if (r < 0)
                                return r;
                }
                r = check_denied(run, op->path, p->abs);
                if (r < 0)
                        return r;
                denied = r > 0;
                if (op->new_path) {
                        r = check_denied(run, op->new_path, p->abs_new);
                        if (r < 0)
                                return r;
                        denied = denied || r > 0;
                }
                if (denied)
                        continue;

                r = entry_get(run, key, &e);
                if (r >= 0 && key_new)
                        r = entry_get(run, key_new, &dst);
                if (r < 0)
                        return r;
                p->moves = op->type == V4A_OP_UPDATE && dst && dst != e;

                switch (op->type) {
                case V4A_OP_ADD:
                        r = validate_add(run, i, e);
                        break;
                case V4A_OP_UPDATE:
                        r = validate_update(run, i, e, dst);
                        break;
                case V4A_OP_DELETE:
                        r = validate_delete(run, i, e);
                        break;
                case V4A_OP_MOVE:
                        r = validate_move(run, i, e, dst);
                        break;
                }
                if (r < 0)
                        return r;
        }
        if (run->n_errors == 0 && run->changes == 0)
                return v4a_add_error(run, patch->n_ops == 0
                                                  ? "Patch contains no changes (no file operations "
                                                    "were found)"
                                                  : "Patch contains no changes (only context lines "
                                                    "were provided)");
        return 0;
}
