/* SPDX-License-Identifier: MIT */
/*
 * Parallel directory walk for search_files (the shape of ripgrep's parallel walker).
 *
 * Jobs sit on one LIFO stack under a mutex: depth-first order keeps the stack short, and a
 * thread that finds the stack full walks the directory itself (recursion bounded by
 * SEARCH_WALK_DEPTH_MAX), so the stack never grows past its cap whatever the tree looks like.
 * A directory with many files hands batches of them to idle threads, so one huge directory
 * does not serialise the search.
 *
 * Directories are read with getdents64 into a per-level arena first, so the ignore files of a
 * directory are known before its entries are judged without probing for them (ripgrep tries
 * to open each name in every directory). Files are opened relative to their directory's fd,
 * which stays open while a batch of its files is queued: one path component to look up per
 * file instead of the whole path.
 */

#include "core/search/search-walk.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/macro.h"
#include "core/fs/fs-chase.h"
#include "core/search/search-ignore.h"

/* Files of one directory per batch job. */
#define FILE_BATCH 128
/* Batch jobs queued at once; each keeps its directory's fd open. */
#define BATCHES_MAX 256
/* Bytes of directory entries read before they are judged (a larger directory is streamed). */
#define ARENA_MAX (4u * 1024 * 1024)
#define DENTS_BUF (32u * 1024)
/* Call the check callback once per this many entries and files per thread. */
#define CHECK_EVERY 256
/* Arena mark of an entry that is a regular file to process. */
#define MARK_FILE 0xFF

struct walk_dir {
        atomic_uint refs;
        struct walk_dir *parent;
        char *abs; /* no trailing slash; "" for "/" */
        size_t abs_len;
        unsigned depth; /* the root is 0 */
        bool own_ign;
        struct ignore_dir ign_own;
        const struct ignore_dir *ign; /* effective chain: &ign_own or an ancestor's */
        int fd;
        atomic_uint fd_users;
};

struct file_batch {
        struct walk_dir *dir;
        size_t n;
        char names[]; /* n NUL-terminated names */
};

enum job_kind {
        JOB_DIR,
        JOB_FILES,
};

struct job {
        enum job_kind kind;
        void *p;
};

struct walk {
        const struct search_walk_opts *o;
        size_t root_len;
        struct ignore_dir *ancestors;
        size_t n_ancestors;
        const char *prefix;
        size_t prefix_len;
        bool anchored_overrides;

        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct job *jobs;
        size_t n_jobs;
        size_t pending; /* queued and running */
        unsigned batches;
        atomic_int stop; /* 0, or the error that stops the walk */
};

struct level {
        struct buf arena;
        char *dents;
};

struct worker {
        struct walk *w;
        void *state;
        unsigned ops;
        char path[SEARCH_WALK_PATH_MAX + 2];
        char cand[2 * SEARCH_WALK_PATH_MAX + 4];
        struct level levels[SEARCH_WALK_DEPTH_MAX + 2];
};

static void set_stop(struct walk *w, int r)
{
        int expected = 0;

        if (r < 0)
                (void) atomic_compare_exchange_strong(&w->stop, &expected, r);
}

static bool stopped(struct walk *w)
{
        return atomic_load_explicit(&w->stop, memory_order_relaxed) != 0;
}

static void tick(struct worker *wk)
{
        if (++wk->ops % CHECK_EVERY == 0 && wk->w->o->check)
                set_stop(wk->w, wk->w->o->check(wk->w->o->userdata));
}

static void dir_unref(struct walk_dir *d)
{
        while (d && atomic_fetch_sub(&d->refs, 1) == 1) {
                struct walk_dir *p = d->parent;

                ignore_dir_release(&d->ign_own);
                d->fd = safe_close(d->fd);
                free(d->abs);
                free(d);
                d = p;
        }
}

static void fd_release(struct walk_dir *d)
{
        if (atomic_fetch_sub(&d->fd_users, 1) == 1)
                d->fd = safe_close(d->fd);
}

static int dir_new(struct walk_dir *parent, const char *abs, size_t len, struct walk_dir **ret)
{
        struct walk_dir *d = calloc(1, sizeof(*d));

        if (!d)
                return -ENOMEM;
        d->abs = strndup(abs, len);
        if (!d->abs) {
                free(d);
                return -ENOMEM;
        }
        atomic_init(&d->refs, 1);
        atomic_init(&d->fd_users, 0);
        d->abs_len = len;
        d->fd = -EBADF;
        d->parent = parent;
        d->depth = parent ? parent->depth + 1 : 0;
        if (parent) {
                atomic_fetch_add(&parent->refs, 1);
                d->ign = parent->ign;
        }
        *ret = d;
        return 0;
}

