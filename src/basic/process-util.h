/* SPDX-License-Identifier: MIT */
#pragma once

/* Process helpers: pidfds, and how a child knows that ptc is gone. */

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "basic/compat/pidfd.h" /* pidfd_open_compat() */
#include "basic/macro.h"

/*
 * A pidfd of this process, opened once and kept (never close it): a child polls it to learn
 * whether ptc has exited, which no copy of any fd held by a sibling can hide (a pipe's
 * POLLERR can). -errno when there is no pidfd. Thread-safe.
 */
int self_pidfd(void);

/*
 * Has the process behind @pidfd exited (all of its threads)? A poll with no wait, async-
 * signal-safe: a child between clone and exec may ask. false when @pidfd < 0 (cannot know).
 */
bool pidfd_exited(int pidfd);

/*
 * The signals a pid 1 of ours (the sandbox's init, a terminal command's ptc-pidns-init) waits
 * for with sigwaitinfo(): INT, TERM, HUP, CHLD. They must stay blocked from the clone on:
 * pid 1 of a namespace drops a signal whose action is the default, so one sent before the
 * init is ready would be lost; a blocked one waits. Async-signal-safe.
 */
void init_signal_set(sigset_t *ret);
