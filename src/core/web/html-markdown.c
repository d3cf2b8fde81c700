/* SPDX-License-Identifier: MIT */
#include "core/web/html-markdown.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "basic/buf.h"
#include "basic/utf8.h"
#include "core/web/html-markdown-internal.h"

/* ---- elements ---- */

static int heading_level(GumboTag tag)
{
        switch (tag) {
        case GUMBO_TAG_H1:
                return 1;
        case GUMBO_TAG_H2:
                return 2;
        case GUMBO_TAG_H3:
                return 3;
        case GUMBO_TAG_H4:
                return 4;
        case GUMBO_TAG_H5:
                return 5;
        case GUMBO_TAG_H6:
                return 6;
        default:
                return 0;
        }
}

/* Line breaks an element without special handling asks for around itself. */
static int block_level(const GumboNode *node)
{
        if (node->v.element.tag_namespace != GUMBO_NAMESPACE_HTML)
                return 0;
        switch (node->v.element.tag) {
        case GUMBO_TAG_P:
        case GUMBO_TAG_UL:
        case GUMBO_TAG_OL:
        case GUMBO_TAG_BLOCKQUOTE:
        case GUMBO_TAG_PRE:
        case GUMBO_TAG_TABLE:
        case GUMBO_TAG_DL:
        case GUMBO_TAG_FIGURE:
        case GUMBO_TAG_CAPTION:
        case GUMBO_TAG_H1:
        case GUMBO_TAG_H2:
        case GUMBO_TAG_H3:
        case GUMBO_TAG_H4:
        case GUMBO_TAG_H5:
        case GUMBO_TAG_H6:
        case GUMBO_TAG_HR:
                return 2;
        case GUMBO_TAG_DIV:
        case GUMBO_TAG_SECTION:
        case GUMBO_TAG_ARTICLE:
        case GUMBO_TAG_MAIN:
        case GUMBO_TAG_HEADER:
        case GUMBO_TAG_FOOTER:
        case GUMBO_TAG_ADDRESS:
        case GUMBO_TAG_FIGCAPTION:
        case GUMBO_TAG_DETAILS:
        case GUMBO_TAG_SUMMARY:
        case GUMBO_TAG_CENTER:
        case GUMBO_TAG_FIELDSET:
        case GUMBO_TAG_LEGEND:
        case GUMBO_TAG_FORM:
        case GUMBO_TAG_HGROUP:
        case GUMBO_TAG_LI:
        case GUMBO_TAG_DT:
        case GUMBO_TAG_DD:
        case GUMBO_TAG_TR:
        case GUMBO_TAG_BODY:
        case GUMBO_TAG_HTML:
                return 1;
        default:
                return 0;
        }
}

/* Around an element without state: block breaks, and a space between table cells. */
static void plain_break(struct md *m, const GumboNode *node)
{
        if (html_is_tag(node, GUMBO_TAG_TD) || html_is_tag(node, GUMBO_TAG_TH))
                m->space = true;
        else
                md_break(m, block_level(node));
}

static const char *format_marker(GumboTag tag)
{
        switch (tag) {
        case GUMBO_TAG_B:
        case GUMBO_TAG_STRONG:
                return "**";
        case GUMBO_TAG_I:
        case GUMBO_TAG_EM:
        case GUMBO_TAG_CITE:
        case GUMBO_TAG_DFN:
        case GUMBO_TAG_VAR:
                return "*";
        case GUMBO_TAG_S:
        case GUMBO_TAG_STRIKE:
        case GUMBO_TAG_DEL:
                return "~~";
        default:
                return NULL;
        }
}

static size_t longest_backtick_run(const char *s, size_t n)
{
        size_t best = 0, cur = 0;

        for (size_t i = 0; i < n; i++) {
                cur = s[i] == '`' ? cur + 1 : 0;
                best = MAX(best, cur);
        }
        return best;
}

