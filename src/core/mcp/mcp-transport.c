/* SPDX-License-Identifier: MIT */
/* The MCP server process and its pipes: exit status, writes, the reader thread. */

#include "core/mcp/mcp-client-internal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/fd-util.h"

void mcp_efd_signal(int fd)
{
        uint64_t one = 1;

        /* Only EAGAIN at a counter near 2^64, which is still readable: nothing to do. */
        (void) !write(fd, &one, sizeof(one));
}

void mcp_efd_drain(int fd)
{
        uint64_t v;

        (void) !read(fd, &v, sizeof(v));
}

/* ---- exit status and death ---- */

/* Record the exit status if the server has exited, without reaping it (mcp_client_free()
 * reaps, after killing the group that the zombie's pid still names). */
bool mcp_note_exit(struct mcp_client *c)
{
        siginfo_t si = {};

        if (c->pid <= 0)
                return false;
        if (waitid(P_PID, (id_t) c->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0) {
                /* ECHILD: someone else reaped it; it is gone, with an unknown status. */
                return errno == ECHILD;
        }
        if (si.si_pid != c->pid)
                return false;
        pthread_mutex_lock(&c->lock);
        c->status_known = true;
        c->status_signal = si.si_code != CLD_EXITED;
        c->status = si.si_status;
        pthread_mutex_unlock(&c->lock);
        return true;
}

/* No more answers will come: fail every pending call and all later ones. Any thread. */
static void mark_dead(struct mcp_client *c)
{
        pthread_mutex_lock(&c->lock);
        if (!c->dead) {
                c->dead = true;
                atomic_store(&c->alive, false);
                for (struct pending *p = c->pending; p; p = p->next)
                        mcp_efd_signal(p->efd);
                mcp_efd_signal(c->dead_fd);
        }
        pthread_mutex_unlock(&c->lock);
}

/* "exited with status 1", "killed by signal 9", or NULL while unknown. */
const char *mcp_status_text(struct mcp_client *c, char *out, size_t n)
{
        const char *r = NULL;

        pthread_mutex_lock(&c->lock);
        if (c->status_known) {
                (void) snprintf(out, n, "%s %d",
                                c->status_signal ? "killed by signal" : "exited with status",
                                c->status);
                r = out;
        }
        pthread_mutex_unlock(&c->lock);
        return r;
}

/* ---- writing ---- */

/*
 * Write without dying of SIGPIPE when the process does not ignore it (ptc does,
 * a program embedding libptc may not): block it in this thread around the
 * write and consume the one our EPIPE raised.
 */
static ssize_t write_nosigpipe(int fd, const void *p, size_t n)
{
        sigset_t pipe_set, old, pend;
        bool was_pending;
        ssize_t k;
        int saved;

        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        sigemptyset(&pend);
        (void) sigpending(&pend);
        was_pending = sigismember(&pend, SIGPIPE) == 1;
        (void) pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
        k = write(fd, p, n);
        saved = errno;
        if (k < 0 && saved == EPIPE && !was_pending) {
                const struct timespec zero = {};
                int s;

                do
                        s = sigtimedwait(&pipe_set, NULL, &zero);
                while (s < 0 && errno == EINTR);
        }
        (void) pthread_sigmask(SIG_SETMASK, &old, NULL);
        errno = saved;
        return k;
}

static int lock_until(pthread_mutex_t *m, usec_t deadline)
{
        struct timespec ts;

        if (deadline == USEC_INFINITY) {
                pthread_mutex_lock(m);
                return 0;
        }
        /* now_usec() is CLOCK_MONOTONIC, like this absolute time. */
        ts.tv_sec = (time_t) (deadline / USEC_PER_SEC);
        ts.tv_nsec = (long) (deadline % USEC_PER_SEC) * 1000;
        return -pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &ts);
}

/*
 * Send @msg as one line before @deadline. Returns 0; -ETIMEDOUT when the
 * server did not take it in time (if part of it went out, the stream is
 * broken and the client is marked dead); -EPIPE when the server is gone
 * (the client is marked dead); -ENOMEM.
 */
int mcp_send_message(struct mcp_client *c, json_t *msg, usec_t deadline)
{
        _cleanup_free_ char *s = NULL;
        size_t len, off = 0;
        bool broken = false;
        int r = 0;

        s = json_dumps(msg, JSON_COMPACT);
        if (!s)
                return -ENOMEM;
        /* Compact JSON escapes every control character, so the only newline is ours. */
        len = strlen(s);
        s[len] = '\n'; /* json_dumps' NUL becomes the newline; the length says where it ends */
        len++;

        r = lock_until(&c->wlock, deadline);
        if (r < 0)
                return r;
        while (off < len) {
                ssize_t k;

                if (c->in_fd < 0) {
                        r = -EPIPE;
                        break;
                }
                k = write_nosigpipe(c->in_fd, s + off, len - off);
                if (k > 0) {
                        off += (size_t) k;
                        continue;
                }
                if (k < 0 && errno == EINTR)
                        continue;
                if (k == 0 || errno != EAGAIN) {
                        r = -EPIPE;
                        break;
                }
                /* The pipe is full: the server is busy or stopped reading. */
                k = fd_wait_writable(c->in_fd, deadline);
                if (k < 0) {
                        r = -EPIPE;
                        break;
                }
                if (k == 0) {
                        r = -ETIMEDOUT;
                        broken = off > 0;
                        break;
                }
        }
        pthread_mutex_unlock(&c->wlock);
        if (r == -EPIPE || broken)
                mark_dead(c);
        return r;
}

