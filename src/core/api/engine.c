/* SPDX-License-Identifier: MIT */
/*
 * ptc_engine_*: the configuration (file, then options), host tool
 * registration, the start that freezes it all (secrets, upstream MCP
 * servers, registry), and what a started engine answers: tool names, the
 * schema, the stubs, one direct tool call.
 */

#include "core/api/engine.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/parse-util.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "core/api/api-util.h"
#include "core/mcp/mcp-tools.h"
#include "core/output/redact.h"
#include "core/remote/pool.h"
#include "core/sandbox/sandbox-cwd.h"
#include "core/session/session.h"
#include "core/spawn/interpreter.h"
#include "core/stubs/stubs.h"
#include "core/tools/tool.h"

/* Longest host tool name: a Python identifier in the stubs, a key in the registry. */
#define HOST_TOOL_NAME_MAX 64

int engine_set_timeout(const char *value, double *ret, struct ptc_diag *pd)
{
        double t;

        if (safe_atod(value, &t) < 0 || !(t > 0) || t > 86400)
                return api_diagf(pd, -EINVAL,
                                 "timeout: invalid value '%s' (allowed: a number of seconds, "
                                 "0 < s <= 86400)",
                                 value);
        *ret = t;
        return 0;
}

int engine_set_max_tool_calls(const char *value, int64_t *ret, struct ptc_diag *pd)
{
        int64_t n;

        if (safe_atoi64(value, &n) < 0 || n < 0 || n > 1000000000)
                return api_diagf(pd, -EINVAL,
                                 "max_tool_calls: invalid value '%s' (allowed: an integer "
                                 "0..1000000000)",
                                 value);
        *ret = n;
        return 0;
}

int engine_set_bool(const char *key, const char *value, bool *ret, struct ptc_diag *pd)
{
        if (strcmp(value, "true") == 0)
                *ret = true;
        else if (strcmp(value, "false") == 0)
                *ret = false;
        else
                return api_diagf(pd, -EINVAL, "%s: invalid value '%s' (allowed: true, false)", key,
                                 value);
        return 0;
}

int engine_set_cwd(const char *value, char **ret, struct ptc_diag *pd)
{
        _cleanup_free_ char *p = realpath(value, NULL);
        struct stat st;

        if (!p)
                return api_diagf(pd, -EINVAL, "cwd: cannot use '%s': %s", value, strerror(errno));
        if (stat(p, &st) < 0 || !S_ISDIR(st.st_mode))
                return api_diagf(pd, -EINVAL, "cwd: '%s' is not a directory", p);
        free(*ret);
        *ret = TAKE_PTR(p);
        return 0;
}

static int add_warning_lines(ptc_engine *e, char **w)
{
        for (char **l = w; l && *l; l++)
                if (strv_extend(&e->warnings, *l) < 0)
                        return -ENOMEM;
        return 0;
}

PTC_EXPORT int ptc_engine_new(const char *config_file, unsigned flags, ptc_engine **ret,
                              struct ptc_diag *diag)
{
        ptc_engine *e;
        int r;

        if (!ret)
                return api_diagf(diag, -EINVAL, "no place for the engine");
        *ret = NULL;
        e = calloc(1, sizeof(*e));
        if (!e)
                return api_diagf(diag, -ENOMEM, "out of memory");
        e->flags = flags;
        e->t_created = now_usec();
        pthread_mutex_init(&e->tool_python_lock, NULL);
        pthread_mutex_init(&e->sessions_lock, NULL);
        r = config_init(&e->config);
        if (r < 0)
                api_diagf(diag, r, "out of memory");
        else if (!(flags & PTC_ENGINE_NO_CONFIG_FILE))
                r = ptc_engine_load_config(e, config_file, diag);
        if (r < 0) {
                ptc_engine_free(e);
                return r;
        }
        /* The script's limit, before a host such as ptc run raises its own. */
        e->have_nofile = getrlimit(RLIMIT_NOFILE, &e->nofile) == 0;
        e->t_configured = now_usec();
        *ret = e;
        return 0;
}

