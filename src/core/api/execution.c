/* SPDX-License-Identifier: MIT */
/*
 * ptc_execution_*: one script on a started engine, through exec_run(). The
 * execution keeps its own copy of the few per-run options (a shallow copy of
 * the engine's config: the strings stay the engine's, which is immutable once
 * started) and an eventfd that ptc_execution_cancel() writes from any thread,
 * watched by the run's event loop (exec_opts.cancel_fd).
 */

#include "core/api/execution.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/fd-util.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "core/api/api-util.h"
#include "core/api/engine.h"
#include "core/env/env.h"
#include "core/events/events.h"
#include "core/events/trace.h"
#include "core/exec/exec-interp.h"
#include "core/exec/exec.h"
#include "core/exec/result.h"
#include "core/output/redact.h"
#include "core/policy/approval.h"
#include "core/remote/backend.h"
#include "core/remote/pool.h"
#include "core/session/session.h"
#include "core/spawn/interpreter.h"
#include "core/stubs/stubs.h"

struct ptc_execution {
        ptc_engine *engine;
        struct ptc_config config; /* the engine's, shallow: only scalars are ours */
        char *cwd;
        bool log_calls;
        struct registry *registry; /* a "tools" subset, or NULL for the engine's */
        ptc_progress_fn progress;
        void *progress_userdata;
        const struct backend *backend; /* execution_set_backend(): not the engine's pool */
        struct approver *approver;     /* execution_set_approver(): not the engine's */
        struct approver *own_approver; /* execution_adopt_approver(): ours, with ... */
        void *own_approver_data;       /* ... its host's data (ptc_execution_set_approver()) */
        ptc_event_fn event_fn;         /* ptc_execution_on_event() */
        void *event_userdata;
        struct event_sink *events; /* the run's, while it runs */
        char *trace_path;          /* "trace": where the run's trace goes; NULL: none */
        struct trace *trace;       /* the run's, while it runs */
        void (*output)(void *userdata, bool is_err, const char *p, size_t n);
        void *output_userdata;
        int cancel_fd;
        const char *reason; /* atomic: set before cancel_fd is written */
        char *session;      /* "session": run as a cell of this session (docs/sessions.md) */
        bool reset;         /* "reset": a new interpreter for the session first */
        char *fork_from;    /* "fork_from": the session starts as a copy of this one */
        bool ran;
        char **warnings;           /* the run's (isolation auto's left-out layers), one line each */
        bool warnings_lost;        /* out of memory on the way */
        struct redactor *redactor; /* ptc_execution_add_secrets(): the engine's secrets and these */
};

PTC_EXPORT int ptc_execution_new(ptc_engine *e, ptc_execution **ret, struct ptc_diag *diag)
{
        ptc_execution *x;

        if (!e || !ret || !e->started)
                return api_diagf(diag, -EINVAL, "the engine is not started");
        x = calloc(1, sizeof(*x));
        if (!x)
                return api_diagf(diag, -ENOMEM, "out of memory");
        x->engine = e;
        x->config = e->config;
        x->log_calls = e->log_calls;
        x->cwd = strdup(e->cwd);
        x->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (!x->cwd || x->cancel_fd < 0) {
                int r = x->cancel_fd < 0 ? -errno : -ENOMEM;
                ptc_execution_free(x);
                return api_diagf(diag, r, "cannot create the execution: %s", strerror(-r));
        }
        *ret = x;
        return 0;
}

PTC_EXPORT ptc_execution *ptc_execution_free(ptc_execution *x)
{
        if (!x)
                return NULL;
        registry_free(x->registry);
        redactor_free(x->redactor);
        approver_free(x->own_approver);
        free(x->own_approver_data);
        free(x->session);
        free(x->fork_from);
        free(x->trace_path);
        strv_free(x->warnings);
        safe_close(x->cancel_fd);
        free(x->cwd);
        free(x);
        return NULL;
}

/*
 * Whether @a and @b give a script the same module (the same tools, as the same functions):
 * then a run with @a is a run with the engine's tools, which the warm pool serves.
 */
