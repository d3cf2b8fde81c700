/* SPDX-License-Identifier: MIT */
/*
 * code_execution.backend: where scripts run (docs/remote.md), a SPEC or a list of them (a
 * pool), each checked as the run will parse it (remote/backend.h); code_execution.remote_cwd:
 * the script's directory there.
 */

#include "core/config/config-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/strv.h"
#include "core/remote/backend.h"

/* One SPEC (docs/remote.md), checked as the run will parse it. */
static int check_backend(struct ctx *x, const struct node *v, const char *key, const char *s)
{
        _cleanup_backend_ struct backend *b = NULL;
        struct diag why = {};
        int r = backend_parse(s, &b, &why);

        if (r == -ENOMEM)
                return r;
        return r < 0 ? config_fail(x, v->line, key, "%s", why.message) : 0;
}

/* backend: a SPEC, or a sequence of SPECs (a pool); local alone is none. */
int config_parse_backend_key(struct ctx *x, const struct key_spec *k, const char *key,
                             const struct node *v, void *target)
{
        struct ptc_config *c = target;
        _cleanup_strv_free_ char **l = NULL;
        int r;

        if (v->type == NODE_SEQUENCE) {
                if (v->n_items == 0 || v->n_items > CONFIG_MAX_BACKENDS)
                        return config_fail(x, v->line, key, "a pool has 1 to %d backends (got %zu)",
                                           CONFIG_MAX_BACKENDS, v->n_items);
                for (size_t i = 0; i < v->n_items; i++) {
                        const struct node *it = v->items[i];
                        char ikey[300];
                        char *d;

                        (void) snprintf(ikey, sizeof(ikey), "%s[%zu]", key, i);
                        r = config_value_string(x, it, ikey, false, &d);
                        if (r < 0)
                                return r;
                        r = check_backend(x, it, ikey, d);
                        if (r >= 0 && strcmp(d, "local") == 0)
                                r = config_fail(x, it->line, ikey,
                                                "a pool is of remote targets: 'local' cannot "
                                                "be one");
                        if (r < 0 || (r = strv_consume(&l, d)) < 0) {
                                if (r != -ENOMEM)
                                        free(d);
                                return r;
                        }
                }
        } else {
                char *d;

                r = config_value_string(x, v, key, false, &d);
                if (r < 0)
                        return r;
                r = check_backend(x, v, key, d);
                if (r < 0) {
                        free(d);
                        return r;
                }
                if (strcmp(d, "local") == 0)
                        free(d); /* the default: no list */
                else if ((r = strv_consume(&l, d)) < 0)
                        return r;
        }
        config_replace_strv(&c->backends, TAKE_PTR(l));
        return 0;
}

/*
 * remote_cwd: a path on the target, which only the target can check (the agent makes it the
 * run's working directory, relative to where the channel's shell starts); null is that start.
 */
int config_parse_remote_cwd_key(struct ctx *x, const struct key_spec *k, const char *key,
                                const struct node *v, void *target)
{
        struct ptc_config *c = target;
        char *d;
        int r;

        r = config_value_string(x, v, key, true, &d);
        if (r < 0)
                return r;
        config_replace_string(&c->remote_cwd, d);
        return 0;
}
