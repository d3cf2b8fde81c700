/* SPDX-License-Identifier: MIT */
#include "core/json/json-write.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Bytes that end a run of plain string content: '"', '\\' and controls. */
static bool needs_escape(unsigned char c)
{
        return c < 0x20 || c == '"' || c == '\\';
}

static int write_string(struct buf *b, const char *s, size_t n)
{
        static const char hex[] = "0123456789ABCDEF"; /* jansson writes upper case */
        size_t run = 0;
        int r;

        r = buf_reserve(b, n + 2);
        if (r < 0)
                return r;
        b->data[b->len++] = '"';
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) s[i];
                char esc[6];
                size_t elen = 2;

                if (!needs_escape(c))
                        continue;
                r = buf_append(b, s + run, i - run);
                if (r < 0)
                        return r;
                run = i + 1;
                esc[0] = '\\';
                switch (c) {
                case '"':
                        esc[1] = '"';
                        break;
                case '\\':
                        esc[1] = '\\';
                        break;
                case '\b':
                        esc[1] = 'b';
                        break;
                case '\f':
                        esc[1] = 'f';
                        break;
                case '\n':
                        esc[1] = 'n';
                        break;
                case '\r':
                        esc[1] = 'r';
                        break;
                case '\t':
                        esc[1] = 't';
                        break;
                default:
                        memcpy(esc + 1, "u00", 3);
                        esc[4] = hex[c >> 4];
                        esc[5] = hex[c & 15];
                        elen = 6;
                        break;
                }
                r = buf_append(b, esc, elen);
                if (r < 0)
                        return r;
        }
        r = buf_append(b, s + run, n - run);
        if (r < 0)
                return r;
        return buf_append_char(b, '"');
}

static int write_real(struct buf *b, double d)
{
        char tmp[64];
        int n;

        if (!isfinite(d))
                return -EINVAL;
        /* jansson's default: %.17g, then make sure it still reads as a real. */
        n = snprintf(tmp, sizeof(tmp), "%.17g", d);
        if (n < 0 || (size_t) n >= sizeof(tmp) - 3)
                return -EINVAL;
        if (!strpbrk(tmp, ".e")) {
                tmp[n++] = '.';
                tmp[n++] = '0';
                tmp[n] = 0;
        }
        /* Like jansson: no '+' and no leading zeros in the exponent ("1e+05" -> "1e5"). */
        {
                char *digits = strchr(tmp, 'e'), *nz;

                if (digits) {
                        digits++;
                        if (*digits == '+')
                                memmove(digits, digits + 1, strlen(digits + 1) + 1);
                        else if (*digits == '-')
                                digits++;
                        for (nz = digits; *nz == '0' && nz[1]; nz++)
                                ;
                        if (nz != digits)
                                memmove(digits, nz, strlen(nz) + 1);
                        n = (int) strlen(tmp);
                }
        }
        return buf_append(b, tmp, (size_t) n);
}

static int write_value(struct buf *b, const json_t *v, unsigned depth)
{
        char tmp[32];
        int r, n;

        if (depth > JSON_WRITE_DEPTH_MAX)
                return -ELOOP;
        switch (json_typeof(v)) {
        case JSON_OBJECT: {
                const char *key;
                json_t *val;
                bool first = true;

                r = buf_append_char(b, '{');
                if (r < 0)
                        return r;
                /* Insertion order, as json_dumps without JSON_SORT_KEYS. */
                json_object_foreach((json_t *) v, key, val)
                {
                        if (!first && (r = buf_append_char(b, ',')) < 0)
                                return r;
                        first = false;
                        if ((r = write_string(b, key, strlen(key))) < 0 ||
                            (r = buf_append_char(b, ':')) < 0 ||
                            (r = write_value(b, val, depth + 1)) < 0)
                                return r;
                }
                return buf_append_char(b, '}');
        }
        case JSON_ARRAY: {
                size_t i;
                json_t *val;

                r = buf_append_char(b, '[');
                if (r < 0)
                        return r;
                json_array_foreach((json_t *) v, i, val)
                {
                        if (i > 0 && (r = buf_append_char(b, ',')) < 0)
                                return r;
                        if ((r = write_value(b, val, depth + 1)) < 0)
                                return r;
                }
                return buf_append_char(b, ']');
        }
        case JSON_STRING:
                return write_string(b, json_string_value(v), json_string_length(v));
        case JSON_INTEGER:
                n = snprintf(tmp, sizeof(tmp), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
                return buf_append(b, tmp, (size_t) n);
        case JSON_REAL:
                return write_real(b, json_real_value(v));
        case JSON_TRUE:
                return buf_append_str(b, "true");
        case JSON_FALSE:
                return buf_append_str(b, "false");
        case JSON_NULL:
                return buf_append_str(b, "null");
        default:
                return -EINVAL;
        }
}

int json_write_compact(struct buf *b, const json_t *v)
{
        if (!v)
                return -EINVAL;
        return write_value(b, v, 0);
}
