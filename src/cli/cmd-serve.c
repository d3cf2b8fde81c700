/* SPDX-License-Identifier: MIT */
/*
 * ptc serve: the per-user server that keeps sessions for `ptc run --session` and `ptc
 * session` (docs/sessions.md). One engine; a Unix socket in the user's runtime directory
 * (0700, the socket 0600), the peer's uid checked on every connection and, before its
 * request is read, its proof that it holds the key this server wrote beside the socket
 * (serve-auth.c); a thread per connection; one JSON request line and one JSON reply line. It exits
 * after --idle seconds with no session and no client, or on SIGTERM, SIGINT or SIGHUP.
 *
 * Requests:
 *   {"op": "run", "session": ID, "reset": B, "code": TEXT, "options": {KEY: TEXT},
 *    "secrets": {NAME: VALUE}}
 *       -> {"result": {...}, "status": N, "warnings": TEXT} or {"error": TEXT, "usage": B}
 *       "secrets" (optional): the client's secret-named variables, redacted from this
 *       cell as from the client's own cold run (take_client_secrets()).
 *   {"op": "run", "fingerprint": TEXT, "code": TEXT, "options": {KEY: TEXT}}
 *       a one-shot run (the warm pool's) for a client whose configuration is the server's
 *       (cli_serve_fingerprint()): the same reply, or {"cold": REASON} when it is not
 *       While it runs, a line {"interrupt": REASON} from the client, or the end of its
 *       input, interrupts the cell. With "approvals": "relay" in the request (a client at
 *       a terminal), each ask of the cell's tool calls goes to the client as a line
 *       {"ask": {"id", "tool", "arguments", "verdict", "remaining_ms"}}, answered by
 *       {"answer": {"id": N, "choice": "once"|"session"|"deny"|"cannot"|"none"}} or
 *       withdrawn by {"withdraw": N}; else policy.headless decides (watch_main()).
 *   {"op": "list"} -> {"sessions": [...]}
 *   {"op": "close", "session": ID, "forget": B} -> {"ok": true} or {"error": TEXT}
 *   {"op": "fork", "session": ID, "new": ID} -> {"ok": true} or {"error": TEXT}
 */

#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/log.h"
#include "basic/strv.h"

/* A request line: the code and its options. */
#define REQUEST_MAX (16u << 20)
/* Connections served at once; more are refused with the reason. */
#define CLIENTS_MAX 64
/* How long a client may take to send its request, or to take the reply. */
#define CLIENT_IO_SEC 10
/* At a stop, how long the cells still running get to end after their interrupt. */
#define STOP_WAIT_SEC 10

static void help(void)
{
        printf("Usage: ptc serve [OPTIONS]\n"
               "\n"
               "The per-user server that keeps sessions (live interpreters) for\n"
               "'ptc run --session ID' and 'ptc session'. The first 'ptc run --session' starts\n"
               "it when none runs; it listens on $XDG_RUNTIME_DIR/ptc/serve.sock (else\n"
               "/var/tmp/ptc-UID/serve.sock) for this user only: a client proves it holds\n"
               "the key in serve.key beside it, which no confined script can read, and the\n"
               "server proves it to the client first. See docs/sessions.md.\n"
               "\n"
               "Options:\n"
               "  --config FILE            config file (as ptc run)\n"
               "  --idle SECONDS           exit after this long with no session and no\n"
               "                           client (default 600)\n"
               "  --ready-fd FD            write \"ok\" to FD once listening, then close it\n"
               "  -h, --help               this help\n"
               "\n"
               "Exits 0 when idle or on SIGTERM, SIGINT or SIGHUP (cells running are\n"
               "interrupted), 2 on a usage or config error.\n");
}

