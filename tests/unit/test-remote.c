/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "../lib/ptc-test.h"

#include "basic/buf.h"
#include "basic/diag.h"
#include "basic/strv.h"
#include "core/remote/backend.h"
#include "core/remote/frame.h"
#include "core/remote/pool.h"

/* A whole stream as the agent would write it: magic, hello, some output, an exit. */
static void agent_stream(struct buf *out)
{
        json_t *hello = json_pack("{s:i, s:s, s:[]}", "protocol", 1, "ptc", "0.2.0", "features");
        json_t *exit = json_pack("{s:i}", "exit_code", 0);

        assert_int_equal(frame_append_magic(out), 0);
        assert_int_equal(frame_append_json(out, FRAME_HELLO, hello), 0);
        assert_int_equal(frame_append(out, FRAME_STDOUT, "hi\n", 3), 0);
        assert_int_equal(frame_append(out, FRAME_STDERR, "", 0), 0);
        assert_int_equal(frame_append_json(out, FRAME_EXIT, exit), 0);
        json_decref(hello);
        json_decref(exit);
}

static void expect_frames(struct frame_reader *r)
{
        static const struct {
                enum frame_type type;
                const char *payload;
        } want[] = {
                {FRAME_HELLO, "{\"protocol\":1,\"ptc\":\"0.2.0\",\"features\":[]}"},
                {FRAME_STDOUT, "hi\n"},
                {FRAME_STDERR, ""},
                {FRAME_EXIT, "{\"exit_code\":0}"},
        };
        struct frame f;
        struct diag d;

        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                assert_int_equal(frame_reader_next(r, &f, &d), 1);
                assert_int_equal(f.type, want[i].type);
                assert_int_equal(f.len, strlen(want[i].payload));
                assert_memory_equal(f.payload, want[i].payload, f.len);
        }
        assert_int_equal(frame_reader_next(r, &f, &d), 0);
        assert_int_equal(frame_reader_eof(r, &d), 0);
}

static void test_frame_round_trip_whole_and_byte_by_byte(void **state)
{
        _cleanup_buf_ struct buf out = BUF_INIT(1 << 20);
        _cleanup_frame_reader_ struct frame_reader whole;
        _cleanup_frame_reader_ struct frame_reader bytes;
        struct frame f;
        struct diag d;
        size_t got = 0;

        agent_stream(&out);
        frame_reader_init(&whole, FRAME_SIDE_HOST);
        assert_int_equal(frame_reader_feed(&whole, out.data, out.len), 0);
        expect_frames(&whole);

        /* One byte at a time: every frame comes out once, whole, at its last byte. */
        frame_reader_init(&bytes, FRAME_SIDE_HOST);
        for (size_t i = 0; i < out.len; i++) {
                assert_int_equal(frame_reader_feed(&bytes, out.data + i, 1), 0);
                while (frame_reader_next(&bytes, &f, &d) == 1)
                        got++;
        }
        assert_int_equal(got, 4);
        assert_int_equal(frame_reader_eof(&bytes, &d), 0);
}

