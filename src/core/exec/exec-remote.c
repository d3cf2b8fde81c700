/* SPDX-License-Identifier: MIT */
/*
 * A run on a remote backend, the host's side (docs/remote.md): start the channel command
 * (ssh, docker exec, ...), which opens a shell on the target; tell that shell to exec ptc's
 * agent; then speak the stream (remote/frame.h) on the channel's stdin and stdout. The
 * agent runs the script and the tools on files and processes there; here the script's
 * output is captured and post-processed exactly as for a local run, and the calls of the
 * tools that run on the host (tool.runs_on_host: the web tools, a host's and an MCP
 * server's) are answered, each on a thread of its own.
 *
 * The host owns the deadline: at the timeout, or on a cancel, it sends the agent a signal
 * frame (the agent stops the script as a local run does: SIGINT, then SIGKILL after the
 * grace period), and kills the channel when the agent has not ended the run by then. A
 * channel that closes, a frame that is not what the stream allows, or an agent that does
 * not answer in time ends the run with an error that says so, with the start of what the
 * channel command wrote to stderr (ssh's "Permission denied", docker's "No such
 * container").
 *
 * Threads: the loop runs on the caller's thread; each host tool call on a detached thread
 * that holds a reference on the run. Writes to the channel are serialized by the run's
 * lock and bounded in time, so a target that stops reading cannot hang a thread.
 */

#include "core/exec/exec-remote.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/path-util.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "basic/utf8.h"
#include "core/events/events.h"
#include "core/events/trace.h"
#include "core/exec/exec-internal.h"
#include "core/loop/loop.h"
#include "core/output/redact.h"
#include "core/paths/companion.h"
#include "core/policy/policy.h"
#include "core/registry/registry.h"
#include "core/remote/backend.h"
#include "core/remote/frame.h"
#include "core/spawn/spawn.h"
#include "core/tools/tool.h"
#include "ptc-version.h"

/* The agent's hello must come within this (or the run's timeout, when shorter). */
#define HANDSHAKE_USEC (30 * USEC_PER_SEC)
/* After the agent's own grace period: then the channel is killed. */
#define STOP_MARGIN_USEC (3 * USEC_PER_SEC)
/* The agent's own timeout is the run's plus this: its backstop for a host that vanished. */
#define AGENT_TIMEOUT_MARGIN 10
/* After the exit frame (or a kill), how long the channel may take to close. */
#define CLOSE_USEC (5 * USEC_PER_SEC)
/* A write to the channel that makes no progress for this long breaks the stream. */
#define WRITE_STALL_MS 30000
#define READS_PER_WAKEUP 4

/*
 * What the shell on the target is told: exec the agent. Nothing else is written until the
 * agent's hello arrives (or the shell asks for the agent): a shell reading commands from a
 * pipe may read ahead (dash does), and would swallow bytes meant for another reader.
 *
 * With a static agent to ship (ptc-agent beside ptc, paths/companion.h) the shell runs the
 * copy cached under the target's ~/.cache/ptc by the agent's SHA-256, and first asks for it
 * when it is not there: it prints SHIP_MARKER, the host sends exactly the agent's bytes,
 * `head -c` takes them into a temporary file that is renamed into place once complete. The
 * marker is split in the command ("ptc-send""-agent") so that a channel that echoes its
 * input (cat) never shows it. Without one, `ptc` must be on the target's PATH.
 */
#define AGENT_COMMAND "exec ptc agent\n"
#define SHIP_MARKER "ptc-send-agent\n"
#define SHIP_COMMAND                                                                       \
        "a=\"${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/ptc/agent-%s\"; "                     \
        "if [ ! -x \"$a\" ]; then "                                                        \
        "if [ \"$(uname -m)\" != '%s' ]; then "                                            \
        "echo \"the target is $(uname -m); this ptc's agent is for %s\" >&2; exit 1; fi; " \
        "mkdir -p \"${a%%/*}\" && echo ptc-send\"\"-agent && head -c %lld > \"$a.$$\" && " \
        "chmod 700 \"$a.$$\" && mv -f \"$a.$$\" \"$a\" || exit 1; fi; exec \"$a\" agent\n"

