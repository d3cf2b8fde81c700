/* SPDX-License-Identifier: MIT */
#include "core/config/config.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "basic/buf.h"
#include "basic/parse-util.h"
#include "basic/path-util.h"
#include "basic/strv.h"
#include "basic/utf8.h"

/*
 * Limits. The file is read whole, so its size bounds everything else; the
 * other caps keep hostile files (deep nesting, millions of tiny nodes,
 * quadratic duplicate checks) cheap.
 */
#define CONFIG_MAX_FILE_SIZE (1024 * 1024)
#define CONFIG_MAX_DEPTH 64
#define CONFIG_MAX_NODES 100000
#define CONFIG_MAX_LIST 1024 /* tools, env_passthrough, mcp args */
#define CONFIG_MAX_MCP_SERVERS 256
#define CONFIG_MAX_MCP_ENV 256
#define CONFIG_MAX_STRING 4096 /* python, command, cwd, urls */
#define CONFIG_MAX_NAME 64     /* module, tool and server names */
#define CONFIG_MAX_ENV_NAME 256
#define CONFIG_MAX_SECONDS 86400

/* How much of an offending value a message shows, in code points. */
#define VALUE_SHOW_CHARS 60
/* Enough for VALUE_SHOW_CHARS code points escaped at 8 bytes each, "..." and NUL. */
#define ESCAPED_MAX (VALUE_SHOW_CHARS * 8 + 8)

/* ---- parse helpers shared with the CLI ---------------------------------------------------- */

static const char *const mode_words[] = {
        [PTC_MODE_PROJECT] = "project",
        [PTC_MODE_STRICT] = "strict",
};

static const char *const isolation_words[] = {
        [PTC_ISOLATION_NONE] = "none",
        [PTC_ISOLATION_AUTO] = "auto",
        [PTC_ISOLATION_STRICT] = "strict",
};

static const char *const search_provider_words[] = {
        "searxng", "brave", "tavily", "firecrawl", "exa",
};

static const char *const extract_provider_words[] = {
        "builtin",
        "firecrawl",
        "tavily",
        "exa",
};

static const char *const backend_words[] = {
        "local",
};

static bool is_ascii_space(char ch)
{
        return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v';
}

static void trim(const char **s, size_t *n)
{
        while (*n > 0 && is_ascii_space(**s)) {
                (*s)++;
                (*n)--;
        }
        while (*n > 0 && is_ascii_space((*s)[*n - 1]))
                (*n)--;
}

/*
 * Index of @s (surrounding whitespace trimmed, case ignored) in @words, or
 * -EINVAL. Users write "Strict" or "strict " in YAML and on the command line
 * alike; the seed lower-cased and trimmed too.
 */
static int lookup_word(const char *s, const char *const *words, size_t n_words)
{
        size_t n;

        if (!s)
                return -EINVAL;
        n = strlen(s);
        trim(&s, &n);
        for (size_t i = 0; i < n_words; i++)
                if (words[i] && strlen(words[i]) == n && strncasecmp(s, words[i], n) == 0)
                        return (int) i;
        return -EINVAL;
}

int config_parse_mode(const char *s, enum ptc_mode *ret)
{
        int i = lookup_word(s, mode_words, ELEMENTSOF(mode_words));

        if (i < 0)
                return i;
        if (ret)
                *ret = (enum ptc_mode) i;
        return 0;
}

int config_parse_isolation(const char *s, enum ptc_isolation *ret)
{
        int i = lookup_word(s, isolation_words, ELEMENTSOF(isolation_words));

        if (i < 0)
                return i;
        if (ret)
                *ret = (enum ptc_isolation) i;
        return 0;
}

const char *config_mode_to_string(enum ptc_mode m)
{
        if ((size_t) m >= ELEMENTSOF(mode_words))
                return NULL;
        return mode_words[m];
}

const char *config_isolation_to_string(enum ptc_isolation i)
{
        if ((size_t) i >= ELEMENTSOF(isolation_words))
                return NULL;
        return isolation_words[i];
}

static const char *const python_keywords[] = {
        "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
        "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
        "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
        "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield",
};

