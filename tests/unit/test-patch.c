/* SPDX-License-Identifier: MIT */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include "../lib/ptc-test.h"
/* clang-format on */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "../lib/tool-fixture.h"
#include "basic/fd-util.h"
#include "basic/macro.h"
#include "basic/path-util.h"
#include "basic/time-util.h"
#include "core/config/config.h"
#include "core/tools/lint.h"
#include "core/tools/tool.h"
#include "core/tools/write-file.h"

#define PYTHON "/usr/bin/python3"

static int setup(void **state)
{
        return tool_fixture_setup(state, "patch", PYTHON);
}

static int teardown(void **state)
{
        return tool_fixture_teardown(state);
}

static json_t *run_args(const struct tool_ctx *ctx, json_t *args)
{
        json_t *res = NULL;
        int r;

        assert_non_null(args);
        r = tool_def_patch.run(NULL, ctx, args, &res);
        json_decref(args);
        assert_int_equal(r, 0);
        assert_non_null(res);
        return res;
}

static json_t *patch(const struct tool_ctx *ctx, const char *path, const char *old,
                     const char *new_text, bool all)
{
        return run_args(ctx, json_pack("{s:s, s:s, s:s, s:b}", "path", path, "old_string", old,
                                       "new_string", new_text, "replace_all", all));
}

/* ------------------------------------------------------------------------------------------ */

static void test_patch_replace_success_shape(void **state)
{
        struct tool_fixture *f = *state;
        const char *key;
        json_t *r, *v, *files;
        char *data;
        int i = 0;

        fixture_write(f, "a.txt", "one\ntwo\nthree\n");
        r = patch(&f->ctx, "a.txt", "two", "TWO", false);
        assert_tool_success(r);
        /* The seed's key order: success, diff, files_modified, lint. */
        json_object_foreach(r, key, v)
        {
                static const char *const order[] = {"success", "diff", "files_modified", "lint"};

                assert_true(i < 4);
                assert_string_equal(key, order[i++]);
        }
        assert_int_equal(i, 4);
        assert_string_equal(result_str(r, "diff"),
                            "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n"
                            "-two\n+TWO\n three\n");
        files = json_object_get(r, "files_modified");
        assert_int_equal(json_array_size(files), 1);
        assert_string_equal(json_string_value(json_array_get(files, 0)), "a.txt");
        v = json_object_get(r, "lint");
        assert_string_equal(result_str(v, "status"), "skipped");
        assert_string_equal(result_str(v, "message"), "No linter for .txt files");
        json_decref(r);
        data = fixture_read(f, "a.txt");
        assert_string_equal(data, "one\nTWO\nthree\n");
        free(data);
}

static void test_patch_replace_argument_errors(void **state)
{
        struct tool_fixture *f = *state;
        json_t *r;

        r = run_args(&f->ctx, json_pack("{s:s, s:s}", "old_string", "a", "new_string", "b"));
        assert_string_equal(result_str(r, "error"), "path required");
        assert_null(json_object_get(r, "success"));
        json_decref(r);
        r = run_args(&f->ctx,
                     json_pack("{s:s, s:s, s:n}", "path", "x", "old_string", "a", "new_string"));
        assert_string_equal(result_str(r, "error"), "old_string and new_string required");
        json_decref(r);
        /* The stub sends every parameter: nulls mean the defaults (mode "replace"). */
        r = run_args(&f->ctx, json_pack("{s:n, s:n, s:n, s:n, s:n, s:n}", "path", "old_string",
                                        "new_string", "replace_all", "mode", "patch"));
        assert_string_equal(result_str(r, "error"), "path required");
        json_decref(r);
        r = run_args(&f->ctx, json_pack("{s:s}", "mode", "patch"));
        assert_string_equal(result_str(r, "error"), "patch content required");
        json_decref(r);
        r = run_args(&f->ctx, json_pack("{s:s, s:s}", "mode", "patch", "patch", ""));
        assert_string_equal(result_str(r, "error"), "patch content required");
        json_decref(r);
        r = run_args(&f->ctx, json_pack("{s:s}", "mode", "bogus"));
        assert_string_equal(result_str(r, "error"), "Unknown mode: bogus");
        json_decref(r);
        r = run_args(&f->ctx, json_pack("{s:i}", "mode", 5));
        assert_string_equal(result_str(r, "error"), "Unknown mode: 5");
        json_decref(r);
}

