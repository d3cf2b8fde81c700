/* SPDX-License-Identifier: MIT */
/*
 * registry_call(): the one dispatch path (error mapping, dropped arguments,
 * redaction), and the rule that the registry and the RPC layer name no tool.
 */
#include "../lib/ptc-test.h"
#include "../lib/registry-fixture.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/fd-util.h"
#include "basic/strv.h"

/* Returns 0 without a result: a bug in a tool, answered as a failure, never a crash. */
static int empty_run(const struct tool *t, const struct tool_ctx *ctx, json_t *args, json_t **ret)
{
        return 0;
}

static const char *const echo_dropped[] = {"pty", "background", NULL};

static const struct tool_def def_dropper = {
        .name = "dropper", .run = echo_run, .dropped_args = echo_dropped};
static const struct tool_def def_empty = {.name = "empty", .run = empty_run};

static int setup(void **state)
{
        static const struct tool_def *const defs[] = {
                &def_echo, &def_dropper, &def_crash, &def_empty, &def_secret,
        };
        struct registry_fixture *f = calloc(1, sizeof(*f));

        *state = f;
        return f ? registry_fixture_init(f, defs, ELEMENTSOF(defs), "/") : -1;
}

static int teardown(void **state)
{
        struct registry_fixture *f = *state;

        registry_fixture_release(f);
        free(f);
        return 0;
}

static json_t *call(struct registry_fixture *f, const char *name, const char *args_json)
{
        json_auto_t *args = args_json ? json_loads(args_json, 0, NULL) : NULL;
        json_t *res = NULL;

        if (args_json)
                assert_non_null(args);
        assert_int_equal(registry_call(f->registry, name, &f->ctx, args, &res), 0);
        assert_non_null(res);
        return res;
}

static void assert_json(json_t *got, const char *want_json)
{
        json_auto_t *want = json_loads(want_json, 0, NULL);

        assert_non_null(want);
        if (!json_equal(got, want)) {
                _cleanup_free_ char *text = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
                fail_msg("got %s, want %s", text, want_json);
        }
}

static void test_call_result(void **state)
{
        json_auto_t *r = call(*state, "echo", "{\"a\": 1}");

        assert_json(r, "{\"args\": {\"a\": 1}}");
}

static void test_call_null_args_is_empty_object(void **state)
{
        json_auto_t *r = call(*state, "echo", NULL);

        assert_json(r, "{\"args\": {}}");
}

static void test_call_error_mapped(void **state)
{
        json_auto_t *crash = call(*state, "crash", "{}");
        json_auto_t *empty = call(*state, "empty", "{}");

        assert_json(crash, "{\"error\": \"Tool execution failed: Input/output error\"}");
        /* No result and no error code: a failure too, with EIO's text. */
        assert_json(empty, "{\"error\": \"Tool execution failed: Input/output error\"}");
}

static void test_call_redacts(void **state)
{
        struct registry_fixture *f = *state;
        json_auto_t *r = call(f, "secret", "{}");
        json_auto_t *echoed = call(f, "echo", "{\"k\": \"" SECRET "\"}");
        _cleanup_free_ char *text = json_dumps(r, JSON_COMPACT);
        _cleanup_free_ char *text2 = json_dumps(echoed, JSON_COMPACT);
        json_t *res = NULL;

        assert_non_null(text);
        assert_null(strstr(text, SECRET));
        assert_json(r, "{\"text\": \"the key is *** here\", \"list\": [\"***\"], "
                       "\"nested\": {\"k\": \"prefix-***\"}}");
        /* A tool that echoes what the script sent cannot leak it either. */
        assert_null(strstr(text2, SECRET));

        /* No context: nothing to redact with, the result goes out as the tool made it. */
        assert_int_equal(registry_call(f->registry, "secret", NULL, NULL, &res), 0);
        assert_non_null(strstr(json_string_value(json_object_get(res, "text")), SECRET));
        json_decref(res);
}

