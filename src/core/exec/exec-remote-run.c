/* SPDX-License-Identifier: MIT */
/*
 * Runs over a remote channel (exec-remote.h): a one-shot run (exec_run_remote(): the channel
 * for one script), a session's (exec_remote_session_*(): the channel kept open between
 * cells, docs/sessions.md), and the result of either from what the agent said and the host
 * captured.
 */

#include "core/exec/exec-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/fd-util.h"
#include "basic/time-util.h"
#include "basic/utf8.h"
#include "core/events/trace.h"
#include "core/exec/exec-remote.h"
#include "core/exec/exec-run.h"
#include "core/output/redact.h"
#include "core/remote/backend.h"

/*
 * The error of a run that failed on our side: the backend, what went wrong, whether the
 * agent ever started, and the start of the channel command's stderr, which usually says
 * why unless the agent did (valid UTF-8 and redacted: it is the target's text). NULL on
 * ENOMEM.
 */
static char *failure_text(const struct remote_run *r)
{
        _cleanup_free_ char *said = NULL, *text = NULL, *redacted = NULL;
        size_t n, len;
        int k;

        n = r->agent_said_why ? 0 : r->ch.err_len;
        while (n > 0 && (r->ch.err_head[n - 1] == '\n' || r->ch.err_head[n - 1] == '\r'))
                n--;
        said = utf8_sanitize(r->ch.err_head, n, &len, NULL);
        if (!said)
                return NULL;
        if (asprintf(&text, "backend '%s': %s%s%s%s%s", r->run.o->backend->spec,
                     r->handshake || !r->ch.reader.hello_seen
                             ? "ptc's agent did not start on the target: "
                             : "",
                     r->failure, len > 0 ? " (the channel's stderr: \"" : "", said,
                     len > 0 ? "\")" : "") < 0)
                return NULL;
        k = redact_text(r->run.o->redactor, REDACT_FULL, text, strlen(text), &redacted, &len);
        if (k < 0)
                return strdup("the remote run failed, and its error could not be redacted");
        return k > 0 ? TAKE_PTR(redacted) : TAKE_PTR(text);
}

/* The agent's warnings (one per line), as the host's: "target: isolation auto: ...". */
static void forward_warnings(const struct remote_run *r)
{
        const char *w = r->exit ? json_string_value(json_object_get(r->exit, "warnings")) : NULL;

        while (w && *w && r->run.o->on_warning) {
                const char *nl = strchrnul(w, '\n');
                _cleanup_free_ char *line = NULL;

                if (nl > w && asprintf(&line, "target: %.*s", (int) (nl - w), w) >= 0)
                        r->run.o->on_warning(r->run.o->on_warning_userdata, line);
                w = *nl ? nl + 1 : nl;
        }
}

static const char *exit_status_word(const json_t *exit)
{
        return json_string_value(json_object_get(exit, "status")) ?: "";
}

int remote_collect(struct run *run, struct result_input *in)
{
        struct remote_run *r = run->target;
        json_t *code = r->exit ? json_object_get(r->exit, "exit_code") : NULL;

        remote_wait_calls(r);
        forward_warnings(r);
        if (r->session)
                in->cell = r->cell_over && !r->session_lost && !r->failure ? RESULT_CELL_KEPT
                                                                           : RESULT_CELL_LOST;
        in->have_exit_code = json_is_integer(code);
        in->exit_code = (int) json_integer_value(code);
        in->calls = r->exit ? json_integer_value(json_object_get(r->exit, "tool_calls_made")) : 0;
        if (run->o->log_calls && r->exit) {
                in->log = json_deep_copy(json_object_get(r->exit, "tool_calls"));
                if (!json_is_array(in->log))
                        json_decref(TAKE_PTR(in->log));
        }
        if (run->stopped)
                return 0;
        if (r->failure) {
                in->status = EXEC_ERROR;
                /* Freed with the run (remote_end_run()), after the result. */
                free(r->error_text);
                in->error = r->error_text = failure_text(r);
                return in->error ? 0 : -ENOMEM;
        }
        if (strcmp(exit_status_word(r->exit), "timeout") == 0)
                in->status = EXEC_TIMEOUT;
        else if (strcmp(exit_status_word(r->exit), "interrupted") == 0) {
                in->status = EXEC_INTERRUPTED;
                in->interrupt_reason = "the agent on the target";
        } else if (in->have_exit_code)
                in->status = in->exit_code == 0 ? EXEC_SUCCESS : EXEC_ERROR;
        else {
                /* The agent could not start the script (its reason is the error), or the
                 * channel ended without a word. */
                static const char none[] = "the run on the target ended without a status";

                in->status = EXEC_ERROR;
                in->error = json_string_value(json_object_get(r->exit, "error")) ?: none;
        }
        return 0;
}

