/* SPDX-License-Identifier: MIT */
/*
 * The terminal prompt that answers the policy's asks for `ptc run` and `ptc tool` when a
 * person is at the terminal (docs/policy.md, "Who answers"): the question goes to
 * /dev/tty, not to stdout (the result JSON) or stderr (a log), and the answer is read from
 * it, waiting at most what the request has left and giving up when the run ends.
 *
 * A person is there when stdin is a terminal and /dev/tty opens: an agent that runs ptc
 * with a pipe or /dev/null on stdin is never prompted, even from inside a terminal.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/fd-util.h"
#include "basic/log.h"
#include "basic/utf8.h"
#include "cli/cli.h"

static int tty_fd = -EBADF;

/*
 * Write all of @s to the terminal; a failed write only loses the prompt's text. What the
 * script chose (a command, a path, the arguments) is in it: a control character (an
 * escape sequence could redraw the prompt, or hide a word) is shown as '?', newlines but
 * the prompt's own too when @untrusted.
 */
static void tty_write_text(const char *s, bool untrusted)
{
        _cleanup_free_ char *clean = strdup(s);

        if (!clean)
                return;
        utf8_replace_controls(clean, !untrusted);
        (void) !write_all(tty_fd, clean, strlen(clean));
}

static void tty_write(const char *s)
{
        tty_write_text(s, false);
}

/* One line from the terminal into @buf, until the request's time is up or it is
 * withdrawn. 1: a line; 0: nothing (EOF, timeout, withdrawn). */
static int read_line(ptc_approval *a, char *buf, size_t size)
{
        size_t n = 0;

        for (;;) {
                struct pollfd p[2] = {
                        {.fd = tty_fd, .events = POLLIN},
                        {.fd = ptc_approval_cancel_fd(a), .events = POLLIN},
                };
                int64_t ms = ptc_approval_remaining_ms(a);
                char c;
                ssize_t k;

                if (ms <= 0)
                        return 0;
                k = poll(p, p[1].fd >= 0 ? 2 : 1, ms > INT32_MAX ? INT32_MAX : (int) ms);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0 || p[1].revents || (p[0].revents & ~POLLIN))
                        return 0;
                k = read(tty_fd, &c, 1);
                if (k < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (k <= 0)
                        return 0;
                if (c == '\n') {
                        buf[n] = 0;
                        return 1;
                }
                if (n + 1 < size)
                        buf[n++] = c;
        }
}

static void ask(ptc_approval *a, void *userdata)
{
        json_auto_t *v = json_loads(ptc_approval_verdict(a), 0, NULL);
        const char *what = json_string_value(json_object_get(v, "what"));
        const char *subject = json_string_value(json_object_get(v, "subject"));
        const char *origin = json_string_value(json_object_get(v, "origin"));
        char prompt[256], line[64];
        json_t *e;
        size_t i;
        int64_t secs = (ptc_approval_remaining_ms(a) + 999) / 1000;

        (void) snprintf(prompt, sizeof(prompt),
                        "\nptc: the script wants to call %s: ", ptc_approval_tool(a));
        tty_write(prompt);
        tty_write_text(subject && subject[0] ? subject : "(the call)", true);
        tty_write("\n     why asked: ");
        tty_write_text(what ? what : "?", true);
        tty_write(origin && strcmp(origin, "rule") == 0 ? " (a rule of your policy)\n"
                                                        : " (ptc's built-in list)\n");
        /* A call that asks about several things: each, since the answer covers them all. */
        json_array_foreach(json_object_get(v, "asks"), i, e)
        {
                if (i == 0)
                        continue; /* the one above */
                tty_write("     and: ");
                tty_write_text(json_string_value(json_object_get(e, "what")) ?: "?", true);
                tty_write(" (");
                tty_write_text(json_string_value(json_object_get(e, "subject")) ?: "", true);
                tty_write(")\n");
        }
        tty_write("     arguments: ");
        tty_write_text(ptc_approval_arguments(a), true);
        (void) snprintf(
                prompt, sizeof(prompt),
                "\nAllow? [o]nce, for this [s]ession, [d]eny (deny in %llds): ", (long long) secs);
        tty_write(prompt);
        if (read_line(a, line, sizeof(line)) <= 0) {
                tty_write("\nptc: no answer: denied\n");
                cli_status_pause(false);
                (void) ptc_approval_answer(a, PTC_APPROVE_NO_ANSWER);
                return;
        }
        cli_status_pause(false);
        if (strcmp(line, "o") == 0 || strcmp(line, "once") == 0 || strcmp(line, "y") == 0 ||
            strcmp(line, "yes") == 0)
                (void) ptc_approval_answer(a, PTC_APPROVE_ONCE);
        else if (strcmp(line, "s") == 0 || strcmp(line, "session") == 0 || strcmp(line, "a") == 0 ||
                 strcmp(line, "always") == 0)
                (void) ptc_approval_answer(a, PTC_APPROVE_SESSION);
        else {
                tty_write("ptc: denied\n");
                (void) ptc_approval_answer(a, PTC_APPROVE_DENY);
        }
}

bool cli_tty_approver_install(ptc_engine *e)
{
        struct ptc_diag d = {};

        if (!isatty(STDIN_FILENO))
                return false;
        if (tty_fd < 0)
                tty_fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (tty_fd < 0)
                return false;
        if (ptc_engine_set_approver(e, ask, NULL, &d) < 0) {
                log_warning("%s", d.message);
                return false;
        }
        return true;
}
