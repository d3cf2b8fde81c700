/* SPDX-License-Identifier: MIT */
/*
 * The grammar of the shell parser: lists, pipelines, simple and compound commands and their
 * redirections. A recursive-descent parser over a one-token-lookahead lexer, after bash's own
 * grammar (parse.y). It builds no tree: each simple command is recorded (shell-parse.c) as
 * soon as it is complete, and the structure shows only in the command flags (background,
 * substitution, ...).
 *
 * Why a grammar and not a scan for operators: '&' means "background" only as a command
 * separator; inside quotes, in 2>&1, &>, >&, |& and ;& it means something else, and the
 * background '&' applies to the whole and-or list before it (`a && b &`), including groups
 * and subshells. Likewise a server name is a command only in command position.
 *
 * The lexer (shell-lex.c) scans words with their quoting, and calls back here for a word's
 * substitutions: $( ), <( ) and >( ) by this parser on the same input, backticks and the
 * strings of sh -c and eval by a parser of their own (shell_parse_string()).
 */

#include "core/shell/shell-internal.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/diag.h"
#include "basic/macro.h"
#include "core/shell/shell-parse.h"

static int parse_list(struct parser *p, bool top);
static int parse_command(struct parser *p);
static int parse_function_body(struct parser *p);

/*
 * A list up to its ')' (the '(' is consumed), one level deeper and with @ctx added to the
 * flags of its commands; @what is the syntax error when the ')' is missing.
 */
static int parse_paren_list(struct parser *p, unsigned ctx, const char *what)
{
        unsigned saved_ctx = p->ctx, saved_depth = p->depth;
        struct token *t;
        int r = shell_enter(p);

        if (r < 0)
                return r;
        p->ctx |= ctx;
        r = parse_list(p, false);
        p->ctx = saved_ctx;
        p->depth = saved_depth;
        if (r >= 0)
                r = shell_peek(p, &t);
        if (r < 0)
                return r;
        if (t->type != TOK_RPAREN)
                return shell_syntax_error(p, what);
        shell_consume(p);
        return 0;
}

/*
 * A nested list up to its ')' ($( ), <( ), >( )), by this parser on the same input. The
 * lexer is between tokens here (a word is being scanned), so the lookahead is empty.
 */
int shell_nested_list(struct parser *p, unsigned ctx)
{
        assert(!p->has_peek);
        return parse_paren_list(p, ctx, "unterminated $( or <(");
}

static bool is_reserved(const struct token *t, const char *word)
{
        return t->type == TOK_WORD && !(t->flags & (SHELL_WORD_QUOTED | SHELL_WORD_EXPANDS)) &&
               strcmp(t->text, word) == 0;
}

/* A token that ends a list: its caller decides whether it is the one expected. */
static bool is_list_end(const struct token *t)
{
        static const char *const words[] = {"then", "elif", "else", "fi",
                                            "do",   "done", "esac", "}"};

        switch (t->type) {
        case TOK_EOF:
        case TOK_RPAREN:
        case TOK_DSEMI:
        case TOK_SEMI_AMP:
        case TOK_DSEMI_AMP:
                return true;
        case TOK_WORD:
                for (size_t i = 0; i < ELEMENTSOF(words); i++)
                        if (is_reserved(t, words[i]))
                                return true;
                return false;
        default:
                return false;
        }
}

static int expect_word(struct parser *p, const char *word)
{
        struct token *t;
        int r = shell_peek(p, &t);

        if (r < 0)
                return r;
        if (!is_reserved(t, word))
                return diag_set(&p->st->diag, -EINVAL,
                                "shell syntax error at offset %zu: expected '%s'", t->start, word);
        shell_consume(p);
        return 0;
}

/* A list, then the reserved word @word that ends it. */
static int parse_list_until(struct parser *p, const char *word)
{
        int r = parse_list(p, false);

        return r < 0 ? r : expect_word(p, word);
}

/* do list done */
static int parse_do_group(struct parser *p)
{
        int r = expect_word(p, "do");

        return r < 0 ? r : parse_list_until(p, "done");
}

/* The syntax error of a token that cannot come where it is. */
static int unexpected_token(struct parser *p, const struct token *t)
{
        return diag_set(&p->st->diag, -EINVAL,
                        "shell syntax error at offset %zu: unexpected '%.*s'", t->start,
                        (int) MIN(t->end - t->start, (size_t) 32), p->s + t->start);
}

static int skip_newlines(struct parser *p)
{
        struct token *t;
        int r;

        for (;;) {
                r = shell_peek(p, &t);
                if (r < 0 || t->type != TOK_NEWLINE)
                        return r;
                shell_consume(p);
        }
}

