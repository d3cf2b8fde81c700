/* SPDX-License-Identifier: MIT */
#include "../lib/ptc-test.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/fd-util.h"
#include "basic/path-util.h"
#include "basic/strv.h"
#include "basic/utf8.h"
#include "core/registry/registry-internal.h"
#include "core/registry/registry.h"
#include "core/stubs/stubs.h"

extern char **environ;

#define PYTHON "/usr/bin/python3"

static char tmpdir[] = "/tmp/ptc-test-stubs-XXXXXX";

static int group_setup(void **state)
{
        (void) state;
        return mkdtemp(tmpdir) ? 0 : -1;
}

static int group_teardown(void **state)
{
        (void) state;
        return rm_rf(tmpdir) < 0 ? -1 : 0;
}

/* ---- fake tools: the seed's seven schemas, and some hostile ones ---- */

#define DEF(n, params, ret)                        \
        static const struct tool_def def_##n = {   \
                .name = #n,                        \
                .description = "The " #n " tool.", \
                .parameters_json = params,         \
                .returns = ret,                    \
        }

DEF(web_search,
    "{\"type\":\"object\",\"properties\":{\"query\":{\"type\":\"string\"},"
    "\"limit\":{\"type\":\"integer\",\"default\":5}},\"required\":[\"query\"]}",
    "Returns {\"data\": {\"web\": [...]}}");
DEF(web_extract,
    "{\"type\":\"object\",\"properties\":{\"urls\":{\"type\":\"array\",\"items\":{\"type\":"
    "\"string\"}}},\"required\":[\"urls\"]}",
    "Returns {\"results\": [...]}");
DEF(read_file,
    "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\",\"description\":"
    "\"File to read\"},\"offset\":{\"type\":\"integer\",\"default\":1},\"limit\":{\"type\":"
    "\"integer\",\"default\":500}},\"required\":[\"path\"]}",
    "Lines are 1-indexed. Returns {\"content\": \"...\", \"total_lines\": N}");
DEF(write_file,
    "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"content\":{\"type\":"
    "\"string\"}},\"required\":[\"path\",\"content\"]}",
    "Always overwrites the entire file.");
DEF(search_files,
    "{\"type\":\"object\",\"properties\":{\"pattern\":{\"type\":\"string\"},"
    "\"target\":{\"type\":\"string\",\"default\":\"content\"},"
    "\"path\":{\"type\":\"string\",\"default\":\".\"},\"file_glob\":{\"type\":\"string\"},"
    "\"limit\":{\"type\":\"integer\",\"default\":50},\"offset\":{\"type\":\"integer\","
    "\"default\":0},\"output_mode\":{\"type\":\"string\",\"default\":\"content\"},"
    "\"context\":{\"type\":\"integer\",\"default\":0}},\"required\":[\"pattern\"]}",
    "Returns {\"matches\": [...]}");
DEF(patch,
    "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"old_string\":"
    "{\"type\":\"string\"},\"new_string\":{\"type\":\"string\"},\"replace_all\":{\"type\":"
    "\"boolean\",\"default\":false},\"mode\":{\"type\":\"string\",\"default\":\"replace\"},"
    "\"patch\":{\"type\":\"string\"}}}",
    "Replaces old_string with new_string in the file.");
DEF(terminal,
    "{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"},\"timeout\":"
    "{\"type\":\"integer\"},\"workdir\":{\"type\":\"string\"}},\"required\":[\"command\"]}",
    "Foreground only. Returns {\"output\": \"...\", \"exit_code\": N}");

static const struct tool_def *const seven[] = {
        &def_web_search,   &def_web_extract, &def_read_file, &def_write_file,
        &def_search_files, &def_patch,       &def_terminal,
};

/* Optional before required in the schema; every type; defaults of every kind. */
DEF(types,
    "{\"type\":\"object\",\"properties\":{"
    "\"s\":{\"type\":\"string\",\"default\":\"it's \\\"q\\\" \xc3\xa9\\n\\\\ \\u202e\\u0001\"},"
    "\"req\":{\"type\":\"string\"},"
    "\"i\":{\"type\":\"integer\",\"default\":-7},"
    "\"n\":{\"type\":\"number\",\"default\":1.5},"
    "\"whole\":{\"type\":\"number\",\"default\":2.0},"
    "\"big\":{\"type\":\"number\",\"default\":1e300},"
    "\"b\":{\"type\":\"boolean\",\"default\":true},"
    "\"nul\":{\"type\":\"string\",\"default\":null},"
    "\"a\":{\"type\":\"array\",\"default\":[1,\"x\",null,{\"k\":false}]},"
    "\"o\":{\"type\":\"object\",\"default\":{\"a\":[1]}},"
    "\"u\":{\"type\":[\"string\",\"null\"]},"
    "\"x\":{},"
    "\"t\":true,"
    "\"deep\":{\"type\":\"array\",\"default\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]"
    "]]]]]]]]]]]]]]]]]]]]]]}"
    "},\"required\":[\"req\"]}",
    NULL);

/* Names that are keywords, invalid, or would shadow the module's own names. */
static const struct tool_def def_mangle = {
        .name = "my-tool",
        .description = "Mangling.",
        .parameters_json = "{\"type\":\"object\",\"properties\":{\"class\":{\"type\":\"string\"},"
                           "\"from\":{},\"my-param\":{},\"2fast\":{},\"_call\":{},"
                           "\"\xc3\xbcn\xc3\xaf\":{},\"class_\":{},\"None\":{},\"__debug__\":{}}}",
};
static const struct tool_def def_json = {.name = "json", .parameters_json = "{}"};
static const struct tool_def def_call = {.name = "_call", .parameters_json = "{}"};
static const struct tool_def def_dunder = {.name = "__builtins__", .parameters_json = "{}"};
static const struct tool_def def_ab1 = {.name = "a-b", .parameters_json = "{}"};
static const struct tool_def def_ab2 = {.name = "a_b", .parameters_json = "{}"};
static const struct tool_def def_bad_utf8 = {
        .name = "bad\xff\x01name",
        .description = "Bytes \xff\xfe, control \x01\x7f, CR \r, bidi \xe2\x80\xae, end \\",
        .returns = "Returns \xff junk",
        .parameters_json = "{\"type\":\"object\",\"properties\":{\"p\":{\"description\":"
                           "\"multi\\nline \\\"\\\"\\\" \\\\\"}}}",
};

