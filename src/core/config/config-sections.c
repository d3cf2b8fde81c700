/* SPDX-License-Identifier: MIT */
/*
 * The sections of the file and their keys: one parser per key that needs its
 * own, the key tables with their bounds, the walk over a section's mapping,
 * the cross-key check of the terminal timeouts, and the top level (a warning
 * for a section name close to a known one).
 */

#include "core/config/config-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "basic/strv.h"

/* ---- sections ----------------------------------------------------------------------------- */

static const char *const search_provider_words[] = {
        "searxng", "brave", "tavily", "firecrawl", "exa",
};

static const char *const extract_provider_words[] = {
        "builtin",
        "firecrawl",
        "tavily",
        "exa",
};

static const char *const backend_words[] = {
        "local",
};

static int parse_int_key(struct ctx *x, const struct key_spec *k, const char *key,
                         const struct node *v, void *target)
{
        return config_value_int(x, v, key, k->min, k->max,
                                (int64_t *) ((char *) target + k->offset));
}

static int parse_bool_key(struct ctx *x, const struct key_spec *k, const char *key,
                          const struct node *v, void *target)
{
        return config_value_bool(x, v, key, (bool *) ((char *) target + k->offset));
}

/*
 * Walk the mapping @n with the keys in @keys. Null is an empty section; an
 * unknown or repeated key is an error (a typo must not silently keep the
 * default).
 */
int config_parse_mapping(struct ctx *x, const char *prefix, const struct node *n,
                         const struct key_spec *keys, size_t n_keys, void *target)
{
        bool seen[MAX_SECTION_KEYS] = {};
        char allowed[256] = "";
        size_t o = 0;
        int r;

        if (node_is_null(n))
                return 0;
        if (n->type != NODE_MAPPING)
                return config_fail_value(x, n, prefix, "a mapping");

        for (size_t j = 0; j < n_keys && j < MAX_SECTION_KEYS && o < sizeof(allowed); j++)
                o += (size_t) snprintf(allowed + o, sizeof(allowed) - o, "%s%s", j ? ", " : "",
                                       keys[j].name);

        for (size_t i = 0; i + 1 < n->n_items; i += 2) {
                const struct node *k = n->items[i], *v = n->items[i + 1];
                char esc[ESCAPED_MAX], key[ESCAPED_MAX + 256];
                size_t j;

                if (k->type == NODE_ALIAS)
                        return config_fail_alias(x, k, prefix);
                if (k->type != NODE_SCALAR)
                        return config_fail(x, k->line, prefix,
                                           "expected a key name, got %s (allowed: %s)",
                                           node_kind(k), allowed);

                (void) snprintf(key, sizeof(key), "%s.%s", prefix,
                                config_escape_text(k->text, k->len, esc, sizeof(esc)));
                for (j = 0; j < n_keys && j < MAX_SECTION_KEYS; j++)
                        if (node_text_is(k, keys[j].name))
                                break;
                if (j >= n_keys || j >= MAX_SECTION_KEYS) {
                        const char *near = config_closest_name(
                                k->text, k->len, keys, MIN(n_keys, (size_t) MAX_SECTION_KEYS),
                                sizeof(*keys));

                        if (near)
                                return config_fail(x, k->line, key,
                                                   "unknown key (did you mean '%s'? allowed: %s)",
                                                   near, allowed);
                        return config_fail(x, k->line, key, "unknown key (allowed: %s)", allowed);
                }
                if (seen[j])
                        return config_fail(x, k->line, key, "duplicate key");
                seen[j] = true;

                r = keys[j].parse(x, &keys[j], key, v, target);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* code_execution */

/* A number of seconds, > 0 and <= k->max, into the double at k->offset. */
static int parse_seconds_key(struct ctx *x, const struct key_spec *k, const char *key,
                             const struct node *v, void *target)
{
        char allowed[96];
        const char *s;
        double d;
        int r;

        (void) snprintf(allowed, sizeof(allowed),
                        "a number of seconds greater than 0 and at most %lld", (long long) k->max);
        r = config_scalar_text(x, v, key, allowed, false, &s);
        if (r < 0)
                return r;
        if (!config_parse_number_literal(s, v->len, &d) || !(d > 0) || d > (double) k->max)
                return config_fail_value(x, v, key, allowed);
        *(double *) ((char *) target + k->offset) = d;
        return 0;
}

static int parse_mode_key(struct ctx *x, const struct key_spec *k, const char *key,
                          const struct node *v, void *target)
{
        struct ptc_config *c = target;
        size_t i;
        int r;

        r = config_value_word(x, v, key, config_mode_words, ELEMENTSOF(config_mode_words), &i);
        if (r < 0)
                return r;
        c->mode = (enum ptc_mode) i;
        return 0;
}

static int parse_module_name(struct ctx *x, const struct key_spec *k, const char *key,
                             const struct node *v, void *target)
{
        /* json, os and sys are imported by the generated module itself; shadowing breaks it. */
        const char *allowed = "a Python identifier of at most 64 characters, not a keyword, "
                              "not json, os or sys";
        struct ptc_config *c = target;
        const char *s;
        char *d;
        int r;

        r = config_scalar_text(x, v, key, allowed, false, &s);
        if (r < 0)
                return r;
        if (v->len > CONFIG_MAX_NAME || !config_is_python_identifier(s) || strcmp(s, "json") == 0 ||
            strcmp(s, "os") == 0 || strcmp(s, "sys") == 0)
                return config_fail_value(x, v, key, allowed);
        d = strdup(s);
        if (!d)
                return -ENOMEM;
        config_replace_string(&c->module_name, d);
        return 0;
}

static int parse_python(struct ctx *x, const struct key_spec *k, const char *key,
                        const struct node *v, void *target)
{
        struct ptc_config *c = target;
        char *d;
        int r;

        r = config_value_string(x, v, key, false, &d);
        if (r < 0)
                return r;
        config_replace_string(&c->python, d);
        return 0;
}

/*
 * Builtin tools are [a-z0-9_]; upstream MCP tools are <server>_<tool> with
 * whatever case the server uses (getUser), hence upper case and the longer cap.
 */
#define CONFIG_MAX_TOOL_NAME 200

static bool is_tool_name(const char *s, size_t n)
{
        if (n == 0 || n > CONFIG_MAX_TOOL_NAME)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
                      is_ascii_digit(s[i]) || s[i] == '_'))
                        return false;
        return true;
}

