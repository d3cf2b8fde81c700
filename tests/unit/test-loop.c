/* SPDX-License-Identifier: MIT */
#include "../lib/ptc-test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "core/loop/loop.h"

/* What a callback saw; one per source under test. */
struct hit {
        int calls;
        int fd;
        uint32_t events;
};

static void record_cb(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct hit *h = userdata;

        h->calls++;
        h->fd = fd;
        h->events = events;
}

/* Drain an eventfd so it stops being readable. */
static void drain_eventfd(int fd)
{
        uint64_t v;

        assert_int_equal(read(fd, &v, sizeof(v)), (ssize_t) sizeof(v));
}

static void kick_eventfd(int fd)
{
        uint64_t one = 1;

        assert_int_equal(write(fd, &one, sizeof(one)), (ssize_t) sizeof(one));
}

static bool fd_is_open(int fd)
{
        return fcntl(fd, F_GETFD) >= 0;
}

static void test_loop_add_pipe_readable(void **state)
{
        struct loop *l = NULL;
        struct loop_source *src = NULL;
        struct hit h = {};
        int p[2];
        char c;

        assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        assert_int_equal(loop_new(&l), 0);
        assert_int_equal(loop_add(l, p[0], EPOLLIN, record_cb, &h, &src), 0);
        assert_non_null(src);

        /* Nothing written yet: a zero timeout returns at once with nothing dispatched. */
        assert_int_equal(loop_run_once(l, 0), 0);
        assert_int_equal(h.calls, 0);

        assert_int_equal(write(p[1], "x", 1), 1);
        assert_int_equal(loop_run_once(l, 1000), 1);
        assert_int_equal(h.calls, 1);
        assert_int_equal(h.fd, p[0]);
        assert_true(h.events & EPOLLIN);

        /* Level-triggered: still readable, dispatched again. */
        assert_int_equal(loop_run_once(l, 0), 1);
        assert_int_equal(h.calls, 2);
        assert_int_equal(read(p[0], &c, 1), 1);
        assert_int_equal(loop_run_once(l, 0), 0);
        assert_int_equal(h.calls, 2);

        /* The writer goes away: EPOLLHUP reaches the callback. */
        p[1] = safe_close(p[1]);
        assert_int_equal(loop_run_once(l, 1000), 1);
        assert_int_equal(h.calls, 3);
        assert_true(h.events & EPOLLHUP);

        l = loop_free(l);
        assert_null(l);
        /* The loop never owned the fd. */
        assert_true(fd_is_open(p[0]));
        safe_close(p[0]);
}

static void test_loop_timeout_waits(void **state)
{
        struct loop *l = NULL;
        struct hit h = {};
        int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        usec_t t0;

        assert_true(efd >= 0);
        assert_int_equal(loop_new(&l), 0);
        assert_int_equal(loop_add(l, efd, EPOLLIN, record_cb, &h, NULL), 0);
        t0 = now_usec();
        assert_int_equal(loop_run_once(l, 100), 0);
        /* It really waited (epoll_wait rounds up, never down). */
        assert_true(now_usec() - t0 >= 90 * USEC_PER_MSEC);
        assert_int_equal(h.calls, 0);
        loop_free(l);
        safe_close(efd);
}

static void test_loop_modify_events(void **state)
{
        struct loop *l = NULL;
        struct loop_source *src = NULL;
        struct hit h = {};
        int p[2];

        assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        assert_int_equal(loop_new(&l), 0);
        /* A pipe's write end never becomes readable. */
        assert_int_equal(loop_add(l, p[1], EPOLLIN, record_cb, &h, &src), 0);
        assert_int_equal(loop_run_once(l, 0), 0);
        assert_int_equal(h.calls, 0);

        assert_int_equal(loop_modify(src, EPOLLOUT), 0);
        assert_int_equal(loop_run_once(l, 1000), 1);
        assert_int_equal(h.calls, 1);
        assert_int_equal(h.fd, p[1]);
        assert_true(h.events & EPOLLOUT);

        assert_int_equal(loop_modify(src, EPOLLIN), 0);
        assert_int_equal(loop_run_once(l, 0), 0);
        assert_int_equal(h.calls, 1);

        loop_remove(src);
        loop_free(l);
        safe_close(p[0]);
        safe_close(p[1]);
}

