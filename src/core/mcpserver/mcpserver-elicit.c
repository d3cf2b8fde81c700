/* SPDX-License-Identifier: MIT */
/*
 * The policy's asks put to the MCP client (docs/policy.md, "Who answers"): when the client
 * declared the elicitation capability at initialize, an ask of a call of this connection
 * becomes an `elicitation/create` request with a form of one choice (allow once, allow for
 * this session, deny), and the call waits for the client's response, its own cancel or the
 * request's deadline; on the last two the client is told with notifications/cancelled.
 * Without the capability nobody can be asked: policy.headless decides. "For this session"
 * lasts as long as the connection.
 */

#include "core/mcpserver/mcpserver.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/fd-util.h"
#include "basic/time-util.h"
#include "basic/utf8.h"
#include "core/policy/approval.h"

/* One elicitation/create waiting for the client's response; linked in mcp_server.elicits. */
struct elicit_wait {
        struct elicit_wait *next;
        json_int_t id;
        int efd;          /* written when the response came */
        json_t *response; /* the response message, under the server's lock */
};

/* Append @s with every control character as '?': the script chose it (a command, a path). */
static int append_clean(struct buf *m, const char *s)
{
        _cleanup_free_ char *c = strdup(s);

        if (!c)
                return -ENOMEM;
        utf8_replace_controls(c, false);
        return buf_append_str(m, c);
}

static json_t *request_params(const struct approval_request *req)
{
        const struct policy_verdict *v = req->verdict;
        _cleanup_buf_ struct buf m = BUF_INIT(64 * 1024);
        int r;

        r = buf_printf(&m, "The script wants to call %s: ", req->tool);
        if (r >= 0)
                r = append_clean(&m, v->subject[0] ? v->subject : "(the call)");
        if (r >= 0)
                r = buf_append_str(&m, "\nWhy asked: ");
        if (r >= 0)
                r = append_clean(&m, v->what);
        if (r >= 0)
                r = buf_append_str(&m, v->origin == POLICY_ORIGIN_RULE
                                               ? " (a rule of the policy)\n"
                                               : " (ptc's built-in list)\n");
        /* A call that asks about several things: each, since the answer covers them all. */
        for (size_t i = 1; r >= 0 && i < v->n_asks; i++) {
                r = buf_append_str(&m, "And: ");
                if (r >= 0)
                        r = append_clean(&m, v->asks[i].what);
                if (r >= 0)
                        r = buf_append_str(&m, " (");
                if (r >= 0)
                        r = append_clean(&m, v->asks[i].subject);
                if (r >= 0)
                        r = buf_append_str(&m, ")\n");
        }
        if (r >= 0)
                r = buf_append_str(&m, "Arguments: ");
        if (r >= 0)
                r = append_clean(&m, req->args_json);
        if (r >= 0)
                r = buf_append_str(&m, "\nAllow it?");
        if (r < 0)
                return NULL;
        return json_pack("{s:s, s:{s:s, s:{s:{s:s, s:s, s:s, s:[s, s, s]}}, s:[s]}}", "message",
                         buf_str(&m), "requestedSchema", "type", "object", "properties", "decision",
                         "type", "string", "title", "Decision", "description",
                         "allow_once, allow_session (this and later calls like it, for this "
                         "connection) or deny",
                         "enum", "allow_once", "allow_session", "deny", "required", "decision");
}

/* The client's response as an answer: anything but an accepted allow denies (a client that
 * declared the capability and answers with an error does not fall back to headless). */
static void read_response(json_t *msg, enum approval_answer *ret)
{
        json_t *result = json_object_get(msg, "result");
        const char *action = json_string_value(json_object_get(result, "action"));
        const char *decision =
                json_string_value(json_object_get(json_object_get(result, "content"), "decision"));

        *ret = APPROVAL_DENY;
        if (action && strcmp(action, "accept") == 0 && decision) {
                if (strcmp(decision, "allow_once") == 0)
                        *ret = APPROVAL_ALLOW_ONCE;
                else if (strcmp(decision, "allow_session") == 0)
                        *ret = APPROVAL_ALLOW_SESSION;
        }
}

static int elicit_ask(void *userdata, const struct approval_request *req, enum approval_answer *ret)
{
        struct mcp_server *s = userdata;
        struct elicit_wait w = {.efd = -EBADF};
        json_auto_t *response = NULL;
        json_t *params, *msg;
        bool cancelled;
        int r;

        pthread_mutex_lock(&s->lock);
        r = s->client_elicits ? 0 : -ENXIO;
        if (r == 0)
                w.id = ++s->elicit_ids;
        pthread_mutex_unlock(&s->lock);
        if (r < 0)
                return r;
        w.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w.efd < 0)
                return -errno;
        params = request_params(req);
        msg = params ? json_pack("{s:I, s:s, s:o}", "id", w.id, "method", "elicitation/create",
                                 "params", params)
                     : NULL;
        if (!msg) {
                safe_close(w.efd);
                return -ENOMEM;
        }
        pthread_mutex_lock(&s->lock);
        w.next = s->elicits;
        s->elicits = &w;
        pthread_mutex_unlock(&s->lock);

        mcpserver_send(s, msg);
        fd_wait_either(w.efd, req->cancel_fd, req->deadline);

        pthread_mutex_lock(&s->lock);
        for (struct elicit_wait **p = &s->elicits; *p; p = &(*p)->next)
                if (*p == &w) {
                        *p = w.next;
                        break;
                }
        response = TAKE_PTR(w.response);
        pthread_mutex_unlock(&s->lock);
        safe_close(w.efd);

        if (response) {
                read_response(response, ret);
                return 0;
        }
        cancelled = req->cancel_fd >= 0 && fd_readable_now(req->cancel_fd);
        /* The client may still show the form: it is told the answer is no longer wanted. */
        mcpserver_send(s, json_pack("{s:s, s:{s:I, s:s}}", "method", "notifications/cancelled",
                                    "params", "requestId", w.id, "reason",
                                    cancelled ? "the call ended"
                                              : "no answer within policy.approval_timeout"));
        return cancelled ? -ECANCELED : -ETIME;
}

int mcpserver_elicit_init(struct mcp_server *s)
{
        return approver_new(elicit_ask, s, "elicitation", &s->approver);
}

void mcpserver_elicit_done(struct mcp_server *s)
{
        s->approver = approver_free(s->approver);
}

void mcpserver_elicit_response(struct mcp_server *s, json_t *id, json_t *msg)
{
        uint64_t one = 1;

        if (!json_is_integer(id))
                return; /* not one of ours: this server's request ids are integers */
        pthread_mutex_lock(&s->lock);
        for (struct elicit_wait *w = s->elicits; w; w = w->next)
                if (w->id == json_integer_value(id) && !w->response) {
                        w->response = json_incref(msg);
                        (void) !write(w->efd, &one, sizeof(one));
                        break;
                }
        pthread_mutex_unlock(&s->lock);
}
