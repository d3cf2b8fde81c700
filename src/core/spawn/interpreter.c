/* SPDX-License-Identifier: MIT */
#include "core/spawn/interpreter.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
#include "basic/strv.h"
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
                .new_session = true, /* no controlling terminal: nothing ptc starts has one */
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
                /* Only a readable pipe is read: a read now would block on a silent child. */
                int n = fd_wait_readable(pipefd[0], end);
                ssize_t k;

                if (n == 0) {
                        (void) kill(pid, SIGKILL);
                        r = -ETIMEDOUT;
                        break;
                }
                if (n < 0) {
                        r = n;
                        (void) kill(pid, SIGKILL);
                        break;
                }
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

static char *pyvenv_value(const char *bin, const char *key);

/*
 * Could a script have written @path? Under an isolation that confines, a script writes its
 * working directory @cwd: what is there (a project venv, a PATH entry in the project) is never
 * run outside the sandbox, not even to ask its version, or a script could plant a program
 * that a later start runs unconfined.
 */
static bool script_could_write(const struct ptc_config *c, const char *cwd, const char *path)
{
        _cleanup_free_ char *real = NULL;

        if (c->isolation == PTC_ISOLATION_NONE || !cwd)
                return false;
        if (path_is_below(path, cwd))
                return true;
        real = realpath(path, NULL);
        return !real || path_is_below(real, cwd);
}

/* A project-mode candidate: exists, runs (or, when the script could have written it, its
 * pyvenv.cfg says so: see script_could_write()), >= 3.8. */
static char *try_env_candidate(const struct ptc_config *c, const char *cwd, const char *var)
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
                if (script_could_write(c, cwd, p) || script_could_write(c, cwd, prefix)) {
                        _cleanup_free_ char *v = pyvenv_value(p, "version");

                        if (!v)
                                v = pyvenv_value(p, "version_info");
                        return v && version_ok(v) ? TAKE_PTR(p) : NULL;
                }
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
        return interpreter_resolve_in(c, mode, NULL, ret, reterr);
}