static bool same_tools(const struct registry *a, const struct registry *b, const char *module)
{
        _cleanup_free_ char *na = registry_names(a), *nb = registry_names(b);
        _cleanup_free_ char *sa = NULL, *sb = NULL;

        if (!na || !nb || strcmp(na, nb) != 0)
                return false;
        return stubs_generate(a, module, &sa) >= 0 && stubs_generate(b, module, &sb) >= 0 &&
               strcmp(sa, sb) == 0;
}

/* "tools" for one run: a subset of the engine's enabled tools. */
static int set_tools(ptc_execution *x, const char *value, struct ptc_diag *diag)
{
        ptc_engine *e = x->engine;
        _cleanup_strv_free_ char **l = NULL, **warnings = NULL;
        struct registry *reg = NULL;
        struct diag d = {};
        int r;

        r = engine_parse_tools(value, &l);
        if (r < 0)
                return api_diagf(diag, r, "out of memory");
        for (char **n = l; *n; n++)
                if (!registry_find(e->registry, *n)) {
                        _cleanup_free_ char *names = registry_names(e->registry);
                        return api_diagf(diag, -EINVAL,
                                         "tools: '%s' is not one of the engine's tools (%s)", *n,
                                         names ? names : "");
                }
        r = engine_build_registry(&x->config, l, e->extra, e->n_extra, &reg, &warnings, &d);
        if (r < 0)
                return api_diag(diag, r, &d);
        registry_free(x->registry);
        x->registry =
                same_tools(reg, e->registry, x->config.module_name) ? registry_free(reg) : reg;
        return 0;
}

/* A session id option: "" is none. */
static int set_session_id(const char *key, const char *value, char **id, struct ptc_diag *diag)
{
        char *copy;

        if (value[0] == 0) {
                *id = mfree_str(*id);
                return 0;
        }
        if (!session_id_is_valid(value))
                return api_diagf(diag, -EINVAL,
                                 "%s: invalid id '%.80s' (allowed: 1 to %d of A-Z a-z 0-9 . _ -)",
                                 key, value, SESSION_ID_MAX);
        copy = strdup(value);
        if (!copy)
                return api_diagf(diag, -ENOMEM, "out of memory");
        free(*id);
        *id = copy;
        return 0;
}

/* "cwd": a directory a confined run may have (docs/isolation.md); else the old one stays. */
static int set_cwd(ptc_execution *x, const char *value, struct ptc_diag *diag)
{
        _cleanup_free_ char *cwd = NULL;
        int r;

        r = engine_set_cwd(value, &cwd, diag);
        if (r < 0)
                return r;
        /* A run's backend is the engine's pool, or this machine. */
        r = engine_check_cwd(&x->config, x->engine->pool != NULL, cwd, diag);
        if (r < 0)
                return r;
        free(x->cwd);
        x->cwd = TAKE_PTR(cwd);
        return 0;
}

PTC_EXPORT int ptc_execution_set(ptc_execution *x, const char *key, const char *value,
                                 struct ptc_diag *diag)
{
        if (!x || !key || !value)
                return api_diagf(diag, -EINVAL, "ptc_execution_set: a NULL argument");
        if (x->ran)
                return api_diagf(diag, -EBUSY, "%s: the execution has run", key);
        if (strcmp(key, "timeout") == 0)
                return engine_set_timeout(value, &x->config.timeout, diag);
        if (strcmp(key, "max_tool_calls") == 0)
                return engine_set_max_tool_calls(value, &x->config.max_tool_calls, diag);
        if (strcmp(key, "tools") == 0)
                return set_tools(x, value, diag);
        if (strcmp(key, "cwd") == 0)
                return set_cwd(x, value, diag);
        if (strcmp(key, "log_calls") == 0)
                return engine_set_bool(key, value, &x->log_calls, diag);
        if (strcmp(key, "session") == 0)
                return set_session_id(key, value, &x->session, diag);
        if (strcmp(key, "fork_from") == 0)
                return set_session_id(key, value, &x->fork_from, diag);
        if (strcmp(key, "reset") == 0)
                return engine_set_bool(key, value, &x->reset, diag);
        if (strcmp(key, "trace") == 0) {
                char *p = value[0] ? strdup(value) : NULL;

                if (value[0] && !p)
                        return api_diagf(diag, -ENOMEM, "out of memory");
                free(x->trace_path);
                x->trace_path = p;
                return 0;
        }
        return api_diagf(diag, -EINVAL,
                         "unknown option '%s' for an execution (allowed: timeout, "
                         "max_tool_calls, tools, cwd, log_calls, session, reset, fork_from, "
                         "trace)",
                         key);
}

