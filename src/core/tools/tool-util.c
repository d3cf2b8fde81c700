/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the builtin tools: error results, argument accessors
 * with the seed's lenient type coercion (model_tools coerces "42" to 42
 * before dispatch), path resolution against the execution's cwd and $HOME.
 */

#include "core/tools/tool-util.h"

#include "core/tools/tool.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/parse-util.h"
#include "basic/utf8.h"
#include "core/fs/file-safety.h"
#include "core/fs/path-resolve.h"
#include "core/output/redact.h"

json_t *tool_json_string(const char *s, size_t n)
{
        _cleanup_free_ char *clean = NULL;
        size_t len;

        if (!s)
                return json_string("");
        /* Validated here, so jansson need not do it a second time. */
        if (utf8_is_valid(s, n))
                return json_stringn_nocheck(s, n);
        /* Paths and process output may be any bytes; jansson takes only UTF-8. */
        clean = utf8_sanitize(s, n, &len, NULL);
        if (!clean)
                return NULL;
        return json_stringn_nocheck(clean, len);
}

json_t *tool_json_name(const char *s, size_t n)
{
        _cleanup_free_ char *text = NULL;
        size_t len;

        if (!s)
                return json_string("");
        /* Validated here, so jansson need not do it a second time. */
        if (utf8_is_escape_free(s, n))
                return json_stringn_nocheck(s, n);
        /* A file name is any bytes; jansson takes only UTF-8 (docs/protocol.md). */
        if (utf8_escape_bytes(s, n, &text, &len) < 0)
                return NULL;
        return json_stringn_nocheck(text, len);
}

const char *tool_json_type_name(const json_t *v)
{
        if (!v)
                return "NoneType";
        switch (json_typeof(v)) {
        case JSON_OBJECT:
                return "dict";
        case JSON_ARRAY:
                return "list";
        case JSON_STRING:
                return "str";
        case JSON_INTEGER:
                return "int";
        case JSON_REAL:
                return "float";
        case JSON_TRUE:
        case JSON_FALSE:
                return "bool";
        default:
                return "NoneType";
        }
}

int tool_json_set(json_t *o, const char *key, json_t *v)
{
        if (!v)
                return -ENOMEM;
        if (json_object_set_new(o, key, v) < 0)
                return -ENOMEM;
        return 0;
}

int tool_json_set_name(json_t *o, const char *name, json_t *v)
{
        _cleanup_free_ char *key = NULL;
        size_t n = strlen(name);

        if (utf8_is_escape_free(name, n))
                return tool_json_set(o, name, v);
        if (utf8_escape_bytes(name, n, &key, NULL) < 0) {
                json_decref(v);
                return -ENOMEM;
        }
        return tool_json_set(o, key, v);
}

/*
 * The one builder of formatted error results: {"error": msg}, or with
 * @success_false the seed's PatchResult/web shape {"success": false, "error": msg}.
 */