static void test_patch_replace_fuzzy_errors(void **state)
{
        struct tool_fixture *f = *state;
        json_t *r;

        fixture_write(f, "b.txt", "x = 1\nx = 1\n");
        r = patch(&f->ctx, "b.txt", "", "y", false);
        assert_tool_failure(r, "old_string cannot be empty");
        assert_null(json_object_get(r, "_hint"));
        json_decref(r);
        r = patch(&f->ctx, "b.txt", "x = 1", "x = 1", false);
        assert_tool_failure(r, "old_string and new_string are identical");
        json_decref(r);
        r = patch(&f->ctx, "b.txt", "x = 1", "y", false);
        assert_tool_failure(r, "Found 2 matches for old_string. Provide more context to make it "
                               "unique, or use replace_all=True.");
        assert_null(json_object_get(r, "_hint"));
        json_decref(r);

        r = patch(&f->ctx, "b.txt", "x = 1", "y = 2", true);
        assert_tool_success(r);
        json_decref(r);
        {
                char *d = fixture_read(f, "b.txt");

                assert_string_equal(d, "y = 2\ny = 2\n");
                free(d);
        }

        r = patch(&f->ctx, "missing.txt", "a", "b", false);
        assert_tool_failure(r, "Failed to read file: missing.txt");
        json_decref(r);
        r = patch(&f->ctx, ".", "a", "b", false);
        assert_tool_failure(r, "Failed to read file: .");
        json_decref(r);
}

static void test_patch_replace_did_you_mean_and_hint(void **state)
{
        struct tool_fixture *f = *state;
        json_t *r;

        fixture_write(f, "c.py", "def foo():\n    return 1\n");
        r = patch(&f->ctx, "c.py", "def bar(x):\n    y = x * 2", "z", false);
        assert_tool_failure(r,
                            "Could not find a match for old_string in the file\n\nDid you mean one "
                            "of these sections?\n   1| def foo():\n   2|     return 1");
        /* Snippets attached: no _hint. */
        assert_null(json_object_get(r, "_hint"));
        json_decref(r);

        r = patch(&f->ctx, "c.py", "qqqqqqqq", "z", false);
        assert_tool_failure(r, "Could not find a match for old_string in the file");
        assert_string_equal(result_str(r, "_hint"),
                            "old_string not found. Use read_file to verify the "
                            "current content, or search_files to locate the "
                            "text.");
        json_decref(r);
}

static void test_patch_replace_strategies_through_the_tool(void **state)
{
        struct tool_fixture *f = *state;
        json_t *r;
        char *d;

        /* Smart quotes and an em dash in the file, ASCII in the call. */
        fixture_write(f, "u.md", "He said \xe2\x80\x9chello\xe2\x80\x9d \xe2\x80\x94 twice.\n");
        r = patch(&f->ctx, "u.md", "He said \"hello\" -- twice.", "He said bye.", false);
        assert_tool_success(r);
        json_decref(r);
        d = fixture_read(f, "u.md");
        assert_string_equal(d, "He said bye.\n");
        free(d);

        /* Indentation differs: line-trimmed, and the call's text is written verbatim. */
        fixture_write(f, "i.txt", "\tif x:\n\t\tgo()\nend\n");
        r = patch(&f->ctx, "i.txt", "if x:\n    go()", "if y:\n    stop()", false);
        assert_tool_success(r);
        json_decref(r);
        d = fixture_read(f, "i.txt");
        assert_string_equal(d, "if y:\n    stop()\nend\n");
        free(d);

        /* Escape drift is refused and the file is untouched. */
        fixture_write(f, "e.py", "def f():\n    s = 'it'\n    return s\n");
        r = patch(&f->ctx, "e.py", "def f():\n    s = \\'it\\'\n    return s",
                  "def f():\n    s = \\'its\\'\n    return s", false);
        assert_true(json_is_false(json_object_get(r, "success")));
        assert_true(strncmp(result_str(r, "error"), "Escape-drift detected: ", 23) == 0);
        json_decref(r);
        d = fixture_read(f, "e.py");
        assert_string_equal(d, "def f():\n    s = 'it'\n    return s\n");
        free(d);
}

static void test_patch_replace_crlf(void **state)
{
        struct tool_fixture *f = *state;
        json_t *r;
        char *d;

        fixture_write(f, "w.txt", "one\r\ntwo\r\nthree\r\n");
        r = patch(&f->ctx, "w.txt", "one\ntwo", "uno\ndos", false);
        assert_tool_success(r);
        assert_string_equal(result_str(r, "diff"),
                            "--- a/w.txt\n+++ b/w.txt\n@@ -1,3 +1,3 @@\n-one\r\n"
                            "-two\r\n+uno\r\n+dos\r\n three\r\n");
        json_decref(r);
        d = fixture_read(f, "w.txt");
        assert_string_equal(d, "uno\r\ndos\r\nthree\r\n");
        free(d);
}

