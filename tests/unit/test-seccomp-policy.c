/* SPDX-License-Identifier: MIT */
#include "../lib/ptc-test.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <seccomp.h>

#include "basic/diag.h"
#include "basic/fd-util.h"
#include "basic/macro.h"
#include "core/sandbox/seccomp-policy.h"

#define ALLOW SECCOMP_RET_ALLOW
#define ERRNO(e) (SECCOMP_RET_ERRNO | (uint32_t) (e))
#define KILL SECCOMP_RET_KILL_PROCESS

#define X32_SYSCALL_BIT 0x40000000
#define PERSONA_ADDR_NO_RANDOMIZE 0x0040000UL
#define NR_OPEN_TREE_ATTR 467 /* x86_64; newer than the installed headers */

/* Exit codes of a child whose setup failed, above every errno. */
enum {
        CHILD_NNP_FAILED = 200,
        CHILD_LOAD_FAILED,
        CHILD_WAIT_FAILED,
};

static void build(bool allow_inet, struct seccomp_program *p)
{
        struct seccomp_policy_opts o = {.allow_inet = allow_inet};
        struct diag d = {{0}};
        int r;

        r = seccomp_policy_build(&o, p, &d);
        if (r < 0)
                fail_msg("seccomp_policy_build: %s (%d)", d.message, r);
        assert_non_null(p->filter);
        assert_true(p->len > 0);
}

/*
 * A classic-BPF interpreter for the instructions libseccomp emits, so the program's answer can
 * be checked for inputs the kernel would blur (a family the kernel lacks answers EAFNOSUPPORT
 * with or without the filter) and for millions of argument values without a fork each. The
 * kernel tests below cross-check it on real system calls.
 */
static uint32_t run_bpf(const struct seccomp_program *p, int nr, uint32_t arch, uint64_t a0,
                        uint64_t a1)
{
        struct seccomp_data d = {.nr = nr, .arch = arch, .args = {a0, a1}};
        uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};

        for (size_t pc = 0; pc < p->len; pc++) {
                const struct sock_filter *f = &p->filter[pc];
                const uint32_t k = f->k;

                switch (f->code) {
                case BPF_LD | BPF_W | BPF_ABS:
                        assert_true(k % 4 == 0 && k + 4 <= sizeof(d));
                        memcpy(&a, (const char *) &d + k, sizeof(a));
                        break;
                case BPF_LD | BPF_IMM:
                        a = k;
                        break;
                case BPF_LDX | BPF_IMM:
                        x = k;
                        break;
                case BPF_LD | BPF_MEM:
                        assert_true(k < BPF_MEMWORDS);
                        a = mem[k];
                        break;
                case BPF_LDX | BPF_MEM:
                        assert_true(k < BPF_MEMWORDS);
                        x = mem[k];
                        break;
                case BPF_ST:
                        assert_true(k < BPF_MEMWORDS);
                        mem[k] = a;
                        break;
                case BPF_STX:
                        assert_true(k < BPF_MEMWORDS);
                        mem[k] = x;
                        break;
                case BPF_ALU | BPF_AND | BPF_K:
                        a &= k;
                        break;
                case BPF_ALU | BPF_OR | BPF_K:
                        a |= k;
                        break;
                case BPF_MISC | BPF_TAX:
                        x = a;
                        break;
                case BPF_MISC | BPF_TXA:
                        a = x;
                        break;
                case BPF_JMP | BPF_JA:
                        pc += k;
                        break;
                case BPF_JMP | BPF_JEQ | BPF_K:
                        pc += a == k ? f->jt : f->jf;
                        break;
                case BPF_JMP | BPF_JGT | BPF_K:
                        pc += a > k ? f->jt : f->jf;
                        break;
                case BPF_JMP | BPF_JGE | BPF_K:
                        pc += a >= k ? f->jt : f->jf;
                        break;
                case BPF_JMP | BPF_JSET | BPF_K:
                        pc += (a & k) ? f->jt : f->jf;
                        break;
                case BPF_RET | BPF_K:
                        return k;
                case BPF_RET | BPF_A:
                        return a;
                default:
                        fail_msg("instruction %zu: opcode %#x not emulated", pc, f->code);
                }
        }
        fail_msg("the program runs past its end");
        return 0;
}

