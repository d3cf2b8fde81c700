/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The seccomp layer of the sandbox (docs/contracts.md 8, docs/isolation.md).
 *
 * A denylist in front of a default ALLOW: it refuses the system calls that only serve an
 * escape or an attack on the kernel (new namespaces, every mount API, ptrace and
 * process_vm_*, pidfd_getfd, keyctl/add_key/request_key, bpf, perf_event_open, userfaultfd,
 * io_uring, kexec and modules, open_by_handle_at, ...), TIOCSTI/TIOCLINUX ioctls compared on
 * the low 32 bits (the kernel truncates the command, so TIOCSTI | 1 << 32 must not pass),
 * socket families other than AF_UNIX (plus AF_INET/AF_INET6 when the network is allowed), and
 * kills the process on a foreign architecture or the x32 ABI. clone3 answers ENOSYS, so glibc
 * falls back to clone(2), whose flags the filter can read. Nothing that carries privileges out
 * of the sandbox: no set-user-ID or set-group-ID bit through any call that takes a mode
 * (openat2, whose mode the filter cannot read, answers ENOSYS), no character or block device
 * node, no extended attribute set (EOPNOTSUPP: file capabilities are one).
 *
 * The program is compiled with libseccomp in the parent, before fork: libseccomp allocates,
 * and a child forked from a multi-threaded ptc may only make async-signal-safe calls.
 * seccomp_program_load() is a single prctl() and safe to call there.
 */

#include <stdbool.h>
#include <stddef.h>

#include "basic/diag.h"
#include "basic/macro.h"

struct sock_filter;

struct seccomp_policy_opts {
        bool allow_inet; /* AF_INET and AF_INET6 sockets too (sandbox.network: true) */
};

struct seccomp_program {
        struct sock_filter *filter; /* owned; NULL when empty */
        unsigned short len;         /* instructions */
};

/*
 * Compile the policy for the native architecture into @ret (owned by the caller, release with
 * seccomp_program_release()). Errors: -errno with a message in @reterr naming the failing
 * libseccomp step. @ret is written only on success. System calls this libseccomp or
 * architecture does not know are skipped (nothing to refuse); -EOPNOTSUPP if one whose
 * arguments the policy inspects (clone, personality, ioctl, socket, socketpair) is missing.
 * Allocates: call before fork, from any thread.
 */
_must_check_ int seccomp_policy_build(const struct seccomp_policy_opts *o,
                                      struct seccomp_program *ret, struct diag *reterr);

/*
 * A program that refuses only TIOCSTI and TIOCLINUX (EPERM, on the low 32 bits as above), on
 * the native architecture and the ones its processes may also call the kernel with (i386 and
 * x32 on x86_64, arm on arm64; any other is killed): what terminal commands get at every
 * isolation level, where they may still push input into a terminal (as root they keep
 * CAP_SYS_ADMIN, which lets TIOCSTI reach a terminal that is not their controlling one;
 * docs/isolation.md). As seccomp_policy_build(): owned by the caller, allocates.
 */
_must_check_ int seccomp_tty_build(struct seccomp_program *ret, struct diag *reterr);

/*
 * seccomp_tty_build()'s program, built once per process (any thread; before fork): NULL when
 * libseccomp cannot build it (logged at debug level).
 */
const struct seccomp_program *seccomp_tty_program(void);

/*
 * A program that sends execve and execveat (native and compat ABIs) to a user-space
 * supervisor (SECCOMP_RET_USER_NOTIF) and allows the rest: what terminal commands get so the
 * policy judges every program they run (core/sandbox/exec-notify.h). As seccomp_tty_build().
 * Fails where libseccomp or the kernel has no user notification.
 */
_must_check_ int seccomp_exec_notify_build(struct seccomp_program *ret, struct diag *reterr);

/*
 * seccomp_exec_notify_build()'s program, built once per process (any thread; before fork):
 * NULL when it cannot be built, and then *@ret_why (may be NULL) says why (static).
 */
const struct seccomp_program *seccomp_exec_notify_program(const char **ret_why);

/*
 * Install @p (NULL: nothing) on the calling process where it may: 0 also when it lacks
 * NO_NEW_PRIVS and CAP_SYS_ADMIN (then the kernel refuses TIOCSTI on any terminal but its
 * controlling one, and a process of ptc's has none) or the kernel has no seccomp filters.
 * Async-signal-safe.
 */
_must_check_ int seccomp_tty_load(const struct seccomp_program *p);

/* Free the program and zero @p; idempotent, and NULL or a zeroed @p is fine. */
void seccomp_program_release(struct seccomp_program *p);

/*
 * Install @p on the calling process (all its future children inherit it). The caller must
 * already have PR_SET_NO_NEW_PRIVS set (or CAP_SYS_ADMIN). Async-signal-safe: no allocation.
 * Returns 0 or -errno (-EINVAL for an empty program, -EACCES without NO_NEW_PRIVS).
 */
_must_check_ int seccomp_program_load(const struct seccomp_program *p);

/*
 * True when this kernel can install seccomp filters at all (prctl(PR_GET_SECCOMP) works) and
 * knows the actions the policy returns (SECCOMP_RET_ERRNO, SECCOMP_RET_KILL_PROCESS: Linux
 * 4.14). Installs nothing; any thread.
 */
bool seccomp_is_available(void);
