/* SPDX-License-Identifier: MIT */
#include "core/sandbox/seccomp-policy.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <seccomp.h>

#include "basic/compat/clone.h"
#include "basic/diag.h"
#include "basic/log.h"
#include "basic/macro.h"

/*
 * System calls newer than the syscall table of libseccomp 2.5.4 (Linux 5.17), which cannot
 * resolve their names: open_tree_attr(2) (Linux 6.15) belongs to the mount API, setxattrat(2)
 * (6.13) sets extended attributes, fchmodat2(2) (6.6) changes a mode (Debian's 2.5.4 knows it,
 * the upstream release does not). Since Linux 5.1 a new system call has the same number on
 * every architecture except alpha and mips, so they are spelled by number where that is known
 * to hold, and skipped elsewhere. A newer libseccomp resolves the names itself.
 */
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || defined(__riscv)
#        define HAVE_UNIFIED_SYSCALL_NUMBERS 1
#else
#        define HAVE_UNIFIED_SYSCALL_NUMBERS 0
#endif

static const struct {
        const char *name;
        int nr;
} late_syscalls[] = {
        {"fchmodat2", 452},
        {"setxattrat", 463},
        {"open_tree_attr", 467},
};

/* The flag of O_TMPFILE that makes it one (O_TMPFILE is __O_TMPFILE | O_DIRECTORY). */
#define O_TMPFILE_BIT (O_TMPFILE & ~O_DIRECTORY)

struct deny {
        const char *name;
        int error;
};

static const struct deny deny_table[] = {
        /*
         * ENOSYS, not EPERM: glibc (pthread_create, posix_spawn) retries with clone(2) only on
         * ENOSYS, and the filter cannot read clone3's flags, which sit behind a pointer.
         */
        {"clone3", ENOSYS},
        /* io_uring submits work the filter never sees; ENOSYS lets callers fall back to epoll. */
        {"io_uring_setup", ENOSYS},
        {"io_uring_enter", ENOSYS},
        {"io_uring_register", ENOSYS},

        /* New namespaces: their privileges are the usual first step of a kernel exploit. */
        {"unshare", EPERM},
        {"setns", EPERM},

        /* Every mount API call: the sandbox's view of the file system must stay as built. */
        {"mount", EPERM},
        {"umount2", EPERM},
        {"pivot_root", EPERM},
        {"chroot", EPERM},
        {"open_tree", EPERM},
        {"open_tree_attr", EPERM},
        {"move_mount", EPERM},
        {"fsopen", EPERM},
        {"fsconfig", EPERM},
        {"fsmount", EPERM},
        {"fspick", EPERM},
        {"mount_setattr", EPERM},

        /* Reaching into another process: its memory, its fds, its state. */
        {"ptrace", EPERM},
        {"process_vm_readv", EPERM},
        {"process_vm_writev", EPERM},
        {"pidfd_getfd", EPERM},
        {"process_madvise", EPERM},
        {"kcmp", EPERM},

        /* Kernel keyrings are shared by the user's processes outside the sandbox. */
        {"keyctl", EPERM},
        {"add_key", EPERM},
        {"request_key", EPERM},

        /* Large kernel attack surface that no script needs. */
        {"bpf", EPERM},
        {"perf_event_open", EPERM},
        {"userfaultfd", EPERM},
        {"lookup_dcookie", EPERM},
        {"fanotify_init", EPERM},

        /* Replacing or extending the running kernel. */
        {"kexec_load", EPERM},
        {"kexec_file_load", EPERM},
        {"init_module", EPERM},
        {"finit_module", EPERM},
        {"delete_module", EPERM},

        /* File handles bypass path-based checks (the Landlock rules, the mount tree). */
        {"name_to_handle_at", EPERM},
        {"open_by_handle_at", EPERM},

        /* System administration: nothing a script may change for the whole machine. */
        {"quotactl", EPERM},
        {"quotactl_fd", EPERM},
        {"swapon", EPERM},
        {"swapoff", EPERM},
        {"reboot", EPERM},
        {"acct", EPERM},
        {"syslog", EPERM},
        {"vhangup", EPERM},
        {"settimeofday", EPERM},
        {"clock_settime", EPERM},
        {"clock_adjtime", EPERM},
        {"adjtimex", EPERM},
        {"sethostname", EPERM},
        {"setdomainname", EPERM},

        /* x86 I/O ports and segment tables (absent elsewhere, then skipped). */
        {"iopl", EPERM},
        {"ioperm", EPERM},
        {"modify_ldt", EPERM},

        /*
         * openat2 carries its flags and mode in a struct the filter cannot read, so the
         * set-id rules below could not see them. ENOSYS, as from a kernel before 5.6: glibc
         * and Python fall back to openat(2), whose mode the filter checks (systemd's
         * RestrictSUIDSGID= does the same).
         */
        {"openat2", ENOSYS},

        /*
         * Setting extended attributes. The name is a string the filter cannot read, and
         * "security.capability" gives a file capabilities that outlive the sandbox: a script
         * that runs with capabilities (root without the namespaces layer) would leave, say, a
         * cap_setuid copy of the interpreter on the host. EOPNOTSUPP, the answer of a file
         * system without extended attributes: cp -p/-a, install and shutil.copy2 then copy
         * without them and succeed (with EPERM all three fail). Reading and removing
         * attributes stay allowed; io_uring's setxattr operations are refused with io_uring.
         */
        {"setxattr", EOPNOTSUPP},
        {"lsetxattr", EOPNOTSUPP},
        {"fsetxattr", EOPNOTSUPP},
        {"setxattrat", EOPNOTSUPP},

        /* The landlock_* calls stay allowed: a script may only restrict itself further. */
};

