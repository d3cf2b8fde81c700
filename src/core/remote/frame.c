/* SPDX-License-Identifier: MIT */
#include "core/remote/frame.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "basic/diag.h"
#include "core/json/json-write.h"

/* Types each side takes: a bit per type. */
#define BIT(t) (1u << (t))
static const unsigned accepted[] = {
        [FRAME_SIDE_HOST] = BIT(FRAME_HELLO) | BIT(FRAME_STDOUT) | BIT(FRAME_STDERR) |
                            BIT(FRAME_CALL) | BIT(FRAME_EXIT) | BIT(FRAME_ERROR) |
                            BIT(FRAME_PROGRESS) | BIT(FRAME_ASK),
        [FRAME_SIDE_AGENT] = BIT(FRAME_HELLO) | BIT(FRAME_RUN) | BIT(FRAME_ANSWER) |
                             BIT(FRAME_SIGNAL) | BIT(FRAME_ERROR) | BIT(FRAME_APPROVAL),
};

static const char *const type_names[] = {
        [FRAME_HELLO] = "hello",       [FRAME_RUN] = "run",   [FRAME_STDOUT] = "stdout",
        [FRAME_STDERR] = "stderr",     [FRAME_CALL] = "call", [FRAME_ANSWER] = "answer",
        [FRAME_SIGNAL] = "signal",     [FRAME_EXIT] = "exit", [FRAME_ERROR] = "error",
        [FRAME_PROGRESS] = "progress", [FRAME_ASK] = "ask",   [FRAME_APPROVAL] = "approval",
};

static bool type_known(unsigned t)
{
        return t >= FRAME_HELLO && t <= FRAME_TYPE_LAST;
}

static bool type_is_chunk(unsigned t)
{
        return t == FRAME_STDOUT || t == FRAME_STDERR;
}

const char *frame_type_name(unsigned type)
{
        return type_known(type) ? type_names[type] : "unknown";
}

size_t frame_payload_max(unsigned type)
{
        if (!type_known(type))
                return 0;
        return type_is_chunk(type) ? FRAME_CHUNK_MAX : FRAME_JSON_MAX;
}

void frame_reader_init(struct frame_reader *r, enum frame_side side)
{
        *r = (struct frame_reader){
                /* One whole frame, plus one read beyond it. */
                .in = BUF_INIT(FRAME_HEADER_SIZE + FRAME_JSON_MAX + FRAME_READ_SIZE),
                .side = side,
        };
}

void frame_reader_release(struct frame_reader *r)
{
        if (r)
                buf_release(&r->in);
}

/* Drop what frames already taken left at the front: one memmove per read, not per frame. */
static void compact(struct frame_reader *r)
{
        if (r->start > 0) {
                buf_consume(&r->in, r->start);
                r->start = 0;
        }
}

int frame_reader_feed(struct frame_reader *r, const void *p, size_t n)
{
        compact(r);
        return buf_append(&r->in, p, n);
}

ssize_t frame_reader_fill(struct frame_reader *r, int fd)
{
        ssize_t k;
        int e;

        compact(r);
        e = buf_reserve(&r->in, FRAME_READ_SIZE);
        if (e < 0)
                return e;
        do
                k = read(fd, r->in.data + r->in.len, FRAME_READ_SIZE);
        while (k < 0 && errno == EINTR);
        if (k < 0)
                return -errno;
        r->in.len += (size_t) k;
        r->in.data[r->in.len] = 0;
        return k;
}

/* What is left to take (never a NULL pointer, even before the first byte came). */
static const char *pending(const struct frame_reader *r)
{
        return buf_str(&r->in) + r->start;
}

/* Keep the first bytes of the preamble for the error message. */
static void keep_preview(struct frame_reader *r, const char *p, size_t n)
{
        size_t room = sizeof(r->preview) - r->preview_len;

        n = MIN(n, room);
        memcpy(r->preview + r->preview_len, p, n);
        r->preview_len += n;
}

