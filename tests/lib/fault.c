/* SPDX-License-Identifier: MIT */
/* Counted failures for the wrapped allocators and pcre2_match() (fault.h). */
#include "fault.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
int __real_pcre2_match_8(const pcre2_code *code, PCRE2_SPTR s, PCRE2_SIZE n, PCRE2_SIZE pos,
                         uint32_t opts, pcre2_match_data *md, pcre2_match_context *mctx);

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
int __wrap_pcre2_match_8(const pcre2_code *code, PCRE2_SPTR s, PCRE2_SIZE n, PCRE2_SIZE pos,
                         uint32_t opts, pcre2_match_data *md, pcre2_match_context *mctx);

static atomic_ulong alloc_left, match_left;
static atomic_size_t alloc_min;
static atomic_bool alloc_fired, match_fired;
static atomic_int match_rc;

void fault_alloc_arm(unsigned long nth, size_t min_size)
{
        /* Disarming keeps the answer of fault_alloc_fired() for the test to read. */
        if (nth > 0)
                atomic_store(&alloc_fired, false);
        atomic_store(&alloc_min, min_size);
        atomic_store(&alloc_left, nth);
}

bool fault_alloc_fired(void)
{
        return atomic_load(&alloc_fired);
}

void fault_match_arm(unsigned long nth, int rc)
{
        if (nth > 0)
                atomic_store(&match_fired, false);
        atomic_store(&match_rc, rc);
        atomic_store(&match_left, nth);
}

bool fault_match_fired(void)
{
        return atomic_load(&match_fired);
}

/* Counts one event against @left (none while disarmed); true for the one that must fail. */
static bool take(atomic_ulong *left, atomic_bool *fired)
{
        unsigned long cur = atomic_load(left);

        while (cur > 0)
                if (atomic_compare_exchange_weak(left, &cur, cur - 1)) {
                        if (cur != 1)
                                return false;
                        atomic_store(fired, true);
                        return true;
                }
        return false;
}

static bool alloc_fails(size_t n)
{
        return n >= atomic_load(&alloc_min) && take(&alloc_left, &alloc_fired);
}

void *__wrap_malloc(size_t n)
{
        if (alloc_fails(n)) {
                errno = ENOMEM;
                return NULL;
        }
        return __real_malloc(n);
}

void *__wrap_calloc(size_t k, size_t n)
{
        if (alloc_fails(k * n)) {
                errno = ENOMEM;
                return NULL;
        }
        return __real_calloc(k, n);
}

void *__wrap_realloc(void *p, size_t n)
{
        if (alloc_fails(n)) {
                errno = ENOMEM;
                return NULL;
        }
        return __real_realloc(p, n);
}

int __wrap_pcre2_match_8(const pcre2_code *code, PCRE2_SPTR s, PCRE2_SIZE n, PCRE2_SIZE pos,
                         uint32_t opts, pcre2_match_data *md, pcre2_match_context *mctx)
{
        if (take(&match_left, &match_fired))
                return atomic_load(&match_rc);
        return __real_pcre2_match_8(code, s, n, pos, opts, md, mctx);
}