/* ---- the reader thread ---- */

static void stderr_emit(struct mcp_client *c)
{
        static const char muted[] = "(further stderr output of this server dropped: over 1 MiB)";
        struct iovec iov[6];
        int n = 0, room;

        if (c->err_muted)
                return;
        iov[n++] = (struct iovec){.iov_base = (void *) "[", .iov_len = 1};
        iov[n++] = (struct iovec){.iov_base = c->name, .iov_len = strlen(c->name)};
        iov[n++] = (struct iovec){.iov_base = (void *) "] ", .iov_len = 2};
        if (c->err_total >= STDERR_TOTAL_MAX) {
                c->err_muted = true;
                iov[n++] = (struct iovec){.iov_base = (void *) muted, .iov_len = sizeof(muted) - 1};
        } else {
                iov[n++] = (struct iovec){.iov_base = c->err_line, .iov_len = c->err_len};
                if (c->err_cut)
                        iov[n++] = (struct iovec){.iov_base = (void *) " [...]", .iov_len = 6};
        }
        iov[n++] = (struct iovec){.iov_base = (void *) "\n", .iov_len = 1};
        /*
         * Never block the reader on ptc's stderr (a full pipe nobody reads):
         * a line that does not fit now is dropped.
         */
        room = fd_wait(STDERR_FILENO, POLLOUT, 0);
        if (room <= 0 || !(room & POLLOUT))
                return;
        for (int i = 0; i < n; i++)
                c->err_total += iov[i].iov_len;
        (void) !writev(STDERR_FILENO, iov, n);
}

static void feed_stderr(struct mcp_client *c, const char *p, size_t n)
{
        while (n > 0) {
                const char *nl = memchr(p, '\n', n);
                size_t k = nl ? (size_t) (nl - p) : n;
                size_t room = sizeof(c->err_line) - c->err_len;

                if (!c->err_muted) {
                        memcpy(c->err_line + c->err_len, p, MIN(k, room));
                        c->err_len += MIN(k, room);
                        if (k > room)
                                c->err_cut = true;
                }
                if (!nl)
                        break;
                stderr_emit(c);
                c->err_len = 0;
                c->err_cut = false;
                p += k + 1;
                n -= k + 1;
        }
}

/* Read what @fd has; returns the byte count, 0 at EOF, -EAGAIN when nothing is there. */
static ssize_t read_some(int fd, char *chunk)
{
        ssize_t k;

        do
                k = read(fd, chunk, READ_CHUNK);
        while (k < 0 && errno == EINTR);
        if (k < 0)
                return errno == EAGAIN ? -EAGAIN : 0; /* a read error ends the stream like EOF */
        return k;
}

void *mcp_reader_main(void *arg)
{
        struct mcp_client *c = arg;
        _cleanup_free_ char *chunk = malloc(READ_CHUNK);
        usec_t eof_deadline = USEC_INFINITY;
        bool out_eof = false, err_eof = false, exited = c->pidfd < 0;

        if (!chunk) {
                mark_dead(c);
                return NULL;
        }
        for (;;) {
                struct pollfd pfd[4] = {
                        {.fd = c->stop_fd, .events = POLLIN},
                        {.fd = out_eof ? -1 : c->out_fd, .events = POLLIN},
                        {.fd = err_eof ? -1 : c->err_fd, .events = POLLIN},
                        {.fd = exited ? -1 : c->pidfd, .events = POLLIN},
                };
                ssize_t k;
                int r;

                /*
                 * Without the EOF grace there is no deadline: output, the exit
                 * (pidfd) or mcp_client_free() (stop_fd, after killing the
                 * server) wakes this.
                 */
                r = poll(pfd, ELEMENTSOF(pfd), poll_timeout_ms(eof_deadline));
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        mark_dead(c);
                        break;
                }
                if (pfd[0].revents)
                        break;
                if (pfd[1].revents) {
                        k = read_some(c->out_fd, chunk);
                        if (k > 0) {
                                mcp_feed_stdout(c, chunk, (size_t) k);
                        } else if (k == 0) {
                                out_eof = true;
                                if (exited) {
                                        (void) mcp_note_exit(c);
                                        mark_dead(c);
                                } else {
                                        eof_deadline = now_usec() + EOF_EXIT_GRACE_USEC;
                                }
                        }
                }
                if (pfd[2].revents) {
                        k = read_some(c->err_fd, chunk);
                        if (k > 0) {
                                feed_stderr(c, chunk, (size_t) k);
                        } else if (k == 0) {
                                err_eof = true;
                                if (c->err_len > 0 || c->err_cut)
                                        stderr_emit(c);
                                c->err_len = 0;
                        }
                }
                if (pfd[3].revents) {
                        size_t drained = 0;

                        exited = true;
                        eof_deadline = USEC_INFINITY;
                        (void) mcp_note_exit(c);
                        /* Its last answers may still sit in the pipe: hand them out first. */
                        while (!out_eof && drained < EXIT_DRAIN_MAX) {
                                k = read_some(c->out_fd, chunk);
                                if (k < 0)
                                        break;
                                if (k == 0)
                                        out_eof = true;
                                else
                                        mcp_feed_stdout(c, chunk, (size_t) k);
                                drained += (size_t) k;
                        }
                        mark_dead(c);
                }
                if (eof_deadline != USEC_INFINITY && now_usec() >= eof_deadline) {
                        /* stdout closed, the process lives on: it cannot answer anymore. */
                        eof_deadline = USEC_INFINITY;
                        mark_dead(c);
                }
        }
        return NULL;
}