struct server {
        ptc_engine *engine;
        char *fingerprint; /* cli_serve_fingerprint() of the engine: which runs the pool
                            * serves (NULL: none) */
        pthread_mutex_t lock;
        pthread_cond_t idle; /* clients reached 0 */
        unsigned clients;    /* connections being served */
        time_t last_activity;
        ptc_execution *running[CLIENTS_MAX]; /* under lock: interrupted at a stop */
        bool stopping;
        uint8_t key[CLI_SERVE_KEY_SIZE]; /* what clients prove they hold (serve.key) */
};

/* Track @x (NULL: untrack @old) among the running executions; false when stopping. */
static bool track(struct server *s, ptc_execution *x, ptc_execution *old)
{
        bool ok = true;

        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < CLIENTS_MAX; i++)
                if (s->running[i] == old) {
                        s->running[i] = x;
                        break;
                }
        ok = !s->stopping;
        pthread_mutex_unlock(&s->lock);
        return ok;
}

struct conn {
        struct server *s;
        int fd;
};

static void reply(int fd, json_t *v)
{
        if (v)
                (void) cli_serve_send(fd, v);
        json_decref(v);
}

static json_t *error_reply(const char *msg, bool usage)
{
        return json_pack("{s:s, s:b}", "error", msg, "usage", usage);
}

/* A connection turned away before any request ran: a pool client runs its script itself. */
static json_t *refusal(const char *msg)
{
        return json_pack("{s:s, s:b, s:b}", "error", msg, "usage", false, "refused", true);
}

/*
 * While a cell runs, the client's lines: {"interrupt": REASON} (or any line that is not an
 * answer, as from an older client) interrupts it, {"answer": {"id": N, "choice": C}} answers
 * the ask relayed to it; its end interrupts it. A client that asked for it ("approvals":
 * "relay") gets each ask of the cell as a line {"ask": {"id", "tool", "arguments",
 * "verdict", "remaining_ms"}} and, when the call stops waiting before it answers,
 * {"withdraw": N} (docs/sessions.md).
 */
struct watch {
        int fd;
        ptc_execution *x;
        int wake_fd; /* eventfd: an ask was relayed (watch_main() then watches its cancel) */
        pthread_mutex_t lock;  /* the fields below, and each line sent while the cell runs */
        ptc_approval *pending; /* the ask the client was sent, until answered */
        uint64_t pending_id;
        uint64_t next_id;
        bool closed; /* the client left, or the run ended: nothing more is sent */
};

/* A client's line, at most: an answer or an interrupt is a few dozen bytes. */
#define CLIENT_LINE_MAX 4096

/* Answer the pending ask (under lock); with @withdraw, tell the client it is withdrawn. */
static void settle_locked(struct watch *w, int answer, bool withdraw)
{
        if (!w->pending)
                return;
        (void) ptc_approval_answer(w->pending, answer);
        w->pending = NULL;
        if (withdraw && !w->closed) {
                json_auto_t *m = json_pack("{s:I}", "withdraw", (json_int_t) w->pending_id);

                if (m)
                        (void) cli_serve_send(w->fd, m);
        }
}

/* The ask handed to the client (any thread; one at a time per execution). */
static void relay_ask(ptc_approval *a, void *userdata)
{
        struct watch *w = userdata;
        json_auto_t *verdict = json_loads(ptc_approval_verdict(a), 0, NULL);
        json_auto_t *m = NULL;
        uint64_t one = 1;
        bool sent = false;

        pthread_mutex_lock(&w->lock);
        /*
         * Asks come one at a time: one still pending stopped waiting (its time ran out) and
         * the watcher has not seen it yet. Withdrawn first, so the client has one question.
         */
        settle_locked(w, PTC_APPROVE_NO_ANSWER, true);
        if (!w->closed) {
                w->next_id++;
                m = json_pack("{s:{s:I, s:s, s:s, s:O, s:I}}", "ask", "id", (json_int_t) w->next_id,
                              "tool", ptc_approval_tool(a), "arguments", ptc_approval_arguments(a),
                              "verdict", verdict ? verdict : json_null(), "remaining_ms",
                              (json_int_t) ptc_approval_remaining_ms(a));
                sent = m && cli_serve_send(w->fd, m) >= 0;
                if (sent) {
                        w->pending = a;
                        w->pending_id = w->next_id;
                        (void) !write(w->wake_fd, &one, sizeof(one));
                }
        }
        pthread_mutex_unlock(&w->lock);
        /* The client is gone (its end interrupts the cell): as no answer. */
        if (!sent)
                (void) ptc_approval_answer(a, PTC_APPROVE_NO_ANSWER);
}

