/* SPDX-License-Identifier: MIT */
/*
 * A session kernel and its cells (exec-kernel.h). The kernel is started like a script
 * (exec_start_confined(), under an init of its own, in a staging directory whose script is
 * exec_kernel_source) with one end of a SOCK_SEQPACKET socketpair as its stdin: the control
 * socket. A cell is supervised on an event loop of its own, as exec.c supervises a script,
 * except that the "child" is the cell inside the kernel: it ends with the kernel's done
 * message, not with a process.
 */

#include "core/exec/exec-kernel.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/path-util.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "core/env/env.h"
#include "core/exec/exec-internal.h"
#include "core/exec/staging.h"
#include "core/loop/loop.h"
#include "core/rpc/rpc-server.h"
#include "core/spawn/proc-tree.h"
#include "core/stubs/stubs.h"
#include "core/tools/tool.h"

/* After the done message, how long leftover writers may keep the cell's pipes open. */
#define DRAIN_USEC (500 * USEC_PER_MSEC)
/* A control message is a small JSON object either way. */
#define CONTROL_MAX 4096
/* The kernel's stderr while it starts, kept for the error when it dies starting. */
#define START_ERR_KEEP 2048

struct exec_kernel {
        struct staging staging;
        char **env;
        char *cwd; /* the cells' working directory, fixed at the start */
        pid_t pid; /* the kernel's init */
        int pidfd;
        int status_fd;
        struct run_cgroup cgroup;
        int ctl_fd;
        unsigned cells;
        char **warnings; /* of the start */
        bool lost;
        bool reap_orphans;
};

char *const *exec_kernel_warnings(const struct exec_kernel *k)
{
        return k ? k->warnings : NULL;
}

/* exec_opts.on_warning of the start: kept, and passed on to the caller's. */
struct start_warnings {
        struct exec_kernel *k;
        const struct exec_opts *o;
};

static void keep_warning(void *userdata, const char *line)
{
        struct start_warnings *w = userdata;

        if (strv_extend(&w->k->warnings, line) < 0) {
                /* Out of memory: a later run of a pooled kernel lacks the line; the start
                 * goes on. */
        }
        if (w->o->on_warning)
                w->o->on_warning(w->o->on_warning_userdata, line);
}

bool exec_kernel_alive(const struct exec_kernel *k)
{
        struct pollfd p = {.fd = k ? k->pidfd : -1, .events = POLLIN};

        /* A readable pidfd: the init has exited (the kernel was killed from outside). */
        return k && !k->lost && !(p.fd >= 0 && poll(&p, 1, 0) > 0);
}

int exec_kernel_pid(const struct exec_kernel *k)
{
        return k ? k->pid : -1;
}

/* Kill the kernel's whole tree and reap its init: a lost kernel is never used again. */
static void kill_kernel(struct exec_kernel *k)
{
        k->lost = true;
        k->ctl_fd = safe_close(k->ctl_fd);
        if (k->pid > 0) {
                (void) proc_signal_execution(k->pid, true, false, SIGKILL);
                run_cgroup_kill(&k->cgroup);
                (void) waitpid(k->pid, NULL, 0);
                k->pid = -1;
        }
        k->pidfd = safe_close(k->pidfd);
        k->status_fd = safe_close(k->status_fd);
}

void exec_kernel_kill(struct exec_kernel *k)
{
        if (!k || k->pid <= 0)
                return;
        k->lost = true;
        (void) proc_signal_execution(k->pid, true, false, SIGKILL);
        run_cgroup_kill(&k->cgroup);
}

struct exec_kernel *exec_kernel_free(struct exec_kernel *k)
{
        if (!k)
                return NULL;
        kill_kernel(k);
        (void) run_cgroup_destroy(&k->cgroup, 2 * USEC_PER_SEC);
        staging_remove(&k->staging);
        strv_free(k->warnings);
        strv_free(k->env);
        free(k->cwd);
        free(k);
        return NULL;
}

