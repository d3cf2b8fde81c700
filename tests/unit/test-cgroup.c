/* SPDX-License-Identifier: MIT */
#include "../lib/ptc-test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/macro.h"
#include "basic/path-util.h"
#include "core/sandbox/cgroup.h"

/*
 * cgroup_base_prepare() and run_cgroup_create() on a plain directory tree standing in for
 * cgroupfs: the /proc texts are made up, the "control files" are ordinary files. What only
 * the kernel can show (clone3 into the leaf, cgroup.kill, removal) is driven through the real
 * binary in tests/integration/test_isolation.py.
 */

#define USER_UID ((uid_t) 1000) /* ptc as a user: a writable cgroup is a delegated one */

struct fixture {
        char dir[64]; /* the fake cgroup2 mount */
};

static void write_text(const char *dir, const char *name, const char *text)
{
        _cleanup_free_ char *path = path_join(dir, name);
        _cleanup_close_ int fd = -1;

        assert_non_null(path);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t) strlen(text));
}

static char *read_text(const char *dir, const char *name)
{
        char *text = NULL;
        size_t n;
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        assert_true(fd >= 0);
        assert_int_equal(read_file_at(fd, name, 4096, &text, &n), 0);
        return text;
}

/* A fake cgroup directory @rel below the mount with these control files. */
static char *make_cgroup(const struct fixture *f, const char *rel, const char *controllers,
                         const char *subtree)
{
        char *dir = path_join(f->dir, rel);

        assert_non_null(dir);
        assert_int_equal(mkdir_p(dir, 0755), 0);
        write_text(dir, "cgroup.controllers", controllers);
        if (subtree)
                write_text(dir, "cgroup.subtree_control", subtree);
        write_text(dir, "cgroup.procs", "");
        return dir;
}

/* Directories in @dir: leaves left behind. */
static int count_leaves(const char *dir)
{
        DIR *d = opendir(dir);
        struct dirent *de;
        int n = 0;

        assert_non_null(d);
        while ((de = readdir(d)))
                if (de->d_type == DT_DIR && strcmp(de->d_name, ".") != 0 &&
                    strcmp(de->d_name, "..") != 0)
                        n++;
        closedir(d);
        return n;
}

static char *mountinfo_for(const struct fixture *f, const char *root)
{
        char *text = NULL;

        assert_true(asprintf(&text,
                             "22 1 0:21 / /proc rw,relatime - proc proc rw\n"
                             "41 31 0:38 %s %s rw,relatime - cgroup2 cgroup2 rw\n",
                             root, f->dir) > 0);
        return text;
}

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        snprintf(f->dir, sizeof(f->dir), "/tmp/ptc-test-cgroup-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        (void) rm_rf(f->dir);
        free(f);
        return 0;
}

static void test_no_cgroup2_mount(void **state)
{
        struct cgroup_base b;

        (void) state;
        assert_int_equal(cgroup_base_prepare("22 1 0:21 / /proc rw - proc proc rw\n"
                                             "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup "
                                             "cgroup rw,cpu\n",
                                             "0::/\n", getpid(), USER_UID, &b),
                         0);
        assert_null(b.path);
        assert_string_equal(b.why, "no cgroup v2 hierarchy is mounted");
}

static void test_no_v2_line(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *mi = mountinfo_for(f, "/");
        struct cgroup_base b;

        assert_int_equal(cgroup_base_prepare(mi, "4:memory:/x\n", getpid(), USER_UID, &b), 0);
        assert_null(b.path);
        assert_string_equal(b.why, "ptc's cgroup v2 is unknown (no 0:: line)");
}

static void test_both_controllers_enabled(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *mi = mountinfo_for(f, "/");
        _cleanup_free_ char *dir =
                make_cgroup(f, "user.slice/ptc.scope", "cpu memory pids\n", "memory pids\n");
        _cleanup_free_ char *want = NULL;
        struct cgroup_base b;

        assert_int_equal(cgroup_base_prepare(mi, "1:name=systemd:/\n0::/user.slice/ptc.scope\n",
                                             getpid(), USER_UID, &b),
                         0);
        assert_string_equal(b.path, dir);
        assert_int_equal(b.limits, CGROUP_LIMIT_MEMORY | CGROUP_LIMIT_PIDS);
        assert_true(asprintf(&want,
                             "a leaf per run in %s, ended by cgroup.kill; memory.max and "
                             "pids.max",
                             dir) > 0);
        assert_string_equal(b.why, want);
        cgroup_base_release(&b);
}

