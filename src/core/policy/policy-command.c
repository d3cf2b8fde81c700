/* SPDX-License-Identifier: MIT */
/*
 * Terminal rules against the simple commands of a parsed command string, and the small
 * word helpers the built-in lists share.
 *
 * A pattern is one simple command's words, quoted as the shell quotes them; every word is
 * a glob (fnmatch(3): * ? [...]), the first compared with the command word's basename
 * unless it has a '/'. How it matches depends on the rule's action, so that a pattern
 * errs on the safe side either way:
 *
 *   deny, ask  generously: the first word matches the command word or a wrapper before it
 *              (sudo, env, timeout, xargs...), each further word a later word, in order, with
 *              any words between. "git push --force" matches
 *              `git -C repo push origin main --force`; "sudo" every command run through sudo.
 *   allow      exactly: the command's words (after assignments, wrappers included) one for
 *              one, a word "**" standing for any number of words. "rm -r* build" allows
 *              `rm -rf build` but not `rm -rf build ~/.ssh` nor `sudo rm -rf build`;
 *              "git status **" allows any `git status`.
 */

#include "core/policy/policy-internal.h"

#include <fnmatch.h>
#include <stdint.h>
#include <string.h>

#include "basic/buf.h"

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

/* Pattern words @pw[1..pn) in order among @c's words after @start ("**" words: no-ops). */
static bool rest_matches(const struct shell_command *c, size_t start, char *const *pw, size_t pn)
{
        size_t k = 1;

        for (size_t i = start + 1; i < c->argc && k < pn; i++) {
                while (k < pn && strcmp(pw[k], "**") == 0)
                        k++;
                if (k < pn && word_glob(pw[k], c->argv[i]))
                        k++;
        }
        while (k < pn && strcmp(pw[k], "**") == 0)
                k++;
        return k == pn;
}

/*
 * Exactly: the command's words from its first that is not an assignment, one for one with
 * the pattern's, where a pattern word "**" stands for any number of words (none too).
 * The classic backtracking wildcard walk over words: linear but for the "**"s.
 */
static bool exact_matches(const struct shell_command *c, char *const *pw, size_t pn)
{
        size_t start = 0, i, k = 0, star_k = SIZE_MAX, star_i = 0;

        while (start < c->argc && (c->word_flags[start] & SHELL_WORD_ASSIGNMENT))
                start++;
        i = start;
        while (i < c->argc) {
                if (k < pn && strcmp(pw[k], "**") == 0) {
                        star_k = k++;
                        star_i = i;
                } else if (k < pn && (i == start ? command_word_matches(pw[k], c->argv[i])
                                                 : word_glob(pw[k], c->argv[i]))) {
                        k++;
                        i++;
                } else if (star_k != SIZE_MAX) {
                        k = star_k + 1;
                        i = ++star_i;
                } else
                        return false;
        }
        while (k < pn && strcmp(pw[k], "**") == 0)
                k++;
        return k == pn && i > start;
}

bool policy_command_matches(const struct shell_command *c, const char *pattern, bool exact)
{
        _cleanup_shell_parse_ struct shell_parse *sp = NULL;
        const struct shell_command *pc;

        /* Checked at load (config-policy.c): one simple command of literal words. */
        if (shell_parse(pattern, strlen(pattern), 0, &sp, NULL) < 0 || sp->n_commands != 1)
                return false;
        pc = &sp->commands[0];
        if (pc->argc == 0)
                return false;
        if (exact)
                return exact_matches(c, pc->argv, pc->argc);
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
        /* No script operand, or "-": the script is read from stdin (`curl ... | bash -`). */
        return !policy_has_option(c, 'c', NULL) &&
               (!policy_operand(c, 0) || strcmp(policy_operand(c, 0), "-") == 0);
}

bool policy_ends_with(const char *a, const char *suffix)
{
        size_t n = strlen(a), m = strlen(suffix);

        return n >= m && strcmp(a + n - m, suffix) == 0;
}

