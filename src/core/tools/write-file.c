/* SPDX-License-Identifier: MIT */
/*
 * write_file (docs/seed.md 2.2): replace a file's content, creating its
 * parent directories, then syntax-check it (lint.c).
 *
 * Deliberate differences from the seed (docs/contracts.md 9.11): the
 * write is atomic (temp file in the same directory + rename) and keeps the
 * existing file's mode; a symlink is written through to its target and stays
 * a symlink. The refusals (system locations, credential files) and the
 * result shape are the seed's.
 *
 * Also here, for patch and V4A (lint.h): tool_file_replace(), the write
 * itself, and the per-path locks that serialise edits of one file, as the
 * seed's file_state.lock_path().
 */

#include "core/tools/write-file.h"

#include "core/tools/tool.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/macro.h"
#include "basic/path-util.h"
#include "basic/time-util.h"
#include "basic/utf8.h"
#include "core/fs/file-safety.h"
#include "core/tools/lint.h"
#include "core/tools/tool-chase.h"
#include "core/tools/tool-util.h"

/* --- the write --- */

/* 0666 & ~umask for a new file, read without umask(2), which would race with other threads. */
static int new_file_mode(void)
{
        _cleanup_free_ char *status = NULL;
        const char *u;
        unsigned m;

        if (read_file_at(AT_FDCWD, "/proc/self/status", 64 * 1024, &status, NULL) < 0)
                return 0644;
        u = strstr(status, "\nUmask:");
        if (!u || sscanf(u + 7, "%o", &m) != 1)
                return 0644;
        return (int) (0666 & ~m & 0777);
}

/*
 * Write in place (truncate + write): for a file in a directory we may not create files in, or
 * whose name leaves no room for the temp file's suffix. O_NOFOLLOW: @name is the real name
 * in @dirfd that the caller judged, not a symlink put there since.
 */
static int write_in_place(int dirfd, const char *name, const char *s, size_t n, bool create,
                          int mode, int nofollow)
{
        _cleanup_close_ int fd = openat(dirfd, name,
                                        O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY | nofollow |
                                                (create ? O_CREAT : 0),
                                        (mode_t) mode);
        int r;

        if (fd < 0)
                return -errno;
        r = write_all(fd, s, n);
        if (r < 0)
                return r;
        if (close(TAKE_FD(fd)) < 0)
                return -errno;
        return 0;
}

static int replace_at(int dirfd, const char *name, const char *s, size_t n, bool exists,
                      int nofollow)
{
        int mode = exists ? -1 : new_file_mode();
        int r;

        r = write_file_atomic_at(dirfd, name, s, n, mode);
        if ((r == -EACCES || r == -EPERM) && exists &&
            faccessat(dirfd, name, W_OK, nofollow ? AT_SYMLINK_NOFOLLOW : 0) == 0)
                r = write_in_place(dirfd, name, s, n, false, 0, nofollow);
        else if (r == -ENAMETOOLONG)
                r = write_in_place(dirfd, name, s, n, !exists, exists ? 0 : mode, nofollow);
        return r;
}

int tool_file_replace(const char *target, const char *s, size_t n, bool exists)
{
        return replace_at(AT_FDCWD, target, s, n, exists, 0);
}

int tool_file_replace_at(int dirfd, const char *name, const char *s, size_t n, bool exists)
{
        return replace_at(dirfd, name, s, n, exists, O_NOFOLLOW);
}

/* --- per-path locks --- */

/*
 * The set of held paths, shared by every worker thread: a flat array, since it holds at most
 * one entry per path being edited right now (the worker pool bounds that).
 */
#define PATH_LOCKS_HELD_MAX 4096

struct tool_path_lock {
        char **paths; /* unique, owned */
        size_t n;
};

static pthread_mutex_t locks_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t locks_cond;
static pthread_once_t locks_once = PTHREAD_ONCE_INIT;
static bool locks_cond_ok;
static const char *locks_held[PATH_LOCKS_HELD_MAX]; /* borrowed from the holders' locks */
static size_t locks_n_held;

static void locks_init(void)
{
        pthread_condattr_t a;

        /* The deadlines are CLOCK_MONOTONIC (time-util.h). */
        if (pthread_condattr_init(&a) != 0)
                return;
        if (pthread_condattr_setclock(&a, CLOCK_MONOTONIC) == 0 &&
            pthread_cond_init(&locks_cond, &a) == 0)
                locks_cond_ok = true;
        (void) pthread_condattr_destroy(&a);
}

static bool is_held(const char *p)
{
        for (size_t i = 0; i < locks_n_held; i++)
                if (strcmp(locks_held[i], p) == 0)
                        return true;
        return false;
}

