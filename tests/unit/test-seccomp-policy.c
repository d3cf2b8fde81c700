/* SPDX-License-Identifier: MIT */
/* The seccomp policy as compiled: its BPF program run through an interpreter. */
#include "../lib/ptc-test.h"
#include "../lib/seccomp-test.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <seccomp.h>

#include "basic/fd-util.h"
#include "basic/macro.h"

/*
 * A classic-BPF interpreter for the instructions libseccomp emits, so the program's answer can
 * be checked for inputs the kernel would blur (a family the kernel lacks answers EAFNOSUPPORT
 * with or without the filter) and for millions of argument values without a fork each. The
 * kernel tests below cross-check it on real system calls.
 */
static uint32_t run_bpf_args(const struct seccomp_program *p, int nr, uint32_t arch,
                             const uint64_t args[6])
{
        struct seccomp_data d = {.nr = nr, .arch = arch};
        uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};

        memcpy(d.args, args, sizeof(d.args));
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

static uint32_t run_bpf(const struct seccomp_program *p, int nr, uint32_t arch, uint64_t a0,
                        uint64_t a1)
{
        const uint64_t args[6] = {a0, a1};

        return run_bpf_args(p, nr, arch, args);
}

static int resolve_or_fail(const char *name)
{
        int nr = seccomp_syscall_resolve_name(name);

        if (nr < 0)
                fail_msg("libseccomp does not know %s", name);
        return nr;
}

static uint32_t eval(const struct seccomp_program *p, const char *name, uint64_t a0, uint64_t a1)
{
        return run_bpf(p, resolve_or_fail(name), seccomp_arch_native(), a0, a1);
}

