/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../lib/ptc-test.h"
#include "../lib/test-child.h"

#include "basic/buf.h"
#include "basic/fd-util.h"
#include "basic/parse-util.h"
#include "basic/path-util.h"
#include "basic/process-util.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "basic/utf8.h"

static void test_buf_append_respects_cap(void **state)
{
        _cleanup_buf_ struct buf b = BUF_INIT(8);

        assert_int_equal(buf_append_str(&b, "hello"), 0);
        assert_int_equal(buf_append_str(&b, "abc"), 0);
        assert_int_equal(b.len, 8);
        assert_int_equal(buf_append_char(&b, 'x'), -E2BIG);
        assert_string_equal(buf_str(&b), "helloabc");
        buf_consume(&b, 5);
        assert_string_equal(buf_str(&b), "abc");
        assert_int_equal(buf_printf(&b, "%d", 12345), 0);
        assert_string_equal(buf_str(&b), "abc12345");
        assert_int_equal(buf_printf(&b, "%d", 1), -E2BIG);
}

static void test_buf_steal_empty(void **state)
{
        struct buf b = BUF_INIT(10);
        size_t n = 99;
        char *s = buf_steal(&b, &n);

        assert_non_null(s);
        assert_string_equal(s, "");
        assert_int_equal(n, 0);
        free(s);
}

