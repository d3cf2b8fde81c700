/* SPDX-License-Identifier: MIT */
#include "../lib/ptc-test.h"
#include "../lib/test-child.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/path-util.h"
#include "core/sandbox/landlock.h"

/*
 * Each case forks a child that sets NO_NEW_PRIVS, applies a policy and runs a probe; the
 * probe's errno (0 for success) comes back as the exit status. CHILD_APPLY_FAILED and
 * TEST_CHILD_NNP_FAILED mark a child that never got as far as the probe.
 */
#define CHILD_APPLY_FAILED 255

#define TRUE_BIN "/bin/true"

struct fixture {
        char dir[64];
        char ro[96], ro_file[128];   /* ro tree with one file */
        char rw[96], rw_file[128];   /* rw tree with one file */
        char out[96], out_file[128]; /* outside every rule */
        char single[128];            /* a lone regular file, for file rules */
        int abi;
        /* What the probes take as their argument. */
        struct sockaddr_in tcp;      /* a 127.0.0.1 listener of the parent */
        struct sockaddr_un abstract; /* an abstract unix listener of the parent */
        socklen_t abstract_len;
        int open_fds; /* for probe_fd_count() */
};

static void write_text(const char *path, const char *text)
{
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t) strlen(text));
}

static int setup(void **state)
{
        struct fixture *f;
        int abi = landlock_abi();

        if (abi < 1) {
                /* Landlock off or missing: each case skips. */
                *state = NULL;
                return 0;
        }

        f = calloc(1, sizeof(*f));
        if (!f)
                return -1;
        f->abi = abi;
        (void) snprintf(f->dir, sizeof(f->dir), "/tmp/ptc-test-landlock-XXXXXX");
        if (!mkdtemp(f->dir)) {
                free(f);
                return -1;
        }
        (void) snprintf(f->ro, sizeof(f->ro), "%s/ro", f->dir);
        (void) snprintf(f->ro_file, sizeof(f->ro_file), "%s/file", f->ro);
        (void) snprintf(f->rw, sizeof(f->rw), "%s/rw", f->dir);
        (void) snprintf(f->rw_file, sizeof(f->rw_file), "%s/file", f->rw);
        (void) snprintf(f->out, sizeof(f->out), "%s/out", f->dir);
        (void) snprintf(f->out_file, sizeof(f->out_file), "%s/file", f->out);
        (void) snprintf(f->single, sizeof(f->single), "%s/single", f->dir);
        if (mkdir(f->ro, 0755) < 0 || mkdir(f->rw, 0755) < 0 || mkdir(f->out, 0755) < 0) {
                (void) rm_rf(f->dir);
                free(f);
                return -1;
        }
        *state = f;
        write_text(f->ro_file, "ro\n");
        write_text(f->rw_file, "rw\n");
        write_text(f->out_file, "out\n");
        write_text(f->single, "single\n");
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        if (!f)
                return 0;
        (void) rm_rf(f->dir);
        free(f);
        return 0;
}

/* Put the rw tree back as setup() made it, after a probe changed it. */
static void reset_rw(const struct fixture *f)
{
        assert_int_equal(rm_rf(f->rw), 0);
        assert_int_equal(mkdir(f->rw, 0755), 0);
        write_text(f->rw_file, "rw\n");
}

static struct fixture *get_fixture(void **state)
{
        if (!*state)
                test_skip("no Landlock in this kernel (landlock_abi(): %s)",
                          strerror(-landlock_abi()));
        return *state;
}

/* Probes: return 0 or the errno of the step that failed. They run in the confined child. */
typedef int (*probe_fn)(const struct fixture *f);

struct confined {
        const struct fixture *f;
        const struct landlock_policy *p;
        int abi;
        probe_fn probe;
};

static int confined_main(void *userdata)
{
        const struct confined *c = userdata;
        int r;

        r = landlock_apply(c->p, c->abi);
        if (r < 0) {
                (void) fprintf(stderr, "landlock_apply: %s\n", strerror(-r));
                return CHILD_APPLY_FAILED;
        }
        return c->probe(c->f);
}

/*
 * Fork, confine the child to @p for @abi, run @probe there; returns its exit status (0 or
 * an errno, CHILD_* when the probe never ran), or -1 if it died of a signal.
 */
