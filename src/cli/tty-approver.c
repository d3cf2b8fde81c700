/* SPDX-License-Identifier: MIT */
/*
 * The terminal prompt that answers the policy's asks for `ptc run` and `ptc tool` when a
 * person is at the terminal (docs/policy.md, "Who answers"): the question goes to
 * /dev/tty, not to stdout (the result JSON) or stderr (a log), and the answer is read from
 * it, waiting at most what the request has left and giving up when the run ends.
 *
 * A person is there when stdin is a terminal and /dev/tty opens: an agent that runs ptc
 * with a pipe or /dev/null on stdin is never prompted, even from inside a terminal.
 *
 * Only a person answers (docs/security.md, "Approvals"): the answer is read from /dev/tty
 * alone, and what was typed before the question is complete is discarded (tcflush) — a
 * keystroke meant for something else, or text pushed into the terminal's input, answers
 * nothing. Nothing the script or a terminal command starts can reach this terminal (no
 * controlling terminal, no inherited descriptor of it, TIOCSTI refused: docs/isolation.md).
 * The status line (run-status.c) is paused while the question is on the screen.
 *
 * The same prompt answers a session cell's asks that ptc serve relays to this client
 * (cmd-run-session.c): cli_tty_prompt().
 */

#include "cli/cli.h"

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
#include "basic/time-util.h"
#include "basic/utf8.h"

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

/* One line from the terminal into @buf, until @deadline or @cancel_fd is readable
 * (withdrawn). 1: a line; 0: nothing (EOF, timeout, withdrawn). */
static int read_line(usec_t deadline, int cancel_fd, char *buf, size_t size)
{
        size_t n = 0;

        for (;;) {
                struct pollfd p[2] = {
                        {.fd = tty_fd, .events = POLLIN},
                        {.fd = cancel_fd, .events = POLLIN},
                };
                char c;
                ssize_t k;

                if (now_usec() >= deadline)
                        return 0;
                k = poll_until(p, ELEMENTSOF(p), deadline);
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

int cli_tty_prompt(const struct cli_prompt *q)
{
        json_auto_t *v = json_loads(q->verdict ?: "{}", 0, NULL);
        const char *what = json_string_value(json_object_get(v, "what"));
        const char *subject = json_string_value(json_object_get(v, "subject"));
        const char *origin = json_string_value(json_object_get(v, "origin"));
        char prompt[256], line[64];
        json_t *e;
        size_t i;
        usec_t now = now_usec();
        int64_t secs =
                q->deadline > now ? (int64_t) ((q->deadline - now + 999999) / USEC_PER_SEC) : 0;

        if (tty_fd < 0)
                return PTC_APPROVE_CANNOT_ASK;
        /* The question owns the terminal: no redraw of the status line erases it. */
        cli_status_pause(true);
        /*
         * Only what is typed once the question shows answers it: input that was waiting
         * (typed ahead, or pushed into the terminal) is discarded, right before the first
         * word of the question is written. A failed flush is no reason to ask nothing.
         */
        (void) tcflush(tty_fd, TCIFLUSH);
        (void) snprintf(prompt, sizeof(prompt),
                        "\nptc: the script wants to call %s: ", q->tool ?: "?");
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
        tty_write_text(q->arguments ?: "{}", true);
        (void) snprintf(
                prompt, sizeof(prompt),
                "\nAllow? [o]nce, for this [s]ession, [d]eny (deny in %llds): ", (long long) secs);
        tty_write(prompt);
        if (read_line(q->deadline, q->cancel_fd, line, sizeof(line)) <= 0) {
                tty_write("\nptc: no answer: denied\n");
                cli_status_pause(false);
                return PTC_APPROVE_NO_ANSWER;
        }
        cli_status_pause(false);
        if (strcmp(line, "o") == 0 || strcmp(line, "once") == 0 || strcmp(line, "y") == 0 ||
            strcmp(line, "yes") == 0)
                return PTC_APPROVE_ONCE;
        if (strcmp(line, "s") == 0 || strcmp(line, "session") == 0 || strcmp(line, "a") == 0 ||
            strcmp(line, "always") == 0)
                return PTC_APPROVE_SESSION;
        tty_write("ptc: denied\n");
        return PTC_APPROVE_DENY;
}

static void ask(ptc_approval *a, void *userdata)
{
        struct cli_prompt q = {
                .tool = ptc_approval_tool(a),
                .arguments = ptc_approval_arguments(a),
                .verdict = ptc_approval_verdict(a),
                .deadline = now_usec() + (usec_t) ptc_approval_remaining_ms(a) * USEC_PER_MSEC,
                .cancel_fd = ptc_approval_cancel_fd(a),
        };

        (void) ptc_approval_answer(a, cli_tty_prompt(&q));
}

bool cli_tty_open(void)
{
        if (!isatty(STDIN_FILENO))
                return false;
        if (tty_fd < 0)
                tty_fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
        return tty_fd >= 0;
}

bool cli_tty_approver_install(ptc_engine *e)
{
        struct ptc_diag d = {};

        if (!cli_tty_open())
                return false;
        if (ptc_engine_set_approver(e, ask, NULL, &d) < 0) {
                log_warning("%s", d.message);
                return false;
        }
        return true;
}