static void test_patch_replace_keeps_mode_and_symlink(void **state)
{
        struct tool_fixture *f = *state;
        char path[256], link[256];
        struct stat st;
        json_t *r;
        char *d;

        fixture_write(f, "m.sh", "echo hi\n");
        (void) snprintf(path, sizeof(path), "%s/m.sh", f->dir);
        assert_int_equal(chmod(path, 0751), 0);
        r = patch(&f->ctx, path, "hi", "bye", false);
        assert_tool_success(r);
        json_decref(r);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0751);

        (void) snprintf(link, sizeof(link), "%s/l.sh", f->dir);
        assert_int_equal(symlink("m.sh", link), 0);
        r = patch(&f->ctx, "l.sh", "bye", "ciao", false);
        assert_tool_success(r);
        /* Messages and headers name the path as given. */
        assert_string_equal(
                json_string_value(json_array_get(json_object_get(r, "files_modified"), 0)), "l.sh");
        json_decref(r);
        assert_int_equal(lstat(link, &st), 0);
        assert_true(S_ISLNK(st.st_mode));
        d = fixture_read(f, "m.sh");
        assert_string_equal(d, "echo ciao\n");
        free(d);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0751);
}

static void test_patch_replace_deny_list(void **state)
{
        struct tool_fixture *f = *state;
        char path[256], want[512];
        json_t *r;

        (void) snprintf(path, sizeof(path), "%s/.bashrc", f->home);
        {
                int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

                assert_true(fd >= 0);
                assert_int_equal(write_all(fd, "alias a=b\n", 10), 0);
                assert_int_equal(close(fd), 0);
        }
        r = patch(&f->ctx, "~/.bashrc", "a=b", "a=c", false);
        (void) snprintf(want, sizeof(want),
                        "Write denied: '%s/.bashrc' is a protected system/credential file.",
                        f->home);
        assert_tool_failure(r, want);
        json_decref(r);

        /* Sensitive system paths: the bare error, before anything else is looked at. */
        r = run_args(&f->ctx, json_pack("{s:s, s:s}", "path", "/etc/passwd", "mode", "bogus"));
        assert_string_equal(result_str(r, "error"),
                            "Refusing to write to sensitive system path: "
                            "/etc/passwd\nUse the terminal tool with sudo if "
                            "you need to modify system files.");
        assert_null(json_object_get(r, "success"));
        json_decref(r);
        r = patch(&f->ctx, "/tmp/../etc/hosts", "a", "b", false);
        assert_non_null(strstr(result_str(r, "error"), "sensitive system path"));
        json_decref(r);
}

static void test_patch_replace_lint_delta(void **state)
{
        struct tool_fixture *f = *state;
        json_t *r, *lint;

        fixture_write(f, "d.json", "{\"a\": 1, \"b\": 2}\n");
        r = patch(&f->ctx, "d.json", "\"b\": 2", "\"b\": ", false);
        lint = json_object_get(r, "lint");
        assert_string_equal(result_str(lint, "status"), "error");
        assert_true(strncmp(result_str(lint, "output"), "JSONDecodeError: ", 17) == 0);
        assert_null(json_object_get(lint, "message"));
        json_decref(r);
        /* Still broken the same way after an unrelated edit: noted as pre-existing. */
        r = patch(&f->ctx, "d.json", "\"a\": 1", "\"a\": 3", false);
        lint = json_object_get(r, "lint");
        assert_string_equal(result_str(lint, "status"), "error");
        assert_non_null(json_object_get(lint, "message"));
        json_decref(r);
        r = patch(&f->ctx, "d.json", "\"b\": ", "\"b\": 4", false);
        assert_string_equal(result_str(json_object_get(r, "lint"), "status"), "ok");
        json_decref(r);

        if (!f->ctx.python)
                return;
        fixture_write(f, "p.py", "def f():\n    return 1\n");
        r = patch(&f->ctx, "p.py", "return 1", "return (1", false);
        lint = json_object_get(r, "lint");
        assert_string_equal(result_str(lint, "status"), "error");
        assert_string_equal(result_str(lint, "output"),
                            "SyntaxError: '(' was never closed (line 2, column 12)");
        json_decref(r);
}

static void test_patch_replace_too_large(void **state)
{
        struct tool_fixture *f = *state;
        char path[256];
        json_t *r;
        int fd;

        (void) snprintf(path, sizeof(path), "%s/huge.txt", f->dir);
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        /* Sparse: 17 MiB of holes. */
        assert_int_equal(ftruncate(fd, 17 * 1024 * 1024), 0);
        assert_int_equal(close(fd), 0);
        r = patch(&f->ctx, "huge.txt", "a", "b", false);
        assert_tool_failure(r,
                            "Failed to read file: huge.txt (larger than 16 MiB, the patch limit)");
        json_decref(r);
}

struct worker {
        struct tool_fixture *f;
        int k;
        int ok;
};