/* Read what the kernel wrote to @fd while starting, without blocking; past the first
 * START_ERR_KEEP - 1 bytes it is read and dropped (an unread pipe would stay readable). */
static void read_start_err(int fd, char *buf, size_t *len)
{
        char drop[4096];

        for (;;) {
                bool full = *len >= START_ERR_KEEP - 1;
                ssize_t n = full ? read(fd, drop, sizeof(drop))
                                 : read(fd, buf + *len, START_ERR_KEEP - 1 - *len);

                if (n <= 0)
                        break;
                if (!full)
                        *len += (size_t) n;
        }
        buf[*len] = 0;
}

/*
 * Wait for {"ready": true} until @deadline or @cancel_fd (-1: none) is readable, reading
 * the kernel's start-up stderr.
 */
static int wait_ready(struct exec_kernel *k, int err_fd, int cancel_fd, usec_t deadline,
                      struct diag *reterr)
{
        char errbuf[START_ERR_KEEP];
        size_t errlen = 0;
        char msg[CONTROL_MAX];

        errbuf[0] = 0;
        for (;;) {
                struct pollfd p[3] = {{.fd = k->ctl_fd, .events = POLLIN},
                                      {.fd = err_fd, .events = POLLIN},
                                      {.fd = cancel_fd, .events = POLLIN}};
                usec_t now = now_usec();
                int n;

                if (now >= deadline)
                        return diag_set(reterr, -ETIMEDOUT,
                                        "the session's interpreter did not start in time%s%s",
                                        errlen ? ": " : "", errbuf);
                /* A negative fd is skipped by poll(). */
                n = poll(p, 3, (int) ((deadline - now) / USEC_PER_MSEC) + 1);
                if (n < 0 && errno != EINTR)
                        return diag_set(reterr, -errno, "poll: %m");
                if (n <= 0)
                        continue;
                if (p[2].revents)
                        return diag_set(reterr, -ECANCELED,
                                        "cancelled while the session's interpreter started");
                if (p[1].revents && err_fd >= 0)
                        read_start_err(err_fd, errbuf, &errlen);
                if (p[0].revents) {
                        ssize_t l = recv(k->ctl_fd, msg, sizeof(msg) - 1, MSG_DONTWAIT);

                        if (l < 0 && (errno == EAGAIN || errno == EINTR))
                                continue;
                        if (l > 0) {
                                msg[l] = 0;
                                if (strcmp(msg, "{\"ready\":true}") == 0)
                                        return 0;
                        }
                        if (err_fd >= 0)
                                read_start_err(err_fd, errbuf, &errlen);
                        while (errlen > 0 && errbuf[errlen - 1] == '\n')
                                errbuf[--errlen] = 0;
                        return diag_set(reterr, -EPROTO,
                                        "the session's interpreter failed to start%s%s",
                                        errlen ? ": " : "", errlen ? errbuf : "");
                }
        }
}

