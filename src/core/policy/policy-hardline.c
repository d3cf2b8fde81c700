/* SPDX-License-Identifier: MIT */
/*
 * The built-in hardline list: commands with no way back (wiping the root, a system
 * directory or the home; formatting or overwriting a disk; killing every process; shutting
 * the machine down; a fork bomb) and guessing sudo's password on stdin. A call with one of
 * them is blocked, whatever the rules say, as the seed's "hardline" floor. The descriptions
 * are the seed's (docs/policy.md lists them).
 *
 * Each check reads one simple command as the parser gives it: the command word after
 * wrappers (sudo, env, nice, timeout...), its words unquoted, its redirections. So quoted
 * text (`echo "rm -rf /"`, `git commit -m "never dd of=/dev/sda"`) is an argument, not a
 * command, while `bash -c 'rm -rf /'` and `$(rm -rf /)` are commands.
 */

#include "core/policy/policy-internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/path-util.h"

/* The marker a home spelled ~ or $HOME stands for when the home's path is unknown. */
#define UNKNOWN_HOME "/\001home"

/*
 * What rm's operand @w names, as an absolute path without "." and ".." and with a trailing
 * glob ("/" "*", "/.*") dropped: the home's spellings (~, $HOME, ${HOME}, ${HOME:?...})
 * become @home's path. NULL for a relative operand (or ENOMEM).
 */
static char *rm_target(const char *w, const char *home)
{
        static const char *const homes[] = {"~", "$HOME", "${HOME}"};
        const char *h = home && home[0] == '/' ? home : UNKNOWN_HOME, *rest = NULL;
        char *p = NULL;
        size_t n;

        for (size_t i = 0; i < ELEMENTSOF(homes) && !rest; i++) {
                size_t k = strlen(homes[i]);

                if (strncmp(w, homes[i], k) == 0 && (w[k] == 0 || w[k] == '/'))
                        rest = w + k;
        }
        /* ${HOME:?msg}, ${HOME:-x}: the home all the same. */
        if (!rest && strncmp(w, "${HOME:", 7) == 0 && strchr(w, '}'))
                rest = strchr(w, '}') + 1;
        if (rest) {
                if (asprintf(&p, "%s/%s", h, rest) < 0)
                        return NULL;
        } else if (w[0] == '/')
                p = strdup(w);
        if (!p)
                return NULL;
        n = strlen(p);
        /* A last component that is a glob of everything: the directory's contents. */
        if (n >= 2 && strcmp(p + n - 2, "/*") == 0)
                p[n - 2] = 0;
        else if (n >= 3 && strcmp(p + n - 3, "/.*") == 0)
                p[n - 3] = 0;
        path_normalize_lexical(p);
        return p;
}

static const char *check_rm(const struct command_view *v)
{
        static const char *const dirs[] = {"/home", "/root", "/etc",  "/usr", "/var",
                                           "/bin",  "/sbin", "/boot", "/lib"};
        const char *w;

        for (size_t i = 0; (w = policy_operand(v->cmd, i)); i++) {
                _cleanup_free_ char *t = rm_target(w, v->home);

                /* `rm -rf / *` is the root too: "/" then everything in the directory. */
                if (!t)
                        continue;
                if (strcmp(t, "/") == 0)
                        return "recursive delete of root filesystem";
                for (size_t j = 0; j < ELEMENTSOF(dirs); j++)
                        if (strcmp(t, dirs[j]) == 0)
                                return "recursive delete of system directory";
                if (strcmp(t, UNKNOWN_HOME) == 0 ||
                    (v->home && v->home[0] == '/' && strcmp(v->home, "/") != 0 &&
                     strcmp(t, v->home) == 0))
                        return "recursive delete of home directory";
        }
        return NULL;
}

static bool any_operand_is_block_device(const struct shell_command *c)
{
        const char *w;

        for (size_t i = 0; (w = policy_operand(c, i)); i++)
                if (policy_is_block_device(w))
                        return true;
        return false;
}

