/* SPDX-License-Identifier: MIT */
#include "core/registry/registry.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/strv.h"
#include "core/registry/registry-internal.h"

/* More definitions or enabled names than this is a bug or hostile input, not a configuration. */
#define REGISTRY_MAX_TOOLS 4096
/* Longest tool name we echo back in a message, so one bad name cannot crowd out the rest. */
#define REGISTRY_NAME_ECHO_MAX 128

struct registry {
        struct tool *tools; /* sorted by name */
        size_t n;
};

static bool is_known(const char *name)
{
        for (size_t i = 0; tool_known_names[i]; i++)
                if (strcmp(tool_known_names[i], name) == 0)
                        return true;
        return false;
}

static void tool_release(struct tool *t)
{
        free(t->name);
        free(t->description);
        free(t->returns);
        json_decref(t->parameters);
        *t = (struct tool){};
}

struct registry *registry_free(struct registry *r)
{
        if (!r)
                return NULL;
        for (size_t i = 0; i < r->n; i++)
                tool_release(&r->tools[i]);
        free(r->tools);
        free(r);
        return NULL;
}

static int cmp_str_ptr(const void *a, const void *b)
{
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

static int cmp_tool(const void *a, const void *b)
{
        return strcmp(((const struct tool *) a)->name, ((const struct tool *) b)->name);
}

/* "a, b, ..." of every name ptc knows or this build defines, for messages. */
static char *known_names(const struct tool_def *const *defs, size_t n)
{
        _cleanup_free_ const char **names = NULL;
        _cleanup_buf_ struct buf b = BUF_INIT(4096);
        size_t k = 0, n_known = strv_length((char *const *) tool_known_names);

        names = calloc(n_known + n + 1, sizeof(*names));
        if (!names)
                return NULL;
        for (size_t i = 0; i < n_known; i++)
                names[k++] = tool_known_names[i];
        for (size_t i = 0; i < n; i++)
                names[k++] = defs[i]->name;
        qsort(names, k, sizeof(*names), cmp_str_ptr);

        for (size_t i = 0; i < k; i++) {
                if (i > 0 && strcmp(names[i], names[i - 1]) == 0)
                        continue;
                /* Running into the cap only shortens the message. */
                if (buf_printf(&b, "%s%s", b.len ? ", " : "", names[i]) == -ENOMEM)
                        return NULL;
        }
        return buf_steal(&b, NULL);
}

static ssize_t find_def(const struct tool_def *const *defs, size_t n, const char *name)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(defs[i]->name, name) == 0)
                        return (ssize_t) i;
        return -1;
}

static int check_defs(const struct tool_def *const *defs, size_t n, struct diag *reterr)
{
        if (n > REGISTRY_MAX_TOOLS)
                return diag_set(reterr, -E2BIG, "too many tool definitions (%zu, at most %d)", n,
                                REGISTRY_MAX_TOOLS);
        for (size_t i = 0; i < n; i++) {
                if (!defs[i] || !defs[i]->name || !defs[i]->name[0])
                        return diag_set(reterr, -EINVAL, "tool definition %zu has no name", i);
                if (find_def(defs, i, defs[i]->name) >= 0)
                        return diag_set(reterr, -EINVAL, "tool '%.*s' is defined twice",
                                        REGISTRY_NAME_ECHO_MAX, defs[i]->name);
        }
        return 0;
}

static int tool_from_def(const struct tool_def *def, struct tool *ret, struct diag *reterr)
{
        _cleanup_(tool_release) struct tool t = {};
        json_error_t jerr;

        t.name = strdup(def->name);
        t.description = strdup(def->description ?: "");
        t.returns = strdup(def->returns ?: "");
        if (!t.name || !t.description || !t.returns)
                return -ENOMEM;
        t.run = def->run;
        t.dropped_args = def->dropped_args;
        t.quick = def->quick;
        t.runs_on_host = def->runs_on_host;
        t.refusal_fields_json = def->refusal_fields_json;

        if (def->parameters_json) {
                /* A builtin schema that does not parse is a bug in ptc: fail loudly at build. */
                t.parameters = json_loads(def->parameters_json, JSON_REJECT_DUPLICATES, &jerr);
                if (!t.parameters)
                        return diag_set(reterr, -EINVAL,
                                        "tool '%.*s': invalid parameters schema: %d:%d: %s",
                                        REGISTRY_NAME_ECHO_MAX, def->name, jerr.line, jerr.column,
                                        jerr.text);
                if (!json_is_object(t.parameters))
                        return diag_set(reterr, -EINVAL,
                                        "tool '%.*s': parameters schema is not a JSON object",
                                        REGISTRY_NAME_ECHO_MAX, def->name);
        } else {
                t.parameters = json_pack("{s:s, s:{}}", "type", "object", "properties");
                if (!t.parameters)
                        return -ENOMEM;
        }

        *ret = t;
        t = (struct tool){};
        return 0;
}