/* The configuration the agent applies, as ptc_engine_set() keys. */
static const char *const forwarded_keys[] = {
        "code_execution.max_tool_calls",
        "code_execution.mode",
        "code_execution.module_name",
        "code_execution.python",
        "sandbox.isolation",
        "sandbox.network",
        "sandbox.memory_mb",
        "sandbox.pids",
        "terminal.timeout",
        "terminal.max_timeout",
        "terminal.isolation",
        "terminal.network",
        /* The agent judges its calls with the host's policy; asks come back here. */
        "policy.dangerous",
        "policy.headless",
        "policy.approval_timeout",
        "policy.threaded_exec",
};

void remote_run_unref(struct remote_run *r)
{
        unsigned left;

        pthread_mutex_lock(&r->lock);
        left = --r->refs;
        pthread_mutex_unlock(&r->lock);
        if (left > 0)
                return;
        safe_close(r->in_fd);
        pthread_mutex_destroy(&r->lock);
        pthread_cond_destroy(&r->calls_done);
        free(r);
}

void remote_arm_timer(struct remote_run *r, usec_t when)
{
        exec_arm_timer(r->timer_fd, when);
}

void remote_disarm_timer(struct remote_run *r)
{
        const struct itimerspec none = {};

        (void) timerfd_settime(r->timer_fd, 0, &none, NULL);
}

static bool json_array_has_string(const json_t *a, const char *want)
{
        size_t i;
        json_t *v;

        json_array_foreach(a, i, v) if (json_is_string(v) &&
                                        strcmp(json_string_value(v), want) == 0) return true;
        return false;
}

/* Send what @b holds (whole frames) to the agent; any thread. */
static int send_bytes(struct remote_run *r, const struct buf *b)
{
        int k = -EPIPE;

        pthread_mutex_lock(&r->lock);
        if (r->in_fd >= 0 && !r->write_broken) {
                /* A socket: a channel that is gone is no SIGPIPE (start_channel()). */
                k = write_all_stalling(r->in_fd, b->data, b->len, WRITE_STALL_MS, true);
                if (k < 0)
                        r->write_broken = true;
        }
        pthread_mutex_unlock(&r->lock);
        return k;
}

int remote_send_json(struct remote_run *r, enum frame_type type, const json_t *v)
{
        _cleanup_buf_ struct buf b = BUF_INIT(FRAME_HEADER_SIZE + FRAME_JSON_MAX);
        int k = frame_append_json(&b, type, v);

        return k < 0 ? k : send_bytes(r, &b);
}

/* Close the channel's stdin: the agent reads end of file after what was sent. */
void remote_close_input(struct remote_run *r)
{
        pthread_mutex_lock(&r->lock);
        r->in_fd = safe_close(r->in_fd);
        pthread_mutex_unlock(&r->lock);
}

void remote_kill_channel(struct remote_run *r)
{
        if (r->pid > 0 && !r->reaped)
                (void) kill(-r->pid, SIGKILL);
}

void remote_signal_tools(struct remote_run *r)
{
        uint64_t one = 1;

        (void) !write(r->cancel_fd, &one, sizeof(one));
}

/* The run failed on our side: say why (the first reason stays), and end the channel. */
void remote_fail(struct remote_run *r, const char *fmt, ...)
{
        va_list ap;

        if (!r->failure) {
                va_start(ap, fmt);
                if (vasprintf(&r->failure, fmt, ap) < 0)
                        r->failure = NULL;
                va_end(ap);
                if (!r->failure)
                        r->failure = strdup("the remote run failed (out of memory)");
        }
        remote_signal_tools(r);
        remote_close_input(r);
        remote_kill_channel(r);
        r->phase = PHASE_CLOSING;
        remote_arm_timer(r, now_usec() + CLOSE_USEC);
}

static void begin_stop(struct remote_run *r, enum exec_status why, const char *reason)
{
        json_auto_t *sig = NULL;

        if (r->phase != PHASE_RUNNING && r->phase != PHASE_HANDSHAKE)
                return;
        r->stopped = true;
        r->status = why;
        r->interrupt_reason = reason;
        remote_signal_tools(r);
        sig = json_pack("{s:s}", "signal", "interrupt");
        if (r->phase == PHASE_HANDSHAKE || !sig || remote_send_json(r, FRAME_SIGNAL, sig) < 0) {
                /* No agent to ask: the channel goes, and the target's end with it. */
                remote_close_input(r);
                remote_kill_channel(r);
                r->phase = PHASE_CLOSING;
                remote_arm_timer(r, now_usec() + CLOSE_USEC);
                return;
        }
        r->phase = PHASE_STOPPING;
        remote_arm_timer(r, now_usec() + EXEC_KILL_GRACE_USEC + STOP_MARGIN_USEC);
}

