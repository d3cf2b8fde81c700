/* SPDX-License-Identifier: MIT */
/* gumbo's parse on an arena that bounds its CPU time and memory (see html-markdown-internal.h). */

#include "core/web/html-markdown-internal.h"

#include <assert.h>
#include <errno.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- arena allocator for gumbo ---- */

static uint64_t cpu_now_ns(void)
{
        struct timespec ts;

        if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
                return 0;
        return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

void html_arena_release(struct arena *a)
{
        while (a->slabs) {
                struct arena_slab *s = a->slabs;
                a->slabs = s->next;
                free(s);
        }
        while (a->large) {
                struct arena_large *l = a->large;
                a->large = l->next;
                free(l);
        }
        memset(a->free_list, 0, sizeof(a->free_list));
        a->bytes = 0;
}

_noreturn_ static void arena_fail(struct arena *a, int error)
{
        a->error = error;
        longjmp(a->fail, 1);
}

static void *arena_alloc(void *userdata, size_t n)
{
        struct arena *a = userdata;
        unsigned cls = 0;
        uint64_t *h;

        if (++a->ticks % ARENA_CHECK_EVERY == 0 && cpu_now_ns() > a->deadline_ns)
                arena_fail(a, -ETIME);

        while (cls < ARENA_CLASSES && (16u << cls) < n)
                cls++;
        if (cls == ARENA_CLASSES) {
                struct arena_large *l;

                if (n > a->max_bytes - a->bytes)
                        arena_fail(a, -E2BIG);
                l = malloc(sizeof(*l) + n);
                if (!l)
                        arena_fail(a, -ENOMEM);
                a->bytes += n;
                l->size = n;
                l->cls = ARENA_LARGE;
                l->prev = NULL;
                l->next = a->large;
                if (a->large)
                        a->large->prev = l;
                a->large = l;
                return l + 1;
        }
        if (a->free_list[cls]) {
                void *p = a->free_list[cls];
                memcpy(&a->free_list[cls], p, sizeof(void *));
                return p;
        }
        size_t need = 16 + (16u << cls);
        if (!a->slabs || a->slabs->used + need > ARENA_SLAB_SIZE) {
                struct arena_slab *s;

                if (ARENA_SLAB_SIZE > a->max_bytes - a->bytes)
                        arena_fail(a, -E2BIG);
                s = malloc(sizeof(*s) + ARENA_SLAB_SIZE);
                if (!s)
                        arena_fail(a, -ENOMEM);
                a->bytes += ARENA_SLAB_SIZE;
                s->used = 0;
                s->next = a->slabs;
                a->slabs = s;
        }
        h = (uint64_t *) ((char *) (a->slabs + 1) + a->slabs->used);
        a->slabs->used += need;
        h[0] = 0;
        h[1] = cls;
        return h + 2;
}

static void arena_free(void *userdata, void *p)
{
        struct arena *a = userdata;
        uint64_t cls;

        if (!p)
                return;
        cls = ((uint64_t *) p)[-1];
        if (cls == ARENA_LARGE) {
                struct arena_large *l = (struct arena_large *) p - 1;

                if (l->prev)
                        l->prev->next = l->next;
                else
                        a->large = l->next;
                if (l->next)
                        l->next->prev = l->prev;
                a->bytes -= l->size;
                free(l);
                return;
        }
        assert(cls < ARENA_CLASSES);
        memcpy(p, &a->free_list[cls], sizeof(void *));
        a->free_list[cls] = p;
}

/*
 * Parse under the arena's budget. On failure (-ETIME, -E2BIG, -ENOMEM) the
 * caller releases the arena, which frees whatever gumbo had built.
 */
int html_parse_bounded(struct arena *a, const char *html, size_t n, GumboOutput **ret)
{
        GumboOptions opts = kGumboDefaultOptions;

        opts.allocator = arena_alloc;
        opts.deallocator = arena_free;
        opts.userdata = a;
        opts.max_errors = 0; /* parse errors are not wanted: do not build the list */
        a->ticks = 0;
        a->error = 0;
        a->max_bytes = PARSE_MEM_BASE + (n > SIZE_MAX / 64 ? SIZE_MAX / 2 : n * PARSE_MEM_PER_BYTE);
        a->deadline_ns = cpu_now_ns() + PARSE_CPU_BASE_NS + PARSE_CPU_PER_BYTE_NS * n;
        if (setjmp(a->fail) != 0)
                return a->error;
        *ret = gumbo_parse_with_options(&opts, html, n);
        return 0;
}
