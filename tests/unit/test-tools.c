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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <jansson.h>

#include "../lib/tool-fixture.h"
#include "basic/fd-util.h"
#include "basic/macro.h"
#include "basic/path-util.h"
#include "basic/time-util.h"
#include "core/config/config.h"
#include "core/fs/file-safety.h"
#include "core/fs/fs-chase.h"
#include "core/tools/tool-util.h"
#include "core/tools/tool.h"

#define PYTHON "/usr/bin/python3"

static int setup(void **state)
{
        return tool_fixture_setup(state, "tools", PYTHON);
}

static int teardown(void **state)
{
        return tool_fixture_teardown(state);
}

/* Run @def with the JSON @args; returns the result (caller decrefs). */
static json_t *run_tool(const struct tool_def *def, const struct tool_ctx *ctx, const char *args)
{
        json_error_t err;
        json_t *a = json_loads(args, 0, &err), *res = NULL;
        int r;

        assert_non_null(a);
        r = def->run(NULL, ctx, a, &res);
        json_decref(a);
        assert_int_equal(r, 0);
        assert_non_null(res);
        return res;
}

/* Like run_tool() with args built by printf (paths in the temp dir). */
static json_t *run_toolf(const struct tool_def *def, const struct tool_ctx *ctx, const char *fmt,
                         ...) _printf_(3, 4);
static json_t *run_toolf(const struct tool_def *def, const struct tool_ctx *ctx, const char *fmt,
                         ...)
{
        char *s = NULL;
        va_list ap;
        json_t *r;

        va_start(ap, fmt);
        assert_true(vasprintf(&s, fmt, ap) >= 0);
        va_end(ap);
        r = run_tool(def, ctx, s);
        free(s);
        return r;
}

static json_int_t iget(json_t *o, const char *key)
{
        json_t *v = json_object_get(o, key);

        assert_non_null(v);
        assert_true(json_is_integer(v));
        return json_integer_value(v);
}

static void write_path(const char *path, const void *p, size_t n)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        assert_true(fd >= 0);
        assert_int_equal(write_all(fd, p, n), 0);
        close(fd);
}

/* ------------------------------------------------------------------------------------------ */
/* tool-util                                                                                  */

static void test_tool_arg_int_coercion(void **state)
{
        json_t *a = json_loads("{\"a\": 42, \"b\": \"17\", \"c\": 3.0, \"d\": 3.5, \"e\": \"x\", "
                               "\"f\": null, \"g\": true, \"h\": \" 8 \"}",
                               0, NULL);
        const char *err = NULL;
        int64_t v;

        (void) state;
        assert_non_null(a);
        assert_int_equal(tool_arg_int(a, "a", 0, &v, &err), 0);
        assert_int_equal(v, 42);
        assert_int_equal(tool_arg_int(a, "b", 0, &v, &err), 0);
        assert_int_equal(v, 17);
        assert_int_equal(tool_arg_int(a, "c", 0, &v, &err), 0);
        assert_int_equal(v, 3);
        assert_int_equal(tool_arg_int(a, "h", 0, &v, &err), 0);
        assert_int_equal(v, 8);
        assert_int_equal(tool_arg_int(a, "d", 0, &v, &err), -EINVAL);
        assert_string_equal(err, "expected an integer");
        assert_int_equal(tool_arg_int(a, "e", 0, &v, &err), -EINVAL);
        assert_int_equal(tool_arg_int(a, "g", 0, &v, &err), -EINVAL);
        assert_int_equal(tool_arg_int(a, "f", 7, &v, &err), 0);
        assert_int_equal(v, 7);
        assert_int_equal(tool_arg_int(a, "missing", 9, &v, &err), 0);
        assert_int_equal(v, 9);
        json_decref(a);
}

static void test_tool_arg_bool_and_string(void **state)
{
        json_t *a = json_loads("{\"t\": true, \"s\": \"false\", \"S\": \"TRUE\", \"n\": 1, "
                               "\"str\": \"hi\", \"num\": 5}",
                               0, NULL);
        const char *err = NULL, *s = "x";
        bool b;

        (void) state;
        assert_non_null(a);
        assert_int_equal(tool_arg_bool(a, "t", false, &b, &err), 0);
        assert_true(b);
        assert_int_equal(tool_arg_bool(a, "s", true, &b, &err), 0);
        assert_false(b);
        assert_int_equal(tool_arg_bool(a, "S", false, &b, &err), 0);
        assert_true(b);
        assert_int_equal(tool_arg_bool(a, "n", false, &b, &err), -EINVAL);
        assert_int_equal(tool_arg_bool(a, "none", true, &b, &err), 0);
        assert_true(b);
        assert_int_equal(tool_arg_string(a, "str", &s, &err), 0);
        assert_string_equal(s, "hi");
        assert_int_equal(tool_arg_string(a, "none", &s, &err), 0);
        assert_null(s);
        assert_int_equal(tool_arg_string(a, "num", &s, &err), -EINVAL);
        assert_string_equal(err, "expected a string");
        json_decref(a);
}

static void test_tool_resolve_path_tilde(void **state)
{
        struct tool_fixture *f = *state;
        char want[256];
        char *p;

        p = tool_resolve_path(&f->ctx, "~/x/y");
        (void) snprintf(want, sizeof(want), "%s/x/y", f->home);
        assert_string_equal(p, want);
        free(p);
        p = tool_resolve_path(&f->ctx, "~");
        assert_string_equal(p, f->home);
        free(p);
        p = tool_resolve_path(&f->ctx, "rel/a");
        (void) snprintf(want, sizeof(want), "%s/rel/a", f->dir);
        assert_string_equal(p, want);
        free(p);
        p = tool_resolve_path(&f->ctx, "/abs");
        assert_string_equal(p, "/abs");
        free(p);
        p = tool_resolve_path(&f->ctx, "~nosuchuser_ptc_zz/a");
        (void) snprintf(want, sizeof(want), "%s/~nosuchuser_ptc_zz/a", f->dir);
        assert_string_equal(p, want);
        free(p);
        assert_string_equal(tool_env_get(&f->ctx, "FOO_TEST"), "bar");
        assert_null(tool_env_get(&f->ctx, "FOO"));
}

static void test_file_safety_normpath(void **state)
{
        static const char *const cases[][2] = {
                {"", "."},
                {"/", "/"},
                {"//a", "//a"},
                {"///a/", "/a"},
                {"a/./b/../c", "a/c"},
                {"../x", "../x"},
                {"/../x", "/x"},
                {"a/..", "."},
                {"/etc/../tmp/x", "/tmp/x"},
        };

        (void) state;
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *p = NULL;

                assert_int_equal(file_safety_normpath(cases[i][0], &p), 0);
                assert_string_equal(p, cases[i][1]);
                free(p);
        }
}

