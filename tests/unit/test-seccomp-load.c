/* SPDX-License-Identifier: MIT */
/* The seccomp policy loaded in the kernel: real system calls in forked children. */
#include "../lib/ptc-test.h"
#include "../lib/seccomp-test.h"
#include "../lib/test-child.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/macro.h"
#include "basic/path-util.h"

/* Exit codes of a child whose setup failed, above every errno (and TEST_CHILD_NNP_FAILED). */
enum {
        CHILD_LOAD_FAILED = 200,
        CHILD_WAIT_FAILED,
};

struct child {
        const struct seccomp_program *p;
        int (*fn)(void);
};

static int child_main(void *userdata)
{
        const struct child *c = userdata;

        if (c->p && seccomp_program_load(c->p) < 0)
                return CHILD_LOAD_FAILED;
        return c->fn();
}

/*
 * The kernel tests: run @fn in a forked child under @p (no filter when NULL) and return its wait
 * status. @fn returns 0 or the errno of the call it makes.
 */
static int run_child(const struct seccomp_program *p, int (*fn)(void))
{
        struct child c = {.p = p, .fn = fn};

        return test_run_child(true, child_main, &c);
}

static void expect_exit(const struct seccomp_program *p, int (*fn)(void), int want,
                        const char *what)
{
        int status = run_child(p, fn);

        if (!WIFEXITED(status))
                fail_msg("%s: child killed by signal %d", what, WTERMSIG(status));
        if (WEXITSTATUS(status) != want)
                fail_msg("%s: expected %d (%s), got %d (%s)", what, want, strerror(want),
                         WEXITSTATUS(status), strerror(WEXITSTATUS(status)));
}

#define EXPECT(p, fn, want) expect_exit(p, fn, want, #fn)

/* What @fn returned under @p (no filter when NULL): the child must exit, not die of a signal. */
static int exit_code(const struct seccomp_program *p, int (*fn)(void))
{
        int status = run_child(p, fn);

        assert_true(WIFEXITED(status));
        return WEXITSTATUS(status);
}

/* @fn under @p must be killed by SIGSYS: the filter's kill, not an errno. */
static void expect_sigsys(const struct seccomp_program *p, int (*fn)(void))
{
        int status = run_child(p, fn);

        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), SIGSYS);
}

/* Skip the running test where the kernel cannot load seccomp filters. */
static void need_seccomp(void)
{
        if (!seccomp_is_available())
                test_skip("the kernel cannot load seccomp filters");
}

static int result(long r)
{
        return r < 0 ? errno : 0;
}

static int close_result(long fd)
{
        if (fd < 0)
                return errno;
        (void) close((int) fd);
        return 0;
}