/* Puts the commands recorded from the @start'th on in the background. */
static void set_background(struct parser *p, size_t start)
{
        for (size_t i = start; i < p->st->out->n_commands; i++)
                p->st->out->commands[i].flags |= SHELL_CMD_BACKGROUND;
}

/* [n]op word; recorded in @c, or dropped when NULL (a compound command's redirection). */
static int parse_redirect(struct parser *p, struct shell_command *c)
{
        struct shell_redirect rd = {.fd = -1};
        struct token *t;
        int r = shell_peek(p, &t);

        if (r < 0)
                return r;
        if (t->type == TOK_IO_NUMBER) {
                rd.fd = t->fd;
                shell_consume(p);
                r = shell_peek(p, &t);
                if (r < 0)
                        return r;
                assert(t->type == TOK_REDIR); /* lex_word() looked */
        }
        rd.op = t->redir;
        shell_consume(p);
        r = shell_peek(p, &t);
        if (r < 0)
                return r;
        if (t->type != TOK_WORD)
                return shell_syntax_error(p, "redirection without a target");
        r = shell_count_word(p);
        if (r < 0)
                return r;
        rd.target = TAKE_PTR(t->text);
        rd.target_flags = t->flags;
        shell_consume(p);

        if (rd.op == SHELL_REDIRECT_HEREDOC || rd.op == SHELL_REDIRECT_HEREDOC_TAB) {
                char *d;

                if (p->n_heredocs >= SHELL_PARSE_HEREDOCS_MAX) {
                        free(rd.target);
                        return diag_set(&p->st->diag, -E2BIG,
                                        "more than %d here-documents on one line",
                                        SHELL_PARSE_HEREDOCS_MAX);
                }
                d = strdup(rd.target);
                if (!d) {
                        free(rd.target);
                        return -ENOMEM;
                }
                p->heredocs[p->n_heredocs++] = (struct heredoc){
                        .delim = d,
                        .strip_tabs = rd.op == SHELL_REDIRECT_HEREDOC_TAB,
                };
        }
        if (!c) {
                free(rd.target);
                return 0;
        }
        {
                struct shell_redirect *nr =
                        reallocarray(c->redirects, c->n_redirects + 1, sizeof(*nr));

                if (!nr) {
                        free(rd.target);
                        return -ENOMEM;
                }
                c->redirects = nr;
                c->redirects[c->n_redirects++] = rd;
        }
        return 0;
}

static bool is_redirect(const struct token *t)
{
        return t->type == TOK_REDIR || t->type == TOK_IO_NUMBER;
}

/* The redirections after a compound command. */
static int parse_trailing_redirects(struct parser *p)
{
        for (;;) {
                struct token *t;
                int r = shell_peek(p, &t);

                if (r < 0)
                        return r;
                if (!is_redirect(t))
                        return 0;
                r = parse_redirect(p, NULL);
                if (r < 0)
                        return r;
        }
}

/* "( )" of a function definition, from the '(' in the lookahead, then the body. */
static int parse_function_parens(struct parser *p)
{
        struct token *t;
        int r;

        shell_consume(p);
        r = shell_peek(p, &t);
        if (r < 0)
                return r;
        if (t->type != TOK_RPAREN)
                return shell_syntax_error(p, "expected ')' after '('");
        shell_consume(p);
        return parse_function_body(p);
}

static int parse_simple(struct parser *p)
{
        struct shell_command c = {};
        _cleanup_free_ char *nested = NULL;
        bool prefix = true;
        size_t words_before = 0;
        int r = 0;

        for (;;) {
                struct token *t;

                r = shell_peek(p, &t);
                if (r < 0)
                        break;
                if (is_redirect(t)) {
                        r = parse_redirect(p, &c);
                        if (r < 0)
                                break;
                        continue;
                }
                if (t->type != TOK_WORD)
                        break;
                if (prefix && shell_valid_assignment_name(t->text, t->eq)) {
                        r = shell_command_add_word(p, &c, TAKE_PTR(t->text),
                                                   t->flags | SHELL_WORD_ASSIGNMENT);
                        shell_consume(p);
                        if (r < 0)
                                break;
                        words_before++;
                        continue;
                }
                prefix = false;
                r = shell_command_add_word(p, &c, TAKE_PTR(t->text), t->flags);
                shell_consume(p);
                if (r < 0)
                        break;
                if (c.argc == 1 && words_before == 0 && c.n_redirects == 0) {
                        /* name ( ) compound-command: a function definition, not a command. */
                        r = shell_peek(p, &t);
                        if (r < 0)
                                break;
                        if (t->type == TOK_LPAREN) {
                                shell_command_release(&c);
                                return parse_function_parens(p);
                        }
                }
        }
        if (r < 0) {
                shell_command_release(&c);
                return r;
        }
        if (c.argc == 0 && c.n_redirects == 0)
                return shell_syntax_error(p, "expected a command");

        c.cmd_index = shell_strip_wrappers(c.argv, c.word_flags, c.argc);
        r = shell_nested_string(&c, &nested);
        if (r < 0) {
                shell_command_release(&c);
                return r;
        }
        r = shell_record_command(p, &c);
        if (r < 0 || !nested)
                return r;
        return shell_parse_string(p, nested, strlen(nested), SHELL_CMD_NESTED_SHELL);
}

