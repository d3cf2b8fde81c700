/* SPDX-License-Identifier: MIT */
/*
 * The per-user server's socket and its client side (cli.h, docs/sessions.md): where the
 * socket is, connecting (and starting `ptc serve` when none runs), one JSON line each way.
 * `ptc serve` itself is cmd-serve.c.
 */

#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/log.h"
#include "basic/path-util.h"

/* How long a client waits for the server it started to listen. */
#define SERVE_START_MS 10000
/* serve.log past this size is moved to serve.log.old when a server starts. */
#define SERVE_LOG_MAX (1 << 20)

/* Ours alone: another user's directory (or a link to one) would see our requests. */
static int check_dir(const char *dir)
{
        struct stat st;

        if (lstat(dir, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077))
                return -EPERM;
        return 0;
}

int cli_serve_dir(char *buf, size_t n)
{
        int r = ptc_serve_dir_path(buf, n);

        if (r < 0)
                return r;
        if (mkdir(buf, 0700) < 0 && errno != EEXIST)
                return -errno;
        return check_dir(buf);
}

static int socket_address(struct sockaddr_un *sa, char *dir, size_t dirlen)
{
        int r = cli_serve_dir(dir, dirlen);

        if (r < 0) {
                log_error("the server's directory '%s' cannot be used: %s (it must be a "
                          "directory of this user's, mode 0700)",
                          dir, strerror(-r));
                return r;
        }
        *sa = (struct sockaddr_un){.sun_family = AF_UNIX};
        if ((size_t) snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/serve.sock", dir) >=
            sizeof(sa->sun_path)) {
                log_error("the server's socket path under '%s' is too long", dir);
                return -ENAMETOOLONG;
        }
        return 0;
}

