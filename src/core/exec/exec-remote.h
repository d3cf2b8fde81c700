/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The host's side of a remote run (docs/remote.md), inside exec/: the run's state, shared by
 * exec-remote.c (the stream on the channel, channel/channel.h; the handshake; the loop),
 * exec-remote-run.c (a one-shot run, a session's cells, their results) and
 * exec-remote-calls.c (the calls of the tools that run on the host, each on a thread of its
 * own).
 */

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "basic/buf.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "core/channel/channel.h"
#include "core/exec/exec-run.h"
#include "core/exec/exec.h"
#include "core/loop/loop.h"
#include "core/remote/frame.h"

/* Host tool calls running at once; more are answered with an error. */
#define HOST_CALLS_MAX 16

/*
 * A remote run, the run supervisor's remote target (exec-run.h): the channel to the agent
 * (channel/channel.h), which outlives a session's runs (each cell is a run of its own on
 * @run), its fds watched on the current run's loop, and what the agent said. The target's
 * phases beside the supervisor's: the handshake (waiting for the agent's hello) before its
 * running, and the channel's closing as the run's end (run_end()).
 */
struct remote_run {
        struct run run; /* the current run (a session's cell); its o, tool_ctx, clock */
        unsigned refs;  /* the run itself and each host tool call; under @lock */
        pthread_mutex_t lock;
        pthread_cond_t calls_done;
        unsigned calls;     /* host tool calls running */
        int64_t host_calls; /* host tool calls taken, on the loop's thread */

        /* Host tool calls send on it from their threads: released with the last reference. */
        struct remote_channel ch;
        /* Its stdout, stderr and pidfd on the run's loop. */
        struct loop_source *out_src, *err_src, *child_src, *handshake_timer;

        bool handshake;      /* waiting for the agent's hello */
        bool handshake_only; /* a session's opening: its run is over with the hello */
        bool session;        /* a session's channel: an exit frame ends a cell, not the channel */
        bool cell_over;      /* the cell's exit frame came */
        bool session_lost;   /* the agent's interpreter died with the cell */
        bool agent_said_why; /* an error frame came: the channel's stderr only repeats it */
        json_t *exit;        /* the agent's exit frame */
        char *failure;
        char *error_text;       /* the result's error, made of @failure (remote_collect()) */
        struct buf opening;     /* our magic, hello and run: sent when the agent's hello comes */
        usec_t channel_started; /* for a trace: the handshake's span starts here */
        usec_t script_started;  /* for a trace: the run (the cell) went to the agent */
};

/* A new run with nothing started: one reference, the caller's. NULL on ENOMEM. */
struct remote_run *remote_run_new(void);

/* Drop a reference (the run's own, or a host call's); the last one frees the run. */
void remote_run_unref(struct remote_run *r);

/*
 * A run (a session's cell) on @r's channel, whose options are @o: the supervisor's set-up
 * and the channel's sources on its loop; the channel starts (remote_open_channel()) or is
 * there already. remote_end_run() ends it and leaves the channel as it is.
 */
_must_check_ int remote_begin_run(struct remote_run *r, const struct exec_opts *o,
                                  struct diag *reterr);
void remote_end_run(struct remote_run *r);

/*
 * Start the channel and the agent: the opening (our hello, and for a one-shot run its run
 * frame) goes when the agent's hello comes.
 */
_must_check_ int remote_open_channel(struct remote_run *r, struct diag *reterr);

/* End the channel: killed and reaped, its state released. */
void remote_close_channel(struct remote_run *r);

/* The run's result: what the agent said (exec-remote-run.c; run_target_ops.collect). */
int remote_collect(struct run *run, struct result_input *in);

/* The run frame of @r's run: the script, the configuration the agent applies, the tools. */
json_t *remote_run_frame(const struct remote_run *r);

/* The run failed on our side: say why (the first reason stays), and end the channel. */
_printf_(2, 3) void remote_fail(struct remote_run *r, const char *fmt, ...);

/* A call frame from the agent (exec-remote-calls.c): answered from a thread of its own. */
void remote_start_call(struct remote_run *r, json_t *call);
/* An ask frame of the agent (docs/policy.md): the host's approver answers it on a thread
 * (one of the calls remote_wait_calls() waits for). */
void remote_start_ask(struct remote_run *r, json_t *ask);

/* Wait for the host tool calls still running, after telling them to stop. */
void remote_wait_calls(struct remote_run *r);