int exec_kernel_start(const struct exec_opts *caller, struct exec_kernel **ret, struct diag *reterr)
{
        struct exec_opts opts = *caller;
        const struct exec_opts *o = &opts;
        struct start_warnings sw = {.o = caller};
        const struct ptc_config *c = o->config;
        _cleanup_(exec_kernel_freep) struct exec_kernel *k = NULL;
        _cleanup_free_ char *module = NULL;
        _cleanup_close_ int out_w = -EBADF, err_r = -EBADF, err_w = -EBADF, peer = -EBADF;
        int ctl[2], errp[2];
        struct sandbox_proc sp;
        int r;

        k = calloc(1, sizeof(*k));
        if (!k)
                return diag_set(reterr, -ENOMEM, "out of memory");
        k->pid = -1;
        k->pidfd = k->status_fd = k->ctl_fd = -EBADF;
        k->cgroup = RUN_CGROUP_NULL;
        k->reap_orphans = o->reap_orphans;
        sw.k = k;
        opts.on_warning = keep_warning;
        opts.on_warning_userdata = &sw;

        r = stubs_generate(o->registry, c->module_name, &module);
        if (r < 0)
                return diag_set(reterr, r, "cannot generate the tools module: %s", strerror(-r));
        r = staging_create(&k->staging, exec_kernel_source, strlen(exec_kernel_source),
                           c->module_name, module);
        if (r < 0)
                return diag_set(reterr, r, "cannot create the staging directory: %s", strerror(-r));
        {
                /* script.py is a pooled run's name for its script: the kernel takes another. */
                _cleanup_free_ char *p = path_join(k->staging.dir, ".kernel.py");

                if (!p)
                        return diag_set(reterr, -ENOMEM, "out of memory");
                if (rename(k->staging.script_path, p) < 0)
                        return diag_set(reterr, -errno, "cannot set up the staging directory: %m");
                free(k->staging.script_path);
                k->staging.script_path = TAKE_PTR(p);
        }
        /* The token is each cell's; the kernel sets it before the cell runs. */
        r = exec_child_env(o, &k->staging, "", &k->env);
        if (r >= 0)
                r = env_set(&k->env, "PTC_KERNEL_MODULE", c->module_name);
        k->cwd = strdup(c->mode == PTC_MODE_STRICT ? k->staging.dir : o->cwd);
        if (r < 0 || !k->cwd)
                return diag_set(reterr, -ENOMEM, "out of memory");

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl) < 0)
                return diag_set(reterr, -errno, "cannot create the control socket: %m");
        k->ctl_fd = ctl[0];
        peer = ctl[1];
        if (pipe2(errp, O_CLOEXEC) < 0)
                return diag_set(reterr, -errno, "cannot create pipes: %m");
        err_r = errp[0];
        err_w = errp[1];
        out_w = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (out_w < 0 || fd_set_nonblock(err_r, true) < 0)
                return diag_set(reterr, -errno, "cannot set up the kernel's output: %m");

        {
                const struct exec_child_opts co = {
                        .script_path = k->staging.script_path,
                        .env = k->env,
                        .cwd = k->cwd,
                        .staging_dir = k->staging.dir,
                        .stdin_fd = peer,
                        .stdout_fd = out_w,
                        .stderr_fd = err_w,
                        /* A kernel lives for many cells: each has its wall-clock deadline. */
                        .cpu_seconds = 0,
                        .every_stop = true,
                };

                r = exec_start_confined(o, &co, &sp, &k->cgroup, reterr);
                if (r < 0)
                        return r;
        }
        k->pid = sp.pid;
        k->pidfd = sp.pidfd;
        k->status_fd = sp.status_fd;
        peer = safe_close(peer);
        err_w = safe_close(err_w);

        /* A sane interpreter starts in well under a minute; a run's timeout may be hours. */
        r = wait_ready(k, err_r, o->cancel_fd,
                       now_usec() + (usec_t) (MIN(c->timeout, 60.0) * USEC_PER_SEC), reterr);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(k);
        return 0;
}

/* One cell's supervision, as struct execution is a script's (exec.c). */
struct cell {
        struct exec_kernel *k;
        const struct exec_opts *o;
        struct loop *loop;
        struct rpc_server *rpc;
        struct capture out, err;
        struct tool_ctx tool_ctx;
        char *path;
        int out_fd, err_fd;
        struct loop_source *out_src, *err_src, *ctl_src, *pid_src;
        int timer_fd, sig_fd, cancel_fd;
        enum { CELL_RUNNING, CELL_STOPPING, CELL_KILLED } phase;
        enum exec_status status;
        bool stopped;
        const char *interrupt_reason;
        bool done;         /* the kernel said so, or is gone */
        bool ctl_closed;   /* the control socket ended: the kernel is dying */
        bool started;      /* the kernel said the cell runs: a stop reaches it */
        bool stop_pending; /* a stop came before that: sent on "started" */
        bool one_shot;     /* a warm pool's run: its result as a cold run's */
        bool have_exit_code;
        int exit_code;
        bool drain_timed_out;
        usec_t start, deadline;
};

