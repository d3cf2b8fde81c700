/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * NULL-terminated vectors of heap strings ("strv"). A strv owns its strings;
 * strv_free() frees both and returns NULL.
 */

#include <stdbool.h>
#include <stddef.h>

#include "basic/macro.h"

char **strv_free(char **l);
DEFINE_TRIVIAL_CLEANUP_FUNC_RESET(char **, strv_free);
#define _cleanup_strv_free_ _cleanup_(strv_freep)

/* Like strv_free() but wipes each string first (secrets). */
char **strv_free_wipe(char **l);
DEFINE_TRIVIAL_CLEANUP_FUNC_RESET(char **, strv_free_wipe);

size_t strv_length(char *const *l);
bool strv_contains(char *const *l, const char *s);

/* Append a copy of @s. Returns 0 or -ENOMEM. */
_must_check_ int strv_extend(char ***l, const char *s);
/* Append @s, taking ownership even on failure. */
_must_check_ int strv_consume(char ***l, char *s);
/* A deep copy of @l (NULL copies as an empty list, never as NULL). */
_must_check_ int strv_copy(char *const *l, char ***ret);
/* Split @s at any of @seps, dropping empty fields. */
_must_check_ int strv_split(const char *s, const char *seps, char ***ret);