/* One line of the client's: false when it interrupts the cell. */
static bool client_line(struct watch *w, const char *line, size_t len)
{
        json_auto_t *v = json_loadb(line, len, 0, NULL);
        json_t *ans = json_object_get(v, "answer");
        const char *choice = json_string_value(json_object_get(ans, "choice"));
        json_int_t id = json_integer_value(json_object_get(ans, "id"));
        const char *why;

        if (json_is_object(ans)) {
                int answer = !choice                          ? PTC_APPROVE_NO_ANSWER
                             : strcmp(choice, "once") == 0    ? PTC_APPROVE_ONCE
                             : strcmp(choice, "session") == 0 ? PTC_APPROVE_SESSION
                             : strcmp(choice, "deny") == 0    ? PTC_APPROVE_DENY
                             : strcmp(choice, "cannot") == 0  ? PTC_APPROVE_CANNOT_ASK
                                                              : PTC_APPROVE_NO_ANSWER;

                pthread_mutex_lock(&w->lock);
                /* An answer to an ask withdrawn meanwhile is dropped. */
                if (w->pending && (uint64_t) id == w->pending_id)
                        settle_locked(w, answer, false);
                pthread_mutex_unlock(&w->lock);
                return true;
        }
        /* The reason must outlive the execution: one of these literals. */
        why = json_string_value(json_object_get(v, "interrupt"));
        ptc_execution_interrupt(w->x, why && strcmp(why, "SIGTERM") == 0  ? "SIGTERM"
                                      : why && strcmp(why, "SIGHUP") == 0 ? "SIGHUP"
                                                                          : "SIGINT");
        return false;
}