static void write_backticks(struct md *m, size_t n)
{
        static const char ticks[] = "````````````````";

        while (n > 0) {
                size_t k = MIN(n, sizeof(ticks) - 1);
                md_raw(m, ticks, k);
                n -= k;
        }
}

static void inline_code(struct md *m, GumboNode *node)
{
        _cleanup_buf_ struct buf b = BUF_INIT(HTML_MARKDOWN_SHORT_MAX * 16);
        size_t fence, start = 0;

        if (html_collect_text(node, false, &b) < 0) {
                m->err = -ENOMEM;
                return;
        }
        if (!b.data)
                return;
        b.len = html_collapse_ws(b.data, b.len);
        if (b.len == 0)
                return;
        fence = longest_backtick_run(b.data, b.len) + 1;
        md_begin_content(m);
        write_backticks(m, fence);
        if (b.data[0] == '`' || b.data[b.len - 1] == '`')
                md_raw(m, " ", 1);
        for (size_t i = 0; i < b.len; i++)
                if (b.data[i] == '|' && m->cell_mode > 0) {
                        md_raw(m, b.data + start, i - start);
                        md_raw(m, "\\|", 2);
                        start = i + 1;
                }
        md_raw(m, b.data + start, b.len - start);
        if (b.data[0] == '`' || b.data[b.len - 1] == '`')
                md_raw(m, " ", 1);
        write_backticks(m, fence);
}

/* "language-xxx" / "lang-xxx" in @cls, copied into @lang (sanitised). */
static bool code_language(const char *cls, char *lang, size_t size)
{
        const char *p = cls;

        while (p && *p) {
                size_t n, skip = 0, w = 0;

                p += strspn(p, " \t\n\r\f");
                n = strcspn(p, " \t\n\r\f");
                if (n > 9 && strncasecmp(p, "language-", 9) == 0)
                        skip = 9;
                else if (n > 5 && strncasecmp(p, "lang-", 5) == 0)
                        skip = 5;
                if (skip) {
                        for (size_t i = skip; i < n && w + 1 < size; i++) {
                                char c = p[i];
                                if (isalnum((unsigned char) c) || strchr("+-_.#", c))
                                        lang[w++] = c;
                        }
                        lang[w] = 0;
                        return w > 0;
                }
                p += n;
        }
        return false;
}

static void code_block(struct md *m, GumboNode *node)
{
        _cleanup_buf_ struct buf b = BUF_INIT(m->out.cap);
        char lang[33] = "";
        const GumboVector *kids = html_node_children(node);
        size_t fence, i = 0;

        if (m->inline_mode > 0) {
                inline_code(m, node);
                return;
        }
        if (!code_language(html_attr(node, "class"), lang, sizeof(lang)))
                for (size_t k = 0; kids && k < kids->length; k++)
                        if (html_is_tag(kids->data[k], GUMBO_TAG_CODE) &&
                            code_language(html_attr(kids->data[k], "class"), lang, sizeof(lang)))
                                break;
        if (html_collect_text(node, true, &b) < 0) {
                m->err = -ENOMEM;
                return;
        }
        while (b.len > 0 &&
               (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == ' ' || b.data[b.len - 1] == '\t'))
                b.len--;
        while (i < b.len && b.data[i] == '\n')
                i++;
        if (i >= b.len)
                return;
        fence = MAX(3, longest_backtick_run(b.data, b.len) + 1);
        md_break(m, 2);
        md_begin_content(m);
        write_backticks(m, fence);
        md_str(m, lang);
        while (i < b.len) {
                const char *nl = memchr(b.data + i, '\n', b.len - i);
                size_t e = nl ? (size_t) (nl - b.data) : b.len;

                md_raw(m, "\n", 1);
                md_write_prefixes(m, true);
                md_raw(m, b.data + i, e - i);
                i = e + 1;
        }
        md_raw(m, "\n", 1);
        md_write_prefixes(m, true);
        write_backticks(m, fence);
        md_break(m, 2);
}