/* @p as printable text (other bytes as \xNN), as much as fits @size. Returns the length. */
static size_t printable(const char *p, size_t n, char *out, size_t size)
{
        static const char hex[] = "0123456789abcdef";
        size_t o = 0;

        for (size_t i = 0; i < n && o + 5 < size; i++) {
                unsigned char c = (unsigned char) p[i];

                if (c >= 0x20 && c < 0x7f && c != '\\') {
                        out[o++] = (char) c;
                        continue;
                }
                out[o++] = '\\';
                out[o++] = 'x';
                out[o++] = hex[c >> 4];
                out[o++] = hex[c & 15];
        }
        out[o] = 0;
        return o;
}

/*
 * What the channel printed instead of the stream: the bytes skipped, then @n pending ones
 * at @p not scanned yet (at end of file), the first FRAME_PREVIEW_MAX of them shown.
 */
static int preamble_error(const struct frame_reader *r, const char *p, size_t n,
                          struct diag *reterr, int error, const char *what)
{
        char text[4 * FRAME_PREVIEW_MAX + 1];
        size_t total = r->skipped + n, o;

        if (total == 0)
                return diag_set(reterr, error, "%s: the channel printed nothing", what);
        o = printable(r->preview, r->preview_len, text, sizeof(text));
        if (r->preview_len < FRAME_PREVIEW_MAX)
                (void) printable(p, MIN(n, FRAME_PREVIEW_MAX - r->preview_len), text + o,
                                 sizeof(text) - o);
        return diag_set(reterr, error,
                        "%s: the channel printed %zu byte%s instead, starting: \"%s\"", what, total,
                        total == 1 ? "" : "s", text);
}

void frame_reader_watch(struct frame_reader *r, const char *watch)
{
        r->watch = watch && watch[0] && strlen(watch) <= FRAME_WATCH_MAX ? watch : NULL;
}

/* Look for the magic in what is pending; 1 when found (and consumed), 0 when not yet. */
static int find_magic(struct frame_reader *r, struct diag *reterr)
{
        const char *p = pending(r);
        size_t n = r->in.len - r->start;
        const char *m = n ? memmem(p, n, FRAME_MAGIC, FRAME_MAGIC_SIZE) : NULL;
        size_t keep = FRAME_MAGIC_SIZE - 1, drop;

        if (r->watch && !r->watch_seen) {
                size_t w = strlen(r->watch);

                /* Before the magic only: what follows it is the stream's. */
                if (memmem(p, m ? (size_t) (m - p) : n, r->watch, w))
                        r->watch_seen = true;
                keep = MAX(keep, w - 1);
        }

        if (m) {
                drop = (size_t) (m - p);
                keep_preview(r, p, drop);
                r->skipped += drop;
                r->start += drop + FRAME_MAGIC_SIZE;
                r->started = true;
                return 1;
        }
        /* Keep a tail that could be the magic's (or the watched text's) start. */
        drop = n > keep ? n - keep : 0;
        keep_preview(r, p, drop);
        r->skipped += drop;
        r->start += drop;
        if (r->skipped > FRAME_PREAMBLE_MAX)
                return preamble_error(r, NULL, 0, reterr, -EPROTO,
                                      "the remote stream did not start within 64 KiB");
        return 0;
}

