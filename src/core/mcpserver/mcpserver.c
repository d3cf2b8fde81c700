/* SPDX-License-Identifier: MIT */
/*
 * ptc_mcp_serve(): a Model Context Protocol server on two descriptors
 * (docs/mcp.md). The calling thread reads JSON-RPC messages, one per line,
 * and answers the cheap methods itself; tools/call runs on threads of its own
 * (mcpserver-calls.c). At EOF, or when the host's stop descriptor becomes
 * readable, the calls still running are cancelled and given a bounded time to
 * end.
 */

#include "core/mcpserver/mcpserver.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/diag.h"
#include "basic/fd-util.h"
#include "basic/log.h"
#include "basic/time-util.h"
#include "core/api/api-util.h"
#include "core/api/engine.h"
#include "core/session/session.h"
#include "core/spawn/interpreter.h"

/* Largest timeout a call may be given, as the "timeout" option allows. */
#define MCP_TIMEOUT_MAX 86400.0

static void server_free(struct mcp_server *s)
{
        mcpserver_elicit_done(s);
        json_decref(s->tools_list);
        pthread_mutex_destroy(&s->out_lock);
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->idle);
        pthread_cond_destroy(&s->place);
        free(s);
}

void mcpserver_unref(struct mcp_server *s)
{
        bool last;

        pthread_mutex_lock(&s->lock);
        last = --s->refs == 0;
        pthread_mutex_unlock(&s->lock);
        if (last)
                server_free(s);
}

/*
 * Each execution resolves its interpreter, probing it once per binary (the
 * result is cached on disk): probe it here, so that a burst of first calls
 * (up to MCP_CALLS_MAX at once) finds the cache warm instead of running that
 * many probes at once against their 5 s bound. A failure is each call's to
 * report.
 */
static void warm_interpreter_cache(const ptc_engine *e)
{
        _cleanup_free_ char *python = NULL;
        struct diag d = {};

        if (interpreter_resolve_in(&e->config, e->config.mode, e->cwd, &python, &d) < 0)
                log_debug("mcp server: no interpreter yet: %s", d.message);
}

void mcpserver_log(struct mcp_server *s, bool is_warning, const char *fmt, ...)
{
        char line[512];
        va_list ap;

        if (!s->log)
                return;
        va_start(ap, fmt);
        (void) vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        s->log(is_warning, line, s->log_userdata);
}

