/* SPDX-License-Identifier: MIT */
/*
 * A session interpreter's life (exec-interp.h): its start, its forks, its death. The interpreter is
 * started like a script (exec_start_confined(), under an init of its own, in a staging
 * directory whose script is exec_interp_source) with one end of a SOCK_SEQPACKET socketpair
 * as its stdin: the control socket. ptc's end has SO_PASSCRED, so the interpreter's first message
 * says which process it is; ptc interrupts that process itself (the init only reaps). A fork
 * is made by the interpreter (os.fork() twice, so that the copy is the init's, not the
 * interpreter's) on a control message carrying the copy's own control socket. Cells:
 * exec-run-cell.c.
 */

#include "core/exec/exec-interp.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/compat/pidfd.h"
#include "basic/fd-util.h"
#include "basic/path-util.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "core/env/env.h"
#include "core/exec/exec-internal.h"
#include "core/exec/exec-interp-internal.h"
#include "core/remote/backend.h"
#include "core/spawn/proc-tree.h"
#include "core/stubs/stubs.h"

/* A control message is a small JSON object either way. */
#define CONTROL_MAX 4096
/* The interpreter's stderr while it starts, kept for the error when it dies starting. */
#define START_ERR_KEEP 2048
/* A fork copies page tables, not memory: even a big interpreter's takes well under this. */
#define FORK_TIMEOUT_USEC (30 * USEC_PER_SEC)

char *const *exec_interp_warnings(const struct exec_interp *k)
{
        return k && k->box ? k->box->warnings : NULL;
}

/* exec_opts.on_warning of the start: kept, and passed on to the caller's. */
struct start_warnings {
        struct interp_box *box;
        const struct exec_opts *o;
};

static void keep_warning(void *userdata, const char *line)
{
        struct start_warnings *w = userdata;

        if (strv_extend(&w->box->warnings, line) < 0) {
                /* Out of memory: a later run of a pooled interpreter lacks the line; the start
                 * goes on. */
        }
        if (w->o->on_warning)
                w->o->on_warning(w->o->on_warning_userdata, line);
}

int interp_death_fd(const struct exec_interp *k)
{
        return k->index == 0 ? k->box->status_fd : k->pidfd;
}

bool exec_interp_alive(const struct exec_interp *k)
{
        if (k && k->remote)
                return !k->lost && exec_remote_session_alive(k->remote);
        /* The origin's status came (or its init died), or the fork's pidfd says it exited. */
        return k && !k->lost && k->ctl_fd >= 0 && !fd_readable_now(interp_death_fd(k));
}

int exec_interp_pid(const struct exec_interp *k)
{
        return k && k->remote ? exec_remote_session_pid(k->remote) : k ? k->pid : -1;
}

/* SIGKILL to everything in the box, without waiting. */
static void box_signal(struct interp_box *b)
{
        if (b->pid > 0) {
                (void) proc_tree_kill(b->pid, true);
                run_cgroup_kill(&b->cgroup);
        }
}

/* Reap the box's init (after box_signal()). */
static void box_reap(struct interp_box *b)
{
        if (b->pid > 0) {
                (void) waitpid(b->pid, NULL, 0);
                b->pid = -1;
        }
        b->pidfd = safe_close(b->pidfd);
}

static void box_unref(struct interp_box *b)
{
        if (!b || __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) > 0)
                return;
        box_signal(b);
        box_reap(b);
        (void) run_cgroup_destroy(&b->cgroup, 2 * USEC_PER_SEC);
        safe_close(b->status_fd);
        staging_remove(&b->staging);
        strv_free(b->warnings);
        strv_free(b->env);
        free(b->cwd);
        free(b);
}

/* The interpreter still runs: a pid to signal is still its (its pidfd has not fired). */
static bool interpreter_runs(const struct exec_interp *k)
{
        return k->pid > 0 &&
               (k->pidfd >= 0 ? !fd_readable_now(k->pidfd) : !fd_readable_now(interp_death_fd(k)));
}

/* Whether @k is the only interpreter of its box: then the box dies with it. */
static bool box_alone(const struct exec_interp *k)
{
        return __atomic_load_n(&k->box->refs, __ATOMIC_ACQUIRE) == 1;
}

