/* SPDX-License-Identifier: MIT */
/*
 * Wrappers: commands that run another command given as their later words (sudo -u x cmd,
 * env A=1 cmd, timeout 10 cmd). To find the command word we need each wrapper's options,
 * at least those that take a separate argument (`sudo -u nohup cmd` runs cmd, not nohup),
 * and those after which no command follows (`command -v x` only looks x up).
 *
 * An option not in a wrapper's table is taken as a flag without an argument. That can
 * only move the command word to a later word, never to an earlier one.
 *
 * Shells and eval run a command given as a string: `sh -c STRING`, `eval ARGS`. Their
 * string is parsed as a command string of its own (shell_parse_string()).
 */

#include "core/shell/shell-internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/macro.h"
#include "core/shell/shell-parse.h"

struct wrapper {
        const char *name;
        const char *short_arg;       /* short options that take an argument */
        const char *short_stop;      /* short options after which no command follows */
        const char *const *long_arg; /* long options that take an argument (as --opt ARG) */
        const char *const *long_stop;
        unsigned operands;   /* words before the command (timeout's duration) */
        bool assignments;    /* NAME=value words may come before the command */
        bool dash_is_option; /* env: a lone '-' is -i */
};

static const char *const sudo_long_arg[] = {
        "chdir", "close-from", "group",           "host",       "prompt", "chroot",
        "role",  "type",       "command-timeout", "other-user", "user",   NULL,
};
static const char *const sudo_long_stop[] = {
        "edit", "list", "validate", "version", "remove-timestamp", "reset-timestamp", "help", NULL,
};
static const char *const env_long_arg[] = {"unset", "chdir", NULL};
/* env -S splits its argument into the command and its arguments: not followed. */
static const char *const env_long_stop[] = {"split-string", "help", "version", NULL};
static const char *const nice_long_arg[] = {"adjustment", NULL};
static const char *const timeout_long_arg[] = {"kill-after", "signal", NULL};
static const char *const stdbuf_long_arg[] = {"input", "output", "error", NULL};
static const char *const time_long_arg[] = {"format", "output", NULL};
static const char *const xargs_long_arg[] = {
        "arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var", NULL,
};
static const char *const ionice_long_arg[] = {"class", "classdata", NULL};
static const char *const ionice_long_stop[] = {"pid", "pgid", "uid", NULL};

static const struct wrapper wrappers[] = {
        {"sudo", "CDghpRrTtUu", "eKlVv", sudo_long_arg, sudo_long_stop, 0, true, false},
        {"doas", "uC", "L", NULL, NULL, 0, false, false},
        {"env", "uCP", "S", env_long_arg, env_long_stop, 0, true, true},
        {"nice", "n", "", nice_long_arg, NULL, 0, false, false},
        {"timeout", "ks", "", timeout_long_arg, NULL, 1, false, false},
        {"exec", "a", "", NULL, NULL, 0, false, false},
        {"nohup", "", "", NULL, NULL, 0, false, false},
        {"setsid", "", "", NULL, NULL, 0, false, false},
        {"stdbuf", "ioe", "", stdbuf_long_arg, NULL, 0, false, false},
        {"time", "fo", "", time_long_arg, NULL, 0, false, false},
        {"command", "", "vV", NULL, NULL, 0, false, false},
        {"builtin", "", "", NULL, NULL, 0, false, false},
        {"xargs", "adEILnPs", "", xargs_long_arg, NULL, 0, false, false},
        {"ionice", "cn", "pPu", ionice_long_arg, ionice_long_stop, 0, false, false},
};

static bool in_list(const char *const *l, const char *s, size_t n)
{
        for (; l && *l; l++)
                if (strlen(*l) == n && strncmp(*l, s, n) == 0)
                        return true;
        return false;
}

static bool is_env_assignment(const char *s)
{
        const char *eq = strchr(s, '=');

        if (!eq || eq == s || !is_name_start(s[0]))
                return false;
        for (const char *p = s + 1; p < eq; p++)
                if (!is_name_char(*p))
                        return false;
        return true;
}

/*
 * After the wrapper @w at argv[i]: the index of the word it runs, or argc when it runs
 * none (`sudo -l`, `env`, `command -v x`).
 */
