/* SPDX-License-Identifier: MIT */
/*
 * Bounded head/tail capture (docs/seed.md 1.10). Unlike the seed, which
 * evicts whole read chunks from its tail FIFO, the tail is a byte ring buffer
 * that keeps exactly the last tail_max bytes, so the result does not depend
 * on how the pipe happened to chunk the stream.
 */

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
#include "core/output/capture.h"

#define NOTICE_FMT "\n\n... [OUTPUT TRUNCATED - %s chars omitted out of %s total] ...\n\n"

/* capture_filter_spill(): normal chunk size, and the cap for a chunk that carries a key block. */
#define FILTER_CHUNK (1024 * 1024)
#define FILTER_CHUNK_MAX (2 * 1024 * 1024)

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
        first = MIN(c->tail_len, c->tail_max - c->tail_start);
        r = spill_write(c, c->tail + c->tail_start, first);
        if (r < 0)
                return r;
        return spill_write(c, c->tail, c->tail_len - first);
}

static void tail_append(struct capture *c, const char *p, size_t n)
{
        size_t end, first;

        if (n >= c->tail_max) {
                memcpy(c->tail, p + (n - c->tail_max), c->tail_max);
                c->tail_start = 0;
                c->tail_len = c->tail_max;
                return;
        }

        end = (c->tail_start + c->tail_len) % c->tail_max;
        first = MIN(n, c->tail_max - end);
        memcpy(c->tail + end, p, first);
        memcpy(c->tail, p + first, n - first);

        if (c->tail_len + n > c->tail_max) {
                /* Overwrote the oldest bytes: the ring now starts right after the newest. */
                c->tail_start = (c->tail_start + (c->tail_len + n - c->tail_max)) % c->tail_max;
                c->tail_len = c->tail_max;
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

        k = MIN(n, c->head_max - c->head_len);
        memcpy(c->head + c->head_len, s, k);
        c->head_len += k;
        s += k;
        n -= k;

        /* Head-only capture: the rest is counted and dropped. */
        if (n > 0 && c->tail_max > 0)
                tail_append(c, s, n);

        return r;
}

/* The ring's bytes in order, in a new buffer (not NUL-terminated). */
static char *tail_linear(const struct capture *c)
{
        size_t first = MIN(c->tail_len, c->tail_max - c->tail_start);
        char *t = malloc(MAX(c->tail_len, (size_t) 1));

        if (!t)
                return NULL;
        memcpy(t, c->tail + c->tail_start, first);
        memcpy(t + first, c->tail, c->tail_len - first);
        return t;
}

int capture_text(const struct capture *c, struct capture_text *ret)
{
        _cleanup_free_ char *tail = NULL, *h = NULL, *t = NULL, *all = NULL;
        size_t hl = 0, tl = 0, nl;
        uint64_t omitted;
        bool truncated;
        char notice[sizeof(NOTICE_FMT) + 2 * 32], a[32], b[32];
        char *out;
        int k;

        *ret = (struct capture_text){.total = c->total};

        if (c->tail_len > 0) {
                tail = tail_linear(c);
                if (!tail)
                        return -ENOMEM;
        }

        truncated = c->tail_max > 0 && c->total > (uint64_t) c->head_max + c->tail_max;
        if (!truncated) {
                /*
                 * Nothing was cut, so decode the stream as one piece: a character
                 * straddling the head/tail boundary stays intact (the seed decodes the
                 * parts separately even here and mangles it).
                 */
                size_t n = c->head_len + c->tail_len;

                all = malloc(n + 1);
                if (!all)
                        return -ENOMEM;
                memcpy(all, c->head, c->head_len);
                if (c->tail_len > 0)
                        memcpy(all + c->head_len, tail, c->tail_len);
                out = utf8_sanitize(all, n, &ret->len, NULL);
                if (!out)
                        return -ENOMEM;
                ret->text = out;
                return 0;
        }

        omitted = c->total - c->head_len - c->tail_len;
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
        h = utf8_sanitize(c->head, c->head_len, &hl, NULL);
        t = utf8_sanitize(tail, c->tail_len, &tl, NULL);
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

/*
 * Start of the line holding the last "-----BEGIN" in @b[0..n) that has no
 * "-----END" after it, or SIZE_MAX when every block is closed.
 */
static size_t open_block_start(const char *b, size_t n)
{
        const char *p = b, *last = NULL, *q;

        while ((q = memmem(p, n - (size_t) (p - b), "-----BEGIN", 10))) {
                last = q;
                p = q + 10;
        }
        if (!last)
                return SIZE_MAX;
        p = last + 10;
        if (memmem(p, n - (size_t) (p - b), "-----END", 8))
                return SIZE_MAX;
        q = memrchr(b, '\n', (size_t) (last - b));
        return q ? (size_t) (q + 1 - b) : 0;
}

static int filter_chunk(int fd, const char *b, size_t n, capture_filter_fn filter, void *userdata)
{
        _cleanup_free_ char *clean = NULL, *filtered = NULL;
        size_t cl = 0, fl = 0;
        int r;

        clean = utf8_sanitize(b, n, &cl, NULL);
        if (!clean)
                return -ENOMEM;
        r = filter(clean, cl, &filtered, &fl, userdata);
        if (r < 0)
                return r;
        if (r > 0)
                return write_all(fd, filtered, fl);
        return write_all(fd, clean, cl);
}

/*
 * The chunk loop. The window b[0..blen) always starts at the first byte not
 * yet written. Each round fills it up to @limit bytes and cuts after the last
 * newline (or at a UTF-8 boundary); when the chunk would end inside an open
 * "-----BEGIN" block, the text before the block's line is written and the
 * block starts the next window, which may then grow to FILTER_CHUNK_MAX. A
 * block that does not close within FILTER_CHUNK_MAX is cut like any text.
 * Every round writes at least one byte or raises the limit once, so the loop
 * ends; memory is the window plus the filter's copies of one chunk.
 */
static int filter_stream(int in, int out, capture_filter_fn filter, void *userdata)
{
        _cleanup_free_ char *b = malloc(FILTER_CHUNK_MAX);
        size_t blen = 0, limit = FILTER_CHUNK;
        bool eof = false;
        int r;

        if (!b)
                return -ENOMEM;

        for (;;) {
                size_t cut, open;
                bool final;

                r = fill(in, b, &blen, limit, &eof);
                if (r < 0)
                        return r;
                if (blen == 0)
                        return 0;

                final = eof && blen <= limit;
                if (final)
                        cut = blen;
                else {
                        const char *nl = memrchr(b, '\n', limit);

                        cut = nl ? (size_t) (nl + 1 - b) : utf8_safe_cut(b, limit);
                }

                open = final ? SIZE_MAX : open_block_start(b, cut);
                if (open != SIZE_MAX && open > 0) {
                        cut = open;
                        limit = FILTER_CHUNK_MAX;
                } else if (open == 0 && limit < FILTER_CHUNK_MAX) {
                        /* The block starts this window: let the window grow instead. */
                        limit = FILTER_CHUNK_MAX;
                        continue;
                } else
                        limit = FILTER_CHUNK;

                r = filter_chunk(out, b, cut, filter, userdata);
                if (r < 0)
                        return r;
                memmove(b, b + cut, blen - cut);
                blen -= cut;
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
