/* SPDX-License-Identifier: MIT */
#include "core/rpc/rpc-server.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/log.h"
#include "basic/time-util.h"
#include "basic/utf8.h"
#include "core/loop/loop.h"
#include "core/output/redact.h"
#include "core/registry/registry.h"
#include "core/rpc/worker-pool.h"
#include "core/tools/tool.h"

#define READ_CHUNK (64 * 1024)

/* terminal parameters a script may not use (seed-behavior.md 1.5 step 4). */
static const char *const terminal_dropped[] = {
        "background", "pty", "notify_on_complete", "watch_patterns",
        "notify",     "heartbeat", "persist_on_release",
};

struct rpc_conn {
        struct rpc_server *server;
        int fd;
        struct loop_source *src;
        struct buf in;
        size_t scanned; /* bytes of in already searched for '\n' */
        pthread_mutex_t wlock;
        atomic_int refs;
        bool closed;  /* loop side done with it */
        bool broken;  /* a write failed; further answers are dropped */
        struct rpc_conn *prev, *next;
};

struct rpc_server {
        struct loop *loop;
        struct rpc_server_opts o;
        char *token;
        size_t token_len;
        int listen_fd;
        struct loop_source *listen_src;
        int wake_fd; /* eventfd: a worker freed a slot while we were throttled */
        struct loop_source *wake_src;
        struct rpc_conn *conns;

        atomic_long calls_made;
        atomic_int inflight;
        atomic_bool throttled;
        bool shut_down;

        pthread_mutex_t lock; /* inflight_cond and log */
        pthread_cond_t inflight_cond;
        json_t *log;
        size_t log_n;
};

struct rpc_job {
        struct rpc_conn *conn;
        json_t *id;             /* echoed back */
        const struct tool *tool; /* NULL: answer with preset */
        json_t *args;
        char *preset_error; /* error answer text (no tool run) */
};

static void conn_unref(struct rpc_conn *c)
{
        if (atomic_fetch_sub(&c->refs, 1) != 1)
                return;
        safe_close(c->fd);
        buf_release(&c->in);
        pthread_mutex_destroy(&c->wlock);
        free(c);
}

/*
 * Write one answer line. Workers may block here (the script is slow to read)
 * but never past the execution: shutdown(2) at the end wakes us with EPIPE.
 */
static void conn_write(struct rpc_conn *c, const char *p, size_t n)
{
        pthread_mutex_lock(&c->wlock);
        while (n > 0 && !c->broken) {
                ssize_t k = send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN) {
                                struct pollfd pf = { .fd = c->fd, .events = POLLOUT };
                                (void) poll(&pf, 1, -1);
                                if (pf.revents & (POLLERR | POLLHUP | POLLNVAL))
                                        c->broken = true;
                                continue;
                        }
                        c->broken = true;
                        break;
                }
                p += k;
                n -= (size_t) k;
        }
        pthread_mutex_unlock(&c->wlock);
}

static char *format_answer(json_t *id, const char *key, json_t *value)
{
        json_auto_t *msg = json_object();
        char *text;
        size_t n;

        if (!msg)
                return NULL;
        if (json_object_set(msg, "id", id ? id : json_null()) < 0 ||
            json_object_set(msg, key, value) < 0)
                return NULL;
        /* One line on the wire: compact, and non-ASCII stays UTF-8. */
        n = json_dumpb(msg, NULL, 0, JSON_COMPACT);
        if (n == 0)
                return NULL;
        text = malloc(n + 2);
        if (!text)
                return NULL;
        (void) json_dumpb(msg, text, n, JSON_COMPACT);
        text[n] = '\n';
        text[n + 1] = 0;
        return text;
}

