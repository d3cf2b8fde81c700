/* SPDX-License-Identifier: MIT */
#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/buf.h"
#include "basic/diag.h"
#include "basic/fd-util.h"
#include "basic/log.h"
#include "basic/parse-util.h"
#include "basic/strv.h"

/* Largest script accepted (a model's script is a few KB). */
#define SCRIPT_MAX (16u * 1024 * 1024)
/* The biggest script a running server's warm pool is asked to run (run_via_server()). */
#define SERVER_SCRIPT_MAX (1u * 1024 * 1024)

/* The defaults come from the code that applies them (cli_defaults_get()). */
static void help(void)
{
        struct cli_defaults c = {};

        (void) cli_defaults_get(&c);
        printf("Usage: ptc run [OPTIONS] [FILE | -c CODE | -]\n"
               "\n"
               "Run a Python script that calls tools through the generated module\n"
               "(from %s import read_file, terminal, ...) and print the result\n"
               "JSON on stdout: status, output, tool_calls_made, duration_seconds, exit_code.\n"
               "FILE '-' (or no FILE and no -c, with stdin not a terminal) reads the script\n"
               "from stdin.\n"
               "\n"
               "Options:\n"
               "  -c CODE                  run CODE instead of a file ('-c -' reads stdin)\n"
               "  --tools LIST             enabled tools, comma-separated ('' = none);\n"
               "                           default: every usable builtin tool (web_search\n"
               "                           only with a search provider), here:\n"
               "                           %s\n"
               "  --timeout SECONDS        wall-clock limit for the whole script (default %g)\n"
               "  --max-tool-calls N       tool-call budget (default %lld)\n"
               "  --mode project|strict    project: run in --cwd with the active venv's python;\n"
               "                           strict: run in a private temp dir (default %s)\n"
               "  --cwd DIR                working directory in project mode (default: .;\n"
               "                           / and system trees are refused unless --isolation\n"
               "                           none)\n"
               "  --config FILE            config file (default: $PTC_CONFIG, else\n"
               "                           $XDG_CONFIG_HOME/ptc/config.yaml)\n"
               "  --isolation LEVEL        none | auto | strict (default %s: every layer of\n"
               "                           namespaces, Landlock, seccomp, rlimits that works)\n"
               "  --backend SPEC           where the script and the file and terminal tools run:\n"
               "                           local (default), ssh:[USER@]HOST[:PORT],\n"
               "                           docker:CONTAINER, podman:CONTAINER,\n"
               "                           kubectl:[NS/]POD[:CONTAINER], apptainer:INSTANCE,\n"
               "                           exec:COMMAND (docs/remote.md)\n"
               "  --remote-cwd DIR         the script's directory on a remote target (default:\n"
               "                           where the channel's shell starts)\n"
               "  --log                    add the per-call log (tool_calls) to the result\n"
               "  --pretty                 indent the result JSON\n"
               "  --session ID             run as the next cell of session ID of the\n"
               "                           per-user server 'ptc serve' (started when none\n"
               "                           runs): variables, imports and data stay between\n"
               "                           cells; with --timeout, --max-tool-calls, --tools,\n"
               "                           --cwd, --log only (docs/sessions.md)\n"
               "  --reset                  with --session: start the session afresh first\n"
               "  --server                 start the per-user server 'ptc serve' (with this\n"
               "                           --config) when none runs, for this run and the\n"
               "                           next ones to take its warm pool\n"
               "  --no-server              run here even when a running 'ptc serve' has this\n"
               "                           run's configuration (by default such a server\n"
               "                           runs it on a ready interpreter of its warm pool,\n"
               "                           with the same result; docs/sessions.md)\n"
               "  --quiet                  no live status line on a terminal's stderr\n"
               "  --events FD|FILE         write the run's live events to FD or FILE, one JSON\n"
               "                           line each: start, each tool call's start and end,\n"
               "                           the output as it is written, limits, the end\n"
               "                           with the result (docs/observability.md)\n"
               "  --trace FILE             write a trace of the run to FILE (Chrome trace-event\n"
               "                           JSON: Perfetto, chrome://tracing; "
               "docs/observability.md)\n"
               "  --progress-fd FD         write one JSON line per tool call to FD\n"
               "                           ({\"tool\": NAME, \"count\": N}; for a host that\n"
               "                           runs ptc run; lines that would block are dropped)\n"
               "  -h, --help               this help\n"
               "\n"
               "The config file's values replace these defaults; options replace both.\n"
               "Exit status: 0 success, 1 the script failed, 124 timeout, 130 interrupted,\n"
               "2 usage or config error, 3 internal error.\n",
               c.module_name ? c.module_name : "hermes_tools",
               c.tools ? c.tools : "(out of memory)", c.timeout, c.max_tool_calls, c.mode,
               c.isolation);
        cli_defaults_release(&c);
}

