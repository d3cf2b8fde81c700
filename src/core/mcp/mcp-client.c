/* SPDX-License-Identifier: MIT */
#include "core/mcp/mcp-client.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "ptc-version.h"

#include "basic/buf.h"
#include "basic/fd-util.h"
#include "basic/log.h"
#include "basic/path-util.h"
#include "basic/strv.h"
#include "core/mcp/mcp-client-internal.h"
#include "core/spawn/proc-tree.h"
#include "core/spawn/spawn.h"

static usec_t usec_sub(usec_t a, usec_t b)
{
        return a > b ? a - b : 0;
}

/* "60", "1.5", "0.3": whole seconds when whole, else tenths. */
static void format_seconds(char *out, size_t n, usec_t usec)
{
        uint64_t tenths = (usec + USEC_PER_SEC / 20) / (USEC_PER_SEC / 10);

        if (tenths % 10 == 0)
                (void) snprintf(out, n, "%" PRIu64, tenths / 10);
        else
                (void) snprintf(out, n, "%" PRIu64 ".%" PRIu64, tenths / 10, tenths % 10);
}

/* ---- tools/call results ---- */

_printf_(2, 3) static int error_result(json_t **ret, const char *fmt, ...)
{
        _cleanup_free_ char *s = NULL;
        json_t *o;
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (k < 0)
                return -ENOMEM;
        /* Every part is ours or came from a parsed JSON string: valid UTF-8. */
        o = json_pack("{s:s}", "error", s);
        if (!o)
                return -ENOMEM;
        *ret = o;
        return 0;
}

static int not_running_result(struct mcp_client *c, json_t **ret)
{
        char st[64];
        const char *s = mcp_status_text(c, st, sizeof(st));

        if (s)
                return error_result(ret, "mcp server '%s' is not running (%s)", c->name, s);
        return error_result(ret, "mcp server '%s' is not running", c->name);
}

static int rpc_error_result(struct mcp_client *c, json_t *err, json_t **ret)
{
        json_t *m = json_object_get(err, "message"), *code = json_object_get(err, "code");

        return error_result(ret, "mcp server '%s': %s (code %" JSON_INTEGER_FORMAT ")", c->name,
                            json_is_string(m) ? json_string_value(m) : "unknown error",
                            json_is_integer(code) ? json_integer_value(code) : (json_int_t) 0);
}

