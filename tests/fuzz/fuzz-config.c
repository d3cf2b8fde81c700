/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the config file (src/core/config/): the input is the YAML text of a config
 * file, loaded over the defaults through the real path, config_load_file() on a memfd (named
 * /proc/self/fd/N), as `ptc --config FILE` loads it. Invariants:
 *   - the file is either accepted or refused with -EINVAL (-E2BIG for an oversized file,
 *     -ENOMEM) and a non-empty message; a message or warning holds no control character
 *     (config_escape_text() is there so a value cannot forge lines or terminal sequences);
 *   - an accepted config is valid: every value within the bounds docs/config.md gives, names
 *     that are names, lists without holes, mcp servers with a command, rules with tools;
 *   - each scalar key of an accepted config reads back (config_get_value()) as text that
 *     config_set_value() takes again, giving the same text;
 *   - the YAML tree the loader builds stays within CONFIG_MAX_DEPTH and CONFIG_MAX_NODES
 *     (deeper or larger documents are refused);
 *   - no crash, no leak: the config is released after success and after failure alike.
 *
 * The corpus (corpus/config/) replays under meson through fuzz-main.c; scripts/fuzz.sh
 * builds and runs the libFuzzer program.
 */

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "basic/utf8.h"
#include "core/config/config-internal.h"
#include "core/config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The keys config_get_value() and config_set_value() share, lists and rules aside. */
static const char *const scalar_keys[] = {
        "code_execution.timeout",
        "code_execution.max_tool_calls",
        "code_execution.mode",
        "code_execution.module_name",
        "code_execution.max_stdout_bytes",
        "code_execution.max_stderr_bytes",
        "code_execution.python",
        "code_execution.tools",
        "code_execution.backend",
        "code_execution.backend_concurrency",
        "code_execution.remote_cwd",
        "terminal.timeout",
        "terminal.max_timeout",
        "terminal.backend",
        "terminal.isolation",
        "terminal.network",
        "sandbox.isolation",
        "sandbox.memory_mb",
        "sandbox.pids",
        "sandbox.network",
        "web.search_provider",
        "web.searxng_url",
        "web.allow_private_urls",
        "web.extract_provider",
        "web.brave_url",
        "web.tavily_url",
        "web.firecrawl_url",
        "web.exa_url",
        "web.timeout",
        "sessions.idle_timeout",
        "sessions.max",
        "sessions.warm",
        "policy.dangerous",
        "policy.headless",
        "policy.approval_timeout",
};

static void check(bool ok, const char *what, const char *detail)
{
        if (!ok) {
                fprintf(stderr, "fuzz-config: %s%s%s\n", what, detail ? ": " : "",
                        detail ? detail : "");
                abort();
        }
}

/* A message for humans: valid UTF-8, no C0 control (not even a newline), no DEL. */
static void check_text(const char *s, const char *what)
{
        size_t n = strlen(s);

        check(utf8_is_valid(s, n), what, s);
        for (size_t i = 0; i < n; i++)
                check((unsigned char) s[i] >= 0x20 && s[i] != 0x7f, what, s);
}

static bool is_name(const char *s, size_t max, const char *extra)
{
        size_t n = s ? strlen(s) : 0;

        if (n == 0 || n > max)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
                      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || strchr(extra, s[i])))
                        return false;
        return true;
}

static bool is_url(const char *s)
{
        if (!s)
                return true;
        return (strncasecmp(s, "http://", 7) == 0 || strncasecmp(s, "https://", 8) == 0) &&
               !strpbrk(s, " \t\n\r");
}

static bool is_seconds(double d, double max)
{
        return isfinite(d) && d > 0 && d <= max;
}