/*
 * SIGKILL to what dies with @k, without waiting: the whole box when no other interpreter shares
 * it, else its interpreter and what that started (its forks are the init's: they live on).
 */
static void interp_signal_kill(struct exec_interp *k)
{
        if (box_alone(k))
                box_signal(k->box);
        else if (interpreter_runs(k))
                (void) proc_tree_kill(k->pid, true);
}

void interp_kill(struct exec_interp *k)
{
        k->lost = true;
        k->ctl_fd = safe_close(k->ctl_fd);
        interp_signal_kill(k);
        if (box_alone(k))
                box_reap(k->box);
}

void interp_interrupt(struct exec_interp *k)
{
        if (!interpreter_runs(k))
                return;
        /* The main thread's: a cell's threads inherited an unblocked SIGINT. */
        (void) syscall(SYS_tgkill, k->pid, k->pid, SIGINT);
        (void) proc_tree_signal(k->pid, false, SIGTERM);
}

bool interp_exit_status(struct exec_interp *k, int *ret_status)
{
        return k->index == 0 && k->box->status_fd >= 0 &&
               sandbox_read_status(k->box->status_fd, ret_status) >= 0;
}

void exec_interp_kill(struct exec_interp *k)
{
        if (k && k->remote) {
                k->lost = true;
                exec_remote_session_kill(k->remote);
                return;
        }
        if (!k || k->lost)
                return;
        k->lost = true;
        interp_signal_kill(k);
}

struct exec_interp *exec_interp_free(struct exec_interp *k)
{
        if (!k)
                return NULL;
        exec_remote_session_close(k->remote);
        if (k->box)
                interp_kill(k);
        safe_close(k->pidfd);
        box_unref(k->box);
        free(k->socket_path);
        free(k);
        return NULL;
}

static struct exec_interp *interp_new(struct interp_box *b, unsigned index)
{
        struct exec_interp *k = calloc(1, sizeof(*k));

        if (!k)
                return NULL;
        k->pid = -1;
        k->pidfd = k->ctl_fd = -EBADF;
        k->index = index;
        k->box = b;
        __atomic_add_fetch(&b->refs, 1, __ATOMIC_ACQ_REL);
        return k;
}

/*
 * One control message, NUL-terminated in @buf, and its sender's pid as ptc sees it (0 when
 * the message carried none). The length, 0 at the end of the socket, or -errno.
 */
static ssize_t recv_control(int fd, char *buf, size_t size, pid_t *ret_pid)
{
        union {
                struct cmsghdr h;
                char b[CMSG_SPACE(sizeof(struct ucred))];
        } cbuf;
        struct iovec iov = {.iov_base = buf, .iov_len = size - 1};
        struct msghdr mh = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = &cbuf,
                .msg_controllen = sizeof(cbuf),
        };
        ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

        if (n < 0)
                return -errno;
        buf[n] = 0;
        *ret_pid = 0;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
                if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_CREDENTIALS &&
                    cm->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
                        struct ucred u;

                        memcpy(&u, CMSG_DATA(cm), sizeof(u));
                        *ret_pid = u.pid;
                }
        return n;
}

/* A new control socketpair: ptc's end (SO_PASSCRED) in *ret_ours, the other in *ret_peer. */
static int control_pair(int *ret_ours, int *ret_peer)
{
        int one = 1, p[2];

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p) < 0)
                return -errno;
        if (setsockopt(p[0], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0) {
                int r = -errno;

                safe_close(p[0]);
                safe_close(p[1]);
                return r;
        }
        *ret_ours = p[0];
        *ret_peer = p[1];
        return 0;
}

/* {"ready": true} came from @pid: the interpreter's, with a pidfd when the kernel has them. */
static int take_ready(struct exec_interp *k, const char *msg, pid_t pid)
{
        if (strcmp(msg, "{\"ready\":true}") != 0 || pid <= 0)
                return -EPROTO;
        k->pid = pid;
        k->pidfd = pidfd_open_compat(pid);
        if (k->pidfd < 0 && k->index > 0)
                /* A fork's death is seen only through its pidfd (Linux 5.3). */
                return k->pidfd;
        return 0;
}

/* Read what the interpreter wrote to @fd while starting, without blocking; past the first
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
 * the interpreter's start-up stderr.
 */
