/* SPDX-License-Identifier: MIT */
/*
 * The channel to ptc's agent on a target (channel.h, docs/remote.md): start the backend's
 * channel command, bootstrap the agent through the shell it opens there, ship the static
 * agent when that shell asks, and write whole frames to it from any thread. Writes are
 * serialized by the channel's lock and bounded in time, so a target that stops reading
 * cannot hang a thread.
 */

#include "core/channel/channel.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/fd-util.h"
#include "basic/path-util.h"
#include "basic/strv.h"
#include "core/paths/companion.h"
#include "core/remote/backend.h"
#include "core/spawn/spawn.h"

/* A write to the channel that makes no progress for this long breaks the stream. */
#define WRITE_STALL_MS 30000

/*
 * What the shell on the target is told: exec the agent. Nothing else is written until the
 * agent's hello arrives (or the shell asks for the agent): a shell reading commands from a
 * pipe may read ahead (dash does), and would swallow bytes meant for another reader.
 *
 * With a static agent to ship (ptc-agent beside ptc, paths/companion.h) the shell runs the
 * copy cached under the target's ~/.cache/ptc by the agent's SHA-256, and first asks for it
 * when it is not there: it prints SHIP_MARKER, the host sends exactly the agent's bytes,
 * `head -c` takes them into a temporary file that is renamed into place once complete. The
 * marker is split in the command ("ptc-send""-agent") so that a channel that echoes its
 * input (cat) never shows it. Without one, `ptc` must be on the target's PATH.
 */
#define AGENT_COMMAND "exec ptc agent\n"
#define SHIP_MARKER "ptc-send-agent\n"
#define SHIP_COMMAND                                                                       \
        "a=\"${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/ptc/agent-%s\"; "                     \
        "if [ ! -x \"$a\" ]; then "                                                        \
        "if [ \"$(uname -m)\" != '%s' ]; then "                                            \
        "echo \"the target is $(uname -m); this ptc's agent is for %s\" >&2; exit 1; fi; " \
        "mkdir -p \"${a%%/*}\" && echo ptc-send\"\"-agent && head -c %lld > \"$a.$$\" && " \
        "chmod 700 \"$a.$$\" && mv -f \"$a.$$\" \"$a\" || exit 1; fi; exec \"$a\" agent\n"

void remote_channel_init(struct remote_channel *c)
{
        *c = (struct remote_channel){
                .in_fd = -EBADF,
                .pid = -1,
                .pidfd = -EBADF,
                .out_fd = -EBADF,
                .err_fd = -EBADF,
        };
        pthread_mutex_init(&c->lock, NULL);
        frame_reader_init(&c->reader, FRAME_SIDE_HOST);
}

void remote_channel_done(struct remote_channel *c)
{
        c->in_fd = safe_close(c->in_fd);
        pthread_mutex_destroy(&c->lock);
}

int remote_channel_find_agent(struct remote_channel *c)
{
        char *dirs[COMPANION_DIRS];
        int k = 0;

        companion_dirs(dirs);
        for (size_t i = 0; i < COMPANION_DIRS && !c->agent_path; i++) {
                _cleanup_free_ char *path = NULL, *sum = NULL;
                _cleanup_close_ int fd = -EBADF;
                char hex[65] = "";
                struct stat st;
                ssize_t n;

                if (!dirs[i] || asprintf(&path, "%s/ptc-agent", dirs[i]) < 0 ||
                    asprintf(&sum, "%s/ptc-agent.sha256", dirs[i]) < 0) {
                        k = dirs[i] ? -ENOMEM : 0;
                        continue;
                }
                fd = open(sum, O_RDONLY | O_CLOEXEC);
                if (fd < 0 || stat(path, &st) < 0 || !S_ISREG(st.st_mode))
                        continue;
                n = read(fd, hex, 64);
                if (n != 64 || strspn(hex, "0123456789abcdef") != 64)
                        continue;
                memcpy(c->agent_hash, hex, sizeof(hex));
                c->agent_size = (uint64_t) st.st_size;
                c->agent_path = TAKE_PTR(path);
        }
        for (size_t i = 0; i < COMPANION_DIRS; i++)
                free(dirs[i]);
        return k;
}

int remote_channel_start(struct remote_channel *c, const struct backend *backend, char *const *envp,
                         const char *cwd, struct diag *reterr)
{
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_free_ char *path = NULL;
        int inp[2] = {-1, -1}, outp[2] = {-1, -1}, errp[2] = {-1, -1};
        struct spawn_opts so;
        int k;

        k = backend_channel_argv(backend, &argv);
        if (k < 0)
                return diag_set(reterr, k, "backend '%s': %s", backend->spec, strerror(-k));
        path = find_in_path(argv[0]);
        if (!path)
                return diag_set(reterr, -ENOENT,
                                "backend '%s': '%s' is not installed (not found on PATH)",
                                backend->spec, argv[0]);
        /*
         * The channel's stdin is a socket, not a pipe: a write to a channel that is gone is
         * an EPIPE (MSG_NOSIGNAL), never a SIGPIPE that would kill a host that did not ignore
         * it (a library host, ptc doctor).
         */
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, inp) < 0 ||
            pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
                k = -errno;
                goto fail;
        }
        so = (struct spawn_opts){
                .path = path,
                .argv = argv,
                .envp = envp,
                .cwd = cwd,
                .stdin_fd = inp[0],
                .stdout_fd = outp[1],
                .stderr_fd = errp[1],
                .new_session = true,
                .die_with_parent = true,
                .cgroup_fd = -1,
                .pass_fd = -1,
                .exec_fd = -1,
        };
        k = spawn_process(&so, &c->pid, &c->pidfd, reterr);
        if (k < 0)
                goto fail;
        safe_close(inp[0]);
        safe_close(outp[1]);
        safe_close(errp[1]);
        c->in_fd = inp[1];
        c->out_fd = outp[0];
        c->err_fd = errp[0];
        if (fd_set_nonblock(c->in_fd, true) < 0 || fd_set_nonblock(c->out_fd, true) < 0 ||
            fd_set_nonblock(c->err_fd, true) < 0)
                return diag_set(reterr, -errno, "cannot set up the channel's pipes: %m");
        return 0;
