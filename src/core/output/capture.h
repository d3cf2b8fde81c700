/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Bounded capture of a byte stream (a child's stdout or stderr, a terminal
 * command's output): the first head_max bytes and the last tail_max bytes,
 * the total count, and optionally a spill file with the first spill_max bytes
 * of the whole stream. Memory use is head_max + tail_max whatever is fed.
 *
 * The seed's notice is used when the stream exceeded head_max + tail_max:
 *   "\n\n... [OUTPUT TRUNCATED - {omitted} chars omitted out of {total} total] ...\n\n"
 * with thousands separators when CAPTURE_THOUSANDS is set (execute_code) and
 * without (terminal). omitted = total - kept head bytes - kept tail bytes.
 *
 * Not thread-safe; one owner feeds it.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/macro.h"

enum {
        CAPTURE_THOUSANDS = 1 << 0, /* thousands separators in the notice */
};

struct capture {
        size_t head_max, tail_max;
        unsigned flags;
        size_t head_cap, ring_max; /* head_max, tail_max + capture_set_context()'s */
        char *head;                /* head_cap bytes */
        size_t head_len;
        char *tail; /* ring buffer of ring_max bytes */
        size_t tail_start, tail_len;
        uint64_t total;

        /* spill (optional) */
        char *spill_dir;
        char *spill_path;
        int spill_fd;
        uint64_t spill_max, spill_written;
        int spill_error; /* the -errno that made the spill be given up (a full disk), or 0 */
};

/*
 * Set up @c. @tail_max == 0 gives a head-only capture (stderr): bytes after
 * head_max are counted and dropped. @spill_dir (copied; NULL = no spill) is
 * the directory where a spill file is created, mode 0600, the first time the
 * stream exceeds head_max + tail_max; it then holds the first @spill_max bytes
 * of the whole stream. Returns 0 or -ENOMEM.
 */
_must_check_ int capture_init(struct capture *c, size_t head_max, size_t tail_max, unsigned flags,
                              const char *spill_dir, uint64_t spill_max);

/*
 * Keep @ctx bytes more than the head and the tail show, after the head and before the
 * tail: what capture_text_cut()'s seam judges a cut with. Before the first feed.
 * 0, -EINVAL (after a feed) or -ENOMEM.
 */
_must_check_ int capture_set_context(struct capture *c, size_t ctx);

/* Free memory, close the spill fd (the spill file is kept). NULL-safe. */
void capture_release(struct capture *c);

/* Feed @n bytes. Returns 0, or -errno when the spill file could not be written
 * (the in-memory capture is still updated; the spill is then abandoned). */
int capture_feed(struct capture *c, const void *p, size_t n);

static inline bool capture_truncated(const struct capture *c)
{
        return c->total > (uint64_t) c->head_max + c->tail_max;
}

struct capture_text {
        char *text;       /* valid UTF-8 (invalid bytes -> U+FFFD), NUL-terminated; caller frees */
        size_t len;       /* bytes in text */
        bool truncated;   /* the notice was inserted */
        uint64_t total;   /* bytes fed */
        uint64_t omitted; /* bytes not in text (0 unless truncated) */
};

/*
 * Assemble the captured text: head, then (when truncated) the notice, then
 * tail; each part decoded with replacement characters separately, as the seed
 * does. For a head-only capture bytes past the head are dropped without a
 * notice. Returns 0 or -ENOMEM.
 */
_must_check_ int capture_text(const struct capture *c, struct capture_text *ret);

/*
 * Where a part of the text is cut: @s[0..n) holds the bytes around the cut, @want is where
 * the head would end (!@forward) or the tail begin (@forward). Sets *ret_cut to the cut
 * (at or before @want for the head's end, at or after it for the tail's start): 0, or a
 * negative errno that fails capture_text_cut().
 */
typedef int (*capture_seam_fn)(const char *s, size_t n, size_t want, bool forward, size_t *ret_cut,
                               void *userdata);

/*
 * capture_text() with the head's end and the tail's start placed by @seam (NULL: where
 * head_max and tail_max put them), so that what a cut would split (a secret) is left out
 * whole: its bytes count as omitted. Returns 0, -ENOMEM or @seam's error.
 */
_must_check_ int capture_text_cut(const struct capture *c, capture_seam_fn seam, void *userdata,
                                  struct capture_text *ret);

/*
 * Path of the spill file, or NULL when none was written. Borrowed.
 */
static inline const char *capture_spill_path(const struct capture *c)
{
        return c->spill_path;
}

/*
 * Filter the spill file in place through @filter, in chunks of ~1 MiB cut at a
 * character boundary, so memory stays bounded. @filter gets the stream's
 * chunks in order, each NUL-terminated valid UTF-8, @last set on the final
 * one, and returns 1 with a new string in *ret (its output for the chunk,
 * maybe empty: it may hold text back for later chunks, and must give all of
 * it by the last; the caller of the filter frees; length in *ret_len), 0 to
 * keep the chunk, or a negative errno, which fails the whole filtering.
 * Returns 0, or -errno after removing the spill file (capture_spill_path()
 * is then NULL): the filter removes secrets, so an unfiltered spill never stays.
 */
typedef int (*capture_filter_fn)(const char *chunk, size_t n, bool last, char **ret,
                                 size_t *ret_len, void *userdata);
_must_check_ int capture_filter_spill(struct capture *c, capture_filter_fn filter, void *userdata);

/*
 * Close and remove the spill file (capture_spill_path() is then NULL): for a caller that
 * cannot filter it, since an unfiltered spill could hold a secret.
 */
void capture_drop_spill(struct capture *c);

/* Format @v with thousands separators ("10,000,000") into @buf (>= 27 bytes). */
char *format_thousands(uint64_t v, char *buf, size_t size);