static int do_socket_unix(void)
{
        return close_result(syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
}

static int do_socket_unix_high(void)
{
        return close_result(syscall(SYS_socket, (long) (UINT64_C(1) << 32 | AF_UNIX),
                                    SOCK_STREAM | SOCK_CLOEXEC, 0));
}

static int do_socketpair_unix(void)
{
        int sv[2];

        if (syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return errno;
        (void) close(sv[0]);
        (void) close(sv[1]);
        return 0;
}

static int do_socket_inet(void)
{
        return close_result(syscall(SYS_socket, AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
}

static int do_socket_netlink(void)
{
        return close_result(syscall(SYS_socket, AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0));
}

static int do_socket_packet(void)
{
        return close_result(syscall(SYS_socket, AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
}

static void test_seccomp_program_load_sockets(void **state)
{
        struct seccomp_program local = {0}, inet = {0};

        (void) state;
        need_seccomp();
        build(false, &local);
        build(true, &inet);

        /* Without the filter the kernel creates these sockets: the refusals below are ours. */
        EXPECT(NULL, do_socket_inet, 0);
        EXPECT(NULL, do_socket_netlink, 0);
        EXPECT(NULL, do_socket_unix_high, 0);

        EXPECT(&local, do_socket_unix, 0);
        EXPECT(&local, do_socketpair_unix, 0);
        EXPECT(&local, do_socket_inet, EAFNOSUPPORT);
        EXPECT(&local, do_socket_netlink, EAFNOSUPPORT);
        EXPECT(&local, do_socket_packet, EAFNOSUPPORT);
        EXPECT(&local, do_socket_unix_high, EAFNOSUPPORT);

        EXPECT(&inet, do_socket_unix, 0);
        EXPECT(&inet, do_socketpair_unix, 0);
        EXPECT(&inet, do_socket_inet, 0);
        EXPECT(&inet, do_socket_netlink, EAFNOSUPPORT);
        EXPECT(&inet, do_socket_packet, EAFNOSUPPORT);

        seccomp_program_release(&local);
        seccomp_program_release(&inet);
}

/* Raw clone(2) with @flags; the new process exits at once. 0 when it ran and exited 0. */
static int clone_and_wait(unsigned long flags)
{
        int status = 0;
        long pid;

        pid = syscall(SYS_clone, flags, 0, 0, 0, 0);
        if (pid < 0)
                return errno;
        if (pid == 0)
                _exit(0);
        if (waitpid((pid_t) pid, &status, 0) != pid)
                return CHILD_WAIT_FAILED;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : CHILD_WAIT_FAILED;
}

static int do_clone_newuser(void)
{
        return clone_and_wait(CLONE_NEWUSER | SIGCHLD);
}

static int do_clone_newnet(void)
{
        return clone_and_wait(CLONE_NEWNET | SIGCHLD);
}

static int do_clone_plain(void)
{
        return clone_and_wait(SIGCHLD);
}

static int do_fork(void)
{
        int status = 0;
        pid_t pid = fork();

        if (pid < 0)
                return errno;
        if (pid == 0)
                _exit(0);
        if (waitpid(pid, &status, 0) != pid)
                return CHILD_WAIT_FAILED;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : CHILD_WAIT_FAILED;
}

static void *thread_main(void *arg)
{
        return arg;
}

/* glibc tries clone3 first and falls back to clone(2) on ENOSYS. */
static int do_pthread(void)
{
        pthread_t t;
        void *out = NULL;
        int r;

        r = pthread_create(&t, NULL, thread_main, &r);
        if (r != 0)
                return r;
        r = pthread_join(t, &out);
        if (r != 0)
                return r;
        return out ? 0 : CHILD_WAIT_FAILED;
}

static int do_clone3(void)
{
        /* struct clone_args, version 0: flags, pidfd, child_tid, parent_tid, exit_signal, ... */
        uint64_t args[8] = {0};
        long pid;

        args[4] = SIGCHLD;
        pid = syscall(SYS_clone3, args, sizeof(args));
        if (pid == 0)
                _exit(0);
        if (pid > 0) {
                (void) waitpid((pid_t) pid, NULL, 0);
                return 0;
        }
        return errno;
}

static int do_unshare_newuser(void)
{
        return result(syscall(SYS_unshare, CLONE_NEWUSER));
}

static void test_seccomp_program_load_namespaces(void **state)
{
        struct seccomp_program p = {0};

        (void) state;
        need_seccomp();
        build(false, &p);
        EXPECT(&p, do_unshare_newuser, EPERM);
        EXPECT(&p, do_clone_newuser, EPERM);
        EXPECT(&p, do_clone_newnet, EPERM);
        EXPECT(&p, do_clone3, ENOSYS);
        EXPECT(&p, do_clone_plain, 0);
        EXPECT(&p, do_fork, 0);
        EXPECT(&p, do_pthread, 0);
        seccomp_program_release(&p);
}

static int do_mount(void)
{
        /* A missing mount point: the kernel alone answers ENOENT (as root) or EPERM. */
        return result(syscall(SYS_mount, "none", "/nonexistent-ptc-seccomp", "tmpfs", 0, NULL));
}

static int do_ptrace_traceme(void)
{
        return result(syscall(SYS_ptrace, 0 /* PTRACE_TRACEME */, 0, 0, 0));
}

static int do_keyctl(void)
{
        /* KEYCTL_GET_KEYRING_ID of KEY_SPEC_SESSION_KEYRING, without creating it. */
        return result(syscall(SYS_keyctl, 0, -3, 0));
}

static int do_bpf(void)
{
        return result(syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, NULL, 0));
}

static int do_io_uring_setup(void)
{
        return result(syscall(SYS_io_uring_setup, 1, NULL));
}

#if defined(__x86_64__)
static int do_open_tree_attr(void)
{
        return result(syscall(NR_OPEN_TREE_ATTR, -1, "", 0, NULL, 0));
}
#endif

static void test_seccomp_program_load_denied(void **state)
{
        struct seccomp_program p = {0};

        (void) state;
        need_seccomp();
        build(false, &p);
        EXPECT(&p, do_mount, EPERM);
        EXPECT(&p, do_ptrace_traceme, EPERM);
        EXPECT(&p, do_keyctl, EPERM);
        EXPECT(&p, do_bpf, EPERM);
        EXPECT(&p, do_io_uring_setup, ENOSYS);
        /* Without the filter the kernel answers EFAULT, or EPERM where io_uring is disabled. */
        assert_int_not_equal(exit_code(NULL, do_io_uring_setup), ENOSYS);
#if defined(__x86_64__)
        EXPECT(&p, do_open_tree_attr, EPERM);
#endif
        seccomp_program_release(&p);
}

static int tty_ioctl(unsigned long cmd)
{
        _cleanup_close_ int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        char c = 'x';

        if (fd < 0)
                return CHILD_WAIT_FAILED;
        /* /dev/null is no tty: the kernel's own answer is ENOTTY. */
        return result(syscall(SYS_ioctl, fd, cmd, &c));
}

static int do_tiocsti(void)
{
        return tty_ioctl(TIOCSTI);
}

static int do_tiocsti_high(void)
{
        return tty_ioctl((unsigned long) (TIOCSTI | UINT64_C(1) << 32));
}

static int do_tioclinux(void)
{
        return tty_ioctl(TIOCLINUX);
}

static int do_tcgets(void)
{
        return tty_ioctl(TCGETS);
}

static void test_seccomp_program_load_ioctl(void **state)
{
        struct seccomp_program p = {0};

        (void) state;
        need_seccomp();
        build(false, &p);
        EXPECT(NULL, do_tiocsti, ENOTTY);
        EXPECT(NULL, do_tiocsti_high, ENOTTY);
        EXPECT(&p, do_tiocsti, EPERM);
        EXPECT(&p, do_tiocsti_high, EPERM);
        EXPECT(&p, do_tioclinux, EPERM);
        EXPECT(&p, do_tcgets, ENOTTY);
        seccomp_program_release(&p);
}

static int do_personality_query(void)
{
        return result(syscall(SYS_personality, 0xffffffffUL));
}

static int do_personality_linux(void)
{
        return result(syscall(SYS_personality, 0UL));
}

static int do_personality_no_randomize(void)
{
        return result(syscall(SYS_personality, PERSONA_ADDR_NO_RANDOMIZE));
}

static int do_everyday(void)
{
        _cleanup_close_ int fd = -EBADF;
        char buf[8];

        if (syscall(SYS_getpid) != getpid())
                return CHILD_WAIT_FAILED;
        fd = (int) syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno;
        if (syscall(SYS_read, fd, buf, sizeof(buf)) != 0)
                return CHILD_WAIT_FAILED;
        return 0;
}

static void test_seccomp_program_load_allowed(void **state)
{
        struct seccomp_program p = {0};

        (void) state;
        need_seccomp();
        build(false, &p);
        EXPECT(&p, do_everyday, 0);
        EXPECT(&p, do_personality_query, 0);
        EXPECT(&p, do_personality_linux, 0);
        EXPECT(NULL, do_personality_no_randomize, 0);
        EXPECT(&p, do_personality_no_randomize, EPERM);
        seccomp_program_release(&p);
}

/* A scratch directory for the file tests, made by the test, inherited by the children. */
static char scratch[64];

static void scratch_path(char *buf, size_t size, const char *name)
{
        (void) snprintf(buf, size, "%s/%s", scratch, name);
}

/* A plain 0755 file @name in the scratch directory; 0 or an errno. */
static int make_file(const char *name)
{
        char path[128];
        _cleanup_close_ int fd = -EBADF;

        scratch_path(path, sizeof(path), name);
        fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0755);
        return fd < 0 ? errno : 0;
}

static int chmod_to(const char *name, mode_t mode)
{
        char path[128];
        int r = make_file(name);

        if (r != 0)
                return r;
        scratch_path(path, sizeof(path), name);
        return result(syscall(SYS_chmod, path, mode));
}

static int do_chmod_suid(void)
{
        return chmod_to("chmod-suid", 04755);
}

static int do_chmod_sgid(void)
{
        return chmod_to("chmod-sgid", 02755);
}

static int do_chmod_plain(void)
{
        return chmod_to("chmod-plain", 0700);
}

#if defined(__x86_64__)
static int do_fchmodat2_suid(void)
{
        char path[128];
        int r = make_file("fchmodat2");

        if (r != 0)
                return r;
        scratch_path(path, sizeof(path), "fchmodat2");
        return result(syscall(NR_FCHMODAT2, AT_FDCWD, path, 04755, 0));
}
#endif

static int do_open_suid(void)
{
        char path[128];

        scratch_path(path, sizeof(path), "open-suid");
        return close_result(
                syscall(SYS_openat, AT_FDCWD, path, O_CREAT | O_WRONLY | O_CLOEXEC, 04755));
}

static int do_tmpfile_suid(void)
{
        return close_result(syscall(SYS_openat, AT_FDCWD, scratch, O_TMPFILE | O_WRONLY, 04755));
}

static int do_tmpfile_plain(void)
{
        return close_result(syscall(SYS_openat, AT_FDCWD, scratch, O_TMPFILE | O_WRONLY, 0755));
}

static int do_mknod_chr(void)
{
        char path[128];

        scratch_path(path, sizeof(path), "null");
        return result(syscall(SYS_mknodat, AT_FDCWD, path, S_IFCHR | 0666, makedev(1, 3)));
}

static int do_mknod_fifo(void)
{
        char path[128];

        scratch_path(path, sizeof(path), "fifo");
        return result(syscall(SYS_mknodat, AT_FDCWD, path, S_IFIFO | 0600, 0));
}

static int do_mkdir_sgid(void)
{
        char path[128];

        scratch_path(path, sizeof(path), "dir-sgid");
        return result(syscall(SYS_mkdirat, AT_FDCWD, path, 02777));
}

static int do_setxattr_user(void)
{
        char path[128];
        int r = make_file("xattr");

        if (r != 0)
                return r;
        scratch_path(path, sizeof(path), "xattr");
        return result(syscall(SYS_setxattr, path, "user.ptc", "1", 1, 0));
}

static int do_openat2(void)
{
        /* struct open_how: flags, mode, resolve. */
        uint64_t how[3] = {O_CREAT | O_WRONLY | O_CLOEXEC, 04755, 0};
        char path[128];

        scratch_path(path, sizeof(path), "openat2");
        return close_result(syscall(SYS_openat2, AT_FDCWD, path, how, sizeof(how)));
}

static mode_t mode_of(const char *name)
{
        char path[128];
        struct stat st;

        scratch_path(path, sizeof(path), name);
        assert_int_equal(lstat(path, &st), 0);
        return st.st_mode;
}

static void test_seccomp_program_load_setid(void **state)
{
        struct seccomp_program p = {0};
        int r;

        (void) state;
        need_seccomp();
        build(false, &p);
        (void) snprintf(scratch, sizeof(scratch), "/tmp/ptc-test-seccomp-XXXXXX");
        assert_non_null(mkdtemp(scratch));

        /* Without the filter a file's owner sets the bit: the refusals below are ours. */
        EXPECT(NULL, do_chmod_suid, 0);
        assert_true(mode_of("chmod-suid") & S_ISUID);
        EXPECT(NULL, do_tmpfile_suid, 0);

        EXPECT(&p, do_chmod_sgid, EPERM);
        assert_false(mode_of("chmod-sgid") & (S_ISUID | S_ISGID));
        EXPECT(&p, do_chmod_plain, 0);
        assert_int_equal(mode_of("chmod-plain") & 07777, 0700);
#if defined(__x86_64__)
        EXPECT(&p, do_fchmodat2_suid, EPERM);
#endif
        EXPECT(&p, do_open_suid, EPERM);
        EXPECT(&p, do_tmpfile_suid, EPERM);
        EXPECT(&p, do_tmpfile_plain, 0);
        EXPECT(&p, do_mknod_chr, EPERM);
        EXPECT(&p, do_mknod_fifo, 0);
        assert_true(S_ISFIFO(mode_of("fifo")));
        EXPECT(&p, do_mkdir_sgid, EPERM);
        EXPECT(&p, do_setxattr_user, EOPNOTSUPP);
        EXPECT(&p, do_openat2, ENOSYS);
        /* Without the filter openat2 exists (Linux 5.6) and creates the file. */
        r = exit_code(NULL, do_openat2);
        assert_true(r == 0 || r == ENOSYS);

        assert_int_equal(rm_rf(scratch), 0);
        seccomp_program_release(&p);
}

#if defined(__x86_64__)
static int do_x32_getpid(void)
{
        return result(syscall(39 | X32_SYSCALL_BIT));
}

static int do_i386_getpid(void)
{
        long r;

        /* The ia32 compat entry: same process, audit arch i386. */
        __asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory", "r8", "r9", "r10", "r11");
        return r == getpid() ? 0 : CHILD_WAIT_FAILED;
}
#endif

static void test_seccomp_program_load_x32(void **state)
{
#if defined(__x86_64__)
        struct seccomp_program p = {0};

        (void) state;
        need_seccomp();
        build(false, &p);
        /* The filter sees the x32 bit before the kernel looks for the ABI: killed either way. */
        expect_sigsys(&p, do_x32_getpid);
        seccomp_program_release(&p);
#else
        (void) state;
        test_skip("the x32 ABI is x86_64's");
#endif
}

static void test_seccomp_program_load_i386(void **state)
{
#if defined(__x86_64__)
        struct seccomp_program p = {0};
        int status;

        (void) state;
        need_seccomp();
        /*
         * Only where the kernel runs i386 code at all (IA32_EMULATION, not disabled at boot);
         * elsewhere int 0x80 raises SIGSEGV, and the probe child dies of it.
         */
        status = run_child(NULL, do_i386_getpid);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                test_skip("no IA32 emulation in this kernel (int 0x80: %s)",
                          WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "fails");
        build(false, &p);
        expect_sigsys(&p, do_i386_getpid);
        seccomp_program_release(&p);
#else
        (void) state;
        test_skip("i386 system calls are x86_64's foreign ABI");
#endif
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_seccomp_program_load_sockets),
                cmocka_unit_test(test_seccomp_program_load_namespaces),
                cmocka_unit_test(test_seccomp_program_load_denied),
                cmocka_unit_test(test_seccomp_program_load_ioctl),
                cmocka_unit_test(test_seccomp_program_load_allowed),
                cmocka_unit_test(test_seccomp_program_load_setid),
                cmocka_unit_test(test_seccomp_program_load_x32),
                cmocka_unit_test(test_seccomp_program_load_i386),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