static bool any_held(const struct tool_path_lock *l)
{
        if (locks_n_held + l->n > PATH_LOCKS_HELD_MAX)
                return true; /* no room: wait as if busy */
        for (size_t i = 0; i < l->n; i++)
                if (is_held(l->paths[i]))
                        return true;
        return false;
}

struct tool_path_lock *tool_path_unlock(struct tool_path_lock *l)
{
        if (!l)
                return NULL;
        if (l->n > 0) {
                (void) pthread_mutex_lock(&locks_mutex);
                for (size_t i = 0; i < l->n; i++)
                        for (size_t k = 0; k < locks_n_held; k++)
                                if (locks_held[k] == l->paths[i]) {
                                        locks_held[k] = locks_held[--locks_n_held];
                                        break;
                                }
                (void) pthread_cond_broadcast(&locks_cond);
                (void) pthread_mutex_unlock(&locks_mutex);
        }
        for (size_t i = 0; i < l->n; i++)
                free(l->paths[i]);
        free(l->paths);
        free(l);
        return NULL;
}

int tool_path_lock(const char *const *paths, size_t n, usec_t deadline, struct tool_path_lock **ret)
{
        struct tool_path_lock *l;
        struct timespec ts;
        int r = 0;

        if (n > TOOL_PATH_LOCK_PATHS_MAX)
                return -E2BIG;
        (void) pthread_once(&locks_once, locks_init);
        if (!locks_cond_ok)
                return -ENOMEM;
        l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        l->paths = calloc(MAX(n, (size_t) 1), sizeof(char *));
        if (!l->paths) {
                free(l);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                bool dup = false;

                for (size_t k = 0; k < l->n && !dup; k++)
                        dup = strcmp(l->paths[k], paths[i]) == 0;
                if (dup)
                        continue;
                l->paths[l->n] = strdup(paths[i]);
                if (!l->paths[l->n]) {
                        (void) tool_path_unlock(l);
                        return -ENOMEM;
                }
                l->n++;
        }
        if (deadline != USEC_INFINITY) {
                ts.tv_sec = (time_t) (deadline / USEC_PER_SEC);
                ts.tv_nsec = (long) (deadline % USEC_PER_SEC) * 1000;
        }

        (void) pthread_mutex_lock(&locks_mutex);
        while (any_held(l)) {
                /*
                 * Without a deadline this waits for the holders' tool_path_unlock(), which
                 * comes when their edit ends; an edit does bounded I/O and no waiting.
                 */
                if (deadline == USEC_INFINITY)
                        r = pthread_cond_wait(&locks_cond, &locks_mutex);
                else
                        r = pthread_cond_timedwait(&locks_cond, &locks_mutex, &ts);
                if (r != 0) {
                        /* ETIMEDOUT (or a broken clock): give up unless it is free now. */
                        if (!any_held(l))
                                r = 0;
                        break;
                }
        }
        if (r == 0)
                for (size_t i = 0; i < l->n; i++)
                        locks_held[locks_n_held++] = l->paths[i];
        (void) pthread_mutex_unlock(&locks_mutex);
        if (r != 0) {
                /* Not registered as held: release must not touch the set. */
                for (size_t i = 0; i < l->n; i++)
                        free(l->paths[i]);
                free(l->paths);
                free(l);
                return -ETIMEDOUT;
        }
        *ret = l;
        return 0;
}

