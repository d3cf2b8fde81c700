/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the module a script imports (src/core/stubs/stubs.c) and the execute_code
 * schema (schema.c), generated from what a hostile upstream MCP server advertises. The input
 * is its tools/list answer: the "tools" array, or the result object holding it (parsed with
 * JSON_ALLOW_NUL, more than the client lets through). The tools are taken as ptc takes them:
 * each entry through mcp_upstream_tool_parse() (invalid ones skipped), a repeated name dropped,
 * at most MCP_CLIENT_TOOLS_MAX, named mcp_upstream_tool_name("up-stream", name), and offered
 * to registry_new_with() beside the builtin tools (mcp-client.c, mcp-tools.c). Invariants:
 *   - the registry is built; each of its tools has a name of [A-Za-z0-9_], 1-200 bytes, and
 *     each upstream tool is in it or named in a warning (a name taken, too many parameters);
 *   - stubs_generate() and schema_build() succeed (an input this small is far from their
 *     size caps; -ENOMEM aside), and the schema is an object named execute_code;
 *   - the module is valid UTF-8 without NUL, and no text from the server escapes its string
 *     literals: with every literal blanked out, the module up to __all__ is the one an empty
 *     server gives, and after it there is only the __all__ list and, per tool, the stub's
 *     template ("def NAME(PARAMS):", its docstring, "if P is None: P = LITERAL",
 *     "return _call(\"TOOL\", {KEY: P, ...})") with Python identifiers for names, the tool's
 *     own name in _call() and literals made of literals;
 *   - inside those literals, only the escapes the generator writes (\\ \" \n \t \r \xNN
 *     \uNNNN) and no raw control, C1, bidi or line-separator character (a raw newline or
 *     tab only in a docstring);
 *   - no crash, no leak.
 *
 * The corpus (corpus/stubs/) replays under meson through fuzz-main.c; scripts/fuzz.sh
 * builds and runs the libFuzzer program.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "basic/buf.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "basic/utf8.h"
#include "core/config/config.h"
#include "core/mcp/mcp-client.h"
#include "core/mcp/mcp-tools.h"
#include "core/registry/registry.h"
#include "core/stubs/stubs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SERVER "up-stream"
#define MODULE "hermes_tools"
/* Stands for a string literal in the blanked module: never outside one in a valid module. */
#define LIT '\x01'

static void check(bool ok, const char *what)
{
        if (!ok) {
                fprintf(stderr, "fuzz-stubs: %s\n", what);
                abort();
        }
}

static bool is_ident_char(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_';
}

