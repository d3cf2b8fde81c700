/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the V4A parser: any bytes in, and the result must be
 * well formed: exactly one of patch or error, every hunk line inside the
 * patch's copy of the text, paths without NUL, prefixes '+', '-' or ' '.
 *
 * The corpus (corpus/v4a/) replays under meson through fuzz-main.c; to fuzz for real:
 * scripts/fuzz.sh v4a [SECONDS] (docs/testing.md).
 */

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/edit/v4a.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct v4a_patch *p)
{
        const char *lo = p->text, *hi = p->text + p->text_len;

        if (p->n_ops > V4A_OPS_MAX || p->text[p->text_len] != 0)
                abort();
        for (size_t i = 0; i < p->n_ops; i++) {
                const struct v4a_op *op = &p->ops[i];

                if (!op->path || op->type > V4A_OP_MOVE)
                        abort();
                if (op->type == V4A_OP_MOVE && (!op->new_path || !op->new_path[0]))
                        abort();
                if ((op->type == V4A_OP_ADD || op->type == V4A_OP_DELETE) && op->new_path)
                        abort();
                if (memchr(op->path, 0, strlen(op->path) + 1) != op->path + strlen(op->path))
                        abort();
                for (size_t h = 0; h < op->n_hunks; h++) {
                        const struct v4a_hunk *hk = &op->hunks[h];

                        if (hk->n_lines == 0 || (hk->hint && strlen(hk->hint) != hk->hint_len))
                                abort();
                        for (size_t l = 0; l < hk->n_lines; l++) {
                                const struct v4a_line *ln = &hk->lines[l];

                                if (!strchr("+- ", ln->prefix) || ln->prefix == 0)
                                        abort();
                                if (ln->len > 0 && (ln->text < lo || ln->text + ln->len > hi))
                                        abort();
                                if (memchr(ln->text, '\n', ln->len))
                                        abort();
                        }
                }
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct v4a_patch *p = NULL;
        char *err = NULL;
        int r;

        r = v4a_parse((const char *) data, size, &p, &err);
        if (r < 0) {
                if (p || err)
                        abort();
                return 0;
        }
        if (!p == !err)
                abort();
        if (err && strncmp(err, "Parse error: ", 13) != 0)
                abort();
        if (p)
                check(p);
        v4a_patch_free(p);
        free(err);
        return 0;
}