static void test_frame_preamble_is_skipped_and_reported(void **state)
{
        _cleanup_buf_ struct buf out = BUF_INIT(1 << 20);
        _cleanup_frame_reader_ struct frame_reader r;
        _cleanup_frame_reader_ struct frame_reader never;
        _cleanup_frame_reader_ struct frame_reader silent;
        static const char banner[] = "Welcome to host\r\n\x1b[1mlast login\x1b[0m\n";
        struct diag d;

        /* A banner, and a partial magic inside it, before the real magic. */
        assert_int_equal(buf_append(&out, banner, strlen(banner)), 0);
        assert_int_equal(buf_append(&out, "\x89PTC\r\n", 6), 0);
        agent_stream(&out);
        frame_reader_init(&r, FRAME_SIDE_HOST);
        assert_int_equal(frame_reader_feed(&r, out.data, out.len), 0);
        expect_frames(&r);
        assert_int_equal(r.skipped, strlen(banner) + 6);

        /* A channel that prints something else and closes: the message shows what. */
        frame_reader_init(&never, FRAME_SIDE_HOST);
        assert_int_equal(frame_reader_feed(&never, "sh: 1: ptc: not found\n", 22), 0);
        assert_int_equal(frame_reader_eof(&never, &d), -EPIPE);
        assert_non_null(strstr(d.message, "before the remote stream started"));
        assert_non_null(strstr(d.message, "22 bytes"));
        assert_non_null(strstr(d.message, "\"sh: 1: ptc: not found\\x0a\""));

        frame_reader_init(&silent, FRAME_SIDE_HOST);
        assert_int_equal(frame_reader_eof(&silent, &d), -EPIPE);
        assert_non_null(strstr(d.message, "printed nothing"));
}

static void test_frame_watch_in_the_preamble(void **state)
{
        _cleanup_buf_ struct buf out = BUF_INIT(1 << 20);
        static const char pre[] = "motd\nptc-send-agent\n";
        size_t splits[] = {1, 3, 7, 64};

        for (size_t s = 0; s < ELEMENTSOF(splits); s++) {
                _cleanup_frame_reader_ struct frame_reader r;
                struct frame f;
                struct diag d;
                size_t got = 0;

                buf_reset(&out);
                assert_int_equal(buf_append(&out, pre, strlen(pre)), 0);
                agent_stream(&out);
                frame_reader_init(&r, FRAME_SIDE_HOST);
                frame_reader_watch(&r, "ptc-send-agent\n");
                /* Cut anywhere, the watched text is seen once it has passed, never before. */
                for (size_t i = 0; i < out.len; i += splits[s]) {
                        size_t n = MIN(splits[s], out.len - i);

                        assert_int_equal(frame_reader_feed(&r, out.data + i, n), 0);
                        while (frame_reader_next(&r, &f, &d) == 1)
                                got++;
                        if (i + n < strlen(pre))
                                assert_false(r.watch_seen);
                }
                assert_true(r.watch_seen);
                assert_int_equal(got, 4);
        }
}

static void test_frame_watch_not_inside_the_stream(void **state)
{
        _cleanup_buf_ struct buf out = BUF_INIT(1 << 20);
        _cleanup_frame_reader_ struct frame_reader r;
        struct frame f;
        struct diag d;

        agent_stream(&out);
        assert_int_equal(frame_append(&out, FRAME_STDOUT, "ptc-send-agent\n", 15), 0);
        frame_reader_init(&r, FRAME_SIDE_HOST);
        frame_reader_watch(&r, "ptc-send-agent\n");
        assert_int_equal(frame_reader_feed(&r, out.data, out.len), 0);
        while (frame_reader_next(&r, &f, &d) == 1)
                ;
        assert_false(r.watch_seen);
}

static void test_frame_preamble_is_bounded(void **state)
{
        _cleanup_frame_reader_ struct frame_reader r;
        _cleanup_free_ char *junk = malloc(4096);
        struct frame f;
        struct diag d;
        int k = 0;

        assert_non_null(junk);
        memset(junk, 'y', 4096);
        frame_reader_init(&r, FRAME_SIDE_HOST);
        for (size_t i = 0; i < 20 && k == 0; i++) {
                assert_int_equal(frame_reader_feed(&r, junk, 4096), 0);
                k = frame_reader_next(&r, &f, &d);
        }
        assert_int_equal(k, -EPROTO);
        assert_non_null(strstr(d.message, "did not start within 64 KiB"));
        /* The pending bytes stay bounded while the preamble is scanned. */
        assert_true(r.in.len - r.start < FRAME_MAGIC_SIZE);
}

