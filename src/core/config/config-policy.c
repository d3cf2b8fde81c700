/* SPDX-License-Identifier: MIT */
/*
 * policy.rules: the ordered rules of the policy section (docs/policy.md), each a mapping
 * {tool, match, action, message}. What a pattern means depends on the tools it is for
 * (config_policy_subject()); it is checked here, where the file's line is known, so a rule
 * that could never match as written is refused at load instead of silently doing nothing.
 */

#include "core/config/config-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/strv.h"
#include "core/shell/shell-parse.h"

#define CONFIG_MAX_RULES 1024
#define CONFIG_MAX_PATTERNS 256
#define TOOL_GLOB_ALLOWED "tool names or globs matching [A-Za-z0-9_*?]+, at most 200 characters"

const char *const config_policy_action_words[3] = {"allow", "ask", "deny"};

const char *config_policy_action_to_string(enum policy_action a)
{
        return (size_t) a < ELEMENTSOF(config_policy_action_words) ? config_policy_action_words[a]
                                                                   : "?";
}

enum policy_subject config_policy_subject(const char *name)
{
        static const struct {
                const char *name;
                enum policy_subject subject;
        } table[] = {
                {"terminal", POLICY_SUBJECT_COMMAND},  {"read_file", POLICY_SUBJECT_PATH},
                {"write_file", POLICY_SUBJECT_PATH},   {"patch", POLICY_SUBJECT_PATH},
                {"search_files", POLICY_SUBJECT_PATH}, {"web_extract", POLICY_SUBJECT_HOST},
        };

        for (size_t i = 0; name && i < ELEMENTSOF(table); i++)
                if (strcmp(table[i].name, name) == 0)
                        return table[i].subject;
        return POLICY_SUBJECT_CALL;
}

static bool is_tool_glob(const char *s, size_t n)
{
        if (n == 0 || n > 200)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!(is_ascii_alpha(s[i]) || is_ascii_digit(s[i]) || s[i] == '_' || s[i] == '*' ||
                      s[i] == '?'))
                        return false;
        return true;
}