/* The static agent beside ptc (ptc-agent and its ptc-agent.sha256), if this build has one. */
static int find_agent(struct remote_run *r)
{
        char *dirs[COMPANION_DIRS];
        int k = 0;

        companion_dirs(dirs);
        for (size_t i = 0; i < COMPANION_DIRS && !r->agent_path; i++) {
                _cleanup_free_ char *path = NULL, *sum = NULL;
                _cleanup_close_ int fd = -EBADF;
                char hex[65] = "";
                struct stat st;
                ssize_t n;

                if (!dirs[i] || asprintf(&path, "%s/ptc-agent", dirs[i]) < 0 ||
                    asprintf(&sum, "%s/ptc-agent.sha256", dirs[i]) < 0) {
                        k = dirs[i] ? -ENOMEM : 0;
                        continue;
                }
                fd = open(sum, O_RDONLY | O_CLOEXEC);
                if (fd < 0 || stat(path, &st) < 0 || !S_ISREG(st.st_mode))
                        continue;
                n = read(fd, hex, 64);
                if (n != 64 || strspn(hex, "0123456789abcdef") != 64)
                        continue;
                memcpy(r->agent_hash, hex, sizeof(hex));
                r->agent_size = (uint64_t) st.st_size;
                r->agent_path = TAKE_PTR(path);
        }
        for (size_t i = 0; i < COMPANION_DIRS; i++)
                free(dirs[i]);
        return k;
}

/* The target's shell asked for the agent: send exactly its bytes. */
static void ship_agent(struct remote_run *r)
{
        _cleanup_close_ int fd = open(r->agent_path, O_RDONLY | O_CLOEXEC);
        _cleanup_buf_ struct buf chunk = BUF_INIT(FRAME_READ_SIZE);
        uint64_t left = r->agent_size;
        usec_t t0 = now_usec();

        r->agent_sent = true;
        if (fd < 0) {
                remote_fail(r, "cannot read the agent to ship, %s: %s", r->agent_path,
                            strerror(errno));
                return;
        }
        if (buf_reserve(&chunk, FRAME_READ_SIZE) < 0) {
                remote_fail(r, "out of memory");
                return;
        }
        while (left > 0) {
                ssize_t n = read(fd, chunk.data, MIN(left, (uint64_t) FRAME_READ_SIZE));

                if (n <= 0) {
                        remote_fail(r, "cannot read the agent to ship, %s: %s", r->agent_path,
                                    n < 0 ? strerror(errno) : "it is shorter than it was");
                        return;
                }
                chunk.len = (size_t) n;
                if (send_bytes(r, &chunk) < 0) {
                        remote_fail(r, "cannot send the agent through the channel");
                        return;
                }
                left -= (uint64_t) n;
        }
        trace_span_now(r->o->trace, "agent upload", "setup", t0,
                       json_pack("{s:I}", "bytes", (json_int_t) r->agent_size));
        /* The handshake's clock restarts: the upload took its time. */
        remote_arm_timer(r, MIN(r->deadline, now_usec() + HANDSHAKE_USEC));
}

