/* SPDX-License-Identifier: MIT */
/*
 * ptc_doctor_report(): the engine's configuration handed to the probes of
 * src/core/doctor, with the tools it enables; and a remote backend checked end to end.
 */

#include "ptc/ptc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "core/api/api-util.h"
#include "core/api/engine.h"
#include "core/api/execution.h"
#include "core/doctor/doctor.h"
#include "core/remote/backend.h"
#include "core/sandbox/sandbox-cwd.h"

/* What the probe of a remote target prints: one JSON line. */
#define PROBE                                                                                 \
        "import json, platform, sys\n"                                                        \
        "from hermes_tools import terminal\n"                                                 \
        "print(json.dumps({'python': sys.version.split()[0], 'executable': sys.executable,\n" \
        "                  'kernel': platform.system() + ' ' + platform.release(),\n"         \
        "                  'machine': platform.machine(),\n"                                  \
        "                  'terminal': terminal('echo ok')['output'].strip()}))\n"

/* The channel command, words with a blank quoted, for the report. */
static int append_argv(struct buf *b, const struct backend *be)
{
        _cleanup_strv_free_ char **argv = NULL;
        int r = backend_channel_argv(be, &argv);

        for (size_t i = 0; r >= 0 && argv[i]; i++)
                r = buf_printf(b, strpbrk(argv[i], " \t'\"") ? "%s'%s'" : "%s%s", i ? " " : "",
                               argv[i]);
        return r;
}

/*
 * A remote backend, checked end to end: a probe script run through the channel and the
 * agent (shipped if need be), as every run goes. 1 when the check failed (the report says
 * why), 0 when it passed, -ENOMEM.
 */
static int check_backend(ptc_engine *e, const char *spec, struct buf *b)
{
        _cleanup_backend_ struct backend *be = NULL;
        _cleanup_free_ char *result = NULL, *warnings = NULL;
        ptc_execution *x = NULL;
        json_auto_t *res = NULL, *facts = NULL;
        struct ptc_diag pd = {};
        struct diag d = {};
        enum ptc_status st;
        usec_t t;
        int r;

        if (backend_parse(spec, &be, &d) < 0 || be->kind == BACKEND_LOCAL)
                return 0;
        if (buf_printf(b, "backend: %s\n  channel   ", be->spec) < 0 || append_argv(b, be) < 0 ||
            buf_append_str(b, "\n") < 0)
                return -ENOMEM;
        if (!e->started && ptc_engine_start(e, &pd) < 0)
                return buf_printf(b, "  FAILED    %s\n", pd.message) < 0 ? -ENOMEM : 1;
        r = ptc_execution_new(e, &x, &pd);
        if (r >= 0)
                r = ptc_execution_set(x, "timeout", "60", &pd);
        if (r >= 0 && execution_set_backend(x, be) < 0)
                r = api_diagf(&pd, -EINVAL, "cannot set the backend");
        if (r < 0) {
                ptc_execution_free(x);
                return buf_printf(b, "  FAILED    %s\n", pd.message) < 0 ? -ENOMEM : 1;
        }
        t = now_usec();
        (void) ptc_execution_run(x, PROBE, strlen(PROBE), &result, &st, &pd);
        t = now_usec() - t;
        warnings = ptc_execution_warnings(x);
        ptc_execution_free(x);
        res = result ? json_loads(result, 0, NULL) : NULL;
        if (st == PTC_STATUS_SUCCESS)
                facts = json_loads(json_string_value(json_object_get(res, "output")) ?: "", 0,
                                   NULL);
        if (!json_is_object(facts)) {
                const char *why = json_string_value(json_object_get(res, "error"));

                return buf_printf(b, "  FAILED    %s\n",
                                  why
                                          ?: pd.message[0] ? pd.message
                                                           : "the probe printed nothing") < 0
                               ? -ENOMEM
                               : 1;
        }
        r = buf_printf(b, "  target    %s %s, Python %s (%s)\n  terminal  %s\n",
                       json_string_value(json_object_get(facts, "kernel")) ?: "?",
                       json_string_value(json_object_get(facts, "machine")) ?: "?",
                       json_string_value(json_object_get(facts, "python")) ?: "?",
                       json_string_value(json_object_get(facts, "executable")) ?: "?",
                       json_string_value(json_object_get(facts, "terminal")) ?: "?");
        for (const char *w = warnings; r >= 0 && w && *w;) {
                const char *nl = strchrnul(w, '\n');

                r = buf_printf(b, "  warning   %.*s\n", (int) (nl - w), w);
                w = *nl ? nl + 1 : nl;
        }
        if (r >= 0)
                r = buf_printf(b,
                               "  time      %.0f ms (connect, find or ship the agent, run a "
                               "script)\n",
                               (double) t / USEC_PER_MSEC);
        return r < 0 ? -ENOMEM : 0;
}

