/* SPDX-License-Identifier: MIT */
/*
 * The post-write syntax check of write_file, patch and V4A (docs/seed.md 2.2): .json with
 * jansson, .yaml/.yml with libyaml, .py with the execution's Python interpreter (ast.parse in
 * a subprocess, 10 s); only errors that the old content did not already have are reported as
 * new (the seed's _check_lint_delta()).
 */

#include "core/tools/lint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <yaml.h>

#include "basic/buf.h"
#include "basic/fd-util.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "core/command/command.h"
#include "core/output/capture.h"
#include "core/tools/tool-util.h"
#include "core/tools/tool.h"

/* Python syntax check: time limit and output kept. */
#define PY_LINT_TIMEOUT_USEC (10 * USEC_PER_SEC)
#define PY_LINT_OUTPUT_MAX 8192
/* Lint outputs longer than this are cut (a parser message is one line). */
#define LINT_TEXT_MAX 16384
/* YAML error snippet, as PyYAML's Mark.get_snippet(). */
#define YAML_SNIPPET_MAX 75
#define YAML_SNIPPET_INDENT 4

#define DELTA_HEADER "New lint errors introduced by this edit (pre-existing errors filtered out):\n"
#define DELTA_SAME_MESSAGE                                                                    \
        "These lint errors were already in the file before this write; it introduced no new " \
        "ones, but the file still does not parse."

void lint_release(struct lint *l)
{
        free(l->text);
        l->text = NULL;
}

static int lint_set(struct lint *l, enum lint_status s, const char *fmt, ...) _printf_(3, 4);
static int lint_set(struct lint *l, enum lint_status s, const char *fmt, ...)
{
        va_list ap;
        int r;

        free(l->text);
        l->text = NULL;
        l->status = s;
        if (!fmt)
                return 0;
        va_start(ap, fmt);
        r = vasprintf(&l->text, fmt, ap);
        va_end(ap);
        if (r < 0) {
                l->text = NULL;
                return -ENOMEM;
        }
        return 0;
}

/* --- linters --- */

static int lint_json(const char *s, size_t n, struct lint *ret)
{
        json_error_t err;
        json_t *v;

        v = json_loadb(s, n, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &err);
        if (v) {
                json_decref(v);
                return lint_set(ret, LINT_OK, NULL);
        }
        return lint_set(ret, LINT_ERROR, "JSONDecodeError: %s (line %d, column %d)", err.text,
                        MAX(err.line, 1), MAX(err.column, 1));
}

/*
 * PyYAML's Mark as text: '  in "<unicode string>", line L, column C:' and a
 * snippet of the line with a caret under the column.
 */
static int yaml_mark_text(struct buf *b, const char *s, size_t n, const yaml_mark_t *m)
{
        size_t i = 0, line = 0, start, end, pointer, col = 0;
        const char *head = "", *tail = "";
        int r;

        r = buf_printf(b, "  in \"<unicode string>\", line %zu, column %zu", m->line + 1,
                       m->column + 1);
        if (r < 0)
                return r;

        /* Find the line (\n, \r\n and \r end a line) and the column's byte offset. */
        while (i < n && line < m->line) {
                if (s[i] == '\r' && i + 1 < n && s[i + 1] == '\n')
                        i++;
                if (s[i] == '\n' || s[i] == '\r')
                        line++;
                i++;
        }
        start = i;
        pointer = i;
        while (pointer < n && col < m->column && s[pointer] != '\n' && s[pointer] != '\r') {
                pointer++;
                while (pointer < n && ((unsigned char) s[pointer] & 0xC0) == 0x80)
                        pointer++;
                col++;
        }
        if (pointer - start > YAML_SNIPPET_MAX / 2 - 1) {
                head = " ... ";
                start = pointer - (YAML_SNIPPET_MAX / 2 - 1) + 5;
                while (start < pointer && ((unsigned char) s[start] & 0xC0) == 0x80)
                        start++;
        }
        end = pointer;
        while (end < n && s[end] != '\n' && s[end] != '\r' && s[end] != 0) {
                end++;
                if (end - pointer > YAML_SNIPPET_MAX / 2 - 1) {
                        tail = " ... ";
                        end -= 5;
                        while (end > pointer && ((unsigned char) s[end] & 0xC0) == 0x80)
                                end--;
                        break;
                }
        }
        r = buf_printf(b, ":\n%*s%s%.*s%s\n%*s^", YAML_SNIPPET_INDENT, "", head,
                       (int) (end - start), s + start, tail,
                       (int) (YAML_SNIPPET_INDENT + strlen(head) + (pointer - start)), "");
        return r;
}

