/* SPDX-License-Identifier: MIT */
/*
 * Secret redaction: the seed's 13 pattern passes (agent/redact.py,
 * docs/seed.md 1.12) plus value-based redaction (docs/contracts.md 9.10).
 *
 * This file: redact_text(), which runs the value step, the pattern passes and
 * the value step again, and the other entry points on text; redact-internal.h
 * lists the parts.
 *
 * The patterns are compiled once per process (pthread_once) and are
 * read-only afterwards; each redact_text() call has its own match data, so
 * one redactor can be used from any number of threads.
 */
#include "core/output/redact.h"

#include <errno.h>
#include <string.h>

#include "core/output/redact-internal.h"

static void match_data_freep(pcre2_match_data **md)
{
        pcre2_match_data_free(*md);
}

/* Intermediate texts still hold whatever the later passes removed. */
static void wipe_bufp(struct buf *b)
{
        if (b->data)
                explicit_wipe(b->data, b->alloc);
        buf_release(b);
}

/* Room for one pass's output: replacements grow text by less than 2x. */
static size_t pass_cap(size_t n)
{
        return n > (SIZE_MAX - 8192) / 2 ? SIZE_MAX - 1 : 2 * n + 4096;
}

int redact_text(const struct redactor *r, enum redact_mode mode, const char *in, size_t n,
                char **ret, size_t *ret_len)
{
        _cleanup_(wipe_bufp) struct buf b0 = BUF_INIT(0), b1 = BUF_INIT(0);
        _cleanup_(match_data_freep) pcre2_match_data *md = NULL;
        struct buf *bufs[2] = {&b0, &b1};
        const char *cur = in;
        size_t cur_n = n;
        int cur_idx = -1, e;

        if (!ret || (!in && n > 0))
                return -EINVAL;
        if (n == 0)
                return 0;
        e = redact_rx_ensure();
        if (e < 0)
                return e;

        for (size_t p = 0; p <= REDACT_N_PASSES; p++) {
                int next = cur_idx == 0 ? 1 : 0;
                struct pass_io io = {
                        .s = cur,
                        .n = cur_n,
                        .out = bufs[next],
                };

                /* Step 0 is value-based redaction; steps 1..13 are the seed's passes. */
                if (p > 0) {
                        if (mode == REDACT_NONE)
                                break;
                        if (mode == REDACT_CODE && redact_pass_full_only(p - 1))
                                continue;
                        if (!md) {
                                md = pcre2_match_data_create(RX_OVEC_PAIRS, NULL);
                                if (!md)
                                        return -ENOMEM;
                        }
                        io.md = md;
                }
                buf_reset(io.out);
                io.out->cap = pass_cap(cur_n);
                e = p == 0 ? redact_pass_values(r, &io) : redact_run_pass(p - 1, &io);
                if (e < 0)
                        return e;
                if (!io.changed)
                        continue;
                cur_idx = next;
                cur = bufs[next]->data ? bufs[next]->data : "";
                cur_n = bufs[next]->len;
        }

        /*
         * The value step again, until it finds nothing: a pass's mask or a "***" can complete
         * a secret with the text around it (a secret "(sk-ant." from "(sk-ant-api03-..."
         * masked as "(sk-ant...mnop)"; one that begins with "***"). Only when something
         * changed; each round that finds one shortens the text (8 bytes or more become 3),
         * so this ends.
         */
        while (cur_idx >= 0 && redactor_secret_count(r) > 0) {
                int next = cur_idx == 0 ? 1 : 0;
                struct pass_io io = {
                        .s = cur,
                        .n = cur_n,
                        .out = bufs[next],
                };

                buf_reset(io.out);
                io.out->cap = pass_cap(cur_n);
                e = redact_pass_values(r, &io);
                if (e < 0)
                        return e;
                if (!io.changed)
                        break;
                cur_idx = next;
                cur = bufs[next]->data ? bufs[next]->data : "";
                cur_n = bufs[next]->len;
        }

        if (cur_idx < 0 || (cur_n == n && memcmp(cur, in, n) == 0))
                return 0;
        *ret = buf_steal(bufs[cur_idx], ret_len);
        if (!*ret)
                return -ENOMEM;
        return 1;
}

int redact_has_vendor_key(const char *s, size_t n)
{
        _cleanup_(match_data_freep) pcre2_match_data *md = NULL;
        int r, rc;

        if (!s)
                return 0;
        r = redact_rx_ensure();
        if (r < 0)
                return r;
        md = pcre2_match_data_create(RX_OVEC_PAIRS, NULL);
        if (!md)
                return -ENOMEM;
        rc = redact_rx_exec(RX_PREFIX, s, n, 0, md);
        if (rc == PCRE2_ERROR_NOMATCH)
                return 0;
        /* A limit hit on a hostile text counts as "found": the caller refuses the URL. */
        return 1;
}

const char *redact_strerror(int e)
{
        if (e == -E2BIG)
                return "the text is too large or complex to scan";
        return strerror(e < 0 ? -e : e);
}