static void handle_frame(struct remote_run *r, const struct frame *f)
{
        json_auto_t *v = NULL;
        struct diag d;
        json_int_t proto;

        if (f->type == FRAME_STDOUT || f->type == FRAME_STDERR) {
                (void) capture_feed(f->type == FRAME_STDERR ? &r->err : &r->out, f->payload,
                                    f->len);
                event_output(r->o->events, f->type == FRAME_STDERR, f->payload, f->len);
                return;
        }
        v = frame_parse_json(f, &d);
        if (!v) {
                remote_fail(r, "%s", d.message);
                return;
        }
        switch (f->type) {
        case FRAME_HELLO:
                proto = json_integer_value(json_object_get(v, "protocol"));
                if (proto != FRAME_PROTOCOL_VERSION) {
                        remote_fail(r,
                                    "the agent on the target speaks protocol %lld, this ptc %d: "
                                    "install the same ptc version there",
                                    (long long) proto, FRAME_PROTOCOL_VERSION);
                        return;
                }
                if (r->session &&
                    !json_array_has_string(json_object_get(v, "features"), "session")) {
                        remote_fail(r, "the agent on the target has no sessions: install the "
                                       "same ptc version there");
                        return;
                }
                if (!json_array_has_string(json_object_get(v, "features"), "policy")) {
                        remote_fail(r, "the agent on the target does not apply the policy "
                                       "(docs/policy.md): install the same ptc version there");
                        return;
                }
                if (r->phase == PHASE_HANDSHAKE) {
                        if (send_bytes(r, &r->opening) < 0) {
                                remote_fail(r, "cannot write to the channel");
                                return;
                        }
                        buf_release(&r->opening);
                        r->script_started = now_usec();
                        trace_span(r->o->trace, "handshake", "setup", r->channel_started,
                                   r->script_started, NULL);
                        r->phase = PHASE_RUNNING;
                        remote_arm_timer(r, r->deadline);
                }
                break;
        case FRAME_CALL:
                remote_start_call(r, v);
                break;
        case FRAME_ASK:
                remote_start_ask(r, v);
                break;
        case FRAME_EXIT:
                if (r->phase != PHASE_HANDSHAKE && r->script_started)
                        trace_span_now(r->o->trace, r->session ? "cell" : "script", "script",
                                       r->script_started, json_pack("{s:s}", "on", "target"));
                if (r->session && !r->cell_over && r->phase != PHASE_HANDSHAKE) {
                        /* A cell's end: the agent waits for the next one. */
                        r->session_lost = json_is_true(json_object_get(v, "session_lost"));
                        r->exit = TAKE_PTR(v);
                        r->cell_over = true;
                        remote_signal_tools(r);
                        r->phase = PHASE_RUNNING;
                        remote_disarm_timer(r);
                        break;
                }
                r->exit = TAKE_PTR(v);
                remote_signal_tools(r);
                remote_close_input(r); /* the agent exits at end of file */
                r->phase = PHASE_CLOSING;
                remote_arm_timer(r, now_usec() + CLOSE_USEC);
                break;
        case FRAME_PROGRESS: {
                /* Named by the registry's own string: the target's is not trusted. */
                const struct tool *t = registry_find(r->o->registry,
                                                     json_string_value(json_object_get(v, "tool")));
                json_int_t n = json_integer_value(json_object_get(v, "count"));

                if (t && n > 0 && r->o->on_call)
                        r->o->on_call(r->o->on_call_userdata, t->name, n);
                /* A call on the target: what the host knows of it. */
                if (t && n > 0)
                        event_emit(r->o->events, "call",
                                   json_pack("{s:s, s:I, s:b}", "tool", t->name, "count", n,
                                             "on_target", 1));
                break;
        }
        case FRAME_ERROR:
                r->agent_said_why = true;
                remote_fail(r, "the agent on the target failed: %s",
                            json_string_value(json_object_get(v, "error")) ?: "(no message)");
                break;
        default:
                break;
        }
}

static void close_out(struct remote_run *r)
{
        loop_remove(r->out_src);
        r->out_src = NULL;
        r->out_fd = safe_close(r->out_fd);
}

static void on_out(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct remote_run *r = userdata;
        struct frame f;
        struct diag d;
        int k;

        for (int i = 0; i < READS_PER_WAKEUP && r->out_fd >= 0; i++) {
                ssize_t n = frame_reader_fill(&r->reader, fd);

                if (n == -EAGAIN)
                        return;
                if (n <= 0) {
                        if (!r->exit && !r->failure && !r->stopped) {
                                if (n < 0)
                                        remote_fail(r, "reading the channel: %s",
                                                    strerror((int) -n));
                                else if (frame_reader_eof(&r->reader, &d) < 0)
                                        remote_fail(r, "%s", d.message);
                                else
                                        remote_fail(r,
                                                    "the channel closed before the script ended");
                        }
                        close_out(r);
                        return;
                }
                while ((k = frame_reader_next(&r->reader, &f, &d)) == 1 && r->out_fd >= 0) {
                        handle_frame(r, &f);
                        if (r->failure)
                                break;
                }
                if (k < 0) {
                        remote_fail(r, "%s", d.message);
                        close_out(r);
                        return;
                }
                if (r->agent_path && !r->agent_sent && r->reader.watch_seen &&
                    r->phase == PHASE_HANDSHAKE)
                        ship_agent(r);
                if (r->failure) {
                        close_out(r);
                        return;
                }
        }
}

static void on_err(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct remote_run *r = userdata;
        char buf[4096];
        ssize_t n = read(fd, buf, sizeof(buf));

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n <= 0) {
                loop_remove(r->err_src);
                r->err_src = NULL;
                r->err_fd = safe_close(r->err_fd);
                return;
        }
        /* The start is what explains a failure; the rest is dropped. */
        n = MIN(n, (ssize_t) (sizeof(r->chan_err) - r->chan_err_len));
        memcpy(r->chan_err + r->chan_err_len, buf, (size_t) n);
        r->chan_err_len += (size_t) n;
}

