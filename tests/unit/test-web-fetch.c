/* SPDX-License-Identifier: MIT */
#include "../lib/ptc-test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "core/web/web-fetch.h"

/*
 * A tiny HTTP/1.1 server on 127.0.0.1, in threads of this process: one thread
 * accepts, one thread per connection answers a canned response chosen by the
 * path, then closes the connection. Every request is recorded so tests can
 * check what arrived (and that nothing arrived).
 */

#define REQ_MAX 16384
#define STOP_WAIT_MSEC 5000

/* The last request the server read. */
struct seen {
        char method[16];
        char path[512];
        char headers[REQ_MAX];
        char body[REQ_MAX];
        size_t body_len;
};

struct server {
        int listen_fd;
        int stop_fd; /* eventfd: readable = shut down */
        int port;
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        int active;      /* connection threads alive */
        int connections; /* accepted so far */
        int meeting;     /* requests that reached /meet */
        struct seen last;
};

struct conn {
        struct server *srv;
        int fd;
};

/* gzip of "hello from gzip! " x 20 (python3: gzip.compress(data, mtime=0)). */
static const unsigned char gzip_blob[] = {
        0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0xcb, 0x48, 0xcd, 0xc9,
        0xc9, 0x57, 0x48, 0x2b, 0xca, 0xcf, 0x55, 0x48, 0xaf, 0xca, 0x2c, 0x50, 0x54, 0xc8,
        0x18, 0x15, 0xa0, 0x54, 0x00, 0x00, 0x8e, 0xec, 0xc0, 0x79, 0x54, 0x01, 0x00, 0x00,
};

/* Wait up to @ms for the stop fd; true when the server is stopping. */
static bool wait_stop(struct server *s, int ms)
{
        struct pollfd p = {.fd = s->stop_fd, .events = POLLIN};

        return poll(&p, 1, ms) > 0;
}

static void send_all(int fd, const void *data, size_t len)
{
        const char *p = data;

        while (len > 0) {
                ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return; /* the client went away: fine for a test server */
                p += n;
                len -= (size_t) n;
        }
}

static void respond(int fd, const char *status, const char *extra_headers, const void *body,
                    size_t len)
{
        char head[1024];
        int n = snprintf(head, sizeof(head),
                         "HTTP/1.1 %s\r\nContent-Length: %zu\r\nConnection: close\r\n%s\r\n",
                         status, len, extra_headers ? extra_headers : "");

        send_all(fd, head, (size_t) n);
        if (len > 0)
                send_all(fd, body, len);
}

static void redirect(int fd, const char *status, const char *location)
{
        char h[600];

        (void) snprintf(h, sizeof(h), "Location: %s\r\n", location);
        respond(fd, status, h, "", 0);
}

/* Read one request into @buf; returns the total length or -1. */
static ssize_t read_request(struct server *s, int fd, char *buf, size_t size, size_t *ret_head)
{
        size_t len = 0, head = 0, want = 0;

        for (;;) {
                struct pollfd p[2] = {{.fd = fd, .events = POLLIN},
                                      {.fd = s->stop_fd, .events = POLLIN}};
                ssize_t n;

                if (head > 0 && len >= want)
                        break;
                /* Bounded: a client that sends nothing is dropped after 5 s. */
                if (poll(p, 2, STOP_WAIT_MSEC) <= 0 || p[1].revents)
                        return -1;
                n = recv(fd, buf + len, size - 1 - len, 0);
                if (n <= 0)
                        return -1;
                len += (size_t) n;
                buf[len] = '\0';
                if (head == 0) {
                        char *end = strstr(buf, "\r\n\r\n");
                        const char *cl;

                        if (!end) {
                                if (len >= size - 1)
                                        return -1;
                                continue;
                        }
                        head = (size_t) (end - buf) + 4;
                        cl = strcasestr(buf, "\r\nContent-Length:");
                        want = head + (cl && cl < end ? strtoul(cl + 17, NULL, 10) : 0);
                        if (want >= size)
                                return -1;
                }
        }
        *ret_head = head;
        return (ssize_t) len;
}

static void record(struct server *s, const char *req, size_t head, size_t len)
{
        const char *sp1 = strchr(req, ' ');
        const char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
        const char *eol = strstr(req, "\r\n");

        pthread_mutex_lock(&s->lock);
        if (sp1 && sp2) {
                (void) snprintf(s->last.method, sizeof(s->last.method), "%.*s", (int) (sp1 - req),
                                req);
                (void) snprintf(s->last.path, sizeof(s->last.path), "%.*s", (int) (sp2 - sp1 - 1),
                                sp1 + 1);
        }
        if (eol)
                (void) snprintf(s->last.headers, sizeof(s->last.headers), "%.*s",
                                (int) (req + head - (eol + 2)), eol + 2);
        s->last.body_len = MIN(len - head, sizeof(s->last.body) - 1);
        memcpy(s->last.body, req + head, s->last.body_len);
        s->last.body[s->last.body_len] = '\0';
        pthread_mutex_unlock(&s->lock);
}

