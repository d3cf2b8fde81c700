/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Public contracts of ptc shared by the command line and, later, libptc
 * embedders (docs/contracts.md 3 and 4). Plain C11: no extensions here.
 */

/* Exit status of `ptc run` (docs/contracts.md 3). */
enum ptc_exit {
        PTC_EXIT_OK = 0,            /* status "success" */
        PTC_EXIT_SCRIPT_FAILED = 1, /* status "error": the script failed */
        PTC_EXIT_USAGE = 2,         /* usage or config error; a one-line message on stderr */
        PTC_EXIT_INTERNAL = 3,      /* ptc itself failed; stdout still carries a result */
        PTC_EXIT_TIMEOUT = 124,     /* status "timeout" */
        PTC_EXIT_INTERRUPTED = 130, /* status "interrupted" */
};