static bool is_hex(char c)
{
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* The characters the generator writes as escapes (stubs.c needs_escape()). */
static bool is_hidden_cp(uint32_t cp)
{
        return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c || (cp >= 0x200b && cp <= 0x200f) ||
               (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff;
}

static uint32_t decode(const unsigned char *p, size_t l)
{
        if (l == 2)
                return (uint32_t) (p[0] & 0x1f) << 6 | (p[1] & 0x3f);
        if (l == 3)
                return (uint32_t) (p[0] & 0x0f) << 12 | (uint32_t) (p[1] & 0x3f) << 6 |
                       (p[2] & 0x3f);
        if (l == 4)
                return (uint32_t) (p[0] & 0x07) << 18 | (uint32_t) (p[1] & 0x3f) << 12 |
                       (uint32_t) (p[2] & 0x3f) << 6 | (p[3] & 0x3f);
        return p[0];
}

/*
 * The body of a literal from @s to @e (exclusive, without the quotes), written by the
 * generator: only its escapes, nothing raw that it escapes.
 */
static void check_literal(const char *s, const char *e, bool docstring)
{
        for (const char *p = s; p < e;) {
                unsigned char c = (unsigned char) *p;

                if (c == '\\') {
                        char n = p + 1 < e ? p[1] : 0;

                        if (n == '\\' || n == '"' || n == 'n' || n == 't' || n == 'r')
                                p += 2;
                        else if (n == 'x' && e - p >= 4 && is_hex(p[2]) && is_hex(p[3]))
                                p += 4;
                        else if (n == 'u' && e - p >= 6 && is_hex(p[2]) && is_hex(p[3]) &&
                                 is_hex(p[4]) && is_hex(p[5]))
                                p += 6;
                        else
                                check(false, "an escape the generator does not write");
                        continue;
                }
                if (c >= 0x80) {
                        size_t l = utf8_valid_seq_len((const unsigned char *) p, (size_t) (e - p));

                        check(l > 0, "invalid UTF-8 in a literal");
                        check(!is_hidden_cp(decode((const unsigned char *) p, l)),
                              "a raw C1, bidi or line-separator character in a literal");
                        p += l;
                        continue;
                }
                check(c >= 0x20 || ((c == '\n' || c == '\t') && docstring),
                      "a raw control character in a literal");
                check(c != 0x7f, "a raw DEL in a literal");
                p++;
        }
}

/* The bodies of the literals of the stubs, in order: where each is in the raw module. */
struct lits {
        struct {
                const char *s, *e;
        } v[4096];
        size_t n, next;
};

static void record(struct lits *lits, const char *s, const char *e, bool docstring)
{
        check_literal(s, e, docstring);
        if (lits->n < ELEMENTSOF(lits->v)) {
                lits->v[lits->n].s = s;
                lits->v[lits->n].e = e;
        }
        lits->n++;
}

/*
 * @m with each string literal replaced by LIT, into @out. Before @strict_from comments are
 * dropped; from there on a '#' outside a literal is an error, and the literals are checked
 * with check_literal() and recorded in @lits. Fails on an unterminated literal.
 */
static void blank(const char *m, size_t n, size_t strict_from, struct buf *out, struct lits *lits)
{
        size_t i = 0;

        while (i < n) {
                char c = m[i];

                if (c == '#') {
                        check(i < strict_from, "a comment in the stubs");
                        while (i < n && m[i] != '\n')
                                i++;
                        continue;
                }
                if (c != '"' && c != '\'') {
                        check(buf_append_char(out, c) >= 0, "out of memory");
                        i++;
                        continue;
                }
                if (i + 2 < n && m[i + 1] == c && m[i + 2] == c) {
                        size_t j = i + 3;

                        while (j < n && !(m[j] == c && j + 2 < n && m[j + 1] == c && m[j + 2] == c))
                                j += m[j] == '\\' ? 2 : 1;
                        check(j < n, "an unterminated triple-quoted literal");
                        if (i >= strict_from)
                                record(lits, m + i + 3, m + j, true);
                        i = j + 3;
                } else {
                        size_t j = i + 1;

                        while (j < n && m[j] != c) {
                                check(m[j] != '\n', "a newline in a one-line literal");
                                j += m[j] == '\\' ? 2 : 1;
                        }
                        check(j < n, "an unterminated literal");
                        if (i >= strict_from)
                                record(lits, m + i + 1, m + j, false);
                        i = j + 1;
                }
                check(buf_append_char(out, LIT) >= 0, "out of memory");
        }
}

/* ---- the blanked stubs, token by token ---------------------------------------------------- */

struct cur {
        const char *p, *e;
        struct lits *lits;
};

static bool eat(struct cur *c, const char *s)
{
        size_t l = strlen(s);

        if ((size_t) (c->e - c->p) < l || memcmp(c->p, s, l) != 0)
                return false;
        c->p += l;
        return true;
}

static void expect(struct cur *c, const char *s)
{
        if (!eat(c, s)) {
                fprintf(stderr, "fuzz-stubs: expected '%s' at '%.40s'\n", s, c->p);
                abort();
        }
}

/* A literal; its body decoded (the generator's escapes) into @out when non-NULL. */
static bool eat_lit(struct cur *c, struct buf *out)
{
        const char *p, *e;

        if (c->p >= c->e || *c->p != LIT)
                return false;
        c->p++;
        check(c->lits->next < c->lits->n, "more literals than found");
        if (c->lits->next++ >= ELEMENTSOF(c->lits->v) || !out)
                return true;
        p = c->lits->v[c->lits->next - 1].s;
        e = c->lits->v[c->lits->next - 1].e;
        buf_reset(out);
        while (p < e) {
                char x[5] = {};
                unsigned v;

                if (*p != '\\') {
                        check(buf_append_char(out, *p++) >= 0, "out of memory");
                        continue;
                }
                /* check_literal() let through only these. */
                switch (p[1]) {
                case 'x':
                case 'u':
                        memcpy(x, p + 2, p[1] == 'x' ? 2 : 4);
                        v = (unsigned) strtoul(x, NULL, 16);
                        p += p[1] == 'x' ? 4 : 6;
                        if (v < 0x80)
                                check(buf_append_char(out, (char) v) >= 0, "out of memory");
                        else if (v < 0x800)
                                check(buf_printf(out, "%c%c", 0xc0 | v >> 6, 0x80 | (v & 0x3f)) >=
                                              0,
                                      "out of memory");
                        else
                                check(buf_printf(out, "%c%c%c", 0xe0 | v >> 12,
                                                 0x80 | (v >> 6 & 0x3f), 0x80 | (v & 0x3f)) >= 0,
                                      "out of memory");
                        continue;
                case 'n':
                        check(buf_append_char(out, '\n') >= 0, "out of memory");
                        break;
                case 't':
                        check(buf_append_char(out, '\t') >= 0, "out of memory");
                        break;
                case 'r':
                        check(buf_append_char(out, '\r') >= 0, "out of memory");
                        break;
                default:
                        check(buf_append_char(out, p[1]) >= 0, "out of memory");
                }
                p += 2;
        }
        return true;
}

static void expect_lit(struct cur *c, struct buf *out)
{
        check(eat_lit(c, out), "expected a literal");
}

/* A Python identifier (ASCII), not a keyword; its length. */
static size_t identifier(struct cur *c)
{
        static const char *const keywords[] = {
                "False",  "None",     "True",  "and",    "as",       "assert",
                "async",  "await",    "break", "class",  "continue", "def",
                "del",    "elif",     "else",  "except", "finally",  "for",
                "from",   "global",   "if",    "import", "in",       "is",
                "lambda", "nonlocal", "not",   "or",     "pass",     "raise",
                "return", "try",      "while", "with",   "yield",    "__debug__",
        };
        const char *s = c->p;
        size_t l = 0;

        while (s + l < c->e && is_ident_char(s[l]))
                l++;
        check(l > 0 && !(s[0] >= '0' && s[0] <= '9'), "not an identifier");
        for (size_t i = 0; i < ELEMENTSOF(keywords); i++)
                check(strlen(keywords[i]) != l || memcmp(s, keywords[i], l) != 0,
                      "a keyword as a name");
        c->p += l;
        return l;
}

/* A literal as the generator renders a JSON value: a string, a number, a constant, a list, a
 * dict. */
static void literal(struct cur *c, unsigned depth)
{
        check(depth <= 64, "a literal nested deeper than the generator renders");
        if (eat_lit(c, NULL) || eat(c, "True") || eat(c, "False") || eat(c, "None"))
                return;
        if (eat(c, "[")) {
                for (bool first = true; !eat(c, "]"); first = false) {
                        if (!first)
                                expect(c, ", ");
                        literal(c, depth + 1);
                }
                return;
        }
        if (eat(c, "{")) {
                for (bool first = true; !eat(c, "}"); first = false) {
                        if (!first)
                                expect(c, ", ");
                        expect_lit(c, NULL);
                        expect(c, ": ");
                        literal(c, depth + 1);
                }
                return;
        }
        /* A number: -?digits(.digits)?(e[+-]?digits)? */
        {
                const char *s = c->p;

                (void) eat(c, "-");
                while (c->p < c->e && *c->p >= '0' && *c->p <= '9')
                        c->p++;
                if (eat(c, "."))
                        while (c->p < c->e && *c->p >= '0' && *c->p <= '9')
                                c->p++;
                if (eat(c, "e") && !eat(c, "-"))
                        (void) eat(c, "+");
                while (c->p < c->e && *c->p >= '0' && *c->p <= '9')
                        c->p++;
                check(c->p > s && c->p[-1] >= '0' && c->p[-1] <= '9', "not a literal");
        }
}

/* The names of @t's parameters in the order of the stub: the required ones first (stubs.c). */
static char **param_keys(const struct tool *t)
{
        json_t *props = json_object_get(t->parameters, "properties"), *v, *req, *x;
        char **l = NULL;
        const char *key;
        size_t i;

        for (int pass = 0; pass < 2; pass++)
                json_object_foreach(props, key, v)
                {
                        bool required = false;

                        req = json_object_get(t->parameters, "required");
                        json_array_foreach(req, i, x) required |=
                                json_is_string(x) && strcmp(json_string_value(x), key) == 0;
                        if (required == (pass == 0))
                                check(strv_extend(&l, key) >= 0, "out of memory");
                }
        return l;
}

/* The stub of tool @t, named @fname, at @c (after the blank lines before it). */
static void stub(struct cur *c, const char *fname, const struct tool *t)
{
        static const char *const annotations[] = {": str",  ": int",  ": float",
                                                  ": bool", ": list", ": dict"};
        _cleanup_strv_free_ char **params = NULL, **keys = param_keys(t);
        _cleanup_buf_ struct buf text = BUF_INIT(SIZE_MAX / 2);

        expect(c, "def ");
        expect(c, fname);
        expect(c, "(");
        for (bool first = true; !eat(c, "):\n"); first = false) {
                const char *s;
                bool annotated = false;
                size_t l;

                if (!first)
                        expect(c, ", ");
                s = c->p;
                l = identifier(c);
                for (char **p = params; p && *p; p++)
                        check(strlen(*p) != l || memcmp(*p, s, l) != 0, "a parameter twice");
                check(strv_consume(&params, strndup(s, l)) >= 0, "out of memory");
                for (size_t i = 0; i < ELEMENTSOF(annotations) && !annotated; i++)
                        annotated = eat(c, annotations[i]);
                if (eat(c, annotated ? " = " : "="))
                        literal(c, 0);
        }
        check(strv_length(params) == strv_length(keys), "not one parameter per property");
        expect(c, "    ");
        expect_lit(c, NULL);
        expect(c, "\n");
        while (eat(c, "    if ")) {
                const char *s = c->p;
                size_t l = identifier(c);
                _cleanup_free_ char *p = strndup(s, l);

                check(p && strv_contains(params, p), "a default for no parameter");
                expect(c, " is None:\n        ");
                expect(c, p);
                expect(c, " = ");
                literal(c, 0);
                expect(c, "\n");
        }
        expect(c, "    return _call(");
        expect_lit(c, &text);
        check(strcmp(buf_str(&text), t->name) == 0, "_call() names another tool");
        expect(c, ", {");
        for (size_t i = 0; !eat(c, "})\n"); i++) {
                const char *s;
                size_t l;

                if (i > 0)
                        expect(c, ", ");
                expect_lit(c, &text);
                /* Sent under the schema's own name, whatever the Python name became. */
                check(keys && i < strv_length(keys) && text.len == strlen(keys[i]) &&
                              memcmp(text.data, keys[i], text.len) == 0,
                      "an argument sent under another name");
                expect(c, ": ");
                s = c->p;
                l = identifier(c);
                check(l == strlen(params[i]) && memcmp(s, params[i], l) == 0,
                      "an argument passed from another parameter");
        }
}

static void check_module(const char *m, const struct registry *reg, char *const *fnames,
                         const char *ref_prefix, size_t ref_len)
{
        static const char *const helpers[] = {"json_parse", "shell_quote", "retry"};
        _cleanup_buf_ struct buf b = BUF_INIT(SIZE_MAX / 2), text = BUF_INIT(SIZE_MAX / 2);
        _cleanup_free_ struct lits *lits = calloc(1, sizeof(*lits));
        const char *all = strstr(m, "\n\n__all__ = [\n");
        struct cur c;

        check(lits != NULL, "out of memory");
        check(all != NULL, "no __all__");
        blank(m, strlen(m), (size_t) (all - m), &b, lits);
        check(b.len >= ref_len + 14 && memcmp(b.data, ref_prefix, ref_len) == 0 &&
                      memcmp(b.data + ref_len, "\n\n__all__ = [\n", 14) == 0,
              "the module up to __all__ differs from the fixed one");
        c = (struct cur){b.data + ref_len + 14, b.data + b.len, lits};
        for (size_t i = 0; fnames[i]; i++) {
                expect(&c, "    ");
                expect_lit(&c, &text);
                check(strcmp(buf_str(&text), fnames[i]) == 0, "__all__ names another stub");
                expect(&c, ",\n");
        }
        for (size_t i = 0; i < ELEMENTSOF(helpers); i++) {
                expect(&c, "    ");
                expect_lit(&c, &text);
                check(strcmp(buf_str(&text), helpers[i]) == 0, "__all__ names another helper");
                expect(&c, ",\n");
        }
        expect(&c, "]\n");
        for (size_t i = 0; i < registry_count(reg); i++) {
                expect(&c, "\n\n");
                stub(&c, fnames[i], registry_get(reg, i));
        }
        check(c.p == c.e, "text after the last stub");
        check(lits->next == lits->n, "literals left over");
}

/* The blanked module of the builtin tools alone, up to __all__: what no server changes. */
static void reference(const struct ptc_config *cfg, const char **ret, size_t *ret_len)
{
        static char *ref;
        static size_t ref_len;

        if (!ref) {
                _cleanup_registry_ struct registry *reg = NULL;
                _cleanup_buf_ struct buf b = BUF_INIT(SIZE_MAX / 2);
                _cleanup_free_ struct lits *lits = calloc(1, sizeof(*lits));
                _cleanup_free_ char *m = NULL;
                const char *all;

                check(lits && registry_new_with(cfg, NULL, NULL, 0, &reg, NULL, NULL) >= 0 &&
                              stubs_generate(reg, MODULE, &m) >= 0,
                      "the builtin module");
                all = strstr(m, "\n\n__all__ = [\n");
                check(all != NULL, "no __all__ in the builtin module");
                blank(m, (size_t) (all - m), SIZE_MAX, &b, lits);
                ref_len = b.len;
                ref = buf_steal(&b, NULL);
                check(ref != NULL, "out of memory");
        }
        *ret = ref;
        *ret_len = ref_len;
}

struct upstream {
        struct mcp_upstream_tool *tools;
        struct registry_extra_tool *extra;
        char **names, **returns;
        size_t n;
};

static void upstream_release(struct upstream *u)
{
        for (size_t i = 0; i < u->n; i++) {
                mcp_upstream_tool_release(&u->tools[i]);
                free(u->names[i]);
                free(u->returns[i]);
        }
        free(u->tools);
        free(u->extra);
        free(u->names);
        free(u->returns);
}

static int never_run(const struct tool *t, const struct tool_ctx *ctx, json_t *args, json_t **ret)
{
        abort();
}

/* The tools of @list as mcp-client.c takes them and mcp-tools.c offers them. 0 or -ENOMEM. */
static int take_tools(json_t *list, struct upstream *u)
{
        size_t n = MIN(json_array_size(list), (size_t) MCP_CLIENT_TOOLS_MAX);

        u->tools = calloc(n + 1, sizeof(*u->tools));
        u->extra = calloc(n + 1, sizeof(*u->extra));
        u->names = calloc(n + 1, sizeof(*u->names));
        u->returns = calloc(n + 1, sizeof(*u->returns));
        if (!u->tools || !u->extra || !u->names || !u->returns)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                struct mcp_upstream_tool t;
                bool dup = false;
                int r;

                r = mcp_upstream_tool_parse(json_array_get(list, i), &t);
                if (r < 0)
                        return r;
                if (r == 0)
                        continue;
                check(t.name && t.description && json_is_object(t.input_schema) &&
                              strcmp(json_string_value(json_object_get(t.input_schema, "type")),
                                     "object") == 0,
                      "mcp_upstream_tool_parse() took an invalid tool");
                for (size_t j = 0; j < u->n && !dup; j++)
                        dup = strcmp(u->tools[j].name, t.name) == 0;
                if (dup) {
                        mcp_upstream_tool_release(&t);
                        continue;
                }
                u->tools[u->n] = t;
                u->names[u->n] = mcp_upstream_tool_name(SERVER, t.name);
                if (asprintf(&u->returns[u->n],
                             "Returns the result of tool '%s' of MCP server '%s'", t.name,
                             SERVER) < 0)
                        u->returns[u->n] = NULL;
                u->n++;
                if (!u->names[u->n - 1] || !u->returns[u->n - 1])
                        return -ENOMEM;
                u->extra[u->n - 1] = (struct registry_extra_tool){
                        .name = u->names[u->n - 1],
                        .description = t.description,
                        .parameters = t.input_schema,
                        .returns = u->returns[u->n - 1],
                        .run = never_run,
                };
        }
        return 0;
}

static void check_registry(const struct registry *reg, const struct upstream *u,
                           char *const *warnings)
{
        for (size_t i = 0; i < registry_count(reg); i++) {
                const char *name = registry_get(reg, i)->name;
                size_t l = strlen(name);

                check(l > 0 && l <= 200, "a tool name of the wrong length");
                for (size_t j = 0; j < l; j++)
                        check(is_ident_char(name[j]), "a tool name outside [A-Za-z0-9_]");
        }
        for (size_t i = 0; i < u->n; i++) {
                bool warned = false;

                if (registry_find(reg, u->names[i]))
                        continue;
                for (char *const *w = warnings; w && *w && !warned; w++)
                        warned = strstr(*w, u->names[i]) != NULL;
                check(warned, "an upstream tool left out without a warning");
        }
}

/*
 * A stub's name must not shadow what the module itself uses (stubs.c's module_names, in
 * part) nor be a dunder name, or the module breaks for every tool.
 */
static void check_fname(const char *f)
{
        static const char *const taken[] = {
                "json",       "os",          "_socket", "_thread", "time",       "itertools",
                "_local",     "_ids",        "_dumps",  "_names",  "_forks",     "_TO_WIRE",
                "_FROM_WIRE", "_unescape",   "_REQ",    "_CLOSED", "_connect",   "_call",
                "json_parse", "shell_quote", "retry",   "getattr", "isinstance", "str",
        };
        struct cur c = {f, f + strlen(f), NULL};
        size_t l = strlen(f);

        (void) identifier(&c);
        check(c.p == c.e, "a stub name that is no identifier");
        for (size_t i = 0; i < ELEMENTSOF(taken); i++)
                check(strcmp(f, taken[i]) != 0, "a stub shadows a name of the module");
        check(!(l > 4 && strncmp(f, "__", 2) == 0 && strcmp(f + l - 2, "__") == 0),
              "a dunder stub name");
}

/* Registry, module and schema for the upstream tools @u. */
static void generate(const struct ptc_config *cfg, const struct upstream *u)
{
        _cleanup_registry_ struct registry *reg = NULL;
        _cleanup_strv_free_ char **warnings = NULL, **fnames = NULL;
        _cleanup_free_ char *module = NULL;
        json_auto_t *schema = NULL;
        const char *ref;
        size_t ref_len;
        int r;

        reference(cfg, &ref, &ref_len);
        r = registry_new_with(cfg, NULL, u->extra, u->n, &reg, &warnings, NULL);
        if (r == -ENOMEM)
                return;
        check(r == 0, "registry_new_with() failed");
        check_registry(reg, u, warnings);

        r = stubs_function_names(reg, &fnames);
        if (r == -ENOMEM)
                return;
        check(r == 0 && strv_length(fnames) == registry_count(reg), "stubs_function_names()");
        for (size_t i = 0; fnames[i]; i++) {
                check_fname(fnames[i]);
                for (size_t j = 0; j < i; j++)
                        check(strcmp(fnames[i], fnames[j]) != 0, "two stubs of one name");
        }
        r = stubs_generate(reg, MODULE, &module);
        if (r == -ENOMEM)
                return;
        check(r == 0, "stubs_generate() failed");
        check(utf8_is_valid(module, strlen(module)), "the module is not UTF-8");
        check_module(module, reg, fnames, ref, ref_len);

        r = schema_build(reg, PTC_MODE_PROJECT, cfg, &schema);
        if (r == -ENOMEM)
                return;
        check(r == 0 && json_is_object(schema) &&
                      json_is_string(json_object_get(schema, "description")) &&
                      strcmp(json_string_value(json_object_get(schema, "name")), "execute_code") ==
                              0,
              "schema_build()");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        json_auto_t *v = json_loadb((const char *) data, size, JSON_ALLOW_NUL, NULL);
        json_t *list = json_is_array(v) ? v : json_object_get(v, "tools");
        struct upstream u = {};
        struct ptc_config cfg;

        if (!json_is_array(list) || config_init(&cfg) < 0)
                return 0;
        if (take_tools(list, &u) >= 0)
                generate(&cfg, &u);
        upstream_release(&u);
        config_release(&cfg);
        return 0;
}
