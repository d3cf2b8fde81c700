/* SPDX-License-Identifier: MIT */
/*
 * The calls in flight of the MCP server. Every tools/call runs on a detached
 * thread of its own, so calls run at once and a slow script never delays a
 * ping. execute_code is a ptc_execution on the server's engine, run on that
 * thread through the public API: its per-call timeout, its progress callback
 * (notifications/progress) and ptc_execution_cancel() (notifications/cancelled
 * and the shutdown). An exposed tool is one registry call, bounded by the
 * server's largest timeout and by an eventfd the cancellation writes.
 *
 * The execution (or the eventfd) exists before the thread starts, so a cancel
 * that arrives before the run interrupts it at once. A call stays in the table,
 * reachable by a cancel, until its thread has its result; only then is the
 * execution freed, out of the table, so a cancel never meets a freed one.
 */

#include "core/mcpserver/mcpserver.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/time-util.h"
#include "core/api/api-util.h"
#include "core/api/engine.h"
#include "core/api/execution.h"
#include "core/tools/tool.h"

/* ------------------------------------------------------------------------------------------ */
/* execute_code                                                                                */

/* On an engine worker thread, as each tool call of the script is dispatched. */
static void on_progress(const char *tool, int64_t count, void *userdata)
{
        struct mcp_call *c = userdata;
        char msg[192];

        (void) snprintf(msg, sizeof(msg), "%.128s (call %lld)", tool, (long long) count);
        mcpserver_send(c->server,
                       json_pack("{s:s, s:{s:O, s:I, s:s}}", "method", "notifications/progress",
                                 "params", "progressToken", c->progress_token, "progress",
                                 (json_int_t) count, "message", msg));
}

/* On the run's or a worker thread: one live event of the call, as a log notification. */
static int on_event(const char *line, size_t len, void *userdata)
{
        struct mcp_call *c = userdata;
        json_t *ev = json_loadb(line, len, 0, NULL);

        if (!ev)
                return -EINVAL;
        mcpserver_send(c->server,
                       json_pack("{s:s, s:{s:s, s:s, s:{s:O, s:o}}}", "method",
                                 "notifications/message", "params", "level", "info", "logger",
                                 "ptc", "data", "request_id", c->id, "event", ev));
        return 0;
}

/* The call's timeout in seconds: its own, capped by the server's largest. */
static double call_timeout(const struct mcp_call *c)
{
        json_t *t = json_object_get(c->arguments, "timeout");

        if (c->tool || !json_is_number(t))
                return c->server->max_timeout;
        return MIN(json_number_value(t), c->server->max_timeout);
}

/* What is left of the call's timeout after its wait for a place, as "timeout" takes it. */
static int set_timeout(struct mcp_call *c, struct ptc_diag *d)
{
        double timeout = call_timeout(c) - (double) c->waited / USEC_PER_SEC;
        char text[64];

        /*
         * Milliseconds, as the text "timeout" parses; a positive timeout below
         * 1 ms (the request checked it is positive) is 1 ms, never 0.
         */
        (void) snprintf(text, sizeof(text), "%.3f", MAX(timeout, 0.001));
        return ptc_execution_set(c->x, "timeout", text, d);
}

static json_t *execute_code(struct mcp_call *c)
{
        json_t *code = json_object_get(c->arguments, "code");
        _cleanup_free_ char *text = NULL;
        struct ptc_diag d = {};
        enum ptc_status status = PTC_STATUS_ERROR;
        bool log_events;
        json_t *res;
        int r;

        r = set_timeout(c, &d);
        {
                json_t *sid = json_object_get(c->arguments, "session");
                const char *id =
                        json_is_string(sid) ? json_string_value(sid) : c->server->default_session;

                if (r >= 0 && id[0])
                        r = ptc_execution_set(c->x, "session", id, &d);
        }
        if (r >= 0 && json_is_true(json_object_get(c->arguments, "reset")))
                r = ptc_execution_set(c->x, "reset", "true", &d);
        if (r >= 0 && json_is_string(json_object_get(c->arguments, "fork_from")))
                r = ptc_execution_set(c->x, "fork_from",
                                      json_string_value(json_object_get(c->arguments, "fork_from")),
                                      &d);
        if (r >= 0 && c->progress_token && ptc_execution_on_progress(c->x, on_progress, c) < 0)
                r = api_diagf(&d, -EINVAL, "cannot watch the execution's progress");
        pthread_mutex_lock(&c->server->lock);
        log_events = c->server->log_events;
        pthread_mutex_unlock(&c->server->lock);
        if (r >= 0 && log_events && ptc_execution_on_event(c->x, on_event, c) < 0)
                r = api_diagf(&d, -EINVAL, "cannot watch the execution's events");
        if (r >= 0)
                r = ptc_execution_run(c->x, json_string_value(code), json_string_length(code),
                                      &text, &status, &d);
        {
                /* What the run did differently than asked (isolation auto leaving out a layer). */
                _cleanup_free_ char *w = c->x ? ptc_execution_warnings(c->x) : NULL;

                for (char *l = w, *nl; l && *l; l = nl ? nl + 1 : l + strlen(l)) {
                        nl = strchr(l, '\n');
                        if (nl)
                                *nl = 0;
                        mcpserver_log(c->server, true, "%s", l);
                }
        }
        /* A failure of ptc itself still has a result when one could be built: the answer. */
        if (!text)
                return mcpserver_tool_error("execute_code could not run: %s",
                                            d.message[0] ? d.message : strerror(-r));
        if (r < 0)
                mcpserver_log(c->server, true, "execute_code: %s", d.message);
        res = json_loads(text, 0, NULL);
        if (!json_is_object(res)) {
                json_decref(res);
                return NULL;
        }
        return mcpserver_tool_result(res, status != PTC_STATUS_SUCCESS);
}