/* A string or a sequence of strings into a new strv; each checked by @valid (may be NULL). */
static int parse_string_list(struct ctx *x, const struct node *v, const char *key,
                             const char *allowed, bool (*valid)(const char *, size_t), char ***ret)
{
        _cleanup_strv_free_ char **l = config_strv_new_empty();
        const struct node *const *items = &v;
        size_t n = 1;
        int r;

        if (!l)
                return -ENOMEM;
        if (v->type == NODE_SEQUENCE) {
                items = (const struct node *const *) v->items;
                n = v->n_items;
                if (n == 0)
                        return config_fail(x, v->line, key, "empty list (allowed: %s)", allowed);
                if (n > CONFIG_MAX_PATTERNS)
                        return config_fail(x, v->line, key, "too many entries (at most %d)",
                                           CONFIG_MAX_PATTERNS);
        }
        for (size_t i = 0; i < n; i++) {
                const char *s;

                r = config_scalar_text(x, items[i], key, allowed, false, &s);
                if (r < 0)
                        return r;
                if (items[i]->len == 0 || items[i]->len > CONFIG_MAX_STRING ||
                    (valid && !valid(s, items[i]->len)))
                        return config_fail_text(x, items[i]->line, key, "value", s, items[i]->len,
                                                allowed);
                r = strv_extend(&l, s);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

static int parse_rule_tool(struct ctx *x, const struct key_spec *k, const char *key,
                           const struct node *v, void *target)
{
        struct policy_rule *rule = target;
        char **l;
        int r;

        r = parse_string_list(x, v, key, TOOL_GLOB_ALLOWED, is_tool_glob, &l);
        if (r < 0)
                return r;
        config_replace_strv(&rule->tools, l);
        return 0;
}

static int parse_rule_match(struct ctx *x, const struct key_spec *k, const char *key,
                            const struct node *v, void *target)
{
        struct policy_rule *rule = target;
        char **l;
        int r;

        r = parse_string_list(x, v, key, "a pattern or a list of patterns", NULL, &l);
        if (r < 0)
                return r;
        config_replace_strv(&rule->match, l);
        return 0;
}

int config_parse_policy_word(struct ctx *x, const struct key_spec *k, const char *key,
                             const struct node *v, void *target)
{
        /* max 1: allow|deny (headless); 2: allow|ask|deny. */
        static const char *const two[] = {"allow", "deny"};
        size_t i;
        int r;

        if (k->max == 1) {
                r = config_value_word(x, v, key, two, ELEMENTSOF(two), &i);
                if (r < 0)
                        return r;
                i = i == 0 ? POLICY_ALLOW : POLICY_DENY;
        } else {
                r = config_value_word(x, v, key, config_policy_action_words,
                                      ELEMENTSOF(config_policy_action_words), &i);
                if (r < 0)
                        return r;
        }
        *(enum policy_action *) ((char *) target + k->offset) = (enum policy_action) i;
        return 0;
}

static int parse_rule_action(struct ctx *x, const struct key_spec *k, const char *key,
                             const struct node *v, void *target)
{
        struct policy_rule *rule = target;
        size_t i;
        int r;

        r = config_value_word(x, v, key, config_policy_action_words,
                              ELEMENTSOF(config_policy_action_words), &i);
        if (r < 0)
                return r;
        rule->action = (enum policy_action) i;
        return 0;
}

static int parse_rule_message(struct ctx *x, const struct key_spec *k, const char *key,
                              const struct node *v, void *target)
{
        struct policy_rule *rule = target;
        char *d;
        int r;

        r = config_value_string(x, v, key, true, &d);
        if (r < 0)
                return r;
        config_replace_string(&rule->message, d);
        return 0;
}

static const struct key_spec rule_keys[] = {
        {"tool", parse_rule_tool, 0, 0, 0},
        {"match", parse_rule_match, 0, 0, 0},
        {"action", parse_rule_action, 0, 0, 0},
        {"message", parse_rule_message, 0, 0, 0},
};

/*
 * A terminal pattern: one simple command's words, quoted as the shell quotes them
 * ("git push", "rm -r*", "'$HOME'"): no operators, redirections or expansions.
 */
static int check_command_pattern(struct ctx *x, size_t line, const char *key, const char *p)
{
        _cleanup_shell_parse_ struct shell_parse *sp = NULL;
        struct diag d = {};
        int r;

        r = shell_parse(p, strlen(p), 0, &sp, &d);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return config_fail(x, line, key, "pattern '%s' does not parse as a command: %s", p,
                                   d.message);
        if (sp->n_commands != 1 || sp->commands[0].argc == 0 || sp->commands[0].n_redirects > 0 ||
            sp->commands[0].flags != 0)
                return config_fail(x, line, key,
                                   "pattern '%s' is not one simple command (a command word, then "
                                   "argument patterns; no operators or redirections)",
                                   p);
        for (size_t i = 0; i < sp->commands[0].argc; i++)
                if (sp->commands[0].word_flags[i] & (SHELL_WORD_EXPANDS | SHELL_WORD_ASSIGNMENT))
                        return config_fail(x, line, key,
                                           "pattern '%s': '%s' would expand; quote it to match "
                                           "the literal text",
                                           p, sp->commands[0].argv[i]);
        return 0;
}

static bool is_host_glob(const char *s, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (!(is_ascii_alpha(s[i]) || is_ascii_digit(s[i]) || strchr(".-*?[]:_", s[i])))
                        return false;
        return true;
}

/* After the walk: required keys, and patterns that fit the tools they are for. */
static int check_rule(struct ctx *x, const struct node *vn, const char *key,
                      struct policy_rule *rule)
{
        char mkey[160];
        int r;

        if (!rule->tools)
                return config_fail(x, vn->line, key, "missing required key 'tool' (allowed: %s)",
                                   "tool, match, action, message");
        if ((int) rule->action < 0)
                return config_fail(x, vn->line, key, "missing required key 'action' (allowed: %s)",
                                   "allow, ask, deny");
        rule->subject = POLICY_SUBJECT_CALL;
        rule->line = vn->line;
        if (!rule->match)
                return 0;

        (void) snprintf(mkey, sizeof(mkey), "%s.match", key);
        for (size_t i = 0; rule->tools[i]; i++) {
                enum policy_subject s = config_policy_subject(rule->tools[i]);

                if (strpbrk(rule->tools[i], "*?"))
                        return config_fail(x, rule->line, mkey,
                                           "a rule with match names its tools, not a glob ('%s')",
                                           rule->tools[i]);
                if (s == POLICY_SUBJECT_CALL)
                        return config_fail(x, rule->line, mkey,
                                           "%s takes no match (match is for terminal, read_file, "
                                           "write_file, patch, search_files and web_extract)",
                                           rule->tools[i]);
                if (i > 0 && s != rule->subject)
                        return config_fail(x, rule->line, mkey,
                                           "%s and %s match different things (commands, paths, "
                                           "hosts): give them a rule each",
                                           rule->tools[0], rule->tools[i]);
                rule->subject = s;
        }
        for (size_t i = 0; rule->match[i]; i++) {
                const char *p = rule->match[i];

                if (rule->subject == POLICY_SUBJECT_COMMAND) {
                        r = check_command_pattern(x, rule->line, mkey, p);
                        if (r < 0)
                                return r;
                } else if (rule->subject == POLICY_SUBJECT_HOST && !is_host_glob(p, strlen(p)))
                        return config_fail_text(x, rule->line, mkey, "host pattern", p, strlen(p),
                                                "host names and globs in ASCII, e.g. "
                                                "*.example.com; an internationalised name in "
                                                "its xn-- form, as web_extract fetches it");
        }
        return 0;
}

static void rule_done(struct policy_rule *r)
{
        strv_free(r->tools);
        strv_free(r->match);
        free(r->message);
        *r = (struct policy_rule){};
}

void config_policy_rules_free(struct policy_rule *rules, size_t n)
{
        if (!rules)
                return;
        for (size_t i = 0; i < n; i++)
                rule_done(&rules[i]);
        free(rules);
}

/* policy.rules replaces the whole list; null means none. */
int config_parse_policy_rules(struct ctx *x, const struct key_spec *k, const char *key,
                              const struct node *v, void *target)
{
        struct ptc_config *c = target;
        struct policy_rule *rules = NULL;
        size_t n = 0;
        int r = 0;

        if (!node_is_null(v)) {
                if (v->type != NODE_SEQUENCE)
                        return config_fail_value(x, v, key,
                                                 "a sequence of rules {tool, match, action, "
                                                 "message}");
                if (v->n_items > CONFIG_MAX_RULES)
                        return config_fail(x, v->line, key, "too many rules (at most %d)",
                                           CONFIG_MAX_RULES);
                rules = calloc(v->n_items ?: 1, sizeof(*rules));
                if (!rules)
                        return -ENOMEM;
                for (; n < v->n_items && r >= 0; n++) {
                        char rkey[64];

                        (void) snprintf(rkey, sizeof(rkey), "%s[%zu]", key, n);
                        rules[n].action = (enum policy_action) - 1; /* until one is read */
                        if (v->items[n]->type != NODE_MAPPING)
                                r = config_fail_value(x, v->items[n], rkey,
                                                      "a mapping {tool, match, action, message}");
                        else
                                r = config_parse_mapping(x, rkey, v->items[n], rule_keys,
                                                         ELEMENTSOF(rule_keys), &rules[n]);
                        if (r >= 0)
                                r = check_rule(x, v->items[n], rkey, &rules[n]);
                }
                if (r < 0) {
                        config_policy_rules_free(rules, n);
                        return r;
                }
        }
        config_policy_rules_free(c->policy.rules, c->policy.n_rules);
        c->policy.rules = rules;
        c->policy.n_rules = n;
        return 0;
}
