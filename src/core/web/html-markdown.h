/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * HTML to Markdown for web_extract, on gumbo's HTML5 parse tree (no
 * hand-written HTML parser).
 *
 * Kept: the title, headings (# ..), paragraphs, line breaks, ordered and
 * unordered lists (nested, indented), links [text](absolute url), images
 * ![alt](url), emphasis and strong, inline code and fenced code blocks
 * (```lang when the class names one), block quotes, horizontal rules, tables
 * (GitHub pipe tables; the first row is the header), definition lists.
 * Dropped: script, style, noscript, template, svg, canvas, iframe, object,
 * embed, audio, video, form controls (input, select, textarea, button), head
 * content, and navigation chrome (nav, aside, header and footer unless inside
 * an article, main or section, where they belong to the content as in ARIA,
 * and elements with role navigation, banner, contentinfo, complementary,
 * search, aria-hidden="true" or the hidden attribute). When the body has a
 * <main> (or role="main"), or else exactly one <article>, only that is
 * converted. Tables whose cells hold block content (nested tables, lists,
 * headings, ...) or that have one column are layout: their cells become
 * plain text, not a pipe table.
 * Whitespace is collapsed as a browser would, outside <pre>. Markdown
 * punctuation in text is not escaped beyond what would change the structure
 * (a leading "#", "-", "1." at the start of a line).
 * Inline base64 images (data:image/...) become the marker
 * "[BASE64_IMAGE_REMOVED]" instead of the data.
 *
 * Bounds: the walk is iterative; elements nested deeper than 512 levels are
 * flattened to text. gumbo's parse is quadratic on hostile nesting, so it
 * runs under a CPU-time budget (0.25 s + 300 ns per input byte) and a memory
 * cap (64 MiB + 32 bytes per input byte); past either, only the first 32 KiB
 * of the input (halved again while that fails too) is converted, and when
 * nothing is left the result is "".
 *
 * Thread context: any thread; no shared state.
 *
 * In the web module (web-module.h): core calls web_module_get()->html_to_markdown.
 */

#include <stddef.h>

#include "basic/macro.h"

#define HTML_MARKDOWN_BASE64_IMAGE_MARKER "[BASE64_IMAGE_REMOVED]"

/*
 * Convert @n bytes of UTF-8 HTML. @base_url (may be NULL) resolves relative
 * links and images (a <base href> in the document wins). On 0, *ret_markdown
 * is a new NUL-terminated UTF-8 string (caller frees; never NULL) and, when
 * @ret_title is non-NULL, *ret_title the document title (<title>, else
 * og:title, else the first h1; whitespace collapsed) or NULL when none.
 * The output is at most @max_out bytes (cut at a UTF-8 boundary);
 * 0 means the internal cap of 64 MiB. The Markdown has no trailing newline,
 * no trailing spaces and never two blank lines in a row. @html may contain
 * invalid UTF-8 and NUL bytes (they become U+FFFD or are dropped, as an HTML5
 * parser does). @base_url and @html are borrowed. Returns 0, -ENOMEM, or
 * -EINVAL (@html NULL with n > 0, or @ret_markdown NULL).
 */
_must_check_ int html_to_markdown(const char *html, size_t n, const char *base_url, size_t max_out,
                                  char **ret_markdown, char **ret_title);
