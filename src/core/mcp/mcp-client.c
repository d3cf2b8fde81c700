/* SPDX-License-Identifier: MIT */
#include "core/mcp/mcp-client.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "ptc-version.h"

#include "basic/buf.h"
#include "basic/fd-util.h"
#include "basic/log.h"
#include "basic/path-util.h"
#include "basic/strv.h"
#include "core/spawn/spawn.h"

#define PROTOCOL_VERSION "2025-11-25"
/* One server stderr line passed on; the rest of that line is dropped (marked " [...]"). */
#define STDERR_LINE_MAX 4096
/* Server stderr passed on in total: a chatty server must not flood ptc's own stderr. */
#define STDERR_TOTAL_MAX (1024 * 1024)
/* tools/list pages followed; a server that hands out cursors forever is cut off here. */
#define TOOLS_PAGES_MAX 100
/* Longest tool name taken; MCP asks for 1-128 characters. */
#define TOOL_NAME_MAX 128
/* Read size for the server's stdout and stderr. */
#define READ_CHUNK (64 * 1024)
/* Bytes read from stdout after the server exited (its last answers); a grandchild holding
 * the pipe open and writing on cannot keep the reader there. */
#define EXIT_DRAIN_MAX (2 * (size_t) MCP_CLIENT_MESSAGE_MAX)
/* mcp_client_free(): wait this long after closing stdin, and again after SIGTERM. */
#define STOP_GRACE_USEC (2 * USEC_PER_SEC)
/* After EOF on stdout, how long to wait for the exit (to report its status) before
 * declaring the server dead anyway: it may close stdout and keep running. */
#define EOF_EXIT_GRACE_USEC (1 * USEC_PER_SEC)
/* Write budget of the reader thread's answers to server requests: a server that stopped
 * reading its stdin must not stall the reader (and with it every caller). */
#define REPLY_WRITE_USEC (1 * USEC_PER_SEC)
/* Write budget of notifications/cancelled: the caller already has its error result. */
#define CANCEL_WRITE_USEC (50 * USEC_PER_MSEC)
/* JSON-RPC "method not found". */
#define JSONRPC_METHOD_NOT_FOUND (-32601)

/*
 * Finds the top-level "id" of a line too long to keep, so that its caller
 * gets an error now instead of at its deadline. It tracks strings and
 * nesting, so an "id" inside the payload does not count, wherever the server
 * put the key (Python SDKs write it first, the TypeScript SDK last).
 */
struct id_scan {
        int depth;
        bool object; /* the top-level value is an object */
        bool in_string;
        bool escape;
        bool in_key;     /* reading a key of the top-level object */
        bool expect_key; /* the next string at depth 1 is a key */
        size_t key_len;
        char key[3];
        enum { ID_NONE, ID_COLON, ID_VALUE, ID_DIGITS } state;
        bool negative;
        bool found;
        int64_t value;
};

struct pending {
        int64_t id;
        int efd;        /* eventfd written when done, or when the client dies */
        json_t *answer; /* the whole response message, owned; NULL when oversized */
        bool oversized;
        bool done;
        struct pending *next;
};

struct mcp_client {
        char *name;
        struct mcp_upstream_tool *tools;
        size_t n_tools;

        pid_t pid;
        int pidfd;   /* -1 when the kernel has none */
        int in_fd;   /* the server's stdin, non-blocking; under wlock */
        int out_fd;  /* the server's stdout, non-blocking; reader thread only */
        int err_fd;  /* the server's stderr, non-blocking; reader thread only */
        int stop_fd; /* eventfd: mcp_client_free() tells the reader to end */
        int dead_fd; /* eventfd written once, when the client goes dead */

        pthread_t reader;
        bool reader_started;

        pthread_mutex_t wlock; /* writes to in_fd: one whole line at a time */
        pthread_mutex_t lock;  /* everything below up to the atomics */
        struct pending *pending;
        bool dead;
        bool status_known;
        bool status_signal; /* killed by a signal: status is the signal number */
        int status;

        atomic_bool alive;
        atomic_int_fast64_t next_id;
        atomic_uint_fast64_t n_malformed; /* lines that were not JSON-RPC, skipped */
        atomic_uint_fast64_t n_oversized; /* lines over MCP_CLIENT_MESSAGE_MAX, discarded */

        /* Reader thread only. */
        struct buf line;
        bool discarding;
        struct id_scan scan;
        char err_line[STDERR_LINE_MAX];
        size_t err_len;
        bool err_cut;
        size_t err_total;
        bool err_muted;
};

static usec_t usec_sub(usec_t a, usec_t b)
{
        return a > b ? a - b : 0;
}

/* "60", "1.5", "0.3": whole seconds when whole, else tenths. */
static void format_seconds(char *out, size_t n, usec_t usec)
{
        uint64_t tenths = (usec + USEC_PER_SEC / 20) / (USEC_PER_SEC / 10);

        if (tenths % 10 == 0)
                (void) snprintf(out, n, "%" PRIu64, tenths / 10);
        else
                (void) snprintf(out, n, "%" PRIu64 ".%" PRIu64, tenths / 10, tenths % 10);
}

static void efd_signal(int fd)
{
        uint64_t one = 1;

        /* Only EAGAIN at a counter near 2^64, which is still readable: nothing to do. */
        (void) !write(fd, &one, sizeof(one));
}