static int run_confined(const struct fixture *f, const struct landlock_policy *p, int abi,
                        probe_fn probe)
{
        struct confined c = {.f = f, .p = p, .abi = abi, .probe = probe};
        int status = test_run_child(true, confined_main, &c);

        if (!WIFEXITED(status))
                return -1;
        return WEXITSTATUS(status);
}

static int probe_nothing(_unused_ const struct fixture *f)
{
        return 0;
}

static int probe_read(const char *path)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        char buf[16];
        ssize_t n;

        if (fd < 0)
                return errno;
        n = read(fd, buf, sizeof(buf));
        if (n < 0)
                return errno;
        return n > 0 ? 0 : EIO;
}

static int probe_open_write(const char *path)
{
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);

        return fd < 0 ? errno : 0;
}

/* Create @dir/new and write to it. */
static int probe_create_in(const char *dir)
{
        _cleanup_close_ int fd = -EBADF;
        char path[160];

        (void) snprintf(path, sizeof(path), "%s/new", dir);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0)
                return errno;
        if (write(fd, "x", 1) != 1)
                return errno;
        return 0;
}

static int probe_list(const char *dir)
{
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        return fd < 0 ? errno : 0;
}

static int probe_read_ro(const struct fixture *f)
{
        return probe_read(f->ro_file);
}

static int probe_list_ro(const struct fixture *f)
{
        return probe_list(f->ro);
}

static int probe_write_ro(const struct fixture *f)
{
        return probe_open_write(f->ro_file);
}

static int probe_create_ro(const struct fixture *f)
{
        return probe_create_in(f->ro);
}

static int probe_create_rw(const struct fixture *f)
{
        return probe_create_in(f->rw);
}

static int probe_mkdir_rw(const struct fixture *f)
{
        char path[160];

        (void) snprintf(path, sizeof(path), "%s/sub", f->rw);
        if (mkdir(path, 0755) < 0)
                return errno;
        if (rmdir(path) < 0)
                return errno;
        return 0;
}

static int probe_mknod_in_rw(const struct fixture *f, mode_t type, dev_t dev)
{
        char path[160];

        (void) snprintf(path, sizeof(path), "%s/node", f->rw);
        (void) unlink(path);
        if (mknod(path, type | 0600, dev) < 0)
                return errno;
        (void) unlink(path);
        return 0;
}

static int probe_mknod_chr_rw(const struct fixture *f)
{
        return probe_mknod_in_rw(f, S_IFCHR, makedev(1, 3));
}

static int probe_mknod_blk_rw(const struct fixture *f)
{
        return probe_mknod_in_rw(f, S_IFBLK, makedev(7, 0));
}

static int probe_mknod_fifo_rw(const struct fixture *f)
{
        return probe_mknod_in_rw(f, S_IFIFO, 0);
}

static int probe_read_out(const struct fixture *f)
{
        return probe_read(f->out_file);
}

static int probe_write_out(const struct fixture *f)
{
        return probe_open_write(f->out_file);
}

static int probe_create_out(const struct fixture *f)
{
        return probe_create_in(f->out);
}

static int probe_list_out(const struct fixture *f)
{
        return probe_list(f->out);
}

static int probe_truncate_out(const struct fixture *f)
{
        return truncate(f->out_file, 0) < 0 ? errno : 0;
}

/* Move rw/file into a new subdirectory: needs REFER (ABI >= 2) between the two dirs. */
static int probe_rename_rw(const struct fixture *f)
{
        char sub[160], to[200];

        (void) snprintf(sub, sizeof(sub), "%s/sub", f->rw);
        (void) snprintf(to, sizeof(to), "%s/file", sub);
        if (mkdir(sub, 0755) < 0)
                return errno;
        if (rename(f->rw_file, to) < 0)
                return errno;
        return 0;
}

static int probe_read_single(const struct fixture *f)
{
        return probe_read(f->single);
}

static int probe_write_single(const struct fixture *f)
{
        return probe_open_write(f->single);
}

static int probe_exec_true(_unused_ const struct fixture *f)
{
        char *const argv[] = {(char *) TRUE_BIN, NULL};
        char *const envp[] = {NULL};

        (void) execve(TRUE_BIN, argv, envp);
        return errno;
}

