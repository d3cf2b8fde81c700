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
#include "core/edit/v4a.h"
#include "core/tools/tool.h"
#include "core/tools/v4a-apply.h"

/* --- parser --- */

static struct v4a_patch *parse_ok(const char *text)
{
        struct v4a_patch *p = NULL;
        char *err = NULL;
        int r;

        r = v4a_parse(text, strlen(text), &p, &err);
        assert_int_equal(r, 0);
        if (err)
                fail_msg("unexpected parse error: %s", err);
        assert_non_null(p);
        return p;
}

static char *parse_err(const char *text, size_t n)
{
        struct v4a_patch *p = NULL;
        char *err = NULL;
        int r;

        r = v4a_parse(text, n, &p, &err);
        assert_int_equal(r, 0);
        assert_null(p);
        assert_non_null(err);
        return err;
}

static void assert_line(const struct v4a_line *l, char prefix, const char *text)
{
        assert_int_equal(l->prefix, prefix);
        assert_int_equal(l->len, strlen(text));
        assert_memory_equal(l->text, text, l->len);
}

static void test_v4a_parse_basic(void **state)
{
        struct v4a_patch *p = parse_ok("*** Begin Patch\n"
                                       "*** Update File: src/a.py\n"
                                       "@@ def f(): @@\n"
                                       " ctx\n"
                                       "-old\n"
                                       "+new\n"
                                       "@@\n"
                                       " two\n"
                                       "*** Add File:  new.txt  \n"
                                       "+hello\n"
                                       "+\n"
                                       "*** Delete File: gone.txt\n"
                                       "*** Move File: x.txt -> dir/y.txt\n"
                                       "*** End Patch\n"
                                       "*** Delete File: after-end.txt\n");

        assert_int_equal(p->n_ops, 4);
        assert_int_equal(p->ops[0].type, V4A_OP_UPDATE);
        assert_string_equal(p->ops[0].path, "src/a.py");
        assert_null(p->ops[0].new_path);
        assert_int_equal(p->ops[0].n_hunks, 2);
        assert_string_equal(p->ops[0].hunks[0].hint, "def f():");
        assert_int_equal(p->ops[0].hunks[0].n_lines, 3);
        assert_line(&p->ops[0].hunks[0].lines[0], ' ', "ctx");
        assert_line(&p->ops[0].hunks[0].lines[1], '-', "old");
        assert_line(&p->ops[0].hunks[0].lines[2], '+', "new");
        assert_null(p->ops[0].hunks[1].hint);
        assert_line(&p->ops[0].hunks[1].lines[0], ' ', "two");

        assert_int_equal(p->ops[1].type, V4A_OP_ADD);
        assert_string_equal(p->ops[1].path, "new.txt");
        assert_int_equal(p->ops[1].n_hunks, 1);
        assert_int_equal(p->ops[1].hunks[0].n_lines, 2);
        assert_line(&p->ops[1].hunks[0].lines[1], '+', "");

        assert_int_equal(p->ops[2].type, V4A_OP_DELETE);
        assert_string_equal(p->ops[2].path, "gone.txt");
        assert_int_equal(p->ops[3].type, V4A_OP_MOVE);
        assert_string_equal(p->ops[3].path, "x.txt");
        assert_string_equal(p->ops[3].new_path, "dir/y.txt");
        v4a_patch_free(p);
}

static void test_v4a_parse_markers_whole_lines(void **state)
{
        /* Content mentioning the markers is content; only a whole-line marker ends the patch. */
        struct v4a_patch *p = parse_ok("*** Begin Patch\n"
                                       "*** Add File: doc.md\n"
                                       "+*** End Patch\n"
                                       "+*** Begin Patch\n"
                                       "+text *** End Patch\n"
                                       "***End Patch   \n"
                                       "*** Add File: not-parsed\n");

        assert_int_equal(p->n_ops, 1);
        assert_int_equal(p->ops[0].hunks[0].n_lines, 3);
        assert_line(&p->ops[0].hunks[0].lines[0], '+', "*** End Patch");
        assert_line(&p->ops[0].hunks[0].lines[1], '+', "*** Begin Patch");
        v4a_patch_free(p);

        /* "*** End Patch trailing" is not a marker: it becomes a context line. */
        p = parse_ok("*** Update File: a\n-x\n*** End Patch trailing\n+y\n");
        assert_int_equal(p->n_ops, 1);
        assert_int_equal(p->ops[0].hunks[0].n_lines, 3);
        assert_line(&p->ops[0].hunks[0].lines[1], ' ', "*** End Patch trailing");
        v4a_patch_free(p);
}