static void efd_drain(int fd)
{
        uint64_t v;

        (void) !read(fd, &v, sizeof(v));
}

/* ---- exit status and death ---- */

/* Record the exit status if the server has exited, without reaping it (mcp_client_free()
 * reaps, after killing the group that the zombie's pid still names). */
static bool note_exit(struct mcp_client *c)
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
                        efd_signal(p->efd);
                efd_signal(c->dead_fd);
        }
        pthread_mutex_unlock(&c->lock);
}

/* "exited with status 1", "killed by signal 9", or NULL while unknown. */
static const char *status_text(struct mcp_client *c, char *out, size_t n)
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
static int send_message(struct mcp_client *c, json_t *msg, usec_t deadline)
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
                struct pollfd pfd = {.fd = c->in_fd, .events = POLLOUT};
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
                k = poll(&pfd, 1, poll_timeout_ms(deadline));
                if (k < 0 && errno != EINTR) {
                        r = -EPIPE;
                        break;
                }
                if (k == 0 && now_usec() >= deadline) {
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

static void id_scan_feed(struct id_scan *s, const char *p, size_t n)
{
        for (size_t i = 0; i < n && !s->found; i++) {
                char ch = p[i];

                if (s->in_string) {
                        if (s->escape) {
                                s->escape = false;
                        } else if (ch == '\\') {
                                s->escape = true;
                                if (s->in_key)
                                        s->key_len = SIZE_MAX; /* "i\u0064" is not worth it */
                        } else if (ch == '"') {
                                s->in_string = false;
                                if (s->in_key) {
                                        s->in_key = false;
                                        if (s->key_len == 2 && memcmp(s->key, "id", 2) == 0)
                                                s->state = ID_COLON;
                                }
                        } else if (s->in_key && s->key_len != SIZE_MAX) {
                                if (s->key_len < sizeof(s->key))
                                        s->key[s->key_len] = ch;
                                s->key_len++;
                        }
                        continue;
                }
                if (s->state == ID_DIGITS) {
                        if (ch >= '0' && ch <= '9') {
                                if (s->value > (INT64_MAX - 9) / 10)
                                        s->state = ID_NONE; /* not one of our ids */
                                else
                                        s->value = s->value * 10 + (ch - '0');
                                continue;
                        }
                        s->found = true;
                        if (s->negative)
                                s->value = -s->value;
                        break;
                }
                if (s->state == ID_VALUE) {
                        if (ch == ' ' || ch == '\t' || ch == '\r')
                                continue;
                        if (ch == '-' && !s->negative) {
                                s->negative = true;
                                continue;
                        }
                        if (ch >= '0' && ch <= '9') {
                                s->state = ID_DIGITS;
                                s->value = ch - '0';
                                continue;
                        }
                        s->state = ID_NONE; /* a string or null id: not ours */
                }
                switch (ch) {
                case '"':
                        s->in_string = true;
                        if (s->depth == 1 && s->object && s->expect_key) {
                                s->in_key = true;
                                s->key_len = 0;
                                s->expect_key = false;
                        }
                        break;
                case '{':
                case '[':
                        if (s->depth == 0)
                                s->object = ch == '{';
                        s->depth++;
                        if (s->depth == 1)
                                s->expect_key = true;
                        break;
                case '}':
                case ']':
                        s->depth--;
                        break;
                case ',':
                        if (s->depth == 1)
                                s->expect_key = true;
                        break;
                case ':':
                        if (s->depth == 1 && s->state == ID_COLON) {
                                s->state = ID_VALUE;
                                s->negative = false;
                        }
                        break;
                default:
                        break;
                }
        }
}

/* Hand @msg (or "oversized") to the caller waiting for @id; a late answer is dropped. */
static void deliver(struct mcp_client *c, int64_t id, json_t *msg, bool oversized)
{
        pthread_mutex_lock(&c->lock);
        for (struct pending *p = c->pending; p; p = p->next) {
                if (p->id != id || p->done)
                        continue;
                p->answer = json_incref(msg);
                p->oversized = oversized;
                p->done = true;
                efd_signal(p->efd);
                break;
        }
        pthread_mutex_unlock(&c->lock);
}

/* Servers may ask the client things; ptc offers no roots, sampling or elicitation. */
static void answer_server_request(struct mcp_client *c, json_t *id, const char *method)
{
        json_auto_t *resp = NULL;

        if (strcmp(method, "ping") == 0)
                resp = json_pack("{s:s, s:O, s:{}}", "jsonrpc", "2.0", "id", id, "result");
        else if (strcmp(method, "roots/list") == 0)
                resp = json_pack("{s:s, s:O, s:{s:[]}}", "jsonrpc", "2.0", "id", id, "result",
                                 "roots");
        else
                resp = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error",
                                 "code", JSONRPC_METHOD_NOT_FOUND, "message", "Method not found");
        if (!resp)
                return;
        if (send_message(c, resp, now_usec() + REPLY_WRITE_USEC) < 0) {
                /* The server is gone or not reading: it will not miss the answer. */
        }
}