static void route(struct server *s, int fd, const char *path)
{
        char loc[256];

        if (strcmp(path, "/hello") == 0) {
                respond(fd, "200 OK", "Content-Type: text/html; charset=utf-8\r\n", "<h1>hi</h1>",
                        11);
        } else if (strcmp(path, "/missing") == 0) {
                respond(fd, "404 Not Found", "Content-Type: text/plain\r\n", "nope", 4);
        } else if (strcmp(path, "/r1") == 0) {
                redirect(fd, "302 Found", "/r2");
        } else if (strcmp(path, "/r2") == 0) {
                (void) snprintf(loc, sizeof(loc), "http://127.0.0.1:%d/hello", s->port);
                redirect(fd, "301 Moved Permanently", loc);
        } else if (strcmp(path, "/loop") == 0) {
                redirect(fd, "302 Found", "/loop");
        } else if (strcmp(path, "/big") == 0 || strcmp(path, "/exact") == 0) {
                size_t n = path[1] == 'b' ? 100000 : 1000;
                char *b = malloc(n);

                assert_non_null(b);
                for (size_t i = 0; i < n; i++)
                        b[i] = (char) ('a' + i % 26);
                respond(fd, "200 OK", "Content-Type: text/plain\r\n", b, n);
                free(b);
        } else if (strcmp(path, "/gzip") == 0) {
                respond(fd, "200 OK", "Content-Type: text/plain\r\nContent-Encoding: gzip\r\n",
                        gzip_blob, sizeof(gzip_blob));
        } else if (strncmp(path, "/slow?ms=", 9) == 0) {
                if (wait_stop(s, (int) strtol(path + 9, NULL, 10)))
                        return;
                respond(fd, "200 OK", "Content-Type: text/plain\r\n", "slow", 4);
        } else if (strncmp(path, "/meet?n=", 8) == 0) {
                /* A barrier: answered "met" once n requests are in at the same time, else
                 * "alone" after 20 s. It shows fetches run at once without timing them. */
                int n = (int) strtol(path + 8, NULL, 10);
                struct timespec until;
                bool met;

                clock_gettime(CLOCK_MONOTONIC, &until);
                until.tv_sec += 20;
                pthread_mutex_lock(&s->lock);
                s->meeting++;
                pthread_cond_broadcast(&s->cond);
                while (s->meeting < n)
                        if (pthread_cond_timedwait(&s->cond, &s->lock, &until) == ETIMEDOUT)
                                break;
                met = s->meeting >= n;
                pthread_mutex_unlock(&s->lock);
                respond(fd, "200 OK", "Content-Type: text/plain\r\n", met ? "met" : "alone",
                        met ? 3 : 5);
        } else if (strcmp(path, "/stall") == 0) {
                const char *h = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789";

                send_all(fd, h, strlen(h));
                (void) wait_stop(s, 10000);
        } else if (strcmp(path, "/close") == 0) {
                /* no answer at all */
        } else if (strcmp(path, "/echo") == 0) {
                respond(fd, "200 OK", "Content-Type: text/plain\r\n", "ok", 2);
        } else if (strcmp(path, "/to-metadata") == 0) {
                redirect(fd, "302 Found", "http://169.254.169.254/latest/meta-data/");
        } else if (strcmp(path, "/to-ftp") == 0) {
                (void) snprintf(loc, sizeof(loc), "ftp://127.0.0.1:%d/x", s->port);
                redirect(fd, "302 Found", loc);
        } else {
                respond(fd, "404 Not Found", NULL, "", 0);
        }
}

static void *conn_main(void *arg)
{
        struct conn *c = arg;
        struct server *s = c->srv;
        char *req = malloc(REQ_MAX);
        size_t head = 0;
        ssize_t len;

        if (req) {
                len = read_request(s, c->fd, req, REQ_MAX, &head);
                if (len > 0) {
                        char path[512] = "";
                        const char *sp1 = strchr(req, ' ');
                        const char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;

                        record(s, req, head, (size_t) len);
                        if (sp1 && sp2)
                                (void) snprintf(path, sizeof(path), "%.*s", (int) (sp2 - sp1 - 1),
                                                sp1 + 1);
                        route(s, c->fd, path);
                }
                free(req);
        }
        close(c->fd);
        free(c);
        pthread_mutex_lock(&s->lock);
        s->active--;
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

static void *accept_main(void *arg)
{
        struct server *s = arg;

        for (;;) {
                struct pollfd p[2] = {{.fd = s->listen_fd, .events = POLLIN},
                                      {.fd = s->stop_fd, .events = POLLIN}};
                struct conn *c;
                pthread_t t;
                int fd;

                /* No timeout: the stop eventfd is certain to wake this. */
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return NULL;
                }
                if (p[1].revents)
                        return NULL;
                fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
                if (fd < 0)
                        continue;
                c = malloc(sizeof(*c));
                if (!c) {
                        close(fd);
                        continue;
                }
                c->srv = s;
                c->fd = fd;
                pthread_mutex_lock(&s->lock);
                s->connections++;
                s->active++;
                pthread_mutex_unlock(&s->lock);
                if (pthread_create(&t, NULL, conn_main, c) != 0) {
                        close(fd);
                        free(c);
                        pthread_mutex_lock(&s->lock);
                        s->active--;
                        pthread_mutex_unlock(&s->lock);
                        continue;
                }
                (void) pthread_detach(t);
        }
}

