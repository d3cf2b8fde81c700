/* SPDX-License-Identifier: MIT */
/*
 * The session table (session.h). One mutex guards the table; interpreters start and die
 * outside it (a start takes an interpreter's start-up, a death a kill and a reap), while
 * the session is marked busy or already out of the table.
 *
 * One thread of the table's own starts every interpreter and closes the idle ones: an interpreter's
 * init dies with the thread that started it (PR_SET_PDEATHSIG is the thread's), and the
 * cell that needs an interpreter may be on a thread that ends with the call (ptc mcp's). It
 * sleeps until the next session's idle deadline, a start request or the end (an eventfd
 * wakes it): no interval.
 */

#include "core/session/session.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/fd-util.h"
#include "core/exec/exec-interp.h"

/* Ids of gone sessions remembered for the note of their next cell. */
#define GONE_KEEP 64

struct session {
        char id[SESSION_ID_MAX + 1];
        struct exec_interp *interp; /* NULL: gone (then @gone says why) */
        unsigned cells;
        bool busy;
        usec_t last_used;
        char gone[256];
};

/* An interpreter to start on the table's thread, for a cell waiting in session_begin(). */
struct start_request {
        const struct exec_opts *o;
        struct exec_interp *interp;
        int r;
        struct diag diag;
        bool done;
};

struct session_table {
        pthread_mutex_t lock;
        pthread_cond_t started;        /* a start_request is done */
        pthread_mutex_t one_start;     /* one request at a time */
        struct start_request *request; /* under lock */
        struct session **v;
        size_t n, cap;
        unsigned max;
        usec_t idle;
        int wake_fd;
        bool stopping;
        /* The warm pool: ready interpreters for one-shot runs, started with warm_opts (the
         * engine's, its cancel_fd stop_fd: a start waiting for a slow interpreter ends
         * when the table does). */
        struct exec_opts warm_opts_copy;
        const struct exec_opts *warm_opts;
        int stop_fd;
        unsigned warm;
        struct exec_interp **ready;
        unsigned n_ready;
        struct exec_interp **discard; /* used interpreters to free, on the thread */
        size_t n_discard, cap_discard;
        bool warm_failed; /* the last start failed: no retry until a take */
        pthread_t sweeper;
        bool have_sweeper;
};

bool session_id_is_valid(const char *id)
{
        size_t n = 0;

        if (!id)
                return false;
        for (; id[n]; n++)
                if (!((id[n] >= 'a' && id[n] <= 'z') || (id[n] >= 'A' && id[n] <= 'Z') ||
                      (id[n] >= '0' && id[n] <= '9') || id[n] == '.' || id[n] == '_' ||
                      id[n] == '-'))
                        return false;
        return n >= 1 && n <= SESSION_ID_MAX;
}

static void wake(struct session_table *t)
{
        uint64_t one = 1;

        (void) !write(t->wake_fd, &one, sizeof(one));
}

static struct session *find(struct session_table *t, const char *id)
{
        for (size_t i = 0; i < t->n; i++)
                if (strcmp(t->v[i]->id, id) == 0)
                        return t->v[i];
        return NULL;
}

static size_t live_count(const struct session_table *t)
{
        size_t n = 0;

        for (size_t i = 0; i < t->n; i++)
                n += t->v[i]->interp != NULL || t->v[i]->busy;
        return n;
}

/* Forget the oldest gone sessions beyond GONE_KEEP. Under the lock. */
static void trim_gone(struct session_table *t)
{
        size_t gone = 0;

        for (size_t i = 0; i < t->n; i++)
                gone += !t->v[i]->interp && !t->v[i]->busy;
        for (size_t i = 0; gone > GONE_KEEP && i < t->n;) {
                struct session *s = t->v[i];

                if (s->interp || s->busy) {
                        i++;
                        continue;
                }
                free(s);
                memmove(&t->v[i], &t->v[i + 1], (t->n - i - 1) * sizeof(*t->v));
                t->n--;
                gone--;
        }
}