/* --progress-fd: one line per dispatched call; worker threads write at once, hence the lock. */
struct progress_sink {
        int fd;
        pthread_mutex_t lock;
};

static void progress_on_call(const char *tool, int64_t count, void *userdata)
{
        struct progress_sink *p = userdata;
        char line[256];
        int n;

        /* Tool names are [a-z0-9_] (the registry's rule): nothing to escape. */
        n = snprintf(line, sizeof(line), "{\"tool\": \"%.128s\", \"count\": %lld}\n", tool,
                     (long long) count);
        if (n <= 0 || (size_t) n >= sizeof(line))
                return;
        pthread_mutex_lock(&p->lock);
        /*
         * Non-blocking and best effort: a host that stops reading must not stall the tool
         * calls. A line is short (< PIPE_BUF), so it is written whole or not at all.
         */
        (void) !write(p->fd, line, (size_t) n);
        pthread_mutex_unlock(&p->lock);
}

static int read_all_fd(int fd, const char *what, char **ret, size_t *ret_len)
{
        _cleanup_buf_ struct buf b = BUF_INIT(SCRIPT_MAX);

        for (;;) {
                ssize_t k;
                int r = buf_reserve(&b, 65536);

                if (r == -E2BIG) {
                        log_error("%s is larger than %u bytes", what, SCRIPT_MAX);
                        return -EINVAL;
                }
                if (r < 0)
                        return log_error_errno(r, "out of memory");
                k = read(fd, b.data + b.len, 65536);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        log_error_errno(-errno, "cannot read %s: %m", what);
                        return -EINVAL;
                }
                if (k == 0)
                        break;
                b.len += (size_t) k;
        }
        *ret = buf_steal(&b, ret_len);
        return *ret ? 0 : -ENOMEM;
}

static int read_script(const char *file, const char *code, char **ret, size_t *ret_len)
{
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        /* '-c -' reads the code from stdin, as 'ptc run -' (docs: README, ptc run --help). */
        if (code && strcmp(code, "-") == 0)
                return read_all_fd(STDIN_FILENO, "the script on stdin", ret, ret_len);
        if (code) {
                *ret = strdup(code);
                *ret_len = strlen(code);
                return *ret ? 0 : -ENOMEM;
        }
        if (!file || strcmp(file, "-") == 0)
                return read_all_fd(STDIN_FILENO, "the script on stdin", ret, ret_len);
        fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                log_error_errno(-errno, "cannot open script '%s': %m", file);
                return -EINVAL;
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                log_error("script '%s' is not a regular file", file);
                return -EINVAL;
        }
        return read_all_fd(fd, file, ret, ret_len);
}

/* An internal failure still answers with a result JSON, so hosts can always parse stdout. */
static int internal_error(const char *msg, bool pretty)
{
        _cleanup_free_ char *r = ptc_internal_error_result(msg);

        log_error("%s", msg);
        if (r)
                (void) cli_print_json_text(r, pretty);
        return EXIT_INTERNAL;
}

/* The blocked signals, turned into an interrupt of the run that names them. */
struct signal_watch {
        ptc_execution *x;
        int sig_fd;
        int stop_fd; /* eventfd: the run is over */
        pthread_t thread;
        bool started;
};

static void *signal_thread(void *userdata)
{
        struct signal_watch *w = userdata;

        for (;;) {
                struct signalfd_siginfo si;
                /* No deadline: a stop signal or the end of the run (stop_fd) wakes this. */
                int k = fd_wait_either(w->sig_fd, w->stop_fd, USEC_INFINITY);

                if (k < 0 || (k & FD_WAIT_B))
                        return NULL;
                while (read(w->sig_fd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
                        if (si.ssi_signo == SIGINT)
                                ptc_execution_interrupt(w->x, "SIGINT");
                        else if (si.ssi_signo == SIGTERM)
                                ptc_execution_interrupt(w->x, "SIGTERM");
                        else if (si.ssi_signo == SIGHUP)
                                ptc_execution_interrupt(w->x, "SIGHUP");
                }
        }
}

static int signal_watch_start(struct signal_watch *w, ptc_execution *x)
{
        sigset_t mask;

        cli_stop_signals(&mask);
        w->x = x;
        w->sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        w->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->sig_fd < 0 || w->stop_fd < 0)
                return -errno;
        if (pthread_create(&w->thread, NULL, signal_thread, w) != 0)
                return -EAGAIN;
        w->started = true;
        return 0;
}

