/* SPDX-License-Identifier: MIT */
/*
 * What a run's captured output becomes in its result (docs/contracts.md 4): the capture set
 * up with the config's caps, then ANSI stripped and redacted, the spill file filtered the
 * same way and its directory kept bounded, a redaction failure withholding the output.
 * Shared by every run (exec-run.c): a local one, a session cell and a remote run.
 */
#include "core/exec/exec-internal.h"

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
#include "core/exec/result.h"
#include "core/output/ansi.h"
#include "core/output/capture.h"
#include "core/output/redact-stream.h"
#include "core/output/redact.h"

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

/* Capture text -> ANSI strip -> redact, the seed's order after truncation. */
static int postprocess(const struct redactor *r, struct capture_text *t)
{
        char *red = NULL;
        size_t len;
        int k;

        t->len = ansi_strip(t->text, t->len);
        k = redact_text(r, REDACT_FULL, t->text, t->len, &red, &len);
        if (k <= 0)
                return k;
        free(t->text);
        t->text = red;
        t->len = len;
        return 0;
}

int exec_capture_init(const struct exec_opts *o, struct capture *out, struct capture *err)
{
        const struct ptc_config *c = o->config;
        _cleanup_free_ char *spdir = xdg_cache_path("ptc/spill");
        int r;

        size_t ctx = redact_stream_hold(o->redactor);

        r = capture_init(out, (size_t) c->max_stdout_bytes * 2 / 5,
                         (size_t) c->max_stdout_bytes - (size_t) c->max_stdout_bytes * 2 / 5,
                         CAPTURE_THOUSANDS, spdir, EXEC_SPILL_MAX);
        if (r >= 0)
                r = capture_init(err, (size_t) c->max_stderr_bytes, 0, 0, NULL, 0);
        /* The bytes around the head's end and the tail's start, to cut where no secret is. */
        if (r >= 0)
                r = capture_set_context(out, ctx);
        if (r >= 0)
                r = capture_set_context(err, ctx);
        return r;
}

int exec_result(const struct exec_opts *o, struct capture *cout, struct capture *cerr,
                struct result_input *in, bool redact_log, json_t **ret,
                enum exec_status *ret_status)
{
        struct capture_text out = {}, err = {};
        _cleanup_free_ char *spill = NULL, *withheld = NULL;
        struct seam_ctx sc = {.redactor = o->redactor};
        json_t *res;
        int r, red = 0;

        r = capture_text_cut(cout, seam, &sc, &out);
        if (r >= 0)
                r = capture_text_cut(cerr, seam, &sc, &err);
        if (r < 0 && sc.failed < 0)
                /* Where to cut could not be judged: withheld below, as any failed redaction. */
                red = sc.failed;
        else if (r < 0) {
                free(out.text);
                free(err.text);
                return r;
        }
        if (red >= 0)
                red = postprocess(o->redactor, &out);
        if (red >= 0)
                red = postprocess(o->redactor, &err);
        /* A log made elsewhere (a remote agent's) is redacted here like the output. */
        if (red >= 0 && in->log && redact_log)
                red = redact_json(o->redactor, REDACT_FULL, in->log);

        /* An unfiltered spill could hold a secret: it goes with any redaction failure. */
        if (capture_spill_path(cout)) {
                struct filter_ctx f = {.out = BUF_INIT(SIZE_MAX - 1)};

                r = redact_stream_new(o->redactor, REDACT_FULL, 1024 * 1024, &f.stream);
                if (r < 0 && red >= 0)
                        red = r;
                if (red < 0)
                        capture_drop_spill(cout);
                else if ((r = capture_filter_spill(cout, spill_filter, &f)) < 0) {
                        /*
                         * The spill is gone either way. A redaction that failed withholds
                         * the output too; a disk that filled up while the filtered copy
                         * was written only loses the spill file, and the result says so.
                         */
                        if (f.failed < 0)
                                red = f.failed;
                        else
                                cout->spill_error = r;
                }
                redact_stream_free(f.stream);
                if (f.out.data)
                        explicit_wipe(f.out.data, f.out.alloc);
                buf_release(&f.out);
        }
        if (capture_spill_path(cout)) {
                _cleanup_free_ char *dir = NULL;
                char *slash;

                spill = strdup(capture_spill_path(cout));
                dir = spill ? strdup(spill) : NULL;
                slash = dir ? strrchr(dir, '/') : NULL;
                if (slash) {
                        *slash = 0;
                        prune_spill_dir(dir, spill);
                }
        }

        in->stdout_text = out.text;
        in->stdout_len = out.len;
        in->stderr_text = err.text;
        in->stderr_len = err.len;
        in->timeout = o->config->timeout;
        in->truncated = out.truncated;
        in->stdout_total = out.total;
        in->stdout_omitted = out.omitted;
        in->spill_path = spill;
        in->spill_error = cout->spill_error;
        if (red < 0) {
                /*
                 * Fail closed: text whose redaction failed may hold a secret, so none of
                 * it goes out, only why (docs/protocol.md, "Redaction").
                 */
                if (asprintf(&withheld, "Output withheld: redaction failed (%s)",
                             redact_strerror(red)) < 0) {
                        withheld = NULL;
                        free(out.text);
                        free(err.text);
                        return -ENOMEM;
                }
                in->status = EXEC_ERROR;
                in->stdout_text = in->stderr_text = "";
                in->stdout_len = in->stderr_len = 0;
                in->truncated = false;
                in->spill_path = NULL;
                in->error = withheld;
                if (redact_log)
                        in->log = NULL;
        }
        res = result_build(in);
        free(out.text);
        free(err.text);
        if (!res)
                return -ENOMEM;
        *ret = res;
        *ret_status = in->status;
        return 0;
}
