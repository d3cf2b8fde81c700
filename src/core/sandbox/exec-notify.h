/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The child's half of the exec supervisor (core/tools/exec-supervisor.h): in a terminal
 * command's process, before it execs the shell, a seccomp filter that sends every execve and
 * execveat of its tree to ptc (SECCOMP_RET_USER_NOTIF), and the filter's listener fd handed
 * to ptc over a socket (SCM_RIGHTS). Kept apart from the other steps of the command's child
 * (the TIOCSTI filter, Landlock): one hook, one file.
 */

#include <stdbool.h>
#include <stddef.h>

struct seccomp_program;

/*
 * In the child (async-signal-safe): install @p with SECCOMP_FILTER_FLAG_NEW_LISTENER and
 * send the listener to @sock, then close @sock. Without CAP_SYS_ADMIN the filter needs
 * NO_NEW_PRIVS, which is set then (a setuid program gains nothing in the command). With @p
 * NULL, or where the kernel refuses, nothing is sent: ptc sees the socket's end and falls
 * back to the text check, saying so (exec-supervisor.h). @sock < 0: nothing to do. Returns 0.
 */
int exec_notify_child_install(const struct seccomp_program *p, int sock);

/*
 * Whether this kernel and libseccomp give seccomp user notification
 * (seccomp(SECCOMP_GET_NOTIF_SIZES) and the filter builds); false with why in @why. Any
 * thread. PTC_TEST_NO_EXEC_NOTIFY=1 in the environment says no (the fallback's tests).
 */
bool exec_notify_is_available(char *why, size_t n);
