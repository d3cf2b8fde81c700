/* SPDX-License-Identifier: MIT */
/*
 * The long-lived-process guard of the terminal tool. It is guidance, not enforcement:
 * whatever a command leaves running is killed with its process group (or pid namespace)
 * when the call ends. So it refuses only what it can see in the parsed command, and a
 * command it cannot read runs (bash reports its own syntax errors).
 *
 * Names compare without regard to case, like the seed's case-insensitive patterns.
 */

#include "core/tools/terminal-guard.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "basic/buf.h"
#include "basic/macro.h"
#include "core/shell/shell-parse.h"

/* Runners nest (`uv run npx vite`); real commands need two or three levels. */
#define RUNNER_DEPTH_MAX 8

#define GUIDANCE_DETACH                                                                          \
        "terminal() runs commands in the foreground only: nohup, disown and setsid cannot keep " \
        "a process alive after the call, because everything the command started is killed when " \
        "it finishes. Run the program in the foreground with a timeout instead."
#define GUIDANCE_BACKGROUND                                                                      \
        "terminal() runs commands in the foreground only: a job put in the background with '&' " \
        "is killed when the command finishes. Run the steps one after another in the "           \
        "foreground, each with a timeout."
#define GUIDANCE_SERVER                                                                         \
        "This command looks like it starts a long-running server or watcher, which would only " \
        "block until the timeout: terminal() is foreground only. Run bounded commands (a "      \
        "build, a test run, a single request) instead, and start servers outside the script."

struct args {
        char *const *v;
        size_t n;
};