/* ------------------------------------------------------------------------------------------ */
/* A tool called directly (PTC_MCP_EXPOSE_TOOLS)                                               */

static json_t *direct_tool(struct mcp_call *c)
{
        usec_t deadline = c->arrived + (usec_t) (c->server->max_timeout * (double) USEC_PER_SEC);
        struct ptc_diag d = {};
        json_t *res = NULL, *err, *ok;
        int r;

        r = engine_call_tool(c->server->engine, c->tool, c->arguments, deadline, c->cancel_fd,
                             c->server->approver, &res, &d);
        if (r < 0)
                return NULL;
        err = json_object_get(res, "error");
        ok = json_object_get(res, "success");
        return mcpserver_tool_result(res, (err && !json_is_null(err)) || json_is_false(ok));
}

/* ------------------------------------------------------------------------------------------ */
/* The table                                                                                   */

static void call_free(struct mcp_call *c)
{
        if (!c)
                return;
        json_decref(c->id);
        json_decref(c->progress_token);
        json_decref(c->arguments);
        ptc_execution_free(c->x);
        safe_close(c->cancel_fd);
        free(c);
}

static void call_unlink(struct mcp_server *s, struct mcp_call *c)
{
        pthread_mutex_lock(&s->lock);
        for (struct mcp_call **p = &s->calls; *p; p = &(*p)->next)
                if (*p == c) {
                        *p = c->next;
                        break;
                }
        s->n_calls--;
        pthread_cond_broadcast(&s->idle);
        pthread_mutex_unlock(&s->lock);
}

static void log_cancelled(struct mcp_server *s, json_t *id)
{
        if (json_is_string(id))
                mcpserver_log(s, false,
                              "request \"%.100s\" cancelled: the execution was interrupted",
                              json_string_value(id));
        else
                mcpserver_log(s, false, "request %lld cancelled: the execution was interrupted",
                              (long long) json_integer_value(id));
}

/*
 * Wait for one of the MCP_CALLS_RUNNING_MAX places, at most the call's timeout from its
 * arrival. True with the place taken; false when the call was cancelled meanwhile or its
 * timeout passed in line.
 */
static bool take_place(struct mcp_call *c)
{
        struct mcp_server *s = c->server;
        usec_t until = c->arrived + (usec_t) (call_timeout(c) * (double) USEC_PER_SEC);
        struct timespec ts = {.tv_sec = (time_t) (until / USEC_PER_SEC),
                              .tv_nsec = (long) (until % USEC_PER_SEC) * 1000};
        bool taken = false, queued = false;

        pthread_mutex_lock(&s->lock);
        while (!c->cancelled && s->n_running >= MCP_CALLS_RUNNING_MAX) {
                queued = true;
                if (pthread_cond_timedwait(&s->place, &s->lock, &ts) == ETIMEDOUT)
                        break;
        }
        if (!c->cancelled && s->n_running < MCP_CALLS_RUNNING_MAX) {
                s->n_running++;
                c->running = taken = true;
        }
        pthread_mutex_unlock(&s->lock);
        /* Only a wait in line counts against the timeout, not the thread's start. */
        c->waited = queued ? now_usec() - c->arrived : 0;
        return taken;
}

static void leave_place(struct mcp_server *s)
{
        pthread_mutex_lock(&s->lock);
        s->n_running--;
        pthread_cond_signal(&s->place);
        pthread_mutex_unlock(&s->lock);
}