int mcp_map_answer(struct mcp_client *c, const char *tool, json_t *msg, json_t **ret)
{
        _cleanup_buf_ struct buf text = BUF_INIT(MCP_CLIENT_MESSAGE_MAX);
        json_auto_t *others = NULL, *out = NULL;
        json_t *result, *content, *item, *sc;
        size_t i, n_text = 0;

        if (json_is_object(json_object_get(msg, "error")))
                return rpc_error_result(c, json_object_get(msg, "error"), ret);
        result = json_object_get(msg, "result");
        if (!json_is_object(result))
                return error_result(ret, "mcp server '%s': invalid answer to tools/call '%s'",
                                    c->name, tool);

        others = json_array();
        if (!others)
                return -ENOMEM;
        content = json_object_get(result, "content");
        json_array_foreach(content, i, item)
        {
                json_t *type = json_object_get(item, "type"), *t = json_object_get(item, "text");

                if (json_is_string(type) && strcmp(json_string_value(type), "text") == 0 &&
                    json_is_string(t)) {
                        /* The whole message was under the cap, so its text is too. */
                        if ((n_text++ > 0 && buf_append_char(&text, '\n') < 0) ||
                            buf_append(&text, json_string_value(t), json_string_length(t)) < 0)
                                return -ENOMEM;
                } else if (json_array_append(others, item) < 0) {
                        return -ENOMEM;
                }
        }

        if (json_is_true(json_object_get(result, "isError"))) {
                if (n_text == 0 || text.len == 0)
                        return error_result(ret, "mcp server '%s': tool '%s' failed", c->name,
                                            tool);
                out = json_object();
                if (!out ||
                    json_object_set_new(out, "error", json_stringn(buf_str(&text), text.len)) < 0)
                        return -ENOMEM;
                *ret = TAKE_PTR(out);
                return 0;
        }

        sc = json_object_get(result, "structuredContent");
        if (json_is_object(sc)) {
                *ret = json_incref(sc);
                return 0;
        }

        if (n_text > 0) {
                json_auto_t *v = json_loadb(buf_str(&text), text.len, JSON_DECODE_ANY, NULL);

                if (json_is_object(v))
                        out = TAKE_PTR(v);
                else if (v)
                        out = json_pack("{s:O}", "result", v);
                else
                        out = json_pack("{s:s%}", "text", buf_str(&text), text.len);
        } else {
                out = json_object();
        }
        if (!out)
                return -ENOMEM;
        if (json_array_size(others) > 0 && !json_object_get(out, "content") &&
            json_object_set(out, "content", others) < 0)
                return -ENOMEM;
        if (json_object_size(out) == 0 && json_object_set_new(out, "text", json_string("")) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(out);
        return 0;
}

int mcp_client_call(struct mcp_client *c, const char *tool, json_t *args, usec_t deadline,
                    int cancel_fd, json_t **ret)
{
        json_auto_t *params = NULL, *answer = NULL, *empty = NULL;
        usec_t start = now_usec();
        char secs[32];
        int r;

        assert(c);
        assert(tool);
        if (!args) {
                empty = json_object();
                if (!empty)
                        return -ENOMEM;
                args = empty;
        }
        params = json_pack("{s:s, s:O}", "name", tool, "arguments", args);
        if (!params)
                return -ENOMEM;
        r = mcp_request(c, "tools/call", params, deadline, cancel_fd, &answer);
        switch (r) {
        case 0:
                return mcp_map_answer(c, tool, answer, ret);
        case -ETIMEDOUT:
                format_seconds(secs, sizeof(secs), usec_sub(deadline, start));
                return error_result(ret,
                                    "mcp server '%s' did not answer tools/call '%s' within %s s",
                                    c->name, tool, secs);
        case -ECANCELED:
                return error_result(ret, "cancelled");
        case -E2BIG:
                return error_result(ret,
                                    "mcp server '%s': the answer to tools/call '%s' is larger "
                                    "than %u MiB",
                                    c->name, tool, MCP_CLIENT_MESSAGE_MAX / (1024 * 1024));
        case -EBADMSG:
                return error_result(ret,
                                    "mcp server '%s': the answer to tools/call '%s' is not JSON "
                                    "(%s)",
                                    c->name, tool,
                                    json_is_string(answer) ? json_string_value(answer) : "?");
        case -ENOMEM:
                return r;
        case -ESRCH:
                return not_running_result(c, ret);
        default:
                /* The wait failed, e.g. on a bad @cancel_fd (-EBADF). */
                return error_result(ret, "mcp server '%s': waiting for tools/call '%s' failed: %s",
                                    c->name, tool, strerror(-r));
        }
}

/* ---- start-up and teardown ---- */

int mcp_client_new(const char *name, struct mcp_client **ret)
{
        struct mcp_client *c = calloc(1, sizeof(*c));

        if (!c)
                return -ENOMEM;
        c->pidfd = -1;
        c->in_fd = c->out_fd = c->err_fd = c->stop_fd = c->dead_fd = -EBADF;
        pthread_mutex_init(&c->wlock, NULL);
        pthread_mutex_init(&c->lock, NULL);
        atomic_init(&c->alive, false);
        atomic_init(&c->next_id, 1);
        atomic_init(&c->n_malformed, 0);
        atomic_init(&c->n_oversized, 0);
        buf_init(&c->line, MCP_CLIENT_MESSAGE_MAX);
        c->name = strdup(name);
        c->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        c->dead_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (!c->name || c->stop_fd < 0 || c->dead_fd < 0) {
                int r = c->name ? -errno : -ENOMEM;

                mcp_client_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

/* @env with @extra ("NAME=VALUE") on top: an @extra entry replaces @env's of that name. */
static int build_env(char *const *env, char *const *extra, char ***ret)
{
        _cleanup_(strv_free_wipep) char **l = NULL;

        for (char *const *e = env; e && *e; e++) {
                size_t n = strcspn(*e, "=");
                bool replaced = false;

                for (char *const *x = extra; x && *x && !replaced; x++)
                        replaced = strncmp(*x, *e, n) == 0 && (*x)[n] == '=';
                if (!replaced && strv_extend(&l, *e) < 0)
                        return -ENOMEM;
        }
        for (char *const *x = extra; x && *x; x++)
                if (strv_extend(&l, *x) < 0)
                        return -ENOMEM;
        if (!l) {
                l = calloc(1, sizeof(char *));
                if (!l)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

/*
 * find_in_path() searches ptc's own PATH; the server's PATH is the one in
 * @envp (its environment), which the config may have changed.
 */
static int find_command(const char *name, char *const *envp, char **ret)
{
        const char *path = NULL;

        if (strchr(name, '/')) {
                /* Used as it is (relative to the server's cwd); exec reports what is wrong. */
                *ret = strdup(name);
                return *ret ? 0 : -ENOMEM;
        }
        for (char *const *e = envp; e && *e && !path; e++)
                if (strncmp(*e, "PATH=", 5) == 0)
                        path = *e + 5;
        return find_in_search_path(name, path, ret);
}

static bool has_tool(const struct mcp_client *c, const char *name)
{
        for (size_t i = 0; i < c->n_tools; i++)
                if (strcmp(c->tools[i].name, name) == 0)
                        return true;
        return false;
}

int mcp_upstream_tool_parse(json_t *t, struct mcp_upstream_tool *ret)
{
        json_t *name = json_object_get(t, "name"), *desc = json_object_get(t, "description");
        json_t *schema = json_object_get(t, "inputSchema"), *type;
        struct mcp_upstream_tool nt;

        if (!json_is_string(name) || json_string_length(name) == 0 ||
            json_string_length(name) > TOOL_NAME_MAX ||
            strlen(json_string_value(name)) != json_string_length(name) || !json_is_object(schema))
                return 0;
        type = json_object_get(schema, "type");
        if (type && !(json_is_string(type) && strcmp(json_string_value(type), "object") == 0))
                return 0;

        nt = (struct mcp_upstream_tool){
                .name = strdup(json_string_value(name)),
                .description = strdup(json_is_string(desc) ? json_string_value(desc) : ""),
                .input_schema = json_deep_copy(schema),
        };
        if (!nt.name || !nt.description || !nt.input_schema ||
            (!type && json_object_set_new(nt.input_schema, "type", json_string("object")) < 0)) {
                mcp_upstream_tool_release(&nt);
                return -ENOMEM;
        }
        *ret = nt;
        return 1;
}

void mcp_upstream_tool_release(struct mcp_upstream_tool *t)
{
        free(t->name);
        free(t->description);
        json_decref(t->input_schema);
        *t = (struct mcp_upstream_tool){};
}

/* Take tool @t from tools/list. Returns 1 when taken, 0 when invalid (skipped), -ENOMEM. */
static int add_tool(struct mcp_client *c, json_t *t)
{
        struct mcp_upstream_tool nt, *tools;
        int r;

        r = mcp_upstream_tool_parse(t, &nt);
        if (r <= 0)
                return r;
        if (has_tool(c, nt.name)) {
                mcp_upstream_tool_release(&nt);
                return 0;
        }
        tools = realloc(c->tools, (c->n_tools + 1) * sizeof(*tools));
        if (!tools) {
                mcp_upstream_tool_release(&nt);
                return -ENOMEM;
        }
        c->tools = tools;
        c->tools[c->n_tools++] = nt;
        return 1;
}

/* The server is gone during start-up: say how it ended. */
static int exited_diag(struct mcp_client *c, usec_t deadline, struct diag *reterr)
{
        bool known, sig;
        int status;

        /* Its pipes close just before it becomes a zombie: give the exit a moment. */
        if (c->pidfd >= 0) {
                deadline = MIN(deadline, now_usec() + EOF_EXIT_GRACE_USEC);
                if (fd_wait_readable(c->pidfd, deadline) > 0)
                        (void) mcp_note_exit(c);
        } else {
                (void) mcp_note_exit(c);
        }
        pthread_mutex_lock(&c->lock);
        known = c->status_known;
        sig = c->status_signal;
        status = c->status;
        pthread_mutex_unlock(&c->lock);
        if (!known)
                return diag_set(reterr, -ESRCH, "mcp server '%s' closed its stdout during start-up",
                                c->name);
        return diag_set(reterr, -ESRCH, "mcp server '%s' exited during start-up (%s %d)", c->name,
                        sig ? "signal" : "status", status);
}

/* Map a failed start-up request to the diag; @answer is what mcp_request() left (the parser's
 * message with -EBADMSG). */
static int request_diag(struct mcp_client *c, const char *method, int r, json_t *answer,
                        usec_t budget, usec_t deadline, struct diag *reterr)
{
        const char *why = json_string_value(answer);

        char secs[32];

        switch (r) {
        case -ETIMEDOUT:
                format_seconds(secs, sizeof(secs), budget);
                return diag_set(reterr, r, "mcp server '%s': no answer to %s within %s s", c->name,
                                method, secs);
        case -ESRCH:
                return exited_diag(c, deadline, reterr);
        case -E2BIG:
                return diag_set(reterr, -EPROTO, "mcp server '%s': answer to %s larger than %u MiB",
                                c->name, method, MCP_CLIENT_MESSAGE_MAX / (1024 * 1024));
        case -EBADMSG:
                return diag_set(reterr, -EPROTO, "mcp server '%s': answer to %s is not JSON (%s)",
                                c->name, method, why ? why : "?");
        default:
                return diag_set(reterr, r, "mcp server '%s': %s failed: %s", c->name, method,
                                strerror(-r));
        }
}

static int rpc_error_diag(struct mcp_client *c, const char *method, json_t *err,
                          struct diag *reterr)
{
        json_t *m = json_object_get(err, "message"), *code = json_object_get(err, "code");

        return diag_set(reterr, -EPROTO,
                        "mcp server '%s': %s failed: %s (code %" JSON_INTEGER_FORMAT ")", c->name,
                        method, json_is_string(m) ? json_string_value(m) : "unknown error",
                        json_is_integer(code) ? json_integer_value(code) : (json_int_t) 0);
}

int mcp_check_initialize(struct mcp_client *c, json_t *answer, struct diag *reterr)
{
        static const char *const accepted[] = {PROTOCOL_VERSION, "2025-06-18", "2025-03-26"};
        json_t *result, *version;
        bool ok = false;

        if (json_is_object(json_object_get(answer, "error")))
                return rpc_error_diag(c, "initialize", json_object_get(answer, "error"), reterr);
        result = json_object_get(answer, "result");
        version = json_object_get(result, "protocolVersion");
        if (!json_is_object(result) || !json_is_string(version))
                return diag_set(reterr, -EPROTO, "mcp server '%s': invalid answer to initialize",
                                c->name);
        for (size_t i = 0; i < ELEMENTSOF(accepted); i++)
                ok = ok || strcmp(json_string_value(version), accepted[i]) == 0;
        if (!ok)
                return diag_set(reterr, -EPROTO,
                                "mcp server '%s': unsupported protocol version '%s' (ptc speaks "
                                "2025-11-25, 2025-06-18 and 2025-03-26)",
                                c->name, json_string_value(version));
        return 0;
}

static int initialize(struct mcp_client *c, usec_t budget, usec_t deadline, struct diag *reterr)
{
        json_auto_t *params = NULL, *answer = NULL, *note = NULL;
        int r;

        params = json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", PROTOCOL_VERSION,
                           "capabilities", "clientInfo", "name", "ptc", "version", PTC_VERSION);
        note = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "notifications/initialized");
        if (!params || !note)
                return diag_set(reterr, -ENOMEM, "mcp server '%s': out of memory", c->name);
        r = mcp_request(c, "initialize", params, deadline, -1, &answer);
        if (r < 0)
                return request_diag(c, "initialize", r, answer, budget, deadline, reterr);
        r = mcp_check_initialize(c, answer, reterr);
        if (r < 0)
                return r;

        r = mcp_send_message(c, note, deadline);
        if (r == -EPIPE)
                return exited_diag(c, deadline, reterr);
        if (r < 0)
                return request_diag(c, "initialize", r, NULL, budget, deadline, reterr);
        return 0;
}

int mcp_take_tools(struct mcp_client *c, json_t *answer, bool first, char **ret_cursor,
                   size_t *skipped, size_t *ignored, struct diag *reterr)
{
        json_t *result, *tools, *t, *next;
        size_t i;
        int r;

        *ret_cursor = NULL;
        if (json_is_object(json_object_get(answer, "error"))) {
                json_t *code = json_object_get(json_object_get(answer, "error"), "code");

                /* A server without tools may not know the method at all. */
                if (first && json_is_integer(code) &&
                    json_integer_value(code) == JSONRPC_METHOD_NOT_FOUND)
                        return 0;
                return rpc_error_diag(c, "tools/list", json_object_get(answer, "error"), reterr);
        }
        result = json_object_get(answer, "result");
        tools = json_object_get(result, "tools");
        if (!json_is_array(tools))
                return diag_set(reterr, -EPROTO, "mcp server '%s': invalid answer to tools/list",
                                c->name);
        json_array_foreach(tools, i, t)
        {
                if (c->n_tools >= MCP_CLIENT_TOOLS_MAX) {
                        (*ignored)++;
                        continue;
                }
                r = add_tool(c, t);
                if (r < 0)
                        return diag_set(reterr, r, "mcp server '%s': out of memory", c->name);
                if (r == 0)
                        (*skipped)++;
        }
        next = json_object_get(result, "nextCursor");
        if (!json_is_string(next) || json_string_length(next) == 0)
                return 0;
        *ret_cursor = strdup(json_string_value(next));
        if (!*ret_cursor)
                return diag_set(reterr, -ENOMEM, "mcp server '%s': out of memory", c->name);
        return 0;
}

static int list_tools(struct mcp_client *c, usec_t budget, usec_t deadline, struct buf *warn,
                      struct diag *reterr)
{
        _cleanup_free_ char *cursor = NULL;
        size_t skipped = 0, ignored = 0;
        int pages;

        for (pages = 0; pages < TOOLS_PAGES_MAX; pages++) {
                json_auto_t *params = NULL, *answer = NULL;
                int r;

                params = cursor ? json_pack("{s:s}", "cursor", cursor) : json_object();
                if (!params)
                        return diag_set(reterr, -ENOMEM, "mcp server '%s': out of memory", c->name);
                r = mcp_request(c, "tools/list", params, deadline, -1, &answer);
                if (r < 0)
                        return request_diag(c, "tools/list", r, answer, budget, deadline, reterr);
                cursor = mfree_str(cursor);
                r = mcp_take_tools(c, answer, pages == 0, &cursor, &skipped, &ignored, reterr);
                if (r < 0)
                        return r;
                if (!cursor)
                        break;
        }

        /* Only -E2BIG on these short notes, which leaves what fits. */
        if (skipped > 0 && buf_printf(warn, "; skipped %zu invalid tools", skipped) < 0) {
        }
        if (ignored > 0 && buf_printf(warn, "; ignored %zu tools over the limit of %d", ignored,
                                      MCP_CLIENT_TOOLS_MAX) < 0) {
        }
        if (pages == TOOLS_PAGES_MAX &&
            buf_printf(warn, "; stopped after %d pages of tools/list", TOOLS_PAGES_MAX) < 0) {
        }
        return 0;
}

int mcp_client_start(const struct mcp_server_config *cfg, char *const *env, usec_t deadline,
                     struct mcp_client **ret, struct diag *reterr)
{
        _cleanup_mcp_client_ struct mcp_client *c = NULL;
        _cleanup_(strv_free_wipep) char **envp = NULL;
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int in_r = -EBADF, out_w = -EBADF, err_w = -EBADF;
        _cleanup_buf_ struct buf warn = BUF_INIT(512);
        struct spawn_opts o = {};
        struct diag d = {};
        usec_t start = now_usec(), budget;
        int p[2], r;

        assert(cfg && cfg->name && cfg->command);
        assert(ret);
        if (deadline == USEC_INFINITY)
                deadline = start + MCP_CLIENT_START_TIMEOUT_USEC;
        budget = usec_sub(deadline, start);

        r = mcp_client_new(cfg->name, &c);
        if (r < 0)
                return diag_set(reterr, r, "mcp server '%s': %s", cfg->name, strerror(-r));
        r = build_env(env, cfg->env, &envp);
        if (r >= 0 && strv_extend(&argv, cfg->command) < 0)
                r = -ENOMEM;
        for (char **a = cfg->args; r >= 0 && a && *a; a++)
                if (strv_extend(&argv, *a) < 0)
                        r = -ENOMEM;
        if (r < 0)
                return diag_set(reterr, r, "mcp server '%s': out of memory", c->name);
        r = find_command(cfg->command, envp, &path);
        if (r < 0)
                return diag_set(reterr, r, "mcp server '%s': cannot execute '%s': %s", c->name,
                                cfg->command, strerror(-r));

        if (pipe2(p, O_CLOEXEC) < 0)
                return diag_set(reterr, -errno, "mcp server '%s': pipe2 failed: %m", c->name);
        in_r = p[0];
        c->in_fd = p[1];
        if (pipe2(p, O_CLOEXEC) < 0)
                return diag_set(reterr, -errno, "mcp server '%s': pipe2 failed: %m", c->name);
        c->out_fd = p[0];
        out_w = p[1];
        if (pipe2(p, O_CLOEXEC) < 0)
                return diag_set(reterr, -errno, "mcp server '%s': pipe2 failed: %m", c->name);
        c->err_fd = p[0];
        err_w = p[1];
        r = fd_set_nonblock(c->in_fd, true);
        if (r >= 0)
                r = fd_set_nonblock(c->out_fd, true);
        if (r >= 0)
                r = fd_set_nonblock(c->err_fd, true);
        if (r < 0)
                return diag_set(reterr, r, "mcp server '%s': %s", c->name, strerror(-r));

        o = (struct spawn_opts){
                .path = path,
                .argv = argv,
                .envp = envp,
                .cwd = cfg->cwd,
                .stdin_fd = in_r,
                .stdout_fd = out_w,
                .stderr_fd = err_w,
                .new_session = true, /* its own process group, killed as a whole */
                .die_with_parent = true,
                .pass_fd = -1,
        };
        r = spawn_process(&o, &c->pid, &c->pidfd, &d);
        if (r < 0)
                return diag_set(reterr, r, "mcp server '%s': %s", c->name, d.message);
        /* Only the server may hold these, or its exit would never show as EOF. */
        in_r = safe_close(in_r);
        out_w = safe_close(out_w);
        err_w = safe_close(err_w);
        atomic_store(&c->alive, true);

        r = -pthread_create(&c->reader, NULL, mcp_reader_main, c);
        if (r < 0)
                return diag_set(reterr, r, "mcp server '%s': cannot start its reader thread: %s",
                                c->name, strerror(-r));
        c->reader_started = true;

        r = initialize(c, budget, deadline, reterr);
        if (r < 0)
                return r;
        r = list_tools(c, budget, deadline, &warn, reterr);
        if (r < 0)
                return r;

        if (reterr) {
                if (warn.len > 0)
                        (void) diag_set(reterr, 0, "mcp server '%s': %s", c->name,
                                        buf_str(&warn) + 2);
                else
                        reterr->message[0] = 0;
        }
        *ret = TAKE_PTR(c);
        return 0;
}

/* Wait until the server exits (pidfd) or, without a pidfd, closes its stdout. */
static bool wait_exit(struct mcp_client *c, usec_t deadline)
{
        return fd_wait_readable(c->pidfd >= 0 ? c->pidfd : c->dead_fd, deadline) > 0;
}

struct mcp_client *mcp_client_free(struct mcp_client *c)
{
        if (!c)
                return NULL;

        /* EOF on stdin is how the MCP stdio transport asks a server to exit. */
        pthread_mutex_lock(&c->wlock);
        c->in_fd = safe_close(c->in_fd);
        pthread_mutex_unlock(&c->wlock);

        if (c->pid > 0) {
                if (!wait_exit(c, now_usec() + STOP_GRACE_USEC)) {
                        (void) kill(-c->pid, SIGTERM);
                        (void) wait_exit(c, now_usec() + STOP_GRACE_USEC);
                }
                /*
                 * Always, also after a clean exit: what the server started
                 * (npx's node) may live on in its group. The leader is at most
                 * a zombie here, not reaped, so the group id cannot have been
                 * reused. kill(pid) too, in case the server left its group.
                 */
                (void) kill(-c->pid, SIGKILL);
                (void) kill(c->pid, SIGKILL);
                /* Returns: SIGKILL was sent. ECHILD: someone else reaped it. */
                while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                /* Nothing of the server outlives this call, also under load. */
                if (proc_group_wait_gone(c->pid, now_usec() + STOP_GRACE_USEC) < 0)
                        log_debug("mcp server '%s': a process of its group outlived SIGKILL",
                                  c->name);
        }
        if (c->reader_started) {
                mcp_efd_signal(c->stop_fd);
                pthread_join(c->reader, NULL);
        }
        if (atomic_load(&c->n_malformed) > 0 || atomic_load(&c->n_oversized) > 0)
                log_debug("mcp server '%s': %ju malformed and %ju oversized lines skipped", c->name,
                          (uintmax_t) atomic_load(&c->n_malformed),
                          (uintmax_t) atomic_load(&c->n_oversized));

        while (c->pending) {
                struct pending *p = c->pending;

                c->pending = p->next;
                mcp_pending_free(p);
        }
        for (size_t i = 0; i < c->n_tools; i++)
                mcp_upstream_tool_release(&c->tools[i]);
        free(c->tools);
        buf_release(&c->line);
        safe_close(c->pidfd);
        safe_close(c->out_fd);
        safe_close(c->err_fd);
        safe_close(c->stop_fd);
        safe_close(c->dead_fd);
        pthread_mutex_destroy(&c->wlock);
        pthread_mutex_destroy(&c->lock);
        free(c->name);
        free(c);
        return NULL;
}

const char *mcp_client_name(const struct mcp_client *c)
{
        return c->name;
}

size_t mcp_client_tool_count(const struct mcp_client *c)
{
        return c->n_tools;
}

const struct mcp_upstream_tool *mcp_client_tool(const struct mcp_client *c, size_t i)
{
        return i < c->n_tools ? &c->tools[i] : NULL;
}

bool mcp_client_is_alive(const struct mcp_client *c)
{
        return atomic_load(&((struct mcp_client *) c)->alive);
}
