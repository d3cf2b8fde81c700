/* SPDX-License-Identifier: MIT */
/*
 * The sandbox's file-system plan, made in ptc before the clone (sandbox-plan.h says what it
 * guarantees; docs/isolation.md, "The mount plan", the same for users).
 */
#include "core/sandbox/sandbox-plan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/path-util.h"
#include "basic/strv.h"

static inline bool streq(const char *a, const char *b)
{
        return strcmp(a, b) == 0;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir);

static const char *inside_of(const struct sandbox_mount *m)
{
        return m->target + strlen(SANDBOX_BASE);
}

void sandbox_plan_release(struct sandbox_plan *p)
{
        for (size_t i = 0; i < p->n; i++) {
                free(p->m[i].src);
                free(p->m[i].target);
                free(p->m[i].opts);
        }
        free(p->m);
        strv_free(p->ll_ro);
        strv_free(p->ll_rw);
        strv_free(p->ll_list);
        seccomp_program_release(&p->seccomp);
        p->userns_fd = safe_close(p->userns_fd);
        *p = SANDBOX_PLAN_NULL;
}

/* The entry at @inside, or -1. */
static ssize_t plan_find(const struct sandbox_plan *p, const char *inside)
{
        for (size_t i = 0; i < p->n; i++)
                if (streq(inside_of(&p->m[i]), inside))
                        return (ssize_t) i;
        return -1;
}

/*
 * The entry whose mount shows @inside: the deepest one at @inside or above it (strictly
 * above with @strict), or -1 for the root's own tmpfs.
 */
static ssize_t plan_nearest(const struct sandbox_plan *p, const char *inside, bool strict)
{
        ssize_t best = -1;
        size_t best_len = 0;

        for (size_t i = 0; i < p->n; i++) {
                const char *t = inside_of(&p->m[i]);
                size_t n = strlen(t);

                if (strict && streq(t, inside))
                        continue;
                if (path_is_below(inside, t) && (best < 0 || n > best_len)) {
                        best = (ssize_t) i;
                        best_len = n;
                }
        }
        return best;
}

/* Is @inside shown by a bind of a host tree (rather than made in one of our own tmpfs)? */
static bool plan_in_bind(const struct sandbox_plan *p, const char *inside, bool strict)
{
        ssize_t i = plan_nearest(p, inside, strict);

        return i >= 0 && sandbox_mount_is_bind(&p->m[i]);
}

static int plan_add(struct sandbox_plan *p, enum sandbox_mount_kind kind, const char *src,
                    const char *inside, bool is_dir)
{
        struct sandbox_mount *m;
        char *target;

        /* An entry for the same inside path replaces nothing: the first one wins. */
        if (plan_find(p, inside) >= 0)
                return 0;
        if (asprintf(&target, "%s%s", SANDBOX_BASE, inside) < 0)
                return -ENOMEM;
        m = reallocarray(p->m, p->n + 1, sizeof(*m));
        if (!m) {
                free(target);
                return -ENOMEM;
        }
        p->m = m;
        m = &p->m[p->n];
        *m = (struct sandbox_mount){.kind = kind, .target = target, .is_dir = is_dir, .src_fd = -1};
        if (src && !(m->src = strdup(src))) {
                free(target);
                return -ENOMEM;
        }
        p->n++;
        return 0;
}

/* Bind @path read-only at the same place when it exists. */
static int plan_bind_existing(struct sandbox_plan *p, const char *path,
                              enum sandbox_mount_kind kind)
{
        struct stat st;

        if (!path || path[0] != '/' || stat(path, &st) < 0)
                return 0;
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode) && kind != MNT_DEV_NODE)
                return 0;
        return plan_add(p, kind, path, path, S_ISDIR(st.st_mode));
}

/*
 * Show the file @path (read-only, same place) by a copy when it is small and we can read it,
 * else by a bind; nothing when it does not exist.
 */
static int plan_copy_existing(struct sandbox_plan *p, const char *path)
{
        struct stat st;

        if (stat(path, &st) < 0)
                return 0;
        /*
         * Readable by the script? As root, only what "others" may read (inside, the file's
         * owner is unmapped); access() would say yes to everything. A bind shows the rest as
         * it is on the host.
         */
        if (!S_ISREG(st.st_mode) || st.st_size > SANDBOX_COPY_FILE_MAX ||
            p->copy_bytes + (size_t) st.st_size > SANDBOX_COPY_TOTAL_MAX ||
            (p->as_root ? !(st.st_mode & S_IROTH) : access(path, R_OK) < 0))
                return plan_bind_existing(p, path, MNT_BIND_RO);
        p->copy_bytes += (size_t) st.st_size;
        return plan_add(p, MNT_COPY, path, path, false);
}