static void image(struct md *m, GumboNode *node)
{
        const char *src = html_attr(node, "src"), *alt = html_attr(node, "alt"), *lazy;
        _cleanup_free_ char *alt_c = NULL, *url = NULL;
        size_t al = 0, start = 0;

        /* Lazy-loading pages put a placeholder in src and the image in data-src. */
        lazy = html_attr(node, "data-src");
        if (lazy && *lazy && (!src || !*src || strncasecmp(src, "data:", 5) == 0))
                src = lazy;
        if (alt) {
                /* Cut on a character boundary: strndup() alone may split one in two. */
                alt_c = strndup(alt, utf8_prefix_len(alt, strlen(alt), HTML_MARKDOWN_SHORT_MAX));
                if (!alt_c) {
                        m->err = -ENOMEM;
                        return;
                }
                al = html_collapse_ws(alt_c, strlen(alt_c));
        }
        if (src && strncasecmp(src + strspn(src, " \t\n\r\f"), "data:image/", 11) == 0) {
                md_begin_content(m);
                md_str(m, HTML_MARKDOWN_BASE64_IMAGE_MARKER);
                return;
        }
        url = md_resolve_url(m, src);
        if (!url) {
                if (al > 0)
                        md_text(m, alt_c, al);
                return;
        }
        md_begin_content(m);
        md_raw(m, "![", 2);
        /*
         * In runs between the escapes, not byte by byte: md_raw() cuts at the output cap on a
         * character boundary of what it is given, so one byte at a time could end the output
         * with half a character.
         */
        for (size_t i = 0; i < al; i++)
                if (alt_c[i] == ']' || alt_c[i] == '[' || (alt_c[i] == '|' && m->cell_mode > 0)) {
                        md_raw(m, alt_c + start, i - start);
                        md_raw(m, "\\", 1);
                        start = i;
                }
        if (al > 0) /* alt_c is NULL without an alt attribute */
                md_raw(m, alt_c + start, al - start);
        md_raw(m, "](", 2);
        md_str(m, url);
        md_raw(m, ")", 1);
}

/* Count rows and columns of a table; false when it is layout, not data. */
static bool table_shape(GumboNode *table, long *ret_rows, long *ret_cols)
{
        const GumboVector *kids = html_node_children(table);
        long rows = 0, cols = 0;
        size_t budget = HTML_MARKDOWN_TABLE_SCAN_MAX;
        bool layout = false;

        for (size_t i = 0; kids && i < kids->length; i++) {
                GumboNode *k = kids->data[i];
                const GumboVector *rv;
                size_t nr = 1;
                GumboNode **rl = &k;

                if (html_is_tag(k, GUMBO_TAG_THEAD) || html_is_tag(k, GUMBO_TAG_TBODY) ||
                    html_is_tag(k, GUMBO_TAG_TFOOT)) {
                        rv = html_node_children(k);
                        rl = (GumboNode **) rv->data;
                        nr = rv->length;
                }
                for (size_t r = 0; r < nr; r++) {
                        GumboNode *row = rl[r];
                        const GumboVector *cv;
                        long c = 0;

                        if (!html_is_tag(row, GUMBO_TAG_TR))
                                continue;
                        cv = html_node_children(row);
                        for (size_t j = 0; j < cv->length; j++) {
                                GumboNode *cell = cv->data[j];
                                const char *span;
                                long s = 1;

                                if (!html_is_tag(cell, GUMBO_TAG_TD) &&
                                    !html_is_tag(cell, GUMBO_TAG_TH))
                                        continue;
                                span = html_attr(cell, "colspan");
                                if (span) {
                                        s = strtol(span, NULL, 10);
                                        s = s < 1 ? 1 : MIN(s, 64);
                                }
                                c += s;
                                for (GumboNode *d = html_next_node(cell, cell, true); d && !layout;
                                     d = html_next_node(cell, d, true)) {
                                        if (!html_is_element(d))
                                                continue;
                                        if (budget-- == 0) {
                                                layout = true;
                                                break;
                                        }
                                        if (d->v.element.tag_namespace != GUMBO_NAMESPACE_HTML)
                                                continue;
                                        switch (d->v.element.tag) {
                                        case GUMBO_TAG_TABLE:
                                        case GUMBO_TAG_UL:
                                        case GUMBO_TAG_OL:
                                        case GUMBO_TAG_PRE:
                                        case GUMBO_TAG_BLOCKQUOTE:
                                        case GUMBO_TAG_DL:
                                        case GUMBO_TAG_H1:
                                        case GUMBO_TAG_H2:
                                        case GUMBO_TAG_H3:
                                        case GUMBO_TAG_H4:
                                        case GUMBO_TAG_H5:
                                        case GUMBO_TAG_H6:
                                                layout = true;
                                                break;
                                        default:
                                                break;
                                        }
                                }
                        }
                        if (c > 0)
                                rows++;
                        cols = MAX(cols, c);
                }
        }
        *ret_rows = rows;
        *ret_cols = cols;
        return !layout && cols > 1;
}

