/* SPDX-License-Identifier: MIT */
/* JSON-RPC framing of the MCP client: lines to messages, requests and their answers. */

#include "core/mcp/mcp-client-internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>

#include <jansson.h>

#include "basic/buf.h"
#include "basic/fd-util.h"

/* ---- lines from the server's stdout (read by the reader thread) ---- */

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
                        /* 5.5 or 5e0 is a real, not the integer 5: handle_line() would not
                         * take it as an answer to request 5 either. */
                        if (ch == '.' || ch == 'e' || ch == 'E') {
                                s->state = ID_NONE;
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

/* Hand @msg (or @error, see struct pending) to the caller waiting for @id; a late answer is
 * dropped. */
static void deliver(struct mcp_client *c, int64_t id, json_t *msg, int error)
{
        pthread_mutex_lock(&c->lock);
        for (struct pending *p = c->pending; p; p = p->next) {
                if (p->id != id || p->done)
                        continue;
                p->answer = json_incref(msg);
                p->error = error;
                p->done = true;
                mcp_efd_signal(p->efd);
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
        if (mcp_send_message(c, resp, now_usec() + REPLY_WRITE_USEC) < 0) {
                /* The server is gone or not reading: it will not miss the answer. */
        }
}

static void handle_line(struct mcp_client *c, const char *p, size_t n)
{
        json_auto_t *msg = NULL;
        json_t *method, *id;
        json_error_t error;
        size_t i;

        for (i = 0; i < n; i++)
                if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
                        break;
        if (i == n)
                return; /* an empty line is not a message */
        msg = json_loadb(p, n, 0, &error);
        if (!msg) {
                /* Not JSON (a \u0000, an integer past 64 bits, a cut line): if it names one
                 * of our requests, that caller hears why now instead of waiting out its
                 * deadline. */
                struct id_scan scan = {};

                atomic_fetch_add(&c->n_malformed, 1);
                id_scan_feed(&scan, p, n);
                id_scan_feed(&scan, " ", 1); /* ends an id the line ends with */
                if (scan.found) {
                        json_auto_t *why = NULL;

                        /* The parser's message may quote the hostile bytes: keep it ASCII. */
                        for (char *t = error.text; *t; t++)
                                if ((unsigned char) *t < 0x20 || (unsigned char) *t >= 0x7f)
                                        *t = '?';
                        why = json_sprintf("%s at column %d", error.text, error.column);
                        deliver(c, scan.value, why, -EBADMSG);
                }
                return;
        }
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
        deliver(c, json_integer_value(id), msg, 0);
}

static void line_done(struct mcp_client *c)
{
        /* Keep a normal line's memory for the next one, not a huge answer's. */
        if (c->line.alloc > 1024 * 1024)
                buf_release(&c->line);
        else
                buf_reset(&c->line);
}

void mcp_feed_stdout(struct mcp_client *c, const char *p, size_t n)
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
                                deliver(c, c->scan.value, NULL, -E2BIG);
                        c->discarding = false;
                } else {
                        handle_line(c, buf_str(&c->line), c->line.len);
                }
                line_done(c);
                p += k + 1;
                n -= k + 1;
        }
}

/* ---- requests ---- */

struct pending *mcp_pending_free(struct pending *p)
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
        return mcp_send_message(c, msg, now_usec() + CANCEL_WRITE_USEC);
}

/*
 * Send request @method with @params (borrowed) and wait for its answer.
 * Returns 0 with *ret the whole response message (owned); -ETIMEDOUT;
 * -ECANCELED (@cancel_fd readable); -ESRCH (the server is not running);
 * -E2BIG (the answer was over MCP_CLIENT_MESSAGE_MAX); -EBADMSG (the answer was not JSON:
 * *ret is a string, the parser's message, owned, or NULL without memory); -ENOMEM. On
 * timeout and cancel the server gets notifications/cancelled, except for
 * initialize, which MCP forbids cancelling.
 */
int mcp_request(struct mcp_client *c, const char *method, json_t *params, usec_t deadline,
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
                mcp_pending_free(p);
                return r;
        }

        pthread_mutex_lock(&c->lock);
        if (c->dead) {
                pthread_mutex_unlock(&c->lock);
                mcp_pending_free(p);
                return -ESRCH;
        }
        p->next = c->pending;
        c->pending = p;
        pthread_mutex_unlock(&c->lock);

        r = mcp_send_message(c, msg, deadline);
        if (r == -EPIPE)
                r = -ESRCH;

        while (r == 0) {
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
                k = fd_wait_either(p->efd, cancel_fd, deadline);
                if (k < 0) {
                        r = k;
                        break;
                }
                if (k & FD_WAIT_B) {
                        r = -ECANCELED;
                        break;
                }
                if (k & FD_WAIT_A)
                        mcp_efd_drain(p->efd);
                if (k == 0)
                        r = -ETIMEDOUT;
        }

        pthread_mutex_lock(&c->lock);
        pending_unlink(c, p);
        pthread_mutex_unlock(&c->lock);

        if (r == 0) {
                r = p->error;
                if (r != -E2BIG)
                        *ret = TAKE_PTR(p->answer);
        } else if ((r == -ETIMEDOUT || r == -ECANCELED) && strcmp(method, "initialize") != 0) {
                /* Best effort: a late answer is dropped by deliver() either way. */
                if (send_cancelled(c, id, r == -ETIMEDOUT ? "timeout" : "cancelled") < 0) {
                        /* The server is gone or not reading: nothing to cancel there. */
                }
        }
        mcp_pending_free(p);
        return r;
}
