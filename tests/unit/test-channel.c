/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/ptc-test.h"

#include "basic/buf.h"
#include "basic/diag.h"
#include "basic/fd-util.h"
#include "core/channel/channel.h"
#include "core/remote/backend.h"

extern char **environ;

/* A hang guard, far above what a shell takes to answer. */
#define GUARD_MS 20000

/* A channel of the backend @spec, started. */
static void start(struct remote_channel *c, const char *spec, struct backend **ret)
{
        struct diag d;

        remote_channel_init(c);
        assert_int_equal(backend_parse(spec, ret, &d), 0);
        assert_int_equal(remote_channel_start(c, *ret, environ, NULL, &d), 0);
        assert_true(c->pid > 0);
        assert_true(c->pidfd >= 0);
}

/* Everything on @fd (non-blocking) up to its end of file, at most @cap bytes. */
static size_t read_all(int fd, char *out, size_t cap)
{
        size_t len = 0;

        for (;;) {
                struct pollfd p = {.fd = fd, .events = POLLIN};
                ssize_t n;

                assert_int_equal(poll(&p, 1, GUARD_MS), 1);
                n = read(fd, out + len, cap - len);
                if (n < 0 && errno == EAGAIN)
                        continue;
                assert_true(n >= 0);
                if (n == 0 || (len += (size_t) n) == cap)
                        return len;
        }
}

/* The stderr up to its end: its start kept by the channel. */
static void drain_err(struct remote_channel *c)
{
        for (;;) {
                struct pollfd p = {.fd = c->err_fd, .events = POLLIN};
                int k;

                assert_int_equal(poll(&p, 1, GUARD_MS), 1);
                k = remote_channel_read_err(c);
                if (k == 0)
                        return;
                assert_true(k == 1 || k == -EAGAIN);
        }
}

static void finish(struct remote_channel *c, struct backend *b)
{
        remote_channel_close(c);
        assert_true(c->pid < 0 || c->reaped);
        assert_true(c->out_fd < 0 && c->err_fd < 0 && c->pidfd < 0 && c->in_fd < 0);
        remote_channel_done(c);
        backend_free(b);
}

static void test_channel_carries_bytes_and_keeps_stderr(void **state)
{
        struct remote_channel c;
        struct backend *b = NULL;
        static const char cmd[] = "echo out; echo 'Permission denied' >&2; exit 3\n";
        char out[256];
        size_t n;

        start(&c, "exec:sh", &b);
        assert_int_equal(remote_channel_send(&c, cmd, strlen(cmd)), 0);
        remote_channel_close_input(&c);
        /* Closed: nothing more goes, and it says so. */
        assert_int_equal(remote_channel_send(&c, "x", 1), -EPIPE);
        n = read_all(c.out_fd, out, sizeof(out));
        assert_int_equal(n, 4);
        assert_memory_equal(out, "out\n", 4);
        drain_err(&c);
        assert_int_equal(c.err_len, strlen("Permission denied\n"));
        assert_memory_equal(c.err_head, "Permission denied\n", c.err_len);
        finish(&c, b);
}

static void test_channel_keeps_only_the_start_of_stderr(void **state)
{
        struct remote_channel c;
        struct backend *b = NULL;
        static const char cmd[] = "i=0; while [ $i -lt 100 ]; do "
                                  "echo 0123456789012345678901234567890123456789 >&2; "
                                  "i=$((i+1)); done; exit 0\n";

        start(&c, "exec:sh", &b);
        assert_int_equal(remote_channel_send(&c, cmd, strlen(cmd)), 0);
        remote_channel_close_input(&c);
        drain_err(&c);
        assert_int_equal(c.err_len, CHANNEL_ERR_KEEP);
        assert_memory_equal(c.err_head, "0123456789", 10);
        finish(&c, b);
}

static void test_channel_start_says_why(void **state)
{
        struct remote_channel c;
        struct backend *b = NULL;
        struct diag d;

        remote_channel_init(&c);
        assert_int_equal(backend_parse("exec:ptc-no-such-channel-command", &b, &d), 0);
        assert_int_equal(remote_channel_start(&c, b, environ, NULL, &d), -ENOENT);
        assert_string_equal(d.message, "backend 'exec:ptc-no-such-channel-command': "
                                       "'ptc-no-such-channel-command' is not installed (not "
                                       "found on PATH)");
        assert_true(c.pid < 0);
        finish(&c, b);
}