static void cell_open(struct md *m, struct frame *f, GumboNode *node)
{
        const char *span = html_attr(node, "colspan");

        f->kind = F_CELL;
        f->span = 1;
        if (span) {
                f->span = strtol(span, NULL, 10);
                f->span = f->span < 1 ? 1 : MIN(f->span, 64);
        }
        if (m->row->counter == 0) {
                md_begin_content(m);
                md_raw(m, "|", 1);
        }
        m->space = false;
        f->pend_mark = m->pend_n;
        if (!md_pend_push(m, " ")) {
                /* Cannot happen: cells are not nested in inline openers. */
        }
        m->inline_mode++;
        m->cell_mode++;
}

static void cell_close(struct md *m, struct frame *f)
{
        m->inline_mode--;
        m->cell_mode--;
        if (m->pend_n > f->pend_mark)
                m->pend_n = f->pend_mark;
        md_raw(m, " |", 2);
        for (long i = 1; i < f->span && m->row->counter + i < m->table->counter; i++)
                md_raw(m, " |", 2);
        m->row->counter += f->span;
        m->space = false;
}

static void row_close(struct md *m, struct frame *f)
{
        struct frame *t = m->table;

        if (f->counter == 0)
                return; /* no cells: nothing was written */
        for (long i = f->counter; i < t->counter; i++)
                md_raw(m, " |", 2);
        if (t->rows++ == 0) {
                md_break(m, 1);
                md_begin_content(m);
                md_raw(m, "|", 1);
                for (long i = 0; i < t->counter; i++)
                        md_raw(m, " --- |", 6);
        }
        md_break(m, 1);
}

/* The list frame of @node's parent, when it is a list we track. */
static struct frame *parent_list(struct md *m, GumboNode *node, size_t depth)
{
        if (depth == 0 || depth - 1 >= HTML_MARKDOWN_DEPTH_MAX || !node->parent)
                return NULL;
        if (m->frames[depth - 1].kind != F_LIST)
                return NULL;
        if (!html_is_tag(node->parent, GUMBO_TAG_UL) && !html_is_tag(node->parent, GUMBO_TAG_OL))
                return NULL;
        return &m->frames[depth - 1];
}