int registry_new_from_defs(const struct tool_def *const *defs, size_t n, char *const *enabled,
                           struct registry **ret, char ***ret_warnings, struct diag *reterr)
{
        _cleanup_(registry_freep) struct registry *r = NULL;
        _cleanup_strv_free_ char **warnings = NULL;
        _cleanup_free_ bool *selected = NULL;
        size_t n_selected = 0;
        int k;

        if (!ret || (n > 0 && !defs))
                return -EINVAL;

        k = check_defs(defs, n, reterr);
        if (k < 0)
                return k;

        selected = calloc(n + 1, sizeof(*selected));
        if (!selected)
                return -ENOMEM;

        if (!enabled) {
                for (size_t i = 0; i < n; i++)
                        selected[i] = true;
        } else {
                if (strv_length(enabled) > REGISTRY_MAX_TOOLS)
                        return diag_set(reterr, -E2BIG, "too many enabled tool names (at most %d)",
                                        REGISTRY_MAX_TOOLS);
                for (size_t j = 0; enabled[j]; j++) {
                        const char *name = enabled[j];
                        ssize_t i = find_def(defs, n, name);
                        _cleanup_free_ char *w = NULL;
                        _cleanup_free_ char *known = NULL;

                        if (i >= 0) {
                                selected[i] = true;
                                continue;
                        }
                        if (!is_known(name)) {
                                known = known_names(defs, n);
                                if (!known)
                                        return -ENOMEM;
                                return diag_set(reterr, -EINVAL, "unknown tool '%.*s' (known: %s)",
                                                REGISTRY_NAME_ECHO_MAX, name, known);
                        }
                        /*
                         * Known to ptc but not in this build: leave it out rather than fail, so
                         * a harness that lists every local tool still runs.
                         */
                        if (asprintf(&w, "tool '%s' is not available in this build; left out",
                                     name) < 0)
                                return -ENOMEM;
                        if (strv_contains(warnings, w))
                                continue;
                        k = strv_consume(&warnings, TAKE_PTR(w));
                        if (k < 0)
                                return k;
                }
        }

        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                n_selected += selected[i];
        r->tools = calloc(n_selected + 1, sizeof(*r->tools));
        if (!r->tools)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (!selected[i])
                        continue;
                k = tool_from_def(defs[i], &r->tools[r->n], reterr);
                if (k < 0)
                        return k;
                r->n++;
        }
        qsort(r->tools, r->n, sizeof(*r->tools), cmp_tool);

        *ret = TAKE_PTR(r);
        if (ret_warnings)
                *ret_warnings = TAKE_PTR(warnings);
        return 0;
}

static bool extra_named(const struct registry_extra_tool *extra, size_t n, const char *name)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(extra[i].name, name) == 0)
                        return true;
        return false;
}

/*
 * Whether @parameters names more parameters than REGISTRY_MAX_PARAMS. The stub generator
 * refuses such a tool, and with it the whole module: one extra tool from a hostile or broken
 * MCP server must not take every other tool down with it.
 */
static bool has_too_many_params(json_t *parameters)
{
        /* json_object_size() and json_array_size() are 0 for anything else. */
        return json_object_size(json_object_get(parameters, "properties")) > REGISTRY_MAX_PARAMS ||
               json_array_size(json_object_get(parameters, "required")) > REGISTRY_MAX_PARAMS;
}

