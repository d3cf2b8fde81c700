/* SPDX-License-Identifier: MIT */
#include "core/stubs/stubs.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/strv.h"
#include "basic/utf8.h"
#include "core/registry/registry.h"
#include "core/stubs/stubs-body.h"
#include "core/tools/tool.h"

/*
 * Caps: a schema beyond these is hostile or broken, and the module must stay
 * small enough to write and import quickly.
 */
#define STUBS_MAX_MODULE (64u << 20)
#define STUBS_MAX_PARAMS REGISTRY_MAX_PARAMS /* the registry leaves out an extra tool with more */
#define STUBS_MAX_DEPTH 32
#define STUBS_MAX_LITERAL (1u << 20)

#define DEFAULT_MODULE_NAME "hermes_tools"

static const char *const python_keywords[] = {
        "False",
        "None",
        "True",
        "and",
        "as",
        "assert",
        "async",
        "await",
        "break",
        "class",
        "continue",
        "def",
        "del",
        "elif",
        "else",
        "except",
        "finally",
        "for",
        "from",
        "global",
        "if",
        "import",
        "in",
        "is",
        "lambda",
        "nonlocal",
        "not",
        "or",
        "pass",
        "raise",
        "return",
        "try",
        "while",
        "with",
        "yield",
        /* Not a keyword, but assigning it (a parameter) is a SyntaxError. */
        "__debug__",
        NULL,
};

/*
 * Module-level names of the generated code (imports, privates, helpers and the
 * builtins it calls): a stub with one of these names would shadow it and break
 * _call() for every tool. Keep in sync with module-body.py.
 */
static const char *const module_names[] = {
        "json",
        "os",
        "_socket",
        "_thread",
        "time",
        "itertools",
        "_local",
        "_ids",
        "_dumps",
        "_names",
        "_forks",
        "_TO_WIRE",
        "_FROM_WIRE",
        "_unescape",
        "_REQ",
        "_CLOSED",
        "_connect",
        "_call",
        "json_parse",
        "shell_quote",
        "retry",
        "getattr",
        "OSError",
        "RuntimeError",
        "BaseException",
        "Exception",
        "ValueError",
        "isinstance",
        "dict",
        "list",
        "str",
        "bytes",
        "bytearray",
        "next",
        "range",
        "BrokenPipeError",
        "ConnectionResetError",
        "UnicodeEncodeError",
        NULL,
};

/* The names the helpers are exported under, in __all__ order. */
static const char *const helper_names[] = {"json_parse", "shell_quote", "retry", NULL};

static bool names_contain(const char *const *l, const char *s)
{
        for (size_t i = 0; l && l[i]; i++)
                if (strcmp(l[i], s) == 0)
                        return true;
        return false;
}

/* Code point of the valid UTF-8 sequence @p of @l bytes. */
static uint32_t utf8_decode(const unsigned char *p, size_t l)
{
        switch (l) {
        case 2:
                return ((uint32_t) (p[0] & 0x1f) << 6) | (p[1] & 0x3f);
        case 3:
                return ((uint32_t) (p[0] & 0x0f) << 12) | ((uint32_t) (p[1] & 0x3f) << 6) |
                       (p[2] & 0x3f);
        case 4:
                return ((uint32_t) (p[0] & 0x07) << 18) | ((uint32_t) (p[1] & 0x3f) << 12) |
                       ((uint32_t) (p[2] & 0x3f) << 6) | (p[3] & 0x3f);
        default:
                return p[0];
        }
}

/*
 * Characters that are valid in Python source but invisible or that reorder or
 * break lines in editors and terminals (C1 controls, bidi controls, line
 * separators, BOM): written as escapes so the module reads as what it does.
 */