static void test_file_safety_realpath_lenient(void **state)
{
        struct tool_fixture *f = *state;
        char link[256], path[256], want[256];
        char *r = NULL, *real_dir = realpath(f->dir, NULL);

        assert_non_null(real_dir);
        (void) snprintf(link, sizeof(link), "%s/lnk", f->dir);
        assert_int_equal(symlink("home", link), 0);
        (void) snprintf(path, sizeof(path), "%s/lnk/missing/../new.txt", f->dir);
        assert_int_equal(file_safety_realpath(path, &r), 0);
        (void) snprintf(want, sizeof(want), "%s/home/new.txt", real_dir);
        assert_string_equal(r, want);
        free(r);

        /* A dangling symlink is followed to where its target would be. */
        (void) snprintf(link, sizeof(link), "%s/dangling", f->dir);
        assert_int_equal(symlink("home/later.txt", link), 0);
        assert_int_equal(file_safety_realpath(link, &r), 0);
        (void) snprintf(want, sizeof(want), "%s/home/later.txt", real_dir);
        assert_string_equal(r, want);
        free(r);
        free(real_dir);

        assert_true(file_safety_is_blocked_device("/dev/zero"));
        assert_true(file_safety_is_blocked_device("/proc/123/fd/1"));
        assert_false(file_safety_is_blocked_device("/dev/null"));
        assert_true(file_safety_has_binary_extension("/a/b.TAR.GZ"));
        assert_false(file_safety_has_binary_extension("/a/report.pdf"));
        assert_false(file_safety_has_binary_extension("/a.zip/notes"));
}

/* @name in the fixture's directory; four buffers in turn, for calls that take two paths. */
static const char *path_in(const struct tool_fixture *f, const char *name)
{
        static char bufs[4][512];
        static unsigned next;
        char *b = bufs[next++ % 4];

        (void) snprintf(b, sizeof(bufs[0]), "%s/%s", f->dir, name);
        return b;
}

/*
 * fs_chase(): ".." after a symlink is the kernel's (the link target's parent), a missing tail
 * is appended (no ".." in it), loops stop at FS_CHASE_HOPS_MAX, magic links are refused,
 * /proc/self is followed, the descriptor reaches the object whatever its name does later,
 * missing directories are made from the walk's descriptors, and fs_open_no_symlinks()
 * refuses a path with a symlink on the way.
 */
static void test_fs_chase(void **state)
{
        struct tool_fixture *f = *state;
        _cleanup_free_ char *real_dir = realpath(f->dir, NULL);
        struct fs_chased c = FS_CHASED_INIT;
        char p[512], want[512], buf[16];
        int fd;

        assert_non_null(real_dir);
        assert_int_equal(mkdir(path_in(f, "a"), 0755), 0);
        assert_int_equal(mkdir(path_in(f, "a/b"), 0755), 0);
        fixture_write(f, "s", "secret\n");
        fixture_write(f, "a/x", "x\n");
        assert_int_equal(symlink("a/b", path_in(f, "link")), 0);
        assert_int_equal(symlink("loop", path_in(f, "loop")), 0);

        /* link/../x: link is a/b, its parent a, so a/x; the text's ".." would say ./x. */
        (void) snprintf(p, sizeof(p), "%s/link/../x", f->dir);
        assert_int_equal(fs_chase(p, 0, &c), 0);
        (void) snprintf(want, sizeof(want), "%s/a/x", real_dir);
        assert_string_equal(c.path, want);
        assert_true(c.exists);
        assert_string_equal(c.name, "x");
        /* The descriptor is the object: renamed away, it still reads the same file. */
        assert_int_equal(rename(path_in(f, "a/x"), path_in(f, "a/moved")), 0);
        fixture_write(f, "a/x", "other\n");
        fd = fs_chased_open(&c, O_RDONLY);
        assert_true(fd >= 0);
        assert_int_equal(read(fd, buf, sizeof(buf)), 2);
        assert_memory_equal(buf, "x\n", 2);
        close(fd);
        fs_chased_done(&c);

        /* A missing tail, and directories made for it. */
        (void) snprintf(p, sizeof(p), "%s/link/n1/n2/f", f->dir);
        assert_int_equal(fs_chase(p, FS_CHASE_MISSING_OK, &c), 0);
        (void) snprintf(want, sizeof(want), "%s/a/b/n1/n2/f", real_dir);
        assert_string_equal(c.path, want);
        assert_false(c.exists);
        assert_string_equal(c.missing, "n1/n2/f");
        assert_int_equal(fs_chased_mkdirs(&c, 0755), 2);
        assert_string_equal(c.name, "f");
        assert_int_equal(faccessat(c.dir_fd, ".", F_OK, 0), 0);
        fs_chased_done(&c);
        assert_int_equal(fs_chase(p, 0, &c), -ENOENT);
        fs_chased_done(&c);
        (void) snprintf(p, sizeof(p), "%s/nope/../s", f->dir);
        assert_int_equal(fs_chase(p, FS_CHASE_MISSING_OK, &c), -ENOENT);
        fs_chased_done(&c);

        (void) snprintf(p, sizeof(p), "%s/loop", f->dir);
        assert_int_equal(fs_chase(p, 0, &c), -ELOOP);
        fs_chased_done(&c);
        assert_int_equal(fs_chase("/proc/self/cwd", 0, &c), -EXDEV);
        fs_chased_done(&c);
        assert_int_equal(fs_chase("/proc/self/root/etc", 0, &c), -EXDEV);
        fs_chased_done(&c);
        assert_int_equal(fs_chase("/proc/self/status", 0, &c), 0);
        (void) snprintf(want, sizeof(want), "/proc/%d/status", (int) getpid());
        assert_string_equal(c.path, want);
        fs_chased_done(&c);
        assert_int_equal(fs_chase("relative", 0, &c), -EINVAL);
        fs_chased_done(&c);
        assert_int_equal(fs_chase("/", 0, &c), 0);
        assert_string_equal(c.path, "/");
        assert_null(c.name);
        fs_chased_done(&c);

        /* ELOOP from openat2(); where it is missing (valgrind), open(O_NOFOLLOW|O_DIRECTORY)
         * of the link says ENOTDIR. Either way it is not followed. */
        (void) snprintf(p, sizeof(p), "%s/link", f->dir);
        fd = fs_open_no_symlinks(p, O_RDONLY | O_DIRECTORY);
        assert_true(fd == -ELOOP || fd == -ENOTDIR);
        /* A symlink before the last component: refused by the fallback's name check too. */
        (void) snprintf(p, sizeof(p), "%s/link/../b", f->dir);
        assert_int_equal(fs_open_no_symlinks(p, O_RDONLY | O_DIRECTORY), -ELOOP);
        (void) snprintf(p, sizeof(p), "%s/a/b", real_dir);
        fd = fs_open_no_symlinks(p, O_RDONLY | O_DIRECTORY);
        assert_true(fd >= 0);
        close(fd);
}

