/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The configuration of ptc (docs/contracts.md 5): built-in defaults, then a
 * YAML file, then environment, then command-line flags. This module owns the
 * defaults and the YAML file; the CLI applies flags on top.
 *
 * Strings and vectors inside struct ptc_config are owned by it and freed by
 * config_release().
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/diag.h"
#include "basic/macro.h"

enum ptc_mode {
        PTC_MODE_PROJECT,
        PTC_MODE_STRICT,
};

enum ptc_isolation {
        PTC_ISOLATION_NONE,
        PTC_ISOLATION_AUTO,
        PTC_ISOLATION_STRICT,
};

struct mcp_server_config {
        char *name;    /* the key under mcp_servers */
        char *command; /* required */
        char **args;   /* strv, may be empty (never NULL after load) */
        char **env;    /* strv of "NAME=VALUE", may be empty */
        char *cwd;     /* NULL when unset */
};

/* policy (docs/policy.md): what a tool call may do, and who decides. */
enum policy_action {
        POLICY_ALLOW,
        POLICY_ASK,
        POLICY_DENY,
};

/* What a rule's match patterns are matched against (config_policy_subject()). */
enum policy_subject {
        POLICY_SUBJECT_CALL,    /* the call as a whole: a rule without match */
        POLICY_SUBJECT_COMMAND, /* terminal: each simple command of the parsed command */
        POLICY_SUBJECT_PATH,    /* the file tools: each path, resolved */
        POLICY_SUBJECT_HOST,    /* web_extract: each URL's host */
};

struct policy_rule {
        char **tools;                /* strv, non-empty: tool names or globs (* ?) */
        char **match;                /* strv of patterns; NULL: every call of the tools */
        enum policy_subject subject; /* of the tools named; POLICY_SUBJECT_CALL without match */
        enum policy_action action;
        char *message; /* for the model when the rule denies; NULL: none */
        size_t line;   /* of the rule in the config file, for messages; 0 when not from one */
};

struct policy_config {
        struct policy_rule *rules; /* in order: the first that matches decides */
        size_t n_rules;
        enum policy_action dangerous; /* the built-in dangerous commands; default ask */
        enum policy_action headless;  /* an ask with nobody to answer: allow (default) or deny */
        double approval_timeout;      /* seconds an ask may wait for its answer; default 120 */
        /* While a terminal rule denies or asks: an exec from a process whose memory another
         * running thread shares (it could change the program after ptc read it): allow
         * (default: judged on what was read) or deny. core/tools/exec-supervisor.c. */
        enum policy_action threaded_exec;
};

struct ptc_config {
        /* code_execution */
        double timeout;              /* seconds, > 0; default 300 */
        int64_t max_tool_calls;      /* >= 0; default 50 */
        enum ptc_mode mode;          /* default project */
        char *module_name;           /* Python identifier; default "hermes_tools" */
        int64_t max_stdout_bytes;    /* >= 100; default 50000 */
        int64_t max_stderr_bytes;    /* >= 0; default 10000 */
        char *python;                /* interpreter for strict mode; default "python3" */
        char **tools;                /* enabled tool names; NULL = the default set */
        char **backends;             /* where scripts run: SPECs (docs/remote.md), more than one a
                                      * pool; NULL = this machine */
        int64_t backend_concurrency; /* runs at once per target of a pool; default 4 */
        char *remote_cwd;            /* the script's directory on a remote target; NULL = where
                                      * the channel's shell starts */

        /* terminal */
        char **env_passthrough;       /* names that pass the env scrub; never NULL */
        int64_t terminal_timeout;     /* default 180 */
        int64_t terminal_max_timeout; /* default 600 */
        bool terminal_strict;         /* terminal.isolation: strict; default none (false) */
        bool terminal_network;        /* terminal.network, under strict; default false */

        /* sandbox */
        enum ptc_isolation isolation; /* default auto */
        int64_t memory_mb;            /* default 1024 */
        int64_t pids;                 /* default 256 */
        bool network;                 /* default false */