static void signal_tools(struct cell *c)
{
        uint64_t one = 1;

        (void) !write(c->cancel_fd, &one, sizeof(one));
}

static void close_pipe(struct cell *c, bool is_err)
{
        loop_remove(is_err ? c->err_src : c->out_src);
        if (is_err) {
                c->err_src = NULL;
                c->err_fd = safe_close(c->err_fd);
        } else {
                c->out_src = NULL;
                c->out_fd = safe_close(c->out_fd);
        }
}

static bool is_done(const struct cell *c)
{
        return c->done && ((c->out_fd < 0 && c->err_fd < 0) || c->drain_timed_out);
}

/* The cell is over: its tools stop, its pipes get DRAIN_USEC to reach their end. */
static void cell_over(struct cell *c)
{
        if (c->done)
                return;
        c->done = true;
        loop_remove(c->ctl_src);
        c->ctl_src = NULL;
        loop_remove(c->pid_src);
        c->pid_src = NULL;
        signal_tools(c);
        exec_arm_timer(c->timer_fd, now_usec() + DRAIN_USEC);
}

/* The kernel is gone or broke the protocol: the session is lost with it. */
static void lose_kernel(struct cell *c)
{
        struct exec_kernel *k = c->k;

        if (!c->have_exit_code && k->pid > 0 && k->status_fd >= 0) {
                siginfo_t si = {};
                int ws;

                /* Its status when it died by itself (os._exit(3), a crash). */
                if (waitid(P_PID, (id_t) k->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
                    si.si_pid == k->pid && sandbox_read_status(k->status_fd, &ws) >= 0) {
                        c->have_exit_code = true;
                        c->exit_code = ws;
                }
        }
        kill_kernel(k);
        cell_over(c);
}

static void begin_stop(struct cell *c, enum exec_status why, const char *reason)
{
        if (c->phase != CELL_RUNNING || c->done)
                return;
        c->stopped = true;
        c->status = why;
        c->interrupt_reason = reason;
        c->phase = CELL_STOPPING;
        /*
         * The init forwards: SIGINT to the kernel's main thread (KeyboardInterrupt in the
         * cell), SIGTERM to every other process of the session. Tools after it. Before the
         * cell has started, the kernel would not take it: it goes when "started" comes;
         * the grace runs from now either way.
         */
        if (c->started)
                (void) kill(c->k->pid, SIGINT);
        else
                c->stop_pending = true;
        signal_tools(c);
        exec_arm_timer(c->timer_fd, now_usec() + EXEC_KILL_GRACE_USEC);
}

static void on_pipe(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct cell *c = userdata;
        bool is_err = fd == c->err_fd;
        char buf[64 * 1024];

        for (int i = 0; i < 4; i++) {
                ssize_t n = read(fd, buf, sizeof(buf));

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return;
                if (n <= 0) {
                        close_pipe(c, is_err);
                        return;
                }
                (void) capture_feed(is_err ? &c->err : &c->out, buf, (size_t) n);
                if (c->o->on_output)
                        c->o->on_output(c->o->on_output_userdata, is_err, buf, (size_t) n);
                if ((size_t) n < sizeof(buf))
                        return;
        }
}

static void on_control(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct cell *c = userdata;
        char msg[CONTROL_MAX];
        json_auto_t *v = NULL;
        ssize_t n;

        n = recv(fd, msg, sizeof(msg), MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n == 0 && c->k->pidfd >= 0) {
                /*
                 * The kernel is exiting (os._exit(), a crash): its init reports the status
                 * when it has reaped it, which the pidfd says. A kernel that only closed
                 * the socket and lives on is lost all the same, after DRAIN_USEC.
                 */
                loop_remove(c->ctl_src);
                c->ctl_src = NULL;
                c->ctl_closed = true;
                exec_arm_timer(c->timer_fd, now_usec() + DRAIN_USEC);
                return;
        }
        if (n > 0)
                v = json_loadb(msg, (size_t) n, 0, NULL);
        if (!c->started &&
            json_integer_value(json_object_get(v, "started")) == (json_int_t) c->k->cells) {
                c->started = true;
                if (c->stop_pending)
                        (void) kill(c->k->pid, SIGINT);
                return;
        }
        if (!v || json_integer_value(json_object_get(v, "done")) != (json_int_t) c->k->cells ||
            !json_is_integer(json_object_get(v, "exit_code"))) {
                /* The end of the socket, or anything but this cell's done: not a kernel. */
                lose_kernel(c);
                return;
        }
        c->have_exit_code = true;
        c->exit_code = (int) json_integer_value(json_object_get(v, "exit_code"));
        cell_over(c);
}

static void on_pidfd(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        lose_kernel(userdata);
}

static void on_timer(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct cell *c = userdata;
        uint64_t n;

        (void) !read(fd, &n, sizeof(n));
        if (c->done) {
                c->drain_timed_out = true;
                return;
        }
        if (c->ctl_closed) {
                lose_kernel(c);
                return;
        }
        if (c->phase == CELL_RUNNING)
                begin_stop(c, EXEC_TIMEOUT, NULL);
        else if (c->phase == CELL_STOPPING) {
                /* The cell did not unwind: the kernel goes, and its state with it. */
                c->phase = CELL_KILLED;
                lose_kernel(c);
        }
}

static void on_signal(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct cell *c = userdata;
        struct signalfd_siginfo si;

        while (read(fd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
                if (si.ssi_signo == SIGINT)
                        begin_stop(c, EXEC_INTERRUPTED, "SIGINT");
                else if (si.ssi_signo == SIGTERM)
                        begin_stop(c, EXEC_INTERRUPTED, "SIGTERM");
                else if (si.ssi_signo == SIGHUP)
                        begin_stop(c, EXEC_INTERRUPTED, "SIGHUP");
        }
}

static void on_cancel(struct loop_source *s, int fd, uint32_t events, void *userdata)
{
        struct cell *c = userdata;
        const char *reason = NULL;

        if (c->o->cancel_reason)
                reason = __atomic_load_n(c->o->cancel_reason, __ATOMIC_ACQUIRE);
        begin_stop(c, EXEC_INTERRUPTED, reason ? reason : "cancelled");
        loop_remove(s);
}

/* Hand the cell to the kernel: its file, its token, and the write ends of its pipes. */
static int send_cell(struct cell *c, const char *token, int out_w, int err_w)
{
        json_auto_t *m = json_pack("{s:I, s:s, s:s}", "cell", (json_int_t) c->k->cells, "path",
                                   c->path, "token", token);
        _cleanup_free_ char *text = m ? json_dumps(m, JSON_COMPACT) : NULL;
        int fds[2] = {out_w, err_w};
        char cbuf[CMSG_SPACE(sizeof(fds))] = {};
        struct iovec iov;
        struct msghdr mh = {};
        struct cmsghdr *cm;

        if (!text)
                return -ENOMEM;
        iov = (struct iovec){.iov_base = text, .iov_len = strlen(text)};
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        mh.msg_control = cbuf;
        mh.msg_controllen = sizeof(cbuf);
        cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(fds));
        memcpy(CMSG_DATA(cm), fds, sizeof(fds));
        for (;;) {
                ssize_t n = sendmsg(c->k->ctl_fd, &mh, MSG_NOSIGNAL);
                int k = n < 0 ? -errno : 0;

                if (k == -EINTR)
                        continue;
                explicit_wipe(text, strlen(text));
                return k;
        }
}

static int cell_setup(struct cell *c, bool one_shot, struct diag *reterr)
{
        const struct exec_opts *o = c->o;
        struct exec_kernel *k = c->k;
        char token[65], name[64];
        int outp[2] = {-1, -1}, errp[2] = {-1, -1};
        struct rpc_server_opts ro;
        sigset_t mask;
        int r;

        k->cells++;
        if (one_shot)
                (void) snprintf(name, sizeof(name), "script.py");
        else
                (void) snprintf(name, sizeof(name), "cell-%u.py", k->cells);
        r = staging_add_file(&k->staging, name, o->code, o->code_len, &c->path);
        if (r < 0)
                return diag_set(reterr, r, "cannot write the cell: %s", strerror(-r));
        r = exec_make_token(token);
        if (r < 0)
                return diag_set(reterr, r, "cannot generate the RPC token: %s", strerror(-r));

        c->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        c->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (c->cancel_fd < 0 || c->timer_fd < 0)
                return diag_set(reterr, -errno, "cannot create event fds: %m");
        c->tool_ctx = (struct tool_ctx){
                .config = o->config,
                .cwd = k->cwd,
                .env = o->base_env,
                .deadline = c->deadline,
                .cancel_fd = c->cancel_fd,
                .redactor = o->redactor,
                .python = o->python,
        };
        r = loop_new(&c->loop);
        if (r < 0)
                return diag_set(reterr, r, "cannot create the event loop: %s", strerror(-r));
        /* Each cell's own server on the kernel's socket path: the last one's calls end. */
        (void) unlink(k->staging.socket_path);
        ro = (struct rpc_server_opts){
                .socket_path = k->staging.socket_path,
                .token = token,
                .registry = o->registry,
                .tool_ctx = &c->tool_ctx,
                .redactor = o->redactor,
                .max_tool_calls = o->config->max_tool_calls,
                .log_calls = o->log_calls,
                .on_call = o->on_call,
                .on_call_userdata = o->on_call_userdata,
        };
        r = rpc_server_new(&ro, &c->rpc);
        if (r < 0) {
                explicit_wipe(token, sizeof(token));
                return diag_set(reterr, r, "cannot start the RPC server on '%s': %s",
                                k->staging.socket_path, strerror(-r));
        }
        r = exec_capture_init(o, &c->out, &c->err);
        if (r < 0) {
                explicit_wipe(token, sizeof(token));
                return diag_set(reterr, r, "cannot set up output capture: %s", strerror(-r));
        }
        if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
                r = -errno;
                safe_close(outp[0]);
                safe_close(outp[1]);
                explicit_wipe(token, sizeof(token));
                return diag_set(reterr, r, "cannot create pipes: %s", strerror(-r));
        }
        c->out_fd = outp[0];
        c->err_fd = errp[0];
        if (fd_set_nonblock(c->out_fd, true) < 0 || fd_set_nonblock(c->err_fd, true) < 0) {
                safe_close(outp[1]);
                safe_close(errp[1]);
                explicit_wipe(token, sizeof(token));
                return diag_set(reterr, -errno, "cannot set up pipes: %m");
        }
        if ((r = loop_add(c->loop, c->out_fd, EPOLLIN, on_pipe, c, &c->out_src)) < 0 ||
            (r = loop_add(c->loop, c->err_fd, EPOLLIN, on_pipe, c, &c->err_src)) < 0 ||
            (r = loop_add(c->loop, c->timer_fd, EPOLLIN, on_timer, c, NULL)) < 0 ||
            (r = loop_add(c->loop, k->ctl_fd, EPOLLIN, on_control, c, &c->ctl_src)) < 0 ||
            (k->pidfd >= 0 &&
             (r = loop_add(c->loop, k->pidfd, EPOLLIN, on_pidfd, c, &c->pid_src)) < 0))
                goto fail;
        if (o->handle_signals) {
                sigemptyset(&mask);
                sigaddset(&mask, SIGINT);
                sigaddset(&mask, SIGTERM);
                sigaddset(&mask, SIGHUP);
                c->sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
                r = c->sig_fd < 0 ? -errno
                                  : loop_add(c->loop, c->sig_fd, EPOLLIN, on_signal, c, NULL);
                if (r < 0)
                        goto fail;
        }
        if (o->cancel_fd >= 0) {
                r = loop_add(c->loop, o->cancel_fd, EPOLLIN, on_cancel, c, NULL);
                if (r < 0)
                        goto fail;
        }
        exec_arm_timer(c->timer_fd, c->deadline);
        /* Last: a kernel found gone (EPIPE) ends the cell through the loop's sources. */
        r = send_cell(c, token, outp[1], errp[1]);
        explicit_wipe(token, sizeof(token));
        safe_close(outp[1]);
        safe_close(errp[1]);
        if (r < 0)
                lose_kernel(c);
        return 0;
fail:
        safe_close(outp[1]);
        safe_close(errp[1]);
        explicit_wipe(token, sizeof(token));
        return diag_set(reterr, r, "event loop: %s", strerror(-r));
}

