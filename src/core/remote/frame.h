/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The frames of the remote stream (docs/remote.md, "The stream"): what ptc on the host and
 * ptc's agent on a remote target say to each other over one duplex byte stream, the stdin
 * and stdout of a channel command (ssh, docker exec, kubectl exec, ...).
 *
 * Each end first writes FRAME_MAGIC, then frames. A frame is a 5-byte header, the length of
 * its payload (32 bits, big-endian) and its type (one byte), then the payload: one JSON
 * object (UTF-8) for every type but the output chunks, whose payload is the bytes the
 * script wrote. The first frame each way is FRAME_HELLO; FRAME_ERROR is the last.
 *
 * The magic is PNG's idea: a byte with the high bit set, "PTC", CR LF, ^Z, LF, so a channel
 * that is not 8-bit clean or translates line ends breaks it visibly at the start instead of
 * corrupting a frame later. A channel may print before the stream starts (a login banner, a
 * shell's rc file): the reader skips up to FRAME_PREAMBLE_MAX bytes before the magic and
 * keeps the first of them for the error when the magic never comes.
 *
 * Nothing here does I/O but frame_reader_fill(); the caller owns the fds, the loop and the
 * locking. Thread context: a reader, or a buffer being appended to, belongs to one thread
 * at a time.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "basic/buf.h"
#include "basic/macro.h"

struct diag;

#define FRAME_MAGIC "\x89PTC\r\n\x1a\n"
#define FRAME_MAGIC_SIZE 8
#define FRAME_HEADER_SIZE 5
#define FRAME_PROTOCOL_VERSION 1
/* Bytes a channel may print before the magic; more, and the stream is refused. */
#define FRAME_PREAMBLE_MAX (64u * 1024)
/* Bytes of that preamble kept for the error message. */
#define FRAME_PREVIEW_MAX 160
/* A JSON frame: the RPC server's request cap (a write_file's content travels in one). */
#define FRAME_JSON_MAX (16u * 1024 * 1024)
/* An output chunk: what one read of a pipe gives. */
#define FRAME_CHUNK_MAX (64u * 1024)
/* What one frame_reader_fill() reads. */
#define FRAME_READ_SIZE (64u * 1024)

enum frame_type {
        FRAME_HELLO = 1, /* both ways, first: {"protocol": 1, "ptc": VERSION, "features": [...]} */
        FRAME_RUN,       /* host -> agent: the script, its module and the run's options */
        FRAME_STDOUT,    /* agent -> host: bytes the script wrote to stdout (not JSON) */
        FRAME_STDERR,    /* agent -> host: bytes the script wrote to stderr (not JSON) */
        FRAME_CALL,      /* agent -> host: a call of a tool that runs on the host */
        FRAME_ANSWER,    /* host -> agent: the answer to a FRAME_CALL, by its id */
        FRAME_SIGNAL,    /* host -> agent: stop the script ({"signal": "interrupt"|"kill"}) */
        FRAME_EXIT,      /* agent -> host: the script ended; its status and counters */
        FRAME_ERROR,     /* both ways, last: {"error": MESSAGE}; the sender gives up */
        FRAME_PROGRESS,  /* agent -> host: a tool call was dispatched: {"tool", "count"} */
        FRAME_ASK,       /* agent -> host: the policy asks about a call (docs/policy.md):
                          * {"id", "tool", "args" (text, redacted), "verdict", "timeout_ms"} */
        FRAME_APPROVAL,  /* host -> agent: the answer to a FRAME_ASK: {"id", "answer"} */
        FRAME_TYPE_LAST = FRAME_APPROVAL,
};

/* Which end reads: each takes only the frame types meant for it. */
enum frame_side {
        FRAME_SIDE_HOST,  /* reads what the agent sends */
        FRAME_SIDE_AGENT, /* reads what the host sends */
};

/* One frame, as frame_reader_next() returns it. */
struct frame {
        enum frame_type type;
        const char *
                payload; /* @len bytes, not NUL-terminated; borrowed until the reader's next call */
        size_t len;
};

struct frame_reader {
        struct buf in; /* bytes read and not yet taken */
        size_t start;  /* in.data[start..] is what is left; the rest is dropped on the next fill */
        enum frame_side side;
        bool started;      /* the magic was seen */
        bool hello_seen;   /* the first frame (a HELLO) was taken */
        bool ended;        /* an ERROR frame was taken: nothing may follow */
        size_t skipped;    /* bytes before the magic */
        const char *watch; /* frame_reader_watch(): looked for before the magic; borrowed */
        bool watch_seen;
        char preview[FRAME_PREVIEW_MAX];
        size_t preview_len;
        uint64_t frames; /* frames taken */
};

/* A reader for @side, empty. frame_reader_release() frees it. */
void frame_reader_init(struct frame_reader *r, enum frame_side side);
void frame_reader_release(struct frame_reader *r);
DEFINE_TRIVIAL_CLEANUP_FUNC_REF(struct frame_reader, frame_reader_release);
#define _cleanup_frame_reader_ _cleanup_(frame_reader_releasep)

/*
 * Look for the text @watch (at most FRAME_WATCH_MAX bytes; borrowed, must outlive @r) in
 * what comes before the magic: frame_reader_next() sets watch_seen when it passes it. How
 * the host hears the target's shell ask for the agent before the agent runs.
 */
void frame_reader_watch(struct frame_reader *r, const char *watch);
#define FRAME_WATCH_MAX 64

/*
 * Append @n bytes from the channel. Returns 0, -ENOMEM, or -E2BIG when more than a whole
 * frame's worth is pending (the caller did not take frames between feeds).
 */
_must_check_ int frame_reader_feed(struct frame_reader *r, const void *p, size_t n);

/*
 * One read(2) of up to FRAME_READ_SIZE bytes from @fd into the reader. Returns the number
 * of bytes read, 0 at end of file, -EAGAIN when a non-blocking @fd has nothing, or another
 * -errno (EINTR is retried).
 */
_must_check_ ssize_t frame_reader_fill(struct frame_reader *r, int fd);

/*
 * Take the next whole frame. Returns 1 and *ret (its payload borrowed until the next call
 * on @r), 0 when more bytes are needed, or a negative errno with @reterr saying what is
 * wrong with the stream: -EPROTO for a preamble over FRAME_PREAMBLE_MAX, an unknown type,
 * a type not meant for this side, a payload over its type's cap, a first frame that is not
 * a HELLO, or a frame after an ERROR.
 */
_must_check_ int frame_reader_next(struct frame_reader *r, struct frame *ret, struct diag *reterr);

/*
 * The channel ended (end of file). Returns 0 when it ended between frames after the
 * stream started, or -EPIPE with @reterr saying where it was cut: before the magic (with
 * the start of what the channel printed), inside a header, or inside a payload.
 */
int frame_reader_eof(const struct frame_reader *r, struct diag *reterr);

/* "hello", "run", ...; "unknown" for anything else. Static storage. */
const char *frame_type_name(unsigned type);

/* The largest payload of @type, 0 for an unknown type. */
size_t frame_payload_max(unsigned type);

/* Append FRAME_MAGIC to @out: the first bytes each end writes. */
_must_check_ int frame_append_magic(struct buf *out);

/*
 * Append one frame of @type with the @n bytes at @payload. Returns 0; -EINVAL for an
 * unknown type; -E2BIG when @n is over the type's cap or @out's cap is reached (nothing is
 * appended); -ENOMEM.
 */
_must_check_ int frame_append(struct buf *out, enum frame_type type, const void *payload, size_t n);

/*
 * Append one frame of @type whose payload is @v written as compact JSON, without a copy.
 * Returns as frame_append(), or -EINVAL when @type carries bytes (an output chunk) or @v is
 * not an object.
 */
_must_check_ int frame_append_json(struct buf *out, enum frame_type type, const json_t *v);

/*
 * Parse a JSON frame's payload: one object. Returns it (a new reference), or NULL with
 * @reterr naming the frame type and the parse error.
 */
json_t *frame_parse_json(const struct frame *f, struct diag *reterr);
