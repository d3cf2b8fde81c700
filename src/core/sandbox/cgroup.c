/* SPDX-License-Identifier: MIT */
/*
 * A cgroup v2 leaf per confined run; see cgroup.h for what and why.
 *
 * Every file is reached relative to a directory fd, and every read is bounded: cgroupfs is the
 * kernel's, but the path to it comes from /proc texts, and a test stands a plain directory
 * tree in for it.
 */
#include "core/sandbox/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/log.h"
#include "basic/path-util.h"

#define CONTROL_FILE_MAX (64 * 1024) /* cgroup.procs of a big cgroup is the largest we read */
#define PROC_TEXT_MAX (1024 * 1024)  /* /proc/self/mountinfo on a machine with many mounts */
#define MAIN_LEAF "ptc-main"

static bool has_word(const char *text, const char *word)
{
        size_t n = strlen(word);

        for (const char *p = text; (p = strstr(p, word)); p += n)
                if ((p == text || strchr(" \n", p[-1])) && strchr(" \n", p[n]))
                        return true;
        return false;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. In place. */
static void unescape_octal(char *s)
{
        char *w = s;

        for (const char *r = s; *r; w++) {
                if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
                    r[3] >= '0' && r[3] <= '7') {
                        *w = (char) ((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
                        r += 4;
                } else
                        *w = *r++;
        }
        *w = '\0';
}

/*
 * The first cgroup2 mount in @mountinfo: its mount point and the root of the hierarchy it
 * shows (field 4). Returns 0, -ENOENT, or -ENOMEM.
 */
static int find_cgroup2_mount(const char *mountinfo, char **ret_mount, char **ret_root)
{
        for (const char *line = mountinfo; line && *line;) {
                const char *end = strchrnul(line, '\n');
                _cleanup_free_ char *l = strndup(line, (size_t) (end - line));
                char *fields[5], *sep, *save = NULL;
                size_t i;

                if (!l)
                        return -ENOMEM;
                line = *end ? end + 1 : end;
                sep = strstr(l, " - ");
                if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0)
                        continue;
                *sep = '\0';
                for (i = 0; i < ELEMENTSOF(fields); i++)
                        if (!(fields[i] = strtok_r(i ? NULL : l, " ", &save)))
                                break;
                if (i < ELEMENTSOF(fields))
                        continue;
                unescape_octal(fields[3]);
                unescape_octal(fields[4]);
                *ret_root = strdup(fields[3]);
                *ret_mount = strdup(fields[4]);
                if (!*ret_root || !*ret_mount) {
                        free(*ret_root);
                        free(*ret_mount);
                        return -ENOMEM;
                }
                return 0;
        }
        return -ENOENT;
}

/* The "0::<path>" line of /proc/self/cgroup. Returns 0, -ENOENT, or -ENOMEM. */
static int find_own_cgroup(const char *self_cgroup, char **ret)
{
        for (const char *line = self_cgroup; line && *line;) {
                const char *end = strchrnul(line, '\n');

                if (strncmp(line, "0::", 3) == 0) {
                        *ret = strndup(line + 3, (size_t) (end - line - 3));
                        return *ret ? 0 : -ENOMEM;
                }
                line = *end ? end + 1 : end;
        }
        return -ENOENT;
}

/* Which of memory and pids the control file @name of @dirfd names. */
static unsigned read_limits(int dirfd, const char *name)
{
        _cleanup_free_ char *text = NULL;
        unsigned r = 0;
        size_t n;

        if (read_file_at(dirfd, name, CONTROL_FILE_MAX, &text, &n) < 0)
                return 0;
        if (has_word(text, "memory"))
                r |= CGROUP_LIMIT_MEMORY;
        if (has_word(text, "pids"))
                r |= CGROUP_LIMIT_PIDS;
        return r;
}

static int enable_controllers(int dirfd, unsigned missing)
{
        int r = 0, k;

        /* One write each: the kernel fails a whole line for one refused controller. */
        if (missing & CGROUP_LIMIT_MEMORY) {
                k = write_string_at(dirfd, "cgroup.subtree_control", "+memory");
                r = r ?: k;
        }
        if (missing & CGROUP_LIMIT_PIDS) {
                k = write_string_at(dirfd, "cgroup.subtree_control", "+pids");
                r = r ?: k;
        }
        return r;
}

/* Move @self into @dirfd's leaf MAIN_LEAF, if it is the only process in @dirfd. */
static int move_self_to_leaf(int dirfd, pid_t self)
{
        _cleanup_free_ char *procs = NULL;
        _cleanup_close_ int leaf = -1;
        char pid[24];
        size_t n;
        int r;

        r = read_file_at(dirfd, "cgroup.procs", CONTROL_FILE_MAX, &procs, &n);
        if (r < 0)
                return r;
        snprintf(pid, sizeof(pid), "%d", (int) self);
        for (char *save = NULL, *t = strtok_r(procs, "\n", &save); t;
             t = strtok_r(NULL, "\n", &save))
                if (strcmp(t, pid) != 0)
                        return -EBUSY; /* not ours alone: leave it as it is */
        if (mkdirat(dirfd, MAIN_LEAF, 0755) < 0 && errno != EEXIST)
                return -errno;
        leaf = openat(dirfd, MAIN_LEAF, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (leaf < 0)
                return -errno;
        return write_string_at(leaf, "cgroup.procs", pid);
}

/*
 * The leaves of a ptc that died without cleaning up (SIGKILL, a crash): what still runs in
 * them is the remains of a confined run and is killed; empty ones are removed (a leaf whose
 * processes are still dying goes the next time). MAIN_LEAF goes too once no ptc is in it.
 */
static void prune_stale_leaves(int dirfd)
{
        _cleanup_close_ int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        struct dirent *de;

        if (!d)
                return;
        fd = -1; /* the DIR owns it */
        while ((de = readdir(d))) {
                _cleanup_close_ int leaf = -1;
                int pid, n = 0;
                unsigned seq;

                if (sscanf(de->d_name, "ptc-%d-%u%n", &pid, &seq, &n) != 2 ||
                    de->d_name[n] != '\0' || pid <= 0)
                        continue;
                if (kill((pid_t) pid, 0) == 0 || errno != ESRCH)
                        continue;
                leaf = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (leaf >= 0 && write_string_at(leaf, "cgroup.kill", "1") < 0)
                        log_debug("cgroup: cannot kill the remains in %s: %m", de->d_name);
                (void) unlinkat(dirfd, de->d_name, AT_REMOVEDIR);
        }
        closedir(d);
        (void) unlinkat(dirfd, MAIN_LEAF, AT_REMOVEDIR); /* EBUSY while a ptc is in it */
}

static void describe(struct cgroup_base *b, unsigned offered)
{
        static const char *const text[] = {
                [0] = "no memory or pids controller there: rlimits bound memory and processes",
                [CGROUP_LIMIT_MEMORY] = "memory.max (no pids controller: RLIMIT_NPROC bounds "
                                        "processes)",
                [CGROUP_LIMIT_PIDS] = "pids.max (no memory controller: RLIMIT_DATA bounds "
                                      "memory)",
                [CGROUP_LIMIT_MEMORY | CGROUP_LIMIT_PIDS] = "memory.max and pids.max",
        };

        snprintf(b->why, sizeof(b->why), "a leaf per run in %s, ended by cgroup.kill; %s%s",
                 b->path, text[b->limits],
                 offered & ~b->limits ? " (offered but not enabled: ptc shares its cgroup)" : "");
}

/* trusted.delegate (systemd >= 251 for Delegate=yes) or user.delegate is "1". */
static bool marked_delegated(int dirfd)
{
        static const char *const names[] = {"trusted.delegate", "user.delegate"};

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                char v[8];
                ssize_t n = fgetxattr(dirfd, names[i], v, sizeof(v));

                if (n == 1 && v[0] == '1')
                        return true;
        }
        return false;
}

int cgroup_base_prepare(const char *mountinfo, const char *self_cgroup, pid_t self, uid_t euid,
                        struct cgroup_base *ret)
{
        _cleanup_free_ char *mount = NULL, *root = NULL, *own = NULL, *dir = NULL;
        _cleanup_close_ int dirfd = -1;
        const char *rel;
        unsigned offered, enabled;
        int r;

        *ret = (struct cgroup_base){};
        r = find_cgroup2_mount(mountinfo, &mount, &root);
        if (r == -ENOENT) {
                snprintf(ret->why, sizeof(ret->why), "no cgroup v2 hierarchy is mounted");
                return 0;
        }
        r = r ?: find_own_cgroup(self_cgroup, &own);
        if (r == -ENOENT) {
                snprintf(ret->why, sizeof(ret->why), "ptc's cgroup v2 is unknown (no 0:: line)");
                return 0;
        }
        if (r < 0)
                return r;
        if (own[0] != '/' || strstr(own, " (deleted)") || strstr(own, "/..") ||
            !path_is_below(own, root)) {
                snprintf(ret->why, sizeof(ret->why),
                         "ptc's cgroup %.100s is not below the mounted %.100s", own, root);
                return 0;
        }
        rel = own + (strcmp(root, "/") == 0 ? 0 : strlen(root));
        dir = *rel && strcmp(rel, "/") != 0 ? path_join(mount, rel) : strdup(mount);
        if (!dir)
                return -ENOMEM;
        dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0 || faccessat(dirfd, "cgroup.controllers", R_OK, 0) < 0) {
                snprintf(ret->why, sizeof(ret->why), "cannot open ptc's cgroup %.200s: %s", dir,
                         strerror(errno));
                return 0;
        }
        if (faccessat(dirfd, ".", W_OK, AT_EACCESS) < 0) {
                snprintf(ret->why, sizeof(ret->why),
                         "ptc's cgroup %.200s is not delegated to it (not writable)", dir);
                return 0;
        }
        /*
         * Root may write every cgroup, but only its own root and a cgroup delegated to it
         * are its to use: elsewhere (sudo in a login session, a service without
         * Delegate=yes) the cgroup belongs to systemd. systemd >= 251 marks delegated ones.
         */
        if (euid == 0 && strcmp(rel, "/") != 0 && *rel && !marked_delegated(dirfd)) {
                snprintf(ret->why, sizeof(ret->why),
                         "ptc's cgroup %.150s is not delegated to it (root outside the root "
                         "cgroup needs the trusted.delegate xattr of systemd's Delegate=yes)",
                         dir);
                return 0;
        }

        offered = read_limits(dirfd, "cgroup.controllers");
        enabled = read_limits(dirfd, "cgroup.subtree_control") & offered;
        if (offered & ~enabled) {
                r = enable_controllers(dirfd, offered & ~enabled);
                /*
                 * "No internal processes": only a cgroup without processes may enable them.
                 * The true root is exempt and never answers EBUSY; the root of a cgroup
                 * namespace (a container: ptc may be its only process) is not.
                 */
                if (r == -EBUSY && move_self_to_leaf(dirfd, self) == 0)
                        (void) enable_controllers(dirfd, offered & ~enabled);
                enabled = read_limits(dirfd, "cgroup.subtree_control") & offered;
        }
        prune_stale_leaves(dirfd);
        ret->path = TAKE_PTR(dir);
        ret->limits = enabled;
        describe(ret, offered);
        return 0;
}

