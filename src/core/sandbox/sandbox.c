/* SPDX-License-Identifier: MIT */
#include "core/sandbox/sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/sched.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/log.h"
#include "basic/path-util.h"
#include "basic/process-util.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "core/sandbox/landlock.h"
#include "core/sandbox/seccomp-policy.h"

/* The new mount API; the Debian 12 headers have the numbers but not all constants. */
#ifndef OPEN_TREE_CLONE
#        define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#        define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#        define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef AT_RECURSIVE
#        define AT_RECURSIVE 0x8000
#endif
#define SB_MOUNT_ATTR_RDONLY 0x00000001
#define SB_MOUNT_ATTR_NOSUID 0x00000002
#define SB_MOUNT_ATTR_NODEV 0x00000004
#define SB_MOUNT_ATTR_IDMAP 0x00100000

struct sb_mount_attr {
        uint64_t attr_set;
        uint64_t attr_clr;
        uint64_t propagation;
        uint64_t userns_fd;
};

#ifndef CLOSE_RANGE_CLOEXEC
#        define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* Where the new root is assembled, in the child's own mount namespace (see build_root()). */
#define BASE "/tmp"
/* The new root's own tmpfs holds mount points, a few symlinks and the copied /etc files. */
#define ROOT_TMPFS_OPTS "size=8m,nr_inodes=4096,mode=0755"
/*
 * A small file of /etc is copied into the root's tmpfs rather than bind-mounted: a bind takes
 * two mount calls, which made the single files of /etc ~1.5 ms of a strict start. Up to this
 * size per file and COPY_TOTAL_MAX in all; a larger one is bound.
 */
#define COPY_FILE_MAX (256 * 1024)
#define COPY_TOTAL_MAX (2 * 1024 * 1024)
/* The child's setup takes milliseconds; one stuck in it is killed after this. */
#define SETUP_TIMEOUT_MS 10000

enum mnt_kind {
        MNT_BIND_RO,
        MNT_BIND_RW,
        MNT_DEV_NODE, /* bind, keeps device access */
        MNT_TMPFS,
        MNT_PROC,
        MNT_SYMLINK, /* src is the link text */
        MNT_COPY,    /* a small regular file, copied (read-only with the root) */
};

struct mnt_entry {
        enum mnt_kind kind;
        char *src;    /* host path (bind), link text (symlink) */
        char *target; /* BASE + inside path */
        char *opts;   /* tmpfs options */
        bool is_dir;
        bool idmap; /* bind through the idmap user namespace (root only) */
        int src_fd; /* opened in the child before the base tmpfs hides /tmp */
};

struct plan {
        struct mnt_entry *m;
        size_t n;
        char **ll_ro, **ll_rw;
        struct seccomp_program seccomp;
        int userns_fd;     /* idmap user namespace, root only, or -1 */
        size_t copy_bytes; /* planned MNT_COPY bytes, up to COPY_TOTAL_MAX */
        bool as_root;
        uid_t uid;
        gid_t gid;
        char uid_map[64], gid_map[64];
};

/* One step of the child's setup, reported to the parent when it fails. */
enum stage {
        ST_SIGNALS,
        ST_PRIVATE,
        ST_OPEN_SOURCE,
        ST_BASE_TMPFS,
        ST_MKPOINT,
        ST_BIND,
        ST_COPY,
        ST_IDMAP,
        ST_READONLY,
        ST_TMPFS,
        ST_PROC,
        ST_SYMLINK,
        ST_PIVOT,
        ST_ROOT_RO,
        ST_HOSTNAME,
        ST_DROP_IDS,
        ST_USERNS,
        ST_INIT,
        ST_FORK,
        ST_STDIO,
        ST_RLIMIT,
        ST_CHDIR,
        ST_NNP,
        ST_LANDLOCK,
        ST_SECCOMP,
        ST_EXEC,
};

struct child_error {
        int stage;
        int error;
        int index; /* mount entry, or -1 */
};

static const char *const layer_names[_SANDBOX_LAYER_MAX] = {
        [SANDBOX_LAYER_NAMESPACES] = "namespaces",
        [SANDBOX_LAYER_LANDLOCK] = "landlock",
        [SANDBOX_LAYER_SECCOMP] = "seccomp",
        [SANDBOX_LAYER_RLIMITS] = "rlimits",
};

const char *sandbox_layer_to_string(enum sandbox_layer l)
{
        return (unsigned) l < _SANDBOX_LAYER_MAX ? layer_names[l] : "?";
}

static inline bool streq(const char *a, const char *b)
{
        return strcmp(a, b) == 0;
}

static void closedirp(DIR **d)
{
        if (*d)
                closedir(*d);
}

/* ------------------------------------------------------------------------------------------ */
/* The plan: everything the child needs, allocated before fork                                 */

static void plan_release(struct plan *p)
{
        for (size_t i = 0; i < p->n; i++) {
                free(p->m[i].src);
                free(p->m[i].target);
                free(p->m[i].opts);
        }
        free(p->m);
        strv_free(p->ll_ro);
        strv_free(p->ll_rw);
        seccomp_program_release(&p->seccomp);
        p->userns_fd = safe_close(p->userns_fd);
}

