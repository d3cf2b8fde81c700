/* SPDX-License-Identifier: MIT */
/*
 * mcp_servers: the upstream MCP servers, a mapping of server names to their command,
 * args, env and cwd. The server names are checked here; each server's keys are walked by
 * config_parse_mapping() (config-sections.c) with the table below.
 */

#include "core/config/config-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/strv.h"

static int parse_mcp_command(struct ctx *x, const struct key_spec *k, const char *key,
                             const struct node *v, void *target)
{
        struct mcp_server_config *s = target;
        char *d;
        int r;

        r = config_value_string(x, v, key, false, &d);
        if (r < 0)
                return r;
        config_replace_string(&s->command, d);
        return 0;
}

static int parse_mcp_cwd(struct ctx *x, const struct key_spec *k, const char *key,
                         const struct node *v, void *target)
{
        struct mcp_server_config *s = target;
        char *d;
        int r;

        r = config_value_string(x, v, key, true, &d);
        if (r < 0)
                return r;
        config_replace_string(&s->cwd, d);
        return 0;
}

/* args: a sequence of strings (empty strings allowed, they are real argv entries). */
static int parse_mcp_args(struct ctx *x, const struct key_spec *k, const char *key,
                          const struct node *v, void *target)
{
        struct mcp_server_config *s = target;
        _cleanup_strv_free_ char **l = NULL;
        int r;

        l = config_strv_new_empty();
        if (!l)
                return -ENOMEM;
        if (!node_is_null(v)) {
                if (v->type != NODE_SEQUENCE)
                        return config_fail_value(x, v, key, "a sequence of strings");
                if (v->n_items > CONFIG_MAX_LIST)
                        return config_fail(x, v->line, key, "too many entries (at most %d)",
                                           CONFIG_MAX_LIST);
                for (size_t i = 0; i < v->n_items; i++) {
                        char ikey[ESCAPED_MAX + 400];
                        const char *a;

                        (void) snprintf(ikey, sizeof(ikey), "%s[%zu]", key, i);
                        r = config_scalar_text(x, v->items[i], ikey, "a string", false, &a);
                        if (r < 0)
                                return r;
                        r = strv_extend(&l, a);
                        if (r < 0)
                                return r;
                }
        }
        config_replace_strv(&s->args, TAKE_PTR(l));
        return 0;
}

/* env: a mapping NAME: value, stored as "NAME=value". */
static int parse_mcp_env(struct ctx *x, const struct key_spec *k, const char *key,
                         const struct node *v, void *target)
{
        struct mcp_server_config *s = target;
        _cleanup_strv_free_ char **l = NULL;
        int r;

        l = config_strv_new_empty();
        if (!l)
                return -ENOMEM;
        if (!node_is_null(v)) {
                if (v->type != NODE_MAPPING)
                        return config_fail_value(
                                x, v, key, "a mapping of environment variable names to strings");
                if (v->n_items / 2 > CONFIG_MAX_MCP_ENV)
                        return config_fail(x, v->line, key, "too many entries (at most %d)",
                                           CONFIG_MAX_MCP_ENV);
                for (size_t i = 0; i + 1 < v->n_items; i += 2) {
                        const struct node *kn = v->items[i], *vn = v->items[i + 1];
                        char ikey[ESCAPED_MAX + 400];
                        const char *val;
                        char *e;

                        if (kn->type == NODE_ALIAS)
                                return config_fail_alias(x, kn, key);
                        if (kn->type != NODE_SCALAR || memchr(kn->text, 0, kn->len) ||
                            !config_is_env_name(kn->text, kn->len))
                                return config_fail_value(x, kn, key,
                                                         "environment variable " ENV_NAME_ALLOWED);
                        (void) snprintf(ikey, sizeof(ikey), "%s.%s", key, kn->text);
                        for (size_t j = 0; j < i; j += 2)
                                if (node_text_is(v->items[j], kn->text))
                                        return config_fail(x, kn->line, ikey, "duplicate key");
                        r = config_scalar_text(x, vn, ikey, "a string", false, &val);
                        if (r < 0)
                                return r;
                        if (asprintf(&e, "%s=%s", kn->text, val) < 0)
                                return -ENOMEM;
                        r = strv_consume(&l, e);
                        if (r < 0)
                                return r;
                }
        }
        config_replace_strv(&s->env, TAKE_PTR(l));
        return 0;
}