/* Each flag that creates a new namespace; clone(2) with any of them is refused. */
static const uint64_t clone_ns_flags[] = {
        CLONE_NEWNS,   CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
        CLONE_NEWUSER, CLONE_NEWPID,    CLONE_NEWNET, CLONE_NEWTIME,
};

/* Allowed socket families, ascending (add_family_rules() relies on the order). */
static const int families_local[] = {AF_UNIX};
static const int families_inet[] = {AF_UNIX, AF_INET, AF_INET6};

static void release_ctx(scmp_filter_ctx *ctx)
{
        if (*ctx)
                seccomp_release(*ctx);
}

/* The native number of @name, or -ENOENT when this architecture or libseccomp lacks it. */
static int resolve(const char *name)
{
        /*
         * A call that does not exist on the native architecture resolves to a negative
         * pseudo-syscall number: the kernel has nothing to refuse. A name newer than this
         * libseccomp's table gives __NR_SCMP_ERROR (-1) and is skipped as well, unless its
         * number is known here; a newer libseccomp closes that gap by itself.
         */
        int nr = seccomp_syscall_resolve_name(name);

        if (nr >= 0)
                return nr;
        for (size_t i = 0; HAVE_UNIFIED_SYSCALL_NUMBERS && i < ELEMENTSOF(late_syscalls); i++)
                if (strcmp(name, late_syscalls[i].name) == 0)
                        return late_syscalls[i].nr;
        return -ENOENT;
}

/*
 * Add one rule for @name, with @n comparisons ANDed. @required: fail when the name does not
 * resolve, for the calls whose arguments the policy inspects; they exist on every architecture,
 * so a miss means something is wrong rather than a call to skip.
 */
static int add_rule(scmp_filter_ctx ctx, uint32_t action, const char *name, bool required,
                    unsigned n, const struct scmp_arg_cmp *cmp, struct diag *reterr)
{
        int nr, r;

        nr = resolve(name);
        if (nr < 0) {
                if (required)
                        return diag_set(reterr, -EOPNOTSUPP,
                                        "libseccomp does not know the system call %s on this "
                                        "architecture",
                                        name);
                return 0;
        }

        r = seccomp_rule_add_array(ctx, action, nr, n, cmp);
        if (r < 0)
                return diag_set(reterr, r, "seccomp_rule_add(%s) failed: %s", name, strerror(-r));
        return 0;
}

/*
 * Refuse every family outside @allowed for @name (socket or socketpair) with EAFNOSUPPORT, the
 * answer of a kernel built without that family, which programs already handle.
 *
 * A libseccomp rule compares each argument at most once (seccomp_rule_add(3) returns -EINVAL
 * otherwise), and rules for one call are ORed, so "not in the set" is spelled as "above the
 * largest allowed family" plus one rule per hole below it. The comparisons use all 64 bits
 * while the kernel reads an int: a domain with high bits set is refused, failing closed.
 */
static int add_family_rules(scmp_filter_ctx ctx, const char *name, const int *allowed, size_t n,
                            struct diag *reterr)
{
        const int max = allowed[n - 1];
        struct scmp_arg_cmp above = SCMP_A0(SCMP_CMP_GT, (scmp_datum_t) max);
        size_t i = 0;
        int r;

