/* SPDX-License-Identifier: MIT */
/*
 * ptc run through the per-user server (ptc serve, docs/sessions.md): with --session ID the
 * run is the next cell of that session (the server is started here when none runs);
 * without, a running server whose configuration is this run's runs it on its warm pool.
 * The server runs it; this process sends the code and its options, passes on SIGINT,
 * SIGTERM or SIGHUP as an interrupt, and prints the result as `ptc run` does.
 */

#include "cli/cli.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/time-util.h"

/* After the run's timeout, how long the server may take to stop the run and answer. */
#define REPLY_GRACE_SEC 30
/* The longest timeout there is (code_execution.timeout): a cell without --timeout. */
#define TIMEOUT_MAX_SEC 86400.0
/* A result: the output's caps keep it far below this. */
#define REPLY_MAX (64u << 20)

static const char *signal_name(uint32_t sig)
{
        return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP";
}

/* The server's lines: an ask to relay, a withdrawal, the reply. */
struct lines {
        char *buf;
        size_t len, cap;
};

static void lines_done(struct lines *l)
{
        free(l->buf);
        *l = (struct lines){};
}

/* A complete line is buffered. */
static bool lines_ready(const struct lines *l)
{
        return l->len > 0 && memchr(l->buf, '\n', l->len);
}

/* Read what @fd has (once) into @l. 0; -ECONNRESET at its end; -EMSGSIZE past REPLY_MAX. */
static int lines_fill(struct lines *l, int fd)
{
        ssize_t k;

        if (l->cap - l->len < 4096) {
                size_t cap = l->cap ? l->cap * 2 : 65536;
                char *b;

                if (cap > REPLY_MAX + 1)
                        return -EMSGSIZE;
                b = realloc(l->buf, cap);
                if (!b)
                        return -ENOMEM;
                l->buf = b;
                l->cap = cap;
        }
        do
                k = read(fd, l->buf + l->len, l->cap - l->len);
        while (k < 0 && errno == EINTR);
        if (k < 0)
                return errno == EAGAIN ? 0 : -errno;
        if (k == 0)
                return -ECONNRESET;
        l->len += (size_t) k;
        return 0;
}

/* The first complete line (caller frees), or NULL when none is buffered. */
static char *lines_take(struct lines *l)
{
        char *nl = l->len ? memchr(l->buf, '\n', l->len) : NULL;
        size_t n;
        char *line;

        if (!nl)
                return NULL;
        n = (size_t) (nl - l->buf);
        line = strndup(l->buf, n);
        if (!line)
                return NULL;
        memmove(l->buf, nl + 1, l->len - n - 1);
        l->len -= n + 1;
        return line;
}

/*
 * A session cell's ask that ptc serve relays here (docs/policy.md, "Who answers"): the same
 * prompt as a local run's, on this terminal, and the answer back to the server. The question
 * is withdrawn when the server says anything else meanwhile (the call stopped waiting, or
 * the run ended) or a stop signal comes (@watch_fd: an epoll set of both). Stopped by a
 * signal (@sig_fd), it sends no answer: the caller sends the interrupt, which must reach the
 * cell before any answer could let its call go on. Returns how long it waited.
 */
static usec_t relay_ask(int fd, int watch_fd, int sig_fd, const struct lines *l, json_t *ask)
{
        json_t *id = json_object_get(ask, "id");
        /* The server's word, bounded: at most the longest run there is. */
        json_int_t ms = MIN(MAX(json_integer_value(json_object_get(ask, "remaining_ms")), 0),
                            (json_int_t) TIMEOUT_MAX_SEC * 1000);
        _cleanup_free_ char *verdict = json_dumps(json_object_get(ask, "verdict"), JSON_COMPACT);
        usec_t t0 = now_usec();
        struct cli_prompt q = {
                .tool = json_string_value(json_object_get(ask, "tool")),
                .arguments = json_string_value(json_object_get(ask, "arguments")),
                .verdict = verdict,
                .deadline = t0 + (usec_t) ms * USEC_PER_MSEC,
                .cancel_fd = watch_fd,
        };
        int answer = PTC_APPROVE_NO_ANSWER;
        json_auto_t *m = NULL;

        if (!json_is_integer(id))
                return 0;
        /* Said already: no question. */
        if (!lines_ready(l))
                answer = cli_tty_open() ? cli_tty_prompt(&q) : PTC_APPROVE_CANNOT_ASK;
        if (answer == PTC_APPROVE_NO_ANSWER && fd_readable_now(sig_fd))
                return now_usec() - t0;
        m = json_pack("{s:{s:O, s:s}}", "answer", "id", id, "choice",
                      answer == PTC_APPROVE_ONCE         ? "once"
                      : answer == PTC_APPROVE_SESSION    ? "session"
                      : answer == PTC_APPROVE_DENY       ? "deny"
                      : answer == PTC_APPROVE_CANNOT_ASK ? "cannot"
                                                         : "none");
        if (m)
                (void) cli_serve_send(fd, m);
        return now_usec() - t0;
}

