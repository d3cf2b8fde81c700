/* SPDX-License-Identifier: MIT */
/*
 * Replay a fuzz corpus as an ordinary test: every file named on the command
 * line, or found in a directory named there, is fed to
 * LLVMFuzzerTestOneInput() once. A crash or sanitizer report fails the test.
 * Not linked into the libFuzzer build (which brings its own main()).
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/fd-util.h"
#include "basic/macro.h"

/* Largest corpus file replayed; libFuzzer's default -max_len is 4096, crashers are small. */
#define FUZZ_INPUT_MAX (1024 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path, size_t *count)
{
        _cleanup_free_ char *data = NULL;
        size_t n = 0;
        int r;

        r = read_file_at(AT_FDCWD, path, FUZZ_INPUT_MAX, &data, &n);
        if (r < 0) {
                fprintf(stderr, "%s: %s\n", path, strerror(-r));
                return r;
        }
        (void) LLVMFuzzerTestOneInput((const uint8_t *) data, n);
        (*count)++;
        return 0;
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static int run_dir(const char *dir, size_t *count)
{
        DIR *d = opendir(dir);
        struct dirent *e;
        char **names = NULL;
        size_t n = 0, alloc = 0;
        int r = 0;

        if (!d) {
                fprintf(stderr, "%s: %s\n", dir, strerror(errno));
                return -errno;
        }
        while ((e = readdir(d))) {
                char *p;

                if (e->d_name[0] == '.')
                        continue;
                if (n == alloc) {
                        char **q = realloc(names, (alloc = alloc ? alloc * 2 : 64) * sizeof(*q));

                        if (!q) {
                                r = -ENOMEM;
                                break;
                        }
                        names = q;
                }
                if (asprintf(&p, "%s/%s", dir, e->d_name) < 0) {
                        r = -ENOMEM;
                        break;
                }
                names[n++] = p;
        }
        (void) closedir(d);
        /* Sorted, so a failure names the same file every run. */
        if (n > 0)
                qsort(names, n, sizeof(*names), cmp_str);
        for (size_t i = 0; i < n; i++) {
                if (r >= 0)
                        r = run_file(names[i], count);
                free(names[i]);
        }
        free(names);
        return r;
}

int main(int argc, char **argv)
{
        size_t count = 0;

        for (int i = 1; i < argc; i++) {
                struct stat st;
                int r;

                if (stat(argv[i], &st) < 0) {
                        fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
                        return 1;
                }
                r = S_ISDIR(st.st_mode) ? run_dir(argv[i], &count) : run_file(argv[i], &count);
                if (r < 0)
                        return 1;
        }
        if (count == 0) {
                fprintf(stderr, "no corpus input replayed\n");
                return 1;
        }
        printf("%zu passed, 0 failed\n", count);
        return 0;
}