/* Quotes at both ends of a docstring must neither close nor merge with the delimiters. */
static const struct tool_def def_quote = {
        .name = "quote",
        .description = "\"\"start and end\"\"",
        .parameters_json = "{}",
};

/* The docstring the Python test compares against: triple quotes, backslashes, unicode. */
#define DOC_TEXT "Says \"\"\"hi\"\"\" with \\ and \\n, caf\xc3\xa9 \xe2\x80\x94 \"end\""
static const struct tool_def def_doc = {
        .name = "doc",
        .description = DOC_TEXT,
        .parameters_json = "{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\","
                           "\"description\":\"a \\\"\\\"\\\" param\"}}}",
};

/* Tools the fake server in the Python test answers. */
static const struct tool_def def_echo = {
        .name = "echo",
        .description = "Echo the arguments.",
        .parameters_json = "{\"type\":\"object\",\"properties\":{"
                           "\"n\":{\"type\":\"integer\",\"default\":1},"
                           "\"text\":{\"type\":\"string\"},"
                           "\"class\":{\"type\":\"string\"},"
                           "\"opts\":{\"type\":\"object\",\"default\":{\"a\":[1]}}},"
                           "\"required\":[\"text\"]}",
};
static const struct tool_def def_slow = {.name = "slow", .parameters_json = "{}"};
static const struct tool_def def_fail = {.name = "fail", .parameters_json = "{}"};
static const struct tool_def def_strres = {.name = "strres", .parameters_json = "{}"};
static const struct tool_def def_drop = {.name = "drop", .parameters_json = "{}"};
static const struct tool_def def_nullid = {.name = "nullid", .parameters_json = "{}"};

/* ---- helpers ---- */

static struct registry *reg_from(const struct tool_def *const *defs, size_t n,
                                 const char *const *enabled)
{
        struct registry *r = NULL;
        struct diag d = {};

        assert_int_equal(registry_new_from_defs(defs, n, (char *const *) enabled, &r, NULL, &d), 0);
        assert_non_null(r);
        return r;
}

static char *generate(const struct registry *r, const char *module)
{
        char *text = NULL;

        assert_int_equal(stubs_generate(r, module, &text), 0);
        assert_non_null(text);
        assert_true(utf8_is_valid(text, strlen(text)));
        return text;
}

static bool have_python(void)
{
        return access(PYTHON, X_OK) == 0;
}

/* Run python3 with @args; its stdout goes to our stderr so TAP output stays clean. */
static int run_python(const char *const *args)
{
        posix_spawn_file_actions_t fa;
        const char *argv[16] = {PYTHON, "-B"};
        size_t n = 2;
        pid_t pid;
        int status;

        for (size_t i = 0; args[i] && n < ELEMENTSOF(argv) - 1; i++)
                argv[n++] = args[i];
        argv[n] = NULL;
        assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
        assert_int_equal(posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO), 0);
        assert_int_equal(posix_spawn(&pid, PYTHON, &fa, NULL, (char *const *) argv, environ), 0);
        (void) posix_spawn_file_actions_destroy(&fa);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static char *write_tmp(const char *name, const char *text)
{
        char *p = path_join(tmpdir, name);

        assert_non_null(p);
        assert_int_equal(write_file_atomic(p, text, strlen(text), 0600), 0);
        return p;
}

static void assert_python_parses(const char *text)
{
        _cleanup_free_ char *p = NULL;

        if (!have_python())
                return;
        p = write_tmp("parse_me.py", text);
        assert_int_equal(run_python((const char *const[]){
                                 "-c",
                                 "import ast, sys; "
                                 "ast.parse(open(sys.argv[1], encoding='utf-8').read())",
                                 p, NULL}),
                         0);
}

static void assert_contains(const char *hay, const char *needle)
{
        if (!strstr(hay, needle)) {
                /* cmocka truncates long messages: the whole text goes to stderr. */
                fprintf(stderr, "expected to find:\n%s\nin:\n%s\n", needle, hay);
                fail_msg("expected text not found");
        }
}

static void assert_not_contains(const char *hay, const char *needle)
{
        if (strstr(hay, needle)) {
                fprintf(stderr, "did not expect:\n%s\nin:\n%s\n", needle, hay);
                fail_msg("unexpected text found");
        }
}

/* ---- registry ---- */

static void test_tool_known_names(void **state)
{
        (void) state;
        assert_int_equal(strv_length((char *const *) tool_known_names), 7);
        assert_true(strv_contains((char *const *) tool_known_names, "web_extract"));
        assert_true(strv_contains((char *const *) tool_known_names, "patch"));
}

static void test_registry_new_default(void **state)
{
        _cleanup_registry_ struct registry *r = NULL;
        _cleanup_strv_free_ char **w = NULL;
        _cleanup_free_ char *names = NULL;
        struct diag d = {};

        (void) state;
        assert_int_equal(registry_new(NULL, NULL, &r, &w, &d), 0);
        names = registry_names(r);
        /* No search provider: web_search is not offered. */
        assert_string_equal(names,
                            "patch, read_file, search_files, terminal, web_extract, write_file");
        assert_null(w);
        for (size_t i = 0; i < registry_count(r); i++) {
                const struct tool *t = registry_get(r, i);

                assert_true(json_is_object(t->parameters));
                assert_non_null(t->run);
                assert_ptr_equal(registry_find(r, t->name), t);
        }
        assert_null(registry_get(r, registry_count(r)));
}