int mcpserver_new(ptc_engine *e, int out_fd, bool expose_tools, double max_timeout,
                  ptc_mcp_log_fn log_fn, void *log_userdata, struct mcp_server **ret)
{
        struct mcp_server *s;
        pthread_condattr_t ca;
        int r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->engine = e;
        s->out_fd = out_fd;
        s->expose_tools = expose_tools;
        s->max_timeout = max_timeout;
        s->log = log_fn;
        s->log_userdata = log_userdata;
        s->refs = 1;
        pthread_mutex_init(&s->out_lock, NULL);
        pthread_mutex_init(&s->lock, NULL);
        /* The shutdown's bound is a duration: a clock change must not stretch it. */
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&s->idle, &ca);
        pthread_cond_init(&s->place, &ca);
        pthread_condattr_destroy(&ca);
        r = mcpserver_tools_list_build(s);
        if (r >= 0)
                r = mcpserver_elicit_init(s);
        if (r < 0) {
                server_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

static bool out_broken(struct mcp_server *s)
{
        bool b;

        pthread_mutex_lock(&s->out_lock);
        b = s->out_broken;
        pthread_mutex_unlock(&s->out_lock);
        return b;
}

/*
 * Read @in_fd until EOF, a stop, or a broken output: one message per line,
 * lines over MCP_MESSAGE_MAX answered -32600 and skipped. 0, or -errno when
 * reading failed.
 */
static int serve_lines(struct mcp_server *s, int in_fd, int stop_fd)
{
        _cleanup_buf_ struct buf line = BUF_INIT(MCP_MESSAGE_MAX);
        bool skipping = false;
        char chunk[65536];

        for (;;) {
                /* No deadline: input, its end or @stop_fd wakes this. */
                int w = fd_wait_either(in_fd, stop_fd > 0 ? stop_fd : -1, USEC_INFINITY);
                size_t start = 0;
                ssize_t k;

                if (w < 0)
                        return w;
                if (w & FD_WAIT_B)
                        return 0; /* stopped: a partial last line does not count */
                k = read(in_fd, chunk, sizeof(chunk));
                if (k < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                for (size_t i = 0; i < (size_t) k; i++) {
                        if (chunk[i] != '\n')
                                continue;
                        if (!skipping) {
                                if (buf_append(&line, chunk + start, i - start) < 0)
                                        mcpserver_send_error(s, NULL, JSONRPC_INVALID_REQUEST,
                                                             "Invalid Request: message larger "
                                                             "than %u bytes",
                                                             MCP_MESSAGE_MAX);
                                else
                                        mcpserver_handle_message(s, buf_str(&line), line.len);
                        }
                        buf_reset(&line);
                        skipping = false;
                        start = i + 1;
                }
                if (!skipping && start < (size_t) k &&
                    buf_append(&line, chunk + start, (size_t) k - start) < 0) {
                        mcpserver_send_error(s, NULL, JSONRPC_INVALID_REQUEST,
                                             "Invalid Request: message larger than %u bytes",
                                             MCP_MESSAGE_MAX);
                        buf_release(&line);
                        line = BUF_INIT(MCP_MESSAGE_MAX);
                        skipping = true;
                }
                if (out_broken(s))
                        return 0;
        }
        /* A last message without a newline still counts. */
        if (!skipping && line.len > 0)
                mcpserver_handle_message(s, buf_str(&line), line.len);
        return 0;
}

PTC_EXPORT int ptc_mcp_serve(ptc_engine *e, int in_fd, int out_fd, const struct ptc_mcp_opts *opts,
                             struct ptc_diag *diag)
{
        /* Each member is read only when the caller's struct is long enough to have it. */
#define OPT(member, dflt)                                                                   \
        (opts && opts->size >= offsetof(struct ptc_mcp_opts, member) + sizeof(opts->member) \
                 ? opts->member                                                             \
                 : (dflt))
        struct mcp_server *s = NULL;
        ptc_mcp_log_fn log_fn;
        void *log_userdata;
        unsigned flags;
        double max_timeout;
        int stop_fd, r, out_error;
        size_t left;

        if (!e || !e->started)
                return api_diagf(diag, -EINVAL, "the engine is not started");
        if (in_fd < 0 || out_fd < 0)
                return api_diagf(diag, -EINVAL, "ptc_mcp_serve: a negative descriptor");
        if (opts && opts->size < offsetof(struct ptc_mcp_opts, flags) + sizeof(opts->flags))
                return api_diagf(diag, -EINVAL, "struct ptc_mcp_opts.size is %zu", opts->size);
        flags = OPT(flags, 0u);
        max_timeout = OPT(max_timeout, 0.0);
        stop_fd = OPT(stop_fd, -1);
        log_fn = OPT(log, NULL);
        log_userdata = OPT(log_userdata, NULL);
#undef OPT
        if (flags & ~(unsigned) (PTC_MCP_EXPOSE_TOOLS | PTC_MCP_SESSION_PER_CONNECTION))
                return api_diagf(diag, -EINVAL, "unknown ptc_mcp_opts.flags 0x%x", flags);
        if (max_timeout == 0)
                max_timeout = e->config.timeout;
        if (!isfinite(max_timeout) || !(max_timeout > 0) || max_timeout > MCP_TIMEOUT_MAX)
                return api_diagf(diag, -EINVAL,
                                 "ptc_mcp_opts.max_timeout: invalid value %g (allowed: 0 < s <= "
                                 "86400, or 0 for the engine's timeout)",
                                 max_timeout);
        if (stop_fd > 0 && fcntl(stop_fd, F_GETFD) < 0)
                return api_diagf(diag, -EINVAL, "ptc_mcp_opts.stop_fd %d: %s", stop_fd,
                                 strerror(errno));

        r = mcpserver_new(e, out_fd, flags & PTC_MCP_EXPOSE_TOOLS, max_timeout, log_fn,
                          log_userdata, &s);
        if (r < 0)
                return api_diagf(diag, r, "cannot build the tool list: %s", strerror(-r));
        warm_interpreter_cache(e);

        if (flags & PTC_MCP_SESSION_PER_CONNECTION) {
                /* Unique per connection: one engine may serve several at once. */
                uint32_t rnd = 0;

                if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t) sizeof(rnd))
                        rnd = (uint32_t) now_usec();
                (void) snprintf(s->default_session, sizeof(s->default_session), "mcp-%08x",
                                (unsigned) rnd);
        }
        r = serve_lines(s, in_fd, stop_fd);
        left = mcpserver_cancel_all_and_wait(s);
        if (s->default_session[0] && left == 0) {
                struct session_table *t;

                if (engine_sessions(e, &t) >= 0) {
                        int k = session_close(t, s->default_session, NULL);

                        (void) k; /* -ENOENT: the connection never used it */
                }
        }

        /* From here on nothing reaches out_fd: it is the caller's again. */
        pthread_mutex_lock(&s->out_lock);
        s->out_closed = true;
        out_error = s->out_broken ? s->out_error : 0;
        pthread_mutex_unlock(&s->out_lock);
        mcpserver_unref(s); /* a call still running frees it when it ends */

        if (left > 0)
                return api_diagf(diag, -EBUSY,
                                 "%zu call(s) did not end within %d s of the shutdown; they still "
                                 "use the engine",
                                 left, MCP_SHUTDOWN_SEC);
        if (r < 0)
                return api_diagf(diag, r, "cannot read the client's messages: %s", strerror(-r));
        if (out_error < 0)
                return api_diagf(diag, out_error, "cannot write to the client: %s",
                                 strerror(-out_error));
        return 0;
}