static int probe_tcp_connect(const struct fixture *f)
{
        _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0)
                return errno;
        if (connect(fd, (const struct sockaddr *) &f->tcp, sizeof(f->tcp)) < 0)
                return errno;
        return 0;
}

static int probe_tcp_bind(_unused_ const struct fixture *f)
{
        struct sockaddr_in a = {
                .sin_family = AF_INET,
                .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                .sin_port = 0,
        };
        _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0)
                return errno;
        if (bind(fd, (const struct sockaddr *) &a, sizeof(a)) < 0)
                return errno;
        return 0;
}

static int probe_unix_connect(const struct fixture *f)
{
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0)
                return errno;
        if (connect(fd, (const struct sockaddr *) &f->abstract, f->abstract_len) < 0)
                return errno;
        return 0;
}

static int probe_kill_parent(_unused_ const struct fixture *f)
{
        return kill(getppid(), 0) < 0 ? errno : 0;
}

/* How many of the fds below FD_SCAN_MAX are open. */
#define FD_SCAN_MAX 1024
static int count_fds(void)
{
        int n = 0;

        for (int fd = 0; fd < FD_SCAN_MAX; fd++)
                if (fcntl(fd, F_GETFD) >= 0)
                        n++;
        return n;
}

/* landlock_apply() closes what it opens: as many fds open after it as before the fork. */
static int probe_fd_count(const struct fixture *f)
{
        return count_fds() == f->open_fds ? 0 : EMFILE;
}

/* A listener on 127.0.0.1, port chosen by the kernel; its address goes to @f->tcp. */
static int tcp_listener(struct fixture *f)
{
        socklen_t len = sizeof(f->tcp);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        assert_true(fd >= 0);
        f->tcp = (struct sockaddr_in){
                .sin_family = AF_INET,
                .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
        };
        assert_int_equal(bind(fd, (const struct sockaddr *) &f->tcp, sizeof(f->tcp)), 0);
        assert_int_equal(listen(fd, 8), 0);
        assert_int_equal(getsockname(fd, (struct sockaddr *) &f->tcp, &len), 0);
        return fd;
}

/* A listener on an abstract unix socket; its address goes to @f->abstract. */
static int unix_listener(struct fixture *f)
{
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int n;

        assert_true(fd >= 0);
        f->abstract = (struct sockaddr_un){.sun_family = AF_UNIX};
        /* sun_path[0] stays NUL: abstract namespace. */
        n = snprintf(f->abstract.sun_path + 1, sizeof(f->abstract.sun_path) - 1,
                     "ptc-test-landlock-%d", (int) getpid());
        assert_true(n > 0);
        f->abstract_len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + (size_t) n);
        assert_int_equal(bind(fd, (const struct sockaddr *) &f->abstract, f->abstract_len), 0);
        assert_int_equal(listen(fd, 8), 0);
        return fd;
}

static void test_landlock_abi_errata(_unused_ void **state)
{
        int abi = landlock_abi(), errata;

        if (abi < 1) {
                /* Only the documented reasons for no Landlock. */
                assert_true(abi == -ENOSYS || abi == -EOPNOTSUPP);
                test_skip("no Landlock in this kernel (%s)", strerror(-abi));
        }
        errata = landlock_errata();
        /* The errata query came with ABI 7 (Linux 6.15); older kernels answer EINVAL. */
        if (abi >= 7)
                assert_true(errata >= 0);
        else
                assert_true(errata >= 0 || errata == -EINVAL);
}

static void test_landlock_apply_invalid(_unused_ void **state)
{
        const struct landlock_policy p = {};

        assert_int_equal(landlock_apply(NULL, 1), -EINVAL);
        assert_int_equal(landlock_apply(&p, 0), -EINVAL);
        assert_int_equal(landlock_apply(&p, -ENOSYS), -EINVAL);
}

