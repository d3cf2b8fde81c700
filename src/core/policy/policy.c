/* SPDX-License-Identifier: MIT */
/*
 * One call's verdict (policy.h): its subjects, each judged by the built-in lists and the
 * rules, and the strictest of them.
 */

#include "core/policy/policy.h"

#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/path-util.h"
#include "core/edit/v4a.h"
#include "core/fs/fs-chase.h"
#include "core/fs/path-resolve.h"
#include "core/policy/policy-internal.h"
#include "core/web/web-module.h"

struct decision {
        const struct ptc_config *c;
        const char *tool;
        const char *cwd;
        const char *home;
        struct policy_verdict *best;
        bool have;
        /* The distinct asks seen (policy_verdict.asks), whatever the call's verdict. */
        struct policy_ask asks[POLICY_ASKS_MAX];
        size_t n_asks;
        bool asks_overflow;
};

static const char *const origin_words[] = {"default", "rule", "dangerous", "hardline"};

const char *policy_verdict_kind_to_string(enum policy_verdict_kind k)
{
        static const char *const words[] = {"allow", "ask", "deny", "blocked"};

        return (size_t) k < ELEMENTSOF(words) ? words[k] : "?";
}

static void set_text(char *dst, const char *s)
{
        size_t n = strlen(s);

        if (n < POLICY_TEXT_MAX) {
                memcpy(dst, s, n + 1);
                return;
        }
        /* Cut at a UTF-8 boundary, marked. */
        n = POLICY_TEXT_MAX - 4;
        while (n > 0 && ((unsigned char) s[n] & 0xC0) == 0x80)
                n--;
        memcpy(dst, s, n);
        memcpy(dst + n, "...", 4);
}

static bool same_ask(const struct policy_ask *a, const struct policy_verdict *v)
{
        return a->origin == v->origin &&
               (v->origin == POLICY_ORIGIN_RULE ? a->rule == v->rule
                                                : strcmp(a->what, v->what) == 0);
}

/* Keep @v when it is stricter than what the call has so far (the first of equals). */
static void consider(struct decision *d, const struct policy_verdict *v)
{
        if (v->kind == POLICY_VERDICT_ASK) {
                size_t i;

                for (i = 0; i < d->n_asks && !same_ask(&d->asks[i], v); i++)
                        ;
                if (i == d->n_asks && d->n_asks < POLICY_ASKS_MAX) {
                        struct policy_ask *a = &d->asks[d->n_asks++];

                        a->origin = v->origin;
                        a->rule = v->rule;
                        memcpy(a->what, v->what, sizeof(a->what));
                        memcpy(a->subject, v->subject, sizeof(a->subject));
                } else if (i == d->n_asks)
                        d->asks_overflow = true;
        }
        if (!d->have || v->kind > d->best->kind) {
                *d->best = *v;
                d->have = true;
        }
}

static bool rule_names_tool(const struct policy_rule *r, const char *tool)
{
        for (size_t i = 0; r->tools[i]; i++)
                if (fnmatch(r->tools[i], tool, 0) == 0)
                        return true;
        return false;
}

static bool any_rule_names(const struct ptc_config *c, const char *tool)
{
        for (size_t i = 0; i < c->policy.n_rules; i++)
                if (rule_names_tool(&c->policy.rules[i], tool))
                        return true;
        return false;
}

typedef bool (*match_fn)(const char *pattern, const void *subject, const struct decision *d,
                         const struct policy_rule *r);

/* The first rule for the tool that has no match, or a pattern that @match says fits. */
static bool first_rule(const struct decision *d, match_fn match, const void *subject,
                       struct policy_verdict *v)
{
        const struct policy_config *p = &d->c->policy;

        for (size_t i = 0; i < p->n_rules; i++) {
                const struct policy_rule *r = &p->rules[i];
                bool hit = !r->match;

                if (!rule_names_tool(r, d->tool))
                        continue;
                for (size_t j = 0; !hit && match && r->match[j]; j++)
                        hit = match(r->match[j], subject, d, r);
                if (!hit)
                        continue;
                v->kind = (enum policy_verdict_kind) r->action;
                v->origin = POLICY_ORIGIN_RULE;
                v->rule = i;
                v->line = r->line;
                v->message = r->message;
                (void) snprintf(v->what, sizeof(v->what), "policy.rules[%zu]", i);
                return true;
        }
        return false;
}