static void log_call(struct rpc_server *s, const struct tool *t, json_t *args, double secs,
                     bool ok)
{
        _cleanup_free_ char *a = NULL, *red = NULL;
        char preview[96];
        size_t plen;

        if (!s->o.log_calls)
                return;
        a = json_dumps(args, JSON_COMPACT);
        snprintf(preview, sizeof(preview), "%s", a ? a : "");
        /* 80 characters, not bytes: do not cut a UTF-8 sequence. */
        plen = 0;
        for (size_t chars = 0; preview[plen] && chars < 80; chars++) {
                plen++;
                while ((preview[plen] & 0xC0) == 0x80)
                        plen++;
        }
        preview[plen] = 0;
        if (redact_text(s->o.redactor, REDACT_FULL, preview, plen, &red, NULL) > 0)
                snprintf(preview, sizeof(preview), "%s", red);

        pthread_mutex_lock(&s->lock);
        if (s->log_n < RPC_LOG_MAX) {
                json_array_append_new(s->log,
                                      json_pack("{s:s, s:s, s:f, s:b}", "tool", t->name,
                                                "args_preview", preview, "duration_seconds",
                                                (double) ((long long) (secs * 1000 + 0.5)) / 1000,
                                                "ok", ok));
                s->log_n++;
        }
        pthread_mutex_unlock(&s->lock);
}

static void job_finish(struct rpc_job *j)
{
        struct rpc_server *s = j->conn->server;
        int left;

        conn_unref(j->conn);
        json_decref(j->id);
        json_decref(j->args);
        free(j->preset_error);
        free(j);

        pthread_mutex_lock(&s->lock);
        left = atomic_fetch_sub(&s->inflight, 1) - 1;
        if (left == 0)
                pthread_cond_broadcast(&s->inflight_cond);
        pthread_mutex_unlock(&s->lock);
        if (atomic_load(&s->throttled) && left < RPC_INFLIGHT_MAX / 2) {
                uint64_t one = 1;
                (void) !write(s->wake_fd, &one, sizeof(one));
        }
}

static void job_run(void *userdata)
{
        struct rpc_job *j = userdata;
        struct rpc_server *s = j->conn->server;
        _cleanup_free_ char *text = NULL;

        if (j->preset_error) {
                json_auto_t *e = json_string(j->preset_error);
                text = format_answer(j->id, "error", e);
        } else {
                json_t *result = NULL;
                usec_t t0 = now_usec();
                bool ok;
                int r;

                r = j->tool->run(j->tool, s->o.tool_ctx, j->args, &result);
                if (r < 0 || !result) {
                        json_decref(result);
                        result = tool_error_new("Tool execution failed: %s",
                                                strerror(r < 0 ? -r : EIO));
                }
                /* Whatever a tool returns, known secret values never reach the script. */
                if (result)
                        (void) redact_json(s->o.redactor, REDACT_NONE, result);
                ok = result && !json_is_string(json_object_get(result, "error"));
                log_call(s, j->tool, j->args, (double) (now_usec() - t0) / USEC_PER_SEC, ok);
                if (result)
                        text = format_answer(j->id, "result", result);
                json_decref(result);
        }
        if (!text) {
                /* Out of memory building the answer: say so briefly. */
                static const char oom[] = "{\"id\":null,\"error\":\"out of memory\"}\n";
                conn_write(j->conn, oom, sizeof(oom) - 1);
        } else
                conn_write(j->conn, text, strlen(text));
        job_finish(j);
}

static void submit(struct rpc_conn *c, json_t *id, const struct tool *t, json_t *args,
                   const char *error_fmt, ...) _printf_(5, 6);

static void submit(struct rpc_conn *c, json_t *id, const struct tool *t, json_t *args,
                   const char *error_fmt, ...)
{
        struct rpc_server *s = c->server;
        struct rpc_job *j = calloc(1, sizeof(*j));

        if (!j)
                return;
        if (error_fmt) {
                va_list ap;
                va_start(ap, error_fmt);
                if (vasprintf(&j->preset_error, error_fmt, ap) < 0)
                        j->preset_error = NULL;
                va_end(ap);
                if (!j->preset_error) {
                        free(j);
                        return;
                }
        }
        j->conn = c;
        atomic_fetch_add(&c->refs, 1);
        j->id = json_incref(id);
        j->tool = t;
        j->args = json_incref(args);
        atomic_fetch_add(&s->inflight, 1);
        if (worker_pool_submit(s->o.pool, job_run, j) < 0) {
                /* No thread to run it: answer here rather than drop it. */
                job_run(j);
        }
}