static void test_landlock_apply_ro(void **state)
{
        struct fixture *f = get_fixture(state);
        const char *const ro[] = {f->ro, NULL};
        const struct landlock_policy p = {.ro_paths = ro};

        assert_int_equal(run_confined(f, &p, f->abi, probe_read_ro), 0);
        assert_int_equal(run_confined(f, &p, f->abi, probe_list_ro), 0);
        assert_int_equal(run_confined(f, &p, f->abi, probe_write_ro), EACCES);
        assert_int_equal(run_confined(f, &p, f->abi, probe_create_ro), EACCES);
        /* Unconfined, the same write works: it is Landlock that refused. */
        assert_int_equal(probe_write_ro(f), 0);
}

static void test_landlock_apply_rw(void **state)
{
        struct fixture *f = get_fixture(state);
        const char *const ro[] = {f->ro, NULL};
        const char *const rw[] = {f->rw, NULL};
        const struct landlock_policy p = {.ro_paths = ro, .rw_paths = rw};

        assert_int_equal(run_confined(f, &p, f->abi, probe_create_rw), 0);
        assert_int_equal(run_confined(f, &p, f->abi, probe_mkdir_rw), 0);
        /* REFER is in the rw rights from ABI 2 on: moving between rw dirs works. */
        if (f->abi >= 2)
                assert_int_equal(run_confined(f, &p, f->abi, probe_rename_rw), 0);
        /* The ro tree stays read-only next to an rw one. */
        assert_int_equal(run_confined(f, &p, f->abi, probe_write_ro), EACCES);
}

/* The rw trees get every right but device nodes: those are refused even to root. */
static void test_landlock_apply_no_devices(void **state)
{
        struct fixture *f = get_fixture(state);
        const char *const rw[] = {f->rw, NULL};
        const struct landlock_policy p = {.rw_paths = rw};

        assert_int_equal(run_confined(f, &p, f->abi, probe_mknod_fifo_rw), 0);
        assert_int_equal(run_confined(f, &p, f->abi, probe_mknod_chr_rw), EACCES);
        assert_int_equal(run_confined(f, &p, f->abi, probe_mknod_blk_rw), EACCES);
        /* Unconfined, root makes them (anyone else lacks CAP_MKNOD). */
        if (geteuid() == 0) {
                assert_int_equal(probe_mknod_chr_rw(f), 0);
                assert_int_equal(probe_mknod_blk_rw(f), 0);
        }
}

static void test_landlock_apply_outside(void **state)
{
        struct fixture *f = get_fixture(state);
        const char *const ro[] = {f->ro, NULL};
        const char *const rw[] = {f->rw, NULL};
        const struct landlock_policy p = {.ro_paths = ro, .rw_paths = rw};

        assert_int_equal(run_confined(f, &p, f->abi, probe_read_out), EACCES);
        assert_int_equal(run_confined(f, &p, f->abi, probe_write_out), EACCES);
        assert_int_equal(run_confined(f, &p, f->abi, probe_create_out), EACCES);
        assert_int_equal(run_confined(f, &p, f->abi, probe_list_out), EACCES);
        if (f->abi >= 3)
                assert_int_equal(run_confined(f, &p, f->abi, probe_truncate_out), EACCES);
        /* Unconfined, all of it is allowed. */
        assert_int_equal(probe_read_out(f), 0);
        assert_int_equal(probe_list_out(f), 0);
}

/*
 * A list-only rule (how the sandbox shows the host's / without the namespaces layer, keeping
 * ptc serve's key from the script): directories beneath list, files do not read.
 */
static void test_landlock_apply_list_only(void **state)
{
        struct fixture *f = get_fixture(state);
        const char *const list[] = {f->dir, NULL};
        const struct landlock_policy p = {.list_paths = list};

        assert_int_equal(run_confined(f, &p, f->abi, probe_list_out), 0);
        assert_int_equal(run_confined(f, &p, f->abi, probe_read_out), EACCES);
        assert_int_equal(run_confined(f, &p, f->abi, probe_read_ro), EACCES);
        assert_int_equal(run_confined(f, &p, f->abi, probe_create_out), EACCES);
}

