/* SPDX-License-Identifier: MIT */
/* Walking gumbo's tree: children, attributes, dropped elements, text and whitespace. */

#include "core/web/html-markdown-internal.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

#include "basic/utf8.h"

/* ---- tree helpers ---- */

const GumboVector *html_node_children(const GumboNode *node)
{
        switch (node->type) {
        case GUMBO_NODE_DOCUMENT:
                return &node->v.document.children;
        case GUMBO_NODE_ELEMENT:
        case GUMBO_NODE_TEMPLATE:
                return &node->v.element.children;
        default:
                return NULL;
        }
}

bool html_is_element(const GumboNode *node)
{
        return node->type == GUMBO_NODE_ELEMENT || node->type == GUMBO_NODE_TEMPLATE;
}

bool html_is_tag(const GumboNode *node, GumboTag tag)
{
        return html_is_element(node) && node->v.element.tag == tag &&
               node->v.element.tag_namespace == GUMBO_NAMESPACE_HTML;
}

const char *html_attr(const GumboNode *node, const char *name)
{
        const GumboAttribute *a;

        if (!html_is_element(node))
                return NULL;
        a = gumbo_get_attribute(&node->v.element.attributes, name);
        return a ? a->value : NULL;
}

/* The index of @node among its parent's children, or SIZE_MAX. */
size_t html_child_index(const GumboNode *parent, const GumboNode *node)
{
        const GumboVector *kids = html_node_children(parent);

        if (!kids)
                return SIZE_MAX;
        if (node->index_within_parent < kids->length &&
            kids->data[node->index_within_parent] == node)
                return node->index_within_parent;
        /* Defensive: should gumbo leave a stale index after reparenting. */
        for (size_t i = 0; i < kids->length; i++)
                if (kids->data[i] == node)
                        return i;
        return SIZE_MAX;
}

/*
 * The node after @node in document order, staying inside @root; with
 * !descend, @node's children are skipped. NULL at the end.
 */
GumboNode *html_next_node(const GumboNode *root, GumboNode *node, bool descend)
{
        const GumboVector *kids = descend ? html_node_children(node) : NULL;

        if (kids && kids->length > 0)
                return kids->data[0];
        while (node != root && node->parent) {
                GumboNode *parent = node->parent;
                const GumboVector *pk = html_node_children(parent);
                size_t i = html_child_index(parent, node);

                if (i == SIZE_MAX)
                        return NULL;
                if (i + 1 < pk->length)
                        return pk->data[i + 1];
                node = parent;
        }
        return NULL;
}

static bool token_in_list(const char *list, const char *tok)
{
        size_t tl = strlen(tok);
        const char *p = list;

        while (*p) {
                size_t n;

                p += strspn(p, " \t\n\r\f");
                n = strcspn(p, " \t\n\r\f");
                if (n == tl && strncasecmp(p, tok, n) == 0)
                        return true;
                p += n;
        }
        return false;
}

/* header/footer are page chrome only when not inside sectioning content (ARIA). */
static bool is_page_level(const GumboNode *node)
{
        const GumboNode *p = node->parent;

        for (unsigned i = 0; p && i < 32; i++, p = p->parent) {
                if (!html_is_element(p) || p->v.element.tag_namespace != GUMBO_NAMESPACE_HTML)
                        continue;
                switch (p->v.element.tag) {
                case GUMBO_TAG_ARTICLE:
                case GUMBO_TAG_MAIN:
                case GUMBO_TAG_SECTION:
                        return false;
                default:
                        break;
                }
        }
        return true;
}

