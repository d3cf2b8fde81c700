/* SPDX-License-Identifier: MIT */
#include "core/remote/pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/strv.h"
#include "core/remote/backend.h"

struct target {
        struct backend *backend;
        unsigned running;
};

/* A run waiting for room: woken through its own eventfd, in the order the waits began. */
struct waiter {
        int efd;
        struct waiter *next;
};

struct backend_pool {
        pthread_mutex_t lock;
        struct target *targets;
        size_t n;
        unsigned cap;
        struct waiter *first, *last;
};

int backend_pool_new(char *const *specs, unsigned cap, struct backend_pool **ret,
                     struct diag *reterr)
{
        struct backend_pool *p;
        size_t n = strv_length(specs);
        int k;

        if (n == 0 || cap == 0)
                return diag_set(reterr, -EINVAL, "a backend pool needs a target and a cap");
        p = calloc(1, sizeof(*p));
        if (!p || !(p->targets = calloc(n, sizeof(*p->targets)))) {
                free(p);
                return -ENOMEM;
        }
        pthread_mutex_init(&p->lock, NULL);
        p->cap = cap;
        for (; p->n < n; p->n++) {
                k = backend_parse(specs[p->n], &p->targets[p->n].backend, reterr);
                if (k < 0) {
                        backend_pool_free(p);
                        return k;
                }
        }
        *ret = p;
        return 0;
}

struct backend_pool *backend_pool_free(struct backend_pool *p)
{
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n; i++)
                backend_free(p->targets[i].backend);
        free(p->targets);
        pthread_mutex_destroy(&p->lock);
        free(p);
        return NULL;
}

/* The least-loaded target with room, or -1; under the lock. */
static ssize_t least_loaded(const struct backend_pool *p)
{
        ssize_t best = -1;

        for (size_t i = 0; i < p->n; i++)
                if (p->targets[i].running < p->cap &&
                    (best < 0 || p->targets[i].running < p->targets[best].running))
                        best = (ssize_t) i;
        return best;
}

static void unlink_waiter(struct backend_pool *p, struct waiter *w)
{
        struct waiter **pp = &p->first, *prev = NULL;

        for (; *pp; prev = *pp, pp = &(*pp)->next)
                if (*pp == w) {
                        *pp = w->next;
                        if (p->last == w)
                                p->last = prev;
                        return;
                }
}

/* Wake the first waiter, which then looks for room; under the lock. */
static void wake_first(struct backend_pool *p)
{
        uint64_t one = 1;

        if (p->first)
                (void) !write(p->first->efd, &one, sizeof(one));
}

int backend_pool_acquire(struct backend_pool *p, usec_t deadline, int cancel_fd,
                         const struct backend **ret, size_t *ret_index)
{
        struct waiter w = {.efd = -EBADF};
        int k = 0;

        pthread_mutex_lock(&p->lock);
        for (;;) {
                ssize_t i;
                uint64_t n;

                /* Room, and nobody waiting before us (or we are the first). */
                if (!p->first || p->first == &w) {
                        i = least_loaded(p);
                        if (i >= 0) {
                                p->targets[i].running++;
                                *ret = p->targets[i].backend;
                                *ret_index = (size_t) i;
                                break;
                        }
                }
                if (w.efd < 0) {
                        w.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
                        if (w.efd < 0) {
                                k = -errno;
                                break;
                        }
                        if (p->last)
                                p->last->next = &w;
                        else
                                p->first = &w;
                        p->last = &w;
                }
                pthread_mutex_unlock(&p->lock);
                k = fd_wait_either(w.efd, cancel_fd, deadline);
                pthread_mutex_lock(&p->lock);
                if (k < 0)
                        break;
                if (k & FD_WAIT_B) {
                        k = -ECANCELED;
                        break;
                }
                k = 0;
                if (deadline != USEC_INFINITY && now_usec() >= deadline) {
                        k = -ETIMEDOUT;
                        break;
                }
                (void) !read(w.efd, &n, sizeof(n));
        }
        if (w.efd >= 0) {
                bool was_first = p->first == &w;

                unlink_waiter(p, &w);
                /* Leaving: the next waiter may find the room we did (or did not) take. */
                if (was_first)
                        wake_first(p);
                safe_close(w.efd);
        }
        pthread_mutex_unlock(&p->lock);
        return k;
}

void backend_pool_release(struct backend_pool *p, size_t index)
{
        pthread_mutex_lock(&p->lock);
        if (index < p->n && p->targets[index].running > 0)
                p->targets[index].running--;
        wake_first(p);
        pthread_mutex_unlock(&p->lock);
}
