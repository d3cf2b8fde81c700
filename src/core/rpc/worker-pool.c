/* SPDX-License-Identifier: MIT */
#include "core/rpc/worker-pool.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>

struct job {
        worker_job_fn fn;
        void *userdata;
        struct job *next;
};

struct worker_pool {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct job *head, *tail;
        size_t max_threads, n_threads, n_idle;
        pthread_t *threads;
        bool stopping;
};

static void *worker_main(void *arg)
{
        struct worker_pool *p = arg;

        pthread_mutex_lock(&p->lock);
        for (;;) {
                struct job *j;

                while (!p->head && !p->stopping) {
                        p->n_idle++;
                        pthread_cond_wait(&p->cond, &p->lock);
                        p->n_idle--;
                }
                if (!p->head)
                        break; /* stopping and drained */
                j = p->head;
                p->head = j->next;
                if (!p->head)
                        p->tail = NULL;
                pthread_mutex_unlock(&p->lock);
                j->fn(j->userdata);
                free(j);
                pthread_mutex_lock(&p->lock);
        }
        pthread_mutex_unlock(&p->lock);
        return NULL;
}

int worker_pool_new(size_t max_threads, struct worker_pool **ret)
{
        struct worker_pool *p;

        if (max_threads == 0)
                return -EINVAL;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->threads = calloc(max_threads, sizeof(pthread_t));
        if (!p->threads) {
                free(p);
                return -ENOMEM;
        }
        p->max_threads = max_threads;
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->cond, NULL);
        *ret = p;
        return 0;
}

struct worker_pool *worker_pool_free(struct worker_pool *p)
{
        if (!p)
                return NULL;
        pthread_mutex_lock(&p->lock);
        p->stopping = true;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
        for (size_t i = 0; i < p->n_threads; i++)
                pthread_join(p->threads[i], NULL);
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->cond);
        free(p->threads);
        free(p);
        return NULL;
}

int worker_pool_submit(struct worker_pool *p, worker_job_fn fn, void *userdata)
{
        struct job *j = malloc(sizeof(*j));
        int r = 0;

        if (!j)
                return -ENOMEM;
        *j = (struct job){ .fn = fn, .userdata = userdata };

        pthread_mutex_lock(&p->lock);
        if (p->tail)
                p->tail->next = j;
        else
                p->head = j;
        p->tail = j;
        /*
         * Start a thread only when nobody is idle to take the job: a script
         * that calls tools one at a time keeps using one thread.
         */
        if (p->n_idle == 0 && p->n_threads < p->max_threads) {
                pthread_attr_t attr;

                pthread_attr_init(&attr);
                /* 1 MiB: enough for jansson recursion on deep (bounded) JSON; only touched pages cost RSS. */
                pthread_attr_setstacksize(&attr, 1024 * 1024);
                if (pthread_create(&p->threads[p->n_threads], &attr, worker_main, p) == 0)
                        p->n_threads++;
                else if (p->n_threads == 0)
                        r = -EAGAIN;
                pthread_attr_destroy(&attr);
        }
        if (r < 0) {
                /* No thread at all could start: unqueue and report. */
                p->head = p->tail = NULL;
                free(j);
        } else
                pthread_cond_signal(&p->cond);
        pthread_mutex_unlock(&p->lock);
        return r;
}

size_t worker_pool_threads(struct worker_pool *p)
{
        size_t n;

        pthread_mutex_lock(&p->lock);
        n = p->n_threads;
        pthread_mutex_unlock(&p->lock);
        return n;
}
