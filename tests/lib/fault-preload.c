/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD shim for integration tests (tests/integration/test_redact_fail_closed.py):
 * with PTC_TEST_FAIL_MATCH_DATA=1 in the environment, every pcre2_match_data_create_8()
 * of the process returns NULL, exactly what PCRE2 returns when its allocation fails.
 * ptc creates match data for each pattern-based redaction (execute_code output, the
 * spill file, the --log previews), so those redactions fail with -ENOMEM as under real
 * memory pressure, through the real binary. Without the variable the shim passes through.
 *
 * The constructor takes LD_PRELOAD and the variable out of the environment, so the
 * script and every other child start without the shim.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

static bool fail_match_data;

__attribute__((constructor)) static void fault_preload_init(void)
{
        const char *v = getenv("PTC_TEST_FAIL_MATCH_DATA");

        fail_match_data = v && strcmp(v, "1") == 0;
        unsetenv("PTC_TEST_FAIL_MATCH_DATA");
        unsetenv("LD_PRELOAD");
}

__attribute__((visibility("default"))) pcre2_match_data *
pcre2_match_data_create_8(uint32_t pairs, pcre2_general_context *gc)
{
        static pcre2_match_data *(*real)(uint32_t, pcre2_general_context *);

        if (fail_match_data)
                return NULL;
        if (!real)
                real = (pcre2_match_data * (*) (uint32_t, pcre2_general_context *) )
                        dlsym(RTLD_NEXT, "pcre2_match_data_create_8");
        return real ? real(pairs, gc) : NULL;
}