_printf_(3, 0) static int error_resultv(json_t **ret, bool success_false, const char *fmt,
                                        va_list ap)
{
        _cleanup_free_ char *msg = NULL;
        json_auto_t *o = NULL;
        int r;

        *ret = NULL;
        r = vasprintf(&msg, fmt, ap);
        if (r < 0) {
                msg = NULL;
                return -ENOMEM;
        }
        o = json_object();
        if (!o || (success_false && tool_json_set(o, "success", json_false()) < 0) ||
            tool_json_set(o, "error", tool_json_name(msg, (size_t) r)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

json_t *tool_error_new(const char *fmt, ...)
{
        json_t *o;
        va_list ap;

        va_start(ap, fmt);
        (void) error_resultv(&o, false, fmt, ap);
        va_end(ap);
        return o;
}

int tool_arg_string(json_t *args, const char *key, const char **ret, const char **ret_err)
{
        json_t *v = json_is_object(args) ? json_object_get(args, key) : NULL;

        if (!v || json_is_null(v)) {
                *ret = NULL;
                return 0;
        }
        if (!json_is_string(v)) {
                if (ret_err)
                        *ret_err = "expected a string";
                return -EINVAL;
        }
        *ret = json_string_value(v);
        return 0;
}

/* Decimal string, surrounding whitespace allowed (Python's int(" 42 ")). */
static int parse_int_string(const char *s, int64_t *ret)
{
        char buf[64];
        size_t n;

        while (isspace((unsigned char) *s))
                s++;
        n = strlen(s);
        while (n > 0 && isspace((unsigned char) s[n - 1]))
                n--;
        if (n == 0 || n >= sizeof(buf))
                return -EINVAL;
        memcpy(buf, s, n);
        buf[n] = 0;
        if (buf[0] == '+')
                return safe_atoi64(buf + 1, ret);
        return safe_atoi64(buf, ret);
}

int tool_arg_int(json_t *args, const char *key, int64_t def, int64_t *ret, const char **ret_err)
{
        json_t *v = json_is_object(args) ? json_object_get(args, key) : NULL;

        if (!v || json_is_null(v)) {
                *ret = def;
                return 0;
        }
        if (json_is_integer(v)) {
                *ret = json_integer_value(v);
                return 0;
        }
        if (json_is_real(v)) {
                double d = json_real_value(v);

                /* Only integral values that fit: 3.0 is 3, 3.5 is a type error. */
                if (isfinite(d) && d == floor(d) && d >= -9.2e18 && d <= 9.2e18) {
                        *ret = (int64_t) d;
                        return 0;
                }
        } else if (json_is_string(v)) {
                int64_t i;

                if (parse_int_string(json_string_value(v), &i) >= 0) {
                        *ret = i;
                        return 0;
                }
        }
        if (ret_err)
                *ret_err = "expected an integer";
        return -EINVAL;
}

int tool_arg_bool(json_t *args, const char *key, bool def, bool *ret, const char **ret_err)
{
        json_t *v = json_is_object(args) ? json_object_get(args, key) : NULL;

        if (!v || json_is_null(v)) {
                *ret = def;
                return 0;
        }
        if (json_is_boolean(v)) {
                *ret = json_is_true(v);
                return 0;
        }
        if (json_is_string(v)) {
                const char *s = json_string_value(v);

                if (strcasecmp(s, "true") == 0) {
                        *ret = true;
                        return 0;
                }
                if (strcasecmp(s, "false") == 0) {
                        *ret = false;
                        return 0;
                }
        }
        if (ret_err)
                *ret_err = "expected a boolean";
        return -EINVAL;
}

const char *tool_env_get(const struct tool_ctx *ctx, const char *name)
{
        return ctx ? fs_env_get(ctx->env, name) : NULL;
}

int tool_home_dir(const struct tool_ctx *ctx, char **ret)
{
        return fs_home_dir(ctx ? ctx->env : NULL, ret);
}

int tool_real_home_dir(char **ret)
{
        return fs_real_home_dir(ret);
}

int tool_expand_tilde(const struct tool_ctx *ctx, const char *path, char **ret)
{
        return fs_expand_tilde(ctx ? ctx->env : NULL, path, ret);
}

char *tool_resolve_path(const struct tool_ctx *ctx, const char *path)
{
        return fs_resolve_path(ctx ? ctx->cwd : NULL, ctx ? ctx->env : NULL, path);
}

int tool_path_init(const struct tool_ctx *ctx, const char *path, struct tool_path *ret)
{
        int r;

        r = tool_expand_tilde(ctx, path, &ret->shown);
        if (r < 0)
                return r;
        r = file_safety_normpath(ret->shown, &ret->normalized);
        if (r < 0)
                return r;
        ret->abs = tool_resolve_path(ctx, path);
        if (!ret->abs)
                return -ENOMEM;
        r = file_safety_realpath(ret->abs, &ret->resolved);
        if (r == -ENOMEM)
                return r;
        return 0;
}

void tool_path_release(struct tool_path *p)
{
        free(p->shown);
        free(p->abs);
        free(p->resolved);
        free(p->normalized);
        *p = (struct tool_path){};
}

bool tool_path_is_sensitive(const struct tool_path *p)
{
        return file_safety_is_sensitive_path(p->resolved, p->normalized);
}

int tool_path_check(const struct tool_ctx *ctx, const char *path, struct tool_path *ret,
                    json_t **ret_result)
{
        int r;

        r = tool_path_init(ctx, path, ret);
        if (r < 0)
                return r;
        if (!tool_path_is_sensitive(ret))
                return 0;
        /* The seed's text, word for word: it names the argument as given. */
        *ret_result = tool_error_new("Refusing to write to sensitive system path: %s\n"
                                     "Use the terminal tool with sudo if you need to modify "
                                     "system files.",
                                     path);
        return *ret_result ? 1 : -ENOMEM;
}

int tool_error_result(json_t **ret, const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = error_resultv(ret, false, fmt, ap);
        va_end(ap);
        return r;
}

int tool_failure_result(json_t **ret, const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = error_resultv(ret, true, fmt, ap);
        va_end(ap);
        return r;
}

json_t *tool_result_finish(const struct redactor *red, int r, json_t *result)
{
        json_t *err;
        int k;

        if (r < 0 || !result) {
                json_decref(result);
                result = tool_error_new("Tool execution failed: %s", strerror(r < 0 ? -r : EIO));
                if (!result)
                        return NULL;
        }
        /* Whatever a tool returns, known secret values never reach the caller. */
        k = redact_json(red, REDACT_NONE, result);
        if (k >= 0)
                return result;
        /* Maybe half redacted: none of it goes out (fail closed). */
        json_decref(result);
        if (tool_error_result(&err, "tool result withheld: redaction failed (%s)",
                              redact_strerror(k)) < 0)
                return NULL;
        return err;
}

struct approval_call tool_ctx_approval_call(const struct tool_ctx *ctx, const char *tool,
                                            json_t *args, const char *refusal_fields_json)
{
        return (struct approval_call){
                .config = ctx->config,
                .tool = tool,
                .args = args,
                .cwd = ctx->cwd,
                .env = ctx->env,
                .approver = ctx->approver,
                .clock = ctx->clock,
                .redactor = ctx->redactor,
                .cancel_fd = ctx->cancel_fd,
                .refusal_fields_json = refusal_fields_json,
        };
}