/* Queue a job; false when the stack (or the batch quota) is full. */
static bool try_push(struct walk *w, enum job_kind kind, void *p)
{
        bool ok = false;

        pthread_mutex_lock(&w->lock);
        if (w->n_jobs < SEARCH_WALK_QUEUE_MAX && (kind != JOB_FILES || w->batches < BATCHES_MAX)) {
                w->jobs[w->n_jobs++] = (struct job){.kind = kind, .p = p};
                w->pending++;
                if (kind == JOB_FILES)
                        w->batches++;
                pthread_cond_signal(&w->cond);
                ok = true;
        }
        pthread_mutex_unlock(&w->lock);
        return ok;
}

/* wk->path = @d's path + "/" + @name; its length, or 0 when too long. */
static size_t build_path(struct worker *wk, const struct walk_dir *d, const char *name,
                         size_t name_len)
{
        size_t len = d->abs_len + 1 + name_len;

        if (len > SEARCH_WALK_PATH_MAX)
                return 0;
        memcpy(wk->path, d->abs, d->abs_len);
        wk->path[d->abs_len] = '/';
        memcpy(wk->path + d->abs_len + 1, name, name_len);
        wk->path[len] = '\0';
        return len;
}

static int visit_file(struct worker *wk, struct walk_dir *d, const char *name, size_t name_len)
{
        struct walk *w = wk->w;
        size_t len = build_path(wk, d, name, name_len);

        tick(wk);
        if (len == 0 || stopped(w))
                return 0;
        return w->o->on_file(wk->state, d->fd, name, wk->path + w->root_len + 1,
                             len - w->root_len - 1, w->o->userdata);
}

static void run_batch(struct worker *wk, struct file_batch *b)
{
        const char *name = b->names;

        for (size_t i = 0; i < b->n && !stopped(wk->w); i++) {
                size_t n = strlen(name);
                int r = visit_file(wk, b->dir, name, n);

                if (r < 0)
                        set_stop(wk->w, r);
                name += n + 1;
        }
}

static void free_batch(struct file_batch *b)
{
        fd_release(b->dir);
        dir_unref(b->dir);
        free(b);
}

static int process_dir(struct worker *wk, struct walk_dir *d, unsigned level);

