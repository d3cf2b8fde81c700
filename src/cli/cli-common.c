/* SPDX-License-Identifier: MIT */
/* What the subcommands share (cli.h), on the public API only (include/ptc/ptc.h). */
#include "cli/cli.h"

#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <jansson.h>

#include "basic/log.h"

/* getopt_long()'s val of the long option @opts[i] of cli_parse_options(): above any char. */
#define OPTION_VAL_BASE 0x100

/* The value of @key in @e, or "(out of memory)" when it cannot be had: never a guess. */
static char *default_of(const ptc_engine *e, const char *key, int *r)
{
        char *v = NULL;
        int k = e ? ptc_engine_get(e, key, &v, NULL) : -ENOMEM;

        if (k >= 0)
                return v;
        *r = k;
        return strdup("(out of memory)");
}

int cli_defaults_get(struct cli_defaults *ret)
{
        _cleanup_free_ char *timeout = NULL, *calls = NULL;
        ptc_engine *e = NULL;
        int r = 0;

        *ret = (struct cli_defaults){};
        /* The built-in values, as an engine without a config file has them. */
        (void) ptc_engine_new(NULL, PTC_ENGINE_NO_CONFIG_FILE, &e, NULL);
        ret->module_name = default_of(e, "code_execution.module_name", &r);
        /* web_search joins the default set only when a provider is configured. */
        ret->tools = default_of(e, "tools", &r);
        ret->mode = default_of(e, "mode", &r);
        ret->isolation = default_of(e, "isolation", &r);
        timeout = default_of(e, "timeout", &r);
        calls = default_of(e, "max_tool_calls", &r);
        ret->timeout = timeout ? strtod(timeout, NULL) : 0;
        ret->max_tool_calls = calls ? strtoll(calls, NULL, 10) : 0;
        ptc_engine_free(e);
        return r;
}

void cli_defaults_release(struct cli_defaults *d)
{
        free(d->module_name);
        free(d->tools);
        free(d->mode);
        free(d->isolation);
        *d = (struct cli_defaults){};
}

int cli_engine_new(const char *config, unsigned flags, ptc_engine **ret, size_t *ret_printed)
{
        struct ptc_diag d = {};
        int r;

        *ret_printed = 0;
        /* The file on its own, so that its warnings stand before its error. */
        r = ptc_engine_new(NULL, flags | PTC_ENGINE_NO_CONFIG_FILE, ret, &d);
        if (r >= 0) {
                r = ptc_engine_load_config(*ret, config, &d);
                cli_print_warnings(*ret, ret_printed);
        }
        if (r < 0) {
                log_error("%s", d.message[0] ? d.message : strerror(-r));
                *ret = ptc_engine_free(*ret);
                return r;
        }
        return 0;
}

int cli_engine_set(ptc_engine *e, const char *key, const char *value, const char *flag)
{
        struct ptc_diag d = {};
        size_t kl = strlen(key);
        int r;

        r = ptc_engine_set(e, key, value, &d);
        if (r >= 0)
                return 0;
        /* "timeout: invalid value ..." -> "--timeout: invalid value ..." */
        if (strncmp(d.message, key, kl) == 0 && d.message[kl] == ':')
                log_error("%s%s", flag, d.message + kl);
        else
                log_error("%s: %s", flag, d.message);
        return r;
}

int cli_engine_set_remote_cwd(ptc_engine *e, const char *value)
{
        _cleanup_free_ char *backend = NULL;
        struct ptc_diag d = {};
        int r;

        r = ptc_engine_get(e, "backend", &backend, &d);
        if (r < 0) {
                log_error("--remote-cwd: %s", d.message);
                return r;
        }
        /* A local run's directory is --cwd: two names for one thing would only mislead. */
        if (strcmp(backend, "local") == 0) {
                log_error("--remote-cwd: a directory of a remote target, and the backend is "
                          "local (give --backend, or use --cwd)");
                return -EINVAL;
        }
        return cli_engine_set(e, "remote_cwd", value, "--remote-cwd");
}

/* Print the lines of @all from byte @from on as warnings. */
static void print_warning_text(char *all, size_t from)
{
        size_t n = all ? strlen(all) : 0;

        for (char *p = all ? all + MIN(from, n) : NULL; p && *p;) {
                char *nl = strchr(p, '\n');

                if (nl)
                        *nl = 0;
                log_warning("%s", p);
                p = nl ? nl + 1 : p + strlen(p);
        }
}

void cli_print_warnings(const ptc_engine *e, size_t *printed)
{
        _cleanup_free_ char *all = ptc_engine_warnings(e);
        size_t n = all ? strlen(all) : 0;

        print_warning_text(all, *printed);
        *printed = n;
}

void cli_print_execution_warnings(const ptc_execution *x)
{
        _cleanup_free_ char *all = ptc_execution_warnings(x);

        print_warning_text(all, 0);
}

int cli_print_json_text(const char *text, bool pretty)
{
        json_auto_t *v = NULL;

        if (!pretty) {
                if (fputs(text, stdout) < 0 || fputc('\n', stdout) < 0 || fflush(stdout) != 0)
                        return log_error_errno(-errno, "cannot write the result: %m");
                return 0;
        }
        v = json_loads(text, JSON_DECODE_ANY, NULL);
        if (!v)
                return log_error_errno(-EINVAL, "cannot serialize the result");
        return cli_print_json(v, true);
}