/* Mark @s gone for @why; its interpreter is the caller's to free, outside the lock. */
_printf_(2, 3) static struct exec_interp *make_gone(struct session *s, const char *fmt, ...)
{
        struct exec_interp *k = s->interp;
        va_list ap;

        s->interp = NULL;
        va_start(ap, fmt);
        (void) vsnprintf(s->gone, sizeof(s->gone), fmt, ap);
        va_end(ap);
        return k;
}

static void *sweeper_main(void *userdata)
{
        struct session_table *t = userdata;

        pthread_mutex_lock(&t->lock);
        while (!t->stopping) {
                usec_t now = now_usec(), next = USEC_INFINITY;
                struct start_request *req = t->request;
                struct exec_interp *dead[GONE_KEEP];
                size_t n_dead = 0;

                if (t->n_discard > 0) {
                        struct exec_interp **v = t->discard;
                        size_t n = t->n_discard;

                        t->discard = NULL;
                        t->n_discard = t->cap_discard = 0;
                        pthread_mutex_unlock(&t->lock);
                        for (size_t i = 0; i < n; i++)
                                exec_interp_free(v[i]);
                        free(v);
                        pthread_mutex_lock(&t->lock);
                        continue;
                }
                if (req && !req->done) {
                        pthread_mutex_unlock(&t->lock);
                        req->r = exec_interp_start(req->o, &req->interp, &req->diag);
                        pthread_mutex_lock(&t->lock);
                        req->done = true;
                        t->request = NULL;
                        pthread_cond_broadcast(&t->started);
                        continue;
                }

                for (size_t i = 0; i < t->n; i++) {
                        struct session *s = t->v[i];

                        if (!s->interp || s->busy)
                                continue;
                        if (s->last_used + t->idle <= now && n_dead < ELEMENTSOF(dead))
                                dead[n_dead++] = make_gone(s, "closed after %.0f s without a cell",
                                                           (double) t->idle / USEC_PER_SEC);
                        else if (s->last_used + t->idle < next)
                                next = s->last_used + t->idle;
                }
                trim_gone(t);
                if (t->warm_opts && t->n_ready < t->warm && !t->warm_failed && !n_dead) {
                        struct exec_interp *k = NULL;
                        struct diag d = {};
                        int r;

                        pthread_mutex_unlock(&t->lock);
                        r = exec_interp_start(t->warm_opts, &k, &d);
                        pthread_mutex_lock(&t->lock);
                        if (r < 0 || t->stopping)
                                t->warm_failed = r < 0;
                        if (r >= 0 && t->n_ready < t->warm && !t->stopping) {
                                t->ready[t->n_ready++] = k;
                                k = NULL;
                        }
                        if (k) {
                                pthread_mutex_unlock(&t->lock);
                                exec_interp_free(k);
                                pthread_mutex_lock(&t->lock);
                        }
                        continue;
                }
                pthread_mutex_unlock(&t->lock);
                for (size_t i = 0; i < n_dead; i++)
                        exec_interp_free(dead[i]);
                /* Until the next idle end or a wake; after closing some, only a look. */
                if (fd_wait_readable(t->wake_fd, n_dead ? 0 : next) > 0) {
                        uint64_t v;
                        (void) !read(t->wake_fd, &v, sizeof(v));
                }
                pthread_mutex_lock(&t->lock);
        }
        pthread_mutex_unlock(&t->lock);
        return NULL;
}

int session_table_new(unsigned max, usec_t idle, struct session_table **ret)
{
        struct session_table *t = calloc(1, sizeof(*t));
        int r;

        if (!t)
                return -ENOMEM;
        pthread_mutex_init(&t->lock, NULL);
        pthread_mutex_init(&t->one_start, NULL);
        pthread_cond_init(&t->started, NULL);
        t->max = max ? max : 1;
        t->idle = idle;
        t->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        t->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (t->wake_fd < 0 || t->stop_fd < 0) {
                r = -errno;
                session_table_free(t);
                return r;
        }
        r = -pthread_create(&t->sweeper, NULL, sweeper_main, t);
        if (r < 0) {
                session_table_free(t);
                return r;
        }
        t->have_sweeper = true;
        *ret = t;
        return 0;
}