/* Append @x to @r (which has room). */
static int add_extra(struct registry *r, const struct registry_extra_tool *x)
{
        struct tool *t = &r->tools[r->n];

        *t = (struct tool){
                .name = strdup(x->name),
                .description = strdup(x->description ?: ""),
                .returns = strdup(x->returns ?: ""),
                .parameters = json_incref(x->parameters),
                .run = x->run,
                .userdata = x->userdata,
                .runs_on_host = true,
        };
        r->n++; /* counted now, so registry_free() releases a half-made entry */
        if (!t->name || !t->description || !t->returns)
                return -ENOMEM;
        if (!t->parameters)
                t->parameters = json_pack("{s:s, s:{}}", "type", "object", "properties");
        return t->parameters ? 0 : -ENOMEM;
}

int registry_new_with(const struct ptc_config *config, char *const *enabled,
                      const struct registry_extra_tool *extra, size_t n_extra,
                      struct registry **ret, char ***ret_warnings, struct diag *reterr)
{
        _cleanup_free_ const struct tool_def **defs = NULL;
        _cleanup_strv_free_ char **warnings = NULL, **builtin_enabled = NULL;
        _cleanup_(registry_freep) struct registry *r = NULL;
        /* No config: the defaults (nothing in the file; the environment may still count). */
        const struct ptc_config *cfg = config ?: &(const struct ptc_config){};
        struct tool *grown;
        size_t n = 0;
        int k;

        if (n_extra > REGISTRY_MAX_TOOLS)
                return diag_set(reterr, -E2BIG, "too many tools (%zu, at most %d)", n_extra,
                                REGISTRY_MAX_TOOLS);
        defs = calloc(tool_builtin_count + 1, sizeof(*defs));
        if (!defs)
                return -ENOMEM;
        /*
         * A tool that cannot work in this configuration (tool_def.usable) is simply not
         * offered by default when it is not configured at all (the model never hears of a
         * tool that cannot work), left out with a warning when it is configured but broken,
         * and an error that says what to configure when it is asked for by name.
         */
        for (size_t i = 0; i < tool_builtin_count; i++) {
                const struct tool_def *def = tool_builtin_defs[i];
                struct diag why = {};

                k = def->usable ? def->usable(cfg, &why) : 0;
                if (k == -ENOMEM)
                        return k;
                if (k < 0) {
                        if (!why.message[0])
                                (void) diag_set(&why, k, "tool '%s' cannot work here: %s",
                                                def->name, strerror(-k));
                        if (enabled && strv_contains(enabled, def->name))
                                return diag_set(reterr, -EINVAL, "%s", why.message);
                        if (!enabled && k != -ENOENT && strv_extend(&warnings, why.message) < 0)
                                return -ENOMEM;
                        continue;
                }
                defs[n++] = def;
        }

        /* The builtin part of an explicit list: the names that are not extra tools. */
        if (enabled) {
                builtin_enabled = calloc(1, sizeof(char *));
                if (!builtin_enabled)
                        return -ENOMEM;
                for (size_t i = 0; enabled[i]; i++)
                        if (!extra_named(extra, n_extra, enabled[i]) &&
                            strv_extend(&builtin_enabled, enabled[i]) < 0)
                                return -ENOMEM;
        }
        k = registry_new_from_defs(defs, n, enabled ? builtin_enabled : NULL, &r, ret_warnings,
                                   reterr);
        if (k < 0)
                return k;

        if (n_extra > 0) {
                grown = realloc(r->tools, (r->n + n_extra + 1) * sizeof(*r->tools));
                if (!grown)
                        return -ENOMEM;
                r->tools = grown;
        }
        for (size_t i = 0; i < n_extra; i++) {
                _cleanup_free_ char *w = NULL;
                bool taken = false;

                if (enabled && !strv_contains(enabled, extra[i].name))
                        continue;
                for (size_t j = 0; j < r->n && !taken; j++)
                        taken = strcmp(r->tools[j].name, extra[i].name) == 0;
                if (taken) {
                        if (asprintf(&w,
                                     "tool '%.*s' is defined twice; the second one is left "
                                     "out",
                                     REGISTRY_NAME_ECHO_MAX, extra[i].name) < 0 ||
                            strv_consume(&warnings, TAKE_PTR(w)) < 0)
                                return -ENOMEM;
                        continue;
                }
                if (has_too_many_params(extra[i].parameters)) {
                        if (asprintf(&w, "tool '%.*s' has more than %d parameters; it is left out",
                                     REGISTRY_NAME_ECHO_MAX, extra[i].name,
                                     REGISTRY_MAX_PARAMS) < 0 ||
                            strv_consume(&warnings, TAKE_PTR(w)) < 0)
                                return -ENOMEM;
                        continue;
                }
                k = add_extra(r, &extra[i]);
                if (k < 0)
                        return k;
        }
        qsort(r->tools, r->n, sizeof(*r->tools), cmp_tool);