/* ------------------------------------------------------------------------------------------ */
/* read_file                                                                                  */

static void test_read_file_normal(void **state)
{
        struct tool_fixture *f = *state;
        json_t *r;
        char *dump;

        fixture_write(f, "a.txt", "alpha\nbeta\ngamma\n");
        r = run_tool(&tool_def_read_file, &f->ctx, "{\"path\": \"a.txt\"}");
        dump = json_dumps(r, JSON_COMPACT);
        /* The trailing-newline quirk: a 3-line file shows an empty line 4. */
        assert_string_equal(dump,
                            "{\"content\":\"     1|alpha\\n     2|beta\\n     3|gamma\\n     4|\","
                            "\"total_lines\":3,\"file_size\":17,\"truncated\":false,"
                            "\"is_binary\":false,\"is_image\":false}");
        free(dump);
        json_decref(r);
}

static void test_read_file_no_trailing_newline(void **state)
{
        struct tool_fixture *f = *state;
        json_t *r;

        fixture_write(f, "b.txt", "one\ntwo");
        r = run_tool(&tool_def_read_file, &f->ctx, "{\"path\": \"b.txt\", \"offset\": null}");
        assert_string_equal(result_str(r, "content"), "     1|one\n     2|two");
        /* wc -l counts newlines: one less than the lines shown. */
        assert_int_equal(iget(r, "total_lines"), 1);
        json_decref(r);

        fixture_write(f, "empty.txt", "");
        r = run_tool(&tool_def_read_file, &f->ctx, "{\"path\": \"empty.txt\"}");
        assert_string_equal(result_str(r, "content"), "     1|");
        assert_int_equal(iget(r, "total_lines"), 0);
        assert_int_equal(iget(r, "file_size"), 0);
        json_decref(r);
}

static void test_read_file_offset_limit(void **state)
{
        struct tool_fixture *f = *state;
        char buf[256] = "";
        json_t *r;

        for (int i = 1; i <= 10; i++) {
                char l[16];

                (void) snprintf(l, sizeof(l), "l%d\n", i);
                strncat(buf, l, sizeof(buf) - strlen(buf) - 1);
        }
        fixture_write(f, "ten.txt", buf);
        r = run_tool(&tool_def_read_file, &f->ctx,
                     "{\"path\": \"ten.txt\", \"offset\": \"3\", \"limit\": 2}");
        assert_string_equal(result_str(r, "content"), "     3|l3\n     4|l4\n     5|");
        assert_true(json_is_true(json_object_get(r, "truncated")));
        assert_string_equal(result_str(r, "hint"),
                            "Use offset=5 to continue reading (showing 3-4 of 10 lines)");
        json_decref(r);

        /* limit 0 is clamped to 1, offset 0 to 1; past the end shows one empty line. */
        r = run_tool(&tool_def_read_file, &f->ctx,
                     "{\"path\": \"ten.txt\", \"offset\": 0, \"limit\": 0}");
        assert_string_equal(result_str(r, "content"), "     1|l1\n     2|");
        json_decref(r);
        r = run_tool(&tool_def_read_file, &f->ctx, "{\"path\": \"ten.txt\", \"offset\": 50}");
        assert_string_equal(result_str(r, "content"), "    50|");
        assert_false(json_is_true(json_object_get(r, "truncated")));
        assert_null(json_object_get(r, "hint"));
        json_decref(r);
}

static void test_read_file_long_lines(void **state)
{
        struct tool_fixture *f = *state;
        size_t n = 3000 * 2;
        char *s = malloc(n + 2), *want;
        json_t *r;

        assert_non_null(s);
        for (size_t i = 0; i < n; i += 2)
                memcpy(s + i, "\xC3\xA9", 2); /* é */
        s[n] = '\n';
        s[n + 1] = 0;
        fixture_write(f, "long.txt", s);
        r = run_tool(&tool_def_read_file, &f->ctx, "{\"path\": \"long.txt\"}");
        want = malloc(4000 + 64);
        assert_non_null(want);
        memcpy(want, "     1|", 7);
        memcpy(want + 7, s, 4000);
        (void) snprintf(want + 7 + 4000, 64, "... [truncated]\n     2|");
        assert_string_equal(result_str(r, "content"), want);
        json_decref(r);
        free(want);
        free(s);

        /* A 20 MB single line is cut too, without being held in memory. */
        {
                char path[256];
                int fd;
                char block[65536];

                memset(block, 'x', sizeof(block));
                (void) snprintf(path, sizeof(path), "%s/huge-line.txt", f->dir);
                fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                assert_true(fd >= 0);
                for (int i = 0; i < 320; i++)
                        assert_int_equal(write_all(fd, block, sizeof(block)), 0);
                close(fd);
                r = run_tool(&tool_def_read_file, &f->ctx, "{\"path\": \"huge-line.txt\"}");
                assert_int_equal(strlen(result_str(r, "content")), 7 + 2000 + 15);
                assert_int_equal(iget(r, "total_lines"), 0);
                assert_int_equal(iget(r, "file_size"), 320 * 65536);
                json_decref(r);
        }
}

static void test_read_file_not_found_similar(void **state)
{
        struct tool_fixture *f = *state;
        json_t *r, *sim;

        fixture_write(f, "config.yaml", "a: 1\n");
        fixture_write(f, "config.json", "{}");
        fixture_write(f, "other.txt", "x");
        fixture_write(f, ".config.yml.swp", "x");
        r = run_tool(&tool_def_read_file, &f->ctx, "{\"path\": \"config.yml\"}");
        assert_string_equal(result_str(r, "error"), "File not found: config.yml");
        assert_string_equal(result_str(r, "content"), "");
        assert_int_equal(iget(r, "total_lines"), 0);
        sim = json_object_get(r, "similar_files");
        assert_int_equal(json_array_size(sim), 2);
        assert_string_equal(json_string_value(json_array_get(sim, 0)), "./config.json");
        assert_string_equal(json_string_value(json_array_get(sim, 1)), "./config.yaml");
        json_decref(r);

        /* Nothing similar: no similar_files key at all. */
        r = run_tool(&tool_def_read_file, &f->ctx, "{\"path\": \"home/zzz.q\"}");
        assert_string_equal(result_str(r, "error"), "File not found: home/zzz.q");
        assert_null(json_object_get(r, "similar_files"));
        json_decref(r);
}