#define TOOL_NAME_ALLOWED "tool names matching [A-Za-z0-9_]+, at most 200 characters"

/* Append @s (@n bytes) to @l unless it is already there. */
static int strv_add_unique(char ***l, const char *s, size_t n)
{
        char *d;

        for (char **p = *l; p && *p; p++)
                if (strlen(*p) == n && memcmp(*p, s, n) == 0)
                        return 0;
        d = strndup(s, n);
        if (!d)
                return -ENOMEM;
        return strv_consume(l, d);
}

/*
 * tools: a sequence of names, or one string of comma-separated names (what
 * --tools takes on the command line). [] and "" mean no tools at all; null
 * means the default set. Duplicates are dropped. Whether a name is a real
 * tool is the registry's business.
 */
static int parse_tools(struct ctx *x, const struct key_spec *k, const char *key,
                       const struct node *v, void *target)
{
        struct ptc_config *c = target;
        _cleanup_strv_free_ char **l = NULL;
        int r;

        if (node_is_null(v)) {
                config_replace_strv(&c->tools, NULL);
                return 0;
        }

        l = config_strv_new_empty();
        if (!l)
                return -ENOMEM;

        if (v->type == NODE_SCALAR) {
                const char *s, *p;

                r = config_scalar_text(x, v, key, "a sequence of " TOOL_NAME_ALLOWED, false, &s);
                if (r < 0)
                        return r;
                p = s;
                for (;;) {
                        const char *f = p, *comma = strchr(p, ',');
                        size_t n = comma ? (size_t) (comma - p) : strlen(p);

                        trim(&f, &n);
                        if (n > 0) {
                                if (!is_tool_name(f, n))
                                        return config_fail_text(x, v->line, key, "value", f, n,
                                                                TOOL_NAME_ALLOWED);
                                if (strv_length(l) >= CONFIG_MAX_LIST)
                                        return config_fail(x, v->line, key,
                                                           "too many entries (at most %d)",
                                                           CONFIG_MAX_LIST);
                                r = strv_add_unique(&l, f, n);
                                if (r < 0)
                                        return r;
                        }
                        if (!comma)
                                break;
                        p = comma + 1;
                }
        } else if (v->type == NODE_SEQUENCE) {
                if (v->n_items > CONFIG_MAX_LIST)
                        return config_fail(x, v->line, key, "too many entries (at most %d)",
                                           CONFIG_MAX_LIST);
                for (size_t i = 0; i < v->n_items; i++) {
                        const struct node *it = v->items[i];
                        char ikey[ESCAPED_MAX + 300];
                        const char *s;

                        (void) snprintf(ikey, sizeof(ikey), "%s[%zu]", key, i);
                        r = config_scalar_text(x, it, ikey, TOOL_NAME_ALLOWED, false, &s);
                        if (r < 0)
                                return r;
                        if (!is_tool_name(s, it->len))
                                return config_fail_value(x, it, ikey, TOOL_NAME_ALLOWED);
                        r = strv_add_unique(&l, s, it->len);
                        if (r < 0)
                                return r;
                }
        } else
                return config_fail_value(x, v, key, "a sequence of " TOOL_NAME_ALLOWED);

        config_replace_strv(&c->tools, TAKE_PTR(l));
        return 0;
}