static bool is_ascii_alpha(char ch)
{
        return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

static bool is_ascii_digit(char ch)
{
        return ch >= '0' && ch <= '9';
}

/* [A-Za-z_][A-Za-z0-9_]*: Python identifiers and environment variable names alike. */
static bool is_c_identifier(const char *s, size_t n)
{
        if (n == 0 || !(is_ascii_alpha(s[0]) || s[0] == '_'))
                return false;
        for (size_t i = 1; i < n; i++)
                if (!(is_ascii_alpha(s[i]) || is_ascii_digit(s[i]) || s[i] == '_'))
                        return false;
        return true;
}

bool config_is_python_identifier(const char *s)
{
        /* ASCII only: the module name ends up in file names and import lines we generate. */
        if (!s || !is_c_identifier(s, strlen(s)))
                return false;
        for (size_t i = 0; i < ELEMENTSOF(python_keywords); i++)
                if (strcmp(s, python_keywords[i]) == 0)
                        return false;
        return true;
}

/* ---- defaults and lifetime ---------------------------------------------------------------- */

static void mcp_server_config_done(struct mcp_server_config *s)
{
        free(s->name);
        free(s->command);
        strv_free(s->args);
        strv_free(s->env);
        free(s->cwd);
        *s = (struct mcp_server_config){};
}

static void mcp_servers_free(struct mcp_server_config *s, size_t n)
{
        if (!s)
                return;
        for (size_t i = 0; i < n; i++)
                mcp_server_config_done(&s[i]);
        free(s);
}

static char **strv_new_empty(void)
{
        return calloc(1, sizeof(char *));
}

void config_release(struct ptc_config *c)
{
        if (!c)
                return;
        free(c->module_name);
        free(c->python);
        strv_free(c->tools);
        strv_free(c->env_passthrough);
        free(c->search_provider);
        free(c->searxng_url);
        free(c->extract_provider);
        free(c->brave_url);
        free(c->tavily_url);
        free(c->firecrawl_url);
        free(c->exa_url);
        mcp_servers_free(c->mcp_servers, c->n_mcp_servers);
        free(c->source_path);
        strv_free(c->warnings);
        *c = (struct ptc_config){};
}

int config_init(struct ptc_config *c)
{
        *c = (struct ptc_config){
                .timeout = 300,
                .max_tool_calls = 50,
                .mode = PTC_MODE_PROJECT,
                .max_stdout_bytes = 50000,
                .max_stderr_bytes = 10000,
                .terminal_timeout = 180,
                .terminal_max_timeout = 600,
                .isolation = PTC_ISOLATION_AUTO,
                .memory_mb = 1024,
                .pids = 256,
                .network = false,
                .allow_private_urls = false,
                .web_timeout = 30,
        };
        c->module_name = strdup("hermes_tools");
        c->python = strdup("python3");
        c->env_passthrough = strv_new_empty();
        if (!c->module_name || !c->python || !c->env_passthrough) {
                config_release(c);
                return -ENOMEM;
        }
        return 0;
}

/* ---- default path ------------------------------------------------------------------------- */

static int get_home_dir(char **ret)
{
        _cleanup_free_ char *buf = NULL;
        struct passwd pw, *result = NULL;
        const size_t bufsz = 16384;
        const char *e;
        int r;

        e = getenv("HOME");
        if (e && e[0] == '/') {
                *ret = strdup(e);
                return *ret ? 0 : -ENOMEM;
        }

        buf = malloc(bufsz);
        if (!buf)
                return -ENOMEM;
        r = getpwuid_r(getuid(), &pw, buf, bufsz, &result);
        if (r != 0)
                return -r;
        if (!result || !result->pw_dir || result->pw_dir[0] != '/')
                return -ENOENT;
        *ret = strdup(result->pw_dir);
        return *ret ? 0 : -ENOMEM;
}

int config_default_path(char **ret)
{
        _cleanup_free_ char *home = NULL;
        const char *e;
        char *p;
        int r;

        e = getenv("PTC_CONFIG");
        if (e && *e) {
                p = strdup(e);
                goto done;
        }

        /* The XDG base directory spec says relative values are invalid and must be ignored. */
        e = getenv("XDG_CONFIG_HOME");
        if (e && e[0] == '/') {
                p = path_join(e, "ptc/config.yaml");
                goto done;
        }

        r = get_home_dir(&home);
        if (r < 0)
                return r;
        p = path_join(home, ".config/ptc/config.yaml");
done:
        if (!p)
                return -ENOMEM;
        *ret = p;
        return 0;
}

/* ---- a small YAML tree built from libyaml events ------------------------------------------ */

/*
 * We use the event API rather than yaml_parser_load() because the loader
 * resolves aliases silently: we want to see them, keep them unexpanded (so a
 * "billion laughs" file costs nothing) and refuse them only where we would
 * have to interpret one. Unknown sections may use anchors and aliases freely.
 */
enum node_type {
        NODE_SCALAR,
        NODE_SEQUENCE,
        NODE_MAPPING,
        NODE_ALIAS,
};

struct node {
        enum node_type type;
        size_t line;     /* 1-based */
        bool maybe_null; /* plain and untagged: may spell null */
        char *text;      /* scalar value or alias name, NUL-terminated (may hold NULs) */
        size_t len;
        struct node **items; /* sequence items, or mapping keys and values alternating */
        size_t n_items, n_alloc;
};

static void node_free(struct node *n)
{
        if (!n)
                return;
        /* Recursion depth is bounded by CONFIG_MAX_DEPTH. */
        for (size_t i = 0; i < n->n_items; i++)
                node_free(n->items[i]);
        free(n->items);
        free(n->text);
        free(n);
}

static void node_freep(struct node **n)
{
        node_free(*n);
        *n = NULL;
}

static const char *node_kind(const struct node *n)
{
        switch (n->type) {
        case NODE_SCALAR:
                return "a scalar";
        case NODE_SEQUENCE:
                return "a sequence";
        case NODE_MAPPING:
                return "a mapping";
        case NODE_ALIAS:
                return "an alias";
        }
        return "a node";
}

static bool node_is_null(const struct node *n)
{
        if (n->type != NODE_SCALAR || !n->maybe_null)
                return false;
        return n->len == 0 || strcmp(n->text, "~") == 0 || strcmp(n->text, "null") == 0 ||
               strcmp(n->text, "Null") == 0 || strcmp(n->text, "NULL") == 0;
}

static bool node_text_is(const struct node *n, const char *s)
{
        return n->type == NODE_SCALAR && n->len == strlen(s) && memcmp(n->text, s, n->len) == 0;
}

/* ---- messages ----------------------------------------------------------------------------- */

struct ctx {
        const char *path;
        struct diag *err;
        struct ptc_config *c;
        size_t terminal_timeout_line;
        size_t terminal_max_timeout_line;
};

/*
 * Render user text for a message: at most VALUE_SHOW_CHARS code points, then
 * "..."; control characters (C0, DEL, C1) and invalid bytes as escapes, so a
 * value cannot forge lines or terminal sequences in our output.
 */
static const char *escape_text(const char *s, size_t n, char *out, size_t outsz)
{
        size_t o = 0, chars = 0, i = 0;

        while (i < n && o + 9 < outsz) {
                unsigned char ch = (unsigned char) s[i];
                size_t l = utf8_valid_seq_len((const unsigned char *) s + i, n - i);
                bool esc = l == 0 || ch < 0x20 || ch == 0x7f ||
                           (l == 2 && ch == 0xc2 && (unsigned char) s[i + 1] < 0xa0);

                if (chars >= VALUE_SHOW_CHARS) {
                        memcpy(out + o, "...", 3);
                        o += 3;
                        break;
                }
                if (l == 0)
                        l = 1;
                if (!esc) {
                        memcpy(out + o, s + i, l);
                        o += l;
                } else if (l == 1 && ch == '\n') {
                        memcpy(out + o, "\\n", 2);
                        o += 2;
                } else if (l == 1 && ch == '\t') {
                        memcpy(out + o, "\\t", 2);
                        o += 2;
                } else if (l == 1 && ch == '\r') {
                        memcpy(out + o, "\\r", 2);
                        o += 2;
                } else {
                        for (size_t j = 0; j < l; j++)
                                o += (size_t) snprintf(out + o, outsz - o, "\\x%02x",
                                                       (unsigned char) s[i + j]);
                }
                i += l;
                chars++;
        }
        out[o] = 0;
        return out;
}

static int fail(struct ctx *x, size_t line, const char *key, const char *fmt, ...) _printf_(4, 5);
static int fail(struct ctx *x, size_t line, const char *key, const char *fmt, ...)
{
        char tail[sizeof(((struct diag *) NULL)->message)];
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(tail, sizeof(tail), fmt, ap);
        va_end(ap);
        if (key)
                return diag_set(x->err, -EINVAL, "%s:%zu: %s: %s", x->path, line, key, tail);
        return diag_set(x->err, -EINVAL, "%s:%zu: %s", x->path, line, tail);
}

/* "invalid <what> '<text>' (allowed: <allowed>)" */
static int fail_text(struct ctx *x, size_t line, const char *key, const char *what,
                     const char *text, size_t len, const char *allowed)
{
        char esc[ESCAPED_MAX];

        return fail(x, line, key, "invalid %s '%s' (allowed: %s)", what,
                    escape_text(text, len, esc, sizeof(esc)), allowed);
}

static int fail_alias(struct ctx *x, const struct node *n, const char *key)
{
        char esc[ESCAPED_MAX];

        return fail(x, n->line, key, "YAML aliases are not supported (*%s)",
                    escape_text(n->text, n->len, esc, sizeof(esc)));
}

/* The value @n is not acceptable for @key; say what it is and what would be. */
static int fail_value(struct ctx *x, const struct node *n, const char *key, const char *allowed)
{
        if (n->type == NODE_ALIAS)
                return fail_alias(x, n, key);
        if (node_is_null(n))
                return fail(x, n->line, key, "missing value (allowed: %s)", allowed);
        if (n->type == NODE_SCALAR)
                return fail_text(x, n->line, key, "value", n->text, n->len, allowed);
        return fail(x, n->line, key, "expected %s, got %s", allowed, node_kind(n));
}

/* ---- building the tree -------------------------------------------------------------------- */

struct builder {
        struct ctx *x;
        struct node *root;
        struct node *stack[CONFIG_MAX_DEPTH];
        size_t depth;
        size_t n_nodes;
        unsigned n_documents;
};

static int builder_add(struct builder *b, enum node_type type, size_t line, const char *text,
                       size_t len, bool maybe_null, struct node **ret)
{
        struct node *parent = b->depth > 0 ? b->stack[b->depth - 1] : NULL;
        struct node *n;

        if (++b->n_nodes > CONFIG_MAX_NODES)
                return fail(b->x, line, NULL, "too many YAML nodes (more than %d)",
                            CONFIG_MAX_NODES);
        if (!parent && b->root)
                return fail(b->x, line, NULL, "multiple YAML documents are not supported");

        n = calloc(1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        n->type = type;
        n->line = line;
        n->maybe_null = maybe_null;
        if (text) {
                n->text = malloc(len + 1);
                if (!n->text) {
                        free(n);
                        return -ENOMEM;
                }
                memcpy(n->text, text, len);
                n->text[len] = 0;
                n->len = len;
        }

        /* Attach at once, so that freeing the root frees everything on any error path. */
        if (!parent)
                b->root = n;
        else {
                if (parent->n_items == parent->n_alloc) {
                        size_t na = parent->n_alloc ? parent->n_alloc * 2 : 4;
                        struct node **items = reallocarray(parent->items, na, sizeof(*items));

                        if (!items) {
                                node_free(n);
                                return -ENOMEM;
                        }
                        parent->items = items;
                        parent->n_alloc = na;
                }
                parent->items[parent->n_items++] = n;
        }
        if (ret)
                *ret = n;
        return 0;
}

static int builder_event(struct builder *b, const yaml_event_t *ev)
{
        size_t line = ev->start_mark.line + 1;
        struct node *n;
        int r;

        switch (ev->type) {
        case YAML_DOCUMENT_START_EVENT:
                if (++b->n_documents > 1)
                        return fail(b->x, line, NULL, "multiple YAML documents are not supported");
                return 0;

        case YAML_SCALAR_EVENT:
                return builder_add(b, NODE_SCALAR, line, (const char *) ev->data.scalar.value,
                                   ev->data.scalar.length,
                                   ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                                           ev->data.scalar.plain_implicit,
                                   NULL);

        case YAML_ALIAS_EVENT: {
                const char *a = (const char *) ev->data.alias.anchor;

                return builder_add(b, NODE_ALIAS, line, a ? a : "", a ? strlen(a) : 0, false, NULL);
        }

        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
                if (b->depth >= CONFIG_MAX_DEPTH)
                        return fail(b->x, line, NULL, "YAML nesting too deep (more than %d levels)",
                                    CONFIG_MAX_DEPTH);
                r = builder_add(
                        b, ev->type == YAML_SEQUENCE_START_EVENT ? NODE_SEQUENCE : NODE_MAPPING,
                        line, NULL, 0, false, &n);
                if (r < 0)
                        return r;
                b->stack[b->depth++] = n;
                return 0;

        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
                if (b->depth > 0)
                        b->depth--;
                return 0;

        default:
                return 0;
        }
}

static int yaml_fail(struct ctx *x, const yaml_parser_t *p, const char *data, size_t len)
{
        size_t line = 1;

        if (p->error == YAML_MEMORY_ERROR)
                return diag_set(x->err, -ENOMEM, "%s: out of memory while parsing YAML", x->path);

        if (p->error == YAML_READER_ERROR) {
                /* Reader errors (bad encoding, control characters) carry an offset, no mark. */
                size_t end = MIN(p->problem_offset, len);

                for (size_t i = 0; i < end; i++)
                        if (data[i] == '\n')
                                line++;
        } else
                line = p->problem_mark.line + 1;

        return fail(x, line, NULL, "malformed YAML: %s", p->problem ? p->problem : "parse error");
}

static int parse_yaml(struct ctx *x, const char *data, size_t len, struct node **ret)
{
        struct builder b = {.x = x};
        yaml_parser_t p;
        int r = 0;

        if (!yaml_parser_initialize(&p))
                return -ENOMEM;
        yaml_parser_set_input_string(&p, (const unsigned char *) data, len);

        /* Terminates: every event consumes input, and the node cap bounds the rest. */
        for (;;) {
                yaml_event_t ev;
                bool done;

                if (!yaml_parser_parse(&p, &ev)) {
                        r = yaml_fail(x, &p, data, len);
                        break;
                }
                r = builder_event(&b, &ev);
                done = ev.type == YAML_STREAM_END_EVENT;
                yaml_event_delete(&ev);
                if (r < 0 || done)
                        break;
        }
        yaml_parser_delete(&p);

        if (r < 0) {
                node_free(b.root);
                return r;
        }
        *ret = b.root;
        return 0;
}

/* ---- typed values ------------------------------------------------------------------------- */

/*
 * The text of a scalar. Quoted scalars are accepted everywhere a number or a
 * boolean is expected (timeout: "30" is common in hand-written YAML); the key
 * decides the type, not the quoting. Quoting matters only for null: "~" and
 * "" are strings, ~ and an empty plain value are null. Embedded NUL bytes
 * (possible with "\0" escapes) are refused, they cannot survive as C strings.
 * With @allow_null, a null value returns 0 and *ret = NULL.
 */
static int scalar_text(struct ctx *x, const struct node *n, const char *key, const char *allowed,
                       bool allow_null, const char **ret)
{
        if (allow_null && node_is_null(n)) {
                *ret = NULL;
                return 0;
        }
        if (n->type != NODE_SCALAR || node_is_null(n) || memchr(n->text, 0, n->len))
                return fail_value(x, n, key, allowed);
        *ret = n->text;
        return 0;
}

/*
 * A decimal integer literal: optional sign, digits, no leading zeros. YAML 1.1
 * (the seed's PyYAML) reads 010 as octal 8, 0x10 as 16 and 1_000 as 1000; we
 * refuse those spellings instead of guessing which reading the user meant.
 */
static bool parse_integer_literal(const char *s, size_t n, int64_t *ret)
{
        char buf[32];
        size_t i = 0;

        trim(&s, &n);
        if (n == 0 || n >= sizeof(buf))
                return false;
        if (s[0] == '+' || s[0] == '-')
                i++;
        if (i == n || (s[i] == '0' && n - i > 1))
                return false;
        for (size_t j = i; j < n; j++)
                if (!is_ascii_digit(s[j]))
                        return false;
        memcpy(buf, s, n);
        buf[n] = 0;
        return safe_atoi64(buf, ret) >= 0;
}

/*
 * A decimal number in the YAML 1.2 core schema's float syntax
 * ([-+]? (\.[0-9]+ | [0-9]+(\.[0-9]*)?) ([eE][-+]?[0-9]+)?), with the same
 * leading-zero rule as integers. No hex floats, no inf/nan.
 */
static bool parse_number_literal(const char *s, size_t n, double *ret)
{
        char buf[64];
        size_t i = 0, digits = 0, frac = 0;

        trim(&s, &n);
        if (n == 0 || n >= sizeof(buf))
                return false;
        if (s[i] == '+' || s[i] == '-')
                i++;
        while (i < n && is_ascii_digit(s[i])) {
                i++;
                digits++;
        }
        if (digits > 1 && s[i - digits] == '0')
                return false;
        if (i < n && s[i] == '.') {
                i++;
                while (i < n && is_ascii_digit(s[i])) {
                        i++;
                        frac++;
                }
        }
        if (digits == 0 && frac == 0)
                return false;
        if (i < n && (s[i] == 'e' || s[i] == 'E')) {
                size_t exp = 0;

                i++;
                if (i < n && (s[i] == '+' || s[i] == '-'))
                        i++;
                while (i < n && is_ascii_digit(s[i])) {
                        i++;
                        exp++;
                }
                if (exp == 0)
                        return false;
        }
        if (i != n)
                return false;
        memcpy(buf, s, n);
        buf[n] = 0;
        return safe_atod(buf, ret) >= 0;
}

static int value_int(struct ctx *x, const struct node *n, const char *key, int64_t min, int64_t max,
                     int64_t *ret)
{
        char allowed[96];
        const char *s;
        int64_t v;
        int r;

        (void) snprintf(allowed, sizeof(allowed), "an integer from %" PRId64 " to %" PRId64, min,
                        max);
        r = scalar_text(x, n, key, allowed, false, &s);
        if (r < 0)
                return r;
        if (!parse_integer_literal(s, n->len, &v) || v < min || v > max)
                return fail_value(x, n, key, allowed);
        *ret = v;
        return 0;
}

static int value_bool(struct ctx *x, const struct node *n, const char *key, bool *ret)
{
        static const char *const words[] = {"true", "false", "yes", "no", "on", "off"};
        const char *allowed = "true, false, yes, no, on, off";
        const char *s;
        int r, i;

        r = scalar_text(x, n, key, allowed, false, &s);
        if (r < 0)
                return r;
        i = lookup_word(s, words, ELEMENTSOF(words));
        if (i < 0)
                return fail_value(x, n, key, allowed);
        *ret = i % 2 == 0;
        return 0;
}

/* One of @words; returns its index. */
static int value_word(struct ctx *x, const struct node *n, const char *key,
                      const char *const *words, size_t n_words, size_t *ret)
{
        char allowed[128] = "";
        size_t o = 0;
        const char *s;
        int r, i;

        for (size_t j = 0; j < n_words && o < sizeof(allowed); j++)
                o += (size_t) snprintf(allowed + o, sizeof(allowed) - o, "%s%s", j ? ", " : "",
                                       words[j]);
        r = scalar_text(x, n, key, allowed, false, &s);
        if (r < 0)
                return r;
        i = lookup_word(s, words, n_words);
        if (i < 0)
                return fail_value(x, n, key, allowed);
        *ret = (size_t) i;
        return 0;
}

/* A non-empty string of at most CONFIG_MAX_STRING bytes; NULL for null if @allow_null. */
static int value_string(struct ctx *x, const struct node *n, const char *key, bool allow_null,
                        char **ret)
{
        char allowed[64];
        const char *s;
        char *d = NULL;
        int r;

        (void) snprintf(allowed, sizeof(allowed), "a non-empty string of at most %d bytes",
                        CONFIG_MAX_STRING);
        r = scalar_text(x, n, key, allowed, allow_null, &s);
        if (r < 0)
                return r;
        if (s) {
                if (n->len == 0 || n->len > CONFIG_MAX_STRING)
                        return fail_value(x, n, key, allowed);
                d = strdup(s);
                if (!d)
                        return -ENOMEM;
        }
        *ret = d;
        return 0;
}

static void replace_string(char **dst, char *s)
{
        free(*dst);
        *dst = s;
}

static void replace_strv(char ***dst, char **l)
{
        strv_free(*dst);
        *dst = l;
}

/* ---- sections ----------------------------------------------------------------------------- */

struct key_spec;
typedef int (*key_parser_t)(struct ctx *x, const struct key_spec *k, const char *key,
                            const struct node *v, void *target);

struct key_spec {
        const char *name;
        key_parser_t parse;
        size_t offset; /* of the field in @target, for the generic parsers */
        int64_t min, max;
};

#define MAX_SECTION_KEYS 16

static int parse_int_key(struct ctx *x, const struct key_spec *k, const char *key,
                         const struct node *v, void *target)
{
        return value_int(x, v, key, k->min, k->max, (int64_t *) ((char *) target + k->offset));
}

static int parse_bool_key(struct ctx *x, const struct key_spec *k, const char *key,
                          const struct node *v, void *target)
{
        return value_bool(x, v, key, (bool *) ((char *) target + k->offset));
}

/* Longest name compared by closest_name(); longer texts are no typo of a short name. */
#define TYPO_NAME_MAX 64

/* Levenshtein distance between @a (@an bytes) and @b, both at most TYPO_NAME_MAX bytes. */
static size_t edit_distance(const char *a, size_t an, const char *b)
{
        size_t bn = strlen(b), row[TYPO_NAME_MAX + 1];

        assert(an <= TYPO_NAME_MAX && bn <= TYPO_NAME_MAX);
        for (size_t j = 0; j <= bn; j++)
                row[j] = j;
        for (size_t i = 1; i <= an; i++) {
                size_t diag = row[0];

                row[0] = i;
                for (size_t j = 1; j <= bn; j++) {
                        size_t up = row[j];
                        size_t sub = diag + (a[i - 1] != b[j - 1]);

                        row[j] = MIN(MIN(row[j - 1] + 1, up + 1), sub);
                        diag = up;
                }
        }
        return row[bn];
}

/*
 * The name among @names (@n of them, @stride bytes apart, each starting with a
 * const char * name) that @text is a likely typo of: the closest, when within
 * a quarter of its length (at least one edit). NULL when none is.
 */
static const char *closest_name(const char *text, size_t len, const void *names, size_t n,
                                size_t stride)
{
        const char *best = NULL;
        size_t best_d = SIZE_MAX;

        if (len > TYPO_NAME_MAX)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                const char *name = *(const char *const *) ((const char *) names + i * stride);
                size_t d;

                if (strlen(name) > TYPO_NAME_MAX)
                        continue;
                d = edit_distance(text, len, name);
                if (d < best_d && d <= MAX((size_t) 1, strlen(name) / 4)) {
                        best = name;
                        best_d = d;
                }
        }
        return best;
}

/*
 * Walk the mapping @n with the keys in @keys. Null is an empty section; an
 * unknown or repeated key is an error (a typo must not silently keep the
 * default).
 */
static int parse_mapping(struct ctx *x, const char *prefix, const struct node *n,
                         const struct key_spec *keys, size_t n_keys, void *target)
{
        bool seen[MAX_SECTION_KEYS] = {};
        char allowed[256] = "";
        size_t o = 0;
        int r;

        if (node_is_null(n))
                return 0;
        if (n->type != NODE_MAPPING)
                return fail_value(x, n, prefix, "a mapping");

        for (size_t j = 0; j < n_keys && j < MAX_SECTION_KEYS && o < sizeof(allowed); j++)
                o += (size_t) snprintf(allowed + o, sizeof(allowed) - o, "%s%s", j ? ", " : "",
                                       keys[j].name);

        for (size_t i = 0; i + 1 < n->n_items; i += 2) {
                const struct node *k = n->items[i], *v = n->items[i + 1];
                char esc[ESCAPED_MAX], key[ESCAPED_MAX + 256];
                size_t j;

                if (k->type == NODE_ALIAS)
                        return fail_alias(x, k, prefix);
                if (k->type != NODE_SCALAR)
                        return fail(x, k->line, prefix, "expected a key name, got %s (allowed: %s)",
                                    node_kind(k), allowed);

                (void) snprintf(key, sizeof(key), "%s.%s", prefix,
                                escape_text(k->text, k->len, esc, sizeof(esc)));
                for (j = 0; j < n_keys && j < MAX_SECTION_KEYS; j++)
                        if (node_text_is(k, keys[j].name))
                                break;
                if (j >= n_keys || j >= MAX_SECTION_KEYS) {
                        const char *near =
                                closest_name(k->text, k->len, keys,
                                             MIN(n_keys, (size_t) MAX_SECTION_KEYS), sizeof(*keys));

                        if (near)
                                return fail(x, k->line, key,
                                            "unknown key (did you mean '%s'? allowed: %s)", near,
                                            allowed);
                        return fail(x, k->line, key, "unknown key (allowed: %s)", allowed);
                }
                if (seen[j])
                        return fail(x, k->line, key, "duplicate key");
                seen[j] = true;

                r = keys[j].parse(x, &keys[j], key, v, target);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* code_execution */

/* A number of seconds, > 0 and <= k->max, into the double at k->offset. */
static int parse_seconds_key(struct ctx *x, const struct key_spec *k, const char *key,
                             const struct node *v, void *target)
{
        char allowed[96];
        const char *s;
        double d;
        int r;

        (void) snprintf(allowed, sizeof(allowed),
                        "a number of seconds greater than 0 and at most %lld", (long long) k->max);
        r = scalar_text(x, v, key, allowed, false, &s);
        if (r < 0)
                return r;
        if (!parse_number_literal(s, v->len, &d) || !(d > 0) || d > (double) k->max)
                return fail_value(x, v, key, allowed);
        *(double *) ((char *) target + k->offset) = d;
        return 0;
}

static int parse_mode_key(struct ctx *x, const struct key_spec *k, const char *key,
                          const struct node *v, void *target)
{
        struct ptc_config *c = target;
        size_t i;
        int r;

        r = value_word(x, v, key, mode_words, ELEMENTSOF(mode_words), &i);
        if (r < 0)
                return r;
        c->mode = (enum ptc_mode) i;
        return 0;
}

static int parse_module_name(struct ctx *x, const struct key_spec *k, const char *key,
                             const struct node *v, void *target)
{
        /* json, os and sys are imported by the generated module itself; shadowing breaks it. */
        const char *allowed = "a Python identifier of at most 64 characters, not a keyword, "
                              "not json, os or sys";
        struct ptc_config *c = target;
        const char *s;
        char *d;
        int r;

        r = scalar_text(x, v, key, allowed, false, &s);
        if (r < 0)
                return r;
        if (v->len > CONFIG_MAX_NAME || !config_is_python_identifier(s) || strcmp(s, "json") == 0 ||
            strcmp(s, "os") == 0 || strcmp(s, "sys") == 0)
                return fail_value(x, v, key, allowed);
        d = strdup(s);
        if (!d)
                return -ENOMEM;
        replace_string(&c->module_name, d);
        return 0;
}

static int parse_python(struct ctx *x, const struct key_spec *k, const char *key,
                        const struct node *v, void *target)
{
        struct ptc_config *c = target;
        char *d;
        int r;

        r = value_string(x, v, key, false, &d);
        if (r < 0)
                return r;
        replace_string(&c->python, d);
        return 0;
}

/*
 * Builtin tools are [a-z0-9_]; upstream MCP tools are <server>_<tool> with
 * whatever case the server uses (getUser), hence upper case and the longer cap.
 */
#define CONFIG_MAX_TOOL_NAME 200

static bool is_tool_name(const char *s, size_t n)
{
        if (n == 0 || n > CONFIG_MAX_TOOL_NAME)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
                      is_ascii_digit(s[i]) || s[i] == '_'))
                        return false;
        return true;
}

#define TOOL_NAME_ALLOWED "tool names matching [A-Za-z0-9_]+, at most 200 characters"

/* Append @s (@n bytes) to @l unless it is already there. */
static int strv_add_unique(char ***l, const char *s, size_t n)
{
        char *d;

        for (char **p = *l; p && *p; p++)
                if (strlen(*p) == n && memcmp(*p, s, n) == 0)
                        return 0;
        d = strndup(s, n);
        if (!d)
                return -ENOMEM;
        return strv_consume(l, d);
}

/*
 * tools: a sequence of names, or one string of comma-separated names (what
 * --tools takes on the command line). [] and "" mean no tools at all; null
 * means the default set. Duplicates are dropped. Whether a name is a real
 * tool is the registry's business.
 */
static int parse_tools(struct ctx *x, const struct key_spec *k, const char *key,
                       const struct node *v, void *target)
{
        struct ptc_config *c = target;
        _cleanup_strv_free_ char **l = NULL;
        int r;

        if (node_is_null(v)) {
                replace_strv(&c->tools, NULL);
                return 0;
        }

        l = strv_new_empty();
        if (!l)
                return -ENOMEM;

        if (v->type == NODE_SCALAR) {
                const char *s, *p;

                r = scalar_text(x, v, key, "a sequence of " TOOL_NAME_ALLOWED, false, &s);
                if (r < 0)
                        return r;
                p = s;
                for (;;) {
                        const char *f = p, *comma = strchr(p, ',');
                        size_t n = comma ? (size_t) (comma - p) : strlen(p);

                        trim(&f, &n);
                        if (n > 0) {
                                if (!is_tool_name(f, n))
                                        return fail_text(x, v->line, key, "value", f, n,
                                                         TOOL_NAME_ALLOWED);
                                if (strv_length(l) >= CONFIG_MAX_LIST)
                                        return fail(x, v->line, key,
                                                    "too many entries (at most %d)",
                                                    CONFIG_MAX_LIST);
                                r = strv_add_unique(&l, f, n);
                                if (r < 0)
                                        return r;
                        }
                        if (!comma)
                                break;
                        p = comma + 1;
                }
        } else if (v->type == NODE_SEQUENCE) {
                if (v->n_items > CONFIG_MAX_LIST)
                        return fail(x, v->line, key, "too many entries (at most %d)",
                                    CONFIG_MAX_LIST);
                for (size_t i = 0; i < v->n_items; i++) {
                        const struct node *it = v->items[i];
                        char ikey[ESCAPED_MAX + 300];
                        const char *s;

                        (void) snprintf(ikey, sizeof(ikey), "%s[%zu]", key, i);
                        r = scalar_text(x, it, ikey, TOOL_NAME_ALLOWED, false, &s);
                        if (r < 0)
                                return r;
                        if (!is_tool_name(s, it->len))
                                return fail_value(x, it, ikey, TOOL_NAME_ALLOWED);
                        r = strv_add_unique(&l, s, it->len);
                        if (r < 0)
                                return r;
                }
        } else
                return fail_value(x, v, key, "a sequence of " TOOL_NAME_ALLOWED);

        replace_strv(&c->tools, TAKE_PTR(l));
        return 0;
}

static const struct key_spec code_execution_keys[] = {
        {"timeout", parse_seconds_key, offsetof(struct ptc_config, timeout), 0, CONFIG_MAX_SECONDS},
        {"max_tool_calls", parse_int_key, offsetof(struct ptc_config, max_tool_calls), 0,
         1000000000},
        {"mode", parse_mode_key, 0, 0, 0},
        {"module_name", parse_module_name, 0, 0, 0},
        {"max_stdout_bytes", parse_int_key, offsetof(struct ptc_config, max_stdout_bytes), 100,
         100000000},
        {"max_stderr_bytes", parse_int_key, offsetof(struct ptc_config, max_stderr_bytes), 0,
         100000000},
        {"python", parse_python, 0, 0, 0},
        {"tools", parse_tools, 0, 0, 0},
};

/* terminal */

#define ENV_NAME_ALLOWED "names matching [A-Za-z_][A-Za-z0-9_]*"

static bool is_env_name(const char *s, size_t n)
{
        return n <= CONFIG_MAX_ENV_NAME && is_c_identifier(s, n);
}

/* env_passthrough: a sequence of variable names; null is the empty list. */
static int parse_env_passthrough(struct ctx *x, const struct key_spec *k, const char *key,
                                 const struct node *v, void *target)
{
        struct ptc_config *c = target;
        _cleanup_strv_free_ char **l = NULL;
        int r;

        l = strv_new_empty();
        if (!l)
                return -ENOMEM;
        if (!node_is_null(v)) {
                if (v->type != NODE_SEQUENCE)
                        return fail_value(x, v, key,
                                          "a sequence of environment variable " ENV_NAME_ALLOWED);
                if (v->n_items > CONFIG_MAX_LIST)
                        return fail(x, v->line, key, "too many entries (at most %d)",
                                    CONFIG_MAX_LIST);
                for (size_t i = 0; i < v->n_items; i++) {
                        const struct node *it = v->items[i];
                        char ikey[ESCAPED_MAX + 300];
                        const char *s;

                        (void) snprintf(ikey, sizeof(ikey), "%s[%zu]", key, i);
                        r = scalar_text(x, it, ikey, ENV_NAME_ALLOWED, false, &s);
                        if (r < 0)
                                return r;
                        if (!is_env_name(s, it->len))
                                return fail_value(x, it, ikey, ENV_NAME_ALLOWED);
                        r = strv_add_unique(&l, s, it->len);
                        if (r < 0)
                                return r;
                }
        }
        replace_strv(&c->env_passthrough, TAKE_PTR(l));
        return 0;
}

static int parse_terminal_timeout(struct ctx *x, const struct key_spec *k, const char *key,
                                  const struct node *v, void *target)
{
        x->terminal_timeout_line = v->line;
        return parse_int_key(x, k, key, v, target);
}

static int parse_terminal_max_timeout(struct ctx *x, const struct key_spec *k, const char *key,
                                      const struct node *v, void *target)
{
        x->terminal_max_timeout_line = v->line;
        return parse_int_key(x, k, key, v, target);
}

/* Only the local backend exists; the key is accepted so seed configs that say so still load. */
static int parse_backend(struct ctx *x, const struct key_spec *k, const char *key,
                         const struct node *v, void *target)
{
        size_t i;

        return value_word(x, v, key, backend_words, ELEMENTSOF(backend_words), &i);
}

/* terminal.isolation: none (commands run as ptc's user) or strict (the script's sandbox). */
static int parse_terminal_isolation(struct ctx *x, const struct key_spec *k, const char *key,
                                    const struct node *v, void *target)
{
        static const char *const words[] = {"none", "strict"};
        struct ptc_config *c = target;
        size_t i;
        int r;

        r = value_word(x, v, key, words, ELEMENTSOF(words), &i);
        if (r < 0)
                return r;
        c->terminal_strict = i == 1;
        return 0;
}

static const struct key_spec terminal_keys[] = {
        {"env_passthrough", parse_env_passthrough, 0, 0, 0},
        {"timeout", parse_terminal_timeout, offsetof(struct ptc_config, terminal_timeout), 1,
         CONFIG_MAX_SECONDS},
        {"max_timeout", parse_terminal_max_timeout,
         offsetof(struct ptc_config, terminal_max_timeout), 1, CONFIG_MAX_SECONDS},
        {"backend", parse_backend, 0, 0, 0},
        {"isolation", parse_terminal_isolation, 0, 0, 0},
        {"network", parse_bool_key, offsetof(struct ptc_config, terminal_network), 0, 0},
};

/* sandbox */

static int parse_isolation_key(struct ctx *x, const struct key_spec *k, const char *key,
                               const struct node *v, void *target)
{
        struct ptc_config *c = target;
        size_t i;
        int r;

        r = value_word(x, v, key, isolation_words, ELEMENTSOF(isolation_words), &i);
        if (r < 0)
                return r;
        c->isolation = (enum ptc_isolation) i;
        return 0;
}

static const struct key_spec sandbox_keys[] = {
        {"isolation", parse_isolation_key, 0, 0, 0},
        {"memory_mb", parse_int_key, offsetof(struct ptc_config, memory_mb), 16, 1048576},
        {"pids", parse_int_key, offsetof(struct ptc_config, pids), 1, 1000000},
        {"network", parse_bool_key, offsetof(struct ptc_config, network), 0, 0},
};

/* web */

/* search_provider: null unsets it (back to "not configured"). Stored lower-case. */
static int parse_search_provider(struct ctx *x, const struct key_spec *k, const char *key,
                                 const struct node *v, void *target)
{
        struct ptc_config *c = target;
        size_t i;
        char *d;
        int r;

        if (node_is_null(v)) {
                replace_string(&c->search_provider, NULL);
                return 0;
        }
        r = value_word(x, v, key, search_provider_words, ELEMENTSOF(search_provider_words), &i);
        if (r < 0)
                return r;
        d = strdup(search_provider_words[i]);
        if (!d)
                return -ENOMEM;
        replace_string(&c->search_provider, d);
        return 0;
}

/* extract_provider: builtin (stored as NULL), firecrawl, tavily or exa; null is builtin. */
static int parse_extract_provider(struct ctx *x, const struct key_spec *k, const char *key,
                                  const struct node *v, void *target)
{
        struct ptc_config *c = target;
        size_t i;
        char *d;
        int r;

        if (node_is_null(v)) {
                replace_string(&c->extract_provider, NULL);
                return 0;
        }
        r = value_word(x, v, key, extract_provider_words, ELEMENTSOF(extract_provider_words), &i);
        if (r < 0)
                return r;
        if (i == 0) {
                replace_string(&c->extract_provider, NULL);
                return 0;
        }
        d = strdup(extract_provider_words[i]);
        if (!d)
                return -ENOMEM;
        replace_string(&c->extract_provider, d);
        return 0;
}

/*
 * A URL key (searxng_url, brave_url, ...; k->offset names the char * field):
 * http(s) with something after the scheme, no whitespace or controls; null
 * unsets.
 */
static int parse_url_key(struct ctx *x, const struct key_spec *k, const char *key,
                         const struct node *v, void *target)
{
        const char *allowed = "a URL starting with http:// or https://";
        char **field = (char **) ((char *) target + k->offset);
        const char *s;
        size_t skip;
        char *d;
        int r;

        r = scalar_text(x, v, key, allowed, true, &s);
        if (r < 0)
                return r;
        if (!s) {
                replace_string(field, NULL);
                return 0;
        }
        if (strncasecmp(s, "http://", 7) == 0)
                skip = 7;
        else if (strncasecmp(s, "https://", 8) == 0)
                skip = 8;
        else
                return fail_value(x, v, key, allowed);
        if (v->len <= skip || v->len > CONFIG_MAX_STRING)
                return fail_value(x, v, key, allowed);
        for (size_t i = 0; i < v->len; i++)
                if ((unsigned char) s[i] <= 0x20 || s[i] == 0x7f)
                        return fail_value(x, v, key, allowed);
        d = strdup(s);
        if (!d)
                return -ENOMEM;
        replace_string(field, d);
        return 0;
}

static const struct key_spec web_keys[] = {
        {"search_provider", parse_search_provider, 0, 0, 0},
        {"searxng_url", parse_url_key, offsetof(struct ptc_config, searxng_url), 0, 0},
        {"allow_private_urls", parse_bool_key, offsetof(struct ptc_config, allow_private_urls), 0,
         0},
        {"extract_provider", parse_extract_provider, 0, 0, 0},
        {"brave_url", parse_url_key, offsetof(struct ptc_config, brave_url), 0, 0},
        {"tavily_url", parse_url_key, offsetof(struct ptc_config, tavily_url), 0, 0},
        {"firecrawl_url", parse_url_key, offsetof(struct ptc_config, firecrawl_url), 0, 0},
        {"exa_url", parse_url_key, offsetof(struct ptc_config, exa_url), 0, 0},
        {"timeout", parse_seconds_key, offsetof(struct ptc_config, web_timeout), 0, 3600},
};

/* mcp_servers */

static int parse_mcp_command(struct ctx *x, const struct key_spec *k, const char *key,
                             const struct node *v, void *target)
{
        struct mcp_server_config *s = target;
        char *d;
        int r;

        r = value_string(x, v, key, false, &d);
        if (r < 0)
                return r;
        replace_string(&s->command, d);
        return 0;
}

static int parse_mcp_cwd(struct ctx *x, const struct key_spec *k, const char *key,
                         const struct node *v, void *target)
{
        struct mcp_server_config *s = target;
        char *d;
        int r;

        r = value_string(x, v, key, true, &d);
        if (r < 0)
                return r;
        replace_string(&s->cwd, d);
        return 0;
}

/* args: a sequence of strings (empty strings allowed, they are real argv entries). */
static int parse_mcp_args(struct ctx *x, const struct key_spec *k, const char *key,
                          const struct node *v, void *target)
{
        struct mcp_server_config *s = target;
        _cleanup_strv_free_ char **l = NULL;
        int r;

        l = strv_new_empty();
        if (!l)
                return -ENOMEM;
        if (!node_is_null(v)) {
                if (v->type != NODE_SEQUENCE)
                        return fail_value(x, v, key, "a sequence of strings");
                if (v->n_items > CONFIG_MAX_LIST)
                        return fail(x, v->line, key, "too many entries (at most %d)",
                                    CONFIG_MAX_LIST);
                for (size_t i = 0; i < v->n_items; i++) {
                        char ikey[ESCAPED_MAX + 400];
                        const char *a;

                        (void) snprintf(ikey, sizeof(ikey), "%s[%zu]", key, i);
                        r = scalar_text(x, v->items[i], ikey, "a string", false, &a);
                        if (r < 0)
                                return r;
                        r = strv_extend(&l, a);
                        if (r < 0)
                                return r;
                }
        }
        replace_strv(&s->args, TAKE_PTR(l));
        return 0;
}

/* env: a mapping NAME: value, stored as "NAME=value". */
static int parse_mcp_env(struct ctx *x, const struct key_spec *k, const char *key,
                         const struct node *v, void *target)
{
        struct mcp_server_config *s = target;
        _cleanup_strv_free_ char **l = NULL;
        int r;

        l = strv_new_empty();
        if (!l)
                return -ENOMEM;
        if (!node_is_null(v)) {
                if (v->type != NODE_MAPPING)
                        return fail_value(x, v, key,
                                          "a mapping of environment variable names to strings");
                if (v->n_items / 2 > CONFIG_MAX_MCP_ENV)
                        return fail(x, v->line, key, "too many entries (at most %d)",
                                    CONFIG_MAX_MCP_ENV);
                for (size_t i = 0; i + 1 < v->n_items; i += 2) {
                        const struct node *kn = v->items[i], *vn = v->items[i + 1];
                        char ikey[ESCAPED_MAX + 400];
                        const char *val;
                        char *e;

                        if (kn->type == NODE_ALIAS)
                                return fail_alias(x, kn, key);
                        if (kn->type != NODE_SCALAR || memchr(kn->text, 0, kn->len) ||
                            !is_env_name(kn->text, kn->len))
                                return fail_value(x, kn, key,
                                                  "environment variable " ENV_NAME_ALLOWED);
                        (void) snprintf(ikey, sizeof(ikey), "%s.%s", key, kn->text);
                        for (size_t j = 0; j < i; j += 2)
                                if (node_text_is(v->items[j], kn->text))
                                        return fail(x, kn->line, ikey, "duplicate key");
                        r = scalar_text(x, vn, ikey, "a string", false, &val);
                        if (r < 0)
                                return r;
                        if (asprintf(&e, "%s=%s", kn->text, val) < 0)
                                return -ENOMEM;
                        r = strv_consume(&l, e);
                        if (r < 0)
                                return r;
                }
        }
        replace_strv(&s->env, TAKE_PTR(l));
        return 0;
}

static const struct key_spec mcp_server_keys[] = {
        {"command", parse_mcp_command, 0, 0, 0},
        {"args", parse_mcp_args, 0, 0, 0},
        {"env", parse_mcp_env, 0, 0, 0},
        {"cwd", parse_mcp_cwd, 0, 0, 0},
};

#define SERVER_NAME_ALLOWED "names matching [A-Za-z0-9_-]+, at most 64 characters"

static bool is_server_name(const char *s, size_t n)
{
        if (n == 0 || n > CONFIG_MAX_NAME)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!(is_ascii_alpha(s[i]) || is_ascii_digit(s[i]) || s[i] == '_' || s[i] == '-'))
                        return false;
        return true;
}