static void test_v4a_parse_without_markers_and_last_begin(void **state)
{
        struct v4a_patch *p = parse_ok("*** Delete File: a\n");

        assert_int_equal(p->n_ops, 1);
        v4a_patch_free(p);

        /* Parsing starts after the last Begin before the End. */
        p = parse_ok(
                "*** Delete File: skipped\n*** Begin Patch\n*** Delete File: b\n*** End Patch");
        assert_int_equal(p->n_ops, 1);
        assert_string_equal(p->ops[0].path, "b");
        v4a_patch_free(p);

        p = parse_ok("");
        assert_int_equal(p->n_ops, 0);
        v4a_patch_free(p);
        p = parse_ok("*** Begin Patch\n*** End Patch\n");
        assert_int_equal(p->n_ops, 0);
        v4a_patch_free(p);
}

static void test_v4a_parse_crlf(void **state)
{
        struct v4a_patch *p = parse_ok("*** Begin Patch\r\n*** Update File: a.txt\r\n@@ h @@\r\n"
                                       " keep\r\n-old\r\n+new\r\n*** End Patch\r\n");

        assert_int_equal(p->n_ops, 1);
        assert_string_equal(p->ops[0].path, "a.txt");
        assert_string_equal(p->ops[0].hunks[0].hint, "h");
        assert_int_equal(p->ops[0].hunks[0].n_lines, 3);
        assert_line(&p->ops[0].hunks[0].lines[0], ' ', "keep");
        assert_line(&p->ops[0].hunks[0].lines[2], '+', "new");
        v4a_patch_free(p);
}

static void test_v4a_parse_blank_lines(void **state)
{
        /* Inside a hunk a blank line is an empty context line; blanks ending a hunk are not. */
        struct v4a_patch *p = parse_ok("*** Update File: a.py\n"
                                       "\n"
                                       " def f():\n"
                                       "\n"
                                       "\n"
                                       "-    return 1\n"
                                       "+    return 2\n"
                                       "\n"
                                       "\n"
                                       "@@ g @@\n"
                                       "\n"
                                       " x\n"
                                       "\n"
                                       "*** Update File: b.py\n"
                                       "-y\n"
                                       "+z\n");
        const struct v4a_hunk *h;

        assert_int_equal(p->n_ops, 2);
        assert_int_equal(p->ops[0].n_hunks, 2);
        h = &p->ops[0].hunks[0];
        /* The blank before the first line of an implicit hunk is not part of it. */
        assert_int_equal(h->n_lines, 5);
        assert_line(&h->lines[0], ' ', "def f():");
        assert_line(&h->lines[1], ' ', "");
        assert_line(&h->lines[2], ' ', "");
        assert_line(&h->lines[3], '-', "    return 1");
        assert_line(&h->lines[4], '+', "    return 2");
        h = &p->ops[0].hunks[1];
        assert_int_equal(h->n_lines, 2);
        assert_line(&h->lines[0], ' ', "");
        assert_line(&h->lines[1], ' ', "x");
        assert_int_equal(p->ops[1].hunks[0].n_lines, 2);
        v4a_patch_free(p);
}

static void test_v4a_parse_move_to_and_end_of_file(void **state)
{
        struct v4a_patch *p = parse_ok("*** Begin Patch\n"
                                       "*** Update File: old/name.py\n"
                                       "*** Move to: new/name.py\n"
                                       "@@\n"
                                       "-a\n"
                                       "+b\n"
                                       "*** End of File\n"
                                       "*** Update File: only-move.txt\n"
                                       "*** Move to: moved.txt\n"
                                       "*** End Patch\n");

        assert_int_equal(p->n_ops, 2);
        assert_string_equal(p->ops[0].new_path, "new/name.py");
        assert_int_equal(p->ops[0].n_hunks, 1);
        assert_int_equal(p->ops[0].hunks[0].n_lines, 2);
        /* A rename without edits is an Update with no hunks, and that is fine. */
        assert_string_equal(p->ops[1].new_path, "moved.txt");
        assert_int_equal(p->ops[1].n_hunks, 0);
        v4a_patch_free(p);
}

static void test_v4a_parse_hints(void **state)
{
        struct v4a_patch *p = parse_ok("*** Update File: a\n"
                                       "@@\n-1\n"
                                       "@@ no closing\n-2\n"
                                       "@@   spaced  hint  @@ tail\n-3\n"
                                       "@@@@\n-4\n"
                                       "@@ a @@ b @@\n-5\n"
                                       "@@ @@\n-6\n");

        assert_int_equal(p->ops[0].n_hunks, 6);
        assert_null(p->ops[0].hunks[0].hint);
        assert_null(p->ops[0].hunks[1].hint);
        assert_string_equal(p->ops[0].hunks[2].hint, "spaced  hint");
        assert_int_equal(p->ops[0].hunks[2].hint_len, 12);
        assert_null(p->ops[0].hunks[3].hint);
        assert_string_equal(p->ops[0].hunks[4].hint, "a");
        assert_null(p->ops[0].hunks[5].hint);
        v4a_patch_free(p);
}

