/* SPDX-License-Identifier: MIT */
/*
 * A walker thread's state for search_files (its read buffer, PCRE2 match data under limits)
 * and the scan of one file: it is read into the thread's buffer in chunks that end on a line
 * boundary (the unfinished line is carried over, with the lines before-context needs), the
 * matching lines are counted, and with line numbers needed (context, or pass 2 extracting a
 * page) each matching and context line becomes an entry, in order and each line once.
 * Binary files (a NUL byte anywhere) give no results.
 */

#include "core/search/search.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/utf8.h"

/* First read buffer of a thread; files are searched in chunks of this size. */
#define SCAN_BUF_INIT (256u * 1024)
/* The buffer grows for long lines up to this; a longer line is searched in pieces. */
#define SCAN_BUF_MAX (8u * 1024 * 1024)
/* PCRE2 work per match attempt: a pattern needing more is "too expensive". */
#define MATCH_LIMIT 5000000
#define DEPTH_LIMIT 100000
#define HEAP_LIMIT_KIB (64u * 1024)
#define JIT_STACK_MAX (1024u * 1024)

/* --- scanning one file --- */

static uint64_t count_nl(const char *p, size_t n)
{
        uint64_t k = 0;

        for (size_t i = 0; i < n; i++)
                k += p[i] == '\n';
        return k;
}

/* Line number of the line holding @pos; moves the known point there. */
static uint64_t line_at(struct scan *sc, const char *buf, size_t pos)
{
        if (pos >= sc->cur_pos)
                sc->cur_line += count_nl(buf + sc->cur_pos, pos - sc->cur_pos);
        else
                sc->cur_line -= count_nl(buf + pos, sc->cur_pos - pos);
        sc->cur_pos = pos;
        return sc->cur_line;
}

static int emit(struct scan *sc, uint64_t line, const char *p, size_t n)
{
        uint64_t idx = sc->entries++;

        sc->last_emitted = line;
        if (!sc->extract)
                return 0;
        if (idx >= sc->from && idx < sc->to) {
                int r = sc->emit(sc->userdata, line, p, n);

                if (r < 0)
                        return r;
        }
        if (sc->entries >= sc->to)
                sc->search_done = sc->read_done = true;
        return 0;
}

/* After-context lines from ac_pos up to @limit (a line start, or the region end). */
static int after_context(struct scan *sc, const char *buf, size_t limit, size_t end)
{
        while (sc->pending_after > 0 && sc->ac_pos < limit && !sc->search_done) {
                size_t le = search_line_end(buf, end, sc->ac_pos);
                uint64_t line = line_at(sc, buf, sc->ac_pos);
                int r = emit(sc, line, buf + sc->ac_pos, le - sc->ac_pos);

                if (r < 0)
                        return r;
                sc->pending_after--;
                sc->ac_pos = le + 1;
        }
        return 0;
}

static int before_context(struct scan *sc, const char *buf, size_t ls, uint64_t line)
{
        size_t starts[SEARCH_CONTEXT_MAX];
        uint64_t first = line > sc->context ? line - sc->context : 1;
        size_t want, have = 0, p = ls;

        if (first <= sc->last_emitted)
                first = sc->last_emitted + 1;
        want = first < line ? (size_t) (line - first) : 0;
        /* Only lines still in the buffer; both passes keep the same ones. */
        while (have < want && p > 0) {
                const char *q = p >= 2 ? memrchr(buf, '\n', p - 1) : NULL;

                if (!q && sc->buf0_mid)
                        break;
                starts[have++] = q ? (size_t) (q - buf) + 1 : 0;
                p = starts[have - 1];
        }
        for (size_t i = have; i > 0; i--) {
                size_t s = starts[i - 1];
                int r = emit(sc, line - i, buf + s, search_line_end(buf, ls, s) - s);

                if (r < 0)
                        return r;
        }
        return 0;
}

/* Search the complete lines buf[base..end). Returns 0 or -errno (-ELOOP: match limit). */
static int scan_region(struct scan *sc, const char *buf, size_t base, size_t end, bool split)
{
        size_t pos = base, last_le = SIZE_MAX;
        int r;

        while (pos < end && !sc->search_done) {
                size_t ls, le;
                uint64_t line = 0;

                int found = search_find_line(sc->t, buf, end, pos, &ls, &le);

                if (found < 0)
                        return found;
                if (sc->need_lines) {
                        r = after_context(sc, buf, found > 0 ? ls : end, end);
                        if (r < 0)
                                return r;
                }
                if (found == 0 || sc->search_done)
                        break;
                if (sc->mid && ls == base && sc->split_matched) {
                        /* The rest of a split line that already matched. */
                        pos = le + 1;
                        continue;
                }
                last_le = le;
                sc->lines++;
                if (sc->need_lines) {
                        line = line_at(sc, buf, ls);
                        if (sc->context > 0) {
                                r = before_context(sc, buf, ls, line);
                                if (r < 0)
                                        return r;
                        }
                        r = emit(sc, line, buf + ls, le - ls);
                        if (r < 0)
                                return r;
                        sc->pending_after = sc->context;
                        sc->ac_pos = le + 1;
                } else
                        sc->entries++;
                if (sc->first_only)
                        sc->search_done = true;
                pos = le + 1;
        }
        if (split) {
                bool no_nl = !memchr(buf + base, '\n', end - base);

                sc->split_matched = last_le == end || (sc->mid && sc->split_matched && no_nl);
                sc->mid = true;
        } else {
                sc->mid = false;
                sc->split_matched = false;
        }
        return 0;
}