static void test_registry_new_explicit(void **state)
{
        _cleanup_registry_ struct registry *r = NULL;
        _cleanup_strv_free_ char **w = NULL;
        _cleanup_free_ char *names = NULL;
        const char *enabled[] = {"terminal", "read_file", NULL};
        struct diag d = {};

        (void) state;
        assert_int_equal(registry_new(NULL, (char *const *) enabled, &r, &w, &d), 0);
        names = registry_names(r);
        assert_string_equal(names, "read_file, terminal");
        assert_null(w);
        assert_null(registry_find(r, "write_file"));
        assert_string_equal(registry_find(r, "terminal")->name, "terminal");
}

static void test_registry_new_empty(void **state)
{
        _cleanup_registry_ struct registry *r = NULL;
        _cleanup_free_ char *names = NULL;
        const char *enabled[] = {NULL};

        (void) state;
        /* Fail-closed: an explicit empty list is no tools, not all of them. */
        assert_int_equal(registry_new(NULL, (char *const *) enabled, &r, NULL, NULL), 0);
        assert_int_equal(registry_count(r), 0);
        names = registry_names(r);
        assert_string_equal(names, "");
        assert_null(registry_find(r, "read_file"));
}

static void test_registry_new_unknown(void **state)
{
        struct registry *r = NULL;
        const char *enabled[] = {"read_file", "foo", NULL};
        struct diag d = {};

        (void) state;
        assert_int_equal(registry_new(NULL, (char *const *) enabled, &r, NULL, &d), -EINVAL);
        assert_null(r);
        assert_contains(d.message, "unknown tool 'foo' (known: ");
        assert_contains(d.message, "patch, read_file, search_files, terminal, web_extract, "
                                   "web_search, write_file)");
}

static void test_registry_new_web_search_needs_provider(void **state)
{
        struct registry *r = NULL;
        const char *enabled[] = {"read_file", "web_search", NULL};
        struct diag d = {};

        (void) state;
        assert_int_equal(registry_new(NULL, (char *const *) enabled, &r, NULL, &d), -EINVAL);
        assert_null(r);
        assert_contains(d.message, "web_search needs a search provider: set web.search_provider");
}

static void test_registry_new_web_search_with_provider(void **state)
{
        _cleanup_registry_ struct registry *r = NULL;
        _cleanup_registry_ struct registry *r2 = NULL;
        _cleanup_strv_free_ char **w = NULL;
        _cleanup_free_ char *names = NULL;
        struct ptc_config c;
        const char *enabled[] = {"web_search", NULL};
        struct diag d = {};

        (void) state;
        assert_int_equal(config_init(&c), 0);
        c.search_provider = strdup("searxng");
        c.searxng_url = strdup("http://127.0.0.1:9");
        assert_non_null(c.search_provider);
        assert_non_null(c.searxng_url);
        assert_int_equal(registry_new(&c, NULL, &r, &w, &d), 0);
        names = registry_names(r);
        assert_string_equal(names, "patch, read_file, search_files, terminal, web_extract, "
                                   "web_search, write_file");
        assert_null(w);
        assert_int_equal(registry_new(&c, (char *const *) enabled, &r2, NULL, &d), 0);
        assert_int_equal(registry_count(r2), 1);

        /* Configured but without its URL: left out of the default set with a warning. */
        free(c.searxng_url);
        c.searxng_url = NULL;
        r = registry_free(r);
        w = strv_free(w);
        assert_int_equal(registry_new(&c, NULL, &r, &w, &d), 0);
        assert_null(registry_find(r, "web_search"));
        assert_int_equal(strv_length(w), 1);
        assert_contains(w[0], "web.search_provider is 'searxng' but web.searxng_url");
        config_release(&c);
}

static void test_registry_new_duplicate(void **state)
{
        _cleanup_registry_ struct registry *r = NULL;
        _cleanup_free_ char *names = NULL;
        const char *enabled[] = {"terminal", "terminal", "terminal", NULL};

        (void) state;
        assert_int_equal(registry_new(NULL, (char *const *) enabled, &r, NULL, NULL), 0);
        names = registry_names(r);
        assert_string_equal(names, "terminal");
}

static void test_registry_new_from_defs_bad(void **state)
{
        static const struct tool_def bad_json = {.name = "bad", .parameters_json = "{\"a\":"};
        static const struct tool_def not_obj = {.name = "arr", .parameters_json = "[]"};
        static const struct tool_def no_name = {.name = "", .parameters_json = "{}"};
        const struct tool_def *defs[2];
        struct registry *r = NULL;
        struct diag d = {};

        (void) state;
        defs[0] = &bad_json;
        assert_int_equal(registry_new_from_defs(defs, 1, NULL, &r, NULL, &d), -EINVAL);
        assert_contains(d.message, "tool 'bad': invalid parameters schema");
        assert_null(r);

        defs[0] = &not_obj;
        assert_int_equal(registry_new_from_defs(defs, 1, NULL, &r, NULL, &d), -EINVAL);
        assert_contains(d.message, "not a JSON object");

        defs[0] = &no_name;
        assert_int_equal(registry_new_from_defs(defs, 1, NULL, &r, NULL, &d), -EINVAL);

        defs[0] = defs[1] = &def_echo;
        assert_int_equal(registry_new_from_defs(defs, 2, NULL, &r, NULL, &d), -EINVAL);
        assert_contains(d.message, "'echo' is defined twice");
        assert_null(r);
}

static void test_registry_new_from_defs_sorted(void **state)
{
        _cleanup_registry_ struct registry *r = reg_from(seven, ELEMENTSOF(seven), NULL);
        _cleanup_free_ char *names = registry_names(r);

        (void) state;
        assert_string_equal(names, "patch, read_file, search_files, terminal, web_extract, "
                                   "web_search, write_file");
        assert_string_equal(registry_get(r, 0)->returns,
                            "Replaces old_string with new_string in the file.");
        assert_string_equal(registry_find(r, "web_search")->description, "The web_search tool.");
}

/* ---- stubs ---- */