/* @name with up to four arguments. */
static uint32_t eval4(const struct seccomp_program *p, const char *name, uint64_t a0, uint64_t a1,
                      uint64_t a2, uint64_t a3)
{
        const uint64_t args[6] = {a0, a1, a2, a3};

        return run_bpf_args(p, resolve_or_fail(name), seccomp_arch_native(), args);
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
        {"openat2", ERRNO(ENOSYS)},
        {"setxattr", ERRNO(EOPNOTSUPP)},
        {"lsetxattr", ERRNO(EOPNOTSUPP)},
        {"fsetxattr", ERRNO(EOPNOTSUPP)},
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
        /* Reading and removing extended attributes. */
        {"getxattr", ALLOW},
        {"listxattr", ALLOW},
        {"removexattr", ALLOW},
        {"fremovexattr", ALLOW},
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
        assert_int_equal(run_bpf(&p, NR_SETXATTRAT, AUDIT_ARCH_X86_64, 0, 0), ERRNO(EOPNOTSUPP));
        assert_int_equal(run_bpf(&p, NR_FCHMODAT2, AUDIT_ARCH_X86_64, 0, 0), ALLOW);
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

/* Each call that takes a mode: where the mode is, and for open/openat where the flags are. */
static const struct mode_case {
        const char *name;
        unsigned mode_arg;
        int flags_arg;
} mode_cases[] = {
        {"chmod", 1, -1}, {"fchmod", 1, -1},  {"fchmodat", 2, -1}, {"fchmodat2", 2, -1},
        {"mkdir", 1, -1}, {"mkdirat", 2, -1}, {"mknod", 1, -1},    {"mknodat", 2, -1},
        {"creat", 1, -1}, {"open", 2, 1},     {"openat", 3, 2},
};

static uint32_t eval_mode(const struct seccomp_program *p, const struct mode_case *c, uint64_t mode,
                          uint64_t flags)
{
        uint64_t args[6] = {AT_FDCWD, 0, 0, 0, 0, 0};

        args[c->mode_arg] = mode;
        if (c->flags_arg >= 0)
                args[c->flags_arg] = flags;
        return run_bpf_args(p, seccomp_syscall_resolve_name(c->name), seccomp_arch_native(), args);
}

static bool is_mknod(const struct mode_case *c)
{
        return strcmp(c->name, "mknod") == 0 || strcmp(c->name, "mknodat") == 0;
}

/* What the policy should answer for @mode given to @c (with @flags for open/openat). */
static uint32_t mode_want(const struct mode_case *c, uint64_t mode, uint64_t flags)
{
        const uint64_t tmpfile = O_TMPFILE & ~O_DIRECTORY;
        bool creates = c->flags_arg < 0 || (flags & O_CREAT) || (flags & tmpfile) == tmpfile;

        if (creates && (mode & (S_ISUID | S_ISGID)))
                return ERRNO(EPERM);
        if (is_mknod(c) && ((mode & S_IFMT) == S_IFCHR || (mode & S_IFMT) == S_IFBLK))
                return ERRNO(EPERM);
        return ALLOW;
}

static void test_seccomp_policy_build_setid_modes(void **state)
{
        static const uint64_t flags[] = {
                O_RDONLY,
                O_WRONLY | O_CLOEXEC,
                O_CREAT | O_WRONLY,
                O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC,
                O_TMPFILE | O_WRONLY,
                (O_TMPFILE & ~O_DIRECTORY) | O_RDWR, /* EINVAL to the kernel; refused first */
                O_DIRECTORY | O_RDONLY,
        };
        static const uint64_t types[] = {0, S_IFREG, S_IFIFO, S_IFSOCK, S_IFCHR, S_IFBLK, S_IFDIR};
        struct seccomp_program p = {0};
        size_t checked = 0;

        (void) state;
        build(false, &p);
        for (size_t i = 0; i < ELEMENTSOF(mode_cases); i++) {
                const struct mode_case *c = &mode_cases[i];

                if (seccomp_syscall_resolve_name(c->name) < 0)
                        continue; /* not on this architecture */
                /* Flags count for open and openat only, file types for mknod only. */
                const size_t n_flags = c->flags_arg >= 0 ? ELEMENTSOF(flags) : 1;
                const size_t n_types = is_mknod(c) ? ELEMENTSOF(types) : 1;

                for (size_t f = 0; f < n_flags; f++)
                        for (size_t t = 0; t < n_types; t++)
                                /* Every permission bit combination, and then with high bits. */
                                for (uint64_t perm = 0; perm <= 07777; perm++) {
                                        const uint64_t mode = types[t] | perm;
                                        const uint64_t high = mode | UINT64_C(0xabcd) << 32;
                                        const uint32_t want = mode_want(c, mode, flags[f]);

                                        if (eval_mode(&p, c, mode, flags[f]) != want)
                                                fail_msg("%s(mode %#llo, flags %#llo)", c->name,
                                                         (unsigned long long) mode,
                                                         (unsigned long long) flags[f]);
                                        /* The kernel reads 16 bits of the mode. */
                                        if (eval_mode(&p, c, high, flags[f]) != want)
                                                fail_msg("%s(mode %#llx)", c->name,
                                                         (unsigned long long) high);
                                }
                checked++;
        }
        /* The *at calls exist everywhere; fchmodat2 comes with Linux 6.6 or by number. */
        assert_true(checked >= 5);

        assert_int_equal(eval(&p, "chmod", 0, 04755), ERRNO(EPERM));
        assert_int_equal(eval(&p, "chmod", 0, 02755), ERRNO(EPERM));
        assert_int_equal(eval(&p, "chmod", 0, 01777), ALLOW); /* sticky is no privilege */
        assert_int_equal(eval4(&p, "openat", AT_FDCWD, 0, O_CREAT | O_WRONLY, 06755), ERRNO(EPERM));
        assert_int_equal(eval4(&p, "openat", AT_FDCWD, 0, O_RDONLY, 06755), ALLOW);
        assert_int_equal(eval4(&p, "mknodat", AT_FDCWD, 0, S_IFCHR | 0666, 0x103), ERRNO(EPERM));
        assert_int_equal(eval4(&p, "mknodat", AT_FDCWD, 0, S_IFIFO | 0666, 0), ALLOW);
#if defined(__x86_64__)
        {
                const uint64_t suid[6] = {AT_FDCWD, 0, 04755, 0};
                const uint64_t plain[6] = {AT_FDCWD, 0, 0755, 0};

                assert_int_equal(run_bpf_args(&p, NR_FCHMODAT2, AUDIT_ARCH_X86_64, suid),
                                 ERRNO(EPERM));
                assert_int_equal(run_bpf_args(&p, NR_FCHMODAT2, AUDIT_ARCH_X86_64, plain), ALLOW);
        }
#endif
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

/* The terminal commands' program: TIOCSTI and TIOCLINUX only, on every ABI a command has. */
static void test_seccomp_tty_build(void **state)
{
        struct seccomp_program p = {0};
        struct diag d = {};
        int getpid_nr = seccomp_syscall_resolve_name("getpid");

        (void) state;
        assert_int_equal(seccomp_tty_build(&p, &d), 0);
        assert_int_equal(eval(&p, "ioctl", 0, TIOCSTI), ERRNO(EPERM));
        assert_int_equal(eval(&p, "ioctl", 0, TIOCLINUX), ERRNO(EPERM));
        assert_int_equal(eval(&p, "ioctl", 0, TIOCSTI | UINT64_C(1) << 32), ERRNO(EPERM));
        assert_int_equal(eval(&p, "ioctl", 0, TCGETS), ALLOW);
        assert_int_equal(eval(&p, "ioctl", TIOCSTI, 0), ALLOW);
        /* Nothing else: what the full policy refuses, this one lets by. */
        assert_int_equal(eval(&p, "unshare", 0, 0), ALLOW);
        assert_int_equal(eval(&p, "mount", 0, 0), ALLOW);
        assert_int_equal(eval(&p, "ptrace", 0, 0), ALLOW);
        assert_int_equal(run_bpf(&p, getpid_nr, 0, 0, 0), KILL);
#if defined(__x86_64__)
        /* A 32-bit binary a command runs: its calls pass, its TIOCSTI (ioctl is 54) not. */
        assert_int_equal(run_bpf(&p, 20, AUDIT_ARCH_I386, 0, 0), ALLOW);
        assert_int_equal(run_bpf(&p, 54, AUDIT_ARCH_I386, 0, TIOCSTI), ERRNO(EPERM));
        assert_int_equal(run_bpf(&p, 54, AUDIT_ARCH_I386, 0, TCGETS), ALLOW);
        /* x32: its ioctl is 514. */
        assert_int_equal(run_bpf(&p, 39 | X32_SYSCALL_BIT, AUDIT_ARCH_X86_64, 0, 0), ALLOW);
        assert_int_equal(run_bpf(&p, 514 | X32_SYSCALL_BIT, AUDIT_ARCH_X86_64, 0, TIOCSTI),
                         ERRNO(EPERM));
#endif
        assert_non_null(seccomp_tty_program());
        assert_ptr_equal(seccomp_tty_program(), seccomp_tty_program());
        seccomp_program_release(&p);
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
                cmocka_unit_test(test_seccomp_tty_build),
                cmocka_unit_test(test_seccomp_policy_build_setid_modes),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