static int server_setup(void **state)
{
        struct server *s = calloc(1, sizeof(*s));
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t alen = sizeof(a);
        pthread_condattr_t ca;

        assert_non_null(s);
        s->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(s->listen_fd >= 0);
        assert_int_equal(bind(s->listen_fd, (struct sockaddr *) &a, sizeof(a)), 0);
        assert_int_equal(listen(s->listen_fd, 64), 0);
        assert_int_equal(getsockname(s->listen_fd, (struct sockaddr *) &a, &alen), 0);
        s->port = ntohs(a.sin_port);
        s->stop_fd = eventfd(0, EFD_CLOEXEC);
        assert_true(s->stop_fd >= 0);
        pthread_mutex_init(&s->lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&s->cond, &ca);
        pthread_condattr_destroy(&ca);
        assert_int_equal(pthread_create(&s->thread, NULL, accept_main, s), 0);
        *state = s;
        return 0;
}

static int server_teardown(void **state)
{
        struct server *s = *state;
        uint64_t one = 1;
        struct timespec until;

        assert_int_equal(write(s->stop_fd, &one, sizeof(one)), (ssize_t) sizeof(one));
        pthread_join(s->thread, NULL);
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += STOP_WAIT_MSEC / 1000;
        pthread_mutex_lock(&s->lock);
        while (s->active > 0)
                if (pthread_cond_timedwait(&s->cond, &s->lock, &until) == ETIMEDOUT)
                        break;
        assert_int_equal(s->active, 0);
        pthread_mutex_unlock(&s->lock);
        close(s->listen_fd);
        close(s->stop_fd);
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->cond);
        free(s);
        return 0;
}

static int connections(struct server *s)
{
        int n;

        pthread_mutex_lock(&s->lock);
        n = s->connections;
        pthread_mutex_unlock(&s->lock);
        return n;
}

/* A copy of the last request (free() it), taken under the server's lock. */
static struct seen *seen(struct server *s)
{
        struct seen *v = malloc(sizeof(*v));

        assert_non_null(v);
        pthread_mutex_lock(&s->lock);
        *v = s->last;
        pthread_mutex_unlock(&s->lock);
        return v;
}

static char *url(struct server *s, const char *path)
{
        char *u = NULL;

        assert_true(asprintf(&u, "http://127.0.0.1:%d%s", s->port, path) > 0);
        return u;
}

/* One request, no deadline, no cancel fd. */
static void fetch1(const struct web_request *req, struct web_response *resp)
{
        assert_int_equal(web_fetch_many(req, 1, resp, USEC_INFINITY, -1), 0);
}

/* NULL-safe: a missing error fails the test instead of crashing it. */
static void assert_error(const struct web_response *r, const char *want)
{
        if (!r->error)
                fail_msg("expected error \"%s\", got none (status %ld)", want, r->status);
        assert_string_equal(r->error, want);
}

static usec_t elapsed_ms(usec_t start)
{
        return (now_usec() - start) / USEC_PER_MSEC;
}

/*
 * A blocked request must not reach the server. Connections are accepted in
 * order, so once a later request has been answered, an earlier connection
 * would have been counted: exactly one connection means none was blocked-but-made.
 */
static void assert_no_connection_made(struct server *s)
{
        _cleanup_free_ char *u = url(s, "/hello");
        struct web_request req = {.url = u};
        struct web_response resp;

        fetch1(&req, &resp);
        assert_null(resp.error);
        assert_int_equal(resp.status, 200);
        assert_int_equal(connections(s), 1);
        web_response_release(&resp);
}

static void test_web_fetch_many_ok_with_content_type(void **state)
{
        struct server *s = *state;
        _cleanup_free_ char *u = url(s, "/hello");
        struct web_request req = {.url = u};
        struct web_response resp;

        fetch1(&req, &resp);
        assert_null(resp.error);
        assert_int_equal(resp.status, 200);
        assert_string_equal(resp.content_type, "text/html; charset=utf-8");
        assert_int_equal(resp.body_len, 11);
        assert_string_equal(resp.body, "<h1>hi</h1>");
        assert_string_equal(resp.final_url, u);
        assert_false(resp.truncated);
        assert_false(resp.blocked);
        /* what the server saw */
        _cleanup_free_ struct seen *v = seen(s);
        assert_string_equal(v->method, "GET");
        assert_string_equal(v->path, "/hello");
        assert_non_null(strstr(v->headers, "User-Agent: ptc/"));
        assert_non_null(strstr(v->headers, "(+web_extract)"));
        assert_non_null(strcasestr(v->headers, "Accept-Encoding: "));
        assert_non_null(strstr(v->headers, "gzip"));
        web_response_release(&resp);
        assert_null(resp.body);
        assert_int_equal(resp.status, 0);
        web_response_release(NULL);
}