static uint32_t eval(const struct seccomp_program *p, const char *name, uint64_t a0, uint64_t a1)
{
        int nr = seccomp_syscall_resolve_name(name);

        if (nr < 0)
                fail_msg("libseccomp does not know %s", name);
        return run_bpf(p, nr, seccomp_arch_native(), a0, a1);
}

static void test_seccomp_is_available(void **state)
{
        _cleanup_free_ char *avail = NULL;
        size_t len = 0;
        int r;

        (void) state;
        /* The kernel lists the actions once filters are built in. */
        r = read_file_at(AT_FDCWD, "/proc/sys/kernel/seccomp/actions_avail", 4096, &avail, &len);
        assert_int_equal(seccomp_is_available(),
                         r >= 0 && strstr(avail, "kill_process") && strstr(avail, "errno"));
}

static void test_seccomp_program_release_idempotent(void **state)
{
        struct seccomp_program p = {0};

        (void) state;
        seccomp_program_release(NULL);
        seccomp_program_release(&p);
        build(false, &p);
        seccomp_program_release(&p);
        assert_null(p.filter);
        assert_int_equal(p.len, 0);
        seccomp_program_release(&p);
        assert_null(p.filter);
        assert_int_equal(seccomp_program_load(&p), -EINVAL);
        assert_int_equal(seccomp_program_load(NULL), -EINVAL);
}

static void test_seccomp_policy_build_twice(void **state)
{
        struct seccomp_program a = {0}, b = {0};

        (void) state;
        /* Two independent programs (ASan checks that neither leaks); the same policy twice. */
        build(true, &a);
        build(true, &b);
        assert_ptr_not_equal(a.filter, b.filter);
        assert_int_equal(a.len, b.len);
        assert_memory_equal(a.filter, b.filter, a.len * sizeof(*a.filter));
        seccomp_program_release(&a);
        seccomp_program_release(&b);

        build(false, &a);
        assert_true(a.len <= BPF_MAXINSNS);
        seccomp_program_release(&a);
}

struct expect {
        const char *name;
        uint32_t action;
};