PTC_EXPORT int ptc_engine_load_config(ptc_engine *e, const char *config_file, struct ptc_diag *diag)
{
        _cleanup_free_ char *path = NULL;
        struct diag d = {};
        int r;

        if (!e)
                return api_diagf(diag, -EINVAL, "ptc_engine_load_config: no engine");
        if (e->started)
                return api_diagf(diag, -EBUSY, "the engine has started; options are frozen");
        /* For ptc_doctor_report(): the file read, or where the default one would be. */
        if (config_file ? !(path = strdup(config_file)) : config_default_path(&path) == -ENOMEM)
                return api_diagf(diag, -ENOMEM, "out of memory");
        free(e->config_path);
        e->config_path = TAKE_PTR(path);
        e->config_explicit = config_file != NULL;
        /* The file's warnings are kept even when a later key fails: they may explain it. */
        r = engine_merge_config(&e->config, config_file, &e->warnings, &d);
        return r < 0 ? api_diag(diag, r, &d) : 0;
}

PTC_EXPORT ptc_engine *ptc_engine_free(ptc_engine *e)
{
        if (!e)
                return NULL;
        /* First: the session interpreters' cells use the registry and the redactor. */
        session_table_free(e->sessions);
        pthread_mutex_destroy(&e->sessions_lock);
        free(e->warm_python);
        backend_pool_free(e->pool);
        registry_free(e->registry);
        mcp_upstreams_free(e->upstreams);
        approver_free(e->approver);
        free(e->extra);
        for (size_t i = 0; i < e->n_host_tools; i++)
                host_tool_release(&e->host_tools[i]);
        free(e->host_tools);
        strv_free(e->base_env);
        redactor_free(e->redactor);
        config_release(&e->config);
        strv_free(e->warnings);
        free(e->config_path);
        free(e->tool_python);
        pthread_mutex_destroy(&e->tool_python_lock);
        /* The scripts' files are work: a private directory stays unless it is empty. */
        if (e->private_cwd)
                (void) rmdir(e->cwd);
        free(e->private_note);
        free(e->cwd);
        free(e);
        return NULL;
}

int engine_sessions(ptc_engine *e, struct session_table **ret)
{
        int r = 0;

        pthread_mutex_lock(&e->sessions_lock);
        if (!e->sessions)
                r = session_table_new((unsigned) e->config.max_sessions,
                                      (usec_t) (e->config.session_idle_timeout * USEC_PER_SEC),
                                      &e->sessions);
        *ret = e->sessions;
        pthread_mutex_unlock(&e->sessions_lock);
        return r;
}

/*
 * PTC_ENGINE_WARM_POOL (docs/sessions.md): session interpreters for the engine's directory,
 * tools and Python, kept ready by the session table's thread. Without an interpreter here, or
 * with a remote backend, there is no pool: runs start cold and say why as they always do.
 */
static void start_warm_pool(ptc_engine *e)
{
        struct session_table *t;
        struct diag d = {};

        if (!(e->flags & PTC_ENGINE_WARM_POOL) || e->config.warm <= 0 || e->pool)
                return;
        /* No run may work there: no session interpreter either (each run says why). */
        if (engine_check_cwd(&e->config, false, e->cwd, NULL) < 0)
                return;
        if (interpreter_resolve_in(&e->config, e->config.mode, e->cwd, &e->warm_python, &d) < 0)
                return;
        e->warm_opts = (struct exec_opts){
                .config = &e->config,
                .registry = e->registry,
                .base_env = e->base_env,
                .redactor = e->redactor,
                .approver = e->approver,
                .python = e->warm_python,
                .cwd = e->cwd,
                .cancel_fd = -1,
                .child_nofile = e->have_nofile ? &e->nofile : NULL,
        };
        if (engine_sessions(e, &t) < 0) {
                free(e->warm_python);
                e->warm_python = NULL;
                return;
        }
        session_table_set_warm(t, (unsigned) e->config.warm, &e->warm_opts);
}

