/* SPDX-License-Identifier: MIT */
/* The live events of one execution (events.h). */

#include "core/events/events.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "basic/utf8.h"
#include "core/output/redact-stream.h"

struct event_sink {
        event_write_fn write;
        void *userdata;
        const struct redactor *red;
        usec_t start;
        pthread_mutex_t lock;          /* the writer, held, dropped */
        struct redact_stream *held[2]; /* stdout's and stderr's bytes not yet out */
        size_t sent[2];                /* output bytes of each stream that went out */
        bool capped[2];                /* EVENTS_OUTPUT_MAX reached: no more of that stream */
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
                if (redact_stream_new(red, REDACT_FULL, EVENTS_LINE_MAX, &s->held[i]) < 0) {
                        event_sink_free(s);
                        return -ENOMEM;
                }
        *ret = s;
        return 0;
}

struct event_sink *event_sink_free(struct event_sink *s)
{
        if (!s)
                return NULL;
        redact_stream_free(s->held[0]);
        redact_stream_free(s->held[1]);
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

/* One redacted piece of output (a line, or a piece of one), under the lock. */
static void output_locked(struct event_sink *s, bool is_err, const char *p, size_t n)
{
        _cleanup_free_ char *text = NULL;
        size_t tlen;

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

        text = utf8_sanitize(p, n, &tlen, NULL);
        if (!text) {
                s->dropped++;
                return;
        }
        write_locked(s, "output",
                     json_pack("{s:n, s:n, s:s, s:s%}", "event", "t", "stream",
                               is_err ? "stderr" : "stdout", "text", text, tlen));
}

static int emit_stdout(void *userdata, const char *text, size_t n)
{
        output_locked(userdata, false, text, n);
        return 0;
}

static int emit_stderr(void *userdata, const char *text, size_t n)
{
        output_locked(userdata, true, text, n);
        return 0;
}

void event_output(struct event_sink *s, bool is_err, const char *p, size_t n)
{
        redact_emit_fn emit = is_err ? emit_stderr : emit_stdout;

        if (!s || n == 0)
                return;
        pthread_mutex_lock(&s->lock);
        /* Past EVENTS_OUTPUT_MAX nothing more of the stream goes out: not even redacted. */
        while (n > 0 && !s->capped[is_err]) {
                const char *nl = memchr(p, '\n', n);
                size_t take = nl ? (size_t) (nl - p) + 1 : n;
                int r;

                /*
                 * A line's end is a seam: the line goes out at once. Within a line, the
                 * stream cuts pieces of EVENTS_LINE_MAX bytes only where no secret or
                 * pattern match crosses the cut (redact-stream.h).
                 */
                r = redact_stream_feed(s->held[is_err], p, take, emit, s);
                if (r >= 0 && nl)
                        r = redact_stream_flush(s->held[is_err], emit, s);
                if (r < 0)
                        s->dropped++; /* not known to be free of secrets: withheld */
                p += take;
                n -= take;
        }
        pthread_mutex_unlock(&s->lock);
}

void event_output_flush(struct event_sink *s)
{
        if (!s)
                return;
        pthread_mutex_lock(&s->lock);
        if (redact_stream_flush(s->held[0], emit_stdout, s) < 0)
                s->dropped++;
        if (redact_stream_flush(s->held[1], emit_stderr, s) < 0)
                s->dropped++;
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
