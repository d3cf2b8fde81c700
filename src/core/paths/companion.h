/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Where ptc's companion files are: ptc-web.so (web/web-module.h) and ptc-agent, the static
 * build a host ships to a remote target (docs/remote.md). The lookup starts from the object
 * the running code is in, so a build tree, a staged install and the installed tree each
 * find their own, and ends at the configured install directory:
 *
 *   1. the directory of the executable, or of libptc.so, that runs;
 *   2. the install layout seen from there: bindir -> libdir/ptc, or libdir -> libdir/ptc;
 *   3. the configured install directory (<prefix>/<libdir>/ptc).
 *
 * Thread context: any thread; no state.
 */

#define COMPANION_DIRS 3

/*
 * Fill @ret with the three directories, in order (an entry is NULL where there is none, or
 * out of memory); the caller frees each.
 */
void companion_dirs(char *ret[COMPANION_DIRS]);