static void check_valid(const struct ptc_config *c)
{
        check(is_seconds(c->timeout, CONFIG_MAX_SECONDS), "code_execution.timeout", NULL);
        check(c->max_tool_calls >= 0, "code_execution.max_tool_calls", NULL);
        check(c->mode == PTC_MODE_PROJECT || c->mode == PTC_MODE_STRICT, "mode", NULL);
        check(config_is_python_identifier(c->module_name) &&
                      strlen(c->module_name) <= CONFIG_MAX_NAME &&
                      strcmp(c->module_name, "json") != 0 && strcmp(c->module_name, "os") != 0 &&
                      strcmp(c->module_name, "sys") != 0,
              "module_name", c->module_name);
        check(c->max_stdout_bytes >= 100 && c->max_stderr_bytes >= 0, "output caps", NULL);
        check(c->python && c->python[0] && strlen(c->python) <= CONFIG_MAX_STRING, "python", NULL);
        for (char **t = c->tools; t && *t; t++)
                check(is_name(*t, 200, ""), "tool name", *t);
        for (char **b = c->backends; b && *b; b++)
                check(**b && strcmp(*b, "local") != 0, "backend", *b);
        check(c->backend_concurrency >= 1 && c->backend_concurrency <= 1024, "backend_concurrency",
              NULL);
        check(!c->remote_cwd || c->remote_cwd[0], "remote_cwd", NULL);
        check(c->env_passthrough != NULL, "env_passthrough is NULL", NULL);
        for (char **e = c->env_passthrough; *e; e++)
                check(is_name(*e, CONFIG_MAX_ENV_NAME, "") && !(**e >= '0' && **e <= '9'),
                      "env_passthrough", *e);
        check(c->terminal_timeout >= 1 && c->terminal_timeout <= c->terminal_max_timeout &&
                      c->terminal_max_timeout <= CONFIG_MAX_SECONDS,
              "terminal timeouts", NULL);
        check(c->isolation <= PTC_ISOLATION_STRICT, "isolation", NULL);
        check(c->memory_mb >= 16 && c->pids >= 1, "sandbox", NULL);
        check(is_url(c->searxng_url) && is_url(c->brave_url) && is_url(c->tavily_url) &&
                      is_url(c->firecrawl_url) && is_url(c->exa_url),
              "url", NULL);
        check(is_seconds(c->web_timeout, 3600), "web.timeout", NULL);
        check(is_seconds(c->session_idle_timeout, CONFIG_MAX_SECONDS * 7), "idle_timeout", NULL);
        check(c->max_sessions >= 1 && c->max_sessions <= 64 && c->warm >= 0 && c->warm <= 16,
              "sessions", NULL);
        check(c->policy.dangerous <= POLICY_DENY &&
                      (c->policy.headless == POLICY_ALLOW || c->policy.headless == POLICY_DENY),
              "policy words", NULL);
        check(is_seconds(c->policy.approval_timeout, CONFIG_MAX_SECONDS), "approval_timeout", NULL);
        for (size_t i = 0; i < c->policy.n_rules; i++) {
                const struct policy_rule *r = &c->policy.rules[i];

                check(r->tools && r->tools[0], "rule without tools", NULL);
                check(r->action <= POLICY_DENY, "rule action", NULL);
                check(!r->match || r->match[0], "rule with an empty match", NULL);
                check(!r->match || r->subject != POLICY_SUBJECT_CALL, "rule subject", NULL);
        }
        check(c->n_mcp_servers <= CONFIG_MAX_MCP_SERVERS, "too many servers", NULL);
        for (size_t i = 0; i < c->n_mcp_servers; i++) {
                const struct mcp_server_config *s = &c->mcp_servers[i];

                check(is_name(s->name, CONFIG_MAX_NAME, "-"), "server name", s->name);
                check(s->command && s->command[0], "server without command", s->name);
                check(s->args && s->env, "server args/env NULL", s->name);
                for (char **e = s->env; *e; e++)
                        check(strchr(*e, '=') != NULL, "server env entry", *e);
                for (size_t j = 0; j < i; j++)
                        check(strcmp(c->mcp_servers[j].name, s->name) != 0, "duplicate server",
                              s->name);
        }
        for (char **w = c->warnings; w && *w; w++)
                check_text(*w, "warning");
}

/* Every scalar key reads back as text that sets it to the same text. */
static void check_round_trip(struct ptc_config *c)
{
        for (size_t i = 0; i < ELEMENTSOF(scalar_keys); i++) {
                const char *key = scalar_keys[i];
                _cleanup_free_ char *v = NULL, *again = NULL;
                struct diag d = {};
                int r;

                r = config_get_value(c, key, &v, &d);
                if (r == -ENOMEM)
                        return;
                check(r == 0 && v, "config_get_value failed", key);
                /* "" is how an unset string or list reads; a pool reads as "a, b". */
                if (!v[0] || (strcmp(key, "code_execution.backend") == 0 && c->backends &&
                              c->backends[0] && c->backends[1]))
                        continue;
                r = config_set_value(c, key, v, &d);
                if (r == -ENOMEM)
                        return;
                if (r < 0)
                        fprintf(stderr, "fuzz-config: %s = '%s': %s\n", key, v, d.message);
                check(r == 0, "config_set_value refused what config_get_value gave", key);
                r = config_get_value(c, key, &again, &d);
                if (r == -ENOMEM)
                        return;
                check(r == 0 && strcmp(v, again) == 0, "value changed by a round trip", key);
        }
}

static size_t tree_depth(const struct node *n, size_t *count)
{
        size_t d = 0;

        (*count)++;
        for (size_t i = 0; i < n->n_items; i++)
                d = MAX(d, tree_depth(n->items[i], count));
        return n->type == NODE_SEQUENCE || n->type == NODE_MAPPING ? d + 1 : d;
}

/* The tree config_load_file() interprets, built again on its own: within the caps. */
static void check_tree(const uint8_t *data, size_t size)
{
        struct ptc_config c = {};
        struct diag d = {};
        struct ctx x = {.path = "fuzz", .err = &d, .c = &c};
        struct node *root = NULL;
        size_t count = 0;
        int r;

        r = config_parse_yaml(&x, (const char *) data, size, &root);
        if (r < 0) {
                check(r == -EINVAL || r == -ENOMEM, "config_parse_yaml: unexpected error", NULL);
                check(r == -ENOMEM || d.message[0], "config_parse_yaml: no message", NULL);
                strv_free(c.warnings);
                return;
        }
        if (root) {
                check(tree_depth(root, &count) <= CONFIG_MAX_DEPTH, "YAML tree too deep", NULL);
                check(count <= CONFIG_MAX_NODES, "YAML tree too large", NULL);
        }
        config_node_free(root);
        strv_free(c.warnings);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_close_ int fd = -EBADF;
        struct ptc_config c;
        struct diag d = {};
        char path[64];
        int r;

        fd = memfd_create("fuzz-config", MFD_CLOEXEC);
        if (fd < 0 || write_all(fd, data, size) < 0)
                abort(); /* the machine, not the input */
        (void) snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);

        if (config_init(&c) < 0)
                return 0;
        r = config_load_file(&c, path, true, &d);
        if (r < 0) {
                check(r == -EINVAL || r == -E2BIG || r == -ENOMEM, "unexpected error", d.message);
                check(r == -ENOMEM || d.message[0], "refused without a message", NULL);
                check_text(d.message, "message");
        } else {
                check(r == 0, "positive return", NULL);
                check_valid(&c);
                check_round_trip(&c);
                check_valid(&c);
        }
        config_release(&c);

        check_tree(data, size);
        return 0;
}