/*
 * The "working directory:" line: the directory a run started here would have, whether a
 * confined run refuses it (docs/isolation.md), and where `ptc mcp` / `ptc serve` started
 * here without --cwd would work instead.
 */
static int append_workdir(const ptc_engine *e, char **report)
{
        _cleanup_buf_ struct buf b = BUF_INIT(SIZE_MAX);
        _cleanup_free_ char *cwd = e->cwd ? strdup(e->cwd) : realpath(".", NULL);
        _cleanup_free_ char *base = NULL;
        char why[128];
        int r;

        r = buf_append_str(&b, *report);
        if (r < 0)
                return r;
        if (!cwd)
                r = buf_printf(&b, "working directory: cannot be resolved: %s\n", strerror(errno));
        else if (e->private_cwd)
                r = buf_printf(&b, "working directory: %s (private: %s)\n", cwd,
                               e->private_note ? e->private_note : "");
        else if (!engine_cwd_is_judged(&e->config, e->config.backends != NULL))
                r = buf_printf(&b, "working directory: %s (%s)\n", cwd,
                               e->config.backends ? "runs use the remote target's"
                               : e->config.mode == PTC_MODE_STRICT
                                       ? "runs use a private staging dir (mode strict)"
                                       : "not confined (isolation none)");
        else if (sandbox_cwd_refused(cwd, why, sizeof(why)) > 0) {
                base = engine_private_cwd_base();
                r = buf_printf(&b,
                               "working directory: %s is %s: refused (ptc run exits 2 here; "
                               "give --cwd DIR); ptc mcp and ptc serve started here without "
                               "--cwd work in a private directory %s/ptc-work-PID-XXXXXX\n",
                               cwd, why, base ? base : "?");
        } else
                r = buf_printf(&b, "working directory: %s (read-write for the script)\n", cwd);
        if (r < 0)
                return r;
        free(*report);
        *report = buf_steal(&b, NULL);
        return *report ? 0 : -ENOMEM;
}

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
        if (r >= 0)
                r = append_workdir(e, ret);
        if (r < 0)
                return api_diagf(diag, r, "out of memory");
        if (e->config.backends) {
                _cleanup_buf_ struct buf b = BUF_INIT(SIZE_MAX);
                int failed = 0;
                char *all;

                r = buf_append_str(&b, *ret);
                /* Each target of a pool, in turn. */
                for (char **spec = e->config.backends; r >= 0 && *spec; spec++) {
                        r = check_backend(e, *spec, &b);
                        failed += r > 0;
                }
                if (r < 0)
                        return api_diagf(diag, r, "out of memory");
                all = buf_steal(&b, NULL);
                if (!all)
                        return api_diagf(diag, -ENOMEM, "out of memory");
                free(*ret);
                *ret = all;
                if (failed)
                        return api_diagf(diag, -EHOSTDOWN, "the check of %d backend%s failed",
                                         failed, failed == 1 ? "" : "s");
        }
        return 0;
}