struct session_table *session_table_free(struct session_table *t)
{
        if (!t)
                return NULL;
        if (t->have_sweeper) {
                pthread_mutex_lock(&t->lock);
                t->stopping = true;
                pthread_mutex_unlock(&t->lock);
                wake(t);
                {
                        uint64_t one = 1;

                        (void) !write(t->stop_fd, &one, sizeof(one));
                }
                pthread_join(t->sweeper, NULL);
        }
        for (size_t i = 0; i < t->n; i++) {
                exec_interp_free(t->v[i]->interp);
                free(t->v[i]);
        }
        free(t->v);
        for (unsigned i = 0; i < t->n_ready; i++)
                exec_interp_free(t->ready[i]);
        free(t->ready);
        for (size_t i = 0; i < t->n_discard; i++)
                exec_interp_free(t->discard[i]);
        free(t->discard);
        safe_close(t->wake_fd);
        safe_close(t->stop_fd);
        pthread_cond_destroy(&t->started);
        pthread_mutex_destroy(&t->one_start);
        pthread_mutex_destroy(&t->lock);
        free(t);
        return NULL;
}

/* The least recently used live session that is not running a cell, or NULL. */
static struct session *least_recently_used_idle(struct session_table *t)
{
        struct session *best = NULL;

        for (size_t i = 0; i < t->n; i++) {
                struct session *s = t->v[i];

                if (s->interp && !s->busy && (!best || s->last_used < best->last_used))
                        best = s;
        }
        return best;
}

/*
 * Room for a new session @id under sessions.max: the least recently used idle one is made
 * gone (its interpreter in *ret_evicted, the caller's to free outside the lock). -EBUSY when
 * every live one runs a cell. Under the lock.
 */
static int make_room(struct session_table *t, const char *id, struct exec_interp **ret_evicted,
                     struct diag *reterr)
{
        struct session *lru;

        *ret_evicted = NULL;
        if (live_count(t) < t->max)
                return 0;
        lru = least_recently_used_idle(t);
        if (!lru)
                return diag_set(reterr, -EBUSY,
                                "every one of the %u live sessions is running a cell "
                                "(sessions.max)",
                                t->max);
        *ret_evicted = make_gone(lru,
                                 "closed to make room for session '%s' (at most %u live sessions, "
                                 "sessions.max)",
                                 id, t->max);
        return 0;
}

static int add_session(struct session_table *t, const char *id, struct session **ret)
{
        struct session *s;

        if (t->n == t->cap) {
                size_t cap = t->cap ? t->cap * 2 : 8;
                struct session **v = realloc(t->v, cap * sizeof(*v));

                if (!v)
                        return -ENOMEM;
                t->v = v;
                t->cap = cap;
        }
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        (void) snprintf(s->id, sizeof(s->id), "%s", id);
        t->v[t->n++] = s;
        *ret = s;
        return 0;
}

void session_table_set_warm(struct session_table *t, unsigned warm, const struct exec_opts *o)
{
        struct exec_interp **v = warm ? calloc(warm, sizeof(*v)) : NULL;

        pthread_mutex_lock(&t->lock);
        if (v) {
                t->ready = v;
                t->warm = warm;
                t->warm_opts_copy = *o;
                t->warm_opts_copy.cancel_fd = t->stop_fd;
                t->warm_opts = &t->warm_opts_copy;
        }
        pthread_mutex_unlock(&t->lock);
        wake(t);
}

struct exec_interp *session_take_warm(struct session_table *t)
{
        struct exec_interp *k = NULL;

        pthread_mutex_lock(&t->lock);
        while (t->n_ready > 0 && !k) {
                k = t->ready[--t->n_ready];
                if (!exec_interp_alive(k)) {
                        /* Died waiting (killed from outside): not a run's to find out. */
                        pthread_mutex_unlock(&t->lock);
                        exec_interp_free(k);
                        k = NULL;
                        pthread_mutex_lock(&t->lock);
                }
        }
        t->warm_failed = false;
        pthread_mutex_unlock(&t->lock);
        /*
         * The refill starts when the run hands its interpreter back (session_discard()): an
         * interpreter starting beside the run would take the CPU the run needs. An empty
         * pool starts filling now.
         */
        if (!k)
                wake(t);
        return k;
}

