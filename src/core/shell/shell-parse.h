/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A parser for bash command strings, to find the simple commands a string would run
 * without running it: each simple command's words after quote removal, which word is the
 * command once assignments and wrappers (sudo, env, nice, timeout, ...) are stripped, and
 * whether it runs in the background or inside a substitution or subshell.
 *
 * It reads the bash grammar: quotes ('', "", $'', $""), backslashes, line continuations,
 * comments, the operators ; & && || | |& and newline, ( ) subshells, { } groups, if,
 * while, until, for, select, case, function definitions, [[ ]], (( )), coproc,
 * redirections (2>&1, &>file, >&2, <<<word) and here-documents (their bodies are skipped).
 * $( ), backticks, <( ) and >( ) are parsed recursively: the commands inside are commands
 * too. So is the literal string of `sh -c STRING` / `bash -c STRING` and the literal
 * arguments of `eval`. Nothing is expanded: a word with $var, $( ), a leading ~ and so on
 * keeps that text and carries SHELL_WORD_EXPANDS. docs/tools.md (terminal) describes what
 * the terminal tool does with the result.
 *
 * Not followed: the bodies of here-documents (even unquoted ones, where bash would run
 * $( ) inside), the inside of $(( )) and (( )), aliases, and the words of `env -S`.
 *
 * Thread context: any thread; no global state.
 */

#include <stdbool.h>
#include <stddef.h>

#include "basic/macro.h"

struct diag;

/* Bytes of input: a longer string cannot be one argument of execve() (MAX_ARG_STRLEN). */
#define SHELL_PARSE_INPUT_MAX (128 * 1024)
/*
 * Nesting of ( ), { }, compound commands, substitutions and `sh -c` strings. Real commands
 * nest a handful of levels; the cap bounds the recursion (about 1 KiB of stack per level).
 */
#define SHELL_PARSE_DEPTH_MAX 32
/* Words kept over all commands (redirection targets included), and simple commands. */
#define SHELL_PARSE_WORDS_MAX 16384
#define SHELL_PARSE_COMMANDS_MAX 4096
/* Here-documents started on one line whose bodies are still to come. */
#define SHELL_PARSE_HEREDOCS_MAX 16

/* Word flags (shell_command.word_flags[i], shell_redirect.target_flags). */
enum {
        SHELL_WORD_QUOTED = 1 << 0,  /* some of it was quoted or backslash-escaped */
        SHELL_WORD_EXPANDS = 1 << 1, /* $name, ${..}, $(..), `..`, $((..)), <(..), ~: unexpanded */
        SHELL_WORD_GLOB = 1 << 2,    /* an unquoted * ? [ or a brace expansion {a,b} */
        SHELL_WORD_ASSIGNMENT = 1 << 3, /* NAME=value before the command word */
        SHELL_WORD_WRAPPER = 1 << 4,    /* a wrapper that runs a later word (sudo, env, ...) */
};

/* Command flags (shell_command.flags). */
enum {
        SHELL_CMD_BACKGROUND = 1 << 0,   /* runs asynchronously: '&' (of it or of an enclosing
                                          * list, group or subshell), or coproc */
        SHELL_CMD_SUBSTITUTION = 1 << 1, /* inside $( ), backticks, <( ) or >( ) */
        SHELL_CMD_SUBSHELL = 1 << 2,     /* inside ( ) */
        SHELL_CMD_NESTED_SHELL = 1 << 3, /* from the string of sh -c / bash -c, or of eval */
        SHELL_CMD_FUNCTION = 1 << 4,     /* in a function body: runs when the function is called */
};

/* Parse options (the @flags of shell_parse()). */
enum {
        /*
         * On a syntax error, succeed with the commands of the lines before the one with the
         * error, and set syntax_error. This is what `bash -c` runs: it reads and runs one
         * line (one complete command) at a time, and stops at the first that does not parse.
         */
        SHELL_PARSE_COMPLETE_LINES = 1 << 0,
};