static int wait_ready(struct exec_interp *k, int err_fd, int cancel_fd, usec_t deadline,
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
                pid_t pid;
                ssize_t l;
                int n;

                if (now >= deadline)
                        return diag_set(reterr, -ETIMEDOUT,
                                        "the session's interpreter did not start in time%s%s",
                                        errlen ? ": " : "", errbuf);
                /* A negative fd is skipped. */
                n = poll_until(p, 3, deadline);
                if (n < 0)
                        return diag_set(reterr, n, "poll: %s", strerror(-n));
                if (n == 0)
                        continue;
                if (p[2].revents)
                        return diag_set(reterr, -ECANCELED,
                                        "cancelled while the session's interpreter started");
                if (p[1].revents && err_fd >= 0)
                        read_start_err(err_fd, errbuf, &errlen);
                if (!p[0].revents)
                        continue;
                l = recv_control(k->ctl_fd, msg, sizeof(msg), &pid);
                if (l == -EAGAIN || l == -EINTR)
                        continue;
                if (l > 0) {
                        int r = take_ready(k, msg, pid);

                        if (r >= 0)
                                return 0;
                        if (r != -EPROTO)
                                return diag_set(reterr, r,
                                                "cannot watch the session's interpreter: %s",
                                                strerror(-r));
                }
                if (err_fd >= 0)
                        read_start_err(err_fd, errbuf, &errlen);
                while (errlen > 0 && errbuf[errlen - 1] == '\n')
                        errbuf[--errlen] = 0;
                return diag_set(reterr, -EPROTO, "the session's interpreter failed to start%s%s",
                                errlen ? ": " : "", errlen ? errbuf : "");
        }
}

/* The box of a new interpreter: its files, environment and working directory. */
static int box_new(const struct exec_opts *o, struct interp_box **ret, struct diag *reterr)
{
        const struct ptc_config *c = o->config;
        _cleanup_free_ char *module = NULL, *interp_path = NULL;
        struct interp_box *b;
        int r;

        b = calloc(1, sizeof(*b));
        if (!b)
                return diag_set(reterr, -ENOMEM, "out of memory");
        b->pid = -1;
        b->pidfd = b->status_fd = -EBADF;
        b->cgroup = RUN_CGROUP_NULL;
        b->refs = 1; /* the caller's until its interpreter holds it */
        *ret = b;

        r = stubs_generate(o->registry, c->module_name, &module);
        if (r < 0)
                return diag_set(reterr, r, "cannot generate the tools module: %s", strerror(-r));
        r = staging_create(&b->staging, exec_interp_source, strlen(exec_interp_source),
                           c->module_name, module);
        if (r < 0)
                return diag_set(reterr, r, "cannot create the staging directory: %s", strerror(-r));
        /* script.py is a pooled run's name for its script: the interpreter takes another. */
        interp_path = path_join(b->staging.dir, ".kernel.py");
        if (!interp_path)
                return diag_set(reterr, -ENOMEM, "out of memory");
        if (rename(b->staging.script_path, interp_path) < 0)
                return diag_set(reterr, -errno, "cannot set up the staging directory: %m");
        free(b->staging.script_path);
        b->staging.script_path = TAKE_PTR(interp_path);
        /* The token is each cell's; the interpreter sets it before the cell runs. */
        r = exec_child_env(o, &b->staging, "", &b->env);
        if (r >= 0)
                r = env_set(&b->env, "PTC_INTERP_MODULE", c->module_name);
        b->cwd = strdup(c->mode == PTC_MODE_STRICT ? b->staging.dir : o->cwd);
        if (r < 0 || !b->cwd)
                return diag_set(reterr, -ENOMEM, "out of memory");
        return 0;
}

/* A session on a remote backend: its channel, open until the session ends. */
static int start_remote(const struct exec_opts *o, struct exec_interp **ret, struct diag *reterr)
{
        struct exec_interp *k = calloc(1, sizeof(*k));
        int r;

        if (!k)
                return diag_set(reterr, -ENOMEM, "out of memory");
        k->pid = -1;
        k->pidfd = k->ctl_fd = -EBADF;
        r = exec_remote_session_open(o, &k->remote, reterr);
        if (r < 0) {
                free(k);
                return r;
        }
        *ret = k;
        return 0;
}