static bool needs_escape(uint32_t cp)
{
        return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c || (cp >= 0x200b && cp <= 0x200f) ||
               (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff;
}

enum quoting {
        QUOTE_STRING,    /* inside "...": every quote and newline escaped */
        QUOTE_DOCSTRING, /* inside """...""": newlines kept (and indented) */
};

/*
 * Append @s (@n bytes, hostile: any bytes, NULs and invalid UTF-8 included)
 * escaped for a Python string literal. Invalid UTF-8 becomes U+FFFD, as the
 * module must be valid UTF-8 to import at all. In a docstring a quote is
 * escaped when another quote or the closing delimiter follows it, so no run of
 * three ever forms; each newline is followed by @indent unless the line is
 * empty.
 */
static int append_escaped(struct buf *b, const char *s, size_t n, enum quoting q,
                          const char *indent)
{
        const unsigned char *u = (const unsigned char *) s;
        int r = 0;

        for (size_t i = 0; i < n && r >= 0;) {
                unsigned char c = u[i];

                if (c >= 0x80) {
                        size_t l = utf8_valid_seq_len(u + i, n - i);
                        uint32_t cp;

                        if (l == 0) {
                                r = buf_append_str(b, "\\ufffd");
                                i++;
                                continue;
                        }
                        cp = utf8_decode(u + i, l);
                        if (needs_escape(cp))
                                r = buf_printf(b, "\\u%04" PRIx32, cp);
                        else
                                r = buf_append(b, u + i, l);
                        i += l;
                        continue;
                }

                switch (c) {
                case '\\':
                        r = buf_append_str(b, "\\\\");
                        break;
                case '"':
                        if (q == QUOTE_STRING || i + 1 == n || u[i + 1] == '"')
                                r = buf_append_str(b, "\\\"");
                        else
                                r = buf_append_char(b, '"');
                        break;
                case '\n':
                        if (q == QUOTE_STRING) {
                                r = buf_append_str(b, "\\n");
                                break;
                        }
                        r = buf_append_char(b, '\n');
                        if (r >= 0 && indent && i + 1 < n && u[i + 1] != '\n')
                                r = buf_append_str(b, indent);
                        break;
                case '\t':
                        r = q == QUOTE_STRING ? buf_append_str(b, "\\t") : buf_append_char(b, '\t');
                        break;
                case '\r':
                        r = buf_append_str(b, "\\r");
                        break;
                default:
                        if (c < 0x20 || c == 0x7f)
                                r = buf_printf(b, "\\x%02x", c);
                        else
                                r = buf_append_char(b, (char) c);
                }
                i++;
        }
        return r;
}

static int append_py_string(struct buf *b, const char *s, size_t n)
{
        int r;

        r = buf_append_char(b, '"');
        if (r >= 0)
                r = append_escaped(b, s, n, QUOTE_STRING, NULL);
        if (r >= 0)
                r = buf_append_char(b, '"');
        return r;
}

/* Python float literal for @d: the shortest %g form that reads back exactly. */
static int append_py_float(struct buf *b, double d)
{
        char s[64];

        if (!isfinite(d))
                return -EINVAL;
        for (int prec = 15; prec <= 17; prec++) {
                (void) snprintf(s, sizeof(s), "%.*g", prec, d);
                if (strtod(s, NULL) == d)
                        break;
        }
        /* "1" would be an int in Python. */
        if (!strpbrk(s, ".e"))
                return buf_printf(b, "%s.0", s);
        return buf_append_str(b, s);
}

/*
 * Append @v as a Python literal. -EINVAL when it cannot be rendered (nested
 * too deep, a non-finite number); -E2BIG past the buffer's cap.
 */
static int append_py_literal(struct buf *b, json_t *v, unsigned depth)
{
        const char *key;
        json_t *item;
        size_t i;
        int r = 0;

        if (depth > STUBS_MAX_DEPTH)
                return -EINVAL;

        switch (json_typeof(v)) {
        case JSON_STRING:
                return append_py_string(b, json_string_value(v), json_string_length(v));
        case JSON_INTEGER:
                return buf_printf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        case JSON_REAL:
                return append_py_float(b, json_real_value(v));
        case JSON_TRUE:
                return buf_append_str(b, "True");
        case JSON_FALSE:
                return buf_append_str(b, "False");
        case JSON_NULL:
                return buf_append_str(b, "None");
        case JSON_ARRAY:
                r = buf_append_char(b, '[');
                json_array_foreach(v, i, item)
                {
                        if (r >= 0 && i > 0)
                                r = buf_append_str(b, ", ");
                        if (r >= 0)
                                r = append_py_literal(b, item, depth + 1);
                        if (r < 0)
                                return r;
                }
                return r < 0 ? r : buf_append_char(b, ']');
        case JSON_OBJECT:
                r = buf_append_char(b, '{');
                i = 0;
                json_object_foreach(v, key, item)
                {
                        if (r >= 0 && i++ > 0)
                                r = buf_append_str(b, ", ");
                        if (r >= 0)
                                r = append_py_string(b, key, strlen(key));
                        if (r >= 0)
                                r = buf_append_str(b, ": ");
                        if (r >= 0)
                                r = append_py_literal(b, item, depth + 1);
                        if (r < 0)
                                return r;
                }
                return r < 0 ? r : buf_append_char(b, '}');
        }
        return -EINVAL;
}

/*
 * The literal for @v as a new string in *ret, or NULL in *ret when it cannot
 * be rendered (the caller then falls back to None). Returns 0 or -ENOMEM.
 */
static int render_literal(json_t *v, char **ret)
{
        _cleanup_buf_ struct buf b = BUF_INIT(STUBS_MAX_LITERAL);
        int r;

        *ret = NULL;
        r = append_py_literal(&b, v, 0);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return 0;
        *ret = buf_steal(&b, NULL);
        return *ret ? 0 : -ENOMEM;
}

/*
 * A Python identifier for @s: characters that cannot appear in one become
 * '_' (one per code point), a leading digit gets a '_' in front, a keyword or
 * a name in @reserved (or, for @module_level names, a dunder) gets '_'
 * appended; then '_' is appended until no name in @taken has it. Only the
 * first bytes of a huge name count; the uniqueness step keeps them apart.
 */
static int py_identifier(const char *s, const char *const *reserved, bool module_level,
                         char *const *taken, char **ret)
{
        _cleanup_buf_ struct buf b = BUF_INIT(SIZE_MAX / 2);
        const unsigned char *u = (const unsigned char *) s;
        size_t n = strnlen(s, 200);
        int r = 0;

        if (u[0] >= '0' && u[0] <= '9')
                r = buf_append_char(&b, '_');
        for (size_t i = 0; i < n && r >= 0;) {
                unsigned char c = u[i];
                size_t l;

                if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_') {
                        r = buf_append_char(&b, (char) c);
                        i++;
                        continue;
                }
                l = c >= 0x80 ? utf8_valid_seq_len(u + i, n - i) : 0;
                r = buf_append_char(&b, '_');
                i += l ? l : 1;
        }
        if (r >= 0 && b.len == 0)
                r = buf_append_char(&b, '_');
        if (r >= 0 && module_level && b.len > 4 && strncmp(b.data, "__", 2) == 0 &&
            strcmp(b.data + b.len - 2, "__") == 0)
                r = buf_append_char(&b, '_');
        /* Each round makes the name longer, so this ends within |sets| + 1 rounds. */
        while (r >= 0 && (names_contain(python_keywords, b.data) ||
                          names_contain(reserved, b.data) || strv_contains(taken, b.data)))
                r = buf_append_char(&b, '_');
        if (r < 0)
                return r;

        *ret = buf_steal(&b, NULL);
        return *ret ? 0 : -ENOMEM;
}

