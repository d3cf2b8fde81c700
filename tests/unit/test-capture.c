/* SPDX-License-Identifier: MIT */
#include "../lib/ptc-test.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/path-util.h"
#include "basic/utf8.h"
#include "core/output/capture.h"

#define HEAD 20000
#define TAIL 30000
#define MIB (1024 * 1024)

static const char *notice_prefix = "\n\n... [OUTPUT TRUNCATED - ";

/* Deterministic, position-dependent ASCII so misplaced bytes show. */
static char pattern_byte(uint64_t i)
{
        return (char) ('a' + (i * 7 + i / 13) % 26);
}

static char *pattern(uint64_t from, size_t n)
{
        char *p = malloc(n + 1);

        assert_non_null(p);
        for (size_t i = 0; i < n; i++)
                p[i] = pattern_byte(from + i);
        p[n] = 0;
        return p;
}

static char *make_tmpdir(void)
{
        char *d = strdup("/tmp/test-capture-XXXXXX");

        assert_non_null(d);
        assert_non_null(mkdtemp(d));
        return d;
}

static char *slurp(const char *path, size_t *ret_len)
{
        FILE *f = fopen(path, "re");
        char *data;
        long len;

        assert_non_null(f);
        assert_int_equal(fseek(f, 0, SEEK_END), 0);
        len = ftell(f);
        assert_true(len >= 0);
        rewind(f);
        data = malloc((size_t) len + 1);
        assert_non_null(data);
        assert_int_equal(fread(data, 1, (size_t) len, f), (size_t) len);
        data[len] = 0;
        fclose(f);
        *ret_len = (size_t) len;
        return data;
}

static void feed_pattern(struct capture *c, uint64_t total, const size_t *pieces, size_t npieces)
{
        size_t maxp = 0, i = 0;
        uint64_t pos = 0;
        char *buf;

        for (size_t k = 0; k < npieces; k++)
                maxp = MAX(maxp, pieces[k]);
        buf = malloc(maxp);
        assert_non_null(buf);
        while (pos < total) {
                size_t n = pieces[i++ % npieces];

                if (n > total - pos)
                        n = (size_t) (total - pos);
                for (size_t j = 0; j < n; j++)
                        buf[j] = pattern_byte(pos + j);
                assert_int_equal(capture_feed(c, buf, n), 0);
                pos += n;
        }
        free(buf);
}

static void test_format_thousands_values(void **state)
{
        char b[32];

        assert_string_equal(format_thousands(0, b, sizeof(b)), "0");
        assert_string_equal(format_thousands(999, b, sizeof(b)), "999");
        assert_string_equal(format_thousands(1000, b, sizeof(b)), "1,000");
        assert_string_equal(format_thousands(610784, b, sizeof(b)), "610,784");
        assert_string_equal(format_thousands(10000000, b, sizeof(b)), "10,000,000");
        assert_string_equal(format_thousands(UINT64_MAX, b, 27), "18,446,744,073,709,551,615");
        /* Too small: truncated but terminated. */
        assert_string_equal(format_thousands(1234567, b, 4), "1,2");
}

static void test_capture_text_small_exact(void **state)
{
        struct capture c;
        struct capture_text t;

        assert_int_equal(capture_init(&c, HEAD, TAIL, CAPTURE_THOUSANDS, NULL, 0), 0);
        assert_int_equal(capture_feed(&c, "hello ", 6), 0);
        assert_int_equal(capture_feed(&c, "", 0), 0);
        assert_int_equal(capture_feed(&c, "wörld\n", 7), 0);
        assert_false(capture_truncated(&c));
        assert_int_equal(capture_text(&c, &t), 0);
        assert_string_equal(t.text, "hello wörld\n");
        assert_int_equal(t.len, 13);
        assert_false(t.truncated);
        assert_int_equal(t.total, 13);
        assert_int_equal(t.omitted, 0);
        free(t.text);
        capture_release(&c);
        capture_release(&c); /* idempotent */
        capture_release(NULL);
}

/* A seam that cuts the head 3 bytes early and starts the tail 2 bytes late, and checks
 * it is shown the context around the cut. */
static int seam_shift(const char *s, size_t n, size_t want, bool forward, size_t *ret_cut,
                      void *userdata)
{
        size_t *calls = userdata;

        (*calls)++;
        if (!forward) {
                /* The head's context follows the cut. */
                assert_true(n >= want + 4);
                *ret_cut = want - 3;
        } else {
                assert_true(want >= 4);
                *ret_cut = want + 2;
        }
        return 0;
}

