/* SPDX-License-Identifier: MIT */
#include "core/rpc/rpc-server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
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
#include "basic/fd-util.h"
#include "basic/log.h"
#include "basic/time-util.h"
#include "basic/utf8.h"
#include "core/events/events.h"
#include "core/events/trace.h"
#include "core/json/json-write.h"
#include "core/output/redact.h"
#include "core/registry/registry.h"
#include "core/tools/tool.h"

#define READ_CHUNK (64 * 1024)
/* How much of an unknown tool's name its error repeats (registered names are far shorter). */
#define UNKNOWN_TOOL_ECHO_MAX 128

struct rpc_conn {
        struct rpc_server *server;
        int fd;
        atomic_int refs;

        /* Reading side: one thread at a time (EPOLLONESHOT), rlock for the ready queue. */
        pthread_mutex_t rlock;
        struct buf in;
        size_t scanned; /* bytes of in already searched for '\n' */
        bool eof;       /* no more bytes will come */
        bool queued;    /* on the server's ready list (complete lines buffered) */
        bool armed;     /* registered in the epoll set */
        struct rpc_conn *next_ready;

        /* Writing side. */
        pthread_mutex_t wlock;
        bool broken; /* a write failed; further answers are dropped */

        struct rpc_conn *prev, *next; /* all connections, under server->lock */
};

struct rpc_server {
        struct rpc_server_opts o;
        char *token;
        size_t token_len;
        int listen_fd;
        int epfd;
        int wake_fd; /* eventfd in epfd: "look at the ready list" / "stop" */
        int stop_fd; /* eventfd written once at shutdown; wakes writers of every connection,
                      * including ones already dropped from the list (EOF seen) */
        /*
         * Out of descriptors (EMFILE), a pending connection cannot be accepted, and the
         * listening socket stays readable: re-armed, it would wake a thread at once, again
         * and again, a busy loop for as long as the script holds its connections. So ptc
         * keeps one descriptor in reserve (/dev/null): it is closed to accept the pending
         * connection and close it at once (the script's stub sees the connection closed),
         * then taken again (libuv's answer to the same problem). When it cannot be taken
         * again, the socket is not re-armed until a connection's descriptor is released.
         */
        int reserve_fd;
        atomic_bool accept_paused;

        atomic_long calls_made;
        atomic_ulong event_ids; /* the last "call" event's id */
        atomic_bool stopping;

        pthread_mutex_t lock; /* everything below */
        struct rpc_conn *conns;
        size_t n_conns;
        struct rpc_conn *ready_head, *ready_tail;
        size_t n_threads, n_waiting;
        size_t quick_threads; /* quick calls run on at most this many threads: the CPUs */
        pthread_t threads[RPC_THREADS_MAX];
        bool shut_down;
        json_t *log;
        size_t log_n;
};

static void rearm_listen(struct rpc_server *s)
{
        struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT, .data.ptr = s};

        if (epoll_ctl(s->epfd, EPOLL_CTL_MOD, s->listen_fd, &ev) < 0)
                log_debug_errno(-errno, "cannot re-arm the RPC socket: %m");
}

static void conn_unref(struct rpc_conn *c)
{
        struct rpc_server *s = c->server;

        if (atomic_fetch_sub(&c->refs, 1) != 1)
                return;
        safe_close(c->fd);
        /* A descriptor is free again: connections waiting since EMFILE can be accepted. */
        if (s && atomic_exchange(&s->accept_paused, false) && !atomic_load(&s->stopping))
                rearm_listen(s);
        buf_release(&c->in);
        pthread_mutex_destroy(&c->rlock);
        pthread_mutex_destroy(&c->wlock);
        free(c);
}

/*
 * Write one answer line. A thread may block here (the script is slow to read)
 * but never past the execution: shutdown(2) at the end wakes it with EPIPE.
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
                                struct pollfd pf[2] = {
                                        {.fd = c->fd, .events = POLLOUT},
                                        {.fd = c->server->stop_fd, .events = POLLIN},
                                };
                                /* No deadline: room, the peer gone or the stop wakes this. */
                                (void) poll_until(pf, 2, USEC_INFINITY);
                                if ((pf[0].revents & (POLLERR | POLLHUP | POLLNVAL)) ||
                                    pf[1].revents)
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

