/* SPDX-License-Identifier: MIT */
#include "core/loop/loop.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/wait.h>

#include "basic/fd-util.h"

enum source_kind {
        SOURCE_IO,
        SOURCE_TIME,
        SOURCE_CHILD,
};

struct loop_source {
        struct loop *loop;
        enum source_kind kind;
        int fd; /* watched in the epoll set while in_epoll */
        bool in_epoll;
        bool removed;
        void *userdata;
        union {
                loop_io_fn io;
                loop_time_fn time;
                loop_child_fn child;
        } cb;
        usec_t when;                     /* SOURCE_TIME: USEC_INFINITY when disarmed */
        uint64_t fired_in;               /* SOURCE_TIME: the dispatch it last fired in */
        pid_t pid;                       /* SOURCE_CHILD */
        bool exited;                     /* SOURCE_CHILD: reaped, its callback ran */
        bool no_reap;                    /* SOURCE_CHILD: WNOWAIT (loop_child_set_reap()) */
        struct loop_source *prev, *next; /* live sources */
        struct loop_source *next_dead;
};

struct loop {
        int epfd;
        struct loop_source *live;
        struct loop_source *dead; /* removed during dispatch, freed after it */
        unsigned n_time;          /* live time sources: a dispatch looks for due ones */
        uint64_t dispatch;        /* counts dispatches: a timer fires once in each */
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

static struct loop_source *source_new(struct loop *l, enum source_kind kind, void *userdata)
{
        struct loop_source *s = calloc(1, sizeof(*s));

