/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What a captured output becomes before it leaves ptc (docs/contracts.md 4): its text cut
 * where no secret is, ANSI stripped and redacted, in the seed's order after truncation; its
 * spill file filtered the same way as one stream, or dropped; the spill directory kept
 * bounded. A failure of the redaction itself is not an error of these functions: it is
 * reported apart (-errno in *ret_red, or the return of capture_spill_redact()), because the
 * caller must then withhold the text (fail closed), not fail the run.
 */

#include "basic/macro.h"
#include "core/output/capture.h"
#include "core/output/redact.h"

/*
 * @c's text, its head's end and tail's start placed where @r sees no secret, ANSI stripped
 * and redacted by @r (NULL: no redaction). Returns 0 with *ret (the caller frees ret->text)
 * and *ret_red 0, or with *ret_red -errno when the redaction failed (ret->text may then hold
 * unredacted bytes: withhold it); -ENOMEM and the like for failures of its own (*ret empty).
 */
_must_check_ int capture_text_redacted(const struct capture *c, const struct redactor *r,
                                       struct capture_text *ret, int *ret_red);

/*
 * @c's spill file (if it has one) through the same ANSI strip and redaction as its text, as
 * one stream, so that a secret across two chunks is redacted as if the file were whole; then
 * the spill directory is pruned (the newest few files of the last day are kept). An
 * unfiltered spill could hold a secret: with @red < 0 (the text's redaction failed already)
 * or a redaction failing here, the spill is dropped. A disk error only loses the spill
 * (c->spill_error says why). Returns @red, or the redaction's failure here (-errno).
 */
int capture_spill_redact(struct capture *c, const struct redactor *r, int red);