/* {"id":ID,"KEY":VALUE}\n as one compact line; caller frees. */
static char *format_answer(json_t *id, const char *key, json_t *value)
{
        _cleanup_buf_ struct buf b = BUF_INIT(SIZE_MAX / 2);

        if (buf_reserve(&b, 4096) < 0 || buf_append_str(&b, "{\"id\":") < 0 ||
            json_write_compact(&b, id ? id : json_null()) < 0 || buf_append_str(&b, ",\"") < 0 ||
            buf_append_str(&b, key) < 0 || buf_append_str(&b, "\":") < 0 ||
            json_write_compact(&b, value) < 0 || buf_append_str(&b, "}\n") < 0)
                return NULL;
        return buf_steal(&b, NULL);
}

/*
 * The arguments as the log and the events show them: compact JSON, redacted whole (a
 * secret cut short would no longer be recognised), then cut to 80 characters. "" when the
 * redaction fails (not known to be free of secrets: dropped, fail closed).
 */
static void args_preview(const struct rpc_server *s, json_t *args, char preview[static 400])
{
        _cleanup_free_ char *a = json_dumps(args, JSON_COMPACT), *red = NULL;
        const char *text = a ? a : "";
        size_t plen = 0;
        int r;

        r = redact_text(s->o.redactor, REDACT_FULL, text, strlen(text), &red, NULL);
        if (r < 0) {
                preview[0] = 0;
                return;
        }
        if (r > 0)
                text = red;
        /* 80 characters, not bytes: do not cut a UTF-8 sequence. */
        for (size_t chars = 0; text[plen] && chars < 80 && plen < 390; chars++) {
                plen++;
                while ((text[plen] & 0xC0) == 0x80 && plen < 396)
                        plen++;
        }
        memcpy(preview, text, plen);
        preview[plen] = 0;
}