/* Feed magic + one raw frame header (and @n payload bytes) to a reader for @side. */
static int one_frame(enum frame_side side, unsigned type, uint32_t len, size_t n, struct diag *d)
{
        _cleanup_frame_reader_ struct frame_reader r;
        _cleanup_buf_ struct buf in = BUF_INIT(1 << 20);
        unsigned char h[5] = {len >> 24, len >> 16, len >> 8, len, type};
        struct frame f;

        frame_reader_init(&r, side);
        assert_int_equal(frame_append_magic(&in), 0);
        if (type != FRAME_HELLO)
                assert_int_equal(frame_append(&in, FRAME_HELLO, "{}", 2), 0);
        assert_int_equal(buf_append(&in, h, sizeof(h)), 0);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(buf_append_char(&in, 'x'), 0);
        assert_int_equal(frame_reader_feed(&r, in.data, in.len), 0);
        if (type != FRAME_HELLO)
                assert_int_equal(frame_reader_next(&r, &f, d), 1);
        return frame_reader_next(&r, &f, d);
}

static void test_frame_broken_streams_are_refused(void **state)
{
        _cleanup_frame_reader_ struct frame_reader r;
        _cleanup_buf_ struct buf in = BUF_INIT(1 << 20);
        struct frame f;
        struct diag d;

        assert_int_equal(one_frame(FRAME_SIDE_HOST, 0, 0, 0, &d), -EPROTO);
        assert_non_null(strstr(d.message, "unknown type 0"));
        assert_int_equal(one_frame(FRAME_SIDE_HOST, 200, 0, 0, &d), -EPROTO);
        /* A type the other end never sends. */
        assert_int_equal(one_frame(FRAME_SIDE_HOST, FRAME_RUN, 2, 2, &d), -EPROTO);
        assert_non_null(strstr(d.message, "a run frame came from the agent"));
        assert_int_equal(one_frame(FRAME_SIDE_AGENT, FRAME_STDOUT, 1, 1, &d), -EPROTO);
        assert_non_null(strstr(d.message, "from the host"));
        /* Over the cap: refused from the header alone, before any payload is buffered. */
        assert_int_equal(one_frame(FRAME_SIDE_HOST, FRAME_STDOUT, FRAME_CHUNK_MAX + 1, 0, &d),
                         -EPROTO);
        assert_non_null(strstr(d.message, "at most 65536"));
        assert_int_equal(one_frame(FRAME_SIDE_HOST, FRAME_CALL, UINT32_MAX, 0, &d), -EPROTO);
        /* At the cap it is only waiting for the payload. */
        assert_int_equal(one_frame(FRAME_SIDE_HOST, FRAME_STDOUT, FRAME_CHUNK_MAX, 10, &d), 0);

        /* The first frame must be a hello; nothing may follow an error. */
        frame_reader_init(&r, FRAME_SIDE_HOST);
        assert_int_equal(frame_append_magic(&in), 0);
        assert_int_equal(frame_append(&in, FRAME_STDOUT, "x", 1), 0);
        assert_int_equal(frame_reader_feed(&r, in.data, in.len), 0);
        assert_int_equal(frame_reader_next(&r, &f, &d), -EPROTO);
        assert_non_null(strstr(d.message, "starts with a stdout frame, not hello"));

        frame_reader_release(&r);
        frame_reader_init(&r, FRAME_SIDE_AGENT);
        buf_reset(&in);
        assert_int_equal(frame_append_magic(&in), 0);
        assert_int_equal(frame_append(&in, FRAME_HELLO, "{}", 2), 0);
        assert_int_equal(frame_append(&in, FRAME_ERROR, "{\"error\":\"x\"}", 13), 0);
        assert_int_equal(frame_append(&in, FRAME_SIGNAL, "{}", 2), 0);
        assert_int_equal(frame_reader_feed(&r, in.data, in.len), 0);
        assert_int_equal(frame_reader_next(&r, &f, &d), 1);
        assert_int_equal(frame_reader_next(&r, &f, &d), 1);
        assert_int_equal(f.type, FRAME_ERROR);
        assert_int_equal(frame_reader_next(&r, &f, &d), -EPROTO);
        assert_non_null(strstr(d.message, "after the error frame"));
}

