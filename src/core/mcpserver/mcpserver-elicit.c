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

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/time-util.h"
#include "basic/utf8.h"
#include "core/mcpserver/mcpserver.h"
#include "core/policy/approval.h"

/* One elicitation/create waiting for the client's response; linked in mcp_server.elicits. */
struct elicit_wait {
        struct elicit_wait *next;
        json_int_t id;
        int efd;          /* written when the response came */
        json_t *response; /* the response message, under the server's lock */
};

static json_t *request_params(const struct approval_request *req)
{
        const struct policy_verdict *v = req->verdict;
        char message[POLICY_TEXT_MAX * 2 + 2400], subject[POLICY_TEXT_MAX], what[POLICY_TEXT_MAX];

        /* The script chose the command or path: no control character reaches the form. */
        memcpy(subject, v->subject, sizeof(subject));
        memcpy(what, v->what, sizeof(what));
        utf8_replace_controls(subject, false);
        utf8_replace_controls(what, false);
        (void) snprintf(message, sizeof(message),
                        "The script wants to call %s: %s\n"
                        "Why asked: %s (%s)\n"
                        "Arguments: %s\n"
                        "Allow it?",
                        req->tool, subject[0] ? subject : "(the call)", what,
                        v->origin == POLICY_ORIGIN_RULE ? "a rule of the policy"
                                                        : "ptc's built-in list",
                        req->args_json);
        return json_pack("{s:s, s:{s:s, s:{s:{s:s, s:s, s:s, s:[s, s, s]}}, s:[s]}}", "message",
                         message, "requestedSchema", "type", "object", "properties", "decision",
                         "type", "string", "title", "Decision", "description",
                         "allow_once, allow_session (this and later calls like it, for this "
                         "connection) or deny",
                         "enum", "allow_once", "allow_session", "deny", "required", "decision");
}

/* The client's response as an answer: 0, or -ENXIO (it could not ask: an error). */
static int read_response(json_t *msg, enum approval_answer *ret)
{
        json_t *result = json_object_get(msg, "result");
        const char *action = json_string_value(json_object_get(result, "action"));
        const char *decision =
                json_string_value(json_object_get(json_object_get(result, "content"), "decision"));

        if (!json_is_object(result) || !action)
                return -ENXIO;
        *ret = APPROVAL_DENY; /* decline, cancel, and anything not understood */
        if (strcmp(action, "accept") == 0 && decision) {
                if (strcmp(decision, "allow_once") == 0)
                        *ret = APPROVAL_ALLOW_ONCE;
                else if (strcmp(decision, "allow_session") == 0)
                        *ret = APPROVAL_ALLOW_SESSION;
        }
        return 0;
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

        if (response)
                return read_response(response, ret);
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
