/* SPDX-License-Identifier: MIT */
/*
 * The YAML reader: libyaml's events into a tree of struct node
 * (config-internal.h), with the depth, node-count and single-document limits
 * enforced while building. What the values mean is config-sections.c's business.
 */

#include "core/config/config-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

void config_node_free(struct node *n)
{
        if (!n)
                return;
        /* Recursion depth is bounded by CONFIG_MAX_DEPTH. */
        for (size_t i = 0; i < n->n_items; i++)
                config_node_free(n->items[i]);
        free(n->items);
        free(n->text);
        free(n);
}

void config_node_freep(struct node **n)
{
        config_node_free(*n);
        *n = NULL;
}

/* ---- building the tree -------------------------------------------------------------------- */

struct builder {
        struct ctx *x;
        struct node *root;
        struct node *stack[CONFIG_MAX_DEPTH];
        size_t depth;
        size_t n_nodes;
        unsigned n_documents;
};

static int builder_add(struct builder *b, enum node_type type, size_t line, const char *text,
                       size_t len, bool maybe_null, struct node **ret)
{
        struct node *parent = b->depth > 0 ? b->stack[b->depth - 1] : NULL;
        struct node *n;

        if (++b->n_nodes > CONFIG_MAX_NODES)
                return config_fail(b->x, line, NULL, "too many YAML nodes (more than %d)",
                                   CONFIG_MAX_NODES);
        if (!parent && b->root)
                return config_fail(b->x, line, NULL, "multiple YAML documents are not supported");

        n = calloc(1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        n->type = type;
        n->line = line;
        n->maybe_null = maybe_null;
        if (text) {
                n->text = malloc(len + 1);
                if (!n->text) {
                        free(n);
                        return -ENOMEM;
                }
                memcpy(n->text, text, len);
                n->text[len] = 0;
                n->len = len;
        }

        /* Attach at once, so that freeing the root frees everything on any error path. */
        if (!parent)
                b->root = n;
        else {
                if (parent->n_items == parent->n_alloc) {
                        size_t na = parent->n_alloc ? parent->n_alloc * 2 : 4;
                        struct node **items = reallocarray(parent->items, na, sizeof(*items));

                        if (!items) {
                                config_node_free(n);
                                return -ENOMEM;
                        }
                        parent->items = items;
                        parent->n_alloc = na;
                }
                parent->items[parent->n_items++] = n;
        }
        if (ret)
                *ret = n;
        return 0;
}

static int builder_event(struct builder *b, const yaml_event_t *ev)
{
        size_t line = ev->start_mark.line + 1;
        struct node *n;
        int r;

        switch (ev->type) {
        case YAML_DOCUMENT_START_EVENT:
                if (++b->n_documents > 1)
                        return config_fail(b->x, line, NULL,
                                           "multiple YAML documents are not supported");
                return 0;

        case YAML_SCALAR_EVENT:
                return builder_add(b, NODE_SCALAR, line, (const char *) ev->data.scalar.value,
                                   ev->data.scalar.length,
                                   ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                                           ev->data.scalar.plain_implicit,
                                   NULL);

        case YAML_ALIAS_EVENT: {
                const char *a = (const char *) ev->data.alias.anchor;

                return builder_add(b, NODE_ALIAS, line, a ? a : "", a ? strlen(a) : 0, false, NULL);
        }

        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
                if (b->depth >= CONFIG_MAX_DEPTH)
                        return config_fail(b->x, line, NULL,
                                           "YAML nesting too deep (more than %d levels)",
                                           CONFIG_MAX_DEPTH);
                r = builder_add(
                        b, ev->type == YAML_SEQUENCE_START_EVENT ? NODE_SEQUENCE : NODE_MAPPING,
                        line, NULL, 0, false, &n);
                if (r < 0)
                        return r;
                b->stack[b->depth++] = n;
                return 0;

        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
                if (b->depth > 0)
                        b->depth--;
                return 0;

        default:
                return 0;
        }
}

static int yaml_fail(struct ctx *x, const yaml_parser_t *p, const char *data, size_t len)
{
        size_t line = 1;

        if (p->error == YAML_MEMORY_ERROR)
                return diag_set(x->err, -ENOMEM, "%s: out of memory while parsing YAML", x->path);

        if (p->error == YAML_READER_ERROR) {
                /* Reader errors (bad encoding, control characters) carry an offset, no mark. */
                size_t end = MIN(p->problem_offset, len);

                for (size_t i = 0; i < end; i++)
                        if (data[i] == '\n')
                                line++;
        } else
                line = p->problem_mark.line + 1;

        return config_fail(x, line, NULL, "malformed YAML: %s",
                           p->problem ? p->problem : "parse error");
}

int config_parse_yaml(struct ctx *x, const char *data, size_t len, struct node **ret)
{
        struct builder b = {.x = x};
        yaml_parser_t p;
        int r = 0;

        if (!yaml_parser_initialize(&p))
                return -ENOMEM;
        yaml_parser_set_input_string(&p, (const unsigned char *) data, len);

        /* Terminates: every event consumes input, and the node cap bounds the rest. */
        for (;;) {
                yaml_event_t ev;
                bool done;

                if (!yaml_parser_parse(&p, &ev)) {
                        r = yaml_fail(x, &p, data, len);
                        break;
                }
                r = builder_event(&b, &ev);
                done = ev.type == YAML_STREAM_END_EVENT;
                yaml_event_delete(&ev);
                if (r < 0 || done)
                        break;
        }
        yaml_parser_delete(&p);

        if (r < 0) {
                config_node_free(b.root);
                return r;
        }
        *ret = b.root;
        return 0;
}