static void test_frame_cut_streams_say_where(void **state)
{
        _cleanup_buf_ struct buf out = BUF_INIT(1 << 20);
        size_t cuts[] = {4, FRAME_MAGIC_SIZE + 2, FRAME_MAGIC_SIZE + FRAME_HEADER_SIZE + 3};
        const char *says[] = {"before the remote stream started", "inside a frame header",
                              "inside a hello frame (3 of "};

        agent_stream(&out);
        for (size_t i = 0; i < ELEMENTSOF(cuts); i++) {
                _cleanup_frame_reader_ struct frame_reader r;
                struct frame f;
                struct diag d;

                frame_reader_init(&r, FRAME_SIDE_HOST);
                assert_int_equal(frame_reader_feed(&r, out.data, cuts[i]), 0);
                assert_int_equal(frame_reader_next(&r, &f, &d), 0);
                assert_int_equal(frame_reader_eof(&r, &d), -EPIPE);
                assert_non_null(strstr(d.message, says[i]));
        }
}

static void test_frame_append_limits(void **state)
{
        _cleanup_buf_ struct buf out = BUF_INIT(FRAME_CHUNK_MAX * 2);
        _cleanup_buf_ struct buf tiny = BUF_INIT(8);
        _cleanup_free_ char *big = calloc(1, FRAME_CHUNK_MAX + 1);
        json_t *arr = json_array(), *obj = json_pack("{s:s}", "k", "v");

        assert_non_null(big);
        assert_int_equal(frame_append(&out, 0, "", 0), -EINVAL);
        assert_int_equal(frame_append(&out, FRAME_TYPE_LAST + 1, "", 0), -EINVAL);
        assert_int_equal(frame_append(&out, FRAME_STDOUT, big, FRAME_CHUNK_MAX + 1), -E2BIG);
        assert_int_equal(out.len, 0);
        assert_int_equal(frame_append(&out, FRAME_STDOUT, big, FRAME_CHUNK_MAX), 0);
        assert_int_equal(out.len, FRAME_HEADER_SIZE + FRAME_CHUNK_MAX);
        /* JSON frames carry objects, never output chunks; a full buffer appends nothing. */
        assert_int_equal(frame_append_json(&out, FRAME_CALL, arr), -EINVAL);
        assert_int_equal(frame_append_json(&out, FRAME_STDOUT, obj), -EINVAL);
        assert_int_equal(frame_append_json(&tiny, FRAME_CALL, obj), -E2BIG);
        assert_int_equal(tiny.len, 0);
        assert_string_equal(frame_type_name(FRAME_SIGNAL), "signal");
        assert_string_equal(frame_type_name(99), "unknown");
        json_decref(arr);
        json_decref(obj);
}

static void test_frame_parse_json(void **state)
{
        struct frame ok = {FRAME_CALL, "{\"id\":1}", 8}, arr = {FRAME_EXIT, "[1]", 3};
        struct frame dup = {FRAME_RUN, "{\"a\":1,\"a\":2}", 13}, bad = {FRAME_HELLO, "{", 1};
        struct diag d;
        json_t *v = frame_parse_json(&ok, &d);

        assert_non_null(v);
        assert_int_equal(json_integer_value(json_object_get(v, "id")), 1);
        json_decref(v);
        assert_null(frame_parse_json(&arr, &d));
        assert_non_null(strstr(d.message, "exit frame's JSON is not an object"));
        assert_null(frame_parse_json(&dup, &d));
        assert_null(frame_parse_json(&bad, &d));
        assert_non_null(strstr(d.message, "a hello frame is not JSON"));
}