static void cell_teardown(struct cell *c)
{
        if (c->cancel_fd >= 0)
                signal_tools(c);
        c->rpc = rpc_server_free(c->rpc);
        if (c->k->staging.socket_path)
                (void) unlink(c->k->staging.socket_path);
        loop_remove(c->out_src);
        loop_remove(c->err_src);
        loop_remove(c->ctl_src);
        loop_remove(c->pid_src);
        c->loop = loop_free(c->loop);
        safe_close(c->out_fd);
        safe_close(c->err_fd);
        safe_close(c->timer_fd);
        safe_close(c->sig_fd);
        safe_close(c->cancel_fd);
        capture_release(&c->out);
        capture_release(&c->err);
        free(c->path);
}

static int cell_finish(struct cell *c, json_t **ret, enum exec_status *ret_status)
{
        struct result_input in = {};
        json_auto_t *log = NULL;

        rpc_server_shutdown(c->rpc, 5000);
        if (c->stopped)
                in.status = c->status;
        else
                in.status = c->have_exit_code && c->exit_code == 0 ? EXEC_SUCCESS : EXEC_ERROR;
        in.have_exit_code = c->have_exit_code;
        in.exit_code = c->exit_code;
        in.duration = (double) (now_usec() - c->start) / USEC_PER_SEC;
        in.calls = rpc_server_calls_made(c->rpc);
        in.interrupt_reason = c->interrupt_reason;
        if (!c->one_shot)
                in.cell = c->k->lost ? RESULT_CELL_LOST : RESULT_CELL_KEPT;
        if (c->k->lost && !c->stopped && !in.have_exit_code && !c->one_shot)
                in.error = "The session's interpreter died during the cell; its state is lost.";
        if (c->o->log_calls) {
                log = rpc_server_log(c->rpc);
                in.log = log;
        }
        return exec_result(c->o, &c->out, &c->err, &in, false, ret, ret_status);
}

