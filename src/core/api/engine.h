/* SPDX-License-Identifier: MIT */
#pragma once

/* The engine behind ptc_engine (engine.c) and the steps of its start (engine-setup.c). */

#include <pthread.h>
#include <stdbool.h>
#include <sys/resource.h>

#include <jansson.h>

#include "basic/diag.h"
#include "basic/time-util.h"
#include "core/api/host-tool.h"
#include "core/config/config.h"
#include "core/exec/exec.h"
#include "core/registry/registry.h"
#include "ptc/ptc.h"

struct backend_pool;
struct session_table;
struct mcp_upstreams;
struct redactor;

struct ptc_engine {
        unsigned flags;
        struct ptc_config config; /* the file's values, then ptc_engine_set()'s */
        char *cwd;                /* "cwd": absolute; NULL until set or started */
        /* PTC_ENGINE_PRIVATE_CWD made @cwd (removed at the end when empty), and the note
         * naming it, which the first run's warnings carry (private_noted: given). */
        bool private_cwd;
        char *private_note;
        bool private_noted; /* atomic */
        bool log_calls;
        struct host_tool *host_tools;
        size_t n_host_tools;
        char **warnings;      /* one line each */
        char *config_path;    /* the config file read or looked at; NULL: none */
        bool config_explicit; /* named by the caller, not the default location */
        struct rlimit nofile; /* RLIMIT_NOFILE at ptc_engine_new(): the script's */
        bool have_nofile;
        /* When the engine was made, its config read, its start begun and done, for a run's
         * trace (docs/observability.md, "Traces"). CLOCK_MONOTONIC. */
        usec_t t_created, t_configured, t_start, t_started;
        /* ptc_engine_set_approver(): who answers the policy's asks; NULL: nobody. */
        struct approver *approver;
        ptc_approval_fn approval_fn;
        void *approval_userdata;

        /* Set by ptc_engine_start(), immutable afterwards. */
        bool started;
        struct redactor *redactor;
        char **base_env; /* scrubbed environment for the script and the tools */
        struct mcp_upstreams *upstreams;
        struct registry_extra_tool *extra; /* host tools, then the upstreams' tools */
        size_t n_extra;
        struct registry *registry;
        struct backend_pool *pool; /* code_execution.backend's targets; NULL: this machine */

        /* ptc_engine_call_tool()'s interpreter (the linters'), resolved by the first call. */
        pthread_mutex_t tool_python_lock;
        bool tool_python_resolved; /* under the lock */
        char *tool_python;         /* NULL: none found, .py files are not linted */

        /* The live sessions (docs/sessions.md), made by the first cell. */
        pthread_mutex_t sessions_lock;
        struct session_table *sessions; /* under the lock */

        /* PTC_ENGINE_WARM_POOL: what the pool's interpreters are started with (set at start). */
        struct exec_opts warm_opts;
        char *warm_python; /* NULL: no pool */
};

/* The engine's session table, made on first use. 0 or -errno. */
int engine_sessions(ptc_engine *e, struct session_table **ret);

/* engine-setup.c: the steps of ptc_engine_start(), each usable alone. */

/*
 * Defaults plus the config file @path (NULL: config_default_path(), absent is
 * fine; an explicit path must exist: -ENOENT "config file '...' not found").
 * The file's warnings are appended to *warnings. -EINVAL with the file's message.
 */
int engine_load_config(struct ptc_config *c, const char *path, char ***warnings,
                       struct diag *reterr);

/* engine_load_config() on @c as it is: the file's values replace @c's. */
int engine_merge_config(struct ptc_config *c, const char *path, char ***warnings,
                        struct diag *reterr);

/* "a,b" (commas or blanks) -> strv; "" -> an empty strv (no tools). 0 or -ENOMEM. */
int engine_parse_tools(const char *list, char ***ret);