static void test_frame_reader_fill_from_a_pipe(void **state)
{
        _cleanup_buf_ struct buf out = BUF_INIT(1 << 20);
        _cleanup_frame_reader_ struct frame_reader r;
        int p[2];

        agent_stream(&out);
        assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        frame_reader_init(&r, FRAME_SIDE_HOST);
        assert_int_equal(frame_reader_fill(&r, p[0]), -EAGAIN);
        assert_int_equal(write(p[1], out.data, out.len), (ssize_t) out.len);
        close(p[1]);
        assert_int_equal(frame_reader_fill(&r, p[0]), (ssize_t) out.len);
        assert_int_equal(frame_reader_fill(&r, p[0]), 0);
        close(p[0]);
        expect_frames(&r);
}

/* Checks one SPEC's channel argv (NULL: the SPEC is refused and @says is in the message). */
static void check_spec(const char *spec, const char *const *argv, const char *says)
{
        _cleanup_backend_ struct backend *b = NULL;
        _cleanup_strv_free_ char **got = NULL;
        struct diag d = {};
        int k = backend_parse(spec, &b, &d);

        if (!argv) {
                if (k != -EINVAL)
                        fail_msg("'%s' was accepted", spec);
                if (!strstr(d.message, says))
                        fail_msg("'%s': \"%s\" does not say \"%s\"", spec, d.message, says);
                return;
        }
        if (k != 0)
                fail_msg("'%s' was refused: %s", spec, d.message);
        assert_string_equal(b->spec, spec);
        assert_int_equal(backend_channel_argv(b, &got), 0);
        for (size_t i = 0; argv[i] || got[i]; i++) {
                if (!argv[i] || !got[i] || strcmp(argv[i], got[i]) != 0)
                        fail_msg("'%s': word %zu is '%s', not '%s'", spec, i,
                                 got[i] ? got[i] : "(end)", argv[i] ? argv[i] : "(end)");
        }
}

#define ARGV(...) ((const char *const[]){__VA_ARGS__, NULL})

static void test_backend_channel_commands(void **state)
{
        _cleanup_backend_ struct backend *local = NULL;
        _cleanup_strv_free_ char **none = NULL;
        struct diag d;

        assert_int_equal(backend_parse("local", &local, &d), 0);
        assert_int_equal(local->kind, BACKEND_LOCAL);
        assert_int_equal(backend_channel_argv(local, &none), -EINVAL);

        check_spec("ssh:build1", ARGV("ssh", "-T", "-o", "BatchMode=yes", "--", "build1", "sh"),
                   NULL);
        check_spec("ssh:ci@build1.example.com:2222",
                   ARGV("ssh", "-T", "-o", "BatchMode=yes", "-p", "2222", "-l", "ci", "--",
                        "build1.example.com", "sh"),
                   NULL);
        check_spec("ssh:root@[::1]:22",
                   ARGV("ssh", "-T", "-o", "BatchMode=yes", "-p", "22", "-l", "root", "--", "::1",
                        "sh"),
                   NULL);
        check_spec("ssh:[fe80::1%eth0]",
                   ARGV("ssh", "-T", "-o", "BatchMode=yes", "--", "fe80::1%eth0", "sh"), NULL);
        check_spec("docker:web_1", ARGV("docker", "exec", "-i", "web_1", "sh"), NULL);
        check_spec("podman:3f2a9c", ARGV("podman", "exec", "-i", "3f2a9c", "sh"), NULL);
        check_spec("kubectl:runner-7d9f", ARGV("kubectl", "exec", "-i", "runner-7d9f", "--", "sh"),
                   NULL);
        check_spec("kubectl:ci/runner-7d9f.a:tools",
                   ARGV("kubectl", "exec", "-i", "-n", "ci", "runner-7d9f.a", "-c", "tools", "--",
                        "sh"),
                   NULL);
        check_spec("apptainer:sim", ARGV("apptainer", "exec", "instance://sim", "sh"), NULL);
        check_spec("exec:modal shell sb-123", ARGV("modal", "shell", "sb-123"), NULL);
        check_spec("exec:docker exec -i 'my box' sh -c 'cd /w && exec sh'",
                   ARGV("docker", "exec", "-i", "my box", "sh", "-c", "cd /w && exec sh"), NULL);
}

