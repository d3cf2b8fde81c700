/* SPDX-License-Identifier: MIT */
/*
 * Suggestions for misspelled names: the known section or key closest to an
 * unknown one by edit distance, for "did you mean" in messages and warnings.
 */

#include "core/config/config-internal.h"

#include <assert.h>
#include <stdint.h>
#include <string.h>

/* Longest name compared by config_closest_name(); longer texts are no typo of a short name. */
#define TYPO_NAME_MAX 64

/* Levenshtein distance between @a (@an bytes) and @b, both at most TYPO_NAME_MAX bytes. */
static size_t edit_distance(const char *a, size_t an, const char *b)
{
        size_t bn = strlen(b), row[TYPO_NAME_MAX + 1];

        assert(an <= TYPO_NAME_MAX && bn <= TYPO_NAME_MAX);
        for (size_t j = 0; j <= bn; j++)
                row[j] = j;
        for (size_t i = 1; i <= an; i++) {
                size_t diag = row[0];

                row[0] = i;
                for (size_t j = 1; j <= bn; j++) {
                        size_t up = row[j];
                        size_t sub = diag + (a[i - 1] != b[j - 1]);

                        row[j] = MIN(MIN(row[j - 1] + 1, up + 1), sub);
                        diag = up;
                }
        }
        return row[bn];
}

/*
 * The name among @names (@n of them, @stride bytes apart, each starting with a
 * const char * name) that @text is a likely typo of: the closest, when within
 * a quarter of its length (at least one edit). NULL when none is.
 */
const char *config_closest_name(const char *text, size_t len, const void *names, size_t n,
                                size_t stride)
{
        const char *best = NULL;
        size_t best_d = SIZE_MAX;

        if (len > TYPO_NAME_MAX)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                const char *name = *(const char *const *) ((const char *) names + i * stride);
                size_t d;

                if (strlen(name) > TYPO_NAME_MAX)
                        continue;
                d = edit_distance(text, len, name);
                if (d < best_d && d <= MAX((size_t) 1, strlen(name) / 4)) {
                        best = name;
                        best_d = d;
                }
        }
        return best;
}