PTC_EXPORT int ptc_execution_on_progress(ptc_execution *x, ptc_progress_fn fn, void *userdata)
{
        if (!x)
                return -EINVAL;
        if (x->ran)
                return -EBUSY;
        x->progress = fn;
        x->progress_userdata = userdata;
        return 0;
}

PTC_EXPORT int ptc_execution_on_event(ptc_execution *x, ptc_event_fn fn, void *userdata)
{
        if (!x)
                return -EINVAL;
        if (x->ran)
                return -EBUSY;
        x->event_fn = fn;
        x->event_userdata = userdata;
        return 0;
}

static int write_event(void *userdata, const char *line, size_t n)
{
        ptc_execution *x = userdata;

        return x->event_fn(line, n, x->event_userdata);
}

/* The start event: what the run is about to do (docs/observability.md); @backend NULL: this
 * machine, or a target of the engine's pool, not picked yet. */
static void emit_start(ptc_execution *x, const struct backend *backend)
{
        _cleanup_free_ char *tools =
                registry_names(x->registry ? x->registry : x->engine->registry);
        _cleanup_free_ char *pool = NULL;

        if (!backend && x->engine->pool &&
            config_get_value(&x->config, "code_execution.backend", &pool, NULL) < 0)
                pool = NULL;

        event_emit(x->events, "start",
                   json_pack("{s:f, s:I, s:s, s:s, s:s, s:s, s:s*, s:s*}", "timeout",
                             x->config.timeout, "max_tool_calls",
                             (json_int_t) x->config.max_tool_calls, "mode",
                             config_mode_to_string(x->config.mode), "isolation",
                             config_isolation_to_string(x->config.isolation), "tools",
                             tools ? tools : "", "cwd", x->cwd, "backend",
                             backend && backend->kind != BACKEND_LOCAL ? backend->spec : pool,
                             "session", x->session));
}

/* The end event: the result as the host gets it, and the events that could not go out. */
static void emit_end(ptc_execution *x, const char *result_json)
{
        json_t *result;

        if (!x->events)
                return;
        event_output_flush(x->events);
        result = json_loads(result_json ? result_json : "null", JSON_DECODE_ANY, NULL);
        event_emit(x->events, "end",
                   json_pack("{s:o?, s:I}", "result", result, "events_dropped",
                             (json_int_t) event_sink_dropped(x->events)));
}

int execution_set_backend(ptc_execution *x, const struct backend *backend)
{
        if (!x)
                return -EINVAL;
        if (x->ran)
                return -EBUSY;
        x->backend = backend;
        return 0;
}

int execution_set_approver(ptc_execution *x, struct approver *a)
{
        if (!x)
                return -EINVAL;
        if (x->ran)
                return -EBUSY;
        x->approver = a;
        return 0;
}

PTC_EXPORT int ptc_execution_add_secrets(ptc_execution *x, const char *const *env,
                                         struct ptc_diag *diag)
{
        int r;

        if (!x)
                return api_diagf(diag, -EINVAL, "ptc_execution_add_secrets: a NULL execution");
        if (x->ran)
                return api_diagf(diag, -EBUSY, "ptc_execution_add_secrets: the execution ran");
        if (!env)
                return 0;
        if (!x->redactor) {
                r = redactor_new(&x->redactor);
                if (r >= 0)
                        r = redactor_add_secrets_of(x->redactor, x->engine->redactor);
                if (r < 0) {
                        x->redactor = redactor_free(x->redactor);
                        return api_diagf(diag, r, "ptc_execution_add_secrets: %s", strerror(-r));
                }
        }
        r = env_read_secrets((char *const *) env, x->config.env_passthrough, x->redactor);
        if (r < 0)
                return api_diagf(diag, r, "ptc_execution_add_secrets: %s", strerror(-r));
        return 0;
}