static void test_call_unknown_tool(void **state)
{
        struct registry_fixture *f = *state;
        json_t *res = json_true(); /* a static singleton: overwritten with NULL, not leaked */

        assert_int_equal(registry_call(f->registry, "nope", &f->ctx, NULL, &res), -ENOENT);
        assert_null(res);
        res = json_true();
        assert_int_equal(registry_call(NULL, "echo", &f->ctx, NULL, &res), -ENOENT);
        assert_null(res);
}

static void test_call_args_not_object(void **state)
{
        struct registry_fixture *f = *state;
        json_auto_t *arr = json_array();
        json_t *res = NULL;

        assert_int_equal(registry_call(f->registry, "echo", &f->ctx, arr, &res), -EINVAL);
        assert_null(res);
}

static void test_call_dropped_args(void **state)
{
        struct registry_fixture *f = *state;
        json_auto_t *args = json_loads("{\"pty\": true, \"background\": 1, \"keep\": 2}", 0, NULL);
        json_auto_t *r = NULL, *other = NULL;

        assert_int_equal(registry_call(f->registry, "dropper", &f->ctx, args, &r), 0);
        assert_json(r, "{\"args\": {\"keep\": 2}}");
        /* Deleted from the caller's object: a call log shows what the tool saw. */
        assert_json(args, "{\"keep\": 2}");
        /* Another tool sees them. */
        other = call(f, "echo", "{\"pty\": true, \"background\": 1}");
        assert_json(other, "{\"args\": {\"pty\": true, \"background\": 1}}");
}

/* The builtin terminal drops the seed's background/pty family (docs/tools.md, terminal). */
static void test_builtin_terminal_drops_seed_args(void **state)
{
        static const char *const want[] = {
                "background", "pty",       "notify_on_complete", "watch_patterns",
                "notify",     "heartbeat", "persist_on_release", NULL,
        };
        const struct tool *t;
        _cleanup_(registry_freep) struct registry *r = NULL;
        const char *enabled[] = {"terminal", NULL};

        assert_non_null(tool_def_terminal.dropped_args);
        assert_int_equal(strv_length((char *const *) tool_def_terminal.dropped_args),
                         ELEMENTSOF(want) - 1);
        for (size_t i = 0; want[i]; i++)
                assert_true(strv_contains((char *const *) tool_def_terminal.dropped_args, want[i]));
        /* The registry carries the list over to the tool it holds. */
        assert_int_equal(registry_new(NULL, (char *const *) enabled, &r, NULL, NULL), 0);
        t = registry_find(r, "terminal");
        assert_non_null(t);
        assert_ptr_equal(t->dropped_args, tool_def_terminal.dropped_args);
        /* Only terminal drops anything among the builtin tools. */
        for (size_t i = 0; i < tool_builtin_count; i++)
                if (tool_builtin_defs[i] != &tool_def_terminal)
                        assert_null(tool_builtin_defs[i]->dropped_args);
}

/* Every name of the catalogue is a builtin tool and vice versa. */
static void test_catalogue(void **state)
{
        assert_int_equal(strv_length((char *const *) tool_known_names), tool_builtin_count);
        for (size_t i = 0; i < tool_builtin_count; i++)
                assert_true(strv_contains((char *const *) tool_known_names,
                                          tool_builtin_defs[i]->name));
}

/*
 * An extra tool (an upstream MCP server's) with more parameters than a stub takes is left out
 * with a warning; the other tools stay (the generator would refuse the whole module).
 */
