/* SPDX-License-Identifier: MIT */
/*
 * JSON-RPC 2.0 for the MCP server: messages out (one line each, one writer at
 * a time), and one message in, checked and dispatched to its method.
 */

#include "core/mcpserver/mcpserver.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/fd-util.h"
#include "basic/utf8.h"
#include "core/api/engine.h"
#include "core/session/session.h"
#include "ptc-version.h"

static const char *const protocol_versions[] = {"2025-11-25", "2025-06-18"};

/* ------------------------------------------------------------------------------------------ */
/* Output                                                                                      */

void mcpserver_send(struct mcp_server *s, json_t *msg)
{
        _cleanup_free_ char *text = NULL;
        json_t *full;

        if (!msg)
                return;
        /* "jsonrpc" first: readable logs, and what every peer's examples show. */
        full = json_pack("{s:s}", "jsonrpc", "2.0");
        if (!full || json_object_update(full, msg) < 0) {
                json_decref(full);
                json_decref(msg);
                return;
        }
        json_decref(msg);
        text = json_dumps(full, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
        json_decref(full);
        if (!text)
                return;
        pthread_mutex_lock(&s->out_lock);
        if (!s->out_broken && !s->out_closed) {
                size_t n = strlen(text);
                int r;

                text[n] = '\n'; /* the NUL becomes the newline; write n + 1 bytes */
                r = write_all(s->out_fd, text, n + 1);
                if (r < 0) {
                        s->out_broken = true;
                        s->out_error = r;
                }
                text[n] = 0;
        }
        pthread_mutex_unlock(&s->out_lock);
}

void mcpserver_send_result(struct mcp_server *s, json_t *id, json_t *result)
{
        mcpserver_send(s, json_pack("{s:O?, s:o}", "id", id, "result", result));
}

void mcpserver_send_error(struct mcp_server *s, json_t *id, int code, const char *fmt, ...)
{
        _cleanup_free_ char *m = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&m, fmt, ap) < 0)
                m = NULL;
        va_end(ap);
        mcpserver_send(s, json_pack("{s:O?, s:{s:i, s:s}}", "id", id ?: json_null(), "error",
                                    "code", code, "message", m ?: "error"));
}

json_t *mcpserver_tool_result(json_t *obj, bool is_error)
{
        _cleanup_free_ char *text = NULL;

        if (!obj)
                return NULL;
        text = json_dumps(obj, JSON_COMPACT | JSON_REAL_PRECISION(15));
        if (!text) {
                json_decref(obj);
                return NULL;
        }
        return json_pack("{s:[{s:s, s:s}], s:o, s:b}", "content", "type", "text", "text", text,
                         "structuredContent", obj, "isError", is_error);
}

json_t *mcpserver_tool_error(const char *fmt, ...)
{
        _cleanup_free_ char *m = NULL;
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&m, fmt, ap);
        va_end(ap);
        if (k < 0)
                return NULL;
        return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", m, "isError",
                         1);
}

/* ------------------------------------------------------------------------------------------ */
/* Methods                                                                                     */

#define INSTRUCTIONS                                                                        \
        "Use execute_code to run one Python script that calls several tools; only what it " \
        "prints comes back."

static void handle_initialize(struct mcp_server *s, json_t *id, json_t *params)
{
        _cleanup_free_ char *instructions = NULL;
        const char *want = json_string_value(json_object_get(params, "protocolVersion"));
        const char *version = protocol_versions[0];
        json_t *caps = json_object_get(params, "capabilities");

        /* A client that can show a form answers the policy's asks (mcpserver-elicit.c). */
        pthread_mutex_lock(&s->lock);
        s->client_elicits = json_is_object(json_object_get(caps, "elicitation"));
        pthread_mutex_unlock(&s->lock);

        for (size_t i = 0; want && i < ELEMENTSOF(protocol_versions); i++)
                if (strcmp(want, protocol_versions[i]) == 0)
                        version = protocol_versions[i];
        /* A private working directory (PTC_ENGINE_PRIVATE_CWD) is named before any call. */
        if (s->engine->private_note &&
            asprintf(&instructions, "%s %s.", INSTRUCTIONS, s->engine->private_note) < 0)
                instructions = NULL;
        mcpserver_send_result(s, id,
                              json_pack("{s:s, s:{s:{s:b}, s:{}}, s:{s:s, s:s, s:s}, s:s}",
                                        "protocolVersion", version, "capabilities", "tools",
                                        "listChanged", 0, "logging", "serverInfo", "name", "ptc",
                                        "title", "ptc: programmatic tool calling", "version",
                                        PTC_VERSION, "instructions",
                                        instructions ? instructions : INSTRUCTIONS));
}