/* @w quoted for the shell: '...' with each ' as '\''. */
static int append_quoted(struct buf *b, const char *w)
{
        int r = buf_append_str(b, b->len ? " '" : "'");

        for (const char *p = w; r >= 0 && *p; p++)
                r = *p == '\'' ? buf_append_str(b, "'\\''") : buf_append(b, p, 1);
        return r < 0 ? r : buf_append_str(b, "'");
}

/* The words of @c from @i on, quoted: the command an exec-ing wrapper runs. */
static char *quoted_from(const struct shell_command *c, size_t i)
{
        _cleanup_buf_ struct buf b = BUF_INIT(SHELL_PARSE_INPUT_MAX);

        if (i >= c->argc)
                return NULL;
        for (; i < c->argc; i++)
                if (append_quoted(&b, c->argv[i]) < 0)
                        return NULL;
        return buf_steal(&b, NULL);
}

/* The words from @i on joined with blanks, unquoted: what `watch` hands to `sh -c`. */
static char *joined_from(const struct shell_command *c, size_t i)
{
        _cleanup_buf_ struct buf b = BUF_INIT(SHELL_PARSE_INPUT_MAX);

        if (i >= c->argc)
                return NULL;
        for (; i < c->argc; i++)
                if (buf_printf(&b, "%s%s", b.len ? " " : "", c->argv[i]) < 0)
                        return NULL;
        return buf_steal(&b, NULL);
}

/* The index of the first operand after @c's command word, skipping the options in
 * @with_arg ("-n", "-o", ...) together with their argument. */
static size_t first_operand(const struct shell_command *c, const char *const *with_arg)
{
        for (size_t i = c->cmd_index + 1; i < c->argc; i++) {
                const char *w = c->argv[i];

                if (strcmp(w, "--") == 0)
                        return i + 1;
                if (!policy_is_option(w))
                        return i;
                for (size_t k = 0; with_arg && with_arg[k]; k++)
                        if (strcmp(w, with_arg[k]) == 0) {
                                i++;
                                break;
                        }
        }
        return c->argc;
}

char *policy_inner_command(const struct shell_command *c)
{
        static const char *const watch_args[] = {"-n", "--interval", "-q", "--equexit", NULL};
        static const char *const flock_args[] = {"-w", "--timeout", "-E", "--conflict-exit-code",
                                                 NULL};
        static const char *const trace_args[] = {"-o", "-e", "-p", "-s", "-u", "-E", "-I",
                                                 "-b", "-a", "-O", "-S", "-X", "-P", NULL};
        const char *name = policy_command_name(c);
        size_t i;

        if (strcmp(name, "su") == 0 || strcmp(name, "runuser") == 0) {
                for (i = c->cmd_index + 1; i < c->argc; i++) {
                        const char *w = c->argv[i];

                        if ((strcmp(w, "-c") == 0 || strcmp(w, "--command") == 0 ||
                             strcmp(w, "--session-command") == 0) &&
                            i + 1 < c->argc)
                                return strdup(c->argv[i + 1]);
                        if (strncmp(w, "--command=", 10) == 0)
                                return strdup(w + 10);
                }
                return NULL;
        }
        if (strcmp(name, "watch") == 0)
                return joined_from(c, first_operand(c, watch_args));
        if (strcmp(name, "chroot") == 0)
                return quoted_from(c, first_operand(c, NULL) + 1);
        if (strcmp(name, "flock") == 0) {
                i = first_operand(c, flock_args) + 1; /* past the lock file */
                if (i + 1 < c->argc &&
                    (strcmp(c->argv[i], "-c") == 0 || strcmp(c->argv[i], "--command") == 0))
                        return strdup(c->argv[i + 1]);
                return quoted_from(c, i);
        }
        if (strcmp(name, "strace") == 0 || strcmp(name, "ltrace") == 0)
                return quoted_from(c, first_operand(c, trace_args));
        return NULL;
}