/* The denylist as the policy states it; a name missing from this libseccomp is skipped. */
static const struct expect deny_expected[] = {
        {"clone3", ERRNO(ENOSYS)},
        {"io_uring_setup", ERRNO(ENOSYS)},
        {"io_uring_enter", ERRNO(ENOSYS)},
        {"io_uring_register", ERRNO(ENOSYS)},
        {"unshare", ERRNO(EPERM)},
        {"setns", ERRNO(EPERM)},
        {"mount", ERRNO(EPERM)},
        {"umount2", ERRNO(EPERM)},
        {"pivot_root", ERRNO(EPERM)},
        {"chroot", ERRNO(EPERM)},
        {"open_tree", ERRNO(EPERM)},
        {"move_mount", ERRNO(EPERM)},
        {"fsopen", ERRNO(EPERM)},
        {"fsconfig", ERRNO(EPERM)},
        {"fsmount", ERRNO(EPERM)},
        {"fspick", ERRNO(EPERM)},
        {"mount_setattr", ERRNO(EPERM)},
        {"ptrace", ERRNO(EPERM)},
        {"process_vm_readv", ERRNO(EPERM)},
        {"process_vm_writev", ERRNO(EPERM)},
        {"pidfd_getfd", ERRNO(EPERM)},
        {"process_madvise", ERRNO(EPERM)},
        {"kcmp", ERRNO(EPERM)},
        {"keyctl", ERRNO(EPERM)},
        {"add_key", ERRNO(EPERM)},
        {"request_key", ERRNO(EPERM)},
        {"bpf", ERRNO(EPERM)},
        {"perf_event_open", ERRNO(EPERM)},
        {"userfaultfd", ERRNO(EPERM)},
        {"kexec_load", ERRNO(EPERM)},
        {"kexec_file_load", ERRNO(EPERM)},
        {"init_module", ERRNO(EPERM)},
        {"finit_module", ERRNO(EPERM)},
        {"delete_module", ERRNO(EPERM)},
        {"name_to_handle_at", ERRNO(EPERM)},
        {"open_by_handle_at", ERRNO(EPERM)},
        {"quotactl", ERRNO(EPERM)},
        {"quotactl_fd", ERRNO(EPERM)},
        {"swapon", ERRNO(EPERM)},
        {"swapoff", ERRNO(EPERM)},
        {"reboot", ERRNO(EPERM)},
        {"acct", ERRNO(EPERM)},
        {"syslog", ERRNO(EPERM)},
        {"vhangup", ERRNO(EPERM)},
        {"iopl", ERRNO(EPERM)},
        {"ioperm", ERRNO(EPERM)},
        {"modify_ldt", ERRNO(EPERM)},
        {"lookup_dcookie", ERRNO(EPERM)},
        {"fanotify_init", ERRNO(EPERM)},
        {"settimeofday", ERRNO(EPERM)},
        {"clock_settime", ERRNO(EPERM)},
        {"clock_adjtime", ERRNO(EPERM)},
        {"adjtimex", ERRNO(EPERM)},
        {"sethostname", ERRNO(EPERM)},
        {"setdomainname", ERRNO(EPERM)},
        /* Not refused: everyday calls, and Landlock, with which a script only loses rights. */
        {"read", ALLOW},
        {"write", ALLOW},
        {"openat", ALLOW},
        {"close", ALLOW},
        {"mmap", ALLOW},
        {"mprotect", ALLOW},
        {"getpid", ALLOW},
        {"execve", ALLOW},
        {"wait4", ALLOW},
        {"prctl", ALLOW},
        {"seccomp", ALLOW},
        {"landlock_create_ruleset", ALLOW},
        {"landlock_add_rule", ALLOW},
        {"landlock_restrict_self", ALLOW},
};

static void test_seccomp_policy_build_denylist(void **state)
{
        struct seccomp_program p = {0};
        size_t checked = 0;

        (void) state;
        build(false, &p);
        for (size_t i = 0; i < ELEMENTSOF(deny_expected); i++) {
                const struct expect *e = &deny_expected[i];
                int nr = seccomp_syscall_resolve_name(e->name);

                if (nr < 0)
                        continue;
                if (run_bpf(&p, nr, seccomp_arch_native(), 0, 0) != e->action)
                        fail_msg("%s: expected %#x, got %#x", e->name, e->action,
                                 run_bpf(&p, nr, seccomp_arch_native(), 0, 0));
                checked++;
        }
        assert_true(checked > 50);
#if defined(__x86_64__)
        /* Unknown to libseccomp 2.5.4, added by number. */
        assert_int_equal(run_bpf(&p, NR_OPEN_TREE_ATTR, AUDIT_ARCH_X86_64, 0, 0), ERRNO(EPERM));
#endif
        seccomp_program_release(&p);
}

static bool family_allowed(uint64_t family, bool allow_inet)
{
        return family == AF_UNIX || (allow_inet && (family == AF_INET || family == AF_INET6));
}

