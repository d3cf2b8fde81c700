/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A growable byte buffer with a hard cap (curl's dynbuf, git's strbuf).
 *
 * The data is always NUL-terminated (the terminator is not counted in len and
 * does not count against the cap), so buf.data can be used as a C string when
 * the content has no embedded NUL. An empty, never-grown buffer has data ==
 * NULL; use buf_str() to get "" in that case.
 *
 * Ownership: the buffer owns data. buf_release() frees it; buf_steal() hands
 * it to the caller (free() it).
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "basic/macro.h"

struct buf {
        char *data;
        size_t len;
        size_t alloc;
        size_t cap; /* maximum len; appends beyond it fail with -E2BIG */
};

#define BUF_INIT(c) ((struct buf){.cap = (c)})

/* Initialise an empty buffer that may hold at most @cap bytes. */
void buf_init(struct buf *b, size_t cap);
/* Free the data and reset to empty (the cap is kept). NULL-safe. */
void buf_release(struct buf *b);
DEFINE_TRIVIAL_CLEANUP_FUNC_REF(struct buf, buf_release);
#define _cleanup_buf_ _cleanup_(buf_releasep)

/* Empty the buffer without freeing its memory. */
void buf_reset(struct buf *b);

/*
 * Append @n bytes. Returns 0, -E2BIG when the result would exceed the cap
 * (nothing is appended), or -ENOMEM.
 */
_must_check_ int buf_append(struct buf *b, const void *p, size_t n);
_must_check_ int buf_append_str(struct buf *b, const char *s);
_must_check_ int buf_append_char(struct buf *b, char c);
_must_check_ int buf_printf(struct buf *b, const char *fmt, ...) _printf_(2, 3);
_must_check_ int buf_vprintf(struct buf *b, const char *fmt, va_list ap) _printf_(2, 0);

/* Make room for @n more bytes; returns 0, -E2BIG or -ENOMEM. */
_must_check_ int buf_reserve(struct buf *b, size_t n);

/* Drop the first @n bytes (memmove). */
void buf_consume(struct buf *b, size_t n);

/* Borrowed C string view; "" when empty. Valid until the next modification. */
static inline const char *buf_str(const struct buf *b)
{
        return b->data ? b->data : "";
}

/*
 * Hand the data to the caller (NUL-terminated, never NULL on success) and
 * reset the buffer. Returns NULL only on -ENOMEM for an empty buffer.
 */
char *buf_steal(struct buf *b, size_t *ret_len);
