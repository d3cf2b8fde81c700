/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * One run's supervision, whatever runs the script (docs/ARCHITECTURE.md, "The run
 * supervisor"): a local process (exec-run-local.c), a session's cell (exec-run-cell.c), a run on a
 * remote target (exec-remote*.c). It owns, once: the phases (running, stopping, killing, the
 * end's drain), the deadline as a loop time source on the pause clock (approvals stop it:
 * core/policy/pause-clock.h), cancel (exec_opts.cancel_fd), the tools' context and their
 * stop, the output and its capture, the "limit" event, the result's status, interrupt
 * reason and duration, the loop's teardown. A target (struct run_target_ops) does only what
 * differs. The target embeds a struct run; all of it runs on the thread of exec_run() but
 * what the tools' threads touch (tool_ctx, the clock).
 */

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "basic/diag.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "core/exec/exec.h"
#include "core/exec/result.h"
#include "core/loop/loop.h"
#include "core/output/capture.h"
#include "core/policy/pause-clock.h"
#include "core/tools/tool.h"

struct run;

/* After the script's end, how long leftover writers may keep its pipes open. */
#define RUN_DRAIN_USEC (500 * USEC_PER_MSEC)

struct run_target_ops {
        /*
         * Stop the script (the timeout, a cancel): its gentle first step, before the tools are
         * told to stop. Returns the grace until kill(), or 0 when none follows (a target that
         * ended the run itself, with run_end()).
         */
        usec_t (*interrupt)(struct run *run);
        /* The grace ran out: the next, harder step; the next grace, or 0 when none follows. */
        usec_t (*kill)(struct run *run);
        /* The end's drain ran out (optional): what still holds the run is killed. */
        void (*drained)(struct run *run);
        /* What only the target knows of the result: the exit code, the status of a run not
         * stopped, a session's fate, an error; the calls and the log (a reference) when
         * there is no RPC server here. 0 or -ENOMEM. */
        int (*collect)(struct run *run, struct result_input *in);
        /* Undo the target's part: what still runs is killed and reaped, its fds closed. */
        void (*teardown)(struct run *run);
};

enum run_phase {
        RUN_RUNNING,
        RUN_STOPPING, /* interrupted; the grace runs */
        RUN_KILLING,  /* killed; a target with more steps has another grace */
};

struct run {
        const struct exec_opts *o;
        const struct run_target_ops *ops;
        void *target; /* the target's state, for its ops */
        struct loop *loop;
        struct rpc_server *rpc; /* a local run's and a cell's; NULL for a remote one */
        struct capture out, err;
        struct tool_ctx tool_ctx;
        int out_fd, err_fd; /* the script's pipes (run_pipes()), or -1 */
        struct loop_source *out_src, *err_src, *timer;
        int cancel_fd;            /* eventfd written when the tools must stop */
        struct pause_clock clock; /* the deadline's, stopped while calls wait for approval */
        int wake_fd;              /* written when such a wait ends */

        enum run_phase phase;
        enum exec_status status; /* when stopped */
        bool stopped;            /* a timeout or interrupt decided the status */
        const char *interrupt_reason;
        bool ended;           /* the script is over: the drain runs (run_end()) */
        bool drain_timed_out; /* ...and ran out */
        bool done;            /* the target says the loop is over, drained or not */
        unsigned holds;       /* what the end waits for (open pipes...) before the drain ran out */
        bool redact_log;      /* the log was made where the redactor could not see it */
        usec_t start, deadline;
        /* The script's span, emitted when the loop is over (NULL: the target has its own). */
        const char *span_name;
        usec_t span_start;
        json_t *span_attrs;
};

/* Fields and fds in a known state; the run's clock starts now. Cannot fail. */
void run_init(struct run *run, const struct exec_opts *o, const struct run_target_ops *ops,
              void *target);

/* The loop, its time source (disarmed), cancel and wake sources, the tools' context (working
 * directory @cwd) and the capture. 0 or -errno with @reterr. */
_must_check_ int run_begin(struct run *run, const char *cwd, struct diag *reterr);

/* The run's RPC server on @socket_path with @token. 0 or -errno with @reterr. */
_must_check_ int run_rpc(struct run *run, const char *socket_path, const char *token,
                         struct diag *reterr);

/* The script's stdout and stderr pipes, watched: their write ends (blocking, close-on-exec)
 * in *ret_out_w and *ret_err_w, the caller's to close once the script has them. */
_must_check_ int run_pipes(struct run *run, int *ret_out_w, int *ret_err_w, struct diag *reterr);

/* Arm the deadline (the pause clock may move it later). */
void run_arm_deadline(struct run *run);

/* The script is over: the tools are told to stop, its output (holds) gets @drain_usec to
 * reach its end. Again while ended: the drain restarts. */
void run_end(struct run *run, usec_t drain_usec);

/* Tell the tools still working for the run to stop (the cancel eventfd). */
void run_signal_tools(struct run *run);

/* A chunk of the script's output: captured, an event, and exec_opts.on_output. */
void run_output(struct run *run, bool is_err, const char *p, size_t n);

/*
 * Run the loop until the run is over, then the script's span and the result from the
 * capture, the status and the target's collect() (the RPC server shut down first: nothing
 * may still be writing), and its "result" span. 0 with *ret, or -errno with @reterr.
 */
_must_check_ int run_supervise(struct run *run, json_t **ret, enum exec_status *ret_status,
                               struct diag *reterr);

/* Only the loop, until the run is over (a session's opening: its handshake). */
_must_check_ int run_loop(struct run *run, struct diag *reterr);

/* The target's teardown, then the run's own: tools, RPC server, loop, fds, capture. */
void run_teardown(struct run *run);
