/* SPDX-License-Identifier: MIT */
/*
 * ptc run --events FD|FILE: the run's live events (docs/observability.md), one JSON line
 * each, to an open file descriptor (a host's pipe) or a file (created 0600, truncated).
 * A reader that stops reading stalls the run's tool calls at most EVENTS_STALL_MS once:
 * then the stream is given up and the rest counted as dropped (the end event says so, when
 * it can still be written: it cannot, then; the result is unaffected).
 */

#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/log.h"
#include "basic/parse-util.h"

#define EVENTS_STALL_MS 5000

static int write_line(const char *line, size_t len, void *userdata)
{
        struct cli_events *ev = userdata;
        int r;

        /* ptc calls this one event at a time: no lock needed here. */
        if (ev->status)
                cli_status_event(line, len);
        if (ev->fd < 0)
                return 0;
        if (ev->broken)
                return -EPIPE;
        r = write_all_stalling(ev->fd, line, len, EVENTS_STALL_MS, false);
        if (r >= 0)
                r = write_all_stalling(ev->fd, "\n", 1, EVENTS_STALL_MS, false);
        if (r < 0)
                ev->broken = true;
        return r;
}

int cli_events_open(const char *arg, struct cli_events *ret)
{
        int64_t fd;

        ret->fd = -EBADF;
        ret->owned = ret->broken = false;
        if (!arg)
                return 0;
        if (safe_atoi64(arg, &fd) >= 0) {
                if (fd < 3 || fd > INT_MAX || fcntl((int) fd, F_GETFD) < 0) {
                        log_error("--events: invalid value '%s' (allowed: an open file "
                                  "descriptor >= 3, or a file name)",
                                  arg);
                        return -EINVAL;
                }
                ret->fd = (int) fd;
                /* The script must not inherit it. */
                if (fcntl(ret->fd, F_SETFD, FD_CLOEXEC) < 0) {
                        log_error_errno(-errno, "--events: %m");
                        return -errno;
                }
                return 0;
        }
        ret->fd = open(arg, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0600);
        if (ret->fd < 0) {
                log_error_errno(-errno, "--events: cannot open '%s': %m", arg);
                return -errno;
        }
        ret->owned = true;
        return 0;
}

int cli_events_attach(struct cli_events *ev, ptc_execution *x)
{
        return ev->fd >= 0 || ev->status ? ptc_execution_on_event(x, write_line, ev) : 0;
}

void cli_events_close(struct cli_events *ev)
{
        if (ev->owned)
                ev->fd = safe_close(ev->fd);
}