        /* web */
        char *search_provider; /* NULL, or searxng|brave|tavily|firecrawl|exa */
        char *searxng_url;     /* NULL when unset */
        bool allow_private_urls;
        char *extract_provider; /* NULL (builtin, keyless) or firecrawl|tavily|exa */
        /* Provider API base URLs; NULL = the provider's public API. */
        char *brave_url;
        char *tavily_url;
        char *firecrawl_url;
        char *exa_url;
        double web_timeout; /* seconds per web request, > 0; default 30 */

        /* sessions (docs/sessions.md) */
        double session_idle_timeout; /* seconds without a cell before a session closes; 1800 */
        int64_t max_sessions;        /* live sessions at once; default 4 */
        int64_t warm;                /* warm pool size (PTC_ENGINE_WARM_POOL); default 2 */

        /* policy */
        struct policy_config policy;

        /* mcp_servers */
        struct mcp_server_config *mcp_servers;
        size_t n_mcp_servers;

        /* Where the values came from, for messages: the file read, or NULL. */
        char *source_path;
        /*
         * What config_load_file() noticed but accepted, one line each (a section
         * name close to a known one: at most a quarter of the known name's length
         * in edits, and at least one); the CLI prints them. Owned.
         */
        char **warnings;
};

/* Fill @c with the built-in defaults. Returns 0 or -ENOMEM. */
_must_check_ int config_init(struct ptc_config *c);

/* Free everything @c owns and zero it. NULL-safe. */
void config_release(struct ptc_config *c);

/*
 * The config file path to use when --config is not given: $PTC_CONFIG if set
 * and non-empty, else $XDG_CONFIG_HOME/ptc/config.yaml, else
 * ~/.config/ptc/config.yaml. Caller frees *ret. Returns 0 or -ENOMEM.
 */
_must_check_ int config_default_path(char **ret);

/*
 * Merge the YAML file at @path into @c. A missing file is 0 (nothing merged)
 * unless @must_exist, then -ENOENT. Unknown top-level sections are ignored
 * (the file may be shared with the agent), but one whose name is close to a
 * known section's adds a line to c->warnings, e.g.
 *   "config FILE: unknown section 'code_exection' (did you mean 'code_execution'?)"
 * An unknown key inside a known section (named with the closest known key),
 * a value of the wrong type or out of range, or malformed YAML is -EINVAL
 * with a message in @reterr that names the file, line, key, the value and
 * what is allowed, e.g.
 *   "config.yaml:3: code_execution.mode: invalid value 'fast' (allowed: project, strict)"
 */
_must_check_ int config_load_file(struct ptc_config *c, const char *path, bool must_exist,
                                  struct diag *reterr);

/*
 * Set one scalar key of the file, "section.key" ("terminal.timeout"), from
 * @value as the file would spell it, through the file's own parser and
 * checks. -EINVAL with a message ("terminal.timeout: invalid value ...") for an
 * unknown key, a key that is not a scalar (a list, mcp_servers) or a bad value.
 */
_must_check_ int config_set_value(struct ptc_config *c, const char *key, const char *value,
                                  struct diag *reterr);

/*
 * The value of one key of the file, "section.key", as text config_set_value()
 * reads back: numbers in decimal ("300", "2.5"), booleans "true"/"false",
 * words as the file spells them, a list "a, b" (tools, env_passthrough; ""
 * when empty or unset), an unset string "" (no search provider, no URL).
 * Caller frees *ret. -EINVAL for an unknown key (mcp_servers has none),
 * -ENOMEM.
 */
_must_check_ int config_get_value(const struct ptc_config *c, const char *key, char **ret,
                                  struct diag *reterr);

/* Parse helpers shared with the CLI so flags and the file accept the same words. */
_must_check_ int config_parse_mode(const char *s, enum ptc_mode *ret);
_must_check_ int config_parse_isolation(const char *s, enum ptc_isolation *ret);
const char *config_mode_to_string(enum ptc_mode m);
const char *config_isolation_to_string(enum ptc_isolation i);
/*
 * What the match patterns of a rule naming tool @name match (config-policy.c): the
 * terminal's commands, the file tools' paths, web_extract's URL hosts; POLICY_SUBJECT_CALL
 * for the other tools (their rules take no match).
 */
enum policy_subject config_policy_subject(const char *name);
const char *config_policy_action_to_string(enum policy_action a);

/* True when @s is a valid Python identifier that is not a keyword. */
bool config_is_python_identifier(const char *s);
