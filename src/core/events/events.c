/* SPDX-License-Identifier: MIT */
/* The live events of one execution (events.h). */

#include "core/events/events.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/utf8.h"
#include "core/output/redact.h"

struct event_sink {
        event_write_fn write;
        void *userdata;
        const struct redactor *red;
        usec_t start;
        pthread_mutex_t lock; /* the writer, held, dropped */
        struct buf held[2];   /* stdout's and stderr's bytes since their last line end */
        size_t sent[2];       /* output bytes of each stream that went out */
        bool capped[2];       /* EVENTS_OUTPUT_MAX reached: no more of that stream */
        size_t dropped;
};

int event_sink_new(event_write_fn write, void *userdata, const struct redactor *red,
                   struct event_sink **ret)
{
        struct event_sink *s = calloc(1, sizeof(*s));

        if (!s)
                return -ENOMEM;
        s->write = write;
        s->userdata = userdata;
        s->red = red;
        s->start = now_usec();
        pthread_mutex_init(&s->lock, NULL);
        for (size_t i = 0; i < 2; i++)
                s->held[i] = (struct buf) BUF_INIT(EVENTS_LINE_MAX * 2);
        *ret = s;
        return 0;
}

struct event_sink *event_sink_free(struct event_sink *s)
{
        if (!s)
                return NULL;
        buf_release(&s->held[0]);
        buf_release(&s->held[1]);
        pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
}

/* Under the lock: stamp, serialize, write. Takes @o. */
static void write_locked(struct event_sink *s, const char *type, json_t *o)
{
        usec_t t = now_usec() - s->start;
        char *text;

        if (!o || json_object_set_new(o, "event", json_string(type)) < 0 ||
            json_object_set_new(o, "t", json_real((double) (t / 1000) / 1000)) < 0 ||
            !(text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10)))) {
                json_decref(o);
                s->dropped++;
                return;
        }
        json_decref(o);
        if (s->write(s->userdata, text, strlen(text)) < 0)
                s->dropped++;
        free(text);
}

void event_emit(struct event_sink *s, const char *type, json_t *fields)
{
        json_t *o;

        if (!s) {
                json_decref(fields);
                return;
        }
        /* "event" and "t" first, for a reader's eyes; write_locked() fills them in. */
        o = json_pack("{s:n, s:n}", "event", "t");
        if (o && fields && json_object_update(o, fields) < 0)
                o = (json_decref(o), NULL);
        json_decref(fields);
        pthread_mutex_lock(&s->lock);
        write_locked(s, type, o);
        pthread_mutex_unlock(&s->lock);
}

/* One piece of output (a line, or EVENTS_LINE_MAX bytes of one), redacted, under the lock. */
static void output_locked(struct event_sink *s, bool is_err, const char *p, size_t n)
{
        _cleanup_free_ char *red = NULL, *text = NULL;
        size_t len = n, tlen;
        int r;

        if (s->capped[is_err])
                return;
        if (s->sent[is_err] + n > EVENTS_OUTPUT_MAX) {
                s->capped[is_err] = true;
                write_locked(s, "limit",
                             json_pack("{s:n, s:n, s:s, s:s, s:I}", "event", "t", "limit", "output",
                                       "stream", is_err ? "stderr" : "stdout", "bytes",
                                       (json_int_t) EVENTS_OUTPUT_MAX));
                return;
        }
        s->sent[is_err] += n;

        r = redact_text(s->red, REDACT_FULL, p, n, &red, &len);
        if (r < 0) {
                s->dropped++; /* not known to be free of secrets: withheld */
                return;
        }
        text = utf8_sanitize(r > 0 ? red : p, r > 0 ? len : n, &tlen, NULL);
        if (!text) {
                s->dropped++;
                return;
        }
        write_locked(s, "output",
                     json_pack("{s:n, s:n, s:s, s:s%}", "event", "t", "stream",
                               is_err ? "stderr" : "stdout", "text", text, tlen));
}

/* Where a full piece without a line end is cut: before a UTF-8 sequence it would split. */
static size_t piece_end(const struct buf *h)
{
        const unsigned char *d = (const unsigned char *) h->data;
        size_t i = h->len - 1, want;

        while (i > 0 && h->len - i < 4 && (d[i] & 0xC0) == 0x80)
                i--;
        want = d[i] < 0x80 ? 1 : (d[i] & 0xE0) == 0xC0 ? 2 : (d[i] & 0xF0) == 0xE0 ? 3 : 4;
        return i > 0 && i + want > h->len ? i : h->len;
}

void event_output(struct event_sink *s, bool is_err, const char *p, size_t n)
{
        struct buf *h;

        if (!s || n == 0)
                return;
        pthread_mutex_lock(&s->lock);
        h = &s->held[is_err];
        while (n > 0) {
                const char *nl = memchr(p, '\n', n);
                size_t take = nl ? (size_t) (nl - p) + 1 : n;

                if (h->len + take > EVENTS_LINE_MAX)
                        take = EVENTS_LINE_MAX - h->len;
                if (buf_append(h, p, take) < 0) {
                        s->dropped++;
                        break;
                }
                p += take;
                n -= take;
                if (h->len > 0 && (h->data[h->len - 1] == '\n' || h->len >= EVENTS_LINE_MAX)) {
                        size_t cut = h->data[h->len - 1] == '\n' ? h->len : piece_end(h);

                        output_locked(s, is_err, h->data, cut);
                        memmove(h->data, h->data + cut, h->len - cut);
                        h->len -= cut;
                }
        }
        pthread_mutex_unlock(&s->lock);
}

void event_output_flush(struct event_sink *s)
{
        if (!s)
                return;
        pthread_mutex_lock(&s->lock);
        for (int i = 0; i < 2; i++)
                if (s->held[i].len > 0) {
                        output_locked(s, i == 1, s->held[i].data, s->held[i].len);
                        s->held[i].len = 0;
                }
        pthread_mutex_unlock(&s->lock);
}

size_t event_sink_dropped(const struct event_sink *s)
{
        size_t n;

        if (!s)
                return 0;
        pthread_mutex_lock((pthread_mutex_t *) &s->lock);
        n = s->dropped;
        pthread_mutex_unlock((pthread_mutex_t *) &s->lock);
        return n;
}
