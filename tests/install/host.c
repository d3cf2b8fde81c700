/* SPDX-License-Identifier: MIT */
/*
 * A minimal C host of libptc, built by tests/integration/test_install.py against the
 * *installed* library (`cc host.c $(pkg-config --cflags --libs ptc)`): an engine without
 * a config file, one host tool, one script that calls it. Prints the script's output and
 * the result's status; exits 0 only when the run succeeded.
 */
#include <ptc/ptc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* add(a, b): answers {"sum": a + b}, parsing the two integers out of the arguments JSON. */
static void add(ptc_tool_call *call, void *userdata)
{
        const char *args = ptc_tool_call_arguments(call);
        const char *pa = strstr(args, "\"a\"");
        const char *pb = strstr(args, "\"b\"");
        char out[64];

        (void) userdata;
        if (!pa || !pb) {
                ptc_tool_call_fail(call, "add needs a and b");
                return;
        }
        snprintf(out, sizeof out, "{\"sum\": %ld}",
                 strtol(strchr(pa, ':') + 1, NULL, 10) + strtol(strchr(pb, ':') + 1, NULL, 10));
        ptc_tool_call_return(call, out);
}

int main(void)
{
        static const char code[] = "from hermes_tools import add\n"
                                   "print('sum is', add(a=2, b=40)['sum'])\n";
        struct ptc_tool_def def = {
                .size = sizeof(def),
                .name = "add",
                .description = "Add two integers.",
                .parameters_json =
                        "{\"type\": \"object\", \"properties\": "
                        "{\"a\": {\"type\": \"integer\"}, \"b\": {\"type\": \"integer\"}},"
                        " \"required\": [\"a\", \"b\"]}",
                .returns = "{\"sum\": a + b}",
                .fn = add,
        };
        struct ptc_diag diag = {0};
        ptc_engine *e = NULL;
        ptc_execution *x = NULL;
        enum ptc_status status = PTC_STATUS_ERROR;
        char *json = NULL;
        int r;

        printf("libptc %s\n", ptc_version());
        r = ptc_engine_new(NULL, PTC_ENGINE_NO_CONFIG_FILE, &e, &diag);
        if (r >= 0)
                r = ptc_engine_add_tool(e, &def, &diag);
        if (r >= 0)
                r = ptc_engine_set(e, "tools", "add", &diag);
        if (r >= 0)
                r = ptc_engine_start(e, &diag);
        if (r >= 0)
                r = ptc_execution_new(e, &x, &diag);
        if (r >= 0)
                r = ptc_execution_run(x, code, strlen(code), &json, &status, &diag);
        if (r < 0) {
                fprintf(stderr, "host: %s (%d)\n", diag.message, r);
                ptc_execution_free(x);
                ptc_engine_free(e);
                return 2;
        }
        printf("status %s\n%s\n", ptc_status_to_string(status), json);
        ptc_free(json);
        ptc_execution_free(x);
        ptc_engine_free(e);
        return status == PTC_STATUS_SUCCESS ? 0 : 1;
}