void cgroup_base_release(struct cgroup_base *b)
{
        free(b->path);
        b->path = NULL;
}

static struct cgroup_base the_base;
static pthread_once_t the_base_once = PTHREAD_ONCE_INIT;

static void find_the_base(void)
{
        _cleanup_free_ char *mountinfo = NULL, *self = NULL;
        size_t n;
        int r;

        r = read_file_at(AT_FDCWD, "/proc/self/mountinfo", PROC_TEXT_MAX, &mountinfo, &n);
        r = r ?: read_file_at(AT_FDCWD, "/proc/self/cgroup", PROC_TEXT_MAX, &self, &n);
        if (r < 0) {
                snprintf(the_base.why, sizeof(the_base.why), "cannot read /proc/self: %s",
                         strerror(-r));
                return;
        }
        if (cgroup_base_prepare(mountinfo, self, getpid(), geteuid(), &the_base) < 0)
                snprintf(the_base.why, sizeof(the_base.why), "out of memory");
        log_debug("cgroup: %s", the_base.why);
}

const struct cgroup_base *cgroup_base(void)
{
        (void) pthread_once(&the_base_once, find_the_base);
        return &the_base;
}

int run_cgroup_set_limits(int fd, unsigned limits, uint64_t memory_bytes, uint64_t pids)
{
        char num[24];
        int r;

        if ((limits & CGROUP_LIMIT_MEMORY) && memory_bytes) {
                snprintf(num, sizeof(num), "%llu", (unsigned long long) memory_bytes);
                r = write_string_at(fd, "memory.max", num);
                if (r < 0)
                        return r;
                /* Swap would let the run exceed memory.max (the file is missing without
                 * swap accounting); one OOM kill ends the whole run. */
                r = write_string_at(fd, "memory.swap.max", "0");
                if (r < 0 && r != -ENOENT)
                        return r;
                r = write_string_at(fd, "memory.oom.group", "1");
                if (r < 0 && r != -ENOENT)
                        return r;
        }
        if ((limits & CGROUP_LIMIT_PIDS) && pids) {
                snprintf(num, sizeof(num), "%llu", (unsigned long long) pids);
                r = write_string_at(fd, "pids.max", num);
                if (r < 0)
                        return r;
        }
        return 0;
}

