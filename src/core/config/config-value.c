/* SPDX-License-Identifier: MIT */
/*
 * Typed values from scalar nodes (integers, numbers, booleans, words,
 * strings) and the messages that refuse a value: "FILE:LINE: KEY: ...", with
 * the offending text escaped and cut short.
 */

#include "core/config/config-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/parse-util.h"
#include "basic/strv.h"
#include "basic/utf8.h"

/* ---- messages ----------------------------------------------------------------------------- */

/*
 * @s as text for a message: at most @max_chars code points, then "..."; control
 * characters (C0, DEL, C1) and invalid bytes as escapes.
 */
static const char *escape_text(const char *s, size_t n, size_t max_chars, char *out, size_t outsz)
{
        size_t o = 0, chars = 0, i = 0;

        while (i < n && o + 9 < outsz) {
                unsigned char ch = (unsigned char) s[i];
                size_t l = utf8_valid_seq_len((const unsigned char *) s + i, n - i);
                bool esc = l == 0 || ch < 0x20 || ch == 0x7f ||
                           (l == 2 && ch == 0xc2 && (unsigned char) s[i + 1] < 0xa0);

                if (chars >= max_chars) {
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

/*
 * Render user text for a message: at most VALUE_SHOW_CHARS code points, then
 * "..."; control characters (C0, DEL, C1) and invalid bytes as escapes, so a
 * value cannot forge lines or terminal sequences in our output.
 */
const char *config_escape_text(const char *s, size_t n, char *out, size_t outsz)
{
        return escape_text(s, n, VALUE_SHOW_CHARS, out, outsz);
}

int config_fail(struct ctx *x, size_t line, const char *key, const char *fmt, ...)
{
        char tail[sizeof(((struct diag *) NULL)->message)];
        struct diag d;
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(tail, sizeof(tail), fmt, ap);
        va_end(ap);
        /* No file: a value set through the API (config_set_value()). */
        if (!x->path)
                (void) diag_set(&d, -EINVAL, "%s: %s", key ? key : "config", tail);
        else if (key)
                (void) diag_set(&d, -EINVAL, "%s:%zu: %s: %s", x->path, line, key, tail);
        else
                (void) diag_set(&d, -EINVAL, "%s:%zu: %s", x->path, line, tail);
        /*
         * Escaped whole, not only the values we quote: some messages carry another parser's
         * words about the file's text (a backend SPEC, a shell pattern), which quote it raw.
         * Text escaped already has no control character left, so nothing is escaped twice.
         */
        if (x->err)
                (void) escape_text(d.message, strlen(d.message), SIZE_MAX, x->err->message,
                                   sizeof(x->err->message));
        return -EINVAL;
}

/* "invalid <what> '<text>' (allowed: <allowed>)" */
int config_fail_text(struct ctx *x, size_t line, const char *key, const char *what,
                     const char *text, size_t len, const char *allowed)
{
        char esc[ESCAPED_MAX];

        return config_fail(x, line, key, "invalid %s '%s' (allowed: %s)", what,
                           config_escape_text(text, len, esc, sizeof(esc)), allowed);
}

int config_fail_alias(struct ctx *x, const struct node *n, const char *key)
{
        char esc[ESCAPED_MAX];

        return config_fail(x, n->line, key, "YAML aliases are not supported (*%s)",
                           config_escape_text(n->text, n->len, esc, sizeof(esc)));
}

/* The value @n is not acceptable for @key; say what it is and what would be. */
int config_fail_value(struct ctx *x, const struct node *n, const char *key, const char *allowed)
{
        if (n->type == NODE_ALIAS)
                return config_fail_alias(x, n, key);
        if (node_is_null(n))
                return config_fail(x, n->line, key, "missing value (allowed: %s)", allowed);
        if (n->type == NODE_SCALAR)
                return config_fail_text(x, n->line, key, "value", n->text, n->len, allowed);
        return config_fail(x, n->line, key, "expected %s, got %s", allowed, node_kind(n));
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
int config_scalar_text(struct ctx *x, const struct node *n, const char *key, const char *allowed,
                       bool allow_null, const char **ret)
{
        if (allow_null && node_is_null(n)) {
                *ret = NULL;
                return 0;
        }
        if (n->type != NODE_SCALAR || node_is_null(n) || memchr(n->text, 0, n->len))
                return config_fail_value(x, n, key, allowed);
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
bool config_parse_number_literal(const char *s, size_t n, double *ret)
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

int config_value_int(struct ctx *x, const struct node *n, const char *key, int64_t min, int64_t max,
                     int64_t *ret)
{
        char allowed[96];
        const char *s;
        int64_t v;
        int r;

        (void) snprintf(allowed, sizeof(allowed), "an integer from %" PRId64 " to %" PRId64, min,
                        max);
        r = config_scalar_text(x, n, key, allowed, false, &s);
        if (r < 0)
                return r;
        if (!parse_integer_literal(s, n->len, &v) || v < min || v > max)
                return config_fail_value(x, n, key, allowed);
        *ret = v;
        return 0;
}

int config_value_bool(struct ctx *x, const struct node *n, const char *key, bool *ret)
{
        static const char *const words[] = {"true", "false", "yes", "no", "on", "off"};
        const char *allowed = "true, false, yes, no, on, off";
        const char *s;
        int r, i;

        r = config_scalar_text(x, n, key, allowed, false, &s);
        if (r < 0)
                return r;
        i = config_lookup_word(s, words, ELEMENTSOF(words));
        if (i < 0)
                return config_fail_value(x, n, key, allowed);
        *ret = i % 2 == 0;
        return 0;
}

/* One of @words; returns its index. */
int config_value_word(struct ctx *x, const struct node *n, const char *key,
                      const char *const *words, size_t n_words, size_t *ret)
{
        char allowed[128] = "";
        size_t o = 0;
        const char *s;
        int r, i;

        for (size_t j = 0; j < n_words && o < sizeof(allowed); j++)
                o += (size_t) snprintf(allowed + o, sizeof(allowed) - o, "%s%s", j ? ", " : "",
                                       words[j]);
        r = config_scalar_text(x, n, key, allowed, false, &s);
        if (r < 0)
                return r;
        i = config_lookup_word(s, words, n_words);
        if (i < 0)
                return config_fail_value(x, n, key, allowed);
        *ret = (size_t) i;
        return 0;
}

/* A non-empty string of at most CONFIG_MAX_STRING bytes; NULL for null if @allow_null. */
int config_value_string(struct ctx *x, const struct node *n, const char *key, bool allow_null,
                        char **ret)
{
        char allowed[64];
        const char *s;
        char *d = NULL;
        int r;

        (void) snprintf(allowed, sizeof(allowed), "a non-empty string of at most %d bytes",
                        CONFIG_MAX_STRING);
        r = config_scalar_text(x, n, key, allowed, allow_null, &s);
        if (r < 0)
                return r;
        if (s) {
                if (n->len == 0 || n->len > CONFIG_MAX_STRING)
                        return config_fail_value(x, n, key, allowed);
                d = strdup(s);
                if (!d)
                        return -ENOMEM;
        }
        *ret = d;
        return 0;
}

void config_replace_string(char **dst, char *s)
{
        free(*dst);
        *dst = s;
}

void config_replace_strv(char ***dst, char **l)
{
        strv_free(*dst);
        *dst = l;
}