static void log_call(struct rpc_server *s, const struct tool *t, const char *preview, double secs,
                     bool ok, const struct approval_outcome *outcome)
{
        json_t *entry, *policy;

        if (!s->o.log_calls)
                return;
        entry = json_pack("{s:s, s:s, s:f, s:b}", "tool", t->name, "args_preview", preview,
                          "duration_seconds", (double) ((long long) (secs * 1000 + 0.5)) / 1000,
                          "ok", ok);
        /* What the policy decided, unless nothing but the default allow (docs/policy.md). */
        policy = approval_outcome_to_json(outcome);
        if (entry && policy)
                (void) json_object_set(entry, "policy", policy);
        json_decref(policy);
        pthread_mutex_lock(&s->lock);
        if (s->log_n < RPC_LOG_MAX && entry) {
                json_array_append(s->log, entry);
                s->log_n++;
        }
        pthread_mutex_unlock(&s->lock);
        json_decref(entry);
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

/* The answer {"id":ID,"error":MESSAGE}\n in *ret (caller frees). 0 or -ENOMEM. */
static int error_answer(json_t *id, char **ret, const char *fmt, ...) _printf_(3, 4);

static int error_answer(json_t *id, char **ret, const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL;
        json_auto_t *e = NULL;
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (k < 0) {
                msg = NULL;
                return -ENOMEM;
        }
        e = json_string(msg);
        *ret = e ? format_answer(id, "error", e) : NULL;
        return *ret ? 0 : -ENOMEM;
}

/*
 * Run @t and make its answer in *ret (caller frees): NULL when none is due (past the
 * deadline). 0 or -ENOMEM.
 */
static int run_tool(struct rpc_server *s, json_t *id, const struct tool *t, json_t *args,
                    char **ret)
{
        const struct tool_ctx *ctx = s->o.tool_ctx;
        struct approval_outcome outcome = {};
        char preview[400] = "";
        json_t *result = NULL;
        usec_t t0 = now_usec();
        unsigned long id_num = 0;
        bool ok, paused = false;
        double secs;
        usec_t deadline;
        int r;

        /* Known secret values never reach the script; a failed redaction withholds all. */
        if (s->o.log_calls || s->o.events || s->o.trace) {
                args_preview(s, args, preview);
                id_num = atomic_fetch_add(&s->event_ids, 1) + 1;
                event_emit(s->o.events, "call",
                           json_pack("{s:I, s:s, s:s}", "id", (json_int_t) id_num, "tool", t->name,
                                     "args_preview", preview));
        }
        r = registry_call_tool(t, ctx, args, &result, &outcome);
        ok = r >= 0 && !json_is_string(json_object_get(result, "error"));
        secs = (double) (now_usec() - t0) / USEC_PER_SEC;
        log_call(s, t, preview, secs, ok, &outcome);
        if (s->o.trace) {
                char name[160];

                (void) snprintf(name, sizeof(name), "tool: %s", t->name);
                trace_span_now(s->o.trace, name, "tool", t0,
                               json_pack("{s:I, s:s, s:b}", "id", (json_int_t) id_num,
                                         "args_preview", preview, "ok", ok));
        }
        if (s->o.events) {
                _cleanup_free_ char *rt = result ? json_dumps(result, JSON_COMPACT) : NULL;
                json_t *policy = approval_outcome_to_json(&outcome);

                event_emit(s->o.events, "call_end",
                           json_pack("{s:I, s:s, s:f, s:b, s:I, s:o*}", "id", (json_int_t) id_num,
                                     "tool", t->name, "duration_seconds",
                                     (double) ((long long) (secs * 1000 + 0.5)) / 1000, "ok", ok,
                                     "result_bytes", (json_int_t) (rt ? strlen(rt) : 0), "policy",
                                     policy));
        }
        /*
         * Past the execution's deadline nobody gets an answer: a tool bounded by that
         * deadline (a command, a page fetch) wakes at the same instant as the execution's
         * timer, and an answer sent now would let the script run on past its deadline
         * before the stop's SIGINT lands. The script stays blocked until then.
         */
        deadline = ctx ? pause_clock_deadline(ctx->clock, ctx->deadline, &paused) : USEC_INFINITY;
        if (ctx && deadline != USEC_INFINITY && !paused && now_usec() >= deadline) {
                json_decref(result);
                return 0;
        }
        *ret = result ? format_answer(id, "result", result) : NULL;
        json_decref(result);
        return *ret ? 0 : -ENOMEM;
}

/*
 * Count a dispatched call unless the budget is spent (atomically: threads race here).
 * Returns the count including this call, or 0 when the budget is spent.
 */
static long take_budget(struct rpc_server *s)
{
        long cur = atomic_load(&s->calls_made);

        do
                if (cur >= s->o.max_tool_calls)
                        return 0;
        while (!atomic_compare_exchange_weak(&s->calls_made, &cur, cur + 1));
        return cur + 1;
}

static void maybe_start_thread(struct rpc_server *s);

/*
 * Before a call runs: leave a thread waiting for the next request, unless @t is quick and
 * quick calls already keep every CPU busy (tool.h, tool_def.quick). A thread per concurrent
 * quick call only made them take turns on the CPUs: 8 script threads calling read_file on a
 * 2-CPU machine took a third longer with 9 server threads than with 2.
 */
static void keep_spare(struct rpc_server *s, const struct tool *t)
{
        pthread_mutex_lock(&s->lock);
        /* Busy: every thread not waiting in epoll, also one between a wake-up and its call. */
        if (!t->quick || s->n_threads - s->n_waiting < s->quick_threads)
                maybe_start_thread(s);
        pthread_mutex_unlock(&s->lock);
}

int rpc_server_answer(struct rpc_server *s, const char *line, size_t n, char **ret_answer)
{
        json_auto_t *req = NULL;
        json_t *id, *args, *toolname;
        const struct tool *t;
        json_error_t err;
        long count;

        *ret_answer = NULL;
        /* Blank lines are ignored, as the seed. */
        while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
                n--;
        if (n == 0)
                return 0;
        if (!utf8_is_valid(line, n))
                return error_answer(NULL, ret_answer, "Invalid RPC request: invalid UTF-8");
        /* DECODE_ANY: a bare scalar is valid JSON, answered "expected a JSON object". */
        req = json_loadb(line, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, &err);
        if (!req)
                return error_answer(NULL, ret_answer, "Invalid RPC request: %s (column %d)",
                                    err.text, err.column);
        if (!json_is_object(req))
                return error_answer(NULL, ret_answer,
                                    "Invalid RPC request: expected a JSON object");
        id = json_object_get(req, "id");
        if (!token_ok(s, json_object_get(req, "token")))
                return error_answer(id, ret_answer, "Unauthorized RPC request");
        toolname = json_object_get(req, "tool");
        if (!json_is_string(toolname))
                return error_answer(id, ret_answer, "Invalid RPC request: 'tool' must be a string");
        /* JSON_ALLOW_NUL (for arguments such as file content) lets "\u0000" into the name too:
         * NAME followed by \u0000 and more must not be looked up, and run, as NAME. */
        if (strlen(json_string_value(toolname)) != json_string_length(toolname))
                return error_answer(id, ret_answer,
                                    "Invalid RPC request: 'tool' must not contain NUL");
        args = json_object_get(req, "args");
        if (args && !json_is_null(args) && !json_is_object(args))
                return error_answer(id, ret_answer,
                                    "Invalid RPC request: 'args' must be an object");
        t = registry_find(s->o.registry, json_string_value(toolname));
        if (!t) {
                _cleanup_free_ char *names = registry_names(s->o.registry);
                const char *name = json_string_value(toolname);
                size_t len = json_string_length(toolname);
                /* The script chose the name, up to a frame long: echo the start of it. */
                size_t shown = utf8_prefix_len(name, len, UNKNOWN_TOOL_ECHO_MAX);

                return error_answer(id, ret_answer,
                                    "Tool '%.*s%s' is not available in execute_code. Available: %s",
                                    (int) shown, name, shown < len ? "..." : "",
                                    names ? names : "");
        }
        count = take_budget(s);
        if (count == 0) {
                event_emit(s->o.events, "limit",
                           json_pack("{s:s, s:s, s:I}", "limit", "max_tool_calls", "tool", t->name,
                                     "max_tool_calls", (json_int_t) s->o.max_tool_calls));
                return error_answer(id, ret_answer,
                                    "Tool call limit reached (%lld). No more tool calls allowed "
                                    "in this execution.",
                                    (long long) s->o.max_tool_calls);
        }
        keep_spare(s, t);
        if (s->o.on_call)
                s->o.on_call(s->o.on_call_userdata, t->name, count);
        if (!args || json_is_null(args)) {
                args = json_object();
                if (!args)
                        return -ENOMEM;
                json_object_set_new(req, "args", args);
        }
        return run_tool(s, id, t, args, ret_answer);
}

/* Whether the run's tools were told to stop (tool_ctx.cancel_fd): it is stopping, or over. */
static bool run_stopping(const struct rpc_server *s)
{
        const struct tool_ctx *ctx = s->o.tool_ctx;

        return ctx && ctx->cancel_fd >= 0 && fd_readable_now(ctx->cancel_fd);
}

/*
 * Answer one line on @c; every request gets a line back, "out of memory" at worst — but one:
 * a call the run's stop overtook. The stop interrupts the script (SIGINT to its main thread,
 * forwarded by the sandbox's init a moment later) and only then cancels the tools; the
 * cancelled call's answer could still reach the script before that signal and let it run on
 * past its deadline (test_run_timeout_cancels_fetch saw "not reached" under load). So it gets
 * none: its wait ends with the interrupt, or with the kill after the grace. A call made after
 * the stop is answered (cancelled) at once, as before.
 */
static void handle_line(struct rpc_conn *c, const char *line, size_t n)
{
        static const char oom[] = "{\"id\":null,\"error\":\"out of memory\"}\n";
        _cleanup_free_ char *answer = NULL;
        bool stopping = run_stopping(c->server);

        if (rpc_server_answer(c->server, line, n, &answer) < 0)
                conn_write(c, oom, sizeof(oom) - 1);
        else if (answer && (stopping || !run_stopping(c->server)))
                conn_write(c, answer, strlen(answer));
}

/* ---- connection reading (one thread per connection at a time) ---- */

static void wake_one(struct rpc_server *s)
{
        uint64_t one = 1;

        (void) !write(s->wake_fd, &one, sizeof(one));
}

static void arm(struct rpc_conn *c)
{
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT, .data.ptr = c};

        if (epoll_ctl(c->server->epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0)
                log_debug_errno(-errno, "cannot re-arm an RPC connection: %m");
}

/* Detach a connection that will never be read again (EOF, error, over-long line). */
static void conn_drop(struct rpc_conn *c)
{
        struct rpc_server *s = c->server;

        (void) epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        pthread_mutex_lock(&s->lock);
        if (c->prev)
                c->prev->next = c->next;
        else if (s->conns == c)
                s->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        c->prev = c->next = NULL;
        s->n_conns--;
        pthread_mutex_unlock(&s->lock);
        conn_unref(c); /* the list's reference */
}

/*
 * Take the next complete line out of c->in (caller frees *ret). Returns 1 and
 * a line, 0 when none is complete. rlock held.
 */
static int take_line(struct rpc_conn *c, char **ret, size_t *ret_len)
{
        char *nl = c->in.len > c->scanned
                           ? memchr(c->in.data + c->scanned, '\n', c->in.len - c->scanned)
                           : NULL;
        size_t n;
        char *line;

        if (!nl) {
                c->scanned = c->in.len;
                return 0;
        }
        n = (size_t) (nl - c->in.data);
        line = malloc(n + 1);
        if (!line)
                return -ENOMEM;
        memcpy(line, c->in.data, n);
        line[n] = 0;
        buf_consume(&c->in, n + 1);
        c->scanned = 0;
        /* Idle connections hold no buffer: thousands of them stay cheap. */
        if (c->in.len == 0)
                buf_release(&c->in);
        *ret = line;
        *ret_len = n;
        return 1;
}

static bool has_line(struct rpc_conn *c)
{
        return c->in.len > c->scanned &&
               memchr(c->in.data + c->scanned, '\n', c->in.len - c->scanned) != NULL;
}

/* Put @c on the ready list (rlock held): another thread takes its next line. */
static void queue_ready(struct rpc_conn *c)
{
        struct rpc_server *s = c->server;

        if (c->queued)
                return;
        c->queued = true;
        atomic_fetch_add(&c->refs, 1);
        pthread_mutex_lock(&s->lock);
        c->next_ready = NULL;
        if (s->ready_tail)
                s->ready_tail->next_ready = c;
        else
                s->ready_head = c;
        s->ready_tail = c;
        pthread_mutex_unlock(&s->lock);
        wake_one(s);
}

/*
 * Read what the socket has (the connection is ours: EPOLLONESHOT fired).
 * Returns false when the connection is finished on the reading side.
 */
static bool conn_read(struct rpc_conn *c)
{
        size_t cap = c->server->o.frame_max;

        for (int i = 0; i < 16; i++) {
                size_t room = c->in.cap - c->in.len;
                ssize_t k;

                if (room == 0 || buf_reserve(&c->in, MIN(room, (size_t) READ_CHUNK)) < 0) {
                        _cleanup_free_ char *text = NULL;

                        if (has_line(c))
                                return true; /* serve what we have first */
                        if (error_answer(NULL, &text,
                                         "Invalid RPC request: line exceeds %zu bytes; "
                                         "connection closed",
                                         cap) >= 0)
                                conn_write(c, text, strlen(text));
                        return false;
                }
                k = recv(c->fd, c->in.data + c->in.len, MIN(room, (size_t) READ_CHUNK),
                         MSG_DONTWAIT);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return errno == EAGAIN;
                }
                if (k == 0) {
                        c->eof = true;
                        return false;
                }
                c->in.len += (size_t) k;
                c->in.data[c->in.len] = 0;
                if ((size_t) k < MIN(room, (size_t) READ_CHUNK))
                        return true; /* drained for now */
        }
        return true;
}