static void test_web_fetch_many_404_is_a_status(void **state)
{
        struct server *s = *state;
        _cleanup_free_ char *u = url(s, "/missing");
        struct web_request req = {.url = u};
        struct web_response resp;

        fetch1(&req, &resp);
        assert_null(resp.error);
        assert_int_equal(resp.status, 404);
        assert_string_equal(resp.body, "nope");
        assert_string_equal(resp.content_type, "text/plain");
        web_response_release(&resp);
}

static void test_web_fetch_many_redirect_chain(void **state)
{
        struct server *s = *state;
        _cleanup_free_ char *u = url(s, "/r1");
        _cleanup_free_ char *r2 = url(s, "/r2");
        _cleanup_free_ char *final = url(s, "/hello");
        _cleanup_free_ char *to_ftp = url(s, "/to-ftp");
        struct web_request req = {.url = u};
        struct web_response resp;

        fetch1(&req, &resp);
        assert_null(resp.error);
        assert_int_equal(resp.status, 200);
        assert_string_equal(resp.final_url, final);
        assert_string_equal(resp.body, "<h1>hi</h1>");
        assert_int_equal(connections(s), 3);
        web_response_release(&resp);

        /* -1: do not follow; the 302 itself is the answer, and where it points: the relative
         * Location resolved, as curl would follow it (web_extract judges it, then fetches) */
        req.max_redirects = -1;
        fetch1(&req, &resp);
        assert_null(resp.error);
        assert_int_equal(resp.status, 302);
        assert_string_equal(resp.final_url, u);
        assert_string_equal(resp.redirect_url, r2);
        assert_null(resp.body);
        web_response_release(&resp);
        req.url = r2;
        fetch1(&req, &resp);
        assert_null(resp.error);
        assert_int_equal(resp.status, 301);
        assert_string_equal(resp.redirect_url, final);
        web_response_release(&resp);
        /* a page that is no redirect has none */
        req.url = final;
        fetch1(&req, &resp);
        assert_null(resp.error);
        assert_null(resp.redirect_url);
        assert_string_equal(resp.body, "<h1>hi</h1>");
        web_response_release(&resp);
        /* another scheme ends it here, as when curl follows */
        req.url = to_ftp;
        fetch1(&req, &resp);
        assert_error(&resp, "redirect to unsupported URL scheme 'ftp' (only http and https)");
        assert_null(resp.redirect_url);
        web_response_release(&resp);
        req.url = u;

        /* a limit of 1 is one too few for r1 -> r2 -> hello */
        req.max_redirects = 1;
        fetch1(&req, &resp);
        assert_error(&resp, "too many redirects (more than 1)");
        web_response_release(&resp);
}

static void test_web_fetch_many_redirect_loop(void **state)
{
        struct server *s = *state;
        _cleanup_free_ char *u = url(s, "/loop");
        struct web_request req = {.url = u, .max_redirects = 3};
        struct web_response resp;

        fetch1(&req, &resp);
        assert_error(&resp, "too many redirects (more than 3)");
        assert_null(resp.body);
        assert_int_equal(connections(s), 4);
        web_response_release(&resp);

        req.max_redirects = 0; /* the default, 5 */
        fetch1(&req, &resp);
        assert_error(&resp, "too many redirects (more than 5)");
        web_response_release(&resp);
}

static void test_web_fetch_many_body_cap(void **state)
{
        struct server *s = *state;
        _cleanup_free_ char *big = url(s, "/big");
        _cleanup_free_ char *exact = url(s, "/exact");
        struct web_request reqs[2] = {{.url = big, .max_body = 1000},
                                      {.url = exact, .max_body = 1000}};
        struct web_response resps[2];

        assert_int_equal(web_fetch_many(reqs, 2, resps, USEC_INFINITY, -1), 0);
        assert_null(resps[0].error);
        assert_int_equal(resps[0].status, 200);
        assert_true(resps[0].truncated);
        assert_int_equal(resps[0].body_len, 1000);
        assert_int_equal(strlen(resps[0].body), 1000);
        assert_memory_equal(resps[0].body, "abcdefghijklmnopqrstuvwxyzabcd", 30);
        /* exactly at the cap: complete, not truncated */
        assert_null(resps[1].error);
        assert_false(resps[1].truncated);
        assert_int_equal(resps[1].body_len, 1000);
        web_response_release(&resps[0]);
        web_response_release(&resps[1]);

        /* default cap: the whole 100000 bytes */
        reqs[0].max_body = 0;
        fetch1(&reqs[0], &resps[0]);
        assert_null(resps[0].error);
        assert_false(resps[0].truncated);
        assert_int_equal(resps[0].body_len, 100000);
        web_response_release(&resps[0]);
}

