/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Shared pieces of the ptc subcommands. Only src/cli reports errors to the
 * user (once, at the boundary) and decides exit codes.
 */

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "basic/macro.h"
#include "ptc/ptc.h"

enum {
        EXIT_OK = PTC_EXIT_OK,
        EXIT_SCRIPT_FAILED = PTC_EXIT_SCRIPT_FAILED,
        EXIT_USAGE = PTC_EXIT_USAGE,
        EXIT_INTERNAL = PTC_EXIT_INTERNAL,
        EXIT_TIMEOUT = PTC_EXIT_TIMEOUT,
        EXIT_INTERRUPTED = PTC_EXIT_INTERRUPTED,
};

int cmd_run(int argc, char **argv);
int cmd_schema(int argc, char **argv);
int cmd_stubs(int argc, char **argv);
int cmd_tool(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_mcp(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_session(int argc, char **argv);
int cmd_policy(int argc, char **argv);

/* run-events.c: ptc run --events FD|FILE (docs/observability.md). */
struct cli_events {
        int fd;     /* -1: none */
        bool owned; /* a file we opened */
        bool broken;
        bool status; /* the events also feed the status line (run-status.c) */
};
/* Open what --events names (@arg NULL: none). <0 after printing. */
int cli_events_open(const char *arg, struct cli_events *ret);
/* Before the run: its events go to @ev. */
int cli_events_attach(struct cli_events *ev, ptc_execution *x);
void cli_events_close(struct cli_events *ev);

/*
 * run-status.c: the live status line of ptc run on a terminal's stderr
 * (docs/observability.md). cli_status_wanted(): stderr a terminal, TERM not dumb, not
 * --quiet. Start before the run, feed it the run's events, stop after (it clears the
 * line); a terminal prompt pauses it.
 */
bool cli_status_wanted(bool quiet);
int cli_status_start(void);
void cli_status_event(const char *line, size_t len);
void cli_status_pause(bool paused);
void cli_status_stop(void);

/* All of stdin (at most 64 MiB) as a string into *ret (caller frees). <0 after printing. */
int cli_read_stdin(char **ret);

/*
 * tty-approver.c: when a person is at the terminal (stdin a tty, /dev/tty opens), the
 * policy's asks are put to them there (docs/policy.md). Before ptc_engine_start(). True
 * when installed.
 */
bool cli_tty_approver_install(ptc_engine *e);
/* Whether a person is at the terminal (stdin a tty, /dev/tty opens, kept open). */
bool cli_tty_open(void);
/* One question (all borrowed); the prompt of cli_tty_approver_install(). */
struct cli_prompt {
        const char *tool;
        const char *arguments; /* JSON text */
        const char *verdict;   /* JSON text, as ptc_approval_verdict() */
        uint64_t deadline;     /* CLOCK_MONOTONIC microseconds (now_usec()) */
        int cancel_fd;         /* readable: withdrawn; -1: none */
};
/*
 * Put @q to the person at /dev/tty (cli_tty_open() first): an enum ptc_approval_answer
 * (PTC_APPROVE_NO_ANSWER when none came by the deadline or it was withdrawn,
 * PTC_APPROVE_CANNOT_ASK without a terminal).
 */
int cli_tty_prompt(const struct cli_prompt *q);

/*
 * The per-user server (ptc serve, docs/sessions.md), serve-client.c. cli_serve_dir(): its
 * directory (ptc_serve_dir_path(): $XDG_RUNTIME_DIR/ptc, else /var/tmp/ptc-UID), made 0700
 * when missing; -EPERM when it
 * is not a directory of this user's with mode 0700 (never used then).
 */
int cli_serve_dir(char *buf, size_t n);
/*
 * Connect to the server; with @start, start one when none runs (with config file @config,
 * NULL for the default) and wait until it listens, then authenticate both ways
 * (cli_serve_auth_client()): nothing is sent to a listener that does not hold the key.
 * Prints why it failed, except that without @start a server that does not run is a silent
 * -ENOENT or -ECONNREFUSED.
 */
int cli_serve_connect(bool start, const char *config, int *ret_fd);
/*
 * Connect to a server that runs and authenticate both ways, without a word or a side effect
 * (nothing is made): -errno when none answers, its directory is not this user's alone or
 * the handshake fails.
 */
int cli_serve_probe(int *ret_fd);
/*
 * serve-auth.c: the server and its clients prove to each other that they hold the key in
 * the server's directory (serve.key, 0600), never shown to a script (docs/sessions.md).
 * cli_serve_key_create(): a new random key (the server's, under serve.lock; replaces the
 * file). cli_serve_key_load(): read it (a client); -EPERM when the file is not this user's
 * alone, -errno when it cannot be read (a confined script: -ENOENT or -EACCES).
 * cli_serve_auth_client(): before anything is sent, the peer proves it holds @key, then the
 * client does; 0, -EKEYREJECTED (the peer does not hold it), -EPROTO (the peer speaks
 * another protocol: another ptc's server, or no server), -EPERM (another user's), -errno.
 * cli_serve_auth_server(): the same from the server's side, before the request is read;
 * on failure *ret_why says why, for the refusal sent back.
 */
#define CLI_SERVE_KEY_SIZE 32
/* How long either side waits for the other during the handshake. */
#define CLI_SERVE_AUTH_SEC 10
int cli_serve_key_create(const char *dir, uint8_t key[CLI_SERVE_KEY_SIZE]);
int cli_serve_key_load(const char *dir, uint8_t key[CLI_SERVE_KEY_SIZE]);
int cli_serve_auth_client(int fd, const uint8_t key[CLI_SERVE_KEY_SIZE]);
int cli_serve_auth_server(int fd, const uint8_t key[CLI_SERVE_KEY_SIZE], const char **ret_why);
/*
 * What a run's result depends on besides its options, as one text (*ret, caller frees),
 * for a run through the server's warm pool to be the same as one in this process: this
 * executable, @e's config file (path and text), working directory, mode, isolation,
 * backend, remote directory and interpreter as in effect, and the environment but the
 * shell's bookkeeping (_, PWD, OLDPWD, SHLVL). Before @e starts (which scrubs the
 * environment). 0 or -errno.
 */
int cli_serve_fingerprint(ptc_engine *e, char **ret);
/* One JSON line each way: send @msg; read a line of at most @max bytes (*ret, NUL for \n). */
int cli_serve_send(int fd, json_t *msg);
int cli_serve_read_line(int fd, size_t max, char **ret);
/*
 * ptc run --session (cmd-run-session.c): run @code as the next cell of @session on the
 * server with @options (execution keys as text: timeout, max_tool_calls, tools, cwd,
 * log_calls), print the result; returns the exit status.
 */
int cli_run_in_session(const char *session, bool reset, const char *code, size_t code_len,
                       json_t *options, bool pretty);
/*
 * ptc run through a running server's warm pool (cmd-run-session.c): when a server answers
 * (with @start: a server started when none runs, with config file @start_config) and its
 * @fingerprint is this one's, it runs @code with @options and the result is printed: true,
 * with the exit status in *ret_exit. false when the run is this process's to make (no
 * server, another configuration, a refusal): nothing was run or printed. The reply is
 * waited for @timeout (the run's) and a grace period.
 */
bool cli_run_via_server(const char *fingerprint, const char *code, size_t code_len, json_t *options,
                        double timeout, bool pretty, const char *start_config, bool start,
                        int *ret_exit);

/*
 * A new engine (ptc_engine_new()) for @config (may be NULL) and @flags. Prints
 * the config file's warnings, then its error if any; returns <0 after an error (exit 2).
 * *@ret_printed: the warnings printed, for cli_print_warnings().
 */
int cli_engine_new(const char *config, unsigned flags, ptc_engine **ret, size_t *ret_printed);

/*
 * ptc_engine_set() for the command line's @flag ("--timeout"): the engine's
 * message "timeout: invalid value ..." is printed as "--timeout: invalid value
 * ...". Returns <0 after printing.
 */
int cli_engine_set(ptc_engine *e, const char *key, const char *value, const char *flag);

/* --remote-cwd DIR: refused (printed, <0) when @e's backend, as set so far, is local. */
int cli_engine_set_remote_cwd(ptc_engine *e, const char *value);

/* Print the engine's warnings past *@printed (bytes already printed), one per line. */
void cli_print_warnings(const ptc_engine *e, size_t *printed);

/* Print the warnings of a run (ptc_execution_warnings()), one per line. */
void cli_print_execution_warnings(const ptc_execution *x);

/* Print the JSON text @text on stdout, indented with @pretty, with a newline. */
int cli_print_json_text(const char *text, bool pretty);

/* SIGINT, SIGTERM and SIGHUP: the signals that stop a run (ptc run) or the server (ptc mcp). */
void cli_stop_signals(sigset_t *ret);

/*
 * Process state for a command that runs scripts, before any thread exists (threads inherit
 * the mask): the stop signals are blocked, for a signalfd to take them, and SIGCHLD too (the
 * library's fallback where a kernel has no pidfds); SIGPIPE is ignored (a closed pipe is an
 * EPIPE to handle, not a death); the open-files limit is raised for the RPC connections
 * (the scripts get the original back: the engine recorded it when it was created, before
 * this). The library touches none of this (ptc.h, "Process"). 0 or -EINVAL.
 */
int cli_setup_process(void);

/*
 * The defaults --help texts print, from the code that applies them: the
 * built-in config values and the tools enabled by default with them
 * ("read_file, write_file, ..."). Strings owned; cli_defaults_release().
 * Returns 0 or -ENOMEM (the help then says so, never a guess).
 */
struct cli_defaults {
        char *module_name;
        double timeout;
        long long max_tool_calls;
        char *mode;
        char *isolation;
        char *tools;
};
int cli_defaults_get(struct cli_defaults *ret);
void cli_defaults_release(struct cli_defaults *d);

/*
 * One option of a subcommand, for cli_parse_options(): "--@name" and "-@short_name" (either
 * may be unset) store their value in *@arg; or, with @arg NULL, take no value and set *@flag.
 */
struct cli_option {
        const char *name;
        const char **arg;
        bool *flag;
        char short_name;
};

/* Most options of one subcommand, --help aside (ptc run has 17). */
#define CLI_OPTIONS_MAX 24

/* cli_parse_options() went through: the operands start at optind. No exit status is < 0. */
#define CLI_OPTIONS_PARSED (-1)

/*
 * The option parsing of every subcommand 'ptc @cmd': getopt_long() over -h/--help and @opts
 * (ended by an entry with neither name), in that order. Options and operands may mix, or with
 * @stop_at_operand the options end at the first operand. An option given twice keeps its last
 * value. Returns CLI_OPTIONS_PARSED; EXIT_OK once -h/--help has printed @help(); or
 * EXIT_USAGE after one line naming a bad option, e.g. "unrecognized option '--x' (try 'ptc
 * run --help')".
 */
int cli_parse_options(int argc, char **argv, const char *cmd, const struct cli_option *opts,
                      bool stop_at_operand, void (*help)(void));

/* Print @v as JSON on stdout (pretty or one line) with a newline. */
int cli_print_json(json_t *v, bool pretty);