static void join_words(const struct shell_command *c, char *out)
{
        char buf[POLICY_TEXT_MAX * 2];
        size_t n = 0;

        buf[0] = 0;
        for (size_t i = 0; i < c->argc && n < sizeof(buf) - 1; i++) {
                int k = snprintf(buf + n, sizeof(buf) - n, "%s%s", i ? " " : "", c->argv[i]);

                if (k < 0)
                        break;
                n += (size_t) k;
        }
        set_text(out, buf);
}

static bool command_match(const char *pattern, const void *subject, const struct decision *d,
                          const struct policy_rule *r)
{
        return policy_command_matches(subject, pattern, r->action == POLICY_ALLOW);
}

static void dangerous_verdict(const struct decision *d, const char *what, struct policy_verdict *v)
{
        v->kind = (enum policy_verdict_kind) d->c->policy.dangerous;
        v->origin = POLICY_ORIGIN_DANGEROUS;
        set_text(v->what, what);
}

/* One simple command: the hardline list, else the rules, else the dangerous list. */
static void judge_command(struct decision *d, const struct command_view *view)
{
        struct policy_verdict v = {};
        const char *what, *message;

        if ((what = policy_hardline(view, &message))) {
                v.kind = POLICY_VERDICT_BLOCKED;
                v.origin = POLICY_ORIGIN_HARDLINE;
                v.message = message;
                set_text(v.what, what);
        } else if (!first_rule(d, command_match, view->cmd, &v)) {
                if ((what = policy_dangerous(view)))
                        dangerous_verdict(d, what, &v);
        }
        join_words(view->cmd, v.subject);
        consider(d, &v);
}

/* Wrappers inside wrappers: `su -c "watch 'chroot / rm -rf /'"` is three levels. */
#define INNER_DEPTH_MAX 4

static int decide_command(struct decision *d, const char *raw_cmd, unsigned depth)
{
        _cleanup_shell_parse_ struct shell_parse *sp = NULL;
        int r;

        r = shell_parse(raw_cmd, strlen(raw_cmd), SHELL_PARSE_COMPLETE_LINES, &sp, NULL);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                /* Past the parser's caps: nothing in it can be vouched for. */
                struct policy_verdict v = {};

                if (!first_rule(d, NULL, NULL, &v))
                        dangerous_verdict(d, "command too complex to check", &v);
                set_text(v.subject, raw_cmd);
                consider(d, &v);
                return 0;
        }
        for (size_t i = 0; i < sp->n_commands; i++) {
                const struct command_view view = {
                        .parse = sp, .cmd = &sp->commands[i], .raw = raw_cmd, .home = d->home};

                judge_command(d, &view);
                /* What a wrapper the parser does not open runs is judged too. */
                if (depth < INNER_DEPTH_MAX) {
                        _cleanup_free_ char *inner = policy_inner_command(view.cmd);

                        if (inner && (r = decide_command(d, inner, depth + 1)) < 0)
                                return r;
                }
        }
        return 0;
}

static bool path_match(const char *pattern, const void *subject, const struct decision *d,
                       const struct policy_rule *r)
{
        return policy_path_matches(pattern, subject, d->cwd, d->home);
}

/*
 * The real path of @abs as the file tools will reach it (fs_chase(): symlinks and ".." as
 * the kernel follows them, a missing tail appended), or NULL when it cannot be resolved (a
 * magic link, a loop, a directory that cannot be searched): the tool then refuses or fails
 * on its own resolution, which is judged again (tool-chase.c). -ENOMEM.
 */
static int chase_real(const char *abs, char **ret)
{
        _cleanup_fs_chased_ struct fs_chased c = FS_CHASED_INIT;
        int r;

        *ret = NULL;
        r = fs_chase(abs, FS_CHASE_MISSING_OK, &c);
        if (r == -ENOMEM)
                return r;
        if (r >= 0)
                *ret = TAKE_PTR(c.path);
        return 0;
}

static void judge_path(struct decision *d, const char *form)
{
        struct policy_verdict v = {};

        first_rule(d, path_match, form, &v);
        set_text(v.subject, form);
        consider(d, &v);
}

