/* SPDX-License-Identifier: MIT */
/* The small parts of the API: version, freeing, status words, filling a ptc_diag. */

#include "core/api/api-util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/exec/result.h"
#include "ptc-version.h"

PTC_EXPORT const char *ptc_version(void)
{
        return PTC_VERSION;
}

PTC_EXPORT void ptc_free(void *p)
{
        free(p);
}

PTC_EXPORT char *ptc_internal_error_result(const char *message)
{
        json_auto_t *r = result_internal_error(message ? message : "");

        return r ? api_json_text(r) : NULL;
}

PTC_EXPORT const char *ptc_status_to_string(enum ptc_status s)
{
        switch (s) {
        case PTC_STATUS_SUCCESS:
                return "success";
        case PTC_STATUS_ERROR:
                return "error";
        case PTC_STATUS_TIMEOUT:
                return "timeout";
        case PTC_STATUS_INTERRUPTED:
                return "interrupted";
        }
        return NULL;
}

PTC_EXPORT int ptc_status_to_exit(enum ptc_status s)
{
        switch (s) {
        case PTC_STATUS_SUCCESS:
                return PTC_EXIT_OK;
        case PTC_STATUS_TIMEOUT:
                return PTC_EXIT_TIMEOUT;
        case PTC_STATUS_INTERRUPTED:
                return PTC_EXIT_INTERRUPTED;
        case PTC_STATUS_ERROR:
        default:
                return PTC_EXIT_SCRIPT_FAILED;
        }
}

int api_diag(struct ptc_diag *pd, int code, const struct diag *d)
{
        if (pd) {
                pd->code = code;
                if (d && d->message[0])
                        snprintf(pd->message, sizeof(pd->message), "%s", d->message);
                else
                        snprintf(pd->message, sizeof(pd->message), "%s", strerror(-code));
        }
        return code;
}

int api_diagf(struct ptc_diag *pd, int code, const char *fmt, ...)
{
        va_list ap;

        if (pd) {
                pd->code = code;
                va_start(ap, fmt);
                (void) vsnprintf(pd->message, sizeof(pd->message), fmt, ap);
                va_end(ap);
        }
        return code;
}

char *api_json_text(const json_t *v)
{
        return json_dumps(v, JSON_REAL_PRECISION(15) | JSON_COMPACT | JSON_ENCODE_ANY);
}