static void on_pid(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct remote_run *r = userdata;
        siginfo_t si = {};

        if (waitid(P_PID, (id_t) r->pid, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
                return;
        r->reaped = true;
        loop_remove(r->pid_src);
        r->pid_src = NULL;
        r->pidfd = safe_close(r->pidfd);
        /* Whatever the channel left holding its pipes goes with its session. */
        (void) kill(-r->pid, SIGKILL);
        if (r->phase != PHASE_CLOSING) {
                r->phase = PHASE_CLOSING;
                remote_arm_timer(r, now_usec() + CLOSE_USEC);
        }
}

/* The last ask's wait ended: the deadline moved by the pause. */
static void on_wake(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct remote_run *r = userdata;
        bool paused;
        usec_t d;

        pause_clock_drain(fd);
        d = pause_clock_deadline(&r->clock, r->deadline, &paused);
        if (r->phase == PHASE_RUNNING && !paused && !(r->session && r->cell_over))
                remote_arm_timer(r, d);
}

static void on_timer(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct remote_run *r = userdata;
        uint64_t n;

        (void) !read(fd, &n, sizeof(n));
        switch (r->phase) {
        case PHASE_HANDSHAKE:
                remote_fail(r, "no answer within %g s",
                            (double) (MIN(r->deadline, r->start + HANDSHAKE_USEC) - r->start) /
                                    USEC_PER_SEC);
                break;
        case PHASE_RUNNING: {
                bool paused;
                usec_t d = pause_clock_deadline(&r->clock, r->deadline, &paused);

                /* An ask waits for its answer: the wait's end re-arms (on_wake()). */
                if (paused)
                        break;
                if (d > now_usec()) {
                        remote_arm_timer(r, d);
                        break;
                }
                exec_event_timeout(r->o);
                begin_stop(r, EXEC_TIMEOUT, NULL);
                break;
        }
        case PHASE_STOPPING:
                /* The agent did not end the run in its grace period: the channel goes. */
                remote_close_input(r);
                remote_kill_channel(r);
                r->phase = PHASE_CLOSING;
                remote_arm_timer(r, now_usec() + CLOSE_USEC);
                break;
        case PHASE_CLOSING:
                if (!r->reaped)
                        remote_kill_channel(r);
                r->close_timed_out = true;
                break;
        }
}

static void on_signal(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct remote_run *r = userdata;
        struct signalfd_siginfo si;

        while (read(fd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
                if (si.ssi_signo == SIGINT)
                        begin_stop(r, EXEC_INTERRUPTED, "SIGINT");
                else if (si.ssi_signo == SIGTERM)
                        begin_stop(r, EXEC_INTERRUPTED, "SIGTERM");
                else if (si.ssi_signo == SIGHUP)
                        begin_stop(r, EXEC_INTERRUPTED, "SIGHUP");
        }
}

static void on_cancel(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct remote_run *r = userdata;
        const char *reason = NULL;

        if (r->o->cancel_reason)
                reason = __atomic_load_n(r->o->cancel_reason, __ATOMIC_ACQUIRE);
        begin_stop(r, EXEC_INTERRUPTED, reason ? reason : "cancelled");
        loop_remove(s);
}

static bool is_done(const struct remote_run *r)
{
        return (r->reaped && r->out_fd < 0 && r->err_fd < 0) || r->close_timed_out ||
               (r->session && r->cell_over);
}

/* The run frame: the script, the configuration the agent applies, the tools and where. */
json_t *remote_run_frame(const struct remote_run *r)
{
        const struct exec_opts *o = r->o;
        json_auto_t *run = NULL, *opts = NULL, *tools = NULL, *host = NULL;
        char timeout[64];

        opts = json_object();
        tools = json_array();
        host = json_array();
        if (!opts || !tools || !host)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(forwarded_keys); i++) {
                _cleanup_free_ char *v = NULL;

                if (config_get_value(o->config, forwarded_keys[i], &v, NULL) < 0)
                        return NULL;
                if (json_object_set_new(opts, forwarded_keys[i], json_string(v)) < 0)
                        return NULL;
        }
        result_format_seconds(o->config->timeout + AGENT_TIMEOUT_MARGIN, timeout, sizeof(timeout));
        if (json_object_set_new(opts, "code_execution.timeout", json_string(timeout)) < 0)
                return NULL;
        if (o->config->policy.n_rules > 0) {
                json_auto_t *rules = policy_rules_to_json(&o->config->policy);
                _cleanup_free_ char *text = rules ? json_dumps(rules, JSON_COMPACT) : NULL;

                if (!text || json_object_set_new(opts, "policy.rules", json_string(text)) < 0)
                        return NULL;
        }
        /* The agent's engine checks it where it is a path: on the target. */
        if (o->config->remote_cwd &&
            json_object_set_new(opts, "cwd", json_string(o->config->remote_cwd)) < 0)
                return NULL;
        for (size_t i = 0; i < registry_count(o->registry); i++) {
                const struct tool *t = registry_get(o->registry, i);
                json_t *def;

                if (!t->runs_on_host) {
                        if (json_array_append_new(tools, json_string(t->name)) < 0)
                                return NULL;
                        continue;
                }
                def = json_pack("{s:s, s:s, s:O, s:s}", "name", t->name, "description",
                                t->description, "parameters", t->parameters, "returns", t->returns);
                if (!def || json_array_append_new(host, def) < 0)
                        return NULL;
        }
        run = json_pack("{s:s%, s:O, s:O, s:O, s:b, s:b, s:b}", "code", o->code, o->code_len,
                        "options", opts, "tools", tools, "host_tools", host, "log_calls",
                        o->log_calls, "progress", o->on_call != NULL, "session", r->session);
        return TAKE_PTR(run);
}

static int start_channel(struct remote_run *r, struct diag *reterr)
{
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_free_ char *path = NULL;
        int inp[2] = {-1, -1}, outp[2] = {-1, -1}, errp[2] = {-1, -1};
        struct spawn_opts so;
        int k;

        k = backend_channel_argv(r->o->backend, &argv);
        if (k < 0)
                return diag_set(reterr, k, "backend '%s': %s", r->o->backend->spec, strerror(-k));
        path = find_in_path(argv[0]);
        if (!path)
                return diag_set(reterr, -ENOENT,
                                "backend '%s': '%s' is not installed (not found on PATH)",
                                r->o->backend->spec, argv[0]);
        /*
         * The channel's stdin is a socket, not a pipe: a write to a channel that is gone is
         * an EPIPE (MSG_NOSIGNAL), never a SIGPIPE that would kill a host that did not ignore
         * it (a library host, ptc doctor).
         */
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, inp) < 0 ||
            pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
                k = -errno;
                goto fail;
        }
        so = (struct spawn_opts){
                .path = path,
                .argv = argv,
                .envp = r->o->base_env,
                /* A channel to this machine (exec:sh) starts where a local run would. */
                .cwd = r->o->cwd,
                .stdin_fd = inp[0],
                .stdout_fd = outp[1],
                .stderr_fd = errp[1],
                .new_session = true,
                .die_with_parent = true,
                .cgroup_fd = -1,
                .pass_fd = -1,
                .exec_fd = -1,
        };
        k = spawn_process(&so, &r->pid, &r->pidfd, reterr);
        if (k < 0)
                goto fail;
        safe_close(inp[0]);
        safe_close(outp[1]);
        safe_close(errp[1]);
        r->in_fd = inp[1];
        r->out_fd = outp[0];
        r->err_fd = errp[0];
        if (fd_set_nonblock(r->in_fd, true) < 0 || fd_set_nonblock(r->out_fd, true) < 0 ||
            fd_set_nonblock(r->err_fd, true) < 0)
                return diag_set(reterr, -errno, "cannot set up the channel's pipes: %m");
        return 0;
fail:
        for (size_t i = 0; i < 2; i++) {
                safe_close(inp[i]);
                safe_close(outp[i]);
                safe_close(errp[i]);
        }
        return diag_set(reterr, k, "backend '%s': cannot start '%s': %s", r->o->backend->spec,
                        argv[0], strerror(-k));
}