int cli_print_json(json_t *v, bool pretty)
{
        size_t flags = JSON_REAL_PRECISION(15) | (pretty ? JSON_INDENT(2) : JSON_COMPACT);
        _cleanup_free_ char *s = json_dumps(v, flags);

        if (!s)
                return log_error_errno(-ENOMEM, "cannot serialize the result");
        if (fputs(s, stdout) < 0 || fputc('\n', stdout) < 0 || fflush(stdout) != 0)
                return log_error_errno(-errno, "cannot write the result: %m");
        return 0;
}

/*
 * Report a getopt_long() failure (opterr = 0) as one line naming the option,
 * e.g. "unrecognized option '--x' (try 'ptc run --help')". Returns EXIT_USAGE.
 */
static int bad_option(char **argv, const char *cmd)
{
        /* After a failure getopt has stepped past the offending word. */
        const char *word = optind > 0 ? argv[optind - 1] : "?";

        if (optopt == 0)
                log_error("unrecognized option '%s' (try 'ptc %s --help')", word, cmd);
        else if (optopt >= OPTION_VAL_BASE)
                /* A long option without its value, or with one it does not take. */
                log_error("bad use of option '%s' (try 'ptc %s --help')", word, cmd);
        else if (optopt == 'c')
                log_error("option '-c' needs a value (try 'ptc %s --help')", cmd);
        else
                log_error("unrecognized option '-%c' (try 'ptc %s --help')", optopt, cmd);
        return EXIT_USAGE;
}

int cli_parse_options(int argc, char **argv, const char *cmd, const struct cli_option *opts,
                      bool stop_at_operand, void (*help)(void))
{
        /* getopt's tables: --help first, then @opts in their order, val = base + index. */
        struct option longopts[CLI_OPTIONS_MAX + 2] = {{"help", no_argument, NULL, 'h'}};
        char shortopts[3 + 2 * CLI_OPTIONS_MAX] = {};
        size_t n, l = 1, s = 0;
        int c;

        if (stop_at_operand)
                shortopts[s++] = '+';
        shortopts[s++] = 'h';
        for (n = 0; opts[n].name || opts[n].short_name; n++) {
                assert(n < CLI_OPTIONS_MAX);
                assert(!opts[n].arg != !opts[n].flag);
                if (opts[n].name)
                        longopts[l++] = (struct option){
                                opts[n].name,
                                opts[n].arg ? required_argument : no_argument,
                                NULL,
                                OPTION_VAL_BASE + (int) n,
                        };
                if (opts[n].short_name) {
                        shortopts[s++] = opts[n].short_name;
                        if (opts[n].arg)
                                shortopts[s++] = ':';
                }
        }

        opterr = 0;
        while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) >= 0) {
                const struct cli_option *o = NULL;

                if (c == 'h') {
                        help();
                        return EXIT_OK;
                }
                if (c >= OPTION_VAL_BASE && c < OPTION_VAL_BASE + (int) n)
                        o = &opts[c - OPTION_VAL_BASE];
                else
                        for (size_t i = 0; i < n && !o; i++)
                                if (opts[i].short_name == c)
                                        o = &opts[i];
                if (!o)
                        return bad_option(argv, cmd);
                if (o->arg)
                        *o->arg = optarg;
                else
                        *o->flag = true;
        }
        return CLI_OPTIONS_PARSED;
}

void cli_stop_signals(sigset_t *ret)
{
        sigemptyset(ret);
        sigaddset(ret, SIGINT);
        sigaddset(ret, SIGTERM);
        sigaddset(ret, SIGHUP);
}

int cli_setup_process(void)
{
        struct rlimit rl;
        sigset_t mask;

        cli_stop_signals(&mask);
        sigaddset(&mask, SIGCHLD);
        if (pthread_sigmask(SIG_BLOCK, &mask, NULL) != 0)
                return -EINVAL;
        (void) signal(SIGPIPE, SIG_IGN);
        /*
         * Each RPC connection is an fd, and ptc mcp runs up to 32 executions at once: the
         * default soft limit (1024) would cap them below RPC_CONNECTIONS_MAX.
         */
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 16384) {
                rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? 16384 : MIN(rl.rlim_max, 16384);
                if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                        log_debug("cannot raise the open-files limit");
        }
        return 0;
}

int cli_read_stdin(char **ret)
{
        size_t len = 0, alloc = 0;
        FILE *f = open_memstream(ret, &alloc);
        char buf[65536];
        size_t k;

        if (!f) {
                log_error_errno(-errno, "cannot read stdin: %m");
                return -errno;
        }
        while ((k = fread(buf, 1, sizeof(buf), stdin)) > 0 && len < 64u * 1024 * 1024) {
                fwrite(buf, 1, k, f);
                len += k;
        }
        if (fclose(f) != 0 || !*ret) {
                log_error("cannot read stdin: out of memory");
                return -ENOMEM;
        }
        return 0;
}
