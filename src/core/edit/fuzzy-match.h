/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The patch tool's fuzzy find-and-replace (docs/seed.md 2.4, "Replace
 * mode"): nine matching strategies tried in order (exact, line-trimmed,
 * whitespace-normalized, indentation-flexible, escape-normalized,
 * trimmed-boundary, unicode-normalized, block-anchor, context-aware); the
 * first strategy that finds at least one match decides. Shared by replace
 * mode and the V4A hunk applier.
 *
 * Texts are bytes (NULs and invalid UTF-8 allowed); where the seed works on
 * Python code points (strip(), similarity ratios, splitlines()) valid UTF-8
 * is decoded and each invalid byte counts as one character of its own.
 * Offsets are byte offsets.
 *
 * Pure functions on text in memory: no I/O, no global state, any thread.
 */

#include <stdbool.h>
#include <stddef.h>

#include "basic/macro.h"

/* Largest content searched (V4A reads files of up to 32 MiB). */
#define FUZZY_CONTENT_MAX (32u * 1024 * 1024)
/* Largest old_string; far above any real edit, and it bounds the exact search's table. */
#define FUZZY_PATTERN_MAX (4u * 1024 * 1024)
/* Most lines of content the line-based strategies split (index memory is 4 bytes a line). */
#define FUZZY_LINES_MAX (4u * 1024 * 1024)
/* Most matches kept by one strategy (16 bytes each). */
#define FUZZY_SPANS_MAX (1u * 1024 * 1024)
/* Largest text fuzzy_replace() produces. */
#define FUZZY_OUTPUT_MAX (64u * 1024 * 1024)
/*
 * Work budget (inner-loop steps, about a nanosecond each) of the similarity
 * computations of one call: difflib's matcher is quadratic, so block-anchor,
 * context-aware, "did you mean" and fuzzy_ratio() stop here.
 */
#define FUZZY_WORK_MAX (1ull << 28)

struct fuzzy_span {
        size_t start, end; /* byte offsets into the content, end exclusive */
};

struct fuzzy_result {
        const char *strategy;     /* static name ("exact", "line_trimmed", ...) or NULL */
        struct fuzzy_span *spans; /* matches of the deciding strategy, in order; caller frees */
        size_t n_spans;
};

/*
 * Find @old in @content with the strategies in order. Returns 0 and fills
 * @ret (n_spans may be 0: no strategy matched; release with
 * fuzzy_result_release()), or -ENOMEM, or -E2BIG: an input over its cap,
 * more than FUZZY_SPANS_MAX matches, more than FUZZY_LINES_MAX lines when a
 * line-based strategy is reached, or the similarity strategies over
 * FUZZY_WORK_MAX (so hostile inputs cannot make this quadratic for long).
 * The exact strategy's matches may overlap ("aa" in "aaa" is 2 matches), as
 * the seed's.
 */
_must_check_ int fuzzy_find(const char *content, size_t n, const char *old, size_t old_n,
                            struct fuzzy_result *ret);
void fuzzy_result_release(struct fuzzy_result *r);

/* fuzzy_replace_flags() flags. */
enum {
        /*
         * In a file with CRLF line ends ("\r\n" occurs in the content), write
         * the replacement's bare LFs as CRLF, and keep the CR of a matched
         * line-based block's last line, so an edit sent with LF line ends
         * does not leave mixed line ends (upstream later normalises the whole
         * file the same way).
         */
        FUZZY_KEEP_CRLF = 1 << 0,
};

/*
 * The seed's fuzzy_find_and_replace(): on success returns 0 with *ret_content
 * (new text, NUL-terminated, caller frees), *ret_len, *ret_count
 * replacements and *ret_strategy (static).
 * Failures the caller shows to the model are returned as 0 with *ret_content
 * NULL and *ret_error (caller frees) set to the seed's texts: "old_string
 * cannot be empty", "old_string and new_string are identical", "Found N
 * matches for old_string. Provide more context to make it unique, or use
 * replace_all=True.", "Could not find a match for old_string in the file",
 * the escape-drift refusal. Negative errno only for ENOMEM/E2BIG (see
 * fuzzy_find(); also a result over FUZZY_OUTPUT_MAX or @new_n over
 * FUZZY_OUTPUT_MAX).
 *
 * With replace_all, overlapping matches (an exact old_string that overlaps
 * itself) are replaced left to right, skipping any that overlaps one already
 * replaced; *ret_count counts the replacements made. (The seed applied them
 * right to left on shifted offsets and produced garbage.)
 */
_must_check_ int fuzzy_replace(const char *content, size_t n, const char *old, size_t old_n,
                               const char *new_text, size_t new_n, bool replace_all,
                               char **ret_content, size_t *ret_len, size_t *ret_count,
                               const char **ret_strategy, char **ret_error);
/* fuzzy_replace() with FUZZY_* @flags (0 is fuzzy_replace()). */
_must_check_ int fuzzy_replace_flags(const char *content, size_t n, const char *old, size_t old_n,
                                     const char *new_text, size_t new_n, bool replace_all,
                                     unsigned flags, char **ret_content, size_t *ret_len,
                                     size_t *ret_count, const char **ret_strategy,
                                     char **ret_error);

/*
 * The "did you mean" snippets for a failed match (the seed's
 * find_closest_lines(): up to 3, anchor = first non-blank line of @old,
 * similarity > 0.3, +-2 lines of context, "%4d| text" lines, snippets joined
 * by "\n---\n"; lines as Python's splitlines()). Returns a new string, ""
 * when none (also when the inputs are too large to score), NULL on ENOMEM.
 * The seed's caller prefixes it with "\n\nDid you mean one of these
 * sections?\n".
 */
char *fuzzy_did_you_mean(const char *content, size_t n, const char *old, size_t old_n);

/*
 * difflib.SequenceMatcher(None, a, b).ratio() on code points (autojunk
 * included). Past FUZZY_WORK_MAX it returns quick_ratio(), an upper bound.
 */
double fuzzy_ratio(const char *a, size_t an, const char *b, size_t bn);

/*
 * The seed's unified diff: ''.join(difflib.unified_diff(a.splitlines(True),
 * b.splitlines(True), fromfile=@from_name, tofile=@to_name)), i.e. "--- "
 * and "+++ " headers, hunks with 3 lines of context, difflib's matching
 * (autojunk included). One deliberate fix:
 * a last line without a line end is followed by "\n\\ No newline at end of
 * file\n" (as GNU diff), where difflib glued the next line onto it.
 * When matching would cost more than FUZZY_WORK_MAX, only the common leading
 * and trailing lines are matched and the changed middle is one hunk. Text past @cap bytes is cut at
 * a line end and
 * "[... diff truncated]\n" appended. No difference gives "".
 * Returns 0 with *ret (caller frees, NUL-terminated) and *ret_len (may be
 * NULL), or -ENOMEM.
 */
_must_check_ int fuzzy_unified_diff(const char *a, size_t an, const char *b, size_t bn,
                                    const char *from_name, const char *to_name, size_t cap,
                                    char **ret, size_t *ret_len);
