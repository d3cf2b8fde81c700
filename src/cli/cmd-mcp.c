/* SPDX-License-Identifier: MIT */
/*
 * ptc mcp: a Model Context Protocol server on stdio (docs/mcp.md).
 *
 * The main thread reads JSON-RPC messages, one per line, and answers the
 * cheap methods itself. Every tools/call runs on a thread of its own, so calls
 * run at once and a slow script never delays a ping.
 *
 * execute_code runs each script in a child `ptc run` (this executable, via
 * /proc/self/exe): one execution per process keeps everything ptc run
 * guarantees — its own subreaper for the whole-tree kill, its own signal
 * handling and deadline — and a crash of one execution cannot take the server
 * down. The child reports each tool call on a side pipe (--progress-fd 3),
 * which becomes notifications/progress; notifications/cancelled sends it
 * SIGTERM, which ptc run treats as an interrupt.
 *
 * Secrets: the server takes secret variables out of its own environment at
 * start-up like every ptc command, and hands the removed entries to each
 * child explicitly, so the child redacts their values and its providers find
 * their keys. The server itself is non-dumpable.
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/buf.h"
#include "basic/diag.h"
#include "basic/fd-util.h"
#include "basic/log.h"
#include "basic/parse-util.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "basic/utf8.h"
#include "cli/cli-core.h"
#include "core/mcp/mcp-tools.h"
#include "core/output/redact.h"
#include "core/registry/registry.h"
#include "core/spawn/interpreter.h"
#include "core/spawn/spawn.h"
#include "core/stubs/stubs.h"
#include "core/tools/tool.h"
#include "ptc-version.h"

/* Longest message accepted; a longer line is answered -32600 and skipped. */
#define MCP_MESSAGE_MAX (16u * 1024 * 1024)
/* tools/call requests running at once; more are refused (-32000). */
#define MCP_CALLS_MAX 32
/* Result JSON read from a child ptc run (its output is capped far below this). */
#define MCP_RESULT_MAX (64u * 1024 * 1024)
/* A progress line from the child; longer ones are dropped. */
#define MCP_PROGRESS_LINE_MAX 512
/* After the script's own deadline, how long the child ptc run may take to report. */
#define MCP_CHILD_GRACE_USEC (30 * USEC_PER_SEC)
/* After SIGTERM (cancel), how long before SIGKILL. */
#define MCP_CANCEL_GRACE_USEC (5 * USEC_PER_SEC)
/* After a SIGKILL of ptc run: its pipes close with it, unless something it started kept one. */
#define MCP_KILL_DRAIN_USEC (2 * USEC_PER_SEC)
/* At EOF: how long running calls get to wind down. */
#define MCP_SHUTDOWN_USEC (10 * USEC_PER_SEC)

#define JSONRPC_PARSE_ERROR -32700
#define JSONRPC_INVALID_REQUEST -32600
#define JSONRPC_METHOD_NOT_FOUND -32601
#define JSONRPC_INVALID_PARAMS -32602
#define JSONRPC_SERVER_BUSY -32000

static const char *const protocol_versions[] = {"2025-11-25", "2025-06-18"};

struct call {
        struct call *next;
        json_t *id;              /* request id (owned) */
        json_t *progress_token;  /* or NULL (owned) */
        json_t *arguments;       /* owned */
        const struct tool *tool; /* NULL: execute_code */
        int cancel_fd;           /* eventfd, readable once cancelled */
        bool cancelled;          /* under server.lock */
};

static struct server {
        pthread_mutex_t out_lock; /* one writer on stdout at a time */
        pthread_mutex_t lock;     /* calls, n_calls */
        pthread_cond_t idle;      /* a call ended */
        struct call *calls;
        size_t n_calls;
        bool stdout_broken;

        struct ptc_config config;
        struct registry *registry;
        struct mcp_upstreams *upstreams; /* for the tool list and --expose-tools calls */
        bool expose_tools;
        double max_timeout;
        json_t *tools_list; /* the tools/list result */

        char *self_exe;
        char **child_args; /* options every child `ptc run` gets */
        char **child_env;  /* environ + the secrets taken from it (wiped at exit) */

        /* For --expose-tools calls, run in this process. */
        char *cwd;
        char **base_env;
        struct redactor *redactor;
        char *python;
} server = {
        .out_lock = PTHREAD_MUTEX_INITIALIZER,
        .lock = PTHREAD_MUTEX_INITIALIZER,
        .idle = PTHREAD_COND_INITIALIZER,
};