fail:
        for (size_t i = 0; i < 2; i++) {
                safe_close(inp[i]);
                safe_close(outp[i]);
                safe_close(errp[i]);
        }
        return diag_set(reterr, k, "backend '%s': cannot start '%s': %s", backend->spec, argv[0],
                        strerror(-k));
}

int remote_channel_bootstrap(struct remote_channel *c, struct diag *reterr)
{
        _cleanup_free_ char *text = NULL;
        struct utsname u;
        const char *cmd;

        if (c->agent_path) {
                if (uname(&u) < 0 || asprintf(&text, SHIP_COMMAND, c->agent_hash, u.machine,
                                              u.machine, (long long) c->agent_size) < 0)
                        return diag_set(reterr, -ENOMEM, "out of memory");
                frame_reader_watch(&c->reader, SHIP_MARKER);
        }
        cmd = text ?: AGENT_COMMAND;
        /*
         * A channel that died at once (ssh refused) fails this write or not, as the race
         * goes: either way its closing stdout says so, with its stderr.
         */
        (void) remote_channel_send(c, cmd, strlen(cmd));
        return 0;
}

bool remote_channel_wants_agent(const struct remote_channel *c)
{
        return c->agent_path && !c->agent_sent && c->reader.watch_seen;
}

int remote_channel_ship_agent(struct remote_channel *c, struct diag *reterr)
{
        _cleanup_close_ int fd = open(c->agent_path, O_RDONLY | O_CLOEXEC);
        _cleanup_buf_ struct buf chunk = BUF_INIT(FRAME_READ_SIZE);
        uint64_t left = c->agent_size;

        c->agent_sent = true;
        if (fd < 0)
                return diag_set(reterr, -errno, "cannot read the agent to ship, %s: %s",
                                c->agent_path, strerror(errno));
        if (buf_reserve(&chunk, FRAME_READ_SIZE) < 0)
                return diag_set(reterr, -ENOMEM, "out of memory");
        while (left > 0) {
                ssize_t n = read(fd, chunk.data, MIN(left, (uint64_t) FRAME_READ_SIZE));

                if (n <= 0)
                        return diag_set(reterr, n < 0 ? -errno : -EIO,
                                        "cannot read the agent to ship, %s: %s", c->agent_path,
                                        n < 0 ? strerror(errno) : "it is shorter than it was");
                if (remote_channel_send(c, chunk.data, (size_t) n) < 0)
                        return diag_set(reterr, -EPIPE,
                                        "cannot send the agent through the channel");
                left -= (uint64_t) n;
        }
        return 0;
}

int remote_channel_send(struct remote_channel *c, const void *data, size_t len)
{
        int k = -EPIPE;

        pthread_mutex_lock(&c->lock);
        if (c->in_fd >= 0 && !c->write_broken) {
                /* A socket: a channel that is gone is no SIGPIPE (remote_channel_start()). */
                k = write_all_stalling(c->in_fd, data, len, WRITE_STALL_MS, true);
                if (k < 0)
                        c->write_broken = true;
        }
        pthread_mutex_unlock(&c->lock);
        return k;
}

int remote_channel_send_json(struct remote_channel *c, enum frame_type type, const json_t *v)
{
        _cleanup_buf_ struct buf b = BUF_INIT(FRAME_HEADER_SIZE + FRAME_JSON_MAX);
        int k = frame_append_json(&b, type, v);

        return k < 0 ? k : remote_channel_send(c, b.data, b.len);
}

void remote_channel_close_input(struct remote_channel *c)
{
        pthread_mutex_lock(&c->lock);
        c->in_fd = safe_close(c->in_fd);
        pthread_mutex_unlock(&c->lock);
}

void remote_channel_kill(struct remote_channel *c)
{
        if (c->pid > 0 && !c->reaped)
                (void) kill(-c->pid, SIGKILL);
}

int remote_channel_read_err(struct remote_channel *c)
{
        char buf[4096];
        ssize_t n = read(c->err_fd, buf, sizeof(buf));

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return -EAGAIN;
        if (n <= 0)
                return 0;
        /* The start is what explains a failure; the rest is dropped. */
        n = MIN(n, (ssize_t) (sizeof(c->err_head) - c->err_len));
        memcpy(c->err_head + c->err_len, buf, (size_t) n);
        c->err_len += (size_t) n;
        return 1;
}

void remote_channel_reaped(struct remote_channel *c)
{
        c->reaped = true;
        /* Whatever the channel left holding its pipes goes with its session. */
        (void) kill(-c->pid, SIGKILL);
}

void remote_channel_close(struct remote_channel *c)
{
        remote_channel_close_input(c);
        if (c->pid > 0 && !c->reaped) {
                (void) kill(-c->pid, SIGKILL);
                (void) waitpid(c->pid, NULL, 0);
                c->reaped = true;
        }
        c->out_fd = safe_close(c->out_fd);
        c->err_fd = safe_close(c->err_fd);
        c->pidfd = safe_close(c->pidfd);
        frame_reader_release(&c->reader);
        free(TAKE_PTR(c->agent_path));
}
