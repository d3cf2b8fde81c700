/* SPDX-License-Identifier: MIT */
#include "../lib/ptc-test.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "core/spawn/fork-call.h"

static int write_text(int fd, void *userdata)
{
        const char *s = userdata;

        return write_all(fd, s, strlen(s)) < 0 ? -EPIPE : 0;
}

static int crash(int fd, void *userdata)
{
        (void) !write(fd, "partial", 7);
        abort();
}

static int fail_enomem(int fd, void *userdata)
{
        return -ENOMEM;
}

static int sleep_long(int fd, void *userdata)
{
        (void) sleep(30);
        return 0;
}

static void test_fork_call_returns_what_the_copy_wrote(void **state)
{
        _cleanup_free_ char *out = NULL;
        size_t len = 0;
        int sig = 0;

        assert_int_equal(fork_call(write_text, (void *) "hello, copy", 64, USEC_INFINITY, -1, &out,
                                   &len, &sig),
                         0);
        assert_int_equal(len, 11);
        assert_string_equal(out, "hello, copy");
}

static void test_fork_call_survives_a_crash(void **state)
{
        char *out = NULL;
        size_t len = 0;
        int sig = 0;

        /* An abort in the copy (what gumbo's assertions do) ends the copy, not us. */
        assert_int_equal(fork_call(crash, NULL, 64, USEC_INFINITY, -1, &out, &len, &sig), -ECHILD);
        assert_int_equal(sig, SIGABRT);
        assert_null(out);
}

static void test_fork_call_passes_the_copys_error(void **state)
{
        char *out = NULL;
        size_t len = 0;

        assert_int_equal(fork_call(fail_enomem, NULL, 64, USEC_INFINITY, -1, &out, &len, NULL),
                         -ENOMEM);
        assert_null(out);
}

static void test_fork_call_caps_the_output(void **state)
{
        char *out = NULL;
        size_t len = 0;

        assert_int_equal(fork_call(write_text, (void *) "more than eight", 8, USEC_INFINITY, -1,
                                   &out, &len, NULL),
                         -E2BIG);
        assert_null(out);
}

static void test_fork_call_deadline_and_cancel(void **state)
{
        _cleanup_close_ int efd = eventfd(0, EFD_CLOEXEC);
        uint64_t one = 1;
        usec_t t0 = now_usec();
        char *out = NULL;
        size_t len = 0;

        assert_int_equal(fork_call(sleep_long, NULL, 64, now_usec() + 200 * USEC_PER_MSEC, -1, &out,
                                   &len, NULL),
                         -ETIMEDOUT);
        assert_true(now_usec() - t0 < 10 * USEC_PER_SEC); /* hang guard */
        assert_true(efd >= 0);
        assert_int_equal(write(efd, &one, sizeof(one)), sizeof(one));
        t0 = now_usec();
        assert_int_equal(fork_call(sleep_long, NULL, 64, USEC_INFINITY, efd, &out, &len, NULL),
                         -ECANCELED);
        assert_true(now_usec() - t0 < 10 * USEC_PER_SEC); /* hang guard */
        assert_null(out);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fork_call_returns_what_the_copy_wrote),
                cmocka_unit_test(test_fork_call_survives_a_crash),
                cmocka_unit_test(test_fork_call_passes_the_copys_error),
                cmocka_unit_test(test_fork_call_caps_the_output),
                cmocka_unit_test(test_fork_call_deadline_and_cancel),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