static void test_extra_too_many_params(void **state)
{
        json_auto_t *wide = json_pack("{s:s, s:{}}", "type", "object", "properties");
        json_auto_t *req = json_pack("{s:s, s:[]}", "type", "object", "required");
        json_auto_t *ok = json_pack("{s:s}", "type", "object");
        _cleanup_registry_ struct registry *r = NULL;
        _cleanup_strv_free_ char **warnings = NULL;
        struct registry_extra_tool extra[3] = {
                {.name = "up_wide", .parameters = wide, .run = echo_run},
                {.name = "up_required", .parameters = req, .run = echo_run},
                {.name = "up_ok", .parameters = ok, .run = echo_run},
        };
        struct diag d = {};

        assert_non_null(wide);
        assert_non_null(req);
        assert_non_null(ok);
        for (int i = 0; i <= REGISTRY_MAX_PARAMS; i++) {
                char key[32];

                (void) snprintf(key, sizeof(key), "p%d", i);
                assert_int_equal(json_object_set_new(json_object_get(wide, "properties"), key,
                                                     json_object()),
                                 0);
                assert_int_equal(
                        json_array_append_new(json_object_get(req, "required"), json_string(key)),
                        0);
        }
        assert_int_equal(registry_new_with(NULL, NULL, extra, ELEMENTSOF(extra), &r, &warnings, &d),
                         0);
        assert_null(registry_find(r, "up_wide"));
        assert_null(registry_find(r, "up_required"));
        assert_non_null(registry_find(r, "up_ok"));
        assert_true(strv_contains(warnings, "tool 'up_wide' has more than 1024 parameters; it is "
                                            "left out"));
        assert_true(strv_contains(warnings, "tool 'up_required' has more than 1024 parameters; "
                                            "it is left out"));

        /* At the cap, it stays. */
        assert_int_equal(json_object_del(json_object_get(wide, "properties"), "p0"), 0);
        r = registry_free(r);
        warnings = strv_free(warnings);
        assert_int_equal(registry_new_with(NULL, NULL, extra, 1, &r, &warnings, &d), 0);
        assert_non_null(registry_find(r, "up_wide"));
}

/*
 * The registry and the RPC layer name no tool: whatever is particular to one is a field of
 * its tool_def. A builtin tool's name as a C string literal in their sources fails here.
 */
static void test_dispatch_names_no_tool(void **state)
{
        static const char *const dirs[] = {"src/core/registry", "src/core/rpc"};
        const char *root = getenv("PTC_SOURCE_ROOT");
        size_t files = 0;

        if (!root)
                skip();
        for (size_t d = 0; d < ELEMENTSOF(dirs); d++) {
                _cleanup_free_ char *dir = NULL;
                DIR *dp;
                struct dirent *de;

                assert_true(asprintf(&dir, "%s/%s", root, dirs[d]) > 0);
                dp = opendir(dir);
                assert_non_null(dp);
                while ((de = readdir(dp))) {
                        _cleanup_free_ char *path = NULL, *text = NULL;
                        size_t n = strlen(de->d_name);

                        if (n < 3 || (strcmp(de->d_name + n - 2, ".c") != 0 &&
                                      strcmp(de->d_name + n - 2, ".h") != 0))
                                continue;
                        assert_true(asprintf(&path, "%s/%s", dir, de->d_name) > 0);
                        assert_int_equal(read_file_at(AT_FDCWD, path, 1 << 24, &text, NULL), 0);
                        files++;
                        for (size_t i = 0; tool_known_names[i]; i++) {
                                char quoted[128];

                                (void) snprintf(quoted, sizeof(quoted), "\"%s\"",
                                                tool_known_names[i]);
                                if (strstr(text, quoted))
                                        fail_msg("%s names the tool %s", path, quoted);
                        }
                }
                closedir(dp);
        }
        /* registry.c, registry.h, registry-internal.h, rpc-server.c, rpc-server.h at least. */
        assert_true(files >= 5);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_call_result, setup, teardown),
                cmocka_unit_test_setup_teardown(test_call_null_args_is_empty_object, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_call_error_mapped, setup, teardown),
                cmocka_unit_test_setup_teardown(test_call_redacts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_call_unknown_tool, setup, teardown),
                cmocka_unit_test_setup_teardown(test_call_args_not_object, setup, teardown),
                cmocka_unit_test_setup_teardown(test_call_dropped_args, setup, teardown),
                cmocka_unit_test(test_builtin_terminal_drops_seed_args),
                cmocka_unit_test(test_catalogue),
                cmocka_unit_test(test_extra_too_many_params),
                cmocka_unit_test(test_dispatch_names_no_tool),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