static void *patch_worker(void *p)
{
        struct worker *w = p;
        char old[32], new_text[32];
        json_t *res = NULL, *args;

        (void) snprintf(old, sizeof(old), "line %02d = old", w->k);
        (void) snprintf(new_text, sizeof(new_text), "line %02d = new", w->k);
        args = json_pack("{s:s, s:s, s:s}", "path", "conc.txt", "old_string", old, "new_string",
                         new_text);
        if (args && tool_def_patch.run(NULL, &w->f->ctx, args, &res) == 0 &&
            json_is_true(json_object_get(res, "success")))
                w->ok = 1;
        json_decref(args);
        json_decref(res);
        return NULL;
}

static void test_patch_replace_concurrent_same_file(void **state)
{
        struct tool_fixture *f = *state;
        struct worker w[16];
        pthread_t th[16];
        char buf[16 * 20 + 1] = "", *d;

        for (int k = 0; k < 16; k++)
                (void) snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "line %02d = old\n",
                                k);
        fixture_write(f, "conc.txt", buf);
        for (int k = 0; k < 16; k++) {
                w[k] = (struct worker){f, k, 0};
                assert_int_equal(pthread_create(&th[k], NULL, patch_worker, &w[k]), 0);
        }
        for (int k = 0; k < 16; k++) {
                assert_int_equal(pthread_join(th[k], NULL), 0);
                assert_int_equal(w[k].ok, 1);
        }
        /* Serialised per path: no edit is lost. */
        d = fixture_read(f, "conc.txt");
        for (int k = 0; k < 16; k++) {
                char want[32];

                (void) snprintf(want, sizeof(want), "line %02d = new\n", k);
                assert_non_null(strstr(d, want));
        }
        free(d);
}

static void test_patch_path_lock(void **state)
{
        struct tool_path_lock *a = NULL, *b = NULL;
        const char *p1[] = {"/x/one", "/x/two", "/x/one"}, *p2[] = {"/x/two"}, *p3[] = {"/x/3"};

        assert_int_equal(tool_path_lock(p1, 3, USEC_INFINITY, &a), 0);
        /* Held: a second taker times out at its deadline. */
        assert_int_equal(tool_path_lock(p2, 1, now_usec() + 20 * USEC_PER_MSEC, &b), -ETIMEDOUT);
        assert_null(b);
        /* Another path is free. */
        assert_int_equal(tool_path_lock(p3, 1, now_usec(), &b), 0);
        b = tool_path_unlock(b);
        a = tool_path_unlock(a);
        assert_int_equal(tool_path_lock(p2, 1, now_usec(), &b), 0);
        b = tool_path_unlock(b);
        assert_null(tool_path_unlock(NULL));
}

static void test_patch_mode_patch_dispatches(void **state)
{
        struct tool_fixture *f = *state;
        json_t *r;
        char *d;

        fixture_write(f, "v.txt", "alpha\nbeta\n");
        r = run_args(&f->ctx, json_pack("{s:s, s:s}", "mode", "patch", "patch",
                                        "*** Begin Patch\n*** Update File: v.txt\n@@\n alpha\n"
                                        "-beta\n+gamma\n*** End Patch\n"));
        assert_tool_success(r);
        json_decref(r);
        d = fixture_read(f, "v.txt");
        assert_string_equal(d, "alpha\ngamma\n");
        free(d);
        /* V4A paths get the sensitive-path check as well. */
        r = run_args(&f->ctx, json_pack("{s:s, s:s}", "mode", "patch", "patch",
                                        "*** Begin Patch\n*** Add File: /etc/ptc-nope\n+x\n"
                                        "*** End Patch\n"));
        assert_non_null(strstr(result_str(r, "error"), "sensitive system path"));
        json_decref(r);
        assert_int_equal(access("/etc/ptc-nope", F_OK), -1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_patch_replace_success_shape, setup, teardown),
                cmocka_unit_test_setup_teardown(test_patch_replace_argument_errors, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_patch_replace_fuzzy_errors, setup, teardown),
                cmocka_unit_test_setup_teardown(test_patch_replace_did_you_mean_and_hint, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_patch_replace_strategies_through_the_tool,
                                                setup, teardown),
                cmocka_unit_test_setup_teardown(test_patch_replace_crlf, setup, teardown),
                cmocka_unit_test_setup_teardown(test_patch_replace_keeps_mode_and_symlink, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_patch_replace_deny_list, setup, teardown),
                cmocka_unit_test_setup_teardown(test_patch_replace_lint_delta, setup, teardown),
                cmocka_unit_test_setup_teardown(test_patch_replace_too_large, setup, teardown),
                cmocka_unit_test_setup_teardown(test_patch_replace_concurrent_same_file, setup,
                                                teardown),
                cmocka_unit_test(test_patch_path_lock),
                cmocka_unit_test_setup_teardown(test_patch_mode_patch_dispatches, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
