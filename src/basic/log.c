/* SPDX-License-Identifier: MIT */
#include "basic/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static enum log_level max_level = LOG_LEVEL_WARNING;
static const char *program_name = "ptc";

void log_set_max_level(enum log_level level)
{
        max_level = level;
}

enum log_level log_get_max_level(void)
{
        return max_level;
}

void log_set_program_name(const char *name)
{
        program_name = name;
}

int log_internal(enum log_level level, int error, const char *file, int line, const char *fmt, ...)
{
        static const char *const prefix[] = {
                [LOG_LEVEL_ERROR] = "error",
                [LOG_LEVEL_WARNING] = "warning",
                [LOG_LEVEL_INFO] = "info",
                [LOG_LEVEL_DEBUG] = "debug",
        };
        char msg[2048];
        va_list ap;

        error = abs(error);
        if (level > max_level)
                return -error;

        /* %m must mean the error we were handed, not whatever errno is now. */
        errno = error;
        va_start(ap, fmt);
        (void) vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);

        if (max_level >= LOG_LEVEL_DEBUG)
                fprintf(stderr, "%s: %s: %s (%s:%d)\n", program_name, prefix[level], msg, file,
                        line);
        else
                fprintf(stderr, "%s: %s: %s\n", program_name, prefix[level], msg);
        return -error;
}
