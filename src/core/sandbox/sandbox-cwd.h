/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Which directories a confined script may not have as its working directory
 * (docs/isolation.md, "Working directories that are refused"): the working directory is
 * read-write inside every layer, so `/` or a system tree there would make the confinement
 * void. Judged on the directory the kernel resolves (its device and inode, and those of its
 * ancestors through ".."), never on the spelling: `/usr/..`, `//` and a symlink to `/etc`
 * are what they lead to.
 *
 * Refused: `/` and `/var` themselves; `/usr`, `/etc`, `/bin`, `/sbin`, `/boot`, `/proc`,
 * `/sys`, `/dev`, `/run` and every `/lib*` entry of `/`, and everything below them.
 */

#include <stddef.h>

#include "basic/diag.h"

/*
 * 1 when @dir is refused, with the reason in @why (e.g. "the root directory", "inside the
 * system tree /usr"); 0 when it may be used; -errno when it cannot be opened.
 */
int sandbox_cwd_refused(const char *dir, char *why, size_t why_len);

/*
 * 0, or -EINVAL with the one-line message for the user (naming @dir and what to do), or
 * -errno when @dir cannot be opened.
 */
int sandbox_check_cwd(const char *dir, struct diag *reterr);