PTC_EXPORT int ptc_secret_name(const char *name)
{
        return name && env_name_is_secret(name);
}

int execution_adopt_approver(ptc_execution *x, struct approver *a, void *host_data)
{
        if (!x)
                return -EINVAL;
        if (x->ran)
                return -EBUSY;
        approver_free(x->own_approver);
        free(x->own_approver_data);
        x->own_approver = a;
        x->own_approver_data = host_data;
        x->approver = a;
        return 0;
}

int execution_on_output(ptc_execution *x,
                        void (*fn)(void *userdata, bool is_err, const char *p, size_t n),
                        void *userdata)
{
        if (!x)
                return -EINVAL;
        if (x->ran)
                return -EBUSY;
        x->output = fn;
        x->output_userdata = userdata;
        return 0;
}

static void on_call(void *userdata, const char *tool, int64_t count)
{
        ptc_execution *x = userdata;

        x->progress(tool, count, x->progress_userdata);
}

/* exec_opts.on_warning: on the thread of the run, which owns the execution meanwhile. */
static void on_warning(void *userdata, const char *line)
{
        ptc_execution *x = userdata;

        if (strv_extend(&x->warnings, line) < 0)
                x->warnings_lost = true;
}

PTC_EXPORT char *ptc_execution_warnings(const ptc_execution *x)
{
        _cleanup_buf_ struct buf b = BUF_INIT(SIZE_MAX);

        for (char **w = x ? x->warnings : NULL; w && *w; w++)
                if (buf_append_str(&b, *w) < 0 || buf_append_str(&b, "\n") < 0)
                        return NULL;
        if (x && x->warnings_lost &&
            buf_append_str(&b, "some warnings were lost: out of memory\n") < 0)
                return NULL;
        return buf_steal(&b, NULL) ?: strdup("");
}

static enum ptc_status status_of(enum exec_status s)
{
        switch (s) {
        case EXEC_SUCCESS:
                return PTC_STATUS_SUCCESS;
        case EXEC_TIMEOUT:
                return PTC_STATUS_TIMEOUT;
        case EXEC_INTERRUPTED:
                return PTC_STATUS_INTERRUPTED;
        case EXEC_ERROR:
        default:
                return PTC_STATUS_ERROR;
        }
}

/*
 * The run as the next cell of session x->session (docs/sessions.md): the result gains
 * "session", "cell", and "session_lost" when the interpreter died with the cell, or
 * "session_note" when a new interpreter started for an id that had one.
 */
static int run_cell(ptc_execution *x, const struct exec_opts *eo, json_t **ret,
                    enum exec_status *ret_status, struct diag *reterr)
{
        struct session_table *t;
        struct session_lease lease;
        bool lost = false;
        json_t *res;
        usec_t t0;
        int r;