static int decide_path(struct decision *d, const char *path, char *const *env)
{
        _cleanup_free_ char *abs = NULL, *real = NULL;
        int r;

        if (!path || !path[0])
                return 0;
        abs = fs_resolve_path(d->cwd, env, path);
        if (!abs)
                return -ENOMEM;
        r = chase_real(abs, &real);
        if (r < 0)
                return r;
        /*
         * Both spellings are judged: the text with ".." dropped lexically (a first pass, and
         * the words a prompt shows), and the object the kernel reaches. A rule on /etc
         * catches a symlink into it, and an allow of the link's directory does not let the
         * write through. The tools judge the real path again on the descriptor they use.
         */
        path_normalize_lexical(abs);
        judge_path(d, abs);
        if (real && strcmp(abs, real) != 0)
                judge_path(d, real);
        return 0;
}

static int decide_paths(struct decision *d, json_t *args, char *const *env)
{
        json_t *pv = json_object_get(args, "path");
        const char *mode = json_string_value(json_object_get(args, "mode"));
        const char *text = json_string_value(json_object_get(args, "patch"));
        int r;

        if (strcmp(d->tool, "patch") == 0 && mode && strcmp(mode, "patch") == 0 && text) {
                _cleanup_v4a_patch_ struct v4a_patch *p = NULL;
                _cleanup_free_ char *err = NULL;

                r = v4a_parse(text, json_string_length(json_object_get(args, "patch")), &p, &err);
                if (r == -ENOMEM)
                        return r;
                for (size_t i = 0; p && i < p->n_ops; i++) {
                        r = decide_path(d, p->ops[i].path, env);
                        if (r >= 0)
                                r = decide_path(d, p->ops[i].new_path, env);
                        if (r < 0)
                                return r;
                }
                return 0;
        }
        if (strcmp(d->tool, "search_files") == 0 && (!pv || json_is_null(pv)))
                return decide_path(d, ".", env);
        return decide_path(d, json_string_value(pv), env);
}

static bool host_match(const char *pattern, const void *subject, const struct decision *d,
                       const struct policy_rule *r)
{
        return policy_host_matches(pattern, subject);
}

static void decide_host(struct decision *d, const struct web_module *m, const char *url)
{
        _cleanup_free_ char *host = NULL;
        struct policy_verdict v = {};

        /* Without the module (and so without web_extract) a URL has no host. */
        host = m && m->url_host ? m->url_host(url) : NULL;
        first_rule(d, host ? host_match : NULL, host, &v);
        set_text(v.subject, host ?: url);
        consider(d, &v);
}

/* Every URL web_extract would fetch: a list of strings, or one string (web-extract.c). */
static int decide_hosts(struct decision *d, json_t *args)
{
        const struct web_module *m = web_module_get(NULL);
        json_t *urls = json_object_get(args, "urls"), *u;
        size_t i;

        if (json_is_string(urls))
                decide_host(d, m, json_string_value(urls));
        json_array_foreach(urls, i, u)
        {
                if (json_is_string(u))
                        decide_host(d, m, json_string_value(u));
        }
        return 0;
}

/*
 * The verdict's final touches: with no subject (web_search, an MCP tool, an empty command or
 * argv), the call itself is judged; "no rule" for a default, the asks for an ask.
 */
static void finish_verdict(struct decision *d, struct policy_verdict *ret)
{
        if (!d->have) {
                struct policy_verdict v = {};

                first_rule(d, NULL, NULL, &v);
                consider(d, &v);
        }
        if (ret->origin == POLICY_ORIGIN_DEFAULT)
                set_text(ret->what, "no rule");
        if (ret->kind == POLICY_VERDICT_ASK) {
                memcpy(ret->asks, d->asks, sizeof(d->asks));
                ret->n_asks = d->n_asks;
                ret->asks_overflow = d->asks_overflow;
        }
}