static void test_v4a_parse_implicit_context_and_backslash(void **state)
{
        struct v4a_patch *p = parse_ok("*** Update File: a\n"
                                       "plain context\n"
                                       "-x\n"
                                       "\\ No newline at end of file\n"
                                       "+y\n");

        assert_int_equal(p->ops[0].hunks[0].n_lines, 3);
        assert_line(&p->ops[0].hunks[0].lines[0], ' ', "plain context");
        assert_line(&p->ops[0].hunks[0].lines[2], '+', "y");
        v4a_patch_free(p);
}

static void test_v4a_parse_errors(void **state)
{
        static const struct {
                const char *patch, *error;
        } cases[] = {
                {"*** Update File: a.py\n", "Parse error: UPDATE 'a.py': no hunks found"},
                {"*** Update File: it's.py\n", "Parse error: UPDATE \"it's.py\": no hunks found"},
                {"*** Add File: \n+x\n", "Parse error: Operation with empty file path"},
                {"*** Delete File:\n", "Parse error: Operation with empty file path"},
                {"*** Move File: a.txt\n",
                 "Parse error: MOVE 'a.txt': missing destination path (expected 'src -> dst')"},
                {"*** Move File: a.txt ->  \n",
                 "Parse error: MOVE 'a.txt': missing destination path (expected 'src -> dst')"},
                {"*** Update File: a\n*** Update File: b\n",
                 "Parse error: UPDATE 'a': no hunks found; UPDATE 'b': no hunks found"},
                {"*** Add File: a\n*** Move to: b\n+x\n",
                 "Parse error: '*** Move to: b' must follow an '*** Update File:' header"},
                {"*** Update File: a\n*** Move to: b\n*** Move to: c\n-x\n",
                 "Parse error: UPDATE 'a': more than one '*** Move to:'"},
                {"*** Update File: a\n*** Move to:\n-x\n",
                 "Parse error: UPDATE 'a': '*** Move to:' without a path"},
                {"*** Update File: a\tb\n", "Parse error: UPDATE 'a\\tb': no hunks found"},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *err = parse_err(cases[i].patch, strlen(cases[i].patch));

                assert_string_equal(err, cases[i].error);
                free(err);
        }
}

static void test_v4a_parse_hostile(void **state)
{
        static const char nul_path[] = "*** Delete File: a\0b\n";
        static const char nul_content[] = "*** Add File: a\n+x\0y\n";
        _cleanup_free_ char *many = NULL;
        struct v4a_patch *p = NULL;
        char *err, *q;
        size_t len;

        err = parse_err(nul_path, sizeof(nul_path) - 1);
        assert_string_equal(err, "Parse error: Operation with a NUL byte in its file path");
        free(err);

        assert_int_equal(v4a_parse(nul_content, sizeof(nul_content) - 1, &p, &err), 0);
        assert_non_null(p);
        assert_int_equal(p->ops[0].hunks[0].lines[0].len, 3);
        p = v4a_patch_free(p);

        /* The size cap is checked before the text is touched. */
        assert_int_equal(v4a_parse("", (size_t) V4A_PATCH_MAX + 1, &p, &err), -E2BIG);

        len = (V4A_OPS_MAX + 1) * strlen("*** Delete File: x\n");
        many = malloc(len + 1);
        assert_non_null(many);
        q = many;
        for (int i = 0; i <= V4A_OPS_MAX; i++)
                q = stpcpy(q, "*** Delete File: x\n");
        err = parse_err(many, len);
        assert_string_equal(err, "Parse error: too many operations (the limit is 500)");
        free(err);
}

/* --- apply --- */

static int setup(void **state)
{
        return tool_fixture_setup(state, "v4a", NULL);
}

static int teardown(void **state)
{
        return tool_fixture_teardown(state);
}

static void assert_file(struct tool_fixture *f, const char *name, const char *content)
{
        _cleanup_free_ char *s = fixture_read(f, name);

        if (!content) {
                if (s)
                        fail_msg("%s exists: '%s'", name, s);
                return;
        }
        if (!s)
                fail_msg("%s does not exist", name);
        assert_string_equal(s, content);
}

static json_t *apply(struct tool_fixture *f, const char *patch)
{
        json_t *res = NULL;
        int r;

        r = v4a_apply(&f->ctx, patch, strlen(patch), &res);
        assert_int_equal(r, 0);
        assert_non_null(res);
        return res;
}