void session_discard(struct session_table *t, struct exec_interp *k)
{
        if (!k)
                return;
        pthread_mutex_lock(&t->lock);
        if (t->n_discard == t->cap_discard) {
                size_t cap = t->cap_discard ? t->cap_discard * 2 : 8;
                struct exec_interp **v = realloc(t->discard, cap * sizeof(*v));

                if (!v) {
                        /* Out of memory: freed here, at the caller's cost. */
                        pthread_mutex_unlock(&t->lock);
                        exec_interp_free(k);
                        return;
                }
                t->discard = v;
                t->cap_discard = cap;
        }
        t->discard[t->n_discard++] = k;
        pthread_mutex_unlock(&t->lock);
        wake(t);
}

static int start_on_table_thread(struct session_table *t, const struct exec_opts *o,
                                 struct exec_interp **ret, struct diag *reterr)
{
        struct start_request req = {.o = o};

        pthread_mutex_lock(&t->one_start);
        pthread_mutex_lock(&t->lock);
        t->request = &req;
        wake(t);
        while (!req.done)
                pthread_cond_wait(&t->started, &t->lock);
        pthread_mutex_unlock(&t->lock);
        pthread_mutex_unlock(&t->one_start);
        if (req.r < 0)
                return diag_set(reterr, req.r, "%s", req.diag.message);
        *ret = req.interp;
        return 0;
}

int session_begin(struct session_table *t, const char *id, bool reset, const struct exec_opts *o,
                  struct session_lease *ret, struct diag *reterr)
{
        struct exec_interp *old = NULL, *evicted = NULL, *k = NULL;
        struct session *s;
        char note[sizeof(ret->note)] = "";
        int r;

        pthread_mutex_lock(&t->lock);
        s = find(t, id);
        if (s && s->busy) {
                pthread_mutex_unlock(&t->lock);
                return diag_set(reterr, -EBUSY,
                                "session '%s' is running a cell (the cells of a session run one "
                                "at a time)",
                                id);
        }
        if (s && s->interp && reset)
                old = make_gone(s, "reset");
        else if (s && s->interp && !exec_interp_alive(s->interp))
                /* Killed from outside, or a thread of a cell called os._exit() after it. */
                old = make_gone(s, "lost between cells (its interpreter died)");
        if (s && !s->interp && s->gone[0] && !reset)
                (void) snprintf(note, sizeof(note),
                                "session '%s' was %s; this cell started a new one", id, s->gone);
        if (!s || !s->interp) {
                r = make_room(t, id, &evicted, reterr);
                if (r < 0) {
                        pthread_mutex_unlock(&t->lock);
                        exec_interp_free(old);
                        return r;
                }
                if (!s && (r = add_session(t, id, &s)) < 0) {
                        pthread_mutex_unlock(&t->lock);
                        exec_interp_free(old);
                        exec_interp_free(evicted);
                        return diag_set(reterr, r, "out of memory");
                }
                s->cells = 0;
        }
        s->busy = true;
        k = s->interp;
        pthread_mutex_unlock(&t->lock);

        exec_interp_free(old);
        exec_interp_free(evicted);
        if (!k) {
                r = start_on_table_thread(t, o, &k, reterr);
                if (r < 0) {
                        pthread_mutex_lock(&t->lock);
                        s->busy = false;
                        s->gone[0] = 0; /* a next cell tries again, with nothing to tell */
                        pthread_mutex_unlock(&t->lock);
                        return r;
                }
                pthread_mutex_lock(&t->lock);
                s->interp = k;
                pthread_mutex_unlock(&t->lock);
        }
        *ret = (struct session_lease){.interp = k, .cell = ++s->cells, .session = s};
        (void) snprintf(ret->note, sizeof(ret->note), "%s", note);
        return 0;
}

void session_end(struct session_table *t, struct session_lease *l, bool lost)
{
        struct session *s = l->session;
        struct exec_interp *dead = NULL;

        pthread_mutex_lock(&t->lock);
        s->busy = false;
        s->last_used = now_usec();
        if (lost || !exec_interp_alive(s->interp))
                dead = make_gone(s, "lost in its cell %u", l->cell);
        pthread_mutex_unlock(&t->lock);
        exec_interp_free(dead);
        wake(t);
        *l = (struct session_lease){};
}

