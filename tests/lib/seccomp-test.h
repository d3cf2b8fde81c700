/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What test-seccomp-policy.c (the compiled program, run through a BPF interpreter) and
 * test-seccomp-load.c (the program loaded in forked children) share. Include after
 * ptc-test.h.
 */

#include <linux/seccomp.h>
#include <stdbool.h>
#include <stdint.h>

#include "basic/diag.h"
#include "core/sandbox/seccomp-policy.h"

#define ALLOW SECCOMP_RET_ALLOW
#define ERRNO(e) (SECCOMP_RET_ERRNO | (uint32_t) (e))
#define KILL SECCOMP_RET_KILL_PROCESS

#define X32_SYSCALL_BIT 0x40000000
#define PERSONA_ADDR_NO_RANDOMIZE 0x0040000UL
/* x86_64 numbers newer than the installed headers or libseccomp's table. */
#define NR_FCHMODAT2 452
#define NR_SETXATTRAT 463
#define NR_OPEN_TREE_ATTR 467

static inline void build(bool allow_inet, struct seccomp_program *p)
{
        struct seccomp_policy_opts o = {.allow_inet = allow_inet};
        struct diag d = {{0}};
        int r;

        r = seccomp_policy_build(&o, p, &d);
        if (r < 0)
                fail_msg("seccomp_policy_build: %s (%d)", d.message, r);
        assert_non_null(p->filter);
        assert_true(p->len > 0);
}