/* Returns whether to visit the element's children (and later call element_leave). */
static bool element_enter(struct md *m, GumboNode *node, size_t depth)
{
        struct frame *f = depth < HTML_MARKDOWN_DEPTH_MAX ? &m->frames[depth] : NULL;
        GumboTag tag = node->v.element.tag;
        const char *marker;
        int level;

        if (f)
                *f = (struct frame){0};
        if (html_is_dropped(node))
                return false;
        if (node->v.element.tag_namespace != GUMBO_NAMESPACE_HTML)
                return true;
        if (tag == GUMBO_TAG_BR) {
                if (m->inline_mode > 0)
                        m->space = true;
                else if (!m->li_fresh) {
                        m->nl = MIN(m->nl + 1, 2);
                        m->space = false;
                }
                return false;
        }
        if (tag == GUMBO_TAG_HR) {
                if (m->inline_mode > 0) {
                        m->space = true;
                        return false;
                }
                md_break(m, 2);
                md_begin_content(m);
                md_raw(m, "---", 3);
                md_break(m, 2);
                return false;
        }
        if (tag == GUMBO_TAG_IMG) {
                image(m, node);
                return false;
        }
        if (tag == GUMBO_TAG_PRE) {
                code_block(m, node);
                return false;
        }
        if (tag == GUMBO_TAG_CODE || tag == GUMBO_TAG_KBD || tag == GUMBO_TAG_SAMP ||
            tag == GUMBO_TAG_TT) {
                inline_code(m, node);
                return false;
        }
        if (!f) {
                plain_break(m, node);
                return true;
        }
        marker = format_marker(tag);
        if (marker) {
                f->pend_mark = m->pend_n;
                if (md_pend_push(m, marker)) {
                        f->kind = F_FORMAT;
                        f->marker = marker;
                }
                return true;
        }
        if (tag == GUMBO_TAG_A) {
                f->url = md_resolve_url(m, html_attr(node, "href"));
                f->kind = F_INLINE;
                if (f->url) {
                        f->pend_mark = m->pend_n;
                        if (md_pend_push(m, "["))
                                f->kind = F_LINK;
                        else
                                f->url = mfree_str(f->url);
                }
                m->inline_mode++;
                return true;
        }
        level = heading_level(tag);
        if (level > 0 && m->inline_mode == 0) {
                md_break(m, 2);
                memset(m->lead, '#', (size_t) level);
                m->lead[level] = ' ';
                m->lead[level + 1] = 0;
                m->inline_mode++;
                f->kind = F_HEADING;
                return true;
        }
        if (m->inline_mode > 0) {
                plain_break(m, node);
                return true;
        }
        switch (tag) {
        case GUMBO_TAG_UL:
        case GUMBO_TAG_OL: {
                const char *start = tag == GUMBO_TAG_OL ? html_attr(node, "start") : NULL;

                md_break(m, m->list_depth > 0 ? 1 : 2);
                f->kind = F_LIST;
                f->ordered = tag == GUMBO_TAG_OL;
                f->counter = 1;
                if (start) {
                        char *end;
                        long v = strtol(start, &end, 10);

                        if (end != start && v > -1000000000L && v < 1000000000L)
                                f->counter = v;
                }
                m->list_depth++;
                return true;
        }
        case GUMBO_TAG_LI: {
                struct frame *list = parent_list(m, node, depth);
                struct prefix *p;

                md_break(m, 1);
                if (m->nprefix >= HTML_MARKDOWN_PREFIX_MAX)
                        return true;
                f->kind = F_LI;
                f->prefix_mark = m->nprefix;
                p = &m->prefixes[m->nprefix++];
                *p = (struct prefix){.has_marker = true};
                if (list && list->ordered) {
                        snprintf(p->marker, sizeof(p->marker), "%ld. ", list->counter++);
                        memcpy(p->indent, "   ", 4);
                } else {
                        memcpy(p->marker, "- ", 3);
                        memcpy(p->indent, "  ", 3);
                }
                m->li_fresh = true;
                return true;
        }
        case GUMBO_TAG_BLOCKQUOTE:
                md_break(m, 2);
                if (m->nprefix >= HTML_MARKDOWN_PREFIX_MAX)
                        return true;
                f->kind = F_QUOTE;
                f->prefix_mark = m->nprefix;
                m->prefixes[m->nprefix++] = (struct prefix){.indent = "> "};
                return true;
        case GUMBO_TAG_DT: {
                size_t i = html_child_index(node->parent, node);
                const GumboVector *sib = html_node_children(node->parent);
                bool after_dt = false;

                while (i != SIZE_MAX && i-- > 0)
                        if (html_is_element(sib->data[i])) {
                                after_dt = html_is_tag(sib->data[i], GUMBO_TAG_DT);
                                break;
                        }
                md_break(m, after_dt ? 1 : 2);
                return true;
        }
        case GUMBO_TAG_DD:
                md_break(m, 1);
                memcpy(m->lead, ": ", 3);
                f->kind = F_DD;
                return true;
        case GUMBO_TAG_TABLE: {
                long rows, cols;
                bool data = table_shape(node, &rows, &cols);

                if (rows == 0)
                        return false;
                md_break(m, 2);
                f->saved_table = m->table;
                f->saved_row = m->row;
                m->row = NULL;
                if (data && depth + 4 < HTML_MARKDOWN_DEPTH_MAX) {
                        f->kind = F_TABLE;
                        f->counter = cols;
                        m->table = f;
                } else {
                        f->kind = F_LAYOUT_TABLE;
                        m->table = NULL;
                }
                return true;
        }
        case GUMBO_TAG_TR:
                md_break(m, 1);
                if (!m->table)
                        return true;
                f->kind = F_ROW;
                f->saved_row = m->row;
                m->row = f;
                return true;
        case GUMBO_TAG_TD:
        case GUMBO_TAG_TH:
                if (m->table && m->row) {
                        cell_open(m, f, node);
                        return true;
                }
                m->space = true;
                return true;
        case GUMBO_TAG_CAPTION:
                if (m->table)
                        return false; /* GFM tables cannot carry one */
                md_break(m, 2);
                return true;
        default:
                md_break(m, block_level(node));
                return true;
        }
}

