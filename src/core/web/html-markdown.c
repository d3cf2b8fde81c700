/* SPDX-License-Identifier: MIT */
#include "core/web/html-markdown.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <gumbo.h>

#include "basic/buf.h"

/*
 * Output cap when the caller passes max_out == 0: a page of links whose
 * relative hrefs resolve against a long base URL can grow far beyond its
 * input, so "no cap" still means a large one.
 */
#define HTML_MARKDOWN_OUT_MAX (64u * 1024 * 1024)

/*
 * Elements nested deeper than this get no per-element state: their content
 * is flattened (text, line breaks between blocks, no list/quote/table/link
 * structure). The walk itself is iterative, so depth costs no stack.
 */
#define HTML_MARKDOWN_DEPTH_MAX 512

/* Nested list items and block quotes that still add indentation. */
#define HTML_MARKDOWN_PREFIX_MAX 32

/* Pending inline openers ("**", "*", "[", ...) not yet written. */
#define HTML_MARKDOWN_PEND_MAX 64

/* Element nodes inside a table's cells examined to tell data from layout. */
#define HTML_MARKDOWN_TABLE_SCAN_MAX 65536

/* Title, alt text and inline code are short; longer ones are cut. */
#define HTML_MARKDOWN_SHORT_MAX 4096

/*
 * gumbo 0.10's tree builder scans the stack of open elements for many tags,
 * so hostile nesting (100,000 <div>s) costs O(n^2): tens of seconds. It has
 * no depth limit and no way to stop, so the parse runs on our own allocator,
 * which charges a CPU-time budget and a memory cap and longjmp()s out when
 * either is exceeded; everything gumbo allocated is then freed with the
 * arena. The budget is thread CPU time (not wall time) so a loaded machine
 * does not cut a legitimate page; realistic HTML parses at 5-10 MB/s.
 */
#define PARSE_CPU_BASE_NS (250ull * 1000 * 1000)
#define PARSE_CPU_PER_BYTE_NS 300ull
#define PARSE_MEM_BASE (64u * 1024 * 1024)
#define PARSE_MEM_PER_BYTE 32u
/* After an aborted parse, this many leading bytes are converted instead. */
#define PARSE_FALLBACK_BYTES (32u * 1024)
#define PARSE_FALLBACK_MIN 1024u

/* ---- arena allocator for gumbo ---- */

#define ARENA_SLAB_SIZE (1u << 20)
#define ARENA_CLASSES 13 /* 16 B .. 64 KiB */
#define ARENA_LARGE UINT64_MAX
#define ARENA_CHECK_EVERY 64u

struct arena_slab {
        struct arena_slab *next;
        size_t used;
        /* ARENA_SLAB_SIZE bytes follow; 16-byte aligned like malloc's result */
};

/* Header of a block larger than the biggest class; cls sits right before the data. */
struct arena_large {
        struct arena_large *prev, *next;
        size_t size;
        uint64_t cls;
};

struct arena {
        struct arena_slab *slabs;
        void *free_list[ARENA_CLASSES];
        struct arena_large *large;
        size_t bytes, max_bytes;
        unsigned ticks;
        uint64_t deadline_ns;
        int error;
        jmp_buf fail;
};