/* [[ ... ]]: recorded with its operands and operators as words. */
static int parse_cond(struct parser *p)
{
        struct shell_command c = {};
        int r = 0;

        for (;;) {
                struct token *t;
                char *w;
                bool end;

                r = shell_peek(p, &t);
                if (r < 0)
                        break;
                if (t->type == TOK_EOF) {
                        r = shell_syntax_error(p, "unterminated [[");
                        break;
                }
                if (t->type == TOK_NEWLINE) {
                        shell_consume(p);
                        continue;
                }
                end = c.argc > 0 && is_reserved(t, "]]");
                if (t->type == TOK_WORD)
                        w = TAKE_PTR(t->text);
                else
                        w = strndup(p->s + t->start, t->end - t->start);
                if (!w) {
                        r = -ENOMEM;
                        break;
                }
                r = shell_command_add_word(p, &c, w, t->type == TOK_WORD ? t->flags : 0);
                shell_consume(p);
                if (r < 0 || end)
                        break;
        }
        if (r < 0) {
                shell_command_release(&c);
                return r;
        }
        r = shell_record_command(p, &c);
        if (r < 0)
                return r;
        return parse_trailing_redirects(p);
}

static int parse_for(struct parser *p)
{
        struct token *t;
        int r = shell_peek(p, &t);

        if (r < 0)
                return r;
        if (t->type == TOK_LPAREN && at(p, 0, '(')) {
                /* for ((i = 0; i < n; i++)) */
                p->pos--;
                shell_consume(p);
                r = shell_scan_arith(p);
                if (r == 0)
                        r = shell_syntax_error(p, "bad for (( ))");
        } else if (t->type == TOK_WORD)
                shell_consume(p);
        else
                r = shell_syntax_error(p, "expected a name after 'for'");
        if (r < 0)
                return r;
        r = skip_newlines(p);
        if (r >= 0)
                r = shell_peek(p, &t);
        if (r >= 0 && is_reserved(t, "in")) {
                shell_consume(p);
                for (;;) {
                        r = shell_peek(p, &t);
                        if (r < 0 || t->type != TOK_WORD)
                                break;
                        r = shell_count_word(p);
                        if (r < 0)
                                break;
                        shell_consume(p);
                }
        }
        if (r < 0)
                return r;
        if (t->type == TOK_SEMI || t->type == TOK_NEWLINE)
                shell_consume(p);
        r = skip_newlines(p);
        if (r >= 0)
                r = shell_peek(p, &t);
        if (r < 0)
                return r;
        if (is_reserved(t, "{")) {
                shell_consume(p);
                return parse_list_until(p, "}");
        }
        return parse_do_group(p);
}

static int parse_case(struct parser *p)
{
        struct token *t;
        int r = shell_peek(p, &t);

        if (r < 0)
                return r;
        if (t->type != TOK_WORD)
                return shell_syntax_error(p, "expected a word after 'case'");
        shell_consume(p);
        r = skip_newlines(p);
        if (r >= 0)
                r = expect_word(p, "in");
        for (;;) {
                if (r >= 0)
                        r = skip_newlines(p);
                if (r >= 0)
                        r = shell_peek(p, &t);
                if (r < 0)
                        return r;
                if (is_reserved(t, "esac")) {
                        shell_consume(p);
                        return 0;
                }
                if (t->type == TOK_LPAREN) {
                        shell_consume(p);
                        r = shell_peek(p, &t);
                        if (r < 0)
                                return r;
                }
                /* pattern [| pattern]... ) */
                for (;;) {
                        if (t->type != TOK_WORD)
                                return shell_syntax_error(p, "expected a case pattern");
                        shell_consume(p);
                        r = shell_peek(p, &t);
                        if (r < 0)
                                return r;
                        if (t->type == TOK_RPAREN)
                                break;
                        if (t->type != TOK_PIPE)
                                return shell_syntax_error(p, "expected ')' after a case pattern");
                        shell_consume(p);
                        r = shell_peek(p, &t);
                        if (r < 0)
                                return r;
                }
                shell_consume(p);
                r = parse_list(p, false);
                if (r >= 0)
                        r = shell_peek(p, &t);
                if (r < 0)
                        return r;
                if (t->type == TOK_DSEMI || t->type == TOK_SEMI_AMP || t->type == TOK_DSEMI_AMP)
                        shell_consume(p);
                else if (!is_reserved(t, "esac"))
                        return shell_syntax_error(p, "expected ';;' or 'esac'");
        }
}