static const struct key_spec mcp_server_keys[] = {
        {"command", parse_mcp_command, 0, 0, 0},
        {"args", parse_mcp_args, 0, 0, 0},
        {"env", parse_mcp_env, 0, 0, 0},
        {"cwd", parse_mcp_cwd, 0, 0, 0},
};

#define SERVER_NAME_ALLOWED "names matching [A-Za-z0-9_-]+, at most 64 characters"

static bool is_server_name(const char *s, size_t n)
{
        if (n == 0 || n > CONFIG_MAX_NAME)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!(is_ascii_alpha(s[i]) || is_ascii_digit(s[i]) || s[i] == '_' || s[i] == '-'))
                        return false;
        return true;
}

static int parse_mcp_server(struct ctx *x, const struct node *kn, const struct node *vn,
                            struct mcp_server_config *s)
{
        char key[128];
        int r;

        s->name = strndup(kn->text, kn->len);
        s->args = config_strv_new_empty();
        s->env = config_strv_new_empty();
        if (!s->name || !s->args || !s->env)
                return -ENOMEM;

        (void) snprintf(key, sizeof(key), "mcp_servers.%s", s->name);
        r = config_parse_mapping(x, key, vn, mcp_server_keys, ELEMENTSOF(mcp_server_keys), s);
        if (r < 0)
                return r;
        if (!s->command)
                return config_fail(x, kn->line, key, "missing required key 'command' (allowed: %s)",
                                   "command, args, env, cwd");
        return 0;
}

static int parse_mcp_servers_into(struct ctx *x, const struct node *n,
                                  struct mcp_server_config *servers, size_t *n_servers)
{
        const char *section = "mcp_servers";
        int r;

        for (size_t i = 0; i + 1 < n->n_items; i += 2) {
                const struct node *kn = n->items[i], *vn = n->items[i + 1];

                if (kn->type == NODE_ALIAS)
                        return config_fail_alias(x, kn, section);
                if (kn->type != NODE_SCALAR || memchr(kn->text, 0, kn->len) ||
                    !is_server_name(kn->text, kn->len))
                        return kn->type == NODE_SCALAR
                                       ? config_fail_text(x, kn->line, section, "server name",
                                                          kn->text, kn->len, SERVER_NAME_ALLOWED)
                                       : config_fail_value(x, kn, section, "a server name");
                for (size_t j = 0; j < *n_servers; j++)
                        if (strcmp(servers[j].name, kn->text) == 0)
                                return config_fail(x, kn->line, section,
                                                   "duplicate server name '%s'", kn->text);

                /* Count it before parsing, so a half-filled entry is freed too. */
                r = parse_mcp_server(x, kn, vn, &servers[(*n_servers)++]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* mcp_servers replaces the whole list; null means none. */
int config_parse_mcp_servers(struct ctx *x, const struct node *n)
{
        struct ptc_config *c = x->c;
        struct mcp_server_config *servers = NULL;
        size_t n_pairs, n_servers = 0;
        int r;

        if (n->type != NODE_MAPPING && !node_is_null(n))
                return config_fail_value(x, n, "mcp_servers",
                                         "a mapping of server names to settings");
        n_pairs = node_is_null(n) ? 0 : n->n_items / 2;
        if (n_pairs > CONFIG_MAX_MCP_SERVERS)
                return config_fail(x, n->line, "mcp_servers", "too many servers (at most %d)",
                                   CONFIG_MAX_MCP_SERVERS);
        if (n_pairs > 0) {
                servers = calloc(n_pairs, sizeof(*servers));
                if (!servers)
                        return -ENOMEM;
                r = parse_mcp_servers_into(x, n, servers, &n_servers);
                if (r < 0) {
                        config_mcp_servers_free(servers, n_servers);
                        return r;
                }
        }
        config_mcp_servers_free(c->mcp_servers, c->n_mcp_servers);
        c->mcp_servers = servers;
        c->n_mcp_servers = n_servers;
        return 0;
}
