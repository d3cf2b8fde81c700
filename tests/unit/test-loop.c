/* SPDX-License-Identifier: MIT */
#include "../lib/ptc-test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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

/* Time sources: what fired, when, in which order. */
struct tick {
        int calls;
        usec_t at;
        int order;
        int *counter;
        struct loop_source *rearm; /* armed again from the callback, once */
        usec_t rearm_when;
        struct loop_source *remove; /* removed from the callback */
};

static void tick_cb(struct loop_source *s, usec_t now, void *userdata)
{
        struct tick *t = userdata;

        t->calls++;
        t->at = now;
        if (t->counter)
                t->order = ++*t->counter;
        if (t->rearm) {
                loop_time_set(t->rearm, t->rearm_when);
                t->rearm = NULL;
        }
        if (t->remove) {
                loop_remove(t->remove);
                t->remove = NULL;
        }
}

static void test_loop_time_fires_once_not_early(void **state)
{
        struct loop *l = NULL;
        struct loop_source *s = NULL;
        struct tick t = {};
        usec_t start = now_usec();

        assert_int_equal(loop_new(&l), 0);
        assert_int_equal(loop_add_time(l, start + 20 * USEC_PER_MSEC, tick_cb, &t, &s), 0);
        assert_int_equal(loop_time_get(s), start + 20 * USEC_PER_MSEC);
        /* Forever, yet the time source ends the wait. */
        while (t.calls == 0)
                assert_true(loop_run_once(l, -1) >= 0);
        assert_int_equal(t.calls, 1);
        assert_true(t.at >= start + 20 * USEC_PER_MSEC);
        assert_true(now_usec() >= start + 20 * USEC_PER_MSEC);
        /* One-shot: disarmed now, so a bounded wait times out with nothing dispatched. */
        assert_int_equal(loop_time_get(s), USEC_INFINITY);
        assert_int_equal(loop_run_once(l, 10), 0);
        assert_int_equal(t.calls, 1);
        /* Armed again, relative. */
        loop_time_set_relative(s, 1 * USEC_PER_MSEC);
        while (t.calls == 1)
                assert_true(loop_run_once(l, -1) >= 0);
        assert_int_equal(t.calls, 2);
        l = loop_free(l);
}

static void test_loop_time_order_and_disarm(void **state)
{
        struct loop *l = NULL;
        struct loop_source *a = NULL, *b = NULL, *c = NULL;
        int counter = 0;
        struct tick ta = {.counter = &counter}, tb = {.counter = &counter},
                    tc = {.counter = &counter};
        usec_t now = now_usec();

        assert_int_equal(loop_new(&l), 0);
        assert_int_equal(loop_add_time(l, now + 30 * USEC_PER_MSEC, tick_cb, &ta, &a), 0);
        assert_int_equal(loop_add_time(l, now + 5 * USEC_PER_MSEC, tick_cb, &tb, &b), 0);
        assert_int_equal(loop_add_time(l, USEC_INFINITY, tick_cb, &tc, &c), 0);
        while (ta.calls == 0)
                assert_true(loop_run_once(l, 1000) >= 0);
        assert_int_equal(tb.order, 1);
        assert_int_equal(ta.order, 2);
        assert_int_equal(tc.calls, 0);
        /* Disarmed before it came due: it never fires. */
        loop_time_set(c, now_usec() + 5 * USEC_PER_MSEC);
        loop_time_set(c, USEC_INFINITY);
        assert_int_equal(loop_run_once(l, 20), 0);
        assert_int_equal(tc.calls, 0);
        l = loop_free(l);
}

static void test_loop_time_rearm_in_past_fires_next_dispatch(void **state)
{
        struct loop *l = NULL;
        struct loop_source *s = NULL, *other = NULL;
        struct tick t = {}, o = {};

        assert_int_equal(loop_new(&l), 0);
        assert_int_equal(loop_add_time(l, 0, tick_cb, &t, &s), 0);
        assert_int_equal(loop_add_time(l, USEC_INFINITY, tick_cb, &o, &other), 0);
        /* The callback arms itself in the past and removes the other: no livelock. */
        t.rearm = s;
        t.rearm_when = 0;
        t.remove = other;
        assert_int_equal(loop_run_once(l, 1000), 1);
        assert_int_equal(t.calls, 1);
        assert_int_equal(loop_run_once(l, 1000), 1);
        assert_int_equal(t.calls, 2);
        assert_int_equal(o.calls, 0);
        loop_remove(s);
        assert_int_equal(loop_run_once(l, 0), 0);
        l = loop_free(l);
}

/* A child source: how the child ended, as the loop reaped it. */
struct exit_seen {
        int calls;
        siginfo_t si;
};

static void child_cb(struct loop_source *s, const siginfo_t *si, void *userdata)
{
        struct exit_seen *e = userdata;

        e->calls++;
        e->si = *si;
}

static pid_t fork_exiting(int code, int *ret_pidfd)
{
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0)
                _exit(code);
        *ret_pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        return pid;
}