static void signal_watch_stop(struct signal_watch *w)
{
        uint64_t one = 1;

        if (w->started) {
                (void) !write(w->stop_fd, &one, sizeof(one));
                (void) pthread_join(w->thread, NULL);
                w->started = false;
        }
        w->sig_fd = safe_close(w->sig_fd);
        w->stop_fd = safe_close(w->stop_fd);
}

/* ptc run --session ID: what the command line gave, for the server (cmd-run-session.c). */
struct session_args {
        const char *session, *file, *code, *tools, *timeout, *calls, *cwd;
        bool reset, log, pretty;
        struct {
                const char *flag, *value;
        } refused[8]; /* the engine's options: the server's configuration applies */
};

static int run_in_session(const struct session_args *a)
{
        _cleanup_free_ char *code = NULL, *cwd = NULL;
        json_auto_t *o = json_object();
        size_t code_len = 0;

        if (!a->session) {
                log_error("--reset: only with --session ID");
                return EXIT_USAGE;
        }
        for (size_t i = 0; i < ELEMENTSOF(a->refused); i++)
                if (a->refused[i].value) {
                        log_error("%s: not with --session (the server's configuration "
                                  "applies: give it to 'ptc serve'; docs/sessions.md)",
                                  a->refused[i].flag);
                        return EXIT_USAGE;
                }
        /* The server runs elsewhere: the directory must be absolute. */
        cwd = realpath(a->cwd ? a->cwd : ".", NULL);
        if (!cwd) {
                log_error_errno(-errno, "--cwd: cannot use '%s': %m", a->cwd ? a->cwd : ".");
                return EXIT_USAGE;
        }
        if (!o || json_object_set_new(o, "cwd", json_string(cwd)) < 0 ||
            (a->timeout && json_object_set_new(o, "timeout", json_string(a->timeout)) < 0) ||
            (a->calls && json_object_set_new(o, "max_tool_calls", json_string(a->calls)) < 0) ||
            (a->tools && json_object_set_new(o, "tools", json_string(a->tools)) < 0) ||
            (a->log && json_object_set_new(o, "log_calls", json_string("true")) < 0))
                return EXIT_INTERNAL;
        if (read_script(a->file, a->code, &code, &code_len) < 0)
                return EXIT_USAGE;
        return cli_run_in_session(a->session, a->reset, code, code_len, o, a->pretty);
}

/*
 * The run on a running server's warm pool when its configuration is this run's
 * (cli_run_via_server()): true with the exit status in *ret_exit; false to run here.
 */
struct run_args {
        const char *timeout, *calls, *tools, *config;
        bool log, pretty, start_server;
};

static bool run_via_server(ptc_engine *e, const char *code, size_t code_len,
                           const struct run_args *a, int *ret_exit)
{
        _cleanup_free_ char *fingerprint = NULL, *cwd = NULL, *timeout = NULL;
        json_auto_t *o = json_object();
        bool ran;

        /* A request line stays far below the server's cap (16 MiB), escapes and all; a
         * script this big does not care for the interpreter's start anyway. */
        if (code_len > SERVER_SCRIPT_MAX)
                return false;
        if (!o || cli_serve_fingerprint(e, &fingerprint) < 0 ||
            ptc_engine_get(e, "cwd", &cwd, NULL) < 0 ||
            json_object_set_new(o, "cwd", json_string(cwd)) < 0 ||
            (a->timeout && json_object_set_new(o, "timeout", json_string(a->timeout)) < 0) ||
            (a->calls && json_object_set_new(o, "max_tool_calls", json_string(a->calls)) < 0) ||
            (a->tools && json_object_set_new(o, "tools", json_string(a->tools)) < 0) ||
            (a->log && json_object_set_new(o, "log_calls", json_string("true")) < 0))
                return false;
        if (ptc_engine_get(e, "timeout", &timeout, NULL) < 0)
                return false;
        ran = cli_run_via_server(fingerprint, code, code_len, o, strtod(timeout, NULL), a->pretty,
                                 a->config, a->start_server, ret_exit);
        /* It holds the environment's secrets. */
        explicit_wipe(fingerprint, strlen(fingerprint));
        return ran;
}