static void test_stubs_generate_signatures(void **state)
{
        _cleanup_registry_ struct registry *r = reg_from(seven, ELEMENTSOF(seven), NULL);
        _cleanup_free_ char *m = generate(r, "hermes_tools");
        const char *order[] = {"\ndef patch(",     "\ndef read_file(",   "\ndef search_files(",
                               "\ndef terminal(",  "\ndef web_extract(", "\ndef web_search(",
                               "\ndef write_file("};

        (void) state;
        assert_contains(m, "\ndef read_file(path: str, offset: int = 1, limit: int = 500):\n");
        assert_contains(m, "\ndef search_files(pattern: str, target: str = \"content\", "
                           "path: str = \".\", file_glob: str = None, limit: int = 50, "
                           "offset: int = 0, output_mode: str = \"content\", "
                           "context: int = 0):\n");
        assert_contains(m, "\ndef patch(path: str = None, old_string: str = None, "
                           "new_string: str = None, replace_all: bool = False, "
                           "mode: str = \"replace\", patch: str = None):\n");
        assert_contains(m, "\ndef terminal(command: str, timeout: int = None, "
                           "workdir: str = None):\n");
        assert_contains(m, "\ndef web_extract(urls: list):\n");
        assert_contains(m, "\ndef web_search(query: str, limit: int = 5):\n");
        assert_contains(m, "\ndef write_file(path: str, content: str):\n");

        /* Every parameter is sent, under its JSON name. */
        assert_contains(m, "    return _call(\"read_file\", {\"path\": path, \"offset\": offset, "
                           "\"limit\": limit})\n");
        assert_contains(m, "    return _call(\"terminal\", {\"command\": command, "
                           "\"timeout\": timeout, \"workdir\": workdir})\n");

        /* Docstring: description, parameters. */
        assert_contains(m, "    \"\"\"The read_file tool.\n\n    Args:\n"
                           "        path: File to read\n        offset\n        limit\n"
                           "    \"\"\"\n");

        /* Sorted by name. */
        for (size_t i = 1; i < ELEMENTSOF(order); i++)
                assert_true(strstr(m, order[i - 1]) < strstr(m, order[i]));

        /* Transport and helpers. */
        assert_contains(m, "import json, os, _socket, _thread, time, itertools\n");
        assert_contains(m, "os.environ.get(\"PTC_RPC_SOCKET\")");
        assert_contains(m, "os.environ.get(\"PTC_RPC_TOKEN\")");
        assert_contains(m, "socket.AF_UNIX");
        assert_contains(m, "_thread._local()");
        assert_contains(m, "os.register_at_fork(after_in_child=");
        assert_contains(m, "\ndef _call(tool, args):\n");
        assert_contains(m, "\ndef json_parse(text):\n");
        assert_contains(m, "\ndef shell_quote(s):\n");
        assert_contains(m, "\ndef retry(fn, max_attempts=3, delay=2):\n");
        assert_contains(m, "__all__ = [\n    \"patch\",\n");
        assert_contains(m, "    \"write_file\",\n    \"json_parse\",\n    \"shell_quote\",\n"
                           "    \"retry\",\n]\n");
        /* Non-ASCII on purpose (the em dash), so writers must use UTF-8. */
        assert_contains(m, "\xe2\x80\x94");
        assert_true(strncmp(m, "\"\"\"hermes_tools: ", 17) == 0);

        assert_python_parses(m);
}

static void test_stubs_generate_types_and_defaults(void **state)
{
        const struct tool_def *defs[] = {&def_types};
        _cleanup_registry_ struct registry *r = reg_from(defs, 1, NULL);
        _cleanup_free_ char *m = generate(r, "t");

        (void) state;
        assert_contains(m, "\ndef types(req: str, "
                           "s: str = \"it's \\\"q\\\" \xc3\xa9\\n\\\\ \\u202e\\x01\", "
                           "i: int = -7, n: float = 1.5, whole: float = 2.0, "
                           "big: float = 1e+300, b: bool = True, nul: str = None, "
                           "a: list = None, o: dict = None, u=None, x=None, t=None, "
                           "deep: list = None):\n");
        /* Mutable defaults are built per call. */
        assert_contains(m, "    if a is None:\n        a = [1, \"x\", None, {\"k\": False}]\n");
        assert_contains(m, "    if o is None:\n        o = {\"a\": [1]}\n");
        /* Too deep to render: stays None. */
        assert_not_contains(m, "if deep is None");
        assert_contains(m, "return _call(\"types\", {\"req\": req, \"s\": s, ");
        assert_python_parses(m);
}

static void test_stubs_generate_mangle(void **state)
{
        const struct tool_def *defs[] = {&def_mangle, &def_json, &def_call,
                                         &def_dunder, &def_ab1,  &def_ab2};
        _cleanup_registry_ struct registry *r = reg_from(defs, ELEMENTSOF(defs), NULL);
        _cleanup_free_ char *m = generate(r, "t");
        _cleanup_strv_free_ char **names = NULL;

        (void) state;
        assert_contains(m, "\ndef my_tool(class_: str = None, from_=None, my_param=None, "
                           "_2fast=None, _call_=None, _n_=None, class__=None, None_=None, "
                           "__debug___=None):\n");
        assert_contains(m, "return _call(\"my-tool\", {\"class\": class_, \"from\": from_, "
                           "\"my-param\": my_param, \"2fast\": _2fast, \"_call\": _call_, "
                           "\"\xc3\xbcn\xc3\xaf\": _n_, \"class_\": class__, \"None\": None_, "
                           "\"__debug__\": __debug___})\n");
        assert_contains(m, "\ndef json_():\n");
        assert_contains(m, "return _call(\"json\", {})\n");
        assert_contains(m, "\ndef _call_():\n");
        assert_contains(m, "\ndef __builtins___():\n");
        assert_contains(m, "\ndef a_b():\n    \"\"\"Call the tool a-b.\"\"\"\n");
        assert_contains(m, "\ndef a_b_():\n    \"\"\"Call the tool a_b.\"\"\"\n");

        assert_int_equal(stubs_function_names(r, &names), 0);
        assert_int_equal(strv_length(names), 6);
        assert_string_equal(names[0], "__builtins___");
        assert_string_equal(names[1], "_call_");
        assert_string_equal(names[2], "a_b");
        assert_string_equal(names[3], "a_b_");
        assert_string_equal(names[4], "json_");
        assert_string_equal(names[5], "my_tool");
        assert_python_parses(m);
}

