/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Internal to html_to_markdown() (html-markdown.h): the parts it is split
 * into share these bounds, types and helpers. Not for other modules.
 *   html-parse.c     gumbo's parse on a bounded arena (CPU time and memory)
 *   html-tree.c      walking gumbo's tree: children, attributes, dropped
 *                    elements, text collection and whitespace
 *   html-writer.c    the Markdown writer (line prefixes, pending openers,
 *                    escaping) and URL resolution against the base
 *   html-markdown.c  the elements (enter/leave per tag), the document scan
 *                    and the entry point
 * Thread context: any thread; no shared state (every call works on its own
 * struct arena and struct md).
 */

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>
#include <gumbo.h>

#include "basic/buf.h"
#include "core/web/html-markdown.h"

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

/* ---- html-parse.c: arena allocator for gumbo ---- */

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

/* Free every block gumbo allocated from @a, and the arena's own slabs. */
void html_arena_release(struct arena *a);
/*
 * Parse under the arena's budget. On failure (-ETIME, -E2BIG, -ENOMEM) the
 * caller releases the arena, which frees whatever gumbo had built.
 */
int html_parse_bounded(struct arena *a, const char *html, size_t n, GumboOutput **ret);

/* ---- html-tree.c: tree helpers ---- */

const GumboVector *html_node_children(const GumboNode *node);
bool html_is_element(const GumboNode *node);
bool html_is_tag(const GumboNode *node, GumboTag tag);
const char *html_attr(const GumboNode *node, const char *name);
size_t html_child_index(const GumboNode *parent, const GumboNode *node);
GumboNode *html_next_node(const GumboNode *root, GumboNode *node, bool descend);
bool html_is_dropped(const GumboNode *node);
bool html_is_ws(unsigned char c);
size_t html_ws_len(const char *s, size_t n);
/*
 * gumbo's own UTF-8 is not always valid: a numeric character reference past what an int
 * holds can come out as a stray byte (found by fuzz-html). html_valid_utf8() replaces such
 * text of *s (*len bytes) as Python's decoder would (U+FFFD), cuts it again to @cap on a
 * character boundary and drops a blank the cut leaves at the end (a new string in *s). 0 or
 * -ENOMEM.
 */
int html_valid_utf8(char **s, size_t *len, size_t cap);
/*
 * The writer's finished output @b: made valid UTF-8 as html_valid_utf8() does, trailing
 * blanks stripped from every line, at most one blank line in a row, the ends trimmed. 0 or
 * -ENOMEM.
 */
int md_finish(struct buf *b);
int html_collect_text(GumboNode *root, bool raw, struct buf *b);
size_t html_collapse_ws(char *s, size_t n);
char *html_text_of(GumboNode *root);

/* ---- html-writer.c: the Markdown writer and URLs ---- */

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

void md_raw(struct md *m, const char *s, size_t n);
void md_str(struct md *m, const char *s);
void md_write_prefixes(struct md *m, bool blank);
void md_begin_content(struct md *m);
void md_break(struct md *m, int n);
bool md_pend_push(struct md *m, const char *s);
void md_text(struct md *m, const char *s, size_t n);
char *md_resolve_url(struct md *m, const char *href);
int md_set_base(struct md *m, const char *url);