/*
 * logging/setLevel: at info or debug, each execute_code call's live events
 * (docs/observability.md) go out as notifications/message (logger "ptc", level info, data
 * {"request_id", "event": {...}}); at notice and above, none (the default).
 */
static void handle_set_level(struct mcp_server *s, json_t *id, json_t *params)
{
        static const char *const levels[] = {"debug", "info",     "notice", "warning",
                                             "error", "critical", "alert",  "emergency"};
        const char *level = json_string_value(json_object_get(params, "level"));
        size_t i;

        for (i = 0; level && i < ELEMENTSOF(levels); i++)
                if (strcmp(level, levels[i]) == 0)
                        break;
        if (!level || i == ELEMENTSOF(levels)) {
                mcpserver_send_error(s, id, JSONRPC_INVALID_PARAMS,
                                     "Invalid params: 'level' must be one of debug, info, notice, "
                                     "warning, error, critical, alert, emergency");
                return;
        }
        pthread_mutex_lock(&s->lock);
        s->log_events = i <= 1;
        pthread_mutex_unlock(&s->lock);
        mcpserver_send_result(s, id, json_object());
}

/* An optional session id argument @name of execute_code; false after a -32602 answer. */
static bool session_param_ok(struct mcp_server *s, json_t *id, json_t *args, const char *name)
{
        json_t *t = json_object_get(args, name);

        if (!t || json_is_null(t) ||
            (json_is_string(t) && session_id_is_valid(json_string_value(t))))
                return true;
        mcpserver_send_error(s, id, JSONRPC_INVALID_PARAMS,
                             "Invalid params: '%s' must be an id of 1 to 64 of A-Z a-z 0-9 . _ -",
                             name);
        return false;
}

static void handle_tools_call(struct mcp_server *s, json_t *id, json_t *params)
{
        json_t *name = json_object_get(params, "name"),
               *args = json_object_get(params, "arguments");
        const struct tool *tool = NULL;

        if (!json_is_object(params) || !json_is_string(name)) {
                mcpserver_send_error(s, id, JSONRPC_INVALID_PARAMS,
                                     "Invalid params: 'name' must be a string");
                return;
        }
        if (args && !json_is_null(args) && !json_is_object(args)) {
                mcpserver_send_error(s, id, JSONRPC_INVALID_PARAMS,
                                     "Invalid params: 'arguments' must be an object");
                return;
        }
        if (strcmp(json_string_value(name), "execute_code") == 0) {
                json_t *code = json_object_get(args, "code"), *t = json_object_get(args, "timeout");

                if (!json_is_string(code)) {
                        mcpserver_send_error(s, id, JSONRPC_INVALID_PARAMS,
                                             "Invalid params: execute_code needs 'code', a string");
                        return;
                }
                if (t && !json_is_null(t) && (!json_is_number(t) || !(json_number_value(t) > 0))) {
                        mcpserver_send_error(s, id, JSONRPC_INVALID_PARAMS,
                                             "Invalid params: 'timeout' must be a positive number "
                                             "of seconds");
                        return;
                }
                if (!session_param_ok(s, id, args, "session"))
                        return;
                t = json_object_get(args, "reset");
                if (t && !json_is_null(t) && !json_is_boolean(t)) {
                        mcpserver_send_error(s, id, JSONRPC_INVALID_PARAMS,
                                             "Invalid params: 'reset' must be true or false");
                        return;
                }
                if (!session_param_ok(s, id, args, "fork_from"))
                        return;
        } else {
                struct registry *reg = s->engine->registry;

                tool = s->expose_tools ? registry_find(reg, json_string_value(name)) : NULL;
                if (!tool) {
                        _cleanup_free_ char *names = registry_names(reg);

                        mcpserver_send_result(
                                s, id,
                                mcpserver_tool_error("Unknown tool: %s (available: %s%s%s)",
                                                     json_string_value(name), "execute_code",
                                                     s->expose_tools && names && *names ? ", " : "",
                                                     s->expose_tools && names ? names : ""));
                        return;
                }
        }
        mcpserver_call_start(s, id, tool, args, json_object_get(params, "_meta"));
}