static void *watch_main(void *userdata)
{
        struct watch *w = userdata;
        char buf[CLIENT_LINE_MAX];
        size_t len = 0;
        bool interrupted = false;

        for (;;) {
                struct pollfd p[3] = {
                        {.fd = w->fd, .events = POLLIN},
                        {.fd = w->wake_fd, .events = POLLIN},
                        {.fd = -1, .events = POLLIN},
                };
                ssize_t n;
                char *nl;

                pthread_mutex_lock(&w->lock);
                if (w->pending)
                        p[2].fd = ptc_approval_cancel_fd(w->pending);
                pthread_mutex_unlock(&w->lock);
                if (poll(p, 3, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (p[1].revents) {
                        uint64_t v;

                        (void) !read(w->wake_fd, &v, sizeof(v));
                }
                if (p[2].revents) {
                        /* The call stopped waiting (its time is up, the run ended). */
                        pthread_mutex_lock(&w->lock);
                        if (w->pending && ptc_approval_cancel_fd(w->pending) == p[2].fd)
                                settle_locked(w, PTC_APPROVE_NO_ANSWER, true);
                        pthread_mutex_unlock(&w->lock);
                }
                if (!p[0].revents)
                        continue;
                do
                        n = read(w->fd, buf + len, sizeof(buf) - len);
                while (n < 0 && errno == EINTR);
                /* The run ended and shut our reading down (0), or the client left. */
                if (n <= 0)
                        break;
                len += (size_t) n;
                while ((nl = memchr(buf, '\n', len))) {
                        size_t k = (size_t) (nl - buf);

                        if (!interrupted && !client_line(w, buf, k))
                                interrupted = true;
                        memmove(buf, nl + 1, len - k - 1);
                        len -= k + 1;
                }
                /* A line longer than any answer: not one; as any other line, an interrupt. */
                if (len == sizeof(buf)) {
                        if (!interrupted)
                                ptc_execution_interrupt(w->x, "SIGINT");
                        interrupted = true;
                        len = 0;
                }
        }
        /* The reason must outlive the execution: a literal. */
        ptc_execution_interrupt(w->x, "the client went away");
        pthread_mutex_lock(&w->lock);
        w->closed = true;
        settle_locked(w, PTC_APPROVE_NO_ANSWER, false);
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

/*
 * A cell's "secrets": the client's secret-named variables ({"NAME": "value"}), redacted
 * from this run's output as the client's own cold run would (docs/sessions.md). They go
 * into the execution's redactor only, and are wiped from the request here.
 */
static int take_client_secrets(ptc_execution *x, json_t *secrets, struct ptc_diag *d)
{
        _cleanup_(strv_free_wipep) char **env = NULL;
        const char *name;
        json_t *v;
        int r = 0;

        if (!json_is_object(secrets) || json_object_size(secrets) > 4096) {
                (void) snprintf(d->message, sizeof(d->message),
                                "secrets: an object of at most 4096 names and string values");
                return -EINVAL;
        }
        if (json_object_size(secrets) == 0)
                return 0;
        json_object_foreach(secrets, name, v)
        {
                char *e = NULL;

                if (!json_is_string(v)) {
                        (void) snprintf(d->message, sizeof(d->message), "secrets: %s: not a string",
                                        name);
                        return -EINVAL;
                }
                if (r >= 0 && asprintf(&e, "%s=%s", name, json_string_value(v)) < 0)
                        r = -ENOMEM;
                if (r >= 0)
                        r = strv_consume(&env, e);
                /* The request's copy is no longer needed. */
                explicit_wipe((char *) json_string_value(v), json_string_length(v));
        }
        if (r < 0) {
                (void) snprintf(d->message, sizeof(d->message), "secrets: %s", strerror(-r));
                return r;
        }
        return ptc_execution_add_secrets(x, (const char *const *) env, d);
}

static json_t *op_run(struct server *s, int fd, json_t *req)
{
        json_t *opts = json_object_get(req, "options"), *code = json_object_get(req, "code");
        json_t *sid = json_object_get(req, "session"), *fp = json_object_get(req, "fingerprint");
        json_t *v, *res, *answer;
        _cleanup_free_ char *text = NULL, *warnings = NULL;
        struct ptc_diag d = {};
        enum ptc_status status = PTC_STATUS_ERROR;
        ptc_execution *x = NULL;
        struct watch w;
        pthread_t watcher;
        const char *key;
        bool watching = false;
        int r;

        if (!json_is_string(code) || !(json_is_string(sid) || json_is_string(fp)) ||
            (opts && !json_is_object(opts)))
                return error_reply("a run needs 'code' and 'session' or 'fingerprint' (strings)",
                                   true);
        if (!sid && (!s->fingerprint || strcmp(json_string_value(fp), s->fingerprint) != 0))
                /* Its result could differ from the client's own run: the client runs it. */
                return json_pack("{s:s}", "cold", "another configuration");
        r = ptc_execution_new(s->engine, &x, &d);
        if (r >= 0 && sid)
                r = ptc_execution_set(x, "session", json_string_value(sid), &d);
        if (r >= 0 && json_is_true(json_object_get(req, "reset")))
                r = ptc_execution_set(x, "reset", "true", &d);
        json_object_foreach(opts, key, v)
        {
                if (r < 0)
                        break;
                if (!json_is_string(v)) {
                        (void) snprintf(d.message, sizeof(d.message), "%s: not a string", key);
                        r = -EINVAL;
                } else
                        r = ptc_execution_set(x, key, json_string_value(v), &d);
        }
        if (r >= 0 && json_object_get(req, "secrets"))
                r = take_client_secrets(x, json_object_get(req, "secrets"), &d);
        if (r < 0) {
                ptc_execution_free(x);
                return error_reply(d.message, true);
        }
        /* Interrupted with the others when the server stops (before its run: at once). */
        if (!track(s, x, NULL))
                ptc_execution_interrupt(x, "the server stopped");
        w = (struct watch){.fd = fd, .x = x, .lock = PTHREAD_MUTEX_INITIALIZER};
        w.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        watching = w.wake_fd >= 0 && pthread_create(&watcher, NULL, watch_main, &w) == 0;
        /* A person at the client's terminal answers the cell's asks; where the client cannot
         * relay them (not at a terminal, an older client), policy.headless decides and the
         * call's result says so (docs/policy.md). */
        if (watching && json_is_string(json_object_get(req, "approvals")) &&
            strcmp(json_string_value(json_object_get(req, "approvals")), "relay") == 0 &&
            ptc_execution_set_approver(x, relay_ask, &w, &d) < 0)
                log_warning("the client's terminal cannot answer the asks: %s", d.message);
        r = ptc_execution_run(x, json_string_value(code), json_string_length(code), &text, &status,
                              &d);
        warnings = ptc_execution_warnings(x);
        if (text) {
                res = json_loads(text, 0, NULL);
                answer = json_pack("{s:o, s:i, s:s}", "result", res ? res : json_null(), "status",
                                   (int) status, "warnings", warnings ? warnings : "");
        } else
                answer = error_reply(d.message[0] ? d.message : strerror(-r), false);
        /*
         * The answer first: a pooled run's end lets the pool start an interpreter, a fork of this
         * process, after which the watcher's exit and every page written wait for the memory
         * map or a copy (1 ms here before the answer, when it came after the join).
         */
        /* Nothing is relayed any more: the reply is the last line. */
        pthread_mutex_lock(&w.lock);
        w.closed = true;
        pthread_mutex_unlock(&w.lock);
        reply(fd, answer);
        if (watching) {
                /* The watcher's read returns 0; it may interrupt an execution that ran. */
                (void) shutdown(fd, SHUT_RD);
                pthread_join(watcher, NULL);
        }
        safe_close(w.wake_fd);
        pthread_mutex_destroy(&w.lock);
        (void) track(s, NULL, x);
        ptc_execution_free(x);
        return NULL; /* answered */
}

static json_t *handle(struct server *s, int fd, json_t *req)
{
        const char *op = json_string_value(json_object_get(req, "op"));
        struct ptc_diag d = {};

        if (!op)
                return error_reply("a request needs 'op'", true);
        if (strcmp(op, "run") == 0)
                return op_run(s, fd, req);
        if (strcmp(op, "list") == 0) {
                _cleanup_free_ char *l = ptc_engine_sessions(s->engine);
                json_t *a = l ? json_loads(l, 0, NULL) : NULL;

                return a ? json_pack("{s:o}", "sessions", a) : error_reply("out of memory", false);
        }
        if (strcmp(op, "close") == 0) {
                const char *id = json_string_value(json_object_get(req, "session"));

                if (!id)
                        return error_reply("close needs 'session'", true);
                if (ptc_engine_close_session(
                            s->engine, id,
                            json_is_true(json_object_get(req, "forget")) ? PTC_SESSION_FORGET : 0,
                            &d) < 0)
                        return error_reply(d.message, false);
                return json_pack("{s:b}", "ok", true);
        }
        if (strcmp(op, "fork") == 0) {
                const char *id = json_string_value(json_object_get(req, "session"));
                const char *new_id = json_string_value(json_object_get(req, "new"));

                if (!id || !new_id)
                        return error_reply("fork needs 'session' and 'new'", true);
                if (ptc_engine_fork_session(s->engine, id, new_id, &d) < 0)
                        return error_reply(d.message, false);
                return json_pack("{s:b}", "ok", true);
        }
        return error_reply("unknown op (allowed: run, list, close, fork)", true);
}

/*
 * Before closing a connection whose request we did not read: read it away (a little, for
 * a moment), since closing a Unix socket with unread input resets the peer, which would
 * then lose the reply.
 */
static void drain(int fd)
{
        char buf[4096];
        size_t total = 0;

        (void) shutdown(fd, SHUT_WR);
        while (total < 65536) {
                ssize_t n;

                if (fd_wait_readable(fd, now_usec() + 200 * USEC_PER_MSEC) <= 0)
                        return;
                n = read(fd, buf, sizeof(buf));
                if (n <= 0)
                        return;
                total += (size_t) n;
        }
}

static void *conn_main(void *userdata)
{
        struct conn *c = userdata;
        struct server *s = c->s;
        _cleanup_free_ char *line = NULL;
        struct timeval io = {.tv_sec = CLIENT_IO_SEC};
        const char *why = NULL;

        /* A client that sends nothing, or takes no reply, holds a thread this long at most. */
        (void) setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &io, sizeof(io));
        (void) setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &io, sizeof(io));

        /*
         * This user's, and holding the key no confined script can read: a script, or any
         * process it started, is turned away here whatever its ancestry, before a request.
         */
        if (cli_serve_auth_server(c->fd, s->key, &why) < 0) {
                if (why) {
                        _cleanup_free_ char *msg = NULL;

                        if (asprintf(&msg, "refused: %s", why) >= 0)
                                reply(c->fd, refusal(msg));
                }
                drain(c->fd);
        } else if (cli_serve_read_line(c->fd, REQUEST_MAX, &line) >= 0) {
                json_auto_t *req = json_loads(line, 0, NULL);
                struct timeval none = {};

                /* The request is in: a run's watcher waits on the socket as long as the run. */
                (void) setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none));
                reply(c->fd, req ? handle(s, c->fd, req)
                                 : error_reply("the request is not a JSON object", true));
        }
        close(c->fd);
        pthread_mutex_lock(&s->lock);
        if (--s->clients == 0)
                pthread_cond_broadcast(&s->idle);
        s->last_activity = time(NULL);
        pthread_mutex_unlock(&s->lock);
        free(c);
        return NULL;
}