static int write_file_run(const struct tool *t, const struct tool_ctx *ctx, json_t *args,
                          json_t **ret_result)
{
        _cleanup_tool_path_ struct tool_path tp = {};
        _cleanup_fs_chased_ struct fs_chased target = FS_CHASED_INIT;
        _cleanup_free_ char *pre = NULL, *delta_message = NULL;
        _cleanup_free_ char *path_bytes = NULL;
        _cleanup_tool_path_lock_ struct tool_path_lock *lock = NULL;
        json_auto_t *res = NULL, *refused = NULL;
        struct lint lint = {};
        json_t *pv, *cv, *lj;
        const char *path, *content, *keys[1];
        size_t content_len, pre_len = 0;
        char ext[64];
        struct stat st;
        bool exists, dirs_created = false;
        int r;

        pv = json_is_object(args) ? json_object_get(args, "path") : NULL;
        if (!pv || !json_is_string(pv) || json_string_length(pv) == 0)
                return tool_error_result(ret_result,
                                         "write_file: missing required field 'path'. Call it again "
                                         "with both 'path' and 'content' set.");
        cv = json_object_get(args, "content");
        if (!cv || json_is_null(cv))
                return tool_error_result(
                        ret_result, "write_file: missing required field 'content'. The call had "
                                    "a path but no content; call it again with the complete "
                                    "file content.");
        if (!json_is_string(cv))
                return tool_error_result(ret_result,
                                         "write_file: 'content' must be a string, got %s.",
                                         tool_json_type_name(cv));
        path = json_string_value(pv);
        content = json_string_value(cv);
        content_len = json_string_length(cv);

        /* The file name's bytes: escapes of bytes that are not UTF-8 (docs/protocol.md) undone. */
        r = utf8_unescape_bytes(path, strlen(path), &path_bytes, NULL);
        if (r < 0)
                return r;
        path = path_bytes;

        r = tool_path_check(ctx, path, &tp, ret_result);
        if (r != 0)
                return r < 0 ? r : 0;

        r = file_safety_write_denied(ctx->cwd, ctx->env, tp.abs);
        if (r < 0)
                return r;
        if (r > 0)
                return tool_error_result(
                        ret_result, "Write denied: '%s' is a protected system/credential file.",
                        tp.shown);

        /*
         * Write through symlinks: the link stays, its target gets the content. The target is
         * the object fs_chase() reached (its real path judged by the policy and the write
         * guards), created missing directories and all from the descriptors of the walk, and
         * the write renames within that directory's descriptor: no name is looked up again,
         * so a symlink swapped in after the check cannot lead the write elsewhere.
         */
        r = tool_chase(ctx, "write_file", tp.abs, TOOL_CHASE_MISSING_OK | TOOL_CHASE_WRITE, NULL,
                       &target, &refused);
        if (r > 0) {
                *ret_result = TAKE_PTR(refused);
                return 0;
        }
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return tool_error_result(ret_result, "Failed to write file: %s: %s", tp.shown,
                                         fs_chase_strerror(r));
        r = fs_chased_mkdirs(&target, 0777);
        if (r < 0)
                return tool_error_result(
                        ret_result, "Failed to write file: cannot create directory in '%s': %s",
                        target.path, strerror(-r));
        /* As the seed: true whenever the path names a parent and `mkdir -p` succeeded. */
        dirs_created = strchr(tp.shown, '/') != NULL;

        /* As the seed: writes to one resolved path are serialised (with patch too). */
        keys[0] = target.path;
        r = tool_path_lock(keys, 1, ctx->deadline, &lock);
        if (r == -ETIMEDOUT)
                return tool_error_result(ret_result,
                                         "Failed to write file: %s: timed out waiting for another "
                                         "edit of this file",
                                         tp.shown);
        if (r < 0)
                return r;

        exists = target.exists;
        if (exists && fstat(target.fd, &st) < 0)
                return tool_error_result(ret_result, "Failed to write file: %s: %s", tp.shown,
                                         strerror(errno));
        if (exists && S_ISDIR(st.st_mode))
                return tool_error_result(ret_result, "Failed to write file: %s: Is a directory",
                                         tp.shown);
        if (exists && !S_ISREG(st.st_mode))
                return tool_error_result(ret_result, "Failed to write file: %s: not a regular file",
                                         tp.shown);

        lint_extension_of(tp.shown, ext, sizeof(ext));
        if (exists && lint_has_linter(ext) && st.st_size > 0 && st.st_size <= LINT_PRE_MAX) {
                r = fs_chased_read(&target, LINT_PRE_MAX, &pre, &pre_len);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        free(pre);
                        pre = NULL;
                        pre_len = 0;
                }
        }

        r = tool_file_replace_at(target.dir_fd, target.name, content, content_len, exists);
        lock = tool_path_unlock(lock);
        if (r < 0)
                return tool_error_result(ret_result, "Failed to write file: %s: %s", tp.shown,
                                         strerror(-r));

        r = lint_delta(ctx, ext, content, content_len, pre, pre_len, &lint, &delta_message);
        if (r < 0) {
                lint_release(&lint);
                return r;
        }
        lj = lint_to_json(&lint, delta_message);
        lint_release(&lint);

        if (!lj)
                return -ENOMEM;
        res = json_object();
        if (!res ||
            tool_json_set(res, "bytes_written", json_integer((json_int_t) content_len)) < 0 ||
            tool_json_set(res, "dirs_created", json_boolean(dirs_created)) < 0) {
                json_decref(lj);
                return -ENOMEM;
        }
        if (tool_json_set(res, "lint", lj) < 0)
                return -ENOMEM;
        *ret_result = TAKE_PTR(res);
        return 0;
}

const struct tool_def tool_def_write_file = {
        .name = "write_file",
        .description = "Write content to a file (always overwrites). Returns dict with status.",
        .parameters_json = "{\"type\": \"object\", \"properties\": {"
                           "\"path\": {\"type\": \"string\", \"description\": "
                           "\"Path to the file to write (created if missing, overwritten if it "
                           "exists)\"}, "
                           "\"content\": {\"type\": \"string\", \"description\": "
                           "\"Complete content to write to the file\"}}, "
                           "\"required\": [\"path\", \"content\"]}",
        .returns = "Always overwrites the entire file.",
        .run = write_file_run,
};
