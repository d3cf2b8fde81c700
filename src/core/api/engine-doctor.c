/* SPDX-License-Identifier: MIT */
/*
 * ptc_doctor_report(): the engine's configuration handed to the probes of
 * src/core/doctor, with the tools it enables.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/strv.h"
#include "core/api/api-util.h"
#include "core/api/engine.h"
#include "core/doctor/doctor.h"

PTC_EXPORT int ptc_doctor_report(ptc_engine *e, unsigned flags, char **ret, struct ptc_diag *diag)
{
        _cleanup_strv_free_ char **warnings = NULL;
        _cleanup_free_ char *tools = NULL;
        struct diag d = {};
        int r;

        if (!e || !ret)
                return api_diagf(diag, -EINVAL, "ptc_doctor_report: a NULL argument");
        *ret = NULL;
        if (flags != 0)
                return api_diagf(diag, -EINVAL, "ptc_doctor_report: unknown flags 0x%x", flags);
        /*
         * A started engine is immutable (its own warnings were taken at the start); before
         * the start, what the registry leaves out, or a "tools" list it refuses, becomes a
         * warning: the report goes on without its tools line.
         */
        r = engine_effective_tools(e, &tools, e->started ? NULL : &warnings, &d);
        if (r == -ENOMEM)
                return api_diagf(diag, r, "out of memory");
        if (r < 0 && strv_extend(&warnings, d.message[0] ? d.message : strerror(-r)) < 0)
                return api_diagf(diag, -ENOMEM, "out of memory");
        for (char **w = warnings; w && *w; w++)
                if (strv_extend(&e->warnings, *w) < 0)
                        return api_diagf(diag, -ENOMEM, "out of memory");
        {
                struct doctor_input in = {
                        .config = &e->config,
                        .config_path = e->config_path,
                        .config_explicit = e->config_explicit,
                        .config_none = !e->config_path && (e->flags & PTC_ENGINE_NO_CONFIG_FILE),
                        .tools = tools,
                };
                r = doctor_report(&in, ret);
        }
        return r < 0 ? api_diagf(diag, r, "out of memory") : 0;
}