static bool token_ok(const struct rpc_server *s, json_t *tok)
{
        const char *t = json_string_value(tok);
        size_t n = json_string_length(tok);
        unsigned char diff = 0;

        if (!t || n != s->token_len)
                return false;
        /* Constant time: no early exit on the first differing byte. */
        for (size_t i = 0; i < n; i++)
                diff |= (unsigned char) (t[i] ^ s->token[i]);
        return diff == 0;
}

static void handle_line(struct rpc_conn *c, const char *line, size_t n)
{
        struct rpc_server *s = c->server;
        json_auto_t *req = NULL;
        json_t *id, *args, *toolname;
        const struct tool *t;
        json_error_t err;

        /* Blank lines are ignored, as the seed. */
        while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
                n--;
        if (n == 0)
                return;
        if (!utf8_is_valid(line, n)) {
                submit(c, NULL, NULL, NULL, "Invalid RPC request: invalid UTF-8");
                return;
        }
        req = json_loadb(line, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
        if (!req) {
                submit(c, NULL, NULL, NULL, "Invalid RPC request: %s (column %d)", err.text,
                       err.column);
                return;
        }
        if (!json_is_object(req)) {
                submit(c, NULL, NULL, NULL, "Invalid RPC request: expected a JSON object");
                return;
        }
        id = json_object_get(req, "id");
        if (!token_ok(s, json_object_get(req, "token"))) {
                submit(c, id, NULL, NULL, "Unauthorized RPC request");
                return;
        }
        toolname = json_object_get(req, "tool");
        if (!json_is_string(toolname)) {
                submit(c, id, NULL, NULL, "Invalid RPC request: 'tool' must be a string");
                return;
        }
        args = json_object_get(req, "args");
        if (args && !json_is_null(args) && !json_is_object(args)) {
                submit(c, id, NULL, NULL, "Invalid RPC request: 'args' must be an object");
                return;
        }
        t = registry_find(s->o.registry, json_string_value(toolname));
        if (!t) {
                _cleanup_free_ char *names = registry_names(s->o.registry);
                submit(c, id, NULL, NULL, "Tool '%s' is not available in execute_code. Available: %s",
                       json_string_value(toolname), names ? names : "");
                return;
        }
        if (atomic_load(&s->calls_made) >= s->o.max_tool_calls) {
                submit(c, id, NULL, NULL,
                       "Tool call limit reached (%lld). No more tool calls allowed in this "
                       "execution.",
                       (long long) s->o.max_tool_calls);
                return;
        }
        if (!args || json_is_null(args)) {
                args = json_object();
                if (!args)
                        return;
                json_object_set_new(req, "args", args);
        }
        if (strcmp(t->name, "terminal") == 0)
                for (size_t i = 0; i < ELEMENTSOF(terminal_dropped); i++)
                        (void) json_object_del(args, terminal_dropped[i]);
        atomic_fetch_add(&s->calls_made, 1);
        submit(c, id, t, args, NULL);
}

static void conn_close(struct rpc_conn *c)
{
        struct rpc_server *s = c->server;

        if (c->closed)
                return;
        c->closed = true;
        loop_remove(c->src);
        c->src = NULL;
        /* Wake a worker blocked writing to it; the fd closes with the last ref. */
        (void) shutdown(c->fd, SHUT_RDWR);
        if (c->prev)
                c->prev->next = c->next;
        else
                s->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        conn_unref(c);
}

/* Handle every complete line in c->in; stop early when throttled. */
static void conn_process(struct rpc_conn *c)
{
        struct rpc_server *s = c->server;
        size_t start = 0;

        while (!c->closed && !atomic_load(&s->throttled)) {
                char *nl = memchr(c->in.data + c->scanned, '\n', c->in.len - c->scanned);
                if (!nl) {
                        c->scanned = c->in.len;
                        break;
                }
                handle_line(c, c->in.data + start, (size_t) (nl - (c->in.data + start)));
                start = (size_t) (nl - c->in.data) + 1;
                c->scanned = start;
                if (atomic_load(&s->inflight) >= RPC_INFLIGHT_MAX)
                        atomic_store(&s->throttled, true);
        }
        if (start > 0) {
                buf_consume(&c->in, start);
                c->scanned -= start;
        }
}

/*
 * Answer an over-long line from the loop thread, best effort: the connection
 * is closed right after, so there is no worker to hand it to. Never blocks.
 */
static void write_error_now(struct rpc_conn *c, size_t cap)
{
        _cleanup_free_ char *text = NULL;
        json_auto_t *e = NULL;
        char msg[128];

        snprintf(msg, sizeof(msg), "Invalid RPC request: line exceeds %zu bytes; connection closed",
                 cap);
        e = json_string(msg);
        text = format_answer(NULL, "error", e);
        if (!text || pthread_mutex_trylock(&c->wlock) != 0)
                return;
        (void) !send(c->fd, text, strlen(text), MSG_NOSIGNAL | MSG_DONTWAIT);
        pthread_mutex_unlock(&c->wlock);
}

static void set_reading(struct rpc_server *s, bool on)
{
        for (struct rpc_conn *c = s->conns; c; c = c->next)
                if (loop_modify(c->src, on ? EPOLLIN | EPOLLRDHUP : EPOLLRDHUP) < 0)
                        log_debug("cannot change the events of an RPC connection");
}

static void on_conn(struct loop_source *src, int fd, uint32_t events, void *userdata)
{
        struct rpc_conn *c = userdata;
        struct rpc_server *s = c->server;
        size_t cap = s->o.frame_max;

        if (events & EPOLLIN) {
                size_t room = c->in.cap - c->in.len;
                ssize_t k;

                if (room == 0 || buf_reserve(&c->in, MIN(room, (size_t) READ_CHUNK)) < 0) {
                        /* The line is over the cap: answer, then drop this connection only. */
                        write_error_now(c, cap);
                        conn_close(c);
                        return;
                }
                k = recv(fd, c->in.data + c->in.len, MIN(room, (size_t) READ_CHUNK), MSG_DONTWAIT);
                if (k < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                return;
                        conn_close(c);
                        return;
                }
                if (k == 0) {
                        conn_close(c);
                        return;
                }
                c->in.len += (size_t) k;
                c->in.data[c->in.len] = 0;
                conn_process(c);
                if (atomic_load(&s->throttled))
                        set_reading(s, false);
                return;
        }
        if (events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP)) {
                /* Peer gone; requests already read are still answered by workers. */
                conn_close(c);
        }
}

