/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The interface every tool implements (builtin tools now; MCP upstream tools
 * and host callbacks later). A tool never includes the RPC layer: the RPC
 * layer reaches tools only through the registry (registry.h).
 *
 * Threading: run() is called on a worker thread, possibly many at once for
 * the same tool, so a tool keeps no mutable global state without locking.
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "basic/time-util.h"
#include "core/config/config.h"
#include "core/policy/approval.h"

struct approval_outcome;
struct approver;
struct diag;
struct pause_clock;
struct redactor;
struct tool;

/* What a tool call may use of the execution it belongs to. All borrowed. */
struct tool_ctx {
        const struct ptc_config *config;
        const char *cwd;                 /* absolute; base for relative paths */
        char *const *env;                /* scrubbed environment for subprocesses */
        usec_t deadline;                 /* CLOCK_MONOTONIC; USEC_INFINITY when none */
        int cancel_fd;                   /* readable (POLLIN) once the execution is cancelled;
                                          * -1 when there is none */
        const struct redactor *redactor; /* may be NULL */
        const char *python;              /* resolved interpreter (absolute), for linters */
        /* Who answers the policy's asks (core/policy/approval.h); NULL: nobody, so
         * policy.headless decides. */
        struct approver *approver;
        /* The execution's deadline clock, stopped while a call waits for an answer; NULL:
         * none. @deadline is the deadline before any such wait. */
        struct pause_clock *clock;
        /* What the registry's gate decided of this call (approval_gate()), so that a tool's
         * second pass on the real path (tool-chase.h) does not ask twice; NULL: no gate. */
        const struct approval_outcome *gate;
};

/*
 * The policy gate's view of a call @ctx makes of @tool with @args (borrowed): the execution's
 * approver, clock, redactor and cancel descriptor, for approval_gate() and
 * approval_gate_verdict(). @refusal_fields_json: what a refusal carries besides error and
 * status (the tool's own; may be NULL).
 */
struct approval_call tool_ctx_approval_call(const struct tool_ctx *ctx, const char *tool,
                                            json_t *args, const char *refusal_fields_json);

/*
 * Run the tool with @args (a JSON object, borrowed; members may be JSON null,
 * meaning "use the default", since the stubs send every parameter).
 *
 * On return 0, *ret_result is a new reference to the result object. Errors a
 * caller should see are results too: {"error": "..."} plus the tool's fields,
 * as the seed. A negative errno means the tool itself failed; the dispatcher
 * then answers {"error": "Tool execution failed: <strerror>"}.
 */
typedef int (*tool_run_fn)(const struct tool *t, const struct tool_ctx *ctx, json_t *args,
                           json_t **ret_result);

/* Static description of a builtin tool. */
struct tool_def {
        const char *name;
        /* First line: what it does; used as the stub's docstring. */
        const char *description;
        /* JSON Schema of the arguments ("type": "object", "properties" in
         * signature order, "required", "default" per property). */
        const char *parameters_json;
        /* One line describing the result, for the execute_code description,
         * e.g. "Returns {\"content\": \"...\", \"total_lines\": N}". */
        const char *returns;
        tool_run_fn run;
        /*
         * Whether the tool can work under @config (never NULL), asked when a
         * registry is built. NULL: always. 0: usable. -ENOENT: not configured
         * at all, so it is left out of the default set without a word (the
         * model never hears of a tool that cannot work). Another negative
         * errno: configured but broken, left out of the default set with
         * @reterr's message as a warning. Named explicitly while unusable,
         * the registry fails with @reterr's message (what to configure).
         */
        int (*usable)(const struct ptc_config *config, struct diag *reterr);
        /*
         * Arguments a caller may send that the tool does not support and that
         * are dropped silently before run() (NULL-terminated; NULL: none). The
         * dispatcher (registry_call()) deletes them; run() never sees them.
         */
        const char *const *dropped_args;
        /*
         * A call ends in bounded time with the local file system alone: no process, peer or
         * network to wait for, no FIFO opened blocking, no unbounded walk. The RPC server
         * runs such calls on at most as many threads as there are CPUs instead of keeping a
         * thread spare for the next call (rpc-server.h): more threads than CPUs only take
         * turns. read_file is; a call that may wait (terminal, the web tools, search_files
         * over a large tree, write_file and patch with their Python syntax check, a host's
         * or an MCP server's tool) always leaves a thread spare.
         */
        bool quick;
        /*
         * With a remote backend (docs/remote.md) the tool runs on the host, not on the
         * target: it needs the network, keys or redaction that only the host has (the web
         * tools). The tools on files and processes run where the script runs. Tools that
         * are not builtin (a host's, an MCP server's) always run on the host.
         */
        bool runs_on_host;
        /*
         * What a refusal of the policy (docs/policy.md) carries besides "error" and
         * "status", as JSON: the terminal's {"output": "", "exit_code": -1}, so a script
         * reads a refused command like a failed one. NULL: nothing.
         */
        const char *refusal_fields_json;
};

