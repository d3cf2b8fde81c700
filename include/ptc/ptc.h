/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * libptc: programmatic tool calling for LLM agents, as a library.
 *
 * A model writes one Python script; ptc runs it in a confined child process;
 * the script calls tools (the builtin ones, an upstream MCP server's, and the
 * host's own, registered here with a callback) through a generated Python
 * module over a local socket; only what the script prints comes back, in a
 * result JSON (docs/contracts.md 4). `ptc run`, `ptc tool` and `ptc mcp` are
 * clients of exactly this interface; docs/libptc.md walks through it.
 *
 * Conventions
 *   - Handles are opaque. Every object is freed by its own ptc_*_free(),
 *     which accepts NULL and returns NULL.
 *   - Functions that can fail return 0 (or a count) on success and a negative
 *     errno on failure, and fill the optional struct ptc_diag with one line
 *     for a human. Never both a value and an error.
 *   - Strings in are UTF-8, NUL-terminated, and borrowed for the call only
 *     unless the function says otherwise; JSON in and out is UTF-8 text.
 *     Strings handed out (char **ret) are the caller's, freed with ptc_free().
 *   - Threads: an engine is configured from one thread (everything before
 *     ptc_engine_start()). After a successful start it is immutable and every
 *     function taking it is safe from any thread, any number at once. Each
 *     execution handle is used by one thread at a time, except
 *     ptc_execution_cancel(), which any thread may call at any time.
 *     Callbacks (host tools, progress) run on ptc's worker threads, possibly
 *     many at once; they must not call ptc_engine_free().
 *   - Process: the library changes no signal disposition and no signal mask,
 *     installs no handlers and does not change the environment (unless the
 *     command line's PTC_ENGINE_SCRUB_PROCESS asks). It never signals or
 *     reaps a process it did not start (a child the host had before). Children
 *     are watched through pidfds (Linux 5.3 or later).
 *
 * The ABI is versioned (libptc.so.0, symbols at PTC_0); structs below are
 * append-only and carry their own size, so a host built against this header
 * keeps working with a newer library.
 */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#        define PTC_EXPORT __attribute__((visibility("default")))
#else
#        define PTC_EXPORT
#endif

/* Version of these headers; ptc_version() gives the library's. */
#define PTC_VERSION_MAJOR 0
#define PTC_VERSION_MINOR 2
#define PTC_VERSION_PATCH 0

/* Exit status of `ptc run` (docs/contracts.md 3). */
enum ptc_exit {
        PTC_EXIT_OK = 0,            /* status "success" */
        PTC_EXIT_SCRIPT_FAILED = 1, /* status "error": the script failed */
        PTC_EXIT_USAGE = 2,         /* usage or config error; a one-line message on stderr */
        PTC_EXIT_INTERNAL = 3,      /* ptc itself failed; stdout still carries a result */
        PTC_EXIT_TIMEOUT = 124,     /* status "timeout" */
        PTC_EXIT_INTERRUPTED = 130, /* status "interrupted" */
};

/* The "status" member of a result (docs/contracts.md 4). */
enum ptc_status {
        PTC_STATUS_SUCCESS = 0,
        PTC_STATUS_ERROR = 1,
        PTC_STATUS_TIMEOUT = 2,
        PTC_STATUS_INTERRUPTED = 3,
};

/* What went wrong, for a human: one line, never a secret value. */
#define PTC_DIAG_MAX 1024
struct ptc_diag {
        int code;                   /* the negative errno also returned */
        char message[PTC_DIAG_MAX]; /* "" when there is nothing to add */
};

typedef struct ptc_engine ptc_engine;
typedef struct ptc_execution ptc_execution;
typedef struct ptc_tool_call ptc_tool_call;
typedef struct ptc_approval ptc_approval;

/* "0.2.0": the library's version (may be newer than the headers'). */
PTC_EXPORT const char *ptc_version(void);

/* Frees a string the library handed out. NULL is fine. */
PTC_EXPORT void ptc_free(void *p);

/* "success", "error", "timeout", "interrupted"; NULL for a value out of range. */
PTC_EXPORT const char *ptc_status_to_string(enum ptc_status s);

/* The exit status `ptc run` gives for @s. */
PTC_EXPORT int ptc_status_to_exit(enum ptc_status s);

/*
 * The result JSON of a run ptc itself could not do (docs/contracts.md 4):
 * {"status": "error", "output": "", "tool_calls_made": 0, "duration_seconds":
 * 0.0, "exit_code": null, "error": @message}, as ptc_execution_run() hands
 * out with a negative errno. For a host that fails before the run (`ptc run`
 * when it cannot set up its signals). Caller frees; NULL on ENOMEM.
 */
PTC_EXPORT char *ptc_internal_error_result(const char *message);

/* ------------------------------------------------------------------------------------------ */
/* Engine: config, tool registry, redaction, upstream MCP servers                              */

enum ptc_engine_flags {
        /* Do not read a config file: built-in defaults, then ptc_engine_set(). */
        PTC_ENGINE_NO_CONFIG_FILE = 1u << 0,
        /*
         * For a process that exists to host ptc (the command line): at start,
         * take the secret variables out of the process environment (their
         * values still reach the redactor and the providers) and make the
         * process non-dumpable, so nothing it starts can read them back.
         * Without it the environment is read, never changed.
         */
        PTC_ENGINE_SCRUB_PROCESS = 1u << 1,
        /*
         * Accepted and ignored (it made the process a child subreaper that
         * killed every process reparented to it, which also killed children
         * the process had before: a shell's background job). Every script
         * and every terminal command runs under an init of its own that kills
         * what it leaves behind; ptc signals only the trees it started.
         */
        PTC_ENGINE_REAP_ORPHANS = 1u << 2,
        /*
         * For a long-lived host that runs many executions (`ptc mcp`, `ptc serve`): keep
         * sessions.warm interpreters started, confined and with the tools module imported,
         * each taken by one execution that runs in the engine's directory with the
         * engine's tools, and discarded after it (docs/sessions.md, "Warm pool"). Results
         * are the same as without.
         */
        PTC_ENGINE_WARM_POOL = 1u << 3,
        /*
         * For a server a client starts in any directory (`ptc mcp`, `ptc serve`): when no
         * "cwd" was set and the current directory is one a confined run refuses (`/`, a
         * system tree: docs/isolation.md), the start makes a private working directory
         * (0700, under $XDG_CACHE_HOME/ptc/workdirs) instead of failing; a warning of the
         * start and of the first execution names it. It is removed at ptc_engine_free()
         * when empty, kept otherwise. A "cwd" set to such a directory fails the start.
         * Without the flag the engine starts anywhere; a run in such a directory is
         * refused (ptc_execution_run(): -EINVAL, no result).
         */
        PTC_ENGINE_PRIVATE_CWD = 1u << 4,
};

/*
 * A new engine with the built-in defaults. Unless PTC_ENGINE_NO_CONFIG_FILE,
 * reads @config_file, or when NULL the default one ($PTC_CONFIG, else
 * $XDG_CONFIG_HOME/ptc/config.yaml, absent is fine). An explicit file must
 * exist. Errors: -EINVAL (bad config: the message names the key and line),
 * -ENOENT, -ENOMEM. Warnings (a misspelled key, say) are kept for
 * ptc_engine_warnings().
 */
PTC_EXPORT int ptc_engine_new(const char *config_file, unsigned flags, ptc_engine **ret,
                              struct ptc_diag *diag);

/*
 * Before start: merge the config file @config_file (NULL: the default one, as
 * ptc_engine_new() reads it) into the options: its keys replace their values
 * so far. For a host that wants a config file's warnings even when the file
 * is refused: ptc_engine_new(NULL, PTC_ENGINE_NO_CONFIG_FILE, ...), then this;
 * the warnings the file raised before its error are in ptc_engine_warnings()
 * either way. Errors as ptc_engine_new()'s (the options are then partly
 * merged: free the engine), -EBUSY after start.
 */
PTC_EXPORT int ptc_engine_load_config(ptc_engine *e, const char *config_file,
                                      struct ptc_diag *diag);

/* Frees the engine and stops its MCP servers. No execution may be running. */
PTC_EXPORT ptc_engine *ptc_engine_free(ptc_engine *e);

/*
 * Before start: set one option, as the command line's flags do (they replace
 * the config file's values). Keys and values are the config file's
 * (docs/config.md), as text:
 *   "timeout" "300"            "max_tool_calls" "50"       "mode" "project|strict"
 *   "isolation" "none|auto|strict"                         "tools" "read_file,terminal" ("" = none)
 *   "cwd" "/abs/or/relative"   "python" "/usr/bin/python3" "log_calls" "true|false"
 *   "backend" "ssh:build1" (where scripts run, docs/remote.md; "local" by default)
 *   "remote_cwd" "/srv/app" (the script's directory on a remote target)
 * and any scalar key of the config file as "section.key" ("terminal.timeout",
 * "code_execution.max_stdout_bytes"), checked as the config file checks it.
 * -EINVAL with a message for an unknown key or a bad value; -EBUSY after start.
 */
PTC_EXPORT int ptc_engine_set(ptc_engine *e, const char *key, const char *value,
                              struct ptc_diag *diag);

/*
 * The effective value of option @key, as text in the words ptc_engine_set()
 * takes (its inverse): every key it accepts, before or after the start.
 * Numbers in decimal ("300", "2.5"), booleans "true"/"false", "cwd" absolute
 * (before it is set: the current directory, which the start takes), "tools"
 * the enabled tools "read_file, terminal" ("" for none; before the start, the
 * ones it would enable with the options so far and the host tools, as the
 * upstream servers' tools join at the start), an unset string "" (no
 * "web.search_provider"); and, read-only, "config_file": the config file read,
 * or where the default one would be ("" for none). Caller frees *ret. -EINVAL
 * for an unknown key (or a
 * "tools" list the start would refuse, with its message), -ENOMEM. After the
 * start, any thread.
 */
PTC_EXPORT int ptc_engine_get(const ptc_engine *e, const char *key, char **ret,
                              struct ptc_diag *diag);

/*
 * A host tool: the script calls it as name(**args) like any other tool.
 * The callback gets a call handle and must answer it exactly once, with
 * ptc_tool_call_return() or ptc_tool_call_fail(), before returning (a
 * synchronous tool) or later from any thread (an asynchronous one). It runs on
 * a worker thread; several calls may run at once. ptc cannot stop a callback
 * that never returns: the execution's result waits for it (its answer is then
 * dropped), so a slow synchronous tool watches ptc_tool_call_cancelled(), or
 * the tool is made asynchronous and the callback returns at once.
 */
typedef void (*ptc_tool_fn)(ptc_tool_call *call, void *userdata);

struct ptc_tool_def {
        size_t size;                 /* sizeof(struct ptc_tool_def) */
        const char *name;            /* [a-z0-9_]+, not a builtin tool's name */
        const char *description;     /* first line becomes the stub's docstring */
        const char *parameters_json; /* JSON Schema: {"type":"object","properties":...} */
        const char *returns;         /* one line on the result, for the description; may be NULL */
        ptc_tool_fn fn;
        void *userdata; /* passed to fn; must outlive the engine */
};

/*
 * Before start: register a host tool. Everything is copied but userdata.
 * Host tools are enabled by default; an explicit "tools" list must name them.
 * -EINVAL (bad name, schema not an object, name taken), -EBUSY after start.
 */
PTC_EXPORT int ptc_engine_add_tool(ptc_engine *e, const struct ptc_tool_def *def,
                                   struct ptc_diag *diag);

/*
 * Freeze the configuration: prepare the secrets and the redactor, start the
 * upstream MCP servers, build the registry (the interpreter is resolved by each
 * ptc_execution_run(), for its directory). A server that does not start, or a
 * known tool this machine cannot offer, is a warning. -EINVAL (an unknown tool
 * in "tools"), -EALREADY (started before), -ENOMEM.
 */
PTC_EXPORT int ptc_engine_start(ptc_engine *e, struct ptc_diag *diag);

/*
 * Warnings collected so far, one per line ("" when none). Caller frees.
 * NULL on ENOMEM.
 */
PTC_EXPORT char *ptc_engine_warnings(const ptc_engine *e);

/* After start: the enabled tools' names, "a, b, c". Caller frees; NULL on ENOMEM. */
PTC_EXPORT char *ptc_engine_tool_names(const ptc_engine *e);

/*
 * After start: the execute_code function schema (what `ptc schema` prints),
 * whose description names only the enabled tools. Caller frees *ret.
 */
PTC_EXPORT int ptc_engine_schema(const ptc_engine *e, char **ret, struct ptc_diag *diag);

/* After start: the Python module a script imports (what `ptc stubs` prints). */
PTC_EXPORT int ptc_engine_stubs(const ptc_engine *e, char **ret, struct ptc_diag *diag);

/*
 * After start: call one enabled tool directly, as a script would, with
 * @args_json (an object). *ret is the result JSON, redacted; a tool's own
 * failure is a result with an "error" member, not a negative return.
 * -ENOENT for an unknown tool (the message lists the enabled ones), -EINVAL
 * for arguments that are not a JSON object.
 */
PTC_EXPORT int ptc_engine_call_tool(ptc_engine *e, const char *name, const char *args_json,
                                    char **ret, struct ptc_diag *diag);

/*
 * What this machine gives the engine's configuration, probed for real: the
 * report `ptc doctor` prints (version, kernel, config file, the interpreter of
 * each mode, the enabled tools, the web providers, supervision, each
 * isolation layer, the effective isolation, what confines terminal commands),
 * one item per line. It runs the interpreters and a confined /bin/true: a
 * second or so. Before the start, tools the start would leave out (or a
 * "tools" list it would refuse: no "tools:" line then) are added to
 * ptc_engine_warnings(); a started engine is only read (any thread). With a
 * remote backend ("backend"), the report ends with the target's section: a
 * probe script run there end to end (the engine is started for it). @flags:
 * 0. Caller frees *ret. -EINVAL, -ENOMEM; -EHOSTDOWN when the backend's check
 * failed: *ret then holds the report, which says why.
 */
PTC_EXPORT int ptc_doctor_report(ptc_engine *e, unsigned flags, char **ret, struct ptc_diag *diag);

/* ------------------------------------------------------------------------------------------ */
/* Execution: one script, run to its result                                                    */

/*
 * A new execution on a started engine. Its options start as the engine's and
 * may be changed with ptc_execution_set() until it runs.
 */
PTC_EXPORT int ptc_execution_new(ptc_engine *e, ptc_execution **ret, struct ptc_diag *diag);

/* Frees it. It must not be running (cancel it and let ptc_execution_run() return). */
PTC_EXPORT ptc_execution *ptc_execution_free(ptc_execution *x);

/*
 * Before the run: redact from this execution's output, besides the engine's secrets, the
 * values of the secret-named variables of @env ("NAME=value" strings, NULL-terminated;
 * borrowed, copied), by the engine's rules: a name ptc_secret_name() takes, not in
 * terminal.env_passthrough. For a host that runs code for a client whose environment is not
 * the engine's: `ptc serve` does for `ptc run --session`, so a cell redacts what the
 * client's own run would (docs/sessions.md). Kept in the execution's own redactor only, and
 * wiped when it is freed. -EINVAL, -EBUSY once run, -ENOMEM.
 */
PTC_EXPORT int ptc_execution_add_secrets(ptc_execution *x, const char *const *env,
                                         struct ptc_diag *diag);

/*
 * 1 when a variable named @name is one the environment scrub removes as a secret (its
 * name holds KEY, TOKEN, SECRET, PASSWORD, ...: docs/contracts.md 6), before any
 * env_passthrough, else 0. Thread-safe; no engine needed.
 */
PTC_EXPORT int ptc_secret_name(const char *name);

/*
 * Before the run: the per-execution subset of ptc_engine_set()'s keys:
 * "timeout", "max_tool_calls", "tools" (a subset of the engine's), "cwd"
 * (project mode), "log_calls"; "session" (an id: run as that session's next
 * cell), "reset" ("true": the session afresh first), "fork_from" (an id: the
 * session, which must not be live, starts as a copy of that one; docs/sessions.md).
 * -EINVAL unknown key or bad value, -EBUSY once run.
 */
PTC_EXPORT int ptc_execution_set(ptc_execution *x, const char *key, const char *value,
                                 struct ptc_diag *diag);

/*
 * Called on a worker thread as each tool call is dispatched: the tool's name
 * and the number of calls so far (1, 2, ...). Keep it short; it must not block.
 */
typedef void (*ptc_progress_fn)(const char *tool, int64_t count, void *userdata);
PTC_EXPORT int ptc_execution_on_progress(ptc_execution *x, ptc_progress_fn fn, void *userdata);

/*
 * Before the run: @fn gets the run's live events (docs/observability.md), each a JSON
 * object on one line (@line, @len bytes, no newline; valid for the call only): "start",
 * "call" and "call_end" for each tool call, "output" (the script's stdout and stderr, line by
 * line, redacted), "limit", and "end" with the result. Called on the run's thread and on the
 * tool-call threads, one at a time, in order; it must not block for long (a host writing to
 * a pipe writes non-blocking). A negative return counts the event as dropped (the end
 * event says how many). -EINVAL, -EBUSY after the run.
 */
typedef int (*ptc_event_fn)(const char *line, size_t len, void *userdata);
PTC_EXPORT int ptc_execution_on_event(ptc_execution *x, ptc_event_fn fn, void *userdata);

/*
 * Run @code (@code_len bytes; may hold NUL) to its end: success, error,
 * timeout or cancellation. Blocks the calling thread. On 0, *ret_json is the
 * result JSON (docs/contracts.md 4) and *ret_status its status. A negative
 * errno means ptc itself failed (staging, spawn, ...): the diag says what, and
 * *ret_json is still a result with status "error" when it could be built.
 * -ENOENT with *ret_json NULL: no Python interpreter was found (the message
 * says where it looked; `ptc run` treats it as a setup error, exit 2).
 * -EINVAL with *ret_json NULL: the run's working directory is one no confined
 * script may have (`/`, a system tree: docs/isolation.md); nothing ran (`ptc
 * run`: exit 2). The result JSON's "warnings" (a list, when not empty) are
 * ptc_execution_warnings()'s lines.
 * An execution runs once: a second call is -EALREADY.
 */
PTC_EXPORT int ptc_execution_run(ptc_execution *x, const char *code, size_t code_len,
                                 char **ret_json, enum ptc_status *ret_status,
                                 struct ptc_diag *diag);

/*
 * Warnings of the run so far, one per line ("" when none): what ptc did
 * differently than asked without failing, such as isolation auto leaving out
 * a layer this machine refuses ("isolation auto: namespaces: ...; running
 * without the namespaces layer (see ptc doctor)"). `ptc run` prints them on
 * stderr. The thread that uses the execution, after ptc_execution_run()
 * returned. Caller frees; NULL on ENOMEM.
 */
PTC_EXPORT char *ptc_execution_warnings(const ptc_execution *x);

/*
 * The engine's live sessions (docs/sessions.md) as a JSON array text:
 * [{"session": ID, "cells": N, "idle_seconds": S, "busy": B, "pid": P}], P being the
 * pid of the session's interpreter as the host sees it. Caller frees; NULL on ENOMEM.
 */
PTC_EXPORT char *ptc_engine_sessions(ptc_engine *e);

/*
 * Close the engine's session @id now: its interpreter and everything it started die.
 * With PTC_SESSION_FORGET the next cell on @id starts afresh without being told (a
 * reset); otherwise it is told the session was killed. -ENOENT when no such session
 * lives, -EBUSY while it runs a cell.
 */
enum ptc_session_close_flags {
        PTC_SESSION_FORGET = 1u << 0,
};
PTC_EXPORT int ptc_engine_close_session(ptc_engine *e, const char *id, unsigned flags,
                                        struct ptc_diag *diag);

/*
 * Make session @new_id a copy of the live session @id (docs/sessions.md, "Fork"): a fork of
 * its interpreter (copy-on-write: globals, imports and data as they are now) in the same
 * confinement and working directory; from then on each goes its own way. -ENOENT when @id
 * is not live, -EBUSY while it runs a cell, -EEXIST when @new_id is live, -EINVAL for an
 * invalid id; the least recently used idle session is closed when room is needed.
 */
PTC_EXPORT int ptc_engine_fork_session(ptc_engine *e, const char *id, const char *new_id,
                                       struct ptc_diag *diag);

/*
 * From any thread, at any time, as often as wanted: stop the execution. A
 * running script gets SIGINT (KeyboardInterrupt), then SIGKILL after a grace;
 * the run returns status "interrupted". Before the run starts it is
 * interrupted at once. Never fails.
 */
PTC_EXPORT void ptc_execution_cancel(ptc_execution *x);

/*
 * ptc_execution_cancel() that names why: the result's "error" reads
 * "Execution interrupted (@reason)" instead of "(cancelled)". For a host that
 * turns its own signals into a stop (`ptc run` passes "SIGINT", "SIGTERM",
 * "SIGHUP"). @reason must stay valid until the execution is freed (a string
 * literal); the first cancel or interrupt to reach the run decides. Any
 * thread, any time; never fails.
 */
PTC_EXPORT void ptc_execution_interrupt(ptc_execution *x, const char *reason);

/* ------------------------------------------------------------------------------------------ */
/* Host tool calls                                                                             */

/* The call's tool name and arguments (a JSON object). Valid until answered. */
PTC_EXPORT const char *ptc_tool_call_name(const ptc_tool_call *c);
PTC_EXPORT const char *ptc_tool_call_arguments(const ptc_tool_call *c);

/*
 * Milliseconds left before the execution's deadline (0 when past, INT64_MAX
 * when there is none), and whether the answer is no longer wanted (the
 * execution was cancelled or its deadline passed): a long tool should look and
 * give up. Valid until answered.
 */
PTC_EXPORT int64_t ptc_tool_call_remaining_ms(const ptc_tool_call *c);
PTC_EXPORT int ptc_tool_call_cancelled(const ptc_tool_call *c);

/*
 * Answer the call with @result_json: any JSON value; an object with an
 * "error" member is a tool error, as for builtin tools. The handle is gone
 * after this. Text that is not JSON becomes {"error": "host tool returned
 * invalid JSON: ..."}. Any thread. Returns 0, or -ECANCELED when the script no
 * longer waits (timeout, cancel): the answer is dropped, the handle still gone.
 */
PTC_EXPORT int ptc_tool_call_return(ptc_tool_call *c, const char *result_json);

/* Answer with {"error": @message}. As ptc_tool_call_return(). */
PTC_EXPORT int ptc_tool_call_fail(ptc_tool_call *c, const char *message);

/* ------------------------------------------------------------------------------------------ */
/* Approvals: who answers the policy's "ask" (docs/policy.md)                                  */

/*
 * A tool call the policy says to ask about waits for this callback's answer. It gets a
 * request handle and must answer it exactly once with ptc_approval_answer(), before
 * returning or later from any thread. It runs on a tool-call worker thread, one request
 * at a time per engine; the call waits at most policy.approval_timeout (then it is
 * denied), and that wait does not count against the script's timeout. A callback that
 * blocks watches ptc_approval_cancel_fd() and ptc_approval_remaining_ms().
 */
typedef void (*ptc_approval_fn)(ptc_approval *request, void *userdata);

/*
 * Before start: @fn (NULL: none) answers the engine's asks; without one,
 * policy.headless decides (allow by default). @userdata must outlive the engine.
 * -EBUSY after start.
 */
PTC_EXPORT int ptc_engine_set_approver(ptc_engine *e, ptc_approval_fn fn, void *userdata,
                                       struct ptc_diag *diag);

/*
 * Before the run: @fn (NULL: the engine's approver again) answers the asks of this execution
 * only, instead of the engine's approver, as ptc_engine_set_approver()'s callback does: how
 * a server relays each run's asks to the client that sent it. "For this session" answers
 * last as long as the execution. -EINVAL, -EBUSY after the run, -ENOMEM.
 */
PTC_EXPORT int ptc_execution_set_approver(ptc_execution *x, ptc_approval_fn fn, void *userdata,
                                          struct ptc_diag *diag);

/* The tool, its arguments (a JSON object, secrets redacted, cut to about 2 KB) and the
 * policy's verdict as JSON {"decision": "ask", "origin", "what", "subject"[, "rule",
 * "line", "message"]}. Valid until answered. */
PTC_EXPORT const char *ptc_approval_tool(const ptc_approval *a);
PTC_EXPORT const char *ptc_approval_arguments(const ptc_approval *a);
PTC_EXPORT const char *ptc_approval_verdict(const ptc_approval *a);
/* Milliseconds left to answer (0 when past). Valid until answered. */
PTC_EXPORT int64_t ptc_approval_remaining_ms(const ptc_approval *a);
/* A file descriptor that becomes readable when the answer is no longer wanted (the
 * execution ends); -1 when there is none. Poll it, never read it. Valid until answered. */
PTC_EXPORT int ptc_approval_cancel_fd(const ptc_approval *a);

enum ptc_approval_answer {
        PTC_APPROVE_ONCE = 0,
        PTC_APPROVE_SESSION = 1, /* this and later asks for the same rule, until the engine goes */
        PTC_APPROVE_DENY = 2,
        PTC_APPROVE_CANNOT_ASK = 3, /* nobody to ask after all: policy.headless decides */
        PTC_APPROVE_NO_ANSWER = 4,  /* asked, but no answer came in time: as a timeout (deny) */
};

/*
 * Answer @a with an enum ptc_approval_answer. The handle is gone after this. Any thread.
 * Returns 0; -ECANCELED when the call no longer waits (the answer is dropped, the handle
 * still gone); -EINVAL for an unknown answer (the handle stays).
 */
PTC_EXPORT int ptc_approval_answer(ptc_approval *a, int answer);

/*
 * What the engine's policy says of calling @tool (any name: builtin, host or MCP) with
 * @args_json (an object), without calling it: *ret is the verdict as JSON {"decision":
 * "allow"|"ask"|"deny"|"blocked", "origin": "default"|"rule"|"dangerous"|"hardline",
 * "what", "subject"[, "rule", "line", "message", "headless"]}, caller frees. Before or
 * after start. -EINVAL (arguments not an object), -ENOMEM.
 */
PTC_EXPORT int ptc_engine_check_policy(ptc_engine *e, const char *tool, const char *args_json,
                                       char **ret, struct ptc_diag *diag);

/* ------------------------------------------------------------------------------------------ */
/* MCP server: execute_code for any Model Context Protocol client (docs/mcp.md)                */

enum ptc_mcp_flags {
        /* Also list each enabled tool as an MCP tool of its own (`ptc mcp --expose-tools`). */
        PTC_MCP_EXPOSE_TOOLS = 1u << 0,
        /* An execute_code call without "session" runs in the connection's own session,
         * closed when the connection ends (`ptc mcp --sessions conversation`,
         * docs/sessions.md). */
        PTC_MCP_SESSION_PER_CONNECTION = 1u << 1,
};

/*
 * A line for a human from the MCP server, such as "request 5 cancelled: the
 * execution was interrupted" (@is_warning 0) or a warning of an execution
 * (1). Called on any of the server's threads, possibly at once; keep it short.
 */
typedef void (*ptc_mcp_log_fn)(int is_warning, const char *line, void *userdata);

struct ptc_mcp_opts {
        size_t size;        /* sizeof(struct ptc_mcp_opts) */
        unsigned flags;     /* enum ptc_mcp_flags */
        double max_timeout; /* seconds: a call's default and largest timeout; 0: the engine's */
        /*
         * > 0: a descriptor whose readability asks the server to stop as at EOF
         * (a signalfd, an eventfd, a pipe's read end); it is polled, never read.
         * 0 or negative: none (0 is where a server's input usually is).
         */
        int stop_fd;
        ptc_mcp_log_fn log; /* NULL: the server's lines are dropped */
        void *log_userdata;
};

/*
 * Serve MCP (JSON-RPC 2.0, one message per line) on a started engine: read
 * requests from @in_fd, write responses and notifications to @out_fd (which
 * carries nothing else), until EOF on @in_fd or @stop_fd. Blocks the calling
 * thread. The tools are execute_code (the engine's schema) and, with
 * PTC_MCP_EXPOSE_TOOLS, each enabled tool: host tools become MCP tools too.
 * Every tools/call runs at once on a thread of its own, execute_code as a
 * ptc_execution on @e; notifications/cancelled cancels it. At the end the
 * calls still running are cancelled (and not answered) and get 10 s to wind
 * down. @opts may be NULL (the defaults). The descriptors stay the caller's;
 * nothing is written to @out_fd after the return. Writes block: a client that
 * stops reading stalls the answers and the progress of its calls. A host
 * ignores SIGPIPE (a client that goes away is then -EPIPE). The server
 * prints nothing: its lines for a human go to @opts->log.
 *
 * Returns 0 after EOF or a stop. -EPIPE (or another write error) when @out_fd
 * broke, and a read error of @in_fd, after the same wind-down. -EBUSY when
 * calls outlived the wind-down (a host tool that never answers): they still
 * use @e, which must then not be freed (exiting the process is fine).
 * -EINVAL for an engine not started or bad @opts. Any thread; several
 * servers may share one engine.
 */
PTC_EXPORT int ptc_mcp_serve(ptc_engine *e, int in_fd, int out_fd, const struct ptc_mcp_opts *opts,
                             struct ptc_diag *diag);

/* ------------------------------------------------------------------------------------------ */
/* Agent: the remote end of a run on a remote backend (docs/remote.md)                          */

/*
 * Serve one remote run on two descriptors, the channel a host opened to this machine
 * (`ptc agent`, which a host's `--backend ssh:...` starts through the channel): write the
 * stream's magic and hello to @out_fd, take the host's hello and run frames from @in_fd,
 * run the script here with the host's configuration (the tools on files and processes run
 * here, the web and the host's tools are forwarded to it), stream the script's output as
 * it is written, stop it when the host says so or goes away, and end with an exit frame.
 * @out_fd carries nothing but the stream. Blocks the calling thread, which should be the
 * process's main thread; the
 * process's secrets are scrubbed (PTC_ENGINE_SCRUB_PROCESS). A host ignores SIGPIPE.
 *
 * Returns 0 once the exit frame is written; a negative errno when the stream broke or the
 * run could not start (the host was told why with an error frame when the channel still
 * worked). The descriptors stay the caller's.
 */
PTC_EXPORT int ptc_agent_serve(int in_fd, int out_fd, struct ptc_diag *diag);

#ifdef __cplusplus
}
#endif