static int parse_if(struct parser *p)
{
        struct token *t;
        int r;

        for (;;) {
                r = parse_list_until(p, "then");
                if (r >= 0)
                        r = parse_list(p, false);
                if (r >= 0)
                        r = shell_peek(p, &t);
                if (r < 0)
                        return r;
                if (!is_reserved(t, "elif"))
                        break;
                shell_consume(p);
        }
        if (is_reserved(t, "else")) {
                shell_consume(p);
                return parse_list_until(p, "fi");
        }
        return expect_word(p, "fi");
}

/* { list } */
static int parse_brace_group(struct parser *p)
{
        return parse_list_until(p, "}");
}

/* while list do list done, until list do list done */
static int parse_while(struct parser *p)
{
        int r = parse_list(p, false);

        return r < 0 ? r : parse_do_group(p);
}

static int parse_function_keyword(struct parser *p)
{
        struct token *t;
        int r = shell_peek(p, &t);

        if (r < 0)
                return r;
        if (t->type != TOK_WORD)
                return shell_syntax_error(p, "expected a function name");
        shell_consume(p);
        r = shell_peek(p, &t);
        if (r < 0)
                return r;
        if (t->type == TOK_LPAREN)
                return parse_function_parens(p);
        return parse_function_body(p);
}

static int parse_coproc(struct parser *p)
{
        size_t start = p->st->out->n_commands;
        struct token *t;
        int r = shell_peek(p, &t);

        if (r < 0)
                return r;
        /* coproc NAME { ...; }: NAME is followed by a compound command. */
        if (t->type == TOK_WORD && !(t->flags & (SHELL_WORD_QUOTED | SHELL_WORD_EXPANDS))) {
                size_t i = p->pos;

                while (i < p->n && is_blank(p->s[i]))
                        i++;
                if (i < p->n &&
                    (p->s[i] == '(' || (p->s[i] == '{' && i + 1 < p->n &&
                                        (is_blank(p->s[i + 1]) || p->s[i + 1] == '\n'))))
                        shell_consume(p);
        }
        r = parse_command(p);
        set_background(p, start);
        return r;
}

/*
 * The commands that start with a reserved word (but [[, which parse_command() reads itself):
 * @parse reads the rest, the word consumed, one level deeper.
 */
static const struct {
        const char *word;
        int (*parse)(struct parser *p);
        bool compound; /* a compound command: redirections may follow; it may be a function body */
} keywords[] = {
        {"{", parse_brace_group, true},  {"if", parse_if, true},
        {"while", parse_while, true},    {"until", parse_while, true},
        {"for", parse_for, true},        {"select", parse_for, true},
        {"case", parse_case, true},      {"function", parse_function_keyword, false},
        {"coproc", parse_coproc, false},
};

/* A function body: a compound command (bash refuses `f() cmd`). */
static int parse_function_body(struct parser *p)
{
        unsigned saved = p->ctx;
        struct token *t;
        bool compound = false;
        int r = skip_newlines(p);

        if (r >= 0)
                r = shell_peek(p, &t);
        if (r >= 0)
                r = shell_enter(p);
        if (r < 0)
                return r;
        compound = t->type == TOK_LPAREN || is_reserved(t, "[[");
        for (size_t i = 0; i < ELEMENTSOF(keywords) && !compound; i++)
                compound = keywords[i].compound && is_reserved(t, keywords[i].word);
        if (!compound)
                return shell_syntax_error(p, "a function body must be a compound command");
        p->ctx |= SHELL_CMD_FUNCTION;
        r = parse_command(p);
        p->ctx = saved;
        p->depth--;
        return r;
}

