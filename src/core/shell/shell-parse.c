/* SPDX-License-Identifier: MIT */
/*
 * The entry points of the shell parser (shell_parse(), and shell_parse_string() for the
 * strings of backticks, sh -c and eval) and the result they build: the words of a command,
 * counted against the caps, and each command recorded as the grammar (shell-grammar.c)
 * completes it.
 */

#include "core/shell/shell-parse.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/diag.h"
#include "basic/macro.h"
#include "core/shell/shell-internal.h"

void shell_command_release(struct shell_command *c)
{
        if (c->argv)
                for (size_t i = 0; i < c->argc; i++)
                        free(c->argv[i]);
        free(c->argv);
        free(c->word_flags);
        for (size_t i = 0; i < c->n_redirects; i++)
                free(c->redirects[i].target);
        free(c->redirects);
        *c = (struct shell_command){};
}

static void truncate_commands(struct state *st, size_t n)
{
        while (st->out->n_commands > n)
                shell_command_release(&st->out->commands[--st->out->n_commands]);
}

static void parser_release(struct parser *p)
{
        shell_token_release(&p->peek);
        p->has_peek = false;
        for (size_t i = 0; i < p->n_heredocs; i++)
                free(p->heredocs[i].delim);
        p->n_heredocs = 0;
}

int shell_count_word(struct parser *p)
{
        if (p->st->words >= SHELL_PARSE_WORDS_MAX)
                return diag_set(&p->st->diag, -E2BIG, "shell command has more than %d words",
                                SHELL_PARSE_WORDS_MAX);
        p->st->words++;
        return 0;
}

int shell_command_add_word(struct parser *p, struct shell_command *c, char *text, unsigned flags)
{
        char **argv;
        unsigned *wf;
        int r = shell_count_word(p);

        if (r < 0) {
                free(text);
                return r;
        }
        argv = reallocarray(c->argv, c->argc + 2, sizeof(char *));
        if (!argv) {
                free(text);
                return -ENOMEM;
        }
        c->argv = argv;
        wf = reallocarray(c->word_flags, c->argc + 1, sizeof(unsigned));
        if (!wf) {
                free(text);
                return -ENOMEM;
        }
        c->word_flags = wf;
        c->argv[c->argc] = text;
        c->word_flags[c->argc] = flags;
        c->argc++;
        c->argv[c->argc] = NULL;
        return 0;
}

/* Hands @c (and what it owns) to the result, even on failure. */
int shell_record_command(struct parser *p, struct shell_command *c)
{
        struct state *st = p->st;

        if (st->out->n_commands >= SHELL_PARSE_COMMANDS_MAX) {
                shell_command_release(c);
                return diag_set(&st->diag, -E2BIG, "shell command has more than %d commands",
                                SHELL_PARSE_COMMANDS_MAX);
        }
        if (st->out->n_commands == st->alloc) {
                size_t na = MAX(st->alloc * 2, (size_t) 8);
                struct shell_command *nc =
                        reallocarray(st->out->commands, na, sizeof(struct shell_command));

                if (!nc) {
                        shell_command_release(c);
                        return -ENOMEM;
                }
                st->out->commands = nc;
                st->alloc = na;
        }
        if (!c->argv) {
                /* Only redirections: argv is still a (empty) NULL-terminated vector. */
                c->argv = calloc(1, sizeof(char *));
                if (!c->argv) {
                        shell_command_release(c);
                        return -ENOMEM;
                }
        }
        c->flags |= p->ctx;
        c->depth = p->depth;
        st->out->commands[st->out->n_commands++] = *c;
        *c = (struct shell_command){};
        return 0;
}

int shell_parse_string(struct parser *p, const char *s, size_t n, unsigned ctx)
{
        struct parser q = {
                .st = p->st,
                .s = s,
                .n = n,
                .depth = p->depth,
                .ctx = p->ctx | ctx,
        };
        size_t before = p->st->out->n_commands;
        int r = shell_enter(&q);

        if (r >= 0)
                r = shell_parse_all(&q);
        parser_release(&q);
        /* The nested shell reports its own syntax error when it runs; ours still parses. */
        if (r == -EINVAL && ctx == SHELL_CMD_NESTED_SHELL) {
                truncate_commands(p->st, before);
                p->st->diag.message[0] = 0;
                r = 0;
        }
        return r;
}

int shell_parse(const char *s, size_t n, unsigned flags, struct shell_parse **ret,
                struct diag *reterr)
{
        struct shell_parse *out;
        struct state st = {};
        struct parser p = {.st = &st, .s = s, .n = n, .top = true};
        int r;

        assert(s || n == 0);
        assert(ret);
        if (n > SHELL_PARSE_INPUT_MAX)
                return diag_set(reterr, -E2BIG, "shell command longer than %d bytes",
                                SHELL_PARSE_INPUT_MAX);
        if (n > 0 && memchr(s, 0, n))
                return diag_set(reterr, -EINVAL, "shell command contains a NUL byte");
        out = calloc(1, sizeof(*out));
        if (!out)
                return -ENOMEM;
        st.out = out;

        r = shell_parse_all(&p);
        parser_release(&p);
        if (r == -EINVAL && (flags & SHELL_PARSE_COMPLETE_LINES)) {
                truncate_commands(&st, p.complete);
                out->syntax_error = true;
                r = 0;
        }
        if (r < 0) {
                if (reterr && st.diag.message[0])
                        *reterr = st.diag;
                else
                        (void) diag_set(reterr, r, "cannot parse shell command: %s", strerror(-r));
                shell_parse_free(out);
                return r;
        }
        *ret = out;
        return 0;
}

struct shell_parse *shell_parse_free(struct shell_parse *p)
{
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n_commands; i++)
                shell_command_release(&p->commands[i]);
        free(p->commands);
        free(p);
        return NULL;
}

const char *shell_command_word(const struct shell_command *c)
{
        return c->cmd_index < c->argc ? c->argv[c->cmd_index] : NULL;
}

const char *shell_basename(const char *word)
{
        const char *s = strrchr(word, '/');

        return s ? s + 1 : word;
}