/* ------------------------------------------------------------------------------------------ */
/* Output                                                                                      */

/* Write one message (a line). Steals @msg. Any thread. */
static void send_message(json_t *msg)
{
        _cleanup_free_ char *s = NULL;
        json_t *full;

        if (!msg)
                return;
        /* "jsonrpc" first: readable logs, and what every peer's examples show. */
        full = json_pack("{s:s}", "jsonrpc", "2.0");
        if (!full || json_object_update(full, msg) < 0) {
                json_decref(full);
                json_decref(msg);
                return;
        }
        json_decref(msg);
        s = json_dumps(full, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
        json_decref(full);
        if (!s)
                return;
        pthread_mutex_lock(&server.out_lock);
        if (!server.stdout_broken) {
                size_t n = strlen(s);

                s[n] = '\n'; /* the NUL becomes the newline; write n + 1 bytes */
                if (write_all(STDOUT_FILENO, s, n + 1) < 0)
                        server.stdout_broken = true;
                s[n] = 0;
        }
        pthread_mutex_unlock(&server.out_lock);
}

static void send_result(json_t *id, json_t *result)
{
        send_message(json_pack("{s:O?, s:o}", "id", id, "result", result));
}

static void send_error(json_t *id, int code, const char *fmt, ...) _printf_(3, 4);
static void send_error(json_t *id, int code, const char *fmt, ...)
{
        _cleanup_free_ char *m = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&m, fmt, ap) < 0)
                m = NULL;
        va_end(ap);
        send_message(json_pack("{s:O?, s:{s:i, s:s}}", "id", id ?: json_null(), "error", "code",
                               code, "message", m ?: "error"));
}

/* A tools/call result: the JSON as text and as structuredContent. Steals @obj. */
static json_t *tool_result(json_t *obj, bool is_error)
{
        _cleanup_free_ char *text = NULL;

        if (!obj)
                return NULL;
        text = json_dumps(obj, JSON_COMPACT | JSON_REAL_PRECISION(15));
        if (!text) {
                json_decref(obj);
                return NULL;
        }
        return json_pack("{s:[{s:s, s:s}], s:o, s:b}", "content", "type", "text", "text", text,
                         "structuredContent", obj, "isError", is_error);
}

/* A tools/call result that is only a message (unknown tool, refused call). */
static json_t *tool_error_message(const char *fmt, ...) _printf_(1, 2);
static json_t *tool_error_message(const char *fmt, ...)
{
        _cleanup_free_ char *m = NULL;
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&m, fmt, ap);
        va_end(ap);
        if (k < 0)
                return NULL;
        return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", m, "isError",
                         1);
}

/* ------------------------------------------------------------------------------------------ */
/* execute_code in a child ptc run                                                             */

static void send_progress(struct call *c, const char *line, size_t n)
{
        json_auto_t *ev = NULL;
        const char *tool;
        json_int_t count;

        if (!c->progress_token)
                return;
        ev = json_loadb(line, n, 0, NULL);
        if (!ev || json_unpack(ev, "{s:s, s:I}", "tool", &tool, "count", &count) < 0)
                return;
        {
                char msg[192];

                (void) snprintf(msg, sizeof(msg), "%.128s (call %lld)", tool, (long long) count);
                send_message(json_pack("{s:s, s:{s:O, s:I, s:s}}", "method",
                                       "notifications/progress", "params", "progressToken",
                                       c->progress_token, "progress", count, "message", msg));
        }
}

