/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The search engine behind the search_files tool (core/tools/search-files.c: the arguments,
 * pass 1's records, the walk's callbacks, paths, pass 2 and the result JSON):
 *
 *   search-match.c  the pattern (a literal, or PCRE2 with a required-literal prefilter) and
 *                   the next matching line of a buffer
 *   search-scan.c   a walker thread's state and the scan of one file: chunks, line numbers,
 *                   context lines, and the entries of a page (pass 2), handed to the caller
 *
 * The directory walk is search-walk.h, the ignore rules search-ignore.h. Below the tools: a
 * call's deadline and cancel fd come as values, its result is built by the caller.
 */

#define PCRE2_CODE_UNIT_WIDTH 8

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <pcre2.h>

#include "basic/macro.h"
#include "basic/time-util.h"

struct redactor;

/* Context lines before and after a match at most. */
#define SEARCH_CONTEXT_MAX 100

enum mode {
        MODE_CONTENT,
        MODE_FILES_ONLY,
        MODE_COUNT,
        MODE_FILES, /* target="files" */
};

struct lit {
        char *s;
        size_t n;
        size_t rare_at; /* index of its rarest byte */
};

struct matcher {
        bool literal; /* the pattern is the literal @lit */
        struct lit lit;
        pcre2_code *code;
        bool prefilter; /* a line matching @code must contain the literal @req */
        struct lit req;
};

/* One file of the result, as pass 1 keeps it. */
struct rec {
        char *rel; /* path below the root ("" when the root is the file) */
        uint64_t count;
        int64_t mtime_sec;
        long mtime_nsec;
};

struct search {
        usec_t deadline;                 /* CLOCK_MONOTONIC; USEC_INFINITY when none */
        int cancel_fd;                   /* POLLIN once cancelled; -1 when none */
        const struct redactor *redactor; /* for the caller's result lines; may be NULL */
        enum mode mode;
        struct matcher m;
        unsigned context;
        size_t window; /* offset + limit */

        pthread_mutex_t lock; /* guards everything below */
        struct rec *heap;     /* max-heap by result order: the worst kept record on top */
        size_t n_heap, heap_alloc;
        uint64_t total;         /* entries (content), lines (count), files (the others) */
        uint64_t total_files;   /* files with a result */
        char *limit_path;       /* first file where the regex hit the match limit */
        uint64_t withheld;      /* paths the caller's judge left out (search_walk_opts.judge) */
        const void *judge_data; /* the caller's, for its judge (search-files.c: the tool_ctx) */
};

struct scan_thread {
        struct search *s;
        unsigned calls; /* for search_should_stop() */
        char *buf;
        size_t cap;
        pcre2_match_data *md;
        pcre2_match_context *mctx;
        pcre2_jit_stack *jstack;
};

struct scan {
        struct scan_thread *t;
        unsigned context;
        bool need_lines; /* line numbers: extraction or context */
        bool first_only; /* files_only: one match decides */
        /* extraction (pass 2) */
        bool extract;
        uint64_t from, to; /* entries with these indices go to emit() */
        /* Entry @line (its text p[0..n), no '\n') of the page: 0 or -ENOMEM. */
        int (*emit)(void *userdata, uint64_t line, const char *p, size_t n);
        void *userdata;
        /* results */
        uint64_t entries; /* matching lines plus context lines */
        uint64_t lines;   /* matching lines */
        bool binary;
        int err;
        /* state */
        bool search_done, read_done;
        uint64_t last_emitted; /* line number of the last entry, 0 = none */
        unsigned pending_after;
        size_t ac_pos;      /* start of the line after the last entry while pending_after > 0 */
        size_t cur_pos;     /* a position whose line number is known ... */
        uint64_t cur_line;  /* ... this one */
        bool mid;           /* buf[base] continues a line split at the buffer cap */
        bool split_matched; /* that line has matched already */
        bool buf0_mid;      /* buf[0] is not a line start */
};

/* s->deadline passed or the search was cancelled (s->cancel_fd is readable). */
bool search_interrupted(const struct search *s);
/*
 * Called before each regex call and each chunk read: a long search of one file (a huge file,
 * a slow regex on many lines) still notices the deadline and the cancel fd.
 */
bool search_should_stop(struct scan_thread *t);

/*
 * Compile @pattern. Returns 0, -ENOMEM, or -EINVAL with the message for the caller in
 * *ret_msg (caller frees).
 */
_must_check_ int search_matcher_init(struct matcher *m, const char *pattern, size_t n,
                                     char **ret_msg);
void search_matcher_release(struct matcher *m);

/* End of the line holding @p: its '\n', or @end. */
size_t search_line_end(const char *buf, size_t end, size_t p);
/*
 * The first line at or after @from (a line start) in buf[0..end) that matches. Returns 1 and
 * the line as [*ret_ls, *ret_le) (without its '\n'), 0 when there is none, -ELOOP when the
 * regex hit its match limit.
 */
int search_find_line(struct scan_thread *t, const char *buf, size_t end, size_t from,
                     size_t *ret_ls, size_t *ret_le);

/* A walker thread's state for @userdata (a struct search): search_walk_thread_init_fn. */
_must_check_ int search_scan_thread_new(void *userdata, void **ret);
/* NULL-safe. */
void search_scan_thread_free(struct scan_thread *t);
void search_scan_thread_done(void *state, void *userdata);

/* @sc set up for pass 1 on thread @t (the caller sets the extraction fields for pass 2). */
void search_scan_setup(struct scan *sc, struct scan_thread *t);
/* Scan the open file @fd with @sc set up. Returns 0 (results in @sc) or -errno. */
int search_scan_fd(struct scan *sc, int fd);