int interpreter_resolve_in(const struct ptc_config *c, enum ptc_mode mode, const char *cwd,
                           char **ret, struct diag *reterr)
{
        _cleanup_free_ char *found = NULL;
        const char *want = c->python ? c->python : "python3";
        struct probe pr = {};
        int r;

        /* Strict mode's script works in a staging dir ptc makes, never in @cwd: nothing there
         * is its to write. (From "/", every shim was "below" it, and ran unresolved.) */
        if (mode != PTC_MODE_PROJECT)
                cwd = NULL;
        if (mode == PTC_MODE_PROJECT) {
                char *p = try_env_candidate(c, cwd, "VIRTUAL_ENV");
                if (!p)
                        p = try_env_candidate(c, cwd, "CONDA_PREFIX");
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
        /* A shim the script could have written runs inside the sandbox only, unresolved. */
        if (!is_script(found) || script_could_write(c, cwd, found)) {
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

/* ------------------------------------------------------------------------------------------ */
/* What the interpreter reads besides /usr                                                     */

/* A venv's pyvenv.cfg is a few lines; more is not one. */
#define PYVENV_CFG_MAX 4096

/* What a Python prefix holds that the interpreter reads: programs, library, a venv's config. */
static const char *const prefix_parts[] = {"bin", "lib", "lib64", "lib32", "pyvenv.cfg"};
/* What conda's packages read besides: certificates, terminfo and zoneinfo, their configs. */
static const char *const conda_parts[] = {"ssl", "share", "etc"};

/*
 * The prefix of the interpreter @bin (<prefix>/bin/python3 -> <prefix>) as a new string in
 * *ret, or NULL there when @bin has no two components to strip. 0 or -ENOMEM.
 */
static int prefix_of(const char *bin, char **ret)
{
        _cleanup_free_ char *prefix = strdup(bin);

        if (!prefix)
                return -ENOMEM;
        *ret = NULL;
        for (int up = 0; up < 2; up++) {
                char *slash = strrchr(prefix, '/');
                if (!slash)
                        return 0;
                *slash = 0;
        }
        *ret = TAKE_PTR(prefix);
        return 0;
}

static bool exists(const char *dir, const char *name)
{
        _cleanup_free_ char *p = path_join(dir, name);

        return p && access(p, F_OK) == 0;
}

/* A Python prefix: a venv (pyvenv.cfg) or an installation (lib/python3.X). */
static bool is_prefix(const char *dir)
{
        _cleanup_free_ char *lib = path_join(dir, "lib");
        DIR *d;
        struct dirent *de;
        bool found = false;

        if (exists(dir, "pyvenv.cfg"))
                return true;
        d = lib ? opendir(lib) : NULL;
        while (d && !found && (de = readdir(d)))
                found = strncmp(de->d_name, "python3", 7) == 0;
        if (d)
                closedir(d);
        return found;
}

static int add_tree(char ***l, const char *dir, const char *name)
{
        _cleanup_free_ char *p = path_join(dir, name);

        if (!p)
                return -ENOMEM;
        if (access(p, F_OK) < 0 || strv_contains(*l, p))
                return 0;
        return strv_extend(l, p);
}

/*
 * The parts of the prefix of @bin (<prefix>/bin/python3) that the interpreter reads, when
 * that is a Python prefix. Never the prefix whole: it may be a home directory (~/.local),
 * hold the working directory, or hold what the script has no business reading.
 */
static int add_prefix_of(char ***l, const char *bin)
{
        _cleanup_free_ char *prefix = NULL;
        int r = prefix_of(bin, &prefix);

        if (r < 0 || !prefix || !prefix[0] || strcmp(prefix, "/usr") == 0 || !is_prefix(prefix))
                return r;
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(prefix_parts); i++)
                r = add_tree(l, prefix, prefix_parts[i]);
        if (r >= 0 && exists(prefix, "conda-meta"))
                for (size_t i = 0; r >= 0 && i < ELEMENTSOF(conda_parts); i++)
                        r = add_tree(l, prefix, conda_parts[i]);
        return r;
}

/* The value of @key in the pyvenv.cfg of the venv whose interpreter is @bin, or NULL. */
static char *pyvenv_value(const char *bin, const char *key)
{
        _cleanup_free_ char *dir = NULL, *cfg = NULL;
        char buf[PYVENV_CFG_MAX + 1], *line, *save = NULL, *ret = NULL;
        size_t klen = strlen(key);
        ssize_t k;
        int fd;

        if (prefix_of(bin, &dir) < 0 || !dir)
                return NULL;
        cfg = path_join(dir, "pyvenv.cfg");
        /* Never blocks on a FIFO planted there, nor reads more than a config's worth. */
        fd = cfg ? open(cfg, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY) : -1;
        if (fd < 0)
                return NULL;
        k = read(fd, buf, PYVENV_CFG_MAX);
        close(fd);
        if (k <= 0)
                return NULL;
        buf[k] = 0;
        for (line = strtok_r(buf, "\n", &save); line && !ret; line = strtok_r(NULL, "\n", &save)) {
                size_t n = strcspn(line, " \t=");
                char *v;

                if (n != klen || strncmp(line, key, klen) != 0)
                        continue;
                v = line + n + strspn(line + n, " \t");
                if (*v != '=')
                        continue;
                v++;
                v += strspn(v, " \t");
                v[strcspn(v, "\r \t")] = 0;
                ret = strdup(v);
        }
        return ret;
}

/* The `home = <dir>` of the venv whose interpreter is @bin, as <dir>/python3, or NULL. */
static char *venv_home(const char *bin)
{
        _cleanup_free_ char *home = pyvenv_value(bin, "home");

        return home && home[0] == '/' ? path_join(home, "python3") : NULL;
}

int interpreter_trees(const char *python, const char *pythonpath, char ***ret)
{
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_free_ char *real = python ? realpath(python, NULL) : NULL;
        _cleanup_free_ char *home = python ? venv_home(python) : NULL;
        _cleanup_free_ char *home_real = home ? realpath(home, NULL) : NULL;
        const char *bins[] = {python, real, home, home_real};
        int r = 0;

        /* The venv (pyvenv.cfg beside bin/), the installation it runs, and the venv's base. */
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(bins); i++)
                if (bins[i] && bins[i][0] == '/')
                        r = add_prefix_of(&l, bins[i]);
        if (r >= 0 && pythonpath) {
                _cleanup_strv_free_ char **parts = NULL;

                r = strv_split(pythonpath, ":", &parts);
                for (char **s = parts; r >= 0 && s && *s; s++)
                        if ((*s)[0] == '/' && !strv_contains(l, *s))
                                r = strv_extend(&l, *s);
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(l);
        return 0;
}
