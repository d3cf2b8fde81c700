/* SPDX-License-Identifier: MIT */
/*
 * Terminal rules against the simple commands of a parsed command string, and the small
 * word helpers the built-in lists share.
 *
 * A pattern is one simple command's words, quoted as the shell quotes them. Its first word
 * matches the command word (by basename, unless the pattern word has a '/') or a wrapper
 * before it (sudo, env, timeout, xargs...); each further word must match a later word of
 * the command, in the pattern's order, with any other words between. Every pattern word is
 * a glob (fnmatch(3): * ? [...]). So "git push --force" matches
 * `git -C repo push origin main --force`, and "sudo" every command run through sudo.
 */

#include <fnmatch.h>
#include <string.h>

#include "core/policy/policy-internal.h"

static bool word_glob(const char *pattern, const char *word)
{
        return fnmatch(pattern, word, 0) == 0;
}

static bool command_word_matches(const char *pattern, const char *word)
{
        if (strchr(pattern, '/'))
                return word_glob(pattern, word);
        return word_glob(pattern, shell_basename(word));
}

/* Pattern words @pw[1..pn) in order among @c's words after @start. */
static bool rest_matches(const struct shell_command *c, size_t start, char *const *pw, size_t pn)
{
        size_t k = 1;

        for (size_t i = start + 1; i < c->argc && k < pn; i++)
                if (word_glob(pw[k], c->argv[i]))
                        k++;
        return k == pn;
}

bool policy_command_matches(const struct shell_command *c, const char *pattern)
{
        _cleanup_shell_parse_ struct shell_parse *sp = NULL;
        const struct shell_command *pc;

        /* Checked at load (config-policy.c): one simple command of literal words. */
        if (shell_parse(pattern, strlen(pattern), 0, &sp, NULL) < 0 || sp->n_commands != 1)
                return false;
        pc = &sp->commands[0];
        if (pc->argc == 0)
                return false;
        for (size_t s = 0; s < c->argc && s <= c->cmd_index; s++) {
                if (s != c->cmd_index && !(c->word_flags[s] & SHELL_WORD_WRAPPER))
                        continue;
                if (command_word_matches(pc->argv[0], c->argv[s]) &&
                    rest_matches(c, s, pc->argv, pc->argc))
                        return true;
        }
        return false;
}

const char *policy_command_name(const struct shell_command *c)
{
        const char *w = shell_command_word(c);

        return w ? shell_basename(w) : "";
}

bool policy_is_option(const char *w)
{
        return w[0] == '-' && w[1] != 0;
}

bool policy_has_option(const struct shell_command *c, char short_opt, const char *long_name)
{
        for (size_t i = c->cmd_index + 1; i < c->argc; i++) {
                const char *w = c->argv[i];

                if (strcmp(w, "--") == 0)
                        break;
                if (!policy_is_option(w))
                        continue;
                if (w[1] == '-') {
                        if (long_name && strcmp(w, long_name) == 0)
                                return true;
                } else if (short_opt && strchr(w + 1, short_opt))
                        return true;
        }
        return false;
}

const char *policy_operand(const struct shell_command *c, size_t n)
{
        bool options_done = false;

        for (size_t i = c->cmd_index + 1; i < c->argc; i++) {
                const char *w = c->argv[i];

                if (!options_done && strcmp(w, "--") == 0) {
                        options_done = true;
                        continue;
                }
                if (!options_done && policy_is_option(w))
                        continue;
                if (n-- == 0)
                        return w;
        }
        return NULL;
}

const char *policy_last_word(const struct shell_command *c)
{
        return c->argc > c->cmd_index + 1 ? c->argv[c->argc - 1] : NULL;
}

bool policy_parse_has_command(const struct shell_parse *p, const char *name)
{
        for (size_t i = 0; i < p->n_commands; i++)
                if (strcmp(policy_command_name(&p->commands[i]), name) == 0)
                        return true;
        return false;
}

static bool is_shell_name(const char *n)
{
        static const char *const shells[] = {"sh", "bash", "zsh", "ksh", "dash"};

        for (size_t i = 0; i < ELEMENTSOF(shells); i++)
                if (strcmp(n, shells[i]) == 0)
                        return true;
        return false;
}

bool policy_is_stdin_shell(const struct shell_command *c)
{
        if (!is_shell_name(policy_command_name(c)))
                return false;
        if (policy_has_option(c, 's', NULL))
                return true;
        return !policy_has_option(c, 'c', NULL) && !policy_operand(c, 0);
}

bool policy_ends_with(const char *a, const char *suffix)
{
        size_t n = strlen(a), m = strlen(suffix);

        return n >= m && strcmp(a + n - m, suffix) == 0;
}