PTC_EXPORT char *ptc_engine_sessions(ptc_engine *e)
{
        struct session_table *t;

        if (!e || engine_sessions(e, &t) < 0)
                return NULL;
        return session_table_list(t);
}

PTC_EXPORT int ptc_engine_close_session(ptc_engine *e, const char *id, unsigned flags,
                                        struct ptc_diag *diag)
{
        struct session_table *t;
        int r;

        if (!e || !id)
                return api_diagf(diag, -EINVAL, "ptc_engine_close_session: a NULL argument");
        if (flags & ~(unsigned) PTC_SESSION_FORGET)
                return api_diagf(diag, -EINVAL, "unknown flags 0x%x", flags);
        r = engine_sessions(e, &t);
        if (r < 0)
                return api_diagf(diag, r, "cannot set up sessions: %s", strerror(-r));
        r = session_close(t, id, flags & PTC_SESSION_FORGET ? NULL : "killed");
        if (r == -ENOENT)
                return api_diagf(diag, r, "no live session '%.64s'", id);
        if (r == -EBUSY)
                return api_diagf(diag, r, "session '%.64s' is running a cell", id);
        return r < 0 ? api_diagf(diag, r, "%s", strerror(-r)) : 0;
}

PTC_EXPORT int ptc_engine_fork_session(ptc_engine *e, const char *id, const char *new_id,
                                       struct ptc_diag *diag)
{
        struct session_table *t;
        struct diag d = {};
        int r;

        if (!e || !id || !new_id)
                return api_diagf(diag, -EINVAL, "ptc_engine_fork_session: a NULL argument");
        if (!session_id_is_valid(id) || !session_id_is_valid(new_id))
                return api_diagf(diag, -EINVAL,
                                 "invalid session id '%.64s' (1 to 64 of A-Z a-z 0-9 . _ -)",
                                 session_id_is_valid(id) ? new_id : id);
        r = engine_sessions(e, &t);
        if (r < 0)
                return api_diagf(diag, r, "cannot set up sessions: %s", strerror(-r));
        r = session_fork(t, id, new_id, &d);
        return r < 0 ? api_diagf(diag, r, "%s", d.message) : 0;
}

PTC_EXPORT int ptc_engine_set(ptc_engine *e, const char *key, const char *value,
                              struct ptc_diag *diag)
{
        struct ptc_config *c;
        struct diag d = {};
        int r;

        if (!e || !key || !value)
                return api_diagf(diag, -EINVAL, "ptc_engine_set: a NULL argument");
        if (e->started)
                return api_diagf(diag, -EBUSY, "%s: the engine has started; options are frozen",
                                 key);
        c = &e->config;
        if (strcmp(key, "timeout") == 0)
                return engine_set_timeout(value, &c->timeout, diag);
        if (strcmp(key, "max_tool_calls") == 0)
                return engine_set_max_tool_calls(value, &c->max_tool_calls, diag);
        if (strcmp(key, "mode") == 0) {
                if (config_parse_mode(value, &c->mode) < 0)
                        return api_diagf(diag, -EINVAL,
                                         "mode: invalid value '%s' (allowed: project, strict)",
                                         value);
                return 0;
        }
        if (strcmp(key, "isolation") == 0) {
                if (config_parse_isolation(value, &c->isolation) < 0)
                        return api_diagf(diag, -EINVAL,
                                         "isolation: invalid value '%s' (allowed: none, auto, "
                                         "strict)",
                                         value);
                return 0;
        }
        if (strcmp(key, "tools") == 0) {
                char **l = NULL;

                r = engine_parse_tools(value, &l);
                if (r < 0)
                        return api_diagf(diag, r, "out of memory");
                strv_free(c->tools);
                c->tools = l;
                return 0;
        }
        if (strcmp(key, "cwd") == 0)
                return engine_set_cwd(value, &e->cwd, diag);
        if (strcmp(key, "log_calls") == 0)
                return engine_set_bool(key, value, &e->log_calls, diag);
        if (strcmp(key, "python") == 0)
                key = "code_execution.python";
        else if (strcmp(key, "backend") == 0)
                key = "code_execution.backend";
        else if (strcmp(key, "remote_cwd") == 0)
                key = "code_execution.remote_cwd";
        /* Any scalar key of the file, through the file's own parser. */
        r = config_set_value(c, key, value, &d);
        return r < 0 ? api_diag(diag, r, &d) : 0;
}

