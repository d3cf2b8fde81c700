/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Private to src/core/shell: the state the lexer (shell-lex.c), the grammar
 * (shell-grammar.c), the result and entry points (shell-parse.c) and the wrappers
 * (shell-wrappers.c) share. The lexer and the grammar call each other: a word's $( ) is a
 * nested list.
 */

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "basic/diag.h"
#include "core/shell/shell-parse.h"

struct buf;

enum tok_type {
        TOK_EOF,
        TOK_WORD,
        TOK_IO_NUMBER, /* digits (or {name}) right before a redirection operator */
        TOK_REDIR,
        TOK_NEWLINE,
        TOK_SEMI,      /* ;   */
        TOK_AMP,       /* &   */
        TOK_AND,       /* &&  */
        TOK_OR,        /* ||  */
        TOK_PIPE,      /* |   */
        TOK_PIPE_AMP,  /* |&  */
        TOK_LPAREN,    /* (   */
        TOK_RPAREN,    /* )   */
        TOK_DSEMI,     /* ;;  */
        TOK_SEMI_AMP,  /* ;&  */
        TOK_DSEMI_AMP, /* ;;& */
};

struct token {
        enum tok_type type;
        enum shell_redirect_op redir;
        int fd;
        char *text;     /* TOK_WORD: quote-removed, owned */
        unsigned flags; /* TOK_WORD: SHELL_WORD_* */
        size_t eq;      /* offset of a '=' in text with nothing quoted before it, or SIZE_MAX */
        size_t start, end;
};

/* Shared by a parse and the parsers of its backticks and sh -c strings. */
struct state {
        struct shell_parse *out;
        size_t alloc;
        size_t words;
        struct diag diag;
};

struct heredoc {
        char *delim;
        bool strip_tabs;
};

struct parser {
        struct state *st;
        const char *s;
        size_t n, pos;
        unsigned depth;
        unsigned ctx; /* SHELL_CMD_* flags of the commands recorded now */
        struct token peek;
        bool has_peek;
        struct heredoc heredocs[SHELL_PARSE_HEREDOCS_MAX];
        size_t n_heredocs;
        bool top;        /* the outermost parser: tracks complete lines */
        size_t complete; /* commands recorded before the last top-level newline */
};

static inline bool is_blank(char c)
{
        return c == ' ' || c == '\t';
}

static inline bool is_meta(char c)
{
        return c && strchr(" \t\n;&|()<>", c);
}

static inline bool is_name_start(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static inline bool is_name_char(char c)
{
        return is_name_start(c) || (c >= '0' && c <= '9');
}

static inline bool at(const struct parser *p, size_t off, char c)
{
        return p->pos + off < p->n && p->s[p->pos + off] == c;
}

/* shell-lex.c */

/* Sets the state's diag, returns -EINVAL. */
int shell_syntax_error(struct parser *p, const char *what);
/* One level deeper: -ELOOP past SHELL_PARSE_DEPTH_MAX. The caller restores p->depth. */
int shell_enter(struct parser *p);
void shell_token_release(struct token *t);
/*
 * ((...)) from p->pos (at the first '('): 1 with p->pos after "))"; 0 (p->pos unchanged)
 * when the parentheses do not close as "))"; -EINVAL when they never close.
 */
int shell_scan_arith(struct parser *p);
/* NAME=, NAME+=, NAME[sub]= up to @eq (SIZE_MAX: none). */
bool shell_valid_assignment_name(const char *s, size_t eq);
/* The lookahead token (lexed if need be), borrowed until shell_consume(). */
int shell_peek(struct parser *p, struct token **ret);
void shell_consume(struct parser *p);

/* shell-grammar.c */

/* A list up to its ')' ($( ), <( ), >( )), on the same input; called between tokens. */
int shell_nested_list(struct parser *p, unsigned ctx);
/* A whole string: a list up to its end. */
int shell_parse_all(struct parser *p);

/* shell-parse.c */

/* @s as a complete command string (backticks, sh -c, eval), by a parser of its own. */
int shell_parse_string(struct parser *p, const char *s, size_t n, unsigned ctx);
void shell_command_release(struct shell_command *c);
/* One more word: -E2BIG past SHELL_PARSE_WORDS_MAX. */
int shell_count_word(struct parser *p);
/* Appends @text (owned by @c, or freed on failure) with its SHELL_WORD_* @flags. */
int shell_command_add_word(struct parser *p, struct shell_command *c, char *text, unsigned flags);
/* Hands @c (and what it owns) to the result, even on failure. */
int shell_record_command(struct parser *p, struct shell_command *c);

/* shell-wrappers.c */

/*
 * The index of the command word of @argv (struct shell_command.cmd_index): past the
 * NAME=value words flagged SHELL_WORD_ASSIGNMENT, and past each wrapper with its options,
 * whose word gets SHELL_WORD_WRAPPER in @flags. @argc when there is no command word.
 */
size_t shell_strip_wrappers(char *const *argv, unsigned *flags, size_t argc);
/* `sh -c STRING`, `eval ARGS`: in *ret the literal string @c would run, or NULL. */
int shell_nested_string(const struct shell_command *c, char **ret);