int cmd_run(int argc, char **argv)
{
        _cleanup_free_ char *code = NULL, *result = NULL;
        const char *arg_code = NULL, *arg_file = NULL, *arg_config = NULL, *arg_tools = NULL;
        const char *arg_timeout = NULL, *arg_calls = NULL, *arg_mode = NULL, *arg_cwd = NULL;
        const char *arg_isolation = NULL, *arg_progress_fd = NULL, *arg_backend = NULL;
        const char *arg_events = NULL, *arg_trace = NULL;
        struct cli_events events = {.fd = -EBADF};
        const char *arg_remote_cwd = NULL, *arg_session = NULL;
        struct progress_sink progress = {.fd = -EBADF, .lock = PTHREAD_MUTEX_INITIALIZER};
        struct signal_watch watch = {.sig_fd = -EBADF, .stop_fd = -EBADF};
        bool arg_log = false, arg_pretty = false, arg_reset = false, arg_no_server = false;
        bool arg_server = false, prompt, arg_quiet = false;
        const struct cli_option opts[] = {
                {.short_name = 'c', .arg = &arg_code},
                {"tools", &arg_tools},
                {"timeout", &arg_timeout},
                {"max-tool-calls", &arg_calls},
                {"mode", &arg_mode},
                {"cwd", &arg_cwd},
                {"config", &arg_config},
                {"isolation", &arg_isolation},
                {"backend", &arg_backend},
                {"remote-cwd", &arg_remote_cwd},
                {"log", .flag = &arg_log},
                {"pretty", .flag = &arg_pretty},
                {"progress-fd", &arg_progress_fd},
                {"events", &arg_events},
                {"quiet", .flag = &arg_quiet},
                {"trace", &arg_trace},
                {"session", &arg_session},
                {"reset", .flag = &arg_reset},
                {"no-server", .flag = &arg_no_server},
                {"server", .flag = &arg_server},
                {},
        };
        ptc_engine *engine = NULL;
        ptc_execution *x = NULL;
        enum ptc_status status;
        struct ptc_diag d = {};
        size_t code_len = 0, warned = 0;
        int r, ret;

        r = cli_parse_options(argc, argv, "run", opts, false, help);
        if (r != CLI_OPTIONS_PARSED)
                return r;
        if (optind < argc)
                arg_file = argv[optind++];
        if (optind < argc) {
                log_error("unexpected argument '%s' (one script at a time)", argv[optind]);
                return EXIT_USAGE;
        }
        if (arg_code && arg_file) {
                log_error("give either -c CODE or a FILE, not both");
                return EXIT_USAGE;
        }
        if (!arg_code && !arg_file && isatty(STDIN_FILENO)) {
                log_error("no script given: ptc run FILE, ptc run -c CODE, or ptc run - < FILE");
                return EXIT_USAGE;
        }

        if (arg_server && arg_no_server) {
                log_error("give either --server or --no-server, not both");
                return EXIT_USAGE;
        }
        if ((arg_server || arg_no_server) && (arg_session || arg_reset)) {
                log_error("%s: not with --session (a session always runs on the server)",
                          arg_server ? "--server" : "--no-server");
                return EXIT_USAGE;
        }
        if (arg_server && (arg_progress_fd || arg_events || arg_trace)) {
                log_error("--server: not with %s (the server does not report them)",
                          arg_progress_fd ? "--progress-fd"
                          : arg_events    ? "--events"
                                          : "--trace");
                return EXIT_USAGE;
        }
        if (arg_session || arg_reset)
                return run_in_session(&(struct session_args){
                        .session = arg_session,
                        .reset = arg_reset,
                        .file = arg_file,
                        .code = arg_code,
                        .tools = arg_tools,
                        .timeout = arg_timeout,
                        .calls = arg_calls,
                        .cwd = arg_cwd,
                        .log = arg_log,
                        .pretty = arg_pretty,
                        .refused = {{"--config", arg_config},
                                    {"--mode", arg_mode},
                                    {"--isolation", arg_isolation},
                                    {"--backend", arg_backend},
                                    {"--remote-cwd", arg_remote_cwd},
                                    {"--progress-fd", arg_progress_fd},
                                    {"--events", arg_events},
                                    {"--trace", arg_trace}},
                });

        /* The whole process hosts this one run: it may scrub its environment (ptc.h). */
        if (cli_engine_new(arg_config, PTC_ENGINE_SCRUB_PROCESS, &engine, &warned) < 0)
                return EXIT_USAGE;
        ret = EXIT_USAGE;
        if ((arg_timeout && cli_engine_set(engine, "timeout", arg_timeout, "--timeout") < 0) ||
            (arg_calls &&
             cli_engine_set(engine, "max_tool_calls", arg_calls, "--max-tool-calls") < 0) ||
            (arg_mode && cli_engine_set(engine, "mode", arg_mode, "--mode") < 0) ||
            (arg_isolation &&
             cli_engine_set(engine, "isolation", arg_isolation, "--isolation") < 0) ||
            (arg_backend &&
             cli_engine_set(engine, "code_execution.backend", arg_backend, "--backend") < 0) ||
            (arg_remote_cwd && cli_engine_set_remote_cwd(engine, arg_remote_cwd) < 0))
                goto out;
        if (arg_progress_fd) {
                int64_t fd;
                if (safe_atoi64(arg_progress_fd, &fd) < 0 || fd < 3 || fd > INT_MAX ||
                    fcntl((int) fd, F_GETFD) < 0) {
                        log_error("--progress-fd: invalid value '%s' (allowed: an open file "
                                  "descriptor >= 3)",
                                  arg_progress_fd);
                        goto out;
                }
                progress.fd = (int) fd;
                /* The script must not inherit it; a full pipe must not block a tool call. */
                if (fcntl(progress.fd, F_SETFD, FD_CLOEXEC) < 0 ||
                    fd_set_nonblock(progress.fd, true) < 0) {
                        log_error_errno(-errno, "--progress-fd: %m");
                        goto out;
                }
        }
        if ((arg_tools && cli_engine_set(engine, "tools", arg_tools, "--tools") < 0) ||
            cli_engine_set(engine, "cwd", arg_cwd ? arg_cwd : ".", "--cwd") < 0 ||
            (arg_log && cli_engine_set(engine, "log_calls", "true", "--log") < 0))
                goto out;

        if (read_script(arg_file, arg_code, &code, &code_len) < 0)
                goto out;
        /* A person at the terminal answers the policy's asks (docs/policy.md). */
        prompt = cli_tty_approver_install(engine);
        /* The server reports no progress and draws no status line here: such a run is this
         * process's, unless --server asks for the server (which relays its asks to this
         * terminal, cmd-run-session.c). */
        if (!arg_no_server && !arg_progress_fd && !arg_events && !arg_trace &&
            (!prompt || arg_server) &&
            run_via_server(engine, code, code_len,
                           &(struct run_args){.timeout = arg_timeout,
                                              .calls = arg_calls,
                                              .tools = arg_tools,
                                              .log = arg_log,
                                              .pretty = arg_pretty,
                                              .config = arg_config,
                                              .start_server = arg_server},
                           &ret))
                goto out;

        /* SIGINT, SIGTERM and SIGHUP then stop the run through signal_thread()'s signalfd. */
        if (cli_setup_process() < 0) {
                ret = internal_error("cannot set up signal handling", arg_pretty);
                goto out;
        }
        /* After cli_setup_process(): the MCP servers' threads inherit the blocked signals. */
        r = ptc_engine_start(engine, &d);
        cli_print_warnings(engine, &warned);
        if (r == -EINVAL) {
                log_error("%s", d.message);
                goto out;
        }
        if (r < 0) {
                ret = internal_error(d.message, arg_pretty);
                goto out;
        }
        if (cli_events_open(arg_events, &events) < 0)
                goto out;
        /* A person watching the terminal sees the run go (docs/observability.md). */
        events.status = cli_status_wanted(arg_quiet) && cli_status_start() >= 0;
        r = ptc_execution_new(engine, &x, &d);
        if (r >= 0 && progress.fd >= 0)
                r = ptc_execution_on_progress(x, progress_on_call, &progress);
        if (r >= 0)
                r = cli_events_attach(&events, x);
        if (r >= 0 && arg_trace)
                r = ptc_execution_set(x, "trace", arg_trace, &d);
        if (r < 0) {
                ret = internal_error(d.message[0] ? d.message : strerror(-r), arg_pretty);
                goto out;
        }
        if (signal_watch_start(&watch, x) < 0) {
                ret = internal_error("cannot set up signal handling", arg_pretty);
                goto out;
        }
        r = ptc_execution_run(x, code, code_len, &result, &status, &d);
        cli_status_stop();
        signal_watch_stop(&watch);
        cli_print_execution_warnings(x);
        if ((r == -ENOENT || r == -EINVAL) && !result) {
                /* No interpreter, a working directory no run may have (docs/isolation.md):
                 * a setup error, as a bad option. */
                log_error("%s", d.message);
                goto out;
        }
        if (r < 0) {
                ret = internal_error(d.message[0] ? d.message : strerror(-r), arg_pretty);
                goto out;
        }
        ret = cli_print_json_text(result, arg_pretty) < 0 ? EXIT_INTERNAL
                                                          : ptc_status_to_exit(status);
out:
        cli_status_stop();
        signal_watch_stop(&watch);
        ptc_execution_free(x);
        ptc_engine_free(engine);
        cli_events_close(&events);
        return ret;
}