static void test_capture_text_cut_context(void **state)
{
        struct capture c;
        struct capture_text t;
        size_t calls = 0;
        char data[200];

        for (size_t i = 0; i < sizeof(data); i++)
                data[i] = (char) ('a' + i % 26);
        assert_int_equal(capture_init(&c, 10, 10, 0, NULL, 0), 0);
        assert_int_equal(capture_set_context(&c, 8), 0);
        /* Small enough to be whole: the context is not shown. */
        assert_int_equal(capture_feed(&c, data, 20), 0);
        assert_int_equal(capture_text_cut(&c, seam_shift, &calls, &t), 0);
        assert_int_equal(calls, 0);
        assert_int_equal(t.len, 20);
        assert_false(t.truncated);
        free(t.text);
        /* Past the caps: the head ends 3 bytes early, the tail starts 2 bytes late. */
        assert_int_equal(capture_feed(&c, data + 20, 180), 0);
        assert_true(capture_truncated(&c));
        assert_int_equal(capture_text_cut(&c, seam_shift, &calls, &t), 0);
        assert_int_equal(calls, 2);
        assert_true(t.truncated);
        assert_int_equal(t.omitted, 200 - 7 - 8);
        assert_memory_equal(t.text, "abcdefg\n\n...", 12);
        assert_memory_equal(t.text + t.len - 8, data + 192, 8);
        free(t.text);
        /* Without a seam: exactly head_max and tail_max. */
        assert_int_equal(capture_text(&c, &t), 0);
        assert_int_equal(t.omitted, 180);
        assert_memory_equal(t.text, "abcdefghij\n\n", 12);
        free(t.text);
        assert_int_equal(capture_set_context(&c, 8), -EINVAL);
        capture_release(&c);
}

/* Head only (stderr): the cut before the head's end, nothing shown past it. */
static void test_capture_text_cut_head_only(void **state)
{
        struct capture c;
        struct capture_text t;
        size_t calls = 0;

        assert_int_equal(capture_init(&c, 10, 0, 0, NULL, 0), 0);
        assert_int_equal(capture_set_context(&c, 8), 0);
        assert_int_equal(capture_feed(&c, "0123456789ABCDEFGHIJKLMNOP", 26), 0);
        assert_int_equal(capture_text_cut(&c, seam_shift, &calls, &t), 0);
        assert_string_equal(t.text, "0123456");
        free(t.text);
        assert_int_equal(capture_text(&c, &t), 0);
        assert_string_equal(t.text, "0123456789");
        free(t.text);
        capture_release(&c);
}

static void test_capture_text_empty(void **state)
{
        struct capture c;
        struct capture_text t;

        assert_int_equal(capture_init(&c, HEAD, TAIL, 0, NULL, 0), 0);
        assert_int_equal(capture_text(&c, &t), 0);
        assert_string_equal(t.text, "");
        assert_int_equal(t.len, 0);
        assert_false(t.truncated);
        free(t.text);
        capture_release(&c);
}

static void test_capture_text_exactly_at_cap(void **state)
{
        const size_t pieces[] = {4096, 1, 333};
        struct capture c;
        struct capture_text t;
        char *want = pattern(0, HEAD + TAIL);

        assert_int_equal(capture_init(&c, HEAD, TAIL, CAPTURE_THOUSANDS, NULL, 0), 0);
        feed_pattern(&c, HEAD + TAIL, pieces, ELEMENTSOF(pieces));
        assert_false(capture_truncated(&c));
        assert_int_equal(capture_text(&c, &t), 0);
        assert_false(t.truncated);
        assert_int_equal(t.len, HEAD + TAIL);
        assert_string_equal(t.text, want);
        assert_null(strstr(t.text, "TRUNCATED"));
        free(t.text);
        free(want);
        capture_release(&c);
}