        if (!s)
                return NULL;
        *s = (struct loop_source){
                .loop = l, .kind = kind, .fd = -EBADF, .userdata = userdata, .when = USEC_INFINITY};
        return s;
}

static void source_link(struct loop_source *s, struct loop_source **ret_source)
{
        struct loop *l = s->loop;

        s->next = l->live;
        if (l->live)
                l->live->prev = s;
        l->live = s;
        if (s->kind == SOURCE_TIME)
                l->n_time++;
        if (ret_source)
                *ret_source = s;
}

static int source_watch(struct loop_source *s, int fd, uint32_t events)
{
        struct epoll_event ev = {.events = events, .data.ptr = s};

        if (epoll_ctl(s->loop->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
                return -errno;
        s->fd = fd;
        s->in_epoll = true;
        return 0;
}

static void source_unwatch(struct loop_source *s)
{
        if (!s->in_epoll)
                return;
        (void) epoll_ctl(s->loop->epfd, EPOLL_CTL_DEL, s->fd, NULL);
        s->in_epoll = false;
}

int loop_add(struct loop *l, int fd, uint32_t events, loop_io_fn cb, void *userdata,
             struct loop_source **ret_source)
{
        struct loop_source *s = source_new(l, SOURCE_IO, userdata);
        int r;

        if (!s)
                return -ENOMEM;
        s->cb.io = cb;
        r = source_watch(s, fd, events);
        if (r < 0) {
                free(s);
                return r;
        }
        source_link(s, ret_source);
        return 0;
}

int loop_modify(struct loop_source *s, uint32_t events)
{
        struct epoll_event ev = {.events = events, .data.ptr = s};

        if (epoll_ctl(s->loop->epfd, EPOLL_CTL_MOD, s->fd, &ev) < 0)
                return -errno;
        return 0;
}

int loop_add_time(struct loop *l, usec_t when, loop_time_fn cb, void *userdata,
                  struct loop_source **ret_source)
{
        struct loop_source *s = source_new(l, SOURCE_TIME, userdata);

        if (!s)
                return -ENOMEM;
        s->cb.time = cb;
        s->when = when;
        source_link(s, ret_source);
        return 0;
}

void loop_time_set(struct loop_source *s, usec_t when)
{
        s->when = when;
        /* Armed from its own callback: it may fire again, but in the next dispatch. */
}

void loop_time_set_relative(struct loop_source *s, usec_t usec)
{
        usec_t now = now_usec();

        loop_time_set(s, usec >= USEC_INFINITY - now ? USEC_INFINITY : now + usec);
}

usec_t loop_time_get(const struct loop_source *s)
{
        return s->when;
}

int loop_add_child(struct loop *l, pid_t pid, int pidfd, loop_child_fn cb, void *userdata,
                   struct loop_source **ret_source)
{
        struct loop_source *s;
        int r;

        if (pidfd < 0)
                return -EBADF;
        s = source_new(l, SOURCE_CHILD, userdata);
        if (!s)
                return -ENOMEM;
        s->cb.child = cb;
        s->pid = pid;
        r = source_watch(s, pidfd, EPOLLIN);
        if (r < 0) {
                free(s);
                return r;
        }
        source_link(s, ret_source);
        return 0;
}

void loop_child_set_reap(struct loop_source *s, bool reap)
{
        s->no_reap = !reap;
}

bool loop_child_exited(const struct loop_source *s)
{
        return s && s->exited;
}

void loop_remove(struct loop_source *s)
{
        struct loop *l;

        if (!s || s->removed)
                return;
        l = s->loop;
        source_unwatch(s);
        s->removed = true;
        if (s->kind == SOURCE_TIME)
                l->n_time--;
        if (s->prev)
                s->prev->next = s->next;
        else
                l->live = s->next;
        if (s->next)
                s->next->prev = s->prev;
        /* Always defer the free: a pending event in this batch may name it. */
        s->next_dead = l->dead;
        l->dead = s;
        if (!l->dispatching)
                free_dead(l);
}

/* A pidfd turned readable: reap the child (unless no_reap), and say so once. */
static void dispatch_child(struct loop_source *s)
{
        siginfo_t si = {};

        if (waitid(P_PID, (id_t) s->pid, &si, WEXITED | WNOHANG | (s->no_reap ? WNOWAIT : 0)) < 0) {
                /* Reaped elsewhere (ECHILD): gone all the same, how it ended unknown. */
                si = (siginfo_t){.si_pid = s->pid, .si_code = 0};
        } else if (si.si_pid == 0)
                return; /* readable but not yet waitable: the next event says */
        source_unwatch(s);
        s->exited = true;
        s->cb.child(s, &si, s->userdata);
}

/* The earliest armed time source, or USEC_INFINITY. */
static usec_t next_due(const struct loop *l)
{
        usec_t best = USEC_INFINITY;

        if (l->n_time == 0)
                return best;
        for (const struct loop_source *s = l->live; s; s = s->next)
                if (s->kind == SOURCE_TIME && s->when < best)
                        best = s->when;
        return best;
}

/*
 * Fire the time sources due at @now, each at most once in this dispatch (a callback that arms
 * its source in the past fires at the next). A callback may add or remove sources, so the
 * scan starts over after each one; there are few time sources in a loop.
 */
static int dispatch_time(struct loop *l, usec_t now)
{
        int n = 0;

        for (;;) {
                struct loop_source *due = NULL;

                for (struct loop_source *s = l->live; s; s = s->next)
                        if (s->kind == SOURCE_TIME && s->when <= now &&
                            s->fired_in != l->dispatch) {
                                due = s;
                                break;
                        }
                if (!due)
                        return n;
                due->when = USEC_INFINITY;
                due->fired_in = l->dispatch;
                due->cb.time(due, now, due->userdata);
                n++;
        }
}

int loop_run_once(struct loop *l, int timeout_ms)
{
        struct epoll_event evs[32];
        usec_t due = next_due(l);
        int n, handled;

        if (due != USEC_INFINITY) {
                int until = poll_timeout_ms(due);

                if (timeout_ms < 0 || until < timeout_ms)
                        timeout_ms = until;
        }
        do
                n = epoll_wait(l->epfd, evs, (int) ELEMENTSOF(evs), timeout_ms);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;

        l->dispatching = true;
        l->dispatch++;
        handled = n;
        for (int i = 0; i < n; i++) {
                struct loop_source *s = evs[i].data.ptr;

                if (s->removed || !s->in_epoll)
                        continue;
                if (s->kind == SOURCE_CHILD)
                        dispatch_child(s);
                else
                        s->cb.io(s, s->fd, evs[i].events, s->userdata);
        }
        if (l->n_time > 0)
                handled += dispatch_time(l, now_usec());
        l->dispatching = false;
        free_dead(l);
        return handled;
}