static void element_leave(struct md *m, GumboNode *node, size_t depth)
{
        struct frame *f = depth < HTML_MARKDOWN_DEPTH_MAX ? &m->frames[depth] : NULL;

        switch (f ? f->kind : F_PLAIN) {
        case F_PLAIN:
                plain_break(m, node);
                return;
        case F_FORMAT:
                if (m->pend_n > f->pend_mark)
                        m->pend_n = f->pend_mark; /* empty: drop the opener */
                else
                        md_str(m, f->marker);
                return;
        case F_LINK:
                m->inline_mode--;
                if (m->pend_n > f->pend_mark) {
                        /* No text: the URL is the text. */
                        m->pend_n = f->pend_mark;
                        md_begin_content(m);
                        md_raw(m, "[", 1);
                        md_str(m, f->url);
                }
                md_raw(m, "](", 2);
                md_str(m, f->url);
                md_raw(m, ")", 1);
                f->url = mfree_str(f->url);
                return;
        case F_INLINE:
                m->inline_mode--;
                return;
        case F_LIST:
                m->list_depth--;
                md_break(m, m->list_depth > 0 ? 1 : 2);
                return;
        case F_LI:
                m->nprefix = f->prefix_mark;
                m->blank_prefix = MIN(m->blank_prefix, m->nprefix);
                m->li_fresh = false;
                /* Items stay tight even when one ends with a paragraph. */
                m->nl = MIN(m->nl, 1);
                md_break(m, 1);
                return;
        case F_QUOTE:
                m->nprefix = f->prefix_mark;
                m->blank_prefix = MIN(m->blank_prefix, m->nprefix);
                md_break(m, 2);
                return;
        case F_HEADING:
                m->inline_mode--;
                m->lead[0] = 0;
                md_break(m, 2);
                return;
        case F_DD:
                m->lead[0] = 0;
                md_break(m, 1);
                return;
        case F_TABLE:
        case F_LAYOUT_TABLE:
                m->table = f->saved_table;
                m->row = f->saved_row;
                md_break(m, 2);
                return;
        case F_ROW:
                row_close(m, f);
                m->row = f->saved_row;
                return;
        case F_CELL:
                cell_close(m, f);
                return;
        }
}

