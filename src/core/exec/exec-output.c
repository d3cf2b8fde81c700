/* SPDX-License-Identifier: MIT */
/*
 * What a run's captured output becomes in its result (docs/contracts.md 4): the capture set
 * up with the config's caps, then filtered (core/output/redact-capture.h: ANSI stripped and
 * redacted, the spill file too), a redaction failure withholding the output. Shared by every
 * run (exec-run.c): a local one, a session cell and a remote run.
 */
#include "core/exec/exec-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/path-util.h"
#include "core/exec/result.h"
#include "core/output/capture.h"
#include "core/output/redact-capture.h"
#include "core/output/redact-stream.h"
#include "core/output/redact.h"

int exec_capture_init(const struct exec_opts *o, struct capture *out, struct capture *err)
{
        const struct ptc_config *c = o->config;
        _cleanup_free_ char *spdir = xdg_cache_path("ptc/spill");
        int r;

        size_t ctx = redact_stream_hold(o->redactor);

        r = capture_init(out, (size_t) c->max_stdout_bytes * 2 / 5,
                         (size_t) c->max_stdout_bytes - (size_t) c->max_stdout_bytes * 2 / 5,
                         CAPTURE_THOUSANDS, spdir, EXEC_SPILL_MAX);
        if (r >= 0)
                r = capture_init(err, (size_t) c->max_stderr_bytes, 0, 0, NULL, 0);
        /* The bytes around the head's end and the tail's start, to cut where no secret is. */
        if (r >= 0)
                r = capture_set_context(out, ctx);
        if (r >= 0)
                r = capture_set_context(err, ctx);
        return r;
}

int exec_result(const struct exec_opts *o, struct capture *cout, struct capture *cerr,
                struct result_input *in, bool redact_log, json_t **ret,
                enum exec_status *ret_status)
{
        struct capture_text out = {}, err = {};
        _cleanup_free_ char *spill = NULL, *withheld = NULL;
        json_t *res;
        int r, red;

        r = capture_text_redacted(cout, o->redactor, &out, &red);
        if (r >= 0 && red >= 0)
                r = capture_text_redacted(cerr, o->redactor, &err, &red);
        if (r < 0) {
                free(out.text);
                free(err.text);
                return r;
        }
        /* A log made elsewhere (a remote agent's) is redacted here like the output. */
        if (red >= 0 && in->log && redact_log)
                red = redact_json(o->redactor, REDACT_FULL, in->log);
        red = capture_spill_redact(cout, o->redactor, red);
        if (capture_spill_path(cout)) {
                spill = strdup(capture_spill_path(cout));
                if (!spill) {
                        free(out.text);
                        free(err.text);
                        return -ENOMEM;
                }
        }

        in->stdout_text = out.text;
        in->stdout_len = out.len;
        in->stderr_text = err.text;
        in->stderr_len = err.len;
        in->timeout = o->config->timeout;
        in->truncated = out.truncated;
        in->stdout_total = out.total;
        in->stdout_omitted = out.omitted;
        in->spill_path = spill;
        in->spill_error = cout->spill_error;
        if (red < 0) {
                /*
                 * Fail closed: text whose redaction failed may hold a secret, so none of
                 * it goes out, only why (docs/protocol.md, "Redaction").
                 */
                if (asprintf(&withheld, "Output withheld: redaction failed (%s)",
                             redact_strerror(red)) < 0) {
                        withheld = NULL;
                        free(out.text);
                        free(err.text);
                        return -ENOMEM;
                }
                in->status = EXEC_ERROR;
                in->stdout_text = in->stderr_text = "";
                in->stdout_len = in->stderr_len = 0;
                in->truncated = false;
                in->spill_path = NULL;
                in->error = withheld;
                if (redact_log)
                        in->log = NULL;
        }
        res = result_build(in);
        free(out.text);
        free(err.text);
        if (!res)
                return -ENOMEM;
        *ret = res;
        *ret_status = in->status;
        return 0;
}