int session_close(struct session_table *t, const char *id, const char *why)
{
        struct exec_interp *k;
        struct session *s;

        pthread_mutex_lock(&t->lock);
        s = find(t, id);
        if (!s || !s->interp) {
                pthread_mutex_unlock(&t->lock);
                return -ENOENT;
        }
        if (s->busy) {
                pthread_mutex_unlock(&t->lock);
                return -EBUSY;
        }
        k = make_gone(s, "%s", why ? why : "");
        pthread_mutex_unlock(&t->lock);
        exec_interp_free(k);
        return 0;
}

int session_fork(struct session_table *t, const char *id, const char *new_id, struct diag *reterr)
{
        struct exec_interp *evicted = NULL, *copy = NULL, *dead = NULL;
        struct session *s, *n;
        int r;

        if (strcmp(id, new_id) == 0)
                return diag_set(reterr, -EINVAL, "session '%s' cannot be forked onto itself", id);
        pthread_mutex_lock(&t->lock);
        s = find(t, id);
        n = find(t, new_id);
        if (!s || !s->interp)
                r = diag_set(reterr, -ENOENT, "no live session '%s'", id);
        else if (s->busy)
                r = diag_set(reterr, -EBUSY, "session '%s' is running a cell", id);
        else if (!exec_interp_forkable(s->interp))
                r = diag_set(reterr, -EOPNOTSUPP,
                             "a session on a remote backend cannot be forked yet");
        else if (n && (n->interp || n->busy))
                r = diag_set(reterr, -EEXIST,
                             "session '%s' exists (kill it first, or fork to another id)", new_id);
        else if (!exec_interp_alive(s->interp)) {
                dead = make_gone(s, "lost between cells (its interpreter died)");
                r = diag_set(reterr, -ESRCH, "session '%s' was lost between cells", id);
        } else
                r = 0;
        if (r < 0) {
                pthread_mutex_unlock(&t->lock);
                exec_interp_free(dead);
                return r;
        }
        s->busy = true; /* not the one to make room */
        r = make_room(t, new_id, &evicted, reterr);
        if (r < 0) {
                s->busy = false;
                pthread_mutex_unlock(&t->lock);
                return r;
        }
        if (!n && (r = add_session(t, new_id, &n)) < 0) {
                s->busy = false;
                pthread_mutex_unlock(&t->lock);
                exec_interp_free(evicted);
                return diag_set(reterr, r, "out of memory");
        }
        n->busy = true;
        n->gone[0] = 0;
        pthread_mutex_unlock(&t->lock);

        exec_interp_free(evicted);
        r = exec_interp_fork(s->interp, &copy, reterr);

        pthread_mutex_lock(&t->lock);
        s->busy = n->busy = false;
        s->last_used = n->last_used = now_usec();
        if (r >= 0) {
                n->interp = copy;
                n->cells = s->cells;
        }
        if (!exec_interp_alive(s->interp))
                dead = make_gone(s, "lost while it was forked");
        pthread_mutex_unlock(&t->lock);
        exec_interp_free(dead);
        wake(t);
        return r;
}

char *session_table_list(struct session_table *t)
{
        json_auto_t *a = json_array();
        usec_t now = now_usec();
        char *text;

        if (!a)
                return NULL;
        pthread_mutex_lock(&t->lock);
        for (size_t i = 0; i < t->n; i++) {
                const struct session *s = t->v[i];
                json_t *o;

                if (!s->interp)
                        continue;
                o = json_pack("{s:s, s:I, s:f, s:b, s:i}", "session", s->id, "cells",
                              (json_int_t) s->cells, "idle_seconds",
                              /* Tenths of a second: what a person reads. */
                              s->busy ? 0.0
                                      : (double) ((now - s->last_used) / (USEC_PER_SEC / 10)) / 10,
                              "busy", s->busy, "pid", exec_interp_pid(s->interp));
                if (!o || json_array_append_new(a, o) < 0) {
                        pthread_mutex_unlock(&t->lock);
                        return NULL;
                }
        }
        pthread_mutex_unlock(&t->lock);
        text = json_dumps(a, JSON_COMPACT);
        return text;
}