/* Number of components: parents are mounted before their children. */
static size_t depth(const char *s)
{
        size_t d = 0;

        for (; *s; s++)
                if (*s == '/' && s[1] && s[1] != '/')
                        d++;
        return d;
}

static int cmp_entry(const void *a, const void *b)
{
        const struct sandbox_mount *x = a, *y = b;
        size_t dx = depth(x->target), dy = depth(y->target);

        if (dx != dy)
                return dx < dy ? -1 : 1;
        return strcmp(x->target, y->target);
}

/* Top-level names of the host root that are symlinks into /usr (merged /usr). */
static int plan_usr_links(struct sandbox_plan *p)
{
        static const char *const names[] = {"bin", "sbin", "lib", "lib32", "lib64", "libx32"};

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                char host[32], link[PATH_MAX];
                ssize_t k;
                int r;

                snprintf(host, sizeof(host), "/%s", names[i]);
                k = readlink(host, link, sizeof(link) - 1);
                if (k > 0) {
                        link[k] = 0;
                        r = plan_add(p, MNT_SYMLINK, link, host, false);
                } else
                        r = plan_bind_existing(p, host, MNT_BIND_RO);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The files of /etc a Python program reasonably needs; nothing with secrets. */
static int plan_etc(struct sandbox_plan *p, bool network)
{
        static const char *const names[] = {
                "ld.so.cache",  "ld.so.conf", "ld.so.conf.d",    "localtime",
                "timezone",     "passwd",     "group",           "nsswitch.conf",
                "hosts",        "host.conf",  "gai.conf",        "protocols",
                "services",     "ssl",        "ca-certificates", "ca-certificates.conf",
                "mime.types",   "os-release", "alternatives",    "debian_version",
                "matplotlibrc", "fonts",
        };
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;
        int r;

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                _cleanup_free_ char *path = path_join("/etc", names[i]);
                if (!path)
                        return -ENOMEM;
                r = plan_copy_existing(p, path);
                if (r < 0)
                        return r;
        }
        if (network) {
                r = plan_copy_existing(p, "/etc/resolv.conf");
                if (r < 0)
                        return r;
        }
        /* Debian's python3.X reads /etc/python3.X (sitecustomize). */
        d = opendir("/etc");
        while (d && (de = readdir(d))) {
                _cleanup_free_ char *path = NULL;
                if (strncmp(de->d_name, "python", 6) != 0)
                        continue;
                path = path_join("/etc", de->d_name);
                if (!path)
                        return -ENOMEM;
                r = plan_bind_existing(p, path, MNT_BIND_RO);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int plan_ll(char ***list, const char *path)
{
        return strv_extend(list, path);
}

#define IDMAP_HELPER_STACK (64 * 1024)

/*
 * The helper holds the user namespace until we kill it (SIGKILL, when its maps are written
 * and the namespace is open) or until the thread that made it dies. It shares our memory and
 * our thread's TLS, so it makes raw system calls only, none of which can fail in a way that
 * writes errno here; it starts with every signal blocked (no handler can run on its stack).
 * ptc is linked with -z now: no lazy binding in here.
 *
 * Not a pipe it waits to see closed: without CLONE_FILES it holds a copy of every fd ptc had
 * at the clone, the write ends of the helpers other threads have in flight among them, and
 * two concurrent starts then waited for each other's EOF forever.
 */
static int idmap_helper(void *arg)
{
        pid_t parent = *(const pid_t *) arg;

        (void) syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0UL, 0UL, 0UL);
        if (syscall(SYS_getppid) == parent)
                /* No fds and no timeout: sleeps until SIGKILL, which no mask holds back. */
                (void) syscall(SYS_ppoll, NULL, 0UL, NULL, NULL, 0UL);
        syscall(SYS_exit, 0);
        return 0;
}

/*
 * An unshared user namespace whose map sends on-disk uid 0 to the sandbox's host uid. The
 * helper that holds it while we write its maps shares our memory (CLONE_VM): no page tables
 * to copy and tear down, which made this one of the costliest steps of a root start.
 */
static int make_idmap_userns(struct diag *reterr)
{
        _cleanup_free_ char *stack = malloc(IDMAP_HELPER_STACK);
        pid_t self = getpid(), pid;
        sigset_t all, old;
        char path[64], map[64];
        int fd;

        if (!stack)
                return diag_set(reterr, -ENOMEM, "namespaces: out of memory");
        sigfillset(&all);
        (void) pthread_sigmask(SIG_SETMASK, &all, &old);
        pid = clone(idmap_helper, stack + IDMAP_HELPER_STACK, CLONE_NEWUSER | CLONE_VM | SIGCHLD,
                    &self);
        if (pid < 0) {
                int r = -errno;
                (void) pthread_sigmask(SIG_SETMASK, &old, NULL);
                return diag_set(reterr, r, "namespaces: cannot create a user namespace: %s",
                                strerror(-r));
        }
        (void) pthread_sigmask(SIG_SETMASK, &old, NULL);
        snprintf(map, sizeof(map), "0 %u 1\n", (unsigned) SANDBOX_HOST_UID);
        snprintf(path, sizeof(path), "/proc/%d/uid_map", (int) pid);
        fd = write_string_at(AT_FDCWD, path, map);
        if (fd >= 0) {
                snprintf(path, sizeof(path), "/proc/%d/gid_map", (int) pid);
                fd = write_string_at(AT_FDCWD, path, map);
        }
        if (fd >= 0) {
                snprintf(path, sizeof(path), "/proc/%d/ns/user", (int) pid);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        fd = -errno;
        }
        /* Our unreaped child: the pid is still its own. Reaped before its stack is freed. */
        (void) kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
        if (fd < 0)
                return diag_set(reterr, fd, "namespaces: cannot set up the id mapping: %s",
                                strerror(-fd));
        return fd;
}

/* ------------------------------------------------------------------------------------------ */
/* The user's trees: working dir, staging dir, interpreter trees, the interpreter itself       */

/*
 * May the script search the directory (or execute the file) @path, whose stat is @st, as it
 * is shown by a bind idmapped or not? Root's script runs as SANDBOX_HOST_UID with no groups
 * (an idmapped bind shows what root owns as the script's); unprivileged, it keeps ptc's
 * credentials, so the host's own answer holds.
 */
static bool script_may_exec(const struct sandbox_plan *p, const char *path, const struct stat *st,
                            bool idmapped)
{
        if (!p->as_root)
                return faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) == 0;
        if (st->st_uid == SANDBOX_HOST_UID || (idmapped && st->st_uid == 0))
                return st->st_mode & S_IXUSR;
        if (st->st_gid == SANDBOX_HOST_UID || (idmapped && st->st_gid == 0))
                return st->st_mode & S_IXGRP;
        return st->st_mode & S_IXOTH;
}

