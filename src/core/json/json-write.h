/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Compact JSON serialization into a capped buffer, for the RPC answer path.
 *
 * Why not json_dumps(): jansson decodes every character of every string
 * (utf8_iterate) while escaping, which made serializing a 2.6 KB read_file
 * result cost ~16 µs, a third of a whole tool call. Strings inside a json_t
 * are valid UTF-8 already (jansson guarantees it), so this writer copies runs
 * of ordinary bytes with memcpy and only looks at '"', '\\' and control
 * characters. The output is byte-identical to json_dumps(v, JSON_COMPACT)
 * (a unit test compares them), except that reals use the same "%.17g"
 * shortest-round-trip rule jansson applies by default.
 */

#include <jansson.h>

#include "basic/buf.h"
#include "basic/macro.h"

/* Nesting deeper than this is refused (-ELOOP); jansson's parser stops at 2048. */
#define JSON_WRITE_DEPTH_MAX 2048

/*
 * Append @v to @b. Returns 0, -E2BIG when the buffer cap is reached, -ENOMEM,
 * -ELOOP when nested too deeply, or -EINVAL for a value jansson could not
 * dump either (a NaN real).
 */
_must_check_ int json_write_compact(struct buf *b, const json_t *v);