static void test_utf8_sanitize_like_python(void **state)
{
        /* bytes.decode("utf-8", "replace") results */
        static const struct {
                const char *in;
                size_t n;
                const char *out;
        } cases[] = {
                {"abc", 3, "abc"},
                {"\xc3\xa9", 2, "\xc3\xa9"},
                {"\xc3", 1, "\xef\xbf\xbd"},
                {"\xc3"
                 "a",
                 2,
                 "\xef\xbf\xbd"
                 "a"},
                {"\xf0\x9f\x98", 3, "\xef\xbf\xbd"},
                {"\x80\x80", 2, "\xef\xbf\xbd\xef\xbf\xbd"},
                {"\xe0\x80\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
                {"\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
                {"\xc0\xaf", 2, "\xef\xbf\xbd\xef\xbf\xbd"},
                {"\xf4\x90\x80\x80", 4, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
                {"a\0b", 3, "a\0b"},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                size_t len, chars;
                _cleanup_free_ char *o = utf8_sanitize(cases[i].in, cases[i].n, &len, &chars);
                size_t want = i == ELEMENTSOF(cases) - 1 ? 3 : strlen(cases[i].out);

                assert_non_null(o);
                assert_int_equal(len, want);
                assert_memory_equal(o, cases[i].out, want);
                assert_true(utf8_is_valid(o, len));
        }
        assert_false(utf8_is_valid("\xff", 1));
        assert_true(utf8_is_valid("\xe2\x82\xac", 3));
        assert_int_equal(utf8_count_chars("\xe2\x82\xac"
                                          "ab",
                                          5),
                         3);
}

/* @in as escaped text must be @want, and unescape back to @in. */
static void check_escape(const char *in, size_t n, const char *want)
{
        _cleanup_free_ char *e = NULL, *u = NULL;
        size_t el, ul;

        assert_int_equal(utf8_escape_bytes(in, n, &e, &el), 0);
        assert_int_equal(el, strlen(want));
        assert_memory_equal(e, want, el);
        assert_true(utf8_is_valid(e, el));
        /* The one-pass test agrees: escape-free exactly when escaping changes nothing. */
        assert_int_equal(utf8_is_escape_free(in, n), el == n && memcmp(e, in, n) == 0);
        assert_int_equal(utf8_unescape_bytes(e, el, &u, &ul), 0);
        assert_int_equal(ul, n);
        assert_memory_equal(u, in, n);
}

static void test_utf8_prefix_len(void **state)
{
        const char *s = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"; /* a é € 😀: 1+2+3+4 bytes */
        static const size_t want[] = {0, 1, 1, 3, 3, 3, 6, 6, 6, 6, 10, 10};

        for (size_t max = 0; max < ELEMENTSOF(want); max++)
                assert_int_equal(utf8_prefix_len(s, 10, max), want[max]);
        assert_int_equal(utf8_prefix_len(s, 2, 1), 1);
        assert_int_equal(utf8_prefix_len("", 0, 5), 0);
}

static void test_utf8_escape_bytes(void **state)
{
        (void) state;
        /* Python's bytes.decode("utf-8", "surrogateescape"), each U+DCxx moved to U+10DCxx. */
        check_escape("plain/ascii.txt", 15, "plain/ascii.txt");
        check_escape("caf\xc3\xa9", 5, "caf\xc3\xa9");
        check_escape("caf\xe9", 4, "caf\xf4\x8d\xb3\xa9");
        check_escape("\xff\xfe.txt", 6, "\xf4\x8d\xb3\xbf\xf4\x8d\xb3\xbe.txt");
        check_escape("\x80", 1, "\xf4\x8d\xb2\x80");
        /* Each byte of a maximal invalid subpart on its own, as surrogateescape. */
        check_escape("\xe0\x80\x80", 3, "\xf4\x8d\xb3\xa0\xf4\x8d\xb2\x80\xf4\x8d\xb2\x80");
        check_escape("\xf0\x9f\x98"
                     "a",
                     4,
                     "\xf4\x8d\xb3\xb0\xf4\x8d\xb2\x9f\xf4\x8d\xb2\x98"
                     "a");
        /* Surrogates and overlongs in the bytes are not UTF-8 either. */
        check_escape("\xed\xb3\xa9", 3, "\xf4\x8d\xb3\xad\xf4\x8d\xb2\xb3\xf4\x8d\xb2\xa9");
        /* A name really holding an escape code point (U+10DC80): its 4 bytes are escaped. */
        check_escape("\xf4\x8d\xb2\x80", 4,
                     "\xf4\x8d\xb3\xb4\xf4\x8d\xb2\x8d\xf4\x8d\xb2\xb2\xf4\x8d\xb2\x80");
        /* Its neighbours outside the range are ordinary characters. */
        check_escape("\xf4\x8d\xb1\xbf\xf4\x8d\xb4\x80", 8, "\xf4\x8d\xb1\xbf\xf4\x8d\xb4\x80");
        check_escape("", 0, "");
}

static void test_utf8_unescape_bytes(void **state)
{
        _cleanup_free_ char *a = NULL, *b = NULL;
        size_t n;

        (void) state;
        /* Text without escapes is copied, whatever it holds. */
        assert_int_equal(utf8_unescape_bytes("a\xc3\xa9\xff/b", 7, &a, &n), 0);
        assert_int_equal(n, 7);
        assert_memory_equal(a, "a\xc3\xa9\xff/b", 7);
        /* A cut escape at the end is not one. */
        assert_int_equal(utf8_unescape_bytes("x\xf4\x8d\xb2", 4, &b, &n), 0);
        assert_int_equal(n, 4);
        assert_memory_equal(b, "x\xf4\x8d\xb2", 4);
        /* Every escape gives a byte >= 0x80: never '/', '.', NUL or another ASCII byte. */
        for (unsigned v = 0x80; v <= 0xff; v++) {
                char esc[5], *out = NULL;
                size_t l;

                esc[0] = (char) 0xf4;
                esc[1] = (char) 0x8d;
                esc[2] = (char) (v < 0xc0 ? 0xb2 : 0xb3);
                esc[3] = (char) (0x80 | (v & 0x3f));
                esc[4] = 0;
                assert_int_equal(utf8_unescape_bytes(esc, 4, &out, &l), 0);
                assert_int_equal(l, 1);
                assert_int_equal((unsigned char) out[0], v);
                free(out);
        }
        /* Round trip over pseudo-random bytes (a fixed LCG, so a failure repeats). */
        for (uint32_t seed = 1, round = 0; round < 2000; round++) {
                unsigned char in[24];
                _cleanup_free_ char *e = NULL, *u = NULL;
                size_t el, ul, len = round % sizeof(in);

                for (size_t i = 0; i < len; i++) {
                        seed = seed * 1103515245u + 12345u;
                        /* Bias towards 0x80..0xFF and the escape's own lead bytes. */
                        if ((seed >> 16) % 4 == 0)
                                in[i] = (unsigned char) "\xf4\x8d\xb2\xb3"[(seed >> 20) % 4];
                        else
                                in[i] = (unsigned char) ((seed >> 16) | 0x80);
                }
                assert_int_equal(utf8_escape_bytes((char *) in, len, &e, &el), 0);
                assert_true(utf8_is_valid(e, el));
                assert_int_equal(utf8_unescape_bytes(e, el, &u, &ul), 0);
                assert_int_equal(ul, len);
                assert_memory_equal(u, in, len);
        }
}

static void test_strv_split_and_contains(void **state)
{
        _cleanup_strv_free_ char **l = NULL;

        assert_int_equal(strv_split(" a,b,,c ", ", ", &l), 0);
        assert_int_equal(strv_length(l), 3);
        assert_true(strv_contains(l, "b"));
        assert_false(strv_contains(l, "d"));
        l = strv_free(l);
        assert_int_equal(strv_split("", ",", &l), 0);
        assert_non_null(l);
        assert_int_equal(strv_length(l), 0);
}

static void test_parse_numbers_strict(void **state)
{
        int64_t v;
        double d;

        assert_int_equal(safe_atoi64("42", &v), 0);
        assert_int_equal(v, 42);
        assert_true(safe_atoi64("42x", &v) < 0);
        assert_true(safe_atoi64(" 42", &v) < 0);
        assert_true(safe_atoi64("", &v) < 0);
        assert_true(safe_atoi64("99999999999999999999", &v) < 0);
        assert_int_equal(safe_atod("2.5", &d), 0);
        assert_true(d == 2.5);
        assert_true(safe_atod("nan", &d) < 0);
        assert_true(safe_atod("1e999", &d) < 0);
        assert_int_equal(unhexchar('0'), 0);
        assert_int_equal(unhexchar('9'), 9);
        assert_int_equal(unhexchar('a'), 10);
        assert_int_equal(unhexchar('F'), 15);
        assert_int_equal(unhexchar('g'), -1);
        assert_int_equal(unhexchar('/'), -1);
}

static void test_write_file_atomic_keeps_mode(void **state)
{
        char dir[] = "/tmp/ptc-test-basic-XXXXXX";
        _cleanup_free_ char *p = NULL, *data = NULL;
        struct stat st;
        size_t n;

        assert_non_null(mkdtemp(dir));
        p = path_join(dir, "f.txt");
        assert_int_equal(write_file_atomic(p, "one", 3, 0640), 0);
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0640);
        assert_int_equal(write_file_atomic(p, "two!", 4, -1), 0);
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0640);
        assert_int_equal(read_file_at(AT_FDCWD, p, 100, &data, &n), 0);
        assert_int_equal(n, 4);
        assert_string_equal(data, "two!");
        free(data);
        data = NULL;
        assert_int_equal(read_file_at(AT_FDCWD, p, 2, &data, &n), -E2BIG);
        assert_int_equal(read_file_at(AT_FDCWD, dir, 100, &data, &n), -EISDIR);
        assert_int_equal(rm_rf(dir), 0);
        assert_int_equal(access(dir, F_OK), -1);
}

/* Control-file writes: existing files only, relative to a directory fd, no symlinks. */
static void test_write_string_at(void **state)
{
        char dir[] = "/tmp/ptc-test-basic-XXXXXX";
        _cleanup_free_ char *p = NULL, *link = NULL, *data = NULL;
        _cleanup_close_ int dfd = -EBADF;
        size_t n;

        assert_non_null(mkdtemp(dir));
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(dfd >= 0);
        assert_int_equal(write_string_at(dfd, "missing", "1"), -ENOENT); /* never creates */
        p = path_join(dir, "control");
        assert_int_equal(write_file_atomic(p, "max\n", 4, 0644), 0);
        assert_int_equal(write_string_at(dfd, "control", "64"), 0);
        assert_int_equal(write_string_at(AT_FDCWD, p, "1"), 0);
        assert_int_equal(read_file_at(dfd, "control", 100, &data, &n), 0);
        assert_string_equal(data, "14x\n"); /* not truncated, as cgroupfs does not need */
        link = path_join(dir, "link");
        assert_int_equal(symlink(p, link), 0);
        assert_int_equal(write_string_at(dfd, "link", "1"), -ELOOP);
        assert_int_equal(write_string_at(dfd, ".", "1"), -EISDIR);
        assert_int_equal(rm_rf(dir), 0);
}

/* In a child: open fds, keep some (unsorted, a duplicate, a -1), check what is left. */
static void test_close_all_fds_but(void **state)
{
        int status;
        pid_t pid = test_fork();

        assert_true(pid >= 0);
        if (pid == 0) {
                int a[2], b[2], high, keep[6], open_count = 0;

                if (pipe(a) < 0 || pipe(b) < 0 || (high = fcntl(a[0], F_DUPFD, 200)) < 0)
                        _exit(10);
                keep[0] = high;
                keep[1] = 2;
                keep[2] = b[0];
                keep[3] = -1;
                keep[4] = b[0];
                keep[5] = 1;
                if (close_all_fds_but(keep, ELEMENTSOF(keep)) < 0)
                        _exit(11);
                if (fcntl(high, F_GETFD) < 0 || fcntl(b[0], F_GETFD) < 0 || fcntl(1, F_GETFD) < 0 ||
                    fcntl(2, F_GETFD) < 0)
                        _exit(12); /* a kept fd was closed */
                for (int fd = 0; fd < 1024; fd++)
                        open_count += fcntl(fd, F_GETFD) >= 0;
                _exit(open_count == 4 ? 0 : 13); /* 0, a[*] and b[1] closed */
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

/* A wait that should end at once ends long before this: a hang guard, not a timing check. */
#define HANG_GUARD_USEC (10 * USEC_PER_SEC)

static void test_fd_wait_readable_at_once(void **state)
{
        _cleanup_close_ int rd = -EBADF, wr = -EBADF;
        int p[2];

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        rd = p[0];
        wr = p[1];
        /* Nothing there: a passed deadline still looks once, and says 0. */
        assert_int_equal(fd_wait_readable(rd, 0), 0);
        assert_false(fd_readable_now(rd));
        assert_int_equal(write(wr, "x", 1), 1);
        assert_int_equal(fd_wait_readable(rd, USEC_INFINITY), 1);
        assert_int_equal(fd_wait_readable(rd, 0), 1);
        assert_true(fd_wait(rd, POLLIN, USEC_INFINITY) & POLLIN);
        assert_true(fd_readable_now(rd));
        assert_false(fd_readable_now(-1));
        /* The write end has room. */
        assert_int_equal(fd_wait_writable(wr, USEC_INFINITY), 1);
}

static void test_fd_wait_deadline_passes(void **state)
{
        _cleanup_close_ int rd = -EBADF, wr = -EBADF;
        struct pollfd none[1];
        usec_t start, deadline;
        int p[2];

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        rd = p[0];
        wr = p[1];
        start = now_usec();
        deadline = start + 30 * USEC_PER_MSEC;
        assert_int_equal(fd_wait_readable(rd, deadline), 0);
        assert_true(now_usec() >= deadline);
        assert_true(now_usec() < start + HANG_GUARD_USEC);

        deadline = now_usec() + 20 * USEC_PER_MSEC;
        assert_int_equal(fd_wait_either(rd, -1, deadline), 0);
        assert_true(now_usec() >= deadline);

        /* No fd at all: a sleep until the deadline. */
        deadline = now_usec() + 5 * USEC_PER_MSEC;
        assert_int_equal(poll_until(none, 0, deadline), 0);
        assert_true(now_usec() >= deadline);
        assert_true(now_usec() < start + HANG_GUARD_USEC);
}

static volatile sig_atomic_t alarms;
static int alarm_pipe = -1;

static void on_alarm(int sig)
{
        int saved = errno;

        /* The third one makes the pipe readable: a wait that gave up at the first is wrong. */
        if (++alarms == 3 && alarm_pipe >= 0)
                (void) !write(alarm_pipe, "x", 1);
        errno = saved;
}

static void alarms_every(long usec)
{
        struct itimerval it = {.it_interval = {.tv_usec = usec}, .it_value = {.tv_usec = usec}};

        assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
}

static struct sigaction alarm_old;

/* Also when an assertion failed half-way: no timer may outlive the test (SIGALRM kills). */
static int alarms_stop(void **state)
{
        alarms_every(0);
        alarm_pipe = -1;
        return sigaction(SIGALRM, &alarm_old, NULL);
}

static void test_fd_wait_eintr_retried(void **state)
{
        struct sigaction sa = {.sa_handler = on_alarm};
        _cleanup_close_ int rd = -EBADF, wr = -EBADF;
        usec_t start, deadline;
        int p[2];

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        rd = p[0];
        wr = p[1];
        /* No SA_RESTART: poll() is never restarted anyway, each signal is an EINTR. */
        assert_int_equal(sigaction(SIGALRM, &sa, &alarm_old), 0);

        /* A deadline: interrupted many times, it still waits the whole time. */
        alarms = 0;
        alarm_pipe = -1;
        start = now_usec();
        deadline = start + 200 * USEC_PER_MSEC;
        alarms_every(10000);
        assert_int_equal(fd_wait_readable(rd, deadline), 0);
        alarms_every(0);
        assert_true(now_usec() >= deadline);
        assert_true(now_usec() < start + HANG_GUARD_USEC);
        assert_true(alarms > 0);

        /* No deadline: it waits on until the fd is readable (after the third signal). */
        alarms = 0;
        alarm_pipe = wr;
        alarms_every(10000);
        assert_int_equal(fd_wait_either(rd, -1, now_usec() + HANG_GUARD_USEC), FD_WAIT_A);
        alarms_every(0);
        alarm_pipe = -1;
        assert_true(alarms >= 3);
}

static void test_fd_wait_hangup_is_readable(void **state)
{
        _cleanup_close_ int rd = -EBADF, wr = -EBADF;
        char c;
        int p[2];

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        rd = p[0];
        wr = p[1];
        wr = safe_close(wr);
        assert_int_equal(fd_wait_readable(rd, USEC_INFINITY), 1);
        assert_true(fd_wait(rd, 0, USEC_INFINITY) & POLLHUP);
        assert_true(fd_readable_now(rd));
        assert_int_equal(read(rd, &c, 1), 0);

        /* The other way round: a writer whose reader is gone learns it from the write. */
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        safe_close(p[0]);
        wr = p[1];
        assert_int_equal(fd_wait_writable(wr, USEC_INFINITY), 1);
        assert_true(fd_wait(wr, 0, 0) & POLLERR);
}

static void test_fd_wait_closed_fd(void **state)
{
        _cleanup_close_ int rd = -EBADF, wr = -EBADF;
        struct pollfd pf[2];
        int p[2], gone;

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        rd = p[0];
        wr = p[1];
        gone = fcntl(rd, F_DUPFD_CLOEXEC, 100);
        assert_true(gone >= 0);
        assert_int_equal(close(gone), 0);

        assert_int_equal(fd_wait_readable(gone, USEC_INFINITY), -EBADF);
        assert_int_equal(fd_wait_writable(gone, USEC_INFINITY), -EBADF);
        assert_int_equal(fd_wait(gone, POLLIN, 0), -EBADF);
        assert_int_equal(fd_wait_readable(-1, USEC_INFINITY), -EBADF);
        assert_int_equal(fd_wait_either(-1, -1, USEC_INFINITY), -EBADF);
        assert_int_equal(fd_wait_either(rd, gone, USEC_INFINITY), -EBADF);
        /* A cancel check fails closed: a descriptor that is not open reads as "now". */
        assert_true(fd_readable_now(gone));

        pf[0] = (struct pollfd){.fd = rd, .events = POLLIN};
        pf[1] = (struct pollfd){.fd = gone, .events = POLLIN};
        assert_int_equal(poll_until(pf, 2, USEC_INFINITY), -EBADF);
        assert_true(pf[1].revents & POLLNVAL);
        assert_int_equal(pf[0].revents, 0);
}

static void test_fd_wait_either_says_which(void **state)
{
        _cleanup_close_ int a_rd = -EBADF, a_wr = -EBADF, b_rd = -EBADF, b_wr = -EBADF;
        int p[2];

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        a_rd = p[0];
        a_wr = p[1];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        b_rd = p[0];
        b_wr = p[1];
        assert_int_equal(fd_wait_either(a_rd, b_rd, 0), 0);
        assert_int_equal(write(b_wr, "x", 1), 1);
        assert_int_equal(fd_wait_either(a_rd, b_rd, USEC_INFINITY), FD_WAIT_B);
        assert_int_equal(fd_wait_either(-1, b_rd, USEC_INFINITY), FD_WAIT_B);
        assert_int_equal(fd_wait_either(a_rd, -1, 0), 0);
        assert_int_equal(write(a_wr, "x", 1), 1);
        assert_int_equal(fd_wait_either(a_rd, b_rd, USEC_INFINITY), FD_WAIT_A | FD_WAIT_B);
        assert_int_equal(fd_wait_either(a_rd, -1, USEC_INFINITY), FD_WAIT_A);
}

static void test_fd_wait_writable_full_pipe(void **state)
{
        _cleanup_close_ int rd = -EBADF, wr = -EBADF;
        char buf[4096] = {0};
        usec_t deadline;
        int p[2];

        assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        rd = p[0];
        wr = p[1];
        while (write(wr, buf, sizeof(buf)) > 0)
                ;
        assert_int_equal(errno, EAGAIN);
        deadline = now_usec() + 20 * USEC_PER_MSEC;
        assert_int_equal(fd_wait_writable(wr, deadline), 0);
        assert_true(now_usec() >= deadline);
        /* A reader that stopped: write_all_stalling() gives up after the stall. */
        assert_int_equal(write_all_stalling(wr, buf, sizeof(buf), 20, false), -ETIMEDOUT);
        while (read(rd, buf, sizeof(buf)) > 0)
                ;
        assert_int_equal(fd_wait_writable(wr, USEC_INFINITY), 1);
        assert_int_equal(write_all_stalling(wr, buf, sizeof(buf), 20, false), 0);
}

static void test_pidfd_exited(void **state)
{
        int sync[2], self = self_pidfd(), status;
        struct pollfd pf;
        pid_t pid;
        _cleanup_close_ int fd = -EBADF;

        assert_false(pidfd_exited(-1));
        if (self < 0)
                skip(); /* no pidfds: an old kernel, valgrind, a seccomp profile refusing them */
        assert_true(self >= 0);
        assert_int_equal(self_pidfd(), self); /* opened once */
        assert_false(pidfd_exited(self));

        assert_int_equal(pipe(sync), 0);
        pid = test_fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                char c;
                close(sync[1]);
                _exit(read(sync[0], &c, 1) == 0 ? 0 : 1);
        }
        close(sync[0]);
        fd = pidfd_open_compat(pid);
        assert_true(fd >= 0);
        assert_false(pidfd_exited(fd));
        close(sync[1]); /* the child reads EOF and exits */
        pf = (struct pollfd){.fd = fd, .events = POLLIN};
        assert_int_equal(poll(&pf, 1, 10000), 1);
        assert_true(pidfd_exited(fd)); /* a zombie has exited too */
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(pidfd_exited(fd));
}

static void test_path_is_below(void **state)
{
        assert_true(path_is_below("/a/b", "/a/b"));
        assert_true(path_is_below("/a/b/c", "/a/b"));
        assert_true(path_is_below("/a/b/c", "/a/b/"));
        assert_true(path_is_below("/x", "/"));
        assert_false(path_is_below("/a/bc", "/a/b"));
        assert_false(path_is_below("/a", "/a/b"));
        assert_false(path_is_below("a/b", "/a"));
        assert_false(path_is_below("/a/b", "a"));
}

static void test_path_join(void **state)
{
        _cleanup_free_ char *a = path_join("/a/", "/b"), *b = path_join("/", "x"),
                            *c = path_join("rel", "y");

        assert_string_equal(a, "/a/b");
        assert_string_equal(b, "/x");
        assert_string_equal(c, "rel/y");
}

/* The environment is process-wide: the cases run in a child, which exits 0 when all hold. */
static void test_xdg_cache_path(void **state)
{
        pid_t pid;
        int status;

        (void) state;
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                char *p;
                bool ok;

                (void) setenv("XDG_CACHE_HOME", "/x/cache", 1);
                (void) setenv("HOME", "/h", 1);
                p = xdg_cache_path("ptc/spill");
                ok = p && strcmp(p, "/x/cache/ptc/spill") == 0;
                free(p);
                /* Relative XDG_CACHE_HOME is ignored, as the XDG spec says. */
                (void) setenv("XDG_CACHE_HOME", "rel", 1);
                p = xdg_cache_path("ptc/interpreters.json");
                ok = ok && p && strcmp(p, "/h/.cache/ptc/interpreters.json") == 0;
                free(p);
                (void) unsetenv("XDG_CACHE_HOME");
                (void) setenv("HOME", "relative", 1);
                p = xdg_cache_path("ptc");
                ok = ok && !p;
                (void) unsetenv("HOME");
                ok = ok && !xdg_cache_path("ptc");
                _exit(ok ? 0 : 1);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_memfd_with_data(void **state)
{
        char buf[16] = {};
        int fd;

        (void) state;
        fd = memfd_with_data("ptc-test", "hello\0x", 7);
        assert_true(fd >= 3);
        assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
        /* Rewound: a reader (a child's stdin) starts at the first byte. */
        assert_int_equal(read(fd, buf, sizeof(buf)), 7);
        assert_memory_equal(buf, "hello\0x", 7);
        safe_close(fd);
        fd = memfd_with_data("ptc-test", "", 0);
        assert_true(fd >= 0);
        assert_int_equal(read(fd, buf, sizeof(buf)), 0);
        safe_close(fd);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_buf_append_respects_cap),
                cmocka_unit_test(test_buf_steal_empty),
                cmocka_unit_test(test_memfd_with_data),
                cmocka_unit_test(test_utf8_sanitize_like_python),
                cmocka_unit_test(test_utf8_prefix_len),
                cmocka_unit_test(test_utf8_escape_bytes),
                cmocka_unit_test(test_utf8_unescape_bytes),
                cmocka_unit_test(test_strv_split_and_contains),
                cmocka_unit_test(test_parse_numbers_strict),
                cmocka_unit_test(test_write_file_atomic_keeps_mode),
                cmocka_unit_test(test_write_string_at),
                cmocka_unit_test(test_close_all_fds_but),
                cmocka_unit_test(test_fd_wait_readable_at_once),
                cmocka_unit_test(test_fd_wait_deadline_passes),
                cmocka_unit_test_teardown(test_fd_wait_eintr_retried, alarms_stop),
                cmocka_unit_test(test_fd_wait_hangup_is_readable),
                cmocka_unit_test(test_fd_wait_closed_fd),
                cmocka_unit_test(test_fd_wait_either_says_which),
                cmocka_unit_test(test_fd_wait_writable_full_pipe),
                cmocka_unit_test(test_pidfd_exited),
                cmocka_unit_test(test_path_join),
                cmocka_unit_test(test_path_is_below),
                cmocka_unit_test(test_xdg_cache_path),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
