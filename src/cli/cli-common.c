/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include <jansson.h>

#include "basic/diag.h"
#include "basic/log.h"
#include "basic/strv.h"
#include "cli/cli.h"
#include "core/env/env.h"
#include "core/output/redact.h"
#include "core/registry/registry.h"
#include "core/web/web-keys.h"

extern char **environ;

int cli_load_config(const char *path, struct ptc_config *c)
{
        _cleanup_free_ char *def = NULL;
        struct diag d = {};
        int r;

        r = config_init(c);
        if (r < 0)
                return log_error_errno(r, "out of memory");
        if (!path) {
                r = config_default_path(&def);
                if (r < 0)
                        return log_error_errno(r, "out of memory");
        }
        r = config_load_file(c, path ? path : def, path != NULL, &d);
        if (r == -ENOENT && path) {
                log_error("config file '%s' not found", path);
                return -EINVAL;
        }
        if (r < 0) {
                log_error("%s", d.message[0] ? d.message : strerror(-r));
                return -EINVAL;
        }
        return 0;
}

int cli_parse_tools(const char *list, char ***ret)
{
        _cleanup_strv_free_ char **l = NULL;
        int r;

        r = strv_split(list, ", \t", &l);
        if (r < 0)
                return log_error_errno(r, "out of memory");
        *ret = TAKE_PTR(l);
        return 0;
}

int cli_build_registry(const struct ptc_config *c, char *const *tools, struct registry **ret)
{
        _cleanup_strv_free_ char **warnings = NULL;
        struct diag d = {};
        int r;

        r = registry_new(c, tools ? tools : c->tools, ret, &warnings, &d);
        if (r < 0) {
                log_error("%s", d.message[0] ? d.message : strerror(-r));
                return -EINVAL;
        }
        for (char **w = warnings; w && *w; w++)
                log_warning("%s", *w);
        return 0;
}

int cli_prepare_secrets(const struct ptc_config *c, struct redactor **ret_redactor,
                        char ***ret_base_env)
{
        _cleanup_redactor_ struct redactor *red = NULL;
        char **kept = NULL;
        int r;

        r = redactor_new(&red);
        if (r < 0)
                return log_error_errno(r, "cannot set up redaction: %m");
        r = env_take_secrets(c->env_passthrough, red, &kept);
        if (r < 0)
                return log_error_errno(r, "cannot scrub the environment: %m");
        /* The web providers' keys are the only secrets ptc itself needs later on. */
        r = web_keys_take(kept);
        strv_free_wipe(kept);
        if (r < 0)
                return log_error_errno(r, "out of memory");
        /*
         * Non-dumpable: another process of this user cannot ptrace us or read
         * /proc/<ptc>/mem or environ, where a secret could still be found.
         */
        (void) prctl(PR_SET_DUMPABLE, 0);
        r = env_build_child(environ, c->env_passthrough, ret_base_env);
        if (r < 0)
                return log_error_errno(r, "out of memory");
        *ret_redactor = TAKE_PTR(red);
        return 0;
}

int cli_print_json(json_t *v, bool pretty)
{
        size_t flags = JSON_REAL_PRECISION(15) | (pretty ? JSON_INDENT(2) : JSON_COMPACT);
        _cleanup_free_ char *s = json_dumps(v, flags);

        if (!s)
                return log_error_errno(-ENOMEM, "cannot serialize the result");
        if (fputs(s, stdout) < 0 || fputc('\n', stdout) < 0 || fflush(stdout) != 0)
                return log_error_errno(-errno, "cannot write the result: %m");
        return 0;
}

int cli_bad_option(char **argv, const char *cmd)
{
        /* After a failure getopt has stepped past the offending word. */
        const char *word = optind > 0 ? argv[optind - 1] : "?";

        if (optopt == 0)
                log_error("unrecognized option '%s' (try 'ptc %s --help')", word, cmd);
        else if (optopt >= 0x100)
                /* A long option without its value, or with one it does not take. */
                log_error("bad use of option '%s' (try 'ptc %s --help')", word, cmd);
        else if (optopt == 'c')
                log_error("option '-c' needs a value (try 'ptc %s --help')", cmd);
        else
                log_error("unrecognized option '-%c' (try 'ptc %s --help')", optopt, cmd);
        return EXIT_USAGE;
}
