/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What the parts of the V4A patch mode share (not part of the tools module's API;
 * v4a-apply.h is). The engine (core/edit/v4a.h): v4a-parse.c, the patch text -> struct
 * v4a_patch; v4a-hunk.c, one hunk applied to a file's content in memory. Here:
 *
 *   v4a-validate.c  every operation simulated on an in-memory overlay of the files, the plan
 *                   of each operation and the combined diff
 *   v4a.c           the apply phase (writing what validation planned) and the result
 *
 * Thread context: any thread; no global state.
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "basic/buf.h"
#include "basic/macro.h"
#include "core/edit/v4a.h"
#include "core/tools/v4a-apply.h"

struct tool_ctx;

/* fuzzy_unified_diff()'s note on a cut diff; ours when later diffs are left out. */
#define DIFF_CUT_NOTE "[... diff truncated]\n"

/* One path the patch touches (v4a-validate.c). */
struct entry;

/* What the apply phase does for one operation, computed by validation. */
struct plan {
        char *abs, *abs_new; /* resolved paths of op->path and op->new_path */
        bool moves;          /* Update with a "Move to" naming another file */
        char *content;       /* Add / Update: the new content */
        size_t len;
        bool write;     /* Update: content changed or the file moves */
        bool check;     /* Update: the disk file must still be what validation read */
        struct stat st; /* ... as validation saw it */
        char *pre;      /* Update: content before, the lint baseline; NULL when not kept */
        size_t pre_len;
        size_t diff_end; /* length of the combined diff once this operation's diff is in */
};

struct run {
        const struct tool_ctx *ctx;
        const struct v4a_patch *patch;
        struct entry **entries;
        size_t n_entries, entries_alloc;
        struct plan *plans;
        struct buf errors;
        size_t n_errors, n_dropped;
        struct buf diff;
        size_t diff_cut_at; /* operation whose diff hit V4A_DIFF_MAX; SIZE_MAX when none */
        size_t mem;         /* bytes of file content held, against V4A_MEMORY_MAX */
        size_t changes;     /* operations and hunks that change something */
};

/* Frees everything @run holds (not @run itself). */
void v4a_run_release(struct run *run);

/* A bullet of the validation error text; past V4A_ERROR_MAX only counted. 0 or -ENOMEM. */
_must_check_ int v4a_add_error(struct run *run, const char *fmt, ...) _printf_(2, 3);

/*
 * Simulate every operation of run->patch (run->plans has one zeroed plan per operation),
 * filling the plans, run->diff and run->errors. 0 (the patch validates when run->n_errors is
 * 0), -ETIMEDOUT (the execution's deadline passed), or -ENOMEM.
 */
_must_check_ int v4a_validate(struct run *run);