/*
 * The script must get through @path (a directory, or the interpreter) shown by the bind
 * @b. As root, a bind of the user's trees whose root-owned directory is closed to others
 * (a 0700 prefix) is idmapped, as the working directory is: under isolation none root's
 * script gets through, and read-only it can change nothing there.
 */
static int check_reach(struct sandbox_plan *p, size_t b, const char *path, const char *what,
                       const char *wanted, struct diag *reterr)
{
        struct sandbox_mount *m = &p->m[b];
        struct stat st;

        if (stat(path, &st) < 0)
                return diag_set(reterr, -errno, "cannot show %s '%s' to the script: '%s': %s", what,
                                wanted, path, strerror(errno));
        if (script_may_exec(p, path, &st, m->idmap))
                return 0;
        if (p->as_root && m->canonical && !m->idmap && p->userns_fd >= 0 && st.st_uid == 0 &&
            script_may_exec(p, path, &st, true)) {
                m->idmap = true;
                return 0;
        }
        return diag_set(reterr, -EACCES,
                        "cannot show %s '%s' to the script: '%s' (mode %04o, owner uid %u) is "
                        "not %s by the sandbox's uid%s",
                        what, wanted, path, (unsigned) (st.st_mode & 07777), (unsigned) st.st_uid,
                        S_ISDIR(st.st_mode) ? "searchable" : "executable",
                        p->as_root ? " (ptc runs as root, the script as an unprivileged uid)" : "");
}

enum reach {
        REACH_NONE, /* only recreate the symlinks on the way */
        REACH_DIR,  /* the script enters it (working and staging dirs) */
        REACH_EXEC, /* the script's interpreter */
};

/*
 * Follow @path on the host as the kernel will follow it inside, one component at a time:
 * a symlink met outside every bind is recreated in the root's tmpfs (inside a bind the
 * bind shows it), and with @want every directory met inside a bind must be searchable by
 * the script (check_reach()). Returns 0, or -errno with @what named in @reterr.
 */
