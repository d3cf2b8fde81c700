/* SPDX-License-Identifier: MIT */
/*
 * Running a command to its end and capturing its output (command.h), on a loop of its own:
 * the output pipe, the cancel fd and the exec watch's wake fd are io sources, the child a
 * child source, the deadline, the SIGKILL after SIGTERM's grace and the drain after the exit
 * time sources. How it is started is command-start.c.
 */

#include "core/command/command.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/process-util.h"
#include "basic/time-util.h"
#include "core/command/command-internal.h"
#include "core/loop/loop.h"
#include "core/output/capture.h"
#include "core/sandbox/sandbox.h"

/* Between SIGTERM and SIGKILL on timeout. */
#define TERM_GRACE_USEC (1 * USEC_PER_SEC)
/*
 * After the command exited and its group was killed, how long we wait for the pipe's EOF
 * (a process that left the group may still hold it).
 */
#define DRAIN_GRACE_USEC (1 * USEC_PER_SEC)
#define READ_CHUNK (64 * 1024)
/* Reads per wakeup, so a chatty child cannot starve the deadline and the exit. */
#define READS_PER_WAKEUP 64

/* One command_run(): the loop's sources point here. */
struct run {
        const struct command_opts *o;
        struct command_child child;
        struct loop *loop;
        int out_r;                       /* owned; -1 once it reached EOF */
        char *chunk;                     /* READ_CHUNK bytes */
        struct loop_source *out_src;     /* the output pipe, while open */
        struct loop_source *child_src;   /* the child, until it exited */
        struct loop_source *cancel_src;  /* o->cancel_fd, until cancelled or exited */
        struct loop_source *wake_src;    /* the exec watch's wake fd */
        struct loop_source *deadline_at; /* armed while the command runs and its clock does */
        struct loop_source *kill_at;     /* armed between SIGTERM and SIGKILL */
        struct loop_source *drain_until; /* armed after the reap: the pipe's last chance */
        int wait_status;                 /* the reap's, as waitpid() reports it */
        bool reaped;
        bool drained; /* out_r reached EOF, or the drain grace passed */
        bool timed_out;
        bool cancelled;
};

/* The deadline now: o->deadline moved by the exec watch's pauses (USEC_INFINITY in one). */
static usec_t run_deadline(const struct run *r)
{
        const struct command_exec_watch *w = r->o->exec_watch;

        return w ? w->deadline(w->userdata, r->o->deadline) : r->o->deadline;
}

static void close_output(struct run *r)
{
        loop_remove(r->out_src);
        r->out_src = NULL;
        r->out_r = safe_close(r->out_r);
}

static void on_output(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct run *r = userdata;

        for (int i = 0; i < READS_PER_WAKEUP; i++) {
                ssize_t k = read(fd, r->chunk, READ_CHUNK);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 && errno == EAGAIN)
                        return;
                if (k <= 0) {
                        /* EOF; EIO and friends are taken as the end too. */
                        close_output(r);
                        if (r->reaped)
                                r->drained = true;
                        return;
                }
                if (r->o->output)
                        (void) capture_feed(r->o->output, r->chunk, (size_t) k);
        }
}

static void on_deadline(struct loop_source *s, usec_t now, void *userdata)
{
        struct run *r = userdata;
        usec_t deadline = run_deadline(r);

        /* An ask at exec holds the clock: on_wake() arms it again when it ends. */
        if (deadline == USEC_INFINITY)
                return;
        if (now < deadline) {
                loop_time_set(s, deadline);
                return;
        }
        r->timed_out = true;
        command_signal(&r->child, SIGTERM);
        loop_time_set(r->kill_at, now + TERM_GRACE_USEC);
}

static void on_kill(struct loop_source *s, usec_t now, void *userdata)
{
        struct run *r = userdata;

        command_signal(&r->child, SIGKILL);
}

static void on_drain_end(struct loop_source *s, usec_t now, void *userdata)
{
        struct run *r = userdata;

        r->drained = true;
}

static void on_cancel(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct run *r = userdata;

        r->cancelled = true;
        command_signal(&r->child, SIGKILL);
        /* Done with the clock: the kill is sent, and the cancel fd stays readable. */
        loop_time_set(r->deadline_at, USEC_INFINITY);
        loop_time_set(r->kill_at, USEC_INFINITY);
        loop_remove(s);
        r->cancel_src = NULL;
}

static void on_wake(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct run *r = userdata;
        const struct command_exec_watch *w = r->o->exec_watch;

        w->woken(w->userdata);
        /* The clock runs again, from where the deadline has moved to. */
        if (!r->reaped && !r->timed_out && !r->cancelled)
                loop_time_set(r->deadline_at, run_deadline(r));
}

/* Reap the child (left a zombie by the loop until now) and note how it ended. */
static void reap(struct run *r)
{
        while (waitpid(r->child.pid, &r->wait_status, 0) < 0 && errno == EINTR)
                ;
        r->reaped = true;
}

