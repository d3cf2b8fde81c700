/* SPDX-License-Identifier: MIT */
#include "core/spawn/interpreter.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/fd-util.h"
#include "basic/log.h"
#include "basic/path-util.h"
#include "basic/time-util.h"
#include "core/spawn/spawn.h"

extern char **environ;

#define PROBE_TIMEOUT_MS 5000
#define PROBE_OUTPUT_MAX 8192

struct probe {
        char *executable; /* sys.executable */
        char *version;    /* "3.11.2" */
};

static void probe_release(struct probe *p)
{
        free(p->executable);
        free(p->version);
        *p = (struct probe){};
}

static char *cache_key(const char *path, const struct stat *st)
{
        char *k;

        if (asprintf(&k, "%s|%lld.%09ld|%lld", path, (long long) st->st_mtim.tv_sec,
                     st->st_mtim.tv_nsec, (long long) st->st_size) < 0)
                return NULL;
        return k;
}

static json_t *cache_load(void)
{
        _cleanup_free_ char *p = xdg_cache_path("ptc/interpreters.json");
        json_t *j;

        if (!p)
                return NULL;
        j = json_load_file(p, JSON_REJECT_DUPLICATES, NULL);
        if (j && !json_is_object(j)) {
                json_decref(j);
                return NULL;
        }
        return j;
}

static void cache_store(const char *key, const struct probe *pr)
{
        _cleanup_free_ char *p = xdg_cache_path("ptc/interpreters.json"), *dir = NULL, *text = NULL;
        json_auto_t *j = cache_load();
        char *slash;

        if (!p)
                return;
        if (!j)
                j = json_object();
        if (!j)
                return;
        /* Keep the file small: a machine has few interpreters. */
        if (json_object_size(j) > 64)
                json_object_clear(j);
        json_object_set_new(
                j, key,
                json_pack("{s:s, s:s}", "executable", pr->executable, "version", pr->version));
        dir = strdup(p);
        if (!dir)
                return;
        slash = strrchr(dir, '/');
        if (slash)
                *slash = 0;
        if (mkdir_p(dir, 0700) < 0)
                return;
        text = json_dumps(j, JSON_INDENT(1) | JSON_SORT_KEYS);
        /* A cache that cannot be written only costs the next run a probe. */
        if (text && write_file_atomic(p, text, strlen(text), 0600) < 0)
                log_debug("cannot write the interpreter cache '%s'", p);
}

static bool cache_lookup(const char *key, struct probe *ret)
{
        json_auto_t *j = cache_load();
        const char *e = NULL, *v = NULL;
        json_t *ent;

        if (!j)
                return false;
        ent = json_object_get(j, key);
        if (json_unpack(ent, "{s:s, s:s}", "executable", &e, "version", &v) < 0)
                return false;
        if (!is_executable_file(e))
                return false;
        ret->executable = strdup(e);
        ret->version = strdup(v);
        if (!ret->executable || !ret->version) {
                probe_release(ret);
                return false;
        }
        return true;
}

/* Run @path -c '...' and parse "executable\nversion\n". */
static int run_probe(const char *path, struct probe *ret)
{
        static const char code[] = "import sys; print(sys.executable); "
                                   "print('%d.%d.%d' % tuple(sys.version_info[:3]))";
        char *argv[] = {(char *) path, (char *) "-I", (char *) "-c", (char *) code, NULL};
        char buf[PROBE_OUTPUT_MAX];
        size_t len = 0;
        int pipefd[2], status = 0, r;
        pid_t pid;
        usec_t end = now_usec() + PROBE_TIMEOUT_MS * USEC_PER_MSEC;
        struct spawn_opts o = {
                .path = path,
                .argv = argv,
                .envp = environ,
                .stdin_fd = -1,
                .stderr_fd = -1,
                .die_with_parent = true,
        };
        char *nl;

        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        o.stdout_fd = pipefd[1];
        r = spawn_process(&o, &pid, NULL, NULL);
        safe_close(pipefd[1]);
        if (r < 0) {
                safe_close(pipefd[0]);
                return r;
        }
        for (;;) {
                struct pollfd p = {.fd = pipefd[0], .events = POLLIN};
                int ms = poll_timeout_ms(end), n;
                ssize_t k;

                if (ms == 0) {
                        (void) kill(pid, SIGKILL);
                        r = -ETIMEDOUT;
                        break;
                }
                n = poll(&p, 1, ms);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        (void) kill(pid, SIGKILL);
                        break;
                }
                if (n == 0)
                        continue; /* the deadline: a read now would block on a silent child */
                k = read(pipefd[0], buf + len, sizeof(buf) - 1 - len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                len += (size_t) k;
                if (len >= sizeof(buf) - 1)
                        break;
        }
        safe_close(pipefd[0]);
        (void) waitpid(pid, &status, 0);
        if (r < 0)
                return r;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return -ENOEXEC;
        buf[len] = 0;
        nl = strchr(buf, '\n');
        if (!nl)
                return -EBADMSG;
        *nl = 0;
        ret->executable = strdup(buf);
        ret->version = strndup(nl + 1, strcspn(nl + 1, "\n"));
        if (!ret->executable || !ret->version) {
                probe_release(ret);
                return -ENOMEM;
        }
        return 0;
}

