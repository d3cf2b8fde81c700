/* SPDX-License-Identifier: MIT */
/*
 * terminal (docs/seed.md 2.5): run one shell command in the foreground.
 *
 * Each call is a fresh `/bin/bash -c COMMAND` with the execution's scrubbed
 * environment (docs/contracts.md 8), stdin from /dev/null, stdout and stderr
 * merged, in its own session. When the shell exits, whatever it left running
 * in its process group is killed, so `cmd &` cannot outlive the call. As root
 * (unless isolation is none) the shell is pid 1 of a pid namespace of its own
 * with a fresh /proc: ptc is not visible to it, and its exit kills everything
 * it started, daemons included. Elsewhere it runs under an init of its own, a
 * child subreaper that does the same (sandbox-init.c). The seed's approval system for dangerous
 * commands is not part of ptc.
 *
 * Calls run on worker threads, many at once. The command's process is started, confined,
 * read and ended by command_run() (core/command/command.h), its execs judged by the exec
 * supervisor (exec-supervisor.h); the long-lived-process guard is terminal-guard.c.
 */

#include "core/tools/tool.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "basic/utf8.h"
#include "core/command/command.h"
#include "core/command/pidns-init.h"
#include "core/output/ansi.h"
#include "core/output/capture.h"
#include "core/output/redact-stream.h"
#include "core/output/redact.h"
#include "core/policy/path-protect.h"
#include "core/policy/policy.h"
#include "core/sandbox/landlock.h"
#include "core/sandbox/sandbox.h"
#include "core/tools/exec-supervisor.h"
#include "core/tools/terminal-guard.h"
#include "core/tools/tool-util.h"

#define DEFAULT_TIMEOUT_SEC 180
#define DEFAULT_MAX_TIMEOUT_SEC 600
/* Output kept: the seed's 50,000-character cap with its 40/60 head/tail split. */
#define OUTPUT_HEAD_MAX 20000
#define OUTPUT_TAIL_MAX 30000
#define SHELL_PATH "/bin/bash"
#define SHELL_FALLBACK "/bin/sh"