/* Where the carried-over part starts: @context whole lines before @end, within half the buffer. */
static size_t carry_from(struct scan *sc, const char *buf, size_t end, size_t cap)
{
        size_t p = end;

        for (unsigned i = 0; i < sc->context && p > 0; i++) {
                const char *q = p >= 2 ? memrchr(buf, '\n', p - 1) : NULL;

                if (!q && sc->buf0_mid)
                        break;
                p = q ? (size_t) (q - buf) + 1 : 0;
        }
        return end - p > cap / 2 ? end : p;
}

static int grow(struct scan_thread *t)
{
        size_t na = MIN(t->cap * 2, (size_t) SCAN_BUF_MAX);
        char *nb;

        if (na <= t->cap)
                return -E2BIG;
        nb = realloc(t->buf, na);
        if (!nb)
                return -ENOMEM;
        t->buf = nb;
        t->cap = na;
        return 0;
}

/* Scan the open file @fd with @sc set up. Returns 0 (results in @sc) or -errno. */
int search_scan_fd(struct scan *sc, int fd)
{
        struct scan_thread *t = sc->t;
        size_t len = 0, base = 0;
        int r;

        sc->cur_pos = 0;
        sc->cur_line = 1;
        for (;;) {
                size_t end;
                ssize_t n;
                bool eof, split = false;

                if (search_should_stop(t))
                        return -ECANCELED;
                if (len == t->cap) {
                        r = grow(t);
                        if (r == -ENOMEM)
                                return r;
                }
                n = len < t->cap ? read(fd, t->buf + len, t->cap - len) : 0;
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n > 0 && memchr(t->buf + len, '\0', (size_t) n)) {
                        /* Binary, as ripgrep: such a file gives no results at all. */
                        sc->binary = true;
                        return 0;
                }
                len += (size_t) n;
                eof = n == 0 && len < t->cap;
                if (n > 0 && len < t->cap)
                        continue;
                if (sc->search_done && !eof) {
                        /* Only reading on for the binary check. */
                        len = base = 0;
                        sc->cur_pos = 0;
                        continue;
                }
                if (eof)
                        end = len;
                else {
                        const char *nl =
                                len > base ? memrchr(t->buf + base, '\n', len - base) : NULL;

                        if (nl)
                                end = (size_t) (nl - t->buf) + 1;
                        else if (t->cap < SCAN_BUF_MAX) {
                                /* One unfinished line fills the buffer: make room for it. */
                                r = grow(t);
                                if (r == -ENOMEM)
                                        return r;
                                continue;
                        } else {
                                end = len;
                                split = true;
                        }
                }
                if (end > base) {
                        r = scan_region(sc, t->buf, base, end, split);
                        if (r < 0)
                                return r;
                }
                if (eof || sc->read_done)
                        return 0;

                {
                        size_t keep = split ? end : carry_from(sc, t->buf, end, t->cap);

                        if (sc->need_lines) {
                                (void) line_at(sc, t->buf, keep);
                                sc->cur_pos -= keep;
                        }
                        memmove(t->buf, t->buf + keep, len - keep);
                        len -= keep;
                        base = end - keep;
                        if (sc->pending_after > 0)
                                sc->ac_pos -= keep;
                        sc->buf0_mid = split ? true : keep == 0 ? sc->buf0_mid : false;
                }
        }
}

void search_scan_thread_free(struct scan_thread *t)
{
        if (!t)
                return;
        free(t->buf);
        pcre2_match_data_free(t->md);
        pcre2_match_context_free(t->mctx);
        pcre2_jit_stack_free(t->jstack);
        free(t);
}

int search_scan_thread_new(void *userdata, void **ret)
{
        struct search *s = userdata;
        struct scan_thread *t = calloc(1, sizeof(*t));

        if (!t)
                return -ENOMEM;
        t->s = s;
        if (s->mode != MODE_FILES) {
                t->buf = malloc(SCAN_BUF_INIT);
                t->cap = SCAN_BUF_INIT;
                if (!t->buf) {
                        search_scan_thread_free(t);
                        return -ENOMEM;
                }
        }
        if (s->m.code) {
                t->md = pcre2_match_data_create(1, NULL);
                t->mctx = pcre2_match_context_create(NULL);
                t->jstack = pcre2_jit_stack_create(32 * 1024, JIT_STACK_MAX, NULL);
                if (!t->md || !t->mctx) {
                        search_scan_thread_free(t);
                        return -ENOMEM;
                }
                (void) pcre2_set_match_limit(t->mctx, MATCH_LIMIT);
                (void) pcre2_set_depth_limit(t->mctx, DEPTH_LIMIT);
                (void) pcre2_set_heap_limit(t->mctx, HEAP_LIMIT_KIB);
                /* Without a JIT stack of its own the JIT uses 32 KiB of the machine stack. */
                if (t->jstack)
                        pcre2_jit_stack_assign(t->mctx, NULL, t->jstack);
        }
        *ret = t;
        return 0;
}

void search_scan_thread_done(void *state, void *userdata)
{
        search_scan_thread_free(state);
}

void search_scan_setup(struct scan *sc, struct scan_thread *t)
{
        *sc = (struct scan){
                .t = t,
                .context = t->s->context,
                .need_lines = t->s->context > 0,
                .first_only = t->s->mode == MODE_FILES_ONLY,
        };
}