static const char *check_format(const struct command_view *v, const char *name)
{
        if (strcmp(name, "mkfs") == 0 || strncmp(name, "mkfs.", 5) == 0 ||
            strcmp(name, "mke2fs") == 0)
                return "format filesystem (mkfs)";
        if ((strcmp(name, "mkswap") == 0 || strncmp(name, "newfs", 5) == 0) &&
            any_operand_is_block_device(v->cmd))
                return "format filesystem (mkfs)";
        return NULL;
}

static const char *check_wipe(const struct command_view *v, const char *name)
{
        const struct shell_command *c = v->cmd;
        bool wipes = false;

        if (strcmp(name, "wipefs") == 0)
                wipes = policy_has_option(c, 'a', "--all") &&
                        !policy_has_option(c, 'n', "--no-act");
        else if (strcmp(name, "sgdisk") == 0)
                wipes = policy_has_option(c, 'Z', "--zap-all") ||
                        policy_has_option(c, 'o', "--clear") || policy_has_option(c, 'z', "--zap");
        else if (strcmp(name, "blkdiscard") == 0 || strcmp(name, "shred") == 0)
                wipes = true;
        return wipes && any_operand_is_block_device(c) ? "wipe raw block device" : NULL;
}

/* cp, mv, install, tee or pv writing onto a block device: the disk is overwritten. */
static const char *check_copy_to_device(const struct command_view *v, const char *name)
{
        const char *last = policy_last_word(v->cmd);

        if ((strcmp(name, "cp") == 0 || strcmp(name, "mv") == 0 || strcmp(name, "install") == 0) &&
            last && policy_is_block_device(last))
                return "copy to raw block device";
        if (strcmp(name, "tee") == 0 && any_operand_is_block_device(v->cmd))
                return "copy to raw block device";
        return NULL;
}

static const char *check_dd(const struct command_view *v)
{
        for (size_t i = v->cmd->cmd_index + 1; i < v->cmd->argc; i++)
                if (strncmp(v->cmd->argv[i], "of=", 3) == 0 &&
                    policy_is_block_device(v->cmd->argv[i] + 3))
                        return "dd to raw block device";
        return NULL;
}

static const char *check_redirects(const struct command_view *v)
{
        for (size_t i = 0; i < v->cmd->n_redirects; i++) {
                const struct shell_redirect *r = &v->cmd->redirects[i];

                if (r->op != SHELL_REDIRECT_IN && r->op != SHELL_REDIRECT_HEREDOC &&
                    r->op != SHELL_REDIRECT_HEREDOC_TAB && r->op != SHELL_REDIRECT_HERESTRING &&
                    r->op != SHELL_REDIRECT_DUP_IN && policy_is_block_device(r->target))
                        return "redirect to raw block device";
        }
        return NULL;
}

/*
 * kill's operand -1 (every process it may signal): `kill -9 -1`, `kill -s KILL -1`,
 * `kill -- -1`. A first -1 is a signal (SIGHUP) when operands follow it.
 */
static const char *check_kill(const struct command_view *v)
{
        const struct shell_command *c = v->cmd;
        bool options_done = false, first = true;

        for (size_t i = c->cmd_index + 1; i < c->argc; i++) {
                const char *w = c->argv[i];

                if (!options_done && strcmp(w, "--") == 0) {
                        options_done = true;
                        continue;
                }
                if (!options_done && (strcmp(w, "-s") == 0 || strcmp(w, "-n") == 0)) {
                        i++;
                        first = false;
                        continue;
                }
                if (!options_done && first && policy_is_option(w)) {
                        first = false; /* the signal: -9, -KILL, -1 (SIGHUP) */
                        continue;
                }
                first = false;
                if (strcmp(w, "-1") == 0)
                        return "kill all processes";
        }
        return NULL;
}