static bool sessions_live(struct server *s)
{
        _cleanup_free_ char *l = ptc_engine_sessions(s->engine);

        return !l || strcmp(l, "[]") != 0;
}

/*
 * Listen on the socket; -EALREADY when another server does. Servers starting at once (the
 * first clients of a user, together) take turns under the lock file: each looks for a
 * listener, and only one finding none writes a new key into @key and serve.key, then binds.
 * The lock is held for that moment only; a socket nobody listens on (a server that died) is
 * replaced, and so is its key: no key of a server that is gone authenticates anything.
 */
static int listen_socket(uint8_t key[CLI_SERVE_KEY_SIZE])
{
        char dir[PATH_MAX], path[PATH_MAX + 16];
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        _cleanup_close_ int lock = -EBADF;
        int fd, r;

        r = cli_serve_dir(dir, sizeof(dir));
        if (r < 0) {
                log_error("the server's directory '%s' cannot be used: %s (it must be a "
                          "directory of this user's, mode 0700)",
                          dir, strerror(-r));
                return r;
        }
        (void) snprintf(path, sizeof(path), "%s/serve.lock", dir);
        lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (lock < 0)
                return log_error_errno(-errno, "cannot open '%s': %m", path);
        while (flock(lock, LOCK_EX) < 0)
                if (errno != EINTR)
                        return log_error_errno(-errno, "cannot lock '%s': %m", path);
        if ((size_t) snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/serve.sock", dir) >=
            sizeof(sa.sun_path)) {
                log_error("the socket path under '%s' is too long", dir);
                return -ENAMETOOLONG;
        }
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0) {
                close(fd);
                return -EALREADY;
        }
        if (fd >= 0)
                close(fd);
        /* The key before the socket: a client that reaches the socket finds its key. */
        r = cli_serve_key_create(dir, key);
        if (r < 0)
                return r;
        (void) unlink(sa.sun_path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 ||
            chmod(sa.sun_path, 0600) < 0 || listen(fd, 64) < 0) {
                r = log_error_errno(-errno, "cannot listen on '%s': %m", sa.sun_path);
                if (fd >= 0)
                        close(fd);
                return r;
        }
        return fd;
}