static void test_capture_text_one_over_cap(void **state)
{
        const size_t pieces[] = {4096};
        const char *notice =
                "\n\n... [OUTPUT TRUNCATED - 1 chars omitted out of 50,001 total] ...\n\n";
        struct capture c;
        struct capture_text t;
        char *head = pattern(0, HEAD), *tail = pattern(HEAD + 1, TAIL);

        assert_int_equal(capture_init(&c, HEAD, TAIL, CAPTURE_THOUSANDS, NULL, 0), 0);
        feed_pattern(&c, HEAD + TAIL + 1, pieces, ELEMENTSOF(pieces));
        assert_true(capture_truncated(&c));
        assert_int_equal(capture_text(&c, &t), 0);
        assert_true(t.truncated);
        assert_int_equal(t.total, HEAD + TAIL + 1);
        assert_int_equal(t.omitted, 1);
        assert_int_equal(t.len, HEAD + strlen(notice) + TAIL);
        assert_memory_equal(t.text, head, HEAD);
        assert_memory_equal(t.text + HEAD, notice, strlen(notice));
        assert_string_equal(t.text + HEAD + strlen(notice), tail);
        free(t.text);
        free(head);
        free(tail);
        capture_release(&c);
}

static void check_ten_million(unsigned flags, const char *notice)
{
        /* Odd sizes, some larger than the tail, so the ring wraps at every offset. */
        const size_t pieces[] = {1, 7, 4093, 65537, 12345, 30001, 29999, 3};
        const uint64_t total = 10000000;
        struct capture c;
        struct capture_text t;
        char *head = pattern(0, HEAD), *tail = pattern(total - TAIL, TAIL);

        assert_int_equal(capture_init(&c, HEAD, TAIL, flags, NULL, 0), 0);
        feed_pattern(&c, total, pieces, ELEMENTSOF(pieces));
        assert_int_equal(c.total, total);
        assert_int_equal(c.head_len, HEAD);
        assert_int_equal(c.tail_len, TAIL);
        assert_int_equal(capture_text(&c, &t), 0);
        assert_true(t.truncated);
        assert_int_equal(t.omitted, 9950000);
        assert_int_equal(t.total, total);
        assert_int_equal(t.len, HEAD + strlen(notice) + TAIL);
        assert_memory_equal(t.text, head, HEAD);
        assert_memory_equal(t.text + HEAD, notice, strlen(notice));
        assert_memory_equal(t.text + HEAD + strlen(notice), tail, TAIL);
        assert_int_equal(t.text[t.len], 0);
        free(t.text);
        free(head);
        free(tail);
        capture_release(&c);
}

static void test_capture_text_ten_million_thousands(void **state)
{
        check_ten_million(CAPTURE_THOUSANDS, "\n\n... [OUTPUT TRUNCATED - 9,950,000 chars omitted "
                                             "out of 10,000,000 total] ...\n\n");
}

static void test_capture_text_ten_million_plain(void **state)
{
        check_ten_million(0, "\n\n... [OUTPUT TRUNCATED - 9950000 chars omitted out of 10000000 "
                             "total] ...\n\n");
}

static void test_capture_feed_byte_by_byte(void **state)
{
        /* Small ring fed one byte at a time against a reference. */
        struct capture c;
        struct capture_text t;
        char *all = pattern(0, 1000);
        const char *notice =
                "\n\n... [OUTPUT TRUNCATED - 983 chars omitted out of 1000 total] ...\n\n";

        assert_int_equal(capture_init(&c, 10, 7, 0, NULL, 0), 0);
        for (size_t i = 0; i < 1000; i++) {
                assert_int_equal(capture_feed(&c, all + i, 1), 0);
                assert_int_equal(c.tail_len, MIN(i + 1 > 10 ? i + 1 - 10 : 0, (size_t) 7));
        }
        assert_int_equal(capture_text(&c, &t), 0);
        assert_memory_equal(t.text, all, 10);
        assert_memory_equal(t.text + 10, notice, strlen(notice));
        assert_string_equal(t.text + 10 + strlen(notice), all + 993);
        free(t.text);
        free(all);
        capture_release(&c);
}

static void test_capture_text_head_only_drops(void **state)
{
        const size_t pieces[] = {3001};
        struct capture c;
        struct capture_text t;
        char *head = pattern(0, 10000);

        assert_int_equal(capture_init(&c, 10000, 0, CAPTURE_THOUSANDS, NULL, 0), 0);
        feed_pattern(&c, 123456, pieces, ELEMENTSOF(pieces));
        assert_int_equal(c.total, 123456);
        assert_int_equal(capture_text(&c, &t), 0);
        assert_false(t.truncated);
        assert_int_equal(t.omitted, 0);
        assert_int_equal(t.total, 123456);
        assert_int_equal(t.len, 10000);
        assert_string_equal(t.text, head);
        free(t.text);
        free(head);
        capture_release(&c);
}