static bool is_space(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* The seed's --help / --version exemption, on the lower-cased, space-normalised command. */
static int looks_like_help(const char *cmd, bool *ret)
{
        _cleanup_buf_ struct buf b = BUF_INIT(SIZE_MAX / 2);
        const char *p = cmd;
        const char *s;
        size_t n;
        int r = 0;

        while (*p) {
                while (is_space(*p))
                        p++;
                if (!*p)
                        break;
                if (b.len > 0)
                        r = buf_append_char(&b, ' ');
                while (r >= 0 && *p && !is_space(*p)) {
                        char c = *p++;

                        r = buf_append_char(&b,
                                            (c >= 'A' && c <= 'Z') ? (char) (c - 'A' + 'a') : c);
                }
                if (r < 0)
                        return r;
        }
        s = buf_str(&b);
        n = b.len;
        *ret = strstr(s, " --help") || strstr(s, " --version") ||
               (n >= 3 && strcmp(s + n - 3, " -h") == 0) ||
               (n >= 3 && strcmp(s + n - 3, " -v") == 0);
        return 0;
}

static bool name_is(const char *word, const char *name)
{
        return strcasecmp(shell_basename(word), name) == 0;
}

static bool name_in(const char *word, const char *const *names)
{
        for (; *names; names++)
                if (name_is(word, *names))
                        return true;
        return false;
}

static bool word_in(const char *word, const char *const *words)
{
        for (; *words; words++)
                if (strcasecmp(word, *words) == 0)
                        return true;
        return false;
}

/*
 * The first operand at or after @i, past options; options in @with_arg (as "-x" or
 * "--long") take the next word unless written "--long=value". a->n when none.
 */
static size_t operand(const struct args *a, size_t i, const char *const *with_arg)
{
        static const char *const none[] = {NULL};

        for (; i < a->n; i++) {
                const char *w = a->v[i];

                if (strcmp(w, "--") == 0)
                        return i + 1;
                if (w[0] != '-' || w[1] == 0)
                        return i;
                if (!strchr(w, '=') && word_in(w, with_arg ?: none))
                        i++;
        }
        return a->n;
}

static const char *arg_at(const struct args *a, size_t i)
{
        return i < a->n ? a->v[i] : NULL;
}

static bool starts_server(const struct args *a, size_t i, unsigned depth);

/* npm run dev, yarn start, pnpm serve:docs, bun run watch: the seed's script names. */
static bool is_server_script(const char *s)
{
        static const char *const names[] = {"dev", "start", "serve", "watch"};

        for (size_t k = 0; k < ELEMENTSOF(names); k++) {
                size_t n = strlen(names[k]);
                char c;

                if (strncasecmp(s, names[k], n) != 0)
                        continue;
                c = s[n]; /* in bounds: s has at least n characters */
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_'))
                        return true;
        }
        return false;
}

static bool package_manager(const struct args *a, size_t i, unsigned depth)
{
        static const char *const opts[] = {"--prefix", "-C", "--cwd",       "--dir", "--filter",
                                           "-F",       "-w", "--workspace", NULL};
        static const char *const run[] = {"run", "run-script", "rum", "urn", NULL};
        static const char *const exec[] = {"exec", "x", "dlx", NULL};
        size_t k = operand(a, i, opts);
        const char *sub = arg_at(a, k);

        if (!sub)
                return false;
        if (word_in(sub, run))
                sub = arg_at(a, operand(a, k + 1, opts));
        else if (word_in(sub, exec))
                return starts_server(a, operand(a, k + 1, opts), depth + 1);
        else if (strcasecmp(sub, "workspace") == 0)
                sub = arg_at(a, operand(a, operand(a, k + 1, opts) + 1, opts));
        return sub && is_server_script(sub);
}

/* docker compose up without -d (--detach, or --wait which implies it); compose watch. */
static bool compose(const struct args *a, size_t i)
{
        static const char *const opts[] = {"-f",
                                           "--file",
                                           "-p",
                                           "--project-name",
                                           "--profile",
                                           "--env-file",
                                           "--project-directory",
                                           "--ansi",
                                           "--progress",
                                           "--parallel",
                                           NULL};
        size_t k = operand(a, i, opts);
        const char *sub = arg_at(a, k);

        if (!sub)
                return false;
        if (strcasecmp(sub, "watch") == 0)
                return true;
        if (strcasecmp(sub, "up") != 0)
                return false;
        for (k++; k < a->n; k++) {
                const char *w = a->v[k];

                if (strcmp(w, "--") == 0)
                        break;
                if (strcmp(w, "--detach") == 0 || strncmp(w, "--detach=", 9) == 0 ||
                    strcmp(w, "--wait") == 0 || (w[0] == '-' && w[1] != '-' && strchr(w + 1, 'd')))
                        return false;
        }
        return true;
}

static bool docker(const struct args *a, size_t i)
{
        static const char *const opts[] = {"-c",       "--context", "-H",          "--host",
                                           "--config", "-l",        "--log-level", NULL};
        size_t k = operand(a, i, opts);
        const char *sub = arg_at(a, k);

        return sub && strcasecmp(sub, "compose") == 0 && compose(a, k + 1);
}

static bool is_python(const char *word)
{
        const char *b = shell_basename(word);

        if (strncasecmp(b, "python", 6) == 0)
                b += 6;
        else if (strncasecmp(b, "pypy", 4) == 0)
                b += 4;
        else
                return false;
        return strspn(b, "0123456789.") == strlen(b);
}

/* python -m http.server, python -m flask run, python manage.py runserver. */
static bool python(const struct args *a, size_t i)
{
        static const char *const servers[] = {"http.server", "SimpleHTTPServer", "uvicorn",
                                              "gunicorn",    "hypercorn",        "daphne",
                                              NULL};
        const char *module = NULL, *next;
        size_t k;

        for (k = i; k < a->n; k++) {
                const char *w = a->v[k];

                if (w[0] != '-' || strcmp(w, "-") == 0 || strcmp(w, "-c") == 0)
                        break;
                if (strcmp(w, "--") == 0) {
                        k++;
                        break;
                }
                if (strncmp(w, "-m", 2) == 0) {
                        module = w[2] ? w + 2 : arg_at(a, k + 1);
                        k += w[2] ? 1 : 2;
                        break;
                }
                if (strcmp(w, "-W") == 0 || strcmp(w, "-X") == 0)
                        k++;
        }
        if (!module) {
                if (k >= a->n || a->v[k][0] == '-' || !name_is(a->v[k], "manage.py"))
                        return false;
                next = arg_at(a, operand(a, k + 1, NULL));
                return next && strcasecmp(next, "runserver") == 0;
        }
        if (word_in(module, servers))
                return true;
        next = arg_at(a, operand(a, k, NULL));
        return next && ((strcasecmp(module, "flask") == 0 && strcasecmp(next, "run") == 0) ||
                        (strcasecmp(module, "django") == 0 && strcasecmp(next, "runserver") == 0));
}

/* Commands that are servers or watchers whatever their arguments. */
static const char *const always[] = {
        "nodemon",     "uvicorn",     "gunicorn",           "hypercorn",   "daphne",
        "http-server", "live-server", "webpack-dev-server", "json-server", NULL,
};

/* Commands whose first operand makes them one: next dev, flask run, rails s, ... */
static const struct {
        const char *name;
        const char *const *subs;
        const char *const *opts; /* options with an argument before the subcommand */
} with_sub[] = {
        {"next", (const char *const[]){"dev", "start", NULL}, NULL},
        {"flask", (const char *const[]){"run", NULL},
         (const char *const[]){"--app", "-A", "-e", "--env-file", NULL}},
        {"rails", (const char *const[]){"s", "server", NULL}, NULL},
        {"hugo", (const char *const[]){"server", "serve", NULL}, NULL},
        {"jekyll", (const char *const[]){"s", "serve", "server", NULL}, NULL},
        {"ng", (const char *const[]){"s", "serve", NULL}, NULL},
        {"webpack", (const char *const[]){"serve", NULL}, NULL},
        {"astro", (const char *const[]){"dev", "preview", NULL}, NULL},
        {"nuxt", (const char *const[]){"dev", NULL}, NULL},
        {"nuxi", (const char *const[]){"dev", NULL}, NULL},
        {"gatsby", (const char *const[]){"develop", NULL}, NULL},
        {"react-scripts", (const char *const[]){"start", NULL}, NULL},
        {"vue-cli-service", (const char *const[]){"serve", NULL}, NULL},
};

/* Runners whose later words are a command: uv run X, poetry run X, bundle exec X. */
static const struct {
        const char *name;
        const char *sub; /* NULL: the command follows the options directly */
        const char *const *opts;
} runners[] = {
        {"npx", NULL, (const char *const[]){"-p", "--package", "-c", "--call", NULL}},
        {"pnpx", NULL, (const char *const[]){"-p", "--package", NULL}},
        {"bunx", NULL, (const char *const[]){"-p", "--package", NULL}},
        {"uvx", NULL,
         (const char *const[]){"--from", "--with", "--python", "-p", "--with-requirements", NULL}},
        {"uv", "run",
         (const char *const[]){"--with", "--with-editable", "--with-requirements", "--python", "-p",
                               "--package", "--extra", "--group", "--only-group", "--no-group",
                               "--env-file", "--directory", "--project", "--index", "--index-url",
                               "--extra-index-url", NULL}},
        {"poetry", "run", (const char *const[]){"-C", "--directory", "-P", "--project", NULL}},
        {"pipenv", "run", NULL},
        {"pdm", "run", (const char *const[]){"-p", "--project", NULL}},
        {"hatch", "run", NULL},
        {"pipx", "run", (const char *const[]){"--spec", "--python", NULL}},
        {"bundle", "exec", NULL},
};

/* Does the command at a->v[i] start a server or watcher? */
static bool starts_server(const struct args *a, size_t i, unsigned depth)
{
        const char *w = arg_at(a, i), *sub;

        if (!w || depth > RUNNER_DEPTH_MAX)
                return false;
        if (name_in(w, always))
                return true;
        if (name_is(w, "npm") || name_is(w, "pnpm") || name_is(w, "yarn") || name_is(w, "bun"))
                return package_manager(a, i + 1, depth);
        if (name_is(w, "docker") || name_is(w, "podman"))
                return docker(a, i + 1);
        if (name_is(w, "docker-compose") || name_is(w, "podman-compose"))
                return compose(a, i + 1);
        if (is_python(w))
                return python(a, i + 1);
        if (name_is(w, "vite")) {
                /* Everything but a build is a dev server or a preview server. */
                sub = arg_at(a, operand(a, i + 1, NULL));
                return !sub || (strcasecmp(sub, "build") != 0 && strcasecmp(sub, "optimize") != 0);
        }
        if (name_is(w, "php")) {
                size_t script;

                for (size_t k = i + 1; k < a->n && a->v[k][0] == '-'; k++)
                        if (strncmp(a->v[k], "-S", 2) == 0)
                                return true;
                script = operand(a, i + 1, NULL);
                sub = arg_at(a, script);
                return sub && name_is(sub, "artisan") &&
                       (sub = arg_at(a, operand(a, script + 1, NULL))) &&
                       strcasecmp(sub, "serve") == 0;
        }
        for (size_t k = 0; k < ELEMENTSOF(with_sub); k++)
                if (name_is(w, with_sub[k].name)) {
                        sub = arg_at(a, operand(a, i + 1, with_sub[k].opts));
                        return sub && word_in(sub, with_sub[k].subs);
                }
        for (size_t k = 0; k < ELEMENTSOF(runners); k++)
                if (name_is(w, runners[k].name)) {
                        size_t j = i + 1;

                        if (runners[k].sub) {
                                j = operand(a, j, runners[k].opts);
                                sub = arg_at(a, j);
                                if (!sub || strcasecmp(sub, runners[k].sub) != 0)
                                        return false;
                                j++;
                        }
                        return starts_server(a, operand(a, j, runners[k].opts), depth + 1);
                }
        return false;
}

/* nohup, setsid (as a wrapper or alone) and disown. */
static bool detaches(const struct shell_command *c)
{
        static const char *const names[] = {"nohup", "setsid", "disown", NULL};

        for (size_t i = 0; i < c->argc && i <= c->cmd_index; i++)
                if ((i == c->cmd_index || (c->word_flags[i] & SHELL_WORD_WRAPPER)) &&
                    !(c->word_flags[i] & SHELL_WORD_EXPANDS) && name_in(c->argv[i], names))
                        return true;
        return false;
}

int terminal_guard_check(const char *cmd, const char **ret)
{
        _cleanup_shell_parse_ struct shell_parse *sp = NULL;
        bool help = false;
        int r;

        *ret = NULL;
        r = looks_like_help(cmd, &help);
        if (r < 0)
                return r;
        if (help)
                return 0;
        /*
         * Lines with a syntax error are left out (bash does not run them); a command past
         * the parser's caps is let through: bash decides, and the end of the call kills
         * whatever it started.
         */
        r = shell_parse(cmd, strlen(cmd), SHELL_PARSE_COMPLETE_LINES, &sp, NULL);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return 0;

        /* In the seed's order: nohup & co., then '&', then servers. */
        for (size_t i = 0; i < sp->n_commands; i++)
                if (detaches(&sp->commands[i])) {
                        *ret = GUIDANCE_DETACH;
                        return 0;
                }
        for (size_t i = 0; i < sp->n_commands; i++)
                if (sp->commands[i].flags & SHELL_CMD_BACKGROUND) {
                        *ret = GUIDANCE_BACKGROUND;
                        return 0;
                }
        for (size_t i = 0; i < sp->n_commands; i++) {
                const struct shell_command *c = &sp->commands[i];
                struct args a = {.v = c->argv, .n = c->argc};

                if (c->cmd_index < c->argc && !(c->word_flags[c->cmd_index] & SHELL_WORD_EXPANDS) &&
                    starts_server(&a, c->cmd_index, 0)) {
                        *ret = GUIDANCE_SERVER;
                        return 0;
                }
        }
        return 0;
}