static void test_backend_bad_specs_say_why(void **state)
{
        check_spec("", NULL, "unknown (allowed: local, ssh:");
        check_spec("ftp:host", NULL, "unknown (allowed:");
        check_spec("ssh:", NULL, "nothing after 'ssh:'");
        check_spec("ssh:-oProxyCommand=x", NULL, "the host must be a name");
        check_spec("ssh:-l@host", NULL, "the user must be");
        check_spec("ssh:host:0", NULL, "port must be a number from 1 to 65535");
        check_spec("ssh:host:65536", NULL, "port must be");
        check_spec("ssh:host:22x", NULL, "port must be");
        check_spec("ssh:[::1", NULL, "IPv6 host is written [ADDRESS]");
        check_spec("ssh:[host]", NULL, "IPv6 host");
        check_spec("ssh:[::1]x", NULL, "only ':PORT'");
        check_spec("ssh:a b", NULL, "the host must be a name");
        check_spec("docker:--privileged", NULL, "the container must be");
        check_spec("docker:a/b", NULL, "the container must be");
        check_spec("apptainer:-x", NULL, "the instance must be");
        check_spec("kubectl:Pod", NULL, "the pod must be");
        check_spec("kubectl:-n/pod", NULL, "the namespace must be");
        check_spec("kubectl:ns/pod:-c", NULL, "the container must be");
        check_spec("kubectl:ns/pod/x", NULL, "the pod must be");
        check_spec("exec:a; b", NULL, "takes one command");
        check_spec("exec:a | b", NULL, "takes one command");
        check_spec("exec:a &", NULL, "takes one command");
        check_spec("exec:a > f", NULL, "no redirection");
        check_spec("exec:ssh $HOST", NULL, "would be expanded");
        check_spec("exec:ls *", NULL, "would be expanded");
        check_spec("exec:A=1 sh", NULL, "would be expanded");
        check_spec("exec:'unterminated", NULL, "does not parse");
        check_spec("exec:-x", NULL, "cannot start with '-'");
        check_spec("exec:   ", NULL, "takes a command");
}

static void test_backend_spec_length_is_capped(void **state)
{
        _cleanup_free_ char *s = malloc(BACKEND_SPEC_MAX + 16);
        struct backend *b = NULL;
        struct diag d;

        assert_non_null(s);
        memcpy(s, "exec:", 5);
        memset(s + 5, 'a', BACKEND_SPEC_MAX + 10);
        s[BACKEND_SPEC_MAX + 15] = 0;
        assert_int_equal(backend_parse(s, &b, &d), -EINVAL);
        assert_null(b);
        assert_non_null(strstr(d.message, "longer than 4096 bytes"));
}

static void test_pool_takes_the_least_loaded_target_under_the_cap(void **state)
{
        char *specs[] = {"exec:a", "exec:b", NULL};
        struct backend_pool *p = NULL;
        const struct backend *got[4];
        size_t slot[4];
        struct diag d;

        assert_int_equal(backend_pool_new(specs, 2, &p, &d), 0);
        for (size_t i = 0; i < 4; i++)
                assert_int_equal(backend_pool_acquire(p, USEC_INFINITY, -1, &got[i], &slot[i]), 0);
        /* a, b, a, b: each time the least loaded; then both are full. */
        assert_string_equal(got[0]->spec, "exec:a");
        assert_string_equal(got[1]->spec, "exec:b");
        assert_string_equal(got[2]->spec, "exec:a");
        assert_string_equal(got[3]->spec, "exec:b");
        {
                const struct backend *b;
                size_t s;

                assert_int_equal(
                        backend_pool_acquire(p, now_usec() + 20 * USEC_PER_MSEC, -1, &b, &s),
                        -ETIMEDOUT);
                backend_pool_release(p, slot[1]);
                assert_int_equal(backend_pool_acquire(p, now_usec(), -1, &b, &s), 0);
                assert_string_equal(b->spec, "exec:b");
                backend_pool_release(p, s);
        }
        for (size_t i = 0; i < 4; i++)
                if (i != 1)
                        backend_pool_release(p, slot[i]);
        backend_pool_free(p);

        assert_int_equal(backend_pool_new((char *[]){"ssh:", NULL}, 1, &p, &d), -EINVAL);
        assert_non_null(strstr(d.message, "nothing after 'ssh:'"));
        assert_int_equal(backend_pool_new((char *[]){NULL}, 1, &p, &d), -EINVAL);
}