static int lint_yaml(const char *s, size_t n, struct lint *ret)
{
        _cleanup_buf_ struct buf b = BUF_INIT(LINT_TEXT_MAX);
        yaml_parser_t parser;
        yaml_event_t ev;
        bool ok = true, done = false;
        int r = 0;

        if (!yaml_parser_initialize(&parser))
                return -ENOMEM;
        yaml_parser_set_input_string(&parser, (const unsigned char *) s, n);
        /* Events only: a syntax check, no document is built (and no alias bomb expanded). */
        while (!done) {
                if (!yaml_parser_parse(&parser, &ev)) {
                        ok = false;
                        break;
                }
                done = ev.type == YAML_STREAM_END_EVENT;
                yaml_event_delete(&ev);
        }
        if (ok) {
                yaml_parser_delete(&parser);
                return lint_set(ret, LINT_OK, NULL);
        }

        if (parser.error == YAML_MEMORY_ERROR) {
                yaml_parser_delete(&parser);
                return -ENOMEM;
        }
        r = buf_append_str(&b, "YAMLError: ");
        if (parser.error == YAML_READER_ERROR) {
                if (r >= 0)
                        r = buf_printf(&b,
                                       "unacceptable character #x%04x: %s\n  in \"<unicode "
                                       "string>\", position %zu",
                                       (unsigned) parser.problem_value,
                                       parser.problem ?: "special characters are not allowed",
                                       parser.problem_offset);
        } else {
                const yaml_mark_t *cm = &parser.context_mark, *pm = &parser.problem_mark;
                bool sep = false;

                if (parser.context && r >= 0) {
                        r = buf_append_str(&b, parser.context);
                        sep = true;
                        if (r >= 0 &&
                            (!parser.problem || cm->line != pm->line || cm->column != pm->column)) {
                                r = buf_append_char(&b, '\n');
                                if (r >= 0)
                                        r = yaml_mark_text(&b, s, n, cm);
                        }
                }
                if (parser.problem && r >= 0) {
                        if (sep)
                                r = buf_append_char(&b, '\n');
                        if (r >= 0)
                                r = buf_append_str(&b, parser.problem);
                        if (r >= 0)
                                r = buf_append_char(&b, '\n');
                        if (r >= 0)
                                r = yaml_mark_text(&b, s, n, pm);
                }
        }
        yaml_parser_delete(&parser);
        if (r == -ENOMEM)
                return r;
        return lint_set(ret, LINT_ERROR, "%s", buf_str(&b));
}

/* Runs under the execution's interpreter; prints the seed's in-process message. */
static const char py_lint_script[] =
        "import sys,warnings\n"
        "warnings.simplefilter('ignore')\n"
        "import ast\n"
        "src=sys.stdin.buffer.read().decode('utf-8','surrogateescape')\n"
        "try:\n"
        "    ast.parse(src)\n"
        "except SyntaxError as e:\n"
        "    loc=' (line %s, column %s)'%(e.lineno,e.offset) if e.lineno else ''\n"
        "    m='%s: %s%s'%(type(e).__name__,e.msg,loc)\n"
        "except Exception as e:\n"
        "    m='%s: %s'%(type(e).__name__,e)\n"
        "else:\n"
        "    sys.exit(0)\n"
        "sys.stdout.buffer.write(m.encode('utf-8','replace'))\n"
        "sys.exit(1)\n";

/* The last non-empty line of @s, trimmed. New string or NULL. */
static char *last_line(const char *s, size_t n)
{
        size_t end = n, start;

        for (;;) {
                while (end > 0 && (s[end - 1] == '\n' || s[end - 1] == '\r' || s[end - 1] == ' ' ||
                                   s[end - 1] == '\t'))
                        end--;
                if (end == 0)
                        return strdup("");
                start = end;
                while (start > 0 && s[start - 1] != '\n' && s[start - 1] != '\r')
                        start--;
                while (start < end && (s[start] == ' ' || s[start] == '\t'))
                        start++;
                if (start < end)
                        return strndup(s + start, end - start);
        }
}

