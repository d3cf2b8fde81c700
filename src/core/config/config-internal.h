/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Private to src/core/config: what the parts of config_load_file() share.
 *   config.c              the public helpers, defaults and lifetime, the default path,
 *                         reading the file
 *   config-yaml.c         the YAML reader: libyaml events into a tree of struct node
 *   config-value.c        typed scalar values, and the messages that refuse one
 *   config-sections.c     the sections and their keys: parsers, bounds, cross-key checks
 *   config-backend.c      code_execution.backend and remote_cwd
 *   config-mcp-servers.c  the mcp_servers section: server names and their settings
 *   config-policy.c       the policy section's rules and words
 *   config-suggest.c      the closest known name to a misspelled one (edit distance)
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "basic/diag.h"
#include "basic/macro.h"
#include "core/config/config.h"

/*
 * Limits. The file is read whole, so its size bounds everything else; the
 * other caps keep hostile files (deep nesting, millions of tiny nodes,
 * quadratic duplicate checks) cheap.
 */
#define CONFIG_MAX_FILE_SIZE (1024 * 1024)
#define CONFIG_MAX_DEPTH 64
#define CONFIG_MAX_NODES 100000
#define CONFIG_MAX_LIST 1024   /* tools, env_passthrough, mcp args */
#define CONFIG_MAX_BACKENDS 64 /* code_execution.backend as a pool */
#define CONFIG_MAX_MCP_SERVERS 256
#define CONFIG_MAX_MCP_ENV 256
#define CONFIG_MAX_STRING 4096 /* python, command, cwd, urls */
#define CONFIG_MAX_NAME 64     /* module, tool and server names */
#define CONFIG_MAX_ENV_NAME 256
#define CONFIG_MAX_SECONDS 86400

/* How much of an offending value a message shows, in code points. */
#define VALUE_SHOW_CHARS 60
/* Enough for VALUE_SHOW_CHARS code points escaped at 8 bytes each, "..." and NUL. */
#define ESCAPED_MAX (VALUE_SHOW_CHARS * 8 + 8)

static inline bool is_ascii_space(char ch)
{
        return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v';
}

static inline void trim(const char **s, size_t *n)
{
        while (*n > 0 && is_ascii_space(**s)) {
                (*s)++;
                (*n)--;
        }
        while (*n > 0 && is_ascii_space((*s)[*n - 1]))
                (*n)--;
}

