/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A session kernel (docs/sessions.md): one Python interpreter, confined like a script, kept
 * alive between executions ("cells") so that their globals, imports and data survive. Each
 * cell is an execution of its own (its own RPC server and token, timeout, tool budget,
 * output capture and result), run by the kernel in the session's __main__: ptc hands the
 * kernel the cell's stdout and stderr pipes over a control socket and the kernel puts them
 * on its fds 1 and 2 for the cell's length.
 *
 * A kernel is used by one cell at a time (the caller serializes); exec_kernel_free() may
 * run on any thread once no cell runs.
 */

#include <stdbool.h>

#include <jansson.h>

#include "basic/diag.h"
#include "basic/macro.h"
#include "core/exec/exec.h"

struct exec_kernel;

/* The kernel's Python source (exec-kernel-source.c). */
extern const char exec_kernel_source[];

/*
 * Start a kernel for @o's configuration, tools (the module is generated for o->registry),
 * interpreter, isolation and working directory (o->cwd, or a private directory in strict
 * mode), and wait until it has imported the module (at most @o's timeout). @o->code is
 * not used. Returns 0 with *ret, or -errno with the reason (the kernel's own stderr when
 * it died starting) in @reterr.
 */
_must_check_ int exec_kernel_start(const struct exec_opts *o, struct exec_kernel **ret,
                                   struct diag *reterr);

/*
 * A copy of kernel @k, idle between cells (the caller's to guarantee), in *ret: a fork of
 * its interpreter (copy-on-write memory: globals, imports, data) in the same confinement,
 * sharing its working directory and files but nothing else from now on. Its cells are
 * numbered on from @k's. -ESRCH when @k is gone; when @k died or hung while being copied it
 * is lost (exec_kernel_alive() says so).
 */
_must_check_ int exec_kernel_fork(struct exec_kernel *k, struct exec_kernel **ret,
                                  struct diag *reterr);
/* Whether exec_kernel_fork() can copy @k at all (a remote session's cannot yet). */
bool exec_kernel_forkable(const struct exec_kernel *k);

/*
 * SIGKILL to the kernel and everything it started, without waiting: what a run that must
 * leave nothing running does before it answers, leaving the reaping to exec_kernel_free().
 */
void exec_kernel_kill(struct exec_kernel *k);

/*
 * Stop the kernel and everything it started; the confinement it shares with its forks (or
 * the kernel it is a fork of) and its files go with the last of them. NULL-safe.
 */
struct exec_kernel *exec_kernel_free(struct exec_kernel *k);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct exec_kernel *, exec_kernel_free);

/*
 * The warnings of the kernel's start (isolation auto leaving out a layer), one per line,
 * as exec_opts.on_warning had them; for a run that takes a kernel started before it.
 */
char *const *exec_kernel_warnings(const struct exec_kernel *k);

/* Whether the kernel still lives: false once a cell lost it (crashed, killed). */
bool exec_kernel_alive(const struct exec_kernel *k);

/* The kernel's interpreter's pid, as ptc sees it (for `ptc session list`). */
int exec_kernel_pid(const struct exec_kernel *k);

/*
 * Run @o->code as the kernel's next cell: as exec_run() does, with the result object in
 * *ret (and *ret_status), whose "exit_code" is the cell's (an uncaught exception 1,
 * KeyboardInterrupt -2, SystemExit's code). A cell that is stopped (timeout, interrupt)
 * gets KeyboardInterrupt; a kernel that does not finish the cell within the grace period
 * after that is killed, as is one that dies or breaks the protocol: then *ret_lost is
 * true and the kernel cannot run another cell. @o's config, registry and limits are the
 * cell's own; its working directory is the kernel's. With @one_shot the code is a whole
 * script's, as a warm pool runs it (script.py, the name a cold run gives it); the kernel
 * is for no other cell then.
 */
_must_check_ int exec_kernel_run_cell(struct exec_kernel *k, const struct exec_opts *o,
                                      bool one_shot, json_t **ret, enum exec_status *ret_status,
                                      bool *ret_lost, struct diag *reterr);
