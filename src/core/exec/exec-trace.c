/* SPDX-License-Identifier: MIT */
#include "core/exec/exec-trace.h"

#include <errno.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "basic/fd-util.h"

void exec_trace_sandbox(struct trace *t, const struct sandbox_timings *st, usec_t spawned)
{
        usec_t prev = st->begin;

        if (!t || !prev)
                return;
        for (int i = 0; i < _SANDBOX_STEP_MAX; i++) {
                usec_t end = st->end[i];

                /* Not taken, or a clock that cannot be (never across a start: one machine). */
                if (!end || end < prev)
                        continue;
                trace_span(t, sandbox_step_to_string((enum sandbox_step) i), "sandbox", prev, end,
                           NULL);
                prev = end;
        }
        if (spawned >= prev)
                trace_span(t, "exec", "sandbox", prev, spawned, NULL);
}

int exec_interpreter_watch(const char *script_path)
{
        _cleanup_close_ int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);

        if (fd < 0)
                return -errno;
        if (inotify_add_watch(fd, script_path, IN_OPEN) < 0)
                return -errno;
        return TAKE_FD(fd);
}

void exec_interpreter_watch_forget(int fd)
{
        _Alignas(struct inotify_event) char buf[4096];

        while (read(fd, buf, sizeof(buf)) > 0)
                ;
}