static void test_only_pids_offered(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *mi = mountinfo_for(f, "/");
        _cleanup_free_ char *dir = make_cgroup(f, "a", "cpu pids hugetlb\n", "pids\n");
        struct cgroup_base b;

        assert_int_equal(cgroup_base_prepare(mi, "0::/a\n", getpid(), USER_UID, &b), 0);
        assert_string_equal(b.path, dir);
        assert_int_equal(b.limits, CGROUP_LIMIT_PIDS);
        assert_non_null(strstr(b.why, "; pids.max (no memory controller: RLIMIT_DATA"));
        cgroup_base_release(&b);
}

static void test_root_without_controllers(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *mi = mountinfo_for(f, "/");
        struct cgroup_base b;

        free(make_cgroup(f, "", "hugetlb\n", ""));
        assert_int_equal(cgroup_base_prepare(mi, "0::/\n", getpid(), USER_UID, &b), 0);
        assert_string_equal(b.path, f->dir); /* the mount itself */
        assert_int_equal(b.limits, 0);
        assert_non_null(strstr(b.why, "; no memory or pids controller there: rlimits bound"));
        cgroup_base_release(&b);
}

/* Empty leaves of a ptc that is gone are removed; those of live processes stay. */
static void test_stale_leaves_pruned(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *mi = mountinfo_for(f, "/");
        _cleanup_free_ char *dir = make_cgroup(f, "g", "\n", "\n");
        _cleanup_free_ char *live = NULL, *dead = NULL, *other = NULL;
        struct cgroup_base b;
        struct stat st;
        pid_t gone = fork();

        assert_true(gone >= 0);
        if (gone == 0)
                _exit(0);
        assert_int_equal(waitpid(gone, NULL, 0), gone);
        assert_true(asprintf(&live, "%s/ptc-%d-3", dir, (int) getpid()) > 0);
        assert_true(asprintf(&dead, "%s/ptc-%d-0", dir, (int) gone) > 0);
        assert_true(asprintf(&other, "%s/ptc-%d-0x", dir, (int) gone) > 0);
        assert_int_equal(mkdir(live, 0755), 0);
        assert_int_equal(mkdir(dead, 0755), 0);
        assert_int_equal(mkdir(other, 0755), 0);
        assert_int_equal(cgroup_base_prepare(mi, "0::/g\n", getpid(), USER_UID, &b), 0);
        assert_int_equal(stat(live, &st), 0);
        assert_int_equal(stat(other, &st), 0); /* not a name ptc makes */
        assert_int_equal(stat(dead, &st) < 0 ? errno : 0, ENOENT);
        cgroup_base_release(&b);
}

/* Root outside the root cgroup uses only a cgroup marked delegated. */
static void test_root_needs_a_delegated_cgroup(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *mi = mountinfo_for(f, "/");
        _cleanup_free_ char *dir =
                make_cgroup(f, "system.slice/x.service", "memory pids\n", "memory pids\n");
        struct cgroup_base b;

        assert_int_equal(cgroup_base_prepare(mi, "0::/system.slice/x.service\n", getpid(), 0, &b),
                         0);
        assert_null(b.path);
        assert_non_null(strstr(b.why, "needs the trusted.delegate xattr"));
        /* Its own root (of the host, or of a container's cgroup namespace) is root's. */
        free(make_cgroup(f, "", "memory pids\n", "memory pids\n"));
        assert_int_equal(cgroup_base_prepare(mi, "0::/\n", getpid(), 0, &b), 0);
        assert_string_equal(b.path, f->dir);
        cgroup_base_release(&b);
        /* Marked as systemd marks Delegate=yes (trusted.* needs root; user.* works on tmpfs). */
        if (setxattr(dir, "trusted.delegate", "1", 1, 0) < 0 &&
            setxattr(dir, "user.delegate", "1", 1, 0) < 0) {
                skip();
                return;
        }
        assert_int_equal(cgroup_base_prepare(mi, "0::/system.slice/x.service\n", getpid(), 0, &b),
                         0);
        assert_string_equal(b.path, dir);
        cgroup_base_release(&b);
}

