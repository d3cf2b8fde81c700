/* SPDX-License-Identifier: MIT */
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
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/buf.h"
#include "basic/diag.h"
#include "basic/fd-util.h"
#include "basic/log.h"
#include "basic/parse-util.h"
#include "basic/strv.h"
#include "cli/cli.h"
#include "core/exec/exec.h"
#include "core/mcp/mcp-tools.h"
#include "core/output/redact.h"
#include "core/registry/registry.h"
#include "core/spawn/interpreter.h"

/* Largest script accepted (a model's script is a few KB). */
#define SCRIPT_MAX (16u * 1024 * 1024)

/* The defaults come from the code that applies them (cli_help_defaults()). */
static void help(void)
{
        _cleanup_free_ char *tools = NULL;
        struct ptc_config c = {};

        (void) cli_help_defaults(&c, &tools);
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
               "  --cwd DIR                working directory in project mode (default: .)\n"
               "  --config FILE            config file (default: $PTC_CONFIG, else\n"
               "                           $XDG_CONFIG_HOME/ptc/config.yaml)\n"
               "  --isolation LEVEL        none | auto | strict (default %s: every layer of\n"
               "                           namespaces, Landlock, seccomp, rlimits that works)\n"
               "  --log                    add the per-call log (tool_calls) to the result\n"
               "  --pretty                 indent the result JSON\n"
               "  --progress-fd FD         write one JSON line per tool call to FD\n"
               "                           ({\"tool\": NAME, \"count\": N}; for hosts such as\n"
               "                           ptc mcp; lines that would block are dropped)\n"
               "  -h, --help               this help\n"
               "\n"
               "The config file's values replace these defaults; options replace both.\n"
               "Exit status: 0 success, 1 the script failed, 124 timeout, 130 interrupted,\n"
               "2 usage or config error, 3 internal error.\n",
               c.module_name ? c.module_name : "hermes_tools", tools ? tools : "(out of memory)",
               c.timeout, (long long) c.max_tool_calls, config_mode_to_string(c.mode),
               config_isolation_to_string(c.isolation));
        config_release(&c);
}

/* --progress-fd: one line per dispatched call; worker threads write at once, hence the lock. */
struct progress_sink {
        int fd;
        pthread_mutex_t lock;
};

static void progress_on_call(void *userdata, const char *tool, int64_t count)
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

static int exit_for(enum exec_status s)
{
        switch (s) {
        case EXEC_SUCCESS:
                return EXIT_OK;
        case EXEC_TIMEOUT:
                return EXIT_TIMEOUT;
        case EXEC_INTERRUPTED:
                return EXIT_INTERRUPTED;
        case EXEC_ERROR:
        default:
                return EXIT_SCRIPT_FAILED;
        }
}

/* An internal failure still answers with a result JSON, so hosts can always parse stdout. */
static int internal_error(const char *msg, bool pretty)
{
        json_auto_t *r =
                json_pack("{s:s, s:s, s:i, s:f, s:n, s:s}", "status", "error", "output", "",
                          "tool_calls_made", 0, "duration_seconds", 0.0, "exit_code", "error", msg);

        log_error("%s", msg);
        if (r)
                (void) cli_print_json(r, pretty);
        return EXIT_INTERNAL;
}

/*
 * Process state for a run: signals arrive through a signalfd in the loop, so
 * they are blocked here, before any thread exists (threads inherit the mask).
 * SIGPIPE is ignored: a closed pipe is an EPIPE to handle, not a death.
 * Subreaper: daemons the script double-forks come back to us.
 */
static struct rlimit original_nofile;

static int setup_process(void)
{
        struct rlimit rl;
        sigset_t mask;

        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGCHLD);
        if (pthread_sigmask(SIG_BLOCK, &mask, NULL) != 0)
                return -EINVAL;
        (void) signal(SIGPIPE, SIG_IGN);
        if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
                return log_error_errno(-errno, "cannot become a child subreaper: %m");
        /*
         * Each RPC connection is an fd; the default soft limit (1024) would cap
         * a script at fewer connections than RPC_CONNECTIONS_MAX. The script
         * itself gets the original limit back (select() users expect it).
         */
        if (getrlimit(RLIMIT_NOFILE, &original_nofile) == 0) {
                rl = original_nofile;
                if (rl.rlim_cur < 16384)
                        rl.rlim_cur =
                                rl.rlim_max == RLIM_INFINITY ? 16384 : MIN(rl.rlim_max, 16384);
                if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                        log_debug("cannot raise the open-files limit");
        }
        return 0;
}

