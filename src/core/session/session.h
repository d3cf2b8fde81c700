/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The live sessions of one engine (docs/sessions.md): id -> interpreter (exec/exec-interp.h),
 * at most @max of them alive, each closed after @idle of no use by a thread of the table,
 * the least recently used idle one closed first when a new one needs room. A session
 * runs one cell at a time. What happened to a session that is gone (expired, closed to
 * make room, lost) is remembered for the next cell on its id, which starts a new interpreter
 * and is told why.
 */

#include <stdbool.h>

#include "basic/diag.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "core/exec/exec.h"

struct session_table;
struct exec_interp;

#define SESSION_ID_MAX 64

/* [A-Za-z0-9._-]{1,64} */
bool session_id_is_valid(const char *id);

_must_check_ int session_table_new(unsigned max, usec_t idle, struct session_table **ret);

/* Closes every session (their interpreters die). No cell may be running. NULL-safe. */
struct session_table *session_table_free(struct session_table *t);

/* One cell's hold on its session, from session_begin() to session_end(). */
struct session_lease {
        struct exec_interp *interp;
        unsigned cell;  /* 1 for the first cell of an interpreter */
        char note[320]; /* why a new interpreter started for a known id; "" otherwise */
        void *session;  /* the table's */
};

/*
 * Take session @id for a cell: its interpreter, started with @o (exec_interp_start()) when it
 * has none, or when @reset. -EBUSY with the reason when the session runs a cell, or when
 * a new session needs room and every live one is running; the start's error otherwise.
 */
_must_check_ int session_begin(struct session_table *t, const char *id, bool reset,
                               const struct exec_opts *o, struct session_lease *ret,
                               struct diag *reterr);

/*
 * The warm pool (docs/sessions.md): keep @warm interpreters started with @o (whose pointers
 * must outlive the table) ready for one-shot runs. Call once, before any take.
 */
void session_table_set_warm(struct session_table *t, unsigned warm, const struct exec_opts *o);

/*
 * A ready interpreter of the warm pool, the caller's from now on (for one run, then
 * exec_interp_free()), or NULL when none is ready; the pool refills behind it.
 */
struct exec_interp *session_take_warm(struct session_table *t);

/*
 * Hand a used interpreter of the warm pool back to be freed on the table's thread (its
 * reaping and files are nobody's wait); kill it first (exec_interp_kill()).
 */
void session_discard(struct session_table *t, struct exec_interp *k);

/* Give the session back after its cell; @lost: its interpreter died with the cell. */
void session_end(struct session_table *t, struct session_lease *l, bool lost);

/*
 * Close session @id now (its interpreter dies); the next cell on it is told @why ("closed"),
 * or nothing with NULL. -ENOENT when it is not live, -EBUSY while it runs a cell.
 */
_must_check_ int session_close(struct session_table *t, const char *id, const char *why);

/*
 * Make session @new_id a copy of session @id (exec_interp_fork()), idle, its cells numbered
 * on from @id's. -ENOENT when @id is not live, -EBUSY while it runs a cell (or when room is
 * needed and every live session runs one), -EEXIST when @new_id is live; the least recently
 * used idle session is closed to make room. When @id's interpreter died being copied, @id is
 * lost (its next cell is told).
 */
_must_check_ int session_fork(struct session_table *t, const char *id, const char *new_id,
                              struct diag *reterr);

/*
 * The live sessions as a JSON array text: [{"session", "cells", "idle_seconds", "busy",
 * "pid"}], oldest use first. NULL on ENOMEM.
 */
char *session_table_list(struct session_table *t);
