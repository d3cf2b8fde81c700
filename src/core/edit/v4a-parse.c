/* SPDX-License-Identifier: MIT */
/*
 * The V4A patch text -> struct v4a_patch (v4a.h; the seed's tools/patch_parser.py, with the
 * differences listed in v4a.c): whole-line markers, "*** Move to:" and "*** End of File",
 * blank lines inside a hunk, and the seed's "Parse error: e1; e2" text.
 */

#include "core/edit/v4a.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/macro.h"
#include "basic/utf8.h"

/* Parse error text; a patch with more problems than fit is summarised by its first ones. */
#define PARSE_ERROR_MAX (64u * 1024)

/* --- small text helpers --- */

static bool is_ws(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Python's str.strip() (ASCII whitespace). */
static void strip(const char **s, size_t *n)
{
        while (*n > 0 && is_ws(**s)) {
                (*s)++;
                (*n)--;
        }
        while (*n > 0 && is_ws((*s)[*n - 1]))
                (*n)--;
}

static size_t eat_ws(const char *s, size_t n, size_t *i)
{
        size_t k = 0;

        while (*i < n && is_ws(s[*i])) {
                (*i)++;
                k++;
        }
        return k;
}

static bool eat(const char *s, size_t n, size_t *i, const char *word)
{
        size_t k = strlen(word);

        if (n - *i < k || memcmp(s + *i, word, k) != 0)
                return false;
        *i += k;
        return true;
}

/*
 * "***", optional whitespace, then @words separated by whitespace. With @rest
 * NULL the line must end there (trailing whitespace allowed); otherwise the
 * remainder after optional whitespace goes to *rest.
 */
static bool match_marker(const char *s, size_t n, const char *const *words, size_t k,
                         const char **rest, size_t *rest_n)
{
        size_t i = 0;

        if (!eat(s, n, &i, "***"))
                return false;
        (void) eat_ws(s, n, &i);
        for (size_t w = 0; w < k; w++) {
                if (w > 0 && eat_ws(s, n, &i) == 0)
                        return false;
                if (!eat(s, n, &i, words[w]))
                        return false;
        }
        (void) eat_ws(s, n, &i);
        if (!rest)
                return i == n;
        *rest = s + i;
        *rest_n = n - i;
        return true;
}

static bool is_marker2(const char *s, size_t n, const char *a, const char *b)
{
        const char *w[] = {a, b};

        return match_marker(s, n, w, 2, NULL, NULL);
}

static bool is_eof_marker(const char *s, size_t n)
{
        static const char *const w[] = {"End", "of", "File"};

        return match_marker(s, n, w, 3, NULL, NULL);
}

static bool match_header(const char *s, size_t n, const char *kind, const char *what,
                         const char **rest, size_t *rest_n)
{
        const char *w[] = {kind, what};

        return match_marker(s, n, w, 2, rest, rest_n);
}

/* Python's repr() of a str, for the seed's parse errors ("UPDATE 'a.py': ..."). */
static int repr_append(struct buf *b, const char *s, size_t n)
{
        char quote = '\'';
        int r;

        if (memchr(s, '\'', n) && !memchr(s, '"', n))
                quote = '"';
        r = buf_append_char(b, quote);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                unsigned char c = (unsigned char) s[i];

                if (c == (unsigned char) quote || c == '\\')
                        r = buf_printf(b, "\\%c", c);
                else if (c == '\n')
                        r = buf_append_str(b, "\\n");
                else if (c == '\r')
                        r = buf_append_str(b, "\\r");
                else if (c == '\t')
                        r = buf_append_str(b, "\\t");
                else if (c < 0x20 || c == 0x7f)
                        r = buf_printf(b, "\\x%02x", c);
                else if (c == 0xc2 && i + 1 < n && (unsigned char) s[i + 1] >= 0x80 &&
                         (unsigned char) s[i + 1] <= 0x9f) {
                        /* C1 controls are not printable for Python either. */
                        r = buf_printf(b, "\\x%02x", (unsigned char) s[i + 1]);
                        i++;
                } else
                        r = buf_append_char(b, (char) c);
        }
        if (r >= 0)
                r = buf_append_char(b, quote);
        return r;
}

/* Python's repr() of @s as a new string (paths in messages; cut after REPR_MAX bytes). */
#define REPR_MAX 4096
static char *repr_new(const char *s)
{
        _cleanup_buf_ struct buf b = BUF_INIT(4 * REPR_MAX + 8);

        if (repr_append(&b, s, MIN(strlen(s), (size_t) REPR_MAX)) < 0)
                return NULL;
        return buf_steal(&b, NULL);
}

