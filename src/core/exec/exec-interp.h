/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A session interpreter (docs/sessions.md): one Python interpreter, confined like a script, kept
 * alive between executions ("cells") so that their globals, imports and data survive. Each
 * cell is an execution of its own (its own RPC server and token, timeout, tool budget,
 * output capture and result), run by the interpreter in the session's __main__: ptc hands the
 * interpreter the cell's stdout and stderr pipes over a control socket and the interpreter puts
 * them on its fds 1 and 2 for the cell's length.
 *
 * An interpreter is used by one cell at a time (the caller serializes); exec_interp_free() may
 * run on any thread once no cell runs.
 */

#include <stdbool.h>

#include <jansson.h>

#include "basic/diag.h"
#include "basic/macro.h"
#include "core/exec/exec.h"

struct exec_interp;

/*
 * The interpreter's Python source, NUL-terminated: src/core/exec/interp.py, embedded at build time
 * (meson.build: exec_interp_source). Static, never freed.
 */
extern const char exec_interp_source[];

/*
 * Start an interpreter for @o's configuration, tools (the module is generated for o->registry),
 * interpreter, isolation and working directory (o->cwd, or a private directory in strict
 * mode), and wait until it has imported the module (at most @o's timeout). @o->code is
 * not used. Returns 0 with *ret, or -errno with the reason (the interpreter's own stderr when
 * it died starting) in @reterr.
 */
_must_check_ int exec_interp_start(const struct exec_opts *o, struct exec_interp **ret,
                                   struct diag *reterr);

/*
 * A copy of interpreter @k, idle between cells (the caller's to guarantee), in *ret: a fork of
 * its interpreter (copy-on-write memory: globals, imports, data) in the same confinement,
 * sharing its working directory and files but nothing else from now on. Its cells are
 * numbered on from @k's. -ESRCH when @k is gone; when @k died or hung while being copied it
 * is lost (exec_interp_alive() says so).
 */
_must_check_ int exec_interp_fork(struct exec_interp *k, struct exec_interp **ret,
                                  struct diag *reterr);
/* Whether exec_interp_fork() can copy @k at all (a remote session's cannot yet). */
bool exec_interp_forkable(const struct exec_interp *k);

/*
 * SIGKILL to the interpreter and everything it started, without waiting: what a run that must
 * leave nothing running does before it answers, leaving the reaping to exec_interp_free().
 */
void exec_interp_kill(struct exec_interp *k);

/*
 * Stop the interpreter and everything it started; the confinement it shares with its forks (or
 * the interpreter it is a fork of) and its files go with the last of them. NULL-safe.
 */
struct exec_interp *exec_interp_free(struct exec_interp *k);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct exec_interp *, exec_interp_free);

/*
 * The warnings of the interpreter's start (isolation auto leaving out a layer), one per line,
 * as exec_opts.on_warning had them; for a run that takes an interpreter started before it.
 */
char *const *exec_interp_warnings(const struct exec_interp *k);

/* Whether the interpreter still lives: false once a cell lost it (crashed, killed). */
bool exec_interp_alive(const struct exec_interp *k);

/* The interpreter's pid, as ptc sees it (for `ptc session list`). */
int exec_interp_pid(const struct exec_interp *k);

/*
 * Run @o->code as the interpreter's next cell: as exec_run() does, with the result object in
 * *ret (and *ret_status), whose "exit_code" is the cell's (an uncaught exception 1,
 * KeyboardInterrupt -2, SystemExit's code). A cell that is stopped (timeout, interrupt)
 * gets KeyboardInterrupt; an interpreter that does not finish the cell within the grace period
 * after that is killed, as is one that dies or breaks the protocol: then *ret_lost is
 * true and the interpreter cannot run another cell. @o's config, registry and limits are the
 * cell's own; its working directory is the interpreter's. With @one_shot the code is a whole
 * script's, as a warm pool runs it (script.py, the name a cold run gives it); the interpreter
 * is for no other cell then.
 */
_must_check_ int exec_interp_run_cell(struct exec_interp *k, const struct exec_opts *o,
                                      bool one_shot, json_t **ret, enum exec_status *ret_status,
                                      bool *ret_lost, struct diag *reterr);
