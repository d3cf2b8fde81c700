/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * ptc's half of the exec supervisor (docs/policy.md, "What is judged at exec"): while a
 * terminal command runs, a thread of ptc's answers the seccomp user notifications of every
 * execve/execveat of its tree (the child's half: core/sandbox/exec-notify.h). For each it
 * reads the path and argv from the process's memory (bounded), checks the notification is
 * still live (SECCOMP_IOCTL_NOTIF_ID_VALID), resolves the binary the kernel will run, and
 * judges the policy's hardline list, rules and dangerous list on it
 * (policy_decide_exec()): allow lets the exec go on, deny and blocked fail it with EPERM, an
 * ask pauses that process until approval_gate_verdict() answers. What it refused is kept for
 * the terminal's result.
 *
 * Thread context: one supervisor per command; start and stop from the same thread.
 */

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "core/policy/policy.h"

struct approver;
struct pause_clock;
struct ptc_config;
struct redactor;
struct seccomp_program;

/* Refusals kept for the result; more are counted. */
#define EXEC_SUPERVISOR_NOTES_MAX 4
#define EXEC_SUPERVISOR_NOTE_MAX 400

/* All borrowed; they must outlive the supervisor. */
struct exec_supervisor_opts {
        const struct ptc_config *config;
        char *const *env; /* the command's environment (for "~") */
        struct approver *approver;
        struct pause_clock *clock;
        const struct redactor *redactor;
        /* The command text's own verdict (policy_decide()): its asks were answered yes
         * before the command started, so an exec asking the same is not asked again. NULL:
         * none. */
        const struct policy_verdict *text_verdict;
};

struct exec_supervisor;

/*
 * Start supervising: a thread waits for the listener fd on a socket whose other end is
 * *@ret_child_sock (give it to exec_notify_child_install() in the child; the supervisor
 * closes its own copy when it stops). *@ret is NULL (and
 * *@ret_child_sock -1) when this kernel gives no user notification: then @why says so.
 * 0 or -errno.
 */
_must_check_ int exec_supervisor_start(const struct exec_supervisor_opts *o,
                                       struct exec_supervisor **ret, int *ret_child_sock, char *why,
                                       size_t why_size);

/* The program to install in the child (seccomp_exec_notify_program()), or NULL. */
const struct seccomp_program *exec_supervisor_program(void);

/*
 * The command's @deadline moved by the time asks at exec waited (an ask stops its clock, as
 * a call's ask stops the execution's); USEC_INFINITY while one waits. Any thread.
 */
usec_t exec_supervisor_deadline(const struct exec_supervisor *s, usec_t deadline);
/* Readable when an ask at exec ended (then exec_supervisor_woken()); -1 for NULL. */
int exec_supervisor_wake_fd(const struct exec_supervisor *s);
void exec_supervisor_woken(struct exec_supervisor *s);

/* What a supervisor saw. */
struct exec_supervisor_report {
        bool supervised; /* the child's filter was installed and served */
        char notes[EXEC_SUPERVISOR_NOTES_MAX][EXEC_SUPERVISOR_NOTE_MAX];
        size_t n_notes;
        size_t n_refused;  /* all refused execs, notes or not */
        size_t n_left_out; /* notes past EXEC_SUPERVISOR_NOTES_MAX (refusals, or execs an ask
                            * let go on unasked: policy.headless allow) */
        size_t n_execs;    /* execs judged */
};

/*
 * Stop: an ask still waiting is cancelled, the thread joined, the listener closed (an exec
 * still pending fails). Frees @s (NULL-safe) and fills *@ret (may be NULL).
 */
void exec_supervisor_stop(struct exec_supervisor *s, struct exec_supervisor_report *ret);

struct tool_ctx;

/*
 * The options for a terminal call of @ctx with @args: its text verdict into
 * *@text_verdict (which *@ret borrows). 1 when there is a policy to enforce, 0 when @ctx has
 * no configuration, -ENOMEM.
 */
_must_check_ int exec_supervisor_opts_for(const struct tool_ctx *ctx, json_t *args,
                                          struct exec_supervisor_opts *ret,
                                          struct policy_verdict *text_verdict);

/*
 * A line per exec @x refused (at most EXEC_SUPERVISOR_NOTES_MAX, then a count), then @note:
 * what ends the terminal's output, so the model reads why a program failed with "Operation
 * not permitted". New string, NULL on ENOMEM.
 */
char *exec_supervisor_note(const struct exec_supervisor_report *x, const char *note);

/* The result's "warnings" when a command ran unsupervised (@why: exec_why). New reference. */
json_t *exec_supervisor_warnings(const char *why);
