/* SPDX-License-Identifier: MIT */
/*
 * The tools/list result: execute_code, described as `ptc schema` describes it
 * (the engine's enabled tools) with the MCP-only "timeout" argument, then with
 * PTC_MCP_EXPOSE_TOOLS every enabled tool under its own name and JSON Schema.
 */

#include "core/mcpserver/mcpserver.h"

#include <errno.h>
#include <stdio.h>

#include "core/api/engine.h"
#include "core/stubs/stubs.h"
#include "core/tools/tool.h"

/* A session id argument's schema (session.h: session_id_is_valid()). */
static json_t *session_id_property(const char *description)
{
        return json_pack("{s:s, s:s, s:s}", "type", "string", "pattern", "^[A-Za-z0-9._-]{1,64}$",
                         "description", description);
}

int mcpserver_tools_list_build(struct mcp_server *s)
{
        const ptc_engine *e = s->engine;
        json_auto_t *schema = NULL, *input = NULL, *tools = NULL;
        char desc[256];
        int r;

        r = schema_build(e->registry, e->config.mode, &e->config, &schema);
        if (r < 0)
                return r;
        input = json_deep_copy(json_object_get(schema, "parameters"));
        if (!json_is_object(input) || !json_is_object(json_object_get(input, "properties")))
                return -ENOMEM;
        (void) snprintf(desc, sizeof(desc), "Seconds the script may run (default and maximum: %g).",
                        s->max_timeout);
        if (json_object_set_new(json_object_get(input, "properties"), "timeout",
                                json_pack("{s:s, s:s}", "type", "number", "description", desc)) < 0)
                return -ENOMEM;
        if (json_object_set_new(
                    json_object_get(input, "properties"), "session",
                    session_id_property("Run the code as the next cell of this session: a live "
                                        "Python interpreter whose variables, imports and data "
                                        "stay from one call to the next (a new id starts one). "
                                        "Omit for a fresh interpreter.")) < 0 ||
            json_object_set_new(json_object_get(input, "properties"), "reset",
                                json_pack("{s:s, s:s}", "type", "boolean", "description",
                                          "With session: start that session afresh (its "
                                          "state is discarded) before this code.")) < 0 ||
            json_object_set_new(
                    json_object_get(input, "properties"), "fork_from",
                    session_id_property("With a new session id: start that session as a copy "
                                        "of this live session (its variables, imports and "
                                        "data as they are now; files are shared), then run the "
                                        "code in the copy. The original is not changed: try "
                                        "two continuations from one state.")) < 0)
                return -ENOMEM;
        tools = json_pack("[{s:s, s:s, s:O, s:O}]", "name", "execute_code", "title",
                          "Run a Python script that calls tools", "description",
                          json_object_get(schema, "description"), "inputSchema", input);
        if (!tools)
                return -ENOMEM;
        for (size_t i = 0; s->expose_tools && i < registry_count(e->registry); i++) {
                const struct tool *t = registry_get(e->registry, i);

                if (json_array_append_new(tools, json_pack("{s:s, s:s, s:O}", "name", t->name,
                                                           "description", t->description,
                                                           "inputSchema", t->parameters)) < 0)
                        return -ENOMEM;
        }
        s->tools_list = json_pack("{s:O}", "tools", tools);
        return s->tools_list ? 0 : -ENOMEM;
}