static bool node_enter(struct md *m, GumboNode *node, size_t depth)
{
        switch (node->type) {
        case GUMBO_NODE_TEXT:
        case GUMBO_NODE_CDATA:
                md_text(m, node->v.text.text, strlen(node->v.text.text));
                return false;
        case GUMBO_NODE_WHITESPACE:
                m->space = true;
                return false;
        case GUMBO_NODE_DOCUMENT:
                return true;
        case GUMBO_NODE_ELEMENT:
        case GUMBO_NODE_TEMPLATE:
                return element_enter(m, node, depth);
        default:
                return false;
        }
}

/* Walk @root's subtree in document order without recursion. */
static void convert(struct md *m, GumboNode *root)
{
        GumboNode *node = root;
        size_t depth = 0;

        for (;;) {
                bool entered;
                const GumboVector *kids;

                if (m->full || m->err)
                        return;
                entered = node_enter(m, node, depth);
                kids = html_node_children(node);
                if (entered && kids && kids->length > 0) {
                        node = kids->data[0];
                        depth++;
                        continue;
                }
                if (entered && html_is_element(node))
                        element_leave(m, node, depth);
                for (;;) {
                        GumboNode *parent;
                        size_t i;

                        if (node == root || !node->parent)
                                return;
                        parent = node->parent;
                        i = html_child_index(parent, node);
                        kids = html_node_children(parent);
                        if (i != SIZE_MAX && i + 1 < kids->length) {
                                node = kids->data[i + 1];
                                break;
                        }
                        node = parent;
                        depth--;
                        if (html_is_element(node))
                                element_leave(m, node, depth);
                        if (i == SIZE_MAX)
                                return;
                }
        }
}

struct doc_info {
        GumboNode *title, *og_title, *h1, *base, *main, *article, *body;
        unsigned articles;
};

static void scan_document(GumboNode *doc, struct doc_info *info)
{
        for (GumboNode *node = doc; node; node = html_next_node(doc, node, true)) {
                const char *v;

                if (!html_is_element(node) || node->v.element.tag_namespace != GUMBO_NAMESPACE_HTML)
                        continue;
                switch (node->v.element.tag) {
                case GUMBO_TAG_TITLE:
                        if (!info->title)
                                info->title = node;
                        break;
                case GUMBO_TAG_META:
                        v = html_attr(node, "property");
                        if (!v)
                                v = html_attr(node, "name");
                        if (!info->og_title && v && strcasecmp(v, "og:title") == 0 &&
                            html_attr(node, "content"))
                                info->og_title = node;
                        break;
                case GUMBO_TAG_H1:
                        if (!info->h1)
                                info->h1 = node;
                        break;
                case GUMBO_TAG_BASE:
                        if (!info->base && html_attr(node, "href"))
                                info->base = node;
                        break;
                case GUMBO_TAG_BODY:
                        if (!info->body)
                                info->body = node;
                        break;
                case GUMBO_TAG_MAIN:
                        if (!info->main)
                                info->main = node;
                        break;
                case GUMBO_TAG_ARTICLE:
                        if (info->articles++ == 0)
                                info->article = node;
                        break;
                default:
                        v = html_attr(node, "role");
                        if (!info->main && v && strcasecmp(v, "main") == 0)
                                info->main = node;
                        break;
                }
        }
}