/* The result when the child gave none (it crashed, or printed something else). */
static json_t *child_failure(int status, usec_t started)
{
        _cleanup_free_ char *why = NULL;
        double secs = (double) (now_usec() - started) / (double) USEC_PER_SEC;

        if (WIFSIGNALED(status))
                (void) !asprintf(&why, "ptc run was killed by signal %d", WTERMSIG(status));
        else
                (void) !asprintf(&why, "ptc run ended with status %d without a result",
                                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return json_pack("{s:s, s:s, s:i, s:f, s:n, s:s}", "status", "error", "output", "",
                         "tool_calls_made", 0, "duration_seconds",
                         (double) (long long) (secs * 100 + 0.5) / 100.0, "exit_code", "error",
                         why ?: "ptc run failed");
}

/* Run @code with @timeout in a child ptc run; the result object in *ret (NULL on ENOMEM). */
static int run_child(struct call *c, const char *code, size_t code_len, double timeout,
                     json_t **ret)
{
        _cleanup_close_ int mfd = -EBADF, out_r = -EBADF, prog_r = -EBADF;
        _cleanup_buf_ struct buf out = BUF_INIT(MCP_RESULT_MAX);
        _cleanup_strv_free_ char **argv = NULL;
        char prog[MCP_PROGRESS_LINE_MAX];
        size_t prog_len = 0;
        bool prog_overlong = false, sent_term = false, sent_kill = false;
        int out_pipe[2], prog_pipe[2], status = 0, r;
        usec_t started = now_usec(), hard_deadline, kill_at = USEC_INFINITY;
        char tbuf[64];
        struct diag d = {};
        pid_t pid;

        mfd = memfd_with_data("ptc-mcp-script", code, code_len);
        if (mfd < 0)
                return mfd;
        if (pipe2(out_pipe, O_CLOEXEC) < 0)
                return -errno;
        out_r = out_pipe[0];
        if (pipe2(prog_pipe, O_CLOEXEC) < 0) {
                safe_close(out_pipe[1]);
                return -errno;
        }
        prog_r = prog_pipe[0];

        (void) snprintf(tbuf, sizeof(tbuf), "%.3f", timeout);
        r = strv_extend(&argv, server.self_exe);
        r = r ?: strv_extend(&argv, "run");
        for (char **a = server.child_args; r >= 0 && a && *a; a++)
                r = strv_extend(&argv, *a);
        r = r ?: strv_extend(&argv, "--timeout");
        r = r ?: strv_extend(&argv, tbuf);
        r = r ?: strv_extend(&argv, "--progress-fd");
        r = r ?: strv_extend(&argv, "3");
        r = r ?: strv_extend(&argv, "-");
        if (r < 0) {
                safe_close(out_pipe[1]);
                safe_close(prog_pipe[1]);
                return r;
        }
        {
                struct spawn_opts so = {
                        .path = server.self_exe,
                        .argv = argv,
                        .envp = server.child_env,
                        .stdin_fd = mfd,
                        .stdout_fd = out_pipe[1],
                        .stderr_fd = STDERR_FILENO,
                        .new_session = true,
                        .die_with_parent = true,
                        .pass_fd = prog_pipe[1],
                };
                r = spawn_process(&so, &pid, NULL, &d);
        }
        safe_close(out_pipe[1]);
        safe_close(prog_pipe[1]);
        if (r < 0) {
                log_error("cannot start ptc run: %s", d.message);
                return r;
        }
        /* No pidfd: EOF on both pipes says the child is done, and waitpid() reaps it. */
        if (fd_set_nonblock(out_r, true) < 0 || fd_set_nonblock(prog_r, true) < 0) {
                /* Only EBADF-like failures, impossible here; reads then block, still correct. */
        }
        hard_deadline = started + (usec_t) (timeout * (double) USEC_PER_SEC) + MCP_CHILD_GRACE_USEC;

        while (out_r >= 0 || prog_r >= 0) {
                struct pollfd p[3] = {
                        {.fd = out_r, .events = POLLIN},
                        {.fd = prog_r, .events = POLLIN},
                        {.fd = sent_term ? -1 : c->cancel_fd, .events = POLLIN},
                };
                usec_t now = now_usec(), until = MIN(hard_deadline, kill_at);
                int wait_ms = until <= now ? 0 : (int) MIN((until - now + 999) / 1000, INT_MAX);
                char chunk[65536];
                ssize_t k;

                if (poll(p, 3, wait_ms) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                now = now_usec();
                if (p[2].revents) {
                        /* Cancelled: ptc run turns SIGTERM into an interrupt of the whole tree. */
                        (void) kill(pid, SIGTERM);
                        sent_term = true;
                        kill_at = now + MCP_CANCEL_GRACE_USEC;
                }
                if (sent_kill && now >= hard_deadline)
                        break; /* a pipe still open after the kill: give up on it */
                if (!sent_kill && now >= MIN(hard_deadline, kill_at)) {
                        (void) kill(pid, SIGKILL);
                        sent_kill = true;
                        kill_at = USEC_INFINITY;
                        hard_deadline = now + MCP_KILL_DRAIN_USEC;
                }
                if (p[0].revents) {
                        k = read(out_r, chunk, sizeof(chunk));
                        if (k > 0) {
                                if (buf_append(&out, chunk, (size_t) k) < 0) {
                                        /* Over the cap: the result is lost; keep draining. */
                                }
                        } else if (k == 0 || (errno != EAGAIN && errno != EINTR))
                                out_r = safe_close(out_r);
                }
                if (p[1].revents) {
                        k = read(prog_r, chunk, sizeof(chunk));
                        if (k > 0) {
                                for (ssize_t i = 0; i < k; i++) {
                                        if (chunk[i] != '\n') {
                                                if (prog_len < sizeof(prog))
                                                        prog[prog_len++] = chunk[i];
                                                else
                                                        prog_overlong = true;
                                                continue;
                                        }
                                        if (!prog_overlong)
                                                send_progress(c, prog, prog_len);
                                        prog_len = 0;
                                        prog_overlong = false;
                                }
                        } else if (k == 0 || (errno != EAGAIN && errno != EINTR))
                                prog_r = safe_close(prog_r);
                }
        }
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;

        {
                json_t *res = out.len ? json_loadb(out.data, out.len, 0, NULL) : NULL;

                if (!json_is_object(res)) {
                        json_decref(res);
                        res = child_failure(status, started);
                }
                *ret = res;
        }
        return *ret ? 0 : -ENOMEM;
}

static json_t *execute_code(struct call *c)
{
        json_t *code = json_object_get(c->arguments, "code");
        json_t *t = json_object_get(c->arguments, "timeout");
        double timeout = server.max_timeout;
        json_t *res = NULL;
        const char *status;
        int r;

        if (json_is_number(t))
                timeout = MIN(json_number_value(t), server.max_timeout);
        r = run_child(c, json_string_value(code), json_string_length(code), timeout, &res);
        if (r < 0)
                return tool_error_message("execute_code could not run: %s", strerror(-r));
        status = json_string_value(json_object_get(res, "status"));
        return tool_result(res, !status || strcmp(status, "success") != 0);
}

/* ------------------------------------------------------------------------------------------ */
/* A tool called directly (--expose-tools)                                                     */

static json_t *direct_tool(struct call *c)
{
        struct tool_ctx ctx = {
                .config = &server.config,
                .cwd = server.cwd,
                .env = server.base_env,
                .deadline = now_usec() + (usec_t) (server.max_timeout * (double) USEC_PER_SEC),
                .cancel_fd = c->cancel_fd,
                .redactor = server.redactor,
                .python = server.python,
        };
        json_t *res = NULL, *err, *ok;
        int r;

        r = registry_call_tool(c->tool, &ctx, c->arguments, &res);
        if (r < 0)
                return NULL;
        err = json_object_get(res, "error");
        ok = json_object_get(res, "success");
        return tool_result(res, (err && !json_is_null(err)) || json_is_false(ok));
}

/* ------------------------------------------------------------------------------------------ */
/* Calls                                                                                       */

static void call_free(struct call *c)
{
        if (!c)
                return;
        json_decref(c->id);
        json_decref(c->progress_token);
        json_decref(c->arguments);
        safe_close(c->cancel_fd);
        free(c);
}

static void call_unlink(struct call *c)
{
        pthread_mutex_lock(&server.lock);
        for (struct call **p = &server.calls; *p; p = &(*p)->next)
                if (*p == c) {
                        *p = c->next;
                        break;
                }
        server.n_calls--;
        pthread_cond_broadcast(&server.idle);
        pthread_mutex_unlock(&server.lock);
}

static void *call_thread(void *userdata)
{
        struct call *c = userdata;
        json_t *result = c->tool ? direct_tool(c) : execute_code(c);
        bool cancelled;

        pthread_mutex_lock(&server.lock);
        cancelled = c->cancelled;
        pthread_mutex_unlock(&server.lock);
        /* The MCP specification: no response for a cancelled request. */
        if (cancelled) {
                if (json_is_string(c->id))
                        log_info("request \"%.100s\" cancelled: the execution was interrupted",
                                 json_string_value(c->id));
                else
                        log_info("request %lld cancelled: the execution was interrupted",
                                 (long long) json_integer_value(c->id));
                json_decref(result);
        } else if (result)
                send_result(c->id, result);
        else
                send_error(c->id, JSONRPC_SERVER_BUSY, "out of memory");
        call_unlink(c);
        call_free(c);
        return NULL;
}

static void cancel_call(json_t *request_id)
{
        uint64_t one = 1;

        pthread_mutex_lock(&server.lock);
        for (struct call *c = server.calls; c; c = c->next)
                if (json_equal(c->id, request_id) && !c->cancelled) {
                        c->cancelled = true;
                        (void) !write(c->cancel_fd, &one, sizeof(one));
                }
        pthread_mutex_unlock(&server.lock);
}

static void cancel_all_and_wait(void)
{
        uint64_t one = 1;
        struct timespec until;

        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += MCP_SHUTDOWN_USEC / USEC_PER_SEC;
        pthread_mutex_lock(&server.lock);
        for (struct call *c = server.calls; c; c = c->next) {
                c->cancelled = true;
                (void) !write(c->cancel_fd, &one, sizeof(one));
        }
        while (server.n_calls > 0)
                if (pthread_cond_timedwait(&server.idle, &server.lock, &until) == ETIMEDOUT)
                        break;
        pthread_mutex_unlock(&server.lock);
}

/* ------------------------------------------------------------------------------------------ */
/* Methods                                                                                     */

static void handle_initialize(json_t *id, json_t *params)
{
        const char *want = json_string_value(json_object_get(params, "protocolVersion"));
        const char *version = protocol_versions[0];

        for (size_t i = 0; want && i < ELEMENTSOF(protocol_versions); i++)
                if (strcmp(want, protocol_versions[i]) == 0)
                        version = protocol_versions[i];
        send_result(id, json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion",
                                  version, "capabilities", "tools", "listChanged", 0, "serverInfo",
                                  "name", "ptc", "title", "ptc: programmatic tool calling",
                                  "version", PTC_VERSION, "instructions",
                                  "Use execute_code to run one Python script that calls several "
                                  "tools; only what it prints comes back."));
}

static void handle_tools_call(json_t *id, json_t *params)
{
        json_t *name = json_object_get(params, "name"),
               *args = json_object_get(params, "arguments");
        json_t *meta = json_object_get(params, "_meta");
        const struct tool *tool = NULL;
        struct call *c;
        pthread_attr_t attr;
        pthread_t th;
        int r;

        if (!json_is_object(params) || !json_is_string(name)) {
                send_error(id, JSONRPC_INVALID_PARAMS, "Invalid params: 'name' must be a string");
                return;
        }
        if (args && !json_is_null(args) && !json_is_object(args)) {
                send_error(id, JSONRPC_INVALID_PARAMS,
                           "Invalid params: 'arguments' must be an object");
                return;
        }
        if (strcmp(json_string_value(name), "execute_code") == 0) {
                json_t *code = json_object_get(args, "code"), *t = json_object_get(args, "timeout");

                if (!json_is_string(code)) {
                        send_error(id, JSONRPC_INVALID_PARAMS,
                                   "Invalid params: execute_code needs 'code', a string");
                        return;
                }
                if (t && !json_is_null(t) && (!json_is_number(t) || !(json_number_value(t) > 0))) {
                        send_error(id, JSONRPC_INVALID_PARAMS,
                                   "Invalid params: 'timeout' must be a positive number "
                                   "of seconds");
                        return;
                }
        } else {
                tool = server.expose_tools ? registry_find(server.registry, json_string_value(name))
                                           : NULL;
                if (!tool) {
                        _cleanup_free_ char *names = registry_names(server.registry);
                        {
                                send_result(
                                        id,
                                        tool_error_message(
                                                "Unknown tool: %s (available: %s%s%s)",
                                                json_string_value(name), "execute_code",
                                                server.expose_tools && names && *names ? ", " : "",
                                                server.expose_tools && names ? names : ""));
                                return;
                        }
                }
        }

        c = calloc(1, sizeof(*c));
        if (!c) {
                send_error(id, JSONRPC_SERVER_BUSY, "out of memory");
                return;
        }
        c->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        c->id = json_incref(id);
        c->tool = tool;
        c->arguments = args && json_is_object(args) ? json_deep_copy(args) : json_object();
        if (json_is_object(meta) && json_object_get(meta, "progressToken"))
                c->progress_token = json_incref(json_object_get(meta, "progressToken"));
        if (c->cancel_fd < 0 || !c->arguments) {
                call_free(c);
                {
                        send_error(id, JSONRPC_SERVER_BUSY, "cannot start the call: %s",
                                   strerror(errno ?: ENOMEM));
                        return;
                }
        }

        pthread_mutex_lock(&server.lock);
        if (server.n_calls >= MCP_CALLS_MAX) {
                pthread_mutex_unlock(&server.lock);
                call_free(c);
                {
                        send_error(id, JSONRPC_SERVER_BUSY, "too many calls in flight (at most %d)",
                                   MCP_CALLS_MAX);
                        return;
                }
        }
        c->next = server.calls;
        server.calls = c;
        server.n_calls++;
        pthread_mutex_unlock(&server.lock);

        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        r = pthread_create(&th, &attr, call_thread, c);
        pthread_attr_destroy(&attr);
        if (r != 0) {
                call_unlink(c);
                call_free(c);
                send_error(id, JSONRPC_SERVER_BUSY, "cannot start the call: %s", strerror(r));
        }
}

/* One message (a line, without its newline). */
static void handle_message(const char *line, size_t n)
{
        json_auto_t *msg = NULL;
        json_t *id, *method, *params;
        json_error_t err;
        const char *m;

        while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
                n--;
        if (n == 0)
                return;
        if (!utf8_is_valid(line, n)) {
                send_error(NULL, JSONRPC_PARSE_ERROR, "Parse error: invalid UTF-8");
                return;
        }
        msg = json_loadb(line, n, JSON_DECODE_ANY, &err);
        if (!msg) {
                send_error(NULL, JSONRPC_PARSE_ERROR, "Parse error: %s (column %d)", err.text,
                           err.column);
                return;
        }
        if (!json_is_object(msg)) {
                send_error(NULL, JSONRPC_INVALID_REQUEST,
                           "Invalid Request: expected a JSON-RPC object (batches are not "
                           "supported)");
                return;
        }
        id = json_object_get(msg, "id");
        if (id && !json_is_string(id) && !json_is_integer(id)) {
                send_error(NULL, JSONRPC_INVALID_REQUEST,
                           "Invalid Request: 'id' must be a string or an integer");
                return;
        }
        method = json_object_get(msg, "method");
        if (!method && (json_object_get(msg, "result") || json_object_get(msg, "error")))
                return; /* a response; this server sends no requests */
        if (!json_is_string(method) || !json_is_string(json_object_get(msg, "jsonrpc")) ||
            strcmp(json_string_value(json_object_get(msg, "jsonrpc")), "2.0") != 0) {
                send_error(id, JSONRPC_INVALID_REQUEST,
                           "Invalid Request: needs \"jsonrpc\": \"2.0\" and a 'method' "
                           "string");
                return;
        }
        m = json_string_value(method);
        params = json_object_get(msg, "params");

        if (!id) {
                /* Notifications: no answer, ever. */
                if (strcmp(m, "notifications/cancelled") == 0)
                        cancel_call(json_object_get(params, "requestId"));
                return;
        }
        if (params && !json_is_object(params)) {
                send_error(id, JSONRPC_INVALID_PARAMS,
                           "Invalid params: 'params' must be an object");
                return;
        }
        if (strcmp(m, "initialize") == 0)
                handle_initialize(id, params);
        else if (strcmp(m, "ping") == 0)
                send_result(id, json_object());
        else if (strcmp(m, "tools/list") == 0)
                send_result(id, json_deep_copy(server.tools_list));
        else if (strcmp(m, "tools/call") == 0)
                handle_tools_call(id, params);
        else
                send_error(id, JSONRPC_METHOD_NOT_FOUND, "Method not found: %.200s", m);
}

/* ------------------------------------------------------------------------------------------ */
/* Set-up                                                                                      */

static int build_tools_list(enum ptc_mode mode)
{
        json_auto_t *schema = NULL, *input = NULL, *tools = NULL;
        char desc[256];
        int r;

        r = schema_build(server.registry, mode, &server.config, &schema);
        if (r < 0)
                return r;
        input = json_deep_copy(json_object_get(schema, "parameters"));
        if (!json_is_object(input) || !json_is_object(json_object_get(input, "properties")))
                return -ENOMEM;
        (void) snprintf(desc, sizeof(desc), "Seconds the script may run (default and maximum: %g).",
                        server.max_timeout);
        if (json_object_set_new(json_object_get(input, "properties"), "timeout",
                                json_pack("{s:s, s:s}", "type", "number", "description", desc)) < 0)
                return -ENOMEM;
        tools = json_pack("[{s:s, s:s, s:O, s:O}]", "name", "execute_code", "title",
                          "Run a Python script that calls tools", "description",
                          json_object_get(schema, "description"), "inputSchema", input);
        if (!tools)
                return -ENOMEM;
        for (size_t i = 0; server.expose_tools && i < registry_count(server.registry); i++) {
                const struct tool *t = registry_get(server.registry, i);

                if (json_array_append_new(tools, json_pack("{s:s, s:s, s:O}", "name", t->name,
                                                           "description", t->description,
                                                           "inputSchema", t->parameters)) < 0)
                        return -ENOMEM;
        }
        server.tools_list = json_pack("{s:O}", "tools", tools);
        return server.tools_list ? 0 : -ENOMEM;
}

/* The defaults come from the code that applies them (cli_help_defaults()). */
static void help(void)
{
        _cleanup_free_ char *tools = NULL;
        struct ptc_config c = {};

        (void) cli_help_defaults(&c, &tools);
        printf("Usage: ptc mcp [OPTIONS]\n"
               "\n"
               "Serve the Model Context Protocol on stdio (JSON-RPC, one message per line).\n"
               "The tool execute_code runs a Python script that calls ptc's tools; only what\n"
               "it prints comes back. See docs/mcp.md for the client configuration.\n"
               "\n"
               "Options:\n"
               "  --config FILE            config file (as ptc run)\n"
               "  --tools LIST             tools the scripts may call; default: every usable\n"
               "                           builtin tool, here:\n"
               "                           %s\n"
               "  --mode project|strict    working directory of the scripts (default %s)\n"
               "  --cwd DIR                working directory in project mode (default: .)\n"
               "  --timeout SECONDS        default and largest timeout of a call (default:\n"
               "                           code_execution.timeout, %g)\n"
               "  --max-tool-calls N       tool-call budget of each execution (default %lld)\n"
               "  --isolation LEVEL        none | auto | strict, as ptc run (default %s)\n"
               "  --expose-tools           also list each enabled tool as an MCP tool\n"
               "  -h, --help               this help\n"
               "\n"
               "stdout carries only protocol messages; logs go to stderr. Exits 0 when stdin\n"
               "closes, 2 on a usage or config error.\n",
               tools ? tools : "(out of memory)", config_mode_to_string(c.mode), c.timeout,
               (long long) c.max_tool_calls, config_isolation_to_string(c.isolation));
        config_release(&c);
}

static void server_release(void)
{
        json_decref(server.tools_list);
        server.registry = registry_free(server.registry);
        server.upstreams = mcp_upstreams_free(server.upstreams);
        strv_free(server.child_args);
        strv_free_wipe(server.child_env);
        strv_free(server.base_env);
        server.redactor = redactor_free(server.redactor);
        free(server.self_exe);
        free(server.cwd);
        free(server.python);
        config_release(&server.config);
}

/* Read stdin until EOF, one message per line, skipping lines over the cap. */
static void serve(void)
{
        _cleanup_buf_ struct buf line = BUF_INIT(MCP_MESSAGE_MAX);
        bool skipping = false;
        char chunk[65536];

        for (;;) {
                ssize_t k = read(STDIN_FILENO, chunk, sizeof(chunk));
                size_t start = 0;

                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                for (size_t i = 0; i < (size_t) k; i++) {
                        if (chunk[i] != '\n')
                                continue;
                        if (!skipping) {
                                if (buf_append(&line, chunk + start, i - start) < 0)
                                        send_error(NULL, JSONRPC_INVALID_REQUEST,
                                                   "Invalid Request: message larger than %u "
                                                   "bytes",
                                                   MCP_MESSAGE_MAX);
                                else
                                        handle_message(buf_str(&line), line.len);
                        }
                        buf_reset(&line);
                        skipping = false;
                        start = i + 1;
                }
                if (!skipping && start < (size_t) k &&
                    buf_append(&line, chunk + start, (size_t) k - start) < 0) {
                        send_error(NULL, JSONRPC_INVALID_REQUEST,
                                   "Invalid Request: message larger than %u bytes",
                                   MCP_MESSAGE_MAX);
                        buf_release(&line);
                        line = BUF_INIT(MCP_MESSAGE_MAX);
                        skipping = true;
                }
                if (server.stdout_broken)
                        break;
        }
        /* A last message without a newline still counts. */
        if (!skipping && line.len > 0)
                handle_message(buf_str(&line), line.len);
}

int cmd_mcp(int argc, char **argv)
{
        const char *arg_config = NULL, *arg_tools = NULL, *arg_mode = NULL, *arg_cwd = NULL;
        const char *arg_timeout = NULL, *arg_calls = NULL, *arg_isolation = NULL;
        const struct cli_option opts[] = {
                {"config", &arg_config},
                {"tools", &arg_tools},
                {"mode", &arg_mode},
                {"cwd", &arg_cwd},
                {"timeout", &arg_timeout},
                {"max-tool-calls", &arg_calls},
                {"isolation", &arg_isolation},
                {"expose-tools", .flag = &server.expose_tools},
                {},
        };
        _cleanup_strv_free_ char **tools = NULL;
        char **kept = NULL;
        enum ptc_mode mode;
        struct diag d = {};
        int r, ret = EXIT_USAGE;

        r = cli_parse_options(argc, argv, "mcp", opts, false, help);
        if (r != CLI_OPTIONS_PARSED)
                return r;
        if (optind < argc) {
                log_error("unexpected argument '%s' (try 'ptc mcp --help')", argv[optind]);
                return EXIT_USAGE;
        }
        log_set_max_level(LOG_LEVEL_INFO);

        if (cli_load_config(arg_config, &server.config) < 0)
                goto out;
        if (cli_apply_run_options(&server.config, arg_timeout, arg_calls, arg_mode, arg_isolation) <
            0)
                goto out;
        mode = server.config.mode;
        server.max_timeout = server.config.timeout;
        if (arg_tools && cli_parse_tools(arg_tools, &tools) < 0)
                goto out;
        if (server.config.n_mcp_servers == 0 &&
            cli_build_registry(&server.config, tools, NULL, &server.registry) < 0)
                goto out;
        server.cwd = realpath(arg_cwd ? arg_cwd : ".", NULL);
        if (!server.cwd) {
                log_error_errno(-errno, "--cwd: cannot use '%s': %m", arg_cwd ? arg_cwd : ".");
                goto out;
        }
        server.self_exe = realpath("/proc/self/exe", NULL);
        if (!server.self_exe) {
                ret = EXIT_INTERNAL;
                log_error_errno(-errno, "cannot find the ptc executable: %m");
                goto out;
        }

        /* What every child `ptc run` is told: the same config, tools, mode and directory. */
        r = 0;
        if (arg_config)
                r = r ?: strv_extend(&server.child_args, "--config");
        if (arg_config)
                r = r ?: strv_extend(&server.child_args, arg_config);
        if (arg_tools)
                r = r ?: strv_extend(&server.child_args, "--tools");
        if (arg_tools)
                r = r ?: strv_extend(&server.child_args, arg_tools);
        r = r ?: strv_extend(&server.child_args, "--mode");
        r = r ?: strv_extend(&server.child_args, config_mode_to_string(mode));
        r = r ?: strv_extend(&server.child_args, "--cwd");
        r = r ?: strv_extend(&server.child_args, server.cwd);
        if (arg_calls)
                r = r ?: strv_extend(&server.child_args, "--max-tool-calls");
        if (arg_calls)
                r = r ?: strv_extend(&server.child_args, arg_calls);
        if (arg_isolation)
                r = r ?: strv_extend(&server.child_args, "--isolation");
        if (arg_isolation)
                r = r ?: strv_extend(&server.child_args, arg_isolation);
        if (r < 0) {
                ret = EXIT_INTERNAL;
                log_error_errno(r, "out of memory");
                goto out;
        }
        (void) signal(SIGPIPE, SIG_IGN);
        if (cli_prepare_secrets(&server.config, &server.redactor, &server.base_env, &kept) < 0) {
                ret = EXIT_INTERNAL;
                goto out;
        }
        /* The children take the secrets over themselves: they need the values to redact them. */
        for (char **e = environ; e && *e; e++)
                if (strv_extend(&server.child_env, *e) < 0)
                        r = -ENOMEM;
        for (char **e = kept; e && *e; e++)
                if (strv_extend(&server.child_env, *e) < 0)
                        r = -ENOMEM;
        strv_free_wipe(kept);
        if (r < 0) {
                ret = EXIT_INTERNAL;
                log_error_errno(r, "out of memory");
                goto out;
        }
        if (interpreter_resolve(&server.config, PTC_MODE_STRICT, &server.python, &d) < 0)
                server.python = NULL; /* only linters of the direct tools use it */
        if (server.config.n_mcp_servers > 0) {
                /*
                 * The server lists the upstream tools (and calls them with --expose-tools);
                 * each execution's child ptc run starts its own connections.
                 */
                if (cli_start_upstreams(&server.config, server.base_env, &server.upstreams) < 0) {
                        ret = EXIT_INTERNAL;
                        goto out;
                }
                if (cli_build_registry(&server.config, tools, server.upstreams, &server.registry) <
                    0)
                        goto out;
        }
        r = build_tools_list(mode);
        if (r < 0) {
                ret = EXIT_INTERNAL;
                log_error_errno(r, "cannot build the tool list: %m");
                goto out;
        }

        serve();
        cancel_all_and_wait();
        ret = EXIT_OK;
out:
        pthread_mutex_lock(&server.lock);
        if (server.n_calls > 0) {
                /* Calls that did not wind down in time still use the server: leave it be. */
                pthread_mutex_unlock(&server.lock);
                return ret;
        }
        pthread_mutex_unlock(&server.lock);
        server_release();
        return ret;
}