static void on_wake(struct loop_source *src, int fd, uint32_t events, void *userdata)
{
        struct rpc_server *s = userdata;
        uint64_t v;

        (void) !read(fd, &v, sizeof(v));
        if (!atomic_load(&s->throttled) || atomic_load(&s->inflight) >= RPC_INFLIGHT_MAX / 2)
                return;
        atomic_store(&s->throttled, false);
        /* Lines that arrived while throttled are still buffered. */
        for (struct rpc_conn *c = s->conns, *n; c; c = n) {
                n = c->next;
                conn_process(c);
        }
        set_reading(s, !atomic_load(&s->throttled));
}

static void on_accept(struct loop_source *src, int fd, uint32_t events, void *userdata)
{
        struct rpc_server *s = userdata;

        for (;;) {
                struct rpc_conn *c;
                int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

                if (cfd < 0)
                        return; /* EAGAIN, or transient (EMFILE): the next event retries */
                c = calloc(1, sizeof(*c));
                if (!c) {
                        safe_close(cfd);
                        return;
                }
                c->server = s;
                c->fd = cfd;
                /* A line of frame_max bytes plus its newline fits. */
                buf_init(&c->in, s->o.frame_max + 1);
                pthread_mutex_init(&c->wlock, NULL);
                atomic_init(&c->refs, 1);
                if (loop_add(s->loop, cfd,
                             atomic_load(&s->throttled) ? EPOLLRDHUP : EPOLLIN | EPOLLRDHUP,
                             on_conn, c, &c->src) < 0) {
                        conn_unref(c);
                        continue;
                }
                c->next = s->conns;
                if (s->conns)
                        s->conns->prev = c;
                s->conns = c;
        }
}