/*
 * The secrets of docs/contracts.md 8: every secret-named variable's value goes
 * to a new redactor, and *ret_base_env is the scrubbed environment for children.
 * With @scrub the variables also leave the process environment (the provider
 * keys are kept for the web tools, *ret_kept gets them all when non-NULL) and
 * the process becomes non-dumpable; without it nothing is changed.
 */
int engine_prepare_secrets(const struct ptc_config *c, bool scrub, struct redactor **ret_redactor,
                           char ***ret_base_env, char ***ret_kept, struct diag *reterr);

/*
 * Start the upstream MCP servers of @c with environment @env (*ret NULL when
 * there are none). A server that does not start is a warning
 * ("...; its tools are left out"). 0 or -ENOMEM.
 */
int engine_start_upstreams(const struct ptc_config *c, char *const *env, struct mcp_upstreams **ret,
                           char ***warnings, struct diag *reterr);

/*
 * The registry of @tools (NULL: c->tools, else the default set) plus @extra.
 * Left-out tools are warnings; an unknown name is -EINVAL with a message.
 */
int engine_build_registry(const struct ptc_config *c, char *const *tools,
                          const struct registry_extra_tool *extra, size_t n_extra,
                          struct registry **ret, char ***warnings, struct diag *reterr);

/*
 * The tools the engine enables (*ret "a, b"; "" for none): after start its
 * registry's, before it what the start would enable with the options so far
 * and the host tools (the upstream servers' tools join at the start). Tools
 * left out are added to *warnings when @warnings is not NULL. -EINVAL with a
 * message for an unknown name in "tools", -ENOMEM.
 */
int engine_effective_tools(const ptc_engine *e, char **ret, char ***warnings, struct diag *reterr);

/*
 * ptc_engine_add_tool() with, when @shadow_builtin, a builtin tool's name allowed: the tool
 * then stands in for the builtin one when a "tools" list names it (a remote agent's web
 * tools, which run on its host: docs/remote.md).
 */
int engine_add_host_tool(ptc_engine *e, const struct ptc_tool_def *def, bool shadow_builtin,
                         struct ptc_diag *diag);

/* engine.c: the option parsers ptc_engine_set() and ptc_execution_set() share. */
int engine_set_timeout(const char *value, double *ret, struct ptc_diag *pd);
int engine_set_max_tool_calls(const char *value, int64_t *ret, struct ptc_diag *pd);
int engine_set_bool(const char *key, const char *value, bool *ret, struct ptc_diag *pd);
/* realpath() of @value, which must be a directory; the message names key "cwd". */
int engine_set_cwd(const char *value, char **ret, struct ptc_diag *pd);

/*
 * The working-directory rule (engine-workdir.c, docs/isolation.md): whether it binds a run
 * of @c (a local, confined, project-mode run; @remote: on a remote target, whose agent
 * judges), and 0 or -EINVAL with the message (key "cwd") when @cwd is refused.
 */
bool engine_cwd_is_judged(const struct ptc_config *c, bool remote);
int engine_check_cwd(const struct ptc_config *c, bool remote, const char *cwd, struct ptc_diag *pd);
/* Where private working directories are made (a new string; NULL on ENOMEM). */
char *engine_private_cwd_base(void);
/*
 * A new private working directory (0700) under engine_private_cwd_base(), for a server
 * started in @why_started ("'/' (the root directory)"): its path and the note naming it,
 * both new strings.
 */
int engine_make_private_cwd(const char *why_started, char **ret, char **ret_note, struct diag *d);

/*
 * ptc_engine_call_tool() on core types, for the callers inside the library
 * (the MCP server): call @t, a tool of @e's registry, with @args (an object),
 * until @deadline (USEC_INFINITY: none) or until @cancel_fd (-1: none) is
 * readable. The policy's asks go to @approver (NULL: the engine's). *ret is the redacted
 * result object. Any thread.
 */
int engine_call_tool(ptc_engine *e, const struct tool *t, json_t *args, usec_t deadline,
                     int cancel_fd, struct approver *approver, json_t **ret, struct ptc_diag *pd);