static void test_read_file_binary(void **state)
{
        struct tool_fixture *f = *state;
        char path[256], data[600];
        json_t *r;

        r = run_tool(&tool_def_read_file, &f->ctx, "{\"path\": \"pic.PNG\"}");
        assert_string_equal(result_str(r, "error"),
                            "Cannot read binary file 'pic.PNG' (.png). Use vision_analyze for "
                            "images, or terminal to inspect binary files.");
        assert_null(json_object_get(r, "content"));
        json_decref(r);

        memset(data, 0, sizeof(data));
        memcpy(data + 500, "some text after the zeros", 25);
        (void) snprintf(path, sizeof(path), "%s/blob.txt", f->dir);
        write_path(path, data, sizeof(data));
        r = run_tool(&tool_def_read_file, &f->ctx, "{\"path\": \"blob.txt\"}");
        assert_true(json_is_true(json_object_get(r, "is_binary")));
        assert_int_equal(iget(r, "file_size"), 600);
        assert_string_equal(result_str(r, "error"), "Binary file - cannot display as text. Use "
                                                    "appropriate tools to handle this file type.");
        json_decref(r);
}

static void test_read_file_devices_fifo_dir(void **state)
{
        struct tool_fixture *f = *state;
        char path[256];
        usec_t t0;
        json_t *r;

        r = run_tool(&tool_def_read_file, &f->ctx, "{\"path\": \"/dev/zero\"}");
        assert_string_equal(result_str(r, "error"),
                            "Cannot read '/dev/zero': this is a device file "
                            "that would block or produce infinite output.");
        json_decref(r);
        r = run_tool(&tool_def_read_file, &f->ctx, "{\"path\": \"/proc/self/fd/0\"}");
        assert_non_null(strstr(result_str(r, "error"), "device file"));
        json_decref(r);

        /* A FIFO nobody writes to must not block the read. */
        (void) snprintf(path, sizeof(path), "%s/fifo", f->dir);
        assert_int_equal(mkfifo(path, 0600), 0);
        t0 = now_usec();
        r = run_tool(&tool_def_read_file, &f->ctx, "{\"path\": \"fifo\"}");
        assert_true(now_usec() - t0 < 10 * USEC_PER_SEC); /* hang guard */
        assert_non_null(strstr(result_str(r, "error"), "device file"));
        json_decref(r);

        r = run_tool(&tool_def_read_file, &f->ctx, "{\"path\": \"home\"}");
        assert_non_null(strstr(result_str(r, "error"), "it is a directory"));
        json_decref(r);

        r = run_tool(&tool_def_read_file, &f->ctx, "{\"path\": 5}");
        assert_non_null(strstr(result_str(r, "error"), "must be a string"));
        json_decref(r);
        r = run_tool(&tool_def_read_file, &f->ctx, "{\"path\": null}");
        assert_non_null(strstr(result_str(r, "error"), "missing required field 'path'"));
        json_decref(r);
}

static void test_read_file_huge_guard(void **state)
{
        struct tool_fixture *f = *state;
        char line[102], path[256];
        json_t *r;
        int fd;

        memset(line, 'y', 100);
        line[100] = '\n';
        (void) snprintf(path, sizeof(path), "%s/big.txt", f->dir);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        for (int i = 0; i < 3000; i++)
                assert_int_equal(write_all(fd, line, 101), 0);
        close(fd);

        r = run_tool(&tool_def_read_file, &f->ctx, "{\"path\": \"big.txt\", \"limit\": 2000}");
        /* 2000 lines of 7 + 100 chars, an empty line 2001 (7), 2000 joining newlines. */
        assert_string_equal(result_str(r, "error"),
                            "Read produced 216,007 characters which exceeds the safety limit "
                            "(100,000 chars). Use offset and limit to read a smaller range. The "
                            "file has 3000 lines total.");
        assert_string_equal(result_str(r, "path"), "big.txt");
        assert_int_equal(iget(r, "total_lines"), 3000);
        assert_int_equal(iget(r, "file_size"), 303000);
        json_decref(r);

        /* Within the guard; the large-file nudge appears only above 512,000 bytes. */
        r = run_tool(&tool_def_read_file, &f->ctx, "{\"path\": \"big.txt\", \"limit\": 300}");
        assert_int_equal(iget(r, "total_lines"), 3000);
        assert_null(json_object_get(r, "_hint"));
        json_decref(r);
}

static void test_read_file_invalid_utf8_and_tilde(void **state)
{
        struct tool_fixture *f = *state;
        char path[256];
        json_t *r;

        fixture_write(f, "bad.txt",
                      "a\xff\xfe"
                      "b\n");
        r = run_tool(&tool_def_read_file, &f->ctx, "{\"path\": \"bad.txt\"}");
        assert_string_equal(result_str(r, "content"), "     1|a\xEF\xBF\xBD\xEF\xBF\xBD"
                                                      "b\n     2|");
        json_decref(r);

        (void) snprintf(path, sizeof(path), "%s/notes.md", f->home);
        write_path(path, "hi\n", 3);
        r = run_tool(&tool_def_read_file, &f->ctx, "{\"path\": \"~/notes.md\"}");
        assert_string_equal(result_str(r, "content"), "     1|hi\n     2|");
        json_decref(r);
}

/* Names that are not UTF-8 (docs/protocol.md): escaped in results, unescaped in arguments. */
static void test_tool_json_name_and_escaped_paths(void **state)
{
        struct tool_fixture *f = *state;
        json_t *v, *o, *r;
        char *data;

        /* Names and messages: the escape form. Content: U+FFFD. */
        v = tool_json_str("caf\xe9");
        assert_string_equal(json_string_value(v), "caf\xf4\x8d\xb3\xa9");
        json_decref(v);
        v = tool_json_string("caf\xe9", 4);
        assert_string_equal(json_string_value(v), "caf\xef\xbf\xbd");
        json_decref(v);
        o = json_object();
        assert_int_equal(tool_json_set_name(o, "\xff.txt", json_integer(1)), 0);
        assert_int_equal(json_integer_value(json_object_get(o, "\xf4\x8d\xb3\xbf.txt")), 1);
        json_decref(o);
        r = tool_error_new("File not found: %s", "\xff");
        assert_string_equal(result_str(r, "error"), "File not found: \xf4\x8d\xb3\xbf");
        json_decref(r);

        /* An escaped path argument names the file with the raw bytes. */
        fixture_write(f, "caf\xe9.txt", "latin\n");
        r = run_tool(&tool_def_read_file, &f->ctx, "{\"path\": \"caf\xf4\x8d\xb3\xa9.txt\"}");
        assert_string_equal(result_str(r, "content"), "     1|latin\n     2|");
        json_decref(r);
        r = run_tool(&tool_def_write_file, &f->ctx,
                     "{\"path\": \"caf\xf4\x8d\xb3\xa9.txt\", \"content\": \"new\\n\"}");
        json_decref(r);
        data = fixture_read(f, "caf\xe9.txt");
        assert_non_null(data);
        assert_string_equal(data, "new\n");
        free(data);
        /* The not-found message names it in the escape form again. */
        r = run_tool(&tool_def_read_file, &f->ctx, "{\"path\": \"x\xf4\x8d\xb3\xa9\"}");
        assert_string_equal(result_str(r, "error"), "File not found: x\xf4\x8d\xb3\xa9");
        json_decref(r);
}

