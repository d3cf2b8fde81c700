/* SPDX-License-Identifier: MIT */
/*
 * The configuration's public face: the words the CLI and the file share, the
 * built-in defaults and their lifetime, the default path, and
 * config_load_file(), which reads the file and hands it to the YAML reader
 * (config-yaml.c) and the section parsers (config-sections.c).
 */

#include "core/config/config.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/path-util.h"
#include "basic/strv.h"
#include "core/config/config-internal.h"

/* ---- parse helpers shared with the CLI ---------------------------------------------------- */

const char *const config_mode_words[] = {
        [PTC_MODE_PROJECT] = "project",
        [PTC_MODE_STRICT] = "strict",
};

const char *const config_isolation_words[] = {
        [PTC_ISOLATION_NONE] = "none",
        [PTC_ISOLATION_AUTO] = "auto",
        [PTC_ISOLATION_STRICT] = "strict",
};

/*
 * Index of @s (surrounding whitespace trimmed, case ignored) in @words, or
 * -EINVAL. Users write "Strict" or "strict " in YAML and on the command line
 * alike; the seed lower-cased and trimmed too.
 */
int config_lookup_word(const char *s, const char *const *words, size_t n_words)
{
        size_t n;

        if (!s)
                return -EINVAL;
        n = strlen(s);
        trim(&s, &n);
        for (size_t i = 0; i < n_words; i++)
                if (words[i] && strlen(words[i]) == n && strncasecmp(s, words[i], n) == 0)
                        return (int) i;
        return -EINVAL;
}

int config_parse_mode(const char *s, enum ptc_mode *ret)
{
        int i = config_lookup_word(s, config_mode_words, ELEMENTSOF(config_mode_words));

        if (i < 0)
                return i;
        if (ret)
                *ret = (enum ptc_mode) i;
        return 0;
}

int config_parse_isolation(const char *s, enum ptc_isolation *ret)
{
        int i = config_lookup_word(s, config_isolation_words, ELEMENTSOF(config_isolation_words));

        if (i < 0)
                return i;
        if (ret)
                *ret = (enum ptc_isolation) i;
        return 0;
}

const char *config_mode_to_string(enum ptc_mode m)
{
        if ((size_t) m >= ELEMENTSOF(config_mode_words))
                return NULL;
        return config_mode_words[m];
}

const char *config_isolation_to_string(enum ptc_isolation i)
{
        if ((size_t) i >= ELEMENTSOF(config_isolation_words))
                return NULL;
        return config_isolation_words[i];
}

static const char *const python_keywords[] = {
        "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
        "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
        "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
        "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield",
};

/* [A-Za-z_][A-Za-z0-9_]*: Python identifiers and environment variable names alike. */
bool config_is_c_identifier(const char *s, size_t n)
{
        if (n == 0 || !(is_ascii_alpha(s[0]) || s[0] == '_'))
                return false;
        for (size_t i = 1; i < n; i++)
                if (!(is_ascii_alpha(s[i]) || is_ascii_digit(s[i]) || s[i] == '_'))
                        return false;
        return true;
}

bool config_is_python_identifier(const char *s)
{
        /* ASCII only: the module name ends up in file names and import lines we generate. */
        if (!s || !config_is_c_identifier(s, strlen(s)))
                return false;
        for (size_t i = 0; i < ELEMENTSOF(python_keywords); i++)
                if (strcmp(s, python_keywords[i]) == 0)
                        return false;
        return true;
}

/* ---- defaults and lifetime ---------------------------------------------------------------- */

static void mcp_server_config_done(struct mcp_server_config *s)
{
        free(s->name);
        free(s->command);
        strv_free(s->args);
        strv_free(s->env);
        free(s->cwd);
        *s = (struct mcp_server_config){};
}

void config_mcp_servers_free(struct mcp_server_config *s, size_t n)
{
        if (!s)
                return;
        for (size_t i = 0; i < n; i++)
                mcp_server_config_done(&s[i]);
        free(s);
}

char **config_strv_new_empty(void)
{
        return calloc(1, sizeof(char *));
}

void config_release(struct ptc_config *c)
{
        if (!c)
                return;
        free(c->module_name);
        strv_free(c->backends);
        free(c->remote_cwd);
        free(c->python);
        strv_free(c->tools);
        strv_free(c->env_passthrough);
        free(c->search_provider);
        free(c->searxng_url);
        free(c->extract_provider);
        free(c->brave_url);
        free(c->tavily_url);
        free(c->firecrawl_url);
        free(c->exa_url);
        config_policy_rules_free(c->policy.rules, c->policy.n_rules);
        config_mcp_servers_free(c->mcp_servers, c->n_mcp_servers);
        free(c->source_path);
        strv_free(c->warnings);
        *c = (struct ptc_config){};
}