static void test_seccomp_policy_build_socket_families(void **state)
{
        static const char *const calls[] = {"socket", "socketpair"};

        (void) state;
        for (int inet = 0; inet < 2; inet++) {
                struct seccomp_program p = {0};

                build(inet, &p);
                for (size_t c = 0; c < ELEMENTSOF(calls); c++) {
                        /* Every family number the kernel could ever assign, and then some. */
                        for (uint64_t family = 0; family < 4096; family++) {
                                uint32_t want =
                                        family_allowed(family, inet) ? ALLOW : ERRNO(EAFNOSUPPORT);

                                if (eval(&p, calls[c], family, SOCK_STREAM) != want)
                                        fail_msg("%s(%llu), allow_inet=%d", calls[c],
                                                 (unsigned long long) family, inet);
                        }
                        assert_int_equal(eval(&p, calls[c], AF_NETLINK, 0), ERRNO(EAFNOSUPPORT));
                        assert_int_equal(eval(&p, calls[c], AF_PACKET, 0), ERRNO(EAFNOSUPPORT));
                        assert_int_equal(eval(&p, calls[c], AF_VSOCK, 0), ERRNO(EAFNOSUPPORT));
                        assert_int_equal(eval(&p, calls[c], AF_BLUETOOTH, 0), ERRNO(EAFNOSUPPORT));
                        assert_int_equal(eval(&p, calls[c], AF_ALG, 0), ERRNO(EAFNOSUPPORT));
                        assert_int_equal(eval(&p, calls[c], AF_UNSPEC, 0), ERRNO(EAFNOSUPPORT));
                        /* High bits fail closed although the kernel would see AF_UNIX. */
                        assert_int_equal(eval(&p, calls[c], AF_UNIX | UINT64_C(1) << 32, 0),
                                         ERRNO(EAFNOSUPPORT));
                        assert_int_equal(eval(&p, calls[c], UINT64_MAX, 0), ERRNO(EAFNOSUPPORT));
                        assert_int_equal(eval(&p, calls[c], 0xffffffffU, 0), ERRNO(EAFNOSUPPORT));
                }
                seccomp_program_release(&p);
        }
}

static void test_seccomp_policy_build_clone_flags(void **state)
{
        static const uint64_t ns[] = {
                CLONE_NEWNS,   CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
                CLONE_NEWUSER, CLONE_NEWPID,    CLONE_NEWNET, 0x80 /* CLONE_NEWTIME */};
        /* What glibc's pthread_create passes, and fork(). */
        const uint64_t thread = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                                CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID |
                                CLONE_CHILD_CLEARTID;
        const uint64_t fork_flags = CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD;
        struct seccomp_program p = {0};

        (void) state;
        build(false, &p);
        assert_int_equal(eval(&p, "clone", SIGCHLD, 0), ALLOW);
        assert_int_equal(eval(&p, "clone", thread, 0), ALLOW);
        assert_int_equal(eval(&p, "clone", fork_flags, 0), ALLOW);
        assert_int_equal(eval(&p, "clone", CLONE_VFORK | CLONE_VM | SIGCHLD, 0), ALLOW);
        for (size_t i = 0; i < ELEMENTSOF(ns); i++) {
                assert_int_equal(eval(&p, "clone", ns[i], 0), ERRNO(EPERM));
                assert_int_equal(eval(&p, "clone", ns[i] | SIGCHLD, 0), ERRNO(EPERM));
                assert_int_equal(eval(&p, "clone", ns[i] | thread, 0), ERRNO(EPERM));
                assert_int_equal(eval(&p, "clone", ns[i] | UINT64_C(1) << 40, 0), ERRNO(EPERM));
        }
        seccomp_program_release(&p);
}

static uint32_t persona_want(uint64_t v)
{
        /* The kernel reads an unsigned int: only the low half decides. */
        uint32_t low = (uint32_t) v;

        return low == 0 || low == 0xffffffffU ? ALLOW : ERRNO(EPERM);
}