/*
 * After reading or taking a line: decide who handles the rest of @c.
 * rlock held. Complete lines left -> ready list; else re-arm or drop.
 */
static void conn_settle(struct rpc_conn *c, bool readable)
{
        if (has_line(c)) {
                queue_ready(c);
                return;
        }
        if (readable && !c->eof) {
                arm(c);
                return;
        }
        if (c->armed) {
                c->armed = false;
                conn_drop(c);
        }
}

/* ---- threads ---- */

static void *worker_main(void *arg);

/* s->lock held. */
static void maybe_start_thread(struct rpc_server *s)
{
        pthread_attr_t attr;

        if (s->n_waiting > 0 || s->n_threads >= s->o.max_threads || atomic_load(&s->stopping))
                return;
        pthread_attr_init(&attr);
        /* 1 MiB: enough for jansson recursion on (bounded) deep JSON; untouched pages cost no RSS.
         */
        pthread_attr_setstacksize(&attr, 1024 * 1024);
        if (pthread_create(&s->threads[s->n_threads], &attr, worker_main, s) == 0)
                s->n_threads++;
        pthread_attr_destroy(&attr);
}

/*
 * Out of descriptors: shed one pending connection (see reserve_fd). Returns 1 when one was
 * shed, 0 when none is pending any more, -EMFILE when there is no reserve to do it with.
 */