/*
 * The command is gone (also when it ended within the SIGTERM grace): kill what is left of its
 * group before reaping it, while the zombie holds the group id (and, with an init, the root
 * of the tree) for us; then the pipe gets DRAIN_GRACE_USEC to reach EOF.
 */
static void on_child_exit(struct loop_source *s, const siginfo_t *si, void *userdata)
{
        struct run *r = userdata;

        command_signal(&r->child, SIGKILL);
        reap(r);
        loop_time_set(r->deadline_at, USEC_INFINITY);
        loop_time_set(r->kill_at, USEC_INFINITY);
        loop_remove(r->cancel_src);
        r->cancel_src = NULL;
        if (r->out_r < 0)
                r->drained = true;
        else
                loop_time_set(r->drain_until, now_usec() + DRAIN_GRACE_USEC);
}

static int watch(struct run *r)
{
        const struct command_exec_watch *w = r->o->exec_watch;
        int k;

        k = loop_add(r->loop, r->out_r, EPOLLIN, on_output, r, &r->out_src);
        if (k >= 0)
                k = loop_add_child(r->loop, r->child.pid, r->child.pidfd, on_child_exit, r,
                                   &r->child_src);
        if (k < 0)
                return k;
        loop_child_set_reap(r->child_src, false);
        if (r->o->cancel_fd >= 0) {
                k = loop_add(r->loop, r->o->cancel_fd, EPOLLIN, on_cancel, r, &r->cancel_src);
                if (k < 0)
                        return k;
        }
        if (w && w->wake_fd >= 0) {
                k = loop_add(r->loop, w->wake_fd, EPOLLIN, on_wake, r, &r->wake_src);
                if (k < 0)
                        return k;
        }
        k = loop_add_time(r->loop, run_deadline(r), on_deadline, r, &r->deadline_at);
        if (k >= 0)
                k = loop_add_time(r->loop, USEC_INFINITY, on_kill, r, &r->kill_at);
        if (k >= 0)
                k = loop_add_time(r->loop, USEC_INFINITY, on_drain_end, r, &r->drain_until);
        return k;
}

/* The command's exit code as ptc reports it (command_result.exit_code). */
static int exit_code(const struct run *r)
{
        int code;

        if (r->child.status_fd >= 0)
                /* No report: the init was killed (cancel, or SIGKILL after the grace). */
                return sandbox_read_status(r->child.status_fd, &code) < 0 ? -SIGKILL : code;
        if (WIFEXITED(r->wait_status))
                return WEXITSTATUS(r->wait_status);
        if (WIFSIGNALED(r->wait_status))
                return -WTERMSIG(r->wait_status); /* Python's returncode */
        return -1;
}

/* Supervise the started child until it was reaped and its output drained. */
static int supervise(struct run *r, struct command_result *ret)
{
        int k;

        if (r->child.pidfd < 0)
                r->child.pidfd = pidfd_open_compat(r->child.pid);
        if (r->child.pidfd < 0) {
                /* The loop waits for a child on its pidfd, and nothing here polls for one. */
                (void) snprintf(ret->error, sizeof(ret->error),
                                "cannot supervise the command: no pidfd for it (%s)%s",
                                strerror(-r->child.pidfd),
                                r->child.pidfd == -ENOSYS ? "; Linux 5.3 or later is needed" : "");
                log_debug("%s", ret->error);
                return r->child.pidfd;
        }
        k = fd_set_nonblock(r->out_r, true);
        if (k >= 0)
                k = loop_new(&r->loop);
        if (k >= 0)
                k = watch(r);
        while (k >= 0 && !(r->reaped && r->drained))
                k = loop_run_once(r->loop, -1);
        return k < 0 ? k : 0;
}

int command_run(const struct command_opts *o, struct command_result *ret)
{
        _cleanup_close_ int out_w = -EBADF;
        struct run r = {.o = o, .child = COMMAND_CHILD_NULL, .out_r = -EBADF};
        int pipefd[2], k;

        *ret = (struct command_result){};
        r.chunk = malloc(READ_CHUNK);
        if (!r.chunk)
                return -ENOMEM;
        if (pipe2(pipefd, O_CLOEXEC) < 0) {
                k = -errno;
                goto out;
        }
        r.out_r = pipefd[0];
        out_w = pipefd[1];

        k = command_start(o, out_w, &r.child, ret->error, sizeof(ret->error));
        if (k < 0)
                goto out;
        /* Ours closed: the pipe's EOF says every writer is gone. */
        out_w = safe_close(out_w);

        k = supervise(&r, ret);
        if (k < 0) {
                /* Whatever failed, nothing of the command outlives the call. */
                if (!r.reaped) {
                        command_signal(&r.child, SIGKILL);
                        reap(&r);
                }
                goto out;
        }
        ret->timed_out = r.timed_out;
        ret->cancelled = r.cancelled;
        ret->exit_code = exit_code(&r);
out:
        r.loop = loop_free(r.loop);
        safe_close(r.out_r);
        command_child_done(&r.child);
        free(r.chunk);
        return k;
}