static void *call_thread(void *userdata)
{
        struct mcp_call *c = userdata;
        struct mcp_server *s = c->server;
        json_t *result = NULL;
        bool cancelled;

        if (take_place(c)) {
                result = c->tool ? direct_tool(c) : execute_code(c);
                leave_place(s);
        } else
                result = mcpserver_tool_error(
                        "not run: the call's whole timeout (%.3g s) passed waiting for one of "
                        "the %d calls running at once on this server to end",
                        call_timeout(c), MCP_CALLS_RUNNING_MAX);

        pthread_mutex_lock(&s->lock);
        cancelled = c->cancelled;
        pthread_mutex_unlock(&s->lock);
        /* The MCP specification: no response for a cancelled request. */
        if (cancelled) {
                log_cancelled(s, c->id);
                json_decref(result);
        } else if (result)
                mcpserver_send_result(s, c->id, result);
        else
                mcpserver_send_error(s, c->id, JSONRPC_SERVER_BUSY, "out of memory");
        call_unlink(s, c);
        call_free(c);
        mcpserver_unref(s);
        return NULL;
}

void mcpserver_call_start(struct mcp_server *s, json_t *id, const struct tool *tool, json_t *args,
                          json_t *meta)
{
        struct ptc_diag d = {};
        struct mcp_call *c;
        pthread_attr_t attr;
        pthread_t th;
        int r;

        c = calloc(1, sizeof(*c));
        if (!c) {
                mcpserver_send_error(s, id, JSONRPC_SERVER_BUSY, "out of memory");
                return;
        }
        c->server = s;
        c->arrived = now_usec();
        c->cancel_fd = -EBADF;
        c->id = json_incref(id);
        c->tool = tool;
        c->arguments = json_is_object(args) ? json_deep_copy(args) : json_object();
        if (json_is_object(meta) && json_object_get(meta, "progressToken"))
                c->progress_token = json_incref(json_object_get(meta, "progressToken"));
        if (!c->arguments)
                r = -ENOMEM;
        else if (tool) {
                c->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
                r = c->cancel_fd < 0 ? -errno : 0;
        } else {
                r = ptc_execution_new(s->engine, &c->x, &d);
                /* The policy's asks of this call go to this connection's client. */
                if (r >= 0)
                        r = execution_set_approver(c->x, s->approver);
        }
        if (r < 0) {
                call_free(c);
                mcpserver_send_error(s, id, JSONRPC_SERVER_BUSY, "cannot start the call: %s",
                                     d.message[0] ? d.message : strerror(-r));
                return;
        }

        pthread_mutex_lock(&s->lock);
        if (s->n_calls >= MCP_CALLS_MAX) {
                pthread_mutex_unlock(&s->lock);
                call_free(c);
                mcpserver_send_error(s, id, JSONRPC_SERVER_BUSY,
                                     "too many calls in flight (at most %d)", MCP_CALLS_MAX);
                return;
        }
        c->next = s->calls;
        s->calls = c;
        s->n_calls++;
        s->refs++;
        pthread_mutex_unlock(&s->lock);

        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        r = pthread_create(&th, &attr, call_thread, c);
        pthread_attr_destroy(&attr);
        if (r != 0) {
                call_unlink(s, c);
                call_free(c);
                pthread_mutex_lock(&s->lock);
                s->refs--; /* the serving thread still holds its own */
                pthread_mutex_unlock(&s->lock);
                mcpserver_send_error(s, id, JSONRPC_SERVER_BUSY, "cannot start the call: %s",
                                     strerror(r));
        }
}

/* Under s->lock. */
static void cancel_locked(struct mcp_call *c)
{
        uint64_t one = 1;

        c->cancelled = true;
        /* A call waiting for a place gives up its wait. */
        pthread_cond_broadcast(&c->server->place);
        if (c->x)
                ptc_execution_cancel(c->x);
        else
                (void) !write(c->cancel_fd, &one, sizeof(one));
}

void mcpserver_call_cancel(struct mcp_server *s, json_t *request_id)
{
        pthread_mutex_lock(&s->lock);
        for (struct mcp_call *c = s->calls; c; c = c->next)
                if (json_equal(c->id, request_id) && !c->cancelled)
                        cancel_locked(c);
        pthread_mutex_unlock(&s->lock);
}

size_t mcpserver_cancel_all_and_wait(struct mcp_server *s)
{
        struct timespec until;
        size_t left;

        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += MCP_SHUTDOWN_SEC;
        pthread_mutex_lock(&s->lock);
        for (struct mcp_call *c = s->calls; c; c = c->next)
                if (!c->cancelled)
                        cancel_locked(c);
        while (s->n_calls > 0)
                if (pthread_cond_timedwait(&s->idle, &s->lock, &until) == ETIMEDOUT)
                        break;
        left = s->n_calls;
        pthread_mutex_unlock(&s->lock);
        return left;
}