/* --- parser --- */

struct v4a_patch *v4a_patch_free(struct v4a_patch *p)
{
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n_ops; i++) {
                struct v4a_op *op = &p->ops[i];

                for (size_t h = 0; h < op->n_hunks; h++) {
                        free(op->hunks[h].hint);
                        free(op->hunks[h].lines);
                }
                free(op->hunks);
                free(op->path);
                free(op->new_path);
        }
        free(p->ops);
        free(p->text);
        free(p);
        return NULL;
}

int v4a_grow(void **arr, size_t *alloc, size_t need, size_t elem)
{
        size_t na;
        void *q;

        if (need <= *alloc)
                return 0;
        na = MAX(*alloc * 2, (size_t) 8);
        while (na < need)
                na *= 2;
        if (na > SIZE_MAX / elem)
                return -ENOMEM;
        q = realloc(*arr, na * elem);
        if (!q)
                return -ENOMEM;
        *arr = q;
        *alloc = na;
        return 0;
}

struct parser {
        struct v4a_patch *p;
        size_t ops_alloc;
        bool have_op; /* p->ops[p->n_ops - 1] is still collecting lines */
        size_t hunks_alloc;
        bool have_hunk;
        struct v4a_hunk hunk;
        size_t lines_alloc;
        size_t pending_blank; /* blank lines seen in the hunk, kept only if a line follows */
        bool nul_in_path;
        struct buf *errors;
        size_t n_errors;
};

static int parse_error(struct parser *ps, const char *fmt, ...) _printf_(2, 3);
static int parse_error(struct parser *ps, const char *fmt, ...)
{
        va_list ap;
        int r = 0;

        if (ps->n_errors++ > 0)
                r = buf_append_str(ps->errors, "; ");
        if (r >= 0) {
                va_start(ap, fmt);
                r = buf_vprintf(ps->errors, fmt, ap);
                va_end(ap);
        }
        /* -E2BIG: the first errors are already there, which is what matters. */
        return r == -ENOMEM ? r : 0;
}

static struct v4a_op *cur_op(struct parser *ps)
{
        return ps->have_op ? &ps->p->ops[ps->p->n_ops - 1] : NULL;
}

static int add_hunk_line(struct parser *ps, char prefix, const char *s, size_t n)
{
        struct v4a_hunk *h = &ps->hunk;
        int r;

        r = v4a_grow((void **) &h->lines, &ps->lines_alloc, h->n_lines + 1, sizeof(*h->lines));
        if (r < 0)
                return r;
        h->lines[h->n_lines++] = (struct v4a_line){.prefix = prefix, .text = s, .len = n};
        return 0;
}

/* The hunk, leaving an empty one behind. */
static struct v4a_hunk take_hunk(struct v4a_hunk *h)
{
        struct v4a_hunk t = *h;

        *h = (struct v4a_hunk){};
        return t;
}
#define TAKE_STRUCT_HUNK(h) take_hunk(&(h))

static int flush_hunk(struct parser *ps)
{
        struct v4a_op *op = cur_op(ps);
        int r;

        /* Blank lines that end a hunk separate it from the next header: not context. */
        ps->pending_blank = 0;
        r = 0;
        if (ps->have_hunk && op && ps->hunk.n_lines > 0) {
                r = v4a_grow((void **) &op->hunks, &ps->hunks_alloc, op->n_hunks + 1,
                             sizeof(*op->hunks));
                if (r >= 0)
                        op->hunks[op->n_hunks++] = TAKE_STRUCT_HUNK(ps->hunk);
        }
        free(ps->hunk.hint);
        free(ps->hunk.lines);
        ps->hunk = (struct v4a_hunk){};
        ps->lines_alloc = 0;
        ps->have_hunk = false;
        return r;
}

static int flush_op(struct parser *ps)
{
        int r = flush_hunk(ps);

        ps->have_op = false;
        ps->hunks_alloc = 0;
        return r;
}

/* The file name's bytes: escapes of bytes that are not UTF-8 (docs/protocol.md) undone. */
static int dup_path(struct parser *ps, const char *s, size_t n, char **ret)
{
        strip(&s, &n);
        if (memchr(s, 0, n))
                ps->nul_in_path = true;
        return utf8_unescape_bytes(s, n, ret, NULL);
}

