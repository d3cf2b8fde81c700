/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The fixture of the dispatch unit tests (test-registry, test-rpc): fake tools
 * that echo, crash or leak a secret, a registry of the caller's fake tools, a
 * redactor that knows the secret, and the tool_ctx of a call. Include after
 * ptc-test.h.
 */

#include <errno.h>
#include <stdlib.h>

#include <jansson.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "core/output/redact.h"
#include "core/registry/registry-internal.h"
#include "core/registry/registry.h"
#include "core/tools/tool.h"

/* The secret the redactor knows; secret_run() puts it in its result three ways. */
#define SECRET "s3cr3t-VALUE-4242"

/* {"args": <the arguments>} */
static inline int echo_run(const struct tool *t, const struct tool_ctx *ctx, json_t *args,
                           json_t **ret)
{
        *ret = json_pack("{s:O}", "args", args);
        return *ret ? 0 : -ENOMEM;
}

/* A tool's own failure: a negative errno. */
static inline int crash_run(const struct tool *t, const struct tool_ctx *ctx, json_t *args,
                            json_t **ret)
{
        return -EIO;
}

/* The secret in a string, a list and a nested object. */
static inline int secret_run(const struct tool *t, const struct tool_ctx *ctx, json_t *args,
                             json_t **ret)
{
        *ret = json_pack("{s:s, s:[s], s:{s:s}}", "text", "the key is " SECRET " here", "list",
                         SECRET, "nested", "k", "prefix-" SECRET);
        return *ret ? 0 : -ENOMEM;
}

static const struct tool_def def_echo = {.name = "echo", .run = echo_run};
static const struct tool_def def_crash = {.name = "crash", .run = crash_run};
static const struct tool_def def_secret = {.name = "secret", .run = secret_run};

struct registry_fixture {
        struct registry *registry;
        struct redactor *redactor;
        struct tool_ctx ctx; /* cwd, no deadline, no cancel fd, the redactor */
};

/* The registry of @defs, the redactor of SECRET, a call's ctx in @cwd. 0, or -1 (cmocka's). */
static inline int registry_fixture_init(struct registry_fixture *f,
                                        const struct tool_def *const *defs, size_t n,
                                        const char *cwd)
{
        if (registry_new_from_defs(defs, n, NULL, &f->registry, NULL, NULL) < 0)
                return -1;
        if (redactor_new(&f->redactor) < 0 || redactor_add_secret(f->redactor, SECRET) < 0)
                return -1;
        f->ctx = (struct tool_ctx){
                .cwd = cwd,
                .deadline = USEC_INFINITY,
                .cancel_fd = -1,
                .redactor = f->redactor,
        };
        return 0;
}

static inline void registry_fixture_release(struct registry_fixture *f)
{
        f->registry = registry_free(f->registry);
        f->redactor = redactor_free(f->redactor);
}
