/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The fixture of the tool unit tests: a scratch directory under /tmp as the
 * working directory, a HOME inside it, a small fixed environment and the
 * default config; and the helpers every tool test needs (files in the scratch
 * directory, the members of a tool's result). Include after ptc-test.h.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "basic/fd-util.h"
#include "basic/macro.h"
#include "basic/path-util.h"
#include "basic/time-util.h"
#include "core/config/config.h"
#include "core/tools/tool.h"

struct tool_fixture {
        char dir[64];
        char home[128];
        char home_env[160];
        char *env[5];
        struct ptc_config config;
        struct tool_ctx ctx;
};

/*
 * Make the fixture for a test of @name into *state; @python is the
 * interpreter for the .py lint (NULL: lint reports "skipped"). 0 or -1.
 */
static inline int tool_fixture_setup(void **state, const char *name, const char *python)
{
        struct tool_fixture *f = calloc(1, sizeof(*f));

        if (!f)
                return -1;
        *state = f;
        (void) snprintf(f->dir, sizeof(f->dir), "/tmp/ptc-test-%s-XXXXXX", name);
        if (!mkdtemp(f->dir))
                return -1;
        (void) snprintf(f->home, sizeof(f->home), "%s/home", f->dir);
        if (mkdir(f->home, 0700) < 0)
                return -1;
        (void) snprintf(f->home_env, sizeof(f->home_env), "HOME=%s", f->home);
        f->env[0] = f->home_env;
        f->env[1] = (char *) "PATH=/usr/bin:/bin";
        f->env[2] = (char *) "FOO_TEST=bar";
        f->env[3] = (char *) "LANG=C.UTF-8";
        f->env[4] = NULL;
        if (config_init(&f->config) < 0)
                return -1;
        f->ctx = (struct tool_ctx){
                .config = &f->config,
                .cwd = f->dir,
                .env = f->env,
                .deadline = USEC_INFINITY,
                .cancel_fd = -1,
                .python = python && access(python, X_OK) == 0 ? python : NULL,
        };
        return 0;
}

static inline int tool_fixture_teardown(void **state)
{
        struct tool_fixture *f = *state;

        if (!f)
                return 0;
        if (f->dir[0] && !strstr(f->dir, "XXXXXX"))
                (void) rm_rf(f->dir);
        config_release(&f->config);
        free(f);
        return 0;
}

/* Write @content to @name (relative to the scratch directory, mode 0644), replacing it. */
static inline void fixture_write(struct tool_fixture *f, const char *name, const char *content)
{
        _cleanup_free_ char *p = path_join(f->dir, name);

        assert_non_null(p);
        assert_int_equal(write_file_atomic(p, content, strlen(content), 0644), 0);
}

/* The content of @name (relative to the scratch directory), or NULL when it does not exist. */
static inline char *fixture_read(struct tool_fixture *f, const char *name)
{
        _cleanup_free_ char *p = path_join(f->dir, name);
        char *s = NULL;
        int r;

        assert_non_null(p);
        r = read_file_at(AT_FDCWD, p, 64 * 1024 * 1024, &s, NULL);
        if (r == -ENOENT)
                return NULL;
        assert_int_equal(r, 0);
        return s;
}

/* The string member @key of a tool result; the test fails, showing @o, when there is none. */
static inline const char *result_str(json_t *o, const char *key)
{
        json_t *v = json_object_get(o, key);

        if (!json_is_string(v))
                fail_msg("no string '%s' in %s", key, json_dumps(o, 0));
        return json_string_value(v);
}

/* The test fails, showing @res, unless it is {"success": true, ...}. */
static inline void assert_tool_success(json_t *res)
{
        if (!json_is_true(json_object_get(res, "success")))
                fail_msg("not a success: %s", json_dumps(res, 0));
}

/* The test fails unless @res is {"success": false, "error": @error, ...}. */
static inline void assert_tool_failure(json_t *res, const char *error)
{
        if (!json_is_false(json_object_get(res, "success")))
                fail_msg("not a failure: %s", json_dumps(res, 0));
        assert_string_equal(result_str(res, "error"), error);
}