static int start_op(struct parser *ps, enum v4a_op_type type, const char *rest, size_t rn)
{
        struct v4a_patch *p = ps->p;
        struct v4a_op *op;
        const char *arrow;
        int r;

        r = flush_op(ps);
        if (r < 0)
                return r;
        r = v4a_grow((void **) &p->ops, &ps->ops_alloc, p->n_ops + 1, sizeof(*p->ops));
        if (r < 0)
                return r;
        op = &p->ops[p->n_ops++];
        *op = (struct v4a_op){.type = type};

        if (type == V4A_OP_MOVE) {
                arrow = memmem(rest, rn, "->", 2);
                if (arrow) {
                        r = dup_path(ps, arrow + 2, rn - (size_t) (arrow - rest) - 2,
                                     &op->new_path);
                        if (r < 0)
                                return r;
                        rn = (size_t) (arrow - rest);
                }
        }
        r = dup_path(ps, rest, rn, &op->path);
        if (r < 0)
                return r;

        /* Delete and Move are complete with their header; Update and Add collect lines. */
        ps->have_op = type == V4A_OP_UPDATE || type == V4A_OP_ADD;
        if (type == V4A_OP_ADD)
                ps->have_hunk = true;
        return 0;
}

static int parse_move_to(struct parser *ps, const char *rest, size_t rn)
{
        struct v4a_op *op = cur_op(ps);
        _cleanup_free_ char *q = NULL;
        const char *s = rest;
        size_t n = rn;

        strip(&s, &n);
        if (!op || op->type != V4A_OP_UPDATE)
                return parse_error(ps,
                                   "'*** Move to: %.*s' must follow an '*** Update File:' header",
                                   (int) MIN(n, (size_t) REPR_MAX), s);
        if (n > 0 && !op->new_path)
                return dup_path(ps, s, n, &op->new_path);
        q = repr_new(op->path);
        if (!q)
                return -ENOMEM;
        return parse_error(ps, "UPDATE %s: %s", q,
                           n == 0 ? "'*** Move to:' without a path"
                                  : "more than one '*** Move to:'");
}

static int parse_hunk_header(struct parser *ps, const char *s, size_t n)
{
        size_t i = 2, w, q;
        int r;

        if (!cur_op(ps))
                return 0;
        r = flush_hunk(ps);
        if (r < 0)
                return r;
        ps->have_hunk = true;

        /*
         * The seed's r'@@\s*(.+?)\s*@@': the hint is the trimmed text up to the
         * next "@@"; at least one character, else there is no hint.
         */
        (void) eat_ws(s, n, &i);
        w = i;
        for (q = w + 1; q + 1 < n; q++)
                if (s[q] == '@' && s[q + 1] == '@')
                        break;
        if (q + 1 >= n)
                return 0;
        s += w;
        n = q - w;
        strip(&s, &n);
        if (n == 0)
                return 0;
        /* A hint is searched for as text: a NUL ends it. */
        ps->hunk.hint = strndup(s, n);
        if (!ps->hunk.hint)
                return -ENOMEM;
        ps->hunk.hint_len = strlen(ps->hunk.hint);
        return 0;
}

static int parse_body_line(struct parser *ps, const char *s, size_t n)
{
        struct v4a_op *op = cur_op(ps);
        int r;

        if (!op)
                return 0;
        if (n == 0) {
                /* docs/contracts.md 9.12: an empty context line when more of the hunk follows. */
                if (op->type == V4A_OP_UPDATE && ps->have_hunk)
                        ps->pending_blank++;
                return 0;
        }
        if (s[0] == '\\')
                return 0; /* "\ No newline at end of file" */
        ps->have_hunk = true;
        for (; ps->pending_blank > 0; ps->pending_blank--) {
                r = add_hunk_line(ps, ' ', s, 0);
                if (r < 0)
                        return r;
        }
        if (s[0] == '+' || s[0] == '-' || s[0] == ' ')
                return add_hunk_line(ps, s[0], s + 1, n - 1);
        return add_hunk_line(ps, ' ', s, n); /* implicit context line */
}

/* Next line of [t, t+n) from *pos, without its "\n" or "\r\n", as Python's split('\n'). */
static bool next_line(const char *t, size_t n, size_t *pos, const char **ret, size_t *ret_len)
{
        const char *s, *nl;
        size_t len;

        if (*pos > n)
                return false;
        s = t + *pos;
        nl = memchr(s, '\n', n - *pos);
        len = nl ? (size_t) (nl - s) : n - *pos;
        *pos += len + 1;
        if (len > 0 && s[len - 1] == '\r')
                len--;
        *ret = s;
        *ret_len = len;
        return true;
}