static int shed_connection(struct rpc_server *s)
{
        int cfd, r;

        if (s->reserve_fd < 0)
                return -EMFILE;
        s->reserve_fd = safe_close(s->reserve_fd);
        cfd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        r = cfd >= 0 ? 1 : errno == EAGAIN ? 0 : -errno;
        safe_close(cfd);
        s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        return r;
}

static void accept_all(struct rpc_server *s)
{
        for (;;) {
                struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT};
                struct rpc_conn *c;
                int cfd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

                if (cfd < 0 && (errno == EMFILE || errno == ENFILE)) {
                        int shed = shed_connection(s);

                        log_debug("RPC: out of descriptors, a pending connection is closed");
                        if (shed > 0)
                                continue;
                        if (shed == 0)
                                break;
                        /* No reserve: wait for a descriptor to be released (conn_unref). */
                        atomic_store(&s->accept_paused, true);
                        return;
                }
                if (cfd < 0)
                        break; /* EAGAIN: the next event accepts more */
                c = calloc(1, sizeof(*c));
                if (!c) {
                        safe_close(cfd);
                        continue;
                }
                c->server = s;
                c->fd = cfd;
                /* A line of frame_max bytes plus its newline fits. */
                buf_init(&c->in, s->o.frame_max + 1);
                pthread_mutex_init(&c->rlock, NULL);
                pthread_mutex_init(&c->wlock, NULL);
                atomic_init(&c->refs, 1); /* the list's */
                c->armed = true;

                pthread_mutex_lock(&s->lock);
                if (s->n_conns >= RPC_CONNECTIONS_MAX || s->shut_down) {
                        pthread_mutex_unlock(&s->lock);
                        conn_unref(c);
                        continue;
                }
                c->next = s->conns;
                if (s->conns)
                        s->conns->prev = c;
                s->conns = c;
                s->n_conns++;
                pthread_mutex_unlock(&s->lock);

                ev.data.ptr = c;
                if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, cfd, &ev) < 0) {
                        c->armed = false;
                        conn_drop(c);
                }
        }
        rearm_listen(s);
}