static void handle_line(struct mcp_client *c, const char *p, size_t n)
{
        json_auto_t *msg = NULL;
        json_t *method, *id;
        size_t i;

        for (i = 0; i < n; i++)
                if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
                        break;
        if (i == n)
                return; /* an empty line is not a message */
        msg = json_loadb(p, n, 0, NULL);
        if (!json_is_object(msg)) {
                atomic_fetch_add(&c->n_malformed, 1);
                return;
        }
        method = json_object_get(msg, "method");
        id = json_object_get(msg, "id");
        if (json_is_string(method)) {
                if (id && !json_is_null(id))
                        answer_server_request(c, id, json_string_value(method));
                /* Notifications (progress, logging, list_changed) need nothing from us. */
                return;
        }
        if (!json_is_integer(id)) {
                atomic_fetch_add(&c->n_malformed, 1);
                return;
        }
        deliver(c, json_integer_value(id), msg, false);
}

static void line_done(struct mcp_client *c)
{
        /* Keep a normal line's memory for the next one, not a huge answer's. */
        if (c->line.alloc > 1024 * 1024)
                buf_release(&c->line);
        else
                buf_reset(&c->line);
}

static void feed_stdout(struct mcp_client *c, const char *p, size_t n)
{
        while (n > 0) {
                const char *nl = memchr(p, '\n', n);
                size_t k = nl ? (size_t) (nl - p) : n;

                if (c->discarding) {
                        id_scan_feed(&c->scan, p, k);
                } else if (buf_append(&c->line, p, k) < 0) {
                        /* Over MCP_CLIENT_MESSAGE_MAX (or out of memory): drop the line. */
                        c->discarding = true;
                        c->scan = (struct id_scan){};
                        id_scan_feed(&c->scan, buf_str(&c->line), c->line.len);
                        id_scan_feed(&c->scan, p, k);
                        buf_release(&c->line);
                }
                if (!nl)
                        break;
                if (c->discarding) {
                        atomic_fetch_add(&c->n_oversized, 1);
                        if (c->scan.found)
                                deliver(c, c->scan.value, NULL, true);
                        c->discarding = false;
                } else {
                        handle_line(c, buf_str(&c->line), c->line.len);
                }
                line_done(c);
                p += k + 1;
                n -= k + 1;
        }
}