int exec_run_remote(const struct exec_opts *o, json_t **ret, enum exec_status *ret_status,
                    struct diag *reterr)
{
        struct remote_run *r = remote_run_new();
        usec_t t0;
        int k;

        if (!r)
                return diag_set(reterr, -ENOMEM, "out of memory");
        k = remote_begin_run(r, o, reterr);
        k = k ?: remote_open_channel(r, reterr);
        k = k ?: run_supervise(&r->run, ret, ret_status, reterr);
        t0 = now_usec();
        remote_close_channel(r);
        remote_end_run(r);
        remote_run_unref(r);
        trace_span_now(o->trace, "teardown", "teardown", t0, NULL);
        return k;
}

int exec_remote_session_open(const struct exec_opts *o, struct remote_run **ret,
                             struct diag *reterr)
{
        struct remote_run *r = remote_run_new();
        int k;

        if (!r)
                return diag_set(reterr, -ENOMEM, "out of memory");
        r->session = r->handshake_only = true;
        k = remote_begin_run(r, o, reterr);
        k = k ?: remote_open_channel(r, reterr);
        k = k ?: run_loop(&r->run, reterr);
        if (k >= 0 && (r->handshake || r->run.ended)) {
                _cleanup_free_ char *why = r->failure ? failure_text(r) : NULL;

                k = diag_set(reterr, -EPROTO, "%s",
                             why ?: "the channel to the target closed before the agent spoke");
        }
        r->handshake_only = false;
        if (k < 0)
                remote_close_channel(r);
        remote_end_run(r);
        if (k < 0) {
                remote_run_unref(r);
                return k;
        }
        *ret = r;
        return 0;
}

int exec_remote_session_cell(struct remote_run *r, const struct exec_opts *o, json_t **ret,
                             enum exec_status *ret_status, bool *ret_lost, struct diag *reterr)
{
        json_auto_t *run = NULL;
        int k;

        *ret_lost = false;
        if (!exec_remote_session_alive(r))
                return diag_set(reterr, -ESRCH, "the session's channel to the target is gone");
        k = remote_begin_run(r, o, reterr);
        if (k >= 0 && !utf8_is_valid(o->code, o->code_len))
                k = diag_set(reterr, -EINVAL,
                             "a remote run takes a UTF-8 script; this one is not valid UTF-8");
        if (k >= 0 && !(run = remote_run_frame(r)))
                k = diag_set(reterr, -ENOMEM, "out of memory");
        if (k >= 0) {
                run_arm_deadline(&r->run);
                r->script_started = now_usec();
                if (remote_channel_send_json(&r->ch, FRAME_RUN, run) < 0)
                        remote_fail(r, "cannot write to the channel");
                k = run_supervise(&r->run, ret, ret_status, reterr);
        }
        /*
         * The agent's engine started a new interpreter for the cell: the old one died between
         * cells (killed on the target). Never silent: the result says so.
         */
        if (k >= 0 && r->exit && json_is_string(json_object_get(r->exit, "session_note")) &&
            json_object_set_new(*ret, "session_note",
                                json_string("the session's interpreter on the target died "
                                            "between cells; this cell started a new one")) < 0) {
                json_decref(*ret);
                *ret = NULL;
                k = diag_set(reterr, -ENOMEM, "out of memory");
        }
        remote_end_run(r);
        /* A cell that failed, was killed or lost its interpreter ends the session. */
        *ret_lost = k < 0 || !r->cell_over || r->session_lost || !exec_remote_session_alive(r);
        if (*ret_lost)
                exec_remote_session_kill(r);
        return k;
}

bool exec_remote_session_alive(struct remote_run *r)
{
        /* A readable pidfd: the channel command has exited. */
        return r && !r->failure && !r->ch.reaped && r->ch.in_fd >= 0 && !r->handshake &&
               !r->run.ended && !fd_readable_now(r->ch.pidfd);
}

int exec_remote_session_pid(const struct remote_run *r)
{
        return r ? r->ch.pid : -1;
}

void exec_remote_session_kill(struct remote_run *r)
{
        if (!r)
                return;
        remote_channel_close_input(&r->ch);
        remote_channel_kill(&r->ch);
}

void exec_remote_session_close(struct remote_run *r)
{
        if (!r)
                return;
        remote_close_channel(r);
        remote_run_unref(r);
}