static void test_stubs_generate_hostile(void **state)
{
        const struct tool_def *defs[] = {&def_bad_utf8, &def_doc, &def_quote};
        _cleanup_registry_ struct registry *r = reg_from(defs, ELEMENTSOF(defs), NULL);
        _cleanup_free_ char *m = generate(r, "evil\"\"\"name\\");
        _cleanup_free_ char *schema_text = NULL;
        json_auto_t *schema = NULL;
        struct ptc_config c = {.timeout = 300, .max_tool_calls = 50, .max_stdout_bytes = 50000};

        (void) state;
        /* Invalid bytes become U+FFFD escapes, controls and bidi marks become escapes. */
        assert_contains(m, "\ndef bad__name(p=None):\n");
        assert_contains(m, "return _call(\"bad\\ufffd\\x01name\", {\"p\": p})");
        assert_contains(m, "Bytes \\ufffd\\ufffd, control \\x01\\x7f, CR \\r, bidi \\u202e, "
                           "end \\\\\n");
        assert_contains(m, "        p: multi\n            line \\\"\\\"\" \\\\\n");
        /* The triple quotes of the description never close the docstring. */
        assert_contains(m, "Says \\\"\\\"\"hi\\\"\\\"\" with \\\\ and \\\\n, caf\xc3\xa9 "
                           "\xe2\x80\x94 \"end\"\n");
        assert_contains(m, "\ndef quote():\n    \"\"\"\\\"\"start and end\\\"\\\"\"\"\"\n");
        assert_python_parses(m);

        /* The schema must stay valid JSON text even with invalid bytes in a tool's texts. */
        assert_int_equal(schema_build(r, PTC_MODE_PROJECT, &c, &schema), 0);
        schema_text = json_dumps(schema, 0);
        assert_non_null(schema_text);
        assert_contains(json_string_value(json_object_get(schema, "description")),
                        "Returns \xef\xbf\xbd junk");
}

static void test_stubs_generate_empty(void **state)
{
        const char *none[] = {NULL};
        _cleanup_registry_ struct registry *r = reg_from(seven, ELEMENTSOF(seven), none);
        _cleanup_free_ char *m = generate(r, NULL);

        (void) state;
        assert_int_equal(registry_count(r), 0);
        assert_contains(m, "\ndef _call(tool, args):\n");
        assert_contains(m, "__all__ = [\n    \"json_parse\",\n");
        assert_not_contains(m, "return _call(");
        assert_contains(m, "hermes_tools: ");
        assert_python_parses(m);
}

static void test_stubs_generate_subset(void **state)
{
        const char *enabled[] = {"terminal", "read_file", NULL};
        _cleanup_registry_ struct registry *r = reg_from(seven, ELEMENTSOF(seven), enabled);
        _cleanup_free_ char *m = generate(r, "hermes_tools");

        (void) state;
        assert_contains(m, "\ndef read_file(");
        assert_contains(m, "\ndef terminal(");
        assert_not_contains(m, "def web_search(");
        assert_not_contains(m, "def write_file(");
        assert_not_contains(m, "def patch(");
}

/*
 * The module against a fake ptc: concurrent threads on their own connections,
 * a forked child, errors, string results, a dropped connection, the helpers.
 */