/* A run's own (a session's cell's): the clock, the tools' context, the capture. */
int remote_begin_run(struct remote_run *r, const struct exec_opts *o, struct diag *reterr)
{
        int k;

        r->o = o;
        r->host_calls = 0; /* each cell has its own budget */
        r->start = now_usec();
        r->deadline = r->start + (usec_t) (o->config->timeout * USEC_PER_SEC);
        r->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        r->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        pause_clock_init(&r->clock, r->wake_fd);
        if (r->cancel_fd < 0 || r->wake_fd < 0)
                return diag_set(reterr, -errno, "cannot create event fds: %m");
        r->tool_ctx = (struct tool_ctx){
                .config = o->config,
                .cwd = o->cwd,
                .env = o->base_env,
                .deadline = r->deadline,
                .cancel_fd = r->cancel_fd,
                .redactor = o->redactor,
                .python = o->python,
                .approver = o->approver,
                .clock = &r->clock,
        };
        k = exec_capture_init(o, &r->out, &r->err);
        if (k < 0)
                return diag_set(reterr, k, "cannot set up output capture: %s", strerror(-k));
        return 0;
}

/* The run's end (a cell's): what remote_begin_run() and remote_attach_loop() set up. The channel
 * stays. */
void remote_end_run(struct remote_run *r)
{
        if (r->cancel_fd >= 0)
                remote_wait_calls(r);
        /* The loop's sources go with it; the channel's fds stay open. */
        r->loop = loop_free(r->loop);
        r->out_src = r->err_src = r->pid_src = NULL;
        r->sig_fd = safe_close(r->sig_fd);
        r->cancel_fd = safe_close(r->cancel_fd);
        if (r->wake_fd >= 0)
                pause_clock_done(&r->clock);
        r->wake_fd = safe_close(r->wake_fd);
        capture_release(&r->out);
        capture_release(&r->err);
        json_decref(r->exit);
        r->exit = NULL;
}