struct waiter_arg {
        struct backend_pool *pool;
        int cancel_fd;
        int result;
        const struct backend *got;
        size_t slot;
};

static void *waiter_main(void *arg)
{
        struct waiter_arg *w = arg;

        w->result = backend_pool_acquire(w->pool, USEC_INFINITY, w->cancel_fd, &w->got, &w->slot);
        return NULL;
}

static void test_pool_waiters_get_room_in_turn_or_are_cancelled(void **state)
{
        struct backend_pool *p = NULL;
        struct waiter_arg w[2] = {};
        const struct backend *held;
        pthread_t th[2];
        uint64_t one = 1;
        size_t slot;
        struct diag d;

        assert_int_equal(backend_pool_new((char *[]){"exec:only", NULL}, 1, &p, &d), 0);
        assert_int_equal(backend_pool_acquire(p, USEC_INFINITY, -1, &held, &slot), 0);
        for (size_t i = 0; i < 2; i++) {
                w[i] = (struct waiter_arg){
                        .pool = p, .cancel_fd = eventfd(0, EFD_CLOEXEC), .result = 1};
                assert_true(w[i].cancel_fd >= 0);
                assert_int_equal(pthread_create(&th[i], NULL, waiter_main, &w[i]), 0);
                usleep(20000); /* the first waits before the second */
        }
        /* The first waiter is cancelled; the room given back goes to the second. */
        assert_int_equal(write(w[0].cancel_fd, &one, sizeof(one)), (ssize_t) sizeof(one));
        pthread_join(th[0], NULL);
        assert_int_equal(w[0].result, -ECANCELED);
        assert_int_equal(__atomic_load_n(&w[1].result, __ATOMIC_SEQ_CST), 1);
        backend_pool_release(p, slot);
        pthread_join(th[1], NULL);
        assert_int_equal(w[1].result, 0);
        assert_string_equal(w[1].got->spec, "exec:only");
        backend_pool_release(p, w[1].slot);
        for (size_t i = 0; i < 2; i++)
                close(w[i].cancel_fd);
        backend_pool_free(p);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_frame_round_trip_whole_and_byte_by_byte),
                cmocka_unit_test(test_frame_preamble_is_skipped_and_reported),
                cmocka_unit_test(test_frame_watch_in_the_preamble),
                cmocka_unit_test(test_frame_watch_not_inside_the_stream),
                cmocka_unit_test(test_frame_preamble_is_bounded),
                cmocka_unit_test(test_frame_broken_streams_are_refused),
                cmocka_unit_test(test_frame_cut_streams_say_where),
                cmocka_unit_test(test_frame_append_limits),
                cmocka_unit_test(test_frame_parse_json),
                cmocka_unit_test(test_frame_reader_fill_from_a_pipe),
                cmocka_unit_test(test_backend_channel_commands),
                cmocka_unit_test(test_backend_bad_specs_say_why),
                cmocka_unit_test(test_backend_spec_length_is_capped),
                cmocka_unit_test(test_pool_takes_the_least_loaded_target_under_the_cap),
                cmocka_unit_test(test_pool_waiters_get_room_in_turn_or_are_cancelled),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