static const struct key_spec code_execution_keys[] = {
        {"timeout", parse_seconds_key, offsetof(struct ptc_config, timeout), 0, CONFIG_MAX_SECONDS},
        {"max_tool_calls", parse_int_key, offsetof(struct ptc_config, max_tool_calls), 0,
         1000000000},
        {"mode", parse_mode_key, 0, 0, 0},
        {"module_name", parse_module_name, 0, 0, 0},
        {"max_stdout_bytes", parse_int_key, offsetof(struct ptc_config, max_stdout_bytes), 100,
         100000000},
        {"max_stderr_bytes", parse_int_key, offsetof(struct ptc_config, max_stderr_bytes), 0,
         100000000},
        {"python", parse_python, 0, 0, 0},
        {"tools", parse_tools, 0, 0, 0},
        {"backend", config_parse_backend_key, 0, 0, 0},
        {"backend_concurrency", parse_int_key, offsetof(struct ptc_config, backend_concurrency), 1,
         1024},
        {"remote_cwd", config_parse_remote_cwd_key, 0, 0, 0},
};

/* terminal */

bool config_is_env_name(const char *s, size_t n)
{
        return n <= CONFIG_MAX_ENV_NAME && config_is_c_identifier(s, n);
}

/* env_passthrough: a sequence of variable names; null is the empty list. */
static int parse_env_passthrough(struct ctx *x, const struct key_spec *k, const char *key,
                                 const struct node *v, void *target)
{
        struct ptc_config *c = target;
        _cleanup_strv_free_ char **l = NULL;
        int r;

        l = config_strv_new_empty();
        if (!l)
                return -ENOMEM;
        if (!node_is_null(v)) {
                if (v->type != NODE_SEQUENCE)
                        return config_fail_value(
                                x, v, key, "a sequence of environment variable " ENV_NAME_ALLOWED);
                if (v->n_items > CONFIG_MAX_LIST)
                        return config_fail(x, v->line, key, "too many entries (at most %d)",
                                           CONFIG_MAX_LIST);
                for (size_t i = 0; i < v->n_items; i++) {
                        const struct node *it = v->items[i];
                        char ikey[ESCAPED_MAX + 300];
                        const char *s;

                        (void) snprintf(ikey, sizeof(ikey), "%s[%zu]", key, i);
                        r = config_scalar_text(x, it, ikey, ENV_NAME_ALLOWED, false, &s);
                        if (r < 0)
                                return r;
                        if (!config_is_env_name(s, it->len))
                                return config_fail_value(x, it, ikey, ENV_NAME_ALLOWED);
                        r = strv_add_unique(&l, s, it->len);
                        if (r < 0)
                                return r;
                }
        }
        config_replace_strv(&c->env_passthrough, TAKE_PTR(l));
        return 0;
}

static int parse_terminal_timeout(struct ctx *x, const struct key_spec *k, const char *key,
                                  const struct node *v, void *target)
{
        x->terminal_timeout_line = v->line;
        return parse_int_key(x, k, key, v, target);
}