static inline bool is_ascii_alpha(char ch)
{
        return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

static inline bool is_ascii_digit(char ch)
{
        return ch >= '0' && ch <= '9';
}

/* ---- a small YAML tree built from libyaml events ------------------------------------------ */

/*
 * We use the event API rather than yaml_parser_load() because the loader
 * resolves aliases silently: we want to see them, keep them unexpanded (so a
 * "billion laughs" file costs nothing) and refuse them only where we would
 * have to interpret one. Unknown sections may use anchors and aliases freely.
 */
enum node_type {
        NODE_SCALAR,
        NODE_SEQUENCE,
        NODE_MAPPING,
        NODE_ALIAS,
};

struct node {
        enum node_type type;
        size_t line;     /* 1-based */
        bool maybe_null; /* plain and untagged: may spell null */
        char *text;      /* scalar value or alias name, NUL-terminated (may hold NULs) */
        size_t len;
        struct node **items; /* sequence items, or mapping keys and values alternating */
        size_t n_items, n_alloc;
};

static inline const char *node_kind(const struct node *n)
{
        switch (n->type) {
        case NODE_SCALAR:
                return "a scalar";
        case NODE_SEQUENCE:
                return "a sequence";
        case NODE_MAPPING:
                return "a mapping";
        case NODE_ALIAS:
                return "an alias";
        }
        return "a node";
}

static inline bool node_is_null(const struct node *n)
{
        if (n->type != NODE_SCALAR || !n->maybe_null)
                return false;
        return n->len == 0 || strcmp(n->text, "~") == 0 || strcmp(n->text, "null") == 0 ||
               strcmp(n->text, "Null") == 0 || strcmp(n->text, "NULL") == 0;
}

static inline bool node_text_is(const struct node *n, const char *s)
{
        return n->type == NODE_SCALAR && n->len == strlen(s) && memcmp(n->text, s, n->len) == 0;
}

/* One load: the file, where errors go, the config filled, what a later check needs. */
struct ctx {
        const char *path;
        struct diag *err;
        struct ptc_config *c;
        size_t terminal_timeout_line;
        size_t terminal_max_timeout_line;
};

/* config.c */

/* Indexed by enum ptc_mode and enum ptc_isolation; the CLI's words and the file's alike. */
extern const char *const config_mode_words[PTC_MODE_STRICT + 1];
extern const char *const config_isolation_words[PTC_ISOLATION_STRICT + 1];
int config_lookup_word(const char *s, const char *const *words, size_t n_words);
bool config_is_c_identifier(const char *s, size_t n);
void config_mcp_servers_free(struct mcp_server_config *s, size_t n);
char **config_strv_new_empty(void);

/* config-yaml.c */

void config_node_free(struct node *n);
void config_node_freep(struct node **n);
int config_parse_yaml(struct ctx *x, const char *data, size_t len, struct node **ret);

/* config-value.c */

const char *config_escape_text(const char *s, size_t n, char *out, size_t outsz);
int config_fail(struct ctx *x, size_t line, const char *key, const char *fmt, ...) _printf_(4, 5);
int config_fail_text(struct ctx *x, size_t line, const char *key, const char *what,
                     const char *text, size_t len, const char *allowed);
int config_fail_alias(struct ctx *x, const struct node *n, const char *key);
int config_fail_value(struct ctx *x, const struct node *n, const char *key, const char *allowed);
int config_scalar_text(struct ctx *x, const struct node *n, const char *key, const char *allowed,
                       bool allow_null, const char **ret);
int config_value_int(struct ctx *x, const struct node *n, const char *key, int64_t min, int64_t max,
                     int64_t *ret);
bool config_parse_number_literal(const char *s, size_t n, double *ret);
int config_value_bool(struct ctx *x, const struct node *n, const char *key, bool *ret);
int config_value_word(struct ctx *x, const struct node *n, const char *key,
                      const char *const *words, size_t n_words, size_t *ret);
int config_value_string(struct ctx *x, const struct node *n, const char *key, bool allow_null,
                        char **ret);
void config_replace_string(char **dst, char *s);
void config_replace_strv(char ***dst, char **l);

/* A section's keys: a table of these, walked by config_parse_mapping() (config-sections.c). */
struct key_spec;
typedef int (*key_parser_t)(struct ctx *x, const struct key_spec *k, const char *key,
                            const struct node *v, void *target);

struct key_spec {
        const char *name;
        key_parser_t parse;
        size_t offset; /* of the field in @target, for the generic parsers */
        int64_t min, max;
};

#define MAX_SECTION_KEYS 16

/* config-backend.c: code_execution.backend, a SPEC or a pool of them (key parsers of
 * config-sections.c's table). */
int config_parse_remote_cwd_key(struct ctx *x, const struct key_spec *k, const char *key,
                                const struct node *v, void *target);
int config_parse_backend_key(struct ctx *x, const struct key_spec *k, const char *key,
                             const struct node *v, void *target);

/* config-suggest.c */

const char *config_closest_name(const char *text, size_t len, const void *names, size_t n,
                                size_t stride);

/* config-sections.c */

/* The top-level mapping @root (NULL: an empty file) into x->c. */
int config_parse_root(struct ctx *x, const struct node *root);

/*
 * Walk the mapping @n with the keys in @keys into @target; @prefix names it in messages.
 * Null is an empty section; an unknown or repeated key is an error.
 */
int config_parse_mapping(struct ctx *x, const char *prefix, const struct node *n,
                         const struct key_spec *keys, size_t n_keys, void *target);

#define ENV_NAME_ALLOWED "names matching [A-Za-z_][A-Za-z0-9_]*"
/* An environment variable name: a C identifier of at most CONFIG_MAX_ENV_NAME bytes. */
bool config_is_env_name(const char *s, size_t n);

/* config-mcp-servers.c */

/* mcp_servers replaces the whole list; null means none. */
int config_parse_mcp_servers(struct ctx *x, const struct node *n);

/* config-policy.c */

extern const char *const config_policy_action_words[3];
/* policy.headless (k->max 1: allow, deny) and policy.dangerous (k->max 2: allow, ask, deny),
 * an enum policy_action at k->offset. */
int config_parse_policy_word(struct ctx *x, const struct key_spec *k, const char *key,
                             const struct node *v, void *target);
/* policy.rules replaces the whole list; null means none. */
int config_parse_policy_rules(struct ctx *x, const struct key_spec *k, const char *key,
                              const struct node *v, void *target);
void config_policy_rules_free(struct policy_rule *rules, size_t n);