static void test_web_fetch_many_gzip_decoded(void **state)
{
        struct server *s = *state;
        _cleanup_free_ char *u = url(s, "/gzip");
        struct web_request req = {.url = u};
        struct web_response resp;
        char want[400] = "";

        for (int i = 0; i < 20; i++)
                strncat(want, "hello from gzip! ", sizeof(want) - strlen(want) - 1);
        fetch1(&req, &resp);
        assert_null(resp.error);
        assert_int_equal(resp.body_len, 340);
        assert_string_equal(resp.body, want);
        web_response_release(&resp);

        /* the cap applies to the decoded bytes */
        req.max_body = 100;
        fetch1(&req, &resp);
        assert_null(resp.error);
        assert_true(resp.truncated);
        assert_int_equal(resp.body_len, 100);
        assert_memory_equal(resp.body, want, 100);
        web_response_release(&resp);
}

static void test_web_fetch_many_timeout(void **state)
{
        struct server *s = *state;
        _cleanup_free_ char *slow = url(s, "/slow?ms=3000");
        _cleanup_free_ char *stall = url(s, "/stall");
        struct web_request reqs[2] = {{.url = slow, .timeout = 300 * USEC_PER_MSEC},
                                      {.url = stall, .timeout = 400 * USEC_PER_MSEC}};
        struct web_response resps[2];
        usec_t start = now_usec(), ms;

        assert_int_equal(web_fetch_many(reqs, 2, resps, USEC_INFINITY, -1), 0);
        ms = elapsed_ms(start);
        assert_true(ms >= 390);
        assert_true(ms < 10000); /* hang guard; the errors below show which limit ended each */
        assert_error(&resps[0], "timed out after 0.3 s");
        assert_null(resps[0].body);
        /* the headers had arrived: the status is known, the body is not kept */
        assert_error(&resps[1], "timed out after 0.4 s");
        assert_int_equal(resps[1].status, 200);
        assert_null(resps[1].body);
        web_response_release(&resps[0]);
        web_response_release(&resps[1]);
}

static void test_web_fetch_many_deadline(void **state)
{
        struct server *s = *state;
        _cleanup_free_ char *u = url(s, "/slow?ms=3000");
        struct web_request req = {.url = u};
        struct web_response resp;
        usec_t start = now_usec(), ms;

        /* already past: nothing is attempted */
        assert_int_equal(web_fetch_many(&req, 1, &resp, start - 1, -1), 0);
        assert_true(elapsed_ms(start) < 10000); /* hang guard */
        assert_error(&resp, "timed out after 0 s");
        web_response_release(&resp);
        assert_no_connection_made(s);

        /* 300 ms away, shorter than the request's own timeout */
        start = now_usec();
        assert_int_equal(web_fetch_many(&req, 1, &resp, start + 300 * USEC_PER_MSEC, -1), 0);
        ms = elapsed_ms(start);
        assert_true(ms >= 290);
        assert_true(ms < 10000); /* hang guard: the page takes 3 s, the error shows the cut */
        assert_error(&resp, "timed out after 0.3 s");
        web_response_release(&resp);
}

struct kicker {
        int fd;
        int delay_ms;
};

static void *kick_main(void *arg)
{
        struct kicker *k = arg;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = k->delay_ms * 1000000L};
        uint64_t one = 1;

        nanosleep(&ts, NULL);
        if (write(k->fd, &one, sizeof(one)) != (ssize_t) sizeof(one))
                abort();
        return NULL;
}

static void test_web_fetch_many_cancel(void **state)
{
        struct server *s = *state;
        _cleanup_free_ char *slow = url(s, "/slow?ms=5000");
        _cleanup_free_ char *hello = url(s, "/hello");
        struct web_request reqs[2] = {{.url = slow}, {.url = slow}};
        struct web_response resps[2];
        struct kicker k = {.delay_ms = 150};
        pthread_t t;
        usec_t start, ms;

        k.fd = eventfd(0, EFD_CLOEXEC);
        assert_true(k.fd >= 0);
        assert_int_equal(pthread_create(&t, NULL, kick_main, &k), 0);
        start = now_usec();
        assert_int_equal(web_fetch_many(reqs, 2, resps, USEC_INFINITY, k.fd), 0);
        ms = elapsed_ms(start);
        pthread_join(t, NULL);
        assert_true(ms >= 140);
        assert_true(ms < 10000); /* hang guard: the pages take 5 s, "cancelled" shows the cut */
        for (int i = 0; i < 2; i++) {
                assert_error(&resps[i], "cancelled");
                assert_null(resps[i].body);
                web_response_release(&resps[i]);
        }

        /* already cancelled: nothing starts */
        reqs[0].url = hello;
        reqs[1].url = hello;
        start = now_usec();
        assert_int_equal(web_fetch_many(reqs, 2, resps, USEC_INFINITY, k.fd), 0);
        assert_true(elapsed_ms(start) < 10000); /* hang guard */
        assert_error(&resps[0], "cancelled");
        assert_error(&resps[1], "cancelled");
        web_response_release(&resps[0]);
        web_response_release(&resps[1]);
        close(k.fd);
}