/* Interrupt the cells still running and wait for their clients, at most STOP_WAIT_SEC;
 * whether none is left. */
static bool stop_and_wait(struct server *s)
{
        struct timespec until;
        bool none;

        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += STOP_WAIT_SEC;
        pthread_mutex_lock(&s->lock);
        s->stopping = true;
        for (size_t i = 0; i < CLIENTS_MAX; i++)
                if (s->running[i])
                        ptc_execution_interrupt(s->running[i], "the server stopped");
        while (s->clients > 0)
                if (pthread_cond_timedwait(&s->idle, &s->lock, &until) == ETIMEDOUT)
                        break;
        none = s->clients == 0;
        pthread_mutex_unlock(&s->lock);
        return none;
}

static void say_ready(int fd, const char *what)
{
        if (fd < 0)
                return;
        (void) !write(fd, what, strlen(what));
        close(fd);
}

int cmd_serve(int argc, char **argv)
{
        const char *arg_config = NULL, *arg_idle = NULL, *arg_ready = NULL;
        const struct cli_option opts[] = {
                {"config", &arg_config},
                {"idle", &arg_idle},
                {"ready-fd", &arg_ready},
                {},
        };
        struct server s = {.last_activity = time(NULL),
                           .lock = PTHREAD_MUTEX_INITIALIZER,
                           .idle = PTHREAD_COND_INITIALIZER};
        struct ptc_diag d = {};
        sigset_t stop;
        int r, ready = -1, lfd = -1, sfd = -1, ret = EXIT_USAGE;
        long idle = 600, fdv;
        char *end;
        size_t warned = 0;

        r = cli_parse_options(argc, argv, "serve", opts, false, help);
        if (r != CLI_OPTIONS_PARSED)
                return r;
        if (optind < argc) {
                log_error("unexpected argument '%s' (try 'ptc serve --help')", argv[optind]);
                return EXIT_USAGE;
        }
        if (arg_ready) {
                errno = 0;
                fdv = strtol(arg_ready, &end, 10);
                if (errno || *end || fdv < 3 || fdv > INT_MAX || fcntl((int) fdv, F_GETFD) < 0) {
                        log_error("--ready-fd: invalid value '%s' (allowed: an open file "
                                  "descriptor >= 3)",
                                  arg_ready);
                        return EXIT_USAGE;
                }
                ready = (int) fdv;
                (void) fcntl(ready, F_SETFD, FD_CLOEXEC);
        }
        if (arg_idle) {
                errno = 0;
                idle = strtol(arg_idle, &end, 10);
                if (errno || *end || idle < 1 || idle > 86400 * 7) {
                        log_error("--idle: invalid value '%s' (allowed: whole seconds, 1 to "
                                  "604800)",
                                  arg_idle);
                        say_ready(ready, "--idle: invalid value");
                        return EXIT_USAGE;
                }
        }
        if (cli_setup_process() < 0) {
                say_ready(ready, "cannot set up the process");
                return EXIT_INTERNAL;
        }
        /* The socket first: a server that lost the race starts no engine (nor its pool). */
        lfd = listen_socket(s.key);
        if (lfd == -EALREADY) {
                /* Another server got there first: the client may use that one. */
                say_ready(ready, "ok");
                return EXIT_OK;
        }
        if (lfd < 0) {
                say_ready(ready, "cannot listen on the socket");
                return EXIT_INTERNAL;
        }
        /* Started where its first client was, `/` too: then a private directory. */
        if (cli_engine_new(arg_config,
                           PTC_ENGINE_SCRUB_PROCESS | PTC_ENGINE_WARM_POOL | PTC_ENGINE_PRIVATE_CWD,
                           &s.engine, &warned) < 0) {
                say_ready(ready, "the configuration is not valid");
                ret = EXIT_USAGE;
                goto out;
        }
        /* Before the start, which scrubs the environment: as a client computes its own. */
        if (cli_serve_fingerprint(s.engine, &s.fingerprint) < 0)
                log_warning("cannot describe the configuration: runs without --session will "
                            "not use this server");
        r = ptc_engine_start(s.engine, &d);
        cli_print_warnings(s.engine, &warned);
        if (r < 0) {
                log_error("%s", d.message);
                say_ready(ready, d.message);
                ret = EXIT_INTERNAL;
                goto out;
        }
        cli_stop_signals(&stop);
        sfd = signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK);
        say_ready(ready, "ok");
        ready = -1;
        ret = EXIT_OK;
        for (;;) {
                time_t now = time(NULL);
                bool quiet;
                long left;

                pthread_mutex_lock(&s.lock);
                quiet = s.clients == 0;
                left = (long) (s.last_activity + idle - now);
                pthread_mutex_unlock(&s.lock);
                if (quiet && left <= 0) {
                        if (!sessions_live(&s))
                                break;
                        /* Sessions keep it up; their own idle close ends them. */
                        pthread_mutex_lock(&s.lock);
                        s.last_activity = now;
                        pthread_mutex_unlock(&s.lock);
                        left = idle;
                }
                /* Busy, it looks again after a while: the last client may end meanwhile. */
                r = fd_wait_either(lfd, sfd,
                                   now_usec() + (usec_t) (quiet ? left : idle) * USEC_PER_SEC);
                if (r < 0 || (r & FD_WAIT_B))
                        break;
                if (r & FD_WAIT_A) {
                        struct conn *c = calloc(1, sizeof(*c));
                        pthread_t t;
                        bool full;

                        if (!c)
                                continue;
                        c->s = &s;
                        c->fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
                        if (c->fd < 0) {
                                free(c);
                                continue;
                        }
                        pthread_mutex_lock(&s.lock);
                        full = s.clients >= CLIENTS_MAX;
                        if (!full)
                                s.clients++;
                        s.last_activity = time(NULL);
                        pthread_mutex_unlock(&s.lock);
                        if (full) {
                                reply(c->fd, refusal("too many clients at once"));
                                drain(c->fd);
                                close(c->fd);
                                free(c);
                                continue;
                        }
                        if (pthread_create(&t, NULL, conn_main, c) != 0) {
                                close(c->fd);
                                free(c);
                                pthread_mutex_lock(&s.lock);
                                s.clients--;
                                pthread_mutex_unlock(&s.lock);
                                continue;
                        }
                        pthread_detach(t);
                }
        }
out:
        if (lfd >= 0) {
                char dir[PATH_MAX], path[PATH_MAX + 16];

                /* Gone from the file system first: a new client starts a new server. */
                if (cli_serve_dir(dir, sizeof(dir)) >= 0) {
                        (void) snprintf(path, sizeof(path), "%s/serve.sock", dir);
                        (void) unlink(path);
                }
                close(lfd);
        }
        if (sfd >= 0)
                close(sfd);
        say_ready(ready, "the server stopped");
        if (stop_and_wait(&s)) {
                /* Every session's interpreter, the warm pool's, their files: gone. */
                ptc_engine_free(s.engine);
                free(s.fingerprint);
                return ret;
        }
        /* Cells that would not end still use the engine: the process's end kills them. */
        _exit(ret);
}