int engine_effective_tools(const ptc_engine *e, char **ret, char ***warnings, struct diag *reterr)
{
        _cleanup_registry_ struct registry *reg = NULL;
        _cleanup_strv_free_ char **w = NULL;
        _cleanup_free_ struct registry_extra_tool *extra = NULL;
        const struct registry *names = e->registry;
        int r;

        if (!e->started) {
                /* What the start would build, without the upstream servers it starts. */
                if (e->n_host_tools > 0) {
                        extra = calloc(e->n_host_tools, sizeof(*extra));
                        if (!extra)
                                return diag_set(reterr, -ENOMEM, "out of memory");
                }
                for (size_t i = 0; i < e->n_host_tools; i++)
                        extra[i] = host_tool_extra(&e->host_tools[i]);
                r = engine_build_registry(&e->config, NULL, extra, e->n_host_tools, &reg, &w,
                                          reterr);
                if (r < 0)
                        return r;
                for (char **l = w; warnings && l && *l; l++)
                        if (strv_extend(warnings, *l) < 0)
                                return diag_set(reterr, -ENOMEM, "out of memory");
                names = reg;
        }
        *ret = registry_names(names);
        return *ret ? 0 : diag_set(reterr, -ENOMEM, "out of memory");
}

PTC_EXPORT int ptc_engine_get(const ptc_engine *e, const char *key, char **ret,
                              struct ptc_diag *diag)
{
        struct diag d = {};
        int r;

        if (!e || !key || !ret)
                return api_diagf(diag, -EINVAL, "ptc_engine_get: a NULL argument");
        *ret = NULL;
        /* The short keys of ptc_engine_set() that are names of the file's keys. */
        if (strcmp(key, "timeout") == 0)
                key = "code_execution.timeout";
        else if (strcmp(key, "max_tool_calls") == 0)
                key = "code_execution.max_tool_calls";
        else if (strcmp(key, "mode") == 0)
                key = "code_execution.mode";
        else if (strcmp(key, "python") == 0)
                key = "code_execution.python";
        else if (strcmp(key, "isolation") == 0)
                key = "sandbox.isolation";
        else if (strcmp(key, "backend") == 0)
                key = "code_execution.backend";
        else if (strcmp(key, "remote_cwd") == 0)
                key = "code_execution.remote_cwd";

        if (strcmp(key, "tools") == 0 || strcmp(key, "code_execution.tools") == 0)
                r = engine_effective_tools(e, ret, NULL, &d);
        else if (strcmp(key, "cwd") == 0) {
                /* Unset: the directory the start will take ("."). */
                *ret = e->cwd ? strdup(e->cwd) : realpath(".", NULL);
                if (!*ret)
                        return api_diagf(diag, -errno, "cwd: %s", strerror(errno));
                return 0;
        } else if (strcmp(key, "config_file") == 0)
                /* Read-only: the file read, or where the default one would be; "" for none. */
                r = (*ret = strdup(e->config_path ? e->config_path : "")) ? 0 : -ENOMEM;
        else if (strcmp(key, "log_calls") == 0)
                r = (*ret = strdup(e->log_calls ? "true" : "false")) ? 0 : -ENOMEM;
        else
                r = config_get_value(&e->config, key, ret, &d);
        if (r == -ENOMEM && !d.message[0])
                diag_set(&d, r, "out of memory");
        return r < 0 ? api_diag(diag, r, &d) : 0;
}