static void test_loop_child_reaped_with_status(void **state)
{
        struct loop *l = NULL;
        struct loop_source *s = NULL, *t = NULL;
        struct exit_seen e = {};
        struct tick never = {};
        int pidfd = -1;
        pid_t pid;

        pid = fork_exiting(7, &pidfd);
        if (pidfd < 0) {
                (void) waitpid(pid, NULL, 0);
                skip(); /* pidfd_open(2) needs Linux 5.3 */
        }
        assert_int_equal(loop_new(&l), 0);
        assert_int_equal(loop_add_child(l, pid, pidfd, child_cb, &e, &s), 0);
        assert_false(loop_child_exited(s));
        /* A hang guard far above the expected time. */
        assert_int_equal(loop_add_time(l, now_usec() + 60 * USEC_PER_SEC, tick_cb, &never, &t), 0);
        while (e.calls == 0 && never.calls == 0)
                assert_true(loop_run_once(l, -1) >= 0);
        assert_int_equal(e.calls, 1);
        assert_int_equal(e.si.si_pid, pid);
        assert_int_equal(e.si.si_code, CLD_EXITED);
        assert_int_equal(e.si.si_status, 7);
        assert_true(loop_child_exited(s));
        /* Reaped: nothing left to wait for, and the pidfd is no longer watched. */
        assert_int_equal(waitpid(pid, NULL, WNOHANG), -1);
        assert_int_equal(errno, ECHILD);
        assert_int_equal(loop_run_once(l, 10), 0);
        assert_int_equal(e.calls, 1);
        loop_remove(s);
        close(pidfd);
        l = loop_free(l);
}

/* WNOWAIT: the callback sees a zombie it must reap; its pid is still its own then. */
struct zombie_seen {
        int calls;
        bool was_zombie;
        siginfo_t si;
};

static void zombie_cb(struct loop_source *s, const siginfo_t *si, void *userdata)
{
        struct zombie_seen *z = userdata;
        siginfo_t now = {};

        z->calls++;
        z->si = *si;
        /* Still waitable: nobody reaped it yet. */
        z->was_zombie = waitid(P_PID, (id_t) si->si_pid, &now, WEXITED | WNOHANG | WNOWAIT) == 0 &&
                        now.si_pid == si->si_pid;
}

static void test_loop_child_not_reaped(void **state)
{
        struct loop *l = NULL;
        struct loop_source *s = NULL;
        struct zombie_seen z = {};
        int pidfd = -1, status = 0;
        pid_t pid;

        pid = fork_exiting(3, &pidfd);
        if (pidfd < 0) {
                (void) waitpid(pid, NULL, 0);
                skip();
        }
        assert_int_equal(loop_new(&l), 0);
        assert_int_equal(loop_add_child(l, pid, pidfd, zombie_cb, &z, &s), 0);
        loop_child_set_reap(s, false);
        while (z.calls == 0)
                assert_true(loop_run_once(l, 60000) >= 0);
        assert_int_equal(z.calls, 1);
        assert_true(z.was_zombie);
        assert_int_equal(z.si.si_code, CLD_EXITED);
        assert_int_equal(z.si.si_status, 3);
        assert_true(loop_child_exited(s));
        /* No second call for the zombie, whose pidfd stays readable: it is not watched. */
        assert_int_equal(loop_run_once(l, 10), 0);
        assert_int_equal(z.calls, 1);
        /* The loop left it to us. */
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 3);
        loop_remove(s);
        close(pidfd);
        l = loop_free(l);
}

static void test_loop_child_killed_and_no_pidfd(void **state)
{
        struct loop *l = NULL;
        struct loop_source *s = NULL;
        struct exit_seen e = {};
        int pidfd = -1;
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0) {
                pause();
                _exit(0);
        }
        pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        assert_int_equal(loop_new(&l), 0);
        assert_int_equal(loop_add_child(l, pid, -1, child_cb, &e, NULL), -EBADF);
        if (pidfd < 0) {
                kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                l = loop_free(l);
                skip();
        }
        assert_int_equal(loop_add_child(l, pid, pidfd, child_cb, &e, &s), 0);
        assert_int_equal(kill(pid, SIGKILL), 0);
        while (e.calls == 0)
                assert_true(loop_run_once(l, 60000) >= 0);
        assert_int_equal(e.si.si_code, CLD_KILLED);
        assert_int_equal(e.si.si_status, SIGKILL);
        close(pidfd);
        l = loop_free(l); /* frees the exited source too */
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
                cmocka_unit_test(test_loop_time_fires_once_not_early),
                cmocka_unit_test(test_loop_time_order_and_disarm),
                cmocka_unit_test(test_loop_time_rearm_in_past_fires_next_dispatch),
                cmocka_unit_test(test_loop_child_reaped_with_status),
                cmocka_unit_test(test_loop_child_killed_and_no_pidfd),
                cmocka_unit_test(test_loop_child_not_reaped),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