int run_cgroup_create(const struct cgroup_base *b, uint64_t memory_bytes, uint64_t pids,
                      struct run_cgroup *ret, struct diag *reterr)
{
        static atomic_uint seq;
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -1;
        char name[64];
        int r;

        *ret = RUN_CGROUP_NULL;
        if (!b->path)
                return diag_set(reterr, -ENOENT, "no cgroup: %s", b->why);
        snprintf(name, sizeof(name), "ptc-%d-%u", (int) getpid(), atomic_fetch_add(&seq, 1));
        path = path_join(b->path, name);
        if (!path)
                return diag_set(reterr, -ENOMEM, "out of memory");
        if (mkdir(path, 0755) < 0)
                return diag_set(reterr, -errno, "cannot create the cgroup %s: %m", path);
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                r = diag_set(reterr, -errno, "cannot open the cgroup %s: %m", path);
                (void) rmdir(path);
                return r;
        }
        r = run_cgroup_set_limits(fd, b->limits, memory_bytes, pids);
        if (r < 0) {
                r = diag_set(reterr, r, "cannot set the limits of the cgroup %s: %s", path,
                             strerror(-r));
                (void) rmdir(path);
                return r;
        }
        *ret = (struct run_cgroup){.path = TAKE_PTR(path), .fd = TAKE_FD(fd)};
        return 0;
}