int policy_decide_exec(const struct ptc_config *c, char *const *const *spellings, size_t n,
                       const char *home, struct policy_verdict *ret)
{
        struct decision d = {.c = c, .tool = "terminal", .cwd = "/", .home = home, .best = ret};

        *ret = (struct policy_verdict){};
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ unsigned *flags = NULL;
                struct shell_command cmd = {.argv = (char **) spellings[i]};
                struct shell_parse sp = {.commands = &cmd, .n_commands = 1};
                /* No raw text: the words are literal, never shell (a fork bomb's text as an
                 * argument of echo is an argument). */
                const struct command_view view = {
                        .parse = &sp, .cmd = &cmd, .raw = "", .home = home};

                while (cmd.argv[cmd.argc])
                        cmd.argc++;
                if (cmd.argc == 0)
                        continue;
                /* Literal words, no assignment, no wrapper: what a wrapper runs is an exec
                 * of its own, judged when it comes. */
                flags = calloc(cmd.argc, sizeof(unsigned));
                if (!flags)
                        return -ENOMEM;
                cmd.word_flags = flags;
                cmd.cmd_index = 0;
                judge_command(&d, &view);
        }
        finish_verdict(&d, ret);
        return 0;
}

int policy_decide(const struct ptc_config *c, const char *tool, json_t *args, const char *cwd,
                  char *const *env, struct policy_verdict *ret)
{
        _cleanup_free_ char *home = NULL;
        struct decision d = {.c = c, .tool = tool, .cwd = cwd ?: "/", .best = ret};
        json_t *cmd;
        int r = 0;

        *ret = (struct policy_verdict){};
        /* The common case costs no parse or path lookup: a tool no rule names and no
         * built-in list is for is allowed as it is. */
        if (config_policy_subject(tool) != POLICY_SUBJECT_COMMAND && !any_rule_names(c, tool)) {
                set_text(ret->what, "no rule");
                return 0;
        }
        if (fs_home_dir(env, &home) == -ENOMEM)
                return -ENOMEM;
        d.home = home;

        switch (config_policy_subject(tool)) {
        case POLICY_SUBJECT_COMMAND:
                cmd = json_object_get(args, "command");
                if (json_is_string(cmd))
                        r = decide_command(&d, json_string_value(cmd), 0);
                break;
        case POLICY_SUBJECT_PATH:
                r = decide_paths(&d, args, env);
                break;
        case POLICY_SUBJECT_HOST:
                r = decide_hosts(&d, args);
                break;
        case POLICY_SUBJECT_CALL:
                break;
        }
        if (r < 0)
                return r;
        finish_verdict(&d, ret);
        return 0;
}

int policy_decide_real_path(const struct ptc_config *c, const char *tool, const char *real,
                            const char *cwd, char *const *env, struct policy_verdict *ret)
{
        _cleanup_free_ char *home = NULL;
        struct decision d = {.c = c, .tool = tool, .cwd = cwd ?: "/", .best = ret};

        *ret = (struct policy_verdict){};
        if (!any_rule_names(c, tool)) {
                set_text(ret->what, "no rule");
                return 0;
        }
        if (fs_home_dir(env, &home) == -ENOMEM)
                return -ENOMEM;
        d.home = home;
        judge_path(&d, real);
        if (ret->origin == POLICY_ORIGIN_DEFAULT)
                set_text(ret->what, "no rule");
        if (ret->kind == POLICY_VERDICT_ASK) {
                memcpy(ret->asks, d.asks, sizeof(d.asks));
                ret->n_asks = d.n_asks;
                ret->asks_overflow = d.asks_overflow;
        }
        return 0;
}

json_t *policy_verdict_to_json(const struct policy_verdict *v)
{
        json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "decision",
                              policy_verdict_kind_to_string(v->kind), "origin",
                              origin_words[v->origin], "what", v->what, "subject", v->subject);

        if (o && v->origin == POLICY_ORIGIN_RULE &&
            (json_object_set_new(o, "rule", json_integer((json_int_t) v->rule)) < 0 ||
             (v->line && json_object_set_new(o, "line", json_integer((json_int_t) v->line)) < 0)))
                return json_decref(o), NULL;
        if (o && v->message && json_object_set_new(o, "message", json_string(v->message)) < 0)
                return json_decref(o), NULL;
        if (o && v->kind == POLICY_VERDICT_ASK && (v->n_asks > 1 || v->asks_overflow)) {
                json_t *asks = json_array();

                if (!asks || json_object_set_new(o, "asks", asks) < 0 ||
                    (v->asks_overflow && json_object_set_new(o, "asks_overflow", json_true()) < 0))
                        return json_decref(o), NULL;
                for (size_t i = 0; i < v->n_asks; i++) {
                        const struct policy_ask *a = &v->asks[i];
                        json_t *e = json_pack("{s:s, s:s, s:s}", "origin", origin_words[a->origin],
                                              "what", a->what, "subject", a->subject);

                        if (!e ||
                            (a->origin == POLICY_ORIGIN_RULE &&
                             json_object_set_new(e, "rule", json_integer((json_int_t) a->rule)) <
                                     0) ||
                            json_array_append_new(asks, e) < 0)
                                return json_decref(o), NULL;
                }
        }
        return o;
}