static const char python_roundtrip[] =
        "import json, os, socketserver, sys, threading, time, warnings\n"
        "warnings.simplefilter('ignore')\n"
        "d = sys.argv[1]\n"
        "path = os.path.join(d, 'rpc.sock')\n"
        "seen, conns, lock = [], [0], threading.Lock()\n"
        "meet = threading.Barrier(10, timeout=20)  # the ten 'slow' calls, all in flight\n"
        "class Handler(socketserver.StreamRequestHandler):\n"
        "    def handle(self):\n"
        "        with lock:\n"
        "            conns[0] += 1\n"
        "            me = conns[0]\n"
        "        for line in iter(lambda: self.rfile.readline(1 << 20), b''):\n"
        "            if not line.endswith(b'\\n'):\n"
        "                return  # over the frame cap: drop the connection, as ptc does\n"
        "            assert line.count(b'\\n') == 1\n"
        "            req = json.loads(line)\n"
        "            with lock:\n"
        "                seen.append((me, req['id']))\n"
        "            rid, tool = req['id'], req['tool']\n"
        "            if req.get('token') != 'tok-\\u00e9':\n"
        "                resp = {'id': rid, 'error': 'bad token'}\n"
        "            elif tool == 'slow':\n"
        "                meet.wait()  # a barrier, not a stopwatch: serialized calls break it\n"
        "                resp = {'id': rid, 'result': {'ok': True}}\n"
        "            elif tool == 'fail':\n"
        "                resp = {'id': rid, 'error': 'boom'}\n"
        "            elif tool == 'strres':\n"
        "                resp = {'id': rid, 'result': json.dumps({'inner': 1})}\n"
        "            elif tool == 'drop':\n"
        "                return\n"
        "            elif tool == 'nullid':\n"
        "                self.wfile.write(b'{\"id\": null, \"error\": \"bad request\"}\\n')\n"
        "                return\n"
        "            else:\n"
        "                resp = {'id': rid, 'result': {'ok': True, 'args': req['args'],\n"
        "                                              'tool': tool, 'conn': me,\n"
        "                                              'pad': 'x' * (3 << 20)}}\n"
        "            self.wfile.write(json.dumps(resp).encode() + b'\\n')\n"
        "class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):\n"
        "    daemon_threads = True\n"
        "srv = Server(path, Handler)\n"
        "threading.Thread(target=srv.serve_forever, daemon=True).start()\n"
        "os.environ['PTC_RPC_SOCKET'] = path\n"
        "os.environ['PTC_RPC_TOKEN'] = 'tok-\\u00e9'\n"
        "sys.path.insert(0, d)\n"
        "import ptc_test_tools as m\n"
        "r = m.echo('hi')\n"
        "assert r['ok'] and r['tool'] == 'echo', r\n"
        "assert r['args'] == {'text': 'hi', 'n': 1, 'class': None, 'opts': {'a': [1]}}, r\n"
        "main_conn = r['conn']\n"
        "r = m.echo(text='x\\u2014y', n=5, class_='c')\n"
        "assert r['args']['text'] == 'x\\u2014y' and r['args']['class'] == 'c', r['args']\n"
        "assert r['args']['n'] == 5 and r['conn'] == main_conn\n"
        "assert m.fail() == {'error': 'boom'}\n"
        "assert m.strres() == {'inner': 1}\n"
        "results = [None] * 10\n"
        "def worker(i):\n"
        "    results[i] = (m.echo('t%d' % i), m.slow())\n"
        "ths = [threading.Thread(target=worker, args=(i,)) for i in range(10)]\n"
        "for t in ths: t.start()\n"
        "for t in ths: t.join()\n"
        "for i, (e, s) in enumerate(results):\n"
        "    assert e['args']['text'] == 't%d' % i and s == {'ok': True}, (i, e, s)\n"
        "assert len({e['conn'] for e, s in results} | {main_conn}) == 11\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    try:\n"
        "        r = m.echo('child')\n"
        "        ok = r['args']['text'] == 'child' and r['conn'] != main_conn\n"
        "    except BaseException:\n"
        "        ok = False\n"
        "    os._exit(0 if ok else 1)\n"
        "_, st = os.waitpid(pid, 0)\n"
        "assert os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0, st\n"
        "assert m.echo('after')['conn'] == main_conn\n"
        "try:\n"
        "    m.drop()\n"
        "    raise AssertionError('drop did not raise')\n"
        "except RuntimeError as e:\n"
        "    assert 'ptc closed the tool connection' in str(e), e\n"
        "again = m.echo('again')['conn']\n"
        "assert again != main_conn\n"
        "try:\n"
        "    m.echo('x' * (4 << 20))\n"
        "    raise AssertionError('an over-long request did not raise')\n"
        "except RuntimeError as e:\n"
        "    assert 'the request was too large' in str(e), e\n"
        "after_big = m.echo('ok')\n"
        "assert after_big['args']['text'] == 'ok' and after_big['conn'] != again\n"
        "assert m.nullid() == {'error': 'bad request'}\n"
        "assert m.echo('fresh')['conn'] != after_big['conn']\n"
        "with lock:\n"
        "    assert len(seen) == len(set(seen)), seen\n"
        "expected = open(os.path.join(d, 'doc.txt'), encoding='utf-8').read()\n"
        "assert m.doc.__doc__.startswith(expected + '\\n'), repr(m.doc.__doc__)\n"
        "assert m.json_parse('\\ufeff{\"a\": \"x\\ty\"}') == {'a': 'x\\ty'}\n"
        "assert m.json_parse(b'\\xef\\xbb\\xbf{\"a\": 1}') == {'a': 1}\n"
        "assert m.json_parse(bytearray(b'[1]')) == [1]\n"
        "assert m.shell_quote(\"it's\") == \"'it'\\\"'\\\"'s'\"\n"
        "assert m.shell_quote('') == \"''\"\n"
        "calls = []\n"
        "def flaky():\n"
        "    calls.append(1)\n"
        "    if len(calls) < 3:\n"
        "        raise ValueError('x')\n"
        "    return 42\n"
        "assert m.retry(flaky, delay=0) == 42 and len(calls) == 3\n"
        "try:\n"
        "    m.retry(lambda: 1 / 0, max_attempts=2, delay=0)\n"
        "    raise AssertionError('retry did not re-raise')\n"
        "except ZeroDivisionError:\n"
        "    pass\n"
        "assert set(m.__all__) == {'doc', 'drop', 'echo', 'fail', 'nullid', 'slow', 'strres',\n"
        "                          'json_parse', 'shell_quote', 'retry'}, m.__all__\n"
        "print('roundtrip ok')\n";

static void test_stubs_generate_python_roundtrip(void **state)
{
        const struct tool_def *defs[] = {&def_echo, &def_slow,   &def_fail, &def_strres,
                                         &def_drop, &def_nullid, &def_doc};
        _cleanup_registry_ struct registry *r = reg_from(defs, ELEMENTSOF(defs), NULL);
        _cleanup_free_ char *m = generate(r, "ptc_test_tools");
        _cleanup_free_ char *mod = NULL, *script = NULL, *doc = NULL, *sock = NULL;

        (void) state;
        if (!have_python())
                skip();
        mod = write_tmp("ptc_test_tools.py", m);
        script = write_tmp("roundtrip.py", python_roundtrip);
        doc = write_tmp("doc.txt", DOC_TEXT);
        assert_int_equal(run_python((const char *const[]){script, tmpdir, NULL}), 0);
        sock = path_join(tmpdir, "rpc.sock");
        (void) unlink(sock);
}

/* ---- schema ---- */

static struct ptc_config test_config(void)
{
        static char module[] = "hermes_tools";

        return (struct ptc_config){
                .timeout = 300,
                .max_tool_calls = 50,
                .max_stdout_bytes = 50000,
                .module_name = module,
        };
}

static json_t *schema_for(const char *const *enabled, enum ptc_mode mode,
                          const struct ptc_config *c)
{
        _cleanup_registry_ struct registry *r = reg_from(seven, ELEMENTSOF(seven), enabled);
        json_t *s = NULL;

        assert_int_equal(schema_build(r, mode, c, &s), 0);
        assert_non_null(s);
        return s;
}

static const char *desc_of(json_t *s)
{
        const char *d = json_string_value(json_object_get(s, "description"));

        assert_non_null(d);
        return d;
}

static const char *code_desc_of(json_t *s)
{
        json_t *code = json_object_get(
                json_object_get(json_object_get(s, "parameters"), "properties"), "code");
        const char *d = json_string_value(json_object_get(code, "description"));

        assert_non_null(d);
        return d;
}

