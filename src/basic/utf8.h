/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "basic/macro.h"

/*
 * Length of the valid UTF-8 sequence at @p (1..4), or 0 when the bytes at @p
 * do not start a valid sequence within @n bytes. Surrogates and overlong
 * forms are invalid, as in Python's strict decoder.
 */
size_t utf8_valid_seq_len(const unsigned char *p, size_t n);

/* True when all of @p is valid UTF-8 (NUL bytes allowed). */
bool utf8_is_valid(const char *p, size_t n);

/*
 * Decode @n bytes the way Python's bytes.decode("utf-8", "replace") does:
 * each maximal invalid subpart becomes U+FFFD. Returns a new NUL-terminated
 * string (caller frees) and its length in *ret_len, or NULL on ENOMEM.
 * *ret_chars, when non-NULL, receives the number of code points.
 */
char *utf8_sanitize(const char *p, size_t n, size_t *ret_len, size_t *ret_chars);

/*
 * Length of the longest prefix of UTF-8 @s (@n bytes) no longer than @max bytes that does not
 * end inside a character: where to cut text to fit a cap.
 */
size_t utf8_prefix_len(const char *s, size_t n, size_t max);

/* Number of code points in valid UTF-8 @p. */
size_t utf8_count_chars(const char *p, size_t n);

/*
 * The escape form of bytes that are not UTF-8 text (file names, docs/protocol.md "Names that
 * are not UTF-8"): the byte b (0x80..0xFF) is the code point UTF8_ESCAPE_BASE + b,
 * U+10DC80..U+10DCFF, in Supplementary Private Use Area-B. Its low 16 bits are those of
 * Python's surrogateescape (U+DC80 + b), which JSON cannot carry. In UTF-8 each escape is the
 * 4 bytes F4 8D B2|B3 80..BF.
 */
#define UTF8_ESCAPE_BASE 0x10DC00u

/*
 * @n bytes as valid UTF-8 text in the escape form: valid UTF-8 is copied, every other byte
 * becomes its escape, and so does each byte of a valid sequence that encodes an escape code
 * point itself (a name that really contains one), so utf8_unescape_bytes() gives back exactly
 * @p. NUL bytes are copied. Returns 0 and a new NUL-terminated string in *ret (caller frees)
 * with its length in *ret_len (may be NULL), or -ENOMEM.
 */
_must_check_ int utf8_escape_bytes(const char *p, size_t n, char **ret, size_t *ret_len);

/*
 * True when @p is valid UTF-8 with no escape code point in it, so utf8_escape_bytes() would
 * give it back unchanged (one pass; the test to make before escaping).
 */
bool utf8_is_escape_free(const char *p, size_t n);

/*
 * The reverse of utf8_escape_bytes(): each escape code point in @p becomes its byte, all else
 * is copied. The result is never longer than @p, and every byte it has that @p did not is in
 * 0x80..0xFF: unescaping cannot make a '/', a '.', a NUL or any other ASCII byte. Returns 0
 * and a new NUL-terminated string in *ret (caller frees) with its length in *ret_len (may be
 * NULL), or -ENOMEM.
 */
_must_check_ int utf8_unescape_bytes(const char *p, size_t n, char **ret, size_t *ret_len);

/*
 * For text a person reads on a terminal or in a form, made from what a script chose: each
 * C0 control (also newline unless @keep_newline), DEL and C1 control (U+0080..U+009F) of
 * the NUL-terminated UTF-8 @s becomes '?' ('??' for a C1's two bytes), in place, so no
 * escape sequence redraws what is around it.
 */
void utf8_replace_controls(char *s, bool keep_newline);