static int plan_reach(struct sandbox_plan *p, const char *path, enum reach want, const char *what,
                      struct diag *reterr)
{
        char resolved[PATH_MAX] = "", rest[PATH_MAX], next[PATH_MAX];
        const char *r = rest;
        unsigned links = 0;
        ssize_t b;
        int k;

        if (path[0] != '/' || (size_t) snprintf(rest, sizeof(rest), "%s", path) >= sizeof(rest))
                return diag_set(reterr, -ENAMETOOLONG, "cannot show %s '%s' to the script: %s",
                                what, path, strerror(ENAMETOOLONG));
        while (*r) {
                const char *parent = resolved[0] ? resolved : "/";
                size_t n = strcspn(r, "/");
                char cand[PATH_MAX], text[PATH_MAX];
                struct stat st;
                ssize_t len;

                if (n == 0 || (n == 1 && r[0] == '.')) {
                        r += n ? n : 1;
                        continue;
                }
                if (n == 2 && r[0] == '.' && r[1] == '.') {
                        char *s = strrchr(resolved, '/');
                        if (s)
                                *s = 0;
                        r += n;
                        continue;
                }
                k = snprintf(cand, sizeof(cand), "%s/%.*s", resolved, (int) n, r);
                if (k < 0 || (size_t) k >= sizeof(cand))
                        return diag_set(reterr, -ENAMETOOLONG,
                                        "cannot show %s '%s' to the script: %s", what, path,
                                        strerror(ENAMETOOLONG));
                r += n;
                b = plan_nearest(p, parent, false);
                if (want != REACH_NONE && b >= 0 && sandbox_mount_is_bind(&p->m[b])) {
                        k = check_reach(p, (size_t) b, parent, what, path, reterr);
                        if (k < 0)
                                return k;
                }
                if (lstat(cand, &st) < 0)
                        return diag_set(reterr, -errno,
                                        "cannot show %s '%s' to the script: '%s': %s", what, path,
                                        cand, strerror(errno));
                if (!S_ISLNK(st.st_mode)) {
                        memcpy(resolved, cand, strlen(cand) + 1);
                        if (!S_ISDIR(st.st_mode) && r[strspn(r, "/")])
                                return diag_set(reterr, -ENOTDIR,
                                                "cannot show %s '%s' to the script: '%s': %s", what,
                                                path, cand, strerror(ENOTDIR));
                        continue;
                }
                len = readlink(cand, text, sizeof(text) - 1);
                if (len <= 0 || ++links > SANDBOX_SYMLINKS_MAX)
                        return diag_set(reterr, len < 0 ? -errno : -ELOOP,
                                        "cannot show %s '%s' to the script: '%s': %s", what, path,
                                        cand, strerror(len < 0 ? errno : ELOOP));
                text[len] = 0;
                /* Outside every bind: the same link in our tmpfs, resolved inside as here. */
                if (!plan_in_bind(p, cand, false) && plan_find(p, cand) < 0) {
                        k = plan_add(p, MNT_SYMLINK, text, cand, false);
                        if (k < 0)
                                return diag_set(reterr, k, "out of memory");
                }
                k = snprintf(next, sizeof(next), "%s/%s", text, r);
                if (k < 0 || (size_t) k >= sizeof(next))
                        return diag_set(reterr, -ENAMETOOLONG,
                                        "cannot show %s '%s' to the script: %s", what, path,
                                        strerror(ENAMETOOLONG));
                memcpy(rest, next, (size_t) k + 1);
                r = rest;
                if (text[0] == '/')
                        resolved[0] = 0;
        }
        if (want == REACH_NONE)
                return 0;
        if (!resolved[0])
                return diag_set(reterr, -EINVAL, "cannot show %s '/' to the script", what);
        b = plan_nearest(p, resolved, false);
        if (b < 0 || !sandbox_mount_is_bind(&p->m[b]))
                return diag_set(reterr, -ENOENT,
                                "cannot show %s '%s' to the script: '%s' is not in the sandbox",
                                what, path, resolved);
        return check_reach(p, (size_t) b, resolved, what, path, reterr);
}

/*
 * Bind @real, a canonical path (realpath(), resolved by the caller), read-only or read-write
 * at that same path. Returns 1 when planned, 0 when @real is NULL (its realpath() failed), does
 * not exist or is shown already (by this bind or by one above it, when @skip_shown), -errno
 * on error.
 */