static bool host_tool_name_ok(const char *s)
{
        size_t n = 0;

        for (; s[n]; n++)
                if (!((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') || s[n] == '_'))
                        return false;
        return n > 0 && n <= HOST_TOOL_NAME_MAX && !(s[0] >= '0' && s[0] <= '9');
}

PTC_EXPORT int ptc_engine_add_tool(ptc_engine *e, const struct ptc_tool_def *def,
                                   struct ptc_diag *diag)
{
        return engine_add_host_tool(e, def, false, diag);
}

int engine_add_host_tool(ptc_engine *e, const struct ptc_tool_def *def, bool shadow_builtin,
                         struct ptc_diag *diag)
{
        struct host_tool h = {}, *a;
        json_error_t jerr;

        if (!e || !def || !def->name)
                return api_diagf(diag, -EINVAL, "ptc_engine_add_tool: a NULL argument");
        if (e->started)
                return api_diagf(diag, -EBUSY, "host tool '%s': the engine has started", def->name);
        /* Every member up to userdata: a def from these headers or a later, longer one. */
        if (def->size < offsetof(struct ptc_tool_def, userdata) + sizeof(def->userdata))
                return api_diagf(diag, -EINVAL, "host tool '%s': struct ptc_tool_def.size is %zu",
                                 def->name, def->size);
        if (!host_tool_name_ok(def->name))
                return api_diagf(diag, -EINVAL,
                                 "host tool '%s': invalid name (allowed: [a-z0-9_]+, at most "
                                 "%d bytes, not starting with a digit)",
                                 def->name, HOST_TOOL_NAME_MAX);
        if (!def->fn)
                return api_diagf(diag, -EINVAL, "host tool '%s': no callback", def->name);
        for (size_t i = 0; !shadow_builtin && tool_known_names[i]; i++)
                if (strcmp(tool_known_names[i], def->name) == 0)
                        return api_diagf(diag, -EINVAL,
                                         "host tool '%s': the name of a builtin tool", def->name);
        for (size_t i = 0; i < e->n_host_tools; i++)
                if (strcmp(e->host_tools[i].name, def->name) == 0)
                        return api_diagf(diag, -EINVAL, "host tool '%s': registered twice",
                                         def->name);

        h.parameters =
                json_loads(def->parameters_json ? def->parameters_json
                                                : "{\"type\": \"object\", \"properties\": {}}",
                           JSON_REJECT_DUPLICATES, &jerr);
        if (!h.parameters || !json_is_object(h.parameters)) {
                json_decref(h.parameters);
                return api_diagf(
                        diag, -EINVAL, "host tool '%s': parameters_json is not a JSON object%s%s",
                        def->name, h.parameters ? "" : ": ", h.parameters ? "" : jerr.text);
        }
        h.name = strdup(def->name);
        h.description = strdup(def->description ? def->description : "");
        h.returns = def->returns ? strdup(def->returns) : NULL;
        h.fn = def->fn;
        h.userdata = def->userdata;
        a = realloc(e->host_tools, (e->n_host_tools + 1) * sizeof(*a));
        if (!h.name || !h.description || (def->returns && !h.returns) || !a) {
                if (a)
                        e->host_tools = a;
                host_tool_release(&h);
                return api_diagf(diag, -ENOMEM, "out of memory");
        }
        e->host_tools = a;
        e->host_tools[e->n_host_tools++] = h;
        return 0;
}

/* The registry's extra tools: the host's, then the upstream servers'. */
static int build_extra(ptc_engine *e)
{
        const struct registry_extra_tool *up;
        size_t n_up = 0;

        up = mcp_upstreams_tools(e->upstreams, &n_up);
        if (e->n_host_tools + n_up == 0)
                return 0;
        e->extra = calloc(e->n_host_tools + n_up, sizeof(*e->extra));
        if (!e->extra)
                return -ENOMEM;
        for (size_t i = 0; i < e->n_host_tools; i++)
                e->extra[e->n_extra++] = host_tool_extra(&e->host_tools[i]);
        for (size_t i = 0; i < n_up; i++)
                e->extra[e->n_extra++] = up[i];
        return 0;
}

/*
 * The engine's working directory: "cwd", else the current one. With PTC_ENGINE_PRIVATE_CWD,
 * one a confined run may not have (docs/isolation.md) is refused when it was set, and
 * replaced by a private one when it was not.
 */
static int start_cwd(ptc_engine *e, struct ptc_diag *diag)
{
        _cleanup_free_ char *note = NULL, *dir = NULL;
        bool chosen = e->cwd != NULL;
        char why[128], started[PATH_MAX + 160];
        struct diag d = {};
        int r;

        if (!e->cwd) {
                r = engine_set_cwd(".", &e->cwd, diag);
                if (r < 0)
                        return r;
        }
        /* Other engines may never run a script here (ptc schema, ptc tool): their runs are
         * refused, each (ptc_execution_run()). */
        if (!(e->flags & PTC_ENGINE_PRIVATE_CWD))
                return 0;
        /* A server's explicit choice is refused, never replaced. */
        if (chosen || !engine_cwd_is_judged(&e->config, e->config.backends != NULL) ||
            sandbox_cwd_refused(e->cwd, why, sizeof(why)) <= 0)
                return engine_check_cwd(&e->config, e->config.backends != NULL, e->cwd, diag);
        (void) snprintf(started, sizeof(started), "'%s' (%s)", e->cwd, why);
        r = engine_make_private_cwd(started, &dir, &note, &d);
        if (r < 0)
                return api_diag(diag, r, &d);
        if (strv_extend(&e->warnings, note) < 0) {
                (void) rmdir(dir);
                return api_diagf(diag, -ENOMEM, "out of memory");
        }
        free(e->cwd);
        e->cwd = TAKE_PTR(dir);
        e->private_cwd = true;
        e->private_note = TAKE_PTR(note);
        return 0;
}

PTC_EXPORT int ptc_engine_start(ptc_engine *e, struct ptc_diag *diag)
{
        _cleanup_strv_free_ char **warnings = NULL;
        struct diag d = {};
        int r;

        if (!e)
                return api_diagf(diag, -EINVAL, "ptc_engine_start: no engine");
        if (e->started)
                return api_diagf(diag, -EALREADY, "the engine has started already");
        e->t_start = now_usec();
        r = start_cwd(e, diag);
        if (r < 0)
                return r;
        r = engine_prepare_secrets(&e->config, e->flags & PTC_ENGINE_SCRUB_PROCESS, &e->redactor,
                                   &e->base_env, NULL, &d);
        if (r >= 0)
                r = engine_start_upstreams(&e->config, e->base_env, &e->upstreams, &warnings, &d);
        if (r >= 0) {
                r = build_extra(e);
                if (r < 0)
                        diag_set(&d, r, "out of memory");
        }
        if (r >= 0)
                r = engine_build_registry(&e->config, NULL, e->extra, e->n_extra, &e->registry,
                                          &warnings, &d);
        if (r >= 0 && e->config.backends)
                r = backend_pool_new(e->config.backends, (unsigned) e->config.backend_concurrency,
                                     &e->pool, &d);
        if (add_warning_lines(e, warnings) < 0 && r >= 0)
                r = diag_set(&d, -ENOMEM, "out of memory");
        if (r < 0) {
                e->pool = backend_pool_free(e->pool);
                e->registry = registry_free(e->registry);
                e->upstreams = mcp_upstreams_free(e->upstreams);
                free(e->extra);
                e->extra = NULL;
                e->n_extra = 0;
                e->base_env = strv_free(e->base_env);
                e->redactor = redactor_free(e->redactor);
                return api_diag(diag, r, &d);
        }
        e->started = true;
        e->t_started = now_usec();
        start_warm_pool(e);
        return 0;
}

PTC_EXPORT char *ptc_engine_warnings(const ptc_engine *e)
{
        _cleanup_buf_ struct buf b = BUF_INIT(SIZE_MAX);

        for (char **w = e ? e->warnings : NULL; w && *w; w++)
                if (buf_append_str(&b, *w) < 0 || buf_append_str(&b, "\n") < 0)
                        return NULL;
        return buf_steal(&b, NULL) ?: strdup("");
}

PTC_EXPORT char *ptc_engine_tool_names(const ptc_engine *e)
{
        if (!e || !e->started)
                return strdup("");
        return registry_names(e->registry);
}

PTC_EXPORT int ptc_engine_schema(const ptc_engine *e, char **ret, struct ptc_diag *diag)
{
        json_auto_t *schema = NULL;
        int r;

        if (!e || !ret || !e->started)
                return api_diagf(diag, -EINVAL, "the engine is not started");
        r = schema_build(e->registry, e->config.mode, &e->config, &schema);
        if (r < 0)
                return api_diagf(diag, r, "cannot build the schema: %s", strerror(-r));
        *ret = api_json_text(schema);
        return *ret ? 0 : api_diagf(diag, -ENOMEM, "out of memory");
}

PTC_EXPORT int ptc_engine_stubs(const ptc_engine *e, char **ret, struct ptc_diag *diag)
{
        int r;

        if (!e || !ret || !e->started)
                return api_diagf(diag, -EINVAL, "the engine is not started");
        r = stubs_generate(e->registry, e->config.module_name, ret);
        if (r < 0)
                return api_diagf(diag, r, "cannot generate the module: %s", strerror(-r));
        return 0;
}

/*
 * The interpreter of the linters (strict mode's: it does not depend on a directory), resolved
 * once per engine by the first call that needs it; NULL when there is none (the .py lint is
 * skipped). Borrowed: lives as long as the engine.
 */
static const char *tool_python(ptc_engine *e)
{
        const char *python;

        pthread_mutex_lock(&e->tool_python_lock);
        if (!e->tool_python_resolved) {
                struct diag d = {};
                int r = interpreter_resolve(&e->config, PTC_MODE_STRICT, &e->tool_python, &d);

                if (r < 0)
                        e->tool_python = NULL;
                /* Out of memory is not an answer: the next call asks again. */
                e->tool_python_resolved = r != -ENOMEM;
        }
        python = e->tool_python;
        pthread_mutex_unlock(&e->tool_python_lock);
        return python;
}

int engine_call_tool(ptc_engine *e, const struct tool *t, json_t *args, usec_t deadline,
                     int cancel_fd, struct approver *approver, json_t **ret, struct ptc_diag *pd)
{
        int r;

        {
                struct tool_ctx ctx = {
                        .config = &e->config,
                        .cwd = e->cwd,
                        .env = e->base_env,
                        .deadline = deadline,
                        .cancel_fd = cancel_fd,
                        .redactor = e->redactor,
                        .approver = approver ?: e->approver,
                        /* Only linters need it; without one .py linting is skipped. */
                        .python = tool_python(e),
                };
                /* The same dropped arguments, error mapping and redaction as a script's call. */
                r = registry_call_tool(t, &ctx, args, ret, NULL);
        }
        if (r < 0)
                return api_diagf(pd, r, "cannot call '%s': %s", t->name, strerror(-r));
        return 0;
}

PTC_EXPORT int ptc_engine_call_tool(ptc_engine *e, const char *name, const char *args_json,
                                    char **ret, struct ptc_diag *diag)
{
        json_auto_t *args = NULL;
        json_t *result = NULL;
        const struct tool *t;
        json_error_t jerr;
        int r;

        if (!e || !name || !ret || !e->started)
                return api_diagf(diag, -EINVAL, "the engine is not started");
        t = registry_find(e->registry, name);
        if (!t) {
                _cleanup_free_ char *names = registry_names(e->registry);
                return api_diagf(diag, -ENOENT, "unknown tool '%s' (available: %s)", name,
                                 names ? names : "");
        }
        args = json_loads(args_json ? args_json : "", JSON_REJECT_DUPLICATES, &jerr);
        if (!args || !json_is_object(args))
                return api_diagf(diag, -EINVAL, "the arguments must be a JSON object: %s",
                                 args ? "got another JSON value" : jerr.text);
        r = engine_call_tool(e, t, args, USEC_INFINITY, -1, NULL, &result, diag);
        if (r < 0)
                return r;
        *ret = api_json_text(result);
        json_decref(result);
        return *ret ? 0 : api_diagf(diag, -ENOMEM, "out of memory");
}
