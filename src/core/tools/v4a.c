/* SPDX-License-Identifier: MIT */
/*
 * V4A patch mode of the patch tool (docs/seed.md 2.4; the seed's
 * tools/patch_parser.py), with ptc's deliberate differences (docs/contracts.md
 * 9.12):
 *
 * - markers are whole lines, so content lines that mention the format
 *   ("+*** End Patch") cannot end or restart the patch;
 * - "*** Move to:" after an Update header renames while updating, and
 *   "*** End of File" is skipped instead of poisoning the hunk;
 * - a blank line inside a hunk is an empty context line (the seed dropped
 *   it, so the search block lost the line and often matched nothing);
 * - validation computes the complete result in memory first, on an overlay
 *   of the files the patch touches, so a failing patch leaves every file as
 *   it was, and the apply phase only writes what validation produced;
 * - Add refuses an existing file, and the write deny list is checked for
 *   every path, Move destinations included;
 * - a patch that changes nothing is an error.
 */

#include "core/tools/v4a.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/fd-util.h"
#include "basic/macro.h"
#include "basic/path-util.h"
#include "basic/time-util.h"
#include "basic/utf8.h"
#include "core/tools/file-safety.h"
#include "core/tools/fuzzy-match.h"
#include "core/tools/lint.h"
#include "core/tools/tool.h"

/* Parse error text; a patch with more problems than fit is summarised by its first ones. */
#define PARSE_ERROR_MAX (64u * 1024)
/* Everything validation holds in memory at once (file contents, new contents, baselines). */
#define V4A_MEMORY_MAX (512u * 1024 * 1024)
/* The seed's window around a hunk's context hint, in characters. */
#define HINT_WINDOW_BEFORE 500
#define HINT_WINDOW_AFTER 2000

#define VALIDATION_HEADER "Patch validation failed (no files were modified):\n"
#define APPLY_HEADER "Apply phase failed (state may be inconsistent — run `git diff` to assess):\n"
#define NO_MATCH_HEADER "\n\nDid you mean one of these sections?\n"
/* fuzzy_unified_diff()'s note on a cut diff; ours when later diffs are left out. */
#define DIFF_CUT_NOTE "[... diff truncated]\n"

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