static int plan_bind_tree(struct sandbox_plan *p, const char *real, enum sandbox_mount_kind kind,
                          bool skip_shown, struct diag *reterr)
{
        struct sandbox_mount *m;
        struct stat st;
        int r;

        if (!real || stat(real, &st) < 0)
                return 0;
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
                return 0;
        if (skip_shown && plan_in_bind(p, real, false))
                return 0;
        if (plan_find(p, real) >= 0)
                return 0;
        r = plan_add(p, kind, real, real, S_ISDIR(st.st_mode));
        if (r < 0)
                return diag_set(reterr, r, "out of memory");
        /* Not in the plan before: plan_add() appended it. */
        m = &p->m[p->n - 1];
        m->canonical = true;
        /*
         * Idmap what root owns and keeps from others (a 0700 project or prefix: under isolation
         * none root's script reads it); anything else keeps its owner. check_reach() may idmap
         * more of these when the way to a needed path is closed.
         */
        m->idmap = p->as_root && p->userns_fd >= 0 && st.st_uid == 0 &&
                   (kind == MNT_BIND_RW || !(st.st_mode & S_IXOTH) || !(st.st_mode & S_IROTH));
        return 1;
}

/* Is @real one of the mounts the sandbox makes itself, or above one (would hide it)? */
static bool hides_own_mount(const char *real)
{
        static const char *const own[] = {"/tmp", "/proc", "/dev", "/usr", "/etc"};

        for (size_t i = 0; i < ELEMENTSOF(own); i++)
                if (path_is_below(own[i], real))
                        return true;
        return false;
}

/*
 * The interpreter trees (read-only): not from inside the working directory (shown by its
 * bind; a bind from a place the script writes would let it choose what a later run sees),
 * not what /usr shows, never / or a tree above the sandbox's own mounts.
 */