static const char *check_power(const struct command_view *v, const char *name)
{
        const char *op = policy_operand(v->cmd, 0);

        if (strcmp(name, "shutdown") == 0 || strcmp(name, "reboot") == 0 ||
            strcmp(name, "halt") == 0 || strcmp(name, "poweroff") == 0)
                return "system shutdown/reboot";
        if (op && (strcmp(op, "0") == 0 || strcmp(op, "6") == 0)) {
                if (strcmp(name, "init") == 0)
                        return "init 0/6 (shutdown/reboot)";
                if (strcmp(name, "telinit") == 0)
                        return "telinit 0/6 (shutdown/reboot)";
        }
        if (strcmp(name, "systemctl") == 0 && op &&
            (strcmp(op, "poweroff") == 0 || strcmp(op, "reboot") == 0 || strcmp(op, "halt") == 0 ||
             strcmp(op, "kexec") == 0))
                return "systemctl poweroff/reboot";
        return NULL;
}

/* `sudo -S` (or a bundle with S) in the wrappers before the command word. */
static bool sudo_reads_stdin(const struct shell_command *c)
{
        bool in_sudo = false;

        for (size_t i = 0; i < c->cmd_index && i < c->argc; i++) {
                const char *w = c->argv[i];

                if (c->word_flags[i] & SHELL_WORD_WRAPPER)
                        in_sudo = strcmp(shell_basename(w), "sudo") == 0;
                else if (in_sudo && (strcmp(w, "--stdin") == 0 ||
                                     (w[0] == '-' && w[1] != '-' && strchr(w + 1, 'S'))))
                        return true;
        }
        /* `sudo -S` alone: sudo is then the command word. */
        return strcmp(policy_command_name(c), "sudo") == 0 && policy_has_option(c, 'S', "--stdin");
}

/* NAME(){ NAME|NAME& };NAME with any blanks: a function that runs two of itself, forever. */
static bool is_fork_bomb(const char *raw)
{
        char s[256];
        size_t n = 0;

        for (const char *p = raw; *p && n + 1 < sizeof(s); p++)
                if (*p != ' ' && *p != '\t' && *p != '\n')
                        s[n++] = *p;
        s[n] = 0;
        for (const char *p = strstr(s, "(){"); p; p = strstr(p + 1, "(){")) {
                const char *name = p;
                char pat[160];
                size_t len;

                while (name > s && !strchr(";&|(){}", name[-1]))
                        name--;
                len = (size_t) (p - name);
                if (len == 0 || len > 32)
                        continue;
                (void) snprintf(pat, sizeof(pat), "%.*s|%.*s&", (int) len, name, (int) len, name);
                if (strncmp(p + 3, pat, strlen(pat)) == 0)
                        return true;
        }
        return false;
}

const char *policy_hardline(const struct command_view *v, const char **ret_message)
{
        const char *name = policy_command_name(v->cmd), *what;

        *ret_message = NULL;
        if (sudo_reads_stdin(v->cmd)) {
                *ret_message = "BLOCKED: sudo password guessing via stdin (sudo -S). Do not pipe "
                               "passwords to 'sudo -S' — this is a brute-force attack vector. Run "
                               "the sudo command yourself in your own terminal.";
                return "sudo password guessing via stdin (sudo -S)";
        }
        if (strcmp(name, "rm") == 0 && (what = check_rm(v)))
                return what;
        if ((what = check_format(v, name)) || (what = check_wipe(v, name)))
                return what;
        if (strcmp(name, "dd") == 0 && (what = check_dd(v)))
                return what;
        if ((what = check_copy_to_device(v, name)))
                return what;
        if ((what = check_redirects(v)))
                return what;
        if (strcmp(name, "kill") == 0 && (what = check_kill(v)))
                return what;
        if ((what = check_power(v, name)))
                return what;
        if (v->cmd == &v->parse->commands[0] && is_fork_bomb(v->raw))
                return "fork bomb";
        return NULL;
}
