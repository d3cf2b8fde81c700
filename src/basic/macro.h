/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Small language helpers used everywhere: cleanup attributes, ownership
 * transfer, array sizes and attribute shorthands. libc only.
 */

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _must_check_ __attribute__((warn_unused_result))
#define _noreturn_ __attribute__((noreturn))
/*
 * Code that runs on a stack ASan does not know (a CLONE_VM child's): ASan would warn, into
 * the child's stderr, at each call of a noreturn function there. gcc and clang both know
 * the attribute; without a sanitizer it does nothing.
 */
#define _no_sanitize_address_ __attribute__((no_sanitize_address))
#define _likely_(x) __builtin_expect(!!(x), 1)
#define _unlikely_(x) __builtin_expect(!!(x), 0)

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

/*
 * MIN and MAX evaluate each argument once, as a function would: MAX(m, scan(...)) calls
 * scan() once (with the plain ternary a recursive walk inside MAX doubled at every level).
 * The locals get names of their own per use (__COUNTER__), so MAX(MAX(a, b), c) shadows
 * nothing. Not for constant expressions (array sizes, initializers), where a statement
 * expression is not allowed: those write the comparison out.
 */
#define MACRO_CONCAT_(a, b) a##b
#define MACRO_CONCAT(a, b) MACRO_CONCAT_(a, b)
#define MACRO_UNIQ(name, uniq) MACRO_CONCAT(uniq_##name##_, uniq)
#define MIN_(ua, a, ub, b)                                                                     \
        __extension__({                                                                        \
                const __typeof__(a) MACRO_UNIQ(A, ua) = (a);                                   \
                const __typeof__(b) MACRO_UNIQ(B, ub) = (b);                                   \
                MACRO_UNIQ(A, ua) < MACRO_UNIQ(B, ub) ? MACRO_UNIQ(A, ua) : MACRO_UNIQ(B, ub); \
        })
#define MAX_(ua, a, ub, b)                                                                     \
        __extension__({                                                                        \
                const __typeof__(a) MACRO_UNIQ(A, ua) = (a);                                   \
                const __typeof__(b) MACRO_UNIQ(B, ub) = (b);                                   \
                MACRO_UNIQ(A, ua) > MACRO_UNIQ(B, ub) ? MACRO_UNIQ(A, ua) : MACRO_UNIQ(B, ub); \
        })
#define MIN(a, b) MIN_(__COUNTER__, (a), __COUNTER__, (b))
#define MAX(a, b) MAX_(__COUNTER__, (a), __COUNTER__, (b))

/* Take ownership of a pointer: returns it and leaves NULL behind. */
#define TAKE_PTR(p)                  \
        ({                           \
                typeof(p) _p_ = (p); \
                (p) = NULL;          \
                _p_;                 \
        })

/* Take ownership of a file descriptor: returns it and leaves -EBADF behind. */
#define TAKE_FD(fd)              \
        ({                       \
                int _fd_ = (fd); \
                (fd) = -EBADF;   \
                _fd_;            \
        })

/*
 * Cleanup functions, generated (as systemd's DEFINE_TRIVIAL_CLEANUP_FUNC): each defines
 * `static inline void <func>p(<type> *p)` for use as _cleanup_(<func>p), or behind a
 * _cleanup_<name>_ macro next to it. Write one by hand only when it does more than call @func.
 *
 * DEFINE_TRIVIAL_CLEANUP_FUNC(type, func): func(*p) unless *p is NULL (closedir, curl_free).
 * DEFINE_TRIVIAL_CLEANUP_FUNC_RESET(type, func): *p = func(*p), for a NULL-safe free that
 *   returns what to leave behind (x = x_free(x) returning NULL).
 * DEFINE_TRIVIAL_CLEANUP_FUNC_REF(type, func): func(p), for a struct released in place
 *   (buf_release(&b)); the cleanup function is named <func>p as well.
 */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func) \
        static inline void func##p(type *p)     \
        {                                       \
                if (*p)                         \
                        func(*p);               \
        }
#define DEFINE_TRIVIAL_CLEANUP_FUNC_RESET(type, func) \
        static inline void func##p(type *p)           \
        {                                             \
                *p = func(*p);                        \
        }
#define DEFINE_TRIVIAL_CLEANUP_FUNC_REF(type, func) \
        static inline void func##p(type *p)         \
        {                                           \
                func(p);                            \
        }

/* By hand: free() takes any pointer, so p is a void * here. */
static inline void freep(void *p)
{
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

/* Close @fd if it is valid, keeping errno; always returns -EBADF. */
static inline int safe_close(int fd)
{
        if (fd >= 0) {
                int saved = errno;
                (void) close(fd);
                errno = saved;
        }
        return -EBADF;
}

static inline void closep(int *fd)
{
        *fd = safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

/* Zero memory in a way the compiler may not optimize away (for secrets). */
static inline void explicit_wipe(void *p, size_t n)
{
        volatile unsigned char *v = p;
        while (n--)
                *v++ = 0;
}

/* explicit_wipe() @n bytes at @p, then free(p); NULL is fine. */
static inline void free_wiped(void *p, size_t n)
{
        if (!p)
                return;
        explicit_wipe(p, n);
        free(p);
}

#include "basic/banned.h"

/* free() and return NULL, for p = mfree_str(p). */
static inline char *mfree_str(char *p)
{
        free(p);
        return NULL;
}