/* Judge one entry. Returns 1 for a file to process, 0 otherwise, or -errno. */
static int judge(struct worker *wk, struct walk_dir *d, unsigned char *type, const char *name,
                 size_t name_len, unsigned level)
{
        struct walk *w = wk->w;
        enum ignore_match m = IGNORE_NONE;
        size_t len;
        bool is_dir;

        if (*type == DT_UNKNOWN) {
                struct stat st;

                if (fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return 0;
                *type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_LNK;
        }
        if (*type != DT_DIR && *type != DT_REG)
                return 0;
        is_dir = *type == DT_DIR;
        len = build_path(wk, d, name, name_len);
        if (len == 0)
                return 0;

        if (w->o->overrides) {
                const char *cand = name;
                size_t cand_len = name_len;

                if (w->anchored_overrides) {
                        size_t rel_len = len - w->root_len - 1;

                        memcpy(wk->cand, w->prefix, w->prefix_len);
                        memcpy(wk->cand + w->prefix_len, wk->path + w->root_len + 1, rel_len);
                        cand = wk->cand;
                        cand_len = w->prefix_len + rel_len;
                        wk->cand[cand_len] = '\0';
                }
                m = ignore_override_match(w->o->overrides, cand, cand_len, is_dir);
                if (m == IGNORE_IGNORE)
                        return 0;
        }
        if (m == IGNORE_NONE) {
                m = ignore_dir_match(d->ign, wk->path, len, is_dir);
                if (m == IGNORE_IGNORE)
                        return 0;
        }
        if (m == IGNORE_NONE && name[0] == '.')
                return 0;
        if (w->o->judge) {
                int k = w->o->judge(w->o->userdata, wk->path, len, is_dir);

                if (k != 0)
                        return k < 0 ? k : 0;
        }
        if (!is_dir)
                return 1;

        if (strcmp(name, ".git") == 0 || d->depth + 1 > SEARCH_WALK_DEPTH_MAX)
                return 0;
        {
                struct walk_dir *child;
                int r = dir_new(d, wk->path, len, &child);

                if (r < 0)
                        return r;
                if (try_push(w, JOB_DIR, child))
                        return 0;
                /* The stack is full: walk it here (bounded by the depth cap). */
                r = process_dir(wk, child, level + 1);
                dir_unref(child);
                return r;
        }
}

/* Process the marked files of the arena: batches for others while they can be queued. */
static int process_files(struct worker *wk, struct walk_dir *d, struct buf *arena, size_t nfiles)
{
        size_t pos = 0, done = 0;

        while (done < nfiles && !stopped(wk->w)) {
                size_t group = MIN((size_t) FILE_BATCH, nfiles - done), start = pos, bytes = 0;
                struct file_batch *b = NULL;

                /* The last group stays with this thread. */
                if (nfiles - done > group) {
                        size_t p = pos, seen = 0;

                        while (seen < group) {
                                size_t n = strlen(arena->data + p + 1);

                                if ((unsigned char) arena->data[p] == MARK_FILE) {
                                        bytes += n + 1;
                                        seen++;
                                }
                                p += n + 2;
                        }
                        b = malloc(sizeof(*b) + bytes);
                }
                if (b) {
                        char *o = b->names;
                        size_t seen = 0;

                        while (seen < group) {
                                size_t n = strlen(arena->data + pos + 1);

                                if ((unsigned char) arena->data[pos] == MARK_FILE) {
                                        memcpy(o, arena->data + pos + 1, n + 1);
                                        o += n + 1;
                                        seen++;
                                }
                                pos += n + 2;
                        }
                        b->n = group;
                        b->dir = d;
                        atomic_fetch_add(&d->refs, 1);
                        atomic_fetch_add(&d->fd_users, 1);
                        if (try_push(wk->w, JOB_FILES, b)) {
                                done += group;
                                continue;
                        }
                        atomic_fetch_sub(&d->fd_users, 1);
                        atomic_fetch_sub(&d->refs, 1);
                        free(b);
                        pos = start;
                }
                /* Not queued: process the group here. */
                for (size_t seen = 0; seen < group && !stopped(wk->w);) {
                        const char *name = arena->data + pos + 1;
                        size_t n = strlen(name);

                        if ((unsigned char) arena->data[pos] == MARK_FILE) {
                                int r = visit_file(wk, d, name, n);

                                if (r < 0)
                                        return r;
                                seen++;
                        }
                        pos += n + 2;
                }
                done += group;
        }
        return 0;
}

static int judge_arena(struct worker *wk, struct walk_dir *d, struct buf *arena, unsigned level)
{
        size_t nfiles = 0;

        for (size_t pos = 0; pos < arena->len && !stopped(wk->w);) {
                unsigned char *type = (unsigned char *) arena->data + pos;
                const char *name = arena->data + pos + 1;
                size_t n = strlen(name);
                int r;

                tick(wk);
                r = judge(wk, d, type, name, n, level);
                if (r < 0)
                        return r;
                if (r > 0) {
                        *type = MARK_FILE;
                        nfiles++;
                }
                pos += n + 2;
        }
        return nfiles > 0 ? process_files(wk, d, arena, nfiles) : 0;
}

static int load_rules(struct walk *w, struct walk_dir *d, unsigned present)
{
        const struct ignore_dir *parent = d->parent        ? d->parent->ign
                                          : w->n_ancestors ? &w->ancestors[w->n_ancestors - 1]
                                                           : NULL;
        int r;

        if (!parent)
                d->ign_own.global = w->o->global_excludes;
        r = ignore_dir_load(&d->ign_own, parent, d->fd, d->abs_len, present);
        if (r < 0)
                return r;
        if (r > 0) {
                d->own_ign = true;
                d->ign = &d->ign_own;
        } else {
                ignore_dir_release(&d->ign_own);
                d->ign = parent;
        }
        return 0;
}

static int process_dir(struct worker *wk, struct walk_dir *d, unsigned level)
{
        struct level *lv;
        size_t dpos = 0, dlen = 0;
        unsigned present = 0;
        bool eof = false, overflowed = false, loaded = false;
        int fd, r = 0;

        if (level > SEARCH_WALK_DEPTH_MAX)
                return 0;
        lv = &wk->levels[level];
        if (!lv->dents) {
                lv->dents = malloc(DENTS_BUF);
                if (!lv->dents)
                        return -ENOMEM;
                buf_init(&lv->arena, ARENA_MAX);
        }

        /* No symlink on the way: the directory judged is the one read (search-walk.h). */
        fd = fs_open_no_symlinks(d->abs_len ? d->abs : "/", O_RDONLY | O_DIRECTORY);
        if (fd < 0)
                return 0; /* unreadable or gone: skipped silently, as rg */
        d->fd = fd;
        atomic_store(&d->fd_users, 1);

        while (!eof && r >= 0 && !stopped(wk->w)) {
                buf_reset(&lv->arena);
                for (;;) {
                        struct dirent64 *de;
                        size_t n;
                        int k;

                        if (dpos >= dlen) {
                                ssize_t got = getdents64(d->fd, lv->dents, DENTS_BUF);

                                if (got < 0 && errno == EINTR)
                                        continue;
                                if (got <= 0) {
                                        eof = true;
                                        break;
                                }
                                dlen = (size_t) got;
                                dpos = 0;
                        }
                        de = (struct dirent64 *) (lv->dents + dpos);
                        if (de->d_name[0] == '.' &&
                            (de->d_name[1] == '\0' ||
                             (de->d_name[1] == '.' && de->d_name[2] == '\0'))) {
                                dpos += de->d_reclen;
                                continue;
                        }
                        n = strlen(de->d_name);
                        if (lv->arena.len + n + 2 > ARENA_MAX) {
                                overflowed = true;
                                break;
                        }
                        present |= ignore_present_bit(de->d_name);
                        k = buf_append_char(&lv->arena, (char) de->d_type);
                        if (k >= 0)
                                k = buf_append(&lv->arena, de->d_name, n + 1);
                        if (k < 0) {
                                r = k == -E2BIG ? 0 : k;
                                overflowed = true;
                                break;
                        }
                        dpos += de->d_reclen;
                }
                if (r < 0)
                        break;
                if (!loaded) {
                        /* A directory read in several rounds: its ignore files may come later. */
                        r = load_rules(wk->w, d, eof && !overflowed ? present : IGNORE_PRESENT_ALL);
                        if (r < 0)
                                break;
                        loaded = true;
                }
                r = judge_arena(wk, d, &lv->arena, level);
        }
        fd_release(d);
        return r;
}

static void run_job(struct worker *wk, struct job *j)
{
        if (j->kind == JOB_DIR) {
                if (!stopped(wk->w)) {
                        int r = process_dir(wk, j->p, 0);

                        if (r < 0)
                                set_stop(wk->w, r);
                }
                dir_unref(j->p);
        } else {
                if (!stopped(wk->w))
                        run_batch(wk, j->p);
                free_batch(j->p);
        }
}

static void worker_loop(struct worker *wk)
{
        struct walk *w = wk->w;

        for (;;) {
                struct job j;

                pthread_mutex_lock(&w->lock);
                /* Woken by a push or by the last running job finishing (pending == 0). */
                while (w->n_jobs == 0 && w->pending > 0)
                        pthread_cond_wait(&w->cond, &w->lock);
                if (w->n_jobs == 0) {
                        pthread_mutex_unlock(&w->lock);
                        return;
                }
                j = w->jobs[--w->n_jobs];
                if (j.kind == JOB_FILES)
                        w->batches--;
                pthread_mutex_unlock(&w->lock);

                run_job(wk, &j);

                pthread_mutex_lock(&w->lock);
                if (--w->pending == 0)
                        pthread_cond_broadcast(&w->cond);
                pthread_mutex_unlock(&w->lock);
        }
}

static void worker_free(struct worker *wk)
{
        if (!wk)
                return;
        for (size_t i = 0; i < ELEMENTSOF(wk->levels); i++) {
                free(wk->levels[i].dents);
                buf_release(&wk->levels[i].arena);
        }
        free(wk);
}

static void *worker_main(void *p)
{
        struct worker *wk = p;
        struct walk *w = wk->w;
        int r = 0;

        if (w->o->thread_init)
                r = w->o->thread_init(w->o->userdata, &wk->state);
        if (r < 0) {
                set_stop(w, r);
                /* Still drain the stack, so the walk ends. */
        }
        worker_loop(wk);
        if (r >= 0 && w->o->thread_done)
                w->o->thread_done(wk->state, w->o->userdata);
        return NULL;
}

unsigned search_walk_threads(unsigned threads)
{
        long n = threads;

        if (n == 0)
                n = sysconf(_SC_NPROCESSORS_ONLN);
        if (n < 1)
                n = 1;
        return (unsigned) MIN(n, (long) SEARCH_WALK_THREADS_MAX);
}

/* The ignore rules of the root's ancestors, "/" first (ripgrep reads them too). */
static int load_ancestors(struct walk *w)
{
        const char *root = w->o->root;
        size_t n = 0, len = w->root_len;

        for (size_t i = 0; i < len; i++)
                if (root[i] == '/')
                        n++;
        /* "/a/b" has the ancestors "/" and "/a": one per slash. */
        w->ancestors = calloc(n ? n : 1, sizeof(*w->ancestors));
        if (!w->ancestors)
                return -ENOMEM;
        for (size_t i = 0, k = 0; i < len && k < n; i++) {
                _cleanup_free_ char *dir = NULL;
                _cleanup_close_ int fd = -EBADF;
                const struct ignore_dir *parent = k ? &w->ancestors[k - 1] : NULL;
                int r;

                if (root[i] != '/')
                        continue;
                dir = strndup(root, i);
                if (!dir)
                        return -ENOMEM;
                fd = open(i ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                w->n_ancestors = k + 1;
                if (k == 0)
                        w->ancestors[0].global = w->o->global_excludes;
                if (fd < 0) {
                        ignore_dir_link(&w->ancestors[k], parent, i, false);
                        k++;
                        continue;
                }
                r = ignore_dir_load(&w->ancestors[k], parent, fd, i, IGNORE_PRESENT_ALL);
                if (r < 0)
                        return r;
                k++;
        }
        return 0;
}

int search_walk_run(const struct search_walk_opts *o)
{
        struct walk w = {
                .o = o,
                .lock = PTHREAD_MUTEX_INITIALIZER,
                .cond = PTHREAD_COND_INITIALIZER,
                .prefix = o->override_prefix ? o->override_prefix : "",
        };
        pthread_t tids[SEARCH_WALK_THREADS_MAX];
        struct worker *workers[SEARCH_WALK_THREADS_MAX] = {};
        struct walk_dir *root = NULL;
        unsigned n = search_walk_threads(o->threads), started = 0;
        struct stat st;
        int r;

        assert(o->root && o->root[0] == '/' && o->on_file);
        w.root_len = strlen(o->root);
        while (w.root_len > 0 && o->root[w.root_len - 1] == '/')
                w.root_len--;
        w.prefix_len = strlen(w.prefix);
        w.anchored_overrides = ignore_file_has_anchored(o->overrides);
        if (w.root_len > SEARCH_WALK_PATH_MAX || w.prefix_len > SEARCH_WALK_PATH_MAX)
                return -ENAMETOOLONG;
        if (stat(w.root_len ? o->root : "/", &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;

        atomic_init(&w.stop, 0);
        w.jobs = malloc(SEARCH_WALK_QUEUE_MAX * sizeof(*w.jobs));
        r = w.jobs ? load_ancestors(&w) : -ENOMEM;
        if (r >= 0)
                r = dir_new(NULL, o->root, w.root_len, &root);
        if (r >= 0) {
                root->ign = w.n_ancestors ? &w.ancestors[w.n_ancestors - 1] : NULL;
                w.jobs[w.n_jobs++] = (struct job){.kind = JOB_DIR, .p = root};
                w.pending = 1;
                for (unsigned i = 0; i < n; i++) {
                        workers[i] = calloc(1, sizeof(*workers[i]));
                        if (!workers[i]) {
                                r = -ENOMEM;
                                break;
                        }
                        workers[i]->w = &w;
                }
        }
        if (r >= 0) {
                /* This thread is worker 0; a thread that cannot be created is just not there. */
                for (unsigned i = 1; i < n; i++) {
                        if (pthread_create(&tids[i], NULL, worker_main, workers[i]) != 0)
                                break;
                        started = i;
                }
                (void) worker_main(workers[0]);
                for (unsigned i = 1; i <= started; i++)
                        (void) pthread_join(tids[i], NULL);
                r = atomic_load(&w.stop);
        } else if (root) {
                /* Nothing ran: drop the queued root. */
                dir_unref(root);
        }

        for (unsigned i = 0; i < n; i++)
                worker_free(workers[i]);
        for (size_t i = 0; i < w.n_ancestors; i++)
                ignore_dir_release(&w.ancestors[i]);
        free(w.ancestors);
        free(w.jobs);
        pthread_mutex_destroy(&w.lock);
        pthread_cond_destroy(&w.cond);
        return r;
}