int rpc_server_new(struct loop *loop, const struct rpc_server_opts *o, struct rpc_server **ret)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct rpc_server *s;
        int r;

        if (strlen(o->socket_path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->loop = loop;
        s->o = *o;
        if (!s->o.frame_max)
                s->o.frame_max = RPC_FRAME_MAX;
        s->listen_fd = s->wake_fd = -EBADF;
        pthread_mutex_init(&s->lock, NULL);
        pthread_cond_init(&s->inflight_cond, NULL);
        s->token = strdup(o->token);
        s->log = json_array();
        if (!s->token || !s->log) {
                r = -ENOMEM;
                goto fail;
        }
        s->token_len = strlen(s->token);

        s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (s->listen_fd < 0) {
                r = -errno;
                goto fail;
        }
        memcpy(sa.sun_path, o->socket_path, strlen(o->socket_path));
        if (bind(s->listen_fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                r = -errno;
                goto fail;
        }
        (void) chmod(o->socket_path, 0600);
        if (listen(s->listen_fd, SOMAXCONN) < 0) {
                r = -errno;
                goto fail;
        }
        s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (s->wake_fd < 0) {
                r = -errno;
                goto fail;
        }
        r = loop_add(loop, s->listen_fd, EPOLLIN, on_accept, s, &s->listen_src);
        if (r < 0)
                goto fail;
        r = loop_add(loop, s->wake_fd, EPOLLIN, on_wake, s, &s->wake_src);
        if (r < 0)
                goto fail;
        *ret = s;
        return 0;
fail:
        rpc_server_free(s);
        return r;
}

void rpc_server_shutdown(struct rpc_server *s, int timeout_ms)
{
        struct timespec until;

        if (!s || s->shut_down)
                return;
        s->shut_down = true;
        loop_remove(s->listen_src);
        s->listen_src = NULL;
        s->listen_fd = safe_close(s->listen_fd);
        while (s->conns)
                conn_close(s->conns);

        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += timeout_ms / 1000;
        until.tv_nsec += (long) (timeout_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&s->lock);
        while (atomic_load(&s->inflight) > 0)
                if (pthread_cond_timedwait(&s->inflight_cond, &s->lock, &until) == ETIMEDOUT)
                        break;
        pthread_mutex_unlock(&s->lock);
}

struct rpc_server *rpc_server_free(struct rpc_server *s)
{
        if (!s)
                return NULL;
        rpc_server_shutdown(s, 10000);
        if (atomic_load(&s->inflight) > 0) {
                /*
                 * A tool is stuck (e.g. in an uninterruptible read) and still
                 * references us. Leaking beats a use-after-free.
                 */
                log_debug("%d tool call(s) still running; not freeing the RPC server",
                          atomic_load(&s->inflight));
                return NULL;
        }
        loop_remove(s->wake_src);
        safe_close(s->wake_fd);
        safe_close(s->listen_fd);
        json_decref(s->log);
        free(s->token);
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->inflight_cond);
        free(s);
        return NULL;
}

int64_t rpc_server_calls_made(const struct rpc_server *s)
{
        return atomic_load(&((struct rpc_server *) s)->calls_made);
}

json_t *rpc_server_log(struct rpc_server *s)
{
        json_t *l;

        pthread_mutex_lock(&s->lock);
        l = json_deep_copy(s->log);
        pthread_mutex_unlock(&s->lock);
        return l;
}