/* ------------------------------------------------------------------------------------------ */
/* write_file                                                                                 */

static void test_write_file_new_and_mkdir(void **state)
{
        struct tool_fixture *f = *state;
        json_t *r, *lint;
        char *data, *dump;

        r = run_tool(&tool_def_write_file, &f->ctx,
                     "{\"path\": \"sub/dir/new.txt\", \"content\": \"h\\u00e9llo\\n\"}");
        dump = json_dumps(r, JSON_COMPACT);
        assert_string_equal(dump, "{\"bytes_written\":7,\"dirs_created\":true,\"lint\":"
                                  "{\"status\":\"skipped\",\"message\":\"No linter for .txt "
                                  "files\"}}");
        free(dump);
        json_decref(r);
        data = fixture_read(f, "sub/dir/new.txt");
        assert_string_equal(data, "h\xC3\xA9llo\n");
        free(data);

        /* No parent component: dirs_created is false, as the seed's dirname() check. */
        r = run_tool(&tool_def_write_file, &f->ctx, "{\"path\": \"top\", \"content\": \"\"}");
        assert_false(json_is_true(json_object_get(r, "dirs_created")));
        lint = json_object_get(r, "lint");
        assert_string_equal(result_str(lint, "message"), "No linter for  files");
        json_decref(r);

        r = run_tool(&tool_def_write_file, &f->ctx, "{\"path\": \"x.txt\"}");
        assert_non_null(strstr(result_str(r, "error"), "missing required field 'content'"));
        json_decref(r);
        r = run_tool(&tool_def_write_file, &f->ctx, "{\"path\": \"x.txt\", \"content\": 5}");
        assert_string_equal(result_str(r, "error"),
                            "write_file: 'content' must be a string, got int.");
        json_decref(r);
        r = run_tool(&tool_def_write_file, &f->ctx, "{\"path\": \"\", \"content\": \"a\"}");
        assert_non_null(strstr(result_str(r, "error"), "missing required field 'path'"));
        json_decref(r);
}

static void test_write_file_keeps_mode(void **state)
{
        struct tool_fixture *f = *state;
        char path[256];
        struct stat st;
        json_t *r;
        char *data;

        (void) snprintf(path, sizeof(path), "%s/mode.txt", f->dir);
        write_path(path, "old", 3);
        assert_int_equal(chmod(path, 0640), 0);
        r = run_toolf(&tool_def_write_file, &f->ctx,
                      "{\"path\": \"%s\", \"content\": \"new content\"}", path);
        assert_int_equal(iget(r, "bytes_written"), 11);
        json_decref(r);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0640);
        data = fixture_read(f, "mode.txt");
        assert_string_equal(data, "new content");
        free(data);
}

static void test_write_file_symlink_target(void **state)
{
        struct tool_fixture *f = *state;
        char link[256];
        struct stat st;
        json_t *r;
        char *data;

        fixture_write(f, "target.txt", "before");
        (void) snprintf(link, sizeof(link), "%s/link.txt", f->dir);
        assert_int_equal(symlink("target.txt", link), 0);
        r = run_tool(&tool_def_write_file, &f->ctx,
                     "{\"path\": \"link.txt\", \"content\": \"after\"}");
        assert_null(json_object_get(r, "error"));
        json_decref(r);
        assert_int_equal(lstat(link, &st), 0);
        assert_true(S_ISLNK(st.st_mode));
        data = fixture_read(f, "target.txt");
        assert_string_equal(data, "after");
        free(data);
}

static void test_write_file_deny_list(void **state)
{
        struct tool_fixture *f = *state;
        char path[256], want[512];
        json_t *r;

        r = run_tool(&tool_def_write_file, &f->ctx,
                     "{\"path\": \"~/.ssh/authorized_keys\", \"content\": \"ssh-ed25519 AAAA\"}");
        (void) snprintf(want, sizeof(want),
                        "Write denied: '%s/.ssh/authorized_keys' is a protected "
                        "system/credential file.",
                        f->home);
        assert_string_equal(result_str(r, "error"), want);
        json_decref(r);
        (void) snprintf(path, sizeof(path), "%s/.ssh", f->home);
        assert_int_equal(access(path, F_OK), -1);

        r = run_tool(&tool_def_write_file, &f->ctx,
                     "{\"path\": \"~/.bashrc\", \"content\": \"x\"}");
        assert_non_null(strstr(result_str(r, "error"), "Write denied"));
        json_decref(r);
        r = run_tool(&tool_def_write_file, &f->ctx,
                     "{\"path\": \"~/.aws/credentials\", \"content\": \"x\"}");
        assert_non_null(strstr(result_str(r, "error"), "Write denied"));
        json_decref(r);

        /* A symlink in the project pointing into ~/.ssh is refused too. */
        (void) snprintf(path, sizeof(path), "%s/innocent", f->dir);
        (void) snprintf(want, sizeof(want), "%s/.ssh/id_rsa", f->home);
        assert_int_equal(symlink(want, path), 0);
        r = run_tool(&tool_def_write_file, &f->ctx, "{\"path\": \"innocent\", \"content\": \"x\"}");
        assert_non_null(strstr(result_str(r, "error"), "Write denied: 'innocent'"));
        json_decref(r);

        r = run_tool(&tool_def_write_file, &f->ctx,
                     "{\"path\": \"/etc/ptc-test-should-not-exist\", \"content\": \"x\"}");
        assert_string_equal(result_str(r, "error"),
                            "Refusing to write to sensitive system path: "
                            "/etc/ptc-test-should-not-exist\nUse the terminal tool with sudo if "
                            "you need to modify system files.");
        json_decref(r);
        assert_int_equal(access("/etc/ptc-test-should-not-exist", F_OK), -1);
        r = run_tool(&tool_def_write_file, &f->ctx,
                     "{\"path\": \"/tmp/../etc/x\", \"content\": \"x\"}");
        assert_non_null(strstr(result_str(r, "error"), "sensitive system path"));
        json_decref(r);
}