static int plan_ro_trees(struct sandbox_plan *p, const struct sandbox_opts *o, const char *cwd_real,
                         struct diag *reterr)
{
        for (char *const *s = o->ro_paths; s && *s; s++) {
                _cleanup_free_ char *real = NULL;
                int r;

                if ((*s)[0] != '/' || path_is_below(*s, cwd_real) || path_is_below(*s, o->cwd))
                        continue;
                real = realpath(*s, NULL);
                if (!real || path_is_below(real, cwd_real) || path_is_below(real, "/usr") ||
                    path_is_below(real, "/proc") || path_is_below(real, "/dev") ||
                    hides_own_mount(real))
                        continue;
                r = plan_bind_tree(p, real, MNT_BIND_RO, false, reterr);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The Landlock paths of the namespaces layer, as the script sees them inside. */
static int plan_landlock_ns(struct sandbox_plan *p, const struct sandbox_opts *o)
{
        static const char *const ro[] = {"/usr", "/etc",   "/proc",  "/bin",   "/sbin",
                                         "/lib", "/lib64", "/lib32", "/libx32"};
        int r = 0;

        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(ro); i++)
                r = plan_ll(&p->ll_ro, ro[i]);
        /* The user's read-only trees as bound (never one inside the working directory). */
        for (size_t i = 0; r >= 0 && i < p->n; i++)
                if (p->m[i].canonical && p->m[i].kind == MNT_BIND_RO)
                        r = plan_ll(&p->ll_ro, inside_of(&p->m[i]));
        if (o->staging_dir && r >= 0)
                r = plan_ll(&p->ll_ro, o->staging_dir);
        r = r ?: plan_ll(&p->ll_rw, "/tmp");
        r = r ?: plan_ll(&p->ll_rw, "/dev");
        return r;
}

/* Entries of one directory given a rule of their own, at most: more fails the run. */
#define LL_ENTRIES_MAX 4096

/*
 * @path with its longest existing prefix resolved (realpath) and the rest as written: where
 * a directory that is not there yet would be made. New string or NULL (errno).
 */
static char *resolve_existing_prefix(const char *path)
{
        _cleanup_free_ char *head = strdup(path);

        if (!head)
                return NULL;
        for (;;) {
                _cleanup_free_ char *real = realpath(head, NULL);
                char *slash, *out;

                if (real) {
                        const char *rest = path + strlen(head);

                        if (asprintf(&out, "%s%s", streq(real, "/") && rest[0] ? "" : real, rest) <
                            0)
                                return NULL;
                        return out;
                }
                if (errno != ENOENT && errno != ENOTDIR)
                        return NULL;
                slash = strrchr(head, '/');
                if (!slash || slash == head) {
                        errno = ENOENT;
                        return NULL;
                }
                *slash = 0;
        }
}

/*
 * Read-only rules for the host's whole file system but @hidden (absolute, resolved), for the
 * script without the namespaces layer: Landlock only grants, so "/" gets listing alone, and
 * every entry along the way to @hidden but the one leading to it gets read and execute. An
 * entry made there later gets no rule (unreadable); symlinks get none (their targets have
 * their own); a way cut short (a part not there yet) ends it.
 */
static int plan_ll_ro_but(struct sandbox_plan *p, const char *hidden, struct diag *reterr)
{
        char dir[PATH_MAX] = "/";
        const char *s = hidden + 1;
        int r;

        r = plan_ll(&p->ll_list, "/");
        while (r >= 0 && *s) {
                _cleanup_(closedirp) DIR *d = NULL;
                size_t len = strcspn(s, "/"), n = 0, dl = strlen(dir);
                struct dirent *de;
                struct stat st;

                d = opendir(dir);
                if (!d)
                        /* Not there, or not ours to list: the script cannot read it either. */
                        return errno == ENOENT || errno == EACCES || errno == ENOTDIR
                                       ? 0
                                       : diag_set(reterr, -errno, "landlock: cannot list '%s': %m",
                                                  dir);
                while (r >= 0 && (errno = 0, de = readdir(d))) {
                        char path[PATH_MAX];

                        if (streq(de->d_name, ".") || streq(de->d_name, "..") ||
                            (strlen(de->d_name) == len && strncmp(de->d_name, s, len) == 0))
                                continue;
                        if (++n > LL_ENTRIES_MAX)
                                return diag_set(reterr, -E2BIG,
                                                "landlock: '%s' has more than %d entries: cannot "
                                                "keep ptc serve's directory '%s' from the script",
                                                dir, LL_ENTRIES_MAX, hidden);
                        if ((size_t) snprintf(path, sizeof(path), "%s%s%s", dir, dl > 1 ? "/" : "",
                                              de->d_name) >= sizeof(path))
                                continue; /* no path, no rule: unreadable */
                        if (lstat(path, &st) < 0 || S_ISLNK(st.st_mode))
                                continue;
                        r = plan_ll(&p->ll_ro, path);
                }
                if (r < 0)
                        return diag_set(reterr, r, "landlock: out of memory");
                if (!s[len])
                        break;
                if (dl + 1 + len >= sizeof(dir))
                        return 0;
                (void) snprintf(dir + dl, sizeof(dir) - dl, "%s%.*s", dl > 1 ? "/" : "", (int) len,
                                s);
                s += len + 1;
        }
        return r < 0 ? diag_set(reterr, r, "landlock: out of memory") : 0;
}

/*
 * ptc serve's directory, where a bind shows it (a working directory or a tree that holds
 * it): covered by an empty read-only tmpfs, since its key would let the script talk to the
 * server (docs/sessions.md). Made when missing (0700, as the CLI makes it), so that a server
 * started while the script runs is covered too.
 */
static int plan_hide_serve_dir(struct sandbox_plan *p)
{
        _cleanup_free_ char *where = NULL, *real = NULL;
        char dir[PATH_MAX];
        struct stat st;

        if (ptc_serve_dir_path(dir, sizeof(dir)) < 0)
                return 0;
        where = resolve_existing_prefix(dir);
        if (!where)
                return errno == ENOMEM ? -ENOMEM : 0;
        if (!plan_in_bind(p, where, true))
                return 0;
        (void) mkdir(dir, 0700);
        real = realpath(dir, NULL);
        /* Not there (its parent is missing): no server can be either. */
        if (!real || lstat(real, &st) < 0 || !S_ISDIR(st.st_mode) || !plan_in_bind(p, real, true))
                return 0;
        return plan_add(p, MNT_HIDE, NULL, real, true);
}

/*
 * Without the namespaces layer: the host's file system read-only but ptc serve's directory
 * (whose key would let the script talk to the server, docs/sessions.md).
 */
static int plan_ll_host(struct sandbox_plan *p, struct diag *reterr)
{
        _cleanup_free_ char *hidden = NULL;
        char dir[PATH_MAX];
        int r;

        r = ptc_serve_dir_path(dir, sizeof(dir));
        if (r >= 0) {
                hidden = resolve_existing_prefix(dir);
                if (!hidden)
                        r = -errno;
        }
        if (r < 0 || streq(hidden, "/"))
                /* No such directory can exist: nothing to keep from the script. */
                return plan_ll(&p->ll_ro, "/") < 0
                               ? diag_set(reterr, -ENOMEM, "landlock: out of memory")
                               : 0;
        return plan_ll_ro_but(p, hidden, reterr);
}

/* The mount namespace's plan: what the new root shows, where, and how. */
static int plan_mounts(struct sandbox_plan *p, const struct sandbox_opts *o,
                       enum sandbox_layer *failed, struct diag *reterr)
{
        _cleanup_free_ char *cwd_real = NULL, *staging_real = NULL, *exe_real = NULL;
        char opts[128];
        int r = 0;

