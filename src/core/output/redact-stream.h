/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Redaction of a stream that is cut into pieces (docs/observability.md, "Redaction at the
 * cuts"; DESIGN §15): the live output events, the spill file, the truncated head and tail.
 * Each piece is redacted as if the stream were whole: a secret or a pattern match that a
 * cut would split is never shown in two halves, each too short to be recognised.
 *
 * How: a piece is cut only where no match of the text around the cut crosses it. The text
 * after the cut is kept back (the "hold") until at least redact_stream_hold() bytes follow
 * the cut; the cut c is safe when redacting the bytes before c and the bytes after c on
 * their own gives exactly the redaction of the whole window. When the wanted cut is not
 * safe the cut moves back, to just after a blank or a delimiter (or before an unclosed
 * "-----BEGIN" line), where matches do not continue; a match longer than the hold
 * (REDACT_STREAM_PATTERN_MAX for patterns; a value and all its encoded forms always fit) is
 * the one thing cut anyway, each side redacted on its own.
 *
 * Not thread-safe; one owner feeds a stream. The redactor is borrowed and read-only.
 */

#include <stdbool.h>
#include <stddef.h>

#include "basic/macro.h"
#include "core/output/redact.h"

/* The longest pattern match (a JWT, a private key block, a long token) a cut never splits. */
#define REDACT_STREAM_PATTERN_MAX (16u * 1024)

/*
 * Bytes that must follow a cut for it to be judged: the longest pattern match, and the
 * longest form a registered secret can take in text (URL-encoded: 3 bytes a byte; JSON
 * \u-escaped: up to 6), whichever is more. @r may be NULL.
 */
size_t redact_stream_hold(const struct redactor *r);

/*
 * The safe cut nearest @want in @s[0..n) (@want <= @n): at or before @want when
 * !@forward (a piece ends there), at or after it when @forward (a piece begins there).
 * Always on a UTF-8 character boundary. Returns the cut, in [0, n]; *ret_safe is false
 * when no safe cut was found within reach (the cut is then @want moved to a character
 * boundary). A negative errno when the redaction failed (see redact_text()).
 */
_must_check_ int redact_find_cut(const struct redactor *r, enum redact_mode mode, const char *s,
                                 size_t n, size_t want, bool forward, size_t *ret_cut,
                                 bool *ret_safe);

/* Called with each redacted piece (@n bytes, not NUL-terminated, not checked as UTF-8). */
typedef int (*redact_emit_fn)(void *userdata, const char *text, size_t n);

struct redact_stream;

/*
 * A stream redacted with @r (borrowed, may be NULL: patterns only) in @mode, emitted in
 * pieces of at most @piece input bytes (> 0). 0 or -ENOMEM.
 */
_must_check_ int redact_stream_new(const struct redactor *r, enum redact_mode mode, size_t piece,
                                   struct redact_stream **ret);
/* Wipes what is held. NULL-safe. */
struct redact_stream *redact_stream_free(struct redact_stream *s);
DEFINE_TRIVIAL_CLEANUP_FUNC_RESET(struct redact_stream *, redact_stream_free);
#define _cleanup_redact_stream_ _cleanup_(redact_stream_freep)

/*
 * Append @n bytes; each piece that is known safe goes to @emit. Returns 0; the negative
 * errno of a failed redaction, after dropping that piece (fail closed: it is never
 * emitted); -ENOMEM; or @emit's error.
 */
_must_check_ int redact_stream_feed(struct redact_stream *s, const char *p, size_t n,
                                    redact_emit_fn emit, void *userdata);

/*
 * The stream ends here (or a seam: the end of a line for per-line events): everything held
 * goes out, in pieces of at most @piece bytes, each cut where it is safe. Returns as
 * redact_stream_feed(); the stream is empty afterwards either way.
 */
_must_check_ int redact_stream_flush(struct redact_stream *s, redact_emit_fn emit, void *userdata);

/* Bytes fed and not yet emitted. */
size_t redact_stream_held(const struct redact_stream *s);