static void test_write_file_lint_json(void **state)
{
        struct tool_fixture *f = *state;
        json_t *r, *lint;

        r = run_tool(&tool_def_write_file, &f->ctx,
                     "{\"path\": \"ok.json\", \"content\": \"{\\\"a\\\": [1, 2]}\"}");
        lint = json_object_get(r, "lint");
        assert_string_equal(result_str(lint, "status"), "ok");
        assert_string_equal(result_str(lint, "output"), "");
        json_decref(r);

        r = run_tool(&tool_def_write_file, &f->ctx,
                     "{\"path\": \"bad.json\", \"content\": \"{\\\"a\\\": }\"}");
        lint = json_object_get(r, "lint");
        assert_string_equal(result_str(lint, "status"), "error");
        assert_true(strncmp(result_str(lint, "output"), "JSONDecodeError: ", 17) == 0);
        assert_non_null(strstr(result_str(lint, "output"), "(line 1, column "));
        assert_null(json_object_get(lint, "message"));
        json_decref(r);

        /* Same error as before the write: reported, with a note that it is not new. */
        r = run_tool(&tool_def_write_file, &f->ctx,
                     "{\"path\": \"bad.json\", \"content\": \"{\\\"a\\\": }\"}");
        lint = json_object_get(r, "lint");
        assert_string_equal(result_str(lint, "status"), "error");
        assert_true(strncmp(result_str(lint, "output"), "JSONDecodeError: ", 17) == 0);
        assert_non_null(json_object_get(lint, "message"));
        json_decref(r);

        /* A different error: only the new one, under the seed's header. */
        r = run_tool(&tool_def_write_file, &f->ctx,
                     "{\"path\": \"bad.json\", \"content\": \"[1,\\n,,2]\"}");
        lint = json_object_get(r, "lint");
        assert_string_equal(result_str(lint, "status"), "error");
        {
                static const char want[] = "New lint errors introduced by this edit "
                                           "(pre-existing errors filtered out):\nJSONDecodeError: ";

                assert_true(strncmp(result_str(lint, "output"), want, strlen(want)) == 0);
        }
        assert_null(json_object_get(lint, "message"));
        json_decref(r);

        r = run_tool(&tool_def_write_file, &f->ctx,
                     "{\"path\": \"c.yaml\", \"content\": \"a: [1, 2\\n\"}");
        lint = json_object_get(r, "lint");
        assert_string_equal(result_str(lint, "status"), "error");
        assert_true(strncmp(result_str(lint, "output"), "YAMLError: ", 11) == 0);
        assert_non_null(strstr(result_str(lint, "output"), "in \"<unicode string>\", line "));
        json_decref(r);
        r = run_tool(&tool_def_write_file, &f->ctx,
                     "{\"path\": \"d.yml\", \"content\": \"a: 1\\nb: [x, y]\\n\"}");
        assert_string_equal(result_str(json_object_get(r, "lint"), "status"), "ok");
        json_decref(r);
}

static void test_write_file_lint_python(void **state)
{
        struct tool_fixture *f = *state;
        struct tool_ctx ctx = f->ctx;
        json_t *r, *lint;

        if (!f->ctx.python)
                skip();
        r = run_tool(&tool_def_write_file, &f->ctx,
                     "{\"path\": \"a.py\", \"content\": \"x = (1\"}");
        lint = json_object_get(r, "lint");
        assert_string_equal(result_str(lint, "status"), "error");
        assert_string_equal(result_str(lint, "output"),
                            "SyntaxError: '(' was never closed (line 1, column 5)");
        json_decref(r);
        r = run_tool(&tool_def_write_file, &f->ctx,
                     "{\"path\": \"a.py\", \"content\": \"def f():\\n    return 1\\n\"}");
        lint = json_object_get(r, "lint");
        assert_string_equal(result_str(lint, "status"), "ok");
        json_decref(r);

        ctx.python = NULL;
        r = run_tool(&tool_def_write_file, &ctx, "{\"path\": \"b.py\", \"content\": \"x = (\"}");
        assert_string_equal(result_str(json_object_get(r, "lint"), "status"), "skipped");
        json_decref(r);
}

/* ------------------------------------------------------------------------------------------ */
/* terminal                                                                                   */

static void test_terminal_echo_exit_stderr(void **state)
{
        struct tool_fixture *f = *state;
        json_t *r;
        char *dump;

        r = run_tool(&tool_def_terminal, &f->ctx, "{\"command\": \"echo hello\"}");
        dump = json_dumps(r, JSON_COMPACT);
        assert_string_equal(dump, "{\"output\":\"hello\",\"exit_code\":0,\"error\":null}");
        free(dump);
        json_decref(r);

        r = run_tool(&tool_def_terminal, &f->ctx,
                     "{\"command\": \"echo out; echo err >&2; exit 3\"}");
        assert_string_equal(result_str(r, "output"), "out\nerr");
        assert_int_equal(iget(r, "exit_code"), 3);
        assert_true(json_is_null(json_object_get(r, "error")));
        assert_null(json_object_get(r, "exit_code_meaning"));
        json_decref(r);

        /* SIGPIPE is back to default in the child: `yes` dies quietly. */
        r = run_tool(&tool_def_terminal, &f->ctx, "{\"command\": \"yes | head -n 1\"}");
        assert_string_equal(result_str(r, "output"), "y");
        assert_int_equal(iget(r, "exit_code"), 0);
        json_decref(r);

        r = run_tool(&tool_def_terminal, &f->ctx, "{\"command\": \"pwd\", \"workdir\": \"home\"}");
        assert_string_equal(result_str(r, "output"), f->home);
        json_decref(r);

        r = run_tool(&tool_def_terminal, &f->ctx, "{\"command\": 5}");
        dump = json_dumps(r, JSON_COMPACT);
        assert_string_equal(dump, "{\"output\":\"\",\"exit_code\":-1,\"error\":\"Invalid command: "
                                  "expected string, got int\",\"status\":\"error\"}");
        free(dump);
        json_decref(r);
}