static void test_web_fetch_many_concurrent(void **state)
{
        struct server *s = *state;
        _cleanup_free_ char *u = url(s, "/meet?n=4");
        struct web_request reqs[4] = {{.url = u}, {.url = u}, {.url = u}, {.url = u}};
        struct web_response resps[4];

        /* "met", not "alone": the four were in at the same time (no stopwatch) */
        assert_int_equal(web_fetch_many(reqs, 4, resps, USEC_INFINITY, -1), 0);
        for (int i = 0; i < 4; i++) {
                assert_null(resps[i].error);
                assert_int_equal(resps[i].status, 200);
                assert_string_equal(resps[i].body, "met");
                web_response_release(&resps[i]);
        }
        assert_int_equal(connections(s), 4);
}

static void test_web_fetch_many_guard_blocks_loopback(void **state)
{
        static const char *const forms[] = {
                "http://127.0.0.1:%d/hello",          "http://localhost:%d/hello",
                "http://[::ffff:127.0.0.1]:%d/hello", "http://127.1:%d/hello",
                "http://2130706433:%d/hello",         "http://0x7f.0.0.1:%d/hello",
                "http://0177.0.0.1:%d/hello",         "http://user:pw@127.0.0.1:%d/hello",
                "http://%%31%%32%%37.1:%d/hello",
        };
        struct server *s = *state;
        char *urls[ELEMENTSOF(forms)];
        struct web_request reqs[ELEMENTSOF(forms)];
        struct web_response resps[ELEMENTSOF(forms)];

        /*
         * Literal addresses (in any spelling curl accepts) are refused before
         * curl runs; host names by the socket callback, once resolved.
         */
        for (size_t i = 0; i < ELEMENTSOF(forms); i++) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
                assert_true(asprintf(&urls[i], forms[i], s->port) > 0);
#pragma GCC diagnostic pop
                reqs[i] = (struct web_request){.url = urls[i], .guard = true};
        }
        assert_int_equal(web_fetch_many(reqs, ELEMENTSOF(forms), resps, USEC_INFINITY, -1), 0);
        for (size_t i = 0; i < ELEMENTSOF(forms); i++) {
                if (!resps[i].blocked)
                        fail_msg("%s: not blocked (%s)", urls[i],
                                 resps[i].error ? resps[i].error : "fetched");
                assert_error(&resps[i],
                             "Blocked: URL targets a private or internal network address");
                assert_int_equal(resps[i].status, 0);
                assert_null(resps[i].body);
                web_response_release(&resps[i]);
                free(urls[i]);
        }
        assert_no_connection_made(s);
}

static void test_web_fetch_many_guard_allow_private(void **state)
{
        struct server *s = *state;
        _cleanup_free_ char *u = NULL;
        struct web_request req = {.guard = true, .allow_private = true};
        struct web_response resp;

        assert_true(asprintf(&u, "http://localhost:%d/r1", s->port) > 0);
        req.url = u;
        fetch1(&req, &resp);
        assert_null(resp.error);
        assert_false(resp.blocked);
        assert_int_equal(resp.status, 200);
        assert_string_equal(resp.body, "<h1>hi</h1>");
        web_response_release(&resp);
}

static void test_web_fetch_many_guard_redirect_to_metadata(void **state)
{
        struct server *s = *state;
        _cleanup_free_ char *u = url(s, "/to-metadata");
        struct web_request req = {.url = u, .guard = true, .allow_private = true};
        struct web_response resp;
        usec_t start = now_usec();

        /* refused in the socket callback: no packet leaves for 169.254.169.254 */
        fetch1(&req, &resp);
        assert_true(elapsed_ms(start) < 10000); /* hang guard */
        assert_error(&resp, "Blocked: URL targets a private or internal network address");
        assert_true(resp.blocked);
        assert_null(resp.body);
        assert_int_equal(connections(s), 1);
        web_response_release(&resp);
}

static void test_web_fetch_many_guard_metadata_hosts(void **state)
{
        static const char *const urls[] = {
                "http://metadata.google.internal/computeMetadata/v1/",
                "http://METADATA.goog./x",
                "https://instance-data/latest",
                "http://169.254.169.254/latest/meta-data/",
                "http://[fd00:ec2::254]/",
                "http://[::ffff:169.254.169.254]/",
                "http://100.100.100.200/",
                "http://0.0.0.0:80/",
        };
        struct web_request reqs[ELEMENTSOF(urls)];
        struct web_response resps[ELEMENTSOF(urls)];
        usec_t start = now_usec();

        for (size_t i = 0; i < ELEMENTSOF(urls); i++)
                reqs[i] =
                        (struct web_request){.url = urls[i], .guard = true, .allow_private = true};
        assert_int_equal(web_fetch_many(reqs, ELEMENTSOF(urls), resps, USEC_INFINITY, -1), 0);
        assert_true(elapsed_ms(start) < 10000); /* hang guard */
        for (size_t i = 0; i < ELEMENTSOF(urls); i++) {
                if (!resps[i].error || !resps[i].blocked)
                        fail_msg("%s was not blocked", urls[i]);
                assert_error(&resps[i],
                             "Blocked: URL targets a private or internal network address");
                web_response_release(&resps[i]);
        }
}