static int parse_line(struct parser *ps, const char *s, size_t n)
{
        static const struct {
                const char *kind, *what;
                enum v4a_op_type type;
        } headers[] = {
                {"Update", "File:", V4A_OP_UPDATE},
                {"Add", "File:", V4A_OP_ADD},
                {"Delete", "File:", V4A_OP_DELETE},
                {"Move", "File:", V4A_OP_MOVE},
        };
        const char *rest;
        size_t rn;

        for (size_t k = 0; k < ELEMENTSOF(headers); k++)
                if (match_header(s, n, headers[k].kind, headers[k].what, &rest, &rn)) {
                        if (ps->p->n_ops >= V4A_OPS_MAX)
                                return -E2BIG;
                        return start_op(ps, headers[k].type, rest, rn);
                }
        if (is_eof_marker(s, n))
                return 0;
        if (match_header(s, n, "Move", "to:", &rest, &rn))
                return parse_move_to(ps, rest, rn);
        if (n >= 2 && s[0] == '@' && s[1] == '@')
                return parse_hunk_header(ps, s, n);
        return parse_body_line(ps, s, n);
}

static int check_ops(struct parser *ps)
{
        int r = 0;

        if (ps->nul_in_path)
                r = parse_error(ps, "Operation with a NUL byte in its file path");
        for (size_t i = 0; r >= 0 && i < ps->p->n_ops; i++) {
                const struct v4a_op *op = &ps->p->ops[i];
                _cleanup_free_ char *q = NULL;
                bool no_hunks, no_dest;

                if (!op->path[0])
                        r = parse_error(ps, "Operation with empty file path");
                no_hunks = op->type == V4A_OP_UPDATE && op->n_hunks == 0 && !op->new_path;
                no_dest = op->type == V4A_OP_MOVE && (!op->new_path || !op->new_path[0]);
                if (r < 0 || (!no_hunks && !no_dest))
                        continue;
                q = repr_new(op->path);
                if (!q)
                        return -ENOMEM;
                if (no_hunks)
                        r = parse_error(ps, "UPDATE %s: no hunks found", q);
                else
                        r = parse_error(
                                ps, "MOVE %s: missing destination path (expected 'src -> dst')", q);
        }
        return r;
}

int v4a_parse(const char *text, size_t n, struct v4a_patch **ret, char **ret_error)
{
        _cleanup_v4a_patch_ struct v4a_patch *p = NULL;
        _cleanup_buf_ struct buf errors = BUF_INIT(PARSE_ERROR_MAX);
        struct parser ps = {.errors = &errors};
        size_t pos = 0, begin_after = 0, limit = n + 1;
        const char *s;
        size_t len;
        int r = 0;

        if (n > V4A_PATCH_MAX)
                return -E2BIG;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->text = malloc(n + 1);
        if (!p->text)
                return -ENOMEM;
        if (n > 0)
                memcpy(p->text, text, n);
        p->text[n] = 0;
        p->text_len = n;

        /* The last Begin before the first End starts the patch; the first End ends it. */
        while (next_line(p->text, n, &pos, &s, &len)) {
                if (is_marker2(s, len, "Begin", "Patch"))
                        begin_after = pos;
                else if (is_marker2(s, len, "End", "Patch")) {
                        limit = (size_t) (s - p->text);
                        break;
                }
        }

        ps.p = p;
        pos = begin_after;
        while (r >= 0 && pos < limit && next_line(p->text, n, &pos, &s, &len))
                r = parse_line(&ps, s, len);
        if (r >= 0)
                r = flush_op(&ps);
        else
                (void) flush_op(&ps); /* frees the hunk being built; r says what failed */
        if (r == -E2BIG)
                r = parse_error(&ps, "too many operations (the limit is %d)", V4A_OPS_MAX);
        if (r >= 0)
                r = check_ops(&ps);
        if (r < 0)
                return r;

        if (ps.n_errors > 0) {
                if (asprintf(ret_error, "Parse error: %s", buf_str(&errors)) < 0) {
                        *ret_error = NULL;
                        return -ENOMEM;
                }
                return 0;
        }
        *ret = TAKE_PTR(p);
        return 0;
}