static bool is_space(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* ---------------------------------------------------------------------------------------- */
/* Result details                                                                           */

struct exit_meaning {
        const char *cmd;
        int code;
        const char *text;
};

static const struct exit_meaning exit_meanings[] = {
        {"grep", 1, "No lines matched (grep exits 1 for that; not an error)"},
        {"egrep", 1, "No lines matched (egrep exits 1 for that; not an error)"},
        {"fgrep", 1, "No lines matched (fgrep exits 1 for that; not an error)"},
        {"rg", 1, "No lines matched (rg exits 1 for that; not an error)"},
        {"ag", 1, "No lines matched (ag exits 1 for that; not an error)"},
        {"ack", 1, "No lines matched (ack exits 1 for that; not an error)"},
        {"diff", 1, "The inputs differ (diff exits 1 for that; not an error)"},
        {"colordiff", 1, "The inputs differ (colordiff exits 1 for that; not an error)"},
        {"find", 1, "Some paths could not be read; the results shown may still be usable"},
        {"test", 1, "The condition is false (not an error)"},
        {"[", 1, "The condition is false (not an error)"},
        {"curl", 6, "curl could not resolve the host name"},
        {"curl", 7, "curl could not connect to the host"},
        {"curl", 22, "The server answered with an HTTP error status (4xx or 5xx)"},
        {"curl", 28, "curl gave up: the operation timed out"},
        {"git", 1,
         "git exits 1 in ordinary cases too (e.g. 'git diff' when there are differences)"},
};

/*
 * What a non-zero exit status of the last command of a pipeline or chain
 * means when it is not a failure (grep's "no match" ...), or NULL.
 */
static const char *exit_code_meaning(const char *cmd, int code)
{
        const char *seg = cmd, *p, *w, *base;
        char word[256];
        size_t wl;

        if (code == 0)
                return NULL;
        /* The last segment after ||, &&, | or ; */
        for (p = cmd; *p; p++) {
                if ((p[0] == '|' && p[1] == '|') || (p[0] == '&' && p[1] == '&')) {
                        seg = p + 2;
                        p++;
                } else if (*p == '|' || *p == ';')
                        seg = p + 1;
        }

        /* Its first word that is not a VAR=value assignment. */
        for (p = seg;;) {
                while (is_space(*p))
                        p++;
                if (!*p)
                        return NULL;
                w = p;
                while (*p && !is_space(*p))
                        p++;
                wl = (size_t) (p - w);
                if (memchr(w, '=', wl) && w[0] != '-')
                        continue;
                break;
        }
        if (wl >= sizeof(word))
                return NULL;
        memcpy(word, w, wl);
        word[wl] = 0;
        base = strrchr(word, '/');
        base = base ? base + 1 : word;

        for (size_t i = 0; i < ELEMENTSOF(exit_meanings); i++)
                if (exit_meanings[i].code == code && strcmp(exit_meanings[i].cmd, base) == 0)
                        return exit_meanings[i].text;
        return NULL;
}

static bool workdir_char_ok(unsigned char c)
{
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               strchr("/\\:_-.~ +@=,", c);
}

/* Python's repr() of the one character at @p, into @buf. */
static const char *char_repr(const char *p, char *buf, size_t size)
{
        unsigned char c = (unsigned char) *p;

        if (c == '\'')
                (void) snprintf(buf, size, "\"'\"");
        else if (c == '\n')
                (void) snprintf(buf, size, "'\\n'");
        else if (c == '\r')
                (void) snprintf(buf, size, "'\\r'");
        else if (c == '\t')
                (void) snprintf(buf, size, "'\\t'");
        else if (c < 0x20 || c == 0x7f)
                (void) snprintf(buf, size, "'\\x%02x'", c);
        else if (c < 0x80)
                (void) snprintf(buf, size, "'%c'", c);
        else {
                size_t n = 1;

                while (n < 4 && ((unsigned char) p[n] & 0xC0) == 0x80)
                        n++;
                /* U+0080..U+00A0 and U+00AD are not printable for Python. */
                if (c == 0xC2 && n == 2 &&
                    ((unsigned char) p[1] <= 0xA0 || (unsigned char) p[1] == 0xAD))
                        (void) snprintf(buf, size, "'\\x%02x'", (unsigned char) p[1] & 0xFF);
                else
                        (void) snprintf(buf, size, "'%.*s'", (int) n, p);
        }
        return buf;
}

/*
 * terminal.isolation: strict: the command in the script's sandbox (docs/isolation.md), with
 * @cwd read-write and at its host path, the rest of the view read-only, no network unless
 * terminal.network, the sandbox's limits, HOME and TMPDIR as for the script (sandbox_env():
 * *ret_env is the caller's to free). Fails (-EOPNOTSUPP, why in @err) when a layer is
 * missing from this kernel.
 */
static int strict_sandbox(const struct ptc_config *c, char **argv, char *const *envp,
                          const char *cwd, struct sandbox_opts *ret, char ***ret_env, char *err,
                          size_t errlen)
{
        char why[_SANDBOX_LAYER_MAX][256];
        int abi = landlock_abi(), r;
        unsigned missing = sandbox_kernel_missing(abi, why);

        for (int l = 0; l < _SANDBOX_LAYER_MAX; l++)
                if (missing & (1u << l)) {
                        (void) snprintf(err, errlen, "%s: %s",
                                        sandbox_layer_to_string((enum sandbox_layer) l), why[l]);
                        return -EOPNOTSUPP;
                }
        r = sandbox_env(envp, cwd, ret_env);
        if (r < 0) {
                (void) snprintf(err, errlen, "out of memory");
                return r;
        }
        *ret = (struct sandbox_opts){
                .layers = SANDBOX_LAYERS_ALL,
                .path = SHELL_PATH,
                .argv = argv,
                .envp = *ret_env,
                .cwd = cwd,
                .network = c->terminal_network,
                .landlock_abi = abi,
                .limits = sandbox_limits_for((uint64_t) c->memory_mb, (uint64_t) c->pids,
                                             SANDBOX_NOFILE,
                                             (uint64_t) c->terminal_max_timeout * 2 + 10),
        };
        return 0;
}

/* {"output": "", "exit_code": -1, "error": msg, "status": status} */
static int status_result(json_t **ret, const char *status, const char *fmt, ...) _printf_(3, 4);
static int status_result(json_t **ret, const char *status, const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL;
        json_auto_t *o = json_object();
        va_list ap;
        int r;

        if (!o)
                return -ENOMEM;
        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0) {
                msg = NULL;
                return -ENOMEM;
        }
        if (tool_json_set(o, "output", json_string("")) < 0 ||
            tool_json_set(o, "exit_code", json_integer(-1)) < 0 ||
            tool_json_set(o, "error", tool_json_str(msg)) < 0 ||
            tool_json_set(o, "status", json_string(status)) < 0)
                return -ENOMEM;
        *ret = json_incref(o);
        return 0;
}