static void test_seccomp_policy_build_personality(void **state)
{
        struct seccomp_program p = {0};
        uint64_t v = 0x9e3779b97f4a7c15ULL;

        (void) state;
        build(false, &p);
        assert_int_equal(eval(&p, "personality", 0, 0), ALLOW);
        assert_int_equal(eval(&p, "personality", 0xffffffffU, 0), ALLOW);
        assert_int_equal(eval(&p, "personality", UINT64_MAX, 0), ALLOW);
        assert_int_equal(eval(&p, "personality", UINT64_C(1) << 32, 0), ALLOW);
        assert_int_equal(eval(&p, "personality", PERSONA_ADDR_NO_RANDOMIZE, 0), ERRNO(EPERM));
        assert_int_equal(eval(&p, "personality", 0x0400000 /* READ_IMPLIES_EXEC */, 0),
                         ERRNO(EPERM));
        assert_int_equal(eval(&p, "personality", 0x0008 /* PER_LINUX32 */, 0), ERRNO(EPERM));
        assert_int_equal(eval(&p, "personality", 0xfffffffeU, 0), ERRNO(EPERM));
        assert_int_equal(eval(&p, "personality", 0x7fffffffU, 0), ERRNO(EPERM));
        assert_int_equal(eval(&p, "personality", PERSONA_ADDR_NO_RANDOMIZE | UINT64_C(1) << 32, 0),
                         ERRNO(EPERM));
        /* Every value with one bit set or one bit clear, then a pseudo-random sweep. */
        for (unsigned i = 0; i < 32; i++) {
                uint64_t bit = UINT64_C(1) << i;

                assert_int_equal(eval(&p, "personality", bit, 0), ERRNO(EPERM));
                assert_int_equal(eval(&p, "personality", 0xffffffffU & ~bit, 0), ERRNO(EPERM));
        }
        for (unsigned i = 0; i < 200000; i++) {
                v ^= v << 13;
                v ^= v >> 7;
                v ^= v << 17;
                if (eval(&p, "personality", v, 0) != persona_want(v))
                        fail_msg("personality(%#llx)", (unsigned long long) v);
        }
        seccomp_program_release(&p);
}

static void test_seccomp_policy_build_ioctl(void **state)
{
        struct seccomp_program p = {0};

        (void) state;
        build(false, &p);
        assert_int_equal(eval(&p, "ioctl", 0, TIOCSTI), ERRNO(EPERM));
        assert_int_equal(eval(&p, "ioctl", 0, TIOCLINUX), ERRNO(EPERM));
        assert_int_equal(eval(&p, "ioctl", 0, TIOCSTI | UINT64_C(1) << 32), ERRNO(EPERM));
        assert_int_equal(eval(&p, "ioctl", 0, TIOCLINUX | UINT64_C(0xffffffff) << 32),
                         ERRNO(EPERM));
        assert_int_equal(eval(&p, "ioctl", 0, TCGETS), ALLOW);
        assert_int_equal(eval(&p, "ioctl", 0, TIOCSTI + 1), ALLOW);
        assert_int_equal(eval(&p, "ioctl", 0, FIONREAD), ALLOW);
        assert_int_equal(eval(&p, "ioctl", TIOCSTI, 0), ALLOW);
        seccomp_program_release(&p);
}

static void test_seccomp_policy_build_foreign_abi(void **state)
{
        struct seccomp_program p = {0};
        int getpid_nr = seccomp_syscall_resolve_name("getpid");

        (void) state;
        build(false, &p);
        assert_int_equal(run_bpf(&p, getpid_nr, seccomp_arch_native(), 0, 0), ALLOW);
        assert_int_equal(run_bpf(&p, getpid_nr, seccomp_arch_native() ^ 1, 0, 0), KILL);
        assert_int_equal(run_bpf(&p, getpid_nr, 0, 0, 0), KILL);
#if defined(__x86_64__)
        assert_int_equal(run_bpf(&p, 20, AUDIT_ARCH_I386, 0, 0), KILL);
        /* x32 shares the x86_64 audit arch; only the number tells it apart. */
        assert_int_equal(run_bpf(&p, 39 | X32_SYSCALL_BIT, AUDIT_ARCH_X86_64, 0, 0), KILL);
        assert_int_equal(run_bpf(&p, 0 | X32_SYSCALL_BIT, AUDIT_ARCH_X86_64, 0, 0), KILL);
        assert_int_equal(run_bpf(&p, 547 | X32_SYSCALL_BIT, AUDIT_ARCH_X86_64, 0, 0), KILL);
#endif
        seccomp_program_release(&p);
}