struct param {
        const char *key;         /* JSON name, borrowed from the schema */
        char *name;              /* Python name */
        const char *annotation;  /* NULL: none */
        char *def;               /* default expression; NULL: required */
        char *body_def;          /* mutable default, assigned in the body; NULL: none */
        const char *description; /* borrowed; NULL: none */
};

struct params {
        struct param *v;
        size_t n;
        char **names; /* Python names taken so far */
};

static void params_release(struct params *ps)
{
        for (size_t i = 0; i < ps->n; i++) {
                free(ps->v[i].name);
                free(ps->v[i].def);
                free(ps->v[i].body_def);
        }
        free(ps->v);
        strv_free(ps->names);
        *ps = (struct params){};
}

static const char *annotation_for(json_t *schema)
{
        static const struct {
                const char *json;
                const char *py;
        } types[] = {
                {"string", "str"},   {"integer", "int"}, {"number", "float"},
                {"boolean", "bool"}, {"array", "list"},  {"object", "dict"},
        };
        const char *type = json_string_value(json_object_get(schema, "type"));

        for (size_t i = 0; type && i < ELEMENTSOF(types); i++)
                if (strcmp(types[i].json, type) == 0)
                        return types[i].py;
        return NULL;
}

static bool is_required(json_t *required, const char *key)
{
        size_t i;
        json_t *v;

        json_array_foreach(required, i, v) if (json_is_string(v) &&
                                               strcmp(json_string_value(v), key) == 0) return true;
        return false;
}