        if (!eo->code || eo->code_len == 0)
                return exec_run(eo, ret, ret_status, reterr); /* "No code provided." */
        r = engine_sessions(x->engine, &t);
        if (r < 0)
                return diag_set(reterr, r, "cannot set up sessions: %s", strerror(-r));
        if (x->fork_from) {
                if (x->reset)
                        return diag_set(reterr, -EINVAL,
                                        "fork_from and reset do not go together: a fork starts "
                                        "from the state of session '%s'",
                                        x->fork_from);
                r = session_fork(t, x->fork_from, x->session, reterr);
                if (r < 0)
                        return r;
        }
        t0 = now_usec();
        r = session_begin(t, x->session, x->reset, eo, &lease, reterr);
        if (r < 0)
                return r;
        /* A new interpreter's start is in here. */
        trace_span_now(eo->trace, "session", "setup", t0,
                       json_pack("{s:b}", "new_kernel", lease.cell == 1));
        /* An interpreter from an earlier cell: what its start left out binds this one too. */
        if (lease.cell > 1)
                for (char *const *w = exec_interp_warnings(lease.interp); w && *w; w++)
                        on_warning(x, *w);
        r = exec_interp_run_cell(lease.interp, eo, false, &res, ret_status, &lost, reterr);
        {
                unsigned cell = lease.cell;
                char note[sizeof(lease.note)];

                memcpy(note, lease.note, sizeof(note));
                session_end(t, &lease, lost || r < 0);
                if (r < 0)
                        return r;
                if (json_object_set_new(res, "session", json_string(x->session)) < 0 ||
                    json_object_set_new(res, "cell", json_integer(cell)) < 0 ||
                    (lost && json_object_set_new(res, "session_lost", json_true()) < 0) ||
                    (note[0] && json_object_set_new(res, "session_note", json_string(note)) < 0)) {
                        json_decref(res);
                        return diag_set(reterr, -ENOMEM, "out of memory");
                }
        }
        *ret = res;
        return 0;
}

static bool code_is_blank(const char *code, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (!strchr(" \t\n\r\f\v", code[i]) || code[i] == 0)
                        return false;
        return true;
}

/*
 * Whether the engine's warm pool serves this run: an interpreter there was started for the
 * engine's directory, tools and interpreter, so only a run with exactly those can take one
 * and get what a cold run would (docs/sessions.md, "Warm pool").
 */
static bool warm_pool_fits(const ptc_execution *x, const char *python,
                           const struct backend *backend)
{
        const ptc_engine *e = x->engine;

        return e->warm_python && python && (!backend || backend->kind == BACKEND_LOCAL) &&
               !x->registry && !x->output && strcmp(x->cwd, e->cwd) == 0 &&
               strcmp(python, e->warm_python) == 0;
}

/* The run on an interpreter of the warm pool, when one is ready; cold otherwise. */
static int run_warm(ptc_execution *x, const struct exec_opts *eo, json_t **ret,
                    enum exec_status *ret_status, struct diag *reterr)
{
        struct session_table *t = x->engine->sessions;
        struct exec_interp *k = t ? session_take_warm(t) : NULL;
        bool lost;
        int r;

        if (!k)
                return exec_run(eo, ret, ret_status, reterr);
        /* What its start said, as a cold start would have said it to this run. */
        for (char *const *w = exec_interp_warnings(k); w && *w; w++)
                on_warning(x, *w);
        r = exec_interp_run_cell(k, eo, true, ret, ret_status, &lost, reterr);
        /* Nothing the run started outlives it; the reaping is the table thread's. */
        exec_interp_kill(k);
        session_discard(t, k);
        return r;
}

/* The run itself, on @backend (NULL: this machine) with @python (local runs). */
static int run(ptc_execution *x, const char *code, size_t code_len, const char *python,
               const struct backend *backend, json_t **ret, enum exec_status *ret_status,
               struct diag *reterr)
{
        ptc_engine *e = x->engine;
        struct exec_opts eo = {
                .code = code,
                .code_len = code ? code_len : 0,
                .config = &x->config,
                .registry = x->registry ? x->registry : e->registry,
                .base_env = e->base_env,
                .redactor = x->redactor ?: e->redactor,
                .approver = x->approver ?: e->approver,
                .python = python,
                .cwd = x->cwd,
                .log_calls = x->log_calls,
                .cancel_fd = x->cancel_fd,
                .cancel_reason = &x->reason,
                .child_nofile = e->have_nofile ? &e->nofile : NULL,
                .on_call = x->progress ? on_call : NULL,
                .on_call_userdata = x,
                .on_warning = on_warning,
                .on_warning_userdata = x,
                .on_output = x->output,
                .on_output_userdata = x->output_userdata,
                .backend = backend,
                .events = x->events,
                .trace = x->trace,
        };

