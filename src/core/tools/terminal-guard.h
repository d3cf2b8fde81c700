/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The terminal tool's long-lived-process guard (docs/tools.md, terminal): does a command
 * start something meant to outlive the call (nohup, setsid, disown, a background '&') or
 * a server or watcher that would only block until the timeout (npm run dev, uvicorn,
 * python -m http.server, docker compose up without -d, ...)?
 *
 * The command is parsed as bash would (core/shell/shell-parse.h), and only command words
 * and real background operators count: `grep -c nodemon package.json`, `echo "a & b"` and
 * `curl 'https://x/?a=1&b=2'` pass. A command that does not parse (bash will report the
 * syntax error) is judged by the lines before the error, the ones bash runs; one past the
 * parser's caps is not refused.
 *
 * Thread context: any thread; no global state.
 */

#include "basic/macro.h"

/*
 * *ret_guidance = the refusal text for @cmd (a static string), or NULL when it may run.
 * Returns 0 or -ENOMEM.
 */
_must_check_ int terminal_guard_check(const char *cmd, const char **ret_guidance);