static int find_title(const struct doc_info *info, char **ret)
{
        _cleanup_free_ char *t = NULL;

        if (info->title) {
                t = html_text_of(info->title);
                if (!t)
                        return -ENOMEM;
        }
        if ((!t || !*t) && info->og_title) {
                const char *c = html_attr(info->og_title, "content");

                free(t);
                /* Cut on a character boundary: strndup() alone may split one in two. */
                t = strndup(c, utf8_prefix_len(c, strlen(c), HTML_MARKDOWN_SHORT_MAX));
                if (!t)
                        return -ENOMEM;
                (void) html_collapse_ws(t, strlen(t));
        }
        if ((!t || !*t) && info->h1) {
                free(t);
                t = html_text_of(info->h1);
                if (!t)
                        return -ENOMEM;
        }
        if (t && !*t)
                t = mfree_str(t);
        *ret = TAKE_PTR(t);
        return 0;
}

static int convert_output(GumboOutput *out, const char *base_url, size_t max_out,
                          char **ret_markdown, char **ret_title)
{
        struct doc_info info = {0};
        struct md m = {.out = BUF_INIT(max_out ? max_out : HTML_MARKDOWN_OUT_MAX),
                       .line_empty = true};
        _cleanup_free_ char *title = NULL;
        GumboNode *root;
        int r = 0;

        scan_document(out->document, &info);
        if (ret_title) {
                r = find_title(&info, &title);
                if (r < 0)
                        return r;
        }
        m.frames = calloc(HTML_MARKDOWN_DEPTH_MAX, sizeof(struct frame));
        if (!m.frames)
                return -ENOMEM;
        if (base_url)
                r = md_set_base(&m, base_url);
        if (r >= 0 && info.base)
                r = md_set_base(&m, html_attr(info.base, "href"));
        if (r >= 0) {
                root = info.main            ? info.main
                       : info.articles == 1 ? info.article
                       : info.body          ? info.body
                                            : out->root;
                convert(&m, root);
                r = m.err;
        }
        /* Links left open when the walk stopped early own their URL. */
        for (size_t i = 0; i < HTML_MARKDOWN_DEPTH_MAX; i++)
                free(m.frames[i].url);
        free(m.frames);
        curl_url_cleanup(m.base);
        free(m.base_str);
        if (r < 0) {
                buf_release(&m.out);
                return r;
        }
        if (md_finish(&m.out) < 0) {
                buf_release(&m.out);
                return -ENOMEM;
        }
        *ret_markdown = m.out.data ? buf_steal(&m.out, NULL) : strdup("");
        if (!*ret_markdown)
                return -ENOMEM;
        if (ret_title) {
                size_t tlen = title ? strlen(title) : 0;

                if (html_valid_utf8(&title, &tlen, HTML_MARKDOWN_SHORT_MAX) < 0)
                        return -ENOMEM;
                if (title && !*title)
                        title = mfree_str(title);
                *ret_title = TAKE_PTR(title);
        }
        return 0;
}

int html_to_markdown(const char *html, size_t n, const char *base_url, size_t max_out,
                     char **ret_markdown, char **ret_title)
{
        struct arena a = {0};
        GumboOutput *out = NULL;
        size_t len = n;
        int r;

        if (!ret_markdown || (!html && n > 0))
                return -EINVAL;
        if (!html)
                html = "";
        for (;;) {
                r = html_parse_bounded(&a, html, len, &out);
                if (r >= 0)
                        break;
                html_arena_release(&a);
                if (r == -ENOMEM)
                        return r;
                /* Too complex (time or memory): convert a prefix instead. */
                if (len <= PARSE_FALLBACK_MIN) {
                        *ret_markdown = strdup("");
                        if (!*ret_markdown)
                                return -ENOMEM;
                        if (ret_title)
                                *ret_title = NULL;
                        return 0;
                }
                len = utf8_prefix_len(html, n, MIN(len / 2, PARSE_FALLBACK_BYTES));
        }
        r = convert_output(out, base_url, max_out, ret_markdown, ret_title);
        /* The arena owns every byte gumbo allocated; gumbo_destroy_output is not needed. */
        html_arena_release(&a);
        return r;
}