static int lint_python(const struct tool_ctx *ctx, const char *s, size_t n, struct lint *ret)
{
        _cleanup_close_ int mfd = -EBADF;
        struct capture cap;
        struct capture_text txt = {};
        struct command_result res = {};
        char *argv[] = {(char *) ctx->python, (char *) "-I",           (char *) "-S",
                        (char *) "-c",        (char *) py_lint_script, NULL};
        struct command_opts p = {
                .path = ctx->python,
                .argv = argv,
                .envp = ctx->env,
                .cwd = "/", /* the check needs no directory, and "/" always exists */
                .merge_stderr = false,
                .cancel_fd = ctx->cancel_fd,
        };
        usec_t now = now_usec();
        int r;

        if (!ctx->python || ctx->python[0] != '/')
                return lint_set(ret, LINT_SKIPPED, "No Python interpreter to lint .py files");

        /* The source goes in through a memfd: no temp file, and no pipe to deadlock on. */
        mfd = memfd_with_data("ptc-py-lint", s, n);
        if (mfd < 0)
                return lint_set(ret, LINT_SKIPPED, "Python lint unavailable: %s", strerror(-mfd));
        p.stdin_fd = mfd;
        p.deadline = MIN(now + PY_LINT_TIMEOUT_USEC, ctx->deadline);

        r = capture_init(&cap, PY_LINT_OUTPUT_MAX, 0, 0, NULL, 0);
        if (r < 0)
                return r;
        p.output = &cap;
        r = command_run(&p, &res);
        if (r < 0) {
                capture_release(&cap);
                return lint_set(ret, LINT_SKIPPED, "%s not available: %s", ctx->python,
                                strerror(-r));
        }
        r = capture_text(&cap, &txt);
        capture_release(&cap);
        if (r < 0)
                return r;

        if (res.timed_out || res.cancelled)
                r = lint_set(ret, LINT_SKIPPED, "Python syntax check did not finish in time");
        else if (res.exit_code == 0)
                r = lint_set(ret, LINT_OK, NULL);
        else {
                _cleanup_free_ char *msg = last_line(txt.text, txt.len);

                if (!msg)
                        r = -ENOMEM;
                else if (res.exit_code == 1 && *msg)
                        r = lint_set(ret, LINT_ERROR, "%s", msg);
                else
                        r = lint_set(ret, LINT_SKIPPED, "%s could not check the file (exit %d)",
                                     ctx->python, res.exit_code);
        }
        free(txt.text);
        return r;
}

enum lint_kind {
        LINTER_NONE,
        LINTER_JSON,
        LINTER_YAML,
        LINTER_PYTHON,
};

static enum lint_kind linter_for(const char *ext)
{
        if (strcmp(ext, ".json") == 0)
                return LINTER_JSON;
        if (strcmp(ext, ".yaml") == 0 || strcmp(ext, ".yml") == 0)
                return LINTER_YAML;
        if (strcmp(ext, ".py") == 0)
                return LINTER_PYTHON;
        return LINTER_NONE;
}

static int lint_run(const struct tool_ctx *ctx, enum lint_kind k, const char *ext, const char *s,
                    size_t n, struct lint *ret)
{
        switch (k) {
        case LINTER_JSON:
                return lint_json(s, n, ret);
        case LINTER_YAML:
                return lint_yaml(s, n, ret);
        case LINTER_PYTHON:
                return lint_python(ctx, s, n, ret);
        default:
                return lint_set(ret, LINT_SKIPPED, "No linter for %s files", ext);
        }
}

bool lint_has_linter(const char *ext)
{
        return linter_for(ext) != LINTER_NONE;
}

int lint_check(const struct tool_ctx *ctx, const char *ext, const char *s, size_t n,
               struct lint *ret)
{
        return lint_run(ctx, linter_for(ext), ext, s, n, ret);
}

static bool is_blank(const char *s, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (s[i] != ' ' && s[i] != '\t' && s[i] != '\v' && s[i] != '\f')
                        return false;
        return true;
}

/* Trimmed view of [s, s+n). */
static void trim(const char **s, size_t *n)
{
        while (*n > 0 && strchr(" \t\v\f", **s)) {
                (*s)++;
                (*n)--;
        }
        while (*n > 0 && strchr(" \t\v\f", (*s)[*n - 1]))
                (*n)--;
}