/* The array @key of @res as "a,b,c" ("" when absent). */
static char *list(json_t *res, const char *key)
{
        json_t *a = json_object_get(res, key), *v;
        char *s = strdup(""), *t;
        size_t i;

        json_array_foreach(a, i, v)
        {
                assert_true(asprintf(&t, "%s%s%s", s, i ? "," : "", json_string_value(v)) >= 0);
                free(s);
                s = t;
        }
        return s;
}

static void assert_list(json_t *res, const char *key, const char *want)
{
        _cleanup_free_ char *s = list(res, key);

        assert_string_equal(s, want);
}

static void test_v4a_apply_update(void **state)
{
        struct tool_fixture *f = *state;
        json_t *res;

        fixture_write(f, "a.txt", "one\ntwo\nthree\n");
        res = apply(f, "*** Begin Patch\n"
                       "*** Update File: a.txt\n"
                       "@@ two @@\n"
                       " one\n"
                       "-two\n"
                       "+TWO\n"
                       "*** End Patch\n");
        assert_tool_success(res);
        assert_file(f, "a.txt", "one\nTWO\nthree\n");
        assert_string_equal(result_str(res, "diff"), "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n"
                                                     " one\n-two\n+TWO\n three\n");
        assert_list(res, "files_modified", "a.txt");
        assert_null(json_object_get(res, "files_created"));
        assert_null(json_object_get(res, "files_deleted"));
        assert_null(json_object_get(res, "error"));
        assert_string_equal(
                result_str(json_object_get(json_object_get(res, "lint"), "a.txt"), "status"),
                "skipped");
        json_decref(res);
}

static void test_v4a_apply_all_operations(void **state)
{
        struct tool_fixture *f = *state;
        json_t *res;

        fixture_write(f, "upd.txt", "x\ny\n");
        fixture_write(f, "del.txt", "bye\nnow\n");
        fixture_write(f, "mv.txt", "moving\n");
        res = apply(f, "*** Begin Patch\n"
                       "*** Add File: sub/dir/new.txt\n"
                       "+first\n"
                       "+second\n"
                       "*** Update File: upd.txt\n"
                       "-y\n"
                       "+Y\n"
                       "*** Delete File: del.txt\n"
                       "*** Move File: mv.txt -> moved/mv.txt\n"
                       "*** End Patch\n");
        assert_tool_success(res);
        assert_file(f, "sub/dir/new.txt", "first\nsecond");
        assert_file(f, "upd.txt", "x\nY\n");
        assert_file(f, "del.txt", NULL);
        assert_file(f, "mv.txt", NULL);
        assert_file(f, "moved/mv.txt", "moving\n");
        assert_list(res, "files_created", "sub/dir/new.txt");
        assert_list(res, "files_modified", "upd.txt,mv.txt -> moved/mv.txt");
        assert_list(res, "files_deleted", "del.txt");
        assert_string_equal(result_str(res, "diff"),
                            "--- /dev/null\n+++ b/sub/dir/new.txt\n+first\n+second\n"
                            "--- a/upd.txt\n+++ b/upd.txt\n@@ -1,2 +1,2 @@\n"
                            " x\n-y\n+Y\n\n"
                            "--- a/del.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n"
                            "-bye\n-now\n\n"
                            "# Moved: mv.txt -> moved/mv.txt");
        json_decref(res);
}

static void test_v4a_apply_validation_failure_is_atomic(void **state)
{
        struct tool_fixture *f = *state;
        json_t *res;

        fixture_write(f, "a.txt", "alpha\nbeta\n");
        fixture_write(f, "b.txt", "gamma\n");
        res = apply(f, "*** Begin Patch\n"
                       "*** Update File: a.txt\n"
                       "-alpha\n"
                       "+ALPHA\n"
                       "*** Add File: c.txt\n"
                       "+new\n"
                       "*** Delete File: b.txt\n"
                       "*** Update File: a.txt\n"
                       "@@ nowhere @@\n"
                       "-delta\n"
                       "+DELTA\n"
                       "*** Delete File: missing.txt\n"
                       "*** Update File: missing.txt\n"
                       "-x\n"
                       "+y\n"
                       "*** End Patch\n");
        assert_tool_failure(res, "Patch validation failed (no files were modified):\n"
                                 "  • a.txt: hunk 'nowhere' not found — Could not find a match for "
                                 "old_string in the file\n\n"
                                 /* the sections come from the content after the first hunk */
                                 "Did you mean one of these sections?\n"
                                 "   1| ALPHA\n"
                                 "   2| beta\n"
                                 "  • missing.txt: file not found for deletion\n"
                                 "  • missing.txt: File not found: missing.txt");
        assert_null(json_object_get(res, "diff"));
        assert_null(json_object_get(res, "files_modified"));
        assert_file(f, "a.txt", "alpha\nbeta\n");
        assert_file(f, "b.txt", "gamma\n");
        assert_file(f, "c.txt", NULL);
        json_decref(res);
}