static int parse_terminal_max_timeout(struct ctx *x, const struct key_spec *k, const char *key,
                                      const struct node *v, void *target)
{
        x->terminal_max_timeout_line = v->line;
        return parse_int_key(x, k, key, v, target);
}

/* Only the local backend exists; the key is accepted so seed configs that say so still load. */
static int parse_backend(struct ctx *x, const struct key_spec *k, const char *key,
                         const struct node *v, void *target)
{
        size_t i;

        return config_value_word(x, v, key, backend_words, ELEMENTSOF(backend_words), &i);
}

/* terminal.isolation: none (commands run as ptc's user) or strict (the script's sandbox). */
static int parse_terminal_isolation(struct ctx *x, const struct key_spec *k, const char *key,
                                    const struct node *v, void *target)
{
        static const char *const words[] = {"none", "strict"};
        struct ptc_config *c = target;
        size_t i;
        int r;

        r = config_value_word(x, v, key, words, ELEMENTSOF(words), &i);
        if (r < 0)
                return r;
        c->terminal_strict = i == 1;
        return 0;
}

static const struct key_spec terminal_keys[] = {
        {"env_passthrough", parse_env_passthrough, 0, 0, 0},
        {"timeout", parse_terminal_timeout, offsetof(struct ptc_config, terminal_timeout), 1,
         CONFIG_MAX_SECONDS},
        {"max_timeout", parse_terminal_max_timeout,
         offsetof(struct ptc_config, terminal_max_timeout), 1, CONFIG_MAX_SECONDS},
        {"backend", parse_backend, 0, 0, 0},
        {"isolation", parse_terminal_isolation, 0, 0, 0},
        {"network", parse_bool_key, offsetof(struct ptc_config, terminal_network), 0, 0},
};

/* sandbox */

static int parse_isolation_key(struct ctx *x, const struct key_spec *k, const char *key,
                               const struct node *v, void *target)
{
        struct ptc_config *c = target;
        size_t i;
        int r;

        r = config_value_word(x, v, key, config_isolation_words, ELEMENTSOF(config_isolation_words),
                              &i);
        if (r < 0)
                return r;
        c->isolation = (enum ptc_isolation) i;
        return 0;
}

static const struct key_spec sandbox_keys[] = {
        {"isolation", parse_isolation_key, 0, 0, 0},
        {"memory_mb", parse_int_key, offsetof(struct ptc_config, memory_mb), 16, 1048576},
        {"pids", parse_int_key, offsetof(struct ptc_config, pids), 1, 1000000},
        {"network", parse_bool_key, offsetof(struct ptc_config, network), 0, 0},
};

/* web */

/* search_provider: null unsets it (back to "not configured"). Stored lower-case. */
static int parse_search_provider(struct ctx *x, const struct key_spec *k, const char *key,
                                 const struct node *v, void *target)
{
        struct ptc_config *c = target;
        size_t i;
        char *d;
        int r;

        if (node_is_null(v)) {
                config_replace_string(&c->search_provider, NULL);
                return 0;
        }
        r = config_value_word(x, v, key, search_provider_words, ELEMENTSOF(search_provider_words),
                              &i);
        if (r < 0)
                return r;
        d = strdup(search_provider_words[i]);
        if (!d)
                return -ENOMEM;
        config_replace_string(&c->search_provider, d);
        return 0;
}

/* extract_provider: builtin (stored as NULL), firecrawl, tavily or exa; null is builtin. */
static int parse_extract_provider(struct ctx *x, const struct key_spec *k, const char *key,
                                  const struct node *v, void *target)
{
        struct ptc_config *c = target;
        size_t i;
        char *d;
        int r;

        if (node_is_null(v)) {
                config_replace_string(&c->extract_provider, NULL);
                return 0;
        }
        r = config_value_word(x, v, key, extract_provider_words, ELEMENTSOF(extract_provider_words),
                              &i);
        if (r < 0)
                return r;
        if (i == 0) {
                config_replace_string(&c->extract_provider, NULL);
                return 0;
        }
        d = strdup(extract_provider_words[i]);
        if (!d)
                return -ENOMEM;
        config_replace_string(&c->extract_provider, d);
        return 0;
}

