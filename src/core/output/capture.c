/* SPDX-License-Identifier: MIT */
/*
 * Bounded head/tail capture (docs/seed.md 1.10). Unlike the seed, which
 * evicts whole read chunks from its tail FIFO, the tail is a byte ring buffer
 * that keeps exactly the last tail_max bytes, so the result does not depend
 * on how the pipe happened to chunk the stream.
 */

#include "core/output/capture.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/log.h"
#include "basic/path-util.h"
#include "basic/utf8.h"

#define NOTICE_FMT "\n\n... [OUTPUT TRUNCATED - %s chars omitted out of %s total] ...\n\n"

/* capture_filter_spill(): the bytes read and handed to the filter at a time. */
#define FILTER_CHUNK (1024 * 1024)

#define SPILL_NAME_TRIES 16

char *format_thousands(uint64_t v, char *buf, size_t size)
{
        char digits[21], out[32];
        size_t nd, i, o = 0;

        if (!buf || size == 0)
                return buf;
        nd = (size_t) snprintf(digits, sizeof(digits), "%" PRIu64, v);
        for (i = 0; i < nd; i++) {
                if (i > 0 && (nd - i) % 3 == 0)
                        out[o++] = ',';
                out[o++] = digits[i];
        }
        out[o] = 0;
        /* A too-small @buf gets a truncated, still NUL-terminated string. */
        (void) snprintf(buf, size, "%s", out);
        return buf;
}

int capture_init(struct capture *c, size_t head_max, size_t tail_max, unsigned flags,
                 const char *spill_dir, uint64_t spill_max)
{
        *c = (struct capture){
                .head_max = head_max,
                .tail_max = tail_max,
                .head_cap = head_max,
                .ring_max = tail_max,
                .flags = flags,
                .spill_fd = -EBADF,
                .spill_max = spill_max,
        };

        if (head_max > SIZE_MAX - tail_max)
                return -ENOMEM;
        c->head = malloc(MAX(head_max, (size_t) 1));
        if (!c->head)
                goto fail;
        if (tail_max > 0) {
                c->tail = malloc(tail_max);
                if (!c->tail)
                        goto fail;
        }
        /* spill_max == 0 could only ever produce an empty file: treat it as no spill. */
        if (spill_dir && spill_max > 0) {
                c->spill_dir = strdup(spill_dir);
                if (!c->spill_dir)
                        goto fail;
        }
        return 0;

fail:
        capture_release(c);
        return -ENOMEM;
}

int capture_set_context(struct capture *c, size_t ctx)
{
        char *h, *t = NULL;

        if (c->total > 0 || ctx > SIZE_MAX / 4 || c->head_max > SIZE_MAX / 4 ||
            c->tail_max > SIZE_MAX / 4)
                return -EINVAL;
        h = realloc(c->head, MAX(c->head_max + ctx, (size_t) 1));
        if (!h)
                return -ENOMEM;
        c->head = h;
        if (c->tail_max > 0) {
                t = realloc(c->tail, c->tail_max + ctx);
                if (!t)
                        return -ENOMEM;
                c->tail = t;
                c->ring_max = c->tail_max + ctx;
        }
        c->head_cap = c->head_max + ctx;
        return 0;
}

void capture_release(struct capture *c)
{
        if (!c)
                return;
        free(c->head);
        c->head = NULL;
        free(c->tail);
        c->tail = NULL;
        free(c->spill_dir);
        c->spill_dir = NULL;
        free(c->spill_path);
        c->spill_path = NULL;
        c->spill_fd = safe_close(c->spill_fd);
        c->head_len = c->tail_len = c->tail_start = 0;
}

/* Give up on the spill for good: no file is left behind and none is created again. */
void capture_drop_spill(struct capture *c)
{
        c->spill_fd = safe_close(c->spill_fd);
        if (c->spill_path)
                (void) unlink(c->spill_path);
        free(c->spill_path);
        c->spill_path = NULL;
        free(c->spill_dir);
        c->spill_dir = NULL;
}

/* Append to the spill up to spill_max bytes in total; the rest is not written. */
static int spill_write(struct capture *c, const void *p, size_t n)
{
        uint64_t room;
        size_t k;
        int r;

        if (c->spill_fd < 0)
                return 0;
        room = c->spill_max - c->spill_written;
        k = (uint64_t) n < room ? n : (size_t) room;
        if (k == 0)
                return 0;
        r = write_all(c->spill_fd, p, k);
        if (r < 0) {
                log_debug_errno(r, "Failed to write spill file '%s', abandoning it: %m",
                                c->spill_path);
                capture_drop_spill(c);
                c->spill_error = r;
                return r;
        }
        c->spill_written += k;
        return 0;
}

