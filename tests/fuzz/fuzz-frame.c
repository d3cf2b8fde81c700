/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the remote stream's frame reader (src/core/remote/frame.c): bytes from a
 * hostile remote end. The first input byte picks the reading side and how the rest is cut
 * into feeds; the rest is the stream. Every frame taken must be of a known type meant for
 * that side, within its cap, inside the reader's buffer, and re-encode to exactly the
 * bytes it came from; a JSON frame's parse must give an object or an error, never crash.
 * After an error the reader is dropped, as a host or agent drops the channel.
 *
 * The corpus (corpus/frame/) replays under meson through fuzz-main.c; to fuzz for real:
 * scripts/fuzz.sh frame [SECONDS] (docs/testing.md).
 */

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/diag.h"
#include "core/remote/frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct frame_reader *r, const struct frame *f, enum frame_side side)
{
        struct buf again = BUF_INIT(FRAME_HEADER_SIZE + FRAME_JSON_MAX);
        json_t *v;
        struct diag d;

        if (f->type < FRAME_HELLO || f->type > FRAME_TYPE_LAST ||
            f->len > frame_payload_max(f->type))
                abort();
        if (side == FRAME_SIDE_HOST &&
            (f->type == FRAME_RUN || f->type == FRAME_ANSWER || f->type == FRAME_SIGNAL))
                abort();
        if (side == FRAME_SIDE_AGENT &&
            (f->type == FRAME_STDOUT || f->type == FRAME_STDERR || f->type == FRAME_CALL ||
             f->type == FRAME_EXIT || f->type == FRAME_PROGRESS))
                abort();
        if (f->payload < r->in.data || f->payload + f->len > r->in.data + r->in.len)
                abort();
        /* The frame re-encodes to the very bytes it was read from. */
        if (frame_append(&again, f->type, f->payload, f->len) < 0 ||
            memcmp(again.data, f->payload - FRAME_HEADER_SIZE, again.len) != 0)
                abort();
        buf_release(&again);
        if (f->type != FRAME_STDOUT && f->type != FRAME_STDERR) {
                v = frame_parse_json(f, &d);
                if (v && !json_is_object(v))
                        abort();
                json_decref(v);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct frame_reader r;
        enum frame_side side;
        size_t step, at = 1;
        struct frame f;
        struct diag d;
        int k = 0;

        if (size < 1)
                return 0;
        side = data[0] & 1 ? FRAME_SIDE_AGENT : FRAME_SIDE_HOST;
        /* Feeds of 1..64 bytes, or everything at once. */
        step = (data[0] >> 1) ? (size_t) (data[0] >> 1) % 64 + 1 : size;
        frame_reader_init(&r, side);
        while (at < size && k >= 0) {
                size_t n = size - at < step ? size - at : step;

                if (frame_reader_feed(&r, data + at, n) < 0)
                        abort(); /* a fuzz input is far below the buffer's cap */
                at += n;
                while ((k = frame_reader_next(&r, &f, &d)) == 1)
                        check(&r, &f, side);
        }
        if (k >= 0)
                (void) frame_reader_eof(&r, &d);
        frame_reader_release(&r);
        return 0;
}