static int param_init(struct param *p, const char *key, json_t *schema, bool required,
                      char ***names)
{
        static const char *const reserved[] = {"_call", NULL};
        json_t *dv;
        int r;

        p->key = key;
        r = py_identifier(key, reserved, false, *names, &p->name);
        if (r < 0)
                return r;
        r = strv_extend(names, p->name);
        if (r < 0)
                return r;

        /* JSON Schema allows true/false as a property schema: no type, no default. */
        if (!json_is_object(schema))
                schema = NULL;
        p->annotation = annotation_for(schema);
        p->description = json_string_value(json_object_get(schema, "description"));
        if (required)
                return 0;

        dv = json_object_get(schema, "default");
        if (json_is_array(dv) || json_is_object(dv)) {
                /* A list or dict default would be shared between calls: build it per call. */
                r = render_literal(dv, &p->body_def);
                if (r < 0)
                        return r;
        } else if (dv) {
                r = render_literal(dv, &p->def);
                if (r < 0)
                        return r;
        }
        if (!p->def) {
                p->def = strdup("None");
                if (!p->def)
                        return -ENOMEM;
        }
        return 0;
}

/* The parameters of @t in signature order: required ones first, each group in schema order. */
static int params_collect(const struct tool *t, struct params *ret)
{
        _cleanup_(params_release) struct params ps = {};
        json_t *props = json_object_get(t->parameters, "properties");
        json_t *required = json_object_get(t->parameters, "required");
        const char *key;
        json_t *schema;
        int r;

        if (!json_is_object(props))
                props = NULL;
        if (!json_is_array(required))
                required = NULL;
        if (json_object_size(props) > STUBS_MAX_PARAMS ||
            json_array_size(required) > STUBS_MAX_PARAMS)
                return -E2BIG;

        ps.v = calloc(json_object_size(props) + 1, sizeof(*ps.v));
        if (!ps.v)
                return -ENOMEM;
        for (int pass = 0; pass < 2; pass++)
                json_object_foreach(props, key, schema)
                {
                        bool req = is_required(required, key);

                        if (req != (pass == 0))
                                continue;
                        /* Counted first, so a half-built entry is freed too. */
                        r = param_init(&ps.v[ps.n++], key, schema, req, &ps.names);
                        if (r < 0)
                                return r;
                }

        *ret = ps;
        ps = (struct params){};
        return 0;
}