static uint64_t cpu_now_ns(void)
{
        struct timespec ts;

        if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
                return 0;
        return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static void arena_release(struct arena *a)
{
        while (a->slabs) {
                struct arena_slab *s = a->slabs;
                a->slabs = s->next;
                free(s);
        }
        while (a->large) {
                struct arena_large *l = a->large;
                a->large = l->next;
                free(l);
        }
        memset(a->free_list, 0, sizeof(a->free_list));
        a->bytes = 0;
}

_noreturn_ static void arena_fail(struct arena *a, int error)
{
        a->error = error;
        longjmp(a->fail, 1);
}

static void *arena_alloc(void *userdata, size_t n)
{
        struct arena *a = userdata;
        unsigned cls = 0;
        uint64_t *h;

        if (++a->ticks % ARENA_CHECK_EVERY == 0 && cpu_now_ns() > a->deadline_ns)
                arena_fail(a, -ETIME);

        while (cls < ARENA_CLASSES && (16u << cls) < n)
                cls++;
        if (cls == ARENA_CLASSES) {
                struct arena_large *l;

                if (n > a->max_bytes - a->bytes)
                        arena_fail(a, -E2BIG);
                l = malloc(sizeof(*l) + n);
                if (!l)
                        arena_fail(a, -ENOMEM);
                a->bytes += n;
                l->size = n;
                l->cls = ARENA_LARGE;
                l->prev = NULL;
                l->next = a->large;
                if (a->large)
                        a->large->prev = l;
                a->large = l;
                return l + 1;
        }
        if (a->free_list[cls]) {
                void *p = a->free_list[cls];
                memcpy(&a->free_list[cls], p, sizeof(void *));
                return p;
        }
        size_t need = 16 + (16u << cls);
        if (!a->slabs || a->slabs->used + need > ARENA_SLAB_SIZE) {
                struct arena_slab *s;

                if (ARENA_SLAB_SIZE > a->max_bytes - a->bytes)
                        arena_fail(a, -E2BIG);
                s = malloc(sizeof(*s) + ARENA_SLAB_SIZE);
                if (!s)
                        arena_fail(a, -ENOMEM);
                a->bytes += ARENA_SLAB_SIZE;
                s->used = 0;
                s->next = a->slabs;
                a->slabs = s;
        }
        h = (uint64_t *) ((char *) (a->slabs + 1) + a->slabs->used);
        a->slabs->used += need;
        h[0] = 0;
        h[1] = cls;
        return h + 2;
}

static void arena_free(void *userdata, void *p)
{
        struct arena *a = userdata;
        uint64_t cls;

        if (!p)
                return;
        cls = ((uint64_t *) p)[-1];
        if (cls == ARENA_LARGE) {
                struct arena_large *l = (struct arena_large *) p - 1;

                if (l->prev)
                        l->prev->next = l->next;
                else
                        a->large = l->next;
                if (l->next)
                        l->next->prev = l->prev;
                a->bytes -= l->size;
                free(l);
                return;
        }
        assert(cls < ARENA_CLASSES);
        memcpy(p, &a->free_list[cls], sizeof(void *));
        a->free_list[cls] = p;
}

/*
 * Parse under the arena's budget. On failure (-ETIME, -E2BIG, -ENOMEM) the
 * caller releases the arena, which frees whatever gumbo had built.
 */
static int parse_bounded(struct arena *a, const char *html, size_t n, GumboOutput **ret)
{
        GumboOptions opts = kGumboDefaultOptions;

        opts.allocator = arena_alloc;
        opts.deallocator = arena_free;
        opts.userdata = a;
        opts.max_errors = 0; /* parse errors are not wanted: do not build the list */
        a->ticks = 0;
        a->error = 0;
        a->max_bytes = PARSE_MEM_BASE + (n > SIZE_MAX / 64 ? SIZE_MAX / 2 : n * PARSE_MEM_PER_BYTE);
        a->deadline_ns = cpu_now_ns() + PARSE_CPU_BASE_NS + PARSE_CPU_PER_BYTE_NS * n;
        if (setjmp(a->fail) != 0)
                return a->error;
        *ret = gumbo_parse_with_options(&opts, html, n);
        return 0;
}

/* ---- tree helpers ---- */

static const GumboVector *node_children(const GumboNode *node)
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

static bool is_element(const GumboNode *node)
{
        return node->type == GUMBO_NODE_ELEMENT || node->type == GUMBO_NODE_TEMPLATE;
}

static bool is_html_tag(const GumboNode *node, GumboTag tag)
{
        return is_element(node) && node->v.element.tag == tag &&
               node->v.element.tag_namespace == GUMBO_NAMESPACE_HTML;
}

static const char *attr(const GumboNode *node, const char *name)
{
        const GumboAttribute *a;

        if (!is_element(node))
                return NULL;
        a = gumbo_get_attribute(&node->v.element.attributes, name);
        return a ? a->value : NULL;
}

/* The index of @node among its parent's children, or SIZE_MAX. */
static size_t child_index(const GumboNode *parent, const GumboNode *node)
{
        const GumboVector *kids = node_children(parent);

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
static GumboNode *next_node(const GumboNode *root, GumboNode *node, bool descend)
{
        const GumboVector *kids = descend ? node_children(node) : NULL;

        if (kids && kids->length > 0)
                return kids->data[0];
        while (node != root && node->parent) {
                GumboNode *parent = node->parent;
                const GumboVector *pk = node_children(parent);
                size_t i = child_index(parent, node);

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
                if (!is_element(p) || p->v.element.tag_namespace != GUMBO_NAMESPACE_HTML)
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

static bool is_dropped(const GumboNode *node)
{
        const char *v;

        if (!is_element(node))
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
        if (attr(node, "hidden"))
                return true;
        v = attr(node, "aria-hidden");
        if (v && strcasecmp(v, "true") == 0)
                return true;
        v = attr(node, "role");
        if (v && (token_in_list(v, "navigation") || token_in_list(v, "banner") ||
                  token_in_list(v, "contentinfo") || token_in_list(v, "complementary") ||
                  token_in_list(v, "search")))
                return true;
        return false;
}

static bool is_ws(unsigned char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

/* Length of the whitespace at @s (ASCII whitespace and U+00A0), 0 if none. */
static size_t ws_len(const char *s, size_t n)
{
        if (n > 0 && is_ws((unsigned char) s[0]))
                return 1;
        if (n > 1 && (unsigned char) s[0] == 0xC2 && (unsigned char) s[1] == 0xA0)
                return 2;
        return 0;
}

/* Length of the longest prefix of @s no longer than @max that ends on a UTF-8 boundary. */
static size_t utf8_cut(const char *s, size_t n, size_t max)
{
        if (n <= max)
                return n;
        while (max > 0 && ((unsigned char) s[max] & 0xC0) == 0x80)
                max--;
        return max;
}

/*
 * Append the text of @root's subtree to @b. @raw keeps whitespace and turns
 * <br> and block boundaries into newlines (for <pre>); otherwise the result
 * is collapsed by the caller. Stops silently at the buffer's cap.
 */
static int collect_text(GumboNode *root, bool raw, struct buf *b)
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

                        r = buf_append(b, t, utf8_cut(t, n, room));
                } else if (is_element(node) && node != root) {
                        if (is_dropped(node))
                                descend = false;
                        else if (raw && is_html_tag(node, GUMBO_TAG_BR))
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
                node = next_node(root, node, descend);
        }
        return 0;
}

/* Collapse whitespace runs in @s to one space and trim; in place. Returns the new length. */
static size_t collapse_ws(char *s, size_t n)
{
        size_t r = 0, w = 0;
        bool space = false;

        while (r < n) {
                size_t k = ws_len(s + r, n - r);

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
static char *text_of(GumboNode *root)
{
        _cleanup_buf_ struct buf b = BUF_INIT(HTML_MARKDOWN_SHORT_MAX);

        if (collect_text(root, false, &b) < 0)
                return NULL;
        if (!b.data)
                return strdup("");
        b.len = collapse_ws(b.data, b.len);
        return buf_steal(&b, NULL);
}

/* ---- the Markdown writer ---- */

enum frame_kind {
        F_PLAIN = 0, /* no state; leave derives the block level from the tag */
        F_FORMAT,
        F_LINK,
        F_LIST,
        F_LI,
        F_QUOTE,
        F_HEADING,
        F_DD,
        F_TABLE,
        F_LAYOUT_TABLE,
        F_ROW,
        F_CELL,
        F_INLINE, /* a link-like inline context (inline_mode raised) without brackets */
};

struct frame {
        enum frame_kind kind;
        const char *marker; /* F_FORMAT closing marker */
        size_t pend_mark;   /* pend length before this element's opener */
        size_t prefix_mark; /* prefix depth before this element */
        char *url;          /* F_LINK, owned */
        long counter;       /* F_LIST: next number; F_TABLE: columns; F_ROW: cells */
        bool ordered;
        struct frame *saved_table, *saved_row;
        long rows; /* F_TABLE: rows written */
        long span; /* F_CELL: colspan */
};

struct prefix {
        char indent[4];
        char marker[24];
        bool has_marker;
};

struct md {
        struct buf out;
        bool full; /* output cap reached: stop */
        int err;
        int nl;          /* pending newlines before the next content: 0..2 */
        bool space;      /* pending collapsed space */
        bool line_empty; /* nothing written on the current line yet */
        bool any;        /* anything written at all */
        bool li_fresh;   /* a list item started and has no content yet */
        char pend[HTML_MARKDOWN_PEND_MAX];
        size_t pend_n;
        char lead[16]; /* written once after the line prefixes: "## ", ": " */
        struct prefix prefixes[HTML_MARKDOWN_PREFIX_MAX];
        size_t nprefix;
        size_t blank_prefix; /* prefixes open since the last content: blank lines get these */
        int inline_mode;     /* > 0: block breaks become spaces (headings, cells, links) */
        int cell_mode;       /* > 0: escape '|' */
        int list_depth;
        struct frame *table, *row;
        CURLU *base;    /* NULL: no usable base URL */
        char *base_str; /* the base URL without its fragment */
        struct frame *frames;
};

static void md_raw(struct md *m, const char *s, size_t n)
{
        int r;

        if (m->full || m->err || n == 0)
                return;
        r = buf_append(&m->out, s, n);
        if (r == -E2BIG) {
                size_t k = utf8_cut(s, n, m->out.cap - m->out.len);

                if (buf_append(&m->out, s, k) < 0) {
                        /* Cannot fail: k bytes fit under the cap and were reserved. */
                }
                m->full = true;
        } else if (r < 0)
                m->err = r;
}

static void md_str(struct md *m, const char *s)
{
        md_raw(m, s, strlen(s));
}

static void write_prefixes(struct md *m, bool blank)
{
        size_t n = blank ? MIN(m->blank_prefix, m->nprefix) : m->nprefix;

        for (size_t i = 0; i < n; i++) {
                struct prefix *p = &m->prefixes[i];

                if (p->has_marker && !blank) {
                        md_str(m, p->marker);
                        p->has_marker = false;
                } else
                        md_str(m, p->indent);
        }
}

/* Materialise pending line breaks, prefixes, the lead, a pending space and openers. */
static void begin_content(struct md *m)
{
        if (m->nl > 0 && m->any) {
                for (int i = 0; i < m->nl; i++) {
                        md_raw(m, "\n", 1);
                        if (i + 1 < m->nl)
                                write_prefixes(m, true);
                }
                m->line_empty = true;
        }
        m->nl = 0;
        if (m->line_empty) {
                write_prefixes(m, false);
                md_str(m, m->lead);
                m->lead[0] = 0;
                m->line_empty = false;
        } else if (m->space)
                md_raw(m, " ", 1);
        m->space = false;
        md_raw(m, m->pend, m->pend_n);
        m->pend_n = 0;
        m->blank_prefix = m->nprefix;
        m->any = true;
        m->li_fresh = false;
}

static void md_break(struct md *m, int n)
{
        if (n == 0)
                return;
        if (m->inline_mode > 0) {
                m->space = true;
                return;
        }
        if (m->li_fresh)
                return;
        if (n > m->nl)
                m->nl = n;
        m->space = false;
}

static bool pend_push(struct md *m, const char *s)
{
        size_t n = strlen(s);

        if (n > sizeof(m->pend) - m->pend_n)
                return false;
        memcpy(m->pend + m->pend_n, s, n);
        m->pend_n += n;
        return true;
}

/* Would @s, at the start of a line, be read as Markdown structure? */
static bool needs_escape(const char *s, size_t n, size_t *ret_at)
{
        size_t i = 0;

        *ret_at = 0;
        switch (s[0]) {
        case '>':
                return true;
        case '#':
                for (i = 0; i < n && s[i] == '#'; i++)
                        ;
                return i == n && n <= 6;
        case '-':
        case '+':
        case '*':
        case '=':
        case '_':
                if (n == 1)
                        return true;
                for (i = 0; i < n && s[i] == s[0]; i++)
                        ;
                return i == n && s[0] != '+';
        case '`':
        case '~':
                return n >= 3 && s[1] == s[0] && s[2] == s[0];
        default:
                break;
        }
        while (i < n && i < 10 && s[i] >= '0' && s[i] <= '9')
                i++;
        if (i > 0 && i + 1 == n && (s[i] == '.' || s[i] == ')')) {
                *ret_at = i;
                return true;
        }
        return false;
}

/* Write a run of non-space text: '|' escaped in cells, inline base64 images replaced. */
static void write_run(struct md *m, const char *s, size_t n)
{
        static const char data_img[] = "data:image/";
        const size_t dl = sizeof(data_img) - 1;
        size_t start = 0;

        for (size_t i = 0; i < n; i++) {
                if (s[i] == '|' && m->cell_mode > 0) {
                        md_raw(m, s + start, i - start);
                        md_raw(m, "\\|", 2);
                        start = i + 1;
                } else if ((s[i] == 'd' || s[i] == 'D') && n - i > dl &&
                           strncasecmp(s + i, data_img, dl) == 0) {
                        size_t j = i + dl;
                        const char *b64;

                        while (j < n && s[j] != ';' && s[j] != ',')
                                j++;
                        b64 = s + j;
                        if (n - j < 8 || strncasecmp(b64, ";base64,", 8) != 0)
                                continue;
                        j += 8;
                        while (j < n && (isalnum((unsigned char) s[j]) || s[j] == '+' ||
                                         s[j] == '/' || s[j] == '=' || s[j] == '%'))
                                j++;
                        md_raw(m, s + start, i - start);
                        md_str(m, HTML_MARKDOWN_BASE64_IMAGE_MARKER);
                        start = j;
                        i = j - 1;
                }
        }
        md_raw(m, s + start, n - start);
}

static void md_text(struct md *m, const char *s, size_t n)
{
        size_t i = 0;

        while (i < n && !m->full && !m->err) {
                size_t k = ws_len(s + i, n - i), j, at;
                bool line_start;

                if (k > 0) {
                        m->space = true;
                        i += k;
                        continue;
                }
                for (j = i; j < n && ws_len(s + j, n - j) == 0; j++)
                        ;
                line_start = (m->line_empty || (m->nl > 0 && m->any)) && m->pend_n == 0 &&
                             m->lead[0] == 0;
                begin_content(m);
                if (line_start && needs_escape(s + i, j - i, &at)) {
                        md_raw(m, s + i, at);
                        md_raw(m, "\\", 1);
                        i += at;
                }
                write_run(m, s + i, j - i);
                i = j;
        }
}

/* ---- URLs ---- */

static bool has_scheme(const char *s, size_t *ret_len)
{
        size_t i = 0;

        if (!isalpha((unsigned char) s[0]))
                return false;
        while (isalnum((unsigned char) s[i]) || s[i] == '+' || s[i] == '-' || s[i] == '.')
                i++;
        if (s[i] != ':')
                return false;
        *ret_len = i;
        return true;
}

/*
 * Copy a URL for a Markdown link destination: spaces and control characters
 * are percent-encoded (they would end the destination), and so is '|' in a
 * table cell. NULL on ENOMEM.
 */
static char *url_for_markdown(const struct md *m, const char *u)
{
        _cleanup_buf_ struct buf b = BUF_INIT(SIZE_MAX / 2);

        for (const char *p = u; *p; p++) {
                unsigned char c = (unsigned char) *p;
                int r;

                if (c <= ' ' || c == 0x7F || (c == '|' && m->cell_mode > 0))
                        r = buf_printf(&b, "%%%02X", c);
                else
                        r = buf_append_char(&b, (char) c);
                if (r < 0)
                        return NULL;
        }
        if (!b.data)
                return strdup("");
        return buf_steal(&b, NULL);
}

/*
 * Resolve @href for output. NULL when there is nothing to link to (empty,
 * javascript:, data:, ...) or on ENOMEM (then m->err is set).
 */
static char *resolve_url(struct md *m, const char *href)
{
        _cleanup_free_ char *clean = NULL;
        char *curl_out = NULL, *res;
        size_t n, w = 0, sl;

        if (!href)
                return NULL;
        /* Browsers strip surrounding whitespace and drop tabs and newlines inside. */
        n = strlen(href);
        clean = malloc(n + 1);
        if (!clean) {
                m->err = -ENOMEM;
                return NULL;
        }
        for (size_t i = 0; i < n; i++)
                if (href[i] != '\t' && href[i] != '\n' && href[i] != '\r')
                        clean[w++] = href[i];
        while (w > 0 && is_ws((unsigned char) clean[w - 1]))
                w--;
        clean[w] = 0;
        href = clean + strspn(clean, " \f");
        if (!*href)
                return NULL;

        if (has_scheme(href, &sl)) {
                if ((sl == 10 && strncasecmp(href, "javascript", sl) == 0) ||
                    (sl == 8 && strncasecmp(href, "vbscript", sl) == 0) ||
                    (sl == 4 && strncasecmp(href, "data", sl) == 0))
                        return NULL;
                if (!((sl == 4 && strncasecmp(href, "http", 4) == 0) ||
                      (sl == 5 && strncasecmp(href, "https", 5) == 0))) {
                        res = url_for_markdown(m, href); /* mailto:, tel:, ftp:, ... as given */
                        if (!res)
                                m->err = -ENOMEM;
                        return res;
                }
        }
        if (href[0] == '#' && m->base_str) {
                /* curl 7.88 resolves "#x" against the directory, not the document. */
                _cleanup_free_ char *joined = NULL;

                if (asprintf(&joined, "%s%s", m->base_str, href) < 0) {
                        m->err = -ENOMEM;
                        return NULL;
                }
                res = url_for_markdown(m, joined);
                if (!res)
                        m->err = -ENOMEM;
                return res;
        }
        {
                CURLU *h = m->base ? curl_url_dup(m->base) : curl_url();

                if (h) {
                        if (curl_url_set(h, CURLUPART_URL, href,
                                         CURLU_NON_SUPPORT_SCHEME | CURLU_URLENCODE) == CURLUE_OK) {
                                if (curl_url_get(h, CURLUPART_URL, &curl_out, 0) != CURLUE_OK)
                                        curl_out = NULL;
                        }
                        curl_url_cleanup(h);
                }
        }
        /* Unresolvable (no base, or curl refuses it): keep it as written. */
        res = url_for_markdown(m, curl_out ? curl_out : href);
        curl_free(curl_out);
        if (!res)
                m->err = -ENOMEM;
        return res;
}

static int set_base(struct md *m, const char *url)
{
        CURLU *h = m->base ? curl_url_dup(m->base) : curl_url();
        char *s = NULL;

        if (!h)
                return -ENOMEM;
        if (curl_url_set(h, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME | CURLU_URLENCODE) !=
                    CURLUE_OK ||
            curl_url_set(h, CURLUPART_FRAGMENT, NULL, 0) != CURLUE_OK ||
            curl_url_get(h, CURLUPART_URL, &s, 0) != CURLUE_OK) {
                curl_url_cleanup(h);
                return 0; /* unusable base: keep the previous one */
        }
        free(m->base_str);
        m->base_str = strdup(s);
        curl_free(s);
        if (!m->base_str) {
                curl_url_cleanup(h);
                return -ENOMEM;
        }
        curl_url_cleanup(m->base);
        m->base = h;
        return 0;
}

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
        if (is_html_tag(node, GUMBO_TAG_TD) || is_html_tag(node, GUMBO_TAG_TH))
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

        if (collect_text(node, false, &b) < 0) {
                m->err = -ENOMEM;
                return;
        }
        if (!b.data)
                return;
        b.len = collapse_ws(b.data, b.len);
        if (b.len == 0)
                return;
        fence = longest_backtick_run(b.data, b.len) + 1;
        begin_content(m);
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
        const GumboVector *kids = node_children(node);
        size_t fence, i = 0;

        if (m->inline_mode > 0) {
                inline_code(m, node);
                return;
        }
        if (!code_language(attr(node, "class"), lang, sizeof(lang)))
                for (size_t k = 0; kids && k < kids->length; k++)
                        if (is_html_tag(kids->data[k], GUMBO_TAG_CODE) &&
                            code_language(attr(kids->data[k], "class"), lang, sizeof(lang)))
                                break;
        if (collect_text(node, true, &b) < 0) {
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
        begin_content(m);
        write_backticks(m, fence);
        md_str(m, lang);
        while (i < b.len) {
                const char *nl = memchr(b.data + i, '\n', b.len - i);
                size_t e = nl ? (size_t) (nl - b.data) : b.len;

                md_raw(m, "\n", 1);
                write_prefixes(m, true);
                md_raw(m, b.data + i, e - i);
                i = e + 1;
        }
        md_raw(m, "\n", 1);
        write_prefixes(m, true);
        write_backticks(m, fence);
        md_break(m, 2);
}

static void image(struct md *m, GumboNode *node)
{
        const char *src = attr(node, "src"), *alt = attr(node, "alt"), *lazy;
        _cleanup_free_ char *alt_c = NULL, *url = NULL;
        size_t al = 0;

        /* Lazy-loading pages put a placeholder in src and the image in data-src. */
        lazy = attr(node, "data-src");
        if (lazy && *lazy && (!src || !*src || strncasecmp(src, "data:", 5) == 0))
                src = lazy;
        if (alt) {
                alt_c = strndup(alt, HTML_MARKDOWN_SHORT_MAX);
                if (!alt_c) {
                        m->err = -ENOMEM;
                        return;
                }
                al = collapse_ws(alt_c, strlen(alt_c));
        }
        if (src && strncasecmp(src + strspn(src, " \t\n\r\f"), "data:image/", 11) == 0) {
                begin_content(m);
                md_str(m, HTML_MARKDOWN_BASE64_IMAGE_MARKER);
                return;
        }
        url = resolve_url(m, src);
        if (!url) {
                if (al > 0)
                        md_text(m, alt_c, al);
                return;
        }
        begin_content(m);
        md_raw(m, "![", 2);
        for (size_t i = 0; i < al; i++) {
                if (alt_c[i] == ']' || alt_c[i] == '[' || (alt_c[i] == '|' && m->cell_mode > 0))
                        md_raw(m, "\\", 1);
                md_raw(m, alt_c + i, 1);
        }
        md_raw(m, "](", 2);
        md_str(m, url);
        md_raw(m, ")", 1);
}

/* Count rows and columns of a table; false when it is layout, not data. */
static bool table_shape(GumboNode *table, long *ret_rows, long *ret_cols)
{
        const GumboVector *kids = node_children(table);
        long rows = 0, cols = 0;
        size_t budget = HTML_MARKDOWN_TABLE_SCAN_MAX;
        bool layout = false;

        for (size_t i = 0; kids && i < kids->length; i++) {
                GumboNode *k = kids->data[i];
                const GumboVector *rv;
                size_t nr = 1;
                GumboNode **rl = &k;

                if (is_html_tag(k, GUMBO_TAG_THEAD) || is_html_tag(k, GUMBO_TAG_TBODY) ||
                    is_html_tag(k, GUMBO_TAG_TFOOT)) {
                        rv = node_children(k);
                        rl = (GumboNode **) rv->data;
                        nr = rv->length;
                }
                for (size_t r = 0; r < nr; r++) {
                        GumboNode *row = rl[r];
                        const GumboVector *cv;
                        long c = 0;

                        if (!is_html_tag(row, GUMBO_TAG_TR))
                                continue;
                        cv = node_children(row);
                        for (size_t j = 0; j < cv->length; j++) {
                                GumboNode *cell = cv->data[j];
                                const char *span;
                                long s = 1;

                                if (!is_html_tag(cell, GUMBO_TAG_TD) &&
                                    !is_html_tag(cell, GUMBO_TAG_TH))
                                        continue;
                                span = attr(cell, "colspan");
                                if (span) {
                                        s = strtol(span, NULL, 10);
                                        s = s < 1 ? 1 : MIN(s, 64);
                                }
                                c += s;
                                for (GumboNode *d = next_node(cell, cell, true); d && !layout;
                                     d = next_node(cell, d, true)) {
                                        if (!is_element(d))
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
        const char *span = attr(node, "colspan");

        f->kind = F_CELL;
        f->span = 1;
        if (span) {
                f->span = strtol(span, NULL, 10);
                f->span = f->span < 1 ? 1 : MIN(f->span, 64);
        }
        if (m->row->counter == 0) {
                begin_content(m);
                md_raw(m, "|", 1);
        }
        m->space = false;
        f->pend_mark = m->pend_n;
        if (!pend_push(m, " ")) {
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
                begin_content(m);
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
        if (!is_html_tag(node->parent, GUMBO_TAG_UL) && !is_html_tag(node->parent, GUMBO_TAG_OL))
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
        if (is_dropped(node))
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
                begin_content(m);
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
                if (pend_push(m, marker)) {
                        f->kind = F_FORMAT;
                        f->marker = marker;
                }
                return true;
        }
        if (tag == GUMBO_TAG_A) {
                f->url = resolve_url(m, attr(node, "href"));
                f->kind = F_INLINE;
                if (f->url) {
                        f->pend_mark = m->pend_n;
                        if (pend_push(m, "["))
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
                const char *start = tag == GUMBO_TAG_OL ? attr(node, "start") : NULL;

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
                size_t i = child_index(node->parent, node);
                const GumboVector *sib = node_children(node->parent);
                bool after_dt = false;

                while (i != SIZE_MAX && i-- > 0)
                        if (is_element(sib->data[i])) {
                                after_dt = is_html_tag(sib->data[i], GUMBO_TAG_DT);
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
                        begin_content(m);
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
                kids = node_children(node);
                if (entered && kids && kids->length > 0) {
                        node = kids->data[0];
                        depth++;
                        continue;
                }
                if (entered && is_element(node))
                        element_leave(m, node, depth);
                for (;;) {
                        GumboNode *parent;
                        size_t i;

                        if (node == root || !node->parent)
                                return;
                        parent = node->parent;
                        i = child_index(parent, node);
                        kids = node_children(parent);
                        if (i != SIZE_MAX && i + 1 < kids->length) {
                                node = kids->data[i + 1];
                                break;
                        }
                        node = parent;
                        depth--;
                        if (is_element(node))
                                element_leave(m, node, depth);
                        if (i == SIZE_MAX)
                                return;
                }
        }
}

/* Strip trailing blanks on every line, keep at most one blank line in a row, trim the ends. */
static void normalize(struct buf *b)
{
        size_t r = 0, w = 0;
        bool blank = false;

        while (r < b->len) {
                const char *nl = memchr(b->data + r, '\n', b->len - r);
                size_t e = nl ? (size_t) (nl - b->data) : b->len, len;

                len = e - r;
                while (len > 0 && (b->data[r + len - 1] == ' ' || b->data[r + len - 1] == '\t'))
                        len--;
                if (len == 0)
                        blank = true;
                else {
                        if (w > 0) {
                                b->data[w++] = '\n';
                                if (blank)
                                        b->data[w++] = '\n';
                        }
                        memmove(b->data + w, b->data + r, len);
                        w += len;
                        blank = false;
                }
                r = e + 1;
        }
        b->len = w;
        if (b->data)
                b->data[w] = 0;
}

struct doc_info {
        GumboNode *title, *og_title, *h1, *base, *main, *article, *body;
        unsigned articles;
};

static void scan_document(GumboNode *doc, struct doc_info *info)
{
        for (GumboNode *node = doc; node; node = next_node(doc, node, true)) {
                const char *v;

                if (!is_element(node) || node->v.element.tag_namespace != GUMBO_NAMESPACE_HTML)
                        continue;
                switch (node->v.element.tag) {
                case GUMBO_TAG_TITLE:
                        if (!info->title)
                                info->title = node;
                        break;
                case GUMBO_TAG_META:
                        v = attr(node, "property");
                        if (!v)
                                v = attr(node, "name");
                        if (!info->og_title && v && strcasecmp(v, "og:title") == 0 &&
                            attr(node, "content"))
                                info->og_title = node;
                        break;
                case GUMBO_TAG_H1:
                        if (!info->h1)
                                info->h1 = node;
                        break;
                case GUMBO_TAG_BASE:
                        if (!info->base && attr(node, "href"))
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
                        v = attr(node, "role");
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
                t = text_of(info->title);
                if (!t)
                        return -ENOMEM;
        }
        if ((!t || !*t) && info->og_title) {
                free(t);
                t = strndup(attr(info->og_title, "content"), HTML_MARKDOWN_SHORT_MAX);
                if (!t)
                        return -ENOMEM;
                (void) collapse_ws(t, strlen(t));
        }
        if ((!t || !*t) && info->h1) {
                free(t);
                t = text_of(info->h1);
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
                r = set_base(&m, base_url);
        if (r >= 0 && info.base)
                r = set_base(&m, attr(info.base, "href"));
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
        normalize(&m.out);
        *ret_markdown = m.out.data ? buf_steal(&m.out, NULL) : strdup("");
        if (!*ret_markdown)
                return -ENOMEM;
        if (ret_title)
                *ret_title = TAKE_PTR(title);
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
                r = parse_bounded(&a, html, len, &out);
                if (r >= 0)
                        break;
                arena_release(&a);
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
                len = utf8_cut(html, n, MIN(len / 2, PARSE_FALLBACK_BYTES));
        }
        r = convert_output(out, base_url, max_out, ret_markdown, ret_title);
        /* The arena owns every byte gumbo allocated; gumbo_destroy_output is not needed. */
        arena_release(&a);
        return r;
}