static int asks_from_json(json_t *asks, bool overflow, struct policy_verdict *v)
{
        json_t *e;
        size_t i;

        /* One ask: the verdict's own. */
        v->n_asks = 1;
        v->asks[0] = (struct policy_ask){.origin = v->origin, .rule = v->rule};
        memcpy(v->asks[0].what, v->what, sizeof(v->what));
        memcpy(v->asks[0].subject, v->subject, sizeof(v->subject));
        v->asks_overflow = overflow;
        if (!asks)
                return 0;
        if (!json_is_array(asks) || json_array_size(asks) > POLICY_ASKS_MAX)
                return -EINVAL;
        v->n_asks = 0;
        json_array_foreach(asks, i, e)
        {
                struct policy_verdict one;
                json_t *copy = json_pack(
                        "{s:O?, s:O?, s:O?, s:O?}", "origin", json_object_get(e, "origin"), "what",
                        json_object_get(e, "what"), "subject", json_object_get(e, "subject"),
                        "rule", json_object_get(e, "rule"));
                int r = copy ? policy_verdict_from_json(copy, &one) : -ENOMEM;

                json_decref(copy);
                if (r < 0)
                        return r;
                v->asks[v->n_asks++] = one.asks[0];
        }
        return v->n_asks > 0 ? 0 : -EINVAL;
}

int policy_verdict_from_json(json_t *j, struct policy_verdict *ret)
{
        const char *origin = json_string_value(json_object_get(j, "origin"));
        const char *what = json_string_value(json_object_get(j, "what"));
        const char *subject = json_string_value(json_object_get(j, "subject"));
        json_t *rule = json_object_get(j, "rule"), *line = json_object_get(j, "line");

        *ret = (struct policy_verdict){.kind = POLICY_VERDICT_ASK};
        for (size_t i = 0; origin && i < ELEMENTSOF(origin_words); i++)
                if (strcmp(origin, origin_words[i]) == 0)
                        ret->origin = (enum policy_origin) i;
        if (!what || !subject || ret->origin == POLICY_ORIGIN_DEFAULT ||
            ret->origin == POLICY_ORIGIN_HARDLINE ||
            (ret->origin == POLICY_ORIGIN_RULE &&
             (!json_is_integer(rule) || json_integer_value(rule) < 0)))
                return -EINVAL;
        if (ret->origin == POLICY_ORIGIN_RULE) {
                ret->rule = (size_t) json_integer_value(rule);
                if (json_is_integer(line) && json_integer_value(line) > 0)
                        ret->line = (size_t) json_integer_value(line);
        }
        set_text(ret->what, what);
        set_text(ret->subject, subject);
        return asks_from_json(json_object_get(j, "asks"),
                              json_is_true(json_object_get(j, "asks_overflow")), ret);
}

json_t *policy_rules_to_json(const struct policy_config *p)
{
        json_auto_t *a = json_array();

        for (size_t i = 0; a && i < p->n_rules; i++) {
                const struct policy_rule *r = &p->rules[i];
                json_t *o = json_pack("{s:[], s:s}", "tool", "action",
                                      config_policy_action_to_string(r->action));
                json_t *tools = json_object_get(o, "tool"), *match = NULL;

                for (char **t = r->tools; o && *t; t++)
                        if (json_array_append_new(tools, json_string(*t)) < 0)
                                return NULL;
                if (o && r->match) {
                        match = json_array();
                        if (!match || json_object_set_new(o, "match", match) < 0)
                                return json_decref(o), NULL;
                        for (char **m = r->match; *m; m++)
                                if (json_array_append_new(match, json_string(*m)) < 0)
                                        return json_decref(o), NULL;
                }
                if (o && r->message &&
                    json_object_set_new(o, "message", json_string(r->message)) < 0)
                        return json_decref(o), NULL;
                if (!o || json_array_append_new(a, o) < 0)
                        return NULL;
        }
        return TAKE_PTR(a);
}