static int parse_command(struct parser *p)
{
        unsigned saved_depth = p->depth;
        struct token *t;
        int r = shell_peek(p, &t);

        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(keywords); i++)
                if (is_reserved(t, keywords[i].word)) {
                        shell_consume(p);
                        r = shell_enter(p);
                        if (r >= 0)
                                r = keywords[i].parse(p);
                        p->depth = saved_depth;
                        if (r < 0 || !keywords[i].compound)
                                return r;
                        return parse_trailing_redirects(p);
                }
        if (is_reserved(t, "[["))
                return parse_cond(p);
        if (is_list_end(t) && t->type == TOK_WORD)
                return shell_syntax_error(p, "unexpected reserved word");
        if (t->type != TOK_LPAREN)
                return parse_simple(p);

        /* (( arithmetic )), else ( subshell ) */
        if (at(p, 0, '(')) {
                p->pos--;
                r = shell_scan_arith(p);
                if (r < 0)
                        return r;
                if (r > 0) {
                        shell_consume(p);
                        return parse_trailing_redirects(p);
                }
                p->pos++;
        }
        shell_consume(p);
        r = parse_paren_list(p, SHELL_CMD_SUBSHELL, "expected ')'");
        return r < 0 ? r : parse_trailing_redirects(p);
}

static bool ends_pipeline(const struct token *t)
{
        switch (t->type) {
        case TOK_EOF:
        case TOK_NEWLINE:
        case TOK_SEMI:
        case TOK_AMP:
        case TOK_AND:
        case TOK_OR:
        case TOK_RPAREN:
                return true;
        default:
                return false;
        }
}

/* @item [op newline... @item]..., where op is @op1 or @op2. */
static int parse_joined(struct parser *p, int (*item)(struct parser *), enum tok_type op1,
                        enum tok_type op2)
{
        struct token *t;
        int r;

        for (;;) {
                r = item(p);
                if (r >= 0)
                        r = shell_peek(p, &t);
                if (r < 0)
                        return r;
                if (t->type != op1 && t->type != op2)
                        return 0;
                shell_consume(p);
                r = skip_newlines(p);
                if (r < 0)
                        return r;
        }
}

/* [time [-p]] [!] command [| command]... */
static int parse_pipeline(struct parser *p)
{
        bool prefixed = false;
        struct token *t;
        int r;

        for (;;) {
                r = shell_peek(p, &t);
                if (r < 0)
                        return r;
                if (is_reserved(t, "!"))
                        shell_consume(p);
                else if (is_reserved(t, "time")) {
                        shell_consume(p);
                        r = shell_peek(p, &t);
                        if (r < 0)
                                return r;
                        if (is_reserved(t, "-p"))
                                shell_consume(p);
                } else
                        break;
                prefixed = true;
        }
        if (prefixed && ends_pipeline(t))
                return 0; /* `time` alone times nothing */
        return parse_joined(p, parse_command, TOK_PIPE, TOK_PIPE_AMP);
}

static int parse_and_or(struct parser *p)
{
        return parse_joined(p, parse_pipeline, TOK_AND, TOK_OR);
}

/*
 * and-or lists separated by ; & or newlines, up to a token that ends the list (left in the
 * lookahead for the caller). '&' puts everything recorded for its and-or list (groups,
 * subshells and substitutions included) in the background.
 */
static int parse_list(struct parser *p, bool top)
{
        for (;;) {
                size_t start = p->st->out->n_commands;
                struct token *t;
                int r = shell_peek(p, &t);

                if (r < 0)
                        return r;
                if (t->type == TOK_NEWLINE) {
                        shell_consume(p);
                        if (top)
                                p->complete = p->st->out->n_commands;
                        continue;
                }
                if (is_list_end(t))
                        return 0;
                r = parse_and_or(p);
                if (r >= 0)
                        r = shell_peek(p, &t);
                if (r < 0)
                        return r;
                switch (t->type) {
                case TOK_AMP:
                        set_background(p, start);
                        shell_consume(p);
                        break;
                case TOK_SEMI:
                        shell_consume(p);
                        break;
                case TOK_NEWLINE:
                        shell_consume(p);
                        if (top)
                                p->complete = p->st->out->n_commands;
                        break;
                default:
                        if (is_list_end(t))
                                return 0;
                        return unexpected_token(p, t);
                }
        }
}

/* A whole string: a list up to its end. */
int shell_parse_all(struct parser *p)
{
        struct token *t;
        int r = parse_list(p, p->top);

        if (r >= 0)
                r = shell_peek(p, &t);
        if (r < 0)
                return r;
        if (t->type != TOK_EOF)
                return unexpected_token(p, t);
        p->complete = p->st->out->n_commands;
        return 0;
}