bool html_is_dropped(const GumboNode *node)
{
        const char *v;

        if (!html_is_element(node))
                return false;
        if (node->v.element.tag_namespace == GUMBO_NAMESPACE_SVG)
                return true;
        if (node->v.element.tag_namespace == GUMBO_NAMESPACE_HTML) {
                switch (node->v.element.tag) {
                case GUMBO_TAG_SCRIPT:
                case GUMBO_TAG_STYLE:
                case GUMBO_TAG_NOSCRIPT:
                case GUMBO_TAG_TEMPLATE:
                case GUMBO_TAG_CANVAS:
                case GUMBO_TAG_IFRAME:
                case GUMBO_TAG_OBJECT:
                case GUMBO_TAG_EMBED:
                case GUMBO_TAG_APPLET:
                case GUMBO_TAG_INPUT:
                case GUMBO_TAG_SELECT:
                case GUMBO_TAG_TEXTAREA:
                case GUMBO_TAG_BUTTON:
                case GUMBO_TAG_OPTION:
                case GUMBO_TAG_DATALIST:
                case GUMBO_TAG_NAV:
                case GUMBO_TAG_ASIDE:
                case GUMBO_TAG_HEAD:
                case GUMBO_TAG_TITLE:
                case GUMBO_TAG_META:
                case GUMBO_TAG_LINK:
                case GUMBO_TAG_AUDIO:
                case GUMBO_TAG_VIDEO:
                case GUMBO_TAG_FRAMESET:
                case GUMBO_TAG_NOFRAMES:
                        return true;
                case GUMBO_TAG_HEADER:
                case GUMBO_TAG_FOOTER:
                        if (is_page_level(node))
                                return true;
                        break;
                default:
                        break;
                }
        }
        if (html_attr(node, "hidden"))
                return true;
        v = html_attr(node, "aria-hidden");
        if (v && strcasecmp(v, "true") == 0)
                return true;
        v = html_attr(node, "role");
        if (v && (token_in_list(v, "navigation") || token_in_list(v, "banner") ||
                  token_in_list(v, "contentinfo") || token_in_list(v, "complementary") ||
                  token_in_list(v, "search")))
                return true;
        return false;
}

bool html_is_ws(unsigned char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

/* Length of the whitespace at @s (ASCII whitespace and U+00A0), 0 if none. */
size_t html_ws_len(const char *s, size_t n)
{
        if (n > 0 && html_is_ws((unsigned char) s[0]))
                return 1;
        if (n > 1 && (unsigned char) s[0] == 0xC2 && (unsigned char) s[1] == 0xA0)
                return 2;
        return 0;
}

/*
 * Append the text of @root's subtree to @b. @raw keeps whitespace and turns
 * <br> and block boundaries into newlines (for <pre>); otherwise the result
 * is collapsed by the caller. Stops silently at the buffer's cap.
 */
int html_collect_text(GumboNode *root, bool raw, struct buf *b)
{
        GumboNode *node = root;

        while (node) {
                bool descend = true;
                int r = 0;

                if (node->type == GUMBO_NODE_TEXT || node->type == GUMBO_NODE_WHITESPACE ||
                    node->type == GUMBO_NODE_CDATA) {
                        const char *t = node->v.text.text;
                        size_t n = strlen(t);
                        size_t room = b->cap - b->len;

                        r = buf_append(b, t, utf8_prefix_len(t, n, room));
                } else if (html_is_element(node) && node != root) {
                        if (html_is_dropped(node))
                                descend = false;
                        else if (raw && html_is_tag(node, GUMBO_TAG_BR))
                                r = buf_append_char(b, '\n');
                        else if (raw && node->v.element.tag_namespace == GUMBO_NAMESPACE_HTML) {
                                switch (node->v.element.tag) {
                                case GUMBO_TAG_DIV:
                                case GUMBO_TAG_P:
                                case GUMBO_TAG_LI:
                                case GUMBO_TAG_TR:
                                        if (b->len > 0 && b->data[b->len - 1] != '\n')
                                                r = buf_append_char(b, '\n');
                                        break;
                                default:
                                        break;
                                }
                        }
                }
                if (r == -ENOMEM)
                        return r;
                if (b->len >= b->cap)
                        break;
                node = html_next_node(root, node, descend);
        }
        return 0;
}

/* Collapse whitespace runs in @s to one space and trim; in place. Returns the new length. */
size_t html_collapse_ws(char *s, size_t n)
{
        size_t r = 0, w = 0;
        bool space = false;

        while (r < n) {
                size_t k = html_ws_len(s + r, n - r);

                if (k > 0) {
                        space = true;
                        r += k;
                        continue;
                }
                if (space && w > 0)
                        s[w++] = ' ';
                space = false;
                s[w++] = s[r++];
        }
        s[w] = 0;
        return w;
}

/* Collapsed text of a subtree as a new string ("" when none), NULL on ENOMEM. */
char *html_text_of(GumboNode *root)
{
        _cleanup_buf_ struct buf b = BUF_INIT(HTML_MARKDOWN_SHORT_MAX);

        if (html_collect_text(root, false, &b) < 0)
                return NULL;
        if (!b.data)
                return strdup("");
        b.len = html_collapse_ws(b.data, b.len);
        return buf_steal(&b, NULL);
}