static int probe_cached(const char *path, struct probe *ret)
{
        _cleanup_free_ char *key = NULL;
        struct stat st;
        int r;

        if (stat(path, &st) < 0)
                return -errno;
        key = cache_key(path, &st);
        if (!key)
                return -ENOMEM;
        if (cache_lookup(key, ret))
                return 0;
        r = run_probe(path, ret);
        if (r < 0)
                return r;
        cache_store(key, ret);
        return 0;
}

static bool is_script(const char *path)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        char m[2];

        return fd >= 0 && read(fd, m, 2) == 2 && m[0] == '#' && m[1] == '!';
}

static bool version_ok(const char *v)
{
        int major = 0, minor = 0;

        if (sscanf(v, "%d.%d", &major, &minor) != 2)
                return false;
        return major > 3 || (major == 3 && minor >= 8);
}

int interpreter_version(const char *path, char **ret)
{
        struct probe pr = {};
        int r;

        r = probe_cached(path, &pr);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(pr.version);
        probe_release(&pr);
        return 0;
}

/* A project-mode candidate: exists, runs, >= 3.8. */
static char *try_env_candidate(const char *var)
{
        static const char *const names[] = {"bin/python", "bin/python3"};
        const char *prefix = getenv(var);

        if (!prefix || prefix[0] != '/')
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                _cleanup_free_ char *p = path_join(prefix, names[i]);
                struct probe pr = {};
                bool ok;

                if (!p || !is_executable_file(p))
                        continue;
                /* The seed gives up on the first found-but-failing candidate. */
                ok = probe_cached(p, &pr) >= 0 && version_ok(pr.version);
                probe_release(&pr);
                return ok ? TAKE_PTR(p) : NULL;
        }
        return NULL;
}

int interpreter_resolve(const struct ptc_config *c, enum ptc_mode mode, char **ret,
                        struct diag *reterr)
{
        _cleanup_free_ char *found = NULL;
        const char *want = c->python ? c->python : "python3";
        struct probe pr = {};
        int r;

        if (mode == PTC_MODE_PROJECT) {
                char *p = try_env_candidate("VIRTUAL_ENV");
                if (!p)
                        p = try_env_candidate("CONDA_PREFIX");
                if (p) {
                        *ret = p;
                        return 0;
                }
        }

        found = find_in_path(want);
        if (!found)
                return diag_set(reterr, -ENOENT,
                                "Python interpreter '%s' not found on PATH (set "
                                "code_execution.python in the config)",
                                want);
        if (!is_script(found)) {
                *ret = TAKE_PTR(found);
                return 0;
        }
        /* A launcher shim: exec the binary it would have exec'd. */
        r = probe_cached(found, &pr);
        if (r < 0)
                return diag_set(reterr, r, "Python interpreter '%s' does not run: %s", found,
                                r == -ETIMEDOUT ? "no answer within 5 s" : strerror(-r));
        if (!is_executable_file(pr.executable)) {
                probe_release(&pr);
                *ret = TAKE_PTR(found);
                return 0;
        }
        *ret = TAKE_PTR(pr.executable);
        probe_release(&pr);
        return 0;
}