static void test_loop_remove_stops_dispatch(void **state)
{
        struct loop *l = NULL;
        struct loop_source *src = NULL;
        struct hit h = {};
        int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

        assert_true(efd >= 0);
        assert_int_equal(loop_new(&l), 0);
        assert_int_equal(loop_add(l, efd, EPOLLIN, record_cb, &h, &src), 0);
        kick_eventfd(efd);
        loop_remove(src);
        assert_int_equal(loop_run_once(l, 0), 0);
        assert_int_equal(h.calls, 0);
        assert_true(fd_is_open(efd));
        loop_remove(NULL);

        /* Removed from the epoll set too: the same fd can be added again. */
        assert_int_equal(loop_add(l, efd, EPOLLIN, record_cb, &h, &src), 0);
        assert_int_equal(loop_run_once(l, 0), 1);
        assert_int_equal(h.calls, 1);
        assert_int_equal(h.fd, efd);
        drain_eventfd(efd);
        assert_int_equal(loop_run_once(l, 0), 0);

        loop_free(l);
        safe_close(efd);
}

static void test_loop_add_errors(void **state)
{
        struct loop *l = NULL;
        struct hit h = {};
        int efd = eventfd(0, EFD_CLOEXEC), reg;
        char path[] = "/tmp/ptc-test-loop-XXXXXX";

        assert_true(efd >= 0);
        assert_int_equal(loop_new(&l), 0);
        assert_int_equal(loop_add(l, -1, EPOLLIN, record_cb, &h, NULL), -EBADF);
        assert_int_equal(loop_add(l, efd, EPOLLIN, record_cb, &h, NULL), 0);
        /* The same fd twice is the kernel's EEXIST, and the first stays intact. */
        assert_int_equal(loop_add(l, efd, EPOLLIN, record_cb, &h, NULL), -EEXIST);
        /* Regular files cannot be polled. */
        reg = mkstemp(path);
        assert_true(reg >= 0);
        (void) unlink(path);
        assert_int_equal(loop_add(l, reg, EPOLLIN, record_cb, &h, NULL), -EPERM);

        kick_eventfd(efd);
        assert_int_equal(loop_run_once(l, 0), 1);
        assert_int_equal(h.calls, 1);
        loop_free(l);
        safe_close(reg);
        safe_close(efd);
}

/* Two ready sources; whichever runs first removes itself and the other. */
struct pair {
        struct loop_source *a, *b;
        int calls;
        int fd_a, fd_b;
        int added_fd;
        struct hit added;
        struct loop *loop;
};

static void remove_both_cb(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct pair *p = userdata;

        p->calls++;
        loop_remove(p->a);
        loop_remove(p->b);
        /* Removing twice is harmless. */
        loop_remove(s);
        /*
         * Adding during dispatch must work too, and the new source must not
         * receive the event the removed one had pending in this batch.
         */
        if (p->added_fd >= 0)
                assert_int_equal(
                        loop_add(p->loop, p->added_fd, EPOLLIN, record_cb, &p->added, NULL), 0);
}

static void test_loop_remove_self_and_other_during_dispatch(void **state)
{
        struct loop *l = NULL;
        struct pair p = {.added_fd = -1};

        p.fd_a = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        p.fd_b = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        assert_true(p.fd_a >= 0 && p.fd_b >= 0);
        assert_int_equal(loop_new(&l), 0);
        p.loop = l;
        assert_int_equal(loop_add(l, p.fd_a, EPOLLIN, remove_both_cb, &p, &p.a), 0);
        assert_int_equal(loop_add(l, p.fd_b, EPOLLIN, remove_both_cb, &p, &p.b), 0);
        kick_eventfd(p.fd_a);
        kick_eventfd(p.fd_b);

        /* Both events come in one batch; the second names a freed-later source. */
        assert_int_equal(loop_run_once(l, 1000), 2);
        assert_int_equal(p.calls, 1);
        assert_int_equal(loop_run_once(l, 0), 0);
        assert_int_equal(p.calls, 1);
        assert_true(fd_is_open(p.fd_a));
        assert_true(fd_is_open(p.fd_b));

        /* Again, now re-adding fd_b (still readable) from inside the callback. */
        p.added_fd = p.fd_b;
        p.calls = 0;
        assert_int_equal(loop_add(l, p.fd_a, EPOLLIN, remove_both_cb, &p, &p.a), 0);
        assert_int_equal(loop_add(l, p.fd_b, EPOLLIN, remove_both_cb, &p, &p.b), 0);
        assert_int_equal(loop_run_once(l, 1000), 2);
        assert_int_equal(p.calls, 1);
        assert_int_equal(p.added.calls, 0);
        /* The re-added source works in the next round. */
        assert_int_equal(loop_run_once(l, 1000), 1);
        assert_int_equal(p.added.calls, 1);
        assert_int_equal(p.added.fd, p.fd_b);

        loop_free(l);
        safe_close(p.fd_a);
        safe_close(p.fd_b);
}

