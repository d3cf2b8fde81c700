/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the shell parser and the terminal guard: any bytes in, and the result
 * must be well formed: argv NULL-terminated, the command index in range, no more than the
 * caps, and the guard's answer one of its texts or none.
 *
 * The corpus (corpus/shell-parse/) replays under meson through fuzz-main.c; to fuzz for real:
 * scripts/fuzz.sh shell-parse [SECONDS] (docs/testing.md).
 */

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/shell/shell-parse.h"
#include "core/tools/terminal-guard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct shell_parse *p)
{
        if (p->n_commands > SHELL_PARSE_COMMANDS_MAX)
                abort();
        for (size_t i = 0; i < p->n_commands; i++) {
                const struct shell_command *c = &p->commands[i];

                if (!c->argv || c->argv[c->argc] || c->cmd_index > c->argc ||
                    c->depth > SHELL_PARSE_DEPTH_MAX)
                        abort();
                for (size_t j = 0; j < c->argc; j++)
                        if (!c->argv[j])
                                abort();
                for (size_t j = 0; j < c->n_redirects; j++)
                        if (!c->redirects[j].target ||
                            c->redirects[j].op > SHELL_REDIRECT_HERESTRING)
                                abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct shell_parse *p = NULL;
        const char *guidance;
        char *s;
        int r;

        for (unsigned flags = 0; flags <= SHELL_PARSE_COMPLETE_LINES; flags++) {
                r = shell_parse((const char *) data, size, flags, &p, NULL);
                if (r == 0) {
                        check(p);
                        p = shell_parse_free(p);
                } else if (r != -EINVAL && r != -E2BIG && r != -ELOOP && r != -ENOMEM)
                        abort();
        }
        s = strndup((const char *) data, size);
        if (!s)
                return 0;
        if (terminal_guard_check(s, &guidance) < 0) {
                /* Only -ENOMEM. */
        }
        free(s);
        return 0;
}
