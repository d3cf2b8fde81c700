/* SPDX-License-Identifier: MIT */
/*
 * The lexer of the shell parser: operators, and words with their quoting and expansions.
 * A word's substitutions ($( ), `..`, <( ), >( )) are parsed right there, by the grammar
 * (shell-grammar.c), recursively: on the same input for $( ) (which may hold here-documents
 * and case patterns), on an unescaped copy for backticks.
 */

#include "core/shell/shell-internal.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/diag.h"
#include "basic/macro.h"
#include "basic/parse-util.h"

static int scan_word(struct parser *p, struct buf *b, unsigned *flags, size_t *eq);
static int scan_dollar(struct parser *p, struct buf *b, unsigned *flags, bool in_dquote);

int shell_syntax_error(struct parser *p, const char *what)
{
        return diag_set(&p->st->diag, -EINVAL, "shell syntax error at offset %zu: %s", p->pos,
                        what);
}

void shell_token_release(struct token *t)
{
        t->text = mfree_str(t->text);
}

int shell_enter(struct parser *p)
{
        if (p->depth >= SHELL_PARSE_DEPTH_MAX)
                return diag_set(&p->st->diag, -ELOOP, "shell command nested deeper than %d",
                                SHELL_PARSE_DEPTH_MAX);
        p->depth++;
        return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Lexer                                                                                    */

/* Blanks, line continuations and a comment (which only starts a token). */
static void skip_blanks(struct parser *p)
{
        while (p->pos < p->n) {
                if (is_blank(p->s[p->pos]))
                        p->pos++;
                else if (p->s[p->pos] == '\\' && at(p, 1, '\n'))
                        p->pos += 2;
                else if (p->s[p->pos] == '#') {
                        while (p->pos < p->n && p->s[p->pos] != '\n')
                                p->pos++;
                } else
                        break;
        }
}

/*
 * After a newline: the bodies of the here-documents started on the line. A body missing
 * its delimiter runs to the end (bash warns and goes on).
 */
static void skip_heredoc_bodies(struct parser *p)
{
        for (size_t i = 0; i < p->n_heredocs; i++) {
                const char *d = p->heredocs[i].delim;
                size_t dl = strlen(d);

                while (p->pos < p->n) {
                        size_t ls = p->pos, le;
                        const char *nl = memchr(p->s + ls, '\n', p->n - ls);

                        le = nl ? (size_t) (nl - p->s) : p->n;
                        p->pos = nl ? le + 1 : le;
                        if (p->heredocs[i].strip_tabs)
                                while (ls < le && p->s[ls] == '\t')
                                        ls++;
                        if (le - ls == dl && memcmp(p->s + ls, d, dl) == 0)
                                break;
                }
                free(p->heredocs[i].delim);
        }
        p->n_heredocs = 0;
}

/*
 * ((...)) from p->pos (at the first '('): on success p->pos is after "))" and returns 1;
 * returns 0 (p->pos unchanged) when the parentheses do not close as "))", which bash then
 * reads as nested subshells (`((a); b)`); -EINVAL when they never close.
 */
int shell_scan_arith(struct parser *p)
{
        size_t i = p->pos;
        unsigned depth = 0;
        bool closed_two = false;

        for (; i < p->n; i++) {
                char c = p->s[i];

                if (c == '(')
                        depth++;
                else if (c == ')') {
                        if (depth == 0)
                                return 0;
                        depth--;
                        if (depth == 0) {
                                if (!closed_two)
                                        return 0;
                                p->pos = i + 1;
                                return 1;
                        }
                        /* The ')' right before the last one closed the second level. */
                        closed_two = depth == 1 && i + 1 < p->n && p->s[i + 1] == ')';
                } else
                        closed_two = false;
        }
        return shell_syntax_error(p, "unterminated (( or $((");
}

/* 'text' from p->pos (at the quote) */
static int scan_squote(struct parser *p, struct buf *b)
{
        const char *e = memchr(p->s + p->pos + 1, '\'', p->n - p->pos - 1);
        size_t start = p->pos + 1;

        if (!e)
                return shell_syntax_error(p, "unterminated single quote");
        p->pos = (size_t) (e - p->s) + 1;
        return buf_append(b, p->s + start, (size_t) (e - p->s) - start);
}

static int append_utf8(struct buf *b, uint32_t cp)
{
        char u[4];
        size_t k;

        if (cp < 0x80) {
                u[0] = (char) cp;
                k = 1;
        } else if (cp < 0x800) {
                u[0] = (char) (0xC0 | (cp >> 6));
                u[1] = (char) (0x80 | (cp & 0x3F));
                k = 2;
        } else if (cp < 0x10000) {
                u[0] = (char) (0xE0 | (cp >> 12));
                u[1] = (char) (0x80 | ((cp >> 6) & 0x3F));
                u[2] = (char) (0x80 | (cp & 0x3F));
                k = 3;
        } else if (cp < 0x110000) {
                u[0] = (char) (0xF0 | (cp >> 18));
                u[1] = (char) (0x80 | ((cp >> 12) & 0x3F));
                u[2] = (char) (0x80 | ((cp >> 6) & 0x3F));
                u[3] = (char) (0x80 | (cp & 0x3F));
                k = 4;
        } else
                return 0;
        return buf_append(b, u, k);
}

/* $'text' from p->pos (at the '$'), with its backslash escapes decoded as bash does. */
static int scan_ansi_c(struct parser *p, struct buf *b)
{
        static const char simple_from[] = "abefnrtv\\'\"?E";
        static const char simple_to[] = "\a\b\033\f\n\r\t\v\\'\"?\033";
        int r = 0;

        p->pos += 2;
        for (;;) {
                char c, e;
                const char *k;

                if (p->pos >= p->n)
                        return shell_syntax_error(p, "unterminated $'");
                c = p->s[p->pos];
                if (c == '\'') {
                        p->pos++;
                        return 0;
                }
                if (c != '\\' || p->pos + 1 >= p->n) {
                        r = buf_append_char(b, c);
                        p->pos++;
                        if (r < 0)
                                return r;
                        continue;
                }
                e = p->s[p->pos + 1];
                p->pos += 2;
                k = strchr(simple_from, e);
                if (k && e)
                        r = buf_append_char(b, simple_to[k - simple_from]);
                else if (e >= '0' && e <= '7') {
                        unsigned v = (unsigned) (e - '0');

                        for (int i = 0;
                             i < 2 && p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '7';
                             i++)
                                v = v * 8 + (unsigned) (p->s[p->pos++] - '0');
                        r = buf_append_char(b, (char) (v & 0xFF));
                } else if (e == 'x' || e == 'u' || e == 'U') {
                        int max = e == 'x' ? 2 : e == 'u' ? 4 : 8, i = 0;
                        uint32_t v = 0;

                        for (; i < max && p->pos < p->n && unhexchar(p->s[p->pos]) >= 0; i++)
                                v = v * 16 + (uint32_t) unhexchar(p->s[p->pos++]);
                        if (i == 0)
                                r = buf_append(b, p->s + p->pos - 2, 2);
                        else if (e == 'x')
                                r = buf_append_char(b, (char) v);
                        else
                                r = append_utf8(b, v);
                } else if (e == 'c' && p->pos < p->n) {
                        r = buf_append_char(b, (char) (p->s[p->pos++] & 0x1F));
                } else
                        r = buf_append(b, p->s + p->pos - 2, 2);
                if (r < 0)
                        return r;
        }
}

/* `...` from p->pos: its backslashes removed, then parsed as a string of its own. */
static int scan_backtick(struct parser *p, bool in_dquote)
{
        _cleanup_buf_ struct buf inner = BUF_INIT(SHELL_PARSE_INPUT_MAX);
        int r;

        p->pos++;
        for (;;) {
                char c;

                if (p->pos >= p->n)
                        return shell_syntax_error(p, "unterminated backquote");
                c = p->s[p->pos];
                if (c == '`') {
                        p->pos++;
                        break;
                }
                if (c == '\\' && p->pos + 1 < p->n &&
                    (strchr("$`\\", p->s[p->pos + 1]) || (in_dquote && p->s[p->pos + 1] == '"'))) {
                        c = p->s[p->pos + 1];
                        p->pos++;
                }
                r = buf_append_char(&inner, c);
                if (r < 0)
                        return r;
                p->pos++;
        }
        return shell_parse_string(p, buf_str(&inner), inner.len, SHELL_CMD_SUBSTITUTION);
}

/* `...` in a word: parsed, and its source text kept in @b as it is; the word expands. */
static int scan_backtick_word(struct parser *p, struct buf *b, unsigned *flags, bool in_dquote)
{
        size_t start = p->pos;
        int r = scan_backtick(p, in_dquote);

        *flags |= SHELL_WORD_EXPANDS;
        return r < 0 ? r : buf_append(b, p->s + start, p->pos - start);
}

/* "text" from p->pos (at the quote): \ escapes only $ ` " \ and newline here. */
static int scan_dquote(struct parser *p, struct buf *b, unsigned *flags)
{
        int r;

        p->pos++;
        for (;;) {
                char c;

                if (p->pos >= p->n)
                        return shell_syntax_error(p, "unterminated double quote");
                c = p->s[p->pos];
                if (c == '"') {
                        p->pos++;
                        return 0;
                }
                if (c == '\\' && p->pos + 1 < p->n && strchr("$`\"\\\n", p->s[p->pos + 1])) {
                        c = p->s[p->pos + 1];
                        p->pos += 2;
                        if (c == '\n')
                                continue;
                        r = buf_append_char(b, c);
                } else if (c == '$')
                        r = scan_dollar(p, b, flags, true);
                else if (c == '`')
                        r = scan_backtick_word(p, b, flags, true);
                else {
                        r = buf_append_char(b, c);
                        p->pos++;
                }
                if (r < 0)
                        return r;
        }
}

/* ${...} from p->pos (after "${"): up to its '}', with the substitutions inside parsed. */
static int scan_braced(struct parser *p)
{
        _cleanup_buf_ struct buf scratch = BUF_INIT(SHELL_PARSE_INPUT_MAX);
        unsigned flags = 0;
        int r = shell_enter(p);

        if (r < 0)
                return r;
        for (;;) {
                char c;

                if (p->pos >= p->n)
                        return shell_syntax_error(p, "unterminated ${");
                c = p->s[p->pos];
                if (c == '}') {
                        p->pos++;
                        break;
                }
                if (c == '\\')
                        p->pos = MIN(p->pos + 2, p->n);
                else if (c == '\'')
                        r = scan_squote(p, &scratch);
                else if (c == '"')
                        r = scan_dquote(p, &scratch, &flags);
                else if (c == '$')
                        r = scan_dollar(p, &scratch, &flags, false);
                else if (c == '`')
                        r = scan_backtick(p, false);
                else
                        p->pos++;
                if (r < 0)
                        return r;
                buf_reset(&scratch);
        }
        p->depth--;
        return 0;
}

/*
 * An expansion from p->pos (at the '$'): its source text goes into @b as it is, and the
 * word is marked SHELL_WORD_EXPANDS. A '$' that starts none is a plain character.
 */
static int scan_dollar(struct parser *p, struct buf *b, unsigned *flags, bool in_dquote)
{
        size_t start = p->pos;
        char c1 = p->pos + 1 < p->n ? p->s[p->pos + 1] : 0;
        int r = 0;

        if (c1 == '(') {
                p->pos++;
                if (at(p, 1, '('))
                        r = shell_scan_arith(p);
                if (r == 0) {
                        p->pos = start + 2;
                        r = shell_nested_list(p, SHELL_CMD_SUBSTITUTION);
                }
        } else if (c1 == '{') {
                p->pos += 2;
                r = scan_braced(p);
        } else if (c1 == '[') {
                const char *e = memchr(p->s + p->pos, ']', p->n - p->pos);

                if (!e)
                        return shell_syntax_error(p, "unterminated $[");
                p->pos = (size_t) (e - p->s) + 1;
        } else if (is_name_start(c1)) {
                p->pos++;
                while (p->pos < p->n && is_name_char(p->s[p->pos]))
                        p->pos++;
        } else if (c1 && strchr("0123456789@*#?-$!", c1))
                p->pos += 2;
        else if (c1 == '\'' && !in_dquote)
                return scan_ansi_c(p, b);
        else if (c1 == '"' && !in_dquote) {
                /* $"..." is a locale translation: a double-quoted string here. */
                p->pos++;
                *flags |= SHELL_WORD_QUOTED;
                return scan_dquote(p, b, flags);
        } else {
                p->pos++;
                return buf_append_char(b, '$');
        }
        if (r < 0)
                return r;
        *flags |= SHELL_WORD_EXPANDS;
        return buf_append(b, p->s + start, p->pos - start);
}

/* NAME=(a b c): the elements up to ')', each a word (their substitutions count). */
static int scan_array(struct parser *p, struct buf *b)
{
        int r = shell_enter(p);

        if (r < 0)
                return r;
        p->pos++;
        r = buf_append_char(b, '(');
        while (r >= 0) {
                _cleanup_buf_ struct buf elem = BUF_INIT(SHELL_PARSE_INPUT_MAX);
                unsigned flags = 0;
                size_t eq;

                while (p->pos < p->n && (is_blank(p->s[p->pos]) || p->s[p->pos] == '\n'))
                        p->pos++;
                skip_blanks(p);
                if (p->pos >= p->n)
                        return shell_syntax_error(p, "unterminated array assignment");
                if (p->s[p->pos] == ')') {
                        p->pos++;
                        p->depth--;
                        return buf_append_char(b, ')');
                }
                if (p->s[p->pos] == '\n')
                        continue;
                r = scan_word(p, &elem, &flags, &eq);
                if (r < 0)
                        return r;
                if (p->pos < p->n && is_meta(p->s[p->pos]) && !is_blank(p->s[p->pos]) &&
                    p->s[p->pos] != '\n' && p->s[p->pos] != ')')
                        return shell_syntax_error(p, "unexpected operator in array assignment");
                if (b->data[b->len - 1] != '(')
                        r = buf_append_char(b, ' ');
                if (r >= 0)
                        r = buf_append(b, buf_str(&elem), elem.len);
        }
        return r;
}

bool shell_valid_assignment_name(const char *s, size_t eq)
{
        size_t i = 0;

        if (eq == SIZE_MAX || !is_name_start(s[0]))
                return false;
        while (i < eq && is_name_char(s[i]))
                i++;
        if (i < eq && s[i] == '[') {
                const char *e = memchr(s + i, ']', eq - i);

                if (!e)
                        return false;
                i = (size_t) (e - s) + 1;
        }
        if (i < eq && s[i] == '+')
                i++;
        return i == eq;
}

/*
 * One word from p->pos, quote-removed into @b. *eq is the offset of its first '=' when
 * nothing before it was quoted or expanded (a candidate assignment), else SIZE_MAX.
 */
static int scan_word(struct parser *p, struct buf *b, unsigned *flags, size_t *eq)
{
        bool brace_open = false, brace_sep = false;
        int r = 0;

        *eq = SIZE_MAX;
        while (p->pos < p->n) {
                char c = p->s[p->pos];

                if ((c == '<' || c == '>') && at(p, 1, '(')) {
                        size_t start = p->pos;

                        p->pos += 2;
                        r = shell_nested_list(p, SHELL_CMD_SUBSTITUTION);
                        if (r >= 0)
                                r = buf_append(b, p->s + start, p->pos - start);
                        *flags |= SHELL_WORD_EXPANDS;
                } else if (c == '(' && *eq != SIZE_MAX && *eq + 1 == b->len &&
                           shell_valid_assignment_name(buf_str(b), *eq))
                        r = scan_array(p, b);
                else if (is_meta(c))
                        break;
                else if (c == '\\') {
                        if (at(p, 1, '\n')) {
                                p->pos += 2;
                                continue;
                        }
                        if (p->pos + 1 >= p->n) {
                                r = buf_append_char(b, '\\');
                                p->pos++;
                        } else {
                                r = buf_append_char(b, p->s[p->pos + 1]);
                                p->pos += 2;
                                *flags |= SHELL_WORD_QUOTED;
                        }
                } else if (c == '\'') {
                        r = scan_squote(p, b);
                        *flags |= SHELL_WORD_QUOTED;
                } else if (c == '"') {
                        r = scan_dquote(p, b, flags);
                        *flags |= SHELL_WORD_QUOTED;
                } else if (c == '$') {
                        if (at(p, 1, '\''))
                                *flags |= SHELL_WORD_QUOTED;
                        r = scan_dollar(p, b, flags, false);
                } else if (c == '`')
                        r = scan_backtick_word(p, b, flags, false);
                else {
                        if (c == '=' && *eq == SIZE_MAX &&
                            !(*flags & (SHELL_WORD_QUOTED | SHELL_WORD_EXPANDS)))
                                *eq = b->len;
                        else if (c == '~' && b->len == 0 && !*flags)
                                *flags |= SHELL_WORD_EXPANDS;
                        else if (c == '*' || c == '?' || c == '[')
                                *flags |= SHELL_WORD_GLOB;
                        else if (c == '{')
                                brace_open = true;
                        else if (brace_open && (c == ',' || (c == '.' && at(p, 1, '.'))))
                                brace_sep = true;
                        else if (c == '}' && brace_sep)
                                *flags |= SHELL_WORD_GLOB;
                        r = buf_append_char(b, c);
                        p->pos++;
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

static int lex_word(struct parser *p, struct token *t)
{
        _cleanup_buf_ struct buf b = BUF_INIT(SHELL_PARSE_INPUT_MAX);
        const char *s;
        int r;

        r = scan_word(p, &b, &t->flags, &t->eq);
        if (r < 0)
                return r;
        t->text = buf_steal(&b, NULL);
        if (!t->text)
                return -ENOMEM;
        t->type = TOK_WORD;
        t->end = p->pos;
        if (t->flags || p->pos >= p->n || (p->s[p->pos] != '<' && p->s[p->pos] != '>') ||
            at(p, 1, '('))
                return 0;
        /* 2>file, {fd}>file: the word is the redirection's fd. */
        s = t->text;
        if (s[0] >= '0' && s[0] <= '9' && strspn(s, "0123456789") == strlen(s) && strlen(s) <= 9) {
                t->type = TOK_IO_NUMBER;
                t->fd = (int) strtol(s, NULL, 10);
        } else if (s[0] == '{' && s[strlen(s) - 1] == '}' && strlen(s) > 2) {
                t->type = TOK_IO_NUMBER;
                t->fd = -1;
        }
        return 0;
}

static int lex(struct parser *p, struct token *t)
{
        static const struct {
                const char *op;
                enum tok_type type;
                enum shell_redirect_op redir;
        } ops[] = {
                /* Longest first. */
                {";;&", TOK_DSEMI_AMP, 0},
                {"<<<", TOK_REDIR, SHELL_REDIRECT_HERESTRING},
                {"<<-", TOK_REDIR, SHELL_REDIRECT_HEREDOC_TAB},
                {"&>>", TOK_REDIR, SHELL_REDIRECT_APPEND_ERR},
                {"&&", TOK_AND, 0},
                {"&>", TOK_REDIR, SHELL_REDIRECT_OUT_ERR},
                {"||", TOK_OR, 0},
                {"|&", TOK_PIPE_AMP, 0},
                {";;", TOK_DSEMI, 0},
                {";&", TOK_SEMI_AMP, 0},
                {"<<", TOK_REDIR, SHELL_REDIRECT_HEREDOC},
                {"<&", TOK_REDIR, SHELL_REDIRECT_DUP_IN},
                {"<>", TOK_REDIR, SHELL_REDIRECT_IN_OUT},
                {">>", TOK_REDIR, SHELL_REDIRECT_APPEND},
                {">&", TOK_REDIR, SHELL_REDIRECT_DUP_OUT},
                {">|", TOK_REDIR, SHELL_REDIRECT_CLOBBER},
                {"&", TOK_AMP, 0},
                {"|", TOK_PIPE, 0},
                {";", TOK_SEMI, 0},
                {"(", TOK_LPAREN, 0},
                {")", TOK_RPAREN, 0},
                {"<", TOK_REDIR, SHELL_REDIRECT_IN},
                {">", TOK_REDIR, SHELL_REDIRECT_OUT},
        };
        char c;

        *t = (struct token){.fd = -1, .eq = SIZE_MAX};
        skip_blanks(p);
        t->start = p->pos;
        if (p->pos >= p->n) {
                t->type = TOK_EOF;
                return 0;
        }
        c = p->s[p->pos];
        if (c == '\n') {
                p->pos++;
                t->type = TOK_NEWLINE;
                t->end = p->pos;
                skip_heredoc_bodies(p);
                return 0;
        }
        if (!is_meta(c) || ((c == '<' || c == '>') && at(p, 1, '(')))
                return lex_word(p, t);
        for (size_t i = 0; i < ELEMENTSOF(ops); i++) {
                size_t k = strlen(ops[i].op);

                if (p->n - p->pos >= k && memcmp(p->s + p->pos, ops[i].op, k) == 0) {
                        t->type = ops[i].type;
                        t->redir = ops[i].redir;
                        p->pos += k;
                        t->end = p->pos;
                        return 0;
                }
        }
        return shell_syntax_error(p, "unexpected character");
}

int shell_peek(struct parser *p, struct token **ret)
{
        int r;

        if (!p->has_peek) {
                /*
                 * Into a local first: a word's $( ) is parsed while it is being lexed, and
                 * that nested parse uses the lookahead itself.
                 */
                struct token t;

                r = lex(p, &t);
                if (r < 0) {
                        shell_token_release(&t);
                        return r;
                }
                assert(!p->has_peek);
                p->peek = t;
                p->has_peek = true;
        }
        *ret = &p->peek;
        return 0;
}

void shell_consume(struct parser *p)
{
        shell_token_release(&p->peek);
        p->has_peek = false;
}