        if (streq(o->cwd, "/")) {
                /* Never a reason to confine less: an error (a script's run refuses such a
                 * directory before it gets here, sandbox-cwd.h). */
                return diag_set(reterr, -EINVAL,
                                "namespaces: the working directory '/' cannot be confined "
                                "(choose a project directory with --cwd, or --remote-cwd on a "
                                "remote backend)");
        }
        cwd_real = realpath(o->cwd, NULL);
        if (!cwd_real)
                return diag_set(reterr, -errno,
                                "cannot show the working directory '%s' to the script: %m", o->cwd);
        if (streq(cwd_real, "/") || path_is_below(cwd_real, "/proc") ||
            path_is_below(cwd_real, "/dev"))
                return diag_set(reterr, -EINVAL,
                                "the working directory '%s' cannot be confined: it is the root "
                                "or a kernel file system (choose a project directory with "
                                "--cwd, or --remote-cwd on a remote backend)",
                                o->cwd);
        if (p->as_root) {
                p->userns_fd = make_idmap_userns(reterr);
                if (p->userns_fd < 0) {
                        /* clone(CLONE_NEWUSER) or its maps refused: the kernel's answer. */
                        if (sandbox_errno_is_refusal(-p->userns_fd))
                                *failed = SANDBOX_LAYER_NAMESPACES;
                        return p->userns_fd;
                }
        }
        /* The working directory first: a tree planned after it never covers it. */
        r = plan_bind_tree(p, cwd_real, MNT_BIND_RW, false, reterr);
        if (r >= 0 && o->staging_dir && !streq(o->staging_dir, o->cwd)) {
                staging_real = realpath(o->staging_dir, NULL);
                r = plan_bind_tree(p, staging_real, MNT_BIND_RO, false, reterr);
        }
        if (r < 0)
                return r;
        r = plan_bind_existing(p, "/usr", MNT_BIND_RO);
        r = r ?: plan_usr_links(p);
        r = r ?: plan_etc(p, o->network);
        if (r < 0)
                return diag_set(reterr, r, "cannot plan the file system: %s", strerror(-r));
        r = plan_ro_trees(p, o, cwd_real, reterr);
        if (r < 0)
                return r;
        /* The interpreter itself, when no tree shows it (a lone binary outside any prefix). */
        exe_real = realpath(o->path, NULL);
        if (!exe_real)
                return diag_set(reterr, -errno, "cannot execute '%s': %m", o->path);
        if (!path_is_below(exe_real, cwd_real)) {
                r = plan_bind_tree(p, exe_real, MNT_BIND_RO, true, reterr);
                if (r < 0)
                        return r;
        }
        snprintf(opts, sizeof(opts), "size=%llu,nr_inodes=%llu,mode=1777",
                 (unsigned long long) o->limits.tmp_bytes,
                 (unsigned long long) MAX(o->limits.tmp_bytes / 16384, 1024));
        r = plan_add(p, MNT_TMPFS, NULL, "/tmp", true);
        r = r ?: plan_add(p, MNT_PROC, NULL, "/proc", true);
        r = r ?: plan_add(p, MNT_TMPFS, NULL, "/dev/shm", true);
        for (size_t i = 0; r >= 0 && i < p->n; i++)
                if (p->m[i].kind == MNT_TMPFS && !p->m[i].opts && !(p->m[i].opts = strdup(opts)))
                        r = -ENOMEM;
        r = r ?: plan_bind_existing(p, "/dev/null", MNT_DEV_NODE);
        r = r ?: plan_bind_existing(p, "/dev/zero", MNT_DEV_NODE);
        r = r ?: plan_bind_existing(p, "/dev/full", MNT_DEV_NODE);
        r = r ?: plan_bind_existing(p, "/dev/random", MNT_DEV_NODE);
        r = r ?: plan_bind_existing(p, "/dev/urandom", MNT_DEV_NODE);
        r = r ?: plan_add(p, MNT_SYMLINK, "/proc/self/fd", "/dev/fd", false);
        r = r ?: plan_add(p, MNT_SYMLINK, "/proc/self/fd/0", "/dev/stdin", false);
        r = r ?: plan_add(p, MNT_SYMLINK, "/proc/self/fd/1", "/dev/stdout", false);
        r = r ?: plan_add(p, MNT_SYMLINK, "/proc/self/fd/2", "/dev/stderr", false);
        r = r ?: plan_hide_serve_dir(p);
        if (r < 0)
                return diag_set(reterr, r, "cannot plan the file system: %s", strerror(-r));

