/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The policy of tool calls (docs/policy.md): what the configuration's rules and the
 * built-in lists say of one call, before it runs. Pure: no prompt, no I/O but the walk
 * that resolves a path (fs_chase()) and the web module's URL parser.
 *
 * A call has subjects: the terminal's command is each simple command bash would run (the
 * parser of core/shell: through pipes, lists, substitutions, `sh -c` strings and wrappers),
 * a file tool's path (both as written, normalised, and with its symlinks resolved), the
 * hosts of web_extract's URLs, or for other tools the call itself. Each subject gets a
 * verdict from, in order:
 *
 *   1. the built-in hardline list (terminal only): blocked, whatever the rules say;
 *   2. the rules of policy.rules, the first whose tool and match fit;
 *   3. the built-in dangerous list (terminal only): policy.dangerous (ask by default);
 *   4. else allow;
 *
 * and the call's verdict is the strictest of its subjects' (blocked > deny > ask > allow),
 * the first such subject when several tie.
 *
 * Thread context: any thread; no global state.
 */

#include <stddef.h>

#include <jansson.h>

#include "basic/macro.h"
#include "core/config/config.h"

/* In order of strictness. */
enum policy_verdict_kind {
        POLICY_VERDICT_ALLOW,
        POLICY_VERDICT_ASK,
        POLICY_VERDICT_DENY,
        POLICY_VERDICT_BLOCKED,
};

enum policy_origin {
        POLICY_ORIGIN_DEFAULT,   /* nothing matched */
        POLICY_ORIGIN_RULE,      /* policy.rules[rule] */
        POLICY_ORIGIN_DANGEROUS, /* the built-in dangerous list */
        POLICY_ORIGIN_HARDLINE,  /* the built-in hardline list */
};

#define POLICY_TEXT_MAX 256
/* The distinct asks of one call kept; a call with more is never covered by earlier "for this
 * session" answers (asks_overflow). */
#define POLICY_ASKS_MAX 8

/* One thing a call is asked about: a rule or a built-in description, and its subject. */
struct policy_ask {
        enum policy_origin origin; /* POLICY_ORIGIN_RULE or POLICY_ORIGIN_DANGEROUS */
        size_t rule;               /* POLICY_ORIGIN_RULE */
        char what[POLICY_TEXT_MAX];
        char subject[POLICY_TEXT_MAX];
};

struct policy_verdict {
        enum policy_verdict_kind kind;
        enum policy_origin origin;
        size_t rule; /* POLICY_ORIGIN_RULE: the index in policy.rules */
        size_t line; /* POLICY_ORIGIN_RULE: the rule's line in the config file, or 0 */
        /* What matched: the built-in's description ("recursive delete") or "policy.rules[N]". */
        char what[POLICY_TEXT_MAX];
        /* The subject that decided: a simple command's words, a path, a host ("" for a call). */
        char subject[POLICY_TEXT_MAX];
        /* The rule's message, or a built-in's own text (sudo -S); NULL: none. Borrowed from
         * the configuration or static. */
        const char *message;
        /*
         * POLICY_VERDICT_ASK: every distinct ask of the call, the verdict's own first
         * (`rm -r d && git push --force` asks about both). An answer covers them all.
         */
        struct policy_ask asks[POLICY_ASKS_MAX];
        size_t n_asks;
        bool asks_overflow;
};

/*
 * The verdict on calling @tool with @args (a JSON object, borrowed) from @cwd (absolute)
 * with the call's environment @env (for "~"; may be NULL) under @c's policy. A subject that
 * cannot be read (a terminal command past the parser's caps) is judged as dangerous.
 * Returns 0, or -ENOMEM.
 */
_must_check_ int policy_decide(const struct ptc_config *c, const char *tool, json_t *args,
                               const char *cwd, char *const *env, struct policy_verdict *ret);

/*
 * The verdict of the path rules of @tool on @real alone: a real path a file tool reached
 * through fs_chase() (core/fs/fs-chase.h), judged as it is (no "~", no resolution). The
 * tool's second pass, on the object it is about to use (docs/policy.md "Paths"). 0 or
 * -ENOMEM.
 */
_must_check_ int policy_decide_real_path(const struct ptc_config *c, const char *tool,
                                         const char *real, const char *cwd, char *const *env,
                                         struct policy_verdict *ret);

/*
 * The verdict on one program a terminal command's process tree is about to execute
 * (core/tools/exec-supervisor.c): each of the @n spellings (NULL-terminated argvs, borrowed:
 * the resolved binary and the arguments, argv[0] and the arguments, ...) is judged as one
 * simple command of literal words (not parsed as shell text, no wrapper stripped: what a
 * wrapper runs is an exec of its own) by the hardline list, the terminal rules and the
 * dangerous list; the strictest wins. @home: $HOME of the call, or NULL. 0 or -ENOMEM.
 */
_must_check_ int policy_decide_exec(const struct ptc_config *c, char *const *const *spellings,
                                    size_t n, const char *home, struct policy_verdict *ret);

/* "allow", "ask", "deny", "blocked". */
const char *policy_verdict_kind_to_string(enum policy_verdict_kind k);

/*
 * The verdict as a JSON object {"decision", "origin", "what", "subject"[, "rule", "line",
 * "message", "asks"]}, as `ptc policy check` prints it and the per-call log keeps it;
 * "asks" lists {"origin", "what", "subject"[, "rule"]} when a call asks about more than one
 * thing. New reference, NULL on ENOMEM.
 */
json_t *policy_verdict_to_json(const struct policy_verdict *v);

/*
 * An ask's verdict as another ptc sent it (policy_verdict_to_json(); a remote target's
 * agent asking its host): origin rule or dangerous, what, subject, rule. -EINVAL for
 * anything else.
 */
_must_check_ int policy_verdict_from_json(json_t *j, struct policy_verdict *ret);

/* policy.rules as a JSON array that config_set_value("policy.rules", TEXT) reads back.
 * New reference, NULL on ENOMEM. */
json_t *policy_rules_to_json(const struct policy_config *p);