static int spill_create(struct capture *c)
{
        int r;

        r = mkdir_p(c->spill_dir, 0700);
        if (r < 0)
                return r;

        for (unsigned t = 0; t < SPILL_NAME_TRIES; t++) {
                uint8_t rnd[8];
                char name[sizeof("stdout-0123456789abcdef.txt")];
                _cleanup_free_ char *path = NULL;
                ssize_t k;
                int fd;

                do
                        k = getrandom(rnd, sizeof(rnd), 0);
                while (k < 0 && errno == EINTR);
                if (k < 0)
                        return -errno;
                if (k != (ssize_t) sizeof(rnd))
                        return -EIO;
                (void) snprintf(name, sizeof(name), "stdout-%02x%02x%02x%02x%02x%02x%02x%02x.txt",
                                rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
                path = path_join(c->spill_dir, name);
                if (!path)
                        return -ENOMEM;
                fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (fd < 0) {
                        if (errno == EEXIST)
                                continue;
                        return -errno;
                }
                /* The umask cannot widen 0600, but be explicit about it. */
                (void) fchmod(fd, 0600);
                c->spill_fd = fd;
                c->spill_path = TAKE_PTR(path);
                c->spill_written = 0;
                return 0;
        }
        return -EEXIST;
}

/*
 * Called before the bytes that push the total over head_max + tail_max are
 * stored: head and tail still hold every byte so far, in order, so writing
 * them and then the new bytes gives the stream from its start.
 */
static int spill_start(struct capture *c)
{
        size_t first;
        int r;

        r = spill_create(c);
        if (r < 0) {
                log_debug_errno(r, "Failed to create spill file in '%s': %m", c->spill_dir);
                capture_drop_spill(c);
                c->spill_error = r;
                return r;
        }
        r = spill_write(c, c->head, c->head_len);
        if (r < 0)
                return r;
        first = MIN(c->tail_len, c->ring_max - c->tail_start);
        r = spill_write(c, c->tail + c->tail_start, first);
        if (r < 0)
                return r;
        return spill_write(c, c->tail, c->tail_len - first);
}

static void tail_append(struct capture *c, const char *p, size_t n)
{
        size_t end, first;

        if (n >= c->ring_max) {
                memcpy(c->tail, p + (n - c->ring_max), c->ring_max);
                c->tail_start = 0;
                c->tail_len = c->ring_max;
                return;
        }

        end = (c->tail_start + c->tail_len) % c->ring_max;
        first = MIN(n, c->ring_max - end);
        memcpy(c->tail + end, p, first);
        memcpy(c->tail, p + first, n - first);

        if (c->tail_len + n > c->ring_max) {
                /* Overwrote the oldest bytes: the ring now starts right after the newest. */
                c->tail_start = (c->tail_start + (c->tail_len + n - c->ring_max)) % c->ring_max;
                c->tail_len = c->ring_max;
        } else
                c->tail_len += n;
}

int capture_feed(struct capture *c, const void *p, size_t n)
{
        const char *s = p;
        size_t k;
        int r = 0;

        if (n == 0)
                return 0;

        if (c->spill_fd >= 0)
                r = spill_write(c, s, n);
        else if (c->spill_dir && !c->spill_path &&
                 c->total + n > (uint64_t) c->head_max + c->tail_max) {
                r = spill_start(c);
                if (r >= 0)
                        r = spill_write(c, s, n);
        }

        c->total += n;

        k = MIN(n, c->head_cap - c->head_len);
        memcpy(c->head + c->head_len, s, k);
        c->head_len += k;
        s += k;
        n -= k;

        /* Head-only capture: the rest is counted and dropped. */
        if (n > 0 && c->ring_max > 0)
                tail_append(c, s, n);

        return r;
}

/* The ring's bytes in order, in a new buffer (not NUL-terminated). */
static char *tail_linear(const struct capture *c)
{
        size_t first = MIN(c->tail_len, c->ring_max - c->tail_start);
        char *t = malloc(MAX(c->tail_len, (size_t) 1));

        if (!t)
                return NULL;
        memcpy(t, c->tail + c->tail_start, first);
        memcpy(t + first, c->tail, c->tail_len - first);
        return t;
}

/* Where a part ends (!@forward) or begins: @seam's choice near @want, or @want. */
static int seam_at(capture_seam_fn seam, void *userdata, const char *s, size_t n, size_t want,
                   bool forward, size_t *ret)
{
        size_t c = want;
        int r;

        if (seam) {
                r = seam(s, n, want, forward, &c, userdata);
                if (r < 0)
                        return r;
                /* Never past the part's own bytes: into the omitted ones only. */
                if (forward ? c < want || c > n : c > want)
                        return -EINVAL;
        }
        *ret = c;
        return 0;
}

int capture_text(const struct capture *c, struct capture_text *ret)
{
        return capture_text_cut(c, NULL, NULL, ret);
}

int capture_text_cut(const struct capture *c, capture_seam_fn seam, void *userdata,
                     struct capture_text *ret)
{
        _cleanup_free_ char *tail = NULL, *h = NULL, *t = NULL, *all = NULL;
        const char *hw, *tw;
        size_t hl = 0, tl = 0, nl, hwn, twn, hcut, tcut;
        uint64_t omitted;
        bool truncated, lost;
        char notice[sizeof(NOTICE_FMT) + 2 * 32], a[32], b[32];
        char *out;
        int k, r;

        *ret = (struct capture_text){.total = c->total};

        if (c->tail_len > 0) {
                tail = tail_linear(c);
                if (!tail)
                        return -ENOMEM;
        }
        /* Every byte fed is still here (head, then the ring), in order. */
        lost = c->total > (uint64_t) c->head_len + c->tail_len;
        if (!lost) {
                all = malloc(c->head_len + c->tail_len + 1);
                if (!all)
                        return -ENOMEM;
                memcpy(all, c->head, c->head_len);
                if (c->tail_len > 0)
                        memcpy(all + c->head_len, tail, c->tail_len);
        }

        if (c->total <= (uint64_t) c->head_max + c->tail_max) {
                /*
                 * Nothing was cut, so decode the stream as one piece: a character
                 * straddling the head/tail boundary stays intact (the seed decodes the
                 * parts separately even here and mangles it).
                 */
                out = utf8_sanitize(all, c->head_len + c->tail_len, &ret->len, NULL);
                if (!out)
                        return -ENOMEM;
                ret->text = out;
                return 0;
        }

        /*
         * The head ends, and the tail begins, where @seam says no secret crosses: it is
         * judged on the bytes around the cut (the whole stream when all of it is here,
         * else the head with the context after it and the ring with the context before
         * the tail). Bytes it moves out of the parts are counted as omitted.
         */
        hw = lost ? c->head : all;
        hwn = lost ? c->head_len : (size_t) c->total;
        r = seam_at(seam, userdata, hw, hwn, MIN(c->head_max, hwn), false, &hcut);
        if (r < 0)
                return r;
        truncated = c->tail_max > 0;
        if (!truncated) {
                /* Head-only: the bytes past the head are dropped without a notice. */
                out = utf8_sanitize(hw, hcut, &ret->len, NULL);
                if (!out)
                        return -ENOMEM;
                ret->text = out;
                return 0;
        }
        tw = lost ? tail : all;
        twn = lost ? c->tail_len : (size_t) c->total;
        r = seam_at(seam, userdata, tw, twn, twn - MIN(c->tail_max, twn), true, &tcut);
        if (r < 0)
                return r;

        omitted = c->total - hcut - (twn - tcut);
        if (c->flags & CAPTURE_THOUSANDS) {
                format_thousands(omitted, a, sizeof(a));
                format_thousands(c->total, b, sizeof(b));
        } else {
                (void) snprintf(a, sizeof(a), "%" PRIu64, omitted);
                (void) snprintf(b, sizeof(b), "%" PRIu64, c->total);
        }
        k = snprintf(notice, sizeof(notice), NOTICE_FMT, a, b);
        if (k < 0 || (size_t) k >= sizeof(notice))
                return -EINVAL;
        nl = (size_t) k;

        /* Each part on its own, like the seed: a cut inside a sequence becomes U+FFFD. */
        h = utf8_sanitize(hw, hcut, &hl, NULL);
        t = utf8_sanitize(tw + tcut, twn - tcut, &tl, NULL);
        if (!h || !t)
                return -ENOMEM;

        out = malloc(hl + nl + tl + 1);
        if (!out)
                return -ENOMEM;
        memcpy(out, h, hl);
        memcpy(out + hl, notice, nl);
        memcpy(out + hl + nl, t, tl);
        out[hl + nl + tl] = 0;

        ret->text = out;
        ret->len = hl + nl + tl;
        ret->truncated = true;
        ret->omitted = omitted;
        return 0;
}

/* Read into @b until it holds @want bytes or EOF. Returns 0 or -errno; *eof set at end. */
static int fill(int fd, char *b, size_t *len, size_t want, bool *eof)
{
        while (*len < want && !*eof) {
                ssize_t k = read(fd, b + *len, want - *len);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        *eof = true;
                *len += (size_t) k;
        }
        return 0;
}

/* Largest cut <= @n that does not end inside a UTF-8 sequence begun in the last 3 bytes. */
static size_t utf8_safe_cut(const char *b, size_t n)
{
        for (size_t back = 1; back <= 3 && back <= n; back++) {
                unsigned char ch = (unsigned char) b[n - back];
                size_t need;

                if ((ch & 0xC0) == 0x80)
                        continue; /* continuation byte: look further back for the lead */
                if (ch >= 0xF0)
                        need = 4;
                else if (ch >= 0xE0)
                        need = 3;
                else if (ch >= 0xC0)
                        need = 2;
                else
                        need = 1;
                return need > back ? n - back : n;
        }
        return n;
}

static int filter_chunk(int fd, const char *b, size_t n, bool last, capture_filter_fn filter,
                        void *userdata)
{
        _cleanup_free_ char *clean = NULL, *filtered = NULL;
        size_t cl = 0, fl = 0;
        int r;

        clean = utf8_sanitize(b, n, &cl, NULL);
        if (!clean)
                return -ENOMEM;
        r = filter(clean, cl, last, &filtered, &fl, userdata);
        if (r < 0)
                return r;
        if (r > 0)
                return write_all(fd, filtered, fl);
        return write_all(fd, clean, cl);
}

/*
 * The chunk loop: FILTER_CHUNK bytes at a time, cut at a UTF-8 character boundary. Where a
 * chunk ends is the filter's business: it sees the stream's bytes in order and may hold
 * some back (a secret that a cut would split: core/output/redact-stream.h) until the last.
 */
static int filter_stream(int in, int out, capture_filter_fn filter, void *userdata)
{
        _cleanup_free_ char *b = malloc(FILTER_CHUNK);
        size_t blen = 0;
        bool eof = false;
        int r;

        if (!b)
                return -ENOMEM;
        for (;;) {
                size_t cut;

                r = fill(in, b, &blen, FILTER_CHUNK, &eof);
                if (r < 0)
                        return r;
                cut = eof ? blen : utf8_safe_cut(b, blen);
                if (cut == 0 && !eof)
                        cut = blen;
                r = filter_chunk(out, b, cut, eof, filter, userdata);
                if (r < 0)
                        return r;
                memmove(b, b + cut, blen - cut);
                blen -= cut;
                if (eof && blen == 0)
                        return 0;
        }
}

int capture_filter_spill(struct capture *c, capture_filter_fn filter, void *userdata)
{
        _cleanup_free_ char *tmp = NULL;
        _cleanup_close_ int in = -EBADF, out = -EBADF;
        int r;

        if (!c->spill_path)
                return 0;
        if (!filter)
                return -EINVAL;

        /* Bytes fed from now on would go to the replaced inode: the spill is final. */
        c->spill_fd = safe_close(c->spill_fd);

        in = open(c->spill_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (in < 0) {
                r = -errno;
                goto fail;
        }
        if (asprintf(&tmp, "%s.XXXXXX", c->spill_path) < 0) {
                tmp = NULL;
                r = -ENOMEM;
                goto fail;
        }
        out = mkostemp(tmp, O_CLOEXEC);
        if (out < 0) {
                r = -errno;
                free(tmp);
                tmp = NULL;
                goto fail;
        }
        (void) fchmod(out, 0600);

        r = filter_stream(in, out, filter, userdata);
        if (r >= 0 && close(TAKE_FD(out)) < 0)
                r = -errno;
        if (r >= 0 && rename(tmp, c->spill_path) < 0)
                r = -errno;
        if (r < 0)
                goto fail;
        return 0;

fail:
        /*
         * The caller filters to remove secrets; an unfiltered spill must not
         * stay behind, so it is removed and capture_spill_path() becomes NULL.
         */
        log_debug_errno(r, "Failed to filter spill file '%s': %m", c->spill_path);
        if (tmp)
                (void) unlink(tmp);
        capture_drop_spill(c);
        return r;
}
