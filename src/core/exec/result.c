/* SPDX-License-Identifier: MIT */
#include "core/exec/result.h"

#include <stdio.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/time-util.h"

const char *exec_status_to_string(enum exec_status s)
{
        switch (s) {
        case EXEC_SUCCESS:
                return "success";
        case EXEC_ERROR:
                return "error";
        case EXEC_TIMEOUT:
                return "timeout";
        case EXEC_INTERRUPTED:
                return "interrupted";
        default:
                return "error";
        }
}

void result_format_seconds(double s, char *buf, size_t n)
{
        if (seconds_are_whole(s))
                snprintf(buf, n, "%lld", (long long) s);
        else
                snprintf(buf, n, "%g", s);
}

json_t *result_build(const struct result_input *in)
{
        _cleanup_buf_ struct buf out = BUF_INIT(SIZE_MAX / 2);
        _cleanup_free_ char *error = NULL;
        json_auto_t *r = json_object();
        bool stderr_is_error = false;
        char secs[64];
        int k = 0;

        if (!r)
                return NULL;
        k |= buf_append(&out, in->stdout_text, in->stdout_len);

        switch (in->status) {
        case EXEC_SUCCESS:
                /* The seed discards stderr of a successful script. */
                break;
        case EXEC_ERROR:
                if (in->error)
                        break;
                if (in->stderr_len > 0) {
                        k |= buf_append_str(&out, "\n--- stderr ---\n");
                        k |= buf_append(&out, in->stderr_text, in->stderr_len);
                        stderr_is_error = true;
                } else if (in->have_exit_code) {
                        if (asprintf(&error, "Script exited with code %d", in->exit_code) < 0)
                                error = NULL;
                } else
                        error = strdup("Script failed");
                if (!error && !stderr_is_error)
                        return NULL;
                break;
        case EXEC_TIMEOUT:
                result_format_seconds(in->timeout, secs, sizeof(secs));
                if (asprintf(&error, "Script timed out after %ss and was %s", secs,
                             in->cell == RESULT_CELL_KEPT
                                     ? "interrupted; the session keeps its state."
                             : in->cell == RESULT_CELL_LOST
                                     ? "killed, and the session's state with it."
                                     : "killed.") < 0)
                        return NULL;
                k |= buf_append_str(&out, out.len > 0 ? "\n\n\u23f0 " : "\u23f0 ");
                k |= buf_append_str(&out, error);
                break;
        case EXEC_INTERRUPTED:
                k |= buf_append_str(&out, "\n[execution interrupted]");
                if (asprintf(&error, "Execution interrupted (%s)",
                             in->interrupt_reason ? in->interrupt_reason : "cancelled") < 0)
                        return NULL;
                break;
        }
        if (k)
                return NULL;

        k |= json_object_set_new(r, "status", json_string(exec_status_to_string(in->status)));
        k |= json_object_set_new(r, "output", json_stringn(buf_str(&out), out.len));
        k |= json_object_set_new(r, "tool_calls_made", json_integer(in->calls));
        k |= json_object_set_new(r, "duration_seconds",
                                 json_real(seconds_to_hundredths(in->duration)));
        k |= json_object_set_new(r, "exit_code",
                                 in->have_exit_code ? json_integer(in->exit_code) : json_null());
        if (in->error)
                k |= json_object_set_new(r, "error", json_string(in->error));
        else if (stderr_is_error)
                /* stderr is valid UTF-8 (capture_text) but may hold NUL bytes. */
                k |= json_object_set_new(r, "error", json_stringn(in->stderr_text, in->stderr_len));
        else if (error)
                k |= json_object_set_new(r, "error", json_string(error));
        if (in->truncated) {
                k |= json_object_set_new(r, "stdout_truncated", json_true());
                k |= json_object_set_new(r, "stdout_bytes_total",
                                         json_integer((json_int_t) in->stdout_total));
                k |= json_object_set_new(r, "stdout_bytes_omitted",
                                         json_integer((json_int_t) in->stdout_omitted));
                if (in->spill_path)
                        k |= json_object_set_new(r, "stdout_spill_path",
                                                 json_string(in->spill_path));
                else if (in->spill_error) {
                        /* The omitted bytes are nowhere: say so, and why. */
                        char why[160];

                        (void) snprintf(why, sizeof(why),
                                        "the whole output could not be kept in a spill file: %s",
                                        strerror(-in->spill_error));
                        k |= json_object_set_new(r, "stdout_spill_error", json_string(why));
                }
        }
        if (in->log)
                k |= json_object_set(r, "tool_calls", in->log);
        if (k)
                return NULL;
        return json_incref(r);
}

json_t *result_internal_error(const char *message)
{
        struct result_input in = {.status = EXEC_ERROR, .error = message};

        return result_build(&in);
}
