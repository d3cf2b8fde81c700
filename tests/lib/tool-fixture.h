/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The fixture of the tool unit tests: a scratch directory under /tmp as the
 * working directory, a HOME inside it, a small fixed environment and the
 * default config. Include after ptc-test.h.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