/* An event loop for the run on this thread: the channel while it lives, the timer, stops. */
int remote_attach_loop(struct remote_run *r, struct diag *reterr)
{
        const struct exec_opts *o = r->o;
        sigset_t mask;
        int k;

        k = loop_new(&r->loop);
        if (k < 0)
                return diag_set(reterr, k, "cannot create the event loop: %s", strerror(-k));
        if ((r->out_fd >= 0 &&
             (k = loop_add(r->loop, r->out_fd, EPOLLIN, on_out, r, &r->out_src)) < 0) ||
            (r->err_fd >= 0 &&
             (k = loop_add(r->loop, r->err_fd, EPOLLIN, on_err, r, &r->err_src)) < 0) ||
            (k = loop_add(r->loop, r->timer_fd, EPOLLIN, on_timer, r, NULL)) < 0 ||
            (r->wake_fd >= 0 &&
             (k = loop_add(r->loop, r->wake_fd, EPOLLIN, on_wake, r, NULL)) < 0) ||
            (r->pidfd >= 0 &&
             (k = loop_add(r->loop, r->pidfd, EPOLLIN, on_pid, r, &r->pid_src)) < 0))
                return diag_set(reterr, k, "event loop: %s", strerror(-k));
        if (o->handle_signals) {
                sigemptyset(&mask);
                sigaddset(&mask, SIGINT);
                sigaddset(&mask, SIGTERM);
                sigaddset(&mask, SIGHUP);
                r->sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
                if (r->sig_fd < 0)
                        return diag_set(reterr, -errno, "signalfd: %m");
                k = loop_add(r->loop, r->sig_fd, EPOLLIN, on_signal, r, NULL);
                if (k < 0)
                        return diag_set(reterr, k, "event loop: %s", strerror(-k));
        }
        if (o->cancel_fd >= 0) {
                k = loop_add(r->loop, o->cancel_fd, EPOLLIN, on_cancel, r, NULL);
                if (k < 0)
                        return diag_set(reterr, k, "event loop: %s", strerror(-k));
        }
        return 0;
}

/*
 * Start the channel and tell the target's shell to exec the agent; @opening (our magic,
 * hello and, for a one-shot run, the run frame) goes when the agent's hello comes.
 */