int exec_interp_start(const struct exec_opts *caller, struct exec_interp **ret, struct diag *reterr)
{
        struct exec_opts opts = *caller;
        const struct exec_opts *o = &opts;
        struct start_warnings sw = {.o = caller};
        const struct ptc_config *c = o->config;
        _cleanup_(exec_interp_freep) struct exec_interp *k = NULL;
        _cleanup_close_ int out_w = -EBADF, err_r = -EBADF, err_w = -EBADF, peer = -EBADF;
        struct interp_box *b = NULL;
        struct sandbox_proc sp;
        int errp[2];
        int r;

        if (o->backend && o->backend->kind != BACKEND_LOCAL)
                return start_remote(o, ret, reterr);
        r = box_new(o, &b, reterr);
        k = b ? interp_new(b, 0) : NULL;
        box_unref(b); /* the interpreter's now, or gone with the error */
        if (r < 0)
                return r;
        if (!k)
                return diag_set(reterr, -ENOMEM, "out of memory");
        sw.box = b;
        opts.on_warning = keep_warning;
        opts.on_warning_userdata = &sw;
        k->socket_path = strdup(b->staging.socket_path);
        if (!k->socket_path)
                return diag_set(reterr, -ENOMEM, "out of memory");

        r = control_pair(&k->ctl_fd, &peer);
        if (r < 0)
                return diag_set(reterr, r, "cannot create the control socket: %s", strerror(-r));
        if (pipe2(errp, O_CLOEXEC) < 0)
                return diag_set(reterr, -errno, "cannot create pipes: %m");
        err_r = errp[0];
        err_w = errp[1];
        out_w = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (out_w < 0 || fd_set_nonblock(err_r, true) < 0)
                return diag_set(reterr, -errno,
                                "cannot set up the session interpreter's output: %m");

        {
                const struct exec_child_opts co = {
                        .script_path = b->staging.script_path,
                        .env = b->env,
                        .cwd = b->cwd,
                        .staging_dir = b->staging.dir,
                        .stdin_fd = peer,
                        .stdout_fd = out_w,
                        .stderr_fd = err_w,
                        /* An interpreter lives for many cells: each has its wall-clock deadline. */
                        .cpu_seconds = 0,
                        .outlive_script = true,
                };

                r = exec_start_confined(o, &co, &sp, &b->cgroup, reterr);
                if (r < 0)
                        return r;
        }
        b->pid = sp.pid;
        b->pidfd = sp.pidfd;
        b->status_fd = sp.status_fd;
        b->rlimits = sp.layers & (1u << SANDBOX_LAYER_RLIMITS);
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

int interp_send(struct exec_interp *k, const char *text, const int *fds, size_t n_fds)
{
        char cbuf[CMSG_SPACE(2 * sizeof(int))] = {};
        struct iovec iov = {.iov_base = (char *) text, .iov_len = strlen(text)};
        struct msghdr mh = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = cbuf,
                .msg_controllen = CMSG_SPACE(n_fds * sizeof(int)),
        };
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

        if (n_fds < 1 || n_fds > 2)
                return -EINVAL;
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(n_fds * sizeof(int));
        memcpy(CMSG_DATA(cm), fds, n_fds * sizeof(int));
        for (;;) {
                if (sendmsg(k->ctl_fd, &mh, MSG_NOSIGNAL) >= 0)
                        return 0;
                if (errno != EINTR)
                        return -errno;
        }
}

/* Send the interpreter {"fork": N} with the copy's control socket. */
static int send_fork(struct exec_interp *k, unsigned index, int peer)
{
        char text[64];

        (void) snprintf(text, sizeof(text), "{\"fork\":%u}", index);
        return interp_send(k, text, &peer, 1);
}

/*
 * The interpreter's answer to a fork: {"forked": N} or {"forked": N, "error": TEXT}. 0, -EAGAIN
 * (not yet), -EIO with the interpreter's reason, or -EPIPE when the interpreter broke off.
 */
static int read_forked(struct exec_interp *k, unsigned index, struct diag *reterr)
{
        char msg[CONTROL_MAX];
        json_auto_t *v = NULL;
        pid_t pid;
        ssize_t n = recv_control(k->ctl_fd, msg, sizeof(msg), &pid);
        const char *error;

        if (n == -EAGAIN || n == -EINTR)
                return -EAGAIN;
        if (n > 0)
                v = json_loadb(msg, (size_t) n, 0, NULL);
        if (!v || json_integer_value(json_object_get(v, "forked")) != (json_int_t) index)
                return diag_set(reterr, -EPIPE,
                                "the session's interpreter died while it was being copied");
        error = json_string_value(json_object_get(v, "error"));
        if (error)
                return diag_set(reterr, -EIO, "the session's interpreter cannot be copied: %s",
                                error);
        return 0;
}

