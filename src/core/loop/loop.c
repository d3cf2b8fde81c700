/* SPDX-License-Identifier: MIT */
#include "core/loop/loop.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>

struct loop_source {
        struct loop *loop;
        int fd;
        loop_io_fn cb;
        void *userdata;
        bool removed;
        struct loop_source *prev, *next; /* live sources */
        struct loop_source *next_dead;
};

struct loop {
        int epfd;
        struct loop_source *live;
        struct loop_source *dead; /* removed during dispatch, freed after it */
        bool dispatching;
};

int loop_new(struct loop **ret)
{
        struct loop *l = calloc(1, sizeof(*l));

        if (!l)
                return -ENOMEM;
        l->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (l->epfd < 0) {
                int r = -errno;
                free(l);
                return r;
        }
        *ret = l;
        return 0;
}

static void free_dead(struct loop *l)
{
        while (l->dead) {
                struct loop_source *s = l->dead;
                l->dead = s->next_dead;
                free(s);
        }
}

struct loop *loop_free(struct loop *l)
{
        if (!l)
                return NULL;
        while (l->live)
                loop_remove(l->live);
        free_dead(l);
        safe_close(l->epfd);
        free(l);
        return NULL;
}

int loop_add(struct loop *l, int fd, uint32_t events, loop_io_fn cb, void *userdata,
             struct loop_source **ret_source)
{
        struct loop_source *s;
        struct epoll_event ev = {.events = events};

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        *s = (struct loop_source){.loop = l, .fd = fd, .cb = cb, .userdata = userdata};
        ev.data.ptr = s;
        if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
                int r = -errno;
                free(s);
                return r;
        }
        s->next = l->live;
        if (l->live)
                l->live->prev = s;
        l->live = s;
        if (ret_source)
                *ret_source = s;
        return 0;
}

int loop_modify(struct loop_source *s, uint32_t events)
{
        struct epoll_event ev = {.events = events, .data.ptr = s};

        if (epoll_ctl(s->loop->epfd, EPOLL_CTL_MOD, s->fd, &ev) < 0)
                return -errno;
        return 0;
}

void loop_remove(struct loop_source *s)
{
        if (!s || s->removed)
                return;
        (void) epoll_ctl(s->loop->epfd, EPOLL_CTL_DEL, s->fd, NULL);
        s->removed = true;
        if (s->prev)
                s->prev->next = s->next;
        else
                s->loop->live = s->next;
        if (s->next)
                s->next->prev = s->prev;
        /* Always defer the free: a pending event in this batch may name it. */
        s->next_dead = s->loop->dead;
        s->loop->dead = s;
        if (!s->loop->dispatching)
                free_dead(s->loop);
}

int loop_run_once(struct loop *l, int timeout_ms)
{
        struct epoll_event evs[32];
        int n;

        do
                n = epoll_wait(l->epfd, evs, (int) ELEMENTSOF(evs), timeout_ms);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;

        l->dispatching = true;
        for (int i = 0; i < n; i++) {
                struct loop_source *s = evs[i].data.ptr;
                if (!s->removed)
                        s->cb(s, s->fd, evs[i].events, s->userdata);
        }
        l->dispatching = false;
        free_dead(l);
        return n;
}