static void test_v4a_apply_add_existing_file(void **state)
{
        struct tool_fixture *f = *state;
        json_t *res;

        fixture_write(f, "a.txt", "keep me\n");
        res = apply(f, "*** Add File: a.txt\n+clobber\n");
        assert_tool_failure(res, "Patch validation failed (no files were modified):\n"
                                 "  • a.txt: file already exists — use Update File, not Add File");
        assert_file(f, "a.txt", "keep me\n");
        json_decref(res);

        /* Freed earlier in the same patch: allowed. */
        res = apply(f, "*** Delete File: a.txt\n*** Add File: a.txt\n+fresh\n");
        assert_tool_success(res);
        assert_file(f, "a.txt", "fresh");
        json_decref(res);
}

static void test_v4a_apply_move_then_update(void **state)
{
        struct tool_fixture *f = *state;
        json_t *res;

        fixture_write(f, "old.txt", "hello\nworld\n");
        fixture_write(f, "taken.txt", "x\n");
        res = apply(f, "*** Move File: old.txt -> new.txt\n"
                       "*** Update File: new.txt\n"
                       "-world\n"
                       "+there\n");
        assert_tool_success(res);
        assert_file(f, "old.txt", NULL);
        assert_file(f, "new.txt", "hello\nthere\n");
        assert_list(res, "files_modified", "old.txt -> new.txt,new.txt");
        json_decref(res);

        /* The overlay also knows the old name is gone and the new one is taken. */
        res = apply(f, "*** Move File: new.txt -> taken.txt\n"
                       "*** Update File: new.txt\n"
                       "-hello\n"
                       "+bye\n");
        assert_tool_failure(res,
                            "Patch validation failed (no files were modified):\n"
                            "  • taken.txt: destination already exists — move would overwrite");
        json_decref(res);
        res = apply(f, "*** Move File: new.txt -> other.txt\n"
                       "*** Update File: new.txt\n"
                       "-hello\n"
                       "+bye\n");
        assert_tool_failure(res, "Patch validation failed (no files were modified):\n"
                                 "  • new.txt: File not found: new.txt");
        assert_file(f, "new.txt", "hello\nthere\n");
        assert_file(f, "other.txt", NULL);
        json_decref(res);
}