/* A tool as the registry holds it. */
struct tool {
        char *name;
        char *description;
        json_t *parameters; /* owned reference */
        char *returns;
        tool_run_fn run;
        const char *const *dropped_args; /* tool_def.dropped_args (static); NULL: none */
        void *userdata;                  /* for tools that are not builtin (MCP upstream) */
        bool quick;                      /* tool_def.quick; false for tools not builtin */
        bool runs_on_host;               /* tool_def.runs_on_host; true for tools not builtin */
        const char *refusal_fields_json; /* tool_def.refusal_fields_json (static); NULL: none */
};

/* The builtin tools, defined in tools/<name>.c. */
extern const struct tool_def tool_def_read_file;
extern const struct tool_def tool_def_write_file;
extern const struct tool_def tool_def_terminal;
extern const struct tool_def tool_def_search_files; /* search-files.c */
extern const struct tool_def tool_def_patch;        /* patch.c */
extern const struct tool_def tool_def_web_search;   /* web-search.c */
extern const struct tool_def tool_def_web_extract;  /* web-extract.c */

/*
 * The builtin catalogue (builtin.c), so that the registry and the RPC layer
 * name no tool: the tools compiled into this build (tool_builtin_count
 * entries), and the names of every tool ptc knows (the seed's seven),
 * NULL-terminated, available in this build or not.
 */
extern const struct tool_def *const tool_builtin_defs[];
extern const size_t tool_builtin_count;
extern const char *const tool_known_names[];

/* Helpers for tool implementations (tool-util.c). */

/* {"error": msg} as a new object; NULL on ENOMEM. */
json_t *tool_error_new(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * The answer to send for a call whose run() returned @r and @result (taken;
 * may be NULL): a failed run becomes {"error": "Tool execution failed: ..."},
 * and every known secret value is redacted (REDACT_NONE with @red, may be
 * NULL). When the redaction fails, the result is dropped for
 * {"error": "tool result withheld: redaction failed (<why>)"}: never sent as
 * it was (docs/protocol.md, "Redaction"). Dispatchers do not call it: they
 * call registry_call(), which does. Returns a new reference, or NULL when out
 * of memory.
 */
json_t *tool_result_finish(const struct redactor *red, int r, json_t *result);

/*
 * Argument accessors. A missing member or JSON null gives the default.
 * Integers also accept JSON reals with an integral value and decimal strings
 * ("42"), as the seed coerces string arguments to the schema's types.
 * Return 0, or -EINVAL when the value has another type (the message for the
 * caller is then in *ret_err, a static string).
 */
int tool_arg_string(json_t *args, const char *key, const char **ret, const char **ret_err);
int tool_arg_int(json_t *args, const char *key, int64_t def, int64_t *ret, const char **ret_err);
int tool_arg_bool(json_t *args, const char *key, bool def, bool *ret, const char **ret_err);

/*
 * Resolve @path against ctx->cwd, expanding a leading "~" or "~/" with $HOME
 * from ctx->env (not ptc's environment). Returns a new absolute path (not
 * normalised, symlinks not resolved) or NULL on ENOMEM.
 */
char *tool_resolve_path(const struct tool_ctx *ctx, const char *path);

/* Value of @name in ctx->env, or NULL. Borrowed. */
const char *tool_env_get(const struct tool_ctx *ctx, const char *name);
