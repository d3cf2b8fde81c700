/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Private to src/core/policy:
 *   policy.c            a call's subjects, the rules, the strictest verdict
 *   policy-command.c    terminal patterns against simple commands; words of a command
 *   policy-hardline.c   the built-in hardline list (always blocked)
 *   policy-dangerous.c  the built-in dangerous list (policy.dangerous: ask by default)
 *   policy-path.c       path subjects and path globs; host globs
 */

#include <stdbool.h>
#include <stddef.h>

#include "core/shell/shell-parse.h"

/* What the built-in lists look at: the whole parse, one of its commands, the raw string. */
struct command_view {
        const struct shell_parse *parse;
        const struct shell_command *cmd;
        const char *raw;  /* the command string as the model wrote it */
        const char *home; /* $HOME of the call, or NULL */
};

/* policy-command.c */

/* Whether @pattern (a terminal rule's match) matches @c (docs/policy.md, "Commands"):
 * @exact for an allow rule, generously for deny and ask (policy-command.c). */
bool policy_command_matches(const struct shell_command *c, const char *pattern, bool exact);
/* The command word's basename, or "" when @c has none. */
const char *policy_command_name(const struct shell_command *c);
/* Whether @w is an option word of a command: "-x", "--long", not "-" or a word after "--". */
bool policy_is_option(const char *w);
/* Whether any option word of @c before "--" is @long_name or a short bundle holding @short. */
bool policy_has_option(const struct shell_command *c, char short_opt, const char *long_name);
/* The i-th operand (a word after the command word that is not an option) of @c, or NULL. */
const char *policy_operand(const struct shell_command *c, size_t i);
/* The last word of @c after its command word, or NULL. */
const char *policy_last_word(const struct shell_command *c);
/* Whether a command of @p has the command name @name (basename compare). */
bool policy_parse_has_command(const struct shell_parse *p, const char *name);
/* Whether @c is a shell (sh, bash, zsh, ksh, dash) that reads its script from stdin. */
bool policy_is_stdin_shell(const struct shell_command *c);
/*
 * The command string @c runs through a wrapper the shell parser does not open (new,
 * caller frees; NULL: none): `su`/`runuser ... -c STRING`, `watch [opts] WORDS` (joined,
 * as watch hands them to sh -c), `chroot DIR WORDS`, `flock FILE (-c STRING | WORDS)`,
 * `strace`/`ltrace [opts] WORDS`.
 */
char *policy_inner_command(const struct shell_command *c);
/* @a ends with @suffix */
bool policy_ends_with(const char *a, const char *suffix);

/* policy-hardline.c */

/*
 * The hardline verdict on @v's command: its description ("recursive delete of root
 * filesystem"), or NULL. *ret_message: a text of its own for the model (sudo -S), or NULL.
 */
const char *policy_hardline(const struct command_view *v, const char **ret_message);

/* policy-dangerous.c */

/* The dangerous verdict on @v's command: its description ("recursive delete"), or NULL. */
const char *policy_dangerous(const struct command_view *v);
/* A /dev path of a raw block device (sda, nvme0n1p2, mapper/x, disk/by-id/...). */
bool policy_is_block_device(const char *path);

/* policy-path.c */

/*
 * Whether path glob @pattern matches @path (absolute, normalised). A pattern without '/'
 * matches the last component; "~/" is @home's; a relative one is against @cwd; "*" stays
 * within a component, "**" spans any.
 */
bool policy_path_matches(const char *pattern, const char *path, const char *cwd, const char *home);
/* Whether host glob @pattern matches @host (lower-case), case-insensitively. */
bool policy_host_matches(const char *pattern, const char *host);