static uint32_t get_be32(const unsigned char *p)
{
        return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

int frame_reader_next(struct frame_reader *r, struct frame *ret, struct diag *reterr)
{
        const unsigned char *h;
        uint32_t len;
        unsigned type;
        int k;

        if (!r->started) {
                k = find_magic(r, reterr);
                if (k <= 0)
                        return k;
        }
        if (r->in.len - r->start < FRAME_HEADER_SIZE)
                return 0;
        h = (const unsigned char *) pending(r);
        len = get_be32(h);
        type = h[4];

        if (r->ended)
                return diag_set(reterr, -EPROTO,
                                "broken remote stream: a %s frame after the error frame",
                                frame_type_name(type));
        if (!type_known(type))
                return diag_set(reterr, -EPROTO,
                                "broken remote stream: frame %llu has the unknown type %u",
                                (unsigned long long) r->frames + 1, type);
        if (!(accepted[r->side] & BIT(type)))
                return diag_set(reterr, -EPROTO,
                                "broken remote stream: a %s frame came from the %s, which never "
                                "sends one",
                                frame_type_name(type),
                                r->side == FRAME_SIDE_HOST ? "agent" : "host");
        if (len > frame_payload_max(type))
                return diag_set(reterr, -EPROTO,
                                "broken remote stream: a %s frame of %u bytes (at most %zu)",
                                frame_type_name(type), len, frame_payload_max(type));
        if (!r->hello_seen && type != FRAME_HELLO)
                return diag_set(reterr, -EPROTO,
                                "broken remote stream: it starts with a %s frame, not hello",
                                frame_type_name(type));
        if (r->in.len - r->start - FRAME_HEADER_SIZE < len)
                return 0;

        *ret = (struct frame){
                .type = type,
                .payload = pending(r) + FRAME_HEADER_SIZE,
                .len = len,
        };
        r->start += FRAME_HEADER_SIZE + len;
        r->hello_seen = true;
        r->ended = type == FRAME_ERROR;
        r->frames++;
        return 1;
}

int frame_reader_eof(const struct frame_reader *r, struct diag *reterr)
{
        size_t left = r->in.len - r->start;

        if (!r->started)
                return preamble_error(r, pending(r), left, reterr, -EPIPE,
                                      "the channel closed before the remote stream started");
        if (left == 0)
                return 0;
        if (left < FRAME_HEADER_SIZE)
                return diag_set(reterr, -EPIPE,
                                "the channel closed inside a frame header (%zu of %d bytes)", left,
                                FRAME_HEADER_SIZE);
        return diag_set(reterr, -EPIPE,
                        "the channel closed inside a %s frame (%zu of %u payload bytes)",
                        frame_type_name((unsigned char) pending(r)[4]), left - FRAME_HEADER_SIZE,
                        get_be32((const unsigned char *) pending(r)));
}

static void put_header(char *p, unsigned type, uint32_t len)
{
        p[0] = (char) (len >> 24);
        p[1] = (char) (len >> 16);
        p[2] = (char) (len >> 8);
        p[3] = (char) len;
        p[4] = (char) type;
}

int frame_append_magic(struct buf *out)
{
        return buf_append(out, FRAME_MAGIC, FRAME_MAGIC_SIZE);
}

int frame_append(struct buf *out, enum frame_type type, const void *payload, size_t n)
{
        char h[FRAME_HEADER_SIZE];
        int k;

        if (!type_known(type))
                return -EINVAL;
        if (n > frame_payload_max(type))
                return -E2BIG;
        k = buf_reserve(out, FRAME_HEADER_SIZE + n);
        if (k < 0)
                return k;
        put_header(h, type, (uint32_t) n);
        memcpy(out->data + out->len, h, FRAME_HEADER_SIZE);
        if (n)
                memcpy(out->data + out->len + FRAME_HEADER_SIZE, payload, n);
        out->len += FRAME_HEADER_SIZE + n;
        out->data[out->len] = 0;
        return 0;
}

int frame_append_json(struct buf *out, enum frame_type type, const json_t *v)
{
        size_t at = out->len, n;
        int k;

        if (!type_known(type) || type_is_chunk(type) || !json_is_object(v))
                return -EINVAL;
        k = buf_reserve(out, FRAME_HEADER_SIZE);
        if (k < 0)
                return k;
        out->len += FRAME_HEADER_SIZE;
        k = json_write_compact(out, v);
        n = out->len - at - FRAME_HEADER_SIZE;
        if (k == 0 && n > FRAME_JSON_MAX)
                k = -E2BIG;
        if (k < 0) {
                out->len = at;
                if (out->data)
                        out->data[at] = 0;
                return k;
        }
        put_header(out->data + at, type, (uint32_t) n);
        return 0;
}

json_t *frame_parse_json(const struct frame *f, struct diag *reterr)
{
        json_error_t jerr;
        json_t *v;

        v = json_loadb(f->payload, f->len, JSON_REJECT_DUPLICATES, &jerr);
        if (!v) {
                diag_set(reterr, -EPROTO, "broken remote stream: a %s frame is not JSON: %d:%d: %s",
                         frame_type_name(f->type), jerr.line, jerr.column, jerr.text);
                return NULL;
        }
        if (!json_is_object(v)) {
                json_decref(v);
                diag_set(reterr, -EPROTO,
                         "broken remote stream: a %s frame's JSON is not an object",
                         frame_type_name(f->type));
                return NULL;
        }
        return v;
}