static void test_v4a_apply_update_move_to(void **state)
{
        struct tool_fixture *f = *state;
        _cleanup_free_ char *src = path_join(f->dir, "run.sh"), *dst = NULL;
        struct stat st;
        json_t *res;

        fixture_write(f, "run.sh", "#!/bin/sh\necho old\n");
        assert_int_equal(chmod(src, 0751), 0);
        res = apply(f, "*** Begin Patch\n"
                       "*** Update File: run.sh\n"
                       "*** Move to: bin/run.sh\n"
                       "@@\n"
                       "-echo old\n"
                       "+echo new\n"
                       "*** End of File\n"
                       "*** End Patch\n");
        assert_tool_success(res);
        assert_file(f, "run.sh", NULL);
        assert_file(f, "bin/run.sh", "#!/bin/sh\necho new\n");
        dst = path_join(f->dir, "bin/run.sh");
        assert_int_equal(stat(dst, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0751);
        assert_list(res, "files_modified", "run.sh -> bin/run.sh");
        assert_string_equal(result_str(res, "diff"),
                            "--- a/run.sh\n+++ b/bin/run.sh\n@@ -1,2 +1,2 @@\n"
                            " #!/bin/sh\n-echo old\n+echo new\n");
        assert_non_null(json_object_get(json_object_get(res, "lint"), "bin/run.sh"));
        json_decref(res);

        /* The overlay knows the new name: a later Update of it sees the renamed content. */
        fixture_write(f, "x.txt", "1\n");
        res = apply(f, "*** Update File: x.txt\n*** Move to: y.txt\n-1\n+2\n"
                       "*** Update File: y.txt\n-2\n+3\n");
        assert_tool_success(res);
        assert_file(f, "x.txt", NULL);
        assert_file(f, "y.txt", "3\n");
        assert_list(res, "files_modified", "x.txt -> y.txt,y.txt");
        json_decref(res);

        /* A pure rename through Move to. */
        res = apply(f, "*** Update File: bin/run.sh\n*** Move to: run2.sh\n");
        assert_tool_success(res);
        assert_string_equal(result_str(res, "diff"), "# Moved: bin/run.sh -> run2.sh");
        assert_file(f, "run2.sh", "#!/bin/sh\necho new\n");
        json_decref(res);
}

static void test_v4a_apply_blank_context_line(void **state)
{
        struct tool_fixture *f = *state;
        json_t *res;

        fixture_write(
                f, "a.py",
                "def f():\n    x = 1\n\n    return x\n\n\ndef g():\n    x = 1\n    return x\n");
        /* Without the blank line the block would match g() too, or nothing at all. */
        res = apply(f, "*** Update File: a.py\n"
                       "     x = 1\n"
                       "\n"
                       "-    return x\n"
                       "+    return x + 1\n");
        assert_tool_success(res);
        assert_file(f, "a.py",
                    "def f():\n    x = 1\n\n    return x + 1\n\n\ndef g():\n    x = 1\n"
                    "    return x\n");
        json_decref(res);
}

static void test_v4a_apply_addition_only(void **state)
{
        struct tool_fixture *f = *state;
        json_t *res;

        fixture_write(f, "a.txt", "[one]\nx\n[two]\ny\n\n\n");
        res = apply(f, "*** Update File: a.txt\n@@ [two] @@\n+inserted\n");
        assert_tool_success(res);
        assert_file(f, "a.txt", "[one]\nx\n[two]\ninserted\ny\n\n\n");
        json_decref(res);

        /* No hint: trailing newlines trimmed, then the text and a newline. */
        res = apply(f, "*** Update File: a.txt\n+tail\n");
        assert_tool_success(res);
        assert_file(f, "a.txt", "[one]\nx\n[two]\ninserted\ny\ntail\n");
        json_decref(res);

        res = apply(
                f,
                "*** Update File: a.txt\n@@ [ @@\n+z\n*** Update File: a.txt\n@@ [three] @@\n+z\n");
        assert_tool_failure(res, "Patch validation failed (no files were modified):\n"
                                 "  • a.txt: addition-only hunk context hint '[' is ambiguous (2 "
                                 "occurrences)\n"
                                 "  • a.txt: addition-only hunk context hint '[three]' not found");
        json_decref(res);

        /* A hint on the last line, which has no newline. */
        fixture_write(f, "b.txt", "end");
        res = apply(f, "*** Update File: b.txt\n@@ end @@\n+after\n");
        assert_tool_success(res);
        assert_file(f, "b.txt", "end\nafter");
        json_decref(res);
}

static void test_v4a_apply_not_found_did_you_mean(void **state)
{
        struct tool_fixture *f = *state;
        json_t *res;

        fixture_write(
                f, "a.py",
                "import os\n\ndef compute(a, b):\n    return a + b\n\nprint(compute(1, 2))\n");
        res = apply(f, "*** Update File: a.py\n"
                       "@@ def compute @@\n"
                       " def missing_function():\n"
                       "-    pass\n"
                       "+    return 1\n");
        assert_tool_failure(res, "Patch validation failed (no files were modified):\n"
                                 "  • a.py: hunk 'def compute' not found — Could not find a match "
                                 "for old_string in the file\n\n"
                                 "Did you mean one of these sections?\n"
                                 "   1| import os\n"
                                 "   2| \n"
                                 "   3| def compute(a, b):\n"
                                 "   4|     return a + b\n"
                                 "   5| \n"
                                 "   6| print(compute(1, 2))");
        assert_file(f, "a.py",
                    "import os\n\ndef compute(a, b):\n    return a + b\n\nprint(compute(1, 2))\n");
        json_decref(res);
}

static void test_v4a_apply_ambiguous_and_window(void **state)
{
        struct tool_fixture *f = *state;
        _cleanup_free_ char *content = NULL, *want = NULL, *pad = NULL;
        json_t *res;

        /* The same block twice, 3000 characters apart: ambiguous for the whole file ... */
        pad = malloc(3001);
        assert_non_null(pad);
        memset(pad, '#', 3000);
        pad[3000] = 0;
        assert_true(asprintf(&content, "[first]\nvalue = 1\n%s\n[second]\nvalue = 1\n", pad) > 0);
        fixture_write(f, "c.ini", content);
        res = apply(f, "*** Update File: c.ini\n-value = 1\n+value = 2\n");
        assert_tool_failure(res, "Patch validation failed (no files were modified):\n"
                                 "  • c.ini: hunk (no hint) not found — Found 2 matches for "
                                 "old_string. Provide more context to make it unique, or use "
                                 "replace_all=True.");
        json_decref(res);
        assert_file(f, "c.ini", content);

        /* ... but unique in the window around the hint. */
        res = apply(f, "*** Update File: c.ini\n@@ [second] @@\n-value = 1\n+value = 2\n");
        assert_tool_success(res);
        assert_true(asprintf(&want, "[first]\nvalue = 1\n%s\n[second]\nvalue = 2\n", pad) > 0);
        assert_file(f, "c.ini", want);
        json_decref(res);
}

static void test_v4a_apply_no_changes(void **state)
{
        struct tool_fixture *f = *state;
        json_t *res;

        fixture_write(f, "a.txt", "a\nb\n");
        res = apply(f, "*** Update File: a.txt\n a\n b\n");
        assert_tool_failure(res,
                            "Patch validation failed (no files were modified):\n"
                            "  • Patch contains no changes (only context lines were provided)");
        json_decref(res);
        res = apply(f, "*** Begin Patch\n*** End Patch\n");
        assert_tool_failure(res, "Patch validation failed (no files were modified):\n"
                                 "  • Patch contains no changes (no file operations were found)");
        json_decref(res);

        /* A context-only hunk between real ones is inert. */
        res = apply(f, "*** Update File: a.txt\n@@\n a\n@@\n-b\n+B\n");
        assert_tool_success(res);
        assert_file(f, "a.txt", "a\nB\n");
        json_decref(res);
}

static void test_v4a_apply_parse_error(void **state)
{
        struct tool_fixture *f = *state;
        json_t *res = apply(f, "*** Update File: a.txt\n*** Move File: b\n");

        assert_tool_failure(res,
                            "Failed to parse patch: Parse error: UPDATE 'a.txt': no hunks found; "
                            "MOVE 'b': missing destination path (expected 'src -> dst')");
        json_decref(res);
}

static void test_v4a_apply_deny_list(void **state)
{
        struct tool_fixture *f = *state;
        _cleanup_free_ char *want = NULL;
        json_t *res;

        fixture_write(f, "a.txt", "a\n");
        fixture_write(f, "home/.bashrc", "export A=1\n");
        res = apply(f, "*** Update File: a.txt\n-a\n+b\n"
                       "*** Move File: a.txt -> ~/.ssh/config\n"
                       "*** Update File: ~/.bashrc\n-export A=1\n+export A=2\n");
        assert_true(
                asprintf(&want,
                         "Patch validation failed (no files were modified):\n"
                         "  • Write denied: '%s/.ssh/config' is a protected system/credential "
                         "file.\n"
                         "  • Write denied: '%s/.bashrc' is a protected system/credential file.",
                         f->home, f->home) > 0);
        assert_tool_failure(res, want);
        assert_file(f, "a.txt", "a\n");
        assert_file(f, "home/.bashrc", "export A=1\n");
        json_decref(res);
}

static void test_v4a_apply_sensitive_path(void **state)
{
        struct tool_fixture *f = *state;
        json_t *res = apply(f, "*** Move File: x -> /etc/ptc-test\n");

        assert_string_equal(result_str(res, "error"),
                            "Refusing to write to sensitive system path: /etc/ptc-test\nUse the "
                            "terminal tool with sudo if you need to modify system files.");
        assert_null(json_object_get(res, "success"));
        json_decref(res);
}

static void test_v4a_apply_crlf_file(void **state)
{
        struct tool_fixture *f = *state;
        json_t *res;

        fixture_write(f, "w.txt", "one\r\ntwo\r\nthree\r\n");
        res = apply(f, "*** Begin Patch\r\n*** Update File: w.txt\r\n one\r\n-two\r\n+TWO\r\n"
                       "*** End Patch\r\n");
        assert_tool_success(res);
        assert_file(f, "w.txt", "one\r\nTWO\r\nthree\r\n");
        json_decref(res);
}

static void test_v4a_apply_delete_and_move_checks(void **state)
{
        struct tool_fixture *f = *state;
        _cleanup_free_ char *d = path_join(f->dir, "adir");
        json_t *res;

        assert_int_equal(mkdir(d, 0755), 0);
        fixture_write(f, "empty.txt", "");
        fixture_write(f, "dst.txt", "d\n");
        fixture_write(f, "src.txt", "s\n");
        res = apply(f, "*** Delete File: adir\n"
                       "*** Move File: nope.txt -> dst.txt\n"
                       "*** Move File: src.txt -> src.txt\n");
        assert_tool_failure(res, "Patch validation failed (no files were modified):\n"
                                 "  • adir: is a directory or special file; Delete File removes "
                                 "regular files only\n"
                                 "  • nope.txt: source file not found for move\n"
                                 "  • dst.txt: destination already exists — move would overwrite\n"
                                 "  • src.txt: source and destination are the same file");
        json_decref(res);

        res = apply(f, "*** Delete File: empty.txt\n");
        assert_tool_success(res);
        assert_string_equal(result_str(res, "diff"), "# Deleted: empty.txt");
        assert_list(res, "files_deleted", "empty.txt");
        assert_file(f, "empty.txt", NULL);
        json_decref(res);
}

static void test_v4a_apply_lint_json(void **state)
{
        struct tool_fixture *f = *state;
        json_t *res, *l;

        res = apply(f, "*** Add File: conf.json\n+{\"a\": }\n");
        assert_tool_success(res);
        l = json_object_get(json_object_get(res, "lint"), "conf.json");
        assert_string_equal(result_str(l, "status"), "error");
        assert_non_null(strstr(result_str(l, "output"), "JSONDecodeError"));
        json_decref(res);

        res = apply(f, "*** Update File: conf.json\n-{\"a\": }\n+{\"a\": 1}\n");
        assert_tool_success(res);
        l = json_object_get(json_object_get(res, "lint"), "conf.json");
        assert_string_equal(result_str(l, "status"), "ok");
        json_decref(res);
}

static void test_v4a_apply_same_file_twice(void **state)
{
        struct tool_fixture *f = *state;
        json_t *res;

        /* Updating a file twice applies the hunks in order on the simulated content. */
        fixture_write(f, "t.txt", "1\n2\n3\n");
        res = apply(f, "*** Update File: t.txt\n-1\n+one\n*** Update File: t.txt\n-one\n+ONE\n");
        assert_tool_success(res);
        assert_file(f, "t.txt", "ONE\n2\n3\n");
        assert_list(res, "files_modified", "t.txt,t.txt");
        json_decref(res);
}

static void test_v4a_apply_hostile_bytes(void **state)
{
        struct tool_fixture *f = *state;
        static const char content[] = "a\0b\nc\xff\xfe\nend\n";
        static const char patch[] = "*** Update File: bin.dat\n-c\xff\xfe\n+d\0e\n";
        static const char want[] = "a\0b\nd\0e\nend\n";
        _cleanup_free_ char *path = path_join(f->dir, "bin.dat"), *got = NULL;
        json_t *res = NULL, *d;
        size_t len = 0;

        assert_int_equal(write_file_atomic(path, content, sizeof(content) - 1, 0644), 0);
        assert_int_equal(v4a_apply(&f->ctx, patch, sizeof(patch) - 1, &res), 0);
        assert_tool_success(res);
        assert_int_equal(read_file_at(AT_FDCWD, path, 1024, &got, &len), 0);
        assert_int_equal(len, sizeof(want) - 1);
        assert_memory_equal(got, want, len);
        /* The diff is valid UTF-8 JSON (NULs kept, invalid bytes as U+FFFD). */
        d = json_object_get(res, "diff");
        assert_true(json_is_string(d));
        assert_non_null(memmem(json_string_value(d), json_string_length(d), " a\0b\n", 5));
        assert_non_null(memmem(json_string_value(d), json_string_length(d),
                               "-c\xef\xbf\xbd\xef\xbf\xbd\n+d\0e\n", 14));
        json_decref(res);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_v4a_parse_basic),
                cmocka_unit_test(test_v4a_parse_markers_whole_lines),
                cmocka_unit_test(test_v4a_parse_without_markers_and_last_begin),
                cmocka_unit_test(test_v4a_parse_crlf),
                cmocka_unit_test(test_v4a_parse_blank_lines),
                cmocka_unit_test(test_v4a_parse_move_to_and_end_of_file),
                cmocka_unit_test(test_v4a_parse_hints),
                cmocka_unit_test(test_v4a_parse_implicit_context_and_backslash),
                cmocka_unit_test(test_v4a_parse_errors),
                cmocka_unit_test(test_v4a_parse_hostile),
                cmocka_unit_test_setup_teardown(test_v4a_apply_update, setup, teardown),
                cmocka_unit_test_setup_teardown(test_v4a_apply_all_operations, setup, teardown),
                cmocka_unit_test_setup_teardown(test_v4a_apply_validation_failure_is_atomic, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_v4a_apply_add_existing_file, setup, teardown),
                cmocka_unit_test_setup_teardown(test_v4a_apply_move_then_update, setup, teardown),
                cmocka_unit_test_setup_teardown(test_v4a_apply_update_move_to, setup, teardown),
                cmocka_unit_test_setup_teardown(test_v4a_apply_blank_context_line, setup, teardown),
                cmocka_unit_test_setup_teardown(test_v4a_apply_addition_only, setup, teardown),
                cmocka_unit_test_setup_teardown(test_v4a_apply_not_found_did_you_mean, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_v4a_apply_ambiguous_and_window, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_v4a_apply_no_changes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_v4a_apply_parse_error, setup, teardown),
                cmocka_unit_test_setup_teardown(test_v4a_apply_deny_list, setup, teardown),
                cmocka_unit_test_setup_teardown(test_v4a_apply_sensitive_path, setup, teardown),
                cmocka_unit_test_setup_teardown(test_v4a_apply_crlf_file, setup, teardown),
                cmocka_unit_test_setup_teardown(test_v4a_apply_delete_and_move_checks, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_v4a_apply_lint_json, setup, teardown),
                cmocka_unit_test_setup_teardown(test_v4a_apply_same_file_twice, setup, teardown),
                cmocka_unit_test_setup_teardown(test_v4a_apply_hostile_bytes, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
