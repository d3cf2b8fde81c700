/* SPDX-License-Identifier: MIT */
#include "core/stubs/stubs.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "basic/utf8.h"
#include "core/registry/registry.h"
#include "core/tools/tool.h"

#define SCHEMA_MAX_DESCRIPTION (16u << 20)
#define DEFAULT_MODULE_NAME "hermes_tools"

/*
 * The working-directory sentences of the seed, kept word for word when the tools they name
 * are enabled: models were tuned on them, and neither may call the script's environment a
 * sandbox. A disabled tool is left out of them (append_cwd_note()).
 */
static const char cwd_note_strict[] =
        "Scripts run in their own temp dir, not the session's CWD \xe2\x80\x94 use absolute paths "
        "(os.path.expanduser('~/.hermes/.env'))";
static const char cwd_note_project[] = "Scripts run in the session's working directory with the "
                                       "active venv's python, so project deps (pandas, etc.) and "
                                       "relative paths work";

/* "  read_file(path: str, offset: int = 1) -> dict\n    Returns ..." for each tool. */
static int append_tool_lines(struct buf *b, const struct registry *reg, char *const *fnames)
{
        int r = 0;

        for (size_t i = 0; i < registry_count(reg) && r >= 0; i++) {
                const struct tool *t = registry_get(reg, i);

                r = buf_printf(b, "%s  %s(", i ? "\n" : "", fnames[i]);
                if (r >= 0)
                        r = stubs_append_signature(b, t);
                if (r >= 0)
                        r = buf_append_str(b, ") -> dict");
                if (r >= 0 && t->returns && t->returns[0]) {
                        r = buf_append_str(b, "\n    ");
                        /* A multi-line result note stays indented under its tool. */
                        for (const char *p = t->returns; *p && r >= 0; p++)
                                r = *p == '\n' ? buf_append_str(b, "\n    ")
                                               : buf_append_char(b, *p);
                }
        }
        if (r >= 0 && registry_count(reg) == 0)
                r = buf_append_str(b, "  (no tools are enabled)");
        return r;
}

/* The seed's rule: web_search and terminal if enabled, else the first two names, else none. */
static int append_import_list(struct buf *b, const struct registry *reg, char *const *fnames)
{
        static const char *const preferred[] = {"web_search", "terminal"};
        size_t n = 0;
        int r = 0;

        for (size_t i = 0; i < ELEMENTSOF(preferred) && r >= 0; i++)
                for (size_t j = 0; j < registry_count(reg) && r >= 0; j++)
                        if (strcmp(registry_get(reg, j)->name, preferred[i]) == 0)
                                r = buf_printf(b, "%s%s", n++ ? ", " : "", fnames[j]);
        for (size_t j = 0; n == 0 && j < MIN(registry_count(reg), (size_t) 2) && r >= 0; j++)
                r = buf_printf(b, "%s%s", j ? ", " : "", fnames[j]);
        if (r >= 0)
                r = buf_append_str(b, registry_count(reg) ? ", ..." : "...");
        return r;
}

/* "Limits: 5-minute timeout, 50KB stdout cap, max 50 tool calls per script." from @config. */
static int append_limits(struct buf *b, const struct ptc_config *config)
{
        double timeout = config ? config->timeout : 300;
        int64_t stdout_cap = config ? config->max_stdout_bytes : 50000;
        int64_t calls = config ? config->max_tool_calls : 50;
        int r;

        r = buf_append_str(b, "Limits: ");
        if (r < 0)
                return r;
        if (timeout > 0 && seconds_are_whole(timeout)) {
                int64_t s = (int64_t) timeout;

                if (s % 60 == 0)
                        r = buf_printf(b, "%" PRId64 "-minute timeout", s / 60);
                else
                        r = buf_printf(b, "%" PRId64 "-second timeout", s);
        } else
                r = buf_printf(b, "%g-second timeout", timeout);
        if (r < 0)
                return r;

        if (stdout_cap >= 1000)
                r = buf_printf(b, ", %" PRId64 "KB stdout cap", (stdout_cap + 500) / 1000);
        else
                r = buf_printf(b, ", %" PRId64 "-byte stdout cap", stdout_cap);
        if (r < 0)
                return r;

        return buf_printf(b, ", max %" PRId64 " tool call%s per script.", calls,
                          calls == 1 ? "" : "s");
}

/*
 * The working-directory sentence of @mode, naming only the tools @reg enables: the seed's
 * "or terminal()/read_file() for user files" and "like in terminal()" would otherwise offer
 * the model calls the script cannot make.
 */
static int append_cwd_note(struct buf *b, const struct registry *reg, enum ptc_mode mode)
{
        bool terminal = registry_find(reg, "terminal"), read_file = registry_find(reg, "read_file");
        int r;

        if (mode != PTC_MODE_STRICT) {
                r = buf_append_str(b, cwd_note_project);
                if (r >= 0)
                        r = buf_append_str(b, terminal ? " like in terminal()." : ".");
                return r;
        }
        r = buf_append_str(b, cwd_note_strict);
        if (r >= 0 && (terminal || read_file))
                r = buf_printf(b, " or %s%s%s", terminal ? "terminal()" : "",
                               terminal && read_file ? "/" : "", read_file ? "read_file()" : "");
        if (r >= 0)
                r = buf_append_str(b, " for user files.");
        return r;
}