/* Wait for work; returns a connection with one line for us (caller unrefs), or NULL to exit. */
static struct rpc_conn *next_work(struct rpc_server *s, char **ret_line, size_t *ret_len)
{
        for (;;) {
                struct epoll_event ev;
                struct rpc_conn *c = NULL;
                bool from_ready = false;
                int n, r;

                if (atomic_load(&s->stopping))
                        return NULL;
                pthread_mutex_lock(&s->lock);
                if (s->ready_head) {
                        c = s->ready_head;
                        s->ready_head = c->next_ready;
                        if (!s->ready_head)
                                s->ready_tail = NULL;
                        from_ready = true;
                } else
                        s->n_waiting++;
                pthread_mutex_unlock(&s->lock);

                if (!from_ready) {
                        n = epoll_wait(s->epfd, &ev, 1, -1);
                        pthread_mutex_lock(&s->lock);
                        s->n_waiting--;
                        pthread_mutex_unlock(&s->lock);
                        if (n <= 0)
                                continue;
                        if (ev.data.ptr == s) {
                                accept_all(s);
                                continue;
                        }
                        if (ev.data.ptr == &s->wake_fd) {
                                uint64_t v;
                                /* At stop the counter must stay up so it wakes every thread. */
                                if (!atomic_load(&s->stopping))
                                        (void) !read(s->wake_fd, &v, sizeof(v));
                                continue;
                        }
                        c = ev.data.ptr;
                        atomic_fetch_add(&c->refs, 1);
                }

                pthread_mutex_lock(&c->rlock);
                if (from_ready)
                        c->queued = false;
                else {
                        bool readable = conn_read(c);
                        if (!readable && !has_line(c)) {
                                c->armed = false;
                                pthread_mutex_unlock(&c->rlock);
                                conn_drop(c);
                                conn_unref(c);
                                continue;
                        }
                        if (!readable)
                                c->eof = true;
                }
                r = take_line(c, ret_line, ret_len);
                conn_settle(c, !c->eof);
                pthread_mutex_unlock(&c->rlock);
                if (r > 0)
                        return c;
                conn_unref(c);
        }
}

static void *worker_main(void *arg)
{
        struct rpc_server *s = arg;

        /* In ps, top and /proc/<ptc>/task/<tid>/comm. */
        (void) pthread_setname_np(pthread_self(), "ptc-rpc");

        for (;;) {
                _cleanup_free_ char *line = NULL;
                struct rpc_conn *c;
                size_t n = 0;

                c = next_work(s, &line, &n);
                if (!c)
                        break;
                /* A thread is left waiting for the next request (keep_spare()) once the
                 * request names its tool. */
                handle_line(c, line, n);
                conn_unref(c);
        }
        return NULL;
}

