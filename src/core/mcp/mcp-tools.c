/* SPDX-License-Identifier: MIT */
/*
 * Upstream MCP servers as ptc tools. Each tool's run() forwards the script's
 * call to its server through mcp_client_call(), with the execution's
 * deadline and cancel fd, so an upstream that hangs cannot hold the script
 * past its deadline.
 */

#include "core/mcp/mcp-tools.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/diag.h"
#include "basic/strv.h"
#include "core/mcp/mcp-client.h"
#include "core/tools/tool.h"

/* Registry names longer than this are cut (the config's tool-name cap). */
#define MCP_TOOL_NAME_MAX 200

struct upstream_tool {
        struct mcp_client *client; /* borrowed from the owning mcp_upstreams */
        char *tool;                /* the server's own name for it */
};

struct mcp_upstreams {
        struct mcp_client **clients;
        size_t n_clients;

        /*
         * The thread that started the servers, alive until they are stopped. Two reasons:
         * a server dies with the thread that forked it (PR_SET_PDEATHSIG), and it must not
         * be a child of the main thread, where ptc run looks for the execution's orphans
         * (proc-tree.c) and would kill and reap it as one of them.
         */
        pthread_t spawner;
        bool has_spawner;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool started, stop;
        const struct ptc_config *config; /* for the spawner; borrowed during start only */
        char *const *env;
        char **warnings;
        int error;
        struct upstream_tool *uts; /* userdata of extra[i] */
        struct registry_extra_tool *extra;
        char **names, **returns; /* owned strings behind extra[] */
        size_t n_tools;
};

char *mcp_upstream_tool_name(const char *server, const char *tool)
{
        char *s = NULL;

        if (asprintf(&s, "%s_%s", server, tool) < 0)
                return NULL;
        for (char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                      (*p >= '0' && *p <= '9') || *p == '_'))
                        *p = '_';
        if (strlen(s) > MCP_TOOL_NAME_MAX)
                s[MCP_TOOL_NAME_MAX] = 0;
        return s;
}

/*
 * The stubs send every parameter, JSON null for "not given" (tool.h). An MCP
 * server validates its arguments against its schema, where an optional
 * parameter is absent, not null: drop the nulls.
 */
static json_t *without_nulls(json_t *args)
{
        json_t *copy = json_object(), *v;
        const char *k;

        if (!copy)
                return NULL;
        json_object_foreach(args, k, v) if (!json_is_null(v) && json_object_set(copy, k, v) < 0)
        {
                json_decref(copy);
                return NULL;
        }
        return copy;
}

static int upstream_run(const struct tool *t, const struct tool_ctx *ctx, json_t *args,
                        json_t **ret_result)
{
        const struct upstream_tool *ut = t->userdata;
        json_auto_t *clean = without_nulls(args);

        if (!clean)
                return -ENOMEM;
        return mcp_client_call(ut->client, ut->tool, clean, ctx->deadline, ctx->cancel_fd,
                               ret_result);
}

struct mcp_upstreams *mcp_upstreams_free(struct mcp_upstreams *u)
{
        if (!u)
                return NULL;
        /* Stop the servers first, then let their spawning thread go. */
        for (size_t i = 0; i < u->n_clients; i++)
                mcp_client_free(u->clients[i]);
        if (u->has_spawner) {
                pthread_mutex_lock(&u->lock);
                u->stop = true;
                pthread_cond_broadcast(&u->cond);
                pthread_mutex_unlock(&u->lock);
                (void) pthread_join(u->spawner, NULL);
        }
        strv_free(u->warnings);
        for (size_t i = 0; i < u->n_tools; i++) {
                free(u->uts[i].tool);
                free(u->names[i]);
                free(u->returns[i]);
        }
        free(u->clients);
        free(u->uts);
        free(u->extra);
        free(u->names);
        free(u->returns);
        free(u);
        return NULL;
}