static void test_capture_text_utf8_split(void **state)
{
        struct capture c;
        struct capture_text t;
        /* "é" = C3 A9 straddles the head boundary (byte 5), "中" = E4 B8 AD the tail start. */
        const char *in = "abcd\xC3\xA9"
                         "XXXXXXXXXX"
                         "\xE4\xB8\xAD"
                         "wxyz";
        const char *want_head = "abcd\xEF\xBF\xBD";
        /* Tail keeps "\xB8\xAD" "wxyz": two lone continuation bytes, two U+FFFD. */
        const char *want_tail = "\xEF\xBF\xBD\xEF\xBF\xBD"
                                "wxyz";

        assert_int_equal(capture_init(&c, 5, 6, CAPTURE_THOUSANDS, NULL, 0), 0);
        assert_int_equal(capture_feed(&c, in, strlen(in)), 0);
        assert_int_equal(capture_text(&c, &t), 0);
        assert_true(t.truncated);
        assert_int_equal(t.omitted, strlen(in) - 11);
        assert_true(utf8_is_valid(t.text, t.len));
        assert_memory_equal(t.text, want_head, strlen(want_head));
        assert_non_null(strstr(t.text, notice_prefix));
        assert_string_equal(t.text + t.len - strlen(want_tail), want_tail);
        free(t.text);
        capture_release(&c);
}

static void test_capture_text_utf8_untruncated_joined(void **state)
{
        /* Within the cap nothing is cut: a character across head/tail stays whole. */
        struct capture c;
        struct capture_text t;

        assert_int_equal(capture_init(&c, 5, 6, 0, NULL, 0), 0);
        assert_int_equal(capture_feed(&c, "abcd\xC3", 5), 0);
        assert_int_equal(capture_feed(&c,
                                      "\xA9"
                                      "xyz\xFF",
                                      5),
                         0);
        assert_int_equal(capture_text(&c, &t), 0);
        assert_false(t.truncated);
        assert_string_equal(t.text, "abcdéxyz\xEF\xBF\xBD");
        free(t.text);
        capture_release(&c);
}

static void test_capture_feed_one_gigabyte(void **state)
{
        /* 1 GiB in 64 KiB pieces: only the ring is touched, memory stays head + tail. */
        const size_t piece = 64 * 1024;
        const uint64_t total = 1024ULL * 1024 * 1024;
        char *buf = pattern(0, piece);
        struct capture c;
        struct capture_text t;

        assert_int_equal(capture_init(&c, HEAD, TAIL, CAPTURE_THOUSANDS, NULL, 0), 0);
        for (uint64_t pos = 0; pos < total; pos += piece)
                assert_int_equal(capture_feed(&c, buf, piece), 0);
        assert_int_equal(c.total, total);
        assert_int_equal(capture_text(&c, &t), 0);
        assert_true(t.truncated);
        assert_int_equal(t.omitted, total - HEAD - TAIL);
        assert_non_null(strstr(t.text, "1,073,691,824 chars omitted out of 1,073,741,824 total"));
        assert_memory_equal(t.text, buf, HEAD);
        assert_memory_equal(t.text + t.len - TAIL, buf + piece - TAIL, TAIL);
        free(t.text);
        free(buf);
        capture_release(&c);
}

static void test_capture_spill_none_within_cap(void **state)
{
        char *dir = make_tmpdir(), *sub = path_join(dir, "spill");
        struct capture c;

        assert_non_null(sub);
        assert_int_equal(capture_init(&c, 100, 100, 0, sub, 1000), 0);
        assert_int_equal(capture_feed(&c, "x", 1), 0);
        for (int i = 0; i < 199; i++)
                assert_int_equal(capture_feed(&c, "y", 1), 0);
        assert_null(capture_spill_path(&c));
        capture_release(&c);
        assert_int_equal(rm_rf(dir), 0);
        free(sub);
        free(dir);
}