int cmd_run(int argc, char **argv)
{
        _cleanup_free_ char *code = NULL, *python = NULL, *cwd = NULL;
        _cleanup_strv_free_ char **tools = NULL, **base_env = NULL;
        _cleanup_redactor_ struct redactor *redactor = NULL;
        _cleanup_mcp_upstreams_ struct mcp_upstreams *upstreams = NULL;
        _cleanup_registry_ struct registry *registry = NULL;
        const char *arg_code = NULL, *arg_file = NULL, *arg_config = NULL, *arg_tools = NULL;
        const char *arg_timeout = NULL, *arg_calls = NULL, *arg_mode = NULL, *arg_cwd = NULL;
        const char *arg_isolation = NULL, *arg_progress_fd = NULL;
        struct progress_sink progress = {.fd = -EBADF, .lock = PTHREAD_MUTEX_INITIALIZER};
        bool arg_log = false, arg_pretty = false;
        const struct cli_option opts[] = {
                {.short_name = 'c', .arg = &arg_code},
                {"tools", &arg_tools},
                {"timeout", &arg_timeout},
                {"max-tool-calls", &arg_calls},
                {"mode", &arg_mode},
                {"cwd", &arg_cwd},
                {"config", &arg_config},
                {"isolation", &arg_isolation},
                {"log", .flag = &arg_log},
                {"pretty", .flag = &arg_pretty},
                {"progress-fd", &arg_progress_fd},
                {},
        };
        struct ptc_config config = {};
        json_t *result = NULL;
        enum exec_status status;
        struct diag d = {};
        size_t code_len = 0;
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

        if (cli_load_config(arg_config, &config) < 0) {
                config_release(&config);
                return EXIT_USAGE;
        }
        ret = EXIT_USAGE;
        if (cli_apply_run_options(&config, arg_timeout, arg_calls, arg_mode, arg_isolation) < 0)
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
        if (arg_tools && cli_parse_tools(arg_tools, &tools) < 0)
                goto out;
        /* With upstream MCP servers the registry waits for their tool lists (below). */
        if (config.n_mcp_servers == 0 && cli_build_registry(&config, tools, NULL, &registry) < 0)
                goto out;

        cwd = realpath(arg_cwd ? arg_cwd : ".", NULL);
        if (!cwd) {
                log_error_errno(-errno, "--cwd: cannot use '%s': %m", arg_cwd ? arg_cwd : ".");
                goto out;
        }
        {
                struct stat st;
                if (stat(cwd, &st) < 0 || !S_ISDIR(st.st_mode)) {
                        log_error("--cwd: '%s' is not a directory", cwd);
                        goto out;
                }
        }

        if (read_script(arg_file, arg_code, &code, &code_len) < 0)
                goto out;

        if (setup_process() < 0) {
                ret = internal_error("cannot set up signal handling", arg_pretty);
                goto out;
        }
        if (cli_prepare_secrets(&config, &redactor, &base_env, NULL) < 0) {
                ret = internal_error("cannot prepare the environment", arg_pretty);
                goto out;
        }
        if (config.n_mcp_servers > 0) {
                /* After setup_process(): the servers' threads inherit the blocked signals. */
                if (cli_start_upstreams(&config, base_env, &upstreams) < 0) {
                        ret = internal_error("cannot start the MCP servers", arg_pretty);
                        goto out;
                }
                if (cli_build_registry(&config, tools, upstreams, &registry) < 0)
                        goto out;
        }
        r = interpreter_resolve_in(&config, config.mode, cwd, &python, &d);
        if (r < 0) {
                log_error("%s", d.message);
                goto out;
        }

        {
                struct exec_opts eo = {
                        .code = code,
                        .code_len = code_len,
                        .config = &config,
                        .registry = registry,
                        .base_env = base_env,
                        .redactor = redactor,
                        .python = python,
                        .cwd = cwd,
                        .log_calls = arg_log,
                        .handle_signals = true,
                        .cancel_fd = -1,
                        .child_nofile = original_nofile.rlim_cur ? &original_nofile : NULL,
                        .on_call = progress.fd >= 0 ? progress_on_call : NULL,
                        .on_call_userdata = &progress,
                };
                r = exec_run(&eo, &result, &status, &d);
        }
        if (r < 0) {
                ret = internal_error(d.message[0] ? d.message : strerror(-r), arg_pretty);
                goto out;
        }
        ret = cli_print_json(result, arg_pretty) < 0 ? EXIT_INTERNAL : exit_for(status);
out:
        json_decref(result);
        config_release(&config);
        return ret;
}