/* Offered, not enabled, and enabling fails: no limits, and doctor says why. */
static void test_offered_but_not_enabled(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *mi = mountinfo_for(f, "/");
        _cleanup_free_ char *dir = make_cgroup(f, "b", "memory pids\n", NULL);
        _cleanup_free_ char *sub = path_join(dir, "cgroup.subtree_control");
        struct cgroup_base b;

        /* A directory: reading finds nothing, writing fails (EISDIR). */
        assert_int_equal(mkdir(sub, 0755), 0);
        assert_int_equal(cgroup_base_prepare(mi, "0::/b\n", getpid(), USER_UID, &b), 0);
        assert_string_equal(b.path, dir);
        assert_int_equal(b.limits, 0);
        assert_non_null(strstr(b.why, "(offered but not enabled: ptc shares its cgroup)"));
        cgroup_base_release(&b);
}

/* A mount of a sub-tree (field 4 is not "/"): the own path is relative to it. */
static void test_mount_of_a_subtree(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *mi = mountinfo_for(f, "/machine/c1");
        _cleanup_free_ char *dir = make_cgroup(f, "app", "memory pids\n", "memory pids\n");
        struct cgroup_base b;

        assert_int_equal(cgroup_base_prepare(mi, "0::/machine/c1/app\n", getpid(), USER_UID, &b),
                         0);
        assert_string_equal(b.path, dir);
        cgroup_base_release(&b);

        assert_int_equal(cgroup_base_prepare(mi, "0::/machine/c2\n", getpid(), USER_UID, &b), 0);
        assert_null(b.path);
        assert_non_null(strstr(b.why, "is not below the mounted /machine/c1"));
}

static void test_hostile_own_paths(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *mi = mountinfo_for(f, "/");
        static const char *const bad[] = {"0::/c (deleted)\n", "0::/c/../../etc\n",
                                          "0::relative\n"};
        struct cgroup_base b;

        free(make_cgroup(f, "c", "memory pids\n", "memory pids\n"));
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                assert_int_equal(cgroup_base_prepare(mi, bad[i], getpid(), USER_UID, &b), 0);
                assert_null(b.path);
        }
        /* Not a cgroup directory (no cgroup.controllers). */
        assert_int_equal(cgroup_base_prepare(mi, "0::/missing\n", getpid(), USER_UID, &b), 0);
        assert_null(b.path);
        assert_non_null(strstr(b.why, "cannot open ptc's cgroup"));
}

/* mountinfo escapes a space in the mount point as \040. */
static void test_escaped_mount_point(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *spaced = path_join(f->dir, "with space");
        _cleanup_free_ char *mi = NULL;
        struct cgroup_base b;

        assert_int_equal(mkdir(spaced, 0755), 0);
        write_text(spaced, "cgroup.controllers", "\n");
        write_text(spaced, "cgroup.subtree_control", "\n");
        assert_true(asprintf(&mi, "41 31 0:38 / %s/with\\040space rw - cgroup2 cgroup2 rw\n",
                             f->dir) > 0);
        assert_int_equal(cgroup_base_prepare(mi, "0::/\n", getpid(), USER_UID, &b), 0);
        assert_string_equal(b.path, spaced);
        cgroup_base_release(&b);
}

