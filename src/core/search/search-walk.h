/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The parallel directory walk of search_files: a pool of threads (one per online CPU) shares a
 * bounded stack of jobs (directories to read, batches of files of a large directory) and calls
 * a callback for every regular file that survives the rules ripgrep applies by default:
 *
 *   - the override globs (ignore_override_match()) first;
 *   - then the ignore files of the directory and its ancestors, up to "/" (search-ignore.h);
 *   - then hidden names (starting with '.') are skipped, unless a rule whitelisted them;
 *   - ".git" directories are always skipped; symlinks are never followed (neither files nor
 *     directories); entries that are neither directories nor regular files are skipped;
 *     unreadable directories are skipped silently;
 *   - last, the caller's judge (the policy's path rules): a directory it refuses is not
 *     entered, a file it refuses is not handed on.
 *
 * Every directory is opened by its path with no symlink allowed on the way
 * (fs_open_no_symlinks()) and its files relative to that descriptor with O_NOFOLLOW: a
 * directory swapped for a symlink after it was listed is not followed, so the path judged
 * is the object read.
 *
 * Memory stays bounded whatever the tree: at most SEARCH_WALK_QUEUE_MAX queued jobs (a thread
 * that cannot queue a directory walks it itself), at most SEARCH_WALK_DEPTH_MAX levels below
 * the root, paths of at most SEARCH_WALK_PATH_MAX bytes.
 */

#include <stdbool.h>
#include <stddef.h>

#include "basic/macro.h"

struct ignore_file;

/* Threads at most, whatever the CPU count. */
#define SEARCH_WALK_THREADS_MAX 64
/* Jobs queued at most (a job is a pointer and a few words). */
#define SEARCH_WALK_QUEUE_MAX 16384
/* Directory levels below the root that are walked; deeper ones are skipped. */
#define SEARCH_WALK_DEPTH_MAX 256
/* Longest absolute path walked (bytes); longer ones are skipped. */
#define SEARCH_WALK_PATH_MAX 4096

/*
 * Called for a regular file on a worker thread: @dirfd is its directory (borrowed, open for the
 * call), @name its name in it, @rel its path below the root ('/'-separated, @rel_len bytes,
 * NUL-terminated, borrowed for the call). @state is the thread's state from thread_init.
 * Returns >= 0 to go on, or a negative errno that stops the walk (search_walk_run() returns it).
 */
typedef int (*search_walk_file_fn)(void *state, int dirfd, const char *name, const char *rel,
                                   size_t rel_len, void *userdata);
/* Per-thread state: set *ret (may be NULL). Returns 0 or -errno (the thread then does not run). */
typedef int (*search_walk_thread_init_fn)(void *userdata, void **ret);
typedef void (*search_walk_thread_done_fn)(void *state, void *userdata);
/*
 * The caller's verdict on an entry the walk would enter (a directory) or hand to on_file (a
 * file): @abs is its real path (@abs_len bytes; the walk follows no symlink and opens every
 * directory with fs_open_no_symlinks(), so the path is the object). Returns 0 to go on, > 0
 * to leave it out (a directory's whole subtree), or a negative errno that stops the walk.
 */
typedef int (*search_walk_judge_fn)(void *userdata, const char *abs, size_t abs_len, bool is_dir);
/* Called every now and then on each thread; a negative errno stops the walk with it. */
typedef int (*search_walk_check_fn)(void *userdata);

struct search_walk_opts {
        const char *root; /* absolute path of the directory, symlinks resolved */
        unsigned threads; /* 0: one per online CPU */
        /*
         * Override globs (borrowed; NULL: none), matched against @override_prefix followed by
         * the path below the root; ripgrep matches them against the printed path.
         */
        const struct ignore_file *overrides;
        const char *override_prefix;
        /* Git's global excludes (ignore_global_excludes_load()), borrowed; NULL: none. */
        const struct ignore_file *global_excludes;
        search_walk_file_fn on_file;
        search_walk_thread_init_fn thread_init; /* may be NULL */
        search_walk_thread_done_fn thread_done; /* may be NULL */
        search_walk_check_fn check;             /* may be NULL */
        search_walk_judge_fn judge;             /* may be NULL: everything goes */
        void *userdata;
};

/*
 * Walk @o->root. Blocks until every thread is done. Returns 0, the first negative value a
 * callback returned, -ENOMEM, or -ENOENT / -ENOTDIR / -EACCES when the root cannot be opened.
 * Any thread: it starts its own threads and joins them before it returns.
 */
_must_check_ int search_walk_run(const struct search_walk_opts *o);

/* The number of threads search_walk_run() uses for @threads (0: the online CPUs). */
unsigned search_walk_threads(unsigned threads);
