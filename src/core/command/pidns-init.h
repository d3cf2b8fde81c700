/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * pid 1 of a command's pid namespace (command.h: the terminal's commands, docs/decisions.md).
 *
 * A namespace's pid 1 ignores every signal it has no handler for, so a shell there would
 * shrug off the SIGTERM of a timeout and run the rest of its command list. And pid 1 of
 * the namespace is visible to everything in it: a clone of ptc would show ptc's memory to a
 * root command through /proc/1/mem. So the child of the clone execs ptc's own binary afresh
 * (no secrets in its memory) as this small init, which runs the command as pid 2, reaps,
 * and exits with the command: the kernel then kills whatever is left in the namespace.
 *
 * argv: PIDNS_INIT_ARGV0, PATH, FALLBACK_PATH ("" for none), the command's argv...
 * The environment, stdio, working directory and session are the command's already.
 */

#include <stdbool.h>

#include "basic/macro.h"

#define PIDNS_INIT_ARGV0 "ptc-pidns-init"

/* Entry point, from main() when argv[0] is PIDNS_INIT_ARGV0. Never returns. */
_noreturn_ void pidns_init_main(int argc, char **argv);

/*
 * The init is this process's own binary re-executed, so only ptc's main() can offer it: it
 * calls pidns_init_set_available(); anything else linking the tools (unit tests, a future
 * library host) runs terminal commands without a pid namespace.
 */
void pidns_init_set_available(void);
bool pidns_init_is_available(void);

/*
 * For ptc doctor: can this process give a command a pid namespace with a fresh /proc (a
 * child tries, as terminal.c would)? 0, or -errno of the step that failed.
 */
int pidns_probe(void);