int rpc_server_new(const struct rpc_server_opts *o, struct rpc_server **ret)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        struct epoll_event ev = {};
        struct rpc_server *s;
        int r;

        if (strlen(o->socket_path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        /* Results are redacted with the tool context's redactor: a different one would leak. */
        if (o->redactor && (!o->tool_ctx || o->tool_ctx->redactor != o->redactor))
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->o = *o;
        if (!s->o.frame_max)
                s->o.frame_max = RPC_FRAME_MAX;
        if (!s->o.max_threads || s->o.max_threads > RPC_THREADS_MAX)
                s->o.max_threads = RPC_THREADS_MAX;
        {
                long cpus = sysconf(_SC_NPROCESSORS_ONLN);
                s->quick_threads = cpus > 0 ? (size_t) cpus : 1;
        }
        s->listen_fd = s->wake_fd = s->stop_fd = s->epfd = s->reserve_fd = -EBADF;
        pthread_mutex_init(&s->lock, NULL);
        s->token = strdup(o->token);
        s->log = json_array();
        if (!s->token || !s->log) {
                r = -ENOMEM;
                goto fail;
        }
        s->token_len = strlen(s->token);

        s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        s->epfd = epoll_create1(EPOLL_CLOEXEC);
        s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (s->listen_fd < 0 || s->epfd < 0 || s->wake_fd < 0 || s->stop_fd < 0 ||
            s->reserve_fd < 0) {
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
        ev = (struct epoll_event){.events = EPOLLIN | EPOLLONESHOT, .data.ptr = s};
        if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->listen_fd, &ev) < 0) {
                r = -errno;
                goto fail;
        }
        /* Level-triggered, not one-shot: once written at stop, it wakes every thread. */
        ev = (struct epoll_event){.events = EPOLLIN, .data.ptr = &s->wake_fd};
        if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->wake_fd, &ev) < 0) {
                r = -errno;
                goto fail;
        }
        pthread_mutex_lock(&s->lock);
        maybe_start_thread(s);
        r = s->n_threads > 0 ? 0 : -EAGAIN;
        pthread_mutex_unlock(&s->lock);
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
        uint64_t big = 1u << 20;

        if (!s)
                return;
        pthread_mutex_lock(&s->lock);
        if (s->shut_down) {
                pthread_mutex_unlock(&s->lock);
                return;
        }
        s->shut_down = true;
        atomic_store(&s->stopping, true);
        /* Wake writers blocked on slow readers and make every read fail. */
        for (struct rpc_conn *c = s->conns; c; c = c->next)
                (void) shutdown(c->fd, SHUT_RDWR);
        pthread_mutex_unlock(&s->lock);
        if (s->wake_fd >= 0)
                (void) !write(s->wake_fd, &big, sizeof(big));
        if (s->stop_fd >= 0)
                (void) !write(s->stop_fd, &big, sizeof(big));

        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += timeout_ms / 1000;
        until.tv_nsec += (long) (timeout_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
        }
        for (size_t i = 0; i < s->n_threads; i++)
                if (pthread_timedjoin_np(s->threads[i], NULL, &until) != 0) {
                        /* A tool is stuck (an uninterruptible read, say). */
                        log_debug("an RPC thread did not stop in time");
                        return;
                }
        s->n_threads = 0;
}

struct rpc_server *rpc_server_free(struct rpc_server *s)
{
        if (!s)
                return NULL;
        rpc_server_shutdown(s, 10000);
        if (s->n_threads > 0)
                /* Threads still reference us: leaking beats a use-after-free. */
                return NULL;
        while (s->ready_head) {
                struct rpc_conn *c = s->ready_head;
                s->ready_head = c->next_ready;
                conn_unref(c);
        }
        while (s->conns) {
                struct rpc_conn *c = s->conns;
                s->conns = c->next;
                conn_unref(c);
        }
        safe_close(s->wake_fd);
        safe_close(s->stop_fd);
        safe_close(s->epfd);
        safe_close(s->listen_fd);
        safe_close(s->reserve_fd);
        json_decref(s->log);
        free(s->token);
        pthread_mutex_destroy(&s->lock);
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