        /*
         * Every bind is known: now the paths as the script is given them, through whatever
         * symlinks they take, and whether it can get there.
         */
        r = plan_reach(p, o->cwd, REACH_DIR, "the working directory", reterr);
        if (r >= 0 && o->staging_dir)
                r = plan_reach(p, o->staging_dir, REACH_DIR, "the staging directory", reterr);
        if (r >= 0)
                r = plan_reach(p, o->path, REACH_EXEC, "the interpreter", reterr);
        for (char *const *s = o->ro_paths; r >= 0 && s && *s; s++) {
                struct diag ignored = {};

                /* A tree that cannot be followed is only not there. */
                if ((*s)[0] == '/')
                        (void) plan_reach(p, *s, REACH_NONE, "a tree", &ignored);
        }
        if (r < 0)
                return r;

        qsort(p->m, p->n, sizeof(*p->m), cmp_entry);
        for (size_t i = 0; i < p->n; i++)
                p->m[i].in_host_tree = plan_in_bind(p, inside_of(&p->m[i]), true);
        if (!p->as_root) {
                snprintf(p->uid_map, sizeof(p->uid_map), "%u %u 1\n", (unsigned) p->uid,
                         (unsigned) getuid());
                snprintf(p->gid_map, sizeof(p->gid_map), "%u %u 1\n", (unsigned) p->gid,
                         (unsigned) getgid());
        } else {
                snprintf(p->uid_map, sizeof(p->uid_map), "%u %u 1\n", (unsigned) p->uid,
                         (unsigned) SANDBOX_HOST_UID);
                snprintf(p->gid_map, sizeof(p->gid_map), "%u %u 1\n", (unsigned) p->gid,
                         (unsigned) SANDBOX_HOST_UID);
        }
        return 0;
}

int sandbox_plan_build(struct sandbox_plan *p, const struct sandbox_opts *o,
                       enum sandbox_layer *ret_failed_layer, struct diag *reterr)
{
        bool ns = o->layers & (1u << SANDBOX_LAYER_NAMESPACES);
        enum sandbox_layer failed = _SANDBOX_LAYER_MAX;
        int r = 0;

        p->as_root = geteuid() == 0;
        p->uid = p->as_root ? SANDBOX_INSIDE_UID : getuid();
        p->gid = p->as_root ? SANDBOX_INSIDE_UID : getgid();

        if (ns) {
                r = plan_mounts(p, o, &failed, reterr);
                if (r < 0)
                        goto out;
        }
        if ((o->layers & (1u << SANDBOX_LAYER_LANDLOCK)) && o->landlock_abi >= 1) {
                if (ns)
                        r = plan_landlock_ns(p, o);
                else {
                        r = plan_ll_host(p, reterr);
                        if (r < 0)
                                goto out;
                        /* No private /tmp without namespaces: the host's is shared. */
                        r = plan_ll(&p->ll_rw, "/tmp");
                        r = r ?: plan_ll(&p->ll_rw, "/dev");
                        if (o->staging_dir && r >= 0)
                                r = plan_ll(&p->ll_rw, o->staging_dir);
                }
                r = r ?: plan_ll(&p->ll_rw, o->cwd);
                if (r < 0) {
                        r = diag_set(reterr, r, "landlock: out of memory");
                        goto out;
                }
        }
        if (o->layers & (1u << SANDBOX_LAYER_SECCOMP)) {
                struct seccomp_policy_opts so = {.allow_inet = o->network};

                r = seccomp_policy_build(&so, &p->seccomp, reterr);
                /* libseccomp refusing this architecture is the environment's answer. */
                if (r == -EOPNOTSUPP || r == -EINVAL || r == -ENOSYS)
                        failed = SANDBOX_LAYER_SECCOMP;
                if (r < 0)
                        goto out;
        }
        return 0;
out:
        if (ret_failed_layer)
                *ret_failed_layer = failed;
        return r;
}
