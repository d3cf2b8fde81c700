/* SPDX-License-Identifier: MIT */
/*
 * A complete small libptc host (docs/libptc.md): one host tool, one script
 * that calls it in a loop, the result JSON on stdout.
 *
 *   cc host.c $(pkg-config --cflags --libs ptc) -o host && ./host
 */

#include <stdio.h>
#include <string.h>

#include <ptc/ptc.h>

/* A host tool: the script calls it as add(a=1, b=2). Synchronous: answers before returning. */
static void add(ptc_tool_call *call, void *userdata)
{
        const char *args = ptc_tool_call_arguments(call); /* {"a": 1, "b": 2} */
        long a = 0, b = 0;
        const char *pa = strstr(args, "\"a\":"), *pb = strstr(args, "\"b\":");
        char answer[64];

        /* A real host parses with its JSON library; the arguments are compact JSON. */
        if (!pa || !pb || sscanf(pa + 4, "%ld", &a) != 1 || sscanf(pb + 4, "%ld", &b) != 1) {
                ptc_tool_call_fail(call, "add needs two integers a and b");
                return;
        }
        snprintf(answer, sizeof(answer), "{\"sum\": %ld}", a + b);
        ptc_tool_call_return(call, answer);
}

int main(void)
{
        static const char script[] = "from hermes_tools import add\n"
                                     "total = 0\n"
                                     "for i in range(1, 11):\n"
                                     "    total = add(a=total, b=i)['sum']\n"
                                     "print('sum of 1..10 =', total)\n";
        const struct ptc_tool_def def = {
                .size = sizeof(def),
                .name = "add",
                .description = "Add two integers.",
                .parameters_json = "{\"type\": \"object\", \"properties\": "
                                   "{\"a\": {\"type\": \"integer\"}, \"b\": {\"type\": "
                                   "\"integer\"}}, \"required\": [\"a\", \"b\"]}",
                .returns = "Returns {\"sum\": N}",
                .fn = add,
        };
        struct ptc_diag diag = {};
        ptc_engine *engine = NULL;
        ptc_execution *x = NULL;
        enum ptc_status status;
        char *result = NULL;
        int r, ret = 1;

        /* Built-in defaults only; then the options a host wants, as the config file's keys. */
        r = ptc_engine_new(NULL, PTC_ENGINE_NO_CONFIG_FILE, &engine, &diag);
        if (r < 0)
                goto fail;
        if ((r = ptc_engine_set(engine, "mode", "strict", &diag)) < 0 ||
            (r = ptc_engine_set(engine, "tools", "add", &diag)) < 0 ||
            (r = ptc_engine_set(engine, "max_tool_calls", "20", &diag)) < 0 ||
            (r = ptc_engine_add_tool(engine, &def, &diag)) < 0 ||
            (r = ptc_engine_start(engine, &diag)) < 0)
                goto fail;

        /* One execution: run the script to its end and get the result JSON. */
        if ((r = ptc_execution_new(engine, &x, &diag)) < 0 ||
            (r = ptc_execution_set(x, "timeout", "60", &diag)) < 0)
                goto fail;
        r = ptc_execution_run(x, script, strlen(script), &result, &status, &diag);
        if (r < 0)
                goto fail;
        printf("%s\n", result);
        ret = status == PTC_STATUS_SUCCESS ? 0 : 1;
        goto out;
fail:
        fprintf(stderr, "host: %s\n", diag.message);
out:
        ptc_free(result);
        ptc_execution_free(x);
        ptc_engine_free(engine);
        return ret;
}
