/* SPDX-License-Identifier: MIT */
#include "../lib/ptc-test.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/path-util.h"
#include "basic/strv.h"
#include "core/config/config.h"

static char tmpdir[] = "/tmp/ptc-test-config-XXXXXX";
static char cfg_path[256];

static int group_setup(void **state)
{
        (void) state;
        return mkdtemp(tmpdir) ? 0 : -1;
}

static int group_teardown(void **state)
{
        (void) state;
        return rm_rf(tmpdir) < 0 ? -1 : 0;
}

static const char *write_bytes(const char *data, size_t n)
{
        int fd;

        (void) snprintf(cfg_path, sizeof(cfg_path), "%s/config.yaml", tmpdir);
        fd = open(cfg_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        while (n > 0) {
                ssize_t w = write(fd, data, n);

                assert_true(w > 0);
                data += w;
                n -= (size_t) w;
        }
        assert_int_equal(close(fd), 0);
        return cfg_path;
}

static const char *write_config(const char *text)
{
        return write_bytes(text, strlen(text));
}

/* Load @text over the defaults; returns the result, config in @c (caller releases). */
static int load_text(struct ptc_config *c, const char *text, struct diag *d)
{
        assert_int_equal(config_init(c), 0);
        memset(d, 0, sizeof(*d));
        return config_load_file(c, write_config(text), true, d);
}

/* Expect @text to fail with -EINVAL and the message "<path>:<suffix>". */
static void expect_error(const char *text, const char *suffix)
{
        struct ptc_config c;
        struct diag d;
        char want[2048];
        int r;

        r = load_text(&c, text, &d);
        (void) snprintf(want, sizeof(want), "%s:%s", cfg_path, suffix);
        if (r != -EINVAL || strcmp(d.message, want) != 0)
                print_error("input:\n%s\nr=%d\ngot:  %s\nwant: %s\n", text, r, d.message, want);
        assert_int_equal(r, -EINVAL);
        assert_string_equal(d.message, want);
        /* Releasable after an error, no leaks (checked under ASan). */
        config_release(&c);
}

static void expect_ok(const char *text, struct ptc_config *c)
{
        struct diag d;
        int r;

        r = load_text(c, text, &d);
        if (r != 0)
                print_error("input:\n%s\nr=%d: %s\n", text, r, d.message);
        assert_int_equal(r, 0);
}

static void test_config_init_defaults(void **state)
{
        struct ptc_config c;

        (void) state;
        assert_int_equal(config_init(&c), 0);
        assert_true(c.timeout == 300.0);
        assert_int_equal(c.max_tool_calls, 50);
        assert_int_equal(c.mode, PTC_MODE_PROJECT);
        assert_string_equal(c.module_name, "hermes_tools");
        assert_int_equal(c.max_stdout_bytes, 50000);
        assert_int_equal(c.max_stderr_bytes, 10000);
        assert_string_equal(c.python, "python3");
        assert_null(c.tools);
        assert_non_null(c.env_passthrough);
        assert_int_equal(strv_length(c.env_passthrough), 0);
        assert_int_equal(c.terminal_timeout, 180);
        assert_int_equal(c.terminal_max_timeout, 600);
        assert_false(c.terminal_strict);
        assert_false(c.terminal_network);
        assert_int_equal(c.isolation, PTC_ISOLATION_AUTO);
        assert_int_equal(c.memory_mb, 1024);
        assert_int_equal(c.pids, 256);
        assert_false(c.network);
        assert_null(c.search_provider);
        assert_null(c.searxng_url);
        assert_false(c.allow_private_urls);
        assert_null(c.extract_provider);
        assert_null(c.brave_url);
        assert_null(c.tavily_url);
        assert_null(c.firecrawl_url);
        assert_null(c.exa_url);
        assert_true(c.web_timeout == 30.0);
        assert_null(c.mcp_servers);
        assert_int_equal(c.n_mcp_servers, 0);
        assert_null(c.source_path);
        config_release(&c);
        assert_null(c.module_name);
        config_release(&c); /* twice is fine */
        config_release(NULL);
}

static void test_config_parse_mode_words(void **state)
{
        enum ptc_mode m = PTC_MODE_PROJECT;

        (void) state;
        assert_int_equal(config_parse_mode("strict", &m), 0);
        assert_int_equal(m, PTC_MODE_STRICT);
        assert_int_equal(config_parse_mode("  Project\t", &m), 0);
        assert_int_equal(m, PTC_MODE_PROJECT);
        assert_int_equal(config_parse_mode("STRICT", &m), 0);
        assert_int_equal(m, PTC_MODE_STRICT);
        assert_int_equal(config_parse_mode("fast", &m), -EINVAL);
        assert_int_equal(config_parse_mode("", &m), -EINVAL);
        assert_int_equal(config_parse_mode("strictx", &m), -EINVAL);
        assert_int_equal(config_parse_mode(NULL, &m), -EINVAL);
        assert_string_equal(config_mode_to_string(PTC_MODE_PROJECT), "project");
        assert_string_equal(config_mode_to_string(PTC_MODE_STRICT), "strict");
        assert_null(config_mode_to_string((enum ptc_mode) 42));
}

static void test_config_parse_isolation_words(void **state)
{
        enum ptc_isolation i = PTC_ISOLATION_AUTO;

        (void) state;
        assert_int_equal(config_parse_isolation("none", &i), 0);
        assert_int_equal(i, PTC_ISOLATION_NONE);
        assert_int_equal(config_parse_isolation(" Strict ", &i), 0);
        assert_int_equal(i, PTC_ISOLATION_STRICT);
        assert_int_equal(config_parse_isolation("auto", &i), 0);
        assert_int_equal(i, PTC_ISOLATION_AUTO);
        assert_int_equal(config_parse_isolation("off", &i), -EINVAL);
        assert_int_equal(config_parse_isolation(NULL, &i), -EINVAL);
        assert_string_equal(config_isolation_to_string(PTC_ISOLATION_NONE), "none");
        assert_string_equal(config_isolation_to_string(PTC_ISOLATION_AUTO), "auto");
        assert_string_equal(config_isolation_to_string(PTC_ISOLATION_STRICT), "strict");
        assert_null(config_isolation_to_string((enum ptc_isolation) - 1));
}

static void test_config_is_python_identifier_cases(void **state)
{
        (void) state;
        assert_true(config_is_python_identifier("hermes_tools"));
        assert_true(config_is_python_identifier("_x1"));
        assert_true(config_is_python_identifier("match")); /* soft keyword: fine */
        assert_true(config_is_python_identifier("false"));
        assert_false(config_is_python_identifier(""));
        assert_false(config_is_python_identifier(NULL));
        assert_false(config_is_python_identifier("1abc"));
        assert_false(config_is_python_identifier("a-b"));
        assert_false(config_is_python_identifier("a.b"));
        assert_false(config_is_python_identifier("caf\xc3\xa9"));
        assert_false(config_is_python_identifier("class"));
        assert_false(config_is_python_identifier("None"));
        assert_false(config_is_python_identifier("await"));
        assert_false(config_is_python_identifier("nonlocal"));
}

static void test_config_default_path_env(void **state)
{
        char *p = NULL;

        (void) state;
        assert_int_equal(setenv("PTC_CONFIG", "/etc/x.yaml", 1), 0);
        assert_int_equal(config_default_path(&p), 0);
        assert_string_equal(p, "/etc/x.yaml");
        free(p);

        assert_int_equal(setenv("PTC_CONFIG", "", 1), 0);
        assert_int_equal(setenv("XDG_CONFIG_HOME", "/xdg/", 1), 0);
        assert_int_equal(config_default_path(&p), 0);
        assert_string_equal(p, "/xdg/ptc/config.yaml");
        free(p);

        assert_int_equal(unsetenv("PTC_CONFIG"), 0);
        assert_int_equal(setenv("XDG_CONFIG_HOME", "relative/dir", 1), 0);
        assert_int_equal(setenv("HOME", "/home/u", 1), 0);
        assert_int_equal(config_default_path(&p), 0);
        assert_string_equal(p, "/home/u/.config/ptc/config.yaml");
        free(p);

        /* No usable HOME: falls back to the password database, still absolute. */
        assert_int_equal(unsetenv("XDG_CONFIG_HOME"), 0);
        assert_int_equal(unsetenv("HOME"), 0);
        if (config_default_path(&p) == 0) {
                assert_true(p[0] == '/');
                assert_non_null(strstr(p, "/.config/ptc/config.yaml"));
                free(p);
        }
}

static void test_config_load_file_design_example(void **state)
{
        static const char text[] =
                "code_execution:\n"
                "  timeout: 300\n"
                "  max_tool_calls: 50\n"
                "  mode: project            # project | strict\n"
                "  module_name: hermes_tools\n"
                "  max_stdout_bytes: 50000\n"
                "  max_stderr_bytes: 10000\n"
                "terminal:\n"
                "  env_passthrough: [TENOR_API_KEY]   # names that pass the env scrub\n"
                "  timeout: 180\n"
                "sandbox:\n"
                "  isolation: auto          # none | auto | strict\n"
                "  memory_mb: 1024\n"
                "  pids: 256\n"
                "  network: false\n"
                "web:\n"
                "  search_provider: searxng # searxng | brave | tavily | firecrawl | exa\n"
                "  searxng_url: http://127.0.0.1:8888\n"
                "  allow_private_urls: false\n"
                "mcp_servers:               # upstream MCP servers whose tools scripts may call\n"
                "  files:\n"
                "    command: npx\n"
                "    args: [-y, \"@modelcontextprotocol/server-filesystem\", /srv/data]\n";
        struct ptc_config c;

        (void) state;
        expect_ok(text, &c);
        assert_true(c.timeout == 300.0);
        assert_int_equal(c.max_tool_calls, 50);
        assert_int_equal(c.mode, PTC_MODE_PROJECT);
        assert_string_equal(c.module_name, "hermes_tools");
        assert_int_equal(strv_length(c.env_passthrough), 1);
        assert_string_equal(c.env_passthrough[0], "TENOR_API_KEY");
        assert_int_equal(c.terminal_timeout, 180);
        assert_int_equal(c.isolation, PTC_ISOLATION_AUTO);
        assert_false(c.network);
        assert_string_equal(c.search_provider, "searxng");
        assert_string_equal(c.searxng_url, "http://127.0.0.1:8888");
        assert_int_equal(c.n_mcp_servers, 1);
        assert_string_equal(c.mcp_servers[0].name, "files");
        assert_string_equal(c.mcp_servers[0].command, "npx");
        assert_int_equal(strv_length(c.mcp_servers[0].args), 3);
        assert_string_equal(c.mcp_servers[0].args[0], "-y");
        assert_string_equal(c.mcp_servers[0].args[1], "@modelcontextprotocol/server-filesystem");
        assert_string_equal(c.mcp_servers[0].args[2], "/srv/data");
        assert_non_null(c.mcp_servers[0].env);
        assert_int_equal(strv_length(c.mcp_servers[0].env), 0);
        assert_null(c.mcp_servers[0].cwd);
        assert_string_equal(c.source_path, cfg_path);
        config_release(&c);
}

static void test_config_load_file_valid_values(void **state)
{
        static const char text[] = "code_execution:\n"
                                   "  timeout: 2.5\n"
                                   "  max_tool_calls: 0\n"
                                   "  mode: ' Strict '\n"
                                   "  module_name: my_tools\n"
                                   "  max_stdout_bytes: 100\n"
                                   "  max_stderr_bytes: 0\n"
                                   "  python: /usr/bin/python3.12\n"
                                   "  tools: [read_file, terminal, read_file]\n"
                                   "terminal:\n"
                                   "  env_passthrough:\n"
                                   "    - FOO\n"
                                   "    - _BAR2\n"
                                   "  timeout: \"30\"\n"
                                   "  max_timeout: 86400\n"
                                   "  backend: LOCAL\n"
                                   "  isolation: Strict\n"
                                   "  network: on\n"
                                   "sandbox:\n"
                                   "  isolation: none\n"
                                   "  memory_mb: 16\n"
                                   "  pids: 1000000\n"
                                   "  network: Yes\n"
                                   "web:\n"
                                   "  search_provider: Brave\n"
                                   "  searxng_url: HTTPS://search.example/\n"
                                   "  allow_private_urls: on\n"
                                   "  extract_provider: Tavily\n"
                                   "  brave_url: http://127.0.0.1:1/brave\n"
                                   "  tavily_url: https://t.example\n"
                                   "  firecrawl_url: http://fc.example:3002\n"
                                   "  exa_url: https://exa.example/\n"
                                   "  timeout: 2.5\n";
        struct ptc_config c;

        (void) state;
        expect_ok(text, &c);
        assert_true(c.timeout == 2.5);
        assert_int_equal(c.max_tool_calls, 0);
        assert_int_equal(c.mode, PTC_MODE_STRICT);
        assert_string_equal(c.module_name, "my_tools");
        assert_int_equal(c.max_stdout_bytes, 100);
        assert_int_equal(c.max_stderr_bytes, 0);
        assert_string_equal(c.python, "/usr/bin/python3.12");
        assert_int_equal(strv_length(c.tools), 2);
        assert_string_equal(c.tools[0], "read_file");
        assert_string_equal(c.tools[1], "terminal");
        assert_int_equal(strv_length(c.env_passthrough), 2);
        assert_string_equal(c.env_passthrough[0], "FOO");
        assert_string_equal(c.env_passthrough[1], "_BAR2");
        assert_int_equal(c.terminal_timeout, 30);
        assert_int_equal(c.terminal_max_timeout, 86400);
        assert_true(c.terminal_strict);
        assert_true(c.terminal_network);
        assert_int_equal(c.isolation, PTC_ISOLATION_NONE);
        assert_int_equal(c.memory_mb, 16);
        assert_int_equal(c.pids, 1000000);
        assert_true(c.network);
        assert_string_equal(c.search_provider, "brave");
        assert_string_equal(c.searxng_url, "HTTPS://search.example/");
        assert_true(c.allow_private_urls);
        assert_string_equal(c.extract_provider, "tavily");
        assert_string_equal(c.brave_url, "http://127.0.0.1:1/brave");
        assert_string_equal(c.tavily_url, "https://t.example");
        assert_string_equal(c.firecrawl_url, "http://fc.example:3002");
        assert_string_equal(c.exa_url, "https://exa.example/");
        assert_true(c.web_timeout == 2.5);
        config_release(&c);

        /* builtin and null both mean the keyless extractor. */
        expect_ok("web: {extract_provider: builtin, brave_url: null}\n", &c);
        assert_null(c.extract_provider);
        assert_null(c.brave_url);
        config_release(&c);

        /* More spellings. */
        expect_ok("code_execution: {timeout: 86400, max_tool_calls: 1000000000, "
                  "max_stdout_bytes: 100000000, max_stderr_bytes: \"100000000\"}\n"
                  "sandbox: {isolation: STRICT, memory_mb: 1048576, pids: 1, network: off}\n"
                  "web: {search_provider: exa, allow_private_urls: 'TRUE'}\n",
                  &c);
        assert_true(c.timeout == 86400.0);
        assert_int_equal(c.max_tool_calls, 1000000000);
        assert_int_equal(c.max_stdout_bytes, 100000000);
        assert_int_equal(c.max_stderr_bytes, 100000000);
        assert_int_equal(c.isolation, PTC_ISOLATION_STRICT);
        assert_int_equal(c.memory_mb, 1048576);
        assert_int_equal(c.pids, 1);
        assert_false(c.network);
        assert_string_equal(c.search_provider, "exa");
        assert_true(c.allow_private_urls);
        config_release(&c);

        expect_ok("code_execution:\n  timeout: 1e2\n", &c);
        assert_true(c.timeout == 100.0);
        config_release(&c);
        expect_ok("code_execution:\n  timeout: \" 0.5\"\n", &c);
        assert_true(c.timeout == 0.5);
        config_release(&c);

        /* Null resets the optional strings. */
        expect_ok("web:\n  search_provider: tavily\n  searxng_url: http://x\n", &c);
        assert_string_equal(c.search_provider, "tavily");
        config_release(&c);
        expect_ok("web:\n  search_provider: ~\n  searxng_url:\n", &c);
        assert_null(c.search_provider);
        assert_null(c.searxng_url);
        config_release(&c);
}

static void test_config_load_file_invalid_values(void **state)
{
        static const struct {
                const char *text;
                const char *msg;
        } cases[] = {
                {"code_execution:\n  timeout: 0\n",
                 "2: code_execution.timeout: invalid value '0' (allowed: a number of seconds "
                 "greater than 0 and at most 86400)"},
                {"code_execution:\n  timeout: -1\n",
                 "2: code_execution.timeout: invalid value '-1' (allowed: a number of seconds "
                 "greater than 0 and at most 86400)"},
                {"code_execution:\n  timeout: 86400.5\n",
                 "2: code_execution.timeout: invalid value '86400.5' (allowed: a number of "
                 "seconds greater than 0 and at most 86400)"},
                {"code_execution:\n  timeout: 12abc\n",
                 "2: code_execution.timeout: invalid value '12abc' (allowed: a number of "
                 "seconds greater than 0 and at most 86400)"},
                {"code_execution:\n  timeout: .nan\n",
                 "2: code_execution.timeout: invalid value '.nan' (allowed: a number of "
                 "seconds greater than 0 and at most 86400)"},
                {"code_execution:\n  timeout: 0x10\n",
                 "2: code_execution.timeout: invalid value '0x10' (allowed: a number of "
                 "seconds greater than 0 and at most 86400)"},
                {"code_execution:\n  timeout:\n",
                 "2: code_execution.timeout: missing value (allowed: a number of seconds "
                 "greater than 0 and at most 86400)"},
                {"code_execution:\n  timeout: [1]\n",
                 "2: code_execution.timeout: expected a number of seconds greater than 0 and "
                 "at most 86400, got a sequence"},
                {"code_execution:\n  max_tool_calls: 5.0\n",
                 "2: code_execution.max_tool_calls: invalid value '5.0' (allowed: an integer "
                 "from 0 to 1000000000)"},
                {"code_execution:\n  max_tool_calls: -1\n",
                 "2: code_execution.max_tool_calls: invalid value '-1' (allowed: an integer "
                 "from 0 to 1000000000)"},
                {"code_execution:\n  max_tool_calls: 1000000001\n",
                 "2: code_execution.max_tool_calls: invalid value '1000000001' (allowed: an "
                 "integer from 0 to 1000000000)"},
                {"code_execution:\n  max_tool_calls: 12abc\n",
                 "2: code_execution.max_tool_calls: invalid value '12abc' (allowed: an "
                 "integer from 0 to 1000000000)"},
                {"code_execution:\n  max_tool_calls: 010\n",
                 "2: code_execution.max_tool_calls: invalid value '010' (allowed: an integer "
                 "from 0 to 1000000000)"},
                {"code_execution:\n  max_tool_calls: 99999999999999999999999\n",
                 "2: code_execution.max_tool_calls: invalid value '99999999999999999999999' "
                 "(allowed: an integer from 0 to 1000000000)"},
                {"\n\ncode_execution:\n  mode: fast\n",
                 "4: code_execution.mode: invalid value 'fast' (allowed: project, strict)"},
                {"code_execution:\n  mode: {a: 1}\n",
                 "2: code_execution.mode: expected project, strict, got a mapping"},
                {"code_execution:\n  module_name: class\n",
                 "2: code_execution.module_name: invalid value 'class' (allowed: a Python "
                 "identifier of at most 64 characters, not a keyword, not json, os or sys)"},
                {"code_execution:\n  module_name: os\n",
                 "2: code_execution.module_name: invalid value 'os' (allowed: a Python "
                 "identifier of at most 64 characters, not a keyword, not json, os or sys)"},
                {"code_execution:\n  module_name: 9lives\n",
                 "2: code_execution.module_name: invalid value '9lives' (allowed: a Python "
                 "identifier of at most 64 characters, not a keyword, not json, os or sys)"},
                {"code_execution:\n  module_name: "
                 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
                 "2: code_execution.module_name: invalid value "
                 "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...' (allowed: a "
                 "Python identifier of at most 64 characters, not a keyword, not json, os or "
                 "sys)"},
                {"code_execution:\n  max_stdout_bytes: 99\n",
                 "2: code_execution.max_stdout_bytes: invalid value '99' (allowed: an integer "
                 "from 100 to 100000000)"},
                {"code_execution:\n  max_stderr_bytes: 100000001\n",
                 "2: code_execution.max_stderr_bytes: invalid value '100000001' (allowed: an "
                 "integer from 0 to 100000000)"},
                {"code_execution:\n  python: ''\n",
                 "2: code_execution.python: invalid value '' (allowed: a non-empty string of "
                 "at most 4096 bytes)"},
                {"code_execution:\n  python: \"py\\0thon\"\n",
                 "2: code_execution.python: invalid value 'py\\x00thon' (allowed: a non-empty "
                 "string of at most 4096 bytes)"},
                {"code_execution:\n  tools: [read_file, Term.inal]\n",
                 "2: code_execution.tools[1]: invalid value 'Term.inal' (allowed: tool names "
                 "matching [A-Za-z0-9_]+, at most 200 characters)"},
                {"code_execution:\n  tools: read_file, web-search\n",
                 "2: code_execution.tools: invalid value 'web-search' (allowed: tool names "
                 "matching [A-Za-z0-9_]+, at most 200 characters)"},
                {"code_execution:\n  tools:\n    - [a]\n",
                 "3: code_execution.tools[0]: expected tool names matching [A-Za-z0-9_]+, at "
                 "most 200 characters, got a sequence"},
                {"code_execution:\n  tools: {a: b}\n",
                 "2: code_execution.tools: expected a sequence of tool names matching "
                 "[A-Za-z0-9_]+, at most 200 characters, got a mapping"},
                {"terminal:\n  env_passthrough: [OK, \"BAD-NAME\"]\n",
                 "2: terminal.env_passthrough[1]: invalid value 'BAD-NAME' (allowed: names "
                 "matching [A-Za-z_][A-Za-z0-9_]*)"},
                {"terminal:\n  env_passthrough: FOO\n",
                 "2: terminal.env_passthrough: invalid value 'FOO' (allowed: a sequence of "
                 "environment variable names matching [A-Za-z_][A-Za-z0-9_]*)"},
                {"terminal:\n  timeout: 0\n",
                 "2: terminal.timeout: invalid value '0' (allowed: an integer from 1 to "
                 "86400)"},
                {"terminal:\n  max_timeout: 86401\n",
                 "2: terminal.max_timeout: invalid value '86401' (allowed: an integer from 1 "
                 "to 86400)"},
                {"terminal:\n  backend: docker\n",
                 "2: terminal.backend: invalid value 'docker' (allowed: local)"},
                {"terminal:\n  timeout: 100\n  max_timeout: 50\n",
                 "3: terminal.max_timeout: invalid value '50' (allowed: an integer from "
                 "terminal.timeout (100) to 86400)"},
                {"terminal:\n  timeout: 900\n",
                 "2: terminal.timeout: invalid value '900' (allowed: an integer from 1 to "
                 "terminal.max_timeout (600))"},
                {"terminal:\n  isolation: auto\n",
                 "2: terminal.isolation: invalid value 'auto' (allowed: none, strict)"},
                {"terminal:\n  network: 2\n",
                 "2: terminal.network: invalid value '2' (allowed: true, false, yes, no, on, "
                 "off)"},
                {"sandbox:\n  isolation: full\n",
                 "2: sandbox.isolation: invalid value 'full' (allowed: none, auto, strict)"},
                {"sandbox:\n  memory_mb: 15\n",
                 "2: sandbox.memory_mb: invalid value '15' (allowed: an integer from 16 to "
                 "1048576)"},
                {"sandbox:\n  pids: 0\n",
                 "2: sandbox.pids: invalid value '0' (allowed: an integer from 1 to 1000000)"},
                {"sandbox:\n  network: maybe\n",
                 "2: sandbox.network: invalid value 'maybe' (allowed: true, false, yes, no, "
                 "on, off)"},
                {"sandbox:\n  network: 1\n",
                 "2: sandbox.network: invalid value '1' (allowed: true, false, yes, no, on, "
                 "off)"},
                {"web:\n  search_provider: google\n",
                 "2: web.search_provider: invalid value 'google' (allowed: searxng, brave, "
                 "tavily, firecrawl, exa)"},
                {"web:\n  searxng_url: ftp://x\n",
                 "2: web.searxng_url: invalid value 'ftp://x' (allowed: a URL starting with "
                 "http:// or https://)"},
                {"web:\n  searxng_url: http://\n",
                 "2: web.searxng_url: invalid value 'http://' (allowed: a URL starting with "
                 "http:// or https://)"},
                {"web:\n  searxng_url: \"http://a b\"\n",
                 "2: web.searxng_url: invalid value 'http://a b' (allowed: a URL starting "
                 "with http:// or https://)"},
                {"web:\n  extract_provider: jina\n",
                 "2: web.extract_provider: invalid value 'jina' (allowed: builtin, firecrawl, "
                 "tavily, exa)"},
                {"web:\n  brave_url: file:///etc/passwd\n",
                 "2: web.brave_url: invalid value 'file:///etc/passwd' (allowed: a URL starting "
                 "with http:// or https://)"},
                {"web:\n  exa_url: https://\n",
                 "2: web.exa_url: invalid value 'https://' (allowed: a URL starting with "
                 "http:// or https://)"},
                {"web:\n  timeout: 0\n",
                 "2: web.timeout: invalid value '0' (allowed: a number of seconds greater than "
                 "0 and at most 3600)"},
                {"web:\n  timeout: 3601\n",
                 "2: web.timeout: invalid value '3601' (allowed: a number of seconds greater "
                 "than 0 and at most 3600)"},
                {"web:\n  allow_private_urls: \"tru\\ne\"\n",
                 "2: web.allow_private_urls: invalid value 'tru\\ne' (allowed: true, false, "
                 "yes, no, on, off)"},
                {"web:\n  allow_private_urls: \"\\e[31m\\x85\"\n",
                 "2: web.allow_private_urls: invalid value '\\x1b[31m\\xc2\\x85' (allowed: "
                 "true, false, yes, no, on, off)"},
                /* Another parser's message about the file's text is escaped too. */
                {"code_execution:\n  backend: \"ssh\\n\\e[2Jx:h\"\n",
                 "2: code_execution.backend: backend 'ssh\\n\\x1b[2Jx:h': unknown (allowed: "
                 "local, ssh:[USER@]HOST[:PORT], docker:CONTAINER, podman:CONTAINER, "
                 "kubectl:[NAMESPACE/]POD[:CONTAINER], apptainer:INSTANCE or exec:COMMAND...)"},
                {"policy:\n  rules:\n    - {tool: terminal, match: \"a\\nb\", action: deny}\n",
                 "3: policy.rules[0].match: pattern 'a\\nb' is not one simple command (a command "
                 "word, then argument patterns; no operators or redirections)"},
        };

        (void) state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                expect_error(cases[i].text, cases[i].msg);
}

static void test_config_load_file_unknown_key(void **state)
{
        (void) state;
        expect_error("terminal:\n  env_passthrough: []\n\n\n\n\n  colour: red\n",
                     "7: terminal.colour: unknown key (allowed: env_passthrough, timeout, "
                     "max_timeout, backend, isolation, network)");
        /* A key one or two edits from a known one names it. */
        expect_error("code_execution:\n  Timeout: 5\n",
                     "2: code_execution.Timeout: unknown key (did you mean 'timeout'? allowed: "
                     "timeout, max_tool_calls, mode, module_name, max_stdout_bytes, "
                     "max_stderr_bytes, python, tools, backend, backend_concurrency, remote_cwd)");
        expect_error("sandbox:\n  memroy_mb: 5\n",
                     "2: sandbox.memroy_mb: unknown key (did you mean 'memory_mb'? allowed: "
                     "isolation, memory_mb, pids, network)");
        expect_error("sandbox:\n  \"a\\nb\": 1\n",
                     "2: sandbox.a\\nb: unknown key (allowed: isolation, memory_mb, pids, "
                     "network)");
        expect_error("web:\n  [a]: 1\n",
                     "2: web: expected a key name, got a sequence (allowed: search_provider, "
                     "searxng_url, allow_private_urls, extract_provider, brave_url, tavily_url, "
                     "firecrawl_url, exa_url, timeout)");
        expect_error("sandbox:\n  pids: 5\n  pids: 6\n", "3: sandbox.pids: duplicate key");
        expect_error("sandbox: {}\nsandbox: {}\n", "2: sandbox: duplicate section");
}

static void test_config_load_file_unknown_section_ignored(void **state)
{
        struct ptc_config c;

        (void) state;
        expect_ok("model:\n  name: gpt\n  whatever: [1, 2, {x: y}]\n"
                  "defaults: &d {a: 1}\nother:\n  <<: *d\n  list: *d\n"
                  "? [complex, key]\n: value\n"
                  "sandbox:\n  pids: 7\n",
                  &c);
        assert_int_equal(c.pids, 7);
        /* Nothing there is close to one of ptc's sections: no warning. */
        assert_null(c.warnings);
        config_release(&c);
}

/* A top-level name close to one of ptc's sections is ignored too, with a warning. */
static void test_config_load_file_misspelled_section_warns(void **state)
{
        struct ptc_config c;
        char want[2048];

        (void) state;
        expect_ok("code_exection:\n  timeout: 5\nsandbx: {}\nmodel: {}\nweb:\n  timeout: 3\n", &c);
        assert_true(c.timeout == 300); /* the misspelled section's value is not taken */
        assert_true(c.web_timeout == 3);
        assert_int_equal(strv_length(c.warnings), 2);
        (void) snprintf(want, sizeof(want),
                        "config %s: unknown section 'code_exection' (did you mean "
                        "'code_execution'?)",
                        cfg_path);
        assert_string_equal(c.warnings[0], want);
        (void) snprintf(want, sizeof(want),
                        "config %s: unknown section 'sandbx' (did you mean 'sandbox'?)", cfg_path);
        assert_string_equal(c.warnings[1], want);
        config_release(&c);
}

static void test_config_load_file_malformed(void **state)
{
        (void) state;
        expect_error("code_execution:\n  timeout: 1: 2\n",
                     "2: malformed YAML: mapping values are not allowed in this context");
        expect_error("a: [1, 2\nb: 3\n", "2: malformed YAML: did not find expected ',' or ']'");
        expect_error("a: \"\xff\"\n", "1: malformed YAML: invalid leading UTF-8 octet");
        expect_error("a: 1\nb: \"x\x01\"\n",
                     "2: malformed YAML: control characters are not allowed");
        expect_error("- 1\n- 2\n",
                     "1: expected a mapping of sections at the top level, got a sequence");
        expect_error("just text\n",
                     "1: expected a mapping of sections at the top level, got a scalar");
        expect_error("a: 1\n---\nb: 2\n", "2: multiple YAML documents are not supported");
        expect_error("terminal: yes\n", "1: terminal: invalid value 'yes' (allowed: a mapping)");
        expect_error("sandbox: [1]\n", "1: sandbox: expected a mapping, got a sequence");
}

static void test_config_load_file_nul_byte(void **state)
{
        static const char data[] = "sandbox:\n  pids: 5\0\n";
        struct ptc_config c;
        struct diag d = {};
        char want[1024];

        (void) state;
        assert_int_equal(config_init(&c), 0);
        assert_int_equal(config_load_file(&c, write_bytes(data, sizeof(data) - 1), true, &d),
                         -EINVAL);
        (void) snprintf(want, sizeof(want),
                        "%s:2: malformed YAML: control characters are not "
                        "allowed",
                        cfg_path);
        assert_string_equal(d.message, want);
        config_release(&c);
}

static void test_config_load_file_missing(void **state)
{
        struct ptc_config c;
        struct diag d = {};
        char p[256], want[1024];

        (void) state;
        (void) snprintf(p, sizeof(p), "%s/does-not-exist.yaml", tmpdir);
        assert_int_equal(config_init(&c), 0);
        assert_int_equal(config_load_file(&c, p, false, &d), 0);
        assert_null(c.source_path);
        assert_int_equal(c.pids, 256);
        assert_int_equal(config_load_file(&c, p, true, &d), -ENOENT);
        (void) snprintf(want, sizeof(want), "%s: cannot read: No such file or directory", p);
        assert_string_equal(d.message, want);

        /* A directory is an error even when the file is optional. */
        assert_int_equal(config_load_file(&c, tmpdir, false, &d), -EISDIR);
        (void) snprintf(want, sizeof(want), "%s: cannot read: Is a directory", tmpdir);
        assert_string_equal(d.message, want);
        config_release(&c);
}

static void test_config_load_file_empty(void **state)
{
        struct ptc_config c;

        (void) state;
        expect_ok("", &c);
        assert_int_equal(c.max_tool_calls, 50);
        assert_string_equal(c.source_path, cfg_path);
        config_release(&c);
        expect_ok("# only a comment\n", &c);
        config_release(&c);
        expect_ok("---\n", &c);
        config_release(&c);
        expect_ok("~\n", &c);
        config_release(&c);
}

static void test_config_load_file_null_section(void **state)
{
        struct ptc_config c;

        (void) state;
        expect_ok("code_execution:\nterminal: ~\nsandbox: null\nweb:\nmcp_servers:\n", &c);
        assert_int_equal(c.max_tool_calls, 50);
        assert_int_equal(c.n_mcp_servers, 0);
        config_release(&c);
}

static void test_config_load_file_alias_rejected(void **state)
{
        (void) state;
        expect_error("base: &t 30\ncode_execution:\n  timeout: *t\n",
                     "3: code_execution.timeout: YAML aliases are not supported (*t)");
        expect_error("x: &s {pids: 3}\nsandbox: *s\n",
                     "2: sandbox: YAML aliases are not supported (*s)");
        expect_error("k: &k sandbox\n*k : {pids: 3}\n",
                     "2: top level: YAML aliases are not supported (*k)");
        expect_error("n: &n FOO\nterminal:\n  env_passthrough: [*n]\n",
                     "3: terminal.env_passthrough[0]: YAML aliases are not supported (*n)");
}

static void test_config_load_file_billion_laughs(void **state)
{
        char text[4096];
        struct ptc_config c;
        size_t o = 0;

        (void) state;
        /* Ten levels of ten aliases each: harmless as long as nothing expands them. */
        o += (size_t) snprintf(text + o, sizeof(text) - o, "a0: &a0 [lol]\n");
        for (int i = 1; i < 10; i++)
                o += (size_t) snprintf(text + o, sizeof(text) - o,
                                       "a%d: &a%d [*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,"
                                       "*a%d]\n",
                                       i, i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1,
                                       i - 1, i - 1);
        o += (size_t) snprintf(text + o, sizeof(text) - o, "sandbox:\n  pids: 9\n");
        assert_true(o < sizeof(text));
        expect_ok(text, &c);
        assert_int_equal(c.pids, 9);
        config_release(&c);

        expect_error("a0: &a0 [lol]\na1: &a1 [*a0, *a0]\ncode_execution:\n  tools: *a1\n",
                     "4: code_execution.tools: YAML aliases are not supported (*a1)");
}

static void test_config_load_file_huge(void **state)
{
        size_t n = 1024 * 1024 + 1;
        char *big = malloc(n);
        struct ptc_config c;
        struct diag d = {};
        char want[1024];

        (void) state;
        assert_non_null(big);
        memset(big, '#', n);
        assert_int_equal(config_init(&c), 0);
        assert_int_equal(config_load_file(&c, write_bytes(big, n), true, &d), -E2BIG);
        (void) snprintf(want, sizeof(want), "%s: file too large (more than 1048576 bytes)",
                        cfg_path);
        assert_string_equal(d.message, want);
        config_release(&c);

        /* Exactly 1 MiB of comment is fine. */
        assert_int_equal(config_init(&c), 0);
        assert_int_equal(config_load_file(&c, write_bytes(big, n - 1), true, &d), 0);
        config_release(&c);
        free(big);
}

static void test_config_load_file_deep_nesting(void **state)
{
        char text[512];
        size_t o = 0;

        (void) state;
        o += (size_t) snprintf(text + o, sizeof(text) - o, "x: ");
        for (int i = 0; i < 100; i++)
                text[o++] = '[';
        text[o] = 0;
        expect_error(text, "1: YAML nesting too deep (more than 64 levels)");
}

static void test_config_load_file_too_many_nodes(void **state)
{
        size_t n = 2 * 110000 + 16;
        char *text = malloc(n);
        size_t o = 0;

        (void) state;
        assert_non_null(text);
        o += (size_t) snprintf(text, n, "x: [");
        for (int i = 0; i < 110000; i++) {
                text[o++] = '1';
                text[o++] = ',';
        }
        text[o++] = ']';
        text[o] = 0;
        expect_error(text, "1: too many YAML nodes (more than 100000)");
        free(text);
}

static void test_config_load_file_tools_forms(void **state)
{
        struct ptc_config c;

        (void) state;
        expect_ok("code_execution:\n  tools: [read_file, write_file]\n", &c);
        assert_int_equal(strv_length(c.tools), 2);
        assert_string_equal(c.tools[0], "read_file");
        assert_string_equal(c.tools[1], "write_file");
        config_release(&c);

        expect_ok("code_execution:\n  tools: \" terminal ,web_search,,read_file \"\n", &c);
        assert_int_equal(strv_length(c.tools), 3);
        assert_string_equal(c.tools[0], "terminal");
        assert_string_equal(c.tools[1], "web_search");
        assert_string_equal(c.tools[2], "read_file");
        config_release(&c);

        expect_ok("code_execution:\n  tools: terminal\n", &c);
        assert_int_equal(strv_length(c.tools), 1);
        assert_string_equal(c.tools[0], "terminal");
        config_release(&c);

        /* [] is "no tools", distinct from the default set (NULL). */
        expect_ok("code_execution:\n  tools: []\n", &c);
        assert_non_null(c.tools);
        assert_int_equal(strv_length(c.tools), 0);
        config_release(&c);

        expect_ok("code_execution:\n  tools: ~\n", &c);
        assert_null(c.tools);
        config_release(&c);
}

static void test_config_load_file_mcp_servers_full(void **state)
{
        static const char text[] = "mcp_servers:\n"
                                   "  files:\n"
                                   "    command: npx\n"
                                   "    args: [-y, \"@modelcontextprotocol/server-filesystem\", "
                                   "/srv/data]\n"
                                   "  git-2:\n"
                                   "    command: /usr/bin/mcp-git\n"
                                   "    args:\n"
                                   "      - --port\n"
                                   "      - 8080\n"
                                   "      - ''\n"
                                   "    env:\n"
                                   "      TOKEN_FILE: /run/secret\n"
                                   "      LEVEL: 3\n"
                                   "    cwd: /srv\n";
        struct ptc_config c;

        (void) state;
        expect_ok(text, &c);
        assert_int_equal(c.n_mcp_servers, 2);
        assert_string_equal(c.mcp_servers[0].name, "files");
        assert_string_equal(c.mcp_servers[0].command, "npx");
        assert_int_equal(strv_length(c.mcp_servers[0].args), 3);
        assert_int_equal(strv_length(c.mcp_servers[0].env), 0);
        assert_null(c.mcp_servers[0].cwd);
        assert_string_equal(c.mcp_servers[1].name, "git-2");
        assert_string_equal(c.mcp_servers[1].command, "/usr/bin/mcp-git");
        assert_int_equal(strv_length(c.mcp_servers[1].args), 3);
        assert_string_equal(c.mcp_servers[1].args[0], "--port");
        assert_string_equal(c.mcp_servers[1].args[1], "8080");
        assert_string_equal(c.mcp_servers[1].args[2], "");
        assert_int_equal(strv_length(c.mcp_servers[1].env), 2);
        assert_string_equal(c.mcp_servers[1].env[0], "TOKEN_FILE=/run/secret");
        assert_string_equal(c.mcp_servers[1].env[1], "LEVEL=3");
        assert_string_equal(c.mcp_servers[1].cwd, "/srv");
        config_release(&c);
}

static void test_config_load_file_mcp_servers_invalid(void **state)
{
        (void) state;
        expect_error("mcp_servers:\n  files:\n    args: [x]\n",
                     "2: mcp_servers.files: missing required key 'command' (allowed: command, "
                     "args, env, cwd)");
        expect_error("mcp_servers:\n  files:\n",
                     "2: mcp_servers.files: missing required key 'command' (allowed: command, "
                     "args, env, cwd)");
        expect_error("mcp_servers:\n  files:\n    command: npx\n    url: http://x\n",
                     "4: mcp_servers.files.url: unknown key (allowed: command, args, env, cwd)");
        expect_error("mcp_servers:\n  \"bad name\":\n    command: npx\n",
                     "2: mcp_servers: invalid server name 'bad name' (allowed: names matching "
                     "[A-Za-z0-9_-]+, at most 64 characters)");
        expect_error("mcp_servers:\n  a:\n    command: x\n  b:\n    command: y\n  a:\n"
                     "    command: z\n",
                     "6: mcp_servers: duplicate server name 'a'");
        expect_error("mcp_servers:\n  a:\n    command: ''\n",
                     "3: mcp_servers.a.command: invalid value '' (allowed: a non-empty string of "
                     "at most 4096 bytes)");
        expect_error("mcp_servers:\n  a:\n    command: x\n    args: \"-y foo\"\n",
                     "4: mcp_servers.a.args: invalid value '-y foo' (allowed: a sequence of "
                     "strings)");
        expect_error("mcp_servers:\n  a:\n    command: x\n    args: [ok, [nested]]\n",
                     "4: mcp_servers.a.args[1]: expected a string, got a sequence");
        expect_error("mcp_servers:\n  a:\n    command: x\n    env: {\"A=B\": c}\n",
                     "4: mcp_servers.a.env: invalid value 'A=B' (allowed: environment variable "
                     "names matching [A-Za-z_][A-Za-z0-9_]*)");
        expect_error("mcp_servers:\n  a:\n    command: x\n    env:\n      FOO:\n",
                     "5: mcp_servers.a.env.FOO: missing value (allowed: a string)");
        expect_error("mcp_servers:\n  a:\n    command: x\n    env: [FOO]\n",
                     "4: mcp_servers.a.env: expected a mapping of environment variable names to "
                     "strings, got a sequence");
        expect_error("mcp_servers:\n  a:\n    command: x\n    env: {A: 1, A: 2}\n",
                     "4: mcp_servers.a.env.A: duplicate key");
        expect_error("mcp_servers: [a]\n",
                     "1: mcp_servers: expected a mapping of server names to settings, got a "
                     "sequence");
        expect_error("mcp_servers:\n  a: npx\n",
                     "2: mcp_servers.a: invalid value 'npx' (allowed: a mapping)");
}

static void test_config_load_file_merge_over_previous(void **state)
{
        struct ptc_config c;
        struct diag d = {};

        (void) state;
        expect_ok("code_execution:\n  tools: [a]\nmcp_servers:\n  x:\n    command: y\n", &c);
        /* A second file replaces lists and keeps what it does not mention. */
        assert_int_equal(config_load_file(&c,
                                          write_config("mcp_servers:\n  z:\n    command: w\n"
                                                       "sandbox: {pids: 4}\n"),
                                          true, &d),
                         0);
        assert_int_equal(c.n_mcp_servers, 1);
        assert_string_equal(c.mcp_servers[0].name, "z");
        assert_int_equal(strv_length(c.tools), 1);
        assert_int_equal(c.pids, 4);

        /* An error mid-way leaves a releasable config. */
        assert_int_equal(config_load_file(&c,
                                          write_config("mcp_servers:\n  q:\n    command: w\n"
                                                       "    env: {A: [x]}\n"),
                                          true, &d),
                         -EINVAL);
        assert_int_equal(c.n_mcp_servers, 1);
        assert_string_equal(c.mcp_servers[0].name, "z");
        config_release(&c);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_config_init_defaults),
                cmocka_unit_test(test_config_parse_mode_words),
                cmocka_unit_test(test_config_parse_isolation_words),
                cmocka_unit_test(test_config_is_python_identifier_cases),
                cmocka_unit_test(test_config_default_path_env),
                cmocka_unit_test(test_config_load_file_design_example),
                cmocka_unit_test(test_config_load_file_valid_values),
                cmocka_unit_test(test_config_load_file_invalid_values),
                cmocka_unit_test(test_config_load_file_unknown_key),
                cmocka_unit_test(test_config_load_file_misspelled_section_warns),
                cmocka_unit_test(test_config_load_file_unknown_section_ignored),
                cmocka_unit_test(test_config_load_file_malformed),
                cmocka_unit_test(test_config_load_file_nul_byte),
                cmocka_unit_test(test_config_load_file_missing),
                cmocka_unit_test(test_config_load_file_empty),
                cmocka_unit_test(test_config_load_file_null_section),
                cmocka_unit_test(test_config_load_file_alias_rejected),
                cmocka_unit_test(test_config_load_file_billion_laughs),
                cmocka_unit_test(test_config_load_file_huge),
                cmocka_unit_test(test_config_load_file_deep_nesting),
                cmocka_unit_test(test_config_load_file_too_many_nodes),
                cmocka_unit_test(test_config_load_file_tools_forms),
                cmocka_unit_test(test_config_load_file_mcp_servers_full),
                cmocka_unit_test(test_config_load_file_mcp_servers_invalid),
                cmocka_unit_test(test_config_load_file_merge_over_previous),
        };

        return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