static int add_tools(struct mcp_upstreams *u, struct mcp_client *c)
{
        size_t n = mcp_client_tool_count(c), total = u->n_tools + n;
        void *p;

        if (n == 0)
                return 0;
        p = realloc(u->uts, total * sizeof(*u->uts));
        if (!p)
                return -ENOMEM;
        u->uts = p;
        p = realloc(u->extra, total * sizeof(*u->extra));
        if (!p)
                return -ENOMEM;
        u->extra = p;
        p = realloc(u->names, total * sizeof(*u->names));
        if (!p)
                return -ENOMEM;
        u->names = p;
        p = realloc(u->returns, total * sizeof(*u->returns));
        if (!p)
                return -ENOMEM;
        u->returns = p;

        for (size_t i = 0; i < n; i++) {
                const struct mcp_upstream_tool *mt = mcp_client_tool(c, i);
                size_t k = u->n_tools;

                u->uts[k] = (struct upstream_tool){.client = c, .tool = strdup(mt->name)};
                u->names[k] = mcp_upstream_tool_name(mcp_client_name(c), mt->name);
                u->returns[k] = NULL;
                if (asprintf(&u->returns[k],
                             "Returns the result of tool '%s' of MCP server '%s' (its structured "
                             "content, its text parsed as JSON, or {\"text\": ...})",
                             mt->name, mcp_client_name(c)) < 0)
                        u->returns[k] = NULL;
                u->n_tools++; /* counted now: mcp_upstreams_free() releases what was made */
                if (!u->uts[k].tool || !u->names[k] || !u->returns[k])
                        return -ENOMEM;
                u->extra[k] = (struct registry_extra_tool){
                        .name = u->names[k],
                        .description = mt->description,
                        .parameters = mt->input_schema,
                        .returns = u->returns[k],
                        .run = upstream_run,
                        .userdata = &u->uts[k],
                };
        }
        /* realloc may have moved uts[]: point every extra at its entry again. */
        for (size_t k = 0; k < u->n_tools; k++)
                u->extra[k].userdata = &u->uts[k];
        return 0;
}

static int start_all(struct mcp_upstreams *u)
{
        const struct ptc_config *c = u->config;
        int r;

        if (c->n_mcp_servers > 0) {
                u->clients = calloc(c->n_mcp_servers, sizeof(*u->clients));
                if (!u->clients)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < c->n_mcp_servers; i++) {
                struct mcp_client *client = NULL;
                struct diag d = {};

                r = mcp_client_start(&c->mcp_servers[i], u->env, USEC_INFINITY, &client, &d);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        char *w;

                        if (asprintf(&w, "%s; its tools are left out",
                                     d.message[0] ? d.message : "an MCP server did not start") <
                                    0 ||
                            strv_consume(&u->warnings, w) < 0)
                                return -ENOMEM;
                        continue;
                }
                /*
                 * Started, with a note when it advertised tools ptc did not take (invalid
                 * entries, more than it takes): they are left out, and the user hears of it.
                 */
                if (d.message[0] && strv_extend(&u->warnings, d.message) < 0)
                        return -ENOMEM;
                u->clients[u->n_clients++] = client;
                r = add_tools(u, client);
                if (r < 0)
                        return r;
        }
        return 0;
}

static void *spawner_main(void *userdata)
{
        struct mcp_upstreams *u = userdata;
        int r = start_all(u);

        pthread_mutex_lock(&u->lock);
        u->error = r;
        u->started = true;
        pthread_cond_broadcast(&u->cond);
        /* Woken by mcp_upstreams_free() once the servers are stopped. */
        while (!u->stop)
                pthread_cond_wait(&u->cond, &u->lock);
        pthread_mutex_unlock(&u->lock);
        return NULL;
}

int mcp_upstreams_start(const struct ptc_config *c, char *const *env, struct mcp_upstreams **ret,
                        char ***ret_warnings)
{
        _cleanup_(mcp_upstreams_freep) struct mcp_upstreams *u = NULL;
        int r;

        u = calloc(1, sizeof(*u));
        if (!u)
                return -ENOMEM;
        pthread_mutex_init(&u->lock, NULL);
        pthread_cond_init(&u->cond, NULL);
        u->config = c;
        u->env = env;
        r = pthread_create(&u->spawner, NULL, spawner_main, u);
        if (r != 0)
                return -r;
        u->has_spawner = true;
        /* Each start is bounded (mcp_client_start's budget), so this wait ends. */
        pthread_mutex_lock(&u->lock);
        while (!u->started)
                pthread_cond_wait(&u->cond, &u->lock);
        r = u->error;
        pthread_mutex_unlock(&u->lock);
        u->config = NULL;
        u->env = NULL;
        if (r < 0)
                return r;
        if (ret_warnings)
                for (char **w = u->warnings; w && *w; w++)
                        if (strv_extend(ret_warnings, *w) < 0)
                                return -ENOMEM;
        *ret = TAKE_PTR(u);
        return 0;
}

const struct registry_extra_tool *mcp_upstreams_tools(const struct mcp_upstreams *u, size_t *ret_n)
{
        *ret_n = u ? u->n_tools : 0;
        return u ? u->extra : NULL;
}
