/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Path rules bind terminal commands (docs/policy.md, "What binds terminal commands"): the
 * policy's deny rules on write_file and patch paths, turned into a Landlock ruleset for the
 * command's process tree at the start of each terminal call.
 *
 * Landlock is an allow-list: it cannot carve a denied tree out of an allowed one. So the
 * write rights (core/sandbox/landlock.h, landlock_protect_apply()) are granted on every
 * entry of every directory on the way from / to each protected path but the one on the way:
 * the protected paths and their ancestors get none. Consequence, said in the docs: nothing
 * new can be made, removed or renamed directly in an ancestor of a protected path (in $HOME
 * when ~/.ssh is protected); what is already there can be written. Reading and executing are
 * never restricted.
 *
 * Patterns (docs/policy.md, "Paths"): a plain path (absolute, "~/", relative to the
 * execution's directory) and such a path ending in a "**" component protect that path and what is
 * below it; other globs are expanded at the call's start, component by component (a leading dot
 * matched like any character, as the rules' matcher does), to what exists then; a
 * pattern without '/' (a name at any depth: "*.pem", ".env") or with "**" before its end cannot be
 * said in Landlock and does not bind terminal commands (a warning says so). Each path is resolved
 * as the kernel resolves it (symlinks, ".."), a missing one by its nearest existing ancestor, so
 * that it cannot be made either.
 *
 * No such rule: nothing is built and the command starts as before, at no cost.
 *
 * The ruleset is built in ptc, each entry opened relative to its directory, and the last one
 * is kept (one per process, under a lock) for the next calls while nothing it was built from
 * changed: the same protected paths, and every directory it listed with the same device,
 * inode, mtime and ctime, none of them changed in the last seconds (a change within one
 * timestamp tick would go unseen). A terminal.isolation strict command gets paths instead,
 * opened in its own root.
 *
 * Thread context: terminal_protect_build() on any thread (the kept ruleset is behind a
 * mutex); the child's step is landlock_protect_apply() (async-signal-safe).
 */

#include <stdbool.h>

#include <jansson.h>

#include "basic/macro.h"
#include "core/config/config.h"
#include "core/sandbox/landlock.h"

struct terminal_protect {
        /* What the command's child applies (terminal_protect_landlock()): a ruleset built
         * here (ll.ruleset_fd, owned), or for terminal.isolation strict the paths the child
         * opens in its own root (ll.grants, pointing into @grants). */
        struct landlock_protect ll;
        char **grants; /* owned, NULL-terminated */
        size_t n_grants, n_alloc;
        char **warnings; /* owned strv: what does not bind terminal commands, and why */
};

#define TERMINAL_PROTECT_NULL ((struct terminal_protect){.ll = {.ruleset_fd = -1}})

/*
 * Whether @c's policy has a deny rule on write_file or patch paths, i.e. whether terminal
 * commands get a ruleset at all.
 */
bool terminal_protect_wanted(const struct ptc_config *c);

/*
 * What @c's rules cannot hold terminal commands to on this kernel (@abi: landlock_abi()), one
 * line each appended to *@warnings (a strv; unchanged when everything binds or no rule
 * applies): Landlock missing, an ABI without truncation, name patterns. For a run's warnings
 * and ptc doctor. Returns 0 or -ENOMEM.
 */
_must_check_ int terminal_protect_describe(const struct ptc_config *c, int abi, char ***warnings);

/*
 * Build the ruleset of one terminal call under @c's policy, relative paths from @cwd, "~"
 * from @home (may be NULL). *@ret is filled (TERMINAL_PROTECT_NULL when no rule applies) and
 * must be released with terminal_protect_done() whatever the return. Returns 0 or -ENOMEM; a
 * path that cannot be listed or resolved grants nothing there (the safe side).
 */
_must_check_ int terminal_protect_build(const struct ptc_config *c, const char *cwd,
                                        const char *home, struct terminal_protect *ret);

/* What the command's child applies (landlock_protect_apply()), or NULL: nothing. Borrowed. */
const struct landlock_protect *terminal_protect_landlock(const struct terminal_protect *p);

/* Add @p's warnings to the tool result @result as "warnings" (none: nothing). 0 or -ENOMEM. */
_must_check_ int terminal_protect_add_warnings(const struct terminal_protect *p, json_t *result);

void terminal_protect_done(struct terminal_protect *p);