const struct run_cgroup *run_cgroup_try(uint64_t memory_bytes, uint64_t pids,
                                        struct run_cgroup *ret, struct diag *why)
{
        *ret = RUN_CGROUP_NULL;
        if (!cgroup_base()->path)
                return NULL;
        if (run_cgroup_create(cgroup_base(), memory_bytes, pids, ret, why) < 0)
                return NULL;
        return ret;
}

const struct run_cgroup *run_cgroup_start(uint64_t memory_bytes, uint64_t pids, const char *who,
                                          struct run_cgroup *ret)
{
        struct diag why = {};

        if (!run_cgroup_try(memory_bytes, pids, ret, &why) && why.message[0])
                log_warning("%s: running without a cgroup: %s", who, why.message);
        return ret->path ? ret : NULL;
}

/* Kernels before 5.14 have no cgroup.kill: SIGKILL each process listed. */
static void kill_listed(int fd)
{
        _cleanup_free_ char *procs = NULL;
        size_t n;

        if (read_file_at(fd, "cgroup.procs", CONTROL_FILE_MAX, &procs, &n) < 0)
                return;
        for (char *save = NULL, *t = strtok_r(procs, "\n", &save); t;
             t = strtok_r(NULL, "\n", &save)) {
                long pid = strtol(t, NULL, 10);

                if (pid > 1)
                        (void) kill((pid_t) pid, SIGKILL);
        }
}

/* Whether the kill was whole (cgroup.kill), not one round of the fallback. */
static bool kill_all(const struct run_cgroup *c)
{
        if (write_string_at(c->fd, "cgroup.kill", "1") != -ENOENT)
                return true;
        kill_listed(c->fd);
        return false;
}

void run_cgroup_kill(const struct run_cgroup *c)
{
        if (c->path)
                (void) kill_all(c);
}

/* "populated 0" in cgroup.events: the leaf and its descendants hold no process. */
static bool is_empty(int events_fd)
{
        char buf[512];
        ssize_t k = pread(events_fd, buf, sizeof(buf) - 1, 0);

        if (k < 0)
                return true; /* nothing to wait on: rmdir tells */
        buf[k] = '\0';
        return strstr(buf, "populated 0") != NULL;
}

int run_cgroup_destroy(struct run_cgroup *c, usec_t timeout)
{
        _cleanup_close_ int events = -1;
        usec_t deadline = now_usec() + timeout;
        bool whole;
        int r = 0;

        if (!c->path)
                return 0;
        whole = kill_all(c);
        events = openat(c->fd, "cgroup.events", O_RDONLY | O_CLOEXEC);
        while (events >= 0 && !is_empty(events)) {
                if (now_usec() >= deadline)
                        break;
                /* The kernel signals a change of cgroup.events with POLLPRI. */
                if (fd_wait(events, POLLPRI, deadline) < 0)
                        break;
                if (!whole)
                        kill_listed(c->fd); /* the fallback: forks since the last round */
        }
        if (rmdir(c->path) < 0) {
                r = -errno;
                log_warning("cannot remove the run's cgroup %s: %m", c->path);
        }
        safe_close(c->fd);
        free(c->path);
        *c = RUN_CGROUP_NULL;
        return r;
}