static bool is_trim_space(unsigned char c)
{
        /* str.strip(): ASCII whitespace and the information separators 0x1c..0x1f. */
        return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/* The head's end and the tail's start: where no secret is cut (docs/observability.md). */
static int output_seam(const char *s, size_t n, size_t want, bool forward, size_t *ret_cut,
                       void *userdata)
{
        bool safe;

        return redact_find_cut(userdata, REDACT_FULL, s, n, want, forward, ret_cut, &safe);
}

/* Capture -> note -> ANSI strip -> trim -> redact, as the seed's post-processing. */
static int finish_output(const struct tool_ctx *ctx, const struct capture *cap, const char *note,
                         char **ret, size_t *ret_len)
{
        struct capture_text txt = {};
        _cleanup_free_ char *s = NULL;
        char *redacted = NULL;
        size_t n, start = 0, rlen;
        int r;

        r = capture_text_cut(cap, output_seam, (void *) ctx->redactor, &txt);
        if (r < 0)
                return r;
        n = txt.len;
        if (note) {
                size_t nl = strlen(note);
                char *p = realloc(txt.text, n + nl + 1);

                if (!p) {
                        free(txt.text);
                        return -ENOMEM;
                }
                memcpy(p + n, note, nl + 1);
                txt.text = p;
                n += nl;
        }
        s = txt.text;
        n = ansi_strip(s, n);

        while (start < n && is_trim_space((unsigned char) s[start]))
                start++;
        while (n > start && is_trim_space((unsigned char) s[n - 1]))
                n--;
        memmove(s, s + start, n - start);
        n -= start;
        s[n] = 0;

        r = redact_text(ctx->redactor, REDACT_FULL, s, n, &redacted, &rlen);
        if (r < 0)
                return r;
        if (r > 0) {
                *ret = redacted;
                *ret_len = rlen;
                return 0;
        }
        *ret_len = n;
        *ret = TAKE_PTR(s);
        return 0;
}

/* The exec supervisor as command_run() sees it (command.h). */
static usec_t watch_deadline(void *userdata, usec_t deadline)
{
        return exec_supervisor_deadline(userdata, deadline);
}

static void watch_woken(void *userdata)
{
        exec_supervisor_woken(userdata);
}

/*
 * Run @p with every program its tree executes judged by @policy (NULL: none). The supervisor
 * starts before the command, whose first exec (the shell's) waits for its answer, and stops
 * after it: what it saw into *@ret_exec, why it could not supervise into @why.
 */
static int run_supervised(struct command_opts *p, const struct exec_supervisor_opts *policy,
                          struct command_result *ret, struct exec_supervisor_report *ret_exec,
                          char *why, size_t why_size)
{
        struct exec_supervisor *sup = NULL;
        struct command_exec_watch w;
        int sock = -1, r;

        *ret_exec = (struct exec_supervisor_report){};
        if (policy) {
                r = exec_supervisor_start(policy, &sup, &sock, why, why_size);
                if (r < 0)
                        return r;
        }
        if (sup) {
                w = (struct command_exec_watch){
                        .program = sock >= 0 ? exec_supervisor_program() : NULL,
                        .child_sock = sock,
                        .wake_fd = exec_supervisor_wake_fd(sup),
                        .deadline = watch_deadline,
                        .woken = watch_woken,
                        .userdata = sup,
                };
                p->exec_watch = &w;
        }
        r = command_run(p, ret);
        p->exec_watch = NULL;
        exec_supervisor_stop(sup, ret_exec);
        return r;
}

static int terminal_run(const struct tool *t, const struct tool_ctx *ctx, json_t *args,
                        json_t **ret_result)
{
        _cleanup_free_ char *workdir_abs = NULL, *output = NULL, *command_bytes = NULL;
        _cleanup_(path_protect_done) struct path_protect protect = PATH_PROTECT_NULL;
        json_auto_t *res = NULL;
        struct command_result pr = {};
        struct exec_supervisor_report exec_rep;
        char exec_why[256] = "";
        struct capture cap;
        const char *command, *workdir = NULL, *guidance, *err = NULL, *meaning;
        json_t *cv, *wv;
        struct policy_verdict text_verdict;
        struct exec_supervisor_opts exec_opts;
        _cleanup_free_ char *exec_note = NULL;
        int64_t timeout = 0, def_timeout, max_timeout;
        usec_t start, timeout_deadline, deadline;
        char note[96];
        size_t output_len;
        struct stat st;
        int r;

        def_timeout = ctx->config && ctx->config->terminal_timeout > 0
                              ? ctx->config->terminal_timeout
                              : DEFAULT_TIMEOUT_SEC;
        max_timeout = ctx->config && ctx->config->terminal_max_timeout > 0
                              ? ctx->config->terminal_max_timeout
                              : DEFAULT_MAX_TIMEOUT_SEC;

        cv = json_is_object(args) ? json_object_get(args, "command") : NULL;
        if (!cv || !json_is_string(cv))
                return status_result(ret_result, "error",
                                     "Invalid command: expected string, got %s",
                                     tool_json_type_name(cv && !json_is_null(cv) ? cv : NULL));
        command = json_string_value(cv);
        /* A name put into the command (shell_quote(name)) is bytes again (docs/protocol.md). */
        r = utf8_unescape_bytes(command, strlen(command), &command_bytes, NULL);
        if (r < 0)
                return r;
        command = command_bytes;

        if (tool_arg_int(args, "timeout", 0, &timeout, &err) < 0)
                return status_result(ret_result, "error", "Invalid timeout: %s, got %s", err,
                                     tool_json_type_name(json_object_get(args, "timeout")));
        if (timeout > max_timeout) {
                *ret_result = tool_error_new("Foreground timeout %" PRId64
                                             "s exceeds the maximum of %" PRId64
                                             "s. Use a timeout up to the maximum, or split the "
                                             "work into shorter commands.",
                                             timeout, max_timeout);
                return *ret_result ? 0 : -ENOMEM;
        }
        /* Like the seed's `timeout or default`: 0 (and nonsense below it) means the default. */
        if (timeout <= 0)
                timeout = def_timeout;

        r = terminal_guard_check(command, &guidance);
        if (r < 0)
                return r;
        if (guidance)
                return status_result(ret_result, "error", "%s", guidance);

        wv = json_is_object(args) ? json_object_get(args, "workdir") : NULL;
        if (wv && !json_is_null(wv)) {
                if (!json_is_string(wv))
                        return status_result(ret_result, "error",
                                             "Invalid workdir: expected string, got %s",
                                             tool_json_type_name(wv));
                workdir = json_string_value(wv);
        }
        if (workdir && *workdir) {
                for (const char *p = workdir; *p; p++)
                        if (!workdir_char_ok((unsigned char) *p)) {
                                char rep[16];

                                return status_result(ret_result, "blocked",
                                                     "Blocked: workdir contains disallowed "
                                                     "character %s. Use a simple filesystem path "
                                                     "without shell metacharacters.",
                                                     char_repr(p, rep, sizeof(rep)));
                        }
                workdir_abs = tool_resolve_path(ctx, workdir);
        } else
                workdir_abs = strdup(ctx->cwd && ctx->cwd[0] == '/' ? ctx->cwd : "/");
        if (!workdir_abs)
                return -ENOMEM;
        if (stat(workdir_abs, &st) < 0)
                return status_result(ret_result, "error", "workdir does not exist: %s",
                                     workdir_abs);
        if (!S_ISDIR(st.st_mode))
                return status_result(ret_result, "error", "workdir is not a directory: %s",
                                     workdir_abs);

        /* The policy's deny rules on write_file/patch paths hold for the command too. */
        r = path_protect_build(
                ctx->config, ctx->cwd, tool_env_get(ctx, "HOME"),
                PATH_PROTECT_TERMINAL |
                        (ctx->config && ctx->config->terminal_strict ? PATH_PROTECT_OWN_ROOT : 0),
                &protect);
        if (r < 0)
                return r;

        r = capture_init(&cap, OUTPUT_HEAD_MAX, OUTPUT_TAIL_MAX, 0, NULL, 0);
        if (r < 0)
                return r;
        /* The bytes around the head's end and the tail's start, to cut where no secret is. */
        r = capture_set_context(&cap, redact_stream_hold(ctx->redactor));
        if (r < 0) {
                capture_release(&cap);
                return r;
        }

        start = now_usec();
        timeout_deadline = start + (usec_t) timeout * USEC_PER_SEC;
        deadline = MIN(timeout_deadline, ctx->deadline);
        {
                char *argv[] = {(char *) SHELL_PATH, (char *) "-c", (char *) command, NULL};
                _cleanup_free_ char **sb_env = NULL; /* the strings are borrowed */
                struct sandbox_opts sb;
                const struct exec_supervisor_opts *exec_policy = NULL;
                struct command_opts p = {
                        .path = SHELL_PATH,
                        .fallback_path = SHELL_FALLBACK,
                        .argv = argv,
                        .envp = ctx->env,
                        .cwd = workdir_abs,
                        .stdin_fd = -1,
                        .merge_stderr = true,
                        .deadline = deadline,
                        .cancel_fd = ctx->cancel_fd,
                        .output = &cap,
                        /* ptc invisible to the command (docs/contracts.md 8); none: the seed's. */
                        .own_pid_namespace = geteuid() == 0 && pidns_init_is_available() &&
                                             ctx->config &&
                                             ctx->config->isolation != PTC_ISOLATION_NONE,
                        /* Elsewhere an init of its own: its daemons die with it too. */
                        .contain = true,
                        .protect = path_protect_landlock(&protect),
                };

                /* Every program the command runs is judged too (exec-supervisor.h). */
                r = exec_supervisor_opts_for(ctx, args, &exec_opts, &text_verdict);
                if (r < 0) {
                        capture_release(&cap);
                        return r;
                }
                if (r > 0)
                        exec_policy = &exec_opts;
                if (ctx->config && ctx->config->terminal_strict) {
                        r = strict_sandbox(ctx->config, argv, ctx->env, workdir_abs, &sb, &sb_env,
                                           pr.error, sizeof(pr.error));
                        if (r < 0) {
                                capture_release(&cap);
                                return status_result(ret_result, "error",
                                                     "Failed to run command: terminal isolation "
                                                     "'strict' cannot be set up: %s",
                                                     pr.error);
                        }
                        p.sandbox = &sb;
                }
                r = run_supervised(&p, exec_policy, &pr, &exec_rep, exec_why, sizeof(exec_why));
        }
        if (r < 0 && pr.error[0]) {
                capture_release(&cap);
                if (!ctx->config || !ctx->config->terminal_strict)
                        return status_result(ret_result, "error", "Failed to run command: %s",
                                             pr.error);
                return status_result(ret_result, "error",
                                     "Failed to run command: terminal isolation 'strict' cannot "
                                     "be set up: %s",
                                     pr.error);
        }
        if (r < 0) {
                capture_release(&cap);
                if (r == -ENOENT && stat(workdir_abs, &st) < 0)
                        return status_result(ret_result, "error", "workdir does not exist: %s",
                                             workdir_abs);
                return status_result(ret_result, "error", "Failed to run command: %s",
                                     strerror(-r));
        }

        if (pr.cancelled) {
                pr.exit_code = 130;
                (void) snprintf(note, sizeof(note), "\n[Command interrupted]");
        } else if (pr.timed_out) {
                int64_t secs = timeout;

                /* Cut short by the execution's own deadline: say how long it really ran. */
                if (deadline < timeout_deadline)
                        secs = (int64_t) ((now_usec() - start + USEC_PER_SEC / 2) / USEC_PER_SEC);
                pr.exit_code = 124;
                (void) snprintf(note, sizeof(note), "\n[Command timed out after %" PRId64 "s]",
                                secs);
        } else
                note[0] = 0;

        exec_note = exec_supervisor_note(&exec_rep, note);
        if (!exec_note) {
                capture_release(&cap);
                return -ENOMEM;
        }
        r = finish_output(ctx, &cap, exec_note[0] ? exec_note : NULL, &output, &output_len);
        capture_release(&cap);
        if (r < 0)
                return r;

        res = json_object();
        if (!res || tool_json_set(res, "output", tool_json_string(output, output_len)) < 0 ||
            tool_json_set(res, "exit_code", json_integer(pr.exit_code)) < 0 ||
            tool_json_set(res, "error", json_null()) < 0)
                return -ENOMEM;
        if (ctx->config && !exec_rep.supervised &&
            tool_json_set(res, "warnings", exec_supervisor_warnings(exec_why)) < 0)
                return -ENOMEM;
        meaning = exit_code_meaning(command, pr.exit_code);
        if (meaning && tool_json_set(res, "exit_code_meaning", json_string(meaning)) < 0)
                return -ENOMEM;
        if (path_protect_add_warnings(&protect, res) < 0)
                return -ENOMEM;
        *ret_result = TAKE_PTR(res);
        return 0;
}

/*
 * The seed's terminal parameters for jobs that outlive the call: a script may send them
 * (the seed's execute_code drops them, docs/seed.md 1.5 step 4), this foreground-only
 * terminal has none of them, so they are dropped silently, never an error.
 */
static const char *const terminal_dropped_args[] = {
        "background", "pty",       "notify_on_complete", "watch_patterns",
        "notify",     "heartbeat", "persist_on_release", NULL,
};

const struct tool_def tool_def_terminal = {
        .name = "terminal",
        .description = "Run a shell command (foreground only). Returns dict with \"output\" and "
                       "\"exit_code\".",
        .parameters_json = "{\"type\": \"object\", \"properties\": {"
                           "\"command\": {\"type\": \"string\", \"description\": "
                           "\"The shell command to run (bash -c)\"}, "
                           "\"timeout\": {\"type\": \"integer\", \"description\": "
                           "\"Seconds before the command is killed (default: the configured "
                           "terminal timeout)\", \"default\": null}, "
                           "\"workdir\": {\"type\": \"string\", \"description\": "
                           "\"Working directory (default: the execution's working directory)\"}}, "
                           "\"required\": [\"command\"]}",
        .returns = "Foreground only (no background/pty). Returns {\"output\": \"...\", "
                   "\"exit_code\": N}",
        .run = terminal_run,
        .dropped_args = terminal_dropped_args,
        .refusal_fields_json = "{\"output\": \"\", \"exit_code\": -1}",
};