void mcpserver_handle_message(struct mcp_server *s, const char *line, size_t n)
{
        json_auto_t *msg = NULL;
        json_t *id, *method, *params;
        json_error_t err;
        const char *m;

        while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
                n--;
        if (n == 0)
                return;
        if (!utf8_is_valid(line, n)) {
                mcpserver_send_error(s, NULL, JSONRPC_PARSE_ERROR, "Parse error: invalid UTF-8");
                return;
        }
        msg = json_loadb(line, n, JSON_DECODE_ANY, &err);
        if (!msg) {
                mcpserver_send_error(s, NULL, JSONRPC_PARSE_ERROR, "Parse error: %s (column %d)",
                                     err.text, err.column);
                return;
        }
        if (!json_is_object(msg)) {
                mcpserver_send_error(s, NULL, JSONRPC_INVALID_REQUEST,
                                     "Invalid Request: expected a JSON-RPC object (batches are "
                                     "not supported)");
                return;
        }
        id = json_object_get(msg, "id");
        if (id && !json_is_string(id) && !json_is_integer(id)) {
                mcpserver_send_error(s, NULL, JSONRPC_INVALID_REQUEST,
                                     "Invalid Request: 'id' must be a string or an integer");
                return;
        }
        method = json_object_get(msg, "method");
        if (!method && (json_object_get(msg, "result") || json_object_get(msg, "error"))) {
                /* A response: to an elicitation/create, the only requests this server sends. */
                mcpserver_elicit_response(s, id, msg);
                return;
        }
        if (!json_is_string(method) || !json_is_string(json_object_get(msg, "jsonrpc")) ||
            strcmp(json_string_value(json_object_get(msg, "jsonrpc")), "2.0") != 0) {
                mcpserver_send_error(s, id, JSONRPC_INVALID_REQUEST,
                                     "Invalid Request: needs \"jsonrpc\": \"2.0\" and a 'method' "
                                     "string");
                return;
        }
        m = json_string_value(method);
        params = json_object_get(msg, "params");

        if (!id) {
                /* Notifications: no answer, ever. */
                if (strcmp(m, "notifications/cancelled") == 0)
                        mcpserver_call_cancel(s, json_object_get(params, "requestId"));
                return;
        }
        if (params && !json_is_object(params)) {
                mcpserver_send_error(s, id, JSONRPC_INVALID_PARAMS,
                                     "Invalid params: 'params' must be an object");
                return;
        }
        if (strcmp(m, "initialize") == 0)
                handle_initialize(s, id, params);
        else if (strcmp(m, "ping") == 0)
                mcpserver_send_result(s, id, json_object());
        else if (strcmp(m, "tools/list") == 0)
                mcpserver_send_result(s, id, json_deep_copy(s->tools_list));
        else if (strcmp(m, "tools/call") == 0)
                handle_tools_call(s, id, params);
        else if (strcmp(m, "logging/setLevel") == 0)
                handle_set_level(s, id, params);
        else
                mcpserver_send_error(s, id, JSONRPC_METHOD_NOT_FOUND, "Method not found: %.200s",
                                     m);
}