static void test_terminal_timeout(void **state)
{
        struct tool_fixture *f = *state;
        char args[512], seen[128], *got = NULL;
        usec_t t0 = now_usec(), dt;
        const char *out;
        json_t *r;

        /* The shell notes the SIGTERM it handles: that, not a stopwatch, shows SIGTERM works
         * (the child did not inherit our blocked signal mask; else SIGKILL after the grace). */
        (void) snprintf(seen, sizeof(seen), "%s/term-seen", f->dir);
        (void) snprintf(args, sizeof(args),
                        "{\"command\": \"exec 2>/dev/null; trap 'echo term > %s; exit 143' TERM; "
                        "echo started; while :; do sleep 0.1; done\", \"timeout\": 1}",
                        seen);
        r = run_tool(&tool_def_terminal, &f->ctx, args);
        dt = now_usec() - t0;
        assert_true(dt >= USEC_PER_SEC);
        assert_true(dt < 30 * USEC_PER_SEC); /* hang guard: the command loops for ever */
        assert_int_equal(read_file_at(AT_FDCWD, seen, 64, &got, NULL), 0);
        assert_string_equal(got, "term\n");
        free(got);
        assert_int_equal(iget(r, "exit_code"), 124);
        out = result_str(r, "output");
        /* The note follows the output's own newline, as the seed appends it. */
        assert_string_equal(out, "started\n\n[Command timed out after 1s]");
        json_decref(r);

        r = run_tool(&tool_def_terminal, &f->ctx, "{\"command\": \"true\", \"timeout\": 601}");
        assert_null(json_object_get(r, "output"));
        assert_true(strncmp(result_str(r, "error"),
                            "Foreground timeout 601s exceeds the maximum of 600s.", 52) == 0);
        json_decref(r);
}

static void *cancel_later(void *p)
{
        int fd = *(int *) p;

        (void) usleep(300 * 1000);
        assert_int_equal(write(fd, "x", 1), 1);
        return NULL;
}

static void test_terminal_cancel(void **state)
{
        struct tool_fixture *f = *state;
        struct tool_ctx ctx = f->ctx;
        pthread_t th;
        int p[2];
        usec_t t0;
        json_t *r;

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        ctx.cancel_fd = p[0];
        assert_int_equal(pthread_create(&th, NULL, cancel_later, &p[1]), 0);
        t0 = now_usec();
        r = run_tool(&tool_def_terminal, &ctx, "{\"command\": \"sleep 60\"}");
        assert_true(now_usec() - t0 < 20 * USEC_PER_SEC); /* hang guard: the command sleeps 60 s */
        assert_int_equal(iget(r, "exit_code"), 130);
        assert_string_equal(result_str(r, "output"), "[Command interrupted]");
        json_decref(r);
        pthread_join(th, NULL);
        close(p[0]);
        close(p[1]);
}

static bool process_is_zombie(pid_t pid)
{
        char path[64], *data = NULL, *p;
        bool z = false;

        (void) snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        if (read_file_at(AT_FDCWD, path, 4096, &data, NULL) < 0)
                return false;
        p = strrchr(data, ')');
        z = p && p[1] == ' ' && p[2] == 'Z';
        free(data);
        return z;
}

static void test_terminal_background_job_killed(void **state)
{
        struct tool_fixture *f = *state;
        usec_t t0 = now_usec();
        json_int_t pid;
        json_t *r;
        bool gone = false;

        /* The guard cannot see into a script piped to bash, so the kill is what stops it. */
        r = run_tool(&tool_def_terminal, &f->ctx,
                     "{\"command\": \"echo 'sleep 30 & echo $!' | bash\"}");
        assert_true(now_usec() - t0 < 20 * USEC_PER_SEC); /* hang guard: the job sleeps 30 s */
        assert_int_equal(iget(r, "exit_code"), 0);
        pid = strtoll(result_str(r, "output"), NULL, 10);
        assert_true(pid > 1);
        json_decref(r);
        for (int i = 0; i < 100 && !gone; i++) {
                if (kill((pid_t) pid, 0) < 0 && errno == ESRCH)
                        gone = true;
                else if (process_is_zombie((pid_t) pid))
                        gone = true; /* dead; our init may simply not reap orphans */
                else
                        (void) usleep(10 * 1000);
        }
        assert_true(gone);
}

static void test_terminal_env_is_ctx_env(void **state)
{
        struct tool_fixture *f = *state;
        const char *out;
        json_t *r;

        assert_int_equal(setenv("PTC_TOOLS_TEST_LEAK", "leaked", 1), 0);
        r = run_tool(&tool_def_terminal, &f->ctx, "{\"command\": \"env\"}");
        out = result_str(r, "output");
        assert_non_null(strstr(out, "FOO_TEST=bar"));
        assert_null(strstr(out, "PTC_TOOLS_TEST_LEAK"));
        json_decref(r);
        (void) unsetenv("PTC_TOOLS_TEST_LEAK");
}

static void test_terminal_workdir_errors(void **state)
{
        struct tool_fixture *f = *state;
        json_t *r;
        char *dump;

        r = run_tool(&tool_def_terminal, &f->ctx,
                     "{\"command\": \"ls\", \"workdir\": \"/tmp;rm\"}");
        assert_string_equal(result_str(r, "status"), "blocked");
        assert_int_equal(iget(r, "exit_code"), -1);
        assert_true(strncmp(result_str(r, "error"),
                            "Blocked: workdir contains disallowed character ';'.", 51) == 0);
        json_decref(r);

        r = run_tool(&tool_def_terminal, &f->ctx,
                     "{\"command\": \"ls\", \"workdir\": \"/nonexistent/ptc-x\"}");
        dump = json_dumps(r, JSON_COMPACT);
        assert_string_equal(dump, "{\"output\":\"\",\"exit_code\":-1,\"error\":\"workdir does not "
                                  "exist: /nonexistent/ptc-x\",\"status\":\"error\"}");
        free(dump);
        json_decref(r);
}

static void test_terminal_guard(void **state)
{
        struct tool_fixture *f = *state;
        static const char *const blocked[] = {
                "nohup sleep 1", "sleep 1 &", "sleep 1 & echo x",
                "npm run dev",   "NPX vite",  "python3 -m http.server 8000",
                "setsid foo",
        };
        static const char *const allowed[] = {
                "echo a && echo b",
                "echo a 2>&1",
                "echo x &>/dev/null",
                "echo nohup --help",
        };
        char args[256];

        for (size_t i = 0; i < ELEMENTSOF(blocked); i++) {
                json_t *r;

                (void) snprintf(args, sizeof(args), "{\"command\": \"%s\"}", blocked[i]);
                r = run_tool(&tool_def_terminal, &f->ctx, args);
                assert_string_equal(result_str(r, "status"), "error");
                assert_int_equal(iget(r, "exit_code"), -1);
                assert_non_null(strstr(result_str(r, "error"), "foreground"));
                json_decref(r);
        }
        for (size_t i = 0; i < ELEMENTSOF(allowed); i++) {
                json_t *r;

                (void) snprintf(args, sizeof(args), "{\"command\": \"%s\"}", allowed[i]);
                r = run_tool(&tool_def_terminal, &f->ctx, args);
                assert_null(json_object_get(r, "status"));
                assert_int_equal(iget(r, "exit_code"), 0);
                json_decref(r);
        }
}

