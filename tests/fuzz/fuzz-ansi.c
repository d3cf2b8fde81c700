/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for ANSI / VT escape stripping (src/core/output/ansi.c): terminal output of a
 * program ptc ran, any bytes. Invariants, from ansi.h's promise that CSI, OSC, DCS/SOS/PM/APC,
 * nF, Fp/Fe/Fs escapes and 8-bit C1 controls are removed and everything else is kept:
 *   - the result is NUL-terminated at the length returned, which is at most the input's;
 *   - it holds no sequence the stripper removes: stripping it again changes nothing
 *     (idempotent), and it has no 8-bit C1 control (C2 80..9F);
 *   - an ESC left is one that starts no sequence: at the end, or before a C0 control, DEL
 *     or a non-ASCII byte, possibly after intermediates (0x20-0x2F) that no final follows;
 *   - only removes: the result is a subsequence of the input, and an input without ESC and
 *     C1 controls comes back unchanged;
 *   - no crash, no out-of-bounds access (the buffer has exactly n + 1 bytes).
 *
 * The corpus (corpus/ansi/) replays under meson through fuzz-main.c; scripts/fuzz.sh
 * builds and runs the libFuzzer program.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/output/ansi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
        if (!ok) {
                fprintf(stderr, "fuzz-ansi: %s\n", what);
                abort();
        }
}

static bool has_c1(const unsigned char *s, size_t n)
{
        for (size_t i = 0; i + 1 < n; i++)
                if (s[i] == 0xC2 && s[i + 1] >= 0x80 && s[i + 1] <= 0x9F)
                        return true;
        return false;
}

static bool is_subsequence(const unsigned char *a, size_t na, const unsigned char *b, size_t nb)
{
        size_t j = 0;

        for (size_t i = 0; i < nb && j < na; i++)
                if (b[i] == a[j])
                        j++;
        return j == na;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        unsigned char *s = malloc(size + 1), *again;
        size_t n, n2;

        if (!s)
                return 0;
        memcpy(s, data, size);
        s[size] = 'Z'; /* must become the terminator */
        n = ansi_strip((char *) s, size);
        check(n <= size && s[n] == 0, "length or terminator");
        check(is_subsequence(s, n, data, size), "not a subsequence of the input");
        if (!memchr(data, 0x1B, size) && !has_c1(data, size))
                check(n == size && memcmp(s, data, size) == 0, "text without escapes changed");
        check(!has_c1(s, n), "a C1 control left");
        for (size_t i = 0; i < n; i++) {
                size_t j = i + 1;

                if (s[i] != 0x1B)
                        continue;
                while (j < n && s[j] >= 0x20 && s[j] <= 0x2F)
                        j++;
                check(j == n || s[j] < 0x20 || s[j] >= 0x7F, "an ESC sequence left");
        }

        again = malloc(n + 1);
        if (!again) {
                free(s);
                return 0;
        }
        memcpy(again, s, n + 1);
        n2 = ansi_strip((char *) again, n);
        check(n2 == n && memcmp(again, s, n) == 0, "not idempotent");
        free(again);
        free(s);
        return 0;
}