static int parse_mcp_server(struct ctx *x, const struct node *kn, const struct node *vn,
                            struct mcp_server_config *s)
{
        char key[128];
        int r;

        s->name = strndup(kn->text, kn->len);
        s->args = strv_new_empty();
        s->env = strv_new_empty();
        if (!s->name || !s->args || !s->env)
                return -ENOMEM;

        (void) snprintf(key, sizeof(key), "mcp_servers.%s", s->name);
        r = parse_mapping(x, key, vn, mcp_server_keys, ELEMENTSOF(mcp_server_keys), s);
        if (r < 0)
                return r;
        if (!s->command)
                return fail(x, kn->line, key, "missing required key 'command' (allowed: %s)",
                            "command, args, env, cwd");
        return 0;
}

static int parse_mcp_servers_into(struct ctx *x, const struct node *n,
                                  struct mcp_server_config *servers, size_t *n_servers)
{
        const char *section = "mcp_servers";
        int r;

        for (size_t i = 0; i + 1 < n->n_items; i += 2) {
                const struct node *kn = n->items[i], *vn = n->items[i + 1];

                if (kn->type == NODE_ALIAS)
                        return fail_alias(x, kn, section);
                if (kn->type != NODE_SCALAR || memchr(kn->text, 0, kn->len) ||
                    !is_server_name(kn->text, kn->len))
                        return kn->type == NODE_SCALAR
                                       ? fail_text(x, kn->line, section, "server name", kn->text,
                                                   kn->len, SERVER_NAME_ALLOWED)
                                       : fail_value(x, kn, section, "a server name");
                for (size_t j = 0; j < *n_servers; j++)
                        if (strcmp(servers[j].name, kn->text) == 0)
                                return fail(x, kn->line, section, "duplicate server name '%s'",
                                            kn->text);

                /* Count it before parsing, so a half-filled entry is freed too. */
                r = parse_mcp_server(x, kn, vn, &servers[(*n_servers)++]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* mcp_servers replaces the whole list; null means none. */
static int parse_mcp_servers(struct ctx *x, const struct node *n)
{
        struct ptc_config *c = x->c;
        struct mcp_server_config *servers = NULL;
        size_t n_pairs, n_servers = 0;
        int r;

        if (n->type != NODE_MAPPING && !node_is_null(n))
                return fail_value(x, n, "mcp_servers", "a mapping of server names to settings");
        n_pairs = node_is_null(n) ? 0 : n->n_items / 2;
        if (n_pairs > CONFIG_MAX_MCP_SERVERS)
                return fail(x, n->line, "mcp_servers", "too many servers (at most %d)",
                            CONFIG_MAX_MCP_SERVERS);
        if (n_pairs > 0) {
                servers = calloc(n_pairs, sizeof(*servers));
                if (!servers)
                        return -ENOMEM;
                r = parse_mcp_servers_into(x, n, servers, &n_servers);
                if (r < 0) {
                        mcp_servers_free(servers, n_servers);
                        return r;
                }
        }
        mcp_servers_free(c->mcp_servers, c->n_mcp_servers);
        c->mcp_servers = servers;
        c->n_mcp_servers = n_servers;
        return 0;
}

/* ---- the file ----------------------------------------------------------------------------- */

struct section_spec {
        const char *name;
        const struct key_spec *keys;
        size_t n_keys;
};

static const struct section_spec sections[] = {
        {"code_execution", code_execution_keys, ELEMENTSOF(code_execution_keys)},
        {"terminal", terminal_keys, ELEMENTSOF(terminal_keys)},
        {"sandbox", sandbox_keys, ELEMENTSOF(sandbox_keys)},
        {"web", web_keys, ELEMENTSOF(web_keys)},
        {"mcp_servers", NULL, 0},
};

static int check_terminal_timeouts(struct ctx *x)
{
        const struct ptc_config *c = x->c;

        /* Only this file's fault if it set one of the two. */
        if (!x->terminal_timeout_line && !x->terminal_max_timeout_line)
                return 0;
        if (c->terminal_timeout <= c->terminal_max_timeout)
                return 0;
        if (x->terminal_max_timeout_line)
                return fail(x, x->terminal_max_timeout_line, "terminal.max_timeout",
                            "invalid value '%" PRId64 "' (allowed: an integer from "
                            "terminal.timeout (%" PRId64 ") to %d)",
                            c->terminal_max_timeout, c->terminal_timeout, CONFIG_MAX_SECONDS);
        return fail(x, x->terminal_timeout_line, "terminal.timeout",
                    "invalid value '%" PRId64 "' (allowed: an integer from 1 to "
                    "terminal.max_timeout (%" PRId64 "))",
                    c->terminal_timeout, c->terminal_max_timeout);
}

/* A warning for a top-level key close to a known section name: its settings would be lost. */
static int warn_unknown_section(struct ctx *x, const struct node *k)
{
        char esc[ESCAPED_MAX], *w;
        const char *near;

        if (k->type != NODE_SCALAR || memchr(k->text, 0, k->len))
                return 0;
        near = closest_name(k->text, k->len, sections, ELEMENTSOF(sections), sizeof(sections[0]));
        if (!near)
                return 0;
        if (asprintf(&w, "config %s: unknown section '%s' (did you mean '%s'?)", x->path,
                     escape_text(k->text, k->len, esc, sizeof(esc)), near) < 0)
                return -ENOMEM;
        return strv_consume(&x->c->warnings, w);
}

static int parse_root(struct ctx *x, const struct node *root)
{
        bool seen[ELEMENTSOF(sections)] = {};
        int r;

        if (!root || node_is_null(root))
                return 0;
        if (root->type != NODE_MAPPING)
                return fail(x, root->line, NULL,
                            "expected a mapping of sections at the top level, got %s",
                            node_kind(root));

        for (size_t i = 0; i + 1 < root->n_items; i += 2) {
                const struct node *k = root->items[i], *v = root->items[i + 1];
                size_t j;

                /* An alias key could stand for a known section name; do not guess. */
                if (k->type == NODE_ALIAS)
                        return fail_alias(x, k, "top level");
                for (j = 0; j < ELEMENTSOF(sections); j++)
                        if (node_text_is(k, sections[j].name))
                                break;
                if (j >= ELEMENTSOF(sections)) {
                        /* Someone else's section (the file may be shared), unless a typo of ours.
                         */
                        r = warn_unknown_section(x, k);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (seen[j])
                        return fail(x, k->line, sections[j].name, "duplicate section");
                seen[j] = true;

                if (sections[j].keys)
                        r = parse_mapping(x, sections[j].name, v, sections[j].keys,
                                          sections[j].n_keys, x->c);
                else
                        r = parse_mcp_servers(x, v);
                if (r < 0)
                        return r;
        }
        return check_terminal_timeouts(x);
}

static int read_file_capped(const char *path, struct buf *b)
{
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (S_ISREG(st.st_mode) && st.st_size > CONFIG_MAX_FILE_SIZE)
                return -E2BIG;

        /* Read until EOF even for regular files: the size may change under us. */
        for (;;) {
                char chunk[16384];
                ssize_t n = read(fd, chunk, sizeof(chunk));
                int r;

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        return 0;
                r = buf_append(b, chunk, (size_t) n);
                if (r < 0)
                        return r;
        }
}

int config_load_file(struct ptc_config *c, const char *path, bool must_exist, struct diag *reterr)
{
        _cleanup_(buf_releasep) struct buf b = BUF_INIT(CONFIG_MAX_FILE_SIZE);
        _cleanup_(node_freep) struct node *root = NULL;
        struct ctx x = {.path = path, .err = reterr, .c = c};
        char ebuf[256];
        char *sp;
        int r;

        if (!c || !path)
                return diag_set(reterr, -EINVAL, "no config file given");

        r = read_file_capped(path, &b);
        if (r == -ENOENT && !must_exist)
                return 0;
        if (r == -E2BIG)
                return diag_set(reterr, r, "%s: file too large (more than %d bytes)", path,
                                CONFIG_MAX_FILE_SIZE);
        if (r == -ENOMEM)
                return diag_set(reterr, r, "%s: out of memory", path);
        if (r < 0)
                return diag_set(reterr, r, "%s: cannot read: %s", path,
                                strerror_r(-r, ebuf, sizeof(ebuf)));

        sp = strdup(path);
        if (!sp)
                return -ENOMEM;
        replace_string(&c->source_path, sp);

        r = parse_yaml(&x, buf_str(&b), b.len, &root);
        if (r < 0)
                return r;
        return parse_root(&x, root);
}