static void test_terminal_exit_code_meaning_grep(void **state)
{
        struct tool_fixture *f = *state;
        json_t *r;

        r = run_tool(&tool_def_terminal, &f->ctx, "{\"command\": \"echo abc | grep zzz\"}");
        assert_int_equal(iget(r, "exit_code"), 1);
        assert_non_null(strstr(result_str(r, "exit_code_meaning"), "No lines matched"));
        json_decref(r);
        r = run_tool(&tool_def_terminal, &f->ctx,
                     "{\"command\": \"LC_ALL=C /bin/grep -q x /dev/null\"}");
        assert_non_null(json_object_get(r, "exit_code_meaning"));
        json_decref(r);
        r = run_tool(&tool_def_terminal, &f->ctx, "{\"command\": \"grep -q x /dev/null; false\"}");
        assert_null(json_object_get(r, "exit_code_meaning"));
        json_decref(r);
}

static void test_terminal_big_output_and_ansi(void **state)
{
        struct tool_fixture *f = *state;
        const char *out;
        json_t *r;

        r = run_tool(&tool_def_terminal, &f->ctx,
                     "{\"command\": \"head -c 1000000 /dev/zero | tr '\\\\0' a\"}");
        out = result_str(r, "output");
        assert_non_null(strstr(out, "\n\n... [OUTPUT TRUNCATED - 950000 chars omitted out of "
                                    "1000000 total] ...\n\n"));
        assert_true(strlen(out) < 50000 + 200);
        json_decref(r);

        r = run_tool(&tool_def_terminal, &f->ctx,
                     "{\"command\": \"printf '  \\\\033[31mred\\\\033[0m\\\\n\\\\n'\"}");
        assert_string_equal(result_str(r, "output"), "red");
        json_decref(r);
}

struct thread_job {
        struct tool_fixture *f;
        int n;
        bool ok;
};

static void *terminal_thread(void *p)
{
        struct thread_job *j = p;
        char args[512], want[64];
        json_error_t err;
        json_t *a, *res = NULL;

        /* A barrier, not a stopwatch: each command marks its start and waits (up to 20 s)
         * until all eight have started; run one after another, the first prints "alone". */
        (void) snprintf(args, sizeof(args),
                        "{\"command\": \"echo start-%d; mkdir -p %s/meet; touch %s/meet/%d; "
                        "for i in $(seq 400); do [ $(ls %s/meet | wc -l) -ge 8 ] && break; "
                        "sleep 0.05; done; [ $(ls %s/meet | wc -l) -ge 8 ] && echo end-%d || "
                        "echo alone-%d\"}",
                        j->n, j->f->dir, j->f->dir, j->n, j->f->dir, j->f->dir, j->n, j->n);
        (void) snprintf(want, sizeof(want), "start-%d\nend-%d", j->n, j->n);
        a = json_loads(args, 0, &err);
        if (a && tool_def_terminal.run(NULL, &j->f->ctx, a, &res) == 0 && res)
                j->ok = strcmp(json_string_value(json_object_get(res, "output")) ?: "", want) ==
                                0 &&
                        json_integer_value(json_object_get(res, "exit_code")) == 0;
        json_decref(res);
        json_decref(a);
        return NULL;
}

static void test_terminal_concurrent(void **state)
{
        struct tool_fixture *f = *state;
        struct thread_job jobs[8];
        pthread_t th[8];

        for (int i = 0; i < 8; i++) {
                jobs[i] = (struct thread_job){.f = f, .n = i};
                assert_int_equal(pthread_create(&th[i], NULL, terminal_thread, &jobs[i]), 0);
        }
        for (int i = 0; i < 8; i++) {
                pthread_join(th[i], NULL);
                /* "end-N", not "alone-N": they ran side by side, not one after another. */
                assert_true(jobs[i].ok);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_tool_arg_int_coercion),
                cmocka_unit_test(test_tool_arg_bool_and_string),
                cmocka_unit_test_setup_teardown(test_tool_resolve_path_tilde, setup, teardown),
                cmocka_unit_test(test_file_safety_normpath),
                cmocka_unit_test_setup_teardown(test_file_safety_realpath_lenient, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fs_chase, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_file_normal, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_file_no_trailing_newline, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_read_file_offset_limit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_file_long_lines, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_file_not_found_similar, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_file_binary, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_file_devices_fifo_dir, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_file_huge_guard, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_file_invalid_utf8_and_tilde, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_tool_json_name_and_escaped_paths, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_write_file_new_and_mkdir, setup, teardown),
                cmocka_unit_test_setup_teardown(test_write_file_keeps_mode, setup, teardown),
                cmocka_unit_test_setup_teardown(test_write_file_symlink_target, setup, teardown),
                cmocka_unit_test_setup_teardown(test_write_file_deny_list, setup, teardown),
                cmocka_unit_test_setup_teardown(test_write_file_lint_json, setup, teardown),
                cmocka_unit_test_setup_teardown(test_write_file_lint_python, setup, teardown),
                cmocka_unit_test_setup_teardown(test_terminal_echo_exit_stderr, setup, teardown),
                cmocka_unit_test_setup_teardown(test_terminal_timeout, setup, teardown),
                cmocka_unit_test_setup_teardown(test_terminal_cancel, setup, teardown),
                cmocka_unit_test_setup_teardown(test_terminal_background_job_killed, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_terminal_env_is_ctx_env, setup, teardown),
                cmocka_unit_test_setup_teardown(test_terminal_workdir_errors, setup, teardown),
                cmocka_unit_test_setup_teardown(test_terminal_guard, setup, teardown),
                cmocka_unit_test_setup_teardown(test_terminal_exit_code_meaning_grep, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_terminal_big_output_and_ansi, setup, teardown),
                cmocka_unit_test_setup_teardown(test_terminal_concurrent, setup, teardown),
        };

        /* As in ptc: SIGPIPE ignored and the usual signals blocked; children must not inherit. */
        {
                sigset_t set;

                signal(SIGPIPE, SIG_IGN);
                sigemptyset(&set);
                sigaddset(&set, SIGTERM);
                sigaddset(&set, SIGINT);
                sigaddset(&set, SIGCHLD);
                pthread_sigmask(SIG_BLOCK, &set, NULL);
        }
        return cmocka_run_group_tests(tests, NULL, NULL);
}