        r = add_rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), name, true, 1, &above, reterr);
        if (r < 0)
                return r;

        for (int family = 0; family < max; family++) {
                struct scmp_arg_cmp eq = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t) family);

                if (family == allowed[i]) {
                        i++;
                        continue;
                }
                r = add_rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), name, true, 1, &eq, reterr);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int add_clone_rules(scmp_filter_ctx ctx, struct diag *reterr)
{
        /*
         * CLONE_NEWTIME (0x80) lies inside CSIGNAL, the exit-signal byte of clone(2): no valid
         * signal number has that bit, so the rule refuses nothing legitimate, and a new time
         * namespace can only come from clone3 or unshare, both refused above.
         */
        for (size_t i = 0; i < ELEMENTSOF(clone_ns_flags); i++) {
                struct scmp_arg_cmp cmp = SCMP_CMP(CLONE_FLAGS_ARG, SCMP_CMP_MASKED_EQ,
                                                   clone_ns_flags[i], clone_ns_flags[i]);
                int r;

                r = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), "clone", true, 1, &cmp, reterr);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int add_personality_rules(scmp_filter_ctx ctx, struct diag *reterr)
{
        /*
         * Only PER_LINUX (0) and the query 0xffffffff pass: other personalities switch off
         * address-space randomisation (ADDR_NO_RANDOMIZE) or make data executable
         * (READ_IMPLIES_EXEC). The kernel reads an unsigned int, so only the low 32 bits count.
         *
         * "Neither 0 nor 0xffffffff" needs two comparisons of one argument, which a libseccomp
         * rule cannot hold. A 32-bit value whose bits are all equal is one of the two; any
         * other has, going round its bits, a set bit whose neighbour is clear. So one rule per
         * neighbouring pair (i, i + 1 mod 32), "bit i set and bit i + 1 clear", 32 in all,
         * matches exactly the values to refuse.
         */
        for (unsigned i = 0; i < 32; i++) {
                const scmp_datum_t bit = UINT64_C(1) << i, next = UINT64_C(1) << ((i + 1) % 32);
                struct scmp_arg_cmp cmp = SCMP_A0(SCMP_CMP_MASKED_EQ, bit | next, bit);
                int r;

                r = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), "personality", true, 1, &cmp, reterr);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int add_ioctl_rules(scmp_filter_ctx ctx, struct diag *reterr)
{
        /*
         * TIOCSTI pushes input into a terminal the sandbox may share with the user's shell, and
         * TIOCLINUX can do the same through the console's paste buffer. The kernel truncates
         * the command to 32 bits, so the comparison masks the high half: TIOCSTI | 1 << 32 is
         * still TIOCSTI to the tty driver.
         */
        static const unsigned long cmds[] = {TIOCSTI, TIOCLINUX};

        for (size_t i = 0; i < ELEMENTSOF(cmds); i++) {
                struct scmp_arg_cmp cmp = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffU, cmds[i]);
                int r;

                r = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), "ioctl", true, 1, &cmp, reterr);
                if (r < 0)
                        return r;
        }
        return 0;
}

/*
 * The calls that take a file mode, with the index of that argument, and for open and openat
 * the index of the flags, whose mode counts only when they create a file. @required as for
 * add_rule(): the *at calls and fchmod exist on every architecture; chmod, open, creat,
 * mkdir and mknod do not (arm64 and riscv lack them), fchmodat2 only from Linux 6.6.
 */
static const struct mode_call {
        const char *name;
        unsigned mode_arg;
        int flags_arg; /* -1: the mode always counts */
        bool required;
} mode_calls[] = {
        {"chmod", 1, -1, false},     {"fchmod", 1, -1, true},  {"fchmodat", 2, -1, true},
        {"fchmodat2", 2, -1, false}, {"mkdir", 1, -1, false},  {"mkdirat", 2, -1, true},
        {"mknod", 1, -1, false},     {"mknodat", 2, -1, true}, {"creat", 1, -1, false},
        {"open", 2, 1, false},       {"openat", 3, 2, true},
};