static size_t skip_options(const struct wrapper *w, char *const *argv, size_t argc, size_t i)
{
        for (i++; i < argc; i++) {
                const char *a = argv[i];

                if (strcmp(a, "--") == 0) {
                        i++;
                        break;
                }
                if (strcmp(a, "-") == 0) {
                        if (w->dash_is_option)
                                continue;
                        break;
                }
                if (a[0] != '-')
                        break;
                if (a[1] == '-') {
                        const char *name = a + 2, *eq = strchr(name, '=');
                        size_t n = eq ? (size_t) (eq - name) : strlen(name);

                        if (in_list(w->long_stop, name, n))
                                return argc;
                        if (!eq && in_list(w->long_arg, name, n))
                                i++;
                        continue;
                }
                for (const char *c = a + 1; *c; c++) {
                        if (strchr(w->short_stop, *c))
                                return argc;
                        if (strchr(w->short_arg, *c)) {
                                if (c[1] == 0)
                                        i++; /* -u root: the next word is the argument */
                                break;
                        }
                }
        }
        if (w->assignments)
                while (i < argc && is_env_assignment(argv[i]))
                        i++;
        i += w->operands;
        return MIN(i, argc);
}

size_t shell_strip_wrappers(char *const *argv, unsigned *flags, size_t argc)
{
        size_t i = 0;

        while (i < argc && (flags[i] & SHELL_WORD_ASSIGNMENT))
                i++;
        while (i < argc && !(flags[i] & SHELL_WORD_EXPANDS)) {
                const char *name = shell_basename(argv[i]);
                const struct wrapper *w = NULL;
                size_t next;

                for (size_t k = 0; k < ELEMENTSOF(wrappers) && !w; k++)
                        if (strcmp(name, wrappers[k].name) == 0)
                                w = &wrappers[k];
                if (!w)
                        break;
                next = skip_options(w, argv, argc, i);
                if (next >= argc)
                        break; /* the wrapper runs nothing: it is the command */
                flags[i] |= SHELL_WORD_WRAPPER;
                i = next;
        }
        return i;
}

/* `sh -c STRING`, `eval ARGS`: the literal string the command would run, or none. */
int shell_nested_string(const struct shell_command *c, char **ret)
{
        static const char *const shells[] = {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"};
        const char *w = shell_command_word(c);
        size_t i;
        bool is_shell = false, has_c = false;

        *ret = NULL;
        if (!w || (c->word_flags[c->cmd_index] & SHELL_WORD_EXPANDS))
                return 0;
        w = shell_basename(w);
        if (strcmp(w, "eval") == 0) {
                _cleanup_buf_ struct buf b = BUF_INIT(SHELL_PARSE_INPUT_MAX);
                int r = 0;

                for (i = c->cmd_index + 1; i < c->argc && r >= 0; i++) {
                        if (c->word_flags[i] & SHELL_WORD_EXPANDS)
                                return 0;
                        if (b.len > 0)
                                r = buf_append_char(&b, ' ');
                        if (r >= 0)
                                r = buf_append_str(&b, c->argv[i]);
                }
                if (r < 0)
                        return r;
                if (b.len == 0)
                        return 0;
                *ret = buf_steal(&b, NULL);
                return *ret ? 0 : -ENOMEM;
        }
        for (i = 0; i < ELEMENTSOF(shells); i++)
                is_shell = is_shell || strcmp(w, shells[i]) == 0;
        if (!is_shell)
                return 0;
        for (i = c->cmd_index + 1; i < c->argc; i++) {
                const char *a = c->argv[i];

                if (strcmp(a, "--") == 0 || strcmp(a, "-") == 0) {
                        i++;
                        break;
                }
                if ((a[0] != '-' && a[0] != '+') || a[1] == 0)
                        break;
                if (a[0] == '-' && a[1] == '-')
                        continue; /* --norc, --login, ... */
                if (strchr(a + 1, 'c'))
                        has_c = true;
                if ((strchr(a + 1, 'o') || strchr(a + 1, 'O')) && i + 1 < c->argc)
                        i++; /* -o pipefail */
        }
        if (!has_c || i >= c->argc || (c->word_flags[i] & SHELL_WORD_EXPANDS))
                return 0;
        *ret = strdup(c->argv[i]);
        return *ret ? 0 : -ENOMEM;
}