static void test_landlock_apply_exec(void **state)
{
        struct fixture *f = get_fixture(state);
        const char *const sys[] = {"/usr",   "/bin",    "/lib", "/lib64",
                                   "/lib32", "/libx32", "/etc", NULL};
        const char *const only_ro[] = {f->ro, NULL};
        const struct landlock_policy with_usr = {.ro_paths = sys};
        const struct landlock_policy without_usr = {.ro_paths = only_ro};

        if (access(TRUE_BIN, X_OK) < 0)
                test_skip("no " TRUE_BIN " to execute");
        assert_int_equal(run_confined(f, &with_usr, f->abi, probe_exec_true), 0);
        assert_int_equal(run_confined(f, &without_usr, f->abi, probe_exec_true), EACCES);
}

static void test_landlock_apply_file_rule(void **state)
{
        struct fixture *f = get_fixture(state);
        const char *const ro_file[] = {f->single, NULL};
        const char *const rw_file[] = {f->single, NULL};
        const struct landlock_policy ro = {.ro_paths = ro_file};
        const struct landlock_policy rw = {.rw_paths = rw_file};

        /*
         * Directory-only rights on a file rule would make the kernel refuse the rule
         * (EINVAL, CHILD_APPLY_FAILED here): they have to be masked off.
         */
        assert_int_equal(run_confined(f, &ro, f->abi, probe_read_single), 0);
        assert_int_equal(run_confined(f, &ro, f->abi, probe_write_single), EACCES);
        assert_int_equal(run_confined(f, &rw, f->abi, probe_read_single), 0);
        assert_int_equal(run_confined(f, &rw, f->abi, probe_write_single), 0);
        /* The rule covers that file only. */
        assert_int_equal(run_confined(f, &rw, f->abi, probe_read_ro), EACCES);

        /* A file of the system as well, when there is one. */
        if (access("/etc/hostname", R_OK) == 0) {
                const char *const etc[] = {"/etc/hostname", f->ro, NULL};
                const struct landlock_policy p = {.ro_paths = etc};

                assert_int_equal(run_confined(f, &p, f->abi, probe_read_ro), 0);
        }
}

static void test_landlock_apply_missing_paths(void **state)
{
        struct fixture *f = get_fixture(state);
        char below_file[160], missing[160];
        const char *const ro[] = {"/nonexistent-ptc/ro", missing, below_file, f->ro, NULL};
        const char *const rw[] = {"/nonexistent-ptc/rw", f->rw, NULL};
        const struct landlock_policy p = {.ro_paths = ro, .rw_paths = rw};

        (void) snprintf(missing, sizeof(missing), "%s/missing", f->dir);
        /* ENOTDIR: a path through a regular file. */
        (void) snprintf(below_file, sizeof(below_file), "%s/sub", f->ro_file);

        assert_int_equal(run_confined(f, &p, f->abi, probe_read_ro), 0);
        assert_int_equal(run_confined(f, &p, f->abi, probe_create_rw), 0);
        assert_int_equal(run_confined(f, &p, f->abi, probe_read_out), EACCES);
}

static void test_landlock_apply_no_paths(void **state)
{
        struct fixture *f = get_fixture(state);
        const struct landlock_policy p = {};

        /* No rules at all: the file system is closed, the rest untouched. */
        assert_int_equal(run_confined(f, &p, f->abi, probe_nothing), 0);
        assert_int_equal(run_confined(f, &p, f->abi, probe_read_ro), EACCES);
}

static void test_landlock_apply_closes_fds(void **state)
{
        struct fixture *f = get_fixture(state);
        const char *const ro[] = {f->ro, f->single, "/nonexistent-ptc", NULL};
        const char *const rw[] = {f->rw, NULL};
        const struct landlock_policy p = {.ro_paths = ro, .rw_paths = rw, .deny_tcp = true};

        f->open_fds = count_fds();
        assert_true(f->open_fds >= 3);
        assert_int_equal(run_confined(f, &p, f->abi, probe_fd_count), 0);
}