static int add_mode_rules(scmp_filter_ctx ctx, struct diag *reterr)
{
        /*
         * No set-user-ID or set-group-ID bit from inside (systemd's RestrictSUIDSGID=): the
         * working directory is on the host, idmapped to the invoking user (root included),
         * so a setuid copy of a program made in here would run with that user's rights for
         * anyone outside. Every call that sets a mode is covered, mknod(S_IFREG) and
         * O_TMPFILE (linked in later through /proc/self/fd) too; openat2 answers ENOSYS
         * above. The kernel reads a 16-bit umode_t, and the masks test single low bits, so
         * high bits change nothing. A file's existing bits are the kernel's business: a write
         * by anyone without CAP_FSETID clears them.
         */
        static const scmp_datum_t setid_bits[] = {S_ISUID, S_ISGID};
        static const scmp_datum_t create_flags[] = {O_CREAT, O_TMPFILE_BIT};
        /* Device nodes: a script has no use for one, and with CAP_MKNOD one opens the disk. */
        static const scmp_datum_t device_types[] = {S_IFCHR, S_IFBLK};
        const uint32_t action = SCMP_ACT_ERRNO(EPERM);
        int r;

        for (size_t i = 0; i < ELEMENTSOF(mode_calls); i++) {
                const struct mode_call *c = &mode_calls[i];

                for (size_t b = 0; b < ELEMENTSOF(setid_bits); b++) {
                        struct scmp_arg_cmp cmp[2] = {
                                SCMP_CMP(c->mode_arg, SCMP_CMP_MASKED_EQ, setid_bits[b],
                                         setid_bits[b]),
                        };

                        if (c->flags_arg < 0) {
                                r = add_rule(ctx, action, c->name, c->required, 1, cmp, reterr);
                                if (r < 0)
                                        return r;
                                continue;
                        }
                        /* Rules for one call are ORed: one per flag that creates a file. */
                        for (size_t f = 0; f < ELEMENTSOF(create_flags); f++) {
                                cmp[1] = SCMP_CMP((unsigned) c->flags_arg, SCMP_CMP_MASKED_EQ,
                                                  create_flags[f], create_flags[f]);
                                r = add_rule(ctx, action, c->name, c->required, 2, cmp, reterr);
                                if (r < 0)
                                        return r;
                        }
                }
        }

        for (size_t i = 0; i < ELEMENTSOF(mode_calls); i++) {
                const struct mode_call *c = &mode_calls[i];

                if (strcmp(c->name, "mknod") != 0 && strcmp(c->name, "mknodat") != 0)
                        continue;
                for (size_t t = 0; t < ELEMENTSOF(device_types); t++) {
                        struct scmp_arg_cmp cmp =
                                SCMP_CMP(c->mode_arg, SCMP_CMP_MASKED_EQ, S_IFMT, device_types[t]);

                        r = add_rule(ctx, action, c->name, c->required, 1, &cmp, reterr);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* Copy the BPF program out of @ctx into a malloc'ed array. */
static int export_program(scmp_filter_ctx ctx, struct seccomp_program *ret, struct diag *reterr)
{
        _cleanup_free_ struct sock_filter *filter = NULL;
        _cleanup_close_ int fd = -EBADF;
        size_t size, done = 0;
        struct stat st;
        int r;

        /* libseccomp 2.5 can only write the program to an fd; seccomp_export_bpf_mem() is 2.6. */
        fd = memfd_create("ptc-seccomp", MFD_CLOEXEC);
        if (fd < 0)
                return diag_set(reterr, -errno,
                                "cannot create a memfd for the seccomp program: %m");

        r = seccomp_export_bpf(ctx, fd);
        if (r < 0)
                return diag_set(reterr, r, "seccomp_export_bpf() failed: %s", strerror(-r));

        if (fstat(fd, &st) < 0)
                return diag_set(reterr, -errno, "cannot stat the seccomp program memfd: %m");
        size = (size_t) st.st_size;
        if (size == 0 || size % sizeof(struct sock_filter) != 0)
                return diag_set(reterr, -EBADMSG,
                                "seccomp_export_bpf() wrote %zu bytes, not a BPF program", size);
        /* The kernel's limit; it also keeps the length within the unsigned short of sock_fprog. */
        if (size / sizeof(struct sock_filter) > BPF_MAXINSNS)
                return diag_set(reterr, -E2BIG,
                                "the seccomp program has %zu instructions, more than the "
                                "kernel's %d",
                                size / sizeof(struct sock_filter), BPF_MAXINSNS);

        filter = malloc(size);
        if (!filter)
                return diag_set(reterr, -ENOMEM, "cannot allocate the seccomp program");

        while (done < size) {
                ssize_t k = pread(fd, (char *) filter + done, size - done, (off_t) done);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return diag_set(reterr, -errno, "cannot read the seccomp program: %m");
                if (k == 0)
                        return diag_set(reterr, -EIO, "the seccomp program memfd shrank");
                done += (size_t) k;
        }

        ret->len = (unsigned short) (size / sizeof(struct sock_filter));
        ret->filter = TAKE_PTR(filter);
        return 0;
}

/*
 * A filter that allows what no rule names, kills a call of a foreign ABI, and leaves
 * NO_NEW_PRIVS alone. Into *@ret (the caller releases it); 0 or -errno with a diagnostic.
 */
static int new_filter(scmp_filter_ctx *ret, struct diag *reterr)
{
        _cleanup_(release_ctx) scmp_filter_ctx ctx = NULL;
        int r;

        ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx)
                /* libseccomp says no more: out of memory, or a native architecture it lacks. */
                return diag_set(reterr, -ENOMEM, "seccomp_init() failed");

        /*
         * A foreign ABI has other syscall numbers, which the rules do not describe: i386 via
         * int 0x80 on x86_64, for one. libseccomp's generated filter also sends the x32 ABI
         * (nr | 0x40000000) on x86_64 to this action, which the unit test checks.
         */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        if (r < 0)
                return diag_set(reterr, r, "cannot set the seccomp bad-architecture action: %s",
                                strerror(-r));

        /*
         * NO_NEW_PRIVS is the caller's job, right before seccomp_program_load(); the program
         * is exported, never loaded through libseccomp, which would otherwise set it.
         */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
        if (r < 0)
                return diag_set(reterr, r, "cannot clear the seccomp NO_NEW_PRIVS attribute: %s",
                                strerror(-r));
        *ret = TAKE_PTR(ctx);
        return 0;
}

int seccomp_policy_build(const struct seccomp_policy_opts *o, struct seccomp_program *ret,
                         struct diag *reterr)
{
        _cleanup_(release_ctx) scmp_filter_ctx ctx = NULL;
        int r;

        assert(o);
        assert(ret);

        r = new_filter(&ctx, reterr);
        if (r < 0)
                return r;

        for (size_t i = 0; i < ELEMENTSOF(deny_table); i++) {
                r = add_rule(ctx, SCMP_ACT_ERRNO(deny_table[i].error), deny_table[i].name, false, 0,
                             NULL, reterr);
                if (r < 0)
                        return r;
        }

        r = add_clone_rules(ctx, reterr);
        if (r < 0)
                return r;
        r = add_personality_rules(ctx, reterr);
        if (r < 0)
                return r;
        r = add_ioctl_rules(ctx, reterr);
        if (r < 0)
                return r;
        r = add_mode_rules(ctx, reterr);
        if (r < 0)
                return r;

        for (size_t i = 0; i < 2; i++) {
                const char *name = i == 0 ? "socket" : "socketpair";

                if (o->allow_inet)
                        r = add_family_rules(ctx, name, families_inet, ELEMENTSOF(families_inet),
                                             reterr);
                else
                        r = add_family_rules(ctx, name, families_local, ELEMENTSOF(families_local),
                                             reterr);
                if (r < 0)
                        return r;
        }

        return export_program(ctx, ret, reterr);
}

/*
 * The other architectures a process of this one can call the kernel with (i386 through int
 * 0x80 on x86_64, x32, 32-bit arm on arm64): a command may run such a binary, and a rule must
 * hold there too. One the kernel or libseccomp does not know is skipped.
 */
static int add_compat_arches(scmp_filter_ctx ctx, struct diag *reterr)
{
        static const uint32_t arches[] = {
#if defined(__x86_64__)
                SCMP_ARCH_X86,
                SCMP_ARCH_X32,
#elif defined(__aarch64__)
                SCMP_ARCH_ARM,
#endif
                0,
        };

        for (size_t i = 0; arches[i]; i++) {
                int r = seccomp_arch_add(ctx, arches[i]);

                if (r < 0 && r != -EEXIST && r != -EINVAL && r != -EDOM)
                        return diag_set(reterr, r, "seccomp_arch_add() failed: %s", strerror(-r));
        }
        return 0;
}

int seccomp_tty_build(struct seccomp_program *ret, struct diag *reterr)
{
        _cleanup_(release_ctx) scmp_filter_ctx ctx = NULL;
        int r;

        assert(ret);

        r = new_filter(&ctx, reterr);
        if (r < 0)
                return r;
        r = add_compat_arches(ctx, reterr);
        if (r < 0)
                return r;
        r = add_ioctl_rules(ctx, reterr);
        if (r < 0)
                return r;
        return export_program(ctx, ret, reterr);
}

int seccomp_exec_notify_build(struct seccomp_program *ret, struct diag *reterr)
{
        _cleanup_(release_ctx) scmp_filter_ctx ctx = NULL;
        int r;

        assert(ret);

        r = new_filter(&ctx, reterr);
        if (r < 0)
                return r;
        /* An exec through a foreign ABI is notified too: the supervisor refuses what it cannot
         * read (exec-supervisor.c). */
        r = add_compat_arches(ctx, reterr);
        if (r < 0)
                return r;
        /* libseccomp refuses SCMP_ACT_NOTIFY where the kernel has no user notification. */
        r = add_rule(ctx, SCMP_ACT_NOTIFY, "execve", true, 0, NULL, reterr);
        if (r < 0)
                return r;
        r = add_rule(ctx, SCMP_ACT_NOTIFY, "execveat", false, 0, NULL, reterr);
        if (r < 0)
                return r;
        return export_program(ctx, ret, reterr);
}

static struct seccomp_program exec_notify_program;
static char exec_notify_why[256];

static void exec_notify_program_build(void)
{
        struct diag d = {};

        if (seccomp_exec_notify_build(&exec_notify_program, &d) < 0) {
                (void) snprintf(exec_notify_why, sizeof(exec_notify_why), "%.200s", d.message);
                log_debug("seccomp: no exec notification filter for commands: %s", d.message);
        }
}

const struct seccomp_program *seccomp_exec_notify_program(const char **ret_why)
{
        static pthread_once_t once = PTHREAD_ONCE_INIT;

        (void) pthread_once(&once, exec_notify_program_build);
        if (ret_why)
                *ret_why = exec_notify_program.filter ? NULL : exec_notify_why;
        return exec_notify_program.filter ? &exec_notify_program : NULL;
}

static struct seccomp_program tty_program;

static void tty_program_build(void)
{
        struct diag d = {};

        if (seccomp_tty_build(&tty_program, &d) < 0)
                log_debug("seccomp: no TIOCSTI filter for commands: %s", d.message);
}

const struct seccomp_program *seccomp_tty_program(void)
{
        static pthread_once_t once = PTHREAD_ONCE_INIT;

        (void) pthread_once(&once, tty_program_build);
        return tty_program.filter ? &tty_program : NULL;
}

int seccomp_tty_load(const struct seccomp_program *p)
{
        int r;

        if (!p)
                return 0;
        r = seccomp_program_load(p);
        /*
         * EACCES: neither NO_NEW_PRIVS nor CAP_SYS_ADMIN in our user namespace, so not in the
         * initial one either, and the kernel itself refuses TIOCSTI on a terminal that is not
         * the caller's controlling one (it has none). EINVAL: no seccomp filters in this
         * kernel (docs/isolation.md says what holds then).
         */
        return r == -EACCES || r == -EINVAL ? 0 : r;
}

void seccomp_program_release(struct seccomp_program *p)
{
        if (!p)
                return;
        free(p->filter);
        p->filter = NULL;
        p->len = 0;
}

int seccomp_program_load(const struct seccomp_program *p)
{
        struct sock_fprog fprog;

        if (!p || !p->filter || p->len == 0)
                return -EINVAL;

        fprog = (struct sock_fprog){.len = p->len, .filter = p->filter};
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) < 0)
                return -errno;
        return 0;
}

bool seccomp_is_available(void)
{
        uint32_t action;

        /* EINVAL: a kernel without CONFIG_SECCOMP. */
        if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0)
                return false;

        /*
         * With CONFIG_SECCOMP_FILTER the kernel copies the program before any other check and
         * fails on NULL with EFAULT; without it the call is refused with EINVAL. Nothing is
         * installed either way (the probe systemd uses).
         */
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, NULL, 0, 0) >= 0 || errno != EFAULT)
                return false;

        /*
         * The actions the policy returns besides ALLOW. SECCOMP_GET_ACTION_AVAIL and
         * SECCOMP_RET_KILL_PROCESS both arrived in Linux 4.14, so an older kernel fails here.
         */
        action = SECCOMP_RET_KILL_PROCESS;
        if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) < 0)
                return false;
        action = SECCOMP_RET_ERRNO;
        if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) < 0)
                return false;
        return true;
}