/* The leaf gets the limits the base allows; a limit that cannot be set removes the leaf. */
static void test_run_cgroup_create(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *base = make_cgroup(f, "d", "memory pids\n", "memory pids\n");
        struct cgroup_base b = {.path = base, .limits = 0};
        struct run_cgroup c;
        struct diag d = {};
        struct stat st;

        /* No controllers: a bare leaf (kill only). */
        assert_int_equal(run_cgroup_create(&b, 64 << 20, 32, &c, &d), 0);
        assert_non_null(c.path);
        assert_true(c.fd >= 0);
        assert_true(path_is_below(c.path, base));
        assert_int_equal(stat(c.path, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        assert_int_equal(count_leaves(base), 1);
        /* Nothing there to kill or wait for: it is removed at once. */
        assert_int_equal(run_cgroup_destroy(&c, 100000), 0);
        assert_null(c.path);
        assert_int_equal(c.fd, -1);
        assert_int_equal(count_leaves(base), 0);

        /* With the controllers the leaf must take the limits; plain directories have no
         * memory.max, so creation fails and leaves nothing behind. */
        b.limits = CGROUP_LIMIT_MEMORY | CGROUP_LIMIT_PIDS;
        assert_int_equal(run_cgroup_create(&b, 64 << 20, 32, &c, &d), -ENOENT);
        assert_null(c.path);
        assert_non_null(strstr(d.message, "cannot set the limits of the cgroup"));
        assert_int_equal(count_leaves(base), 0);

        /* No base: a clear error. */
        b = (struct cgroup_base){.path = NULL};
        snprintf(b.why, sizeof(b.why), "no cgroup v2 hierarchy is mounted");
        assert_int_equal(run_cgroup_create(&b, 1, 1, &c, &d), -ENOENT);
        assert_string_equal(d.message, "no cgroup: no cgroup v2 hierarchy is mounted");
}

/* The limits are written as the kernel reads them, into the files it makes for a leaf. */
static void test_run_cgroup_set_limits(void **state)
{
        struct fixture *f = *state;
        _cleanup_free_ char *leaf = make_cgroup(f, "f", "", "");
        _cleanup_close_ int fd = open(leaf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        static const char *const files[] = {"memory.max", "memory.swap.max", "memory.oom.group",
                                            "pids.max"};
        static const char *const want[] = {"67108864", "0", "1", "32"};

        assert_true(fd >= 0);
        for (size_t i = 0; i < ELEMENTSOF(files); i++)
                write_text(leaf, files[i], "max");
        /* Only what the base allows is written; 0 means "not set". */
        assert_int_equal(run_cgroup_set_limits(fd, CGROUP_LIMIT_PIDS, 64 << 20, 0), 0);
        assert_int_equal(run_cgroup_set_limits(fd, 0, 64 << 20, 32), 0);
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                _cleanup_free_ char *t = read_text(leaf, files[i]);
                assert_string_equal(t, "max");
        }
        assert_int_equal(
                run_cgroup_set_limits(fd, CGROUP_LIMIT_MEMORY | CGROUP_LIMIT_PIDS, 64 << 20, 32),
                0);
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                _cleanup_free_ char *t = read_text(leaf, files[i]);
                /* the files are not truncated, as in cgroupfs, so compare the prefix */
                assert_memory_equal(t, want[i], strlen(want[i]));
        }
        /* Without swap accounting (no memory.swap.max) memory.max still holds. */
        assert_int_equal(unlinkat(fd, "memory.swap.max", 0), 0);
        assert_int_equal(run_cgroup_set_limits(fd, CGROUP_LIMIT_MEMORY, 1 << 20, 0), 0);
        /* Without memory.max the limit cannot hold: an error. */
        assert_int_equal(unlinkat(fd, "memory.max", 0), 0);
        assert_int_equal(run_cgroup_set_limits(fd, CGROUP_LIMIT_MEMORY, 1 << 20, 0), -ENOENT);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_no_cgroup2_mount),
                cmocka_unit_test_setup_teardown(test_no_v2_line, setup, teardown),
                cmocka_unit_test_setup_teardown(test_both_controllers_enabled, setup, teardown),
                cmocka_unit_test_setup_teardown(test_only_pids_offered, setup, teardown),
                cmocka_unit_test_setup_teardown(test_root_without_controllers, setup, teardown),
                cmocka_unit_test_setup_teardown(test_offered_but_not_enabled, setup, teardown),
                cmocka_unit_test_setup_teardown(test_root_needs_a_delegated_cgroup, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_stale_leaves_pruned, setup, teardown),
                cmocka_unit_test_setup_teardown(test_mount_of_a_subtree, setup, teardown),
                cmocka_unit_test_setup_teardown(test_hostile_own_paths, setup, teardown),
                cmocka_unit_test_setup_teardown(test_escaped_mount_point, setup, teardown),
                cmocka_unit_test_setup_teardown(test_run_cgroup_create, setup, teardown),
                cmocka_unit_test_setup_teardown(test_run_cgroup_set_limits, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