static int try_connect(const struct sockaddr_un *sa)
{
        /* Non-blocking: a server that does not accept (stopped, its backlog full) is an
         * EAGAIN, not a wait without end. */
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

        if (fd < 0)
                return -errno;
        if (connect(fd, (const struct sockaddr *) sa, sizeof(*sa)) < 0 ||
            fd_set_nonblock(fd, false) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

/*
 * Start `ptc serve` detached from us (its own session, reparented to init) and wait until
 * it listens: it writes "ok" on the pipe then, or why it could not, and closes it.
 */
static int start_server(const char *dir, const char *config)
{
        char logpath[PATH_MAX + 16], fdtext[16], said[512];
        int p[2], r = 0;
        size_t got = 0;
        pid_t pid;

        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        (void) snprintf(logpath, sizeof(logpath), "%s/serve.log", dir);
        {
                /* Bounded: past SERVE_LOG_MAX the log starts again, the last one kept. */
                char old[sizeof(logpath) + 4];
                struct stat st;

                (void) snprintf(old, sizeof(old), "%s.old", logpath);
                if (stat(logpath, &st) == 0 && st.st_size > SERVE_LOG_MAX)
                        (void) rename(logpath, old);
        }
        pid = fork();
        if (pid < 0) {
                r = -errno;
                close(p[0]);
                close(p[1]);
                return r;
        }
        if (pid == 0) {
                int null = open("/dev/null", O_RDWR | O_CLOEXEC);
                int logfd = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

                if (setsid() < 0 || null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
                    dup2(logfd >= 0 ? logfd : null, 2) < 0 || dup2(p[1], 3) < 0)
                        _exit(127);
                /* Nothing of the client's (a lock, a harness's pipe) may live on in it. */
                (void) syscall(SYS_close_range, 4u, ~0u, 0u);
                /* The server is not our child: its parent is gone before it runs. */
                pid = fork();
                if (pid != 0)
                        _exit(pid < 0 ? 127 : 0);
                (void) snprintf(fdtext, sizeof(fdtext), "%d", 3);
                if (config)
                        execl("/proc/self/exe", "ptc", "serve", "--ready-fd", fdtext, "--config",
                              config, (char *) NULL);
                else
                        execl("/proc/self/exe", "ptc", "serve", "--ready-fd", fdtext,
                              (char *) NULL);
                _exit(127);
        }
        close(p[1]);
        (void) waitpid(pid, NULL, 0);
        for (;;) {
                ssize_t n;
                int k = fd_wait_readable(p[0], now_usec() + SERVE_START_MS * USEC_PER_MSEC);

                if (k == 0) {
                        r = -ETIMEDOUT;
                        break;
                }
                if (k < 0)
                        break;
                n = read(p[0], said + got, sizeof(said) - 1 - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0 || (got += (size_t) n) >= sizeof(said) - 1)
                        break;
        }
        close(p[0]);
        said[got] = 0;
        if (r == -ETIMEDOUT) {
                log_error("ptc serve did not start within %d s (see %s)", SERVE_START_MS / 1000,
                          logpath);
                return r;
        }
        if (strcmp(said, "ok") != 0) {
                log_error("ptc serve could not start: %s (see %s)",
                          got ? said : "it exited without a word", logpath);
                return -EIO;
        }
        return 0;
}

/* Why the handshake with the listener at @sock (key in @dir) failed, in words. */
static void log_auth_error(int r, const char *dir, const char *sock)
{
        switch (r) {
        case -EKEYREJECTED:
                log_error("the process listening at '%s' did not prove it holds the key in "
                          "'%s/serve.key': it is not this user's ptc serve (nothing was sent "
                          "to it; stop it)",
                          sock, dir);
                break;
        case -EPROTO:
        case -ECONNRESET:
                log_error("the process listening at '%s' does not speak this ptc's protocol "
                          "(a ptc serve of another ptc version, or no ptc serve): nothing was "
                          "sent to it; stop it, or let an older ptc serve exit when idle",
                          sock);
                break;
        case -EPERM:
                log_error("the process listening at '%s' is another user's", sock);
                break;
        default:
                log_error("cannot authenticate ptc serve at '%s': %s", sock, strerror(-r));
        }
}

/*
 * The handshake on @fd with the key of @dir; on failure @fd is closed and, with @say, why is
 * printed.
 */
static int authenticate(int fd, const char *dir, const char *sock, bool say)
{
        uint8_t key[CLI_SERVE_KEY_SIZE];
        int r = cli_serve_key_load(dir, key);

        if (r < 0) {
                close(fd);
                if (say)
                        log_error("cannot read the key of ptc serve '%s/serve.key': %s (a "
                                  "script confined by ptc, or a command it started, cannot "
                                  "reach the server; docs/sessions.md)",
                                  dir,
                                  r == -EPERM ? "not this user's alone (mode 0600)" : strerror(-r));
                return r;
        }
        r = cli_serve_auth_client(fd, key);
        explicit_wipe(key, sizeof(key));
        if (r < 0) {
                close(fd);
                if (say)
                        log_auth_error(r, dir, sock);
        }
        return r;
}

int cli_serve_connect(bool start, const char *config, int *ret_fd)
{
        char dir[PATH_MAX];
        struct sockaddr_un sa;
        int fd, r;

        r = socket_address(&sa, dir, sizeof(dir));
        if (r < 0)
                return r;
        fd = try_connect(&sa);
        if (fd < 0 && start && (fd == -ENOENT || fd == -ECONNREFUSED)) {
                r = start_server(dir, config);
                if (r < 0)
                        return r;
                fd = try_connect(&sa);
        }
        if (fd < 0) {
                if (start || (fd != -ENOENT && fd != -ECONNREFUSED))
                        log_error("cannot reach ptc serve at '%s': %s", sa.sun_path, strerror(-fd));
                return fd;
        }
        r = authenticate(fd, dir, sa.sun_path, true);
        if (r < 0)
                return r;
        *ret_fd = fd;
        return 0;
}

int cli_serve_probe(int *ret_fd)
{
        char dir[PATH_MAX];
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int fd, r;

        r = ptc_serve_dir_path(dir, sizeof(dir));
        if (r >= 0)
                r = check_dir(dir);
        if (r < 0)
                return r;
        if ((size_t) snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/serve.sock", dir) >=
            sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        fd = try_connect(&sa);
        if (fd < 0)
                return fd;
        r = authenticate(fd, dir, sa.sun_path, false);
        if (r < 0)
                return r;
        *ret_fd = fd;
        return 0;
}

/* The shell's bookkeeping, which no script's result depends on. */
static bool env_is_volatile(const char *entry)
{
        static const char *const names[] = {"_=", "PWD=", "OLDPWD=", "SHLVL="};

        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (strncmp(entry, names[i], strlen(names[i])) == 0)
                        return true;
        return false;
}

static int compare_strings(const void *a, const void *b)
{
        return strcmp(*(char *const *) a, *(char *const *) b);
}

int cli_serve_fingerprint(ptc_engine *e, char **ret)
{
        static const char *const engine_keys[] = {"mode", "isolation", "code_execution.backend",
                                                  "code_execution.remote_cwd", "python"};
        /* A config file is small; with a bigger one no run matches. */
        static const size_t config_max = 1u << 20;
        _cleanup_free_ char *config_file = NULL, *cwd = NULL, *text = NULL;
        _cleanup_free_ const char **env = NULL;
        json_auto_t *fp = NULL, *envs = NULL;
        struct stat exe;
        size_t n = 0, len = 0;
        char id[96];
        FILE *f;

        if (stat("/proc/self/exe", &exe) < 0)
                return -errno;
        if (ptc_engine_get(e, "config_file", &config_file, NULL) < 0 ||
            ptc_engine_get(e, "cwd", &cwd, NULL) < 0)
                return -ENOMEM;
        for (char **v = environ; *v; v++)
                n++;
        env = calloc(n + 1, sizeof(*env));
        envs = json_array();
        if (!env || !envs)
                return -ENOMEM;
        n = 0;
        for (char **v = environ; *v; v++)
                if (!env_is_volatile(*v))
                        env[n++] = *v;
        qsort(env, n, sizeof(*env), compare_strings);
        for (size_t i = 0; i < n; i++)
                if (json_array_append_new(envs, json_stringn_nocheck(env[i], strlen(env[i]))) < 0)
                        return -ENOMEM;
        f = config_file[0] ? fopen(config_file, "re") : NULL;
        if (f) {
                text = malloc(config_max + 1);
                len = text ? fread(text, 1, config_max + 1, f) : 0;
                (void) fclose(f);
                if (!text)
                        return -ENOMEM;
                if (len > config_max)
                        return -EFBIG; /* no run matches: each runs where it is asked */
        }
        (void) snprintf(id, sizeof(id), "%llu:%llu:%lld.%09ld:%lld",
                        (unsigned long long) exe.st_dev, (unsigned long long) exe.st_ino,
                        (long long) exe.st_mtim.tv_sec, exe.st_mtim.tv_nsec,
                        (long long) exe.st_size);
        fp = json_pack("{s:s, s:s, s:s%, s:s, s:O}", "exe", id, "config_file", config_file,
                       "config", text ? text : "", text ? len : 0, "cwd", cwd, "env", envs);
        if (!fp)
                return -ENOMEM;
        /* The options of the engine's that a run cannot change, as they are in effect. */
        for (size_t i = 0; i < ELEMENTSOF(engine_keys); i++) {
                _cleanup_free_ char *v = NULL;

                if (ptc_engine_get(e, engine_keys[i], &v, NULL) < 0 ||
                    json_object_set_new(fp, engine_keys[i], json_string(v)) < 0)
                        return -ENOMEM;
        }
        *ret = json_dumps(fp, JSON_COMPACT | JSON_SORT_KEYS);
        return *ret ? 0 : -ENOMEM;
}

int cli_serve_send(int fd, json_t *msg)
{
        char *text = json_dumps(msg, JSON_COMPACT);
        size_t n, off = 0;
        int r = 0;

        if (!text)
                return -ENOMEM;
        n = strlen(text);
        text[n] = '\n'; /* json_dumps' NUL becomes the line's end */
        while (off <= n) {
                ssize_t k = send(fd, text + off, n + 1 - off, MSG_NOSIGNAL);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        r = -errno;
                        break;
                }
                off += (size_t) k;
        }
        free(text);
        return r;
}

int cli_serve_read_line(int fd, size_t max, char **ret)
{
        size_t len = 0, cap = 4096;
        char *buf = malloc(cap);

        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t k;
                char *nl;

                if (len + 1 >= cap) {
                        char *b;

                        if (cap >= max) {
                                free(buf);
                                return -EMSGSIZE;
                        }
                        cap = cap * 2 > max ? max : cap * 2;
                        b = realloc(buf, cap);
                        if (!b) {
                                free(buf);
                                return -ENOMEM;
                        }
                        buf = b;
                }
                k = read(fd, buf + len, cap - 1 - len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        int r = k < 0 ? -errno : -ECONNRESET;
                        free(buf);
                        return r;
                }
                nl = memchr(buf + len, '\n', (size_t) k);
                len += (size_t) k;
                if (nl) {
                        *nl = 0;
                        *ret = buf;
                        return 0;
                }
        }
}