bool exec_interp_forkable(const struct exec_interp *k)
{
        return k && !k->remote;
}

int exec_interp_fork(struct exec_interp *k, struct exec_interp **ret, struct diag *reterr)
{
        _cleanup_(exec_interp_freep) struct exec_interp *copy = NULL;
        _cleanup_close_ int peer = -EBADF;
        usec_t deadline = now_usec() + FORK_TIMEOUT_USEC;
        bool answered = false, ready = false, copy_failed = false;
        int r, copy_error = 0;
        unsigned index;

        if (k->remote)
                return diag_set(reterr, -EOPNOTSUPP,
                                "a session on a remote backend cannot be forked yet");
        if (!exec_interp_alive(k))
                return diag_set(reterr, -ESRCH, "the session's interpreter is gone");
        index = __atomic_add_fetch(&k->box->forks, 1, __ATOMIC_ACQ_REL);
        copy = interp_new(k->box, index);
        if (!copy || asprintf(&copy->socket_path, "%s/rpc-%u.sock", k->box->staging.dir, index) < 0)
                return diag_set(reterr, -ENOMEM, "out of memory");
        copy->cells = k->cells;
        r = control_pair(&copy->ctl_fd, &peer);
        if (r < 0)
                return diag_set(reterr, r, "cannot create the control socket: %s", strerror(-r));
        r = send_fork(k, index, peer);
        peer = safe_close(peer);
        if (r < 0) {
                interp_kill(k);
                return diag_set(reterr, r, "the session's interpreter is gone: %s", strerror(-r));
        }

        /*
         * Both: the copy's ready and the interpreter's answer, which is always read (the next cell
         * would take it for a broken protocol), whatever the copy did.
         */
        while (!answered || !(ready || copy_failed)) {
                struct pollfd p[2] = {
                        {.fd = answered ? -1 : k->ctl_fd, .events = POLLIN},
                        {.fd = ready || copy_failed ? -1 : copy->ctl_fd, .events = POLLIN}};
                int n;

                if (now_usec() >= deadline) {
                        if (answered)
                                return diag_set(reterr, -ETIMEDOUT,
                                                "the copy of the session's interpreter did not "
                                                "start within %u s",
                                                (unsigned) (FORK_TIMEOUT_USEC / USEC_PER_SEC));
                        /* The interpreter is somewhere in a fork: not to be trusted with a cell. */
                        interp_kill(k);
                        return diag_set(reterr, -ETIMEDOUT,
                                        "the session's interpreter was not copied within %u s",
                                        (unsigned) (FORK_TIMEOUT_USEC / USEC_PER_SEC));
                }
                n = poll_until(p, 2, deadline);
                if (n < 0) {
                        /* Its answer would be left for the next cell to trip on. */
                        if (!answered)
                                interp_kill(k);
                        return diag_set(reterr, n, "poll: %s", strerror(-n));
                }
                if (n == 0)
                        continue;
                if (p[0].revents) {
                        r = read_forked(k, index, reterr);
                        if (r == -EPIPE)
                                interp_kill(k);
                        if (r < 0 && r != -EAGAIN)
                                return r;
                        answered = r == 0;
                }
                if (p[1].revents) {
                        char msg[CONTROL_MAX];
                        pid_t pid;
                        ssize_t l = recv_control(copy->ctl_fd, msg, sizeof(msg), &pid);

                        if (l == -EAGAIN || l == -EINTR)
                                continue;
                        copy_error = l > 0 ? take_ready(copy, msg, pid) : -EPROTO;
                        ready = copy_error >= 0;
                        copy_failed = !ready;
                }
        }
        if (copy_failed)
                return diag_set(reterr, copy_error,
                                "the copy of the session's interpreter did not start: %s",
                                copy_error == -EPROTO ? "it ended at once" : strerror(-copy_error));
        *ret = TAKE_PTR(copy);
        return 0;
}