/* Is the trimmed line [l, l+ln) one of @pre's trimmed lines? */
static bool line_in(const char *pre, const char *l, size_t ln)
{
        const char *p = pre;

        while (*p) {
                size_t k = strcspn(p, "\r\n");
                const char *q = p;
                size_t qn = k;

                trim(&q, &qn);
                if (qn == ln && memcmp(q, l, ln) == 0)
                        return true;
                p += k;
                while (*p == '\r' || *p == '\n')
                        p++;
        }
        return false;
}

/* The seed's _check_lint_delta(): keep only errors the old content did not have. */
int lint_delta(const struct tool_ctx *ctx, const char *ext, const char *s, size_t n,
               const char *pre, size_t pre_n, struct lint *ret, char **ret_message)
{
        _cleanup_buf_ struct buf out = BUF_INIT(LINT_TEXT_MAX + sizeof(DELTA_HEADER));
        struct lint old = {};
        enum lint_kind k = linter_for(ext);
        const char *p;
        bool any = false;
        int r;

        *ret_message = NULL;
        r = lint_run(ctx, k, ext, s, n, ret);
        if (r < 0 || ret->status != LINT_ERROR || !pre || pre_n == 0)
                return r;

        r = lint_run(ctx, k, ext, pre, pre_n, &old);
        if (r < 0)
                return r;
        if (old.status != LINT_ERROR || !old.text || !*old.text) {
                lint_release(&old);
                return 0;
        }

        r = buf_append_str(&out, DELTA_HEADER);
        for (p = ret->text; r >= 0 && *p;) {
                size_t k2 = strcspn(p, "\r\n");
                const char *l = p;
                size_t ln = k2;

                trim(&l, &ln);
                if (!is_blank(p, k2) && !line_in(old.text, l, ln)) {
                        if (any)
                                r = buf_append_char(&out, '\n');
                        if (r >= 0)
                                r = buf_append(&out, p, k2);
                        any = true;
                }
                p += k2;
                while (*p == '\r' || *p == '\n')
                        p++;
        }
        lint_release(&old);
        if (r == -ENOMEM)
                return r;
        if (!any) {
                *ret_message = strdup(DELTA_SAME_MESSAGE);
                return *ret_message ? 0 : -ENOMEM;
        }
        return lint_set(ret, LINT_ERROR, "%s", buf_str(&out));
}

json_t *lint_to_json(const struct lint *l, const char *message)
{
        json_auto_t *o = json_object();

        if (!o)
                return NULL;
        switch (l->status) {
        case LINT_SKIPPED:
                if (tool_json_set(o, "status", json_string("skipped")) < 0 ||
                    tool_json_set(o, "message", tool_json_str(l->text ?: "")) < 0)
                        return NULL;
                break;
        case LINT_OK:
                if (tool_json_set(o, "status", json_string("ok")) < 0 ||
                    tool_json_set(o, "output", json_string("")) < 0)
                        return NULL;
                break;
        default:
                if (tool_json_set(o, "status", json_string("error")) < 0 ||
                    tool_json_set(o, "output", tool_json_str(l->text ?: "")) < 0)
                        return NULL;
                if (message && tool_json_set(o, "message", tool_json_str(message)) < 0)
                        return NULL;
                break;
        }
        return json_incref(o);
}

void lint_extension_of(const char *path, char *buf, size_t size)
{
        const char *name = strrchr(path, '/'), *dot;
        size_t n;

        name = name ? name + 1 : path;
        buf[0] = 0;
        dot = strrchr(name, '.');
        if (!dot)
                return;
        for (const char *q = name; q < dot; q++)
                if (*q != '.') {
                        n = MIN(strlen(dot), size - 1);
                        for (size_t i = 0; i < n; i++)
                                buf[i] = (dot[i] >= 'A' && dot[i] <= 'Z')
                                                 ? (char) (dot[i] - 'A' + 'a')
                                                 : dot[i];
                        buf[n] = 0;
                        return;
                }
}

int lint_delta_json(const struct tool_ctx *ctx, const char *path, const char *s, size_t n,
                    const char *pre, size_t pre_n, json_t **ret)
{
        _cleanup_free_ char *message = NULL;
        struct lint l = {};
        char ext[64];
        json_t *j;
        int r;

        lint_extension_of(path, ext, sizeof(ext));
        r = lint_delta(ctx, ext, s, n, pre, pre_n, &l, &message);
        if (r < 0) {
                lint_release(&l);
                return r;
        }
        j = lint_to_json(&l, message);
        lint_release(&l);
        if (!j)
                return -ENOMEM;
        *ret = j;
        return 0;
}
