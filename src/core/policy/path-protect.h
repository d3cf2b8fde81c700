/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Path rules bind what runs beside the tools (docs/policy.md, "What binds terminal commands"
 * and "Enforced by the kernel, or by the text"): the policy's deny rules on write_file and
 * patch paths, turned into a Landlock ruleset for a terminal command's process tree at the
 * start of each terminal call, and for the script's own process (a run's or a session
 * kernel's) at its start.
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
 * below it; other globs are expanded at the build, component by component (a leading dot
 * matched like any character, as the rules' matcher does), to what exists then; a
 * pattern without '/' (a name at any depth: "*.pem", ".env") or with "**" before its end cannot be
 * said in Landlock and binds the tool calls only (a warning says so). Each path is resolved
 * as the kernel resolves it (symlinks, ".."), a missing one by its nearest existing ancestor, so
 * that it cannot be made either.
 *
 * No such rule: nothing is built and the process starts as before, at no cost.
 *
 * The ruleset is built in ptc, each entry opened relative to its directory, and the last one
 * is kept (one per process, under a lock) for the next builds while nothing it was built from
 * changed: the same protected paths, and every directory it listed with the same device,
 * inode, mtime and ctime, none of them changed in the last seconds (a change within one
 * timestamp tick would go unseen). A process that sees another root than ptc (its own mount
 * namespace: a terminal.isolation strict command, a script under the namespaces layer; built
 * with PATH_PROTECT_OWN_ROOT) gets paths instead, opened in its own root, where its private
 * /tmp and /dev/shm are granted whole unless a protected path lies below them.
 *
 * Thread context: path_protect_build() on any thread (the kept ruleset is behind a
 * mutex); the child's step is landlock_protect_apply() (async-signal-safe).
 */

#include <stdbool.h>

#include <jansson.h>

#include "basic/macro.h"
#include "core/config/config.h"
#include "core/sandbox/landlock.h"

struct path_protect {
        /* What the child applies (path_protect_landlock()): a ruleset built here
         * (ll.ruleset_fd, owned), or with PATH_PROTECT_OWN_ROOT the paths the child opens in
         * its own root (ll.grants, pointing into @grants). */
        struct landlock_protect ll;
        char **grants; /* owned, NULL-terminated */
        size_t n_grants, n_alloc;
        char **warnings; /* owned strv: what does not bind, and why */
        /* PATH_PROTECT_OWN_ROOT: a protected path lies below /tmp (a working directory there
         * is bound at its host path inside the private /tmp), so nothing new can be made
         * directly in the child's /tmp; its /dev/shm is granted unless a path lies below. */
        bool tmp_held;
};

#define PATH_PROTECT_NULL ((struct path_protect){.ll = {.ruleset_fd = -1}})

/* path_protect_build() and path_protect_describe() flags. */
enum {
        /* Whom the rules are to bind, for the wording of the warnings. */
        PATH_PROTECT_TERMINAL = 1u << 0, /* terminal commands */
        PATH_PROTECT_SCRIPT = 1u << 1,   /* the script's own writes (open(), os.rename()) */
        /* The child sees another root than ptc (its own mount namespace, a private /tmp):
         * paths it opens itself, not a ruleset built here. */
        PATH_PROTECT_OWN_ROOT = 1u << 2,
        /* path_protect_build() leaves path_protect_describe()'s lines out (the caller said
         * them already). */
        PATH_PROTECT_QUIET = 1u << 3,
};

/*
 * Whether @c's policy has a deny rule on write_file or patch paths, i.e. whether a ruleset is
 * built at all.
 */
bool path_protect_wanted(const struct ptc_config *c);

/*
 * What @c's rules cannot hold the ones @who names (PATH_PROTECT_TERMINAL, _SCRIPT) to on this
 * kernel (@abi: landlock_abi()), one line each appended to *@warnings (a strv; unchanged when
 * everything binds or no rule applies): Landlock missing, an ABI without truncation, name
 * patterns. For a run's warnings and ptc doctor. Returns 0 or -ENOMEM.
 */
_must_check_ int path_protect_describe(const struct ptc_config *c, int abi, unsigned who,
                                       char ***warnings);

/*
 * The line that says @c's rules bind the tool calls only, not what @who names, because of
 * @why ("isolation none"), appended to *@warnings; nothing when no rule applies. The one text
 * for every such case. Returns 0 or -ENOMEM.
 */
_must_check_ int path_protect_unbound(const struct ptc_config *c, const char *why, unsigned who,
                                      char ***warnings);

/*
 * Build the ruleset of one terminal call or script start under @c's policy, relative paths
 * from @cwd, "~" from @home (may be NULL), for @flags (PATH_PROTECT_*). *@ret is filled
 * (PATH_PROTECT_NULL when no rule applies) and must be released with path_protect_done()
 * whatever the return. Returns 0 or -ENOMEM; a path that cannot be listed or resolved grants
 * nothing there (the safe side).
 */
_must_check_ int path_protect_build(const struct ptc_config *c, const char *cwd, const char *home,
                                    unsigned flags, struct path_protect *ret);

/* What the child applies (landlock_protect_apply()), or NULL: nothing. Borrowed. */
const struct landlock_protect *path_protect_landlock(const struct path_protect *p);

/* Add @p's warnings to the tool result @result as "warnings" (none: nothing). 0 or -ENOMEM. */
_must_check_ int path_protect_add_warnings(const struct path_protect *p, json_t *result);

void path_protect_done(struct path_protect *p);