/*
 * Wait for the reply line until @deadline (moved on by the time the person took to answer
 * a relayed ask: the run's clock stood still meanwhile), passing a stop signal on as an
 * interrupt line (once) and putting relayed asks to the person at this terminal.
 * -ETIMEDOUT: the server did not answer in time (stopped, or stuck).
 */
static int wait_reply(int fd, int sig_fd, usec_t deadline, char **ret)
{
        _cleanup_close_ int watch_fd = -EBADF;
        struct lines l = {};
        bool told = false;
        int r;

        /* What withdraws a question shown: the server's next line, or a stop signal. */
        watch_fd = epoll_create1(EPOLL_CLOEXEC);
        if (watch_fd >= 0) {
                struct epoll_event ev = {.events = EPOLLIN};

                if (epoll_ctl(watch_fd, EPOLL_CTL_ADD, fd, &ev) < 0 ||
                    (sig_fd >= 0 && epoll_ctl(watch_fd, EPOLL_CTL_ADD, sig_fd, &ev) < 0))
                        watch_fd = safe_close(watch_fd);
        }
        for (;;) {
                struct signalfd_siginfo si;
                char *line;
                int n;

                while ((line = lines_take(&l))) {
                        json_auto_t *v = json_loads(line, 0, NULL);
                        json_t *ask = json_object_get(v, "ask");

                        if (json_is_object(ask)) {
                                free(line);
                                deadline += relay_ask(fd, watch_fd, sig_fd, &l, ask);
                                continue;
                        }
                        if (json_object_get(v, "withdraw")) {
                                free(line);
                                continue;
                        }
                        lines_done(&l);
                        *ret = line;
                        return 0;
                }
                if (now_usec() >= deadline) {
                        r = -ETIMEDOUT;
                        break;
                }
                n = fd_wait_either(fd, sig_fd, deadline);
                if (n < 0) {
                        r = n;
                        break;
                }
                if (n == 0)
                        continue;
                if (n & FD_WAIT_A) {
                        r = lines_fill(&l, fd);
                        if (r < 0)
                                break;
                        continue;
                }
                while (read(sig_fd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
                        json_auto_t *m = NULL;

                        /* A second stop: the server does not answer; leaving interrupts
                         * the cell all the same (its watcher sees the end). */
                        if (told) {
                                lines_done(&l);
                                return -EINTR;
                        }
                        m = json_pack("{s:s}", "interrupt", signal_name(si.ssi_signo));
                        if (m)
                                (void) cli_serve_send(fd, m);
                        told = true;
                }
        }
        lines_done(&l);
        return r;
}

/*
 * Send @req on @fd and wait for the reply (a stop signal passed on as an interrupt, a
 * relayed ask put to the person at this terminal). Returns the reply (*ret) or an exit
 * status after saying why not (< 0: none).
 */
static int exchange(int fd, json_t *req, bool pretty, double timeout, json_t **ret)
{
        /* The run's timeout, then the server's grace to stop it and answer. */
        usec_t deadline = now_usec() + (usec_t) ((timeout + REPLY_GRACE_SEC) * USEC_PER_SEC);
        _cleanup_free_ char *line = NULL;
        sigset_t stop;
        int sig_fd, r;

        /* A person here answers the cell's asks; else the server's policy.headless does. */
        if (cli_tty_open() && json_object_set_new(req, "approvals", json_string("relay")) < 0)
                return EXIT_INTERNAL;
        cli_stop_signals(&stop);
        sig_fd = signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK);
        r = cli_serve_send(fd, req);
        if (r >= 0)
                r = wait_reply(fd, sig_fd, deadline, &line);
        if (sig_fd >= 0)
                close(sig_fd);
        if (r == -EINTR) {
                log_error("interrupted again: left the run to ptc serve to stop");
                return EXIT_INTERRUPTED;
        }
        if (r < 0) {
                char msg[256];
                _cleanup_free_ char *res = NULL;

                /* It died, or was stopped: the run is lost; as any error, a result says so. */
                if (r == -ETIMEDOUT)
                        (void) snprintf(msg, sizeof(msg),
                                        "ptc serve did not answer within %d s of the run's "
                                        "timeout",
                                        REPLY_GRACE_SEC);
                else
                        (void) snprintf(msg, sizeof(msg), "ptc serve did not answer: %s",
                                        strerror(-r));
                log_error("%s", msg);
                res = ptc_internal_error_result(msg);
                if (res)
                        (void) cli_print_json_text(res, pretty);
                return EXIT_INTERNAL;
        }
        *ret = json_loads(line, 0, NULL);
        return -1;
}