/*
 * A URL key (searxng_url, brave_url, ...; k->offset names the char * field):
 * http(s) with something after the scheme, no whitespace or controls; null
 * unsets.
 */
static int parse_url_key(struct ctx *x, const struct key_spec *k, const char *key,
                         const struct node *v, void *target)
{
        const char *allowed = "a URL starting with http:// or https://";
        char **field = (char **) ((char *) target + k->offset);
        const char *s;
        size_t skip;
        char *d;
        int r;

        r = config_scalar_text(x, v, key, allowed, true, &s);
        if (r < 0)
                return r;
        if (!s) {
                config_replace_string(field, NULL);
                return 0;
        }
        if (strncasecmp(s, "http://", 7) == 0)
                skip = 7;
        else if (strncasecmp(s, "https://", 8) == 0)
                skip = 8;
        else
                return config_fail_value(x, v, key, allowed);
        if (v->len <= skip || v->len > CONFIG_MAX_STRING)
                return config_fail_value(x, v, key, allowed);
        for (size_t i = 0; i < v->len; i++)
                if ((unsigned char) s[i] <= 0x20 || s[i] == 0x7f)
                        return config_fail_value(x, v, key, allowed);
        d = strdup(s);
        if (!d)
                return -ENOMEM;
        config_replace_string(field, d);
        return 0;
}

static const struct key_spec web_keys[] = {
        {"search_provider", parse_search_provider, 0, 0, 0},
        {"searxng_url", parse_url_key, offsetof(struct ptc_config, searxng_url), 0, 0},
        {"allow_private_urls", parse_bool_key, offsetof(struct ptc_config, allow_private_urls), 0,
         0},
        {"extract_provider", parse_extract_provider, 0, 0, 0},
        {"brave_url", parse_url_key, offsetof(struct ptc_config, brave_url), 0, 0},
        {"tavily_url", parse_url_key, offsetof(struct ptc_config, tavily_url), 0, 0},
        {"firecrawl_url", parse_url_key, offsetof(struct ptc_config, firecrawl_url), 0, 0},
        {"exa_url", parse_url_key, offsetof(struct ptc_config, exa_url), 0, 0},
        {"timeout", parse_seconds_key, offsetof(struct ptc_config, web_timeout), 0, 3600},
};

static const struct key_spec sessions_keys[] = {
        {"idle_timeout", parse_seconds_key, offsetof(struct ptc_config, session_idle_timeout), 0,
         CONFIG_MAX_SECONDS * 7},
        {"max", parse_int_key, offsetof(struct ptc_config, max_sessions), 1, 64},
        {"warm", parse_int_key, offsetof(struct ptc_config, warm), 0, 16},
};

static const struct key_spec policy_keys[] = {
        {"rules", config_parse_policy_rules, 0, 0, 0},
        {"dangerous", config_parse_policy_word, offsetof(struct ptc_config, policy.dangerous), 0,
         2},
        {"headless", config_parse_policy_word, offsetof(struct ptc_config, policy.headless), 0, 1},
        {"approval_timeout", parse_seconds_key,
         offsetof(struct ptc_config, policy.approval_timeout), 0, CONFIG_MAX_SECONDS},
        {"threaded_exec", config_parse_policy_word,
         offsetof(struct ptc_config, policy.threaded_exec), 0, 1},
};

/* ---- the top level ------------------------------------------------------------------------ */

struct section_spec {
        const char *name;
        const struct key_spec *keys;
        size_t n_keys;
};

static const struct section_spec sections[] = {
        {"code_execution", code_execution_keys, ELEMENTSOF(code_execution_keys)},
        {"terminal", terminal_keys, ELEMENTSOF(terminal_keys)},
        {"sandbox", sandbox_keys, ELEMENTSOF(sandbox_keys)},
        {"web", web_keys, ELEMENTSOF(web_keys)},
        {"sessions", sessions_keys, ELEMENTSOF(sessions_keys)},
        {"policy", policy_keys, ELEMENTSOF(policy_keys)},
        {"mcp_servers", NULL, 0},
};

