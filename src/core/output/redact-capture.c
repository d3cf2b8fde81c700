/* SPDX-License-Identifier: MIT */
#include "core/output/redact-capture.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/fd-util.h"
#include "basic/path-util.h"
#include "core/output/ansi.h"
#include "core/output/redact-stream.h"

#define SPILL_KEEP_FILES 50
#define SPILL_KEEP_SECONDS (24 * 3600)

/* Keep the spill directory bounded: drop old files and all but the newest few. */
static void prune_spill_dir(const char *dir, const char *keep)
{
        struct entry {
                char name[64];
                time_t mtime;
        } ents[256];
        size_t n = 0;
        time_t now = time(NULL);
        DIR *d = opendir(dir);
        struct dirent *de;

        if (!d)
                return;
        while ((de = readdir(d)) && n < ELEMENTSOF(ents)) {
                struct stat st;
                if (strncmp(de->d_name, "stdout-", 7) != 0 || strlen(de->d_name) >= 64)
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                snprintf(ents[n].name, sizeof(ents[n].name), "%s", de->d_name);
                ents[n].mtime = st.st_mtime;
                n++;
        }
        for (size_t i = 0; i < n; i++) {
                size_t newer = 0;
                _cleanup_free_ char *full = path_join(dir, ents[i].name);

                if (!full || (keep && strcmp(full, keep) == 0))
                        continue;
                for (size_t j = 0; j < n; j++)
                        if (ents[j].mtime > ents[i].mtime)
                                newer++;
                if (now - ents[i].mtime > SPILL_KEEP_SECONDS || newer >= SPILL_KEEP_FILES)
                        (void) unlinkat(dirfd(d), ents[i].name, 0);
        }
        closedir(d);
}

struct filter_ctx {
        struct redact_stream *stream; /* the spill's bytes, redacted as one stream */
        struct buf out;               /* what the stream gave for the current chunk */
        int failed; /* the redaction's own failure (-errno), not the spill file's */
};

static int spill_emit(void *userdata, const char *text, size_t n)
{
        struct filter_ctx *f = userdata;

        return buf_append(&f->out, text, n);
}

/*
 * ANSI strip + redaction of the spill, chunk by chunk (capture_filter_spill): one stream,
 * so a secret across the chunks' cut is redacted as if the file were whole; an error
 * fails the spill.
 */
static int spill_filter(const char *chunk, size_t n, bool last, char **ret, size_t *ret_len,
                        void *userdata)
{
        struct filter_ctx *f = userdata;
        _cleanup_free_ char *copy = malloc(n + 1);
        size_t len;
        int r;

        if (!copy)
                return (f->failed = -ENOMEM);
        memcpy(copy, chunk, n);
        copy[n] = 0;
        len = ansi_strip(copy, n);
        buf_reset(&f->out);
        r = redact_stream_feed(f->stream, copy, len, spill_emit, f);
        if (r >= 0 && last)
                r = redact_stream_flush(f->stream, spill_emit, f);
        explicit_wipe(copy, n);
        if (r < 0) {
                f->failed = r;
                return r;
        }
        *ret = buf_steal(&f->out, ret_len);
        return *ret ? 1 : (f->failed = -ENOMEM);
}

struct seam_ctx {
        const struct redactor *redactor;
        int failed; /* the redaction's own failure (-errno) */
};

/* The head's end and the tail's start (capture_text_cut()): where no secret is cut. */
static int seam(const char *s, size_t n, size_t want, bool forward, size_t *ret_cut, void *userdata)
{
        struct seam_ctx *x = userdata;
        bool safe;
        int r;

        r = redact_find_cut(x->redactor, REDACT_FULL, s, n, want, forward, ret_cut, &safe);
        if (r < 0)
                x->failed = r;
        return r;
}

int capture_text_redacted(const struct capture *c, const struct redactor *r,
                          struct capture_text *ret, int *ret_red)
{
        struct seam_ctx sc = {.redactor = r};
        char *red = NULL;
        size_t len;
        int k;

        *ret = (struct capture_text){};
        *ret_red = 0;
        k = capture_text_cut(c, seam, &sc, ret);
        if (k < 0 && sc.failed < 0) {
                /* Where to cut could not be judged: the caller withholds, as for any failure. */
                *ret_red = sc.failed;
                return 0;
        }
        if (k < 0)
                return k;
        /* Capture text -> ANSI strip -> redact, the seed's order after truncation. */
        ret->len = ansi_strip(ret->text, ret->len);
        k = redact_text(r, REDACT_FULL, ret->text, ret->len, &red, &len);
        if (k < 0)
                *ret_red = k;
        else if (k > 0) {
                free(ret->text);
                ret->text = red;
                ret->len = len;
        }
        return 0;
}

int capture_spill_redact(struct capture *c, const struct redactor *r, int red)
{
        _cleanup_free_ char *dir = NULL;
        char *slash;

        if (capture_spill_path(c)) {
                struct filter_ctx f = {.out = BUF_INIT(SIZE_MAX - 1)};
                int k = redact_stream_new(r, REDACT_FULL, 1024 * 1024, &f.stream);

                if (k < 0 && red >= 0)
                        red = k;
                if (red < 0)
                        capture_drop_spill(c);
                else if ((k = capture_filter_spill(c, spill_filter, &f)) < 0) {
                        /*
                         * The spill is gone either way. A redaction that failed withholds
                         * the output too; a disk that filled up while the filtered copy
                         * was written only loses the spill file, and the result says so.
                         */
                        if (f.failed < 0)
                                red = f.failed;
                        else
                                c->spill_error = k;
                }
                redact_stream_free(f.stream);
                if (f.out.data)
                        explicit_wipe(f.out.data, f.out.alloc);
                buf_release(&f.out);
        }
        if (!capture_spill_path(c))
                return red;
        dir = strdup(capture_spill_path(c));
        slash = dir ? strrchr(dir, '/') : NULL;
        if (slash) {
                *slash = 0;
                prune_spill_dir(dir, capture_spill_path(c));
        }
        return red;
}
