/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The provider credentials ptc keeps (docs/contracts.md 8): API keys of the
 * search and extraction providers, read from the environment.
 *
 * At start-up env_take_secrets() removes every secret-named variable from
 * ptc's environment and wipes it. The CLI hands that list to web_keys_take(),
 * which keeps copies of the provider variables only (the rest are wiped with
 * the list). Afterwards web_key_get() answers from that store, and falls back
 * to getenv() for names that were never taken (a key on the passthrough list,
 * or a host that never ran the take-over).
 *
 * Process-wide, like the environment it replaces: call web_keys_take() once,
 * before any thread starts; web_key_get() is then safe from any thread.
 */

#include "basic/macro.h"

/* The variables a provider reads, NULL-terminated. */
extern const char *const web_key_names[];

/*
 * Keep copies of the provider variables found in @kept ("NAME=VALUE" strv,
 * borrowed; may be NULL). Replaces what an earlier call kept. Returns 0 or
 * -ENOMEM.
 */
_must_check_ int web_keys_take(char *const *kept);

/* The value of provider variable @name (non-empty), or NULL. Borrowed; valid until
 * the next web_keys_take() or web_keys_clear(). */
const char *web_key_get(const char *name);

/* Wipe and free the store (for tests and at exit). */
void web_keys_clear(void);