int exec_kernel_run_cell(struct exec_kernel *k, const struct exec_opts *o, bool one_shot,
                         json_t **ret, enum exec_status *ret_status, bool *ret_lost,
                         struct diag *reterr)
{
        struct cell c = {
                .k = k,
                .o = o,
                .out_fd = -EBADF,
                .err_fd = -EBADF,
                .timer_fd = -EBADF,
                .sig_fd = -EBADF,
                .cancel_fd = -EBADF,
                .one_shot = one_shot,
        };
        int r;

        *ret_lost = false;
        if (k->lost)
                return diag_set(reterr, -ESRCH, "the session's interpreter is gone");
        c.start = now_usec();
        c.deadline = c.start + (usec_t) (o->config->timeout * USEC_PER_SEC);
        r = cell_setup(&c, one_shot, reterr);
        while (r >= 0 && !is_done(&c)) {
                r = loop_run_once(c.loop, -1);
                if (r < 0)
                        diag_set(reterr, r, "event loop failed: %s", strerror(-r));
        }
        if (r >= 0) {
                r = cell_finish(&c, ret, ret_status);
                if (r < 0)
                        diag_set(reterr, r, "cannot assemble the result: %s", strerror(-r));
        }
        cell_teardown(&c);
        /* A cell that could not even be set up leaves the kernel in an unknown state. */
        if (r < 0)
                kill_kernel(k);
        *ret_lost = k->lost;
        return r;
}