static void test_web_fetch_many_bad_urls(void **state)
{
        struct server *s = *state;
        _cleanup_free_ char *to_ftp = url(s, "/to-ftp");
        static const struct {
                const char *url;
                const char *error;
        } cases[] = {
                {"ftp://example.com/x", "unsupported URL scheme 'ftp' (only http and https)"},
                {"FILE:///etc/passwd", "unsupported URL scheme 'file' (only http and https)"},
                {"gopher://example.com/", "unsupported URL scheme 'gopher' (only http and https)"},
                {"mailto:someone@example.com",
                 "unsupported URL scheme 'mailto' (only http and https)"},
                {"javascript:alert(1)",
                 "unsupported URL scheme 'javascript' (only http and https)"},
                {"Data:text/html,hi", "unsupported URL scheme 'data' (only http and https)"},
                {"localhost:8080/x", "invalid URL"},
                {"http:example.com", "invalid URL"},
                {"not a url", "invalid URL"},
                {"example.com/page", "invalid URL"},
                {"", "invalid URL"},
                {"http://", "invalid URL"},
                {"http://exa mple.com/", "invalid URL"},
                {NULL, "invalid URL"},
        };
        struct web_request reqs[ELEMENTSOF(cases) + 1];
        struct web_response resps[ELEMENTSOF(cases) + 1];

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                reqs[i] = (struct web_request){.url = cases[i].url};
        reqs[ELEMENTSOF(cases)] = (struct web_request){.url = to_ftp};
        assert_int_equal(web_fetch_many(reqs, ELEMENTSOF(reqs), resps, USEC_INFINITY, -1), 0);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                if (!resps[i].error || strcmp(resps[i].error, cases[i].error) != 0)
                        fail_msg("'%s': expected \"%s\", got \"%s\"",
                                 cases[i].url ? cases[i].url : "(null)", cases[i].error,
                                 resps[i].error ? resps[i].error : "(none)");
                assert_int_equal(resps[i].status, 0);
                assert_null(resps[i].final_url);
                web_response_release(&resps[i]);
        }
        assert_error(&resps[ELEMENTSOF(cases)],
                     "redirect to unsupported URL scheme 'ftp' (only http and https)");
        web_response_release(&resps[ELEMENTSOF(cases)]);
        /* the FTP "server" (our HTTP port) was never contacted */
        assert_int_equal(connections(s), 1);
}

static void test_web_fetch_many_connection_errors(void **state)
{
        struct server *s = *state;
        _cleanup_free_ char *closed = url(s, "/close");
        _cleanup_free_ char *refused = NULL, *want = NULL;
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t alen = sizeof(a);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        char *const secret_headers[] = {"Authorization: Bearer sekrit-123", NULL};
        struct web_request reqs[4];
        struct web_response resps[4];

        /* a port that was just free: nothing listens there */
        assert_true(fd >= 0);
        assert_int_equal(bind(fd, (struct sockaddr *) &a, sizeof(a)), 0);
        assert_int_equal(getsockname(fd, (struct sockaddr *) &a, &alen), 0);
        close(fd);
        assert_true(asprintf(&refused, "http://127.0.0.1:%d/?key=sekrit-123", ntohs(a.sin_port)) >
                    0);
        assert_true(asprintf(&want, "could not connect to '127.0.0.1:%d' (connection refused)",
                             ntohs(a.sin_port)) > 0);

        reqs[0] = (struct web_request){.url = refused,
                                       .method = "POST",
                                       .body = "sekrit-123",
                                       .body_len = 10,
                                       .headers = secret_headers};
        reqs[1] = (struct web_request){.url = "http://nonexistent.invalid/?key=sekrit-123",
                                       .headers = secret_headers};
        reqs[2] = (struct web_request){.url = closed};
        reqs[3] = (struct web_request){.url = refused, .method = "PUT"};
        assert_int_equal(web_fetch_many(reqs, 4, resps, now_usec() + 10 * USEC_PER_SEC, -1), 0);
        assert_error(&resps[0], want);
        assert_error(&resps[1], "could not resolve host 'nonexistent.invalid'");
        assert_error(&resps[2], "the server closed the connection without a response");
        assert_error(&resps[3], "unsupported HTTP method (only GET and POST)");
        for (int i = 0; i < 4; i++) {
                assert_null(strstr(resps[i].error, "sekrit"));
                assert_int_equal(resps[i].status, 0);
                assert_null(resps[i].body);
                web_response_release(&resps[i]);
        }
}