/* Overlapping occurrences of @pat in @s, as the seed counts a context hint. */
static size_t count_occurrences(const char *s, size_t n, const char *pat, size_t pn)
{
        size_t count = 0, i = 0;

        if (pn == 0)
                return n + 1;
        while (i + pn <= n) {
                const char *p = memmem(s + i, n - i, pat, pn);

                if (!p)
                        break;
                count++;
                i = (size_t) (p - s) + 1;
        }
        return count;
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

static int grow(void **arr, size_t *alloc, size_t need, size_t elem)
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

        r = grow((void **) &h->lines, &ps->lines_alloc, h->n_lines + 1, sizeof(*h->lines));
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
                r = grow((void **) &op->hunks, &ps->hunks_alloc, op->n_hunks + 1,
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
        r = grow((void **) &p->ops, &ps->ops_alloc, p->n_ops + 1, sizeof(*p->ops));
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

/* --- validation: every operation simulated on an in-memory overlay of the files --- */

/* One path the patch touches, as it stands after the operations simulated so far. */
struct entry {
        char *key; /* lexically normalised absolute path */
        bool exists;
        bool is_reg;
        int stat_errno;   /* stat() failed for another reason than absence; 0 */
        int absent_errno; /* ENOENT or ENOTDIR (a parent is not a directory) when absent on disk */
        bool from_disk;   /* no operation changed it yet */
        struct stat st;   /* from_disk && exists */
        bool loaded;
        const char *cur; /* the content when loaded: own, or a plan's content */
        size_t cur_len;
        char *own;  /* content read from disk */
        char *disk; /* where the content is on disk while not loaded */
};

/* What the apply phase does for one operation, computed by validation. */
struct plan {
        char *abs, *abs_new; /* resolved paths of op->path and op->new_path */
        bool moves;          /* Update with a "Move to" naming another file */
        char *content;       /* Add / Update: the new content */
        size_t len;
        bool write;     /* Update: content changed or the file moves */
        bool check;     /* Update: the disk file must still be what validation read */
        struct stat st; /* ... as validation saw it */
        char *pre;      /* Update: content before, the lint baseline; NULL when not kept */
        size_t pre_len;
        size_t diff_end; /* length of the combined diff once this operation's diff is in */
};

struct run {
        const struct tool_ctx *ctx;
        const struct v4a_patch *patch;
        struct entry **entries;
        size_t n_entries, entries_alloc;
        struct plan *plans;
        struct buf errors;
        size_t n_errors, n_dropped;
        struct buf diff;
        size_t diff_cut_at; /* operation whose diff hit V4A_DIFF_MAX; SIZE_MAX when none */
        size_t mem;         /* bytes of file content held, against V4A_MEMORY_MAX */
        size_t changes;     /* operations and hunks that change something */
};

static void entry_free(struct entry *e)
{
        if (!e)
                return;
        free(e->key);
        free(e->own);
        free(e->disk);
        free(e);
}

static void run_release(struct run *run)
{
        for (size_t i = 0; i < run->n_entries; i++)
                entry_free(run->entries[i]);
        free(run->entries);
        if (run->plans)
                for (size_t i = 0; i < run->patch->n_ops; i++) {
                        struct plan *p = &run->plans[i];

                        free(p->abs);
                        free(p->abs_new);
                        free(p->content);
                        free(p->pre);
                }
        free(run->plans);
        buf_release(&run->errors);
        buf_release(&run->diff);
}

static void run_releasep(struct run *run)
{
        run_release(run);
}

static int add_error(struct run *run, const char *fmt, ...) _printf_(2, 3);
static int add_error(struct run *run, const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL;
        size_t room;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        run->n_errors++;
        /* Past the cap only a count is kept; the first error is always there, cut if need be. */
        room = V4A_ERROR_MAX > run->errors.len ? V4A_ERROR_MAX - run->errors.len : 0;
        if (run->errors.len > 0 && (size_t) r + 8 > room) {
                run->n_dropped++;
                return 0;
        }
        r = buf_printf(&run->errors, "%s  • ", run->errors.len > 0 ? "\n" : "");
        if (r >= 0)
                r = buf_append(&run->errors, msg, MIN(strlen(msg), room));
        return r == -ENOMEM ? r : 0;
}

static int entry_get(struct run *run, const char *key, struct entry **ret)
{
        struct entry *e;
        int r;

        for (size_t i = 0; i < run->n_entries; i++)
                if (strcmp(run->entries[i]->key, key) == 0) {
                        *ret = run->entries[i];
                        return 0;
                }
        r = grow((void **) &run->entries, &run->entries_alloc, run->n_entries + 1,
                 sizeof(*run->entries));
        if (r < 0)
                return r;
        e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        e->key = strdup(key);
        e->disk = strdup(key);
        if (!e->key || !e->disk) {
                entry_free(e);
                return -ENOMEM;
        }
        e->from_disk = true;
        if (stat(key, &e->st) == 0) {
                e->exists = true;
                e->is_reg = S_ISREG(e->st.st_mode);
        } else if (errno == ENOENT || errno == ENOTDIR)
                e->absent_errno = errno;
        else
                e->stat_errno = errno;
        run->entries[run->n_entries++] = e;
        *ret = e;
        return 0;
}

/* The entry's content, read from disk on first use. 0 or -errno (-EFBIG: over the budget). */
static int entry_load(struct run *run, struct entry *e)
{
        size_t len = 0;
        int r;

        if (e->loaded)
                return 0;
        if (!e->disk)
                return -ENOENT;
        r = read_file_at(AT_FDCWD, e->disk, V4A_FILE_MAX, &e->own, &len);
        if (r < 0) {
                e->own = NULL;
                return r;
        }
        if (run->mem + len > V4A_MEMORY_MAX) {
                e->own = mfree_str(e->own);
                return -EFBIG;
        }
        run->mem += len;
        e->cur = e->own;
        e->cur_len = len;
        e->loaded = true;
        return 0;
}

/* Forget the entry's content (it was deleted, moved away or replaced). */
static void entry_drop_content(struct run *run, struct entry *e)
{
        if (e->own) {
                run->mem -= MIN(run->mem, e->cur == e->own ? e->cur_len : 0);
                e->own = mfree_str(e->own);
        }
        e->disk = mfree_str(e->disk);
        e->cur = NULL;
        e->cur_len = 0;
        e->loaded = false;
        e->from_disk = false;
}

static void entry_set_absent(struct run *run, struct entry *e)
{
        entry_drop_content(run, e);
        e->exists = false;
        e->is_reg = false;
        e->stat_errno = 0;
        e->absent_errno = ENOENT;
}

/* The entry now holds @s (borrowed from a plan). */
static void entry_set_content(struct run *run, struct entry *e, const char *s, size_t n)
{
        entry_drop_content(run, e);
        e->exists = true;
        e->is_reg = true;
        e->stat_errno = 0;
        e->cur = s;
        e->cur_len = n;
        e->loaded = true;
}

/* Why a new file cannot be created at @e, or NULL when the path is free. */
static const char *occupied(struct run *run, const struct entry *e, char *buf, size_t size)
{
        size_t kl = strlen(e->key);

        if (e->exists)
                return "exists";
        if (e->stat_errno || e->absent_errno == ENOTDIR) {
                (void) snprintf(buf, size, "could not confirm the path is free — %s",
                                strerror(e->stat_errno ?: e->absent_errno));
                return buf;
        }
        /* A parent that an earlier operation of this patch made a file. */
        for (size_t i = 0; i < run->n_entries; i++) {
                const struct entry *o = run->entries[i];
                size_t ol = strlen(o->key);

                if (o->exists && o->is_reg && ol < kl && e->key[ol] == '/' &&
                    memcmp(o->key, e->key, ol) == 0) {
                        (void) snprintf(buf, size,
                                        "could not confirm the path is free — Not a directory");
                        return buf;
                }
        }
        return NULL;
}

static bool deadline_passed(const struct run *run)
{
        return run->ctx->deadline != USEC_INFINITY && now_usec() >= run->ctx->deadline;
}

/* Move @pos back by @k characters (UTF-8 lead bytes) in @s. */
static size_t back_chars(const char *s, size_t pos, size_t k)
{
        while (pos > 0 && k > 0) {
                pos--;
                if (((unsigned char) s[pos] & 0xC0) != 0x80)
                        k--;
        }
        return pos;
}

static size_t fwd_chars(const char *s, size_t n, size_t pos, size_t k)
{
        while (pos < n && k > 0) {
                pos++;
                while (pos < n && ((unsigned char) s[pos] & 0xC0) == 0x80)
                        pos++;
                k--;
        }
        return pos;
}

/* @a + @b + @c as one new string. */
static int concat3(const char *a, size_t an, const char *b, size_t bn, const char *c, size_t cn,
                   char **ret, size_t *ret_len)
{
        char *s;

        if (an > SIZE_MAX - bn - cn - 1)
                return -ENOMEM;
        s = malloc(an + bn + cn + 1);
        if (!s)
                return -ENOMEM;
        if (an)
                memcpy(s, a, an);
        if (bn)
                memcpy(s + an, b, bn);
        if (cn)
                memcpy(s + an + bn, c, cn);
        s[an + bn + cn] = 0;
        *ret = s;
        *ret_len = an + bn + cn;
        return 0;
}

static int hunk_label(const struct v4a_hunk *h, char **ret)
{
        if (h->hint)
                return asprintf(ret, "'%s'", h->hint) < 0 ? -ENOMEM : 0;
        *ret = strdup("(no hint)");
        return *ret ? 0 : -ENOMEM;
}

/* The seed's addition-only placement: after the line holding the unique hint, else at EOF. */
static int insert_addition(const struct v4a_hunk *h, const char *c, size_t cn, const char *eol,
                           const char *ins, size_t in, char **ret, size_t *ret_len, char **ret_err)
{
        size_t el = strlen(eol);
        _cleanup_free_ char *mid = NULL;
        size_t mid_len;
        int r;

        if (h->hint) {
                size_t count = count_occurrences(c, cn, h->hint, h->hint_len);
                const char *at, *nl;

                if (count == 0)
                        return asprintf(ret_err, "addition-only hunk context hint '%s' not found",
                                        h->hint) < 0
                                       ? -ENOMEM
                                       : 0;
                if (count > 1)
                        return asprintf(ret_err,
                                        "addition-only hunk context hint '%s' is ambiguous (%zu "
                                        "occurrences)",
                                        h->hint, count) < 0
                                       ? -ENOMEM
                                       : 0;
                at = memmem(c, cn, h->hint, h->hint_len);
                nl = memchr(at, '\n', cn - (size_t) (at - c));
                if (!nl)
                        return concat3(c, cn, eol, el, ins, in, ret, ret_len);
                r = concat3(ins, in, eol, el, NULL, 0, &mid, &mid_len);
                if (r < 0)
                        return r;
                return concat3(c, (size_t) (nl - c) + 1, mid, mid_len, nl + 1,
                               cn - (size_t) (nl - c) - 1, ret, ret_len);
        }

        /* No hint: content.rstrip('\n') + '\n' + text + '\n' (CR too when the file uses CRLF). */
        while (cn > 0 && (c[cn - 1] == '\n' || (el == 2 && c[cn - 1] == '\r')))
                cn--;
        r = concat3(eol, el, ins, in, eol, el, &mid, &mid_len);
        if (r < 0)
                return r;
        return concat3(c, cn, mid, mid_len, NULL, 0, ret, ret_len);
}

/* "hunk <label> not found — <reason>" plus the seed's "did you mean" sections. */
static int not_found_error(const struct v4a_hunk *h, const char *c, size_t cn, const char *search,
                           size_t sn, const char *reason, char **ret_err)
{
        _cleanup_free_ char *label = NULL, *snippets = NULL;
        bool no_match = reason && strncmp(reason, "Could not find", 14) == 0;
        int r;

        r = hunk_label(h, &label);
        if (r < 0)
                return r;
        if (no_match) {
                snippets = fuzzy_did_you_mean(c, cn, search, sn);
                if (!snippets)
                        return -ENOMEM;
        }
        r = asprintf(ret_err, "hunk %s not found%s%s%s%s", label, reason && *reason ? " — " : "",
                     reason ?: "", snippets && *snippets ? NO_MATCH_HEADER : "",
                     snippets && *snippets ? snippets : "");
        return r < 0 ? -ENOMEM : 0;
}

/*
 * Apply hunk @h to the content @c: *ret is the new content, or NULL when the
 * hunk changes nothing (context only); or *ret_err says why it does not
 * apply. Returns 1 when the hunk is a change, 0 when it is inert, -ENOMEM.
 */
static int apply_hunk(const struct v4a_hunk *h, const char *c, size_t cn, const char *eol,
                      char **ret, size_t *ret_len, char **ret_err)
{
        _cleanup_buf_ struct buf search = BUF_INIT(2 * (size_t) V4A_PATCH_MAX + 16);
        _cleanup_buf_ struct buf repl = BUF_INIT(2 * (size_t) V4A_PATCH_MAX + 16);
        _cleanup_buf_ struct buf added = BUF_INIT(2 * (size_t) V4A_PATCH_MAX + 16);
        _cleanup_free_ char *out = NULL, *err = NULL, *wout = NULL, *werr = NULL;
        size_t ns = 0, nr = 0, na = 0, out_len = 0, count = 0;
        const char *strategy = NULL, *hp;
        int r = 0;

        *ret = NULL;
        *ret_err = NULL;
        for (size_t i = 0; r >= 0 && i < h->n_lines; i++) {
                const struct v4a_line *l = &h->lines[i];

                if (l->prefix != '+') {
                        if (ns++ > 0)
                                r = buf_append_str(&search, eol);
                        if (r >= 0)
                                r = buf_append(&search, l->text, l->len);
                }
                if (r >= 0 && l->prefix != '-') {
                        if (nr++ > 0)
                                r = buf_append_str(&repl, eol);
                        if (r >= 0)
                                r = buf_append(&repl, l->text, l->len);
                }
                if (r >= 0 && l->prefix == '+') {
                        if (na++ > 0)
                                r = buf_append_str(&added, eol);
                        if (r >= 0)
                                r = buf_append(&added, l->text, l->len);
                }
        }
        if (r < 0)
                return -ENOMEM; /* -E2BIG cannot happen: the caps hold twice the patch */

        /* Lines never hold '\n', so equal joined texts of equal counts are equal line lists. */
        if (ns == nr && search.len == repl.len &&
            memcmp(buf_str(&search), buf_str(&repl), search.len) == 0)
                return 0;

        if (search.len == 0) {
                r = insert_addition(h, c, cn, eol, buf_str(&added), added.len, ret, ret_len,
                                    ret_err);
                return r < 0 ? r : 1;
        }

        r = fuzzy_replace_flags(c, cn, buf_str(&search), search.len, buf_str(&repl), repl.len,
                                false, FUZZY_KEEP_CRLF, &out, &out_len, &count, &strategy, &err);
        if (r == -E2BIG) {
                _cleanup_free_ char *label = NULL;

                if (hunk_label(h, &label) < 0)
                        return -ENOMEM;
                return asprintf(ret_err,
                                "hunk %s could not be matched: the file or the hunk is too large "
                                "for fuzzy matching",
                                label) < 0
                               ? -ENOMEM
                               : 1;
        }
        if (r < 0)
                return r;
        if (out) {
                *ret = TAKE_PTR(out);
                *ret_len = out_len;
                return 1;
        }

        /* The seed's retry inside a window around the hint's first occurrence. */
        hp = h->hint ? memmem(c, cn, h->hint, h->hint_len) : NULL;
        if (hp) {
                size_t pos = (size_t) (hp - c), ws, we, wl = 0;

                ws = back_chars(c, pos, HINT_WINDOW_BEFORE);
                we = fwd_chars(c, cn, pos, HINT_WINDOW_AFTER);
                r = fuzzy_replace_flags(c + ws, we - ws, buf_str(&search), search.len,
                                        buf_str(&repl), repl.len, false, FUZZY_KEEP_CRLF, &wout,
                                        &wl, &count, &strategy, &werr);
                if (r == -ENOMEM)
                        return r;
                if (r >= 0 && wout) {
                        r = concat3(c, ws, wout, wl, c + we, cn - we, ret, ret_len);
                        return r < 0 ? r : 1;
                }
        }
        r = not_found_error(h, c, cn, buf_str(&search), search.len, err, ret_err);
        return r < 0 ? r : 1;
}

/*
 * "\r\n" for a file with CRLF line ends (FUZZY_KEEP_CRLF's rule), else "\n": hunk lines are
 * joined with it, so they match the file exactly and added lines get its line ends.
 */
static const char *detect_eol(const char *c, size_t n)
{
        return memmem(c, n, "\r\n", 2) ? "\r\n" : "\n";
}

static int resolve(const struct tool_ctx *ctx, const char *path, char **ret_abs, char **ret_key)
{
        _cleanup_free_ char *abs = tool_resolve_path(ctx, path);
        int r;

        if (!abs)
                return -ENOMEM;
        r = file_safety_normpath(abs, ret_key);
        if (r < 0)
                return r;
        *ret_abs = TAKE_PTR(abs);
        return 0;
}

/* Append "\n" (between operations) and then this operation's diff via @fn. */
static int diff_begin(struct run *run, size_t idx)
{
        if (run->diff_cut_at != SIZE_MAX)
                return -E2BIG;
        if (idx > 0 && buf_append_char(&run->diff, '\n') < 0) {
                run->diff_cut_at = idx;
                return -E2BIG;
        }
        return 0;
}

static int diff_end(struct run *run, size_t idx, int r)
{
        if (r == -E2BIG && run->diff_cut_at == SIZE_MAX)
                run->diff_cut_at = idx;
        run->plans[idx].diff_end = run->diff.len;
        return r == -E2BIG ? 0 : r;
}

static int diff_text(struct run *run, size_t idx, const char *fmt, ...) _printf_(3, 4);
static int diff_text(struct run *run, size_t idx, const char *fmt, ...)
{
        va_list ap;
        int r;

        r = diff_begin(run, idx);
        if (r >= 0) {
                va_start(ap, fmt);
                r = buf_vprintf(&run->diff, fmt, ap);
                va_end(ap);
        }
        return diff_end(run, idx, r);
}

static int diff_unified(struct run *run, size_t idx, const char *a, size_t an, const char *b,
                        size_t bn, const char *from, const char *to)
{
        _cleanup_free_ char *d = NULL;
        size_t dl = 0, room;
        int r = diff_begin(run, idx);

        if (r >= 0) {
                room = V4A_DIFF_MAX > run->diff.len ? V4A_DIFF_MAX - run->diff.len : 0;
                r = fuzzy_unified_diff(a, an, b, bn, from, to, room, &d, &dl);
                if (r >= 0)
                        r = buf_append(&run->diff, d, dl);
                /* Cut to fit: the diffs of later operations are left out. */
                if (r >= 0 && dl >= strlen(DIFF_CUT_NOTE) &&
                    memcmp(d + dl - strlen(DIFF_CUT_NOTE), DIFF_CUT_NOTE, strlen(DIFF_CUT_NOTE)) ==
                            0)
                        r = -E2BIG;
        }
        return diff_end(run, idx, r);
}

static int validate_add(struct run *run, size_t idx, struct entry *e)
{
        const struct v4a_op *op = &run->patch->ops[idx];
        struct plan *p = &run->plans[idx];
        _cleanup_buf_ struct buf content = BUF_INIT((size_t) V4A_PATCH_MAX);
        char why[256];
        const char *o;
        size_t k = 0;
        int r = 0;

        o = occupied(run, e, why, sizeof(why));
        if (o && strcmp(o, "exists") == 0)
                return add_error(run, "%s: file already exists — use Update File, not Add File",
                                 op->path);
        if (o)
                return add_error(run, "%s: %s", op->path, o);

        for (size_t h = 0; r >= 0 && h < op->n_hunks; h++)
                for (size_t i = 0; r >= 0 && i < op->hunks[h].n_lines; i++) {
                        const struct v4a_line *l = &op->hunks[h].lines[i];

                        if (l->prefix != '+')
                                continue;
                        if (k++ > 0)
                                r = buf_append_char(&content, '\n');
                        if (r >= 0)
                                r = buf_append(&content, l->text, l->len);
                }
        if (r < 0)
                return -ENOMEM; /* the content is part of the patch: it fits */
        p->len = content.len;
        p->content = buf_steal(&content, NULL);
        if (!p->content)
                return -ENOMEM;
        entry_set_content(run, e, p->content, p->len);
        run->changes++;

        if (run->n_errors > 0)
                return 0;
        r = diff_begin(run, idx);
        if (r >= 0)
                r = buf_printf(&run->diff, "--- /dev/null\n+++ b/%s\n", op->path);
        for (size_t h = 0, first = 1; r >= 0 && h < op->n_hunks; h++)
                for (size_t i = 0; r >= 0 && i < op->hunks[h].n_lines; i++) {
                        const struct v4a_line *l = &op->hunks[h].lines[i];

                        if (l->prefix != '+')
                                continue;
                        r = buf_printf(&run->diff, "%s+", first ? "" : "\n");
                        if (r >= 0)
                                r = buf_append(&run->diff, l->text, l->len);
                        first = 0;
                }
        return diff_end(run, idx, r);
}

static int read_error(struct run *run, const char *path, int err)
{
        if (err == ENOENT || err == ENOTDIR)
                return add_error(run, "%s: File not found: %s", path, path);
        if (err == E2BIG)
                return add_error(run, "%s: Failed to read file: %s: larger than %u MiB", path, path,
                                 V4A_FILE_MAX / (1024 * 1024));
        if (err == EFBIG)
                return add_error(run,
                                 "%s: the patch needs more than %u MiB of file content in memory",
                                 path, V4A_MEMORY_MAX / (1024 * 1024));
        return add_error(run, "%s: Failed to read file: %s: %s", path, path, strerror(err));
}

static int validate_update(struct run *run, size_t idx, struct entry *e, struct entry *dst)
{
        const struct v4a_op *op = &run->patch->ops[idx];
        struct plan *p = &run->plans[idx];
        _cleanup_free_ char *work = NULL, *from = NULL, *to = NULL;
        const char *eol, *base;
        size_t work_len, base_len;
        char ext[64], why[256];
        bool failed = false;
        int r;

        if (e->stat_errno)
                return read_error(run, op->path, e->stat_errno);
        if (!e->exists)
                return read_error(run, op->path, ENOENT);
        if (!e->is_reg)
                return read_error(run, op->path, S_ISDIR(e->st.st_mode) ? EISDIR : EINVAL);
        r = entry_load(run, e);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return read_error(run, op->path, -r);
        base = e->cur;
        base_len = e->cur_len;

        work = malloc(base_len + 1);
        if (!work)
                return -ENOMEM;
        memcpy(work, base, base_len);
        work[base_len] = 0;
        work_len = base_len;
        eol = detect_eol(base, base_len);

        for (size_t h = 0; h < op->n_hunks; h++) {
                _cleanup_free_ char *nw = NULL, *err = NULL;
                size_t nwl = 0;

                if (deadline_passed(run))
                        return -ETIMEDOUT;
                r = apply_hunk(&op->hunks[h], work, work_len, eol, &nw, &nwl, &err);
                if (r < 0)
                        return r;
                if (err) {
                        r = add_error(run, "%s: %s", op->path, err);
                        if (r < 0)
                                return r;
                        failed = true;
                        continue;
                }
                run->changes += (size_t) r;
                if (nw) {
                        free(work);
                        work = TAKE_PTR(nw);
                        work_len = nwl;
                }
        }

        if (p->moves) {
                const char *o = occupied(run, dst, why, sizeof(why));

                if (o && strcmp(o, "exists") == 0)
                        r = add_error(run, "%s: destination already exists — move would overwrite",
                                      op->new_path);
                else if (o)
                        r = add_error(run, "%s: %s", op->new_path, o);
                if (o)
                        return r;
        }
        if (failed)
                return 0;

        p->write = p->moves || work_len != base_len || memcmp(work, base, base_len) != 0;
        if (p->moves)
                run->changes++;
        p->check = e->from_disk;
        p->st = e->st;
        lint_extension_of(p->moves ? op->new_path : op->path, ext, sizeof(ext));
        if (lint_has_linter(ext) && base_len <= LINT_PRE_MAX) {
                if (run->mem + base_len > V4A_MEMORY_MAX)
                        return read_error(run, op->path, EFBIG);
                p->pre = malloc(base_len + 1);
                if (!p->pre)
                        return -ENOMEM;
                memcpy(p->pre, base, base_len);
                p->pre[base_len] = 0;
                p->pre_len = base_len;
                run->mem += base_len;
        }

        if (run->n_errors == 0) {
                size_t before = run->diff.len + (idx > 0);

                if (asprintf(&from, "a/%s", op->path) < 0 ||
                    asprintf(&to, "b/%s", p->moves ? op->new_path : op->path) < 0)
                        return -ENOMEM;
                r = diff_unified(run, idx, base, base_len, work, work_len, from, to);
                if (r < 0)
                        return r;
                if (p->moves && run->diff.len == before && run->diff_cut_at == SIZE_MAX) {
                        /* Moved without a content change: the diff says what happened. */
                        r = buf_printf(&run->diff, "# Moved: %s -> %s", op->path, op->new_path);
                        r = diff_end(run, idx, r);
                        if (r < 0)
                                return r;
                }
        }

        if (run->mem + work_len > V4A_MEMORY_MAX)
                return read_error(run, op->path, EFBIG);
        run->mem += work_len;
        p->content = TAKE_PTR(work);
        p->len = work_len;
        if (p->moves) {
                entry_set_absent(run, e);
                entry_set_content(run, dst, p->content, p->len);
        } else
                entry_set_content(run, e, p->content, p->len);
        return 0;
}

static int validate_delete(struct run *run, size_t idx, struct entry *e)
{
        const struct v4a_op *op = &run->patch->ops[idx];
        _cleanup_free_ char *from = NULL;
        int r;

        if (e->stat_errno)
                return add_error(run, "%s: could not check the file — %s", op->path,
                                 strerror(e->stat_errno));
        if (!e->exists)
                return add_error(run, "%s: file not found for deletion", op->path);
        if (!e->is_reg)
                return add_error(run,
                                 "%s: is a directory or special file; Delete File removes "
                                 "regular files only",
                                 op->path);
        run->changes++;
        if (run->n_errors == 0) {
                r = entry_load(run, e);
                if (r == -ENOMEM)
                        return r;
                if (r >= 0 && e->cur_len > 0) {
                        if (asprintf(&from, "a/%s", op->path) < 0)
                                return -ENOMEM;
                        r = diff_unified(run, idx, e->cur, e->cur_len, "", 0, from, "/dev/null");
                } else
                        /* An empty (or unreadable) file has no unified diff: the seed's note. */
                        r = diff_text(run, idx, "# Deleted: %s", op->path);
                if (r < 0)
                        return r;
        }
        entry_set_absent(run, e);
        return 0;
}

static int validate_move(struct run *run, size_t idx, struct entry *src, struct entry *dst)
{
        const struct v4a_op *op = &run->patch->ops[idx];
        char why[256];
        const char *o;
        bool bad = false;
        int r = 0;

        if (src == dst)
                return add_error(run, "%s: source and destination are the same file", op->path);
        if (src->stat_errno) {
                r = add_error(run, "%s: could not check the file — %s", op->path,
                              strerror(src->stat_errno));
                bad = true;
        } else if (!src->exists) {
                r = add_error(run, "%s: source file not found for move", op->path);
                bad = true;
        } else if (!src->is_reg) {
                r = add_error(run,
                              "%s: is a directory or special file; Move File moves regular "
                              "files only",
                              op->path);
                bad = true;
        }
        if (r < 0)
                return r;
        o = occupied(run, dst, why, sizeof(why));
        if (o && strcmp(o, "exists") == 0)
                return add_error(run, "%s: destination already exists — move would overwrite",
                                 op->new_path);
        if (o)
                return add_error(run, "%s: %s", op->new_path, o);
        if (bad)
                return 0;

        /* The destination takes over the source's state (content loaded or still on disk). */
        entry_drop_content(run, dst);
        dst->exists = true;
        dst->is_reg = true;
        dst->stat_errno = 0;
        dst->loaded = src->loaded;
        dst->cur = src->cur;
        dst->cur_len = src->cur_len;
        dst->own = TAKE_PTR(src->own);
        dst->disk = TAKE_PTR(src->disk);
        src->loaded = false;
        src->cur = NULL;
        src->cur_len = 0;
        entry_set_absent(run, src);
        run->changes++;
        if (run->n_errors > 0)
                return 0;
        return diff_text(run, idx, "# Moved: %s -> %s", op->path, op->new_path);
}

/* The write deny list for @path; adds the seed's refusal as an error. 1 when denied. */
static int check_denied(struct run *run, const char *path, const char *abs)
{
        _cleanup_free_ char *shown = NULL;
        int r;

        r = file_safety_write_denied(run->ctx, abs);
        if (r <= 0)
                return r;
        r = tool_expand_tilde(run->ctx, path, &shown);
        if (r < 0)
                return r;
        r = add_error(run, "Write denied: '%s' is a protected system/credential file.", shown);
        return r < 0 ? r : 1;
}

static int validate(struct run *run)
{
        const struct v4a_patch *patch = run->patch;
        int r;

        for (size_t i = 0; i < patch->n_ops; i++) {
                const struct v4a_op *op = &patch->ops[i];
                struct plan *p = &run->plans[i];
                _cleanup_free_ char *key = NULL, *key_new = NULL;
                struct entry *e = NULL, *dst = NULL;
                bool denied = false;

                if (deadline_passed(run))
                        return -ETIMEDOUT;
                r = resolve(run->ctx, op->path, &p->abs, &key);
                if (r < 0)
                        return r;
                if (op->new_path) {
                        r = resolve(run->ctx, op->new_path, &p->abs_new, &key_new);
                        if (r < 0)
                                return r;
                }
                r = check_denied(run, op->path, p->abs);
                if (r < 0)
                        return r;
                denied = r > 0;
                if (op->new_path) {
                        r = check_denied(run, op->new_path, p->abs_new);
                        if (r < 0)
                                return r;
                        denied = denied || r > 0;
                }
                if (denied)
                        continue;

                r = entry_get(run, key, &e);
                if (r >= 0 && key_new)
                        r = entry_get(run, key_new, &dst);
                if (r < 0)
                        return r;
                p->moves = op->type == V4A_OP_UPDATE && dst && dst != e;

                switch (op->type) {
                case V4A_OP_ADD:
                        r = validate_add(run, i, e);
                        break;
                case V4A_OP_UPDATE:
                        r = validate_update(run, i, e, dst);
                        break;
                case V4A_OP_DELETE:
                        r = validate_delete(run, i, e);
                        break;
                case V4A_OP_MOVE:
                        r = validate_move(run, i, e, dst);
                        break;
                }
                if (r < 0)
                        return r;
        }
        if (run->n_errors == 0 && run->changes == 0)
                return add_error(run, patch->n_ops == 0
                                              ? "Patch contains no changes (no file operations "
                                                "were found)"
                                              : "Patch contains no changes (only context lines "
                                                "were provided)");
        return 0;
}

/* --- apply: only what validation computed, in patch order --- */

static int parent_dir(const char *path, char **ret)
{
        char *d = strdup(path), *slash;

        if (!d)
                return -ENOMEM;
        slash = strrchr(d, '/');
        if (slash && slash != d)
                *slash = 0;
        else
                d[1] = 0; /* "/x" -> "/"; tool_resolve_path() paths are absolute */
        *ret = d;
        return 0;
}

static int make_parent(const char *path)
{
        _cleanup_free_ char *dir = NULL;
        int r;

        r = parent_dir(path, &dir);
        if (r < 0)
                return r;
        return mkdir_p(dir, 0777);
}

/* The target a write goes to: through symlinks, as write_file. New string. */
static int write_target(const char *abs, char **ret)
{
        int r = file_safety_realpath(abs, ret);

        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                *ret = strdup(abs);
                if (!*ret)
                        return -ENOMEM;
        }
        return 0;
}

static int fail(char **ret_err, const char *fmt, ...) _printf_(2, 3);
static int fail(char **ret_err, const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(ret_err, fmt, ap);
        va_end(ap);
        if (r < 0) {
                *ret_err = NULL;
                return -ENOMEM;
        }
        return 0;
}

static bool same_file_state(const struct stat *a, const struct stat *b)
{
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
               a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* rename(2) that never replaces an existing @to; EXDEV copies (mode kept) and unlinks. */
static int move_file(const char *from, const char *to)
{
        _cleanup_free_ char *data = NULL;
        struct stat st;
        size_t len = 0;
        int r;

        if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
                return 0;
        r = -errno;
        if (r == -EINVAL || r == -ENOSYS) {
                /* FIXME: drop once every file system we run on has RENAME_NOREPLACE. */
                if (lstat(to, &st) == 0)
                        return -EEXIST;
                return rename(from, to) < 0 ? -errno : 0;
        }
        if (r != -EXDEV)
                return r;
        if (stat(from, &st) < 0)
                return -errno;
        r = read_file_at(AT_FDCWD, from, V4A_FILE_MAX, &data, &len);
        if (r < 0)
                return r;
        if (lstat(to, &st) == 0)
                return -EEXIST;
        r = write_file_atomic(to, data, len, (int) (st.st_mode & 07777));
        if (r < 0)
                return r;
        return unlink(from) < 0 ? -errno : 0;
}

/* Do operation @idx. 0 (done), or 0 with *ret_err set (a failure to report), or -ENOMEM. */
static int apply_op(struct run *run, size_t idx, char **ret_err)
{
        const struct v4a_op *op = &run->patch->ops[idx];
        const struct plan *p = &run->plans[idx];
        _cleanup_free_ char *target = NULL;
        struct stat st;
        int r;

        *ret_err = NULL;
        switch (op->type) {
        case V4A_OP_ADD:
                r = write_target(p->abs, &target);
                if (r < 0)
                        return r;
                if (lstat(target, &st) == 0)
                        return fail(ret_err, "file already exists — use Update File, not Add File");
                r = make_parent(target);
                if (r >= 0)
                        r = tool_file_replace(target, p->content, p->len, false);
                if (r == -ENOMEM)
                        return r;
                return r < 0 ? fail(ret_err, "%s", strerror(-r)) : 0;

        case V4A_OP_UPDATE:
                if (!p->write)
                        return 0;
                if (stat(p->abs, &st) < 0)
                        return fail(ret_err, "Cannot read file: %s", strerror(errno));
                if (p->check && !same_file_state(&st, &p->st))
                        return fail(ret_err, "the file changed on disk after the patch was "
                                             "validated");
                if (!p->moves) {
                        r = write_target(p->abs, &target);
                        if (r < 0)
                                return r;
                        r = tool_file_replace(target, p->content, p->len, true);
                        if (r == -ENOMEM)
                                return r;
                        return r < 0 ? fail(ret_err, "%s", strerror(-r)) : 0;
                }
                if (lstat(p->abs_new, &st) == 0)
                        return fail(ret_err,
                                    "%s: destination already exists — move would "
                                    "overwrite",
                                    op->new_path);
                if (stat(p->abs, &st) < 0)
                        return fail(ret_err, "Cannot read file: %s", strerror(errno));
                r = make_parent(p->abs_new);
                if (r >= 0)
                        r = write_file_atomic(p->abs_new, p->content, p->len,
                                              (int) (st.st_mode & 07777));
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return fail(ret_err, "%s: %s", op->new_path, strerror(-r));
                if (unlink(p->abs) < 0)
                        return fail(ret_err, "wrote %s but could not remove the old file: %s",
                                    op->new_path, strerror(errno));
                return 0;

        case V4A_OP_DELETE:
                if (unlink(p->abs) < 0)
                        return fail(ret_err, "%s",
                                    errno == ENOENT ? "file not found" : strerror(errno));
                return 0;

        case V4A_OP_MOVE:
                r = make_parent(p->abs_new);
                if (r >= 0)
                        r = move_file(p->abs, p->abs_new);
                if (r == -ENOMEM)
                        return r;
                if (r == -EEXIST)
                        return fail(ret_err,
                                    "%s: destination already exists — move would "
                                    "overwrite",
                                    op->new_path);
                return r < 0 ? fail(ret_err, "%s", strerror(-r)) : 0;
        }
        return 0;
}

static const char *const op_verbs[] = {
        [V4A_OP_ADD] = "add",
        [V4A_OP_UPDATE] = "update",
        [V4A_OP_DELETE] = "delete",
        [V4A_OP_MOVE] = "move",
};

/* --- the result --- */

static int append_str(json_t *a, const char *fmt, ...) _printf_(2, 3);
static int append_str(json_t *a, const char *fmt, ...)
{
        _cleanup_free_ char *s = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        return json_array_append_new(a, tool_json_str(s)) < 0 ? -ENOMEM : 0;
}

/*
 * The seed's PatchResult.to_dict() for the first @applied operations: "success", then
 * "diff", "files_modified", "files_created", "files_deleted", "lint" when not empty, then
 * "error" when @error is set.
 */
static int build_result(struct run *run, size_t applied, const char *error, json_t **ret)
{
        const struct v4a_patch *patch = run->patch;
        json_auto_t *o = json_object(), *mod = json_array(), *cre = json_array(),
                    *del = json_array(), *lint = json_object();
        size_t dl = applied > 0 ? run->plans[applied - 1].diff_end : 0;
        bool cut = run->diff_cut_at < applied;
        int r = 0;

        if (!o || !mod || !cre || !del || !lint)
                return -ENOMEM;
        for (size_t i = 0; r >= 0 && i < applied; i++) {
                const struct v4a_op *op = &patch->ops[i];
                const struct plan *p = &run->plans[i];
                const char *shown = p->moves ? op->new_path : op->path;

                switch (op->type) {
                case V4A_OP_ADD:
                        r = append_str(cre, "%s", op->path);
                        break;
                case V4A_OP_DELETE:
                        r = append_str(del, "%s", op->path);
                        break;
                case V4A_OP_MOVE:
                        r = append_str(mod, "%s -> %s", op->path, op->new_path);
                        break;
                case V4A_OP_UPDATE:
                        if (p->moves)
                                r = append_str(mod, "%s -> %s", op->path, op->new_path);
                        else
                                r = append_str(mod, "%s", op->path);
                        break;
                }
                if (r >= 0 && (op->type == V4A_OP_ADD || op->type == V4A_OP_UPDATE)) {
                        json_t *lj = NULL;

                        r = lint_delta_json(run->ctx, shown, p->content, p->len, p->pre, p->pre_len,
                                            &lj);
                        if (r >= 0)
                                r = tool_json_set_name(lint, shown, lj);
                }
        }
        if (r < 0)
                return -ENOMEM;

        if (tool_json_set(o, "success", json_boolean(!error)) < 0)
                return -ENOMEM;
        if (dl > 0 || cut) {
                _cleanup_buf_ struct buf d = BUF_INIT((size_t) V4A_DIFF_MAX + 128);

                r = buf_append(&d, buf_str(&run->diff), dl);
                if (r >= 0 && cut &&
                    (d.len < strlen(DIFF_CUT_NOTE) ||
                     memcmp(d.data + d.len - strlen(DIFF_CUT_NOTE), DIFF_CUT_NOTE,
                            strlen(DIFF_CUT_NOTE)) != 0))
                        r = buf_append_str(&d, "\n" DIFF_CUT_NOTE);
                if (r < 0 || tool_json_set(o, "diff", tool_json_string(buf_str(&d), d.len)) < 0)
                        return -ENOMEM;
        }
        if ((json_array_size(mod) > 0 && json_object_set(o, "files_modified", mod) < 0) ||
            (json_array_size(cre) > 0 && json_object_set(o, "files_created", cre) < 0) ||
            (json_array_size(del) > 0 && json_object_set(o, "files_deleted", del) < 0) ||
            (json_object_size(lint) > 0 && json_object_set(o, "lint", lint) < 0))
                return -ENOMEM;
        if (error && tool_json_set(o, "error", tool_json_str(error)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

/* The seed's refusal of system paths, for every path of the patch (Move targets too). */
static int check_sensitive(const struct tool_ctx *ctx, const struct v4a_patch *patch,
                           json_t **ret_result)
{
        for (size_t i = 0; i < patch->n_ops; i++)
                for (size_t k = 0; k < 2; k++) {
                        const char *path = k == 0 ? patch->ops[i].path : patch->ops[i].new_path;
                        _cleanup_tool_path_ struct tool_path tp = {};
                        int r;

                        if (!path)
                                continue;
                        r = tool_path_check(ctx, path, &tp, ret_result);
                        if (r != 0)
                                return r;
                }
        return 0;
}

int v4a_apply(const struct tool_ctx *ctx, const char *patch_text, size_t n, json_t **ret_result)
{
        _cleanup_v4a_patch_ struct v4a_patch *patch = NULL;
        _cleanup_free_ char *parse_err = NULL;
        _cleanup_buf_ struct buf msg = BUF_INIT(V4A_ERROR_MAX + 1024);
        _cleanup_(run_releasep) struct run run = {
                .ctx = ctx,
                .errors = BUF_INIT(V4A_ERROR_MAX + 1024),
                .diff = BUF_INIT(V4A_DIFF_MAX + 256),
                .diff_cut_at = SIZE_MAX,
        };
        size_t applied = 0;
        int r;

        r = v4a_parse(patch_text, n, &patch, &parse_err);
        if (r == -E2BIG)
                return tool_failure_result(ret_result,
                                           "Failed to parse patch: the patch is larger than %u MiB",
                                           V4A_PATCH_MAX / (1024 * 1024));
        if (r < 0)
                return r;
        if (parse_err)
                return tool_failure_result(ret_result, "Failed to parse patch: %s", parse_err);

        r = check_sensitive(ctx, patch, ret_result);
        if (r != 0)
                return r < 0 ? r : 0;

        run.patch = patch;
        run.plans = calloc(MAX(patch->n_ops, (size_t) 1), sizeof(*run.plans));
        if (!run.plans)
                return -ENOMEM;

        r = validate(&run);
        if (r == -ETIMEDOUT)
                r = add_error(&run, "Patch validation did not finish before the execution's "
                                    "deadline");
        if (r < 0)
                return r;
        if (run.n_errors > 0) {
                r = buf_append_str(&msg, VALIDATION_HEADER);
                if (r >= 0)
                        r = buf_append(&msg, buf_str(&run.errors), run.errors.len);
                if (r >= 0 && run.n_dropped > 0)
                        r = buf_printf(&msg, "\n  • ... and %zu more errors", run.n_dropped);
                if (r == -ENOMEM)
                        return r;
                return tool_failure_result(ret_result, "%s", buf_str(&msg));
        }

        for (; applied < patch->n_ops; applied++) {
                _cleanup_free_ char *err = NULL;

                r = apply_op(&run, applied, &err);
                if (r < 0)
                        return r;
                if (!err)
                        continue;
                r = buf_printf(&msg, APPLY_HEADER "  • Failed to %s %s: %s",
                               op_verbs[patch->ops[applied].type], patch->ops[applied].path, err);
                if (r >= 0 && applied + 1 < patch->n_ops)
                        r = buf_printf(&msg, "\n  • %zu later operation(s) were not applied",
                                       patch->n_ops - applied - 1);
                if (r == -E2BIG)
                        r = 0; /* the start of the message is what matters */
                if (r < 0)
                        return r;
                break;
        }
        return build_result(&run, applied, msg.len > 0 ? buf_str(&msg) : NULL, ret_result);
}