static int append_signature(struct buf *b, const struct params *ps)
{
        int r = 0;

        for (size_t i = 0; i < ps->n && r >= 0; i++) {
                const struct param *p = &ps->v[i];

                r = buf_printf(b, "%s%s", i ? ", " : "", p->name);
                if (r >= 0 && p->annotation)
                        r = buf_printf(b, ": %s", p->annotation);
                if (r >= 0 && p->def)
                        r = buf_printf(b, "%s%s", p->annotation ? " = " : "=", p->def);
        }
        return r;
}

int stubs_append_signature(struct buf *out, const struct tool *t)
{
        _cleanup_(params_release) struct params ps = {};
        int r;

        r = params_collect(t, &ps);
        if (r < 0)
                return r;
        return append_signature(out, &ps);
}

int stubs_function_names(const struct registry *reg, char ***ret)
{
        _cleanup_strv_free_ char **names = NULL;
        size_t n = registry_count(reg);
        int r;

        for (size_t i = 0; i < n; i++) {
                char *name = NULL;

                r = py_identifier(registry_get(reg, i)->name, module_names, true, names, &name);
                if (r < 0)
                        return r;
                r = strv_consume(&names, name);
                if (r < 0)
                        return r;
        }
        /* An empty registry is an empty strv, not NULL, so callers need no special case. */
        if (!names) {
                names = calloc(1, sizeof(char *));
                if (!names)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(names);
        return 0;
}

/* @s without leading and trailing ASCII whitespace, as (pointer, length). */
static const char *strip(const char *s, size_t *ret_len)
{
        size_t n;

        s = s ?: "";
        while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
                s++;
        n = strlen(s);
        while (n > 0 &&
               (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
                n--;
        *ret_len = n;
        return s;
}

/*
 * The docstring text of a stub, unescaped: the description, then one line per
 * parameter. (tool->returns belongs to the execute_code description.)
 */
static int build_docstring(struct buf *raw, const struct tool *t, const struct params *ps)
{
        const char *s;
        size_t n;
        int r;

        s = strip(t->description, &n);
        if (n > 0)
                r = buf_append(raw, s, n);
        else
                r = buf_printf(raw, "Call the tool %s.", t->name);
        if (r >= 0 && ps->n > 0)
                r = buf_append_str(raw, "\n\nArgs:");
        for (size_t i = 0; i < ps->n && r >= 0; i++) {
                r = buf_printf(raw, "\n    %s", ps->v[i].name);
                if (r < 0 || !ps->v[i].description)
                        continue;
                s = strip(ps->v[i].description, &n);
                if (n > 0)
                        r = buf_append_str(raw, ": ");
                /* Continuation lines of a long description stay under their parameter. */
                for (size_t j = 0; j < n && r >= 0; j++)
                        r = s[j] == '\n' ? buf_append_str(raw, "\n        ")
                                         : buf_append_char(raw, s[j]);
        }
        return r;
}

static int append_stub(struct buf *b, const struct tool *t, const char *fname)
{
        _cleanup_(params_release) struct params ps = {};
        _cleanup_buf_ struct buf raw = BUF_INIT(STUBS_MAX_MODULE);
        int r;

        r = params_collect(t, &ps);
        if (r >= 0)
                r = buf_printf(b, "\n\ndef %s(", fname);
        if (r >= 0)
                r = append_signature(b, &ps);
        if (r >= 0)
                r = buf_append_str(b, "):\n    \"\"\"");
        if (r >= 0)
                r = build_docstring(&raw, t, &ps);
        if (r >= 0)
                r = append_escaped(b, buf_str(&raw), raw.len, QUOTE_DOCSTRING, "    ");
        if (r >= 0)
                r = buf_append_str(b, memchr(buf_str(&raw), '\n', raw.len) ? "\n    \"\"\"\n"
                                                                           : "\"\"\"\n");
        for (size_t i = 0; i < ps.n && r >= 0; i++)
                if (ps.v[i].body_def)
                        r = buf_printf(b, "    if %s is None:\n        %s = %s\n", ps.v[i].name,
                                       ps.v[i].name, ps.v[i].body_def);
        if (r >= 0)
                r = buf_append_str(b, "    return _call(");
        if (r >= 0)
                r = append_py_string(b, t->name, strlen(t->name));
        if (r >= 0)
                r = buf_append_str(b, ", {");
        for (size_t i = 0; i < ps.n && r >= 0; i++) {
                /* Sent under the schema's name, whatever the Python name became. */
                if (i > 0)
                        r = buf_append_str(b, ", ");
                if (r >= 0)
                        r = append_py_string(b, ps.v[i].key, strlen(ps.v[i].key));
                if (r >= 0)
                        r = buf_printf(b, ": %s", ps.v[i].name);
        }
        if (r >= 0)
                r = buf_append_str(b, "})\n");
        return r;
}

static int append_header(struct buf *b, const char *module_name, char *const *fnames)
{
        _cleanup_buf_ struct buf raw = BUF_INIT(STUBS_MAX_MODULE);
        int r;

        /* The em dash keeps the module non-ASCII on purpose: writers must use UTF-8. */
        r = buf_printf(&raw,
                       "%s: call ptc's tools from a Python script \xe2\x80\x94 generated by ptc, "
                       "do not edit.\n"
                       "\n"
                       "Each tool function sends one request to ptc over the Unix socket named\n"
                       "by $PTC_RPC_SOCKET (with the token in $PTC_RPC_TOKEN) and returns the\n"
                       "tool's result, a dict. A call that fails returns {\"error\": \"...\"}\n"
                       "and the script keeps running. Threads may call tools at the same time\n"
                       "(each thread has its own connection), and subprocesses may import this\n"
                       "module too.\n"
                       "\n"
                       "Tools:",
                       module_name);
        for (size_t i = 0; fnames[i] && r >= 0; i++)
                r = buf_printf(&raw, "%s %s", i ? "," : "", fnames[i]);
        if (r >= 0)
                r = buf_append_str(&raw, fnames[0] ? ".\n" : " none.\n");
        if (r >= 0)
                r = buf_append_str(&raw, "Helpers: json_parse(text), shell_quote(s), "
                                         "retry(fn, max_attempts=3, delay=2).\n");

        if (r >= 0)
                r = buf_append_str(b, "\"\"\"");
        if (r >= 0)
                r = append_escaped(b, buf_str(&raw), raw.len, QUOTE_DOCSTRING, NULL);
        if (r >= 0)
                r = buf_append_str(b, "\"\"\"\n");
        return r;
}

static int append_all(struct buf *b, char *const *fnames)
{
        int r;

        r = buf_append_str(b, "\n\n__all__ = [\n");
        for (size_t i = 0; fnames[i] && r >= 0; i++)
                r = buf_printf(b, "    \"%s\",\n", fnames[i]);
        for (size_t i = 0; helper_names[i] && r >= 0; i++)
                r = buf_printf(b, "    \"%s\",\n", helper_names[i]);
        if (r >= 0)
                r = buf_append_str(b, "]\n");
        return r;
}

int stubs_generate(const struct registry *reg, const char *module_name, char **ret)
{
        _cleanup_buf_ struct buf b = BUF_INIT(STUBS_MAX_MODULE);
        _cleanup_strv_free_ char **fnames = NULL;
        int r;

        if (!ret)
                return -EINVAL;
        r = stubs_function_names(reg, &fnames);
        if (r >= 0)
                r = append_header(&b, module_name ?: DEFAULT_MODULE_NAME, fnames);
        if (r >= 0)
                r = buf_append_str(&b, stubs_module_body);
        if (r >= 0)
                r = append_all(&b, fnames);
        for (size_t i = 0; i < registry_count(reg) && r >= 0; i++)
                r = append_stub(&b, registry_get(reg, i), fnames[i]);
        if (r < 0)
                return r;

        *ret = buf_steal(&b, NULL);
        return *ret ? 0 : -ENOMEM;
}
