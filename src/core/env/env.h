/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The environment of the script and of the tools' subprocesses
 * (docs/seed.md 1.7 and docs/contracts.md 6 and 8).
 *
 * At start-up ptc takes every secret-looking variable out of its own
 * environment (env_take_secrets): the value is registered with the redactor
 * (so it is redacted by value wherever it shows up), the original bytes of
 * the process's environment block are wiped, and the entry is removed from
 * environ. /proc/<ptc>/environ then holds no secret, and nothing ptc spawns
 * can inherit one by accident.
 */

#include <stdbool.h>

#include "basic/macro.h"

struct redactor;

/* True when @name contains (case-insensitively) one of the secret substrings:
 * KEY TOKEN SECRET PASSWORD CREDENTIAL PASSWD AUTH DSN WEBHOOK CREDS BEARER APIKEY. */
bool env_name_is_secret(const char *name);

/* True when @name starts with one of the seed's safe prefixes (case-sensitive). */
bool env_name_is_safe(const char *name);

/*
 * Remove secret-named variables that are not in @passthrough from environ,
 * registering their values with @redactor (may be NULL) and wiping them.
 * If @ret_kept is non-NULL it receives a strv of "NAME=VALUE" copies of the
 * removed variables (caller frees with strv_free_wipe) for the few consumers
 * that need a secret (web providers). Call once, before any thread starts.
 * Returns the number of variables removed, or -ENOMEM.
 */
_must_check_ int env_take_secrets(char *const *passthrough, struct redactor *redactor,
                                  char ***ret_kept);

/*
 * env_take_secrets() without touching anything: register the values of the
 * secret-named variables of @src (not in @passthrough) with @redactor, for a
 * host that must not have its environment changed (libptc without
 * PTC_ENGINE_SCRUB_PROCESS). Returns the number found, or -ENOMEM.
 */
_must_check_ int env_read_secrets(char *const *src, char *const *passthrough,
                                  struct redactor *redactor);

/*
 * Build the scrubbed environment for children from @src (normally environ):
 * passthrough names kept, secret names dropped, safe prefixes kept, the rest
 * dropped. PTC_TIMEZONE, when set and non-empty, becomes TZ and is itself
 * dropped. Caller frees *ret (strv). Returns 0 or -ENOMEM.
 */
_must_check_ int env_build_child(char *const *src, char *const *passthrough, char ***ret);

/*
 * Set NAME=VALUE in the strv @env, replacing an existing entry. Returns 0 or
 * -ENOMEM.
 */
_must_check_ int env_set(char ***env, const char *name, const char *value);

/* Value of @name in @env or NULL. Borrowed. */
const char *env_get(char *const *env, const char *name);