static int open_channel(struct remote_run *r, struct diag *reterr)
{
        json_auto_t *hello = NULL, *run = NULL;
        int k;

        r->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (r->timer_fd < 0)
                return diag_set(reterr, -errno, "cannot create event fds: %m");
        hello = json_pack("{s:i, s:s, s:[]}", "protocol", FRAME_PROTOCOL_VERSION, "ptc",
                          PTC_VERSION, "features");
        if (!r->session) {
                /* The run frame is JSON: the script travels as a string. */
                if (!utf8_is_valid(r->o->code, r->o->code_len))
                        return diag_set(reterr, -EINVAL,
                                        "a remote run takes a UTF-8 script; this one is not valid "
                                        "UTF-8");
                run = remote_run_frame(r);
                if (!run)
                        return diag_set(reterr, -ENOMEM, "out of memory");
        }
        if (!hello)
                return diag_set(reterr, -ENOMEM, "out of memory");
        r->opening = BUF_INIT(FRAME_MAGIC_SIZE + 2 * (FRAME_HEADER_SIZE + FRAME_JSON_MAX));
        k = frame_append_magic(&r->opening);
        k = k ?: frame_append_json(&r->opening, FRAME_HELLO, hello);
        if (run)
                k = k ?: frame_append_json(&r->opening, FRAME_RUN, run);
        if (k == -E2BIG)
                return diag_set(reterr, k,
                                "the script is too large for the remote stream (at "
                                "most 16 MiB with its options)");
        if (k < 0)
                return diag_set(reterr, k, "out of memory");

        k = find_agent(r);
        if (k < 0)
                return diag_set(reterr, k, "out of memory");
        r->channel_started = now_usec();
        k = start_channel(r, reterr);
        if (k < 0)
                return k;
        trace_span_now(r->o->trace, "channel", "setup", r->channel_started,
                       json_pack("{s:s}", "backend", backend_kind_name(r->o->backend->kind)));
        k = remote_attach_loop(r, reterr);
        if (k < 0)
                return k;
        remote_arm_timer(r, MIN(r->deadline, r->start + HANDSHAKE_USEC));

        {
                _cleanup_free_ char *text = NULL;
                struct utsname u;
                struct buf cmd;

                if (r->agent_path) {
                        if (uname(&u) < 0 || asprintf(&text, SHIP_COMMAND, r->agent_hash, u.machine,
                                                      u.machine, (long long) r->agent_size) < 0)
                                return diag_set(reterr, -ENOMEM, "out of memory");
                        frame_reader_watch(&r->reader, SHIP_MARKER);
                }
                cmd = (struct buf){.data = text ?: (char *) AGENT_COMMAND,
                                   .len = strlen(text ?: AGENT_COMMAND)};
                /*
                 * A channel that died at once (ssh refused) fails this write or not, as the
                 * race goes: either way its closing stdout says so, with its stderr.
                 */
                (void) send_bytes(r, &cmd);
        }
        return 0;
}

int remote_setup(struct remote_run *r, const struct exec_opts *o, struct diag *reterr)
{
        int k = remote_begin_run(r, o, reterr);

        return k < 0 ? k : open_channel(r, reterr);
}

void remote_teardown(struct remote_run *r)
{
        remote_close_input(r);
        if (r->pid > 0 && !r->reaped) {
                (void) kill(-r->pid, SIGKILL);
                (void) waitpid(r->pid, NULL, 0);
                r->reaped = true;
        }
        remote_end_run(r);
        safe_close(r->out_fd);
        safe_close(r->err_fd);
        safe_close(r->pidfd);
        safe_close(r->timer_fd);
        frame_reader_release(&r->reader);
        free(r->failure);
        buf_release(&r->opening);
        free(r->agent_path);
}

struct remote_run *remote_run_new(void)
{
        struct remote_run *r = calloc(1, sizeof(*r));

        if (!r)
                return NULL;
        *r = (struct remote_run){
                .refs = 1,
                .in_fd = -EBADF,
                .pid = -1,
                .pidfd = -EBADF,
                .out_fd = -EBADF,
                .err_fd = -EBADF,
                .timer_fd = -EBADF,
                .sig_fd = -EBADF,
                .cancel_fd = -EBADF,
                .wake_fd = -EBADF,
                /* Released on every path, initialized or not. */
                .out = {.spill_fd = -EBADF},
                .err = {.spill_fd = -EBADF},
                .phase = PHASE_HANDSHAKE,
        };
        pthread_mutex_init(&r->lock, NULL);
        pthread_cond_init(&r->calls_done, NULL);
        frame_reader_init(&r->reader, FRAME_SIDE_HOST);
        return r;
}

/* Run the loop until the run (the cell, the handshake) is over. */
int remote_run_loop(struct remote_run *r, bool handshake_only, struct diag *reterr)
{
        while (!is_done(r) && !(handshake_only && r->phase != PHASE_HANDSHAKE)) {
                int k = loop_run_once(r->loop, -1);

                if (k < 0)
                        return diag_set(reterr, k, "event loop failed: %s", strerror(-k));
        }
        return 0;
}