static void test_landlock_apply_deny_tcp(void **state)
{
        struct fixture *f = get_fixture(state);
        _cleanup_close_ int listener = -EBADF;
        const struct landlock_policy deny = {.deny_tcp = true};
        const struct landlock_policy allow = {};

        if (f->abi < 4)
                test_skip("Landlock ABI %d handles no TCP (ABI 4)", f->abi);
        listener = tcp_listener(f);

        assert_int_equal(run_confined(f, &deny, f->abi, probe_tcp_connect), EACCES);
        assert_int_equal(run_confined(f, &deny, f->abi, probe_tcp_bind), EACCES);
        /* Without deny_tcp, TCP is left alone. */
        assert_int_equal(run_confined(f, &allow, f->abi, probe_tcp_connect), 0);
        assert_int_equal(run_confined(f, &allow, f->abi, probe_tcp_bind), 0);
        /* deny_tcp does not scope: abstract sockets and signals still work. */
        assert_int_equal(run_confined(f, &deny, f->abi, probe_kill_parent), 0);
}

static void test_landlock_apply_scope(void **state)
{
        struct fixture *f = get_fixture(state);
        _cleanup_close_ int listener = -EBADF;
        const struct landlock_policy scoped = {.scope = true};
        const struct landlock_policy unscoped = {};

        if (f->abi < 6)
                test_skip("Landlock ABI %d has no scopes (ABI 6)", f->abi);
        listener = unix_listener(f);

        assert_int_equal(run_confined(f, &scoped, f->abi, probe_unix_connect), EPERM);
        assert_int_equal(run_confined(f, &scoped, f->abi, probe_kill_parent), EPERM);
        assert_int_equal(run_confined(f, &unscoped, f->abi, probe_unix_connect), 0);
        assert_int_equal(run_confined(f, &unscoped, f->abi, probe_kill_parent), 0);
}

/* A policy for an older ABI on this kernel: masked rights, the short attribute. */
static void test_landlock_apply_old_abi(void **state)
{
        struct fixture *f = get_fixture(state);
        _cleanup_close_ int tcp = -EBADF, unx = -EBADF;
        const char *const ro[] = {f->ro, f->single, NULL};
        const char *const rw[] = {f->rw, NULL};
        const struct landlock_policy p = {
                .ro_paths = ro,
                .rw_paths = rw,
                .deny_tcp = true,
                .scope = true,
        };

        tcp = tcp_listener(f);
        unx = unix_listener(f);

        for (int abi = 1; abi <= f->abi; abi++) {
                print_message("# abi %d\n", abi);
                assert_int_equal(run_confined(f, &p, abi, probe_read_ro), 0);
                assert_int_equal(run_confined(f, &p, abi, probe_read_single), 0);
                assert_int_equal(run_confined(f, &p, abi, probe_write_ro), EACCES);
                assert_int_equal(run_confined(f, &p, abi, probe_create_rw), 0);
                /* Linking across directories needs REFER; ABI 1 refuses it always. */
                assert_int_equal(run_confined(f, &p, abi, probe_rename_rw), abi >= 2 ? 0 : EXDEV);
                reset_rw(f);
                assert_int_equal(run_confined(f, &p, abi, probe_read_out), EACCES);
                /* Truncation is only handled from ABI 3 on. */
                assert_int_equal(run_confined(f, &p, abi, probe_truncate_out),
                                 abi >= 3 ? EACCES : 0);
                /* TCP from ABI 4 on. */
                assert_int_equal(run_confined(f, &p, abi, probe_tcp_connect),
                                 abi >= 4 ? EACCES : 0);
                /* Scopes from ABI 6 on. */
                assert_int_equal(run_confined(f, &p, abi, probe_unix_connect),
                                 abi >= 6 ? EPERM : 0);
                assert_int_equal(run_confined(f, &p, abi, probe_kill_parent), abi >= 6 ? EPERM : 0);
        }
}

/* landlock_protect_apply() in a child, then @probe. */
struct protected_child {
        const struct fixture *f;
        const struct landlock_protect *p;
        probe_fn probe;
};

static int protected_main(void *userdata)
{
        const struct protected_child *c = userdata;
        int r = landlock_protect_apply(c->p);

        if (r < 0) {
                (void) fprintf(stderr, "landlock_protect_apply: %s\n", strerror(-r));
                return CHILD_APPLY_FAILED;
        }
        return c->probe(c->f);
}

