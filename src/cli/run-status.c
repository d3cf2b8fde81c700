/* SPDX-License-Identifier: MIT */
/*
 * The live status line of `ptc run` on a terminal (docs/observability.md, "On a terminal"):
 * one line on stderr, redrawn in place from the run's events — elapsed time, tool calls so
 * far and the budget, the call in flight with its argument preview and how long it runs,
 * the bytes of output — and cleared at the end. Only when stderr is a terminal, TERM is
 * not "dumb" and --quiet is not given; never on stdout, never in the result. It draws no
 * colour (NO_COLOR has nothing to turn off). A terminal prompt of the policy pauses it.
 *
 * The events only update the state; a thread redraws it four times a second while the run
 * lasts (the elapsed time moves on its own), and once more at each change of calls.
 */

#include "cli/cli.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/fd-util.h"
#include "basic/time-util.h"
#include "basic/utf8.h"

#define REDRAW_MS 250

static struct {
        pthread_mutex_t lock;
        bool on;
        bool paused; /* a prompt owns the terminal */
        bool drawn;  /* a line is on the screen */
        usec_t start;
        long calls, budget, running;
        char current[160]; /* the latest call in flight: "terminal: pytest -q" */
        usec_t current_since;
        long long out_bytes;
        int wake_fd;
        pthread_t thread;
} st = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake_fd = -1};

static int term_width(void)
{
        struct winsize ws;

        if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10)
                return ws.ws_col;
        return 80;
}

/* A failed write only loses a redraw. */
static void put(const char *s, size_t n)
{
        (void) !write_all(STDERR_FILENO, s, n);
}

/* Under the lock. */
static void draw_locked(void)
{
        char line[512], call[200] = "";
        double secs = (double) (now_usec() - st.start) / USEC_PER_SEC;
        int w = term_width(), n;

        if (st.paused)
                return;
        if (st.running > 0 && st.current[0])
                (void) snprintf(call, sizeof(call), " · %s %.1fs", st.current,
                                (double) (now_usec() - st.current_since) / USEC_PER_SEC);
        n = snprintf(line, sizeof(line), "\r\033[Kptc %.1fs · %ld/%ld calls%s · %lld B out", secs,
                     st.calls, st.budget, call, st.out_bytes);
        if (n <= 0)
                return;
        /* One screen line: cut at the width (the text is ASCII but the preview). */
        if (n > w + 6) {
                n = w + 6; /* "\r\033[K" takes no columns */
                while (n > 6 && ((unsigned char) line[n] & 0xC0) == 0x80)
                        n--;
        }
        put(line, (size_t) n);
        st.drawn = true;
}

static void clear_locked(void)
{
        if (st.drawn)
                put("\r\033[K", 4);
        st.drawn = false;
}

static void *status_thread(void *arg)
{
        for (;;) {
                int k = fd_wait_readable(st.wake_fd, now_usec() + REDRAW_MS * USEC_PER_MSEC);

                if (k < 0)
                        break;
                pthread_mutex_lock(&st.lock);
                if (!st.on) {
                        clear_locked();
                        pthread_mutex_unlock(&st.lock);
                        break;
                }
                draw_locked();
                pthread_mutex_unlock(&st.lock);
                if (k > 0) {
                        uint64_t v;

                        (void) !read(st.wake_fd, &v, sizeof(v));
                }
        }
        return NULL;
}

bool cli_status_wanted(bool quiet)
{
        const char *term = getenv("TERM");

        return !quiet && isatty(STDERR_FILENO) && !(term && strcmp(term, "dumb") == 0);
}

int cli_status_start(void)
{
        st.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (st.wake_fd < 0)
                return -errno;
        st.start = now_usec();
        st.on = true;
        if (pthread_create(&st.thread, NULL, status_thread, NULL) != 0) {
                st.on = false;
                st.wake_fd = safe_close(st.wake_fd);
                return -EAGAIN;
        }
        return 0;
}

static void wake(void)
{
        uint64_t one = 1;

        (void) !write(st.wake_fd, &one, sizeof(one));
}

void cli_status_event(const char *line, size_t len)
{
        json_auto_t *e = json_loadb(line, len, 0, NULL);
        const char *type = json_string_value(json_object_get(e, "event"));

        if (!type)
                return;
        pthread_mutex_lock(&st.lock);
        if (strcmp(type, "start") == 0)
                st.budget = (long) json_integer_value(json_object_get(e, "max_tool_calls"));
        else if (strcmp(type, "call") == 0) {
                const char *tool = json_string_value(json_object_get(e, "tool"));
                const char *args = json_string_value(json_object_get(e, "args_preview"));

                st.calls++;
                st.running++;
                (void) snprintf(st.current, sizeof(st.current), "%s: %s", tool ?: "?", args ?: "");
                /* The script chose the arguments: no escape sequence reaches the terminal. */
                utf8_replace_controls(st.current, false);
                st.current_since = now_usec();
        } else if (strcmp(type, "call_end") == 0) {
                if (st.running > 0)
                        st.running--;
        } else if (strcmp(type, "output") == 0)
                st.out_bytes += (long long) json_string_length(json_object_get(e, "text"));
        pthread_mutex_unlock(&st.lock);
        if (strcmp(type, "call") == 0 || strcmp(type, "call_end") == 0)
                wake();
}

void cli_status_pause(bool paused)
{
        if (!st.on)
                return;
        pthread_mutex_lock(&st.lock);
        st.paused = paused;
        if (paused)
                clear_locked();
        pthread_mutex_unlock(&st.lock);
}

void cli_status_stop(void)
{
        if (!st.on)
                return;
        pthread_mutex_lock(&st.lock);
        st.on = false;
        pthread_mutex_unlock(&st.lock);
        wake();
        (void) pthread_join(st.thread, NULL);
        st.wake_fd = safe_close(st.wake_fd);
}