static int check_terminal_timeouts(struct ctx *x)
{
        const struct ptc_config *c = x->c;

        /* Only this file's fault if it set one of the two. */
        if (!x->terminal_timeout_line && !x->terminal_max_timeout_line)
                return 0;
        if (c->terminal_timeout <= c->terminal_max_timeout)
                return 0;
        if (x->terminal_max_timeout_line)
                return config_fail(x, x->terminal_max_timeout_line, "terminal.max_timeout",
                                   "invalid value '%" PRId64 "' (allowed: an integer from "
                                   "terminal.timeout (%" PRId64 ") to %d)",
                                   c->terminal_max_timeout, c->terminal_timeout,
                                   CONFIG_MAX_SECONDS);
        return config_fail(x, x->terminal_timeout_line, "terminal.timeout",
                           "invalid value '%" PRId64 "' (allowed: an integer from 1 to "
                           "terminal.max_timeout (%" PRId64 "))",
                           c->terminal_timeout, c->terminal_max_timeout);
}

/* A warning for a top-level key close to a known section name: its settings would be lost. */
static int warn_unknown_section(struct ctx *x, const struct node *k)
{
        char esc[ESCAPED_MAX], *w;
        const char *near;

        if (k->type != NODE_SCALAR || memchr(k->text, 0, k->len))
                return 0;
        near = config_closest_name(k->text, k->len, sections, ELEMENTSOF(sections),
                                   sizeof(sections[0]));
        if (!near)
                return 0;
        if (asprintf(&w, "config %s: unknown section '%s' (did you mean '%s'?)", x->path,
                     config_escape_text(k->text, k->len, esc, sizeof(esc)), near) < 0)
                return -ENOMEM;
        return strv_consume(&x->c->warnings, w);
}

