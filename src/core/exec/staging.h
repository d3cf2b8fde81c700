/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The private directory of one execution: mode 0700 under $TMPDIR (or /tmp),
 * named ptc-XXXXXX, holding script.py, the tools module and the RPC socket.
 * Removed with everything in it when the execution ends.
 */

#include <stddef.h>

#include "basic/macro.h"

struct staging {
        char *dir;
        char *script_path;
        char *socket_path;
};

/*
 * Create the directory and write the script (@code, @code_len bytes) and
 * the module (@module_name.py, @module_text). Returns 0 or -errno; on error
 * nothing is left behind.
 */
_must_check_ int staging_create(struct staging *s, const char *code, size_t code_len,
                                const char *module_name, const char *module_text);

/* Write a new file @name (@n bytes of @data) in the directory; *ret_path is its path. */
_must_check_ int staging_add_file(const struct staging *s, const char *name, const char *data,
                                  size_t n, char **ret_path);

/* Remove the directory tree and free the paths. NULL-safe, idempotent. */
void staging_remove(struct staging *s);
