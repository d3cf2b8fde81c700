/* SPDX-License-Identifier: MIT */
/*
 * tool_chase() (tool-chase.h): one resolution, one judgement, one descriptor.
 *
 * Why the tool judges again after the gate: the gate judged the text and the resolution it
 * made; the script can change the file system between that and the tool's open (a symlink
 * flipped in a loop wins such a race within a few calls). The verdict here is on the real
 * path of the descriptor the tool then uses, so nothing can change between the check and
 * the use: whatever the name leads to later, the tool works on what was judged.
 */

#include "core/tools/tool-chase.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "basic/macro.h"
#include "core/fs/file-safety.h"
#include "core/policy/approval.h"
#include "core/policy/policy.h"

static int refusal(const char *fields_json, json_t **ret, const char *fmt, ...) _printf_(3, 4);

static int refusal(const char *fields_json, json_t **ret, const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL;
        va_list ap;
        json_t *o;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (k < 0) {
                msg = NULL;
                return -ENOMEM;
        }
        o = fields_json ? json_loads(fields_json, 0, NULL) : json_object();
        if (!o || json_object_set_new(o, "error", json_string(msg)) < 0 ||
            json_object_set_new(o, "status", json_string("denied")) < 0) {
                json_decref(o);
                return -ENOMEM;
        }
        *ret = o;
        return 1;
}

/* A rule without a match is about the call, whatever its path: the gate judged it. */
static bool call_rule(const struct ptc_config *c, const struct policy_verdict *v)
{
        return v->origin == POLICY_ORIGIN_RULE && v->rule < c->policy.n_rules &&
               !c->policy.rules[v->rule].match;
}

/*
 * The gate already asked about this rule for this very path (or, for a rule without a
 * match, for this call), and it was allowed: the answer covers it, nobody is asked twice.
 */
static bool gate_covered(const struct ptc_config *c, const struct approval_outcome *gate,
                         const struct policy_verdict *v)
{
        if (!gate || !gate->allowed || gate->verdict.kind != POLICY_VERDICT_ASK)
                return false;
        for (size_t i = 0; i < gate->verdict.n_asks; i++) {
                const struct policy_ask *a = &gate->verdict.asks[i];

                if (a->origin == v->origin && a->rule == v->rule &&
                    (call_rule(c, v) || strcmp(a->subject, v->subject) == 0))
                        return true;
        }
        return false;
}

static int judge_policy(const struct tool_ctx *ctx, const char *tool, const char *real,
                        const char *fields_json, json_t **ret_refusal)
{
        json_auto_t *args = NULL;
        struct policy_verdict v;
        int r;

        r = policy_decide_real_path(ctx->config, tool, real, ctx->cwd, ctx->env, &v);
        if (r < 0)
                return r;
        if (v.kind == POLICY_VERDICT_ALLOW)
                return 0;
        if (v.kind == POLICY_VERDICT_ASK && gate_covered(ctx->config, ctx->gate, &v))
                return 0;
        /*
         * A deny, or an ask the gate did not put for this path (it resolved elsewhere when
         * the gate looked): refused or asked in the gate's words, the question naming the
         * real path as the call's path.
         */
        args = json_pack("{s:s}", "path", real);
        if (!args)
                return -ENOMEM;
        {
                const struct approval_call call =
                        tool_ctx_approval_call(ctx, tool, args, fields_json);

                r = approval_gate_verdict(&call, &v, ret_refusal, NULL);
        }
        if (r < 0)
                return r;
        return *ret_refusal ? 1 : 0;
}

int tool_chase(const struct tool_ctx *ctx, const char *tool, const char *abs, unsigned flags,
               const char *refusal_fields_json, struct fs_chased *ret, json_t **ret_refusal)
{
        int r;

        *ret_refusal = NULL;
        r = fs_chase(abs, (flags & TOOL_CHASE_MISSING_OK) ? FS_CHASE_MISSING_OK : 0, ret);
        if (r == -EXDEV)
                return refusal(refusal_fields_json, ret_refusal, "Refused: '%s': %s.", abs,
                               fs_chase_strerror(r));
        if (r < 0)
                return r;
        if (flags & TOOL_CHASE_WRITE) {
                if (file_safety_is_sensitive_path(ret->path, NULL))
                        return refusal(refusal_fields_json, ret_refusal,
                                       "Refusing to write to sensitive system path: %s (the "
                                       "real path of %s)\nUse the terminal tool with sudo if "
                                       "you need to modify system files.",
                                       ret->path, abs);
                r = file_safety_write_denied(ctx->cwd, ctx->env, ret->path);
                if (r < 0)
                        return r;
                if (r > 0)
                        return refusal(refusal_fields_json, ret_refusal,
                                       "Write denied: '%s' is a protected system/credential "
                                       "file.",
                                       ret->path);
        }
        if (!ctx->config)
                return 0;
        return judge_policy(ctx, tool, ret->path, refusal_fields_json, ret_refusal);
}

int tool_judge_real(const struct tool_ctx *ctx, const char *tool, const char *real,
                    const char *refusal_fields_json, json_t **ret_refusal)
{
        *ret_refusal = NULL;
        if (!ctx->config)
                return 0;
        return judge_policy(ctx, tool, real, refusal_fields_json, ret_refusal);
}