/* Without an agent to ship, the shell is told to exec the ptc on its PATH: those bytes only. */
static void test_channel_bootstrap_execs_ptc_agent(void **state)
{
        struct remote_channel c;
        struct backend *b = NULL;
        struct diag d;
        char out[256];
        size_t n;

        start(&c, "exec:cat", &b);
        assert_int_equal(remote_channel_bootstrap(&c, &d), 0);
        assert_false(remote_channel_wants_agent(&c));
        remote_channel_close_input(&c);
        n = read_all(c.out_fd, out, sizeof(out));
        assert_int_equal(n, strlen("exec ptc agent\n"));
        assert_memory_equal(out, "exec ptc agent\n", n);
        finish(&c, b);
}

/* With one, the shell is told how to take it, and then gets exactly its bytes. */
static void test_channel_ships_the_agent(void **state)
{
        struct remote_channel c;
        struct backend *b = NULL;
        struct diag d;
        char path[] = "/tmp/ptc-test-agent-XXXXXX";
        static const char agent[] = "\177ELF not really an agent\n";
        char out[4096], want[128];
        int fd;
        size_t n;
        const char *tail;

        fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, agent, strlen(agent)), (ssize_t) strlen(agent));
        close(fd);

        start(&c, "exec:cat", &b);
        c.agent_path = strdup(path);
        assert_non_null(c.agent_path);
        memset(c.agent_hash, 'a', 64);
        c.agent_hash[64] = '\0';
        c.agent_size = strlen(agent);
        assert_int_equal(remote_channel_bootstrap(&c, &d), 0);
        /* The shell has not asked yet (the reader has seen no marker). */
        assert_false(remote_channel_wants_agent(&c));
        assert_int_equal(remote_channel_ship_agent(&c, &d), 0);
        assert_true(c.agent_sent);
        assert_false(remote_channel_wants_agent(&c));
        remote_channel_close_input(&c);
        n = read_all(c.out_fd, out, sizeof(out) - 1);
        out[n] = '\0';
        snprintf(want, sizeof(want), "/ptc/agent-%s\"; ", c.agent_hash);
        assert_non_null(strstr(out, want));
        snprintf(want, sizeof(want), "echo ptc-send\"\"-agent && head -c %zu > ", strlen(agent));
        assert_non_null(strstr(out, want));
        tail = out + n - strlen(agent);
        assert_memory_equal(tail, agent, strlen(agent));
        assert_memory_equal(tail - strlen(" agent\n"), " agent\n", strlen(" agent\n"));
        finish(&c, b);

        /* An agent that went away says which and why. */
        start(&c, "exec:cat", &b);
        c.agent_path = strdup(path);
        c.agent_size = strlen(agent);
        unlink(path);
        assert_int_equal(remote_channel_ship_agent(&c, &d), -ENOENT);
        assert_non_null(strstr(d.message, "cannot read the agent to ship, /tmp/ptc-test-agent-"));
        assert_non_null(strstr(d.message, ": No such file or directory"));
        finish(&c, b);
}

/* A channel whose command ignores its stdin's end is killed, with its whole session. */
static void test_channel_kill_ends_its_session(void **state)
{
        struct remote_channel c;
        struct backend *b = NULL;
        static const char cmd[] = "trap '' INT TERM HUP; sleep 1000 & sleep 1000\n";
        struct pollfd p;

        start(&c, "exec:sh", &b);
        assert_int_equal(remote_channel_send(&c, cmd, strlen(cmd)), 0);
        remote_channel_kill(&c);
        p = (struct pollfd){.fd = c.pidfd, .events = POLLIN};
        assert_int_equal(poll(&p, 1, GUARD_MS), 1);
        /* Its background sleep held the pipes too: they close once it is gone. */
        remote_channel_reaped(&c);
        assert_true(c.reaped);
        p = (struct pollfd){.fd = c.out_fd, .events = POLLIN};
        assert_int_equal(poll(&p, 1, GUARD_MS), 1);
        finish(&c, b);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_channel_carries_bytes_and_keeps_stderr),
                cmocka_unit_test(test_channel_keeps_only_the_start_of_stderr),
                cmocka_unit_test(test_channel_start_says_why),
                cmocka_unit_test(test_channel_bootstrap_execs_ptc_agent),
                cmocka_unit_test(test_channel_ships_the_agent),
                cmocka_unit_test(test_channel_kill_ends_its_session),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