        if (x->fork_from && !x->session)
                return diag_set(reterr, -EINVAL,
                                "fork_from needs session: the id the copy of session '%s' is "
                                "to have",
                                x->fork_from);
        if (x->session)
                return run_cell(x, &eo, ret, ret_status, reterr);
        if (eo.code && !code_is_blank(eo.code, eo.code_len) && warm_pool_fits(x, python, backend))
                return run_warm(x, &eo, ret, ret_status, reterr);
        return exec_run(&eo, ret, ret_status, reterr);
}

/* A target of the engine's backend with room for a run (backend_pool_acquire()). */
static int take_target(ptc_execution *x, const struct backend **ret, size_t *ret_slot,
                       struct ptc_diag *diag, char **ret_json, enum ptc_status *ret_status)
{
        /* Waiting for room takes at most the run's timeout. */
        usec_t deadline = now_usec() + (usec_t) (x->config.timeout * USEC_PER_SEC);
        const char *why;
        int r;

        r = backend_pool_acquire(x->engine->pool, deadline, x->cancel_fd, ret, ret_slot);
        if (r >= 0)
                return 0;
        if (r == -ETIMEDOUT)
                why = "every target of the backend is busy: none had room within the run's "
                      "timeout (see code_execution.backend_concurrency)";
        else if (r == -ECANCELED)
                why = "cancelled while waiting for a target of the backend";
        else
                why = strerror(-r);
        api_diagf(diag, r, "%s", why);
        /* Still a result a host can parse (docs/contracts.md 4). */
        *ret_json = ptc_internal_error_result(why);
        *ret_status = PTC_STATUS_ERROR;
        return r;
}

static int run_with_events(ptc_execution *x, const char *code, size_t code_len, char **ret_json,
                           enum ptc_status *ret_status, struct ptc_diag *diag);

/* The run's trace to its file, with the engine's own phases; a failure is a warning. */
static void write_trace(ptc_execution *x, usec_t t0)
{
        ptc_engine *e = x->engine;
        int r;

        trace_span(x->trace, "config", "engine", e->t_created, e->t_configured, NULL);
        trace_span(x->trace, "engine start", "engine", e->t_start, e->t_started, NULL);
        trace_span_now(x->trace, "run", "run", t0, NULL);
        r = trace_write(x->trace, x->trace_path);
        if (r < 0) {
                char line[PATH_MAX + 128];

                (void) snprintf(line, sizeof(line), "trace: cannot write '%s': %s", x->trace_path,
                                strerror(-r));
                on_warning(x, line);
        }
        x->trace = trace_free(x->trace);
}

PTC_EXPORT int ptc_execution_run(ptc_execution *x, const char *code, size_t code_len,
                                 char **ret_json, enum ptc_status *ret_status,
                                 struct ptc_diag *diag)
{
        ptc_engine *e;
        usec_t t0;
        int r;

        if (!x || !ret_json || !ret_status)
                return api_diagf(diag, -EINVAL, "ptc_execution_run: a NULL argument");
        *ret_json = NULL;
        if (x->ran)
                return api_diagf(diag, -EALREADY, "the execution has run already");
        x->ran = true;
        e = x->engine;
        if (x->event_fn &&
            event_sink_new(write_event, x, x->redactor ?: e->redactor, &x->events) < 0)
                return api_diagf(diag, -ENOMEM, "out of memory");
        if (x->trace_path && trace_new(e->t_created, &x->trace) < 0) {
                x->events = event_sink_free(x->events);
                return api_diagf(diag, -ENOMEM, "out of memory");
        }
        t0 = now_usec();
        r = run_with_events(x, code, code_len, ret_json, ret_status, diag);
        emit_end(x, *ret_json);
        x->events = event_sink_free(x->events);
        if (x->trace)
                write_trace(x, t0);
        return r;
}

/*
 * The result's "warnings" (docs/contracts.md 4): each layer the run went without, and
 * whatever else it did differently than asked, one string each; absent when none.
 */
