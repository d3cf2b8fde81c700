/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The host's side of a remote run (docs/remote.md), inside exec/: the run's state, shared by
 * exec-remote.c (the channel, the stream, the loop), exec-remote-run.c (a one-shot run, a
 * session's cells, their results) and exec-remote-calls.c (the calls of the tools that run
 * on the host, each on a thread of its own).
 */

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "basic/buf.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "core/exec/exec.h"
#include "core/loop/loop.h"
#include "core/output/capture.h"
#include "core/policy/pause-clock.h"
#include "core/remote/frame.h"
#include "core/tools/tool.h"

/* Bytes of the channel command's stderr kept for messages. */
#define CHANNEL_ERR_KEEP 1024

/* Host tool calls running at once; more are answered with an error. */
#define HOST_CALLS_MAX 16

enum phase {
        PHASE_HANDSHAKE, /* waiting for the agent's hello */
        PHASE_RUNNING,
        PHASE_STOPPING, /* the agent was told to stop; the channel dies at the timer */
        PHASE_CLOSING,  /* the run is over (exit frame, failure, kill): the channel closes */
};

struct remote_run {
        unsigned refs; /* the run itself and each host tool call; under @lock */
        pthread_mutex_t lock;
        pthread_cond_t calls_done;
        unsigned calls;     /* host tool calls running */
        int64_t host_calls; /* host tool calls taken, on the loop's thread */
        int in_fd;          /* the channel's stdin: our frames; -1 once closed (under @lock) */
        bool write_broken;

        const struct exec_opts *o;
        struct loop *loop;
        struct capture out, err;
        struct tool_ctx tool_ctx;
        struct frame_reader reader;

        pid_t pid; /* the channel command, in a session of its own */
        int pidfd;
        struct loop_source *pid_src;
        int out_fd, err_fd;
        struct loop_source *out_src, *err_src;
        char chan_err[CHANNEL_ERR_KEEP];
        size_t chan_err_len;
        int timer_fd, sig_fd, cancel_fd;
        struct pause_clock clock; /* stopped while an ask waits for its answer */
        int wake_fd;              /* written when such a wait ends */

        enum phase phase;
        bool session;      /* a session's channel: an exit frame ends a cell, not the channel */
        bool cell_over;    /* the cell's exit frame came */
        bool session_lost; /* the agent's interpreter died with the cell */
        bool reaped;
        bool close_timed_out;
        bool agent_said_why; /* an error frame came: the channel's stderr only repeats it */
        bool stopped;        /* a timeout or interrupt decided the status */
        enum exec_status status;
        const char *interrupt_reason;
        json_t *exit; /* the agent's exit frame */
        char *failure;
        struct buf opening; /* our magic, hello and run: sent when the agent's hello comes */
        char *agent_path;   /* the static agent to ship, or NULL: ptc on the target's PATH */
        char agent_hash[65];
        uint64_t agent_size;
        bool agent_sent;
        usec_t start, deadline;
        usec_t channel_started; /* for a trace: the handshake's span starts here */
        usec_t script_started;  /* for a trace: the run (the cell) went to the agent */
};

/* A new run with nothing started: one reference, the caller's. NULL on ENOMEM. */
struct remote_run *remote_run_new(void);

/* Drop a reference (the run's own, or a host call's); the last one frees the run. */
void remote_run_unref(struct remote_run *r);

/*
 * The run's own (a session's cell's): @o, the clock, the tools' context, the capture; and
 * remote_end_run(), which undoes it and the loop, and leaves the channel as it is.
 */
_must_check_ int remote_begin_run(struct remote_run *r, const struct exec_opts *o,
                                  struct diag *reterr);
void remote_end_run(struct remote_run *r);

/* An event loop for the run on this thread: the channel while it lives, the timer, stops. */
_must_check_ int remote_attach_loop(struct remote_run *r, struct diag *reterr);

/*
 * remote_begin_run(), then start the channel and the agent: the opening (our hello, and for
 * a one-shot run its run frame) goes when the agent's hello comes.
 */
_must_check_ int remote_setup(struct remote_run *r, const struct exec_opts *o, struct diag *reterr);

/* Run the loop until the run is over (a cell: its exit frame), or the handshake is. */
_must_check_ int remote_run_loop(struct remote_run *r, bool handshake_only, struct diag *reterr);

/* End everything: the channel killed and reaped, the run's state released. */
void remote_teardown(struct remote_run *r);

/* The run frame of @r's run: the script, the configuration the agent applies, the tools. */
json_t *remote_run_frame(const struct remote_run *r);

void remote_arm_timer(struct remote_run *r, usec_t when);
void remote_disarm_timer(struct remote_run *r);
/* Close the channel's stdin: the agent reads end of file after what was sent. */
void remote_close_input(struct remote_run *r);
/* SIGKILL to the channel command's session, without waiting. */
void remote_kill_channel(struct remote_run *r);

/* Send one frame to the agent, from any thread. 0, or -errno once the channel broke. */
int remote_send_json(struct remote_run *r, enum frame_type type, const json_t *v);

/* Tell the host tools running for this run to stop (the run's cancel eventfd). */
void remote_signal_tools(struct remote_run *r);

/* The run failed on our side: say why (the first reason stays), and end the channel. */
_printf_(2, 3) void remote_fail(struct remote_run *r, const char *fmt, ...);

/* A call frame from the agent (exec-remote-calls.c): answered from a thread of its own. */
void remote_start_call(struct remote_run *r, json_t *call);
/* An ask frame of the agent (docs/policy.md): the host's approver answers it on a thread
 * (one of the calls remote_wait_calls() waits for). */
void remote_start_ask(struct remote_run *r, json_t *ask);

/* Wait for the host tool calls still running, after telling them to stop. */
void remote_wait_calls(struct remote_run *r);
