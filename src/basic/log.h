/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Diagnostics. Everything goes to stderr (stdout belongs to the result JSON or
 * the MCP protocol). Library code (src/core) logs at debug level only; the
 * CLI reports errors once, at the boundary.
 *
 * log_*_errno() return -abs(error) so they can be used as
 *     return log_error_errno(r, "Failed to bind '%s': %m", path);
 * where %m expands to strerror(abs(error)).
 */

#include <stdbool.h>

#include "basic/macro.h"

enum log_level {
        LOG_LEVEL_ERROR,
        LOG_LEVEL_WARNING,
        LOG_LEVEL_INFO,
        LOG_LEVEL_DEBUG,
};

void log_set_max_level(enum log_level level);
enum log_level log_get_max_level(void);
/* Program name prefixed to each line ("ptc"). Borrowed; must outlive logging. */
void log_set_program_name(const char *name);

int log_internal(enum log_level level, int error, const char *file, int line, const char *fmt, ...)
        _printf_(5, 6);

#define log_full_errno(level, error, ...) \
        log_internal((level), (error), __FILE__, __LINE__, __VA_ARGS__)

#define log_error(...) log_full_errno(LOG_LEVEL_ERROR, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_LEVEL_WARNING, 0, __VA_ARGS__)
#define log_info(...) log_full_errno(LOG_LEVEL_INFO, 0, __VA_ARGS__)
#define log_debug(...) log_full_errno(LOG_LEVEL_DEBUG, 0, __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_LEVEL_ERROR, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_LEVEL_WARNING, (e), __VA_ARGS__)
#define log_debug_errno(e, ...) log_full_errno(LOG_LEVEL_DEBUG, (e), __VA_ARGS__)