/*
 * The kernel tests: run @fn in a forked child under @p (no filter when NULL) and return its wait
 * status. @fn returns 0 or the errno of the call it makes.
 */
static int run_child(const struct seccomp_program *p, int (*fn)(void))
{
        int status = 0;
        pid_t pid;

        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                        _exit(CHILD_NNP_FAILED);
                if (p && seccomp_program_load(p) < 0)
                        _exit(CHILD_LOAD_FAILED);
                _exit(fn());
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        return status;
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
        if (!seccomp_is_available())
                skip();
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
        if (!seccomp_is_available())
                skip();
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
        int status;

        (void) state;
        if (!seccomp_is_available())
                skip();
        build(false, &p);
        EXPECT(&p, do_mount, EPERM);
        EXPECT(&p, do_ptrace_traceme, EPERM);
        EXPECT(&p, do_keyctl, EPERM);
        EXPECT(&p, do_bpf, EPERM);
        EXPECT(&p, do_io_uring_setup, ENOSYS);
        /* Without the filter the kernel answers EFAULT, or EPERM where io_uring is disabled. */
        status = run_child(NULL, do_io_uring_setup);
        assert_true(WIFEXITED(status));
        assert_int_not_equal(WEXITSTATUS(status), ENOSYS);
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
        if (!seccomp_is_available())
                skip();
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
        if (!seccomp_is_available())
                skip();
        build(false, &p);
        EXPECT(&p, do_everyday, 0);
        EXPECT(&p, do_personality_query, 0);
        EXPECT(&p, do_personality_linux, 0);
        EXPECT(NULL, do_personality_no_randomize, 0);
        EXPECT(&p, do_personality_no_randomize, EPERM);
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

static void test_seccomp_program_load_foreign_abi(void **state)
{
#if defined(__x86_64__)
        struct seccomp_program p = {0};
        int status;

        (void) state;
        if (!seccomp_is_available())
                skip();
        build(false, &p);

        status = run_child(&p, do_x32_getpid);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), SIGSYS);

        /* Only where the kernel runs i386 code at all (IA32_EMULATION, not disabled at boot). */
        status = run_child(NULL, do_i386_getpid);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
                status = run_child(&p, do_i386_getpid);
                assert_true(WIFSIGNALED(status));
                assert_int_equal(WTERMSIG(status), SIGSYS);
        }
        seccomp_program_release(&p);
#else
        (void) state;
        skip();
#endif
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_seccomp_is_available),
                cmocka_unit_test(test_seccomp_program_release_idempotent),
                cmocka_unit_test(test_seccomp_policy_build_twice),
                cmocka_unit_test(test_seccomp_policy_build_denylist),
                cmocka_unit_test(test_seccomp_policy_build_socket_families),
                cmocka_unit_test(test_seccomp_policy_build_clone_flags),
                cmocka_unit_test(test_seccomp_policy_build_personality),
                cmocka_unit_test(test_seccomp_policy_build_ioctl),
                cmocka_unit_test(test_seccomp_policy_build_foreign_abi),
                cmocka_unit_test(test_seccomp_program_load_sockets),
                cmocka_unit_test(test_seccomp_program_load_namespaces),
                cmocka_unit_test(test_seccomp_program_load_denied),
                cmocka_unit_test(test_seccomp_program_load_ioctl),
                cmocka_unit_test(test_seccomp_program_load_allowed),
                cmocka_unit_test(test_seccomp_program_load_foreign_abi),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
