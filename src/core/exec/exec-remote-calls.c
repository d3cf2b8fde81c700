/* SPDX-License-Identifier: MIT */
/*
 * The calls of the tools that run on the host (tool.runs_on_host) during a remote run
 * (docs/remote.md): each call frame from the agent runs on a detached thread holding a
 * reference on the run, and its answer goes back as an answer frame. The target is not
 * trusted: only a tool that runs on the host is run here, and no more of them than the
 * run's tool budget, which the host counts itself.
 */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/exec/exec-remote.h"
#include "core/registry/registry.h"

struct host_call {
        struct remote_run *run;
        json_int_t id;
        const struct tool *tool;
        json_t *args;
};

static void answer(struct remote_run *r, json_int_t id, json_t *result)
{
        json_auto_t *a = json_pack("{s:I, s:O}", "id", id, "result", result);

        if (a)
                (void) remote_send_json(r, FRAME_ANSWER, a);
}

static void answer_error(struct remote_run *r, json_int_t id, const char *message)
{
        json_auto_t *res = json_pack("{s:s}", "error", message);

        if (res)
                answer(r, id, res);
}

static void *host_call_main(void *arg)
{
        struct host_call *c = arg;
        struct remote_run *r = c->run;
        json_auto_t *result = NULL;
        int k;

        k = registry_call_tool(c->tool, &r->tool_ctx, c->args, &result, NULL);
        if (k < 0 || !result)
                answer_error(r, c->id, "Tool execution failed: out of memory");
        else
                answer(r, c->id, result);
        json_decref(c->args);
        free(c);

        pthread_mutex_lock(&r->lock);
        if (--r->calls == 0)
                pthread_cond_broadcast(&r->calls_done);
        pthread_mutex_unlock(&r->lock);
        remote_run_unref(r);
        return NULL;
}

/*
 * A call frame: {"id": N, "tool": NAME, "args": {...}}. Only a tool that runs on the host
 * is run here: the agent, like anything on the target, is not trusted to name another.
 */
void remote_start_call(struct remote_run *r, json_t *call)
{
        json_t *id = json_object_get(call, "id"), *args = json_object_get(call, "args");
        const char *name = json_string_value(json_object_get(call, "tool"));
        const struct tool *t = name ? registry_find(r->o->registry, name) : NULL;
        struct host_call *c;
        pthread_attr_t attr;
        pthread_t th;
        bool full;

        if (!json_is_integer(id) || !name || !json_is_object(args)) {
                remote_fail(r, "broken remote stream: a call frame without an integer id, a tool "
                               "name and an arguments object");
                return;
        }
        if (!t || !t->runs_on_host) {
                answer_error(r, json_integer_value(id), "this tool does not run on the host");
                return;
        }
        /* The agent keeps the budget; the host keeps it too for what runs here. */
        if (++r->host_calls > r->o->config->max_tool_calls) {
                char msg[160];

                (void) snprintf(msg, sizeof(msg),
                                "Tool call limit reached (%lld). No more tool calls allowed in "
                                "this execution.",
                                (long long) r->o->config->max_tool_calls);
                answer_error(r, json_integer_value(id), msg);
                return;
        }
        pthread_mutex_lock(&r->lock);
        full = r->calls >= HOST_CALLS_MAX;
        if (!full) {
                r->calls++;
                r->refs++;
        }
        pthread_mutex_unlock(&r->lock);
        if (full) {
                answer_error(r, json_integer_value(id),
                             "too many calls of host tools at once (at most 16)");
                return;
        }
        c = calloc(1, sizeof(*c));
        if (c) {
                *c = (struct host_call){
                        .run = r,
                        .id = json_integer_value(id),
                        .tool = t,
                        .args = json_incref(args),
                };
                if (pthread_attr_init(&attr) == 0) {
                        (void) pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                        if (pthread_create(&th, &attr, host_call_main, c) == 0) {
                                pthread_attr_destroy(&attr);
                                return;
                        }
                        pthread_attr_destroy(&attr);
                }
                json_decref(c->args);
                free(c);
        }
        answer_error(r, json_integer_value(id), "Tool execution failed: cannot start a thread");
        pthread_mutex_lock(&r->lock);
        r->calls--;
        r->refs--;
        pthread_mutex_unlock(&r->lock);
}

/*
 * Wait for the host tool calls still running, after telling them to stop: they use the
 * registry and the configuration, which are the caller's once the run returns. As for a
 * local run, a tool that never ends holds the result (web and MCP calls watch the cancel).
 */
void remote_wait_calls(struct remote_run *r)
{
        remote_signal_tools(r);
        pthread_mutex_lock(&r->lock);
        while (r->calls > 0)
                pthread_cond_wait(&r->calls_done, &r->lock);
        pthread_mutex_unlock(&r->lock);
}
