/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The channel to ptc's agent on a remote target (docs/remote.md): the backend's channel
 * command (ssh, docker exec, ...; backend.h) started in a session of its own with a socket
 * as its stdin, the target's shell told to exec the agent (or first to take the static agent
 * the host ships), and whole frames written to it from any thread. It is how the host
 * reaches the agent, whatever the run on it: exec/exec-remote*.c makes a run of it.
 *
 * The channel gives fds and does not watch them: its stdout (the stream, read through
 * @reader), its stderr (remote_channel_read_err() keeps its start) and its pidfd go on the
 * event loop of whoever runs on it, which decides what their events mean for its run (a
 * session's channel outlives each cell's loop). That user closes out_fd and err_fd when it
 * is done with them and calls remote_channel_reaped() when the pidfd fires.
 *
 * A module of its own, not a part of core/remote: it starts a process (core/spawn), and
 * spawn reaches core/config, which reads backend SPECs through core/remote; so remote stays
 * below config and the channel sits above both.
 *
 * Threads: remote_channel_send*() and remote_channel_close_input() from any thread (the
 * channel's lock serializes them); everything else on the thread that started it.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "basic/diag.h"
#include "basic/macro.h"
#include "core/remote/frame.h"

struct backend;

/* Bytes of the channel command's stderr kept for messages. */
#define CHANNEL_ERR_KEEP 1024

struct remote_channel {
        pthread_mutex_t lock; /* serializes the writes to @in_fd and its closing */
        int in_fd;            /* the channel's stdin (a socket): our frames; -1 once closed */
        bool write_broken;    /* a write failed or stalled: nothing more is sent */

        pid_t pid; /* the channel command, leader of a session of its own; -1: not started */
        int pidfd;
        bool reaped; /* its exit was seen (remote_channel_reaped()) or waited for */
        int out_fd;  /* its stdout, non-blocking: owned; closed by its watcher at its end */
        int err_fd;  /* its stderr, the same */
        struct frame_reader reader; /* what came on @out_fd */

        char err_head[CHANNEL_ERR_KEEP]; /* the start of its stderr: it explains a failure */
        size_t err_len;

        char *agent_path; /* the static agent to ship, owned; NULL: ptc on the target's PATH */
        char agent_hash[65];
        uint64_t agent_size;
        bool agent_sent; /* remote_channel_ship_agent() was called */
};

/* A channel with nothing started. remote_channel_done() releases it. */
void remote_channel_init(struct remote_channel *c);

/* Free what is left (the stdin, the lock): when no thread can send any more. */
void remote_channel_done(struct remote_channel *c);

/*
 * Find the static agent beside ptc (ptc-agent and its ptc-agent.sha256, paths/companion.h)
 * for remote_channel_bootstrap() to offer. 0 (none found is no error), or -ENOMEM.
 */
_must_check_ int remote_channel_find_agent(struct remote_channel *c);

/*
 * Start @backend's channel command with the environment @envp and the directory @cwd (a
 * channel to this machine starts where a local run would): new session, killed with its
 * parent, its pipes non-blocking. 0, or -errno with @reterr ("backend 'SPEC': ...").
 */
_must_check_ int remote_channel_start(struct remote_channel *c, const struct backend *backend,
                                      char *const *envp, const char *cwd, struct diag *reterr);

/*
 * Tell the target's shell to exec the agent: the cached copy of the agent to ship (asking
 * for it first when it is not there: @reader then watches for the shell's marker), or
 * `ptc agent` on its PATH. A channel that died at once may fail this write, and its closing
 * stdout says so: no error but -ENOMEM (with @reterr).
 */
_must_check_ int remote_channel_bootstrap(struct remote_channel *c, struct diag *reterr);

/* The target's shell asked for the agent (@reader's watch_seen): it is to be sent. */
bool remote_channel_wants_agent(const struct remote_channel *c);

/* Send exactly the agent's bytes. 0, or -errno with @reterr saying why. */
_must_check_ int remote_channel_ship_agent(struct remote_channel *c, struct diag *reterr);

/*
 * Send @len bytes (whole frames) to the agent, from any thread; a write that makes no
 * progress for 30 s breaks the channel. 0, or -errno (-EPIPE once broken or closed).
 */
int remote_channel_send(struct remote_channel *c, const void *data, size_t len);
/* One frame of @type holding @v; the same. */
int remote_channel_send_json(struct remote_channel *c, enum frame_type type, const json_t *v);

/* Close the channel's stdin: the agent reads end of file after what was sent. Any thread. */
void remote_channel_close_input(struct remote_channel *c);

/* SIGKILL to the channel command's session, without waiting; nothing once it was reaped. */
void remote_channel_kill(struct remote_channel *c);

/*
 * Read what the channel command's stderr has, keeping its start. 1: read; 0: end of file or
 * an error (the watcher closes @err_fd); -EAGAIN: nothing now.
 */
int remote_channel_read_err(struct remote_channel *c);

/* Its pidfd said the channel command exited: whatever it left holding its pipes is killed. */
void remote_channel_reaped(struct remote_channel *c);

/* Kill and reap the channel command, close its fds and the stdin, free the agent's path. */
void remote_channel_close(struct remote_channel *c);
