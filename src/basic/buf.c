/* SPDX-License-Identifier: MIT */
#include "basic/buf.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_init(struct buf *b, size_t cap)
{
        *b = BUF_INIT(cap);
}

void buf_release(struct buf *b)
{
        if (!b)
                return;
        free(b->data);
        b->data = NULL;
        b->len = b->alloc = 0;
}

void buf_reset(struct buf *b)
{
        b->len = 0;
        if (b->data)
                b->data[0] = 0;
}

int buf_reserve(struct buf *b, size_t n)
{
        size_t need, a;
        char *p;

        if (n > b->cap || b->len > b->cap - n)
                return -E2BIG;
        need = b->len + n + 1;
        if (need <= b->alloc)
                return 0;
        a = b->alloc ? b->alloc : 64;
        while (a < need)
                a = a > SIZE_MAX / 2 ? need : a * 2;
        /* Never allocate far beyond the cap just because we double. */
        if (a > b->cap + 1)
                a = MAX(need, b->cap + 1);
        p = realloc(b->data, a);
        if (!p)
                return -ENOMEM;
        b->data = p;
        b->alloc = a;
        return 0;
}

int buf_append(struct buf *b, const void *p, size_t n)
{
        int r;

        r = buf_reserve(b, n);
        if (r < 0)
                return r;
        if (n)
                memcpy(b->data + b->len, p, n);
        b->len += n;
        b->data[b->len] = 0;
        return 0;
}

int buf_append_str(struct buf *b, const char *s)
{
        return buf_append(b, s, strlen(s));
}

int buf_append_char(struct buf *b, char c)
{
        return buf_append(b, &c, 1);
}

int buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
        va_list aq;
        size_t room;
        int n, r;

        /* One pass in the common case: format into the room we already have. */
        room = b->alloc > b->len ? b->alloc - b->len : 0;
        va_copy(aq, ap);
        n = vsnprintf(room ? b->data + b->len : NULL, room, fmt, aq);
        va_end(aq);
        if (n < 0)
                return -EINVAL;
        if ((size_t) n < room) {
                if ((size_t) n > b->cap - b->len) {
                        b->data[b->len] = 0;
                        return -E2BIG;
                }
                b->len += (size_t) n;
                return 0;
        }
        r = buf_reserve(b, (size_t) n);
        if (r < 0) {
                if (b->data)
                        b->data[b->len] = 0;
                return r;
        }
        (void) vsnprintf(b->data + b->len, (size_t) n + 1, fmt, ap);
        b->len += (size_t) n;
        return 0;
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = buf_vprintf(b, fmt, ap);
        va_end(ap);
        return r;
}

void buf_consume(struct buf *b, size_t n)
{
        if (n >= b->len) {
                buf_reset(b);
                return;
        }
        memmove(b->data, b->data + n, b->len - n);
        b->len -= n;
        b->data[b->len] = 0;
}

char *buf_steal(struct buf *b, size_t *ret_len)
{
        char *p = b->data;

        if (!p) {
                p = strdup("");
                if (!p)
                        return NULL;
        }
        if (ret_len)
                *ret_len = b->len;
        b->data = NULL;
        b->len = b->alloc = 0;
        return p;
}