int config_init(struct ptc_config *c)
{
        *c = (struct ptc_config){
                .timeout = 300,
                .max_tool_calls = 50,
                .mode = PTC_MODE_PROJECT,
                .max_stdout_bytes = 50000,
                .max_stderr_bytes = 10000,
                .terminal_timeout = 180,
                .terminal_max_timeout = 600,
                .isolation = PTC_ISOLATION_AUTO,
                .memory_mb = 1024,
                .pids = 256,
                .network = false,
                .allow_private_urls = false,
                .web_timeout = 30,
                .session_idle_timeout = 1800,
                .max_sessions = 4,
                .warm = 2,
                .policy = {.dangerous = POLICY_ASK,
                           .headless = POLICY_ALLOW,
                           .approval_timeout = 120,
                           .threaded_exec = POLICY_ALLOW},
        };
        c->module_name = strdup("hermes_tools");
        c->backend_concurrency = 4;
        c->python = strdup("python3");
        c->env_passthrough = config_strv_new_empty();
        if (!c->module_name || !c->python || !c->env_passthrough) {
                config_release(c);
                return -ENOMEM;
        }
        return 0;
}

/* ---- default path ------------------------------------------------------------------------- */

static int get_home_dir(char **ret)
{
        _cleanup_free_ char *buf = NULL;
        struct passwd pw, *result = NULL;
        const size_t bufsz = 16384;
        const char *e;
        int r;

        e = getenv("HOME");
        if (e && e[0] == '/') {
                *ret = strdup(e);
                return *ret ? 0 : -ENOMEM;
        }

        buf = malloc(bufsz);
        if (!buf)
                return -ENOMEM;
        r = getpwuid_r(getuid(), &pw, buf, bufsz, &result);
        if (r != 0)
                return -r;
        if (!result || !result->pw_dir || result->pw_dir[0] != '/')
                return -ENOENT;
        *ret = strdup(result->pw_dir);
        return *ret ? 0 : -ENOMEM;
}

int config_default_path(char **ret)
{
        _cleanup_free_ char *home = NULL;
        const char *e;
        char *p;
        int r;

        e = getenv("PTC_CONFIG");
        if (e && *e) {
                p = strdup(e);
                goto done;
        }

        /* The XDG base directory spec says relative values are invalid and must be ignored. */
        e = getenv("XDG_CONFIG_HOME");
        if (e && e[0] == '/') {
                p = path_join(e, "ptc/config.yaml");
                goto done;
        }

        r = get_home_dir(&home);
        if (r < 0)
                return r;
        p = path_join(home, ".config/ptc/config.yaml");
done:
        if (!p)
                return -ENOMEM;
        *ret = p;
        return 0;
}

/* ---- the file ----------------------------------------------------------------------------- */

static int read_file_capped(const char *path, struct buf *b)
{
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (S_ISREG(st.st_mode) && st.st_size > CONFIG_MAX_FILE_SIZE)
                return -E2BIG;

        /* Read until EOF even for regular files: the size may change under us. */
        for (;;) {
                char chunk[16384];
                ssize_t n = read(fd, chunk, sizeof(chunk));
                int r;

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        return 0;
                r = buf_append(b, chunk, (size_t) n);
                if (r < 0)
                        return r;
        }
}

int config_load_file(struct ptc_config *c, const char *path, bool must_exist, struct diag *reterr)
{
        _cleanup_(buf_releasep) struct buf b = BUF_INIT(CONFIG_MAX_FILE_SIZE);
        _cleanup_(config_node_freep) struct node *root = NULL;
        struct ctx x = {.path = path, .err = reterr, .c = c};
        char ebuf[256];
        char *sp;
        int r;

        if (!c || !path)
                return diag_set(reterr, -EINVAL, "no config file given");

        r = read_file_capped(path, &b);
        if (r == -ENOENT && !must_exist)
                return 0;
        if (r == -E2BIG)
                return diag_set(reterr, r, "%s: file too large (more than %d bytes)", path,
                                CONFIG_MAX_FILE_SIZE);
        if (r == -ENOMEM)
                return diag_set(reterr, r, "%s: out of memory", path);
        if (r < 0)
                return diag_set(reterr, r, "%s: cannot read: %s", path,
                                strerror_r(-r, ebuf, sizeof(ebuf)));

        sp = strdup(path);
        if (!sp)
                return -ENOMEM;
        config_replace_string(&c->source_path, sp);

        r = config_parse_yaml(&x, buf_str(&b), b.len, &root);
        if (r < 0)
                return r;
        return config_parse_root(&x, root);
}