static int build_description(struct buf *b, const struct registry *reg, enum ptc_mode mode,
                             const struct ptc_config *config, const char *module,
                             char *const *fnames)
{
        int r;

        r = buf_printf(b,
                       "Run a Python script that can call tools programmatically. "
                       "Use this when you need 3+ tool calls with processing logic between them, "
                       "need to filter/reduce large tool outputs before they enter your context, "
                       "need conditional branching (if X then Y else Z), or need to loop "
                       "(fetch N pages, process N files, retry on failure).\n\n"
                       "Use normal tool calls instead when: single tool call with no processing, "
                       "you need to see the full result and apply complex reasoning, "
                       "or the task requires interactive user input.\n\n"
                       "Available via `from %s import ...`:\n\n",
                       module);
        if (r >= 0)
                r = append_tool_lines(b, reg, fnames);
        if (r >= 0)
                r = buf_append_str(b, "\n\n");
        if (r >= 0)
                r = append_limits(b, config);
        /* Only about terminal(): say it only when the script can call it. */
        if (r >= 0 && registry_find(reg, "terminal"))
                r = buf_append_str(b, " terminal() is foreground-only (no background or pty).");
        if (r >= 0)
                r = buf_append_str(b, "\n\n");
        if (r >= 0)
                r = append_cwd_note(b, reg, mode);
        if (r >= 0)
                r = buf_append_str(b, "\n\n");
        if (r >= 0)
                r = buf_printf(
                        b,
                        "Print your final result to stdout. Use Python stdlib (json, re, math, "
                        "csv, datetime, collections, etc.) for processing between tool calls.\n\n"
                        "Also available (import them from %s too):\n"
                        "  json_parse(text: str) \xe2\x80\x94 json.loads with strict=False; "
                        "use for %s output with control chars\n"
                        "  shell_quote(s: str) \xe2\x80\x94 shlex.quote(); use when interpolating "
                        "dynamic strings into shell commands\n"
                        "  retry(fn, max_attempts=3, delay=2) \xe2\x80\x94 retry with exponential "
                        "backoff for transient failures",
                        module, registry_find(reg, "terminal") ? "terminal()" : "tool");
        return r;
}

/* json_string() refuses invalid UTF-8, and tool texts are not ours to trust. */
static json_t *json_string_sanitized(const char *s, size_t n)
{
        _cleanup_free_ char *clean = NULL;
        size_t len;

        if (utf8_is_valid(s, n) && !memchr(s, 0, n))
                return json_stringn(s, n);
        clean = utf8_sanitize(s, n, &len, NULL);
        if (!clean)
                return NULL;
        return json_stringn(clean, len);
}

int schema_build(const struct registry *reg, enum ptc_mode mode, const struct ptc_config *config,
                 json_t **ret)
{
        _cleanup_buf_ struct buf desc = BUF_INIT(SCHEMA_MAX_DESCRIPTION);
        _cleanup_buf_ struct buf code = BUF_INIT(SCHEMA_MAX_DESCRIPTION);
        _cleanup_strv_free_ char **fnames = NULL;
        const char *module =
                config && config->module_name ? config->module_name : DEFAULT_MODULE_NAME;
        json_auto_t *schema = NULL, *params = NULL, *props = NULL, *code_prop = NULL,
                    *required = NULL;
        int r;

        if (!ret)
                return -EINVAL;
        r = stubs_function_names(reg, &fnames);
        if (r >= 0)
                r = build_description(&desc, reg, mode, config, module, fnames);
        if (r >= 0)
                r = buf_printf(&code, "Python code to execute. Import tools with `from %s import ",
                               module);
        if (r >= 0)
                r = append_import_list(&code, reg, fnames);
        if (r >= 0)
                r = buf_append_str(&code, "` and print your final result to stdout.");
        if (r < 0)
                return r;

        /* json_object_set_new() steals the value even when it fails, so nothing leaks. */
        code_prop = json_object();
        props = json_object();
        params = json_object();
        required = json_array();
        schema = json_object();
        if (!code_prop || !props || !params || !required || !schema ||
            json_object_set_new(code_prop, "type", json_string("string")) < 0 ||
            json_object_set_new(code_prop, "description",
                                json_string_sanitized(buf_str(&code), code.len)) < 0 ||
            json_object_set_new(props, "code", TAKE_PTR(code_prop)) < 0 ||
            json_array_append_new(required, json_string("code")) < 0 ||
            json_object_set_new(params, "type", json_string("object")) < 0 ||
            json_object_set_new(params, "properties", TAKE_PTR(props)) < 0 ||
            json_object_set_new(params, "required", TAKE_PTR(required)) < 0 ||
            json_object_set_new(schema, "name", json_string("execute_code")) < 0 ||
            json_object_set_new(schema, "description",
                                json_string_sanitized(buf_str(&desc), desc.len)) < 0 ||
            json_object_set_new(schema, "parameters", TAKE_PTR(params)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(schema);
        return 0;
}