static int run_protected(const struct fixture *f, const struct landlock_protect *p, probe_fn probe)
{
        struct protected_child c = {.f = f, .p = p, .probe = probe};
        /* No no_new_privs of the test's: landlock_protect_apply() sets it when it must. */
        int status = test_run_child(false, protected_main, &c);

        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* no_new_privs is set only where the kernel wants it: without CAP_SYS_ADMIN. */
static int probe_nnp_as_needed(_unused_ const struct fixture *f)
{
        int nnp = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);

        return nnp == (geteuid() == 0 ? 0 : 1) ? 0 : EPERM;
}

static int probe_write_single_truncating(const struct fixture *f)
{
        _cleanup_close_ int fd = open(f->single, O_WRONLY | O_TRUNC | O_CLOEXEC);

        return fd < 0 ? errno : 0;
}

/*
 * The terminal's path rules (core/policy/path-protect.h): write rights where granted, on a
 * tree or a lone file, none elsewhere; reading and listing are never restricted.
 */
static void test_landlock_protect_apply(void **state)
{
        struct fixture *f = get_fixture(state);
        const char *const grants[] = {f->rw, f->single, NULL};
        const struct landlock_protect p = {.ruleset_fd = -1, .grants = grants, .abi = f->abi};

        assert_int_equal(run_protected(f, &p, probe_create_rw), 0);
        assert_int_equal(run_protected(f, &p, probe_mkdir_rw), 0);
        reset_rw(f);
        assert_int_equal(run_protected(f, &p, probe_write_single), 0);
        assert_int_equal(run_protected(f, &p, probe_write_single_truncating), 0);
        assert_int_equal(run_protected(f, &p, probe_write_out), EACCES);
        assert_int_equal(run_protected(f, &p, probe_create_out), EACCES);
        assert_int_equal(run_protected(f, &p, probe_mknod_chr_rw), EACCES);
        if (f->abi >= 3)
                assert_int_equal(run_protected(f, &p, probe_truncate_out), EACCES);
        assert_int_equal(run_protected(f, &p, probe_read_out), 0);
        assert_int_equal(run_protected(f, &p, probe_list_out), 0);
        assert_int_equal(run_protected(f, &p, probe_exec_true), 0);
        assert_int_equal(run_protected(f, &p, probe_nnp_as_needed), 0);
        f->open_fds = count_fds();
        assert_int_equal(run_protected(f, &p, probe_fd_count), 0);
        /* Unconfined, the same writes work: it is Landlock that refused. */
        assert_int_equal(probe_create_out(f), 0);
}

static void test_landlock_protect_apply_invalid(_unused_ void **state)
{
        const char *const none[] = {NULL};
        const struct landlock_protect no_abi = {.ruleset_fd = -1, .grants = none};

        assert_int_equal(landlock_protect_apply(NULL), -EINVAL);
        assert_int_equal(landlock_protect_apply(&no_abi), -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_landlock_abi_errata),
                cmocka_unit_test(test_landlock_apply_invalid),
                cmocka_unit_test_setup_teardown(test_landlock_apply_ro, setup, teardown),
                cmocka_unit_test_setup_teardown(test_landlock_apply_rw, setup, teardown),
                cmocka_unit_test_setup_teardown(test_landlock_apply_no_devices, setup, teardown),
                cmocka_unit_test_setup_teardown(test_landlock_apply_outside, setup, teardown),
                cmocka_unit_test_setup_teardown(test_landlock_apply_list_only, setup, teardown),
                cmocka_unit_test_setup_teardown(test_landlock_apply_exec, setup, teardown),
                cmocka_unit_test_setup_teardown(test_landlock_apply_file_rule, setup, teardown),
                cmocka_unit_test_setup_teardown(test_landlock_apply_missing_paths, setup, teardown),
                cmocka_unit_test_setup_teardown(test_landlock_apply_no_paths, setup, teardown),
                cmocka_unit_test_setup_teardown(test_landlock_apply_closes_fds, setup, teardown),
                cmocka_unit_test_setup_teardown(test_landlock_apply_deny_tcp, setup, teardown),
                cmocka_unit_test_setup_teardown(test_landlock_apply_scope, setup, teardown),
                cmocka_unit_test_setup_teardown(test_landlock_apply_old_abi, setup, teardown),
                cmocka_unit_test(test_landlock_protect_apply_invalid),
                cmocka_unit_test_setup_teardown(test_landlock_protect_apply, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