static void test_web_fetch_many_post(void **state)
{
        struct server *s = *state;
        _cleanup_free_ char *u = url(s, "/echo");
        char *const headers[] = {"Content-Type: application/json", "X-Api-Key: test-key-42", NULL};
        char big[3000];
        struct web_request req = {.url = u,
                                  .method = "POST",
                                  .body = "{\"q\": \"x\"}",
                                  .body_len = 10,
                                  .headers = headers};
        struct web_response resp;
        _cleanup_free_ struct seen *v = NULL;

        fetch1(&req, &resp);
        assert_null(resp.error);
        assert_int_equal(resp.status, 200);
        assert_string_equal(resp.body, "ok");
        web_response_release(&resp);
        v = seen(s);
        assert_string_equal(v->method, "POST");
        assert_string_equal(v->path, "/echo");
        assert_string_equal(v->body, "{\"q\": \"x\"}");
        assert_non_null(strstr(v->headers, "Content-Type: application/json\r\n"));
        assert_non_null(strstr(v->headers, "X-Api-Key: test-key-42\r\n"));
        assert_non_null(strstr(v->headers, "Content-Length: 10\r\n"));

        /* a body over 1 KiB goes out without "Expect: 100-continue" and its wait */
        memset(big, 'z', sizeof(big));
        req.body = big;
        req.body_len = sizeof(big);
        usec_t start = now_usec();
        fetch1(&req, &resp);
        assert_null(resp.error);
        assert_true(elapsed_ms(start) < 10000); /* hang guard; no "Expect:" below is the point */
        free(v);
        v = seen(s);
        assert_int_equal(v->body_len, sizeof(big));
        assert_null(strcasestr(v->headers, "Expect:"));
        web_response_release(&resp);

        /* a header with a line break is refused, and not quoted */
        char *const evil[] = {"X-A: b\r\nX-Injected: 1", NULL};
        req.headers = evil;
        fetch1(&req, &resp);
        assert_error(&resp, "invalid request header");
        web_response_release(&resp);
}

static void test_web_fetch_many_args(void **state)
{
        struct web_request reqs[WEB_FETCH_MAX_REQUESTS + 1] = {};
        struct web_response resps[WEB_FETCH_MAX_REQUESTS + 1];

        assert_int_equal(web_fetch_many(reqs, 0, resps, USEC_INFINITY, -1), 0);
        assert_int_equal(web_fetch_many(NULL, 0, NULL, USEC_INFINITY, -1), 0);
        assert_int_equal(web_fetch_many(reqs, WEB_FETCH_MAX_REQUESTS + 1, resps, USEC_INFINITY, -1),
                         -EINVAL);
        assert_int_equal(web_fetch_many(NULL, 1, resps, USEC_INFINITY, -1), -EINVAL);
        assert_int_equal(web_fetch_many(reqs, 1, NULL, USEC_INFINITY, -1), -EINVAL);
}

/*
 * Literal addresses are refused before curl runs, whatever their spelling: with a deadline
 * already past, a URL the early check lets through ends "timed out" instead.
 */
static void test_web_fetch_many_guard_literals_before_curl(void **state)
{
        static const char *const urls[] = {
                "http://127.0.0.1/",
                "http://127.1/",
                "http://0x7f.1/",
                "http://%31%32%37.1/",  /* curl decodes it to "127.1" and leaves it so */
                "http://%31%30.1.2.3/", /* "10.1.2.3" */
                "http://%30x7f.1/",     /* "0x7f.1" */
                "http://%32130706433/", /* "2130706433" */
                "http://[::ffff:7f00:1]/",
                "http://%31%36%39.254.169.254/",
                "http://127.0.0.1./", /* as the policy reads it */
                "http://127.1./",
        };
        struct web_request reqs[ELEMENTSOF(urls)];
        struct web_response resps[ELEMENTSOF(urls)];

        for (size_t i = 0; i < ELEMENTSOF(urls); i++)
                reqs[i] = (struct web_request){.url = urls[i], .guard = true};
        assert_int_equal(web_fetch_many(reqs, ELEMENTSOF(urls), resps, 1, -1), 0);
        for (size_t i = 0; i < ELEMENTSOF(urls); i++) {
                if (!resps[i].blocked)
                        fail_msg("%s: not blocked before curl ran (%s)", urls[i],
                                 resps[i].error ? resps[i].error : "fetched");
                web_response_release(&resps[i]);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, server_setup, server_teardown)
                T(test_web_fetch_many_ok_with_content_type),
                T(test_web_fetch_many_404_is_a_status),
                T(test_web_fetch_many_redirect_chain),
                T(test_web_fetch_many_redirect_loop),
                T(test_web_fetch_many_body_cap),
                T(test_web_fetch_many_gzip_decoded),
                T(test_web_fetch_many_timeout),
                T(test_web_fetch_many_deadline),
                T(test_web_fetch_many_cancel),
                T(test_web_fetch_many_concurrent),
                T(test_web_fetch_many_guard_blocks_loopback),
                T(test_web_fetch_many_guard_allow_private),
                T(test_web_fetch_many_guard_redirect_to_metadata),
                T(test_web_fetch_many_guard_metadata_hosts),
                T(test_web_fetch_many_bad_urls),
                T(test_web_fetch_many_connection_errors),
                T(test_web_fetch_many_post),
                cmocka_unit_test(test_web_fetch_many_args),
                cmocka_unit_test(test_web_fetch_many_guard_literals_before_curl),
#undef T
        };

        /* The test server writes to clients that may have gone away. */
        signal(SIGPIPE, SIG_IGN);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