static int add_warnings(const ptc_execution *x, json_t *result)
{
        json_t *list;

        if (!x->warnings && !x->warnings_lost)
                return 0;
        list = json_array();
        if (!list)
                return -ENOMEM;
        for (char **w = x->warnings; w && *w; w++)
                if (json_array_append_new(list, json_string(*w)) < 0) {
                        json_decref(list);
                        return -ENOMEM;
                }
        if (x->warnings_lost &&
            json_array_append_new(list, json_string("some warnings were lost: out of memory")) <
                    0) {
                json_decref(list);
                return -ENOMEM;
        }
        return json_object_set_new(result, "warnings", list) < 0 ? -ENOMEM : 0;
}

/* The result of a run ptc itself could not do, with the run's warnings. */
static char *internal_error_text(const ptc_execution *x, const char *message)
{
        json_auto_t *r = result_internal_error(message);

        if (!r || add_warnings(x, r) < 0)
                return NULL;
        return api_json_text(r);
}

/* ptc_execution_run() once the events are set up. */
static int run_with_events(ptc_execution *x, const char *code, size_t code_len, char **ret_json,
                           enum ptc_status *ret_status, struct ptc_diag *diag)
{
        ptc_engine *e = x->engine;
        _cleanup_free_ char *python = NULL;
        const struct backend *backend;
        json_t *result = NULL;
        enum exec_status st;
        struct diag d = {};
        bool pooled = false;
        size_t slot = 0;
        int r;

        backend = x->backend;
        emit_start(x, backend);
        /* The engine works in a private directory instead of the one it was started in:
         * the first run that works there says so, where a client shows it. */
        if (e->private_note && strcmp(x->cwd, e->cwd) == 0 &&
            !__atomic_exchange_n(&e->private_noted, true, __ATOMIC_ACQ_REL))
                on_warning(x, e->private_note);
        if (!backend && e->pool) {
                r = take_target(x, &backend, &slot, diag, ret_json, ret_status);
                if (r < 0)
                        return r;
                pooled = true;
        }

        /* The directory, as the engine's start or "cwd" left it: refused before anything
         * runs, as a bad option is (docs/isolation.md). */
        r = engine_check_cwd(&x->config, backend ? backend->kind != BACKEND_LOCAL : e->pool != NULL,
                             x->cwd, diag);
        if (r < 0) {
                if (pooled)
                        backend_pool_release(e->pool, slot);
                return r;
        }
        /* Here, not at start: it depends on this run's directory (a project's venv). A
         * pool's targets are all remote: their interpreter is the target's business. */
        if (!backend || backend->kind == BACKEND_LOCAL) {
                r = interpreter_resolve_in(&x->config, x->config.mode, x->cwd, &python, &d);
                if (r < 0)
                        return api_diag(diag, r, &d);
        }
        r = run(x, code, code_len, python, backend, &result, &st, &d);
        if (pooled)
                backend_pool_release(e->pool, slot);
        if (r < 0) {
                api_diag(diag, r, &d);
                /* ptc itself failed: still a result a host can parse (docs/contracts.md 4). */
                *ret_json = internal_error_text(x, d.message[0] ? d.message : strerror(-r));
                *ret_status = PTC_STATUS_ERROR;
                return r;
        }
        if (add_warnings(x, result) < 0) {
                json_decref(result);
                return api_diagf(diag, -ENOMEM, "out of memory");
        }
        *ret_json = api_json_text(result);
        json_decref(result);
        if (!*ret_json)
                return api_diagf(diag, -ENOMEM, "out of memory");
        *ret_status = status_of(st);
        return 0;
}

PTC_EXPORT void ptc_execution_interrupt(ptc_execution *x, const char *reason)
{
        uint64_t one = 1;

        if (!x)
                return;
        if (reason) {
                const char *none = NULL;
                /* The first reason stays: it is the one the run may already have read. */
                (void) __atomic_compare_exchange_n(&x->reason, &none, reason, false,
                                                   __ATOMIC_RELEASE, __ATOMIC_RELAXED);
        }
        (void) !write(x->cancel_fd, &one, sizeof(one));
}

PTC_EXPORT void ptc_execution_cancel(ptc_execution *x)
{
        ptc_execution_interrupt(x, "cancelled");
}