static int plan_add(struct plan *p, enum mnt_kind kind, const char *src, const char *inside,
                    bool is_dir)
{
        struct mnt_entry *m;
        char *target;

        /* An entry for the same inside path replaces nothing: the first one wins. */
        for (size_t i = 0; i < p->n; i++)
                if (streq(p->m[i].target + strlen(BASE), inside))
                        return 0;
        if (asprintf(&target, "%s%s", BASE, inside) < 0)
                return -ENOMEM;
        m = reallocarray(p->m, p->n + 1, sizeof(*m));
        if (!m) {
                free(target);
                return -ENOMEM;
        }
        p->m = m;
        m = &p->m[p->n];
        *m = (struct mnt_entry){.kind = kind, .target = target, .is_dir = is_dir, .src_fd = -1};
        if (src && !(m->src = strdup(src))) {
                free(target);
                return -ENOMEM;
        }
        p->n++;
        return 0;
}

/* Bind @path read-only at the same place when it exists. */
static int plan_bind_existing(struct plan *p, const char *path, enum mnt_kind kind)
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
static int plan_copy_existing(struct plan *p, const char *path)
{
        struct stat st;

        if (stat(path, &st) < 0)
                return 0;
        /*
         * Readable by the script? As root, only what "others" may read (inside, the file's
         * owner is unmapped); access() would say yes to everything. A bind shows the rest as
         * it is on the host.
         */
        if (!S_ISREG(st.st_mode) || st.st_size > COPY_FILE_MAX ||
            p->copy_bytes + (size_t) st.st_size > COPY_TOTAL_MAX ||
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
        const struct mnt_entry *x = a, *y = b;
        size_t dx = depth(x->target), dy = depth(y->target);

        if (dx != dy)
                return dx < dy ? -1 : 1;
        return strcmp(x->target, y->target);
}

/* Top-level names of the host root that are symlinks into /usr (merged /usr). */
static int plan_usr_links(struct plan *p)
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
static int plan_etc(struct plan *p, bool network)
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

static int plan_build(struct plan *p, const struct sandbox_opts *o, enum sandbox_layer *failed,
                      struct diag *reterr)
{
        bool ns = o->layers & (1u << SANDBOX_LAYER_NAMESPACES);
        char opts[128];
        int r = 0;

        p->as_root = geteuid() == 0;
        p->uid = p->as_root ? SANDBOX_INSIDE_UID : getuid();
        p->gid = p->as_root ? SANDBOX_INSIDE_UID : getgid();

        if (ns) {
                struct stat st;

                *failed = SANDBOX_LAYER_NAMESPACES;

                if (streq(o->cwd, "/"))
                        return diag_set(reterr, -EINVAL,
                                        "namespaces: the working directory '/' cannot be "
                                        "confined (choose a project directory with --cwd)");
                /* The working directory first: read-only trees inside it stay on top. */
                r = r ?: plan_add(p, MNT_BIND_RW, o->cwd, o->cwd, true);
                if (o->staging_dir && !streq(o->staging_dir, o->cwd))
                        r = r ?: plan_add(p, MNT_BIND_RO, o->staging_dir, o->staging_dir, true);
                if (p->as_root && r >= 0) {
                        p->userns_fd = make_idmap_userns(reterr);
                        if (p->userns_fd < 0)
                                return p->userns_fd;
                        /* Idmap what root owns; anything else keeps its owner. */
                        for (size_t i = 0; i < p->n; i++)
                                if (stat(p->m[i].src, &st) == 0 && st.st_uid == 0)
                                        p->m[i].idmap = true;
                }
                r = r ?: plan_bind_existing(p, "/usr", MNT_BIND_RO);
                r = r ?: plan_usr_links(p);
                r = r ?: plan_etc(p, o->network);
                for (char *const *s = o->ro_paths; r >= 0 && s && *s; s++)
                        r = plan_bind_existing(p, *s, MNT_BIND_RO);
                snprintf(opts, sizeof(opts), "size=%llu,nr_inodes=%llu,mode=1777",
                         (unsigned long long) o->limits.tmp_bytes,
                         (unsigned long long) MAX(o->limits.tmp_bytes / 16384, 1024));
                r = r ?: plan_add(p, MNT_TMPFS, NULL, "/tmp", true);
                r = r ?: plan_add(p, MNT_PROC, NULL, "/proc", true);
                r = r ?: plan_add(p, MNT_TMPFS, NULL, "/dev/shm", true);
                for (size_t i = 0; r >= 0 && i < p->n; i++)
                        if (p->m[i].kind == MNT_TMPFS && !(p->m[i].opts = strdup(opts)))
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
                if (r < 0)
                        return diag_set(reterr, r, "namespaces: cannot plan the file system: %s",
                                        strerror(-r));
                qsort(p->m, p->n, sizeof(*p->m), cmp_entry);
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
        }

        if ((o->layers & (1u << SANDBOX_LAYER_LANDLOCK)) && o->landlock_abi >= 1) {
                *failed = SANDBOX_LAYER_LANDLOCK;
                if (ns) {
                        /* Paths as the script sees them, inside the new root. */
                        static const char *const ro[] = {"/usr",   "/etc",   "/proc",
                                                         "/bin",   "/sbin",  "/lib",
                                                         "/lib64", "/lib32", "/libx32"};
                        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(ro); i++)
                                r = plan_ll(&p->ll_ro, ro[i]);
                        for (char *const *s = o->ro_paths; r >= 0 && s && *s; s++)
                                r = plan_ll(&p->ll_ro, *s);
                        if (o->staging_dir && r >= 0)
                                r = plan_ll(&p->ll_ro, o->staging_dir);
                        r = r ?: plan_ll(&p->ll_rw, "/tmp");
                        r = r ?: plan_ll(&p->ll_rw, "/dev");
                } else {
                        /* No private /tmp without namespaces: the host's is shared. */
                        r = r ?: plan_ll(&p->ll_ro, "/");
                        r = r ?: plan_ll(&p->ll_rw, "/tmp");
                        r = r ?: plan_ll(&p->ll_rw, "/dev");
                        if (o->staging_dir && r >= 0)
                                r = plan_ll(&p->ll_rw, o->staging_dir);
                }
                r = r ?: plan_ll(&p->ll_rw, o->cwd);
                if (r < 0)
                        return diag_set(reterr, r, "landlock: out of memory");
        }
        if (o->layers & (1u << SANDBOX_LAYER_SECCOMP)) {
                struct seccomp_policy_opts so = {.allow_inet = o->network};

                *failed = SANDBOX_LAYER_SECCOMP;
                r = seccomp_policy_build(&so, &p->seccomp, reterr);
                if (r < 0)
                        return r;
        }
        *failed = _SANDBOX_LAYER_MAX;
        return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The child: only system calls from here on (it was forked from a multi-threaded ptc)        */

_noreturn_ _no_sanitize_address_ static void fail(int errfd, int stage, int index)
{
        struct child_error e = {.stage = stage, .error = errno, .index = index};

        (void) !write(errfd, &e, sizeof(e));
        _exit(127);
}

static int mkdir_parents(char *path)
{
        for (char *s = path + 1; *s; s++) {
                if (*s != '/')
                        continue;
                *s = 0;
                if (mkdir(path, 0755) < 0 && errno != EEXIST) {
                        *s = '/';
                        return -1;
                }
                *s = '/';
        }
        return 0;
}

static int make_mount_point(struct mnt_entry *m)
{
        int fd;

        if (mkdir_parents(m->target) < 0)
                return -1;
        if (m->kind == MNT_SYMLINK || m->kind == MNT_COPY)
                return 0;
        if (m->is_dir || m->kind == MNT_TMPFS || m->kind == MNT_PROC)
                return mkdir(m->target, 0755) < 0 && errno != EEXIST ? -1 : 0;
        fd = open(m->target, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return errno == EEXIST ? 0 : -1;
        close(fd);
        return 0;
}

static int set_mount_attr(const char *path, uint64_t set, bool recursive)
{
        struct sb_mount_attr a = {.attr_set = set};

        return (int) syscall(SYS_mount_setattr, AT_FDCWD, path, recursive ? AT_RECURSIVE : 0, &a,
                             sizeof(a));
}

static void bind_entry(struct mnt_entry *m, int userns_fd, int errfd, int index)
{
        char src[64];
        bool ro = m->kind == MNT_BIND_RO;

        if (m->idmap && userns_fd >= 0) {
                struct sb_mount_attr a = {
                        .attr_set = SB_MOUNT_ATTR_IDMAP | SB_MOUNT_ATTR_NOSUID |
                                    SB_MOUNT_ATTR_NODEV | (ro ? SB_MOUNT_ATTR_RDONLY : 0),
                        .userns_fd = (uint64_t) userns_fd,
                };
                int t = (int) syscall(SYS_open_tree, m->src_fd, "",
                                      OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
                if (t < 0)
                        fail(errfd, ST_IDMAP, index);
                /* A file system without idmap support gets a plain bind below. */
                if (syscall(SYS_mount_setattr, t, "", AT_EMPTY_PATH, &a, sizeof(a)) == 0) {
                        if (syscall(SYS_move_mount, t, "", AT_FDCWD, m->target,
                                    MOVE_MOUNT_F_EMPTY_PATH) < 0)
                                fail(errfd, ST_IDMAP, index);
                        close(t);
                        return;
                }
                close(t);
        }
        snprintf(src, sizeof(src), "/proc/self/fd/%d", m->src_fd);
        if (mount(src, m->target, NULL, MS_BIND | MS_REC, NULL) < 0)
                fail(errfd, ST_BIND, index);
        if (set_mount_attr(m->target,
                           SB_MOUNT_ATTR_NOSUID |
                                   (m->kind == MNT_DEV_NODE ? 0 : SB_MOUNT_ATTR_NODEV) |
                                   (ro ? SB_MOUNT_ATTR_RDONLY : 0),
                           true) < 0)
                fail(errfd, ST_READONLY, index);
}

/*
 * Copy @m's source (opened O_RDONLY) to a new file at its target: 0 on success, 1 when the
 * target exists already (a bind of a parent directory shows the host's file there: never
 * write through it), 2 when the source is no longer a small regular file (the caller binds
 * it instead, on the empty file made here), -1 on error. The copy keeps the source's read
 * bits only.
 */
static int copy_entry(const struct mnt_entry *m)
{
        char buf[16384];
        struct stat st;
        size_t total = 0;
        ssize_t k;
        int fd, r = 0;

        fd = open(m->target, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return errno == EEXIST ? 1 : -1;
        if (fstat(m->src_fd, &st) < 0)
                r = -1;
        else if (!S_ISREG(st.st_mode) || st.st_size > COPY_FILE_MAX)
                r = 2;
        /* sendfile(), or read()/write() where the source's file system cannot splice. */
        while (r == 0 && (k = sendfile(fd, m->src_fd, NULL, COPY_FILE_MAX + 1 - total)) != 0) {
                if (k < 0 && (errno == EINVAL || errno == ENOSYS)) {
                        k = read(m->src_fd, buf, MIN(sizeof(buf), COPY_FILE_MAX + 1 - total));
                        if (k > 0 && write(fd, buf, (size_t) k) != k)
                                k = -1;
                        if (k == 0)
                                break;
                }
                if (k < 0 && errno != EINTR)
                        r = -1;
                else if (k > 0 && (total += (size_t) k) > COPY_FILE_MAX)
                        r = 2; /* it grew since: bind it rather than cut it */
        }
        if (r == 0 && fchmod(fd, st.st_mode & 0444) < 0)
                r = -1;
        close(fd);
        return r;
}

static void build_root(struct plan *p, int errfd)
{
        /* The modes we create are the modes we mean, whatever ptc's umask (our fs_struct). */
        umask(022);
        /* Nothing we mount may propagate back to the host. */
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                fail(errfd, ST_PRIVATE, -1);
        /* Sources first: the base tmpfs is about to hide the host's /tmp. */
        for (size_t i = 0; i < p->n; i++) {
                struct mnt_entry *m = &p->m[i];
                if (m->kind != MNT_BIND_RO && m->kind != MNT_BIND_RW && m->kind != MNT_DEV_NODE &&
                    m->kind != MNT_COPY)
                        continue;
                /* Never blocks on what became a FIFO, nor takes a terminal: copy_entry() checks. */
                m->src_fd = open(m->src,
                                 (m->kind == MNT_COPY ? O_RDONLY | O_NONBLOCK | O_NOCTTY : O_PATH) |
                                         O_CLOEXEC);
                if (m->src_fd < 0)
                        fail(errfd, ST_OPEN_SOURCE, (int) i);
        }
        /*
         * The new root is a tmpfs mounted on the host's /tmp (in this namespace only). After
         * pivot_root(".", ".") it is "/" and no longer covers anything.
         */
        if (mount("tmpfs", BASE, "tmpfs", MS_NOSUID | MS_NODEV, ROOT_TMPFS_OPTS) < 0)
                fail(errfd, ST_BASE_TMPFS, -1);
        for (size_t i = 0; i < p->n; i++) {
                struct mnt_entry *m = &p->m[i];

                if (make_mount_point(m) < 0)
                        fail(errfd, ST_MKPOINT, (int) i);
                switch (m->kind) {
                case MNT_BIND_RO:
                case MNT_BIND_RW:
                case MNT_DEV_NODE:
                        bind_entry(m, p->userns_fd, errfd, (int) i);
                        break;
                case MNT_TMPFS:
                        if (mount("tmpfs", m->target, "tmpfs", MS_NOSUID | MS_NODEV, m->opts) < 0)
                                fail(errfd, ST_TMPFS, (int) i);
                        break;
                case MNT_PROC:
                        if (mount("proc", m->target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                                  NULL) < 0)
                                fail(errfd, ST_PROC, (int) i);
                        break;
                case MNT_SYMLINK:
                        if (symlink(m->src, m->target) < 0 && errno != EEXIST)
                                fail(errfd, ST_SYMLINK, (int) i);
                        break;
                case MNT_COPY: {
                        int r = copy_entry(m);

                        if (r < 0)
                                fail(errfd, ST_COPY, (int) i);
                        if (r == 2) {
                                m->kind = MNT_BIND_RO;
                                bind_entry(m, p->userns_fd, errfd, (int) i);
                        }
                        break;
                }
                }
        }
        for (size_t i = 0; i < p->n; i++)
                if (p->m[i].src_fd >= 0) {
                        close(p->m[i].src_fd);
                        p->m[i].src_fd = -1;
                }
        if (chdir(BASE) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 ||
            umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
                fail(errfd, ST_PIVOT, -1);
        if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) <
            0)
                fail(errfd, ST_ROOT_RO, -1);
        if (sethostname("ptc", 3) < 0)
                fail(errfd, ST_HOSTNAME, -1);
}

/*
 * Map our uid and gid in the user namespace we are in (the one line the kernel lets us
 * write). ptc is non-dumpable, and so are we after a uid change: our /proc/self files would
 * then be root's, so we flip the flag first.
 */
static int write_own_maps(const struct plan *p)
{
        if (prctl(PR_SET_DUMPABLE, 1) < 0 ||
            write_string_at(AT_FDCWD, "/proc/self/setgroups", "deny") < 0 ||
            write_string_at(AT_FDCWD, "/proc/self/uid_map", p->uid_map) < 0 ||
            write_string_at(AT_FDCWD, "/proc/self/gid_map", p->gid_map) < 0)
                return -1;
        return 0;
}

/*
 * Root only: become the sandbox uid, then enter a user namespace of our own. The raw system
 * calls, not glibc's wrappers: those run the set*id broadcast to every thread of the process,
 * under a lock another thread of ptc may have held when we were cloned. That was a real hang
 * (three runs started at once, one child waiting on that lock forever).
 */
static void drop_root(struct plan *p, int errfd)
{
        const long id = SANDBOX_HOST_UID;

        if (syscall(SYS_setgroups, 0, NULL) < 0 || syscall(SYS_setresgid, id, id, id) < 0 ||
            syscall(SYS_setresuid, id, id, id) < 0)
                fail(errfd, ST_DROP_IDS, -1);
        if (unshare(CLONE_NEWUSER) < 0 || write_own_maps(p) < 0)
                fail(errfd, ST_USERNS, -1);
}

_no_sanitize_address_ static void set_limit(int resource, uint64_t v, int errfd)
{
        struct rlimit rl = {.rlim_cur = (rlim_t) v, .rlim_max = (rlim_t) v};

        if (v && setrlimit(resource, &rl) < 0)
                fail(errfd, ST_RLIMIT, resource);
}

/* The script's own setup after fork: limits, NO_NEW_PRIVS, Landlock, seccomp, exec. */
/* Also on the script's CLONE_VM stack (run_init()): no ASan instrumentation. */
_noreturn_ _no_sanitize_address_ static void exec_script(const struct sandbox_opts *o,
                                                         struct plan *p, int errfd)
{
        const struct sandbox_limits *l = &o->limits;

        if (setsid() < 0)
                fail(errfd, ST_INIT, -1);
        if (o->layers & (1u << SANDBOX_LAYER_RLIMITS)) {
                set_limit(RLIMIT_DATA, l->data_bytes, errfd);
                set_limit(RLIMIT_AS, l->data_bytes * 4, errfd);
                set_limit(RLIMIT_NPROC, l->pids, errfd);
                set_limit(RLIMIT_NOFILE, l->nofile, errfd);
                set_limit(RLIMIT_FSIZE, l->fsize_bytes, errfd);
                set_limit(RLIMIT_CPU, l->cpu_seconds, errfd);
                {
                        struct rlimit zero = {0, 0};
                        if (setrlimit(RLIMIT_CORE, &zero) < 0)
                                fail(errfd, ST_RLIMIT, RLIMIT_CORE);
                }
        }
        if (chdir(o->cwd) < 0)
                fail(errfd, ST_CHDIR, -1);
        /* stdin again, from this root: the host's /dev/null would read as "/null" in here. */
        {
                int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
                if (fd < 0 || dup2(fd, 0) < 0)
                        fail(errfd, ST_STDIO, -1);
                close(fd);
        }
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                fail(errfd, ST_NNP, -1);
        if (p->ll_ro || p->ll_rw) {
                struct landlock_policy lp = {
                        .ro_paths = (const char *const *) p->ll_ro,
                        .rw_paths = (const char *const *) p->ll_rw,
                        .deny_tcp = !o->network,
                        .scope = true,
                };
                int r = landlock_apply(&lp, o->landlock_abi);
                if (r < 0) {
                        errno = -r;
                        fail(errfd, ST_LANDLOCK, -1);
                }
        }
        if (p->seccomp.filter) {
                int r = seccomp_program_load(&p->seccomp);
                if (r < 0) {
                        errno = -r;
                        fail(errfd, ST_SECCOMP, -1);
                }
        }
        /* The init's stop signals were blocked since the clone; the script starts with none. */
        {
                sigset_t none;
                sigemptyset(&none);
                (void) sigprocmask(SIG_SETMASK, &none, NULL);
        }
        execve(o->path, o->argv, o->envp);
        fail(errfd, ST_EXEC, -1);
}

/* Default dispositions; the init's signals (init_signal_set()) stay blocked until exec_script(). */
static void reset_signals(void)
{
        sigset_t init_set;

        init_signal_set(&init_set);
        (void) sigprocmask(SIG_SETMASK, &init_set, NULL);
        for (int s = 1; s < NSIG; s++)
                if (s != SIGKILL && s != SIGSTOP)
                        (void) signal(s, SIG_DFL);
}

static int setup_stdio(const struct sandbox_opts *o)
{
        int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        int out = o->stdout_fd, err = o->stderr_fd;

        if (devnull < 0)
                return -1;
        if (out < 3)
                out = fcntl(out, F_DUPFD_CLOEXEC, 3);
        if (err < 3)
                err = fcntl(err, F_DUPFD_CLOEXEC, 3);
        if (out < 0 || err < 0 || dup2(devnull, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
                return -1;
        return 0;
}

/*
 * SIGINT to the script's main thread (Python then unwinds and flushes), SIGTERM to every other
 * process of the namespace. Asked by SIGTERM (a terminal command's timeout), the script gets
 * SIGTERM too: a shell ignores a SIGINT when its foreground child died of something else.
 */
static void forward_stop(pid_t script, int asked_by)
{
        char buf[4096];
        int fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        long k;

        (void) syscall(SYS_tgkill, script, script, asked_by == SIGTERM ? SIGTERM : SIGINT);
        if (fd < 0)
                return;
        while ((k = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
                for (long off = 0; off < k;) {
                        struct dirent64 *de = (struct dirent64 *) (buf + off);
                        pid_t pid = 0;
                        const char *s = de->d_name;

                        off += de->d_reclen;
                        for (; *s >= '0' && *s <= '9' && pid < 1 << 22; s++)
                                pid = pid * 10 + (*s - '0');
                        if (*s == 0 && pid > 1 && pid != script)
                                (void) kill(pid, SIGTERM);
                }
        }
        close(fd);
}

#define SCRIPT_STACK (256 * 1024)

struct script_args {
        const struct sandbox_opts *o;
        struct plan *p;
        int errfd, status_fd;
};

/* The script's process until its exec, on the init's memory (the init waits: CLONE_VFORK). */
_no_sanitize_address_ static int script_main(void *arg)
{
        const struct script_args *a = arg;

        close(a->status_fd);
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                fail(a->errfd, ST_INIT, -1);
        exec_script(a->o, a->p, a->errfd);
}

/*
 * pid 1 of the sandbox: starts the script, reaps everything, forwards a stop once, and
 * reports the script's status when it is gone (the kernel then kills the rest). It waits for
 * its signals (blocked since the clone) with sigwaitinfo(): none is lost between a check and
 * a wait, as with a handler that sets a flag.
 */
_noreturn_ static void run_init(const struct sandbox_opts *o, struct plan *p, int errfd,
                                int status_fd)
{
        bool forwarded = false, script_gone = false;
        sigset_t wait_set;
        int status = 0;
        pid_t script;

        if (setsid() < 0)
                fail(errfd, ST_INIT, -1);
        /*
         * Before the script exists: our memory is a copy of ptc's, and drop_root() made us
         * dumpable again (the flag is the memory's, so the script has it until its exec).
         */
        (void) prctl(PR_SET_DUMPABLE, 0);
        if (p->userns_fd >= 0)
                close(p->userns_fd);
        /*
         * The script shares our memory until its exec (CLONE_VM | CLONE_VFORK; we wait):
         * copying the page tables of what is a clone of all of ptc cost 0.5-0.9 ms. Not
         * fork(): glibc's takes its malloc and stdio locks, maybe held at our clone; its stack
         * comes from mmap() for the same reason.
         */
        {
                struct script_args sa = {.o = o, .p = p, .errfd = errfd, .status_fd = status_fd};
                char *stack = mmap(NULL, SCRIPT_STACK, PROT_READ | PROT_WRITE,
                                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);

                if (stack == MAP_FAILED)
                        fail(errfd, ST_FORK, -1);
                script = clone(script_main, stack + SCRIPT_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD,
                               &sa);
                if (script < 0)
                        fail(errfd, ST_FORK, -1);
                (void) munmap(stack, SCRIPT_STACK);
        }
        /* The script's exec closes its copy of errfd; the parent then reads EOF. */
        close(errfd);
        init_signal_set(&wait_set);
        while (!script_gone) {
                siginfo_t si;
                pid_t pid;
                /* sigwaitinfo(), raw: we are a clone of a multi-threaded process. */
                int st, sig = (int) syscall(SYS_rt_sigtimedwait, &wait_set, &si, NULL,
                                            (size_t) (_NSIG / 8));

                if (sig < 0) {
                        if (errno == EINTR)
                                continue;
                        _exit(1); /* cannot wait: no report, ptc sees the script killed */
                }
                if (sig != SIGCHLD) {
                        if (!forwarded)
                                forward_stop(script, sig);
                        forwarded = true;
                        continue;
                }
                /* One SIGCHLD may stand for several exits. */
                while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
                        if (pid == script) {
                                status = st;
                                script_gone = true;
                        }
                if (pid < 0 && errno == ECHILD)
                        script_gone = true;
        }
        (void) !write(status_fd, &status, sizeof(status));
        _exit(0);
}

struct child_args {
        const struct sandbox_opts *o;
        struct plan *p;
        int errfd, syncfd, status_fd;
        int ptc_pidfd; /* self_pidfd() of ptc, or -errno */
        pid_t ptc;     /* getpid() of ptc */
};

/*
 * Did ptc die before our parent-death signal was armed? Outside a pid namespace getppid()
 * says. Inside (it is 0 there) ptc's pidfd does, whoever holds what; without one, the status
 * pipe's POLLERR (its read end is ptc's alone once every child has closed what it inherited,
 * which ours do first thing).
 */
static bool ptc_gone(const struct child_args *a, bool in_pid_namespace)
{
        struct pollfd pf = {.fd = a->status_fd, .events = 0};

        if (!in_pid_namespace)
                return getppid() != a->ptc;
        if (a->ptc_pidfd >= 0)
                return pidfd_exited(a->ptc_pidfd);
        return a->status_fd >= 0 && poll(&pf, 1, 0) > 0 && (pf.revents & (POLLERR | POLLHUP));
}

_noreturn_ static void child_main(struct child_args *a)
{
        const struct sandbox_opts *o = a->o;
        struct plan *p = a->p;
        bool ns = o->layers & (1u << SANDBOX_LAYER_NAMESPACES);
        char c;

        reset_signals();
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                fail(a->errfd, ST_SIGNALS, -1);
        if (ptc_gone(a, ns))
                _exit(127);
        if (setup_stdio(o) < 0)
                fail(a->errfd, ST_STDIO, -1);
        /*
         * We hold a copy of every fd ptc had at the clone, the pipes of other threads' starts
         * among them: close them now, not at exec (CLOEXEC), which the init never reaches, nor
         * after the setup, while a start that waits for EOF on one of them would wait for us.
         * Nothing of ptc's but 0-2 may cross exec, even fds leaked by a library.
         */
        {
                int keep[] = {0,           1, 2, a->errfd, a->syncfd, a->status_fd, a->ptc_pidfd,
                              p->userns_fd};

                if (close_all_fds_but(keep, ELEMENTSOF(keep)) < 0)
                        fail(a->errfd, ST_STDIO, -1);
        }
        /* The parent writes one byte when it is ready (it lives: ptc_gone() said so). */
        if (read(a->syncfd, &c, 1) != 1)
                _exit(127);
        close(a->syncfd);

        if (!ns)
                exec_script(o, p, a->errfd);

        if (!p->as_root) {
                /* Unprivileged, the user namespace came with the clone. */
                if (write_own_maps(p) < 0)
                        fail(a->errfd, ST_USERNS, -1);
                (void) prctl(PR_SET_DUMPABLE, 0);
        }
        build_root(p, a->errfd);
        if (p->as_root) {
                drop_root(p, a->errfd);
                /* A credential change clears the parent-death signal. */
                if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                        fail(a->errfd, ST_SIGNALS, -1);
                if (ptc_gone(a, ns))
                        _exit(127);
        }
        if (a->ptc_pidfd >= 0)
                close(a->ptc_pidfd); /* our copy; ptc keeps its own */
        run_init(o, p, a->errfd, a->status_fd);
}

/* Which layer a failed step belongs to (the namespace steps come first in enum stage). */
static enum sandbox_layer stage_layer(int stage)
{
        if (stage >= ST_SIGNALS && stage <= ST_FORK)
                return SANDBOX_LAYER_NAMESPACES;
        switch (stage) {
        case ST_RLIMIT:
                return SANDBOX_LAYER_RLIMITS;
        case ST_LANDLOCK:
                return SANDBOX_LAYER_LANDLOCK;
        case ST_SECCOMP:
                return SANDBOX_LAYER_SECCOMP;
        default:
                return _SANDBOX_LAYER_MAX;
        }
}

static const char *stage_text(int stage)
{
        static const char *const text[] = {
                [ST_SIGNALS] = "namespaces: cannot set up signals",
                [ST_PRIVATE] = "namespaces: cannot make the mount namespace private",
                [ST_OPEN_SOURCE] = "namespaces: cannot open",
                [ST_BASE_TMPFS] = "namespaces: cannot mount the root tmpfs",
                [ST_MKPOINT] = "namespaces: cannot create the mount point for",
                [ST_BIND] = "namespaces: cannot bind-mount",
                [ST_COPY] = "namespaces: cannot copy",
                [ST_IDMAP] = "namespaces: cannot idmap-mount",
                [ST_READONLY] = "namespaces: cannot set the mount flags of",
                [ST_TMPFS] = "namespaces: cannot mount a tmpfs on",
                [ST_PROC] = "namespaces: cannot mount a fresh /proc",
                [ST_SYMLINK] = "namespaces: cannot create the symlink",
                [ST_PIVOT] = "namespaces: cannot pivot into the new root",
                [ST_ROOT_RO] = "namespaces: cannot make the root read-only",
                [ST_HOSTNAME] = "namespaces: cannot set the host name",
                [ST_DROP_IDS] = "namespaces: cannot switch to the sandbox uid",
                [ST_USERNS] = "namespaces: cannot enter a user namespace",
                [ST_INIT] = "namespaces: cannot set up the init",
                [ST_FORK] = "namespaces: cannot fork the script",
                [ST_STDIO] = "cannot set up stdio",
                [ST_RLIMIT] = "rlimits: cannot set a resource limit",
                [ST_CHDIR] = "cannot change to the working directory",
                [ST_NNP] = "cannot set no_new_privs",
                [ST_LANDLOCK] = "landlock: cannot restrict the script",
                [ST_SECCOMP] = "seccomp: cannot install the filter",
                [ST_EXEC] = "cannot execute",
        };

        return stage >= 0 && (size_t) stage < ELEMENTSOF(text) && text[stage] ? text[stage]
                                                                              : "setup failed";
}

/* read() that gives up after @timeout_ms: the count, 0 at EOF, or -errno (-ETIMEDOUT). */
static ssize_t read_with_deadline(int fd, void *buf, size_t n, int timeout_ms)
{
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        usec_t end = now_usec() + (usec_t) timeout_ms * USEC_PER_MSEC;

        for (;;) {
                int r, timeout = poll_timeout_ms(end);
                ssize_t k;

                if (timeout == 0)
                        return -ETIMEDOUT;
                r = poll(&pf, 1, timeout);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return -errno;
                if (r == 0)
                        continue;
                k = read(fd, buf, n);
                if (k < 0 && errno == EINTR)
                        continue;
                return k < 0 ? -errno : k;
        }
}

int sandbox_spawn(const struct sandbox_opts *o, struct sandbox_proc *ret,
                  enum sandbox_layer *ret_failed_layer, struct diag *reterr)
{
        _cleanup_(plan_release) struct plan p = {.userns_fd = -1};
        bool ns = o->layers & (1u << SANDBOX_LAYER_NAMESPACES);
        int errp[2] = {-1, -1}, syncp[2] = {-1, -1}, statusp[2] = {-1, -1};
        struct clone_args ca = {.exit_signal = SIGCHLD};
        struct child_args a;
        enum sandbox_layer failed = _SANDBOX_LAYER_MAX;
        struct child_error ce;
        int pidfd = -1, r;
        pid_t pid;
        ssize_t k;

        r = plan_build(&p, o, &failed, reterr);
        if (r < 0)
                goto out;
        if (pipe2(errp, O_CLOEXEC) < 0 || pipe2(syncp, O_CLOEXEC) < 0 ||
            (ns && pipe2(statusp, O_CLOEXEC) < 0)) {
                r = diag_set(reterr, -errno, "cannot create pipes: %m");
                goto out;
        }
        /*
         * The status is read once the init is reaped, when no one can write any more: a child
         * another thread cloned meanwhile may still hold a copy of the write end, so a read
         * must never wait for EOF.
         */
        if (ns) {
                r = fd_set_nonblock(statusp[0], true);
                if (r < 0) {
                        r = diag_set(reterr, r, "cannot set up the status pipe: %s", strerror(-r));
                        goto out;
                }
        }
        if (ns) {
                ca.flags =
                        CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;
                if (!o->network)
                        ca.flags |= CLONE_NEWNET;
                /* Root builds the file system as root and enters a user namespace later. */
                if (!p.as_root)
                        ca.flags |= CLONE_NEWUSER;
        }
        ca.flags |= CLONE_PIDFD;
        ca.pidfd = (uint64_t) (uintptr_t) &pidfd;

        if (o->cgroup && o->cgroup->path) {
                ca.flags |= CLONE_INTO_CGROUP;
                ca.cgroup = (uint64_t) o->cgroup->fd;
        }

        a = (struct child_args){
                .o = o,
                .p = &p,
                .errfd = errp[1],
                .syncfd = syncp[0],
                .status_fd = statusp[1],
                .ptc_pidfd = self_pidfd(),
                .ptc = getpid(),
        };
        pid = (pid_t) syscall(SYS_clone3, &ca, sizeof(ca));
        if (pid < 0 && (ca.flags & CLONE_INTO_CGROUP)) {
                static bool warned;

                /*
                 * A kernel before 5.7, or a leaf the kernel refuses: the cgroup is an extra,
                 * the rlimits hold without it. If the refusal was for something else, the
                 * second clone fails the same way and says so. Said once per process.
                 */
                if (!__atomic_exchange_n(&warned, true, __ATOMIC_RELAXED))
                        log_warning("cannot start inside the cgroup %s: %m; starting without "
                                    "it (the rlimits still bound memory and processes)",
                                    o->cgroup->path);
                ca.flags &= ~CLONE_INTO_CGROUP;
                ca.cgroup = 0;
                pid = (pid_t) syscall(SYS_clone3, &ca, sizeof(ca));
        }
        if (pid == 0) {
                close(errp[0]);
                close(syncp[1]);
                if (statusp[0] >= 0)
                        close(statusp[0]);
                child_main(&a);
        }
        if (pid < 0) {
                r = diag_set(reterr, -errno, "%s: %m",
                             ns ? "namespaces: cannot create the namespaces"
                                : "cannot start the script");
                if (ns)
                        failed = SANDBOX_LAYER_NAMESPACES;
                goto out;
        }
        errp[1] = safe_close(errp[1]);
        syncp[0] = safe_close(syncp[0]);
        statusp[1] = safe_close(statusp[1]);

        if (write(syncp[1], "g", 1) != 1) {
                r = diag_set(reterr, -errno, "namespaces: the child is gone: %m");
                (void) kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                goto out;
        }
        syncp[1] = safe_close(syncp[1]);

        /* The setup takes milliseconds; a child stuck in it must not hang ptc. */
        k = read_with_deadline(errp[0], &ce, sizeof(ce), SETUP_TIMEOUT_MS);
        if (k == -ETIMEDOUT) {
                (void) kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                r = diag_set(reterr, -ETIMEDOUT,
                             "%s: the confined child did not finish its setup within %d s",
                             ns ? "namespaces" : "sandbox", SETUP_TIMEOUT_MS / 1000);
                if (ns)
                        failed = SANDBOX_LAYER_NAMESPACES;
                goto out;
        }
        if (k == (ssize_t) sizeof(ce)) {
                const char *what = "";
                (void) kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                if (ce.index >= 0 && (size_t) ce.index < p.n && ce.stage != ST_RLIMIT)
                        what = p.m[ce.index].target + strlen(BASE);
                if (ce.stage == ST_EXEC)
                        what = o->path;
                else if (ce.stage == ST_CHDIR)
                        what = o->cwd;
                r = diag_set(reterr, -ce.error, "%s%s%s%s: %s", stage_text(ce.stage),
                             *what ? " '" : "", what, *what ? "'" : "", strerror(ce.error));
                failed = stage_layer(ce.stage);
                goto out;
        }
        *ret = (struct sandbox_proc){.pid = pid, .pidfd = pidfd, .status_fd = statusp[0]};
        pidfd = -1;
        statusp[0] = -1;
        r = 0;
out:
        if (r < 0 && ret_failed_layer)
                *ret_failed_layer = failed;
        safe_close(pidfd);
        safe_close(errp[0]);
        safe_close(errp[1]);
        safe_close(syncp[0]);
        safe_close(syncp[1]);
        safe_close(statusp[0]);
        safe_close(statusp[1]);
        return r;
}

struct sandbox_limits sandbox_limits_for(uint64_t memory_mb, uint64_t pids, uint64_t nofile,
                                         uint64_t cpu_seconds)
{
        const uint64_t mib = 1024 * 1024;

        return (struct sandbox_limits){
                .data_bytes = memory_mb * mib,
                .pids = pids,
                .nofile = nofile,
                .fsize_bytes = 1024 * mib,
                .cpu_seconds = cpu_seconds,
                .tmp_bytes = MAX(memory_mb * mib / 4, 16 * mib),
        };
}

int sandbox_env(char *const *envp, const char *cwd, char ***ret)
{
        static char home_tmp[] = "HOME=/tmp", tmpdir_tmp[] = "TMPDIR=/tmp";
        size_t n = strv_length(envp), k = 0;
        bool home_kept = false;
        char **env = calloc(n + 3, sizeof(char *));

        if (!env)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const char *home = strncmp(envp[i], "HOME=", 5) == 0 ? envp[i] + 5 : NULL;

                if (strncmp(envp[i], "TMPDIR=", 7) == 0 || (home && !path_is_below(home, cwd)))
                        continue;
                home_kept = home_kept || home;
                env[k++] = envp[i];
        }
        env[k++] = tmpdir_tmp;
        if (!home_kept)
                env[k++] = home_tmp;
        *ret = env;
        return 0;
}

int sandbox_read_status(int status_fd, int *ret_status)
{
        int st;
        ssize_t k;

        do
                k = read(status_fd, &st, sizeof(st));
        while (k < 0 && errno == EINTR);
        if (k != (ssize_t) sizeof(st))
                return -ENODATA;
        if (WIFEXITED(st))
                *ret_status = WEXITSTATUS(st);
        else if (WIFSIGNALED(st))
                *ret_status = -WTERMSIG(st);
        else
                *ret_status = -SIGKILL;
        return 0;
}
