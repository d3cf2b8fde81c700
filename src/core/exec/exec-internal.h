/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What the ways of running a script share inside exec/: a local run (exec-run-local.c: the
 * script is ptc's child), a session's cell (exec-run-cell.c) and a remote run (exec-remote.c: the
 * script runs on a target through ptc's agent there, docs/remote.md). All capture the output
 * the same way and build the result from it the same way (exec-run.c).
 */

#include <stdbool.h>

#include <jansson.h>

#include "basic/diag.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "core/exec/exec.h"
#include "core/exec/result.h"
#include "core/output/capture.h"
#include "core/sandbox/cgroup.h"
#include "core/sandbox/sandbox.h"

struct staging;

/* 32 random bytes as 64 hex digits and a NUL: an RPC token. 0 or -errno. */
_must_check_ int exec_make_token(char out[65]);

/*
 * The script's environment: @o's scrubbed base plus the RPC socket of @st and @token, the
 * Python settings every run has, and @st's directory first on PYTHONPATH. 0 or -ENOMEM.
 */
_must_check_ int exec_child_env(const struct exec_opts *o, const struct staging *st,
                                const char *token, char ***ret);

/* What a confined start needs besides the run's options. */
struct exec_child_opts {
        const char *script_path; /* run by o->python */
        char *const *env;        /* the child's environment */
        const char *cwd;
        const char *staging_dir;
        int stdin_fd; /* > 0: the child's stdin (a session interpreter's control socket); 0:
                         /dev/null */
        int stdout_fd, stderr_fd;
        uint64_t cpu_seconds;            /* RLIMIT_CPU under the rlimits layer */
        bool outlive_script;             /* sandbox_opts.outlive_script: a session's interpreter */
        struct sandbox_timings *timings; /* sandbox_opts.timings: for a trace, or NULL */
};

/*
 * Start the script confined by @o's isolation level (strict fails when a layer cannot be
 * set up; auto warns through o->on_warning and starts again without it; none: under an
 * init of its own only). *@cgroup is the run's cgroup leaf where ptc may make one (destroy
 * it with run_cgroup_destroy()). The caller reaps ret->pid and closes its fds.
 */
_must_check_ int exec_start_confined(const struct exec_opts *o, const struct exec_child_opts *co,
                                     struct sandbox_proc *ret, struct run_cgroup *cgroup,
                                     struct diag *reterr);

/* Set up the stdout capture (head, tail, spill file) and the stderr one for @o's limits. */
_must_check_ int exec_capture_init(const struct exec_opts *o, struct capture *out,
                                   struct capture *err);

/*
 * The result from the captured output and @in's status, exit code, counters and log:
 * ANSI stripped and redacted (the spill file too), the output withheld when redaction
 * fails. @redact_log: @in->log was made where the redactor could not see it (a remote
 * agent) and is redacted here. Returns 0 with *ret, or -ENOMEM.
 */
_must_check_ int exec_result(const struct exec_opts *o, struct capture *out, struct capture *err,
                             struct result_input *in, bool redact_log, json_t **ret,
                             enum exec_status *ret_status);

/* exec_run() on this machine (exec-run-local.c). */
_must_check_ int exec_run_local(const struct exec_opts *o, json_t **ret,
                                enum exec_status *ret_status, struct diag *reterr);

/* exec_run() for a remote backend (exec-remote.c). */
_must_check_ int exec_run_remote(const struct exec_opts *o, json_t **ret,
                                 enum exec_status *ret_status, struct diag *reterr);

/*
 * A session on a remote backend (docs/sessions.md): the channel to the target stays open
 * between cells, and its agent keeps the session's interpreter there. Open: start the
 * channel for @o's backend and shake hands (the first cell's options). A cell: as
 * exec_interp_run_cell() (*ret_lost: the channel or the target's interpreter died, and the
 * session with it). Any thread, one cell at a time; close from any thread once no cell
 * runs.
 */
struct remote_run;
_must_check_ int exec_remote_session_open(const struct exec_opts *o, struct remote_run **ret,
                                          struct diag *reterr);
_must_check_ int exec_remote_session_cell(struct remote_run *r, const struct exec_opts *o,
                                          json_t **ret, enum exec_status *ret_status,
                                          bool *ret_lost, struct diag *reterr);
bool exec_remote_session_alive(struct remote_run *r);
/* The channel command's pid (ptc session list). */
int exec_remote_session_pid(const struct remote_run *r);
/* SIGKILL to the channel, without waiting (exec_remote_session_close() reaps). */
void exec_remote_session_kill(struct remote_run *r);
void exec_remote_session_close(struct remote_run *r);