/* Print the server's reply to a run as `ptc run` prints a result; the exit status. */
static int print_reply(json_t *rep, bool pretty)
{
        json_t *err = json_object_get(rep, "error");

        if (json_is_string(err)) {
                log_error("%s", json_string_value(err));
                if (json_is_true(json_object_get(rep, "usage")))
                        return EXIT_USAGE;
                {
                        _cleanup_free_ char *res =
                                ptc_internal_error_result(json_string_value(err));
                        if (res)
                                (void) cli_print_json_text(res, pretty);
                }
                return EXIT_INTERNAL;
        }
        if (!json_is_object(json_object_get(rep, "result"))) {
                log_error("ptc serve answered without a result");
                return EXIT_INTERNAL;
        }
        {
                const char *w = json_string_value(json_object_get(rep, "warnings"));

                /* One per line, as a local run's. */
                for (const char *l = w; l && *l;) {
                        const char *nl = strchr(l, '\n');
                        size_t n = nl ? (size_t) (nl - l) : strlen(l);

                        if (n)
                                log_warning("%.*s", (int) n, l);
                        l += n + (nl ? 1 : 0);
                }
        }
        if (cli_print_json(json_object_get(rep, "result"), pretty) < 0)
                return EXIT_INTERNAL;
        return ptc_status_to_exit(
                (enum ptc_status) json_integer_value(json_object_get(rep, "status")));
}

/*
 * The values of this environment's secret-named variables ({"NAME": "value"}): what a cold
 * `ptc run` from this shell redacts, for the server to redact from this cell (the server
 * applies its env_passthrough, as a cold run would; docs/sessions.md). Only those
 * variables, never the rest of the environment. NULL on out of memory.
 */
static json_t *client_secrets(void)
{
        json_t *o = json_object();

        for (char **e = environ; o && e && *e; e++) {
                const char *eq = strchr(*e, '=');
                char name[256];
                size_t nl;

                if (!eq)
                        continue;
                nl = (size_t) (eq - *e);
                (void) snprintf(name, sizeof(name), "%.*s", (int) MIN(nl, sizeof(name) - 1), *e);
                /* As env_read_secrets(): a name too long to judge counts as secret. */
                if (nl < sizeof(name) && !ptc_secret_name(name))
                        continue;
                /* A value that is not UTF-8 cannot travel in JSON; it is skipped. */
                (void) json_object_set_new(o, name, json_string(eq + 1));
        }
        return o;
}

/* Wipe the secrets' values in @req before it is freed. */
static void wipe_secrets(json_t *req)
{
        const char *name;
        json_t *v;

        json_object_foreach(json_object_get(req, "secrets"), name, v)
                explicit_wipe((char *) json_string_value(v), json_string_length(v));
}

int cli_run_in_session(const char *session, bool reset, const char *code, size_t code_len,
                       json_t *options, bool pretty)
{
        json_auto_t *req = NULL, *rep = NULL;
        int fd = -1, r;

        req = json_pack("{s:s, s:s, s:b, s:s%, s:O, s:o}", "op", "run", "session", session, "reset",
                        reset, "code", code, code_len, "options", options, "secrets",
                        client_secrets());
        if (!req) {
                log_error("the script is not valid UTF-8, or out of memory");
                return EXIT_USAGE;
        }
        if (cli_setup_process() < 0) {
                wipe_secrets(req);
                return EXIT_INTERNAL;
        }
        r = cli_serve_connect(true, NULL, &fd);
        if (r < 0) {
                wipe_secrets(req);
                return EXIT_INTERNAL;
        }
        {
                const char *t = json_string_value(json_object_get(options, "timeout"));

                /* The server's own timeout is not known here: the longest there is. */
                r = exchange(fd, req, pretty, t ? strtod(t, NULL) : TIMEOUT_MAX_SEC, &rep);
        }
        close(fd);
        wipe_secrets(req);
        return r >= 0 ? r : print_reply(rep, pretty);
}

bool cli_run_via_server(const char *fingerprint, const char *code, size_t code_len, json_t *options,
                        double timeout, bool pretty, const char *start_config, bool start,
                        int *ret_exit)
{
        json_auto_t *req = NULL, *rep = NULL;
        int fd = -1, r;

        /* A script that is not UTF-8 cannot travel in JSON: it runs here. */
        req = json_pack("{s:s, s:s, s:s%, s:O}", "op", "run", "fingerprint", fingerprint, "code",
                        code, code_len, "options", options);
        if (!req)
                return false;
        if (start ? cli_serve_connect(true, start_config, &fd) < 0 : cli_serve_probe(&fd) < 0) {
                if (start)
                        log_warning("running the script here");
                return false;
        }
        if (cli_setup_process() < 0) {
                close(fd);
                return false;
        }
        r = exchange(fd, req, pretty, timeout, &rep);
        close(fd);
        /*
         * Another configuration ("cold"), or a server too old to know pool runs (it refuses
         * the request's shape before anything runs): this process runs it.
         */
        if (r < 0 &&
            (json_is_string(json_object_get(rep, "cold")) ||
             json_is_true(json_object_get(rep, "refused")) ||
             (json_is_true(json_object_get(rep, "usage")) && !json_object_get(rep, "result")))) {
                if (start)
                        log_warning("running the script here: %s",
                                    json_is_string(json_object_get(rep, "cold"))
                                            ? "the running ptc serve has another configuration "
                                              "(config file, directory, environment or options; "
                                              "docs/sessions.md)"
                                            : json_string_value(json_object_get(rep, "error"))
                                                      ?: "ptc serve refused the run");
                return false;
        }
        *ret_exit = r >= 0 ? r : print_reply(rep, pretty);
        return true;
}