/* Many ready sources, each removing the next one in a chain, and more than one batch (32). */
struct chain {
        struct loop_source *src[40];
        int fds[40];
        int calls[40];
};

static void chain_cb(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct chain *c = userdata;

        for (size_t i = 0; i < ELEMENTSOF(c->fds); i++)
                if (c->fds[i] == fd) {
                        c->calls[i]++;
                        /* Each source removes itself and the source after it. */
                        loop_remove(c->src[i]);
                        if (i + 1 < ELEMENTSOF(c->fds))
                                loop_remove(c->src[i + 1]);
                        c->src[i] = NULL;
                        if (i + 1 < ELEMENTSOF(c->fds))
                                c->src[i + 1] = NULL;
                        return;
                }
        fail_msg("callback for unknown fd %d", fd);
}

static void test_loop_many_sources_removed_in_dispatch(void **state)
{
        struct loop *l = NULL;
        struct chain c = {};
        int total = 0, rounds = 0;

        assert_int_equal(loop_new(&l), 0);
        for (size_t i = 0; i < ELEMENTSOF(c.fds); i++) {
                c.fds[i] = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
                assert_true(c.fds[i] >= 0);
                assert_int_equal(loop_add(l, c.fds[i], EPOLLIN, chain_cb, &c, &c.src[i]), 0);
        }
        /* Each round handles at most 32 events; keep going until nothing is ready. */
        for (;;) {
                int n = loop_run_once(l, 0);
                assert_true(n >= 0);
                assert_true(n <= 32);
                if (n == 0)
                        break;
                assert_true(++rounds < 50);
        }
        for (size_t i = 0; i < ELEMENTSOF(c.fds); i++) {
                assert_true(c.calls[i] <= 1);
                total += c.calls[i];
                /* A source can only be skipped when its predecessor ran and removed it. */
                if (c.calls[i] == 0)
                        assert_true(i > 0 && c.calls[i - 1] == 1);
                assert_null(c.src[i]);
        }
        assert_true(total >= 20);
        loop_free(l);
        for (size_t i = 0; i < ELEMENTSOF(c.fds); i++)
                safe_close(c.fds[i]);
}

static void test_loop_free_with_sources(void **state)
{
        struct loop *l = NULL;
        struct hit h = {};
        int fds[5], p[2];

        assert_int_equal(loop_new(&l), 0);
        for (size_t i = 0; i < ELEMENTSOF(fds); i++) {
                fds[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
                assert_true(fds[i] >= 0);
                assert_int_equal(loop_add(l, fds[i], EPOLLIN, record_cb, &h, NULL), 0);
        }
        assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        assert_int_equal(loop_add(l, p[0], EPOLLIN, record_cb, &h, NULL), 0);
        assert_int_equal(loop_add(l, p[1], EPOLLOUT, record_cb, &h, NULL), 0);
        /* One dispatch so some sources have been through a batch. */
        assert_int_equal(loop_run_once(l, 0), 1);
        assert_int_equal(h.calls, 1);

        /* ASan/LSan would report the sources if loop_free leaked them. */
        assert_null(loop_free(l));
        assert_null(loop_free(NULL));
        for (size_t i = 0; i < ELEMENTSOF(fds); i++) {
                assert_true(fd_is_open(fds[i]));
                safe_close(fds[i]);
        }
        assert_true(fd_is_open(p[0]) && fd_is_open(p[1]));
        safe_close(p[0]);
        safe_close(p[1]);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_loop_add_pipe_readable),
                cmocka_unit_test(test_loop_timeout_waits),
                cmocka_unit_test(test_loop_modify_events),
                cmocka_unit_test(test_loop_remove_stops_dispatch),
                cmocka_unit_test(test_loop_add_errors),
                cmocka_unit_test(test_loop_remove_self_and_other_during_dispatch),
                cmocka_unit_test(test_loop_many_sources_removed_in_dispatch),
                cmocka_unit_test(test_loop_free_with_sources),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