        *ret = TAKE_PTR(r);
        if (!ret_warnings)
                return 0;
        for (size_t i = 0; warnings && warnings[i]; i++)
                if (strv_extend(ret_warnings, warnings[i]) < 0)
                        return -ENOMEM;
        return 0;
}

int registry_new(const struct ptc_config *config, char *const *enabled, struct registry **ret,
                 char ***ret_warnings, struct diag *reterr)
{
        return registry_new_with(config, enabled, NULL, 0, ret, ret_warnings, reterr);
}

size_t registry_count(const struct registry *r)
{
        return r ? r->n : 0;
}

const struct tool *registry_get(const struct registry *r, size_t i)
{
        if (!r || i >= r->n)
                return NULL;
        return &r->tools[i];
}

const struct tool *registry_find(const struct registry *r, const char *name)
{
        struct tool key = {.name = (char *) name};

        if (!r || !name || r->n == 0)
                return NULL;
        return bsearch(&key, r->tools, r->n, sizeof(*r->tools), cmp_tool);
}

char *registry_names(const struct registry *r)
{
        _cleanup_buf_ struct buf b = BUF_INIT(SIZE_MAX / 2);

        for (size_t i = 0; i < registry_count(r); i++)
                if (buf_printf(&b, "%s%s", i ? ", " : "", r->tools[i].name) < 0)
                        return NULL;
        return buf_steal(&b, NULL) ?: strdup(""); /* no tools: "", not the ENOMEM NULL */
}

int registry_call_tool(const struct tool *t, const struct tool_ctx *ctx, json_t *args,
                       json_t **ret_result, struct approval_outcome *ret_outcome)
{
        json_auto_t *empty = NULL;
        struct approval_outcome outcome = {};
        struct tool_ctx run_ctx;
        json_t *result = NULL, *refusal = NULL;
        int r;

        if (ret_result)
                *ret_result = NULL;
        if (!t || !ret_result || (args && !json_is_object(args)))
                return -EINVAL;
        if (!args) {
                args = empty = json_object();
                if (!args)
                        return -ENOMEM;
        }
        for (size_t i = 0; t->dropped_args && t->dropped_args[i]; i++)
                (void) json_object_del(args, t->dropped_args[i]);

        if (ctx && ctx->config) {
                const struct approval_call call =
                        tool_ctx_approval_call(ctx, t->name, args, t->refusal_fields_json);

                r = approval_gate(&call, &refusal, &outcome);
                if (r < 0)
                        return r;
                if (ret_outcome)
                        *ret_outcome = outcome;
                if (refusal) {
                        *ret_result = tool_result_finish(ctx->redactor, 0, refusal);
                        return *ret_result ? 0 : -ENOMEM;
                }
                /* A wait for an answer moved the deadline: the tool gets the moved one. */
                run_ctx = *ctx;
                run_ctx.deadline = pause_clock_deadline(ctx->clock, ctx->deadline, NULL);
                run_ctx.gate = &outcome;
                ctx = &run_ctx;
        } else if (ret_outcome)
                *ret_outcome = (struct approval_outcome){.allowed = true, .answered_by = "policy"};

        r = t->run(t, ctx, args, &result);
        if (r >= 0 && ctx && ctx->config)
                approval_note(&outcome, result);
        /* A failed run becomes an error result; known secret values never leave, fail closed. */
        *ret_result = tool_result_finish(ctx ? ctx->redactor : NULL, r, result);
        return *ret_result ? 0 : -ENOMEM;
}

int registry_call(const struct registry *r, const char *name, const struct tool_ctx *ctx,
                  json_t *args, json_t **ret_result)
{
        const struct tool *t = registry_find(r, name);

        if (!t) {
                if (ret_result)
                        *ret_result = NULL;
                return -ENOENT;
        }
        return registry_call_tool(t, ctx, args, ret_result, NULL);
}
