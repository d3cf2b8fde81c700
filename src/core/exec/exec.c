/* SPDX-License-Identifier: MIT */
/*
 * One execution end to end (exec.h): what every run shares before its target (exec-run.h) takes
 * over, and the one place that picks the target: a remote backend's (exec-remote*.c) or this
 * machine's (exec-run-local.c).
 */
#include "core/exec/exec.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "basic/strv.h"
#include "core/env/env.h"
#include "core/exec/exec-internal.h"
#include "core/exec/result.h"
#include "core/exec/staging.h"
#include "core/remote/backend.h"

int exec_make_token(char out[65])
{
        unsigned char raw[32];

        if (getrandom(raw, sizeof(raw), 0) != (ssize_t) sizeof(raw))
                return -errno ? -errno : -EIO;
        for (size_t i = 0; i < sizeof(raw); i++)
                snprintf(out + 2 * i, 3, "%02x", raw[i]);
        explicit_wipe(raw, sizeof(raw));
        return 0;
}

int exec_child_env(const struct exec_opts *o, const struct staging *st, const char *token,
                   char ***ret)
{
        _cleanup_strv_free_ char **env = NULL;
        _cleanup_free_ char *pp = NULL;
        const char *inherited;
        int r;

        r = strv_copy(o->base_env, &env);
        if (r < 0)
                return r;
        inherited = env_get(o->base_env, "PYTHONPATH");
        if (inherited && *inherited) {
                if (asprintf(&pp, "%s:%s", st->dir, inherited) < 0)
                        return -ENOMEM;
        } else {
                pp = strdup(st->dir);
                if (!pp)
                        return -ENOMEM;
        }
        if ((r = env_set(&env, "PTC_RPC_SOCKET", st->socket_path)) < 0 ||
            (r = env_set(&env, "PTC_RPC_TOKEN", token)) < 0 ||
            (r = env_set(&env, "PYTHONDONTWRITEBYTECODE", "1")) < 0 ||
            (r = env_set(&env, "PYTHONIOENCODING", "utf-8:backslashreplace")) < 0 ||
            (r = env_set(&env, "PYTHONUTF8", "1")) < 0 || (r = env_set(&env, "PYTHONPATH", pp)) < 0)
                return r;
        /* Someone watches the output live (events): it goes out as it is printed. */
        if (o->events && (r = env_set(&env, "PYTHONUNBUFFERED", "1")) < 0)
                return r;
        *ret = TAKE_PTR(env);
        return 0;
}

static bool code_is_blank(const char *code, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (!isspace((unsigned char) code[i]))
                        return false;
        return true;
}

int exec_run(const struct exec_opts *o, json_t **ret, enum exec_status *ret_status,
             struct diag *reterr)
{
        if (!o->code || code_is_blank(o->code, o->code_len)) {
                struct result_input in = {
                        .status = EXEC_ERROR,
                        .stdout_text = "",
                        .error = "No code provided.",
                };
                *ret = result_build(&in);
                *ret_status = EXEC_ERROR;
                return *ret ? 0 : -ENOMEM;
        }
        if (o->backend && o->backend->kind != BACKEND_LOCAL)
                return exec_run_remote(o, ret, ret_status, reterr);
        return exec_run_local(o, ret, ret_status, reterr);
}
