/* SPDX-License-Identifier: MIT */
#include "../lib/ptc-test.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "core/sandbox/sandbox.h"
#include "core/sandbox/seccomp-policy.h"

/*
 * The parts of the sandbox that need no kernel feature. What the sandbox does is driven
 * through the real binary in tests/integration/test_isolation.py.
 */

#define LL (1u << SANDBOX_LAYER_LANDLOCK)
#define SC (1u << SANDBOX_LAYER_SECCOMP)

static void test_kernel_missing(void **state)
{
        char why[_SANDBOX_LAYER_MAX][256] = {};
        unsigned sc = seccomp_is_available() ? 0 : SC;

        assert_int_equal(sandbox_kernel_missing(7, why), sc);
        assert_int_equal(sandbox_kernel_missing(1, why), sc);
        assert_int_equal(sandbox_kernel_missing(-EOPNOTSUPP, why), LL | sc);
        assert_string_equal(why[SANDBOX_LAYER_LANDLOCK], "disabled at boot (add landlock to lsm=)");
        assert_int_equal(sandbox_kernel_missing(-ENOSYS, why), LL | sc);
        assert_string_equal(why[SANDBOX_LAYER_LANDLOCK], "not in this kernel");
        assert_int_equal(sandbox_kernel_missing(-EPERM, why), LL | sc);
        assert_string_equal(why[SANDBOX_LAYER_LANDLOCK], strerror(EPERM));
        assert_int_equal(sandbox_kernel_missing(0, why), LL | sc); /* no ABI is no Landlock */
        if (sc)
                assert_string_equal(why[SANDBOX_LAYER_SECCOMP],
                                    "seccomp filters are not available");
}

static void test_env(void **state)
{
        char *envp[] = {"PATH=/usr/bin", "HOME=/work/p/home", "TMPDIR=/var/tmp", "X=1", NULL};
        char *outside[] = {"HOME=/root", "X=1", NULL};
        char **env = NULL;

        /* HOME inside the working dir stays; TMPDIR is /tmp inside. */
        assert_int_equal(sandbox_env(envp, "/work/p", &env), 0);
        assert_string_equal(env[0], "PATH=/usr/bin");
        assert_string_equal(env[1], "HOME=/work/p/home");
        assert_string_equal(env[2], "X=1");
        assert_string_equal(env[3], "TMPDIR=/tmp");
        assert_null(env[4]);
        free(env);
        /* HOME outside (or a look-alike prefix) is /tmp. */
        assert_int_equal(sandbox_env(outside, "/ro", &env), 0);
        assert_string_equal(env[0], "X=1");
        assert_string_equal(env[1], "TMPDIR=/tmp");
        assert_string_equal(env[2], "HOME=/tmp");
        assert_null(env[3]);
        free(env);
        assert_int_equal(sandbox_env(envp, "/work/pp", &env), 0);
        assert_string_equal(env[3], "HOME=/tmp");
        free(env);
}

static void test_limits_for(void **state)
{
        struct sandbox_limits l = sandbox_limits_for(512, 64, 4096, 70);

        assert_int_equal(l.data_bytes, 512ull << 20);
        assert_int_equal(l.pids, 64);
        assert_int_equal(l.nofile, 4096);
        assert_int_equal(l.cpu_seconds, 70);
        assert_int_equal(l.tmp_bytes, 128ull << 20);
        assert_int_equal(sandbox_limits_for(32, 1, 1, 1).tmp_bytes, 16ull << 20); /* floor */
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_kernel_missing),
                cmocka_unit_test(test_env),
                cmocka_unit_test(test_limits_for),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