static void test_schema_build_shape(void **state)
{
        struct ptc_config c = test_config();
        json_auto_t *s = schema_for(NULL, PTC_MODE_PROJECT, &c);
        json_t *params = json_object_get(s, "parameters");
        json_t *props = json_object_get(params, "properties");
        json_t *req = json_object_get(params, "required");
        const char *d = desc_of(s);

        (void) state;
        assert_string_equal(json_string_value(json_object_get(s, "name")), "execute_code");
        assert_int_equal(json_object_size(s), 3);
        assert_string_equal(json_string_value(json_object_get(params, "type")), "object");
        assert_int_equal(json_object_size(props), 1);
        assert_string_equal(
                json_string_value(json_object_get(json_object_get(props, "code"), "type")),
                "string");
        assert_int_equal(json_array_size(req), 1);
        assert_string_equal(json_string_value(json_array_get(req, 0)), "code");

        for (size_t i = 0; tool_known_names[i]; i++) {
                char call[64];

                (void) snprintf(call, sizeof(call), "  %s(", tool_known_names[i]);
                assert_contains(d, call);
        }
        assert_true(strncmp(d, "Run a Python script that can call tools programmatically. ", 58) ==
                    0);
        assert_not_contains(d, "Hermes");
        assert_contains(d, "Available via `from hermes_tools import ...`:\n\n"
                           "  patch(path: str = None, ");
        assert_contains(d, "  read_file(path: str, offset: int = 1, limit: int = 500) -> dict\n"
                           "    Lines are 1-indexed. Returns {\"content\": \"...\", "
                           "\"total_lines\": N}\n");
        assert_contains(d, "  terminal(command: str, timeout: int = None, workdir: str = None) "
                           "-> dict\n    Foreground only.");
        assert_contains(d, "Limits: 5-minute timeout, 50KB stdout cap, max 50 tool calls per "
                           "script. terminal() is foreground-only (no background or pty).\n\n");
        assert_contains(d, "Also available (import them from hermes_tools too):\n"
                           "  json_parse(text: str) \xe2\x80\x94 json.loads with strict=False");
        assert_contains(d, "\n  shell_quote(s: str) \xe2\x80\x94 shlex.quote()");
        assert_contains(d, "\n  retry(fn, max_attempts=3, delay=2) \xe2\x80\x94 retry with "
                           "exponential backoff for transient failures");
        assert_string_equal(code_desc_of(s),
                            "Python code to execute. Import tools with `from hermes_tools import "
                            "web_search, terminal, ...` and print your final result to stdout.");
}

static void test_schema_build_all_equals_default(void **state)
{
        struct ptc_config c = test_config();
        json_auto_t *dflt = schema_for(NULL, PTC_MODE_PROJECT, &c);
        json_auto_t *all = schema_for(tool_known_names, PTC_MODE_PROJECT, &c);

        (void) state;
        assert_true(json_equal(dflt, all));
}

static void test_schema_build_subset(void **state)
{
        const char *two[] = {"terminal", "read_file", NULL};
        const char *one[] = {"write_file", NULL};
        const char *files[] = {"read_file", "write_file", "patch", NULL};
        struct ptc_config c = test_config();
        json_auto_t *s2 = schema_for(two, PTC_MODE_PROJECT, &c);
        json_auto_t *s1 = schema_for(one, PTC_MODE_PROJECT, &c);
        json_auto_t *s3 = schema_for(files, PTC_MODE_PROJECT, &c);

        (void) state;
        assert_contains(desc_of(s2), "terminal(");
        assert_contains(desc_of(s2), "read_file(");
        assert_not_contains(desc_of(s2), "web_search");
        assert_not_contains(desc_of(s2), "web_extract");
        assert_not_contains(desc_of(s2), "write_file");
        assert_contains(code_desc_of(s2), "`from hermes_tools import terminal, ...`");

        assert_contains(desc_of(s1), "  write_file(path: str, content: str) -> dict\n"
                                     "    Always overwrites the entire file.\n\n");
        for (size_t i = 0; tool_known_names[i]; i++) {
                char call[64];

                if (strcmp(tool_known_names[i], "write_file") == 0)
                        continue;
                /* The cwd and helper sentences name only enabled tools too. */
                assert_not_contains(desc_of(s1), tool_known_names[i]);
                (void) snprintf(call, sizeof(call), "  %s(", tool_known_names[i]);
                assert_not_contains(desc_of(s1), call);
        }
        /* Only about terminal: left out without it. */
        assert_not_contains(desc_of(s1), "foreground-only");

        assert_contains(code_desc_of(s3), "`from hermes_tools import patch, read_file, ...`");
}

static void test_schema_build_empty(void **state)
{
        const char *none[] = {NULL};
        struct ptc_config c = test_config();
        json_auto_t *s = schema_for(none, PTC_MODE_PROJECT, &c);

        (void) state;
        assert_not_contains(code_desc_of(s), "import ,");
        assert_contains(code_desc_of(s), "`from hermes_tools import ...`");
        assert_not_contains(desc_of(s), "import ,");
        assert_contains(desc_of(s), "json_parse");
}

static void test_schema_build_modes(void **state)
{
        struct ptc_config c = test_config();
        json_auto_t *strict = schema_for(NULL, PTC_MODE_STRICT, &c);
        json_auto_t *project = schema_for(NULL, PTC_MODE_PROJECT, &c);
        const char *ds = desc_of(strict), *dp = desc_of(project);
        const char *forbidden[] = {"sandbox", "isolated", "cloud"};
        size_t ls = strlen(ds), lp = strlen(dp);

        (void) state;
        assert_contains(ds, "temp dir");
        assert_contains(ds, "absolute paths");
        /* With the tools they name, the seed's sentences word for word. */
        assert_contains(ds,
                        "\n\nScripts run in their own temp dir, not the session's CWD "
                        "\xe2\x80\x94 use absolute paths (os.path.expanduser('~/.hermes/.env')) "
                        "or terminal()/read_file() for user files.\n\n");
        assert_contains(dp, "\n\nScripts run in the session's working directory with the active "
                            "venv's python, so project deps (pandas, etc.) and relative paths work "
                            "like in terminal().\n\n");
        assert_contains(dp, "json.loads with strict=False; use for terminal() output with control "
                            "chars\n");
        assert_contains(dp, "session");
        assert_contains(dp, "venv");
        assert_not_contains(dp, "temp dir");
        for (size_t i = 0; i < ELEMENTSOF(forbidden); i++) {
                assert_null(strcasestr(ds, forbidden[i]));
                assert_null(strcasestr(dp, forbidden[i]));
                assert_null(strcasestr(code_desc_of(strict), forbidden[i]));
        }
        assert_true((ls > lp ? ls - lp : lp - ls) < 200);
}

