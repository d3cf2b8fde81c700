/* SPDX-License-Identifier: MIT */
/*
 * ptc run --session ID: the run as the next cell of a session of the per-user server
 * (ptc serve, started here when none runs; docs/sessions.md). The server runs it; this
 * process sends the code and its options, passes on SIGINT, SIGTERM or SIGHUP as an
 * interrupt, and prints the result as `ptc run` does.
 */

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "basic/log.h"
#include "cli/cli.h"

/* A result: the output's caps keep it far below this. */
#define REPLY_MAX (64u << 20)

static const char *signal_name(uint32_t sig)
{
        return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP";
}

/* Wait for the reply, passing a stop signal on as an interrupt line (once). */
static int wait_reply(int fd, int sig_fd)
{
        bool told = false;

        for (;;) {
                struct pollfd p[2] = {{.fd = fd, .events = POLLIN},
                                      {.fd = sig_fd, .events = POLLIN}};
                struct signalfd_siginfo si;

                if (poll(p, sig_fd >= 0 ? 2 : 1, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (p[0].revents)
                        return 0;
                while (read(sig_fd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
                        json_auto_t *m = NULL;

                        /* A second stop: the server does not answer; leaving interrupts
                         * the cell all the same (its watcher sees the end). */
                        if (told)
                                return -EINTR;
                        m = json_pack("{s:s}", "interrupt", signal_name(si.ssi_signo));
                        if (m)
                                (void) cli_serve_send(fd, m);
                        told = true;
                }
        }
}

int cli_run_in_session(const char *session, bool reset, const char *code, size_t code_len,
                       json_t *options, bool pretty)
{
        _cleanup_free_ char *line = NULL;
        json_auto_t *req = NULL, *rep = NULL;
        json_t *err;
        sigset_t stop;
        int fd = -1, sig_fd, r;

        req = json_pack("{s:s, s:s, s:b, s:s%, s:O}", "op", "run", "session", session, "reset",
                        reset, "code", code, code_len, "options", options);
        if (!req) {
                log_error("the script is not valid UTF-8, or out of memory");
                return EXIT_USAGE;
        }
        if (cli_setup_process() < 0)
                return EXIT_INTERNAL;
        r = cli_serve_connect(true, &fd);
        if (r < 0)
                return EXIT_INTERNAL;
        cli_stop_signals(&stop);
        sig_fd = signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK);
        r = cli_serve_send(fd, req);
        if (r >= 0)
                r = wait_reply(fd, sig_fd);
        if (r >= 0)
                r = cli_serve_read_line(fd, REPLY_MAX, &line);
        if (sig_fd >= 0)
                close(sig_fd);
        close(fd);
        if (r == -EINTR) {
                log_error("interrupted again: left the cell to ptc serve to stop");
                return EXIT_INTERRUPTED;
        }
        if (r < 0) {
                log_error("ptc serve did not answer: %s", strerror(-r));
                return EXIT_INTERNAL;
        }
        rep = json_loads(line, 0, NULL);
        err = json_object_get(rep, "error");
        if (json_is_string(err)) {
                log_error("%s", json_string_value(err));
                if (json_is_true(json_object_get(rep, "usage")))
                        return EXIT_USAGE;
                {
                        _cleanup_free_ char *res =
                                ptc_internal_error_result(json_string_value(err));
                        if (res)
                                (void) cli_print_json_text(res, pretty);
                }
                return EXIT_INTERNAL;
        }
        if (!json_is_object(json_object_get(rep, "result"))) {
                log_error("ptc serve answered without a result");
                return EXIT_INTERNAL;
        }
        {
                const char *w = json_string_value(json_object_get(rep, "warnings"));

                /* One per line, as a local run's. */
                for (const char *l = w; l && *l;) {
                        const char *nl = strchr(l, '\n');
                        size_t n = nl ? (size_t) (nl - l) : strlen(l);

                        if (n)
                                log_warning("%.*s", (int) n, l);
                        l += n + (nl ? 1 : 0);
                }
        }
        if (cli_print_json(json_object_get(rep, "result"), pretty) < 0)
                return EXIT_INTERNAL;
        return ptc_status_to_exit(
                (enum ptc_status) json_integer_value(json_object_get(rep, "status")));
}