int config_parse_root(struct ctx *x, const struct node *root)
{
        bool seen[ELEMENTSOF(sections)] = {};
        int r;

        if (!root || node_is_null(root))
                return 0;
        if (root->type != NODE_MAPPING)
                return config_fail(x, root->line, NULL,
                                   "expected a mapping of sections at the top level, got %s",
                                   node_kind(root));

        for (size_t i = 0; i + 1 < root->n_items; i += 2) {
                const struct node *k = root->items[i], *v = root->items[i + 1];
                size_t j;

                /* An alias key could stand for a known section name; do not guess. */
                if (k->type == NODE_ALIAS)
                        return config_fail_alias(x, k, "top level");
                for (j = 0; j < ELEMENTSOF(sections); j++)
                        if (node_text_is(k, sections[j].name))
                                break;
                if (j >= ELEMENTSOF(sections)) {
                        /* Someone else's section (a shared file), unless a typo of ours. */
                        r = warn_unknown_section(x, k);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (seen[j])
                        return config_fail(x, k->line, sections[j].name, "duplicate section");
                seen[j] = true;

                if (sections[j].keys)
                        r = config_parse_mapping(x, sections[j].name, v, sections[j].keys,
                                                 sections[j].n_keys, x->c);
                else
                        r = config_parse_mcp_servers(x, v);
                if (r < 0)
                        return r;
        }
        return check_terminal_timeouts(x);
}

/* @l as "a, b, c" ("" for none). NULL on ENOMEM. */
static char *join_list(char *const *l)
{
        size_t n = 1;
        char *s, *p;

        for (char *const *i = l; i && *i; i++)
                n += strlen(*i) + 2;
        s = p = malloc(n);
        if (!s)
                return NULL;
        *p = 0;
        for (char *const *i = l; i && *i; i++) {
                size_t k = strlen(*i);

                if (i != l) {
                        memcpy(p, ", ", 2);
                        p += 2;
                }
                memcpy(p, *i, k + 1);
                p += k;
        }
        return s;
}

/* The shortest decimal text that reads back as @d (300 -> "300", 2.5 -> "2.5"). */
static char *format_seconds(double d)
{
        char buf[400];

        for (int decimals = 0; decimals <= 17; decimals++) {
                (void) snprintf(buf, sizeof(buf), "%.*f", decimals, d);
                if (strtod(buf, NULL) == d)
                        return strdup(buf);
        }
        (void) snprintf(buf, sizeof(buf), "%.17g", d);
        return strdup(buf);
}

/* The value of one key of @k's table in @c, as text; NULL on ENOMEM. */
static char *key_value_text(const struct ptc_config *c, const struct key_spec *k)
{
        const char *base = (const char *) c;
        const char *s = NULL;
        char *p;

        if (k->parse == parse_int_key || k->parse == parse_terminal_timeout ||
            k->parse == parse_terminal_max_timeout)
                return asprintf(&p, "%" PRId64, *(const int64_t *) (base + k->offset)) < 0 ? NULL
                                                                                           : p;
        if (k->parse == parse_bool_key)
                s = *(const bool *) (base + k->offset) ? "true" : "false";
        else if (k->parse == parse_seconds_key)
                return format_seconds(*(const double *) (base + k->offset));
        else if (k->parse == parse_url_key)
                s = *(char *const *) (base + k->offset);
        else if (k->parse == parse_mode_key)
                s = config_mode_to_string(c->mode);
        else if (k->parse == parse_module_name)
                s = c->module_name;
        else if (k->parse == parse_python)
                s = c->python;
        else if (k->parse == config_parse_backend_key)
                return c->backends ? join_list(c->backends) : strdup("local");
        else if (k->parse == config_parse_remote_cwd_key)
                s = c->remote_cwd;
        else if (k->parse == parse_tools)
                return join_list(c->tools);
        else if (k->parse == parse_env_passthrough)
                return join_list(c->env_passthrough);
        else if (k->parse == parse_backend)
                s = backend_words[0];
        else if (k->parse == parse_terminal_isolation)
                s = c->terminal_strict ? "strict" : "none";
        else if (k->parse == parse_isolation_key)
                s = config_isolation_to_string(c->isolation);
        else if (k->parse == parse_search_provider)
                s = c->search_provider;
        else if (k->parse == config_parse_policy_word)
                s = config_policy_action_to_string(
                        *(const enum policy_action *) (base + k->offset));
        else if (k->parse == config_parse_policy_rules)
                return asprintf(&p, "%zu rules", c->policy.n_rules) < 0 ? NULL : p;
        else if (k->parse == parse_extract_provider)
                s = c->extract_provider ? c->extract_provider : extract_provider_words[0];
        return strdup(s ? s : "");
}

/* The key "section.key" names, or -EINVAL with a message naming what is unknown. */
static int find_scalar_key(const char *key, const struct key_spec **ret, struct diag *reterr)
{
        const char *dot = strchr(key, '.');
        size_t sl = dot ? (size_t) (dot - key) : 0;

        for (size_t i = 0; dot && i < ELEMENTSOF(sections); i++) {
                const struct section_spec *sec = &sections[i];

                if (!sec->keys || strlen(sec->name) != sl || strncmp(sec->name, key, sl) != 0)
                        continue;
                for (size_t j = 0; j < sec->n_keys; j++)
                        if (strcmp(sec->keys[j].name, dot + 1) == 0) {
                                *ret = &sec->keys[j];
                                return 0;
                        }
                return diag_set(reterr, -EINVAL, "unknown option '%s' (no key '%s' in section %s)",
                                key, dot + 1, sec->name);
        }
        return diag_set(reterr, -EINVAL, "unknown option '%s'", key);
}

int config_get_value(const struct ptc_config *c, const char *key, char **ret, struct diag *reterr)
{
        const struct key_spec *k;
        int r = find_scalar_key(key, &k, reterr);

        if (r < 0)
                return r;
        *ret = key_value_text(c, k);
        return *ret ? 0 : diag_set(reterr, -ENOMEM, "out of memory");
}

int config_set_value(struct ptc_config *c, const char *key, const char *value, struct diag *reterr)
{
        /* One scalar, as the file would hold it (quoted: "" is a string, not null). */
        struct node n = {
                .type = NODE_SCALAR,
                .line = 1,
                .text = (char *) value,
                .len = strlen(value),
        };
        struct ctx x = {.err = reterr, .c = c};
        const struct key_spec *k;
        int r = find_scalar_key(key, &k, reterr);

        if (r < 0)
                return r;
        if (k->parse == config_parse_policy_rules) {
                /* A list: its YAML (or JSON) text, through the file's parser. */
                struct node *root = NULL;

                r = config_parse_yaml(&x, value, strlen(value), &root);
                if (r >= 0)
                        r = k->parse(&x, k, key, root ? root : &n, c);
                config_node_free(root);
                return r;
        }
        r = k->parse(&x, k, key, &n, c);
        return r < 0 ? r : check_terminal_timeouts(&x);
}