static void check_spill(uint64_t total, uint64_t spill_max)
{
        const size_t pieces[] = {777, 1, 4096, 65536};
        char *dir = make_tmpdir(), *sub = path_join(dir, "a/b");
        const char *name;
        struct capture c;
        struct stat st;
        char *data, *want;
        size_t len, wl = (size_t) MIN(total, spill_max);

        assert_non_null(sub);
        assert_int_equal(capture_init(&c, 1000, 2000, 0, sub, spill_max), 0);
        feed_pattern(&c, total, pieces, ELEMENTSOF(pieces));
        assert_non_null(capture_spill_path(&c));
        name = strrchr(capture_spill_path(&c), '/');
        assert_non_null(name);
        assert_int_equal(strlen(name), strlen("/stdout-0123456789abcdef.txt"));
        assert_memory_equal(name, "/stdout-", 8);
        assert_string_equal(name + 24, ".txt");
        for (int i = 8; i < 24; i++)
                assert_true(isxdigit((unsigned char) name[i]));
        assert_int_equal(stat(capture_spill_path(&c), &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        assert_int_equal(stat(sub, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0700);

        data = slurp(capture_spill_path(&c), &len);
        want = pattern(0, wl);
        assert_int_equal(len, wl);
        assert_memory_equal(data, want, wl);
        free(data);
        free(want);
        capture_release(&c);
        assert_int_equal(rm_rf(dir), 0);
        free(sub);
        free(dir);
}

static void test_capture_spill_larger_than_max(void **state)
{
        check_spill(1000000, 123457);
}

static void test_capture_spill_smaller_than_max(void **state)
{
        check_spill(300000, 5000000);
        check_spill(3001, 5000000); /* one byte over head + tail */
}

static void test_capture_spill_create_error(void **state)
{
        char *dir = make_tmpdir(), *file = path_join(dir, "f"), *sub = path_join(dir, "f/x");
        struct capture c;
        struct capture_text t;
        FILE *f;

        assert_non_null(sub);
        f = fopen(file, "we");
        assert_non_null(f);
        fclose(f);
        assert_int_equal(capture_init(&c, 2, 2, 0, sub, 100), 0);
        assert_int_equal(capture_feed(&c, "abcd", 4), 0);
        assert_int_equal(capture_feed(&c, "e", 1), -ENOTDIR);
        assert_int_equal(capture_feed(&c, "fgh", 3), 0); /* reported once */
        assert_null(capture_spill_path(&c));
        assert_int_equal(capture_text(&c, &t), 0);
        assert_true(t.truncated);
        assert_memory_equal(t.text, "ab", 2);
        assert_string_equal(t.text + t.len - 2, "gh");
        free(t.text);
        capture_release(&c);
        assert_int_equal(rm_rf(dir), 0);
        free(sub);
        free(file);
        free(dir);
}

static void test_capture_spill_write_error(void **state)
{
        char *dir = make_tmpdir();
        char *buf = pattern(0, 8192);
        struct capture c;
        struct rlimit old, lim;
        void (*oldsig)(int);
        int r = 0;

        /* RLIMIT_FSIZE makes the spill write fail with EFBIG (SIGXFSZ ignored). */
        assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
        oldsig = signal(SIGXFSZ, SIG_IGN);
        lim = old;
        lim.rlim_cur = 4096;
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);

        assert_int_equal(capture_init(&c, 10, 10, 0, dir, 1000000), 0);
        assert_int_equal(capture_feed(&c, buf, 15), 0);
        r = capture_feed(&c, buf, 8192);
        for (int i = 0; i < 3 && r == 0; i++)
                r = capture_feed(&c, buf, 8192);

        assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
        signal(SIGXFSZ, oldsig);

        assert_int_equal(r, -EFBIG);
        assert_null(capture_spill_path(&c));
        assert_int_equal(capture_feed(&c, buf, 8192), 0);
        assert_int_equal(c.total, 15 + 8192 * 2);
        capture_release(&c);
        /* The abandoned file was unlinked: the directory is empty again. */
        assert_int_equal(rmdir(dir), 0);
        free(buf);
        free(dir);
}

/* --- capture_filter_spill --- */

struct filter_log {
        size_t calls, max_chunk, begin_chunks, begin_without_end, not_valid, bad_end;
        bool last_seen;
        bool null_result;
};

static int filter_upper(const char *chunk, size_t n, bool last, char **ret, size_t *ret_len,
                        void *userdata)
{
        struct filter_log *l = userdata;
        char *o = malloc(n + 1);

        assert_non_null(o);
        l->calls++;
        assert_int_equal(chunk[n], 0);
        for (size_t i = 0; i < n; i++)
                o[i] = (char) toupper((unsigned char) chunk[i]);
        o[n] = 0;
        *ret = o;
        *ret_len = n;
        return 1;
}

static int filter_observe(const char *chunk, size_t n, bool last, char **ret, size_t *ret_len,
                          void *userdata)
{
        struct filter_log *l = userdata;
        const char *b;

        /* Only the final chunk says it is the last. */
        assert_int_equal(l->last_seen, 0);
        l->last_seen = last;
        l->calls++;
        l->max_chunk = MAX(l->max_chunk, n);
        if (!utf8_is_valid(chunk, n))
                l->not_valid++;
        b = memmem(chunk, n, "-----BEGIN", 10);
        if (b) {
                l->begin_chunks++;
                if (!memmem(b, n - (size_t) (b - chunk), "-----END", 8))
                        l->begin_without_end++;
        }
        return 0;
}

/* Fails on the second chunk, as a redaction that ran out of memory. */
static int filter_fail_second(const char *chunk, size_t n, bool last, char **ret, size_t *ret_len,
                              void *userdata)
{
        struct filter_log *l = userdata;

        return ++l->calls == 2 ? -ENOMEM : 0;
}

static struct capture *spill_with(const char *dir, const char *data, size_t n)
{
        struct capture *c = malloc(sizeof(*c));

        assert_non_null(c);
        assert_int_equal(capture_init(c, 16, 16, 0, dir, 64 * MIB), 0);
        /* Odd pieces so the spill is written across many feeds. */
        for (size_t pos = 0; pos < n;) {
                size_t k = MIN(n - pos, (size_t) 70001);

                assert_int_equal(capture_feed(c, data + pos, k), 0);
                pos += k;
        }
        assert_non_null(capture_spill_path(c));
        return c;
}

static char *lines(size_t n)
{
        char *p = malloc(n + 1);

        assert_non_null(p);
        for (size_t i = 0; i < n; i++)
                p[i] = (i % 64 == 63) ? '\n' : pattern_byte(i);
        p[n] = 0;
        return p;
}

static void test_capture_filter_spill_upper(void **state)
{
        char *dir = make_tmpdir();
        size_t n = 3 * MIB + 12345, len;
        char *data = lines(n), *got;
        struct filter_log l = {};
        struct capture *c = spill_with(dir, data, n);
        struct stat st;

        assert_int_equal(capture_filter_spill(c, filter_upper, &l), 0);
        assert_true(l.calls >= 4);
        got = slurp(capture_spill_path(c), &len);
        assert_int_equal(len, n);
        for (size_t i = 0; i < n; i++)
                data[i] = (char) toupper((unsigned char) data[i]);
        assert_memory_equal(got, data, n);
        assert_int_equal(stat(capture_spill_path(c), &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        free(got);
        capture_release(c);
        free(c);
        assert_int_equal(rm_rf(dir), 0);
        free(data);
        free(dir);
}

/* A filter that fails (a redaction that could not finish) takes the spill file with it. */
static void test_capture_filter_spill_failure_removes(void **state)
{
        char *dir = make_tmpdir();
        size_t n = 3 * MIB + 12345;
        char *data = lines(n), *path;
        struct filter_log l = {};
        struct capture *c = spill_with(dir, data, n);
        DIR *d;
        struct dirent *de;

        path = strdup(capture_spill_path(c));
        assert_non_null(path);
        assert_int_equal(capture_filter_spill(c, filter_fail_second, &l), -ENOMEM);
        assert_int_equal(l.calls, 2);
        assert_null(capture_spill_path(c));
        assert_int_equal(access(path, F_OK), -1);
        /* Neither the spill nor the half-written temporary copy is left. */
        d = opendir(dir);
        assert_non_null(d);
        while ((de = readdir(d)))
                assert_true(strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0);
        closedir(d);
        capture_release(c);
        free(c);
        free(path);
        assert_int_equal(rm_rf(dir), 0);
        free(data);
        free(dir);
}

static void test_capture_filter_spill_null_keeps(void **state)
{
        char *dir = make_tmpdir();
        size_t n = 2 * MIB + 99, len;
        char *data = lines(n), *got;
        struct filter_log l = {};
        struct capture *c = spill_with(dir, data, n);

        assert_int_equal(capture_filter_spill(c, filter_observe, &l), 0);
        assert_true(l.calls >= 3);
        assert_true(l.max_chunk <= MIB);
        got = slurp(capture_spill_path(c), &len);
        assert_int_equal(len, n);
        assert_memory_equal(got, data, n);
        free(got);
        capture_release(c);
        free(c);
        assert_int_equal(rm_rf(dir), 0);
        free(data);
        free(dir);
}

static void test_capture_filter_spill_sanitizes(void **state)
{
        char *dir = make_tmpdir();
        const char in[] = "0123456789abcdef0123456789abcdef"
                          "bad \xFF\xC3 end\n";
        struct filter_log l = {};
        struct capture *c = spill_with(dir, in, sizeof(in) - 1);
        size_t len;
        char *got;

        assert_int_equal(capture_filter_spill(c, filter_observe, &l), 0);
        assert_int_equal(l.calls, 1);
        assert_int_equal(l.not_valid, 0);
        assert_true(l.last_seen);
        got = slurp(capture_spill_path(c), &len);
        assert_string_equal(got, "0123456789abcdef0123456789abcdef"
                                 "bad \xEF\xBF\xBD\xEF\xBF\xBD end\n");
        free(got);
        capture_release(c);
        free(c);
        assert_int_equal(rm_rf(dir), 0);
        free(dir);
}

static void test_capture_filter_spill_no_newline_utf8(void **state)
{
        /* 3 MiB of two-byte characters and no newline: cuts must not split them. */
        char *dir = make_tmpdir();
        size_t n = 3 * MIB + 1, len; /* odd: a leading 'x' shifts the pairs */
        char *data = malloc(n + 1), *got;
        struct filter_log l = {};
        struct capture *c;

        assert_non_null(data);
        data[0] = 'x';
        for (size_t i = 1; i + 1 < n; i += 2) {
                data[i] = '\xC3';
                data[i + 1] = '\xA9';
        }
        c = spill_with(dir, data, n);
        assert_int_equal(capture_filter_spill(c, filter_observe, &l), 0);
        assert_true(l.calls >= 3);
        assert_true(l.max_chunk <= MIB);
        assert_int_equal(l.not_valid, 0);
        assert_true(l.last_seen);
        got = slurp(capture_spill_path(c), &len);
        assert_int_equal(len, n);
        assert_memory_equal(got, data, n);
        free(got);
        capture_release(c);
        free(c);
        assert_int_equal(rm_rf(dir), 0);
        free(data);
        free(dir);
}

static void test_capture_filter_spill_none(void **state)
{
        struct capture c;
        struct filter_log l = {};

        assert_int_equal(capture_init(&c, 10, 10, 0, NULL, 0), 0);
        assert_int_equal(capture_feed(&c, "0123456789012345678901234567890", 31), 0);
        assert_null(capture_spill_path(&c));
        assert_int_equal(capture_filter_spill(&c, filter_observe, &l), 0);
        assert_int_equal(l.calls, 0);
        capture_release(&c);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_format_thousands_values),
                cmocka_unit_test(test_capture_text_small_exact),
                cmocka_unit_test(test_capture_text_empty),
                cmocka_unit_test(test_capture_text_exactly_at_cap),
                cmocka_unit_test(test_capture_text_one_over_cap),
                cmocka_unit_test(test_capture_text_ten_million_thousands),
                cmocka_unit_test(test_capture_text_ten_million_plain),
                cmocka_unit_test(test_capture_feed_byte_by_byte),
                cmocka_unit_test(test_capture_text_head_only_drops),
                cmocka_unit_test(test_capture_text_utf8_split),
                cmocka_unit_test(test_capture_text_utf8_untruncated_joined),
                cmocka_unit_test(test_capture_feed_one_gigabyte),
                cmocka_unit_test(test_capture_spill_none_within_cap),
                cmocka_unit_test(test_capture_spill_larger_than_max),
                cmocka_unit_test(test_capture_spill_smaller_than_max),
                cmocka_unit_test(test_capture_spill_create_error),
                cmocka_unit_test(test_capture_spill_write_error),
                cmocka_unit_test(test_capture_filter_spill_upper),
                cmocka_unit_test(test_capture_filter_spill_null_keeps),
                cmocka_unit_test(test_capture_filter_spill_failure_removes),
                cmocka_unit_test(test_capture_filter_spill_sanitizes),
                cmocka_unit_test(test_capture_filter_spill_no_newline_utf8),
                cmocka_unit_test(test_capture_filter_spill_none),
                cmocka_unit_test(test_capture_text_cut_context),
                cmocka_unit_test(test_capture_text_cut_head_only),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