static void stderr_emit(struct mcp_client *c)
{
        static const char muted[] = "(further stderr output of this server dropped: over 1 MiB)";
        struct pollfd pfd = {.fd = STDERR_FILENO, .events = POLLOUT};
        struct iovec iov[6];
        int n = 0;

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
        if (poll(&pfd, 1, 0) != 1 || !(pfd.revents & POLLOUT))
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

static void *reader_main(void *arg)
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
                                feed_stdout(c, chunk, (size_t) k);
                        } else if (k == 0) {
                                out_eof = true;
                                if (exited) {
                                        (void) note_exit(c);
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
                        (void) note_exit(c);
                        /* Its last answers may still sit in the pipe: hand them out first. */
                        while (!out_eof && drained < EXIT_DRAIN_MAX) {
                                k = read_some(c->out_fd, chunk);
                                if (k < 0)
                                        break;
                                if (k == 0)
                                        out_eof = true;
                                else
                                        feed_stdout(c, chunk, (size_t) k);
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

/* ---- requests ---- */

static struct pending *pending_free(struct pending *p)
{
        if (!p)
                return NULL;
        json_decref(p->answer);
        safe_close(p->efd);
        free(p);
        return NULL;
}

static void pending_unlink(struct mcp_client *c, struct pending *p)
{
        for (struct pending **pp = &c->pending; *pp; pp = &(*pp)->next)
                if (*pp == p) {
                        *pp = p->next;
                        break;
                }
}

static int send_cancelled(struct mcp_client *c, int64_t id, const char *reason)
{
        json_auto_t *msg = json_pack("{s:s, s:s, s:{s:I, s:s}}", "jsonrpc", "2.0", "method",
                                     "notifications/cancelled", "params", "requestId",
                                     (json_int_t) id, "reason", reason);

        if (!msg)
                return -ENOMEM;
        return send_message(c, msg, now_usec() + CANCEL_WRITE_USEC);
}

/*
 * Send request @method with @params (borrowed) and wait for its answer.
 * Returns 0 with *ret the whole response message (owned); -ETIMEDOUT;
 * -ECANCELED (@cancel_fd readable); -ESRCH (the server is not running);
 * -E2BIG (the answer was over MCP_CLIENT_MESSAGE_MAX); -ENOMEM. On
 * timeout and cancel the server gets notifications/cancelled, except for
 * initialize, which MCP forbids cancelling.
 */
static int request(struct mcp_client *c, const char *method, json_t *params, usec_t deadline,
                   int cancel_fd, json_t **ret)
{
        json_auto_t *msg = NULL;
        struct pending *p;
        int64_t id;
        int r;

        if (!atomic_load(&c->alive))
                return -ESRCH;
        if (deadline != USEC_INFINITY && now_usec() >= deadline)
                return -ETIMEDOUT;

        id = atomic_fetch_add(&c->next_id, 1);
        msg = json_pack("{s:s, s:I, s:s, s:O}", "jsonrpc", "2.0", "id", (json_int_t) id, "method",
                        method, "params", params);
        if (!msg)
                return -ENOMEM;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->id = id;
        p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (p->efd < 0) {
                r = -errno;
                pending_free(p);
                return r;
        }

        pthread_mutex_lock(&c->lock);
        if (c->dead) {
                pthread_mutex_unlock(&c->lock);
                pending_free(p);
                return -ESRCH;
        }
        p->next = c->pending;
        c->pending = p;
        pthread_mutex_unlock(&c->lock);

        r = send_message(c, msg, deadline);
        if (r == -EPIPE)
                r = -ESRCH;

        while (r == 0) {
                struct pollfd pfd[2] = {
                        {.fd = p->efd, .events = POLLIN},
                        {.fd = cancel_fd, .events = POLLIN},
                };
                int k;

                pthread_mutex_lock(&c->lock);
                if (p->done) {
                        pthread_mutex_unlock(&c->lock);
                        break;
                }
                if (c->dead)
                        r = -ESRCH;
                pthread_mutex_unlock(&c->lock);
                if (r < 0)
                        break;

                /* USEC_INFINITY: the answer, the server's death or @cancel_fd wakes this. */
                k = poll(pfd, cancel_fd >= 0 ? 2 : 1, poll_timeout_ms(deadline));
                if (k < 0 && errno != EINTR) {
                        r = -errno;
                        break;
                }
                if (k > 0 && cancel_fd >= 0 && pfd[1].revents) {
                        r = -ECANCELED;
                        break;
                }
                if (k > 0 && pfd[0].revents)
                        efd_drain(p->efd);
                if (k == 0 && now_usec() >= deadline)
                        r = -ETIMEDOUT;
        }

        pthread_mutex_lock(&c->lock);
        pending_unlink(c, p);
        pthread_mutex_unlock(&c->lock);

        if (r == 0) {
                r = p->oversized ? -E2BIG : 0;
                if (r == 0)
                        *ret = TAKE_PTR(p->answer);
        } else if ((r == -ETIMEDOUT || r == -ECANCELED) && strcmp(method, "initialize") != 0) {
                /* Best effort: a late answer is dropped by deliver() either way. */
                if (send_cancelled(c, id, r == -ETIMEDOUT ? "timeout" : "cancelled") < 0) {
                        /* The server is gone or not reading: nothing to cancel there. */
                }
        }
        pending_free(p);
        return r;
}

/* ---- tools/call results ---- */

_printf_(2, 3) static int error_result(json_t **ret, const char *fmt, ...)
{
        _cleanup_free_ char *s = NULL;
        json_t *o;
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (k < 0)
                return -ENOMEM;
        /* Every part is ours or came from a parsed JSON string: valid UTF-8. */
        o = json_pack("{s:s}", "error", s);
        if (!o)
                return -ENOMEM;
        *ret = o;
        return 0;
}

static int not_running_result(struct mcp_client *c, json_t **ret)
{
        char st[64];
        const char *s = status_text(c, st, sizeof(st));

        if (s)
                return error_result(ret, "mcp server '%s' is not running (%s)", c->name, s);
        return error_result(ret, "mcp server '%s' is not running", c->name);
}

static int rpc_error_result(struct mcp_client *c, json_t *err, json_t **ret)
{
        json_t *m = json_object_get(err, "message"), *code = json_object_get(err, "code");

        return error_result(ret, "mcp server '%s': %s (code %" JSON_INTEGER_FORMAT ")", c->name,
                            json_is_string(m) ? json_string_value(m) : "unknown error",
                            json_is_integer(code) ? json_integer_value(code) : (json_int_t) 0);
}

/* Map a tools/call response to the script's result, as mcp-client.h describes. */
static int map_answer(struct mcp_client *c, const char *tool, json_t *msg, json_t **ret)
{
        _cleanup_buf_ struct buf text = BUF_INIT(MCP_CLIENT_MESSAGE_MAX);
        json_auto_t *others = NULL, *out = NULL;
        json_t *result, *content, *item, *sc;
        size_t i, n_text = 0;

        if (json_is_object(json_object_get(msg, "error")))
                return rpc_error_result(c, json_object_get(msg, "error"), ret);
        result = json_object_get(msg, "result");
        if (!json_is_object(result))
                return error_result(ret, "mcp server '%s': invalid answer to tools/call '%s'",
                                    c->name, tool);

        others = json_array();
        if (!others)
                return -ENOMEM;
        content = json_object_get(result, "content");
        json_array_foreach(content, i, item)
        {
                json_t *type = json_object_get(item, "type"), *t = json_object_get(item, "text");

                if (json_is_string(type) && strcmp(json_string_value(type), "text") == 0 &&
                    json_is_string(t)) {
                        /* The whole message was under the cap, so its text is too. */
                        if ((n_text++ > 0 && buf_append_char(&text, '\n') < 0) ||
                            buf_append(&text, json_string_value(t), json_string_length(t)) < 0)
                                return -ENOMEM;
                } else if (json_array_append(others, item) < 0) {
                        return -ENOMEM;
                }
        }

        if (json_is_true(json_object_get(result, "isError"))) {
                if (n_text == 0 || text.len == 0)
                        return error_result(ret, "mcp server '%s': tool '%s' failed", c->name,
                                            tool);
                out = json_object();
                if (!out ||
                    json_object_set_new(out, "error", json_stringn(buf_str(&text), text.len)) < 0)
                        return -ENOMEM;
                *ret = TAKE_PTR(out);
                return 0;
        }

        sc = json_object_get(result, "structuredContent");
        if (json_is_object(sc)) {
                *ret = json_incref(sc);
                return 0;
        }

        if (n_text > 0) {
                json_auto_t *v = json_loadb(buf_str(&text), text.len, JSON_DECODE_ANY, NULL);

                if (json_is_object(v))
                        out = TAKE_PTR(v);
                else if (v)
                        out = json_pack("{s:O}", "result", v);
                else
                        out = json_pack("{s:s%}", "text", buf_str(&text), text.len);
        } else {
                out = json_object();
        }
        if (!out)
                return -ENOMEM;
        if (json_array_size(others) > 0 && !json_object_get(out, "content") &&
            json_object_set(out, "content", others) < 0)
                return -ENOMEM;
        if (json_object_size(out) == 0 && json_object_set_new(out, "text", json_string("")) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(out);
        return 0;
}

int mcp_client_call(struct mcp_client *c, const char *tool, json_t *args, usec_t deadline,
                    int cancel_fd, json_t **ret)
{
        json_auto_t *params = NULL, *answer = NULL, *empty = NULL;
        usec_t start = now_usec();
        char secs[32];
        int r;

        assert(c);
        assert(tool);
        if (!args) {
                empty = json_object();
                if (!empty)
                        return -ENOMEM;
                args = empty;
        }
        params = json_pack("{s:s, s:O}", "name", tool, "arguments", args);
        if (!params)
                return -ENOMEM;
        r = request(c, "tools/call", params, deadline, cancel_fd, &answer);
        switch (r) {
        case 0:
                return map_answer(c, tool, answer, ret);
        case -ETIMEDOUT:
                format_seconds(secs, sizeof(secs), usec_sub(deadline, start));
                return error_result(ret,
                                    "mcp server '%s' did not answer tools/call '%s' within %s s",
                                    c->name, tool, secs);
        case -ECANCELED:
                return error_result(ret, "cancelled");
        case -E2BIG:
                return error_result(ret,
                                    "mcp server '%s': the answer to tools/call '%s' is larger "
                                    "than %u MiB",
                                    c->name, tool, MCP_CLIENT_MESSAGE_MAX / (1024 * 1024));
        case -ENOMEM:
                return r;
        case -ESRCH:
                return not_running_result(c, ret);
        default:
                /* poll() failed, e.g. on a bad @cancel_fd. */
                return error_result(ret, "mcp server '%s': waiting for tools/call '%s' failed: %s",
                                    c->name, tool, strerror(-r));
        }
}

/* ---- start-up ---- */

/* ---- start-up and teardown ---- */

static int client_new(const char *name, struct mcp_client **ret)
{
        struct mcp_client *c = calloc(1, sizeof(*c));

        if (!c)
                return -ENOMEM;
        c->pidfd = -1;
        c->in_fd = c->out_fd = c->err_fd = c->stop_fd = c->dead_fd = -EBADF;
        pthread_mutex_init(&c->wlock, NULL);
        pthread_mutex_init(&c->lock, NULL);
        atomic_init(&c->alive, false);
        atomic_init(&c->next_id, 1);
        atomic_init(&c->n_malformed, 0);
        atomic_init(&c->n_oversized, 0);
        buf_init(&c->line, MCP_CLIENT_MESSAGE_MAX);
        c->name = strdup(name);
        c->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        c->dead_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (!c->name || c->stop_fd < 0 || c->dead_fd < 0) {
                int r = c->name ? -errno : -ENOMEM;

                mcp_client_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

/* @env with @extra ("NAME=VALUE") on top: an @extra entry replaces @env's of that name. */
static int build_env(char *const *env, char *const *extra, char ***ret)
{
        _cleanup_(strv_free_wipep) char **l = NULL;

        for (char *const *e = env; e && *e; e++) {
                size_t n = strcspn(*e, "=");
                bool replaced = false;

                for (char *const *x = extra; x && *x && !replaced; x++)
                        replaced = strncmp(*x, *e, n) == 0 && (*x)[n] == '=';
                if (!replaced && strv_extend(&l, *e) < 0)
                        return -ENOMEM;
        }
        for (char *const *x = extra; x && *x; x++)
                if (strv_extend(&l, *x) < 0)
                        return -ENOMEM;
        if (!l) {
                l = calloc(1, sizeof(char *));
                if (!l)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

/*
 * find_in_path() searches ptc's own PATH; the server's PATH is the one in
 * @envp (its environment), which the config may have changed.
 */
static int find_command(const char *name, char *const *envp, char **ret)
{
        const char *path = NULL;

        if (strchr(name, '/')) {
                /* Used as it is (relative to the server's cwd); exec reports what is wrong. */
                *ret = strdup(name);
                return *ret ? 0 : -ENOMEM;
        }
        for (char *const *e = envp; e && *e && !path; e++)
                if (strncmp(*e, "PATH=", 5) == 0)
                        path = *e + 5;
        return find_in_search_path(name, path, ret);
}

static bool has_tool(const struct mcp_client *c, const char *name)
{
        for (size_t i = 0; i < c->n_tools; i++)
                if (strcmp(c->tools[i].name, name) == 0)
                        return true;
        return false;
}

/* Take tool @t from tools/list. Returns 1 when taken, 0 when invalid (skipped), -ENOMEM. */
static int add_tool(struct mcp_client *c, json_t *t)
{
        json_t *name = json_object_get(t, "name"), *desc = json_object_get(t, "description");
        json_t *schema = json_object_get(t, "inputSchema"), *type;
        struct mcp_upstream_tool *tools, *nt;
        json_auto_t *copy = NULL;

        if (!json_is_string(name) || json_string_length(name) == 0 ||
            json_string_length(name) > TOOL_NAME_MAX ||
            strlen(json_string_value(name)) != json_string_length(name) || !json_is_object(schema))
                return 0;
        type = json_object_get(schema, "type");
        if (type && !(json_is_string(type) && strcmp(json_string_value(type), "object") == 0))
                return 0;
        if (has_tool(c, json_string_value(name)))
                return 0;

        copy = json_deep_copy(schema);
        if (!copy || (!type && json_object_set_new(copy, "type", json_string("object")) < 0))
                return -ENOMEM;
        tools = realloc(c->tools, (c->n_tools + 1) * sizeof(*tools));
        if (!tools)
                return -ENOMEM;
        c->tools = tools;
        nt = &c->tools[c->n_tools];
        *nt = (struct mcp_upstream_tool){
                .name = strdup(json_string_value(name)),
                .description = strdup(json_is_string(desc) ? json_string_value(desc) : ""),
        };
        if (!nt->name || !nt->description) {
                free(nt->name);
                free(nt->description);
                return -ENOMEM;
        }
        nt->input_schema = TAKE_PTR(copy);
        c->n_tools++;
        return 1;
}

/* The server is gone during start-up: say how it ended. */
static int exited_diag(struct mcp_client *c, usec_t deadline, struct diag *reterr)
{
        bool known, sig;
        int status;

        /* Its pipes close just before it becomes a zombie: give the exit a moment. */
        if (c->pidfd >= 0) {
                struct pollfd pfd = {.fd = c->pidfd, .events = POLLIN};
                int k;

                deadline = MIN(deadline, now_usec() + EOF_EXIT_GRACE_USEC);
                do
                        k = poll(&pfd, 1, poll_timeout_ms(deadline));
                while (k < 0 && errno == EINTR);
                if (k > 0)
                        (void) note_exit(c);
        } else {
                (void) note_exit(c);
        }
        pthread_mutex_lock(&c->lock);
        known = c->status_known;
        sig = c->status_signal;
        status = c->status;
        pthread_mutex_unlock(&c->lock);
        if (!known)
                return diag_set(reterr, -ESRCH, "mcp server '%s' closed its stdout during start-up",
                                c->name);
        return diag_set(reterr, -ESRCH, "mcp server '%s' exited during start-up (%s %d)", c->name,
                        sig ? "signal" : "status", status);
}

/* Map a failed start-up request to the diag. */
static int request_diag(struct mcp_client *c, const char *method, int r, usec_t budget,
                        usec_t deadline, struct diag *reterr)
{
        char secs[32];

        switch (r) {
        case -ETIMEDOUT:
                format_seconds(secs, sizeof(secs), budget);
                return diag_set(reterr, r, "mcp server '%s': no answer to %s within %s s", c->name,
                                method, secs);
        case -ESRCH:
                return exited_diag(c, deadline, reterr);
        case -E2BIG:
                return diag_set(reterr, -EPROTO, "mcp server '%s': answer to %s larger than %u MiB",
                                c->name, method, MCP_CLIENT_MESSAGE_MAX / (1024 * 1024));
        default:
                return diag_set(reterr, r, "mcp server '%s': %s failed: %s", c->name, method,
                                strerror(-r));
        }
}

static int rpc_error_diag(struct mcp_client *c, const char *method, json_t *err,
                          struct diag *reterr)
{
        json_t *m = json_object_get(err, "message"), *code = json_object_get(err, "code");

        return diag_set(reterr, -EPROTO,
                        "mcp server '%s': %s failed: %s (code %" JSON_INTEGER_FORMAT ")", c->name,
                        method, json_is_string(m) ? json_string_value(m) : "unknown error",
                        json_is_integer(code) ? json_integer_value(code) : (json_int_t) 0);
}

static int initialize(struct mcp_client *c, usec_t budget, usec_t deadline, struct diag *reterr)
{
        static const char *const accepted[] = {PROTOCOL_VERSION, "2025-06-18", "2025-03-26"};
        json_auto_t *params = NULL, *answer = NULL, *note = NULL;
        json_t *result, *version;
        bool ok = false;
        int r;

        params = json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", PROTOCOL_VERSION,
                           "capabilities", "clientInfo", "name", "ptc", "version", PTC_VERSION);
        note = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "notifications/initialized");
        if (!params || !note)
                return diag_set(reterr, -ENOMEM, "mcp server '%s': out of memory", c->name);
        r = request(c, "initialize", params, deadline, -1, &answer);
        if (r < 0)
                return request_diag(c, "initialize", r, budget, deadline, reterr);
        if (json_is_object(json_object_get(answer, "error")))
                return rpc_error_diag(c, "initialize", json_object_get(answer, "error"), reterr);
        result = json_object_get(answer, "result");
        version = json_object_get(result, "protocolVersion");
        if (!json_is_object(result) || !json_is_string(version))
                return diag_set(reterr, -EPROTO, "mcp server '%s': invalid answer to initialize",
                                c->name);
        for (size_t i = 0; i < ELEMENTSOF(accepted); i++)
                ok = ok || strcmp(json_string_value(version), accepted[i]) == 0;
        if (!ok)
                return diag_set(reterr, -EPROTO,
                                "mcp server '%s': unsupported protocol version '%s' (ptc speaks "
                                "2025-11-25, 2025-06-18 and 2025-03-26)",
                                c->name, json_string_value(version));

        r = send_message(c, note, deadline);
        if (r == -EPIPE)
                return exited_diag(c, deadline, reterr);
        if (r < 0)
                return request_diag(c, "initialize", r, budget, deadline, reterr);
        return 0;
}

static int list_tools(struct mcp_client *c, usec_t budget, usec_t deadline, struct buf *warn,
                      struct diag *reterr)
{
        _cleanup_free_ char *cursor = NULL;
        size_t skipped = 0, ignored = 0;
        int pages;

        for (pages = 0; pages < TOOLS_PAGES_MAX; pages++) {
                json_auto_t *params = NULL, *answer = NULL;
                json_t *result, *tools, *t, *next;
                size_t i;
                int r;

                params = cursor ? json_pack("{s:s}", "cursor", cursor) : json_object();
                if (!params)
                        return diag_set(reterr, -ENOMEM, "mcp server '%s': out of memory", c->name);
                r = request(c, "tools/list", params, deadline, -1, &answer);
                if (r < 0)
                        return request_diag(c, "tools/list", r, budget, deadline, reterr);
                if (json_is_object(json_object_get(answer, "error"))) {
                        json_t *code = json_object_get(json_object_get(answer, "error"), "code");

                        /* A server without tools may not know the method at all. */
                        if (pages == 0 && json_is_integer(code) &&
                            json_integer_value(code) == JSONRPC_METHOD_NOT_FOUND)
                                return 0;
                        return rpc_error_diag(c, "tools/list", json_object_get(answer, "error"),
                                              reterr);
                }
                result = json_object_get(answer, "result");
                tools = json_object_get(result, "tools");
                if (!json_is_array(tools))
                        return diag_set(reterr, -EPROTO,
                                        "mcp server '%s': invalid answer to tools/list", c->name);
                json_array_foreach(tools, i, t)
                {
                        if (c->n_tools >= MCP_CLIENT_TOOLS_MAX) {
                                ignored++;
                                continue;
                        }
                        r = add_tool(c, t);
                        if (r < 0)
                                return diag_set(reterr, r, "mcp server '%s': out of memory",
                                                c->name);
                        if (r == 0)
                                skipped++;
                }
                cursor = mfree_str(cursor);
                next = json_object_get(result, "nextCursor");
                if (!json_is_string(next) || json_string_length(next) == 0)
                        break;
                cursor = strdup(json_string_value(next));
                if (!cursor)
                        return diag_set(reterr, -ENOMEM, "mcp server '%s': out of memory", c->name);
        }

        /* Only -E2BIG on these short notes, which leaves what fits. */
        if (skipped > 0 && buf_printf(warn, "; skipped %zu invalid tools", skipped) < 0) {
        }
        if (ignored > 0 && buf_printf(warn, "; ignored %zu tools over the limit of %d", ignored,
                                      MCP_CLIENT_TOOLS_MAX) < 0) {
        }
        if (pages == TOOLS_PAGES_MAX &&
            buf_printf(warn, "; stopped after %d pages of tools/list", TOOLS_PAGES_MAX) < 0) {
        }
        return 0;
}

int mcp_client_start(const struct mcp_server_config *cfg, char *const *env, usec_t deadline,
                     struct mcp_client **ret, struct diag *reterr)
{
        _cleanup_mcp_client_ struct mcp_client *c = NULL;
        _cleanup_(strv_free_wipep) char **envp = NULL;
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int in_r = -EBADF, out_w = -EBADF, err_w = -EBADF;
        _cleanup_buf_ struct buf warn = BUF_INIT(512);
        struct spawn_opts o = {};
        struct diag d = {};
        usec_t start = now_usec(), budget;
        int p[2], r;

        assert(cfg && cfg->name && cfg->command);
        assert(ret);
        if (deadline == USEC_INFINITY)
                deadline = start + MCP_CLIENT_START_TIMEOUT_USEC;
        budget = usec_sub(deadline, start);

        r = client_new(cfg->name, &c);
        if (r < 0)
                return diag_set(reterr, r, "mcp server '%s': %s", cfg->name, strerror(-r));
        r = build_env(env, cfg->env, &envp);
        if (r >= 0 && strv_extend(&argv, cfg->command) < 0)
                r = -ENOMEM;
        for (char **a = cfg->args; r >= 0 && a && *a; a++)
                if (strv_extend(&argv, *a) < 0)
                        r = -ENOMEM;
        if (r < 0)
                return diag_set(reterr, r, "mcp server '%s': out of memory", c->name);
        r = find_command(cfg->command, envp, &path);
        if (r < 0)
                return diag_set(reterr, r, "mcp server '%s': cannot execute '%s': %s", c->name,
                                cfg->command, strerror(-r));

        if (pipe2(p, O_CLOEXEC) < 0)
                return diag_set(reterr, -errno, "mcp server '%s': pipe2 failed: %m", c->name);
        in_r = p[0];
        c->in_fd = p[1];
        if (pipe2(p, O_CLOEXEC) < 0)
                return diag_set(reterr, -errno, "mcp server '%s': pipe2 failed: %m", c->name);
        c->out_fd = p[0];
        out_w = p[1];
        if (pipe2(p, O_CLOEXEC) < 0)
                return diag_set(reterr, -errno, "mcp server '%s': pipe2 failed: %m", c->name);
        c->err_fd = p[0];
        err_w = p[1];
        r = fd_set_nonblock(c->in_fd, true);
        if (r >= 0)
                r = fd_set_nonblock(c->out_fd, true);
        if (r >= 0)
                r = fd_set_nonblock(c->err_fd, true);
        if (r < 0)
                return diag_set(reterr, r, "mcp server '%s': %s", c->name, strerror(-r));

        o = (struct spawn_opts){
                .path = path,
                .argv = argv,
                .envp = envp,
                .cwd = cfg->cwd,
                .stdin_fd = in_r,
                .stdout_fd = out_w,
                .stderr_fd = err_w,
                .new_session = true, /* its own process group, killed as a whole */
                .die_with_parent = true,
                .pass_fd = -1,
        };
        r = spawn_process(&o, &c->pid, &c->pidfd, &d);
        if (r < 0)
                return diag_set(reterr, r, "mcp server '%s': %s", c->name, d.message);
        /* Only the server may hold these, or its exit would never show as EOF. */
        in_r = safe_close(in_r);
        out_w = safe_close(out_w);
        err_w = safe_close(err_w);
        atomic_store(&c->alive, true);

        r = -pthread_create(&c->reader, NULL, reader_main, c);
        if (r < 0)
                return diag_set(reterr, r, "mcp server '%s': cannot start its reader thread: %s",
                                c->name, strerror(-r));
        c->reader_started = true;

        r = initialize(c, budget, deadline, reterr);
        if (r < 0)
                return r;
        r = list_tools(c, budget, deadline, &warn, reterr);
        if (r < 0)
                return r;

        if (reterr) {
                if (warn.len > 0)
                        (void) diag_set(reterr, 0, "mcp server '%s': %s", c->name,
                                        buf_str(&warn) + 2);
                else
                        reterr->message[0] = 0;
        }
        *ret = TAKE_PTR(c);
        return 0;
}

/* Wait until the server exits (pidfd) or, without a pidfd, closes its stdout. */
static bool wait_exit(struct mcp_client *c, usec_t deadline)
{
        struct pollfd pfd = {.fd = c->pidfd >= 0 ? c->pidfd : c->dead_fd, .events = POLLIN};
        int k;

        do
                k = poll(&pfd, 1, poll_timeout_ms(deadline));
        while (k < 0 && errno == EINTR);
        return k > 0;
}

struct mcp_client *mcp_client_free(struct mcp_client *c)
{
        if (!c)
                return NULL;

        /* EOF on stdin is how the MCP stdio transport asks a server to exit. */
        pthread_mutex_lock(&c->wlock);
        c->in_fd = safe_close(c->in_fd);
        pthread_mutex_unlock(&c->wlock);

        if (c->pid > 0) {
                if (!wait_exit(c, now_usec() + STOP_GRACE_USEC)) {
                        (void) kill(-c->pid, SIGTERM);
                        (void) wait_exit(c, now_usec() + STOP_GRACE_USEC);
                }
                /*
                 * Always, also after a clean exit: what the server started
                 * (npx's node) may live on in its group. The leader is at most
                 * a zombie here, not reaped, so the group id cannot have been
                 * reused. kill(pid) too, in case the server left its group.
                 */
                (void) kill(-c->pid, SIGKILL);
                (void) kill(c->pid, SIGKILL);
                /* Returns: SIGKILL was sent. ECHILD: someone else reaped it. */
                while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
                        ;
        }
        if (c->reader_started) {
                efd_signal(c->stop_fd);
                pthread_join(c->reader, NULL);
        }
        if (atomic_load(&c->n_malformed) > 0 || atomic_load(&c->n_oversized) > 0)
                log_debug("mcp server '%s': %ju malformed and %ju oversized lines skipped", c->name,
                          (uintmax_t) atomic_load(&c->n_malformed),
                          (uintmax_t) atomic_load(&c->n_oversized));

        while (c->pending) {
                struct pending *p = c->pending;

                c->pending = p->next;
                pending_free(p);
        }
        for (size_t i = 0; i < c->n_tools; i++) {
                free(c->tools[i].name);
                free(c->tools[i].description);
                json_decref(c->tools[i].input_schema);
        }
        free(c->tools);
        buf_release(&c->line);
        safe_close(c->pidfd);
        safe_close(c->out_fd);
        safe_close(c->err_fd);
        safe_close(c->stop_fd);
        safe_close(c->dead_fd);
        pthread_mutex_destroy(&c->wlock);
        pthread_mutex_destroy(&c->lock);
        free(c->name);
        free(c);
        return NULL;
}

const char *mcp_client_name(const struct mcp_client *c)
{
        return c->name;
}

size_t mcp_client_tool_count(const struct mcp_client *c)
{
        return c->n_tools;
}

const struct mcp_upstream_tool *mcp_client_tool(const struct mcp_client *c, size_t i)
{
        return i < c->n_tools ? &c->tools[i] : NULL;
}

bool mcp_client_is_alive(const struct mcp_client *c)
{
        return atomic_load(&((struct mcp_client *) c)->alive);
}
