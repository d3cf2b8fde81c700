/* SPDX-License-Identifier: MIT */
/* A trace of one execution in the Chrome trace-event format (trace.h). */

#include "core/events/trace.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/fd-util.h"

struct span {
        char *name;
        const char *cat;
        usec_t begin, end;
        pid_t tid;
        json_t *args;
};

struct trace {
        pthread_mutex_t lock;
        usec_t origin;
        struct span *spans;
        size_t n, alloc;
        size_t lost; /* past TRACE_SPANS_MAX */
};

int trace_new(usec_t origin, struct trace **ret)
{
        struct trace *t = calloc(1, sizeof(*t));

        if (!t)
                return -ENOMEM;
        t->origin = origin;
        pthread_mutex_init(&t->lock, NULL);
        *ret = t;
        return 0;
}

struct trace *trace_free(struct trace *t)
{
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n; i++) {
                free(t->spans[i].name);
                json_decref(t->spans[i].args);
        }
        free(t->spans);
        pthread_mutex_destroy(&t->lock);
        free(t);
        return NULL;
}

void trace_span(struct trace *t, const char *name, const char *cat, usec_t begin, usec_t end,
                json_t *args)
{
        struct span s = {.cat = cat,
                         .begin = begin,
                         .end = end,
                         .tid = (pid_t) syscall(SYS_gettid),
                         .args = args};

        if (!t) {
                json_decref(args);
                return;
        }
        s.name = strdup(name);
        pthread_mutex_lock(&t->lock);
        if (!s.name || t->n >= TRACE_SPANS_MAX) {
                t->lost++;
                pthread_mutex_unlock(&t->lock);
                free(s.name);
                json_decref(args);
                return;
        }
        if (t->n == t->alloc) {
                size_t na = t->alloc ? t->alloc * 2 : 64;
                struct span *p = realloc(t->spans, na * sizeof(*p));

                if (!p) {
                        t->lost++;
                        pthread_mutex_unlock(&t->lock);
                        free(s.name);
                        json_decref(args);
                        return;
                }
                t->spans = p;
                t->alloc = na;
        }
        t->spans[t->n++] = s;
        pthread_mutex_unlock(&t->lock);
}

void trace_span_now(struct trace *t, const char *name, const char *cat, usec_t begin, json_t *args)
{
        if (!t) {
                json_decref(args);
                return;
        }
        trace_span(t, name, cat, begin, now_usec(), args);
}

/* Microseconds since the trace's origin (a span may start before it: negative). */
static json_t *ts(const struct trace *t, usec_t when)
{
        return json_integer((json_int_t) when - (json_int_t) t->origin);
}

int trace_write(struct trace *t, const char *path)
{
        json_auto_t *doc = NULL, *events = json_array();
        _cleanup_free_ char *text = NULL;
        pid_t pid = getpid(), main_tid = pid;
        int r = 0;

        if (!events)
                return -ENOMEM;
        pthread_mutex_lock(&t->lock);
        for (size_t i = 0; i < t->n && r == 0; i++) {
                const struct span *s = &t->spans[i];
                json_t *e = json_pack("{s:s, s:s, s:s, s:o, s:I, s:i, s:i}", "name", s->name, "cat",
                                      s->cat, "ph", "X", "ts", ts(t, s->begin), "dur",
                                      (json_int_t) (s->end >= s->begin ? s->end - s->begin : 0),
                                      "pid", (int) pid, "tid", (int) s->tid);

                if (!e || (s->args && json_object_set(e, "args", s->args) < 0) ||
                    json_array_append_new(events, e) < 0)
                        r = -ENOMEM;
        }
        /* Names for the threads: the run's, and the tool calls' workers. */
        for (size_t i = 0; i < t->n && r == 0; i++) {
                const struct span *s = &t->spans[i];
                bool seen = false;

                for (size_t j = 0; j < i && !seen; j++)
                        seen = t->spans[j].tid == s->tid;
                if (!seen &&
                    json_array_append_new(events,
                                          json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name",
                                                    "thread_name", "ph", "M", "pid", (int) pid,
                                                    "tid", (int) s->tid, "args", "name",
                                                    s->tid == main_tid            ? "ptc"
                                                    : strcmp(s->cat, "tool") == 0 ? "ptc-rpc"
                                                                                  : "ptc run")) < 0)
                        r = -ENOMEM;
        }
        if (r == 0)
                doc = json_pack("{s:O, s:s, s:{s:s, s:I}}", "traceEvents", events,
                                "displayTimeUnit", "ms", "otherData", "producer", "ptc",
                                "spans_lost", (json_int_t) t->lost);
        pthread_mutex_unlock(&t->lock);
        if (r < 0 || !doc || !(text = json_dumps(doc, JSON_COMPACT)))
                return -ENOMEM;
        return write_file_atomic(path, text, strlen(text), 0600);
}