enum shell_redirect_op {
        SHELL_REDIRECT_IN,          /* <    */
        SHELL_REDIRECT_OUT,         /* >    */
        SHELL_REDIRECT_APPEND,      /* >>   */
        SHELL_REDIRECT_CLOBBER,     /* >|   */
        SHELL_REDIRECT_IN_OUT,      /* <>   */
        SHELL_REDIRECT_DUP_IN,      /* <&   */
        SHELL_REDIRECT_DUP_OUT,     /* >&   */
        SHELL_REDIRECT_OUT_ERR,     /* &>   */
        SHELL_REDIRECT_APPEND_ERR,  /* &>>  */
        SHELL_REDIRECT_HEREDOC,     /* <<   (target: the delimiter) */
        SHELL_REDIRECT_HEREDOC_TAB, /* <<-  */
        SHELL_REDIRECT_HERESTRING,  /* <<<  */
};

struct shell_redirect {
        enum shell_redirect_op op;
        int fd;                /* the number before the operator (2 in 2>&1), -1 when none */
        char *target;          /* quote-removed word: a file, an fd ("1", "-"), a delimiter */
        unsigned target_flags; /* SHELL_WORD_* */
};

struct shell_command {
        char **argv;          /* argc quote-removed words, then NULL */
        unsigned *word_flags; /* argc entries, SHELL_WORD_* */
        size_t argc;
        /*
         * argv[cmd_index] is the command word: after the assignments and the wrappers with
         * their options (sudo -u x, env -i A=1, nice -n 5, timeout -s KILL 10, exec, nohup,
         * setsid, stdbuf, time, command, builtin, xargs, doas, ionice). argc when there is
         * none (only assignments or redirections). A wrapper without a command (`env`,
         * `command -v x`, `sudo -l`) is itself the command word. A command word with
         * SHELL_WORD_EXPANDS is where the stripping stopped: what runs is not known.
         */
        size_t cmd_index;
        struct shell_redirect *redirects;
        size_t n_redirects;
        unsigned flags; /* SHELL_CMD_* */
        unsigned depth; /* nesting depth, 0 at the top */
};

struct shell_parse {
        /*
         * In the order their parsing completed: the commands of a substitution come before
         * the command with the word that contains it. [[ ]] is recorded as a command whose
         * words are its operands and operators, "[[" first.
         */
        struct shell_command *commands;
        size_t n_commands;
        bool syntax_error; /* SHELL_PARSE_COMPLETE_LINES: the lines from the error on are left out
                            */
};

/*
 * Parse the @n bytes at @s (no NUL needed; an embedded NUL is a syntax error). On success
 * *ret is the caller's to free with shell_parse_free(). Returns 0; -EINVAL on a syntax
 * error (unterminated quote or substitution, an unexpected token: bash would not run the
 * line either), unless SHELL_PARSE_COMPLETE_LINES; -E2BIG past SHELL_PARSE_INPUT_MAX,
 * _WORDS_MAX, _COMMANDS_MAX or _HEREDOCS_MAX; -ELOOP past SHELL_PARSE_DEPTH_MAX; -ENOMEM.
 * A syntax error inside the string of `sh -c` or `eval` is not one of the outer command
 * (the inner shell reports it when it runs): that string's commands are left out.
 * @reterr (may be NULL) says what and where on failure.
 */
_must_check_ int shell_parse(const char *s, size_t n, unsigned flags, struct shell_parse **ret,
                             struct diag *reterr);

/* NULL-safe; returns NULL. */
struct shell_parse *shell_parse_free(struct shell_parse *p);
DEFINE_TRIVIAL_CLEANUP_FUNC_RESET(struct shell_parse *, shell_parse_free);
#define _cleanup_shell_parse_ _cleanup_(shell_parse_freep)

/* argv[cmd_index], or NULL when the command has none. Borrowed from @c. */
const char *shell_command_word(const struct shell_command *c);

/* The part of @word after its last '/' (the word itself when none). Borrowed from @word. */
const char *shell_basename(const char *word);