/* Without terminal (or read_file), the cwd and helper sentences do not offer them. */
static void test_schema_build_cwd_note_names_enabled_tools(void **state)
{
        const char *rf[] = {"read_file", NULL}, *term[] = {"terminal", NULL};
        const char *search[] = {"search_files", NULL};
        struct ptc_config c = test_config();
        json_auto_t *s_rf = schema_for(rf, PTC_MODE_STRICT, &c);
        json_auto_t *s_term = schema_for(term, PTC_MODE_STRICT, &c);
        json_auto_t *s_none = schema_for(search, PTC_MODE_STRICT, &c);
        json_auto_t *p_none = schema_for(search, PTC_MODE_PROJECT, &c);

        (void) state;
        assert_contains(desc_of(s_rf), "(os.path.expanduser('~/.hermes/.env')) or read_file() for "
                                       "user files.\n\n");
        assert_contains(desc_of(s_term), "(os.path.expanduser('~/.hermes/.env')) or terminal() "
                                         "for user files.\n\n");
        assert_contains(desc_of(s_none), "(os.path.expanduser('~/.hermes/.env')) for user "
                                         "files.\n\n");
        assert_contains(desc_of(p_none), "project deps (pandas, etc.) and relative paths "
                                         "work.\n\n");
        assert_contains(desc_of(p_none), "use for tool output with control chars\n");
        assert_not_contains(desc_of(s_none), "terminal");
        assert_not_contains(desc_of(p_none), "terminal");
        assert_not_contains(desc_of(s_none), "read_file");
}

static void test_schema_build_limits(void **state)
{
        static char module[] = "my_tools";
        struct ptc_config c = test_config();
        json_auto_t *s1 = NULL, *s2 = NULL, *s3 = NULL;

        (void) state;
        c.timeout = 90;
        c.max_stdout_bytes = 20400;
        c.max_tool_calls = 7;
        c.module_name = module;
        s1 = schema_for(NULL, PTC_MODE_PROJECT, &c);
        assert_contains(desc_of(s1), "Limits: 90-second timeout, 20KB stdout cap, max 7 tool "
                                     "calls per script.");
        assert_contains(desc_of(s1), "`from my_tools import ...`");
        assert_contains(desc_of(s1), "import them from my_tools too");
        assert_contains(code_desc_of(s1), "`from my_tools import web_search, terminal, ...`");

        c.timeout = 120;
        c.max_stdout_bytes = 500;
        c.max_tool_calls = 1;
        s2 = schema_for(NULL, PTC_MODE_PROJECT, &c);
        assert_contains(desc_of(s2), "Limits: 2-minute timeout, 500-byte stdout cap, max 1 tool "
                                     "call per script.");

        c.timeout = 2.5;
        c.max_stdout_bytes = 1500;
        s3 = schema_for(NULL, PTC_MODE_PROJECT, &c);
        assert_contains(desc_of(s3), "Limits: 2.5-second timeout, 2KB stdout cap");
}

static void test_schema_build_builtins(void **state)
{
        _cleanup_registry_ struct registry *r = NULL;
        struct ptc_config c = test_config();
        json_auto_t *s = NULL;
        const char *forbidden[] = {"sandbox", "isolated", "cloud"};
        _cleanup_free_ char *m = NULL;

        (void) state;
        assert_int_equal(registry_new(&c, NULL, &r, NULL, NULL), 0);
        assert_int_equal(schema_build(r, PTC_MODE_STRICT, &c, &s), 0);
        for (size_t i = 0; i < ELEMENTSOF(forbidden); i++)
                assert_null(strcasestr(desc_of(s), forbidden[i]));
        assert_contains(desc_of(s), "  read_file(");
        assert_contains(desc_of(s), "  terminal(");
        assert_contains(desc_of(s), "  write_file(");
        assert_contains(code_desc_of(s), "`from hermes_tools import terminal, ...`");
        m = generate(r, "hermes_tools");
        assert_python_parses(m);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_tool_known_names),
                cmocka_unit_test(test_registry_new_default),
                cmocka_unit_test(test_registry_new_explicit),
                cmocka_unit_test(test_registry_new_empty),
                cmocka_unit_test(test_registry_new_unknown),
                cmocka_unit_test(test_registry_new_web_search_needs_provider),
                cmocka_unit_test(test_registry_new_web_search_with_provider),
                cmocka_unit_test(test_registry_new_duplicate),
                cmocka_unit_test(test_registry_new_from_defs_bad),
                cmocka_unit_test(test_registry_new_from_defs_sorted),
                cmocka_unit_test(test_stubs_generate_signatures),
                cmocka_unit_test(test_stubs_generate_types_and_defaults),
                cmocka_unit_test(test_stubs_generate_mangle),
                cmocka_unit_test(test_stubs_generate_hostile),
                cmocka_unit_test(test_stubs_generate_empty),
                cmocka_unit_test(test_stubs_generate_subset),
                cmocka_unit_test(test_stubs_generate_python_roundtrip),
                cmocka_unit_test(test_schema_build_shape),
                cmocka_unit_test(test_schema_build_all_equals_default),
                cmocka_unit_test(test_schema_build_subset),
                cmocka_unit_test(test_schema_build_empty),
                cmocka_unit_test(test_schema_build_modes),
                cmocka_unit_test(test_schema_build_cwd_note_names_enabled_tools),
                cmocka_unit_test(test_schema_build_limits),
                cmocka_unit_test(test_schema_build_builtins),
        };

        return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
