/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the HTML to Markdown converter of web_extract (src/core/web/html-*.c, on
 * gumbo): a page from a server ptc does not trust. The input is the page; a hash of it picks
 * the output cap, the base URL, and where a <script> holding a marker is put into it.
 * Checked:
 *  - the conversion succeeds (an input this small never runs out of memory);
 *  - the Markdown is valid UTF-8 within the cap, with no trailing newline, no trailing blanks
 *    on a line and never two blank lines in a row, as html-markdown.h promises; the title is
 *    NULL or valid UTF-8, trimmed and at most HTML_MARKDOWN_SHORT_MAX bytes;
 *  - the marker never shows when the script holds it: gumbo's own parse of the same page
 *    says where it landed (when the page has no '&', an entity cannot forge it elsewhere;
 *    a page whose own conversion spells it, through dropped NUL bytes say, is let be).
 * Deep nesting and big inputs must stay within libFuzzer's time limit: the converter bounds
 * gumbo's parse itself.
 *
 * gumbo itself asserts on some pages (Debian's 0.10.1: "handle_in_table: Assertion ...
 * failed"), which ptc survives by converting in a forked copy (web-extract.c). Here such an
 * assertion of gumbo's own (its source files are "src/...", ours "../src/...") ends the
 * input, through this target's __assert_fail(); an assertion of ours still aborts. The
 * memory gumbo held is then lost, so leak checking is off around the conversion: the
 * converter's leaks are the ASan unit and integration tests' to find.
 *
 * The corpus (corpus/html/) replays under meson through fuzz-main.c; scripts/fuzz.sh html
 * fuzzes it for real.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gumbo.h>

#include "basic/macro.h"
#include "basic/utf8.h"
#include "core/web/html-markdown-internal.h"
#include "core/web/html-markdown.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#if defined(__has_feature)
#        if __has_feature(address_sanitizer)
#                define FUZZ_HAVE_LSAN 1
#        endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(FUZZ_HAVE_LSAN)
#        define FUZZ_HAVE_LSAN 1
#endif
#ifdef FUZZ_HAVE_LSAN
#        include <sanitizer/lsan_interface.h>
#        define leak_check_off() __lsan_disable()
#        define leak_check_on() __lsan_enable()
#else
#        define leak_check_off() ((void) 0)
#        define leak_check_on() ((void) 0)
#endif

static jmp_buf gumbo_asserted;
static bool in_gumbo;

/* Exported, so it is the one libgumbo.so binds to (the build hides symbols by default). */
__attribute__((visibility("default"))) _noreturn_ void
__assert_fail(const char *assertion, const char *file, unsigned int line, const char *function);
__attribute__((visibility("default"))) _noreturn_ void
__assert_fail(const char *assertion, const char *file, unsigned int line, const char *function)
{
        if (in_gumbo && strncmp(file, "src/", 4) == 0)
                longjmp(gumbo_asserted, 1);
        fprintf(stderr, "%s:%u: %s: Assertion `%s' failed.\n", file, line, function, assertion);
        abort();
}

#define MARKER "zqxPtcScriptMarkerqz"
#define SCRIPT "<script>" MARKER "</script>"

/* Inputs below this never fail for want of memory: the fuzzer's limit is 2 GiB. */
#define SMALL_INPUT_MAX (1024 * 1024)
/* gumbo's own parse below has no time budget (it is quadratic on deep nesting): not beyond. */
#define MARKER_CHECK_MAX (16 * 1024)

static const char *const base_urls[] = {
        NULL,
        "https://example.com/dir/page.html?x=1#frag",
        "http://[::1]:8080/a/b/",
};

static uint64_t hash(const uint8_t *p, size_t n)
{
        uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

        for (size_t i = 0; i < n; i++)
                h = (h ^ p[i]) * 0x100000001b3ull;
        return h;
}

enum where { NOWHERE, IN_SCRIPT, ELSEWHERE };

static const GumboVector *children(const GumboNode *node)
{
        if (node->type == GUMBO_NODE_DOCUMENT)
                return &node->v.document.children;
        if (node->type == GUMBO_NODE_ELEMENT || node->type == GUMBO_NODE_TEMPLATE)
                return &node->v.element.children;
        return NULL;
}

/* The node after @node in document order below @root; a walk of our own, without recursion. */
static const GumboNode *next_node(const GumboNode *root, const GumboNode *node)
{
        const GumboVector *c = children(node);

        if (c && c->length > 0)
                return c->data[0];
        for (; node != root; node = node->parent) {
                c = children(node->parent);
                if (node->index_within_parent + 1 < c->length)
                        return c->data[node->index_within_parent + 1];
        }
        return NULL;
}

/* Where the marker is in gumbo's tree: only in an HTML <script>'s text, elsewhere too, or not. */
static enum where marker_where(const GumboNode *root)
{
        enum where w = NOWHERE;

        for (const GumboNode *node = root; node; node = next_node(root, node)) {
                const GumboNode *p = node->parent;

                if (children(node)) {
                        const GumboVector *attrs = &node->v.element.attributes;

                        for (unsigned i = 0; node != root && i < attrs->length; i++) {
                                const GumboAttribute *a = attrs->data[i];

                                if (strstr(a->name, MARKER) || strstr(a->value, MARKER))
                                        return ELSEWHERE;
                        }
                } else if (strstr(node->v.text.text, MARKER)) {
                        if (node->type != GUMBO_NODE_TEXT || p->type != GUMBO_NODE_ELEMENT ||
                            p->v.element.tag != GUMBO_TAG_SCRIPT ||
                            p->v.element.tag_namespace != GUMBO_NAMESPACE_HTML)
                                return ELSEWHERE;
                        w = IN_SCRIPT;
                }
        }
        return w;
}

static void check_markdown(const char *md, size_t cap)
{
        size_t n = strlen(md);

        if (n > cap || !utf8_is_valid(md, n))
                abort();
        if (n > 0 && (md[0] == '\n' || md[n - 1] == '\n' || md[n - 1] == ' ' || md[n - 1] == '\t'))
                abort();
        if (strstr(md, "\n\n\n") || strstr(md, " \n") || strstr(md, "\t\n"))
                abort();
}

static void check_title(const char *t)
{
        size_t n;

        if (!t)
                return;
        n = strlen(t);
        if (n == 0 || n > HTML_MARKDOWN_SHORT_MAX || !utf8_is_valid(t, n) || t[0] == ' ' ||
            t[n - 1] == ' ')
                abort();
}

/* html_to_markdown(), or -ECANCELED when gumbo asserted. */
static int convert_guarded(const char *doc, size_t n, const char *base, size_t max_out, char **md,
                           char **title)
{
        int r;

        leak_check_off();
        in_gumbo = true;
        if (setjmp(gumbo_asserted) != 0)
                r = -ECANCELED;
        else
                r = html_to_markdown(doc, n, base, max_out, md, title);
        in_gumbo = false;
        leak_check_on();
        return r;
}

/* gumbo's own parse, or NULL when it asserted. */
static GumboOutput *parse_guarded(const char *doc, size_t n)
{
        GumboOutput *out = NULL;

        leak_check_off();
        in_gumbo = true;
        if (setjmp(gumbo_asserted) == 0)
                out = gumbo_parse_with_options(&kGumboDefaultOptions, doc, n);
        in_gumbo = false;
        leak_check_on();
        return out;
}

/*
 * Whether the page spells the marker by itself once converted, without the script: text
 * around what the conversion drops (NUL bytes, empty elements) can join into it, also
 * across the point where the script went in. Then the marker in the Markdown is no leak.
 */
static bool forges_marker(const uint8_t *data, size_t size, const char *base, size_t max_out)
{
        _cleanup_free_ char *md = NULL, *title = NULL;

        if (convert_guarded((const char *) data, size, base, max_out, &md, &title) != 0)
                return true; /* gumbo asserted: nothing to compare with, give the benefit */
        return strstr(md, MARKER) || (title && strstr(title, MARKER));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_free_ char *doc = NULL, *md = NULL, *title = NULL;
        uint64_t h = hash(data, size);
        size_t max_out, at, n = size + strlen(SCRIPT);
        const char *base = base_urls[(h >> 8) % ELEMENTSOF(base_urls)];
        GumboOutput *out;
        enum where w;
        int r;

        if (size > SMALL_INPUT_MAX)
                return 0;
        switch (h & 3) {
        case 0:
                max_out = 0; /* the internal cap */
                break;
        case 1:
                max_out = 1 + (h >> 16) % 64;
                break;
        case 2:
                max_out = 1 + (h >> 16) % 2048;
                break;
        default:
                max_out = 4096;
                break;
        }
        at = (h >> 32) % (size + 1);
        doc = malloc(n);
        if (!doc)
                return 0;
        memcpy(doc, data, at);
        memcpy(doc + at, SCRIPT, strlen(SCRIPT));
        memcpy(doc + at + strlen(SCRIPT), data + at, size - at);

        r = convert_guarded(doc, n, base, max_out, &md, &title);
        if (r == -ECANCELED)
                return 0; /* gumbo's own assertion: see the top */
        if (r != 0 || !md)
                abort();
        check_markdown(md, max_out ? max_out : HTML_MARKDOWN_OUT_MAX);
        check_title(title);

        /* The input's own bytes could spell the marker, or an entity could. */
        if (size > MARKER_CHECK_MAX || memchr(data, '&', size) ||
            memmem(data, size, MARKER, strlen(MARKER)))
                return 0;
        out = parse_guarded(doc, n);
        if (!out)
                return 0;
        w = marker_where(out->document);
        gumbo_destroy_output(&kGumboDefaultOptions, out);
        if (w == IN_SCRIPT && (strstr(md, MARKER) || (title && strstr(title, MARKER))) &&
            !forges_marker(data, size, base, max_out))
                abort();
        return 0;
}
